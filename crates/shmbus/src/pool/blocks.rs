//! The pool protocol over any region: loaning a block (free, or reclaimed
//! from a descriptor the ring overwrote), taking a published block into a
//! hold, releasing it, and the census `stat` shows. The pool module's
//! invariants are what this file implements; the Dekker pair between
//! [`Blocks::take`] and [`Blocks::reclaim`] is its heart.

use super::state::{self, State, decode, overwritten};
use crate::mem::Region;
use crate::sync::{AtomicU64, Ordering, fence};
use crate::wire::{LINE, PoolGeometry, control, hold_line::HOLDS};

/// Words of the active mask: one bit per registry entry.
const ACTIVE_WORDS: usize = control::REGISTRY_SLOTS / 64;

/// The offsets a pool lives at, from a validated header.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Blocks {
    pub(crate) geo: PoolGeometry,
    /// Region offset of the active mask (`control::POOL_ACTIVE`).
    active: usize,
    /// Region offset of hold line 0 (`control::POOL_HOLDS`).
    holds: usize,
    /// The ring's slots: a descriptor `capacity` sequences old is still on it.
    capacity: u64,
}

/// Where every block of a pool is, as one pass over the states and holds
/// saw it (nothing stops while it reads, so it may mix moments).
///
/// # Examples
/// ```
/// use shmbus::{Wait, pool};
///
/// let mut publisher = pool::Publisher::<[u8], _>::on_heap(2, 64, 4)?;
/// publisher.loan(1, Wait::Never)?.publish()?;
/// let census = publisher.census();
/// assert_eq!((census.on_ring, census.free), (1, 3));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Census {
    /// Free: no descriptor, loan or hold.
    pub free: u64,
    /// Loaned to a publisher, being written.
    pub loaned: u64,
    /// Named by a descriptor still on the ring.
    pub on_ring: u64,
    /// Overwritten on the ring and held by a subscriber.
    pub held: u64,
    /// Overwritten on the ring and held by nobody: free for the next loan.
    pub reclaimable: u64,
    /// A state word no writer of this layout stores.
    pub corrupt: u64,
}

impl Blocks {
    pub(crate) fn new(geo: PoolGeometry, control_offset: usize, capacity: u64) -> Blocks {
        Blocks {
            geo,
            active: control_offset + control::POOL_ACTIVE,
            holds: control_offset + control::POOL_HOLDS,
            capacity,
        }
    }

    /// A pool at explicit offsets, so a loom model's region stays a few
    /// hundred bytes (loom models every word).
    #[cfg(loom)]
    pub(crate) fn at(geo: PoolGeometry, active: usize, holds: usize, capacity: u64) -> Blocks {
        Blocks {
            geo,
            active,
            holds,
            capacity,
        }
    }

