//! [`ManyPublisher`]: one of any number of publishers on a many-publisher
//! bus. The claim, commit and unblock rules it follows are in
//! [`super::claim`].

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use crate::wire::Message;

use super::SubscriberGroup;
use super::error::{Abandoned, ManyPublishError, TryPublishError};
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

/// Where a test-only hook stops a publisher.
#[cfg(feature = "test-hooks")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookPoint {
    /// After the claim's `fetch_add`, before the stamp is touched.
    AfterClaim,
    /// After the stamp is `writing(s)`, before any payload word.
    AfterBegin,
}

#[cfg(feature = "test-hooks")]
#[derive(Clone, Copy)]
struct Hook {
    point: HookPoint,
    /// Publishes left before the one that stops.
    countdown: u64,
    call: fn(u64),
}

/// The publishing steps every many-publisher handle shares.
pub(crate) struct Writer<R> {
    pub(crate) ring: Ring<R>,
    /// Holds claims back for lossless subscribers (`gate`): a claim
    /// never takes its slot while a gating subscriber still needs the
    /// message there.
    gate: Gate,
    #[cfg(feature = "test-hooks")]
    hook: Option<Hook>,
}

impl<R: Region> Writer<R> {
    fn new(mut ring: Ring<R>) -> Self {
        ring.set_light_barrier();
        let gate = Gate::new(&ring, ring.head());
        Writer {
            ring,
            gate,
            #[cfg(feature = "test-hooks")]
            hook: None,
        }
    }

    /// The hook to call in this publish, if it is the one that stops.
    #[cfg(feature = "test-hooks")]
    fn due(&mut self) -> Option<(HookPoint, fn(u64))> {
        let h = self.hook.as_mut()?;
        if h.countdown == 0 {
            return Some((h.point, h.call));
        }
        h.countdown -= 1;
        None
    }

    #[inline]
    fn write(&mut self, src: &[u8]) -> Result<u64, Abandoned> {
        #[cfg(feature = "test-hooks")]
        let due = self.due();
        let (seq, generation) = self.ring.claim_gated();
        #[cfg(feature = "test-hooks")]
        if let Some((HookPoint::AfterClaim, stop)) = due {
            stop(seq);
        }
        self.gate.after_claim(seq, generation);
        if !self.gate.open_for(seq) {
            self.gate.room(&self.ring, seq);
        }
        self.fill(
            seq,
            src,
            due_begin(
                #[cfg(feature = "test-hooks")]
                due,
            ),
        )
    }

    /// Publishes `src` only if there is room for it by `deadline` (a
    /// deadline of now never waits): the claim is made only for a
    /// sequence the gate has room for, so a deadline that passes leaves
    /// no claim behind. A lossless subscriber that joins between the
    /// look and the claim may still hold the claim back (for at most the
    /// eviction timeout): the join is rare, the claim cannot be undone.
    fn write_within(
        &mut self,
        src: &[u8],
        deadline: Option<std::time::Instant>,
    ) -> Result<u64, TryPublishError> {
        let seq = self
            .gate
            .claim_with_room(&self.ring, deadline)
            .map_err(|full| TryPublishError::Full {
                entry: full.entry,
                pid: full.pid,
            })?;
        Ok(self.fill(seq, src, None)?)
    }

    /// The claimed `seq`, past the gate: takes its slot, copies, commits.
    #[inline]
    fn fill(&mut self, seq: u64, src: &[u8], due: Option<fn(u64)>) -> Result<u64, Abandoned> {
        let lost = |_| Abandoned {
            seq,
            unblock: self.ring.unblock_timeout(),
        };
        self.ring.begin(seq).map_err(lost)?;
        if let Some(stop) = due {
            stop(seq);
        }
        self.ring.store_payload(seq, src);
        self.ring.commit(seq).map_err(lost)?;
        Ok(seq)
    }
}

