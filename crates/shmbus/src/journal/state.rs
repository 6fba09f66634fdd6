//! Last value per key, folded from a journaled bus: the use case the
//! journal and its compaction are built for. Typed ([`Keyed`] messages)
//! or raw (`[u8]`, keyed by the first 8 bytes), as [`KeyedPayload`] says.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::collections::hash_map::Entry as MapEntry;
use std::time::Instant;

use super::error::JoinError;
use super::format::{check, padded_words};
use super::keyed::{Keyed, KeyedPayload};
use super::options::JoinOptions;
use super::subscriber::Subscriber;
use crate::bus::Received;
use crate::wait::Wait;

/// A map from key to the last message for it, and the sequence it is at:
/// what [`State`] keeps up to date from a journaled bus, usable alone to
/// fold any stream of keyed messages: [`Keyed`] ones, or raw bytes
/// (`KeyedState<[u8]>`, keyed by their first 8 bytes, little-endian).
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
///
/// // Raw: the key is the first 8 bytes.
/// let mut raw = KeyedState::<[u8]>::new();
/// raw.apply_bytes(0, &[7, 0, 0, 0, 0, 0, 0, 0, b'x']);
/// assert_eq!(raw.get(7), Some(&[7, 0, 0, 0, 0, 0, 0, 0, b'x'][..]));
/// ```
pub struct KeyedState<T: ?Sized + KeyedPayload> {
    map: HashMap<u64, T::Owned>,
    last_seq: Option<u64>,
}

impl<T: ?Sized + KeyedPayload> Clone for KeyedState<T>
where
    T::Owned: Clone,
{
    fn clone(&self) -> Self {
        KeyedState {
            map: self.map.clone(),
            last_seq: self.last_seq,
        }
    }
}

impl<T: ?Sized + KeyedPayload> std::fmt::Debug for KeyedState<T>
where
    T::Owned: std::fmt::Debug,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyedState")
            .field("map", &self.map)
            .field("last_seq", &self.last_seq)
            .finish()
    }
}

impl<T: ?Sized + KeyedPayload> Default for KeyedState<T> {
    fn default() -> Self {
        KeyedState {
            map: HashMap::new(),
            last_seq: None,
        }
    }
}

impl<T: Keyed> KeyedState<T> {
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
}

impl KeyedState<[u8]> {
    /// Folds in raw message `msg` of sequence `seq`: a copy of it becomes
    /// the last value of its key (its first 8 bytes, little-endian; fewer
    /// are zero-extended), and `seq` the state's last sequence (as given).
    /// The raw case of the typed `apply`, named apart so that
    /// `KeyedState::new()` followed by a typed `apply` still infers its type.
    ///
    /// # Examples
    /// ```
    /// let mut state = shmbus::journal::KeyedState::<[u8]>::new();
    /// state.apply_bytes(7, b"\x03\0\0\0\0\0\0\0one");
    /// state.apply_bytes(8, b"\x03\0\0\0\0\0\0\0two");
    /// assert_eq!(state.get(3), Some(&b"\x03\0\0\0\0\0\0\0two"[..]));
    /// assert_eq!(state.last_seq(), Some(8));
    /// ```
    #[inline]
    pub fn apply_bytes(&mut self, seq: u64, msg: &[u8]) {
        self.put(seq, msg);
    }
}

impl<T: ?Sized + KeyedPayload> KeyedState<T> {
    /// Folds in `msg` by reference: the value kept is its owned copy, and
    /// a key's old value is reused (a raw one keeps its allocation).
    fn put(&mut self, seq: u64, msg: &T) {
        match self.map.entry(T::key_of(msg)) {
            MapEntry::Occupied(mut e) => msg.clone_into(e.get_mut()),
            MapEntry::Vacant(e) => {
                e.insert(msg.to_owned());
            }
        }
        self.last_seq = Some(seq);
    }

