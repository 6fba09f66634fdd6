//! Last value per key, folded from a journaled bus: the use case the
//! journal and its compaction are built for.

use std::collections::HashMap;
use std::time::Instant;

use super::error::JoinError;
use super::format::{check, padded_words};
use super::keyed::Keyed;
use super::options::JoinOptions;
use super::subscriber::{Entry, JournalSubscriber};
use crate::bus::Received;
use crate::wait::Wait;

/// A map from key to the last message for it, and the sequence it is at:
/// what [`State`] keeps up to date from a journaled bus, usable alone to
/// fold any stream of [`Keyed`] messages.
///
/// # Examples
/// ```
/// # #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
/// # #[repr(C)]
/// # struct Tick { key: u64, val: u64 }
/// # impl shmbus::Message for Tick { const NAME: &'static str = "example.Tick"; }
/// # impl shmbus::journal::Keyed for Tick { fn key(&self) -> u64 { self.key } }
/// use shmbus::journal::KeyedState;
///
/// let mut state = KeyedState::new();
/// state.apply(0, Tick { key: 1, val: 10 });
/// state.apply(1, Tick { key: 2, val: 20 });
/// state.apply(2, Tick { key: 1, val: 11 });
/// assert_eq!(state.len(), 2);
/// assert_eq!(state.get(1).map(|t| t.val), Some(11));
/// assert_eq!(state.last_seq(), Some(2));
/// ```
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
    ///
    /// # Examples
    /// ```
    /// # #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    /// # #[repr(C)]
    /// # struct Tick { key: u64, val: u64 }
    /// # impl shmbus::Message for Tick { const NAME: &'static str = "example.Tick"; }
    /// # impl shmbus::journal::Keyed for Tick { fn key(&self) -> u64 { self.key } }
    /// let state = shmbus::journal::KeyedState::<Tick>::new();
    /// assert!(state.is_empty());
    /// assert_eq!(state.last_seq(), None);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Folds in message `msg` of sequence `seq`: it becomes its key's last
    /// message, and `seq` the state's last sequence (as given: sequences
    /// are not checked for order).
    ///
    /// # Examples
    /// ```
    /// # #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    /// # #[repr(C)]
    /// # struct Tick { key: u64, val: u64 }
    /// # impl shmbus::Message for Tick { const NAME: &'static str = "example.Tick"; }
    /// # impl shmbus::journal::Keyed for Tick { fn key(&self) -> u64 { self.key } }
    /// let mut state = shmbus::journal::KeyedState::new();
    /// state.apply(7, Tick { key: 3, val: 1 });
    /// state.apply(8, Tick { key: 3, val: 2 });
    /// assert_eq!(state.get(3).map(|t| t.val), Some(2));
    /// assert_eq!(state.last_seq(), Some(8));
    /// ```
    #[inline]
    pub fn apply(&mut self, seq: u64, msg: T) {
        self.map.insert(msg.key(), msg);
        self.last_seq = Some(seq);
    }

    /// The last message for `key`.
    ///
    /// # Examples
    /// ```
    /// # #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    /// # #[repr(C)]
    /// # struct Tick { key: u64, val: u64 }
    /// # impl shmbus::Message for Tick { const NAME: &'static str = "example.Tick"; }
    /// # impl shmbus::journal::Keyed for Tick { fn key(&self) -> u64 { self.key } }
    /// let mut state = shmbus::journal::KeyedState::new();
    /// state.apply(0, Tick { key: 1, val: 5 });
    /// assert_eq!(state.get(1).map(|t| t.val), Some(5));
    /// assert!(state.get(2).is_none());
    /// ```
    pub fn get(&self, key: u64) -> Option<&T> {
        self.map.get(&key)
    }

    /// Number of keys.
    ///
    /// # Examples
    /// ```
    /// # #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    /// # #[repr(C)]
    /// # struct Tick { key: u64, val: u64 }
    /// # impl shmbus::Message for Tick { const NAME: &'static str = "example.Tick"; }
    /// # impl shmbus::journal::Keyed for Tick { fn key(&self) -> u64 { self.key } }
    /// let mut state = shmbus::journal::KeyedState::new();
    /// state.apply(0, Tick { key: 1, val: 5 });
    /// state.apply(1, Tick { key: 1, val: 6 });
    /// assert_eq!(state.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// No key yet.
    ///
    /// # Examples
    /// ```
    /// # #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    /// # #[repr(C)]
    /// # struct Tick { key: u64, val: u64 }
    /// # impl shmbus::Message for Tick { const NAME: &'static str = "example.Tick"; }
    /// # impl shmbus::journal::Keyed for Tick { fn key(&self) -> u64 { self.key } }
    /// let mut state = shmbus::journal::KeyedState::new();
    /// assert!(state.is_empty());
    /// state.apply(0, Tick { key: 1, val: 5 });
    /// assert!(!state.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The sequence of the last message folded in; `None` before the
    /// first.
    ///
    /// # Examples
    /// ```
    /// # #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    /// # #[repr(C)]
    /// # struct Tick { key: u64, val: u64 }
    /// # impl shmbus::Message for Tick { const NAME: &'static str = "example.Tick"; }
    /// # impl shmbus::journal::Keyed for Tick { fn key(&self) -> u64 { self.key } }
    /// let mut state = shmbus::journal::KeyedState::new();
    /// assert_eq!(state.last_seq(), None);
    /// state.apply(41, Tick { key: 1, val: 5 });
    /// assert_eq!(state.last_seq(), Some(41));
    /// ```
    pub fn last_seq(&self) -> Option<u64> {
        self.last_seq
    }

    /// Every key and its last message, in no particular order.
    ///
    /// # Examples
    /// ```
    /// # #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    /// # #[repr(C)]
    /// # struct Tick { key: u64, val: u64 }
    /// # impl shmbus::Message for Tick { const NAME: &'static str = "example.Tick"; }
    /// # impl shmbus::journal::Keyed for Tick { fn key(&self) -> u64 { self.key } }
    /// let mut state = shmbus::journal::KeyedState::new();
    /// state.apply(0, Tick { key: 1, val: 10 });
    /// state.apply(1, Tick { key: 2, val: 20 });
    /// let mut all: Vec<(u64, u64)> = state.iter().map(|(k, t)| (k, t.val)).collect();
    /// all.sort();
    /// assert_eq!(all, [(1, 10), (2, 20)]);
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = (u64, &T)> {
        self.map.iter().map(|(k, v)| (*k, v))
    }

    /// An order-independent digest of every (key, message) pair: two states
    /// with the same digest hold the same values, with overwhelming odds.
    /// Sequences are not part of it.
    ///
    /// # Examples
    /// ```
    /// # #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    /// # #[repr(C)]
    /// # struct Tick { key: u64, val: u64 }
    /// # impl shmbus::Message for Tick { const NAME: &'static str = "example.Tick"; }
    /// # impl shmbus::journal::Keyed for Tick { fn key(&self) -> u64 { self.key } }
    /// use shmbus::journal::KeyedState;
    /// let mut a = KeyedState::new();
    /// a.apply(0, Tick { key: 1, val: 10 });
    /// a.apply(1, Tick { key: 2, val: 20 });
    /// let mut b = KeyedState::new();
    /// b.apply(5, Tick { key: 2, val: 20 });
    /// b.apply(6, Tick { key: 1, val: 10 });
    /// assert_eq!(a.digest(), b.digest()); // same values, any order
    /// b.apply(7, Tick { key: 1, val: 11 });
    /// assert_ne!(a.digest(), b.digest());
    /// ```
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
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use shmbus::journal::{JoinOptions, JournalOptions, JournalPublisher, Keyed, State};
/// use shmbus::{BusOptions, Wait};
///
/// #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
/// #[repr(C)]
/// struct Tick { key: u64, val: u64 }
/// # impl shmbus::Message for Tick { const NAME: &'static str = "example.Tick"; }
/// impl Keyed for Tick { fn key(&self) -> u64 { self.key } }
///
/// # let dir = std::env::temp_dir().join(format!("shmbus-doc-state-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// # let name = format!("/dev/shm/shmbus-doc-state-{}", std::process::id());
/// let mut publisher = JournalPublisher::<Tick>::create(
///     &name,
///     &BusOptions::new(64),
///     &JournalOptions::new(dir.join("ticks.journal")),
/// )?;
/// publisher.publish(&Tick { key: 1, val: 10 })?;
/// publisher.publish(&Tick { key: 2, val: 20 })?;
/// let last = publisher.publish(&Tick { key: 1, val: 11 })?;
///
/// let mut state = State::<Tick>::join(&name, &JoinOptions::default())?;
/// assert!(state.wait_for(last, Wait::For(Duration::from_secs(5)))?);
/// assert_eq!(state.state().len(), 2);
/// assert_eq!(state.state().get(1).map(|t| t.val), Some(11));
/// # drop(state); publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct State<T: Keyed> {
    name: String,
    opts: JoinOptions,
    sub: JournalSubscriber<T>,
    state: KeyedState<T>,
    rejoins: u64,
}

