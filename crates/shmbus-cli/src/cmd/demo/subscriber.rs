//! A subscriber's role (a live one, or the late joiner): join the bus,
//! print each round's latency of the updates taken live from the ring, and
//! end with its state for the parent to compare.

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use shmbus::journal::{self, JoinOptions, KeyedState};
use shmbus::{Received, WaitStrategy};

use super::wire::{Update, monotonic_ns, say, say_done};
use super::{ChildArgs, fail};
use crate::error::CliError;

/// One round's figures of one subscriber.
struct RoundStats {
    latency: Histogram<u64>,
    repaired: u64,
    gone: u64,
}

impl RoundStats {
    fn new() -> RoundStats {
        RoundStats {
            latency: Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid bounds"),
            repaired: 0,
            gone: 0,
        }
    }

    /// The round's line: `[round 1] [live-1] spin on CPU 1 | avg: 61 ns |
    /// min: 30 ns | p50: 60 ns | p90: 70 ns | p99: 80 ns | lost: 0`, with the
    /// subscriber's label and how it waits (`spin on CPU n` or `futex`).
    fn line(&self, round: u64, label: &str, how: &str) -> String {
        let h = &self.latency;
        let lost = self.repaired + self.gone;
        let why = if lost > 0 {
            format!(
                " ({} repaired from the journal, {} gone)",
                self.repaired, self.gone
            )
        } else {
            String::new()
        };
        if h.is_empty() {
            return format!(
                "[round {round}] [{label}] {how} | no update live from the ring | lost: {lost}{why}"
            );
        }
        format!(
            "[round {round}] [{label}] {how} | avg: {:.0} ns | min: {} ns | p50: {} ns | p90: {} ns | p99: {} ns | lost: {lost}{why}",
            h.mean(),
            h.min(),
            h.value_at_quantile(0.5),
            h.value_at_quantile(0.9),
            h.value_at_quantile(0.99),
        )
    }
}

/// Runs a subscriber until it has the publisher's last update.
pub(super) fn run(a: &ChildArgs) -> Result<(), CliError> {
    let (strategy, how) = match a.spin_cpu {
        Some(cpu) => (WaitStrategy::BusySpin, format!("spin on CPU {cpu}")),
        None => (
            WaitStrategy::SpinFutex {
                spin: Duration::from_micros(50),
            },
            "futex".to_owned(),
        ),
    };
    let opts = JoinOptions::default().wait_strategy(strategy);
    let t0 = Instant::now();
    let mut sub = journal::Subscriber::<Update>::join(&a.bus, &opts)
        .map_err(|e| fail("join")(e.to_string()))?;
    say("READY")?;
    let last = a.first + a.rounds * a.updates - 1;
    let round_of = |seq: u64| (seq - a.first) / a.updates.max(1) + 1;
    let mut state = KeyedState::<Update>::new();
    let mut bootstrap: u64 = 0;
    let mut live = false;
    let mut current: Option<(u64, RoundStats)> = None;
    let stall = Duration::from_secs(10);
    loop {
        let got = sub
            .recv(shmbus::Wait::For(stall))
            .ok_or_else(|| CliError::runtime(format!("no update for {stall:?}")))?;
        let from_ring = sub.is_live();
        let now = monotonic_ns();
        let e = match got {
            Received::Message(e) => e,
            Received::Lagged { skipped } => {
                if let Some((_, s)) = current.as_mut() {
                    s.gone += skipped;
                }
                continue;
            }
        };
        state.apply(e.seq, e.msg);
        if !live && !from_ring {
            bootstrap += 1;
        } else {
            if !live {
                live = true;
                if bootstrap > 0 {
                    say(&format!(
                        "SAY [{}] joined: {bootstrap} updates from the journal in {} ms, \
                         then live on the ring from sequence {} (round {})",
                        a.label,
                        t0.elapsed().as_millis(),
                        e.seq,
                        round_of(e.seq)
                    ))?;
                }
            }
            let r = round_of(e.seq);
            if current.as_ref().is_none_or(|(c, _)| *c != r)
                && let Some((c, s)) = current.replace((r, RoundStats::new()))
            {
                say(&format!("SAY {}", s.line(c, &a.label, &how)))?;
            }
            let (_, s) = current.as_mut().expect("set above");
            if from_ring {
                s.latency
                    .saturating_record(now.saturating_sub(e.msg.sent_ns).max(1));
            } else {
                s.repaired += 1;
            }
        }
        if e.seq == last {
            break;
        }
    }
    if let Some((c, s)) = current {
        say(&format!("SAY {}", s.line(c, &a.label, &how)))?;
    }
    say_done(&state)
}
