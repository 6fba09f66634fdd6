//! The broadcast bus: one publisher, any number of subscribers, stamped slots.
//!
//! # Invariants
//! - Slot `i` (of `capacity`, a power of two) lives at
//!   `data_offset + i * slot_size` and carries sequence numbers `s` with
//!   `s & (capacity - 1) == i`. Its first 8 bytes are the stamp, then the
//!   payload, padded with zeros to a multiple of 8 bytes.
//! - Stamp encoding, all arithmetic wrapping mod 2^64: `2s + 1` while sequence
//!   `s` is being written, `2s + 2` once it is complete. A new bus whose first
//!   sequence is `f` starts every stamp at `2f`, "complete up to f - 1", so
//!   the encoding needs no special empty value and crosses u64::MAX like any
//!   other number. Readers compare stamps by their signed wrapping distance.
//! - Only the publisher (the holder of the publisher lock) writes stamps,
//!   payloads and the cursor. The cursor is the next sequence to be written;
//!   it is stored after the stamp, so `cursor > s` implies slot `s` was
//!   complete (and perhaps overwritten since).
//! - Subscribers never write the data pages (they map them read-only), keep
//!   their cursor in their own memory, and touch one slot line per message.
//!
//! # Algorithm
//! A seqlock per slot, after Boehm, "Can seqlocks get along with programming
//! language memory models?" (MSPC 2012), with the stamp in the slot as in
//! photon-ring and Disruptor-style broadcast rings. The payload is copied
//! with 64-bit atomic loads and stores ("atomic stripes"), so the racing copy
//! a seqlock makes is defined behaviour; a reader that raced a writer throws
//! its copy away and never returns it.
//!
//! # Untrusted stamps
//! Any process that can open the file can store anything into a stamp or
//! the cursor. A reader keeps two promises whatever it finds: every step
//! makes progress or waits for the publisher (a waiting receive ends at its
//! deadline), and a lag it reports is at least 1 and at most what the
//! cursor says was published past its position. So:
//! - a lap is believed only if the stamp names a sequence of *this* slot,
//!   ahead of the reader and not past the cursor, and the cursor is
//!   confirmed by its slot (`slots_confirm`: a real cursor `h` finds `h - 1`,
//!   or one lap later, in slot `h - 1`);
//! - any other stamp the reader cannot read is a lost message (`Lagged(1)`)
//!   once a confirmed cursor is past it, and "not yet" before that;
//! - a waiting reader checks every 64th empty poll whether a confirmed
//!   cursor is past its position while the stamp still says "not yet", and
//!   skips that one message if so (`check_stuck`).
//!
//! A peer can still forge a whole valid message (stamp, payload, cursor):
//! write access to the file is trust in the peer; these rules only keep
//! corruption from hanging readers or inventing lag.
//!
//! Multi-publisher buses (header flag `MULTI_PUBLISHER`) share this slot
//! protocol; their claim, commit and unblock rules are in [`crate::mpmc`],
//! whose invariants extend the ones above. The single-publisher paths here
//! test the mode only on their slow paths (a stamp other than the one
//! expected), so they cost what they did before.
//!
//! `publish_with` gives its closure a publisher-local staging copy, not the
//! slot itself: a plain `&mut T` into memory other processes are reading at
//! the same moment would be a data race, and the staging copy stays in the
//! publisher's L1 cache, so the cost is one extra copy of a hot line.

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytemuck::Pod;

use crate::error::TypeFingerprint;
use crate::layout::{control, Header};
use crate::region::{HeapRegion, Region};
use crate::sync::{fence, AtomicU64, Ordering};
use crate::wait::{self, WaitStrategy};

/// What a receive found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Received<T> {
    /// The next message.
    Message(T),
    /// The publisher overwrote `skipped` messages before this subscriber read
    /// them; the cursor now points at the oldest message still in the ring.
    /// Over a subscriber's life, messages delivered plus all `skipped` equal
    /// the messages published since it started, exactly.
    Lagged {
        /// How many messages were lost.
        skipped: u64,
    },
}

/// Where a new subscriber starts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Start {
    /// The newest message already published, then everything after it.
    Latest,
    /// The oldest message still in the ring.
    Oldest,
    /// Only messages published after it joined.
    #[default]
    Next,
}

#[inline]
fn done(seq: u64) -> u64 {
    seq.wrapping_mul(2).wrapping_add(2)
}

#[inline]
fn writing(seq: u64) -> u64 {
    seq.wrapping_mul(2).wrapping_add(1)
}

/// The top stamp bit: `done(s) ^ ABANDONED_BIT` says "sequence `s` was
/// claimed and never committed" (multi-publisher buses, see `mpmc`).
const ABANDONED_BIT: u64 = 1 << 63;

#[inline]
pub(crate) fn writing_stamp(seq: u64) -> u64 {
    writing(seq)
}

#[inline]
pub(crate) fn done_stamp(seq: u64) -> u64 {
    done(seq)
}

#[inline]
pub(crate) fn abandoned(seq: u64) -> u64 {
    done(seq) ^ ABANDONED_BIT
}

/// `a - b` as a signed distance; sequences within 2^61 of each other (so
/// that a stamp's distance tells an abandoned one from the others).
#[inline]
pub(crate) fn ahead(a: u64, b: u64) -> i64 {
    a.wrapping_sub(b) as i64
}

