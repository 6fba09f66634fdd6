//! Many publishers on one bus: the claim, commit and unblock steps of the
//! slot protocol, and a claim that survives its publisher's death.
//!
//! A bus created by `ManyPublisher::create` has the header flag
//! `MULTI_PUBLISHER`; any number of processes attach `ManyPublisher`s to it.
//! Subscribers are the broadcast ones, unchanged, and see one total order.
//!
//! # Invariants (extending the bus module's)
//! - Stamps, mod 2^64: `writing(s) = 2s + 1`, `done(s) = 2s + 2`, and
//!   `abandoned(s) = done(s) ^ 2^63`: "s was claimed and never committed".
//!   Sequences in use lie within 2^61 of each other, so a stamp within 2^62
//!   of `done(s)` is a normal one and any other is abandoned
//!   (`stamp::decode`).
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
//!   commit CAS fails gets `Abandoned` and publishes nothing; it never
//!   moves a stamp someone else moved on.
//! - Unblockers are any subscriber (which is why subscribers of a
//!   many-publisher bus map the data pages read-write, unlike those of a
//!   single-publisher bus) and the claimer of the slot's next lap. A reader
//!   that finds `abandoned(s)` reports `Received::Lagged { skipped: 1 }`
//!   and goes on at `s + 1`, so delivered + skipped == published holds per
//!   subscriber as on a single-publisher bus.
//! - Lossless subscribers (`gate`): a claim passes the gate before it
//!   takes its slot, and a claim is skipped (which destroys the previous
//!   lap's message) only once the gate would let it through; `gate`'s
//!   module docs give the argument.
//! - The unblock timeout (`control::UNBLOCK_NS`) is written by the creator
//!   before the magic and never changes; every party reads it on open.
//!
//! # Liveness: timeouts only
//! A claim carries no owner, so a publisher's death is inferred from time
//! alone, as Aeron's publication unblock does: there is no per-publisher
//! registry. Every `ManyPublisher` holds a *shared* lock on the publisher
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
//! cursor), and its death is known from its lock. Many-publisher buses are
//! a second mode, chosen at creation and recorded in the header
//! (`MULTI_PUBLISHER`), rather than a change to the first, so that
//! single-publisher buses keep their plain stores and their faster path,
//! and only buses made for several publishers pay for claims, CAS commits
//! and unblock timeouts.

use std::time::{Duration, Instant};

use super::ring::{Cursor, Poll, Ring, Stall};
use super::stamp::{Stamp, abandoned, ahead, decode, done, writing};
use crate::mem::Region;
use crate::sync::{Ordering, fence};
use crate::wire::{Header, control};