/// The hook to call after `begin`, if this publish is the one that stops
/// there.
#[inline(always)]
fn due_begin(#[cfg(feature = "test-hooks")] due: Option<(HookPoint, fn(u64))>) -> Option<fn(u64)> {
    #[cfg(feature = "test-hooks")]
    if let Some((HookPoint::AfterBegin, stop)) = due {
        return Some(stop);
    }
    None
}

/// One of any number of publishers of payload `T` on a many-publisher bus
/// (one created by [`ManyPublisher::create`]): every process attaches its
/// own, and subscribers (the ordinary [`Subscriber`]) see one total order.
/// A publisher killed between claiming a slot and committing it costs
/// subscribers one reported skipped message after the bus's unblock
/// timeout, never a stall.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use shmbus::{Received, Start, Wait, WaitStrategy, bus::ManyPublisher};
///
/// let mut a = ManyPublisher::<u64, _>::on_heap(64, Duration::from_secs(1))?;
/// let mut b = a.another();
/// let mut subscriber = a.subscribe(Start::Next, WaitStrategy::default());
/// a.publish(&1)?;
/// b.publish(&2)?;
/// assert_eq!(subscriber.recv(Wait::Never), Some(Received::Message(1)));
/// assert_eq!(subscriber.recv(Wait::Never), Some(Received::Message(2)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ManyPublisher<T: ?Sized + Payload, R: Region = DefaultRegion> {
    pub(crate) w: Writer<R>,
    _payload: PhantomData<fn(&T)>,
}

impl<T: ?Sized + Payload, R: Region> std::fmt::Debug for ManyPublisher<T, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManyPublisher")
            .field("capacity", &self.w.ring.capacity())
            .field("msg_size", &self.w.ring.msg_size())
            .finish_non_exhaustive()
    }
}

impl<T: ?Sized + Payload, R: Region> ManyPublisher<T, R> {
    pub(crate) fn from_ring(ring: Ring<R>) -> Self {
        ManyPublisher {
            w: Writer::new(ring),
            _payload: PhantomData,
        }
    }

    /// Number of slots.
    ///
    /// # Examples
    /// ```
    /// let p = shmbus::bus::ManyPublisher::<u64, _>::on_heap(64, std::time::Duration::from_secs(1))?;
    /// assert_eq!(p.slots(), 64);
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn slots(&self) -> u64 {
        self.w.ring.capacity()
    }

    /// The bus's message size in bytes.
    ///
    /// # Examples
    /// ```
    /// let p = shmbus::bus::ManyPublisher::<u64, _>::on_heap(64, std::time::Duration::from_secs(1))?;
    /// assert_eq!(p.msg_size(), 8);
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn msg_size(&self) -> usize {
        self.w.ring.msg_size()
    }

    /// How long a claim may stay uncommitted before it is skipped.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// let p = shmbus::bus::ManyPublisher::<u64, _>::on_heap(64, Duration::from_millis(250))?;
    /// assert_eq!(p.unblock_timeout(), Duration::from_millis(250));
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn unblock_timeout(&self) -> Duration {
        self.w.ring.unblock_timeout()
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
    /// use shmbus::{WaitStrategy, bus::ManyPublisher};
    /// let mut p = ManyPublisher::<u64, _>::on_heap(8, Duration::from_secs(1))?;
    /// p.set_wait_strategy(WaitStrategy::SpinYield { spin: Duration::from_micros(10) });
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn set_wait_strategy(&mut self, strategy: WaitStrategy) {
        self.w.gate.set_strategy(strategy);
    }

    /// Test only: the publish after `after` more ones calls `stop` with its
    /// sequence at `point` (a test's `stop` hangs until it is killed).
    #[cfg(feature = "test-hooks")]
    #[doc(hidden)]
    pub fn set_stop_hook(&mut self, point: HookPoint, after: u64, stop: fn(u64)) {
        self.w.hook = Some(Hook {
            point,
            countdown: after,
            call: stop,
        });
    }
}

impl<T: Message, R: Region> ManyPublisher<T, R> {
    /// Claims the next sequence and publishes `msg` under it, overwriting
    /// the oldest message if the ring is full. Returns the sequence.
    ///
    /// # Errors
    /// [`Abandoned`] if the claim was skipped before the commit (this
    /// publisher stalled for longer than the unblock timeout): the message
    /// was not published.
    ///
    /// # Examples
    /// ```
    /// let mut p = shmbus::bus::ManyPublisher::<u64, _>::on_heap(8, std::time::Duration::from_secs(1))?;
    /// assert_eq!(p.publish(&5)?, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn publish(&mut self, msg: &T) -> Result<u64, Abandoned> {
        self.w.write(bytemuck::bytes_of(msg))
    }