/// A stamp read as the state of one sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stamp {
    /// `writing(t)`: claimed (multi) or being written (single).
    Writing(u64),
    /// `done(t)`: complete. A new bus's stamps read as `Done(first - 1)`.
    Done(u64),
    /// `abandoned(t)`: claimed, never committed, skipped by an unblocker.
    Abandoned(u64),
}

impl Stamp {
    pub(crate) fn seq(self) -> u64 {
        match self {
            Stamp::Writing(t) | Stamp::Done(t) | Stamp::Abandoned(t) => t,
        }
    }
}

/// Decodes `stamp` as the state of the sequence nearest `near` it can name.
/// Normal stamps of sequences within 2^61 of `near` lie within 2^62 of
/// `done(near)`; abandoned ones, with the top bit flipped, lie at least
/// 2^62 away, so the distance tells them apart.
#[inline]
pub(crate) fn decode(stamp: u64, near: u64) -> Stamp {
    let far = ahead(stamp, done(near)).unsigned_abs() >= 1 << 62;
    let st = if far { stamp ^ ABANDONED_BIT } else { stamp };
    let d = ahead(st, done(near));
    // writing(t) = done(near) + 2(t - near) - 1, done(t) = ... + 2(t - near).
    let t = near.wrapping_add(((d + 1) >> 1) as u64);
    if far {
        Stamp::Abandoned(t)
    } else if st & 1 == 1 {
        Stamp::Writing(t)
    } else {
        Stamp::Done(t)
    }
}

/// What one attempt to read a slot found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Slot {
    /// The payload of the expected sequence is in the buffer, whole.
    Read,
    /// Not written yet (or being written).
    Empty,
    /// Overwritten: the slot holds (or is being written with) `newer`.
    Lapped { newer: u64 },
    /// Claimed and never committed; skipped (multi-publisher buses).
    Abandoned,
}

/// A subscriber's memory of a claimed slot it waits on (multi-publisher
/// buses): which sequence, and since when.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Stall {
    pub(crate) seq: u64,
    pub(crate) since: Option<Instant>,
}

/// The slot protocol over any region. Both sides use it; which methods a
/// side may call is the publisher/subscriber split below.
pub(crate) struct Ring<R> {
    region: R,
    geo: Geometry,
    /// Publisher side: this process is registered for the asymmetric
    /// barrier, so `wake_sleepers` needs only a compiler fence (see `wait`).
    light_barrier: bool,
    /// Multi-publisher buses: how long a claimed slot may stay uncommitted
    /// before anyone may skip it (`control::UNBLOCK_NS`).
    unblock: Duration,
}

/// The numbers a ring computes offsets from, taken from a validated header.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Geometry {
    mask: u64,
    capacity: u64,
    slot_size: usize,
    msg_size: usize,
    payload_words: usize,
    data_offset: usize,
    control_offset: usize,
    first_seq: u64,
    /// Header flag `MULTI_PUBLISHER`.
    multi: bool,
}

impl Geometry {
    pub(crate) fn msg_size(&self) -> usize {
        self.msg_size
    }

    fn of(h: &Header) -> Geometry {
        Geometry {
            mask: h.capacity - 1,
            capacity: h.capacity,
            slot_size: h.slot_size as usize,
            msg_size: h.msg.size as usize,
            payload_words: (h.msg.size as usize).div_ceil(8),
            data_offset: h.data_offset as usize,
            control_offset: h.control_offset as usize,
            first_seq: h.first_seq,
            multi: h.flags & crate::layout::flags::MULTI_PUBLISHER != 0,
        }
    }
}

impl<R: Region> Ring<R> {
    /// A ring over a region whose header has been validated (or just built).
    pub(crate) fn new(region: R, h: &Header) -> Ring<R> {
        Self::with_geometry(region, Geometry::of(h))
    }

    pub(crate) fn with_geometry(region: R, geo: Geometry) -> Ring<R> {
        let unblock = if geo.multi {
            // Written by the creator before the magic, whose Acquire load
            // every opener made.
            let ns = region
                .word(geo.control_offset + control::UNBLOCK_NS)
                .load(Ordering::Relaxed);
            Duration::from_nanos(ns)
        } else {
            Duration::ZERO
        };
        Ring {
            region,
            geo,
            light_barrier: false,
            unblock,
        }
    }

    /// Whether the header says multi-publisher.
    pub(crate) fn is_multi(&self) -> bool {
        self.geo.multi
    }

    pub(crate) fn capacity(&self) -> u64 {
        self.geo.capacity
    }

    pub(crate) fn msg_size(&self) -> usize {
        self.geo.msg_size
    }

    /// Publisher side: use the asymmetric barrier if this process could
    /// register for it (see `wait`).
    pub(crate) fn set_light_barrier(&mut self) {
        self.light_barrier = wait::light_publisher_barrier();
    }

    /// The unblock timeout (zero on single-publisher buses).
    pub(crate) fn unblock_timeout(&self) -> Duration {
        self.unblock
    }

    pub(crate) fn geometry(&self) -> Geometry {
        self.geo
    }

    pub(crate) fn region(&self) -> &R {
        &self.region
    }

    #[inline]
    fn control(&self, field: usize) -> usize {
        self.geo.control_offset + field
    }

    /// Byte offset of a control-page field in the region.
    pub(crate) fn control_field(&self, field: usize) -> usize {
        self.control(field)
    }

