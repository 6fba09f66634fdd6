//! [`Subscriber`]: one reader of a bus, at its own cursor.

use crate::wire::Message;

use super::Cursor;
use super::Received;
use super::activity::Activity;
use super::payload::Payload;
use super::ring::{Poll, Ring};
use super::stamp::ahead;
use crate::mem::{DefaultRegion, Region};
use crate::options::Start;
use crate::wait::{Wait, WaitStrategy};

/// Reads messages of payload `T` from a bus, at its own cursor. It never
/// slows the publisher: if it falls a whole ring behind it is lapped, and
/// its next receive says how many messages it lost
/// ([`Received::Lagged`]) and goes on half a ring behind the newest.
/// Over its life, messages delivered plus all `skipped` equal the messages
/// published since it started, exactly.
///
/// The data pages are mapped read-only into a subscriber of a
/// single-publisher bus: a stray store faults, never corrupts the bus.
///
/// # Examples
/// ```
/// use shmbus::{BusOptions, OpenOptions, Publisher, Received, Start, Subscriber, Wait};
///
/// # let name = format!("/dev/shm/shmbus-doc-subscriber-{}", std::process::id());
/// let mut publisher = Publisher::<u64>::create(&name, &BusOptions::new(4))?;
/// let mut subscriber =
///     Subscriber::<u64>::open(&name, &OpenOptions::default().start(Start::Oldest))?;
/// for i in 0..6 {
///     publisher.publish(&i);
/// }
/// // Lapped: it re-syncs half a ring (2) behind the newest.
/// assert_eq!(subscriber.recv(Wait::Never), Some(Received::Lagged { skipped: 4 }));
/// assert_eq!(subscriber.recv(Wait::Never), Some(Received::Message(4)));
/// shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Subscriber<T: ?Sized + Payload, R: Region = DefaultRegion> {
    pub(crate) ring: Ring<R>,
    /// Its position, wait strategy and registry line.
    cursor: Cursor,
    /// The pid that joined the gating set: a copy of the handle in a
    /// forked child leaves the parent's entry alone.
    origin: u32,
    /// The last message, for raw subscribers (which lend it; sized once,
    /// at open); empty for typed ones (which return theirs by value).
    buf: Vec<u8>,
    _payload: std::marker::PhantomData<fn() -> Box<T>>,
}

impl<T: ?Sized + Payload, R: Region> std::fmt::Debug for Subscriber<T, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscriber")
            .field("pos", &self.cursor.pos)
            .field("capacity", &self.ring.capacity())
            .field("msg_size", &self.ring.msg_size())
            .field("wait", &self.cursor.strategy)
            .finish_non_exhaustive()
    }
}

impl<T: ?Sized + Payload, R: Region> Subscriber<T, R> {
    pub(crate) fn from_parts(ring: Ring<R>, start: Start, wait: WaitStrategy) -> Self {
        let pos = ring.start_at(start);
        let mut subscriber = Subscriber {
            ring,
            cursor: Cursor::new(pos, wait),
            origin: 0,
            buf: Vec::new(),
            _payload: std::marker::PhantomData,
        };
        if T::is_raw() {
            subscriber.buf = vec![0; subscriber.ring.msg_size()];
        }
        subscriber
    }

