//! What was measured for one mechanism in one case, over all rounds: the
//! merged latency histogram, each round's median and rate, losses and
//! counters; and the figures derived from them, in nanoseconds.

use hdrhistogram::Histogram;

use crate::case::{Case, Pattern};
use crate::counters::Delta;
use crate::error::BenchError;
use crate::mech::Mechanism;
use crate::pattern::{self, Block, Plan};

/// Everything measured for one mechanism in one case, over all rounds.
pub struct Figures {
    /// The case.
    pub case: Case,
    /// Mechanism name.
    pub mechanism: &'static str,
    /// Whether both ends were threads of one process.
    pub in_process: bool,
    /// Latency in ticks, all rounds merged (RTT for pingpong, one-way else).
    pub latency: Option<Histogram<u64>>,
    /// Each round's p50 in ticks.
    pub round_p50: Vec<u64>,
    /// Fanout: the latency of each round's worst receiver (the one with
    /// the highest p50 that round), in ticks, all rounds merged.
    pub worst: Option<Histogram<u64>>,
    /// Fanout: each round's worst receiver's p50 in ticks.
    pub worst_round_p50: Vec<u64>,
    /// Paced patterns: ticks inside each of the sender's `send` calls,
    /// all rounds merged (see `SenderReport::publish`).
    pub publish: Option<Histogram<u64>>,
    /// Each round's p50 of `publish`, in ticks.
    pub round_publish_p50: Vec<u64>,
    /// Each round's delivered messages per second (throughput).
    pub round_rate: Vec<f64>,
    /// Messages the sender sent in measured intervals.
    pub sent: u64,
    /// Measured messages lost, summed over receivers.
    pub lost: u64,
    /// Sender counters, summed.
    pub sender: Delta,
    /// Receiver counters, summed over receivers and rounds.
    pub receiver: Delta,
    /// Messages the receivers got, summed.
    pub received: u64,
    /// Measured messages (and pongs) whose bytes failed the payload check.
    pub checksum_errors: u64,
    /// Why it did not run, if it could not here (a size or pattern it
    /// does not do, a kernel without it): known before any block runs.
    pub skipped: Option<String>,
    /// Why a block of it failed, if one did (its later rounds are not
    /// run): the run fails once every row has run.
    pub failed: Option<String>,
    /// CPU time of the receiver processes from START to STOP, summed over
    /// receivers and rounds, in ns; `None` where any receiver was a thread.
    pub receiver_cpu_ns: Option<u64>,
    /// Clock ticks from START to STOP, summed the same way.
    pub receiver_span: u64,
    /// Ticks between paced messages (oneway, fanout; 0 otherwise): the
    /// run's, or more for a row that asks (`Mechanism::min_pace`).
    pub pace: u64,
}

/// Adds `b`'s counts to `a`'s; unknown syscalls stay unknown.
pub fn add(a: &mut Delta, b: &Delta) {
    a.syscalls = match (a.syscalls, b.syscalls) {
        (Some(x), Some(y)) => Some(x + y),
        _ => None,
    };
    a.voluntary += b.voluntary;
    a.involuntary += b.involuntary;
}

fn fresh_delta() -> Delta {
    Delta {
        syscalls: Some(0),
        voluntary: 0,
        involuntary: 0,
    }
}

impl Figures {
    /// Empty figures for `m` in `case`.
    pub fn new(case: &Case, m: &dyn Mechanism) -> Figures {
        Figures::named(case, m.name(), m.in_process())
    }

    /// Empty figures for a row that is not a [`Mechanism`] (the memcpy reference).
    pub fn named(case: &Case, mechanism: &'static str, in_process: bool) -> Figures {
        Figures {
            case: case.clone(),
            mechanism,
            in_process,
            latency: None,
            round_p50: Vec::new(),
            worst: None,
            worst_round_p50: Vec::new(),
            publish: None,
            round_publish_p50: Vec::new(),
            round_rate: Vec::new(),
            sent: 0,
            lost: 0,
            sender: fresh_delta(),
            receiver: fresh_delta(),
            received: 0,
            checksum_errors: 0,
            skipped: None,
            failed: None,
            receiver_cpu_ns: Some(0),
            receiver_span: 0,
            pace: 0,
        }
    }

    /// Adds one block's outcome.
    pub fn absorb(
        &mut self,
        block: Block,
        plan: &Plan,
        ticks_per_ns: f64,
    ) -> Result<(), BenchError> {
        let mut round: Option<Histogram<u64>> = block.sender.rtt;
        if let Some(p) = block.sender.publish.filter(|h| !h.is_empty()) {
            self.round_publish_p50.push(p.value_at_quantile(0.5));
            match self.publish.as_mut() {
                Some(acc) => acc.add(&p).map_err(BenchError::HistogramMerge)?,
                None => self.publish = Some(p),
            }
        }
        // Fanout: the receiver whose median this round is the highest.
        let mut worst: Option<Histogram<u64>> = None;
        for r in &block.receivers {
            if let Some(hex) = &r.latency {
                let h = pattern::deserialize(hex)?;
                if plan.pattern == Pattern::Fanout
                    && !h.is_empty()
                    && worst
                        .as_ref()
                        .is_none_or(|w| h.value_at_quantile(0.5) > w.value_at_quantile(0.5))
                {
                    worst = Some(h.clone());
                }
                match round.as_mut() {
                    Some(acc) => acc.add(&h).map_err(BenchError::HistogramMerge)?,
                    None => round = Some(h),
                }
            }
            self.lost += plan.count.saturating_sub(r.received);
            self.received += r.received;
            self.checksum_errors += r.checksum_errors;
            add(&mut self.receiver, &r.counters);
            self.receiver_cpu_ns = self.receiver_cpu_ns.zip(r.cpu_ns).map(|(a, b)| a + b);
            self.receiver_span += r.span;
            if plan.pattern == Pattern::Throughput && r.received > 1 && r.last > r.first {
                let secs = (r.last - r.first) as f64 / ticks_per_ns / 1e9;
                self.round_rate.push((r.received - 1) as f64 / secs);
            }
        }
        if let Some(w) = worst {
            self.worst_round_p50.push(w.value_at_quantile(0.5));
            match self.worst.as_mut() {
                Some(acc) => acc.add(&w).map_err(BenchError::HistogramMerge)?,
                None => self.worst = Some(w),
            }
        }
        if let Some(h) = round {
            if !h.is_empty() {
                self.round_p50.push(h.value_at_quantile(0.5));
            }
            match self.latency.as_mut() {
                Some(acc) => acc.add(&h).map_err(BenchError::HistogramMerge)?,
                None => self.latency = Some(h),
            }
        }
        self.sent += plan.count;
        self.pace = plan.pace;
        self.checksum_errors += block.sender.checksum_errors;
        add(&mut self.sender, &block.sender.counters);
        Ok(())
    }