impl<T: Keyed> std::fmt::Debug for State<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("name", &self.name)
            .field("subscriber", &self.sub)
            .field("rejoins", &self.rejoins)
            .finish_non_exhaustive()
    }
}

impl<T: Keyed> State<T> {
    /// Joins `name` (as [`JournalSubscriber::join`]) and folds nothing yet
    /// (call [`State::poll`] or [`State::wait_for`]).
    ///
    /// # Errors
    /// [`JoinError::Open`] if the bus cannot be opened (missing, not a bus,
    /// another message type, ...), [`JoinError::NotJournaled`] if it has no
    /// journal, [`JoinError::PublisherGone`] if its publisher died while
    /// the joiner waited for the flush, [`JoinError::FlushTimeout`] if a
    /// live publisher did not serve it within
    /// [`JoinOptions::flush_timeout`], [`JoinError::FlushFailed`] if its
    /// `fdatasync` failed, [`JoinError::Journal`] if the journal cannot be
    /// opened or read, or holds another message type.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, journal::{JoinOptions, JournalOptions, JournalPublisher, State}};
    /// # #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    /// # #[repr(C)]
    /// # struct Tick { key: u64, val: u64 }
    /// # impl shmbus::Message for Tick { const NAME: &'static str = "example.Tick"; }
    /// # impl shmbus::journal::Keyed for Tick { fn key(&self) -> u64 { self.key } }
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-state-join-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-state-join-{}", std::process::id());
    /// let mut publisher = JournalPublisher::<Tick>::create(
    ///     &name,
    ///     &BusOptions::new(64),
    ///     &JournalOptions::new(dir.join("ticks.journal")),
    /// )?;
    /// publisher.publish(&Tick { key: 1, val: 10 })?;
    /// let state = State::<Tick>::join(&name, &JoinOptions::default())?;
    /// assert!(state.state().is_empty()); // nothing folded yet
    /// # drop(state); publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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

