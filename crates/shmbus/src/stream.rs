//! The stream: a lossless single-producer single-consumer ring of
//! variable-length byte records, with backpressure.
//!
//! # Invariants
//! - The ring is `capacity` bytes (a power of two) at `data_offset`. Two
//!   64-bit cursors count bytes ever written and ever released: `TAIL`,
//!   stored only by the producer, and `HEAD`, stored only by the consumer,
//!   each on its own cache line. `0 <= TAIL - HEAD <= capacity`, always.
//! - A record at ring position `p` (a multiple of 8) is an 8-byte header
//!   holding its length `n` (little-endian u64, `n <= max_record`), then `n`
//!   bytes, padded to a multiple of 8. A record never straddles the end of
//!   the ring: where it would, the producer writes a header holding
//!   [`WRAP`] and the record starts at position 0. `max_record` is half the
//!   ring less a header, so a record always fits after a wrap marker.
//! - A reserved record of unknown length may grow ([`WriteChunk::grow`]):
//!   it is claimed again, bigger, from the same `TAIL`, and where it now
//!   needs a wrap marker its bytes so far move to position 0 (unpublished,
//!   they are still the producer's alone). Its header, written at commit,
//!   may say fewer bytes than were claimed ([`WriteChunk::truncate`]).
//! - Bytes in `[HEAD, TAIL)` belong to the consumer, the rest to the
//!   producer. The producer writes a record (and any wrap marker before it),
//!   then stores `TAIL` with Release; the consumer loads `TAIL` with Acquire
//!   and reads it. The consumer stores `HEAD` with Release after it is done
//!   with a record; the producer loads `HEAD` with Acquire before it writes
//!   over those bytes. Ownership moves only through these two stores, so the
//!   payload itself is copied with plain `memcpy`: nobody else touches it.
//! - Each side caches the other's cursor and reloads it only when the cached
//!   value says "full" or "empty", so a steady stream costs one shared load
//!   per batch of records, not one per record.
//! - Both sides sleep on shared futexes with the doorbell protocol in
//!   `wait`: the consumer on `DATA_BELL` (rung after each `TAIL` store), the
//!   producer on `SPACE_BELL` (rung after each `HEAD` store).
//! - Cursors read from the file are untrusted: each load of the other
//!   side's cursor is checked before it is used. The producer takes a
//!   `HEAD` only in `[last HEAD, TAIL]` (it never moves back, nor more than
//!   `capacity` behind `TAIL`), the consumer a `TAIL` only in
//!   `[HEAD, HEAD + capacity]`; anything else is
//!   [`PushError::CorruptCursors`] / [`PopError::CorruptCursors`] at once,
//!   never a wait (a cursor found corrupt at attach is not used at all).
//! - One producer and one consumer at a time, each holding an exclusive OFD
//!   lock (`lock_byte::PUBLISHER`, `lock_byte::CONSUMER`) and writing its pid
//!   into the control page. A waiting side whose peer's pid is set but whose
//!   lock is free gets [`PushError::PeerGone`] / [`PopError::PeerGone`]
//!   within [`PEER_CHECK`], instead of waiting forever. One exception: a
//!   producer already dead when the consumer opened is no news, and the
//!   consumer waits for a new one (until its `Wait` ends), as it does after
//!   a producer that left cleanly; so a consumer may start first after a
//!   crash. A producer that attaches later and dies is reported as usual
//!   (known by its pid: one that reused the dead one's pid would not be).
//!
//! ```no_run
//! use shmbus::stream::{Consumer, Producer, Wait};
//!
//! let mut producer = Producer::create("logs", &shmbus::CreateOptions::new(1 << 20))?;
//! producer.push(b"first record", Wait::Forever)?;
//! let mut chunk = producer.reserve(5, Wait::Forever)?; // written in place
//! chunk.copy_from_slice(b"hello");
//! chunk.commit();
//!
//! let mut consumer = Consumer::open("logs", &shmbus::OpenOptions::default())?;
//! let mut record = Vec::new();
//! consumer.pop(&mut record, Wait::Forever)?;
//! consumer.read_with(Wait::Forever, |bytes| println!("{} bytes", bytes.len()))?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The design follows the classic Lamport SPSC queue with cached indices
//! (as in rtrb), with records and wrap markers as in BipBuffer-style byte
//! rings.

use std::time::{Duration, Instant};

use crate::layout::{lock_byte, max_record, stream_control as ctl, Header};
use crate::region::Region;
use crate::sync::{AtomicU64, Ordering};
use crate::wait::{self, WaitStrategy};

/// The header of a wrap marker: the rest of the ring up to its end is
/// unused, and the next record is at position 0.
pub const WRAP: u64 = u64::MAX;

/// How often a waiting side checks whether its peer is still alive.
pub const PEER_CHECK: Duration = Duration::from_millis(20);

/// What a push or pop does when it cannot go on at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Fail at once (`Full` / `Empty`).
    Never,
    /// Wait up to this long, then fail with `TimedOut`.
    For(Duration),
    /// Wait as long as it takes (or until the peer is gone).
    Forever,
}