    /// Whether the publisher waits for this subscriber: it opened
    /// lossless and has not been evicted (held the publisher back for the
    /// bus's eviction timeout, or found so by a new publisher). An evicted
    /// subscriber goes on as a lossy one, and a lag it missed is reported
    /// as [`Received::Lagged`](crate::Received::Lagged), exactly.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Publisher, Start, WaitStrategy};
    /// let publisher = Publisher::<u64, _>::on_heap(8)?;
    /// let lossy = publisher.subscribe(Start::Next, WaitStrategy::default());
    /// let lossless = publisher.subscribe_lossless(Start::Next, WaitStrategy::default())?;
    /// assert!(!lossy.is_lossless());
    /// assert!(lossless.is_lossless());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_lossless(&self) -> bool {
        self.cursor
            .activity
            .gating()
            .is_some_and(|j| self.ring.is_gating(j.entry))
    }

    /// Joins the gating set of a heap ring: takes a free entry's line
    /// (CAS of its `CONTRACT`, the heap's registry, see `gate`).
    pub(crate) fn join_heap(&mut self) -> Result<(), crate::bus::LosslessRefused> {
        use crate::sync::Ordering;
        use crate::wire::{contract, subscriber_line};
        let entries = self.ring.geometry().entries();
        let region = self.ring.region();
        let entry = (0..entries)
            .find(|&i| {
                region
                    .word32(self.ring.line_at(i) + subscriber_line::CONTRACT)
                    .compare_exchange(
                        contract::LOSSY,
                        contract::LOSSLESS,
                        Ordering::AcqRel,
                        Ordering::Relaxed,
                    )
                    .is_ok()
            })
            .ok_or(crate::bus::LosslessRefused::RegistryFull { entries })?;
        // LOSSLESS, as the CAS above left it: storing 0 would give the
        // entry away.
        self.cursor.activity = Activity::claim(
            region,
            self.ring.line_at(entry),
            self.cursor.pos,
            contract::LOSSLESS,
        );
        match self.ring.join(entry) {
            Ok(joined) => {
                self.cursor.activity.set_joined(joined);
                self.origin = std::process::id();
                Ok(())
            }
            Err(e) => {
                self.release_heap_entry(entry);
                self.cursor.activity = Activity::none();
                Err(e)
            }
        }
    }

    fn release_heap_entry(&self, entry: usize) {
        use crate::sync::Ordering;
        // Release: whoever takes the entry next (its CAS is AcqRel) sees
        // the bit cleared before this.
        self.ring
            .region()
            .word32(self.ring.line_at(entry) + crate::wire::subscriber_line::CONTRACT)
            .store(crate::wire::contract::LOSSY, Ordering::Release);
    }

    /// The sequence number this subscriber will read next.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Publisher, Start, Wait, WaitStrategy};
    /// let mut publisher = Publisher::<u64, _>::on_heap(8)?;
    /// let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default());
    /// publisher.publish(&1);
    /// subscriber.recv(Wait::Never);
    /// assert_eq!(subscriber.position(), 1);
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn position(&self) -> u64 {
        self.cursor.pos
    }

    /// Messages published but not yet read (more than the capacity means
    /// the next receive reports a lag).
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Publisher, Start, WaitStrategy};
    /// let mut publisher = Publisher::<u64, _>::on_heap(8)?;
    /// let subscriber = publisher.subscribe(Start::Next, WaitStrategy::default());
    /// publisher.publish(&1);
    /// publisher.publish(&2);
    /// assert_eq!(subscriber.pending(), 2);
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn pending(&self) -> u64 {
        ahead(self.ring.head(), self.cursor.pos).max(0) as u64
    }

    /// The publisher generation now on the bus; it changes when a publisher
    /// re-attaches after a restart.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Publisher, Start, WaitStrategy};
    /// let publisher = Publisher::<u64, _>::on_heap(8)?;
    /// let subscriber = publisher.subscribe(Start::Next, WaitStrategy::default());
    /// assert_eq!(subscriber.epoch(), 1);
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn epoch(&self) -> u64 {
        self.ring.epoch()
    }

    /// Number of slots.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Publisher, Start, WaitStrategy};
    /// let publisher = Publisher::<u64, _>::on_heap(8)?;
    /// assert_eq!(publisher.subscribe(Start::Next, WaitStrategy::default()).slots(), 8);
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn slots(&self) -> u64 {
        self.ring.capacity()
    }

    /// The bus's message size in bytes.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Publisher, Start, WaitStrategy};
    /// let publisher = Publisher::<u32, _>::on_heap(8)?;
    /// assert_eq!(publisher.subscribe(Start::Next, WaitStrategy::default()).msg_size(), 4);
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn msg_size(&self) -> usize {
        self.ring.msg_size()
    }
}

