//! Many publishers on one bus, a claim that survives its publisher's death,
//! and subscriber groups.
//!
//! A bus created by [`MpPublisher::create`] has the header flag
//! `MULTI_PUBLISHER`; any number of processes attach [`MpPublisher`]s to it.
//! Subscribers are the broadcast ones, unchanged, and see one total order.
//!
//! # Invariants (extending `broadcast`'s)
//! - Stamps, mod 2^64: `writing(s) = 2s + 1`, `done(s) = 2s + 2`, and
//!   `abandoned(s) = done(s) ^ 2^63`: "s was claimed and never committed".
//!   Sequences in use lie within 2^61 of each other, so a stamp within 2^62
//!   of `done(s)` is a normal one and any other is abandoned
//!   (`broadcast::decode`).
//! - The cursor (`control::CURSOR`) is the next sequence to *claim*; every
//!   publisher takes one with `fetch_add(1)`. Unlike a single-publisher bus,
//!   `cursor > s` says only that `s` was claimed, not that it is complete;
//!   readers learn completeness from the stamp alone.
//! - A slot's stamp only moves forward, always by CAS. For claim `s` of the
//!   slot whose previous lap is `p = s - capacity`:
//!   - the claimer of `s`: `done(p)` or `abandoned(p)` (or the new-bus
//!     stamp) → `writing(s)`, then `writing(s)` → `done(s)` (the commit);
//!   - an unblocker of `s`: anything older than `done(s)`, once `s` has been
//!     claimed for longer than the unblock timeout → `abandoned(s)`;
//!   - the claimer of `s`, finding lap `p` unfinished for longer than the
//!     unblock timeout: that stamp → `abandoned(p)`.
//!
//!   So `done(s)` and `abandoned(s)` exclude each other: whichever CAS comes
//!   first wins, and the loser learns it. A claimer whose `writing(s)` or
//!   commit CAS fails gets [`Abandoned`] and publishes nothing; it never
//!   moves a stamp someone else moved on.
//! - Unblockers are any subscriber (which is why subscribers of a
//!   multi-publisher bus map the data pages read-write, unlike those of a
//!   single-publisher bus) and the claimer of the slot's next lap. A reader
//!   that finds `abandoned(s)` reports `Received::Lagged { skipped: 1 }`
//!   and goes on at `s + 1`, so delivered + skipped == published holds per
//!   subscriber as on a single-publisher bus.
//! - The unblock timeout (`control::UNBLOCK_NS`) is written by the creator
//!   before the magic and never changes; every party reads it on open.
//!
//! # Liveness: timeouts only
//! A claim carries no owner, so a publisher's death is inferred from time
//! alone, as Aeron's publication unblock does: there is no per-publisher
//! registry. Every `MpPublisher` holds a *shared* lock on the publisher
//! lock byte, so `stat` and `clean` still see "a publisher is alive".
//!
//! The cost of timeouts only: a publisher that is alive but stalled for
//! longer than the unblock timeout loses its claim. Stalled between claim
//! and its `writing(s)` CAS, it writes nothing (the CAS fails). Stalled
//! *inside* its payload copy, it may, on waking, store the rest of its copy
//! into a slot that the next lap's claimer has taken since; that claimer's
//! readers can then read a torn message. Aeron has the same window; choose
//! the timeout far above any scheduling stall (the default is one second).
//!
//! # Why a second mode
//! shmbus's basic design has one publisher per bus: a single writer needs
//! no read-modify-write on the hot path, only stores (of stamp, payload and
//! cursor), and its death is known from its lock. Multi-publisher buses are
//! a second mode, chosen at creation and recorded in the header
//! (`MULTI_PUBLISHER`), rather than a change to the first, so that
//! single-publisher buses keep their plain stores and their faster path,
//! and only buses made for several publishers pay for claims, CAS commits
//! and unblock timeouts.
//!
//! # Subscriber groups
//! A [`SubscriberGroup`] is N logical consumers in one process that always
//! stand at the same sequence: one slot read (one seqlock pass) serves all N
//! and advances N cursors, so each consumer costs a store, not a read.

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytemuck::Pod;