/// Why a record was not pushed.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum PushError {
    /// Longer than the stream's largest record.
    #[error("record is {len} bytes, the stream carries at most {max}")]
    TooLong {
        /// The record's length.
        len: usize,
        /// The stream's largest record (half the ring less 8 bytes).
        max: usize,
    },
    /// No room, and `Wait::Never`.
    #[error("stream is full")]
    Full,
    /// No room before the timeout.
    #[error("stream stayed full for {0:?}")]
    TimedOut(Duration),
    /// The consumer died (its lock is free) while the ring is full.
    #[error("the consumer (pid {pid}) is gone and the stream is full")]
    PeerGone {
        /// The consumer's last pid.
        pid: u32,
    },
    /// The consumer's `HEAD` cannot be right: behind the last one seen,
    /// past `TAIL`, or more than the capacity behind it (only a corrupt
    /// file or a writer that ignores the protocol can cause this).
    #[error(
        "corrupt stream cursors: HEAD is {head} with TAIL at {tail}, expected HEAD in \
         {min_head}..={tail} (it never moves back, nor more than the capacity, {capacity} \
         bytes, behind TAIL)"
    )]
    CorruptCursors {
        /// The `HEAD` found.
        head: u64,
        /// This producer's `TAIL`.
        tail: u64,
        /// The ring's size in bytes.
        capacity: u64,
        /// The least `HEAD` that could be right.
        min_head: u64,
    },
}

/// Why no record was popped.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum PopError {
    /// Nothing there, and `Wait::Never`.
    #[error("stream is empty")]
    Empty,
    /// Nothing before the timeout.
    #[error("stream stayed empty for {0:?}")]
    TimedOut(Duration),
    /// The producer died (its lock is free) and the ring is empty. Not for
    /// a producer that was already dead when this consumer opened: that
    /// one is waited on like one that left cleanly.
    #[error("the producer (pid {pid}) is gone and the stream is empty")]
    PeerGone {
        /// The producer's last pid.
        pid: u32,
    },
    /// The producer's `TAIL` cannot be right: behind `HEAD`, or more than
    /// the capacity ahead of it (only a corrupt file or a writer that
    /// ignores the protocol can cause this).
    #[error(
        "corrupt stream cursors: TAIL is {tail} with HEAD at {head}, expected TAIL in \
         {head}..={} (never behind HEAD, nor more than the capacity, {capacity} bytes, \
         ahead of it)",
        head.wrapping_add(*capacity)
    )]
    CorruptCursors {
        /// This consumer's `HEAD`.
        head: u64,
        /// The `TAIL` found.
        tail: u64,
        /// The ring's size in bytes.
        capacity: u64,
    },
    /// The ring holds a record header that cannot be right (only a writer
    /// that ignores the protocol can cause this).
    #[error("corrupt record header {header:#x} at byte {at} of the stream")]
    Corrupt {
        /// Stream position (bytes ever consumed) of the header.
        at: u64,
        /// The header found.
        header: u64,
    },
}

#[inline]
fn padded(len: u64) -> u64 {
    8 + len.div_ceil(8) * 8
}

/// The ring protocol over any region; `Producer` and `Consumer` hold one.
pub(crate) struct StreamRing<R> {
    region: R,
    capacity: u64,
    max: u64,
    data: usize,
    control: usize,
    /// This process registered for the asymmetric barrier (see `wait`).
    light: bool,
}

impl<R: Region> StreamRing<R> {
    pub(crate) fn new(region: R, h: &Header) -> StreamRing<R> {
        StreamRing {
            region,
            capacity: h.capacity,
            max: max_record(h.capacity),
            data: h.data_offset as usize,
            control: h.control_offset as usize,
            light: wait::light_publisher_barrier(),
        }
    }

    #[inline]
    fn cursor(&self, field: usize) -> &AtomicU64 {
        self.region.word(self.control + field)
    }

    #[inline]
    fn bell(&self, field: usize) -> &crate::sync::AtomicU32 {
        self.region.word32(self.control + field)
    }

    /// Writes a record header at stream position `pos`, the same way as
    /// the payload (plain memory where there is some): Miri rejects mixing
    /// atomic and plain accesses of different sizes on the same bytes.
    #[inline]
    fn put_header(&self, pos: u64, header: u64) {
        // SAFETY: only the producer calls this, on bytes `claim` gave it,
        // before the Release store of TAIL that hands them over.
        unsafe { self.region.copy_in(self.at(pos), &header.to_le_bytes()) };
    }

    /// Reads the record header at stream position `pos`.
    #[inline]
    fn get_header(&self, pos: u64) -> u64 {
        let mut b = [0u8; 8];
        // SAFETY: only the consumer calls this, on bytes in [HEAD, TAIL),
        // which the producer does not write until HEAD passes them.
        unsafe { self.region.copy_out(self.at(pos), &mut b) };
        u64::from_le_bytes(b)
    }

    #[inline]
    fn at(&self, pos: u64) -> usize {
        self.data + (pos & (self.capacity - 1)) as usize
    }

    /// The pid in `pid_field` if that peer attached once and its lock is
    /// free now. Never on the heap, where there is no lock to ask.
    fn peer_gone(&self, lock: u64, pid_field: usize) -> Option<u32> {
        let pid_word = self.region.word32(self.control + pid_field);
        let pid = pid_word.load(Ordering::Relaxed);
        if pid == 0 || self.region.lock_held(lock) != Some(false) {
            return None;
        }
        // A peer that left cleanly cleared its pid before its lock went: if
        // the pid is still there now that the lock is free, it died.
        (pid_word.load(Ordering::Relaxed) == pid).then_some(pid)
    }