impl<T: ?Sized + Payload, R: Region> Drop for Subscriber<T, R> {
    fn drop(&mut self) {
        let Some(joined) = self.cursor.activity.joined() else {
            return;
        };
        // A copy in a forked child owns nothing of the parent's entry
        // (the `Origin` pattern of stream handles).
        if self.origin != std::process::id() {
            return;
        }
        if self.ring.is_gating(joined.entry) {
            self.ring.leave(joined);
        }
        if !self.ring.geometry().has_registry() {
            self.release_heap_entry(joined.entry);
        }
    }
}

impl<T: Message, R: Region> Subscriber<T, R> {
    /// The next message, a lag report, or `None` if the wait ran out with
    /// nothing new. `recv(Wait::Never)` never blocks; so does
    /// [`Subscriber::try_recv`].
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use shmbus::{Publisher, Received, Start, Wait, WaitStrategy};
    /// let mut publisher = Publisher::<u64, _>::on_heap(8)?;
    /// let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default());
    /// assert_eq!(subscriber.recv(Wait::For(Duration::from_millis(1))), None);
    /// publisher.publish(&9);
    /// assert_eq!(subscriber.recv(Wait::Forever), Some(Received::Message(9)));
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    #[inline]
    pub fn recv(&mut self, wait: Wait) -> Option<Received<T>> {
        let mut msg = T::zeroed();
        let dst = bytemuck::bytes_of_mut(&mut msg);
        match self.ring.recv(&mut self.cursor, dst, wait) {
            Poll::Message => Some(Received::Message(msg)),
            Poll::Lagged(skipped) | Poll::Lapped(skipped) => Some(Received::Lagged { skipped }),
            Poll::Empty => None,
        }
    }

    /// `recv(Wait::Never)`: the hot-loop spelling.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Publisher, Start, WaitStrategy};
    /// let publisher = Publisher::<u64, _>::on_heap(8)?;
    /// let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default());
    /// assert_eq!(subscriber.try_recv(), None);
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    #[inline]
    pub fn try_recv(&mut self) -> Option<Received<T>> {
        self.recv(Wait::Never)
    }

    /// The newest message on the bus, without moving this subscriber.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Publisher, Start, WaitStrategy};
    /// let mut publisher = Publisher::<u64, _>::on_heap(8)?;
    /// let subscriber = publisher.subscribe(Start::Next, WaitStrategy::default());
    /// publisher.publish(&1);
    /// publisher.publish(&2);
    /// assert_eq!(subscriber.latest(), Some(2));
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn latest(&self) -> Option<T> {
        let mut msg = T::zeroed();
        self.ring
            .latest(bytemuck::bytes_of_mut(&mut msg))
            .map(|_| msg)
    }
}

impl<R: Region> Subscriber<[u8], R> {
    /// As the typed `recv`; the message borrows the subscriber's buffer
    /// (the bus's message size, zero-padded as published).
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Publisher, Received, Start, Wait, WaitStrategy};
    /// let mut publisher = Publisher::<[u8], _>::on_heap_bytes(4, 8)?;
    /// let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default());
    /// publisher.publish(b"ab")?;
    /// assert_eq!(subscriber.recv(Wait::Never), Some(Received::Message(&b"ab\0\0"[..])));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn recv(&mut self, wait: Wait) -> Option<Received<&[u8]>> {
        match self.ring.recv(&mut self.cursor, &mut self.buf, wait) {
            Poll::Message => Some(Received::Message(&self.buf)),
            Poll::Lagged(skipped) | Poll::Lapped(skipped) => Some(Received::Lagged { skipped }),
            Poll::Empty => None,
        }
    }

    /// `recv(Wait::Never)`.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Publisher, Start, WaitStrategy};
    /// let publisher = Publisher::<[u8], _>::on_heap_bytes(4, 8)?;
    /// let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default());
    /// assert_eq!(subscriber.try_recv(), None);
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    #[inline]
    pub fn try_recv(&mut self) -> Option<Received<&[u8]>> {
        self.recv(Wait::Never)
    }

    /// The message the last receive returned, for callers that must end
    /// that borrow before using it.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Publisher, Start, WaitStrategy};
    /// let mut publisher = Publisher::<[u8], _>::on_heap_bytes(2, 8)?;
    /// let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default());
    /// publisher.publish(b"hi")?;
    /// subscriber.try_recv();
    /// assert_eq!(subscriber.message(), b"hi");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn message(&self) -> &[u8] {
        &self.buf
    }

    /// The newest message on the bus, without moving this subscriber.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Publisher, Start, WaitStrategy};
    /// let mut publisher = Publisher::<[u8], _>::on_heap_bytes(2, 8)?;
    /// let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default());
    /// publisher.publish(b"hi")?;
    /// assert_eq!(subscriber.latest(), Some(&b"hi"[..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn latest(&mut self) -> Option<&[u8]> {
        self.ring.latest(&mut self.buf).map(|_| &self.buf[..])
    }
}