    pub(crate) fn data_offset(&self) -> usize {
        self.geo.data_offset
    }

    /// Where a publisher attaching after another one continues, and bumps the
    /// epoch. If the last publisher died after completing slot `cursor` but
    /// before advancing the cursor, a reader may already have that message,
    /// so the number is not reused; if it died mid-write (odd stamp), no
    /// reader can have it, and the slot is written again under that number.
    /// New publisher only, holding the publisher lock.
    pub(crate) fn resume(&self) -> u64 {
        let head = self.head();
        let next = if self.stamp(head).load(Ordering::Acquire) == done(head) {
            head.wrapping_add(1)
        } else {
            head
        };
        // Release, paired with the Acquire cursor loads in `head`.
        self.cursor().store(next, Ordering::Release);
        self.region
            .word(self.control(control::EPOCH))
            .fetch_add(1, Ordering::AcqRel);
        next
    }

    #[inline]
    fn slot_offset(&self, seq: u64) -> usize {
        self.geo.data_offset + (seq & self.geo.mask) as usize * self.geo.slot_size
    }

    #[inline]
    pub(crate) fn stamp(&self, seq: u64) -> &AtomicU64 {
        self.region.word(self.slot_offset(seq))
    }

    #[inline]
    fn payload(&self, seq: u64) -> &[AtomicU64] {
        self.region
            .words(self.slot_offset(seq) + 8, self.geo.payload_words)
    }

    #[inline]
    pub(crate) fn cursor(&self) -> &AtomicU64 {
        self.region.word(self.control(control::CURSOR))
    }

    pub(crate) fn epoch(&self) -> u64 {
        self.region
            .word(self.control(control::EPOCH))
            .load(Ordering::Acquire)
    }

    /// Sets every stamp to "complete up to first_seq - 1" and the cursor to
    /// `first_seq`. Creator only, before the magic is published.
    pub(crate) fn init(&self) {
        let empty = self.geo.first_seq.wrapping_mul(2);
        for i in 0..self.geo.capacity {
            self.stamp(i).store(empty, Ordering::Relaxed);
        }
        self.cursor().store(self.geo.first_seq, Ordering::Relaxed);
        self.region
            .word(self.control(control::EPOCH))
            .store(1, Ordering::Relaxed);
    }

    /// Writes sequence `seq` from `src` (at most `msg_size` bytes; the rest of
    /// the payload is zeroed), then advances the cursor and wakes sleepers.
    /// Publisher only; `seq` is the cursor.
    #[inline]
    pub(crate) fn write(&self, seq: u64, src: &[u8]) {
        debug_assert!(src.len() <= self.geo.msg_size);
        let stamp = self.stamp(seq);
        stamp.store(writing(seq), Ordering::Relaxed);
        // Release fence, paired with the reader's Acquire fence in `read`: a
        // reader whose copy saw any word stored below will see at least
        // `writing(seq)` when it re-loads the stamp, and discard the copy.
        fence(Ordering::Release);
        self.store_payload(seq, src);
        // Release, paired with the Acquire first load of the stamp in `read`:
        // a reader that sees `done(seq)` sees the whole payload.
        stamp.store(done(seq), Ordering::Release);
        // Release, paired with the Acquire cursor loads in `head`: a reader
        // that sees the cursor past `seq` sees slot `seq` complete (or newer).
        self.cursor().store(seq.wrapping_add(1), Ordering::Release);
        self.wake_sleepers();
    }

    /// Copies `src` into the payload of `seq`'s slot, zero-padded. Only the
    /// owner of the slot's odd stamp calls it.
    #[inline]
    pub(crate) fn store_payload(&self, seq: u64, src: &[u8]) {
        let words = self.payload(seq);
        let mut chunks = src.chunks_exact(8);
        let mut i = 0;
        for chunk in &mut chunks {
            let w = u64::from_ne_bytes(chunk.try_into().expect("8-byte chunk"));
            words[i].store(w, Ordering::Relaxed);
            i += 1;
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            words[i].store(u64::from_ne_bytes(last), Ordering::Relaxed);
            i += 1;
        }
        for w in &words[i..] {
            w.store(0, Ordering::Relaxed);
        }
    }

    /// The publisher half of the sleep protocol in `wait`.
    #[inline]
    pub(crate) fn wake_sleepers(&self) {
        let bell = self.region.word32(self.control(control::FUTEX));
        wait::ring(bell, self.light_barrier);
    }

    /// Reads sequence `seq` into `dst` (exactly `msg_size` bytes).
    #[inline]
    pub(crate) fn read(&self, seq: u64, dst: &mut [u8]) -> Slot {
        debug_assert_eq!(dst.len(), self.geo.msg_size);
        let stamp = self.stamp(seq);
        let want = done(seq);
        // Acquire, paired with the publisher's Release store of `done(seq)`.
        let before = stamp.load(Ordering::Acquire);
        if before != want {
            return self.classify(seq, before);
        }
        let words = self.payload(seq);
        let mut chunks = dst.chunks_exact_mut(8);
        let mut i = 0;
        for chunk in &mut chunks {
            chunk.copy_from_slice(&words[i].load(Ordering::Relaxed).to_ne_bytes());
            i += 1;
        }
        let rest = chunks.into_remainder();
        if !rest.is_empty() {
            let last = words[i].load(Ordering::Relaxed).to_ne_bytes();
            rest.copy_from_slice(&last[..rest.len()]);
        }
        // Acquire fence, paired with the publisher's Release fence in `write`:
        // if any word copied above came from a later write, the re-load below
        // sees that write's stamp (or a newer one).
        fence(Ordering::Acquire);
        let after = stamp.load(Ordering::Relaxed);
        if after == want {
            Slot::Read
        } else {
            self.classify(seq, after)
        }
    }

