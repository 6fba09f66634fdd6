//! Last value per key, folded from a journaled bus: the use case the
//! journal and its compaction are built for.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::format::{check, padded_words};
use super::join::{Entry, JoinError, JoinOptions, JournalSubscriber};
use super::Keyed;
use crate::bus::Received;

/// A map from key to the last message for it, and the sequence it is at.
#[derive(Clone, Debug)]
pub struct KeyedState<T: Keyed> {
    map: HashMap<u64, T>,
    last_seq: Option<u64>,
}

impl<T: Keyed> Default for KeyedState<T> {
    fn default() -> Self {
        KeyedState {
            map: HashMap::new(),
            last_seq: None,
        }
    }
}

impl<T: Keyed> KeyedState<T> {
    /// An empty state.
    pub fn new() -> Self {
        Self::default()
    }

    /// Folds in message `msg` of sequence `seq`.
    #[inline]
    pub fn apply(&mut self, seq: u64, msg: T) {
        self.map.insert(msg.key(), msg);
        self.last_seq = Some(seq);
    }

    /// The last message for `key`.
    pub fn get(&self, key: u64) -> Option<&T> {
        self.map.get(&key)
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// No key yet.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The sequence of the last message folded in.
    pub fn last_seq(&self) -> Option<u64> {
        self.last_seq
    }

    /// Every key and its last message, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &T)> {
        self.map.iter().map(|(k, v)| (*k, v))
    }

    /// An order-independent digest of every (key, message) pair: two states
    /// with the same digest hold the same values, with overwhelming odds.
    pub fn digest(&self) -> u64 {
        let size = std::mem::size_of::<T>();
        self.map.iter().fold(0u64, |acc, (k, v)| {
            let bytes = bytemuck::bytes_of(v);
            acc.wrapping_add(check(*k, padded_words(bytes, size.div_ceil(8) * 8)))
        })
    }
}

/// A [`KeyedState`] kept up to date from a journaled bus: joined from the
/// journal, then fed live. It rejoins by itself after a loss the journal
/// cannot repair, so it always converges to the publisher's state.
pub struct State<T: Keyed> {
    name: String,
    opts: JoinOptions,
    sub: JournalSubscriber<T>,
    state: KeyedState<T>,
    rejoins: u64,
}

impl<T: Keyed> State<T> {
    /// Joins `name` and folds nothing yet (call [`State::poll`]).
    pub fn join(name: &str, opts: &JoinOptions) -> Result<Self, JoinError> {
        Ok(State {
            name: name.to_owned(),
            opts: opts.clone(),
            sub: JournalSubscriber::join(name, opts)?,
            state: KeyedState::new(),
            rejoins: 0,
        })
    }

    /// After lost updates: start again from the journal, whose snapshot
    /// plus tail is the whole state.
    fn rejoin(&mut self) -> Result<(), JoinError> {
        self.sub = JournalSubscriber::join(&self.name, &self.opts)?;
        self.state = KeyedState::new();
        self.rejoins += 1;
        Ok(())
    }

    fn on(&mut self, r: Received<Entry<T>>) -> Result<(), JoinError> {
        match r {
            Received::Message(e) => self.state.apply(e.seq, e.msg),
            Received::Lagged { .. } => self.rejoin()?,
        }
        Ok(())
    }

    /// Folds in everything available now; returns how many entries.
    pub fn poll(&mut self) -> Result<usize, JoinError> {
        let mut n = 0;
        loop {
            let mut lagged = false;
            let state = &mut self.state;
            n += self.sub.drain_ready(|r| match r {
                Received::Message(e) if !lagged => state.apply(e.seq, e.msg),
                _ => lagged = true,
            });
            if !lagged {
                return Ok(n);
            }
            self.rejoin()?;
        }
    }

    /// Folds in entries until sequence `seq` is in (true), or `timeout`.
    pub fn wait_for(&mut self, seq: u64, timeout: Duration) -> Result<bool, JoinError> {
        let deadline = Instant::now() + timeout;
        while self
            .state
            .last_seq()
            .is_none_or(|l| (l.wrapping_sub(seq) as i64) < 0)
        {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(false);
            }
            if let Some(r) = self.sub.recv(crate::wait::Wait::For(left)) {
                self.on(r)?;
            }
        }
        Ok(true)
    }

    /// The state folded so far.
    pub fn state(&self) -> &KeyedState<T> {
        &self.state
    }

    /// How many times it had to rejoin after an unrepairable loss.
    pub fn rejoins(&self) -> u64 {
        self.rejoins
    }

    /// The subscriber underneath.
    pub fn subscriber(&self) -> &JournalSubscriber<T> {
        &self.sub
    }
}
