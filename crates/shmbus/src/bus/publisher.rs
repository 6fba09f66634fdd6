//! [`Publisher`]: the one writer of a single-publisher bus.

use std::marker::PhantomData;
use std::sync::Arc;

use crate::wire::Message;

use super::error::{PublishError, SkipError, TryPublishError};
use super::gate::Gate;
use super::heap::heap_ring;
use super::payload::Payload;
use super::ring::Ring;
use super::subscriber::Subscriber;
use crate::error::CreateError;
use crate::error::LosslessRefused;
use crate::mem::{DefaultRegion, HeapRegion, Region};
use crate::options::Start;
use crate::wait::{Wait, WaitStrategy};

/// Writes messages of payload `T` (a [`Message`] type, or `[u8]` for raw
/// bytes) to a bus. One per bus at a time, held by the publisher lock; a
/// publisher that exits or dies can be replaced by [`Publisher::attach`],
/// which carries on the sequence and bumps the epoch.
///
/// Publishing never waits and makes no system call unless a subscriber
/// sleeps: a full ring overwrites its oldest message, and a subscriber
/// that had not read it learns how many it lost
/// ([`crate::Received::Lagged`]).
///
/// # Examples
/// ```
/// use shmbus::{BusOptions, OpenOptions, Publisher, Received, Start, Subscriber, Wait};
///
/// # let name = format!("/dev/shm/shmbus-doc-publisher-{}", std::process::id());
/// let mut publisher = Publisher::<u64>::create(&name, &BusOptions::new(1024))?;
/// let mut subscriber =
///     Subscriber::<u64>::open(&name, &OpenOptions::default().start(Start::Oldest))?;
/// publisher.publish(&42);
/// assert_eq!(subscriber.recv(Wait::Never), Some(Received::Message(42)));
/// shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Publisher<T: ?Sized + Payload, R: Region = DefaultRegion> {
    pub(crate) ring: Ring<R>,
    next: u64,
    /// Holds writes back for lossless subscribers (`gate`).
    gate: Gate,
    _payload: PhantomData<fn(&T)>,
}

impl<T: ?Sized + Payload, R: Region> std::fmt::Debug for Publisher<T, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Publisher")
            .field("next", &self.next)
            .field("capacity", &self.ring.capacity())
            .field("msg_size", &self.ring.msg_size())
            .finish_non_exhaustive()
    }
}

impl<T: ?Sized + Payload, R: Region> Publisher<T, R> {
    pub(crate) fn from_parts(mut ring: Ring<R>, next: u64) -> Self {
        ring.set_light_barrier();
        let gate = Gate::new(&ring, next);
        Publisher {
            ring,
            next,
            gate,
            _payload: PhantomData,
        }
    }

    /// The eviction timeout this publisher keeps (tests).
    #[cfg(test)]
    pub(crate) fn evict_timeout(&self) -> std::time::Duration {
        self.gate.evict()
    }

    /// Sets the eviction timeout this publisher keeps (loom models).
    #[cfg(loom)]
    pub(crate) fn set_evict_timeout(&mut self, evict: std::time::Duration) {
        self.gate.set_evict(evict);
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) -> u64 {
        let seq = self.next;
        if !self.gate.open_for(seq) {
            self.gate.room(&self.ring, seq);
        }
        self.write_now(seq, bytes)
    }

    #[inline(always)]
    fn write_now(&mut self, seq: u64, bytes: &[u8]) -> u64 {
        let generation = self.ring.write(seq, bytes);
        self.gate.after_write(seq, generation);
        self.next = seq.wrapping_add(1);
        seq
    }

    #[inline]
    fn try_write(
        &mut self,
        bytes: &[u8],
        deadline: Option<std::time::Instant>,
    ) -> Result<u64, TryPublishError> {
        let seq = self.next;
        self.gate
            .room_until(&self.ring, seq, deadline)
            .map_err(|full| TryPublishError::Full {
                entry: full.entry,
                pid: full.pid,
            })?;
        Ok(self.write_now(seq, bytes))
    }