    /// Publishes `msg` if there is room for it within `wait`: as
    /// [`ManyPublisher::publish`] when no lossless subscriber holds it
    /// back; else it waits (by [`ManyPublisher::set_wait_strategy`]) as
    /// long as `wait` says, and claims a sequence only once it has room
    /// for it. `Wait::Never` never waits; `Wait::Forever` waits until the
    /// subscriber in the way reads on, dies or is evicted.
    ///
    /// # Errors
    /// [`TryPublishError::Full`], naming the lossless subscriber still in
    /// the way when `wait` ran out: nothing was claimed or published.
    /// [`TryPublishError::Abandoned`] as [`ManyPublisher::publish`]'s
    /// [`Abandoned`].
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use shmbus::{Start, Wait, WaitStrategy, bus::{ManyPublisher, TryPublishError}};
    /// let mut p = ManyPublisher::<u64, _>::on_heap(2, Duration::from_secs(1))?;
    /// let lossless = p.subscribe_lossless(Start::Next, WaitStrategy::default())?;
    /// p.publish_within(&1, Wait::Never)?;
    /// p.publish_within(&2, Wait::Never)?;
    /// let full = p.publish_within(&3, Wait::For(Duration::from_millis(5)));
    /// assert!(matches!(full, Err(TryPublishError::Full { entry: 0, .. })));
    /// # drop(lossless);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn publish_within(&mut self, msg: &T, wait: Wait) -> Result<u64, TryPublishError> {
        self.w
            .write_within(bytemuck::bytes_of(msg), wait.deadline())
    }
}

impl<R: Region> ManyPublisher<[u8], R> {
    /// Publishes `bytes`, zero-padded to the message size.
    ///
    /// # Errors
    /// [`ManyPublishError::TooLong`] for more bytes than the message size
    /// (nothing published), [`ManyPublishError::Abandoned`] as for a typed
    /// publish.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// let mut p = shmbus::bus::ManyPublisher::<[u8], _>::on_heap_bytes(4, 8, Duration::from_secs(1))?;
    /// assert_eq!(p.publish(b"abc")?, 0);
    /// assert!(p.publish(b"abcde").is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn publish(&mut self, bytes: &[u8]) -> Result<u64, ManyPublishError> {
        let max = self.msg_size();
        if bytes.len() > max {
            return Err(ManyPublishError::TooLong {
                len: bytes.len(),
                max,
            });
        }
        Ok(self.w.write(bytes)?)
    }

    /// As the typed `publish_within`, for raw bytes.
    ///
    /// # Errors
    /// [`TryPublishError::TooLong`] for more bytes than the message size
    /// (nothing claimed), else as the typed one.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use shmbus::{Wait, bus::ManyPublisher};
    /// let mut p = ManyPublisher::<[u8], _>::on_heap_bytes(4, 8, Duration::from_secs(1))?;
    /// assert_eq!(p.publish_within(b"abc", Wait::Never)?, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn publish_within(&mut self, bytes: &[u8], wait: Wait) -> Result<u64, TryPublishError> {
        let max = self.msg_size();
        if bytes.len() > max {
            return Err(TryPublishError::TooLong {
                len: bytes.len(),
                max,
            });
        }
        self.w.write_within(bytes, wait.deadline())
    }
}