    /// Messages that crossed a link: pingpong counts ping and pong.
    fn messages(&self) -> u64 {
        if self.case.pattern == Pattern::Pingpong {
            2 * self.sent
        } else {
            self.sent
        }
    }

    /// Latency quantile in nanoseconds.
    pub fn ns(&self, q: f64, ticks_per_ns: f64) -> Option<f64> {
        let h = self.latency.as_ref()?;
        (!h.is_empty()).then(|| h.value_at_quantile(q) as f64 / ticks_per_ns)
    }

    /// Fanout: the worst receiver's latency quantile in nanoseconds (its
    /// rounds merged).
    pub fn worst_ns(&self, q: f64, ticks_per_ns: f64) -> Option<f64> {
        let h = self.worst.as_ref()?;
        (!h.is_empty()).then(|| h.value_at_quantile(q) as f64 / ticks_per_ns)
    }

    /// Paced patterns: the quantile of the time inside one `send`, in
    /// nanoseconds (rounds merged).
    pub fn publish_ns(&self, q: f64, ticks_per_ns: f64) -> Option<f64> {
        let h = self.publish.as_ref()?;
        (!h.is_empty()).then(|| h.value_at_quantile(q) as f64 / ticks_per_ns)
    }

    /// Paced patterns: the mean time inside one `send`, in nanoseconds.
    pub fn publish_mean_ns(&self, ticks_per_ns: f64) -> Option<f64> {
        let h = self.publish.as_ref()?;
        (!h.is_empty()).then(|| h.mean() / ticks_per_ns)
    }

    /// Max latency in nanoseconds.
    pub fn max_ns(&self, ticks_per_ns: f64) -> Option<f64> {
        let h = self.latency.as_ref()?;
        (!h.is_empty()).then(|| h.max() as f64 / ticks_per_ns)
    }

    /// Median of the rounds' delivered rates.
    pub fn msgs_per_sec(&self) -> Option<f64> {
        median(&self.round_rate)
    }

    /// (system calls, voluntary, involuntary switches) per message of `d`.
    pub fn per_msg(&self, d: &Delta) -> (Option<f64>, f64, f64) {
        let n = self.messages().max(1) as f64;
        (
            d.syscalls.map(|s| s as f64 / n),
            d.voluntary as f64 / n,
            d.involuntary as f64 / n,
        )
    }

    /// The share of one core a receiver process used from START to STOP
    /// (every thread of it: 1.0 is a core busy all the time); `None` for
    /// in-process rows.
    pub fn receiver_cpu(&self, ticks_per_ns: f64) -> Option<f64> {
        let cpu = self.receiver_cpu_ns.filter(|_| !self.in_process)?;
        let span_ns = self.receiver_span as f64 / ticks_per_ns;
        (span_ns > 0.0).then(|| cpu as f64 / span_ns)
    }

    /// System calls per message, both sides together.
    pub fn syscalls_per_msg(&self) -> Option<f64> {
        let (a, _, _) = self.per_msg(&self.sender);
        let (b, _, _) = self.per_msg(&self.receiver);
        Some(a? + b?)
    }

    /// Whether every block of it ran: neither skipped nor failed.
    pub fn ran(&self) -> bool {
        self.skipped.is_none() && self.failed.is_none()
    }

    /// The row as the failure line names it: mechanism, pattern, size and
    /// receivers.
    pub fn row_name(&self) -> String {
        format!(
            "{} {} {} B x{}",
            self.mechanism,
            self.case.pattern.name(),
            self.case.msg_size,
            self.case.receivers
        )
    }

    /// What is wrong with this row, if anything: a block that failed, or
    /// payloads that failed their check.
    pub fn fault(&self) -> Option<String> {
        if let Some(why) = &self.failed {
            return Some(format!("{}: {why}", self.row_name()));
        }
        (self.checksum_errors > 0).then(|| {
            format!(
                "{}: {} message(s) failed the payload check (torn or corrupt)",
                self.row_name(),
                self.checksum_errors
            )
        })
    }

    /// Context switches (voluntary + involuntary) per message, both sides.
    pub fn ctx_per_msg(&self) -> f64 {
        let (_, v1, i1) = self.per_msg(&self.sender);
        let (_, v2, i2) = self.per_msg(&self.receiver);
        v1 + i1 + v2 + i2
    }
}

fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    Some(s[s.len() / 2])
}