    /// Publishes `n` messages as lost: their sequence numbers are used up,
    /// and every subscriber counts them in [`Received::Lagged`](crate::Received::Lagged)
    /// as if the ring had lapped it (delivered plus skipped still equals
    /// published). Returns the sequence number the next message gets.
    /// For a bus that relays another one (a bridge), whose upstream lost
    /// messages its subscribers must hear about. Takes no payload; `n = 0`
    /// does nothing. A lossless subscriber loses nothing but the skipped
    /// sequences: the skip waits, as that many publishes would, until it
    /// has read the messages the skip overwrites (all of them, for a skip
    /// of a ring or more), and after a skip longer than the ring the next
    /// publish waits until it has stepped over it (within the eviction
    /// timeout, as [`Publisher::publish`]).
    ///
    /// # Errors
    /// [`SkipError::TooFar`] for `n` above [`SkipError::MAX`] (2^60):
    /// sequences in use must stay within 2^61 of each other.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Publisher, Received, Start, Wait, WaitStrategy};
    ///
    /// let mut publisher = Publisher::<u64, _>::on_heap(8)?;
    /// let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default());
    /// publisher.publish(&1);
    /// assert_eq!(publisher.skip(2)?, 3); // sequences 1 and 2 are lost
    /// publisher.publish(&4);
    /// assert_eq!(subscriber.recv(Wait::Never), Some(Received::Message(1)));
    /// // One report for the gap, as a subscriber that lagged by 2 was told.
    /// assert_eq!(subscriber.recv(Wait::Never), Some(Received::Lagged { skipped: 2 }));
    /// assert_eq!(subscriber.recv(Wait::Never), Some(Received::Message(4)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn skip(&mut self, n: u64) -> Result<u64, SkipError> {
        if n > SkipError::MAX {
            return Err(SkipError::TooFar {
                n,
                max: SkipError::MAX,
            });
        }
        if n > 0 {
            let seq = self.next;
            self.gate.room_for_skip(&self.ring, seq, n);
            let generation = self.ring.skip(seq, n);
            self.next = seq.wrapping_add(n);
            self.gate
                .after_skip(seq, n, self.ring.capacity(), generation);
        }
        Ok(self.next)
    }

    /// How a publish waits for room while a lossless subscriber holds it
    /// back ([`WaitStrategy::default()`] until set): spin, yield, or sleep
    /// on the bus's futex, which gating subscribers ring as they read on.
    /// Whatever the strategy, a publish waits no longer than the bus's
    /// eviction timeout.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use shmbus::{Publisher, WaitStrategy};
    /// let mut publisher = Publisher::<u64, _>::on_heap(8)?;
    /// publisher.set_wait_strategy(WaitStrategy::SpinYield { spin: Duration::from_micros(10) });
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn set_wait_strategy(&mut self, strategy: WaitStrategy) {
        self.gate.set_strategy(strategy);
    }

    /// The sequence number the next message will get.
    ///
    /// # Examples
    /// ```
    /// let mut publisher = shmbus::Publisher::<u64, _>::on_heap(8)?;
    /// assert_eq!(publisher.next_sequence(), 0);
    /// publisher.publish(&1);
    /// assert_eq!(publisher.next_sequence(), 1);
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn next_sequence(&self) -> u64 {
        self.next
    }

    /// This publisher's generation: 1 for the creator, +1 per re-attach.
    ///
    /// # Examples
    /// ```
    /// let publisher = shmbus::Publisher::<u64, _>::on_heap(8)?;
    /// assert_eq!(publisher.epoch(), 1);
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn epoch(&self) -> u64 {
        self.ring.epoch()
    }

    /// Number of slots.
    ///
    /// # Examples
    /// ```
    /// let publisher = shmbus::Publisher::<u64, _>::on_heap(8)?;
    /// assert_eq!(publisher.slots(), 8);
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn slots(&self) -> u64 {
        self.ring.capacity()
    }

    /// The bus's message size in bytes.
    ///
    /// # Examples
    /// ```
    /// let publisher = shmbus::Publisher::<[u8], _>::on_heap_bytes(100, 8)?;
    /// assert_eq!(publisher.msg_size(), 100);
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn msg_size(&self) -> usize {
        self.ring.msg_size()
    }
}

