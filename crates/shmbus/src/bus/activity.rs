//! A registered subscriber's line: where it is, what it got and missed,
//! and when it was last active, published for `stat` and `shmbus top`.
//!
//! Invariants (docs/LAYOUT.md §5.1):
//! - Line i (`control::SUBSCRIBERS + 64 i` in the control area) is written
//!   only by the subscriber that holds lock byte `REGISTRY + i`, and only
//!   after it took that lock; nobody else writes it, but for the
//!   publisher's `EVICTIONS` and `BLOCKED_NS` counts (`gate`). The
//!   publisher reads `POSITION` only of a lossless subscriber (its bit set
//!   in `control::GATING`), and nothing there holds it back past the
//!   eviction timeout: a lossy subscriber's line cannot slow or steer it.
//! - `POSITION` is stored (Relaxed; Release for a lossless subscriber,
//!   which the publisher waits for) after every receive that moved the
//!   subscriber: one plain store to a line only this subscriber writes, no
//!   read-modify-write and no fence, which is the whole cost on the hot
//!   path. Between lag reports it grows by one per message delivered.
//! - `SKIPPED` and `START` change only together with a jump of `POSITION`
//!   (a lag report; registering), under the sequence lock `SEQ` (odd while
//!   they change): a reader that sees `SEQ` even and unchanged around its
//!   loads has a `SKIPPED` that matches `POSITION`, so `POSITION - START -
//!   SKIPPED` is the exact count of messages delivered. The lock is taken
//!   off the hot path only.
//! - `ACTIVE_NS` (`CLOCK_MONOTONIC_COARSE`, ns) is stored at registering,
//!   on a lag, before sleeping on the futex, and every [`EVERY`]th
//!   delivery or empty poll: a clock read amortised to nothing, so it is
//!   as fresh as the last of those.
//! - A reader trusts none of it: `stat` checks, against the cursor loaded
//!   after the line, `POSITION <= head + 1`, `START <= POSITION` and
//!   `SKIPPED <= POSITION - START` (wrapping distances; LAYOUT §5.1) and
//!   reports a line that fails as corrupt.
//!
//! Both sides of the sequence lock are here: [`Activity`] writes the line
//! (`Activity::update` takes the lock), [`read_fields`] reads it for
//! `stat`.

use crate::mem::Region;
use crate::sync::Ordering;
use crate::sys::clock::monotonic_ns;
use crate::wire::{LINE, subscriber_line as line};

/// How many deliveries (or empty polls) pass between two `ACTIVE_NS`
/// stores: a power of two.
pub(crate) const EVERY: u32 = 1024;

/// A joined lossless subscriber's entry, as its handle keeps it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Joined {
    pub(crate) entry: usize,
    /// This process registered for the asymmetric barrier: ringing
    /// `ROOM` needs only a compiler fence.
    pub(crate) light: bool,
}

/// This subscriber's line, if it has one (a registered subscriber of a bus
/// in /dev/shm); `None` keeps every method a no-op.
#[derive(Debug, Default)]
pub(crate) struct Activity {
    /// Byte offset of the line in the region.
    line: Option<usize>,
    /// Counts deliveries and empty polls towards the next `ACTIVE_NS`.
    count: u32,
    /// What `SKIPPED` holds: kept here, so the line is only ever written,
    /// never read back (another process may have scribbled on it).
    skipped: u64,
    /// A lossless subscriber's entry in the gating set (`gate`): its
    /// position store is then a Release, which the publisher's Acquire
    /// load pairs with before it overwrites what was read.
    joined: Option<Joined>,
    /// Found evicted (its bit clear after a lag): lossy from then on.
    evicted: bool,
}

impl Activity {
    /// No line: the subscriber is not registered (heap buses; a full
    /// registry; a subscriber that asked not to be).
    pub(crate) fn none() -> Activity {
        Activity::default()
    }

    /// Takes the line at `offset`, which this process's lock on its
    /// registry byte makes its own, and resets it for a subscriber at
    /// `pos` with the contract `contract` (the line may hold a gone
    /// subscriber's numbers, its contract and evictions included).
    pub(crate) fn claim(region: &impl Region, offset: usize, pos: u64, contract: u32) -> Activity {
        debug_assert_eq!(offset % LINE, 0);
        // Relaxed: `stat` reads these for a held lock only, after the
        // registry entry, which is stored after this; the publisher adds to
        // the counts only for a set gating bit, set after this (SeqCst).
        region
            .word32(offset + line::CONTRACT)
            .store(contract, Ordering::Relaxed);
        region
            .word32(offset + line::EVICTIONS)
            .store(0, Ordering::Relaxed);
        region
            .word(offset + line::BLOCKED_NS)
            .store(0, Ordering::Relaxed);
        let mut me = Activity {
            line: Some(offset),
            count: 0,
            skipped: 0,
            joined: None,
            evicted: false,
        };
        me.reset(region, pos);
        me
    }

    /// Starts the line over for a subscriber at `pos`.
    pub(crate) fn reset(&mut self, region: &impl Region, pos: u64) {
        self.skipped = 0;
        self.update(region, |w| {
            w(line::START, pos);
            w(line::SKIPPED, 0);
            w(line::POSITION, pos);
        });
        self.touch(region);
    }