    /// Folds in the message whose bytes, as the journal holds them, are
    /// `bytes`.
    fn fold_bytes(&mut self, seq: u64, bytes: &[u8]) {
        T::with_msg(bytes, |msg| self.put(seq, msg));
    }

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
        self.map.get(&key).map(Borrow::borrow)
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
        self.map.iter().map(|(k, v)| (*k, v.borrow()))
    }

    /// An order-independent digest of every (key, message) pair: two states
    /// with the same digest hold the same values, with overwhelming odds.
    /// Sequences are not part of it. A raw state and a typed one of the
    /// same messages have the same digest.
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
        self.map.iter().fold(0u64, |acc, (k, v)| {
            let bytes = T::bytes_of(v.borrow());
            acc.wrapping_add(check(*k, padded_words(bytes, bytes.len().div_ceil(8) * 8)))
        })
    }
}

/// A [`KeyedState`] kept up to date from a journaled bus: joined from the
/// journal, then fed live. It rejoins by itself after a loss the journal
/// cannot repair, so it always converges to the publisher's state. Typed
/// (`T: Keyed`) or raw (`State<[u8]>`: any journaled bus, each message
/// keyed by its first 8 bytes, as a raw journal compacts).
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use shmbus::journal::{self, JoinOptions, Keyed, State};
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
/// let mut publisher = journal::Publisher::<Tick>::create(
///     &name,
///     &BusOptions::new(64),
///     &journal::Options::new(dir.join("ticks.journal")),
/// )?;
/// publisher.publish(&Tick { key: 1, val: 10 })?;
/// publisher.publish(&Tick { key: 2, val: 20 })?;
/// let last = publisher.publish(&Tick { key: 1, val: 11 })?;
///
/// let mut state = State::<Tick>::join(&name, &JoinOptions::default())?;
/// assert!(state.wait_for(last, Wait::For(Duration::from_secs(5)))?);
/// assert_eq!(state.state().len(), 2);
/// assert_eq!(state.state().get(1).map(|t| t.val), Some(11));
///
/// // The same bus, raw: each value is the message's bytes.
/// let mut raw = State::<[u8]>::join(&name, &JoinOptions::default())?;
/// assert!(raw.wait_for(last, Wait::For(Duration::from_secs(5)))?);
/// assert_eq!(raw.state().get(1), Some(&[1, 0, 0, 0, 0, 0, 0, 0, 11, 0, 0, 0, 0, 0, 0, 0][..]));
/// assert_eq!(raw.state().digest(), state.state().digest());
/// # drop((state, raw)); publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct State<T: ?Sized + KeyedPayload> {
    name: String,
    opts: JoinOptions,
    sub: Subscriber<T>,
    state: KeyedState<T>,
    rejoins: u64,
    /// A loss was seen and the rejoin that repairs it has not succeeded:
    /// `sub` is past the gap, so `state` must not fold another entry
    /// until a rejoin replaces both.
    stale: bool,
}

impl<T: ?Sized + KeyedPayload> std::fmt::Debug for State<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("name", &self.name)
            .field("subscriber", &self.sub)
            .field("rejoins", &self.rejoins)
            .finish_non_exhaustive()
    }
}

