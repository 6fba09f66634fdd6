//! The slot protocol over any region: the publisher's write, the
//! subscriber's read, lap and stuck-cursor checks, `latest`, and sleeping
//! on the futex. The bus module's invariants and "Untrusted stamps" rules
//! are what this file implements; [`super::claim`] adds the
//! many-publisher steps to the same [`Ring`].
//!
//! A ring checks once, when it is made, that every slot and the control
//! fields from `cursor` through `gating` lie in its region; the hot paths
//! (`slot`, `slot_lines`, `hot64`, `hot32`) then reach them without a
//! bounds check each. Everything else is checked per access.
//!
//! A reader's state is one [`Cursor`], owned by its handle (a bus
//! subscriber or group, a pool subscriber, a journal subscriber) and
//! passed whole to every reader step (`recv`, `poll`, `poll_wait`,
//! `unblock`): its position, its memory of a stalled claim, its wait
//! strategy and its registry line. The ring keeps no reader state, so
//! readers share a ring without sharing anything else, and a step moves
//! the position and notes it on the line together.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::activity::Activity;
use super::copy;
use super::stamp::{Stamp, abandoned, ahead, decode, done, writing};
use crate::mem::{HeapRegion, Region};
use crate::options::Start;
use crate::sync::{AtomicU32, AtomicU64, Ordering, fence};
use crate::wait::{self, Wait, WaitStrategy};
use crate::wire::{Header, LINE, STAMP_BYTES, control};

/// What one attempt to read a slot found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Slot {
    /// The payload of the expected sequence is in the buffer, whole.
    Read,
    /// Not written yet (or being written).
    Empty,
    /// Overwritten: the slot holds (or is being written with) `newer`.
    Lapped { newer: u64 },
    /// Claimed and never committed; skipped (many-publisher buses).
    Abandoned,
}

/// A subscriber's memory of a claimed slot it waits on (many-publisher
/// buses): which sequence, and since when.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Stall {
    pub(crate) seq: u64,
    pub(crate) since: Option<Instant>,
    /// Which gating subscriber has kept this reader from skipping the
    /// claim (`claim`'s unblock waits for the gate), at which position,
    /// and since when.
    pub(crate) gated: Option<(usize, u64, Instant)>,
    /// Whether the gate held the claim at this reader's last look.
    pub(crate) held: bool,
}

/// One reader's place on a ring, which its handle owns and every reader
/// step takes whole. Not the ring's cursor word (`Ring::cursor`, the
/// publisher's next sequence, which every reader reads and none writes).
#[derive(Debug)]
pub(crate) struct Cursor {
    /// The sequence this reader reads next.
    pub(crate) pos: u64,
    /// The claim it waits on (many-publisher buses), for `unblock`.
    pub(crate) stall: Stall,
    /// How a blocking receive waits between polls.
    pub(crate) strategy: WaitStrategy,
    /// Its line in the bus's registry, if registered (and its gating
    /// entry, if lossless).
    pub(crate) activity: Activity,
}

impl Cursor {
    /// A cursor at `pos` with no stall, waiting as `strategy` says, on no
    /// registry line (a handle that registers sets `activity` after).
    pub(crate) fn new(pos: u64, strategy: WaitStrategy) -> Cursor {
        Cursor {
            pos,
            stall: Stall::default(),
            strategy,
            activity: Activity::none(),
        }
    }
}

/// The slot protocol over any region. Both sides use it; which methods a
/// side may call is the publisher/subscriber split below.
pub(crate) struct Ring<R> {
    region: R,
    geo: Geometry,
    /// Publisher side: this process is registered for the asymmetric
    /// barrier, so `wake_sleepers` needs only a compiler fence (see `wait`).
    light_barrier: bool,
    /// Many-publisher buses: how long a claimed slot may stay uncommitted
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
    /// How many cache lines past the stamp's a waiting reader prefetches:
    /// those the payload reaches into, at most [`PREFETCH_LINES`].
    prefetch_lines: usize,
    /// Control-relative offset of registry entry 0's line, and how many
    /// entries have one (`gate`: the heap's are in a page of their own).
    lines: usize,
    entries: usize,
    /// As many for the publisher's `prefetchw` of the next slot, or 0 where
    /// the CPU has no such instruction (`sync::prefetch_write_available`,
    /// asked here once rather than per line of every publish).
    write_prefetch_lines: usize,
}

