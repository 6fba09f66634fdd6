//! The reference row of the throughput tables: the sender's loop copying
//! each message into a ring on its own core, no channel at all.

use crate::counters::Counters;
use crate::figures::{Figures, add};
use crate::mech::stamp;
use crate::pattern::Plan;

/// The mechanism name of the throughput tables' reference row.
pub const MEMCPY: &str = "memcpy";

/// The reference row's ring: the size of the shared-memory rings measured.
pub const MEMCPY_RING: usize = 4 << 20;

/// Timed passes per round of the reference row; the round keeps the best.
pub const MEMCPY_PASSES: u32 = 5;

/// One round of the reference row of a throughput case: the sender's own
/// loop (read the clock, stamp the message) with the channel replaced by a
/// bare copy of the message into the next slot of a 4 MiB ring, on the
/// sender's core, nothing else. That is what a ring of the same size moving
/// the same messages with one copy would do if the protocol and the other
/// core cost nothing: the ceiling for a shared-memory channel, where a
/// memcpy between buffers larger than the caches would measure the memory
/// and not the copy (and be beaten by any cache-resident ring). A ceiling
/// is a best case, so each round keeps the fastest of a few passes: a pass
/// that another process interrupted does not lower it.
pub fn round(f: &mut Figures, plan: &Plan, ticks_per_ns: f64) {
    let size = plan.msg_size;
    let slots = (MEMCPY_RING / size).max(1);
    let mut msg = vec![0u8; size];
    // Written through once, so no copy meets a fresh page.
    let mut ring = vec![1u8; slots * size];
    let clock = plan.clock;
    let mut copy = |seq: u64, ring: &mut [u8]| {
        stamp(&mut msg, seq, clock.now());
        let at = (seq as usize % slots) * size;
        ring[at..at + size].copy_from_slice(std::hint::black_box(&msg));
    };
    for seq in 0..plan.warmup {
        copy(seq, &mut ring);
    }
    let mut counters = Counters::for_this_thread();
    let before = counters.snapshot();
    let mut best = 0.0f64;
    for _ in 0..MEMCPY_PASSES {
        let start = clock.now();
        for seq in plan.warmup..plan.warmup + plan.count {
            copy(seq, &mut ring);
        }
        let secs = clock.now().saturating_sub(start).max(1) as f64 / ticks_per_ns / 1e9;
        best = best.max(plan.count as f64 / secs);
    }
    let after = counters.snapshot();
    std::hint::black_box(&ring);
    f.round_rate.push(best);
    let copied = plan.count * u64::from(MEMCPY_PASSES);
    f.sent += copied;
    f.received += copied;
    add(&mut f.sender, &before.since(&after));
}
