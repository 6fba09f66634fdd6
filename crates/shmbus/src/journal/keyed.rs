//! Keyed messages: the key a journal compacts by and [`State`](super::State)
//! folds by, for typed messages ([`Keyed`]) and raw ones ([`raw_key`]),
//! and [`KeyedPayload`], the payloads a state folds: either of them.

/// A message with a key: the journal keeps the last message per key when it
/// compacts, and [`State`](super::State) folds messages into last-value-per-key.
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
///
/// impl shmbus::Message for Tick { const NAME: &'static str = "md.Tick"; }
/// impl Keyed for Tick { fn key(&self) -> u64 { self.key } }
///
/// # let dir = std::env::temp_dir().join(format!("shmbus-doc-keyed-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// # let name = format!("/dev/shm/shmbus-doc-keyed-{}", std::process::id());
/// let mut publisher = journal::Publisher::<Tick>::create(
///     &name, &BusOptions::new(4096), &journal::Options::new(dir.join("ticks.journal")))?;
/// publisher.compact_after(Some(1_000_000));
/// publisher.publish(&Tick { key: 1, val: 41 })?;
/// let last = publisher.publish(&Tick { key: 1, val: 42 })?;
/// assert!(publisher.compact()); // one record per key, in the background
///
/// let mut state = State::<Tick>::join(&name, &JoinOptions::default())?;
/// assert!(state.wait_for(last, Wait::For(Duration::from_secs(5)))?);
/// assert_eq!(state.state().get(1).map(|t| t.val), Some(42));
/// # drop(state); publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Keyed: crate::wire::Message {
    /// The key this message updates.
    ///
    /// # Examples
    /// ```
    /// #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    /// #[repr(C)]
    /// struct Price { instrument: u32, cents: u32 }
    /// # impl shmbus::Message for Price { const NAME: &'static str = "example.Price"; }
    /// impl shmbus::journal::Keyed for Price {
    ///     fn key(&self) -> u64 { u64::from(self.instrument) }
    /// }
    /// use shmbus::journal::Keyed;
    /// assert_eq!(Price { instrument: 7, cents: 100 }.key(), 7);
    /// ```
    fn key(&self) -> u64;
}

/// The key of a raw message: its first 8 bytes, little-endian (fewer bytes
/// are zero-extended). The CLI's journals compact by it.
pub fn raw_key(msg: &[u8]) -> u64 {
    let mut k = [0u8; 8];
    let n = msg.len().min(8);
    k[..n].copy_from_slice(&msg[..n]);
    u64::from_le_bytes(k)
}

mod sealed {
    pub trait Sealed {}
    impl<T: super::Keyed> Sealed for T {}
    impl Sealed for [u8] {}
}

/// What [`State`](super::State) and [`KeyedState`](super::KeyedState)
/// fold: a [`Keyed`] message `T` (its key is [`Keyed::key`], its value a
/// `T`), or `[u8]` (raw bytes: the key is the first 8 bytes,
/// little-endian, as a raw journal compacts by; the value a `Vec<u8>`,
/// read as a `&[u8]`). The value kept per key is the payload's
/// [`ToOwned::Owned`].
///
/// Sealed: these two are the keyed payloads there are.
///
/// # Examples
/// ```
/// use shmbus::journal::KeyedState;
///
/// // Raw: keyed by the first 8 bytes.
/// let mut raw = KeyedState::<[u8]>::new();
/// raw.apply_bytes(0, &[1, 0, 0, 0, 0, 0, 0, 0, b'a']);
/// raw.apply_bytes(1, &[1, 0, 0, 0, 0, 0, 0, 0, b'b']);
/// assert_eq!(raw.get(1), Some(&[1, 0, 0, 0, 0, 0, 0, 0, b'b'][..]));
/// assert_eq!(raw.len(), 1);
/// ```
pub trait KeyedPayload: crate::bus::Payload + ToOwned + sealed::Sealed {
    /// The key `msg` updates.
    #[doc(hidden)]
    fn key_of(msg: &Self) -> u64;
    /// The message's bytes, as the journal holds them.
    #[doc(hidden)]
    fn bytes_of(msg: &Self) -> &[u8];
    /// Calls `f` with the message whose bytes (the bus's message size,
    /// checked against the type when the subscriber joined) are `bytes`.
    #[doc(hidden)]
    fn with_msg<R>(bytes: &[u8], f: impl FnOnce(&Self) -> R) -> R;
}

impl<T: Keyed> KeyedPayload for T {
    fn key_of(msg: &Self) -> u64 {
        msg.key()
    }
    fn bytes_of(msg: &Self) -> &[u8] {
        bytemuck::bytes_of(msg)
    }
    fn with_msg<R>(bytes: &[u8], f: impl FnOnce(&Self) -> R) -> R {
        f(&bytemuck::pod_read_unaligned(bytes))
    }
}

impl KeyedPayload for [u8] {
    fn key_of(msg: &Self) -> u64 {
        raw_key(msg)
    }
    fn bytes_of(msg: &Self) -> &[u8] {
        msg
    }
    fn with_msg<R>(bytes: &[u8], f: impl FnOnce(&Self) -> R) -> R {
        f(bytes)
    }
}