use crate::broadcast::{
    abandoned, ahead, decode, done_stamp, heap_ring, writing_stamp, Poll, Received, Ring, Stall,
    Stamp, Start,
};
use crate::error::TypeFingerprint;
use crate::layout::{control, Header};
use crate::region::{HeapRegion, Region};
use crate::sync::{fence, Ordering};
use crate::wait::WaitStrategy;

/// The unblock timeout of a bus created without one.
pub const DEFAULT_UNBLOCK: Duration = Duration::from_secs(1);

/// How many publishers a bus is made for (header flag `MULTI_PUBLISHER`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Publishers {
    /// One [`crate::Publisher`] at a time.
    One,
    /// Any number of [`MpPublisher`]s.
    Many,
}

impl std::fmt::Display for Publishers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Publishers::One => "single-publisher",
            Publishers::Many => "multi-publisher",
        })
    }
}

/// A claim that was declared abandoned before its publisher committed it:
/// the message was not published.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "sequence {seq} was skipped as abandoned before this publisher committed it \
     (claim older than the {unblock:?} unblock timeout); the message was not published"
)]
pub struct Abandoned {
    /// The sequence this publisher had claimed.
    pub seq: u64,
    /// The bus's unblock timeout.
    pub unblock: Duration,
}

/// Why a raw message could not be published on a multi-publisher bus.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MpPublishError {
    /// Longer than the bus's message size.
    #[error("message is {len} bytes, the bus carries at most {max}")]
    TooLong {
        /// The message's length.
        len: usize,
        /// The bus's message size.
        max: usize,
    },
    /// The claim was skipped before the commit.
    #[error(transparent)]
    Abandoned(#[from] Abandoned),
}

/// Writes the multi-publisher control fields of a bus being built (before
/// its magic): the unblock timeout.
pub(crate) fn init_control<R: Region>(region: &R, header: &Header, unblock: Duration) {
    let ns = u64::try_from(unblock.as_nanos()).unwrap_or(u64::MAX);
    region
        .word(header.control_offset as usize + control::UNBLOCK_NS)
        .store(ns, Ordering::Relaxed);
}

/// Whether `st`, read in the slot of `s`, says `s` is not finished yet.
#[inline]
fn unfinished(st: Stamp, s: u64) -> bool {
    match st {
        Stamp::Writing(t) => ahead(t, s) <= 0,
        Stamp::Done(t) | Stamp::Abandoned(t) => ahead(t, s) < 0,
    }
}

impl<R: Region> Ring<R> {
    /// Claims the next sequence.
    #[inline]
    pub(crate) fn claim(&self) -> u64 {
        // Relaxed: on a multi-publisher bus the cursor publishes nothing; the
        // RMW alone makes every claim unique.
        self.cursor().fetch_add(1, Ordering::Relaxed)
    }

    /// Takes the slot of claimed `seq`: waits for its previous lap to finish
    /// (skipping that lap after the unblock timeout), then moves the stamp
    /// to `writing(seq)`. Fails with the stamp found if `seq` itself was
    /// skipped meanwhile.
    pub(crate) fn begin(&self, seq: u64) -> Result<(), Stamp> {
        let stamp = self.stamp(seq);
        let prev = seq.wrapping_sub(self.capacity());
        // Acquire, paired with the Release commit of the previous lap: our
        // payload stores come after its in every word's order.
        let mut cur = stamp.load(Ordering::Acquire);
        let mut since = None;
        let mut spins = 0u32;
        loop {
            let st = decode(cur, seq);
            if ahead(st.seq(), seq) >= 0 {
                return Err(st);
            }
            if let Stamp::Done(t) | Stamp::Abandoned(t) = st {
                if ahead(t, prev) >= 0 {
                    // Acquire on both outcomes, as the load above.
                    match stamp.compare_exchange(
                        cur,
                        writing_stamp(seq),
                        Ordering::Acquire,
                        Ordering::Acquire,
                    ) {
                        Ok(_) => break,
                        Err(now) => {
                            cur = now;
                            continue;
                        }
                    }
                }
            }
            // Lap `prev` is claimed (or not yet) and unfinished.
            let now = Instant::now();
            let since = *since.get_or_insert(now);
            if now.duration_since(since) >= self.unblock_timeout() {
                // Acquire on both outcomes, as the load above. The abandoned
                // stamp itself publishes nothing.
                cur = match stamp.compare_exchange(
                    cur,
                    abandoned(prev),
                    Ordering::Acquire,
                    Ordering::Acquire,
                ) {
                    Ok(_) => abandoned(prev),
                    Err(now) => now,
                };
            } else {
                // The unfinished lap's publisher may be descheduled: past a
                // short spin, give it the CPU.
                spins += 1;
                if spins < 64 {
                    crate::sync::spin_loop();
                } else {
                    crate::sync::yield_now();
                }
                cur = stamp.load(Ordering::Acquire);
            }
        }
        // Release fence, paired with the reader's Acquire fence in `read`: a
        // reader whose copy saw a word we store next re-loads a stamp at
        // least as new as `writing(seq)`, and discards the copy.
        fence(Ordering::Release);
        Ok(())
    }