    /// Folds in everything available now, without waiting; returns how many
    /// entries it took (after a rejoin, counting those it threw away).
    ///
    /// # Errors
    /// Only if it had to rejoin (after a loss the journal could not
    /// repair) and that failed: the errors of [`State::join`].
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, journal::{JoinOptions, JournalOptions, JournalPublisher, State}};
    /// # #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    /// # #[repr(C)]
    /// # struct Tick { key: u64, val: u64 }
    /// # impl shmbus::Message for Tick { const NAME: &'static str = "example.Tick"; }
    /// # impl shmbus::journal::Keyed for Tick { fn key(&self) -> u64 { self.key } }
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-state-poll-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-state-poll-{}", std::process::id());
    /// let mut publisher = JournalPublisher::<Tick>::create(
    ///     &name,
    ///     &BusOptions::new(64),
    ///     &JournalOptions::new(dir.join("ticks.journal")),
    /// )?;
    /// publisher.publish(&Tick { key: 1, val: 10 })?;
    /// publisher.publish(&Tick { key: 2, val: 20 })?;
    /// let mut state = State::<Tick>::join(&name, &JoinOptions::default())?;
    /// assert_eq!(state.poll()?, 2); // both, from the journal
    /// assert_eq!(state.poll()?, 0);
    /// publisher.publish(&Tick { key: 2, val: 21 })?;
    /// assert_eq!(state.poll()?, 1); // live, from the ring
    /// assert_eq!(state.state().get(2).map(|t| t.val), Some(21));
    /// # drop(state); publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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

    /// Folds in entries until sequence `seq` is in (true), or the wait ran
    /// out first (false). `Wait::Never` folds in what is there now.
    ///
    /// # Errors
    /// Only if it had to rejoin (after a loss the journal could not
    /// repair) and that failed: the errors of [`State::join`].
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use shmbus::journal::{JoinOptions, JournalOptions, JournalPublisher, State};
    /// use shmbus::{BusOptions, Wait};
    /// # #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    /// # #[repr(C)]
    /// # struct Tick { key: u64, val: u64 }
    /// # impl shmbus::Message for Tick { const NAME: &'static str = "example.Tick"; }
    /// # impl shmbus::journal::Keyed for Tick { fn key(&self) -> u64 { self.key } }
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-state-waitfor-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-state-waitfor-{}", std::process::id());
    /// let mut publisher = JournalPublisher::<Tick>::create(
    ///     &name,
    ///     &BusOptions::new(64),
    ///     &JournalOptions::new(dir.join("ticks.journal")),
    /// )?;
    /// let seq = publisher.publish(&Tick { key: 1, val: 10 })?;
    /// let mut state = State::<Tick>::join(&name, &JoinOptions::default())?;
    /// assert!(state.wait_for(seq, Wait::For(Duration::from_secs(5)))?);
    /// assert!(!state.wait_for(seq + 1, Wait::Never)?); // not published
    /// # drop(state); publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_for(&mut self, seq: u64, wait: Wait) -> Result<bool, JoinError> {
        let deadline = wait.deadline();
        while self
            .state
            .last_seq()
            .is_none_or(|l| (l.wrapping_sub(seq) as i64) < 0)
        {
            let step = match deadline {
                None => Wait::Forever,
                Some(d) => Wait::For(d.saturating_duration_since(Instant::now())),
            };
            match self.sub.recv(step) {
                Some(r) => self.on(r)?,
                // Nothing came within the step: the deadline has passed.
                None if deadline.is_some() => return Ok(false),
                None => {}
            }
        }
        Ok(true)
    }

    /// The state folded so far.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, journal::{JoinOptions, JournalOptions, JournalPublisher, State}};
    /// # #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    /// # #[repr(C)]
    /// # struct Tick { key: u64, val: u64 }
    /// # impl shmbus::Message for Tick { const NAME: &'static str = "example.Tick"; }
    /// # impl shmbus::journal::Keyed for Tick { fn key(&self) -> u64 { self.key } }
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-state-state-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-state-state-{}", std::process::id());
    /// let mut publisher = JournalPublisher::<Tick>::create(
    ///     &name,
    ///     &BusOptions::new(64),
    ///     &JournalOptions::new(dir.join("ticks.journal")),
    /// )?;
    /// publisher.publish(&Tick { key: 4, val: 40 })?;
    /// let mut state = State::<Tick>::join(&name, &JoinOptions::default())?;
    /// state.poll()?;
    /// assert_eq!(state.state().get(4).map(|t| t.val), Some(40));
    /// assert_eq!(state.state().last_seq(), Some(0));
    /// # drop(state); publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn state(&self) -> &KeyedState<T> {
        &self.state
    }

    /// How many times it had to rejoin after an unrepairable loss.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, journal::{JoinOptions, JournalOptions, JournalPublisher, State}};
    /// # #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    /// # #[repr(C)]
    /// # struct Tick { key: u64, val: u64 }
    /// # impl shmbus::Message for Tick { const NAME: &'static str = "example.Tick"; }
    /// # impl shmbus::journal::Keyed for Tick { fn key(&self) -> u64 { self.key } }
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-state-rejoins-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-state-rejoins-{}", std::process::id());
    /// let mut publisher = JournalPublisher::<Tick>::create(
    ///     &name,
    ///     &BusOptions::new(64),
    ///     &JournalOptions::new(dir.join("ticks.journal")),
    /// )?;
    /// let mut state = State::<Tick>::join(&name, &JoinOptions::default())?;
    /// state.poll()?;
    /// assert!(state.subscriber().is_live()); // reading the ring now
    /// for i in 0..200 {
    ///     // Laps its 64-slot ring three times over: the journal repairs it.
    ///     publisher.publish(&Tick { key: i % 4, val: i })?;
    /// }
    /// assert_eq!(state.poll()?, 200);
    /// assert_eq!(state.rejoins(), 0);
    /// assert_eq!(state.state().get(3).map(|t| t.val), Some(199));
    /// # drop(state); publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn rejoins(&self) -> u64 {
        self.rejoins
    }

    /// The subscriber underneath.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, journal::{JoinOptions, JournalOptions, JournalPublisher, State}};
    /// # #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    /// # #[repr(C)]
    /// # struct Tick { key: u64, val: u64 }
    /// # impl shmbus::Message for Tick { const NAME: &'static str = "example.Tick"; }
    /// # impl shmbus::journal::Keyed for Tick { fn key(&self) -> u64 { self.key } }
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-state-subscriber-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-state-subscriber-{}", std::process::id());
    /// let mut publisher = JournalPublisher::<Tick>::create(
    ///     &name,
    ///     &BusOptions::new(64),
    ///     &JournalOptions::new(dir.join("ticks.journal")),
    /// )?;
    /// publisher.publish(&Tick { key: 1, val: 10 })?;
    /// let mut state = State::<Tick>::join(&name, &JoinOptions::default())?;
    /// state.poll()?;
    /// assert!(state.subscriber().is_live()); // past the journal, on the ring
    /// assert_eq!(state.subscriber().position(), 1);
    /// # drop(state); publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn subscriber(&self) -> &JournalSubscriber<T> {
        &self.sub
    }
}
