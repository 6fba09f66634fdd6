//! The gate: lossless subscribers beside lossy ones on a single-publisher
//! or many-publisher bus. A lossless subscriber's registry entry has its bit set
//! in `control::GATING`; the publisher never writes a sequence `m` while
//! a gating subscriber at position `p` has `m - p == capacity` (that write
//! would overwrite `p`, unread). Lossy subscribers are lapped as before.
//!
//! # Invariants (docs/LAYOUT.md §13.1)
//! - The publisher keeps `limit`: it may write any `m` before `limit`
//!   (wrapping) without looking. `limit` is the least `p + capacity` over
//!   the gating set it last scanned, and only grows between scans, since
//!   positions only grow; so a cached limit is never too large, except
//!   for a subscriber that joined (or rejoined after a lag) since the
//!   scan. Those bump `GATE_GEN`, and the publisher, which loads
//!   `GATE_GEN` after every message (on the futex word's line, after the
//!   fence it makes for sleepers anyway), rescans before its next write.
//!   So the publisher loads no position while it writes below `limit`
//!   (the cached minimum of Disruptor's producers); at the limit a scan
//!   that finds room (`Gate::rescan`, out of line) costs the bits' line
//!   and one position load per gating subscriber, nothing else.
//! - Join (Dekker with that load): store the position `S`, load
//!   `GATE_GEN` as `g` and count the other bits (SeqCst: refused when
//!   they fill the limit), set the bit (SeqCst), and commit with a CAS of
//!   `GATE_GEN` from `g` to `g + 1` (SeqCst; that is the bump), then
//!   `wait::heavy_barrier`, load the cursor `c`. A failed commit (another
//!   joined, left or rejoined since `g`) clears the bit and counts again.
//!   So a place is taken by the CAS: a joiner that loads `g` after
//!   another's commit counts its bit, and of those that loaded the same
//!   `g` one commits; joiners racing for the last places get exactly as
//!   many as there are. If the publisher's load after storing cursor `k` missed
//!   the bump, the joiner's cursor load sees `k` or later: at most the
//!   write of `c` is made without the joiner in its limit, and it
//!   overwrites `c - capacity`. So a joiner with `S > c - capacity`
//!   loses nothing from `S` on (the join point); one further behind is
//!   lapped and told exactly (`Lagged`), as a lossy one, and rejoins.
//! - A position `p` with `m - p > capacity` (wrapping) is one the
//!   publisher already passed: the subscriber was lapped before its join
//!   took effect (or its line is garbage). It does not gate until it
//!   rejoins. So no value in shared memory can hold the publisher back
//!   past the eviction timeout (a many-publisher claim: one per claim in
//!   flight ahead of it, below).
//! - A skip of `n` from `next` (`Publisher::skip`) marks the slots of
//!   `next .. next + min(n, capacity)`, overwriting what they hold: each
//!   passes the gate in turn, as that many writes would (room for the
//!   last alone judged a subscriber with messages unread before `next`
//!   passed, and lapped it). One longer than the ring leaves a subscriber
//!   that had read everything more than a ring behind, unlapped: until it
//!   steps over the run (one report, as a lap that lands on the run's
//!   end), a position in `next .. next + n - capacity` is judged as at
//!   `next + n - capacity` (`SkipRun`), so the write of the run's end
//!   waits for it. For the join rule a skip is one write of all its
//!   marks: a joiner racing one is safe from `S > c + min(n, capacity) -
//!   1 - capacity` on.
//! - Blocked on entry `i`, the publisher waits (spin, yield, then sleep
//!   on `ROOM`, which gating subscribers ring after each position store),
//!   checks `i`'s registry lock (a system call) once the block has lasted
//!   [`LIVENESS_EVERY`], then every [`LIVENESS_EVERY`], and before it
//!   says `Full` (free: dead, its bit is cleared at once); a block that
//!   clears sooner, as a live subscriber's does, makes no system call.
//!   After `EVICT_NS` of one block (`i` in the way at one position: a
//!   position past the furthest it saw restarts the clock) it evicts `i`:
//!   counts it on `i`'s line, clears its bit (SeqCst), makes a Release
//!   fence, and goes on.
//! - A gating subscriber that is lapped makes an Acquire fence (paired
//!   with that one: the stamp that lapped it was stored after it) and
//!   looks at its bit: set, it rejoins at its new position; clear, it was
//!   evicted and stays lossy. One that
//!   skips a message by one (an abandoned or corrupt stamp) moved on
//!   contiguously, within a ring of the publisher: no rejoin (`Poll::Lagged`
//!   against `Poll::Lapped`).
//! - A deadline (`publish_within`) ends the wait with `Full` naming the
//!   entry; the wait itself follows the publisher's `WaitStrategy`.
//!
//! # Many publishers (`claim`; LAYOUT §13.1)
//! A claim never passes the gate: each publisher keeps its own limit, and
//! after its `fetch_add` claim of `m` (then a fence, the claim's half of
//! the join Dekker) it loads `GATE_GEN`, rescans on a change, and waits
//! before it takes slot `m` until no gating subscriber still needs
//! `m - capacity`. The argument:
//! - Other claims between `p + capacity` and `m` may wait at the gate
//!   too, so a subscriber at `p` with `m - p >= capacity` is in the way
//!   unless slot `p` already names a later lap, believed only if the
//!   position is still `p` after that stamp load (else the subscriber read
//!   on and its slot was rightly taken: judged again at its new place).
//!   So a claimer that takes slot `m` saw every gating position past
//!   `m - capacity`; positions only grow; no unread message is overwritten.
//! - The join rule holds per claim: the claim is the RMW the joiner's
//!   cursor load sees, or the `GATE_GEN` load after it sees the bump.
//! - Abandoned stamps destroy the previous lap's message, so the unblock
//!   rule asks the gate too: a reader skips claim `s` only when no gating
//!   subscriber needs `s - capacity`, and restarts the claim's unblock
//!   clock while one does (a live claimer held at the gate is not skipped
//!   for it). A next-lap claimer passed the gate for `s + capacity`, so
//!   its skip of `s` needs no look. A gating subscriber blocked behind a
//!   dead claim skips it by the same rule (it is never in its own way) and
//!   moves on by one, which frees the gate behind it.
//! - A publisher killed while it waits at the gate has claimed `m` and
//!   not taken its slot: `m` is a dead claim like any other, skipped by
//!   the unblock rule once the gate lets `m` through.
//! - A gating subscriber whose position's slot does not hold that
//!   message yet (`held_by_claim`) waits on a claim, dead or slow, not on
//!   itself: a publisher evicts it only after the eviction timeout and
//!   the unblock timeout together (readers skip a dead claim after the
//!   latter), so a dead claim does not evict every lossless subscriber.
//! - No subscriber holds a reader at a dead claim past the eviction
//!   timeout at one position: the reader evicts it, as a publisher would
//!   (a dead one, seen by its lock, at once).
//! - A claim further than a ring ahead waits for several reads: the
//!   eviction clock restarts each time the entry's position passes the
//!   furthest one seen, so a subscriber that keeps reading, however
//!   slowly, is evicted only if one read takes `EVICT_NS`. Only forward:
//!   each restart needs a new blocking position, and a position `p`
//!   blocks only while claim `p + capacity` has not taken its slot, so
//!   a line that moves back and forth (hostile) restarts the clock at
//!   most once per claim in flight.
//! - Heap rings have no registry: entries `0..HEAP_ENTRIES` have lines in
//!   the page after the control page, and an entry is taken by a CAS of
//!   its line's `CONTRACT` from 0 to `LOSSLESS` (given back by storing 0).

