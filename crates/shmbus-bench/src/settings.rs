//! The plan of a run: which cases, how many rounds, and each block's counts,
//! from the command line (`--quick` or the full run).

use std::time::Duration;

use crate::args::BenchArgs;
use crate::case::{Case, Pattern};
use crate::clock::Source;
use crate::pattern::Plan;

/// A message that fits one cache line with its stamp (see `Case::only`).
pub const ONE_LINE: usize = 16;

/// The rows of the one-line pingpong case.
const SHARED_MEMORY: &[&str] = &[
    "floor",
    "floor-2line",
    "shmbus",
    "shmbus-unregistered",
    "shmbus-threads",
    "shmbus-stream",
    "shmbus-zc",
    "ipc_ring",
    "crossbar-podbus",
    "ringfire",
    "iceoryx2",
    "crossbar-pool",
    "ipmpsc",
    "photon-ring",
];

/// Message sizes of `--large`, the zero-copy table.
pub const LARGE_SIZES: [usize; 4] = [64, 64 << 10, 1 << 20, 4 << 20];

/// Bytes a latency block moves at most, beyond its first 500 messages.
const LATENCY_BYTES: u64 = 256 << 20;

/// The rows of `--large` unless `--mechanisms` names others: the copying
/// bus and every mechanism that loans blocks.
pub const LARGE_ROWS: &[&str] = &["shmbus", "shmbus-zc", "iceoryx2", "crossbar-pool"];

/// The receiver counts the issue asks fanout to reach, where there are
/// cores for them.
pub const WIDE_FANOUT: [usize; 3] = [4, 8, 14];