    /// Runs the wait loop: `ready` until it says yes, spinning, yielding or
    /// sleeping on `bell` as `strategy` says, giving up at the deadline,
    /// when the peer is gone, or at once when `ready` finds a corrupt cursor.
    fn wait_for(
        &self,
        wait: Wait,
        strategy: WaitStrategy,
        bell: usize,
        peer: Peer,
        mut ready: impl FnMut() -> Look,
    ) -> Result<(), Stop> {
        match ready() {
            Look::Ready => return Ok(()),
            Look::Corrupt => return Err(Stop::Corrupt),
            Look::NotYet => {}
        }
        let deadline = match wait {
            Wait::Never => return Err(Stop::NotNow),
            Wait::For(d) => Some((Instant::now() + d, d)),
            Wait::Forever => None,
        };
        // The backoff sleeps at most PEER_CHECK at a time, so the peer and
        // the deadline are checked at least that often.
        let mut backoff = wait::Backoff::new(strategy, None);
        let mut next_check = Instant::now() + PEER_CHECK;
        let mut spins = 0u32;
        loop {
            match ready() {
                Look::Ready => return Ok(()),
                Look::Corrupt => return Err(Stop::Corrupt),
                Look::NotYet => {}
            }
            spins = spins.wrapping_add(1);
            if spins % 1024 == 0 {
                let now = Instant::now();
                if let Some((at, d)) = deadline {
                    if now >= at {
                        return Err(Stop::TimedOut(d));
                    }
                }
                if now >= next_check {
                    let gone = self.peer_gone(peer.lock, peer.pid_field);
                    if let Some(pid) = gone.filter(|&pid| pid != peer.known_dead) {
                        // One last look: the peer may have finished first.
                        return match ready() {
                            Look::Ready => Ok(()),
                            Look::Corrupt => Err(Stop::Corrupt),
                            Look::NotYet => Err(Stop::PeerGone(pid)),
                        };
                    }
                    next_check = now + PEER_CHECK;
                }
            }
            match backoff.next() {
                wait::Step::Spin => crate::sync::spin_loop(),
                wait::Step::Yield => {
                    crate::sync::yield_now();
                    // A yield can give the CPU away for a whole slice: check
                    // the clock and the peer after each one.
                    spins = 1023;
                }
                wait::Step::Sleep(_) | wait::Step::TimedOut => {
                    let left = deadline.map_or(PEER_CHECK, |(at, _)| {
                        at.saturating_duration_since(Instant::now()).min(PEER_CHECK)
                    });
                    wait::sleep(self.bell(bell), Some(left), || ready() == Look::NotYet);
                    // Re-check the clock and the peer after every sleep.
                    spins = 1023;
                }
            }
        }
    }
}

/// How a wait ended without its condition.
enum Stop {
    NotNow,
    TimedOut(Duration),
    PeerGone(u32),
    /// The peer's cursor failed its check (the waiter has the details).
    Corrupt,
}

/// What one look at the peer's cursor found.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Look {
    Ready,
    NotYet,
    Corrupt,
}

/// Whose death ends a wait.
#[derive(Clone, Copy)]
struct Peer {
    /// The peer's lock byte.
    lock: u64,
    /// Its pid's offset in the control page.
    pid_field: usize,
    /// A pid whose death is old news (0: none).
    known_dead: u32,
}

/// Writes records into a stream. One per stream at a time.
pub struct Producer<R: Region = crate::DefaultRegion> {
    ring: StreamRing<R>,
    /// Our TAIL (only we store it).
    tail: u64,
    /// The consumer's HEAD as last loaded, checked: in [tail - capacity, tail].
    head: u64,
    strategy: WaitStrategy,
}

/// Reads records from a stream. One per stream at a time.
pub struct Consumer<R: Region = crate::DefaultRegion> {
    ring: StreamRing<R>,
    /// Our HEAD (only we store it).
    head: u64,
    /// The producer's TAIL as last loaded, checked: in [head, head + capacity].
    tail: u64,
    strategy: WaitStrategy,
    /// The producer that was already dead when we opened: we wait for the
    /// next one instead of reporting it (0: none).
    dead_at_open: u32,
}

impl<R: Region> Producer<R> {
    pub(crate) fn from_ring(ring: StreamRing<R>, strategy: WaitStrategy) -> Self {
        // Relaxed: we are the only writer of TAIL, and HEAD is reloaded with
        // Acquire before any byte is reused.
        let tail = ring.cursor(ctl::TAIL).load(Ordering::Relaxed);
        let head = ring.cursor(ctl::HEAD).load(Ordering::Acquire);
        // A HEAD out of range is not kept: the cache then says "full", so
        // the first push reloads it and reports it.
        let head = if tail.wrapping_sub(head) <= ring.capacity {
            head
        } else {
            tail.wrapping_sub(ring.capacity)
        };
        Producer {
            ring,
            tail,
            head,
            strategy,
        }
    }

    /// The largest record this stream carries.
    pub fn max_record(&self) -> usize {
        self.ring.max as usize
    }

    /// Ring size in bytes.
    pub fn capacity(&self) -> u64 {
        self.ring.capacity
    }

    /// Pushes one record, whole; it is delivered exactly once, in order.
    pub fn push(&mut self, record: &[u8], wait: Wait) -> Result<(), PushError> {
        let at = self.claim(record.len(), wait)?;
        // SAFETY: `claim` made these bytes ours: they lie outside
        // [HEAD, TAIL), and the consumer reads them only after `commit`'s
        // Release store of TAIL.
        unsafe { self.ring.region.copy_in(self.ring.at(at) + 8, record) };
        self.commit(record.len());
        Ok(())
    }