impl<T: Message> ManyPublisher<T, Arc<HeapRegion>> {
    /// A many-publisher bus of `capacity` slots on the heap, for threads
    /// of one process (and loom, which runs the real claim protocol on it).
    ///
    /// # Errors
    /// [`CreateError::InvalidGeometry`] if `capacity` is not a power of two.
    ///
    /// # Examples
    /// ```
    /// let p = shmbus::bus::ManyPublisher::<u64, _>::on_heap(1024, std::time::Duration::from_secs(1))?;
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn on_heap(capacity: u64, unblock: Duration) -> Result<Self, CreateError> {
        let msg = <T as Payload>::fingerprint(None, None).map_err(CreateError::InvalidGeometry)?;
        Ok(ManyPublisher::from_ring(heap_ring(
            capacity,
            msg,
            0,
            Some(unblock),
        )?))
    }
}

impl ManyPublisher<[u8], Arc<HeapRegion>> {
    /// A many-publisher bus of `msg_size`-byte raw messages on the heap.
    ///
    /// # Errors
    /// [`CreateError::InvalidGeometry`] for an impossible size.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// let p = shmbus::bus::ManyPublisher::<[u8], _>::on_heap_bytes(32, 64, Duration::from_secs(1))?;
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn on_heap_bytes(
        msg_size: u32,
        capacity: u64,
        unblock: Duration,
    ) -> Result<Self, CreateError> {
        let msg = <[u8] as Payload>::fingerprint(Some(msg_size), None)
            .map_err(CreateError::InvalidGeometry)?;
        Ok(ManyPublisher::from_ring(heap_ring(
            capacity,
            msg,
            0,
            Some(unblock),
        )?))
    }
}

impl<T: ?Sized + Payload> ManyPublisher<T, Arc<HeapRegion>> {
    /// Another publisher on the same heap bus.
    ///
    /// # Examples
    /// ```
    /// let a = shmbus::bus::ManyPublisher::<u64, _>::on_heap(8, std::time::Duration::from_secs(1))?;
    /// let b = a.another();
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn another(&self) -> Self {
        ManyPublisher::from_ring(self.w.ring.share())
    }

    /// The claim step alone, for models of a publisher that dies.
    #[cfg(any(loom, test))]
    pub(crate) fn claim_for_test(&self) -> u64 {
        self.w.ring.claim()
    }

    /// The `writing` step alone, for models of a publisher that dies.
    #[cfg(loom)]
    pub(crate) fn begin_for_test(&self, seq: u64) -> Result<(), super::stamp::Stamp> {
        self.w.ring.begin(seq).map(|_| ())
    }

    /// A subscriber to this heap bus.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Start, WaitStrategy, bus::ManyPublisher};
    /// let p = ManyPublisher::<u64, _>::on_heap(8, std::time::Duration::from_secs(1))?;
    /// let s = p.subscribe(Start::Next, WaitStrategy::default());
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn subscribe(&self, start: Start, wait: WaitStrategy) -> Subscriber<T, Arc<HeapRegion>> {
        Subscriber::from_parts(self.w.ring.share(), start, wait)
    }

    /// A lossless subscriber to this heap bus: no claim takes a slot
    /// whose message it has not read, unless it holds the publishers back
    /// for the eviction timeout (1 s on the heap).
    ///
    /// # Errors
    /// [`LosslessRefused::RegistryFull`] when 8 lossless subscribers (a
    /// heap bus's most) are open.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Received, Start, Wait, WaitStrategy, bus::ManyPublisher};
    /// let mut a = ManyPublisher::<u64, _>::on_heap(2, std::time::Duration::from_secs(1))?;
    /// let mut lossless = a.subscribe_lossless(Start::Next, WaitStrategy::default())?;
    /// a.publish(&1)?;
    /// a.publish(&2)?;
    /// assert_eq!(lossless.recv(Wait::Never), Some(Received::Message(1)));
    /// a.publish(&3)?; // room: the first was read
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn subscribe_lossless(
        &self,
        start: Start,
        wait: WaitStrategy,
    ) -> Result<Subscriber<T, Arc<HeapRegion>>, LosslessRefused> {
        let mut subscriber = Subscriber::from_parts(self.w.ring.share(), start, wait);
        subscriber.join_heap()?;
        Ok(subscriber)
    }