impl<T: Message, R: Region> Publisher<T, R> {
    /// Publishes one message, overwriting the oldest if the ring is full,
    /// and returns its sequence number. With lossless subscribers
    /// ([`OpenOptions::lossless`](crate::OpenOptions::lossless)) it first
    /// waits until none of them still has to read the message it would
    /// overwrite: until each reads on, dies, or has held it back for the
    /// bus's eviction timeout ([`BusOptions::evict_after`](crate::BusOptions::evict_after)),
    /// when it is demoted to lossy.
    ///
    /// # Examples
    /// ```
    /// let mut publisher = shmbus::Publisher::<u64, _>::on_heap(8)?;
    /// assert_eq!(publisher.publish(&5), 0);
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    #[inline]
    pub fn publish(&mut self, msg: &T) -> u64 {
        self.write(bytemuck::bytes_of(msg))
    }

    /// Publishes one message unless a lossless subscriber has not read the
    /// one it would overwrite; never waits. Without lossless subscribers,
    /// the same as [`Publisher::publish`].
    ///
    /// # Errors
    /// [`TryPublishError::Full`], naming the subscriber in the way. One
    /// that has been in the way for the eviction timeout, over calls, is
    /// evicted by the call that finds it so, which then publishes.
    ///
    /// # Examples
    /// ```
    /// let mut publisher = shmbus::Publisher::<u64, _>::on_heap(8)?;
    /// assert_eq!(publisher.try_publish(&5)?, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn try_publish(&mut self, msg: &T) -> Result<u64, TryPublishError> {
        self.try_write(bytemuck::bytes_of(msg), Wait::Never.deadline())
    }

    /// Publishes one message if there is room for it within `wait`: as
    /// [`Publisher::publish`] when no lossless subscriber holds it back;
    /// else it waits (by [`Publisher::set_wait_strategy`]) as long as
    /// `wait` says. `Wait::Never` is [`Publisher::try_publish`],
    /// `Wait::Forever` is [`Publisher::publish`] (which waits no longer
    /// than the bus's eviction timeout).
    ///
    /// # Errors
    /// [`TryPublishError::Full`], naming the lossless subscriber still in
    /// the way when `wait` ran out; nothing was published. One in the way
    /// for the eviction timeout (over calls) is evicted instead.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use shmbus::{Publisher, Start, Wait, WaitStrategy, bus::TryPublishError};
    /// let mut publisher = Publisher::<u64, _>::on_heap(1)?;
    /// let lossless = publisher.subscribe_lossless(Start::Next, WaitStrategy::default())?;
    /// publisher.publish_within(&1, Wait::Never)?;
    /// let full = publisher.publish_within(&2, Wait::For(Duration::from_millis(5)));
    /// assert!(matches!(full, Err(TryPublishError::Full { entry: 0, .. })));
    /// # drop(lossless);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn publish_within(&mut self, msg: &T, wait: Wait) -> Result<u64, TryPublishError> {
        self.try_write(bytemuck::bytes_of(msg), wait.deadline())
    }
}

impl<R: Region> Publisher<[u8], R> {
    /// Publishes `bytes`, zero-padded to the message size, and returns its
    /// sequence number.
    ///
    /// # Errors
    /// [`PublishError::TooLong`] if `bytes` is longer than the message
    /// size; nothing is published.
    ///
    /// # Examples
    /// ```
    /// let mut publisher = shmbus::Publisher::<[u8], _>::on_heap_bytes(8, 4)?;
    /// assert_eq!(publisher.publish(b"short")?, 0);
    /// assert!(publisher.publish(b"far too long").is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn publish(&mut self, bytes: &[u8]) -> Result<u64, PublishError> {
        let max = self.ring.msg_size();
        if bytes.len() > max {
            return Err(PublishError::TooLong {
                len: bytes.len(),
                max,
            });
        }
        Ok(self.write(bytes))
    }

    /// As the typed `try_publish`, for raw bytes.
    ///
    /// # Errors
    /// [`TryPublishError::TooLong`] if `bytes` is longer than the message
    /// size, [`TryPublishError::Full`] as the typed one; nothing is
    /// published.
    ///
    /// # Examples
    /// ```
    /// let mut publisher = shmbus::Publisher::<[u8], _>::on_heap_bytes(8, 4)?;
    /// assert_eq!(publisher.try_publish(b"short")?, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn try_publish(&mut self, bytes: &[u8]) -> Result<u64, TryPublishError> {
        let max = self.ring.msg_size();
        if bytes.len() > max {
            return Err(TryPublishError::TooLong {
                len: bytes.len(),
                max,
            });
        }
        self.try_write(bytes, Wait::Never.deadline())
    }

    /// As the typed `publish_within`, for raw bytes.
    ///
    /// # Errors
    /// [`TryPublishError::TooLong`] if `bytes` is longer than the message
    /// size, [`TryPublishError::Full`] as the typed one; nothing is
    /// published.
    ///
    /// # Examples
    /// ```
    /// use shmbus::Wait;
    /// let mut publisher = shmbus::Publisher::<[u8], _>::on_heap_bytes(8, 4)?;
    /// assert_eq!(publisher.publish_within(b"short", Wait::Never)?, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn publish_within(&mut self, bytes: &[u8], wait: Wait) -> Result<u64, TryPublishError> {
        let max = self.ring.msg_size();
        if bytes.len() > max {
            return Err(TryPublishError::TooLong {
                len: bytes.len(),
                max,
            });
        }
        self.try_write(bytes, wait.deadline())
    }
}