use std::time::{Duration, Instant};

use super::activity::Joined;
use super::ring::Ring;
use super::stamp::{Stamp, ahead};
use crate::error::LosslessRefused;
use crate::mem::Region;
use crate::sync::Ordering;
use crate::wait::{self, WaitStrategy};
use crate::wire::{LINE, contract, control, lock_byte, subscriber_line as line};

/// How often a blocked publisher checks that the subscriber holding it
/// back still lives (a lock probe, one system call).
pub(crate) const LIVENESS_EVERY: Duration = Duration::from_millis(2);

/// How many times a joiner counts again after `GATE_GEN` moved between
/// its count and its commit (each move is another subscriber joining,
/// leaving or rejoining within that window of a few instructions).
const JOIN_TRIES: u32 = 64;

/// Writes a new bus's gate fields (creator only, before the magic):
/// how many lossless subscribers may gate it, and the eviction timeout.
pub(crate) fn init_control(region: &impl Region, control_offset: usize, max: u32, evict: Duration) {
    let ns = u64::try_from(evict.as_nanos()).unwrap_or(u64::MAX);
    region
        .word(control_offset + control::EVICT_NS)
        .store(ns, Ordering::Relaxed);
    region
        .word32(control_offset + control::MAX_GATING)
        .store(max, Ordering::Relaxed);
}