/// The fanout cases' receiver counts when `--fanout` is not given: 1 and 2
/// (`--quick`) or 1, 2 and 4, as on any machine, and each wider count of
/// [`WIDE_FANOUT`] for which `cpus` (the sender's first) leave a CPU per
/// receiver; `--quick` takes only the widest of those, to stay short.
pub fn default_fanout(quick: bool, cpus: usize) -> Vec<usize> {
    let mut out: Vec<usize> = if quick { vec![1, 2] } else { vec![1, 2, 4] };
    let fits: Vec<usize> = WIDE_FANOUT.into_iter().filter(|&n| n < cpus).collect();
    if quick {
        out.extend(fits.last());
    } else {
        out.extend(fits);
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Sizes, counts and rounds for one run.
pub struct Settings {
    /// Rounds per case.
    pub rounds: u32,
    /// The cases, in order.
    pub cases: Vec<Case>,
    /// Round trips per pingpong block.
    pub pingpong_count: u64,
    /// Messages per oneway/fanout block.
    pub paced_count: u64,
    /// Bytes per throughput block (the count is this over the size).
    pub throughput_bytes: u64,
    /// Largest throughput count.
    pub throughput_max: u64,
    /// Gap between paced messages.
    pub pace: Duration,
    /// Pinned CPUs.
    pub cpus: Vec<usize>,
    /// Clock.
    pub clock: Source,
    /// Clock ticks per nanosecond.
    pub ticks_per_ns: f64,
    /// Whether this is `--quick`.
    pub quick: bool,
}

impl Settings {
    /// The plan of a run from its arguments.
    pub fn new(args: &BenchArgs, cpus: &[usize], clock: Source, ticks_per_ns: f64) -> Settings {
        let quick = args.quick;
        let patterns = args.patterns.clone().unwrap_or_else(|| {
            vec![
                Pattern::Pingpong,
                Pattern::Oneway,
                Pattern::Throughput,
                Pattern::Fanout,
            ]
        });
        let sizes: &[usize] = if quick {
            &[16, 256, 4096, 65536]
        } else {
            &[16, 64, 256, 1024, 4096, 16384, 65536]
        };
        let fanouts = args
            .fanout
            .clone()
            .unwrap_or_else(|| default_fanout(quick, cpus.len()));
        let mut cases = Vec::new();
        if args.large {
            // Every pattern but fanout at every size: the zero-copy table.
            let sizes: &[usize] = match &args.sizes {
                Some(sizes) => sizes,
                None if quick => &[64, 1 << 20],
                None => &LARGE_SIZES,
            };
            for p in patterns.iter().filter(|&&p| p != Pattern::Fanout) {
                cases.extend(sizes.iter().map(|&s| Case {
                    pattern: *p,
                    msg_size: s,
                    receivers: 1,
                    only: None,
                }));
            }
        }
        for p in patterns.into_iter().filter(|_| !args.large) {
            match p {
                Pattern::Pingpong if args.msg_size != ONE_LINE => {
                    // The floor is one cache line each way; so is a 16 B
                    // message with its stamp. That like-for-like ratio is
                    // measured too, for the shared-memory rows only (the
                    // kernel's rows would only add minutes).
                    cases.push(Case {
                        pattern: p,
                        msg_size: ONE_LINE,
                        receivers: 1,
                        only: Some(SHARED_MEMORY),
                    });
                    cases.push(Case {
                        pattern: p,
                        msg_size: args.msg_size,
                        receivers: 1,
                        only: None,
                    });
                }
                Pattern::Pingpong | Pattern::Oneway => cases.push(Case {
                    pattern: p,
                    msg_size: args.msg_size,
                    receivers: 1,
                    only: None,
                }),
                Pattern::Throughput => cases.extend(sizes.iter().map(|&s| Case {
                    pattern: p,
                    msg_size: s,
                    receivers: 1,
                    only: None,
                })),
                Pattern::Fanout => cases.extend(fanouts.iter().map(|&n| Case {
                    pattern: p,
                    msg_size: args.msg_size,
                    receivers: n,
                    only: None,
                })),
            }
        }
        Settings {
            rounds: args.rounds.unwrap_or(if quick { 3 } else { 4 }).max(1),
            cases,
            pingpong_count: args.count.unwrap_or(if quick { 5_000 } else { 20_000 }),
            paced_count: if quick { 2_000 } else { 5_000 },
            throughput_bytes: if quick { 16 << 20 } else { 48 << 20 },
            throughput_max: if quick { 100_000 } else { 300_000 },
            pace: Duration::from_micros(20),
            cpus: cpus.to_vec(),
            clock,
            ticks_per_ns,
            quick,
        }
    }

    /// `plan` (of `case`) for `m`: paced no faster than its `min_pace`.
    pub fn plan_for(&self, m: &dyn crate::mech::Mechanism, case: &Case, plan: &Plan) -> Plan {
        let mut plan = plan.clone();
        if let Some(gap) = m.min_pace()
            && matches!(case.pattern, Pattern::Oneway | Pattern::Fanout)
        {
            let ticks = (gap.as_nanos() as f64 * self.ticks_per_ns) as u64;
            plan.pace = plan.pace.max(ticks);
        }
        plan
    }

    /// The plan of one block of `case`.
    pub fn plan(&self, case: &Case) -> Plan {
        // Large messages: fewer of them (about LATENCY_BYTES per block, at
        // least 500), and paced no faster than 1 byte per ns, so a oneway
        // message never waits behind the one before.
        let size = case.msg_size as u64;
        let fewer = |count: u64| count.min((LATENCY_BYTES / size).max(500));
        let (warmup, count, pace) = match case.pattern {
            Pattern::Pingpong => {
                let n = fewer(self.pingpong_count);
                (n / 10 + 100, n, 0)
            }
            Pattern::Oneway | Pattern::Fanout => {
                let n = fewer(self.paced_count);
                let gap = self.pace.max(Duration::from_nanos(size));
                (
                    n / 10 + 100,
                    n,
                    (gap.as_nanos() as f64 * self.ticks_per_ns) as u64,
                )
            }
            Pattern::Throughput => {
                let n = (self.throughput_bytes / case.msg_size as u64)
                    .clamp(2_000, self.throughput_max);
                (n / 10, n, 0)
            }
        };
        Plan {
            pattern: case.pattern,
            msg_size: case.msg_size,
            warmup,
            count,
            pace,
            clock: self.clock,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::default_fanout;

    #[test]
    fn a_two_cpu_machine_keeps_the_fanout_it_always_had() {
        assert_eq!(default_fanout(true, 2), [1, 2]);
        assert_eq!(default_fanout(false, 2), [1, 2, 4]);
    }

    #[test]
    fn fanout_reaches_every_width_that_has_a_cpu_per_receiver() {
        assert_eq!(default_fanout(false, 16), [1, 2, 4, 8, 14]);
        assert_eq!(default_fanout(false, 9), [1, 2, 4, 8]);
        assert_eq!(default_fanout(false, 8), [1, 2, 4]);
        assert_eq!(default_fanout(true, 16), [1, 2, 14]);
        assert_eq!(default_fanout(true, 5), [1, 2, 4]);
    }
}