/// Writes the many-publisher control fields of a bus being built (before
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
        // Relaxed: on a many-publisher bus the cursor publishes nothing; the
        // RMW alone makes every claim unique.
        self.cursor().fetch_add(1, Ordering::Relaxed)
    }

    /// Claims the next sequence, then loads `GATE_GEN` (the publisher's
    /// half of the gate's join Dekker, `gate`): a joiner whose bump this
    /// load misses sees the claim in its cursor load, and is protected
    /// only from a position this claim does not reach.
    #[inline]
    pub(crate) fn claim_gated(&self) -> (u64, u32) {
        let seq = self.claim();
        (seq, self.gen_after_claim())
    }

    /// Claims the cursor's sequence `c` only if it is still `c` (a
    /// publish with a deadline, which looked for room for `c` first and
    /// must not claim a sequence it has no room for). `Err`: the cursor
    /// it found instead.
    #[inline]
    pub(crate) fn claim_exactly(&self, c: u64) -> Result<u32, u64> {
        // Relaxed, as `claim`: the RMW alone makes the claim unique.
        self.cursor().compare_exchange(
            c,
            c.wrapping_add(1),
            Ordering::Relaxed,
            Ordering::Relaxed,
        )?;
        Ok(self.gen_after_claim())
    }

    #[inline(always)]
    fn gen_after_claim(&self) -> u32 {
        // Paired with the joiner's SeqCst bump and barrier (Dekker, as the
        // single publisher's load after its cursor store in `write`): a
        // compiler fence where this process registered for the asymmetric
        // barrier (the joiner's membarrier does the hardware half), else a
        // full fence.
        if self.light_barrier() {
            std::sync::atomic::compiler_fence(Ordering::SeqCst);
        } else {
            fence(Ordering::SeqCst);
        }
        self.gate_gen().load(Ordering::Relaxed)
    }

    /// Takes the slot of claimed `seq`: waits for its previous lap to finish
    /// (skipping that lap after the unblock timeout), then moves the stamp
    /// to `writing(seq)`. Returns the stamp it replaced: `Done(seq -
    /// capacity)` when the payload still holds that message (a pool's
    /// publisher reads its block there). Fails with the stamp found if
    /// `seq` itself was skipped meanwhile.
    pub(crate) fn begin(&self, seq: u64) -> Result<Stamp, Stamp> {
        let stamp = self.stamp(seq);
        let prev = seq.wrapping_sub(self.capacity());
        // Acquire, paired with the Release commit of the previous lap: our
        // payload stores come after its in every word's order.
        let mut cur = stamp.load(Ordering::Acquire);
        let mut since = None;
        let mut spins = 0u32;
        let replaced = loop {
            let st = decode(cur, seq);
            if ahead(st.seq(), seq) >= 0 {
                return Err(st);
            }
            if let Stamp::Done(t) | Stamp::Abandoned(t) = st {
                if ahead(t, prev) >= 0 {
                    // Acquire on both outcomes, as the load above. Release
                    // on success too, paired with the gate's Acquire stamp
                    // load in `Ring::verdict`: a publisher that sees this
                    // stamp, then loads the subscriber's position, sees the
                    // position that let this claim through the gate (or a
                    // later one), so it never takes a subscriber still at
                    // `prev` for one lapped before its join (Miri found it:
                    // a stale position, "Passed", a far limit, a lap).
                    match stamp.compare_exchange(
                        cur,
                        writing(seq),
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    ) {
                        Ok(_) => break st,
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
                // stamp publishes no payload; Release on success for the
                // gate's reading of it, as the CAS above.
                cur = match stamp.compare_exchange(
                    cur,
                    abandoned(prev),
                    Ordering::AcqRel,
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
        };
        // Release fence, paired with the reader's Acquire fence in `read`: a
        // reader whose copy saw a word we store next re-loads a stamp at
        // least as new as `writing(seq)`, and discards the copy.
        fence(Ordering::Release);
        Ok(replaced)
    }

    /// After `begin(seq)` returned `replaced`: the first payload word of
    /// the message `seq - capacity` that the slot still holds, or `None`
    /// if it holds none (a new bus's slot, or a skipped claim's). A pool
    /// publisher reads there the block of the descriptor its write
    /// replaces. Relaxed: `begin` loaded that message's Release `done`
    /// with Acquire, and the slot is this claimer's until it commits.
    #[inline]
    pub(crate) fn replaced_word(&self, seq: u64, replaced: Stamp) -> Option<u64> {
        let prev = seq.wrapping_sub(self.capacity());
        // A new bus's stamps read as `done(first_seq - 1)`: a lap not yet
        // written past `first_seq` holds no message.
        let written = seq.wrapping_sub(self.geometry().first_seq()) >= self.capacity();
        if !written || replaced != Stamp::Done(prev) {
            return None;
        }
        self.payload(seq).first().map(|w| w.load(Ordering::Relaxed))
    }

    /// Publishes `seq`, whose payload is written, unless it was skipped.
    #[inline]
    pub(crate) fn commit(&self, seq: u64) -> Result<(), Stamp> {
        // Release, paired with the Acquire first stamp load in `read`: a
        // reader that sees `done(seq)` sees the whole payload.
        match self.stamp(seq).compare_exchange(
            writing(seq),
            done(seq),
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

    /// Whether a gating subscriber still needs the message `s`'s claim
    /// would overwrite (`gate`): then claim `s` is not skipped yet, and
    /// its unblock clock starts over (the claimer may be waiting at the
    /// gate, alive: it gets a whole unblock timeout once the gate lets it
    /// through). A dead one in the way is ungated; one in the way of this
    /// reader for the eviction timeout is evicted, as a publisher would
    /// (so no stalled subscriber holds this reader back for longer, even
    /// with no publisher left to evict it).
    #[cold]
    fn gate_blocks_unblock(&self, s: u64, stall: &mut Stall, now: Instant) -> bool {
        loop {
            let Some((entry, position)) = self.gate_holds(s) else {
                stall.gated = None;
                return false;
            };
            if !self.entry_alive(entry) {
                self.ungate(entry);
                continue;
            }
            let gated = super::gate::blocked_since(&mut stall.gated, entry, position, now);
            if now.duration_since(gated) >= self.evict_timeout() {
                self.evict(entry, now.duration_since(gated));
                stall.gated = None;
                continue;
            }
            stall.since = Some(now);
            return true;
        }
    }

    /// The bus's eviction timeout, capped at `MAX_EVICT` (untrusted).
    fn evict_timeout(&self) -> Duration {
        let ns = self
            .region()
            .word(self.control_field(control::EVICT_NS))
            .load(Ordering::Relaxed);
        Duration::from_nanos(ns).min(super::options::MAX_EVICT)
    }

    /// A reader at `cursor.pos` found its slot empty on a many-publisher
    /// bus. If that sequence has been claimed and uncommitted for longer
    /// than the unblock timeout (as this reader measured, from its first
    /// sight, in `cursor.stall`), skips it.
    #[cold]
    pub(crate) fn unblock(&self, cursor: &mut Cursor) -> Poll {
        let Cursor { pos, stall, .. } = cursor;
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
                let waited = now.duration_since(since);
                let timeout = self.unblock_timeout();
                if waited < timeout {
                    // A claim the gate holds is not stalled: its clock
                    // restarts at each poll that finds it held, so its
                    // claimer gets a whole timeout once through, not what
                    // was left of one counted from this reader's first
                    // sight. Looked at only past an eighth of the timeout
                    // (a claim mid-copy costs no scan) and then on every
                    // poll while it stays held.
                    if stall.held || waited >= timeout / 8 {
                        stall.held = self.gate_holds(s).is_some();
                        if stall.held {
                            stall.since = Some(now);
                        }
                    }
                    return Poll::Empty;
                }
            }
            _ => {
                *stall = Stall {
                    seq: s,
                    since: Some(now),
                    gated: None,
                    held: false,
                };
                if !self.unblock_timeout().is_zero() {
                    return Poll::Empty;
                }
            }
        }
        if self.gate_blocks_unblock(s, stall, now) {
            return Poll::Empty;
        }
        let stamp = self.stamp(s);
        // Relaxed: what we do next depends only on the CAS, not on data.
        let cur = stamp.load(Ordering::Relaxed);
        if !unfinished(decode(cur, s), s) {
            // Committed or skipped since the read: poll again.
            return Poll::Empty;
        }
        // An abandoned stamp publishes no payload; a reader that sees it
        // reads none. Release on success, paired with the gate's Acquire
        // stamp load in `Ring::verdict`: a publisher that sees this skip
        // then sees the positions `gate_blocks_unblock` let it through by.
        match stamp.compare_exchange(cur, abandoned(s), Ordering::Release, Ordering::Relaxed) {
            Ok(_) => {
                stall.since = None;
                *pos = s.wrapping_add(1);
                Poll::Lagged(1)
            }
            Err(_) => Poll::Empty,
        }
    }
}