    /// Publishes `seq`, whose payload is written, unless it was skipped.
    #[inline]
    pub(crate) fn commit(&self, seq: u64) -> Result<(), Stamp> {
        // Release, paired with the Acquire first stamp load in `read`: a
        // reader that sees `done(seq)` sees the whole payload.
        match self.stamp(seq).compare_exchange(
            writing_stamp(seq),
            done_stamp(seq),
            Ordering::Release,
            Ordering::Relaxed,
        ) {
            Ok(_) => {
                self.wake_sleepers();
                Ok(())
            }
            Err(now) => Err(decode(now, seq)),
        }
    }

    /// A reader at `*pos` found its slot empty on a multi-publisher bus. If
    /// `*pos` has been claimed and uncommitted for longer than the unblock
    /// timeout (as this reader measured, from its first sight), skips it.
    #[cold]
    pub(crate) fn unblock(&self, pos: &mut u64, stall: &mut Stall) -> Poll {
        let s = *pos;
        // Relaxed: the cursor says only that `s` was claimed; the CAS below
        // works on the stamp's latest value whatever this load saw.
        if ahead(self.cursor().load(Ordering::Relaxed), s) <= 0 {
            stall.since = None;
            return Poll::Empty;
        }
        let now = Instant::now();
        match stall.since {
            Some(since) if stall.seq == s => {
                if now.duration_since(since) < self.unblock_timeout() {
                    return Poll::Empty;
                }
            }
            _ => {
                *stall = Stall {
                    seq: s,
                    since: Some(now),
                };
                if !self.unblock_timeout().is_zero() {
                    return Poll::Empty;
                }
            }
        }
        let stamp = self.stamp(s);
        // Relaxed: what we do next depends only on the CAS, not on data.
        let cur = stamp.load(Ordering::Relaxed);
        if !unfinished(decode(cur, s), s) {
            // Committed or skipped since the read: poll again.
            return Poll::Empty;
        }
        // Relaxed: an abandoned stamp publishes no payload; a reader that
        // sees it reads none.
        match stamp.compare_exchange(cur, abandoned(s), Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => {
                stall.since = None;
                *pos = s.wrapping_add(1);
                Poll::Lagged(1)
            }
            Err(_) => Poll::Empty,
        }
    }
}

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

/// The publishing steps every multi-publisher handle shares.
struct Writer<R> {
    ring: Ring<R>,
    #[cfg(feature = "test-hooks")]
    hook: Option<Hook>,
}

impl<R: Region> Writer<R> {
    fn new(mut ring: Ring<R>) -> Self {
        ring.set_light_barrier();
        Writer {
            ring,
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
        let seq = self.ring.claim();
        #[cfg(feature = "test-hooks")]
        if let Some((HookPoint::AfterClaim, stop)) = due {
            stop(seq);
        }
        let lost = |_| Abandoned {
            seq,
            unblock: self.ring.unblock_timeout(),
        };
        self.ring.begin(seq).map_err(lost)?;
        #[cfg(feature = "test-hooks")]
        if let Some((HookPoint::AfterBegin, stop)) = due {
            stop(seq);
        }
        self.ring.store_payload(seq, src);
        self.ring.commit(seq).map_err(lost)?;
        Ok(seq)
    }
}

/// One of any number of publishers of `T` messages on a multi-publisher bus.
pub struct MpPublisher<T: Pod, R: Region = crate::DefaultRegion> {
    w: Writer<R>,
    staging: T,
}

impl<T: Pod, R: Region> MpPublisher<T, R> {
    pub(crate) fn from_ring(ring: Ring<R>) -> Self {
        MpPublisher {
            w: Writer::new(ring),
            staging: T::zeroed(),
        }
    }