    /// Reserves room for a record of `len` bytes to be written in place;
    /// nothing is visible to the consumer until [`WriteChunk::commit`].
    #[cfg(not(loom))]
    pub fn reserve(&mut self, len: usize, wait: Wait) -> Result<WriteChunk<'_, R>, PushError> {
        let at = self.claim(len, wait)?;
        let ptr = self
            .ring
            .region
            .raw(self.ring.at(at) + 8, len)
            .expect("plain memory outside loom");
        Ok(WriteChunk {
            producer: self,
            at,
            ptr,
            len,
        })
    }

    /// Waits for room for a `len`-byte record after any wrap marker, writes
    /// that marker (unpublished), and returns the record's position.
    fn claim(&mut self, len: usize, wait: Wait) -> Result<u64, PushError> {
        let max = self.ring.max;
        if len as u64 > max {
            return Err(PushError::TooLong {
                len,
                max: max as usize,
            });
        }
        let size = padded(len as u64);
        let to_end = self.ring.capacity - (self.tail & (self.ring.capacity - 1));
        let need = if size > to_end { to_end + size } else { size };
        let cap = self.ring.capacity;
        let ring = &self.ring;
        let tail = self.tail;
        let mut head = self.head;
        let mut found = head;
        let got = ring.wait_for(
            wait,
            self.strategy,
            ctl::SPACE_BELL,
            Peer {
                lock: lock_byte::CONSUMER,
                pid_field: ctl::CONSUMER_PID,
                known_dead: 0,
            },
            || {
                // `head` is checked to be within `cap` of `tail`; checked
                // here again all the same, as no overflow may come of it.
                let room = |head: u64| cap.checked_sub(tail.wrapping_sub(head)) >= Some(need);
                if room(head) {
                    return Look::Ready;
                }
                // Acquire, paired with the consumer's Release store of HEAD:
                // the bytes it released are done with before we write them.
                found = ring.cursor(ctl::HEAD).load(Ordering::Acquire);
                // In [head, tail]: HEAD never moves back nor passes TAIL;
                // `head` is within `cap` of `tail`, so this bounds it too.
                if found.wrapping_sub(head) > tail.wrapping_sub(head) {
                    return Look::Corrupt;
                }
                head = found;
                if room(head) {
                    Look::Ready
                } else {
                    Look::NotYet
                }
            },
        );
        self.head = head;
        match got {
            Ok(()) => {}
            Err(Stop::NotNow) => return Err(PushError::Full),
            Err(Stop::TimedOut(d)) => return Err(PushError::TimedOut(d)),
            Err(Stop::PeerGone(pid)) => return Err(PushError::PeerGone { pid }),
            Err(Stop::Corrupt) => {
                return Err(PushError::CorruptCursors {
                    head: found,
                    tail,
                    capacity: cap,
                    min_head: head,
                })
            }
        }
        if size > to_end {
            // Published with the record by `commit`'s TAIL store.
            self.ring.put_header(self.tail, WRAP);
            self.tail += to_end;
        }
        Ok(self.tail)
    }

    /// Writes the header of the claimed record and publishes it.
    fn commit(&mut self, len: usize) {
        // Published by the Release store of TAIL just below.
        self.ring.put_header(self.tail, len as u64);
        self.tail += padded(len as u64);
        // Release, paired with the consumer's Acquire load of TAIL: the
        // record's bytes and header (and any wrap marker) are visible first.
        self.ring
            .cursor(ctl::TAIL)
            .store(self.tail, Ordering::Release);
        wait::ring(self.ring.bell(ctl::DATA_BELL), self.ring.light);
    }

    /// Bytes written and not yet released by the consumer.
    pub fn len(&self) -> u64 {
        self.tail
            .wrapping_sub(self.ring.cursor(ctl::HEAD).load(Ordering::Acquire))
    }

    /// Whether the consumer has released everything written.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Room for one record, written in place; see [`Producer::reserve`].
#[cfg(not(loom))]
pub struct WriteChunk<'a, R: Region> {
    producer: &'a mut Producer<R>,
    /// The record's stream position (its header's); the producer's TAIL.
    at: u64,
    ptr: std::ptr::NonNull<u8>,
    len: usize,
}

#[cfg(not(loom))]
impl<R: Region> WriteChunk<'_, R> {
    /// Publishes the record. Dropping the chunk instead publishes nothing.
    pub fn commit(self) {
        self.producer.commit(self.len);
    }

    /// Makes the chunk `len` bytes long, keeping the bytes written so far
    /// (the new ones are unspecified), for a record whose length is not
    /// known up front; waits for the extra room as [`Producer::reserve`]
    /// does. On an error the chunk is unchanged. The bytes may move to the
    /// start of the ring (a slice taken before does not outlive `&mut`).
    pub fn grow(&mut self, len: usize, wait: Wait) -> Result<(), PushError> {
        if len <= self.len {
            return Ok(());
        }
        // From the same TAIL: the room the chunk has is part of the claim.
        let at = self.producer.claim(len, wait)?;
        let ring = &self.producer.ring;
        let ptr = ring
            .region
            .raw(ring.at(at) + 8, len)
            .expect("plain memory outside loom");
        if at != self.at {
            // Past the ring's end now: `claim` put a wrap marker where our
            // header was to go, and the record starts at ring offset 0.
            // SAFETY: both ranges are claimed and unpublished, so ours
            // alone (no TAIL store has covered them); `ptr::copy` allows
            // overlap, though a record of at most half the ring that must
            // wrap started past the middle, beyond where this one ends.
            unsafe { std::ptr::copy(self.ptr.as_ptr(), ptr.as_ptr(), self.len) };
        }
        self.at = at;
        self.ptr = ptr;
        self.len = len;
        Ok(())
    }

    /// Shortens the chunk to its first `len` bytes (no effect if it is not
    /// longer): [`commit`](Self::commit) then publishes only those, and
    /// the rest of the room goes back to the producer.
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }
}