impl<T: Message> Publisher<T, Arc<HeapRegion>> {
    /// A bus of `capacity` slots on the heap, for threads of one process
    /// (and for loom and Miri, which run the same slot protocol as the
    /// shared-memory bus).
    ///
    /// # Errors
    /// [`CreateError::InvalidGeometry`] if `capacity` is not a power of two.
    ///
    /// # Examples
    /// ```
    /// let publisher = shmbus::Publisher::<u64, _>::on_heap(1024)?;
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn on_heap(capacity: u64) -> Result<Self, CreateError> {
        Self::on_heap_from(capacity, 0)
    }

    #[doc(hidden)]
    pub fn on_heap_from(capacity: u64, first_seq: u64) -> Result<Self, CreateError> {
        let msg = <T as Payload>::fingerprint(None, None).map_err(CreateError::InvalidGeometry)?;
        Ok(Publisher::from_parts(
            heap_ring(capacity, msg, first_seq, None)?,
            first_seq,
        ))
    }
}

impl Publisher<[u8], Arc<HeapRegion>> {
    /// A bus of `msg_size`-byte raw messages on the heap.
    ///
    /// # Errors
    /// [`CreateError::InvalidGeometry`] for a capacity that is not a power
    /// of two or a message size outside 1 B..=16 MiB.
    ///
    /// # Examples
    /// ```
    /// let publisher = shmbus::Publisher::<[u8], _>::on_heap_bytes(64, 1024)?;
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn on_heap_bytes(msg_size: u32, capacity: u64) -> Result<Self, CreateError> {
        let msg = <[u8] as Payload>::fingerprint(Some(msg_size), None)
            .map_err(CreateError::InvalidGeometry)?;
        Ok(Publisher::from_parts(heap_ring(capacity, msg, 0, None)?, 0))
    }
}

impl<T: ?Sized + Payload> Publisher<T, Arc<HeapRegion>> {
    /// A subscriber to this heap bus.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Publisher, Received, Start, Wait, WaitStrategy};
    /// let mut publisher = Publisher::<u64, _>::on_heap(8)?;
    /// let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default());
    /// publisher.publish(&3);
    /// assert_eq!(subscriber.recv(Wait::Never), Some(Received::Message(3)));
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn subscribe(&self, start: Start, wait: WaitStrategy) -> Subscriber<T, Arc<HeapRegion>> {
        Subscriber::from_parts(self.ring.share(), start, wait)
    }

    /// A lossless subscriber to this heap bus: the publisher never
    /// overwrites a message it has not read, unless it holds the
    /// publisher back for the eviction timeout (1 s on the heap).
    ///
    /// # Errors
    /// [`LosslessRefused::RegistryFull`] when 8 lossless subscribers
    /// (a heap bus's most) are open.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Publisher, Received, Start, Wait, WaitStrategy};
    /// let mut publisher = Publisher::<u64, _>::on_heap(2)?;
    /// let mut lossless = publisher.subscribe_lossless(Start::Next, WaitStrategy::default())?;
    /// assert!(lossless.is_lossless());
    /// publisher.publish(&1);
    /// publisher.publish(&2);
    /// assert_eq!(lossless.recv(Wait::Never), Some(Received::Message(1)));
    /// publisher.publish(&3); // room: the first was read
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn subscribe_lossless(
        &self,
        start: Start,
        wait: WaitStrategy,
    ) -> Result<Subscriber<T, Arc<HeapRegion>>, LosslessRefused> {
        let mut subscriber = Subscriber::from_parts(self.ring.share(), start, wait);
        subscriber.join_heap()?;
        Ok(subscriber)
    }