    /// A group of `N` logical subscribers to this heap bus.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Start, WaitStrategy, bus::ManyPublisher};
    /// let p = ManyPublisher::<u64, _>::on_heap(8, std::time::Duration::from_secs(1))?;
    /// let g = p.subscribe_group::<2>(Start::Next, WaitStrategy::default());
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn subscribe_group<const N: usize>(
        &self,
        start: Start,
        wait: WaitStrategy,
    ) -> SubscriberGroup<T, N, Arc<HeapRegion>>
    where
        T: Message,
    {
        SubscriberGroup::from_parts(self.w.ring.share(), start, wait)
    }
}

#[cfg(not(loom))]
mod shm {
    use super::*;
    use crate::bus::{BusOptions, Many};
    use crate::error::AttachError;
    use crate::mem::ShmRegion;
    use crate::options::OpenOptions;
    use crate::wire::Publishers;

    impl<T: ?Sized + Payload> ManyPublisher<T, ShmRegion> {
        /// Creates a many-publisher bus (header flag `MULTI_PUBLISHER`)
        /// and becomes one of its publishers; its unblock timeout is
        /// [`BusOptions::unblock_timeout`]. It takes options for many
        /// publishers ([`BusOptions::many`]).
        ///
        /// # Errors
        /// As [`crate::Publisher::create`]: [`CreateError::AlreadyExists`],
        /// [`CreateError::InvalidGeometry`], [`CreateError::PermissionDenied`],
        /// [`CreateError::NoSpace`], [`CreateError::NoDirectory`],
        /// [`CreateError::HugePages`], [`CreateError::Mlock`],
        /// [`CreateError::Name`], [`CreateError::File`],
        /// [`CreateError::Io`].
        ///
        /// # Examples
        /// ```
        /// use shmbus::{BusOptions, OpenOptions, bus::ManyPublisher};
        /// # let name = format!("/dev/shm/shmbus-doc-mp-{}", std::process::id());
        /// let mut a = ManyPublisher::<u64>::create(&name, &BusOptions::new(1024).many())?;
        /// let mut b = ManyPublisher::<u64>::attach(&name, &OpenOptions::default())?;
        /// a.publish(&1)?;
        /// b.publish(&2)?;
        /// # shmbus::remove(&name)?;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn create(name: &str, opts: &BusOptions<Many>) -> Result<Self, CreateError> {
            Ok(Self::from_ring(crate::bus::segment::create::<T, _>(
                name, opts,
            )?))
        }

        /// Becomes one more publisher of a many-publisher bus.
        ///
        /// # Errors
        /// [`AttachError::Open`] if the bus cannot be opened,
        /// [`AttachError::WrongMode`] for a single-publisher bus,
        /// [`AttachError::RoleTaken`] while its creator is still
        /// building it.
        ///
        /// # Examples
        /// ```
        /// use shmbus::{BusOptions, OpenOptions, bus::ManyPublisher};
        /// # let name = format!("/dev/shm/shmbus-doc-mpattach-{}", std::process::id());
        /// let mut first = ManyPublisher::<u64>::create(&name, &BusOptions::new(64).many())?;
        /// let mut second = ManyPublisher::<u64>::attach(&name, &OpenOptions::default())?;
        /// assert_eq!(first.publish(&1)?, 0);
        /// assert_eq!(second.publish(&2)?, 1); // one order for all
        /// # shmbus::remove(&name)?;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn attach(name: &str, opts: &OpenOptions) -> Result<Self, AttachError> {
            let (ring, _) = crate::bus::segment::attach(
                name,
                T::expected(opts.message.as_ref()).as_ref(),
                opts,
                Publishers::Many,
            )?;
            Ok(Self::from_ring(ring))
        }
    }
}