#[cfg(not(loom))]
impl<R: Region> std::ops::Deref for WriteChunk<'_, R> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `claim` gave the producer sole ownership of these `len`
        // bytes until it commits, and the chunk borrows the producer.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

#[cfg(not(loom))]
impl<R: Region> std::ops::DerefMut for WriteChunk<'_, R> {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`; `&mut self` makes this the only view.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<R: Region> Consumer<R> {
    pub(crate) fn from_ring(ring: StreamRing<R>, strategy: WaitStrategy) -> Self {
        // Relaxed: we are the only writer of HEAD.
        let head = ring.cursor(ctl::HEAD).load(Ordering::Relaxed);
        let tail = ring.cursor(ctl::TAIL).load(Ordering::Acquire);
        // A TAIL out of range is not kept: the cache then says "empty", so
        // the first pop reloads it and reports it.
        let tail = if tail.wrapping_sub(head) <= ring.capacity {
            tail
        } else {
            head
        };
        Consumer {
            ring,
            head,
            tail,
            strategy,
            dead_at_open: 0,
        }
    }

    /// The largest record this stream carries.
    pub fn max_record(&self) -> usize {
        self.ring.max as usize
    }

    /// Ring size in bytes.
    pub fn capacity(&self) -> u64 {
        self.ring.capacity
    }

    /// Pops the next record into `out` (replacing its contents).
    pub fn pop(&mut self, out: &mut Vec<u8>, wait: Wait) -> Result<(), PopError> {
        let (at, len) = self.next(wait)?;
        out.clear();
        out.resize(len, 0);
        // SAFETY: the record lies in [HEAD, TAIL), ours until we store HEAD;
        // the producer's Release store of TAIL made it visible.
        unsafe { self.ring.region.copy_out(at, out) };
        self.release(len);
        Ok(())
    }

    /// Hands the next record to `f` where it lies, then releases it.
    #[cfg(not(loom))]
    pub fn read_with<T>(&mut self, wait: Wait, f: impl FnOnce(&[u8]) -> T) -> Result<T, PopError> {
        let chunk = self.peek(wait)?;
        let out = f(&chunk);
        chunk.release();
        Ok(out)
    }

    /// The next record where it lies, without releasing it: dropping the
    /// chunk leaves it for the next read, [`ReadChunk::release`] consumes it.
    #[cfg(not(loom))]
    pub fn peek(&mut self, wait: Wait) -> Result<ReadChunk<'_, R>, PopError> {
        let (at, len) = self.next(wait)?;
        let ptr = self
            .ring
            .region
            .raw(at, len)
            .expect("plain memory outside loom");
        Ok(ReadChunk {
            consumer: self,
            ptr,
            len,
        })
    }

    /// Waits for a record; skips a wrap marker; returns the payload's region
    /// offset and length.
    fn next(&mut self, wait: Wait) -> Result<(usize, usize), PopError> {
        let ring = &self.ring;
        let head = self.head;
        let cap = ring.capacity;
        let mut cached = self.tail;
        let mut found = cached;
        let got = ring.wait_for(
            wait,
            self.strategy,
            ctl::DATA_BELL,
            Peer {
                lock: lock_byte::PUBLISHER,
                pid_field: ctl::PRODUCER_PID,
                known_dead: self.dead_at_open,
            },
            || {
                if cached != head {
                    return Look::Ready;
                }
                // Acquire, paired with the producer's Release store of TAIL.
                found = ring.cursor(ctl::TAIL).load(Ordering::Acquire);
                // We reload only when empty (cached == head), so "never
                // moves back" and "at most `cap` ahead" are one check.
                if found.wrapping_sub(head) > cap {
                    return Look::Corrupt;
                }
                cached = found;
                if cached != head {
                    Look::Ready
                } else {
                    Look::NotYet
                }
            },
        );
        self.tail = cached;
        match got {
            Ok(()) => {}
            Err(Stop::NotNow) => return Err(PopError::Empty),
            Err(Stop::TimedOut(d)) => return Err(PopError::TimedOut(d)),
            Err(Stop::PeerGone(pid)) => return Err(PopError::PeerGone { pid }),
            Err(Stop::Corrupt) => {
                return Err(PopError::CorruptCursors {
                    head,
                    tail: found,
                    capacity: cap,
                })
            }
        }
        // Checked against the ring, not trusted: a corrupt file (or a writer
        // that ignores the protocol) gets `Corrupt`, never an overflow or a
        // read past the ring (found by tests/fuzz_header.rs).
        let cap = self.ring.capacity;
        let to_end = cap - (self.head & (cap - 1));
        let avail = self.tail.wrapping_sub(self.head);
        if self.head % 8 != 0 {
            // Only a corrupt HEAD found at open can be unaligned.
            return Err(PopError::Corrupt {
                at: self.head,
                header: 0,
            });
        }
        let mut header = self.header();
        let mut at = self.head;
        if header == WRAP && avail > to_end && avail <= cap {
            at += to_end;
            header = self.ring.get_header(at);
        }
        let fits = |h: u64| {
            let left = self.tail.wrapping_sub(at);
            h <= self.ring.max
                && left <= cap
                && padded(h) <= left
                && padded(h) <= cap - (at & (cap - 1))
        };
        if !fits(header) {
            return Err(PopError::Corrupt { at, header });
        }
        self.head = at;
        Ok((self.ring.at(self.head) + 8, header as usize))
    }

    #[inline]
    fn header(&self) -> u64 {
        // Made visible by the Acquire load of TAIL in `next`.
        self.ring.get_header(self.head)
    }

    /// Gives a record's bytes back to the producer.
    fn release(&mut self, len: usize) {
        self.head += padded(len as u64);
        // Release, paired with the producer's Acquire load of HEAD: we are
        // done reading these bytes before it may write them again.
        self.ring
            .cursor(ctl::HEAD)
            .store(self.head, Ordering::Release);
        wait::ring(self.ring.bell(ctl::SPACE_BELL), self.ring.light);
    }

    /// Bytes written and not yet released (what `stat` calls the fill).
    pub fn len(&self) -> u64 {
        self.ring
            .cursor(ctl::TAIL)
            .load(Ordering::Acquire)
            .wrapping_sub(self.head)
    }

    /// Whether nothing is waiting to be read.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One record where it lies; see [`Consumer::peek`].