    /// What a stamp other than `done(seq)` means to a reader of `seq`.
    #[inline]
    fn classify(&self, seq: u64, stamp: u64) -> Slot {
        match decode(stamp, seq) {
            Stamp::Abandoned(t) if t == seq => Slot::Abandoned,
            // Any state of t >= seq + capacity.
            newer if ahead(newer.seq(), seq) > 0 => Slot::Lapped { newer: newer.seq() },
            // `writing(seq)` or an older lap: not there yet.
            _ => Slot::Empty,
        }
    }

    /// The next sequence the publisher will write. Acquire, paired with the
    /// Release cursor store in `write`.
    #[inline]
    pub(crate) fn head(&self) -> u64 {
        self.cursor().load(Ordering::Acquire)
    }

    /// The oldest sequence a reader that was lapped by `newer` can still get,
    /// given the cursor `head` (loaded after the stamp that named `newer`,
    /// and confirmed by its slot, so a corrupt cursor cannot move the
    /// reader past what was published).
    fn oldest_after_lap(&self, newer: u64, head: u64) -> u64 {
        let by_slot = newer.wrapping_add(1).wrapping_sub(self.geo.capacity);
        let by_head = head.wrapping_sub(self.geo.capacity);
        if ahead(by_head, by_slot) > 0 {
            by_head
        } else {
            by_slot
        }
    }

    /// Whether the slots back the cursor `head`: the publisher stores the
    /// cursor after `done(head - 1)`, so slot `head - 1` says `head - 1`,
    /// or `head - 1 + capacity` once the next lap reached it. A corrupt
    /// cursor (or a random stamp) almost never passes. A real one fails
    /// only if the publisher lapped that slot twice between our two loads;
    /// every caller then waits and looks again, so that costs nothing but
    /// time. (A multi-publisher cursor counts claims: not checked.)
    fn slots_confirm(&self, head: u64) -> bool {
        if self.geo.multi || head == self.geo.first_seq {
            return true;
        }
        let last = head.wrapping_sub(1);
        // Relaxed: a plausibility check that publishes nothing; whatever is
        // read next is read through the seqlock.
        let stamp = self.stamp(last).load(Ordering::Relaxed);
        let laps = decode(stamp, last).seq().wrapping_sub(last);
        laps == 0 || laps == self.geo.capacity
    }

    /// Where a subscriber starting now begins.
    pub(crate) fn start_at(&self, start: Start) -> u64 {
        let head = self.head();
        let published = head.wrapping_sub(self.geo.first_seq);
        match start {
            Start::Next => head,
            Start::Latest => head.wrapping_sub(published.min(1)),
            Start::Oldest => head.wrapping_sub(published.min(self.geo.capacity)),
        }
    }

    /// One step of a subscriber at `*pos` that keeps no stall memory (on a
    /// multi-publisher bus it skips a stalled claim only with a zero
    /// unblock timeout).
    #[cfg_attr(not(loom), allow(dead_code))]
    #[inline]
    pub(crate) fn poll(&self, pos: &mut u64, dst: &mut [u8]) -> Poll {
        self.poll_from(pos, &mut Stall::default(), dst)
    }

    /// One step of a subscriber at `*pos`. A `Lagged` it returns is at
    /// least 1 and at most what the cursor says was published past `*pos`,
    /// whatever the stamps hold (see "Untrusted stamps" in the module docs).
    #[inline]
    pub(crate) fn poll_from(&self, pos: &mut u64, stall: &mut Stall, dst: &mut [u8]) -> Poll {
        match self.read(*pos, dst) {
            Slot::Read => {
                *pos = pos.wrapping_add(1);
                Poll::Message
            }
            Slot::Empty if self.geo.multi => self.unblock(pos, stall),
            Slot::Empty => Poll::Empty,
            Slot::Abandoned => self.skip_one(pos, self.head()),
            Slot::Lapped { newer } => self.lapped(pos, newer),
        }
    }

    /// The stamp at `*pos`'s slot names `newer`, a later sequence. Believed
    /// only if the publisher could have written it: `newer` maps to this
    /// slot and is not past the cursor (read after the stamp, and the
    /// cursor only grows, so a real lap always passes), which the slots
    /// confirm. A stamp that fails is corrupt: that one message is lost.
    #[cold]
    fn lapped(&self, pos: &mut u64, newer: u64) -> Poll {
        let head = self.head();
        let same_slot = (newer ^ *pos) & self.geo.mask == 0;
        let real = same_slot
            && ahead(newer, *pos) > 0
            && ahead(newer, head) <= 0
            && self.slots_confirm(head);
        if !real {
            return self.skip_one(pos, head);
        }
        // newer >= pos + capacity (same slot, ahead), so by_slot > pos; and
        // newer <= head, so to <= head: 1 <= skipped <= head - pos.
        let to = self.oldest_after_lap(newer, head);
        let skipped = to.wrapping_sub(*pos);
        *pos = to;
        Poll::Lagged(skipped)
    }