/// The publisher's side of the gate.
#[derive(Debug)]
pub(crate) struct Gate {
    /// Sequences before this (wrapping) may be written without looking.
    limit: u64,
    /// The `GATE_GEN` the last scan saw.
    gen_seen: u32,
    evict: Duration,
    /// How a blocked publish waits (`Publisher::set_wait_strategy`).
    strategy: WaitStrategy,
    /// The entry it last found in the way, the furthest position it
    /// found it at, and since when (over calls: `try_publish` evicts one
    /// that was in the way for the timeout). A position past that
    /// restarts the clock.
    blocked: Option<(usize, u64, Instant)>,
    /// The last skip longer than the ring (`Publisher::skip`).
    skip_run: Option<SkipRun>,
}

/// A skip longer than the ring, from `from` to `to + capacity`: its marks
/// fill the ring. A gating subscriber still in `from..to` (wrapping) has
/// read nothing since, yet that is no lap: it steps over the whole run in
/// one report when it reads, so it is judged as at `to` (the write of the
/// run's end waits for it), not as passed.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SkipRun {
    from: u64,
    to: u64,
}

impl SkipRun {
    /// Where position `p` is judged to be.
    fn judged(run: Option<SkipRun>, p: u64) -> u64 {
        match run {
            Some(r) if ahead(p, r.from) >= 0 && ahead(r.to, p) > 0 => r.to,
            _ => p,
        }
    }
}

#[cfg(test)]
thread_local! {
    /// Liveness probes (`Ring::entry_alive`) made by this thread: a
    /// system call each on a bus in /dev/shm.
    pub(crate) static PROBES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// The far limit of an empty gating set: far enough that the check
/// almost never fails, near enough for wrapping comparisons.
const FAR: u64 = 1 << 62;

/// An eviction clock (a publisher's, or a reader's at a held claim):
/// since when `entry` has been in the way. Many publishers: a claim
/// further than a ring ahead waits for several reads; a subscriber that
/// makes each of them in time is not stalled, so the clock restarts when
/// it moves past the furthest position it was found at (only forward: a
/// line that moves back and forth restarts nothing).
pub(crate) fn blocked_since(
    clock: &mut Option<(usize, u64, Instant)>,
    entry: usize,
    position: u64,
    now: Instant,
) -> Instant {
    match *clock {
        Some((e, p, since)) if e == entry && ahead(position, p) <= 0 => since,
        _ => {
            *clock = Some((entry, position, now));
            now
        }
    }
}

/// What a scan found in the way of writing `m`.
#[derive(Clone, Copy, Debug)]
struct Blocker {
    entry: usize,
    /// Its position then: the eviction clock runs while it stays there.
    position: u64,
}

/// Why [`Gate::room_until`] found no room by its deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Full {
    pub(crate) entry: usize,
    pub(crate) pid: Option<u32>,
}

/// What a gating subscriber's position means for a write (`Ring::verdict`).
enum Verdict {
    /// Within a ring: writes before this need not look again.
    Bounds(u64),
    /// In the way, at this position.
    Blocks(u64),
    /// Already passed: not gating until it rejoins.
    Passed,
}

/// How one wait on a blocker ended.
enum Waited {
    /// Out of the way (read on, died, left): scan again.
    Cleared,
    /// Held the publisher for the eviction timeout: evicted.
    Evicted,
    /// The caller's deadline passed first.
    Deadline,
    /// The eviction timeout passed, but the subscriber now waits on a
    /// claim not committed yet (it was not when the wait began): judge
    /// again with the unblock timeout on top.
    Held,
}

impl Gate {
    /// A gate that scans before the first write of `next`.
    pub(crate) fn new<R: Region>(ring: &Ring<R>, next: u64) -> Gate {
        let ns = ring
            .region()
            .word(ring.control_field(control::EVICT_NS))
            .load(Ordering::Relaxed);
        Gate {
            limit: next,
            gen_seen: ring.gate_gen().load(Ordering::Relaxed),
            // Untrusted: capped, so no value there blocks a publish longer.
            evict: Duration::from_nanos(ns).min(super::options::MAX_EVICT),
            strategy: WaitStrategy::default(),
            blocked: None,
            skip_run: None,
        }
    }

    /// The eviction timeout this publisher keeps (capped at `MAX_EVICT`).
    #[cfg(test)]
    pub(crate) fn evict(&self) -> Duration {
        self.evict
    }

    /// How a blocked publish waits from now on.
    pub(crate) fn set_strategy(&mut self, strategy: WaitStrategy) {
        self.strategy = strategy;
    }

    /// Sets the eviction timeout this publisher keeps (loom models: zero
    /// evicts at the first block, the one eviction a model without a
    /// clock can take).
    #[cfg(loom)]
    pub(crate) fn set_evict(&mut self, evict: Duration) {
        self.evict = evict;
    }

    /// Whether `m` may be written without a scan: one compare.
    #[inline(always)]
    pub(crate) fn open_for(&self, m: u64) -> bool {
        ahead(self.limit, m) > 0
    }