/// The control fields the hot paths reach without a check each (`cursor`
/// through `gating`, LAYOUT §5), checked once when a ring is made.
pub(crate) const HOT_CONTROL: usize = control::GATING + 32;

/// Registry entries a heap ring has lines for (lossless subscribers, see
/// `gate`).
pub(crate) const HEAP_ENTRIES: usize = 8;

/// The most lines past the stamp's that a waiting reader prefetches. A
/// message of up to 5 lines (312 bytes) then arrives in one transfer's
/// time; longer ones stream behind it (the hardware prefetcher follows).
const PREFETCH_LINES: usize = 4;

impl Geometry {
    pub(crate) fn msg_size(&self) -> usize {
        self.msg_size
    }

    /// The bus's first sequence (`first_seq`, header).
    pub(crate) fn first_seq(&self) -> u64 {
        self.first_seq
    }

    /// Control-relative offset of registry entry 0's line.
    pub(crate) fn lines(&self) -> usize {
        self.lines
    }

    /// How many registry entries have lines (0 where none do).
    pub(crate) fn entries(&self) -> usize {
        self.entries
    }

    /// Whether the control area has the registry (a segment in /dev/shm;
    /// not a heap ring).
    pub(crate) fn has_registry(&self) -> bool {
        self.lines == control::SUBSCRIBERS
    }

    fn of(h: &Header) -> Geometry {
        // A segment's control area holds every registry entry's line; a
        // heap ring's (`heap_ring`) one page of fields, then one page of
        // `HEAP_ENTRIES` lines.
        let control_len = h.data_offset.saturating_sub(h.control_offset) as usize;
        let (lines, entries) =
            if control_len >= control::SUBSCRIBERS + LINE * control::REGISTRY_SLOTS {
                (control::SUBSCRIBERS, control::REGISTRY_SLOTS)
            } else {
                let page = h.page_size as usize;
                (
                    page,
                    (control_len.saturating_sub(page) / LINE).min(HEAP_ENTRIES),
                )
            };
        Geometry {
            lines,
            entries,
            mask: h.capacity - 1,
            capacity: h.capacity,
            slot_size: h.slot_size as usize,
            msg_size: h.msg.size as usize,
            payload_words: (h.msg.size as usize).div_ceil(8),
            data_offset: h.data_offset as usize,
            control_offset: h.control_offset as usize,
            first_seq: h.first_seq,
            multi: h.publishers() == crate::wire::Publishers::Many,
            prefetch_lines: Self::prefetch_lines(h),
            write_prefetch_lines: if crate::sync::prefetch_write_available() {
                Self::prefetch_lines(h)
            } else {
                0
            },
        }
    }

    /// The lines past the stamp's that the payload reaches into, at most
    /// [`PREFETCH_LINES`].
    fn prefetch_lines(h: &Header) -> usize {
        ((STAMP_BYTES + h.msg.size as usize).div_ceil(LINE) - 1).min(PREFETCH_LINES)
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
        // The one bounds check of the hot paths' words (`slot`,
        // `slot_lines`, `hot32`, `cursor`): every slot, and the control
        // fields through `ROOM`, lie in the region. (A region's length never
        // shrinks.)
        let slot_words = geo.slot_size / 8;
        assert!(
            geo.slot_size % 8 == 0
                && slot_words > geo.payload_words
                && slot_words > (LINE / 8) * geo.prefetch_lines.max(geo.write_prefetch_lines),
            "shmbus: slot of {} bytes too small for its payload",
            geo.slot_size
        );
        let _ = region.words(
            geo.data_offset,
            usize::try_from(geo.capacity)
                .ok()
                .and_then(|c| c.checked_mul(slot_words))
                .expect("shmbus: slots fit the address space"),
        );
        let _ = region.words(geo.control_offset, HOT_CONTROL / 8);
        Ring {
            region,
            geo,
            light_barrier: false,
            unblock,
        }
    }