    /// Skips `*pos`, whose stamp no publisher wrote in this state (a claim
    /// skipped on a multi-publisher bus, or a corrupt stamp), if the cursor
    /// says it was claimed or published; otherwise there is nothing to
    /// skip yet: the publisher rewrites the stamp when it gets there.
    #[cold]
    fn skip_one(&self, pos: &mut u64, head: u64) -> Poll {
        if ahead(head, *pos) > 0 && self.slots_confirm(head) {
            *pos = pos.wrapping_add(1);
            Poll::Lagged(1)
        } else {
            Poll::Empty
        }
    }

    /// A single-publisher reader that keeps finding `*pos` empty: if the
    /// cursor, loaded *before* the stamp, is past `pos`, the stamp must say
    /// `done(pos)` or later (the publisher stores the stamp, Release, then
    /// the cursor, Release; this Acquire load of the cursor sees both). A
    /// stamp that still says otherwise is corrupt: the message is skipped,
    /// so a waiting reader always makes progress. `None`: nothing wrong.
    #[cold]
    fn check_stuck(&self, pos: &mut u64, stall: &mut Stall, dst: &mut [u8]) -> Option<Poll> {
        let head = self.head();
        if self.geo.multi || ahead(head, *pos) <= 0 || !self.slots_confirm(head) {
            // Multi-publisher buses: a claim that stays unfinished is
            // skipped by `unblock` after its timeout.
            return None;
        }
        match self.poll_from(pos, stall, dst) {
            Poll::Empty => {
                *pos = pos.wrapping_add(1);
                Some(Poll::Lagged(1))
            }
            found => Some(found),
        }
    }

    /// The newest complete message, without moving any cursor. `None` also
    /// when that slot stays unreadable while the cursor stands still: a
    /// publisher died writing over it (a one-slot bus), or the file is
    /// corrupt (found by tests/fuzz_header.rs: this looped forever).
    pub(crate) fn latest(&self, dst: &mut [u8]) -> Option<u64> {
        let mut stuck = 0u32;
        loop {
            let head = self.head();
            if head == self.geo.first_seq {
                return None;
            }
            let seq = head.wrapping_sub(1);
            if self.geo.multi {
                // Claimed is not complete: the newest complete one may be
                // below the cursor, or nowhere.
                let published = head.wrapping_sub(self.geo.first_seq);
                return (1..=published.min(self.geo.capacity))
                    .map(|back| head.wrapping_sub(back))
                    .find(|&s| self.read(s, dst) == Slot::Read);
            }
            if self.read(seq, dst) == Slot::Read {
                return Some(seq);
            }
            // Lapped while copying: the publisher has moved on; take the new
            // newest. Each retry means at least `capacity` new messages.
            if self.head() == head {
                stuck += 1;
                if stuck >= LATEST_TRIES {
                    return None;
                }
                crate::sync::yield_now();
            } else {
                crate::sync::spin_loop();
            }
        }
    }

    /// The subscriber half of the sleep protocol in `wait`: raises the
    /// sleepers flag, re-checks, sleeps if the publisher is still at `pos`.
    pub(crate) fn sleep(&self, pos: u64, timeout: Option<Duration>) {
        let mut timeout = timeout;
        if self.geo.multi {
            if ahead(self.cursor().load(Ordering::Relaxed), pos) > 0 {
                // Claimed, not committed: its publisher rings when it
                // commits, or never (dead), so poll until the unblock.
                crate::sync::yield_now();
                return;
            }
            // A claim made after this check by a publisher that then dies
            // rings no bell: wake four times per unblock timeout, so a
            // sleeper notices the claim at most a quarter timeout late.
            let nap = self.unblock / 4;
            timeout = Some(timeout.map_or(nap, |t| t.min(nap)));
        }
        let bell = self.region.word32(self.control(control::FUTEX));
        // `<=`, not `==`: after a publisher died between a stamp and the
        // cursor, a reader may be one past the cursor until the next one.
        wait::sleep(bell, timeout, || {
            ahead(self.cursor().load(Ordering::Relaxed), pos) <= 0
        });
    }

    /// Polls at `*pos` until something is there or the deadline passes,
    /// waiting between polls as `strategy` says.
    pub(crate) fn poll_wait(
        &self,
        pos: &mut u64,
        stall: &mut Stall,
        dst: &mut [u8],
        strategy: WaitStrategy,
        deadline: Option<Instant>,
    ) -> Poll {
        let mut backoff = wait::Backoff::new(strategy, deadline);
        let mut empties = 0u32;
        loop {
            match self.poll_from(pos, stall, dst) {
                Poll::Empty => {}
                found => return found,
            }
            empties = empties.wrapping_add(1);
            // Every 64th empty poll (one extra cursor load, off the hot
            // path), so no strategy, spinning included, waits forever on a
            // slot whose stamp is corrupt.
            if empties % 64 == 0 {
                if let Some(found) = self.check_stuck(pos, stall, dst) {
                    return found;
                }
            }
            match backoff.next() {
                wait::Step::Spin => crate::sync::spin_loop(),
                wait::Step::Yield => crate::sync::yield_now(),
                wait::Step::Sleep(left) => self.sleep(*pos, left),
                wait::Step::TimedOut => return Poll::Empty,
            }
        }
    }
}