impl<T: ?Sized + KeyedPayload> State<T> {
    /// Joins `name` (as [`Subscriber::join`]) and folds nothing yet
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
    /// use shmbus::{BusOptions, journal::{self, JoinOptions, State}};
    /// # #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    /// # #[repr(C)]
    /// # struct Tick { key: u64, val: u64 }
    /// # impl shmbus::Message for Tick { const NAME: &'static str = "example.Tick"; }
    /// # impl shmbus::journal::Keyed for Tick { fn key(&self) -> u64 { self.key } }
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-state-join-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-state-join-{}", std::process::id());
    /// let mut publisher = journal::Publisher::<Tick>::create(
    ///     &name,
    ///     &BusOptions::new(64),
    ///     &journal::Options::new(dir.join("ticks.journal")),
    /// )?;
    /// publisher.publish(&Tick { key: 1, val: 10 })?;
    /// let state = State::<Tick>::join(&name, &JoinOptions::default())?;
    /// assert!(state.state().is_empty()); // nothing folded yet
    /// # drop(state); publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn join(name: &str, opts: &JoinOptions) -> Result<Self, JoinError> {
        Self::join_cancellable(name, opts, || true)
    }

    /// As [`join`](Self::join), asking `go_on` at least every 10 ms while
    /// it waits for the publisher's flush (as
    /// [`Subscriber::join_cancellable`]): `false` ends the join
    /// with [`JoinError::Cancelled`].
    ///
    /// # Errors
    /// As [`join`](Self::join), and [`JoinError::Cancelled`].
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, journal::{self, JoinOptions, State}};
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-state-cjoin-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-state-cjoin-{}", std::process::id());
    /// let mut publisher = journal::Publisher::<[u8]>::create(
    ///     &name,
    ///     &BusOptions::new(64).msg_size(16),
    ///     &journal::Options::new(dir.join("raw.journal")),
    /// )?;
    /// publisher.publish(b"\x01\0\0\0\0\0\0\0one")?;
    /// // A live publisher serves the flush at once: `go_on` is not needed.
    /// let mut state = State::<[u8]>::join_cancellable(&name, &JoinOptions::default(), || true)?;
    /// assert_eq!(state.poll()?, 1);
    /// assert_eq!(&state.state().get(1).expect("key 1")[8..11], b"one");
    /// # drop(state); publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn join_cancellable(
        name: &str,
        opts: &JoinOptions,
        go_on: impl FnMut() -> bool,
    ) -> Result<Self, JoinError> {
        Ok(State {
            name: name.to_owned(),
            opts: opts.clone(),
            sub: Subscriber::join_cancellable(name, opts, go_on)?,
            state: KeyedState::new(),
            rejoins: 0,
            stale: false,
        })
    }

    /// After lost updates: start again from the journal, whose snapshot
    /// plus tail is the whole state.
    /// A failed rejoin leaves the state stale, and the next poll or wait
    /// tries again before it folds anything.
    fn rejoin(&mut self, go_on: &mut dyn FnMut() -> bool) -> Result<(), JoinError> {
        self.stale = true;
        self.sub = Subscriber::join_cancellable(&self.name, &self.opts, go_on)?;
        self.state = KeyedState::new();
        self.rejoins += 1;
        self.stale = false;
        Ok(())
    }

    /// Folds in everything available now, without waiting; returns how many
    /// entries it took (after a rejoin, counting those it threw away).
    ///
    /// # Errors
    /// Only if it had to rejoin (after a loss the journal could not
    /// repair) and that failed: the errors of [`State::join`]. The state
    /// then folds nothing more until a later call rejoins.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, journal::{self, JoinOptions, State}};
    /// # #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    /// # #[repr(C)]
    /// # struct Tick { key: u64, val: u64 }
    /// # impl shmbus::Message for Tick { const NAME: &'static str = "example.Tick"; }
    /// # impl shmbus::journal::Keyed for Tick { fn key(&self) -> u64 { self.key } }
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-state-poll-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-state-poll-{}", std::process::id());
    /// let mut publisher = journal::Publisher::<Tick>::create(
    ///     &name,
    ///     &BusOptions::new(64),
    ///     &journal::Options::new(dir.join("ticks.journal")),
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
        self.poll_cancellable(|| true)
    }

    /// As [`poll`](Self::poll), asking `go_on` while a rejoin waits for
    /// the publisher's flush (as [`join_cancellable`](Self::join_cancellable)).
    ///
    /// # Errors
    /// As [`poll`](Self::poll), and [`JoinError::Cancelled`].
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, journal::{self, JoinOptions, State}};
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-state-cpoll-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-state-cpoll-{}", std::process::id());
    /// let mut publisher = journal::Publisher::<[u8]>::create(
    ///     &name,
    ///     &BusOptions::new(64).msg_size(16),
    ///     &journal::Options::new(dir.join("raw.journal")),
    /// )?;
    /// publisher.publish(b"\x02\0\0\0\0\0\0\0two")?;
    /// let mut state = State::<[u8]>::join(&name, &JoinOptions::default())?;
    /// assert_eq!(state.poll_cancellable(|| true)?, 1);
    /// assert_eq!(state.state().len(), 1);
    /// # drop(state); publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn poll_cancellable(&mut self, go_on: impl FnMut() -> bool) -> Result<usize, JoinError> {
        self.poll_each(go_on, |_, _| {})
    }

    /// [`poll_cancellable`](Self::poll_cancellable), calling `each` with
    /// the key and bytes of every entry it folds (after a rejoin, the
    /// journal's again): what keeps a blackboard up to date (`board`).
    pub(crate) fn poll_each(
        &mut self,
        mut go_on: impl FnMut() -> bool,
        mut each: impl FnMut(u64, &[u8]),
    ) -> Result<usize, JoinError> {
        let mut n = 0;
        if self.stale {
            self.rejoin(&mut go_on)?;
        }
        loop {
            let mut lagged = false;
            let state = &mut self.state;
            n += self.sub.drain_bytes(|r| match r {
                Received::Message(e) if !lagged => {
                    state.fold_bytes(e.seq, e.msg);
                    each(T::with_msg(e.msg, |m| T::key_of(m)), e.msg);
                }
                _ => lagged = true,
            });
            if !lagged {
                return Ok(n);
            }
            self.rejoin(&mut go_on)?;
        }
    }

    /// Folds in entries until sequence `seq` is in (true), or the wait ran
    /// out first (false). `Wait::Never` folds in what is there now.
    ///
    /// # Errors
    /// Only if it had to rejoin (after a loss the journal could not
    /// repair) and that failed: the errors of [`State::join`]. The state
    /// then folds nothing more until a later call rejoins.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use shmbus::journal::{self, JoinOptions, State};
    /// use shmbus::{BusOptions, Wait};
    /// # #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    /// # #[repr(C)]
    /// # struct Tick { key: u64, val: u64 }
    /// # impl shmbus::Message for Tick { const NAME: &'static str = "example.Tick"; }
    /// # impl shmbus::journal::Keyed for Tick { fn key(&self) -> u64 { self.key } }
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-state-waitfor-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-state-waitfor-{}", std::process::id());
    /// let mut publisher = journal::Publisher::<Tick>::create(
    ///     &name,
    ///     &BusOptions::new(64),
    ///     &journal::Options::new(dir.join("ticks.journal")),
    /// )?;
    /// let seq = publisher.publish(&Tick { key: 1, val: 10 })?;
    /// let mut state = State::<Tick>::join(&name, &JoinOptions::default())?;
    /// assert!(state.wait_for(seq, Wait::For(Duration::from_secs(5)))?);
    /// assert!(!state.wait_for(seq + 1, Wait::Never)?); // not published
    /// # drop(state); publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_for(&mut self, seq: u64, wait: Wait) -> Result<bool, JoinError> {
        self.wait_for_cancellable(seq, wait, || true)
    }

    /// As [`wait_for`](Self::wait_for), asking `go_on` while a rejoin
    /// waits for the publisher's flush (as
    /// [`join_cancellable`](Self::join_cancellable)).
    ///
    /// # Errors
    /// As [`wait_for`](Self::wait_for), and [`JoinError::Cancelled`].
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use shmbus::{BusOptions, Wait, journal::{self, JoinOptions, State}};
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-state-cwait-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-state-cwait-{}", std::process::id());
    /// let mut publisher = journal::Publisher::<[u8]>::create(
    ///     &name,
    ///     &BusOptions::new(64).msg_size(16),
    ///     &journal::Options::new(dir.join("raw.journal")),
    /// )?;
    /// let mut state = State::<[u8]>::join(&name, &JoinOptions::default())?;
    /// let seq = publisher.publish(b"\x03\0\0\0\0\0\0\0three")?;
    /// assert!(state.wait_for_cancellable(seq, Wait::For(Duration::from_secs(5)), || true)?);
    /// assert_eq!(state.state().last_seq(), Some(seq));
    /// # drop(state); publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_for_cancellable(
        &mut self,
        seq: u64,
        wait: Wait,
        go_on: impl FnMut() -> bool,
    ) -> Result<bool, JoinError> {
        self.wait_for_each(seq, wait, go_on, |_, _| {})
    }

    /// [`wait_for_cancellable`](Self::wait_for_cancellable), calling
    /// `each` as [`poll_each`](Self::poll_each) does.
    pub(crate) fn wait_for_each(
        &mut self,
        seq: u64,
        wait: Wait,
        mut go_on: impl FnMut() -> bool,
        mut each: impl FnMut(u64, &[u8]),
    ) -> Result<bool, JoinError> {
        let deadline = wait.deadline();
        if self.stale {
            self.rejoin(&mut go_on)?;
        }
        while self
            .state
            .last_seq()
            .is_none_or(|l| (l.wrapping_sub(seq) as i64) < 0)
        {
            let step = match deadline {
                None => Wait::Forever,
                Some(d) => Wait::For(d.saturating_duration_since(Instant::now())),
            };
            match self.sub.recv_bytes(step) {
                Some(Received::Message(e)) => {
                    self.state.fold_bytes(e.seq, e.msg);
                    each(T::with_msg(e.msg, |m| T::key_of(m)), e.msg);
                }
                Some(Received::Lagged { .. }) => self.rejoin(&mut go_on)?,
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
    /// use shmbus::{BusOptions, journal::{self, JoinOptions, State}};
    /// # #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    /// # #[repr(C)]
    /// # struct Tick { key: u64, val: u64 }
    /// # impl shmbus::Message for Tick { const NAME: &'static str = "example.Tick"; }
    /// # impl shmbus::journal::Keyed for Tick { fn key(&self) -> u64 { self.key } }
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-state-state-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-state-state-{}", std::process::id());
    /// let mut publisher = journal::Publisher::<Tick>::create(
    ///     &name,
    ///     &BusOptions::new(64),
    ///     &journal::Options::new(dir.join("ticks.journal")),
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
    /// use shmbus::{BusOptions, journal::{self, JoinOptions, State}};
    /// # #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    /// # #[repr(C)]
    /// # struct Tick { key: u64, val: u64 }
    /// # impl shmbus::Message for Tick { const NAME: &'static str = "example.Tick"; }
    /// # impl shmbus::journal::Keyed for Tick { fn key(&self) -> u64 { self.key } }
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-state-rejoins-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-state-rejoins-{}", std::process::id());
    /// let mut publisher = journal::Publisher::<Tick>::create(
    ///     &name,
    ///     &BusOptions::new(64),
    ///     &journal::Options::new(dir.join("ticks.journal")),
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
    /// use shmbus::{BusOptions, journal::{self, JoinOptions, State}};
    /// # #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    /// # #[repr(C)]
    /// # struct Tick { key: u64, val: u64 }
    /// # impl shmbus::Message for Tick { const NAME: &'static str = "example.Tick"; }
    /// # impl shmbus::journal::Keyed for Tick { fn key(&self) -> u64 { self.key } }
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-state-subscriber-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-state-subscriber-{}", std::process::id());
    /// let mut publisher = journal::Publisher::<Tick>::create(
    ///     &name,
    ///     &BusOptions::new(64),
    ///     &journal::Options::new(dir.join("ticks.journal")),
    /// )?;
    /// publisher.publish(&Tick { key: 1, val: 10 })?;
    /// let mut state = State::<Tick>::join(&name, &JoinOptions::default())?;
    /// state.poll()?;
    /// assert!(state.subscriber().is_live()); // past the journal, on the ring
    /// assert_eq!(state.subscriber().position(), 1);
    /// # drop(state); publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn subscriber(&self) -> &Subscriber<T> {
        &self.sub
    }
}