    /// After a receive that delivered a message: the subscriber is at `pos`.
    #[inline(always)]
    pub(crate) fn delivered(&mut self, region: &impl Region, pos: u64) {
        if let Some(at) = self.line {
            let word = region.word(at + line::POSITION);
            if self.joined.is_some() {
                // Release, paired with the publisher's Acquire load of the
                // position in `gate`: our copy of the slot is done before
                // the publisher may overwrite it.
                word.store(pos, Ordering::Release);
            } else {
                word.store(pos, Ordering::Relaxed);
            }
            self.tick(region);
        }
    }

    /// The gating entry this subscriber joined as, unless it was found
    /// evicted.
    #[inline(always)]
    pub(crate) fn gating(&self) -> Option<Joined> {
        if self.evicted { None } else { self.joined }
    }

    /// The gating entry it joined as, evicted or not (to give it back).
    pub(crate) fn joined(&self) -> Option<Joined> {
        self.joined
    }

    /// Joined the gating set as `joined`.
    pub(crate) fn set_joined(&mut self, joined: Joined) {
        self.joined = Some(joined);
        self.evicted = false;
    }

    /// Found its bit cleared: the publisher evicted it.
    pub(crate) fn set_evicted(&mut self) {
        self.evicted = true;
    }

    /// After a lag report of `skipped`: the subscriber is at `pos`.
    #[cold]
    pub(crate) fn lagged(&mut self, region: &impl Region, pos: u64, skipped: u64) {
        if self.line.is_none() {
            return;
        }
        self.skipped = self.skipped.wrapping_add(skipped);
        let total = self.skipped;
        self.update(region, |w| {
            w(line::SKIPPED, total);
            w(line::POSITION, pos);
        });
        self.touch(region);
    }

    /// After an empty poll: every [`EVERY`]th one notes the time.
    #[inline(always)]
    pub(crate) fn idle(&mut self, region: &impl Region) {
        if self.line.is_some() {
            self.tick(region);
        }
    }

    /// Notes the time now (before a sleep, which costs far more).
    pub(crate) fn touch(&self, region: &impl Region) {
        if let Some(at) = self.line {
            region
                .word(at + line::ACTIVE_NS)
                .store(monotonic_ns(), Ordering::Relaxed);
        }
    }

    #[inline(always)]
    fn tick(&mut self, region: &impl Region) {
        self.count = self.count.wrapping_add(1);
        if self.count % EVERY == 0 {
            self.touch(region);
        }
    }

    /// Writes fields under the sequence lock. The odd store, then a Release
    /// fence, orders it before the fields; the even store (Release) orders
    /// the fields before it. Partners: the Acquire loads of `SEQ` and the
    /// Acquire fence in [`read_fields`], the lock's reader.
    fn update<R: Region>(&self, region: &R, fields: impl FnOnce(&dyn Fn(usize, u64))) {
        let Some(at) = self.line else { return };
        let seq = region.word32(at + line::SEQ);
        let s = seq.load(Ordering::Relaxed);
        let odd = s | 1;
        seq.store(odd, Ordering::Relaxed);
        crate::sync::fence(Ordering::Release);
        fields(&|field, v| region.word(at + field).store(v, Ordering::Relaxed));
        seq.store(odd.wrapping_add(1), Ordering::Release);
    }
}

/// A line's `START`, `SKIPPED` and `POSITION` as one moment, as
/// [`read_fields`] reads them under the sequence lock. Untrusted: the
/// reader checks them (LAYOUT §5.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fields {
    pub(crate) start: u64,
    pub(crate) skipped: u64,
    pub(crate) position: u64,
}

/// How long a reader waits for a line's writer to leave its sequence
/// lock before it calls the line unreadable (`read_fields`).
const ODD_FOR: std::time::Duration = std::time::Duration::from_millis(10);

/// Reads the line at byte offset `at` under its sequence lock (the reader
/// of `Activity::update`), from another process. `None` if the lock never
/// settles: a line that keeps changing under the reader. Loads made after
/// this returns stay after the line's (its Acquire fence).
pub(crate) fn read_fields(region: &impl Region, at: usize) -> Option<Fields> {
    // A bounded seqlock read: a live writer holds the lock for a few
    // stores, so 1000 tries fail only on a line that is written without
    // end, or whose writer lost its CPU inside the lock (a loaded machine,
    // a stopped process): past 64 odd looks in a row the reader yields to
    // it, and gives up after ODD_FOR at most.
    let mut odd = 0u32;
    let mut since: Option<std::time::Instant> = None;
    for _ in 0..1000 {
        // Acquire, paired with the Release store of the even value in
        // `Activity::update`.
        let s1 = region.word32(at + line::SEQ).load(Ordering::Acquire);
        if s1 % 2 == 1 {
            odd += 1;
            if odd < 64 {
                std::hint::spin_loop();
            } else if since.get_or_insert_with(std::time::Instant::now).elapsed() < ODD_FOR {
                std::thread::yield_now();
            } else {
                return None;
            }
            continue;
        }
        odd = 0;
        let start = region.word(at + line::START).load(Ordering::Relaxed);
        let skipped = region.word(at + line::SKIPPED).load(Ordering::Relaxed);
        let position = region.word(at + line::POSITION).load(Ordering::Relaxed);
        // Acquire fence, paired with the Release fence after the odd store
        // in `Activity::update`: if a load above saw a store made under the
        // lock, the second load of SEQ sees the odd value or later.
        crate::sync::fence(Ordering::Acquire);
        if region.word32(at + line::SEQ).load(Ordering::Relaxed) != s1 {
            continue;
        }
        return Some(Fields {
            start,
            skipped,
            position,
        });
    }
    None
}