    pub(crate) fn capacity(&self) -> u64 {
        self.geo.capacity
    }

    /// Whether this is a many-publisher bus (header flag `MULTI_PUBLISHER`).
    #[inline(always)]
    pub(crate) fn multi(&self) -> bool {
        self.geo.multi
    }

    pub(crate) fn msg_size(&self) -> usize {
        self.geo.msg_size
    }

    /// Publisher side: use the asymmetric barrier if this process could
    /// register for it (see `wait`).
    pub(crate) fn set_light_barrier(&mut self) {
        self.light_barrier = wait::light_publisher_barrier();
    }

    /// Whether this handle uses the asymmetric barrier (publisher side).
    #[inline(always)]
    pub(crate) fn light_barrier(&self) -> bool {
        self.light_barrier
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
    pub(super) fn payload(&self, seq: u64) -> &[AtomicU64] {
        self.region
            .words(self.slot_offset(seq) + 8, self.geo.payload_words)
    }

    /// `seq`'s stamp and payload words, unchecked (the hot paths, `write`
    /// and `read`: a check per word was a tenth of each).
    #[inline(always)]
    fn slot(&self, seq: u64) -> (&AtomicU64, &[AtomicU64]) {
        // SAFETY: `seq & mask < capacity`, so the slot lies in the slots
        // `with_geometry` checked, and its stamp and payload words in it
        // (`payload_words < slot_size / 8`, checked there too); the data
        // offset and slot size are multiples of 8.
        let words = unsafe {
            self.region
                .words_unchecked(self.slot_offset(seq), 1 + self.geo.payload_words)
        };
        match words {
            [stamp, payload @ ..] => (stamp, payload),
            [] => unreachable!("a slot has its stamp"),
        }
    }

    /// The first word of each of the `lines` lines of `seq`'s slot past
    /// the stamp's (`lines` at most the prefetch lines `with_geometry`
    /// checked the slot holds), unchecked.
    #[inline(always)]
    fn slot_lines(&self, seq: u64, lines: usize) -> impl Iterator<Item = &AtomicU64> {
        const WORDS: usize = LINE / 8;
        debug_assert!(lines <= self.geo.prefetch_lines.max(self.geo.write_prefetch_lines));
        // SAFETY: in `seq`'s slot, as in `slot` (`WORDS * lines < slot_size
        // / 8`, checked in `with_geometry`).
        unsafe {
            self.region
                .words_unchecked(self.slot_offset(seq), 1 + WORDS * lines)
        }
        .iter()
        .step_by(WORDS)
        .skip(1)
    }

    /// `count` 64-bit control fields from `field` on, unchecked: for the
    /// fields before [`HOT_CONTROL`] only.
    #[inline(always)]
    pub(crate) fn hot64(&self, field: usize, count: usize) -> &[AtomicU64] {
        assert!(field % 8 == 0 && field + 8 * count <= HOT_CONTROL);
        // SAFETY: inside the control fields `with_geometry` checked (an
        // assert on constants folds away); the control offset is a
        // multiple of the page size.
        unsafe { self.region.words_unchecked(self.control(field), count) }
    }

    /// `count` 32-bit control fields from `field` on, unchecked: for the
    /// fields before [`HOT_CONTROL`] only.
    #[inline(always)]
    fn hot32(&self, field: usize, count: usize) -> &[AtomicU32] {
        assert!(field % 4 == 0 && field + 4 * count <= HOT_CONTROL);
        // SAFETY: inside the control fields `with_geometry` checked (the
        // assert, on constants, folds away); the control offset is a
        // multiple of the page size.
        unsafe { self.region.word32s_unchecked(self.control(field), count) }
    }

    #[inline]
    pub(crate) fn cursor(&self) -> &AtomicU64 {
        &self.hot64(control::CURSOR, 1)[0]
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
    /// Publisher only; `seq` is the cursor. Returns `GATE_GEN` as loaded
    /// after the cursor store and the sleepers' fence (`gate`).
    #[inline]
    pub(crate) fn write(&self, seq: u64, src: &[u8]) -> u32 {
        debug_assert!(src.len() <= self.geo.msg_size);
        let (stamp, payload) = self.slot(seq);
        stamp.store(writing(seq), Ordering::Relaxed);
        // Release fence, paired with the reader's Acquire fence in `read`: a
        // reader whose copy saw any word stored below will see at least
        // `writing(seq)` when it re-loads the stamp, and discard the copy.
        fence(Ordering::Release);
        copy::store(payload, src);
        // Release, paired with the Acquire first load of the stamp in `read`:
        // a reader that sees `done(seq)` sees the whole payload.
        stamp.store(done(seq), Ordering::Release);
        // Release, paired with the Acquire cursor loads in `head`: a reader
        // that sees the cursor past `seq` sees slot `seq` complete (or newer).
        self.cursor().store(seq.wrapping_add(1), Ordering::Release);
        let generation = self.wake_sleepers_gen();
        self.prefetch_next_for_write(seq.wrapping_add(1));
        generation
    }

    /// The lines of `seq`'s slot past the stamp's, prefetched for writing
    /// (a hint, see `sync::prefetch_write`), while nobody waits on the
    /// publisher. They last held a message a lap old, so no reader wants
    /// them now (a waiting one polls the stamp's line, which is left
    /// alone); without this the next write's stores queue behind fetching
    /// them exclusive from the last level cache or another core.
    #[inline(always)]
    fn prefetch_next_for_write(&self, seq: u64) {
        let lines = self.geo.write_prefetch_lines;
        if lines == 0 {
            return;
        }
        for word in self.slot_lines(seq, lines) {
            // SAFETY: `write_prefetch_lines` is 0 unless the CPU has
            // `prefetchw` (`Geometry::of`).
            unsafe { crate::sync::prefetch_write(word) };
        }
    }

    /// Publishes sequences `seq .. seq + n` as lost (single publisher):
    /// the last `min(n, capacity)` of them get the stamp `abandoned(s)`,
    /// which a reader at the first of them reports as one loss of them
    /// all (`skip_abandoned`); a reader further behind finds a stamp of a
    /// later lap and is lapped, exactly as by `n` real messages, its report
    /// running on over the marked slots (`lapped`). No
    /// payload is written: a reader mid-copy of an older message sees the
    /// stamp change and drops its copy. Returns `GATE_GEN` as `write` does.
    pub(crate) fn skip(&self, seq: u64, n: u64) -> u32 {
        let end = seq.wrapping_add(n);
        let mut s = end.wrapping_sub(n.min(self.geo.capacity));
        while s != end {
            // Release, paired with the Acquire first load of the stamp in
            // `read` (nothing else to publish, but the order is the same as
            // a write's: stamps before the cursor).
            self.stamp(s).store(abandoned(s), Ordering::Release);
            s = s.wrapping_add(1);
        }
        // Release, paired with the Acquire cursor loads in `head`: a reader
        // that sees the cursor past `s` sees `abandoned(s)` (or newer).
        self.cursor().store(end, Ordering::Release);
        self.wake_sleepers_gen()
    }

    /// Copies `src` into the payload of `seq`'s slot, zero-padded. Called by
    /// the publisher that moved the slot's stamp to `writing(seq)`, which
    /// on a many-publisher bus need not still hold it (`copy::store`).
    #[inline]
    pub(crate) fn store_payload(&self, seq: u64, src: &[u8]) {
        copy::store(self.payload(seq), src);
    }

    /// The publisher half of the sleep protocol in `wait`; then the load
    /// of `GATE_GEN` (same line as the futex word) that the gate's join
    /// rule pairs with the joiner's barrier: after the cursor store and
    /// the fence in `wait::ring`.
    #[inline]
    fn wake_sleepers_gen(&self) -> u32 {
        // One bounds check for both words (same line, side by side).
        const _: () = assert!(control::GATE_GEN == control::FUTEX + 4);
        let [bell, generation] = self.hot32(control::FUTEX, 2) else {
            unreachable!("two words asked, two given")
        };
        wait::ring(bell, self.light_barrier);
        // Relaxed: ordered after the cursor store by `ring`'s fence (the
        // Dekker of `gate`); a changed value makes the next write rescan,
        // which loads it again with Acquire.
        generation.load(Ordering::Relaxed)
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
        let (stamp, payload) = self.slot(seq);
        let want = done(seq);
        // Acquire, paired with the publisher's Release store of `done(seq)`.
        let before = stamp.load(Ordering::Acquire);
        if before != want {
            return self.classify(seq, before);
        }
        copy::load(payload, dst);
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

    /// The lines of `seq`'s slot past the stamp's, prefetched (a hint: no
    /// access, see `sync::prefetch`). Called while the stamp says the
    /// message is not there yet: the stamp's line is the one being polled,
    /// and without this the reader would fetch each further line only
    /// after the stamp said "done", one cross-core transfer after another
    /// (a 64-byte message, with its stamp, spans two lines).
    #[inline(always)]
    fn prefetch_payload(&self, seq: u64) {
        let lines = self.geo.prefetch_lines;
        if lines == 0 {
            return;
        }
        for word in self.slot_lines(seq, lines) {
            crate::sync::prefetch(word);
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

    /// Where a reader lapped by `newer` re-syncs, given the cursor `head`
    /// (loaded after the stamp that named `newer`, and confirmed by its
    /// slot, so a corrupt cursor cannot move the reader past what was
    /// published): half a ring behind the head, `head - ceil(capacity / 2)`
    /// (the "Lagging" rule of the bus module). Never before `by_slot`, the
    /// oldest sequence `newer` has not evicted.
    fn resync_after_lap(&self, newer: u64, head: u64) -> u64 {
        let by_slot = newer.wrapping_add(1).wrapping_sub(self.geo.capacity);
        let by_head = head.wrapping_sub(self.geo.capacity.div_ceil(2));
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
    /// time. (A many-publisher cursor counts claims: not checked.)
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

    /// One step of a reader at `cursor.pos`, which it moves; its line is
    /// left as it was (`recv` notes the step). A `Lagged` it returns is at
    /// least 1 and at most what the ring's cursor says was published past
    /// `cursor.pos`, whatever the stamps hold (see "Untrusted stamps" in
    /// the module docs).
    #[inline]
    pub(crate) fn poll(&self, cursor: &mut Cursor, dst: &mut [u8]) -> Poll {
        let pos = &mut cursor.pos;
        match self.read(*pos, dst) {
            Slot::Read => {
                *pos = pos.wrapping_add(1);
                Poll::Message
            }
            Slot::Empty if self.geo.multi => {
                self.prefetch_payload(*pos);
                self.unblock(cursor)
            }
            Slot::Empty => {
                self.prefetch_payload(*pos);
                Poll::Empty
            }
            Slot::Abandoned => self.skip_abandoned(pos, self.head()),
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
        // newer <= head, so by_slot <= head + 1 - capacity <= head, and
        // by_head < head: 1 <= skipped <= head - pos.
        let to = self.resync_after_lap(newer, head);
        // A skip longer than the ring lapped us: its marked slots at `to`
        // are part of the same loss, told in the same report.
        let to = self.abandoned_run_end(to, head);
        let skipped = to.wrapping_sub(*pos);
        *pos = to;
        Poll::Lapped(skipped)
    }

    /// `*pos`'s stamp says `abandoned(pos)`. On a single-publisher bus that
    /// is `Publisher::skip`: the whole run of marked sequences from `*pos`
    /// is skipped as one loss, so a gap of `n` is one `Lagged(n)` (a
    /// replayed recording tells its subscribers the lags the recorder was
    /// told). A many-publisher bus skips one abandoned claim at a time.
    #[cold]
    fn skip_abandoned(&self, pos: &mut u64, head: u64) -> Poll {
        if self.geo.multi || ahead(head, *pos) <= 0 || !self.slots_confirm(head) {
            return self.skip_one(pos, head);
        }
        let to = self.abandoned_run_end(pos.wrapping_add(1), head);
        let skipped = to.wrapping_sub(*pos);
        *pos = to;
        Poll::Lagged(skipped)
    }

    /// The first sequence at or after `from` whose stamp is not
    /// `abandoned(seq)`, looking no further than the cursor `head` and one
    /// ring (single-publisher buses; `from` itself on many-publisher
    /// ones). Bounded by `head`, so a run of forged stamps cannot make a
    /// report larger than what the cursor says was published.
    fn abandoned_run_end(&self, from: u64, head: u64) -> u64 {
        if self.geo.multi {
            return from;
        }
        let mut s = from;
        let mut looked = 0u64;
        while ahead(head, s) > 0 && looked < self.geo.capacity {
            // Relaxed: `head` was loaded with Acquire (`head`), paired with
            // the Release cursor store in `skip`, which follows its stamps:
            // every stamp of a skip below `head` is seen, or a newer one
            // (then the run ends here, and a later poll finds the lap).
            if self.stamp(s).load(Ordering::Relaxed) != abandoned(s) {
                break;
            }
            s = s.wrapping_add(1);
            looked += 1;
        }
        s
    }

    /// Skips `*pos`, whose stamp no publisher wrote in this state (a claim
    /// skipped on a many-publisher bus, or a corrupt stamp), if the cursor
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

    /// A single-publisher reader that keeps finding `cursor.pos` empty: if
    /// the ring's cursor word, loaded *before* the stamp, is past it, the
    /// stamp must say `done(pos)` or later (the publisher stores the
    /// stamp, Release, then the cursor, Release; this Acquire load of the
    /// cursor sees both). A stamp that still says otherwise is corrupt: the
    /// message is skipped, so a waiting reader always makes progress.
    /// `None`: nothing wrong.
    #[cold]
    fn check_stuck(&self, cursor: &mut Cursor, dst: &mut [u8]) -> Option<Poll> {
        let head = self.head();
        if self.geo.multi || ahead(head, cursor.pos) <= 0 || !self.slots_confirm(head) {
            // Many-publisher buses: a claim that stays unfinished is
            // skipped by `unblock` after its timeout.
            return None;
        }
        match self.poll(cursor, dst) {
            Poll::Empty => {
                cursor.pos = cursor.pos.wrapping_add(1);
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

    /// For a select: whether a subscriber at `pos` would find something
    /// (the negation of what `sleep` waits on). Acquire, paired with the
    /// publisher's Release cursor store, as `head`.
    pub(crate) fn has_news(&self, pos: u64) -> bool {
        ahead(self.cursor().load(Ordering::Acquire), pos) > 0
    }

    /// The futex word publishers ring (`wait`).
    pub(crate) fn doorbell(&self) -> &crate::sync::AtomicU32 {
        self.region.word32(self.control(control::FUTEX))
    }

    /// For a select: the longest sleep without a look. A many-publisher
    /// bus: a quarter of the unblock timeout, as in `sleep` (a claim whose
    /// publisher died rings no bell).
    pub(crate) fn select_nap(&self) -> Option<Duration> {
        self.geo.multi.then_some(self.unblock / 4)
    }

    /// One receive at `cursor.pos`: a single poll for `Wait::Never`, else
    /// [`Ring::poll_wait`] until the wait ends; then the step is noted on
    /// the cursor's line (and, for a gating reader, at the gate). What
    /// every bus subscriber handle's `recv` calls.
    #[inline]
    pub(crate) fn recv(&self, cursor: &mut Cursor, dst: &mut [u8], wait: Wait) -> Poll {
        self.recv_noting::<true>(cursor, dst, wait)
    }

    /// [`Ring::recv`], but a message is left for the caller to note
    /// ([`Ring::note_delivered`]) once it has done what must come first: a
    /// pool subscriber takes the message's block, so that the publisher of
    /// a lossless one, which may overwrite the descriptor once it sees the
    /// position, sees the hold too.
    #[inline]
    pub(crate) fn recv_unnoted(&self, cursor: &mut Cursor, dst: &mut [u8], wait: Wait) -> Poll {
        self.recv_noting::<false>(cursor, dst, wait)
    }

    /// Both of the above, one body: `NOTE` says whether a message is noted
    /// here (inlined whole into each, so `recv` costs what it did alone).
    #[inline(always)]
    fn recv_noting<const NOTE: bool>(
        &self,
        cursor: &mut Cursor,
        dst: &mut [u8],
        wait: Wait,
    ) -> Poll {
        let found = match wait {
            Wait::Never => self.poll(cursor, dst),
            _ => self.poll_wait(cursor, dst, wait.deadline()),
        };
        let activity = &mut cursor.activity;
        match found {
            Poll::Message => {
                if NOTE {
                    activity.delivered(self.region(), cursor.pos);
                    if let Some(joined) = activity.gating() {
                        self.ring_room(joined.light);
                    }
                }
            }
            Poll::Lagged(skipped) => {
                // Moved on by one, contiguously (a skipped claim or
                // stamp): still within a ring of the publisher, so its
                // limit holds and no rejoin is needed; ring `room` as for
                // a message, since the position moved.
                activity.lagged(self.region(), cursor.pos, skipped);
                if let Some(joined) = activity.gating() {
                    self.ring_room(joined.light);
                }
            }
            Poll::Lapped(skipped) => {
                activity.lagged(self.region(), cursor.pos, skipped);
                if activity.gating().is_some() {
                    self.rejoin(activity);
                }
            }
            Poll::Empty => activity.idle(self.region()),
        }
        found
    }

    /// Notes a message delivered at `cursor.pos`: the line's position
    /// (Release for a gating reader: the publisher may overwrite what it
    /// read once it sees it) and, for a gating reader, the `room` bell.
    #[inline]
    pub(crate) fn note_delivered(&self, cursor: &mut Cursor) {
        cursor.activity.delivered(self.region(), cursor.pos);
        if let Some(joined) = cursor.activity.gating() {
            self.ring_room(joined.light);
        }
    }

    /// Notes a message read at `cursor.pos` but lost to the reader (a pool
    /// block reclaimed before its take, or an untrusted descriptor): one
    /// skipped, and the position moved as for a delivery.
    pub(crate) fn note_lost(&self, cursor: &mut Cursor) {
        cursor.activity.lagged(self.region(), cursor.pos, 1);
        if let Some(joined) = cursor.activity.gating() {
            self.ring_room(joined.light);
        }
    }

    /// Polls at `cursor.pos` until something is there or the deadline
    /// passes, waiting between polls as `cursor.strategy` says.
    pub(crate) fn poll_wait(
        &self,
        cursor: &mut Cursor,
        dst: &mut [u8],
        deadline: Option<Instant>,
    ) -> Poll {
        let mut backoff = wait::Backoff::new(cursor.strategy, deadline);
        let mut empties = 0u32;
        loop {
            match self.poll(cursor, dst) {
                Poll::Empty => {}
                found => return found,
            }
            empties = empties.wrapping_add(1);
            // Every 64th empty poll (one extra cursor load, off the hot
            // path), so no strategy, spinning included, waits forever on a
            // slot whose stamp is corrupt.
            if empties % 64 == 0 {
                if let Some(found) = self.check_stuck(cursor, dst) {
                    return found;
                }
                cursor.activity.idle(self.region());
            }
            match backoff.next() {
                wait::Step::Spin => crate::sync::spin_loop(),
                wait::Step::Yield => crate::sync::yield_now(),
                wait::Step::Sleep(left) => {
                    cursor.activity.touch(self.region());
                    self.sleep(cursor.pos, left)
                }
                wait::Step::TimedOut => return Poll::Empty,
            }
        }
    }
}

/// A lossless subscriber's side of the gate (`gate` has the rules and
/// the publisher's side, which sits on this file).
impl<R: Region> Ring<R> {
    #[inline(always)]
    pub(crate) fn gate_gen(&self) -> &crate::sync::AtomicU32 {
        &self.hot32(control::GATE_GEN, 1)[0]
    }

    /// Whether `entry`'s bit is set.
    pub(crate) fn is_gating(&self, entry: usize) -> bool {
        self.region()
            .word(self.control_field(control::GATING + 8 * (entry / 64)))
            .load(Ordering::Acquire)
            & (1 << (entry % 64))
            != 0
    }

    /// A gating subscriber, after its Release position store: wakes a
    /// publisher asleep on `ROOM` (a fence and a load when none is).
    #[inline(always)]
    pub(crate) fn ring_room(&self, light: bool) {
        wait::ring(&self.hot32(control::ROOM, 1)[0], light);
    }

    /// Bumps `GATE_GEN` and orders it against the publisher's load of it
    /// after its cursor store (the Dekker of the module docs); then the
    /// cursor load the join rule speaks of.
    pub(crate) fn announce_gate_change(&self) -> u64 {
        self.gate_gen().fetch_add(1, Ordering::SeqCst);
        self.announce_committed_join()
    }

    /// The rest of `announce_gate_change` after a bump made otherwise (a
    /// joiner's commit CAS, `Ring::join`).
    pub(crate) fn announce_committed_join(&self) -> u64 {
        // The heavy side of the asymmetric pair (the publisher makes a
        // compiler fence where it could register); a failed membarrier
        // leaves only the SeqCst fence, as on a publisher that could not
        // register.
        let _ = wait::heavy_barrier();
        self.head()
    }

    /// A gating subscriber that was lapped (its position jumped, stored
    /// under the line's lock): evicted if its bit is clear, and lossy from
    /// then on; else it joins again at the new position (the join rule).
    #[cold]
    pub(crate) fn rejoin(&self, activity: &mut Activity) {
        let Some(joined) = activity.gating() else {
            return;
        };
        // Acquire fence, paired with the Release fence after the bit clear
        // in `Ring::evict`: the stamp that told of the lap (loaded before
        // this) was stored after that fence if the lap followed an
        // eviction, so the bit loaded below is clear.
        crate::sync::fence(Ordering::Acquire);
        if self.is_gating(joined.entry) {
            self.announce_gate_change();
            // A publisher may wait for this position to move: one after a
            // skip longer than the ring waits for its subscribers to step
            // over it, which they do as a lap (`gate::SkipRun`).
            self.ring_room(joined.light);
        } else {
            activity.set_evicted();
        }
    }
}

/// How many times `latest` finds the newest slot unreadable with the cursor
/// unmoved before it gives up (a live publisher finishes a write in far
/// fewer; a yield between tries lets it run on a busy CPU).
const LATEST_TRIES: u32 = 1000;

/// The outcome of one subscriber step, without the payload. Both lag
/// kinds are `Received::Lagged` outside; a gating subscriber rejoins
/// (`Ring::rejoin`: a SeqCst RMW and a membarrier) only after a lap.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Poll {
    Message,
    /// Skipped contiguously (by one: an abandoned claim, `Publisher::skip`'s
    /// stamps, a corrupt stamp).
    Lagged(u64),
    /// Lapped: the position jumped to the resync point.
    Lapped(u64),
    Empty,
}

impl Ring<Arc<HeapRegion>> {
    /// Another handle on the same heap ring.
    pub(crate) fn share(&self) -> Self {
        Ring::with_geometry(Arc::clone(&self.region), self.geo)
    }
}