    /// After a write whose trailing load found `GATE_GEN == generation`: a
    /// change makes the next write scan first.
    #[inline(always)]
    pub(crate) fn after_write(&mut self, m: u64, generation: u32) {
        if generation != self.gen_seen {
            self.limit = m.wrapping_add(1);
        }
    }

    /// Makes room for a skip of `n` sequences from `next` (single
    /// publisher): its marks go into the slots of `next .. next + min(n,
    /// capacity)` and overwrite what they hold, as that many writes
    /// would, so each of those passes the gate in turn. Room for the last
    /// alone is not room for all: the gate judges a position more than a
    /// ring behind `m` passed, which it is only once `m - 1` was written.
    pub(crate) fn room_for_skip<R: Region>(&mut self, ring: &Ring<R>, next: u64, n: u64) {
        for i in 0..n.min(ring.capacity()) {
            let m = next.wrapping_add(i);
            if !self.open_for(m) {
                self.room(ring, m);
            }
        }
    }

    /// After a skip of `n` from `next` whose trailing load found
    /// `GATE_GEN == generation` (`after_write`); one longer than the ring is
    /// remembered (`SkipRun`).
    pub(crate) fn after_skip(&mut self, next: u64, n: u64, capacity: u64, generation: u32) {
        let end = next.wrapping_add(n);
        if n > capacity {
            self.skip_run = Some(SkipRun {
                from: next,
                to: end.wrapping_sub(capacity),
            });
        }
        self.after_write(end.wrapping_sub(1), generation);
    }

    /// Many publishers: after claiming `m`, with `GATE_GEN == generation` loaded
    /// after the claim (`Ring::claim_gated`): a change makes this write
    /// scan first.
    #[inline(always)]
    pub(crate) fn after_claim(&mut self, m: u64, generation: u32) {
        if generation != self.gen_seen {
            self.limit = m;
        }
    }

    /// Scans the gating set for writing `m`: the new limit, or who is in
    /// the way.
    fn scan<R: Region>(&mut self, ring: &Ring<R>, m: u64) -> Option<Blocker> {
        // Acquire, paired with the joiners' SeqCst `fetch_add`: their bits
        // and positions, stored before it, are seen below.
        self.gen_seen = ring.gate_gen().load(Ordering::Acquire);
        let mut limit = m.wrapping_add(FAR);
        let mut blocker = None;
        // A plain loop over the words this ring has entries for, not
        // `gating_entries`' adapters: at the limit (a publisher faster than
        // its slowest lossless subscriber) this runs on almost every write.
        let entries = ring.geometry().entries();
        for w in 0..entries.div_ceil(64) {
            let mut bits = ring.gating_bits(w);
            while bits != 0 {
                let entry = 64 * w + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                if entry >= entries {
                    break;
                }
                match ring.verdict(entry, m, self.skip_run) {
                    Verdict::Bounds(l) => {
                        if ahead(limit, l) > 0 {
                            limit = l;
                        }
                    }
                    Verdict::Blocks(position) => {
                        if blocker.is_none() {
                            blocker = Some(Blocker { entry, position });
                        }
                    }
                    // Passed already (lapped before its join took effect, or
                    // garbage): it gates again when it rejoins.
                    Verdict::Passed => {}
                }
            }
        }
        self.limit = if blocker.is_some() { m } else { limit };
        blocker
    }

    /// Makes room for `m`, waiting as the strategy says for each
    /// subscriber in the way until it reads on, dies, has held the
    /// publisher for the eviction timeout (over calls: then it is
    /// evicted), or `deadline` passes (`Err` names who is in the way). A
    /// deadline of now never waits.
    pub(crate) fn room_until<R: Region>(
        &mut self,
        ring: &Ring<R>,
        m: u64,
        deadline: Option<Instant>,
    ) -> Result<(), Full> {
        if self.open_for(m) || self.rescan(ring, m) {
            return Ok(());
        }
        self.room_slow(ring, m, deadline)
    }

    /// At the limit: a scan, and whether it found room for `m` (then the
    /// limit is new and nobody was in the way). Out of line from the
    /// waiting in `room_slow`: a publisher faster than its slowest
    /// lossless subscriber comes here on almost every write, and finds
    /// room (the subscriber read on), so this is its whole cost there.
    #[inline(never)]
    fn rescan<R: Region>(&mut self, ring: &Ring<R>, m: u64) -> bool {
        if self.scan(ring, m).is_some() {
            return false;
        }
        self.blocked = None;
        true
    }