/// How many times `latest` finds the newest slot unreadable with the cursor
/// unmoved before it gives up (a live publisher finishes a write in far
/// fewer; a yield between tries lets it run on a busy CPU).
const LATEST_TRIES: u32 = 1000;

/// The outcome of one subscriber step, without the payload.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Poll {
    Message,
    Lagged(u64),
    Empty,
}

/// Writes `T` messages to a bus. Exactly one per bus at a time.
pub struct Publisher<T: Pod, R: Region = crate::DefaultRegion> {
    pub(crate) ring: Ring<R>,
    next: u64,
    staging: T,
}

/// Reads `T` messages from a bus; each subscriber has its own cursor.
pub struct Subscriber<T: Pod, R: Region = crate::DefaultRegion> {
    pub(crate) ring: Ring<R>,
    pos: u64,
    stall: Stall,
    wait: WaitStrategy,
    _type: PhantomData<fn() -> T>,
}

impl<T: Pod, R: Region> Publisher<T, R> {
    pub(crate) fn from_parts(mut ring: Ring<R>, next: u64) -> Self {
        ring.light_barrier = wait::light_publisher_barrier();
        Publisher {
            ring,
            next,
            staging: T::zeroed(),
        }
    }

    /// Publishes one message, overwriting the oldest if the ring is full.
    /// Never waits; makes no system call unless a subscriber sleeps.
    #[inline]
    pub fn publish(&mut self, msg: &T) {
        self.ring.write(self.next, bytemuck::bytes_of(msg));
        self.next = self.next.wrapping_add(1);
    }

    /// Publishes a message built by `fill`, which gets the previously
    /// published message (zeroed before the first) to change in place.
    #[inline]
    pub fn publish_with(&mut self, fill: impl FnOnce(&mut T)) {
        fill(&mut self.staging);
        self.ring
            .write(self.next, bytemuck::bytes_of(&self.staging));
        self.next = self.next.wrapping_add(1);
    }

    /// The sequence number the next message will get.
    pub fn next_sequence(&self) -> u64 {
        self.next
    }

    /// This publisher's generation: 1 for the creator, +1 per re-attach.
    pub fn epoch(&self) -> u64 {
        self.ring.epoch()
    }

    /// Number of slots.
    pub fn capacity(&self) -> u64 {
        self.ring.geo.capacity
    }
}

impl<T: Pod, R: Region> Subscriber<T, R> {
    pub(crate) fn from_parts(ring: Ring<R>, start: Start, wait: WaitStrategy) -> Self {
        let pos = ring.start_at(start);
        Subscriber {
            ring,
            pos,
            stall: Stall::default(),
            wait,
            _type: PhantomData,
        }
    }

    /// The next message, a lag report, or `None` if nothing new is there.
    /// Never blocks.
    #[inline]
    pub fn try_recv(&mut self) -> Option<Received<T>> {
        let mut msg = T::zeroed();
        match self.ring.poll_from(
            &mut self.pos,
            &mut self.stall,
            bytemuck::bytes_of_mut(&mut msg),
        ) {
            Poll::Message => Some(Received::Message(msg)),
            Poll::Lagged(skipped) => Some(Received::Lagged { skipped }),
            Poll::Empty => None,
        }
    }

    /// Waits for the next message or lag report, with the wait strategy.
    /// Waits forever if nothing is ever published.
    pub fn recv(&mut self) -> Received<T> {
        self.wait_until(None).expect("no deadline, so no timeout")
    }

    /// As [`Subscriber::recv`], but gives up after `timeout` with `None`.
    pub fn recv_timeout(&mut self, timeout: Duration) -> Option<Received<T>> {
        self.wait_until(Some(Instant::now() + timeout))
    }

    fn wait_until(&mut self, deadline: Option<Instant>) -> Option<Received<T>> {
        let mut msg = T::zeroed();
        match self.ring.poll_wait(
            &mut self.pos,
            &mut self.stall,
            bytemuck::bytes_of_mut(&mut msg),
            self.wait,
            deadline,
        ) {
            Poll::Message => Some(Received::Message(msg)),
            Poll::Lagged(skipped) => Some(Received::Lagged { skipped }),
            Poll::Empty => None,
        }
    }

    /// The newest message on the bus, without moving this subscriber.
    pub fn latest(&self) -> Option<T> {
        let mut msg = T::zeroed();
        self.ring
            .latest(bytemuck::bytes_of_mut(&mut msg))
            .map(|_| msg)
    }

    /// The sequence number this subscriber will read next.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Messages published but not yet read (more than the capacity means
    /// the next receive reports a lag).
    pub fn pending(&self) -> u64 {
        ahead(self.ring.head(), self.pos).max(0) as u64
    }

    /// The publisher generation now on the bus; it changes when a publisher
    /// re-attaches after a restart.
    pub fn epoch(&self) -> u64 {
        self.ring.epoch()
    }

    /// Number of slots.
    pub fn capacity(&self) -> u64 {
        self.ring.geo.capacity
    }
}

impl<T: Pod> Publisher<T, Arc<HeapRegion>> {
    /// A bus on the heap, for threads of one process (and for loom and Miri,
    /// which run the same slot protocol as the shared-memory bus).
    pub fn on_heap(capacity: u64) -> Result<Self, crate::error::CreateError> {
        Self::on_heap_from(capacity, 0)
    }