#[cfg(not(loom))]
pub struct ReadChunk<'a, R: Region> {
    consumer: &'a mut Consumer<R>,
    ptr: std::ptr::NonNull<u8>,
    len: usize,
}

#[cfg(not(loom))]
impl<R: Region> ReadChunk<'_, R> {
    /// Consumes the record: its bytes go back to the producer.
    pub fn release(self) {
        self.consumer.release(self.len);
    }
}

#[cfg(not(loom))]
impl<R: Region> std::ops::Deref for ReadChunk<'_, R> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: the record lies in [HEAD, TAIL), which the producer does
        // not touch until we store HEAD past it, and the chunk borrows the
        // consumer, so that cannot happen while this slice lives.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

/// Both ends of a stream on the heap.
pub type HeapStream = (
    Producer<std::sync::Arc<crate::HeapRegion>>,
    Consumer<std::sync::Arc<crate::HeapRegion>>,
);

/// A stream on the heap between two threads (and for loom and Miri).
pub fn on_heap(capacity: u64, strategy: WaitStrategy) -> Result<HeapStream, crate::CreateError> {
    let header = Header::stream(capacity, crate::broadcast::HEAP_PAGE)
        .map_err(crate::CreateError::InvalidGeometry)?;
    let region = std::sync::Arc::new(crate::HeapRegion::new(header.total_len as usize));
    header.write(&*region);
    Header::publish_magic(&*region);
    let producer = Producer::from_ring(StreamRing::new(region.clone(), &header), strategy);
    let consumer = Consumer::from_ring(StreamRing::new(region, &header), strategy);
    Ok((producer, consumer))
}

#[cfg(not(loom))]
mod shm {
    use super::*;
    use crate::error::{AttachError, CreateError};
    use crate::layout::Kind;
    use crate::segment::{
        create_region, layout_page, open_checked, take_role, CreateOptions, OpenOptions, Role,
    };
    use crate::ShmRegion;

    impl Producer<ShmRegion> {
        /// Creates a stream of `capacity` bytes (`CreateOptions::new`) and
        /// becomes its producer.
        pub fn create(name: &str, opts: &CreateOptions) -> Result<Self, CreateError> {
            let (page, huge) = layout_page(name, opts)?;
            let mut header =
                Header::stream(opts.capacity(), page).map_err(CreateError::InvalidGeometry)?;
            header.flags |= huge;
            let region = create_region(name, &header, opts, |_| {})?;
            Ok(Producer::from_ring(
                StreamRing::new(region, &header),
                WaitStrategy::default(),
            ))
        }

        /// Becomes the producer of an existing stream; carries on after the
        /// last record the previous producer committed.
        pub fn attach(name: &str, opts: &OpenOptions) -> Result<Self, AttachError> {
            let (region, header) = open_checked(name, Role::Publisher, Kind::Stream, None, opts)?;
            let pid_field = header.control_offset as usize + ctl::PRODUCER_PID;
            take_role(&region, lock_byte::PUBLISHER, pid_field)
                .map_err(|pid| AttachError::ProducerActive { pid })?;
            // Every record header lies at a multiple of 8: a TAIL that is
            // not is a corrupt file, and writing there would straddle the
            // ring's end.
            let tail = region
                .word(header.control_offset as usize + ctl::TAIL)
                .load(Ordering::Relaxed);
            if tail % 8 != 0 {
                return Err(AttachError::Open(crate::OpenError::InvalidGeometry(
                    format!("stream TAIL {tail} is not a multiple of 8"),
                )));
            }
            Ok(Producer::from_ring(
                StreamRing::new(region, &header),
                opts.wait_strategy(),
            ))
        }
    }

    impl Consumer<ShmRegion> {
        /// Becomes the consumer of a stream; carries on after the last
        /// record the previous consumer released.
        pub fn open(name: &str, opts: &OpenOptions) -> Result<Self, AttachError> {
            let (region, header) = open_checked(name, Role::Subscriber, Kind::Stream, None, opts)?;
            let pid_field = header.control_offset as usize + ctl::CONSUMER_PID;
            take_role(&region, lock_byte::CONSUMER, pid_field)
                .map_err(|pid| AttachError::ConsumerActive { pid })?;
            let ring = StreamRing::new(region, &header);
            // A producer dead before we came is no reason to stop waiting:
            // a new one may come (a crashed pipeline restarts in any order).
            let dead_at_open = ring
                .peer_gone(lock_byte::PUBLISHER, ctl::PRODUCER_PID)
                .unwrap_or(0);
            let mut consumer = Consumer::from_ring(ring, opts.wait_strategy());
            consumer.dead_at_open = dead_at_open;
            Ok(consumer)
        }
    }
}