#[cfg(not(loom))]
mod shm {
    use super::*;
    use crate::error::OpenError;
    use crate::mem::ShmRegion;
    use crate::options::OpenOptions;
    use crate::segment::Role;

    impl<T: ?Sized + Payload> Subscriber<T, ShmRegion> {
        /// Opens the bus named `name` and starts where `opts` says. A typed
        /// subscriber checks the bus's message type; a raw one (`[u8]`)
        /// opens a bus of any type.
        ///
        /// # Errors
        /// [`OpenError::NotFound`], [`OpenError::PermissionDenied`],
        /// [`OpenError::Symlink`], [`OpenError::NotAFile`],
        /// [`OpenError::NotInitialized`] (its creator has not finished
        /// within `init_timeout`), [`OpenError::BadMagic`],
        /// [`OpenError::VersionMismatch`], [`OpenError::WrongKind`],
        /// [`OpenError::TypeMismatch`], [`OpenError::Truncated`],
        /// [`OpenError::InvalidGeometry`], [`OpenError::Locked`],
        /// [`OpenError::Mlock`], [`OpenError::Name`], or another system
        /// error ([`OpenError::Io`]). Opened lossless
        /// ([`OpenOptions::lossless`]), [`OpenError::Lossless`]: the bus
        /// refuses them, allows no more, or its registry is full (any kind
        /// of broadcast bus takes them otherwise).
        ///
        /// # Examples
        /// ```
        /// use shmbus::{BusOptions, OpenOptions, Publisher, Subscriber};
        /// # let name = format!("/dev/shm/shmbus-doc-open-{}", std::process::id());
        /// let publisher = Publisher::<u64>::create(&name, &BusOptions::new(64))?;
        /// let subscriber = Subscriber::<u64>::open(&name, &OpenOptions::default())?;
        /// assert!(Subscriber::<u32>::open(&name, &OpenOptions::default()).is_err());
        /// # shmbus::remove(&name)?;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn open(name: &str, opts: &OpenOptions) -> Result<Self, OpenError> {
            let msg = T::expected(opts.message.as_ref());
            let (ring, _) = crate::bus::segment::open_header(
                name,
                Role::Subscriber,
                msg.as_ref(),
                opts,
                false,
            )?;
            let mut subscriber = Subscriber::from_parts(ring, opts.start, opts.wait);
            if opts.lossless {
                let (entry, activity) =
                    crate::bus::segment::register_entry(&subscriber.ring, subscriber.cursor.pos)
                        .ok_or(crate::bus::LosslessRefused::RegistryFull {
                            entries: crate::wire::control::REGISTRY_SLOTS,
                        })?;
                subscriber.cursor.activity = activity;
                let joined = subscriber.ring.join(entry)?;
                subscriber.cursor.activity.set_joined(joined);
                subscriber.origin = std::process::id();
            } else if opts.register {
                subscriber.cursor.activity =
                    crate::bus::segment::register(&subscriber.ring, subscriber.cursor.pos);
            }
            Ok(subscriber)
        }

        /// The first byte of the data pages, which this process maps
        /// read-only. For the test that proves a stray store faults.
        #[doc(hidden)]
        pub fn data_pages_ptr(&self) -> *mut u8 {
            // SAFETY: data_offset is inside the mapping (validated on open);
            // computing the pointer accesses nothing.
            unsafe { self.ring.region().base_ptr().add(self.ring.data_offset()) }
        }
    }
}
