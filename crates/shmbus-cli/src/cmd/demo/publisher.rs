//! The publisher's role: paced key/value updates on the journaled bus, a
//! compaction of the journal halfway while publishing goes on, and its
//! final state for the parent to compare.

use std::io::{self, BufRead};
use std::time::{Duration, Instant};

use shmbus::BusOptions;
use shmbus::journal;
use shmbus::journal::KeyedState;

use super::wire::{Update, monotonic_ns, say, say_done};
use super::{ChildArgs, fail, journal_size};
use crate::error::CliError;

/// SplitMix64: the keys' order, the same in every run.
fn next_key(state: &mut u64, keys: u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) % keys
}

/// Runs the publisher until the parent closes its stdin.
pub(super) fn run(a: &ChildArgs) -> Result<(), CliError> {
    let opts = BusOptions::new(a.slots);
    let mut p =
        journal::Publisher::<Update>::create(&a.bus, &opts, &journal::Options::new(&a.journal))
            .map_err(|e| fail("create")(e.to_string()))?;
    say(&format!("READY {}", p.next_sequence()))?;
    let mut stdin = io::stdin().lock();
    let mut go = String::new();
    let _ = stdin.read_line(&mut go);
    if go.trim() != "GO" {
        return Ok(());
    }
    let pace = a.pace * 1000;
    let mut state = KeyedState::<Update>::new();
    let mut rng = 0x5eed;
    let mut sent: u64 = 0;
    let mut compaction: Option<(journal::Stat, Instant)> = None;
    let start = monotonic_ns();
    for round in 1..=a.rounds {
        for _ in 0..a.updates {
            // Sleep to the next update's time: the updates of a sleep's
            // overshoot then go out back to back.
            let due = start + sent * pace;
            let now = monotonic_ns();
            if now < due {
                std::thread::sleep(Duration::from_nanos(due - now));
            }
            let msg = Update {
                key: next_key(&mut rng, a.keys),
                val: sent,
                sent_ns: monotonic_ns(),
            };
            let seq = p
                .publish(&msg)
                .map_err(|e| fail("publish")(e.to_string()))?;
            state.apply(seq, msg);
            sent += 1;
            if sent.is_multiple_of(256)
                && let Some((before, t)) = compaction.take_if(|_| !p.is_compacting())
            {
                report_compaction(&p, &before, t)?;
            }
        }
        say(&format!("ROUND {round}"))?;
        if round == a.compact_round {
            let before =
                shmbus::journal::stat(&a.journal).map_err(|e| fail("journal")(e.to_string()))?;
            p.compact();
            compaction = Some((before, Instant::now()));
        }
    }
    if let Some((before, t)) = compaction {
        if p.is_compacting() {
            say("SAY journal compaction still running at the end")?;
        } else {
            report_compaction(&p, &before, t)?;
        }
    }
    say_done(&state)?;
    // Stay, serving joins' flush requests, until the parent closes stdin.
    let mut rest = String::new();
    while stdin.read_line(&mut rest).is_ok_and(|n| n > 0) {}
    Ok(())
}

fn report_compaction(
    p: &journal::Publisher<Update>,
    before: &journal::Stat,
    started: Instant,
) -> Result<(), CliError> {
    if let Some(e) = p.compaction_error() {
        return Err(CliError::runtime(e));
    }
    let after =
        shmbus::journal::stat(p.journal_path()).map_err(|e| fail("journal")(e.to_string()))?;
    say(&format!(
        "SAY journal compacted in {} ms while publishing went on: {} -> {}",
        started.elapsed().as_millis(),
        journal_size(before),
        journal_size(&after)
    ))
}