    /// Claims the next sequence and publishes `msg` under it, overwriting
    /// the oldest message if the ring is full. Returns the sequence, or
    /// [`Abandoned`] if the claim was skipped before the commit (this
    /// publisher stalled for longer than the unblock timeout).
    #[inline]
    pub fn publish(&mut self, msg: &T) -> Result<u64, Abandoned> {
        self.w.write(bytemuck::bytes_of(msg))
    }

    /// Publishes a message built by `fill` from this publisher's previous
    /// one (zeroed before the first).
    #[inline]
    pub fn publish_with(&mut self, fill: impl FnOnce(&mut T)) -> Result<u64, Abandoned> {
        fill(&mut self.staging);
        self.w.write(bytemuck::bytes_of(&self.staging))
    }

    /// Number of slots.
    pub fn capacity(&self) -> u64 {
        self.w.ring.capacity()
    }

    /// How long a claim may stay uncommitted before it is skipped.
    pub fn unblock_timeout(&self) -> Duration {
        self.w.ring.unblock_timeout()
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

/// A multi-publisher bus's publisher of raw bytes (the CLI's view).
pub struct RawMpPublisher<R: Region = crate::DefaultRegion> {
    w: Writer<R>,
}

impl<R: Region> RawMpPublisher<R> {
    pub(crate) fn from_ring(ring: Ring<R>) -> Self {
        RawMpPublisher {
            w: Writer::new(ring),
        }
    }

    /// Publishes `bytes`, zero-padded to the message size.
    pub fn publish(&mut self, bytes: &[u8]) -> Result<u64, MpPublishError> {
        let max = self.msg_size();
        if bytes.len() > max {
            return Err(MpPublishError::TooLong {
                len: bytes.len(),
                max,
            });
        }
        Ok(self.w.write(bytes)?)
    }

    /// The bus's message size.
    pub fn msg_size(&self) -> usize {
        self.w.ring.msg_size()
    }
}

impl<T: Pod> MpPublisher<T, Arc<HeapRegion>> {
    /// A multi-publisher bus on the heap, for threads of one process (and
    /// loom, which runs the real claim protocol on it).
    pub fn on_heap(capacity: u64, unblock: Duration) -> Result<Self, crate::error::CreateError> {
        let ring = heap_ring(capacity, TypeFingerprint::of::<T>(), 0, Some(unblock))?;
        Ok(MpPublisher::from_ring(ring))
    }

    /// Another publisher on the same heap bus.
    pub fn another(&self) -> Self {
        MpPublisher::from_ring(self.w.ring.share())
    }

    /// The claim step alone, for models of a publisher that dies.
    #[cfg(loom)]
    pub(crate) fn claim_for_test(&self) -> u64 {
        self.w.ring.claim()
    }

    /// The `writing` step alone, for models of a publisher that dies.
    #[cfg(loom)]
    pub(crate) fn begin_for_test(&self, seq: u64) -> Result<(), Stamp> {
        self.w.ring.begin(seq)
    }

    /// A subscriber to this heap bus.
    pub fn subscribe(
        &self,
        start: Start,
        wait: WaitStrategy,
    ) -> crate::Subscriber<T, Arc<HeapRegion>> {
        crate::Subscriber::from_parts(self.w.ring.share(), start, wait)
    }

    /// A group of `N` logical subscribers to this heap bus.
    pub fn subscribe_group<const N: usize>(
        &self,
        start: Start,
        wait: WaitStrategy,
    ) -> SubscriberGroup<T, N, Arc<HeapRegion>> {
        SubscriberGroup::from_parts(self.w.ring.share(), start, wait)
    }
}

impl<T: Pod> crate::Publisher<T, Arc<HeapRegion>> {
    /// A group of `N` logical subscribers to this heap bus.
    pub fn subscribe_group<const N: usize>(
        &self,
        start: Start,
        wait: WaitStrategy,
    ) -> SubscriberGroup<T, N, Arc<HeapRegion>> {
        SubscriberGroup::from_parts(self.ring.share(), start, wait)
    }
}

/// `N` logical subscribers in one process that read each slot once: every
/// receive makes one seqlock read and advances all `N` cursors, and every
/// consumer sees exactly what `N` independent subscribers started at the
/// same place would see.
pub struct SubscriberGroup<T: Pod, const N: usize, R: Region = crate::DefaultRegion> {
    ring: Ring<R>,
    pos: u64,
    stall: Stall,
    cursors: [u64; N],
    wait: WaitStrategy,
    _type: PhantomData<fn() -> T>,
}

impl<T: Pod, const N: usize, R: Region> SubscriberGroup<T, N, R> {
    pub(crate) fn from_parts(ring: Ring<R>, start: Start, wait: WaitStrategy) -> Self {
        let pos = ring.start_at(start);
        SubscriberGroup {
            ring,
            pos,
            stall: Stall::default(),
            cursors: [pos; N],
            wait,
            _type: PhantomData,
        }
    }

    #[inline]
    fn advance(&mut self, poll: Poll, msg: T) -> Option<Received<T>> {
        let got = match poll {
            Poll::Message => Received::Message(msg),
            Poll::Lagged(skipped) => Received::Lagged { skipped },
            Poll::Empty => return None,
        };
        for c in &mut self.cursors {
            *c = self.pos;
        }
        Some(got)
    }

    /// What every consumer of the group receives next, or `None` if nothing
    /// new is there. Never blocks.
    #[inline]
    pub fn try_recv(&mut self) -> Option<Received<T>> {
        let mut msg = T::zeroed();
        let poll = self.ring.poll_from(
            &mut self.pos,
            &mut self.stall,
            bytemuck::bytes_of_mut(&mut msg),
        );
        self.advance(poll, msg)
    }

    /// As [`SubscriberGroup::try_recv`], waiting with the wait strategy for
    /// at most `timeout` (forever if `None`).
    pub fn recv_timeout(&mut self, timeout: Option<Duration>) -> Option<Received<T>> {
        let mut msg = T::zeroed();
        let deadline = timeout.map(|t| Instant::now() + t);
        let poll = self.ring.poll_wait(
            &mut self.pos,
            &mut self.stall,
            bytemuck::bytes_of_mut(&mut msg),
            self.wait,
            deadline,
        );
        self.advance(poll, msg)
    }

    /// The sequence each consumer reads next.
    pub fn positions(&self) -> &[u64; N] {
        &self.cursors
    }

    /// Number of logical consumers.
    pub fn len(&self) -> usize {
        N
    }

    /// Whether the group has no consumers.
    pub fn is_empty(&self) -> bool {
        N == 0
    }
}

#[cfg(not(loom))]
mod shm {
    use super::*;
    use crate::error::{AttachError, CreateError, OpenError};
    use crate::layout::{flags, lock_byte};
    use crate::region::ShmRegion;
    use crate::segment::{
        create_ring, layout_page, open_ring, register, CreateOptions, OpenOptions, Role,
    };

    fn create_multi(
        name: &str,
        msg: TypeFingerprint,
        opts: &CreateOptions,
    ) -> Result<Ring<ShmRegion>, CreateError> {
        let (page, huge) = layout_page(name, opts)?;
        let mut header = Header::broadcast(opts.capacity(), msg, page, opts.first_seq())
            .map_err(CreateError::InvalidGeometry)?;
        header.flags |= flags::MULTI_PUBLISHER | huge;
        let ring = create_ring(name, &header, opts)?;
        // The creator built the bus holding the publisher byte exclusively;
        // from now on every publisher shares it (the same open file
        // description converts its lock in place).
        match crate::lock::try_lock(ring.region().file(), lock_byte::PUBLISHER, false) {
            Ok(true) => Ok(ring),
            res => {
                let _ = crate::region::unlink(ring.region().path());
                Err(CreateError::Io {
                    what: "lock",
                    source: res
                        .err()
                        .unwrap_or_else(|| std::io::Error::other("shared lock refused")),
                })
            }
        }
    }

    fn attach_multi(
        name: &str,
        msg: Option<&TypeFingerprint>,
        opts: &OpenOptions,
    ) -> Result<Ring<ShmRegion>, AttachError> {
        let ring = open_ring(name, Role::Publisher, msg, opts)?;
        if !ring.is_multi() {
            return Err(AttachError::WrongPublishers {
                found: Publishers::One,
                expected: Publishers::Many,
            });
        }
        let region = ring.region();
        let pid_field = ring.control_field(control::PUBLISHER_PID);
        let shared = crate::lock::try_lock(region.file(), lock_byte::PUBLISHER, false).map_err(
            |source| OpenError::Io {
                what: "lock",
                source,
            },
        )?;
        if !shared {
            // Only a creator still building holds it exclusively.
            return Err(AttachError::PublisherActive {
                pid: region.word32(pid_field).load(Ordering::Relaxed),
            });
        }
        region
            .word32(pid_field)
            .store(std::process::id(), Ordering::Relaxed);
        Ok(ring)
    }

    impl<T: Pod> MpPublisher<T> {
        /// Creates a multi-publisher bus named `name` and becomes one of its
        /// publishers. Its unblock timeout is
        /// [`CreateOptions::unblock_timeout`].
        pub fn create(name: &str, opts: &CreateOptions) -> Result<Self, CreateError> {
            Ok(Self::from_ring(create_multi(
                name,
                TypeFingerprint::of::<T>(),
                opts,
            )?))
        }

        /// Becomes one more publisher of an existing multi-publisher bus.
        /// A single-publisher bus is [`AttachError::WrongPublishers`].
        pub fn attach(name: &str, opts: &OpenOptions) -> Result<Self, AttachError> {
            let msg = TypeFingerprint::of::<T>();
            Ok(Self::from_ring(attach_multi(name, Some(&msg), opts)?))
        }
    }

    impl RawMpPublisher {
        /// Creates a multi-publisher bus of raw `msg_size`-byte messages.
        pub fn create(
            name: &str,
            msg_size: u32,
            opts: &CreateOptions,
        ) -> Result<Self, CreateError> {
            Ok(Self::from_ring(create_multi(
                name,
                TypeFingerprint::bytes(msg_size),
                opts,
            )?))
        }

        /// Attaches to any multi-publisher bus, whatever its message type.
        pub fn attach(name: &str, opts: &OpenOptions) -> Result<Self, AttachError> {
            Ok(Self::from_ring(attach_multi(name, None, opts)?))
        }
    }

    impl<T: Pod, const N: usize> SubscriberGroup<T, N> {
        /// Opens the bus named `name` (of either mode) for `N` logical
        /// consumers, starting where `opts` says.
        pub fn open(name: &str, opts: &OpenOptions) -> Result<Self, OpenError> {
            let msg = TypeFingerprint::of::<T>();
            let ring = open_ring(name, Role::Subscriber, Some(&msg), opts)?;
            let group = Self::from_parts(ring, opts.start_position(), opts.wait_strategy());
            register(&group.ring);
            Ok(group)
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::Received::{Lagged, Message};

    #[test]
    fn an_abandoned_stamp_decodes_as_abandoned_and_no_normal_one_does() {
        for s in [0u64, 1, 7, u64::MAX, u64::MAX - 3, 1 << 62, 1 << 63] {
            assert_eq!(decode(abandoned(s), s), Stamp::Abandoned(s));
            assert_eq!(
                decode(abandoned(s.wrapping_add(8)), s),
                Stamp::Abandoned(s.wrapping_add(8))
            );
            assert_eq!(decode(done_stamp(s), s), Stamp::Done(s));
            assert_eq!(decode(writing_stamp(s), s), Stamp::Writing(s));
            let old = s.wrapping_sub(16);
            assert_eq!(decode(done_stamp(old), s), Stamp::Done(old));
            assert_eq!(
                decode(abandoned(old), s),
                Stamp::Abandoned(old),
                "older abandoned at {s}"
            );
        }
    }

    #[test]
    fn messages_of_two_publishers_arrive_in_one_order_each_publisher_in_its_own() {
        let mut a = MpPublisher::<[u64; 2], _>::on_heap(64, DEFAULT_UNBLOCK).expect("geometry");
        let mut b = a.another();
        let mut s = a.subscribe(Start::Oldest, WaitStrategy::BusySpin);
        for i in 0..10 {
            a.publish(&[1, i]).expect("committed");
            b.publish(&[2, i]).expect("committed");
        }
        let mut next = [0u64; 3];
        while let Some(Message([who, i])) = s.try_recv() {
            assert_eq!(i, next[who as usize]);
            next[who as usize] += 1;
        }
        assert_eq!(next, [0, 10, 10]);
    }

    #[test]
    fn a_claim_never_committed_is_skipped_as_one_lagged_slot_after_the_timeout() {
        let unblock = Duration::from_millis(20);
        let mut p = MpPublisher::<u64, _>::on_heap(8, unblock).expect("geometry");
        let mut s = p.subscribe(Start::Next, WaitStrategy::BusySpin);
        // A publisher that claims and dies: the claim alone, no stamp.
        let dead = p.w.ring.claim();
        p.publish(&7).expect("committed");
        let started = Instant::now();
        assert_eq!(s.recv(), Lagged { skipped: 1 });
        assert!(started.elapsed() >= unblock);
        assert_eq!(s.recv(), Message(7));
        // The dead claimer, were it only slow, learns it lost.
        assert_eq!(
            p.w.ring.begin(dead).map_err(|st| st.seq()),
            Err(dead),
            "begin after the skip"
        );
    }

    #[test]
    fn a_publisher_committing_after_its_claim_was_skipped_gets_abandoned() {
        let p = MpPublisher::<u64, _>::on_heap(8, Duration::ZERO).expect("geometry");
        let mut s = p.subscribe(Start::Next, WaitStrategy::BusySpin);
        let seq = p.w.ring.claim();
        p.w.ring.begin(seq).expect("slot free");
        assert_eq!(s.try_recv(), Some(Lagged { skipped: 1 }));
        assert!(p.w.ring.commit(seq).is_err());
        assert_eq!(s.try_recv(), None);
    }

    #[test]
    fn a_publisher_lapping_an_unfinished_claim_skips_it_after_the_timeout() {
        let mut p = MpPublisher::<u64, _>::on_heap(2, Duration::from_millis(5)).expect("geometry");
        let mut s = p.subscribe(Start::Next, WaitStrategy::BusySpin);
        let stuck = p.w.ring.claim();
        p.w.ring.begin(stuck).expect("slot free");
        p.publish(&1).expect("committed");
        // The next lap of the stuck slot: waits 5 ms, then skips it.
        p.publish(&2).expect("committed");
        assert_eq!(s.try_recv(), Some(Lagged { skipped: 1 }));
        assert_eq!(s.try_recv(), Some(Message(1)));
        assert_eq!(s.try_recv(), Some(Message(2)));
        assert!(p.w.ring.commit(stuck).is_err());
    }

    #[test]
    fn a_subscriber_group_delivers_what_independent_subscribers_would() {
        let mut p = crate::Publisher::<u64, _>::on_heap(4).expect("geometry");
        let mut group = p.subscribe_group::<3>(Start::Oldest, WaitStrategy::BusySpin);
        let mut alone: Vec<_> = (0..3)
            .map(|_| p.subscribe(Start::Oldest, WaitStrategy::BusySpin))
            .collect();
        let mut check = |group: &mut SubscriberGroup<u64, 3, _>| loop {
            let g = group.try_recv();
            for a in alone.iter_mut() {
                assert_eq!(a.try_recv(), g);
                assert_eq!(group.positions(), &[a.position(); 3]);
            }
            if g.is_none() {
                break;
            }
        };
        for i in 0..3 {
            p.publish(&i);
        }
        check(&mut group);
        for i in 3..13 {
            p.publish(&i);
        }
        check(&mut group);
    }
}