    #[doc(hidden)]
    pub fn on_heap_from(capacity: u64, first_seq: u64) -> Result<Self, crate::error::CreateError> {
        let ring = heap_ring(capacity, TypeFingerprint::of::<T>(), first_seq, None)?;
        Ok(Publisher::from_parts(ring, first_seq))
    }

    /// A subscriber to this heap bus.
    pub fn subscribe(&self, start: Start, wait: WaitStrategy) -> Subscriber<T, Arc<HeapRegion>> {
        let ring = Ring::with_geometry(Arc::clone(self.ring.region()), self.ring.geometry());
        Subscriber::from_parts(ring, start, wait)
    }
}

/// A ring on the heap, built as `create` builds one in /dev/shm; `unblock`
/// makes it a multi-publisher ring with that unblock timeout.
pub(crate) fn heap_ring(
    capacity: u64,
    msg: TypeFingerprint,
    first_seq: u64,
    unblock: Option<Duration>,
) -> Result<Ring<Arc<HeapRegion>>, crate::error::CreateError> {
    // A small page: the heap ring needs no mprotect, and loom models
    // every word of the region.
    let mut header = Header::broadcast(capacity, msg, HEAP_PAGE, first_seq)
        .map_err(crate::error::CreateError::InvalidGeometry)?;
    let region = Arc::new(HeapRegion::new(header.total_len as usize));
    if let Some(unblock) = unblock {
        header.flags |= crate::layout::flags::MULTI_PUBLISHER;
        crate::mpmc::init_control(&*region, &header, unblock);
    }
    header.write(&*region);
    let ring = Ring::new(region, &header);
    ring.init();
    Header::publish_magic(ring.region());
    Ok(ring)
}

impl RawPublisher<Arc<HeapRegion>> {
    /// A bus of `msg_size`-byte messages on the heap, for threads of one
    /// process.
    pub fn on_heap(msg_size: u32, capacity: u64) -> Result<Self, crate::error::CreateError> {
        Ok(RawPublisher::from_parts(
            heap_ring(capacity, TypeFingerprint::bytes(msg_size), 0, None)?,
            0,
        ))
    }

    /// A subscriber to this heap bus.
    pub fn subscribe(&self, start: Start, wait: WaitStrategy) -> RawSubscriber<Arc<HeapRegion>> {
        let ring = Ring::with_geometry(Arc::clone(self.ring.region()), self.ring.geometry());
        RawSubscriber::from_parts(ring, start, wait)
    }
}

impl Ring<Arc<HeapRegion>> {
    /// Another handle on the same heap ring.
    pub(crate) fn share(&self) -> Self {
        Ring::with_geometry(Arc::clone(&self.region), self.geo)
    }
}

/// Page size of heap regions: the header fits, and so do the control fields
/// the protocol uses (the subscriber registry exists only on /dev/shm).
pub(crate) const HEAP_PAGE: u64 = 512;

/// Messages of a size chosen at run time, as raw bytes (the CLI's view).
pub struct RawPublisher<R: Region = crate::DefaultRegion> {
    pub(crate) ring: Ring<R>,
    next: u64,
}

/// Why a raw message could not be published.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PublishError {
    /// Longer than the bus's message size.
    #[error("message is {len} bytes, the bus carries at most {max}")]
    TooLong {
        /// The message's length.
        len: usize,
        /// The bus's message size.
        max: usize,
    },
}

impl<R: Region> RawPublisher<R> {
    pub(crate) fn from_parts(mut ring: Ring<R>, next: u64) -> Self {
        ring.light_barrier = wait::light_publisher_barrier();
        RawPublisher { ring, next }
    }

    /// Publishes `bytes`, zero-padded to the message size.
    pub fn publish(&mut self, bytes: &[u8]) -> Result<u64, PublishError> {
        if bytes.len() > self.ring.geo.msg_size {
            return Err(PublishError::TooLong {
                len: bytes.len(),
                max: self.ring.geo.msg_size,
            });
        }
        let seq = self.next;
        self.ring.write(seq, bytes);
        self.next = seq.wrapping_add(1);
        Ok(seq)
    }

    /// The bus's message size.
    pub fn msg_size(&self) -> usize {
        self.ring.geo.msg_size
    }

    /// The sequence number the next message will get.
    pub fn next_sequence(&self) -> u64 {
        self.next
    }

    /// This publisher's generation.
    pub fn epoch(&self) -> u64 {
        self.ring.epoch()
    }
}

/// A subscriber that receives raw bytes of the bus's message size.
pub struct RawSubscriber<R: Region = crate::DefaultRegion> {
    pub(crate) ring: Ring<R>,
    pos: u64,
    stall: Stall,
    wait: WaitStrategy,
    buf: Vec<u8>,
}

impl<R: Region> RawSubscriber<R> {
    pub(crate) fn from_parts(ring: Ring<R>, start: Start, wait: WaitStrategy) -> Self {
        let pos = ring.start_at(start);
        let buf = vec![0; ring.geo.msg_size];
        RawSubscriber {
            ring,
            pos,
            stall: Stall::default(),
            wait,
            buf,
        }
    }

    /// As [`Subscriber::try_recv`]; the message borrows an internal buffer.
    pub fn try_recv(&mut self) -> Option<Received<&[u8]>> {
        match self
            .ring
            .poll_from(&mut self.pos, &mut self.stall, &mut self.buf)
        {
            Poll::Message => Some(Received::Message(&self.buf)),
            Poll::Lagged(skipped) => Some(Received::Lagged { skipped }),
            Poll::Empty => None,
        }
    }