    #[inline]
    fn state<'r, R: Region>(&self, r: &'r R, b: u64) -> &'r AtomicU64 {
        r.word(self.geo.state(b))
    }

    /// Hold word `slot` of registry entry `entry`.
    #[inline]
    pub(crate) fn hold<'r, R: Region>(&self, r: &'r R, entry: usize, slot: usize) -> &'r AtomicU64 {
        debug_assert!(entry < control::REGISTRY_SLOTS && slot < HOLDS);
        r.word(self.holds + LINE * entry + 8 * slot)
    }

    /// All of `entry`'s hold words, one line: one bounds check for the
    /// searches that look at every slot.
    #[inline]
    fn hold_line<'r, R: Region>(&self, r: &'r R, entry: usize) -> &'r [AtomicU64] {
        debug_assert!(entry < control::REGISTRY_SLOTS);
        r.words(self.holds + LINE * entry, HOLDS)
    }

    fn active_word<'r, R: Region>(&self, r: &'r R, entry: usize) -> (&'r AtomicU64, u64) {
        (r.word(self.active + 8 * (entry / 64)), 1 << (entry % 64))
    }

    /// A subscriber that now owns `entry` (its registry lock, or on the
    /// heap its active bit) starts with no holds: it clears what a dead
    /// holder left, then marks the entry active. SeqCst `fetch_or`: the
    /// bit is set before any hold this subscriber stores, in the order the
    /// reclaimers' SeqCst fences see.
    pub(crate) fn enter<R: Region>(&self, r: &R, entry: usize) {
        self.clear_holds(r, entry);
        let (word, bit) = self.active_word(r, entry);
        word.fetch_or(bit, Ordering::SeqCst);
    }

    /// A subscriber leaving `entry` (or a dead one's holds being cleared):
    /// no block is held through it any more.
    pub(crate) fn leave<R: Region>(&self, r: &R, entry: usize) {
        self.clear_holds(r, entry);
        let (word, bit) = self.active_word(r, entry);
        word.fetch_and(!bit, Ordering::SeqCst);
    }

    /// Heap pools (no locks): claims a free entry by its active bit.
    pub(crate) fn claim_entry<R: Region>(&self, r: &R) -> Option<usize> {
        for w in 0..ACTIVE_WORDS {
            let word = r.word(self.active + 8 * w);
            let mut cur = word.load(Ordering::Relaxed);
            while cur != u64::MAX {
                let bit = (!cur).trailing_zeros() as usize;
                match word.compare_exchange(
                    cur,
                    cur | (1 << bit),
                    Ordering::SeqCst,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => {
                        let entry = 64 * w + bit;
                        self.clear_holds(r, entry);
                        return Some(entry);
                    }
                    Err(now) => cur = now,
                }
            }
        }
        None
    }

    fn clear_holds<R: Region>(&self, r: &R, entry: usize) {
        for slot in 0..HOLDS {
            // Release, paired with the Acquire loads in `held`: whatever the
            // holder read of its blocks happened before a reclaimer reuses them.
            self.hold(r, entry, slot).store(0, Ordering::Release);
        }
    }

    /// A free hold slot of `entry`, if any. Acquire, paired with the
    /// Release store of 0 in [`Blocks::release`] (perhaps by a sample
    /// dropped on another thread): that sample's reads happen before the
    /// next hold this slot records, which a reclaimer may see instead.
    pub(crate) fn free_slot<R: Region>(&self, r: &R, entry: usize) -> Option<usize> {
        self.hold_line(r, entry)
            .iter()
            .position(|h| h.load(Ordering::Acquire) == 0)
    }

    /// Subscriber: takes block `b`, named by the descriptor of `seq`, into
    /// hold `slot` of `entry`. True if the block still holds `seq`'s
    /// message, and will until released; false if a reclaimer got there
    /// first (the message is lost to this subscriber, exactly one).
    ///
    /// The Dekker pair with [`Blocks::reclaim`]: the hold is stored, then
    /// a SeqCst fence, then the state loaded; the reclaimer stores the
    /// state, then a SeqCst fence, then loads the holds. Whichever fence
    /// comes second in the SeqCst order sees the other side's store: the
    /// taker sees the state changed (and lets go), or the reclaimer sees
    /// the hold (and leaves the block alone).
    pub(crate) fn take<R: Region>(
        &self,
        r: &R,
        entry: usize,
        slot: usize,
        b: u64,
        seq: u64,
    ) -> bool {
        let hold = self.hold(r, entry, slot);
        // Release: a reclaimer whose Acquire load in `held` reads this value
        // also sees what this thread did before (the reads of a block an
        // earlier hold in this slot named, handed over by `free_slot`).
        hold.store(b + 1, Ordering::Release);
        fence(Ordering::SeqCst);
        // Acquire, paired with the Release state stores of the publishers.
        if self.state(r, b).load(Ordering::Acquire) == state::published(seq) {
            return true;
        }
        self.release(r, entry, slot);
        false
    }

    /// Subscriber: lets go of hold `slot` of `entry`. Release, paired with
    /// the Acquire loads in `held`: every read of the block happens before
    /// the write of whoever reclaims it.
    pub(crate) fn release<R: Region>(&self, r: &R, entry: usize, slot: usize) {
        self.hold(r, entry, slot).store(0, Ordering::Release);
    }

    /// Whether any active entry holds block `b`. Called after a SeqCst fence.
    fn held<R: Region>(&self, r: &R, b: u64) -> bool {
        let want = b + 1;
        r.words(self.active, ACTIVE_WORDS)
            .iter()
            .enumerate()
            .any(|(w, word)| {
                let mut mask = word.load(Ordering::Acquire);
                while mask != 0 {
                    let entry = 64 * w + mask.trailing_zeros() as usize;
                    mask &= mask - 1;
                    // Acquire, paired with the Release stores in `take` and
                    // `release`: see `release`.
                    let line = self.hold_line(r, entry);
                    if line.iter().any(|h| h.load(Ordering::Acquire) == want) {
                        return true;
                    }
                }
                false
            })
    }

    /// Publisher `pid`: a block for a new loan. It tries `first` before
    /// the others (its warm block, docs/LAYOUT.md §19.3: the one whose
    /// descriptor its publish a cushion of publishes back overwrote, so a
    /// steady stream cycles through a few blocks more than the ring, not
    /// the whole pool), then searches from `*hint` on. Either way it takes a free
    /// block, or one whose descriptor the ring has overwritten (the cursor
    /// is `head`), nobody holds, and no lossless subscriber still needs
    /// (`needed(s)` for the block published as `s`: on a many-publisher bus
    /// the cursor counts claims, which may run past a lossless subscriber's
    /// unread descriptor while they wait at the gate; on a single-publisher
    /// bus the gate keeps the cursor within a ring of it, and `needed` may
    /// say false). `first` is only a candidate, judged as every other
    /// block (it may be stale, or past the pool). `None` if every block is
    /// on the ring, loaned or held. One pass: each block is tried once.
    pub(crate) fn loan<R: Region>(
        &self,
        r: &R,
        pid: u32,
        head: u64,
        first: Option<u64>,
        hint: &mut u64,
        needed: &dyn Fn(u64) -> bool,
    ) -> Option<u64> {
        let n = self.geo.blocks;
        let first = first.filter(|&b| b < n);
        if first.is_some_and(|b| self.try_take(r, b, pid, head, needed)) {
            return first;
        }
        for i in 0..n {
            let b = (*hint + i) % n;
            if Some(b) != first && self.try_take(r, b, pid, head, needed) {
                *hint = (b + 1) % n;
                return Some(b);
            }
        }
        None
    }

    /// Loans block `b` to `pid` if it may be reused now ([`Blocks::loan`]).
    #[inline(always)]
    fn try_take<R: Region>(
        &self,
        r: &R,
        b: u64,
        pid: u32,
        head: u64,
        needed: &dyn Fn(u64) -> bool,
    ) -> bool {
        // Acquire, paired with the Release state stores: a block a
        // reclaimer gave back (`reclaim`'s restore) is seen whole.
        let word = self.state(r, b).load(Ordering::Acquire);
        match decode(word) {
            State::Free => self
                .state(r, b)
                .compare_exchange(
                    word,
                    state::loaned(pid),
                    Ordering::Acquire,
                    Ordering::Relaxed,
                )
                .is_ok(),
            State::Published
                if overwritten(word, head, self.capacity)
                    && !needed(head.wrapping_sub(state::age(word, head))) =>
            {
                self.reclaim(r, b, word, pid)
            }
            State::Corrupt => self.reclaim(r, b, word, pid),
            _ => false,
        }
    }

    /// Takes block `b`, whose state was `word` (overwritten on the ring, or
    /// corrupt), for publisher `pid` unless a subscriber holds it. The
    /// reclaimer's half of the Dekker pair described at [`Blocks::take`].
    fn reclaim<R: Region>(&self, r: &R, b: u64, word: u64, pid: u32) -> bool {
        let st = self.state(r, b);
        if st
            .compare_exchange(
                word,
                state::loaned(pid),
                Ordering::Acquire,
                Ordering::Relaxed,
            )
            .is_err()
        {
            return false; // another publisher's
        }
        fence(Ordering::SeqCst);
        if self.held(r, b) {
            // Back as it was, for a later try: only this publisher writes a
            // state it loaned. Release, paired with the Acquire in `loan`.
            st.store(word, Ordering::Release);
            return false;
        }
        true
    }

    /// Publisher: block `b`, loaned to it, now holds the message `seq`.
    /// Release, paired with the Acquire loads in `take` and `loan`; the
    /// descriptor's stamp, stored after it with Release, is what publishes
    /// the block's bytes to readers.
    pub(crate) fn publish<R: Region>(&self, r: &R, b: u64, seq: u64) {
        self.state(r, b)
            .store(state::published(seq), Ordering::Release);
    }

    /// Publisher: block `b`, published as `seq` but whose commit failed
    /// (the claim was skipped, so no reader took it), is free again, unless
    /// another publisher reclaimed it meanwhile. CAS, Release on success,
    /// paired with the Acquire in `loan`.
    pub(crate) fn unpublish<R: Region>(&self, r: &R, b: u64, seq: u64) {
        let _ = self.state(r, b).compare_exchange(
            state::published(seq),
            state::FREE,
            Ordering::Release,
            Ordering::Relaxed,
        );
    }

    /// Publisher: block `b`, loaned and never published, is free again.
    /// Release, paired with the Acquire in `loan`.
    pub(crate) fn free<R: Region>(&self, r: &R, b: u64) {
        self.state(r, b).store(state::FREE, Ordering::Release);
    }

    /// Every block loaned to a publisher that `dead` says is gone is freed.
    /// A single-publisher bus's new publisher calls it with "everyone" (it
    /// holds the publisher lock, so no loan is live); others with a pid
    /// check. Returns how many it freed.
    pub(crate) fn free_loans<R: Region>(&self, r: &R, dead: impl Fn(u32) -> bool) -> u64 {
        let mut freed = 0;
        for b in 0..self.geo.blocks {
            let st = self.state(r, b);
            let word = st.load(Ordering::Acquire);
            if let State::Loaned(pid) = decode(word) {
                if dead(pid)
                    && st
                        .compare_exchange(word, state::FREE, Ordering::AcqRel, Ordering::Relaxed)
                        .is_ok()
                {
                    freed += 1;
                }
            }
        }
        freed
    }

    /// The active entries (a bit each), for a sweep of dead holders.
    pub(crate) fn active_entries<R: Region>(&self, r: &R) -> Vec<usize> {
        let mut out = Vec::new();
        for w in 0..ACTIVE_WORDS {
            let mut mask = r.word(self.active + 8 * w).load(Ordering::Acquire);
            while mask != 0 {
                out.push(64 * w + mask.trailing_zeros() as usize);
                mask &= mask - 1;
            }
        }
        out
    }

    /// How many blocks `entry` holds now.
    pub(crate) fn held_by<R: Region>(&self, r: &R, entry: usize) -> usize {
        (0..HOLDS)
            .filter(|&s| self.hold(r, entry, s).load(Ordering::Relaxed) != 0)
            .count()
    }

    /// Where each block is, with the cursor at `head`: a snapshot that may
    /// mix moments (nothing stops while it reads).
    pub(crate) fn census<R: Region>(&self, r: &R, head: u64) -> Census {
        self.census_of(r, head, |_| true)
    }

    /// [`census`](Blocks::census), counting only the holds of entries for
    /// which `live` says their subscriber is alive: a dead subscriber's
    /// holds are swept by the next publisher in need of a block (§19.6), so
    /// the blocks only it holds off the ring are reclaimable, not held.
    pub(crate) fn census_of<R: Region>(
        &self,
        r: &R,
        head: u64,
        mut live: impl FnMut(usize) -> bool,
    ) -> Census {
        let mut held = vec![false; self.geo.blocks as usize];
        for entry in self.active_entries(r) {
            if !live(entry) {
                continue;
            }
            for s in 0..HOLDS {
                let h = self.hold(r, entry, s).load(Ordering::Relaxed);
                if let Some(slot) = h.checked_sub(1).and_then(|b| held.get_mut(b as usize)) {
                    *slot = true;
                }
            }
        }
        let mut c = Census::default();
        for b in 0..self.geo.blocks {
            let word = self.state(r, b).load(Ordering::Relaxed);
            match decode(word) {
                State::Free => c.free += 1,
                State::Loaned(_) => c.loaned += 1,
                State::Published if !overwritten(word, head, self.capacity) => c.on_ring += 1,
                State::Published if held[b as usize] => c.held += 1,
                State::Published => c.reclaimable += 1,
                State::Corrupt => c.corrupt += 1,
            }
        }
        c
    }
}