    /// A group of `N` logical subscribers to this heap bus.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Publisher, Start, WaitStrategy};
    /// let publisher = Publisher::<u64, _>::on_heap(8)?;
    /// let group = publisher.subscribe_group::<4>(Start::Next, WaitStrategy::default());
    /// assert_eq!(group.len(), 4);
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn subscribe_group<const N: usize>(
        &self,
        start: Start,
        wait: WaitStrategy,
    ) -> super::SubscriberGroup<T, N, Arc<HeapRegion>>
    where
        T: Message,
    {
        super::SubscriberGroup::from_parts(self.ring.share(), start, wait)
    }
}

#[cfg(not(loom))]
mod shm {
    use super::*;
    use crate::bus::BusOptions;
    use crate::error::AttachError;
    use crate::mem::ShmRegion;
    use crate::options::OpenOptions;
    use crate::wire::Publishers;

    impl<T: ?Sized + Payload> Publisher<T, ShmRegion> {
        /// Creates a new bus named `name` (a bare name goes under /dev/shm,
        /// a name with a slash is a path) and becomes its publisher.
        ///
        /// # Errors
        /// [`CreateError::AlreadyExists`] (create never truncates or
        /// reuses), [`CreateError::InvalidGeometry`] (capacity not a power
        /// of two; a raw bus without [`BusOptions::msg_size`]),
        /// [`CreateError::PermissionDenied`], [`CreateError::NoSpace`],
        /// [`CreateError::NoDirectory`], [`CreateError::HugePages`],
        /// [`CreateError::Mlock`], [`CreateError::Name`], or another
        /// system error ([`CreateError::File`] making the file,
        /// [`CreateError::Io`] after). A failure after the file was made
        /// removes it again.
        ///
        /// # Examples
        /// ```
        /// use shmbus::{BusOptions, Publisher};
        /// # let name = format!("/dev/shm/shmbus-doc-create-{}", std::process::id());
        /// let mut publisher = Publisher::<u64>::create(&name, &BusOptions::new(4096))?;
        /// publisher.publish(&1);
        /// # shmbus::remove(&name)?;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn create(name: &str, opts: &BusOptions) -> Result<Self, CreateError> {
            let ring = crate::bus::segment::create::<T, _>(name, opts)?;
            Ok(Publisher::from_parts(ring, opts.first_seq))
        }

        /// Becomes the publisher of an existing bus after its previous
        /// publisher exited or died: resumes its sequence and bumps the
        /// epoch. A raw publisher (`[u8]`) attaches to a bus of any type.
        ///
        /// # Errors
        /// [`AttachError::Open`] if the bus cannot be opened (missing, not
        /// a bus, another message type, ...),
        /// [`AttachError::RoleTaken`] if a live process publishes on
        /// it, [`AttachError::Journaled`] for a journaled bus (attach a
        /// `journal::Publisher`), [`AttachError::WrongMode`] for a
        /// many-publisher bus.
        ///
        /// # Examples
        /// ```
        /// use shmbus::{BusOptions, OpenOptions, Publisher};
        /// # let name = format!("/dev/shm/shmbus-doc-attach-{}", std::process::id());
        /// let first = Publisher::<u64>::create(&name, &BusOptions::new(64))?;
        /// drop(first);
        /// let second = Publisher::<u64>::attach(&name, &OpenOptions::default())?;
        /// assert_eq!(second.epoch(), 2);
        /// # shmbus::remove(&name)?;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn attach(name: &str, opts: &OpenOptions) -> Result<Self, AttachError> {
            let (ring, next) = crate::bus::segment::attach(
                name,
                T::expected(opts.message.as_ref()).as_ref(),
                opts,
                Publishers::One,
            )?;
            Ok(Publisher::from_parts(ring, next))
        }
    }
}