    #[cold]
    #[inline(never)]
    fn room_slow<R: Region>(
        &mut self,
        ring: &Ring<R>,
        m: u64,
        deadline: Option<Instant>,
    ) -> Result<(), Full> {
        loop {
            let Some(b) = self.scan(ring, m) else {
                self.blocked = None;
                return Ok(());
            };
            let now = Instant::now();
            let since = blocked_since(&mut self.blocked, b.entry, b.position, now);
            let out_of_time = deadline.is_some_and(|d| now >= d);
            // The liveness probe is a system call: not on every block (a
            // publisher faster than a live subscriber meets one per message
            // or so, each cleared within microseconds), only once it has
            // lasted `LIVENESS_EVERY` at one position, or before saying
            // `Full` (a dead subscriber does not hold `try_publish` back).
            if (out_of_time || now.duration_since(since) >= LIVENESS_EVERY)
                && !ring.entry_alive(b.entry)
            {
                ring.ungate(b.entry);
                self.blocked = None;
                continue;
            }
            // A subscriber that waits on a claim not committed yet is held
            // by that claim's publisher, not stalled: it gets the unblock
            // timeout on top, after which readers skip a dead claim.
            let patience = if now.duration_since(since) >= self.evict && ring.held_by_claim(b.entry)
            {
                self.evict.saturating_add(ring.unblock_timeout())
            } else {
                self.evict
            };
            if now.duration_since(since) >= patience {
                ring.evict(b.entry, now.duration_since(since));
                self.blocked = None;
                continue;
            }
            let full = Full {
                entry: b.entry,
                pid: ring.registry_pid(b.entry),
            };
            if out_of_time {
                return Err(full);
            }
            let held = patience > self.evict;
            match self.wait_on(ring, m, b, since + patience, held, deadline) {
                Waited::Cleared | Waited::Held => {}
                Waited::Evicted => self.blocked = None,
                Waited::Deadline => return Err(full),
            }
        }
    }

    /// Many publishers: claims the next sequence only once there is room
    /// for it (by `deadline`), by `CAS(cursor, c, c + 1)`, so a deadline
    /// that passes leaves no claim behind. A lossless subscriber that
    /// joined between the look and the claim may still hold the claim back
    /// (for at most the eviction timeout): the join is rare, the claim
    /// cannot be undone.
    pub(crate) fn claim_with_room<R: Region>(
        &mut self,
        ring: &Ring<R>,
        deadline: Option<Instant>,
    ) -> Result<u64, Full> {
        let mut c = ring.head();
        let seq = loop {
            self.room_until(ring, c, deadline)?;
            match ring.claim_exactly(c) {
                Ok(generation) => {
                    self.after_claim(c, generation);
                    break c;
                }
                Err(now) => c = now,
            }
        };
        if !self.open_for(seq) {
            self.room(ring, seq);
        }
        Ok(seq)
    }

    /// Makes room for `m`, waiting for each subscriber in the way until
    /// it reads on, dies, or has held the publisher for the eviction
    /// timeout (then it is evicted).
    #[inline]
    pub(crate) fn room<R: Region>(&mut self, ring: &Ring<R>, m: u64) {
        let _ = self.room_until(ring, m, None);
    }

    /// Waits while `b` is in the way of `m`, until `evict_at` (then evicts
    /// it, unless it came to wait on a claim since and `held` says that
    /// `evict_at` does not count the unblock timeout yet) or `deadline`.
    fn wait_on<R: Region>(
        &mut self,
        ring: &Ring<R>,
        m: u64,
        b: Blocker,
        evict_at: Instant,
        held: bool,
        deadline: Option<Instant>,
    ) -> Waited {
        let start = Instant::now();
        // Moved on (even if still in the way): the caller judges it again
        // with a new clock.
        let run = self.skip_run;
        let in_way = || ring.in_way_at(b.entry, m, b.position, run);
        // First probe a period in: a block that clears sooner makes no
        // system call (`room_slow` probed already if the block is old).
        let mut next_check = start + LIVENESS_EVERY;
        let until = deadline.map_or(evict_at, |d| d.min(evict_at));
        let mut backoff = wait::Backoff::new(self.strategy, Some(until));
        // loom: no clock in the model (a branch on real time would make
        // its executions differ): sleep on ROOM at once, which is the
        // protocol worth checking; its futex returns only when rung. A
        // zero timeout evicts at the first block, as the backoff's
        // deadline of `start` does below.
        #[cfg(loom)]
        {
            let _ = (&mut next_check, &mut backoff, held);
            if deadline.is_some() {
                return Waited::Deadline;
            }
            while in_way() {
                if self.evict.is_zero() {
                    ring.evict(b.entry, Duration::ZERO);
                    return Waited::Evicted;
                }
                ring.sleep_for_room(LIVENESS_EVERY, in_way);
            }
            return Waited::Cleared;
        }
        #[cfg_attr(loom, allow(unreachable_code))]
        loop {
            if !in_way() {
                break;
            }
            let now = Instant::now();
            if now >= next_check {
                if !ring.entry_alive(b.entry) {
                    ring.ungate(b.entry);
                    break;
                }
                next_check = now + LIVENESS_EVERY;
            }
            match backoff.next() {
                wait::Step::Spin => crate::sync::spin_loop(),
                wait::Step::Yield => crate::sync::yield_now(),
                wait::Step::Sleep(left) => {
                    let nap = left.map_or(LIVENESS_EVERY, |l| l.min(LIVENESS_EVERY));
                    ring.sleep_for_room(nap, in_way);
                }
                wait::Step::TimedOut => {
                    let now = Instant::now();
                    if now < evict_at {
                        ring.add_blocked(b.entry, now.duration_since(start));
                        return Waited::Deadline;
                    }
                    if !held && ring.held_by_claim(b.entry) {
                        ring.add_blocked(b.entry, now.duration_since(start));
                        return Waited::Held;
                    }
                    ring.evict(b.entry, now.duration_since(start));
                    return Waited::Evicted;
                }
            }
        }
        ring.add_blocked(b.entry, start.elapsed());
        Waited::Cleared
    }
}