impl<R: Region> Drop for Producer<R> {
    /// A producer that leaves cleanly clears its pid: the consumer then
    /// waits for a new one instead of being told its peer died.
    fn drop(&mut self) {
        self.ring
            .region
            .word32(self.ring.control + ctl::PRODUCER_PID)
            .store(0, Ordering::Relaxed);
    }
}

impl<R: Region> Drop for Consumer<R> {
    /// See `Producer`'s drop.
    fn drop(&mut self) {
        self.ring
            .region
            .word32(self.ring.control + ctl::CONSUMER_PID)
            .store(0, Ordering::Relaxed);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn pair(
        capacity: u64,
    ) -> (
        Producer<std::sync::Arc<crate::HeapRegion>>,
        Consumer<std::sync::Arc<crate::HeapRegion>>,
    ) {
        on_heap(capacity, WaitStrategy::default()).expect("valid geometry")
    }

    #[test]
    fn records_of_every_length_arrive_whole_and_in_order() {
        let (mut p, mut c) = pair(256);
        let mut out = Vec::new();
        for len in 0..=p.max_record() {
            let rec: Vec<u8> = (0..len).map(|i| (i + len) as u8).collect();
            p.push(&rec, Wait::Never).expect("room");
            c.pop(&mut out, Wait::Never).expect("a record");
            assert_eq!(out, rec);
        }
        assert_eq!(c.pop(&mut out, Wait::Never), Err(PopError::Empty));
    }

    #[test]
    fn a_full_stream_says_full_and_a_too_long_record_is_refused() {
        let (mut p, mut c) = pair(64);
        assert_eq!(p.max_record(), 24);
        assert_eq!(
            p.push(&[0; 25], Wait::Never),
            Err(PushError::TooLong { len: 25, max: 24 })
        );
        p.push(&[1; 24], Wait::Never).expect("room");
        p.push(&[2; 24], Wait::Never).expect("room");
        assert_eq!(p.push(&[], Wait::Never), Err(PushError::Full));
        assert_eq!(
            p.push(&[], Wait::For(Duration::from_millis(5))),
            Err(PushError::TimedOut(Duration::from_millis(5)))
        );
        let mut out = Vec::new();
        c.pop(&mut out, Wait::Never).expect("first");
        assert_eq!(out, [1; 24]);
        p.push(&[], Wait::Never).expect("room again");
    }

    #[test]
    fn a_record_exactly_filling_the_space_before_the_end_needs_no_wrap_marker() {
        let (mut p, mut c) = pair(64);
        let mut out = Vec::new();
        p.push(&[1; 16], Wait::Never).expect("room"); // 24 bytes
        c.pop(&mut out, Wait::Never).expect("first");
        p.push(&[2; 16], Wait::Never).expect("room"); // 24 bytes, at 24
        c.pop(&mut out, Wait::Never).expect("second");
        p.push(&[3; 8], Wait::Never).expect("room"); // exactly the 16 bytes left
        p.push(&[4; 24], Wait::Never).expect("room at 0");
        c.pop(&mut out, Wait::Never).expect("third");
        assert_eq!(out, [3; 8]);
        c.pop(&mut out, Wait::Never).expect("fourth");
        assert_eq!(out, [4; 24]);
    }

    #[test]
    fn a_record_that_does_not_fit_before_the_end_wraps_whole() {
        let (mut p, mut c) = pair(64);
        let mut out = Vec::new();
        p.push(&[1; 20], Wait::Never).expect("room"); // 32 bytes
        c.pop(&mut out, Wait::Never).expect("first");
        p.push(&[2; 24], Wait::Never)
            .expect("wraps: marker at 32, record at 0");
        c.pop(&mut out, Wait::Never).expect("second");
        assert_eq!(out, [2; 24]);
        assert!(c.is_empty());
    }

    #[test]
    fn chunks_are_written_and_read_in_place() {
        let (mut p, mut c) = pair(128);
        let mut chunk = p.reserve(5, Wait::Never).expect("room");
        chunk.copy_from_slice(b"hello");
        chunk.commit();
        {
            let _unpublished = p.reserve(3, Wait::Never).expect("room");
        }
        {
            let peeked = c.peek(Wait::Never).expect("a record");
            assert_eq!(&*peeked, b"hello"); // not released: read again below
        }
        assert_eq!(
            c.read_with(Wait::Never, |r| r.to_vec()),
            Ok(b"hello".to_vec())
        );
        assert_eq!(c.peek(Wait::Never).err(), Some(PopError::Empty));
    }

    #[test]
    fn a_chunk_grows_in_place_or_moves_past_the_end_keeping_its_bytes() {
        let (mut p, mut c) = pair(256);
        let mut out = Vec::new();
        // At 0: grows in place, and only the first 50 bytes are published.
        let mut chunk = p.reserve(10, Wait::Never).expect("room");
        chunk.copy_from_slice(&[1; 10]);
        chunk.grow(100, Wait::Never).expect("room");
        assert_eq!(&chunk[..10], &[1; 10]);
        chunk[10..].fill(2);
        chunk.truncate(50);
        chunk.commit(); // 64 bytes
        c.pop(&mut out, Wait::Never).expect("first");
        assert_eq!(out, [[1; 10].as_slice(), &[2; 40]].concat());
        p.push(&[7; 104], Wait::Never).expect("room"); // 112, at 64
        c.pop(&mut out, Wait::Never).expect("filler");
        // At 176: 16 bytes fit before the end, 80 do not: the chunk moves
        // to 0 with its bytes, behind a wrap marker.
        let mut chunk = p.reserve(16, Wait::Never).expect("room");
        chunk.copy_from_slice(&[3; 16]);
        chunk.grow(80, Wait::Never).expect("room after the wrap");
        assert_eq!(&chunk[..16], &[3; 16]);
        chunk[16..].fill(4);
        chunk.commit();
        c.pop(&mut out, Wait::Never).expect("the moved record");
        assert_eq!(out, [[3; 16].as_slice(), &[4; 64]].concat());
        assert!(c.is_empty());
        assert_eq!(p.len(), 0);
    }

    #[test]
    fn a_chunk_that_cannot_grow_stays_as_it_was() {
        let (mut p, mut c) = pair(256);
        p.push(&[9; 120], Wait::Never).expect("room"); // 128
        p.push(&[8; 40], Wait::Never).expect("room"); // 48, to 176
        let mut chunk = p.reserve(40, Wait::Never).expect("room"); // 48 of 80
        chunk.copy_from_slice(&[5; 40]);
        assert_eq!(chunk.grow(100, Wait::Never), Err(PushError::Full));
        assert_eq!(
            chunk.grow(100, Wait::For(Duration::from_millis(5))),
            Err(PushError::TimedOut(Duration::from_millis(5)))
        );
        assert_eq!(&*chunk, &[5; 40]);
        chunk.commit();
        let mut out = Vec::new();
        for want in [[9; 120].as_slice(), &[8; 40], &[5; 40]] {
            c.pop(&mut out, Wait::Never).expect("a record");
            assert_eq!(out, want);
        }
        assert_eq!(c.pop(&mut out, Wait::Never), Err(PopError::Empty));
    }

    #[test]
    fn cursors_out_of_range_are_corrupt_cursors_not_a_wait_nor_a_bad_header() {
        let (mut p, mut c) = pair(256);
        // Bounded, so that a regression fails instead of hanging; the
        // answer must come at once all the same.
        let patience = Wait::For(Duration::from_secs(10));
        let started = Instant::now();
        // What a corrupt file (or a stray writer) would hold.
        fn set<R: Region>(ring: &StreamRing<R>, field: usize, value: u64) {
            ring.cursor(field).store(value, Ordering::Relaxed);
        }
        p.push(&[1; 8], Wait::Never).expect("room"); // 16
        let mut out = Vec::new();
        c.pop(&mut out, Wait::Never).expect("first");
        // TAIL more than the capacity ahead of HEAD (16).
        set(&c.ring, ctl::TAIL, 16 + 257 * 8);
        let corrupt = PopError::CorruptCursors {
            head: 16,
            tail: 16 + 257 * 8,
            capacity: 256,
        };
        assert_eq!(c.pop(&mut out, Wait::Never), Err(corrupt.clone()));
        assert_eq!(c.pop(&mut out, patience), Err(corrupt));
        // TAIL behind HEAD.
        set(&c.ring, ctl::TAIL, 8);
        assert!(matches!(
            c.pop(&mut out, patience),
            Err(PopError::CorruptCursors { tail: 8, .. })
        ));
        set(&c.ring, ctl::TAIL, 16);

        // The producer fills the ring, then finds HEAD past TAIL...
        while p.push(&[2; 8], Wait::Never).is_ok() {}
        let t = 16 + 256;
        set(&p.ring, ctl::HEAD, t + 64);
        assert_eq!(
            p.push(&[3; 8], patience),
            Err(PushError::CorruptCursors {
                head: t + 64,
                tail: t,
                capacity: 256,
                min_head: 16,
            })
        );
        // ... or moved back from the 16 it saw last.
        set(&p.ring, ctl::HEAD, 8);
        assert!(matches!(
            p.push(&[3; 8], patience),
            Err(PushError::CorruptCursors {
                head: 8,
                min_head: 16,
                ..
            })
        ));
        // Put right, both carry on.
        set(&p.ring, ctl::HEAD, 16);
        set(&c.ring, ctl::TAIL, t);
        c.pop(&mut out, Wait::Never).expect("a record");
        assert_eq!(out, [2; 8]);
        p.push(&[3; 8], Wait::Never).expect("room again");
        assert!(started.elapsed() < Duration::from_secs(5), "a wait");
    }

    #[test]
    fn every_record_crosses_between_threads_once_in_order() {
        let n: u32 = if cfg!(miri) { 300 } else { 200_000 };
        let (mut p, mut c) = pair(1024);
        let reader = std::thread::spawn(move || {
            let mut out = Vec::new();
            for i in 0..n {
                c.pop(&mut out, Wait::Forever).expect("a record");
                let len = (i % 97) as usize;
                assert_eq!(out.len(), len);
                assert!(out.iter().all(|&b| b == i as u8), "record {i} damaged");
            }
        });
        for i in 0..n {
            let rec = vec![i as u8; (i % 97) as usize];
            p.push(&rec, Wait::Forever).expect("pushed");
        }
        reader.join().expect("reader");
    }
}