    /// As [`Subscriber::recv_timeout`]; a `None` timeout waits forever.
    pub fn recv_timeout(&mut self, timeout: Option<Duration>) -> Option<Received<&[u8]>> {
        let deadline = timeout.map(|t| Instant::now() + t);
        match self.ring.poll_wait(
            &mut self.pos,
            &mut self.stall,
            &mut self.buf,
            self.wait,
            deadline,
        ) {
            Poll::Message => Some(Received::Message(&self.buf)),
            Poll::Lagged(skipped) => Some(Received::Lagged { skipped }),
            Poll::Empty => None,
        }
    }

    /// The message the last successful receive returned (the buffer it
    /// lent), for callers that must end that borrow before using it.
    pub fn message(&self) -> &[u8] {
        &self.buf
    }

    /// The newest message on the bus, without moving this subscriber.
    pub fn latest(&mut self) -> Option<&[u8]> {
        self.ring.latest(&mut self.buf).map(|_| &self.buf[..])
    }

    /// The sequence number this subscriber will read next.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// The bus's message size.
    pub fn msg_size(&self) -> usize {
        self.ring.geo.msg_size
    }

    /// The publisher generation now on the bus.
    pub fn epoch(&self) -> u64 {
        self.ring.epoch()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn bus(capacity: u64) -> Publisher<u64, Arc<HeapRegion>> {
        Publisher::on_heap(capacity).expect("valid geometry")
    }

    #[test]
    fn lagged_subscriber_is_told_exactly_how_many_it_missed() {
        let mut p = bus(4);
        let mut s = p.subscribe(Start::Oldest, WaitStrategy::BusySpin);
        for i in 0..10 {
            p.publish(&i);
        }
        assert_eq!(s.try_recv(), Some(Received::Lagged { skipped: 6 }));
        for i in 6..10 {
            assert_eq!(s.try_recv(), Some(Received::Message(i)));
        }
        assert_eq!(s.try_recv(), None);
    }

    #[test]
    fn each_start_position_begins_where_it_says() {
        let mut p = bus(4);
        for i in 0..6 {
            p.publish(&i);
        }
        let mut oldest = p.subscribe(Start::Oldest, WaitStrategy::BusySpin);
        let mut latest = p.subscribe(Start::Latest, WaitStrategy::BusySpin);
        let mut next = p.subscribe(Start::Next, WaitStrategy::BusySpin);
        assert_eq!(oldest.try_recv(), Some(Received::Message(2)));
        assert_eq!(latest.try_recv(), Some(Received::Message(5)));
        assert_eq!(next.try_recv(), None);
        p.publish(&6);
        assert_eq!(next.try_recv(), Some(Received::Message(6)));
        assert_eq!(next.latest(), Some(6));
    }

    #[test]
    fn an_empty_bus_has_no_latest_and_every_start_waits_for_the_first_message() {
        let mut p = bus(2);
        for start in [Start::Oldest, Start::Latest, Start::Next] {
            let mut s = p.subscribe(start, WaitStrategy::BusySpin);
            assert_eq!(s.latest(), None);
            assert_eq!(s.try_recv(), None);
            assert_eq!(s.recv_timeout(Duration::from_millis(1)), None);
        }
        p.publish(&1);
    }

    #[test]
    fn publish_with_starts_from_the_previous_message() {
        let mut p = bus(2);
        let mut s = p.subscribe(Start::Next, WaitStrategy::BusySpin);
        p.publish_with(|m| *m += 5);
        p.publish_with(|m| *m += 5);
        assert_eq!(s.try_recv(), Some(Received::Message(5)));
        assert_eq!(s.try_recv(), Some(Received::Message(10)));
    }

    #[test]
    fn a_raw_message_longer_than_the_slot_is_refused_and_a_short_one_is_zero_padded() {
        let mut p = RawPublisher::on_heap(12, 2).expect("valid geometry");
        let mut s = p.subscribe(Start::Next, WaitStrategy::BusySpin);
        assert_eq!(
            p.publish(&[1; 13]),
            Err(PublishError::TooLong { len: 13, max: 12 })
        );
        p.publish(&[7; 12]).expect("fits");
        p.publish(&[9; 3]).expect("fits");
        assert_eq!(s.try_recv(), Some(Received::Message(&[7u8; 12][..])));
        assert_eq!(
            s.try_recv(),
            Some(Received::Message(&[9, 9, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0][..]))
        );
    }

    #[test]
    fn delivered_plus_skipped_equals_published_between_threads() {
        let n: u64 = if cfg!(miri) { 200 } else { 200_000 };
        let mut p = bus(8);
        let mut s = p.subscribe(Start::Oldest, WaitStrategy::default());
        let reader = std::thread::spawn(move || {
            let (mut delivered, mut skipped, mut last) = (0u64, 0u64, None);
            while s.position() < n {
                match s.recv() {
                    Received::Message(v) => {
                        assert!(last.is_none_or(|l| v > l), "{v} after {last:?}");
                        last = Some(v);
                        delivered += 1;
                    }
                    Received::Lagged { skipped: k } => skipped += k,
                }
            }
            (delivered, skipped)
        });
        for i in 0..n {
            p.publish(&i);
        }
        let (delivered, skipped) = reader.join().expect("reader");
        assert_eq!(delivered + skipped, n);
    }
}