impl<R: Region> Ring<R> {
    fn gating_word(&self, entry: usize) -> &crate::sync::AtomicU64 {
        self.region()
            .word(self.control_field(control::GATING + 8 * (entry / 64)))
    }

    /// Byte offset of entry `entry`'s line in the region.
    pub(crate) fn line_at(&self, entry: usize) -> usize {
        self.control_field(self.geometry().lines() + LINE * entry)
    }

    /// The entries whose bit is set (Acquire, paired with the SeqCst
    /// `fetch_or` of a joiner: its position store comes before it), among
    /// those this ring has lines for.
    fn gating_entries(&self) -> impl Iterator<Item = usize> + '_ {
        let entries = self.geometry().entries();
        (0..entries.div_ceil(64)).flat_map(move |w| {
            let mut bits = self.gating_bits(w);
            std::iter::from_fn(move || {
                while bits != 0 {
                    let b = bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    let entry = 64 * w + b;
                    if entry < entries {
                        return Some(entry);
                    }
                }
                None
            })
        })
    }

    /// Word `w` (of 4) of the gating bits (Acquire, as `gating_entries`).
    #[inline]
    fn gating_bits(&self, w: usize) -> u64 {
        self.hot64(control::GATING, 4)[w].load(Ordering::Acquire)
    }

    /// A gating subscriber's position. Acquire, paired with its Release
    /// store after it finished reading: the slot it read may be
    /// overwritten once this is seen.
    fn gated_position(&self, entry: usize) -> u64 {
        self.region()
            .word(self.line_at(entry) + line::POSITION)
            .load(Ordering::Acquire)
    }

    /// What gating entry `entry`'s position means for writing `m`: a
    /// bound on later writes (`p + capacity`, for `p` within a ring of
    /// `m`), in the way, or passed. One publisher: `m - p == capacity` is
    /// in the way; further behind, the publisher already wrote over `p`
    /// (it was lapped before its join took effect). Many publishers:
    /// other claims between `p + capacity` and `m` may wait at the gate
    /// too, so any distance is in the way until `p`'s slot says a later
    /// lap took it (it is lapped there and rejoins), or it is more than
    /// 2^62 behind (garbage); a position past `m` is real (`m`'s claim
    /// was skipped as abandoned and read past) and bounds later claims.
    /// A position inside the single publisher's last long skip `run` is
    /// judged as at its end less a ring (`SkipRun`).
    fn verdict(&self, entry: usize, m: u64, run: Option<SkipRun>) -> Verdict {
        let cap = self.capacity();
        let mut p = self.gated_position(entry);
        loop {
            let d = m.wrapping_sub(SkipRun::judged(run, p));
            if d < cap || (self.multi() && ahead(m, p) < 0) {
                return Verdict::Bounds(SkipRun::judged(run, p).wrapping_add(cap));
            }
            if !self.multi() {
                return if d == cap {
                    Verdict::Blocks(p)
                } else {
                    Verdict::Passed
                };
            }
            if d >= FAR {
                return Verdict::Passed;
            }
            // Acquire, paired with the Release (AcqRel) stamp CASes of
            // `claim` (`begin`, `unblock`): only a claimer the gate let
            // through for `p + capacity` or later (or an unblocker it let
            // through) moves the stamp past `p`, and the position it was
            // let through by is seen by the reload below.
            let stamp = self.stamp(p).load(Ordering::Acquire);
            if ahead(super::stamp::decode(stamp, p).seq(), p) <= 0 {
                return Verdict::Blocks(p);
            }
            // Its slot says a later lap took it. Believed only if it is
            // still at `p` (loaded after the stamp): one that read on
            // meanwhile, whose slot was then rightly taken, is judged by
            // its new position.
            let now = self.gated_position(entry);
            if now == p {
                return Verdict::Passed;
            }
            p = now;
        }
    }

    /// Many publishers: whether gating entry `entry` waits on a claim not
    /// committed yet (its position's slot does not hold that message yet:
    /// the claim was taken, since a publisher wants a slot a ring later).
    /// Only lengthens the eviction wait (by the unblock timeout), so a
    /// misjudged race costs time, never a message.
    pub(crate) fn held_by_claim(&self, entry: usize) -> bool {
        if !self.multi() {
            return false;
        }
        let p = self.gated_position(entry);
        // Acquire, as in `verdict`: paired with the stamp CASes of `claim`.
        let stamp = self.stamp(p).load(Ordering::Acquire);
        match super::stamp::decode(stamp, p) {
            Stamp::Writing(t) => t == p,
            Stamp::Done(t) | Stamp::Abandoned(t) => ahead(t, p) < 0,
        }
    }

    /// Where gating entry `entry` is in the way of writing `m`, if it is.
    fn in_way(&self, entry: usize, m: u64, run: Option<SkipRun>) -> Option<u64> {
        if !self.is_gating(entry) {
            return None;
        }
        match self.verdict(entry, m, run) {
            Verdict::Blocks(p) => Some(p),
            Verdict::Bounds(_) | Verdict::Passed => None,
        }
    }

    /// Whether gating entry `entry` is still in the way of writing `m` at
    /// position `p`.
    fn in_way_at(&self, entry: usize, m: u64, p: u64, run: Option<SkipRun>) -> bool {
        self.in_way(entry, m, run) == Some(p)
    }

    /// Many publishers: the first gating entry that still needs the
    /// message in `s`'s slot (`s - capacity`), and its position: an
    /// unblocker must not skip claim `s` while one does (its abandoned
    /// stamp would destroy that message), only once the gate lets `s`
    /// through.
    pub(crate) fn gate_holds(&self, s: u64) -> Option<(usize, u64)> {
        self.gating_entries()
            .find_map(|e| self.in_way(e, s, None).map(|p| (e, p)))
    }

    /// Whether `entry`'s subscriber lives: its registry lock is held (a
    /// heap ring cannot tell, and says yes; its handles clear their bit
    /// when dropped).
    pub(crate) fn entry_alive(&self, entry: usize) -> bool {
        #[cfg(test)]
        PROBES.with(|p| p.set(p.get() + 1));
        self.region()
            .lock_held(lock_byte::REGISTRY + entry as u64)
            .unwrap_or(true)
    }

    /// The pid in `entry`'s registry slot, where there is a registry.
    fn registry_pid(&self, entry: usize) -> Option<u32> {
        if !self.geometry().has_registry() {
            return None;
        }
        Some(
            self.region()
                .word32(self.control_field(control::REGISTRY + 4 * entry))
                .load(Ordering::Relaxed),
        )
    }

    /// Clears `entry`'s bit (SeqCst: ordered with the joiners' RMWs).
    pub(crate) fn ungate(&self, entry: usize) {
        self.gating_word(entry)
            .fetch_and(!(1 << (entry % 64)), Ordering::SeqCst);
    }

    /// Evicts `entry` after it held the publisher for `blocked`: counted
    /// on its line first (while its bit is still set), then ungated. (Two
    /// publishers of a many-publisher bus that evict it at the same
    /// moment may both count.)
    pub(crate) fn evict(&self, entry: usize, blocked: Duration) {
        if !self.is_gating(entry) {
            return;
        }
        let at = self.line_at(entry);
        self.region()
            .word32(at + line::EVICTIONS)
            .fetch_add(1, Ordering::Relaxed);
        self.add_blocked(entry, blocked);
        self.ungate(entry);
        // Release fence, paired with the Acquire fence in `Ring::rejoin`:
        // a subscriber that saw any stamp stored after this (the
        // overwrite that laps it, even its Relaxed `writing` store) sees
        // its bit clear, so it learns it was evicted with the lag report
        // (loom found the stale bit without it).
        crate::sync::fence(Ordering::Release);
    }

    fn add_blocked(&self, entry: usize, blocked: Duration) {
        let ns = u64::try_from(blocked.as_nanos()).unwrap_or(u64::MAX);
        self.region()
            .word(self.line_at(entry) + line::BLOCKED_NS)
            .fetch_add(ns, Ordering::Relaxed);
    }

    /// The word a publisher waiting for room sleeps on (`ROOM`): gating
    /// subscribers ring it after each position store, as a publisher
    /// rings a subscriber's doorbell (an async publisher registers it
    /// with the `aio` waiter).
    pub(crate) fn room_bell(&self) -> &crate::sync::AtomicU32 {
        self.region().word32(self.control_field(control::ROOM))
    }

    /// The publisher sleeps on `ROOM` (the sleeper's half of `wait`).
    fn sleep_for_room(&self, timeout: Duration, still_blocked: impl FnOnce() -> bool) {
        wait::sleep(self.room_bell(), Some(timeout), still_blocked);
    }

    /// The bus's limit on gating subscribers (0: refused).
    pub(crate) fn max_gating(&self) -> u32 {
        // Written by the creator before the magic, which every opener
        // loaded with Acquire.
        self.region()
            .word32(self.control_field(control::MAX_GATING))
            .load(Ordering::Relaxed)
    }

    /// Counts the bits set other than `entry`'s (for the limit check at
    /// join). SeqCst loads, after the joiner's SeqCst `GATE_GEN` load: a
    /// joiner whose commit (its `GATE_GEN` CAS) that load saw has its bit
    /// seen here.
    fn gating_count_without(&self, entry: usize) -> u32 {
        (0..4)
            .map(|w| {
                let mut bits = self
                    .region()
                    .word(self.control_field(control::GATING + 8 * w))
                    .load(Ordering::SeqCst);
                if w == entry / 64 {
                    bits &= !(1 << (entry % 64));
                }
                bits.count_ones()
            })
            .sum()
    }

    /// Joins the gating set as `entry`, whose line says position `pos`
    /// (stored before this): see the module's join rule. Refused if the
    /// bus already has as many as it allows: a place is taken by the
    /// `GATE_GEN` CAS from the value loaded before the count, so of
    /// joiners racing for the last places exactly as many as there are
    /// places get in (the others count them and are refused).
    pub(crate) fn join(&self, entry: usize) -> Result<Joined, LosslessRefused> {
        let max = self.max_gating();
        if max == 0 {
            return Err(LosslessRefused::NotAllowed);
        }
        let at = self.line_at(entry);
        self.region()
            .word32(at + line::CONTRACT)
            .store(contract::LOSSLESS, Ordering::Relaxed);
        let light = wait::light_publisher_barrier();
        let mut cleaned = false;
        for _ in 0..JOIN_TRIES {
            // SeqCst, before the count: see `gating_count_without`.
            let generation = self.gate_gen().load(Ordering::SeqCst);
            let mut others = self.gating_count_without(entry);
            if others >= max && !cleaned {
                // A subscriber that died while the publisher was not
                // waiting for it keeps its bit until the publisher next
                // meets it: clear the dead ones (their locks are free) and
                // count again.
                for other in self.gating_entries().collect::<Vec<_>>() {
                    if other != entry && !self.entry_alive(other) {
                        self.ungate(other);
                    }
                }
                cleaned = true;
                others = self.gating_count_without(entry);
            }
            if others >= max {
                return Err(LosslessRefused::TooMany { max });
            }
            // SeqCst RMW (a Release): the position stored before it is
            // seen by a publisher whose Acquire bit load sees the bit.
            self.gating_word(entry)
                .fetch_or(1 << (entry % 64), Ordering::SeqCst);
            // The commit, and the bump the publisher rescans on: it
            // succeeds only if no other joiner committed since `generation` was
            // loaded (nor anyone left or rejoined). A joiner that loads
            // `GATE_GEN` after this sees the bit set above in its count.
            if self
                .gate_gen()
                .compare_exchange(
                    generation,
                    generation.wrapping_add(1),
                    Ordering::SeqCst,
                    Ordering::SeqCst,
                )
                .is_ok()
            {
                self.announce_committed_join();
                return Ok(Joined { entry, light });
            }
            // `GATE_GEN` moved since the count: another joiner may have
            // taken the place it counted free. Back off (waking a
            // publisher that may have found this entry in its way) and
            // count again.
            self.ungate(entry);
            self.ring_room(false);
            crate::sync::yield_now();
        }
        // `GATE_GEN` moved under every try (leaves and rejoins without
        // end): refused, so the limit still holds.
        Err(LosslessRefused::TooMany { max })
    }

    /// A gating subscriber leaves: clears its bit, tells the publisher,
    /// and wakes it if it sleeps on `ROOM`.
    pub(crate) fn leave(&self, joined: Joined) {
        self.ungate(joined.entry);
        self.announce_gate_change();
        self.ring_room(false);
    }
}
