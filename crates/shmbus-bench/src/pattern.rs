//! What the sender and each receiver do, per pattern. The same loops run in
//! a child process and in a thread, over any [`Endpoint`].
//!
//! Every side that receives a message reads all of it, in place where the
//! mechanism hands out shared memory, and checks it (see `payload`) before
//! it reads the clock: a zero-copy mechanism does not get to skip the bytes
//! a real consumer reads. Mismatches are counted here; a row with any fails
//! the run once every row has run (`main`).

use std::io;

use hdrhistogram::Histogram;

use crate::case::Pattern;
use crate::clock::Source;
use crate::counters::{Counters, Delta};
use crate::error::BenchError;
use crate::mech::{Endpoint, Got, marker, unstamp};
use crate::payload::{self, Check};

/// The least time a sender warms up for.
const WARMUP_TIME: std::time::Duration = std::time::Duration::from_millis(30);

/// What both sides agree on before a block starts.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The pattern.
    pub pattern: Pattern,
    /// Bytes per message.
    pub msg_size: usize,
    /// Messages before the measured interval.
    pub warmup: u64,
    /// Messages in the measured interval.
    pub count: u64,
    /// Ticks between sends for paced patterns (oneway, fanout).
    pub pace: u64,
    /// The clock both sides read.
    pub clock: Source,
}

/// One block's raw outcome.
pub struct Block {
    /// The sender's side.
    pub sender: SenderReport,
    /// Each receiver's side.
    pub receivers: Vec<ReceiverReport>,
}

/// The sender's side of a block.
pub struct SenderReport {
    /// Round-trip times in ticks (pingpong only).
    pub rtt: Option<Histogram<u64>>,
    /// Ticks spent inside each measured `send` (paced patterns: oneway,
    /// fanout), between fenced clock reads, less their own cost: the
    /// publisher's cost per publish while every receiver keeps up (issue
    /// 30's first target).
    pub publish: Option<Histogram<u64>>,
    /// The sender thread's counters over the measured interval.
    pub counters: Delta,
    /// Pongs whose bytes did not fold to what their header implies.
    pub checksum_errors: u64,
}

/// A receiver's side of a block.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct ReceiverReport {
    /// Measured messages received.
    pub received: u64,
    /// One-way latencies in ticks, serialized (oneway, fanout).
    pub latency: Option<String>,
    /// Clock at the first and last measured message (throughput).
    pub first: u64,
    /// See `first`.
    pub last: u64,
    /// The receiver thread's counters from START to STOP.
    pub counters: Delta,
    /// Losses the mechanism itself reported (shmbus lag), all messages.
    pub reported_lost: u64,
    /// Messages whose bytes did not fold to what their header implies.
    pub checksum_errors: u64,
    /// CPU time of the receiver's whole process (every thread, user and
    /// system) from START to STOP, in ns; `None` for a receiver thread,
    /// whose process is the sender's too.
    #[serde(default)]
    pub cpu_ns: Option<u64>,
    /// Clock ticks from START to STOP: the interval `cpu_ns` is spent in.
    #[serde(default)]
    pub span: u64,
}

fn new_hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 1 << 40, 3).expect("valid bounds")
}

/// Runs the sender's side; the caller sends STOP afterwards.
pub fn send(ep: &mut dyn Endpoint, plan: &Plan) -> io::Result<SenderReport> {
    let clock = plan.clock;
    let mut buf = vec![0u8; plan.msg_size];
    payload::fill(&mut buf);
    let check = Check::new(plan.msg_size);
    let duplex = plan.pattern == Pattern::Pingpong;
    // Warm-up pongs are read and checked too, but not counted.
    let one = |ep: &mut dyn Endpoint, seq: u64, buf: &mut [u8]| -> io::Result<()> {
        let t = clock.now();
        payload::seal(buf, seq, t);
        ep.send(buf)?;
        if duplex {
            wait_echo(ep, seq, &check)?;
        } else if plan.pace > 0 {
            while clock.now().wrapping_sub(t) < plan.pace {
                std::hint::spin_loop();
            }
        }
        Ok(())
    };
    for seq in 0..plan.warmup {
        one(ep, seq, &mut buf)?;
    }
    // And for at least WARMUP_TIME: a short block otherwise starts timing
    // before both cores have left their idle states. The extra messages
    // cycle through the warm-up numbers, which receivers do not count (and
    // two in a row differ, which the floor's bare counter needs).
    let warm_from = std::time::Instant::now();
    let mut extra = 0;
    while plan.warmup > 1 && warm_from.elapsed() < WARMUP_TIME {
        one(ep, extra % plan.warmup, &mut buf)?;
        extra += 1;
    }
    payload::seal(&mut buf, marker::START, 0);
    ep.send(&buf)?;
    if duplex {
        wait_echo(ep, marker::START, &check)?;
    }
    let mut errors = 0u64;
    let mut counters = Counters::for_this_thread();
    let before = counters.snapshot();
    let mut rtt = duplex.then(new_hist);
    let mut publish = (!duplex && plan.pace > 0).then(new_hist);
    let overhead = clock.fenced_overhead(1000);
    let end = plan.warmup + plan.count;
    crate::fault::tear(&mut buf);
    for seq in plan.warmup..end {
        if let Some(h) = rtt.as_mut() {
            let t0 = clock.now();
            payload::seal(&mut buf, seq, t0);
            ep.send(&buf)?;
            errors += wait_echo(ep, seq, &check)?;
            h.saturating_record(clock.now().wrapping_sub(t0).max(1));
        } else if let Some(h) = publish.as_mut() {
            // The send alone is timed, between two fenced clock reads (a
            // bare one may run before the send's loads complete), less
            // what two such reads take with nothing between them; then the
            // pace is kept from the stamp as `one` keeps it.
            let t = clock.now();
            payload::seal(&mut buf, seq, t);
            let before = clock.now_fenced();
            ep.send(&buf)?;
            let took = clock.now_fenced().wrapping_sub(before);
            h.saturating_record(took.saturating_sub(overhead).max(1));
            while clock.now().wrapping_sub(t) < plan.pace {
                std::hint::spin_loop();
            }
        } else {
            one(ep, seq, &mut buf)?;
        }
    }
    let after = counters.snapshot();
    crate::fault::tear(&mut buf);
    Ok(SenderReport {
        rtt,
        publish,
        counters: before.since(&after),
        checksum_errors: errors,
    })
}

/// Waits for the pong of `seq`, reading all of it; 1 if it failed the check.
fn wait_echo(ep: &mut dyn Endpoint, seq: u64, check: &Check) -> io::Result<u64> {
    loop {
        match ep.recv()? {
            Got::Msg(m) => {
                let (got, ts) = unstamp(m);
                if got == seq {
                    return Ok(u64::from(!check.holds(m, got, ts)));
                }
                // A pong from before (cannot happen on a lossless link):
                // keep waiting for ours.
            }
            Got::Lost(_) => continue,
        }
    }
}

/// Runs one receiver's side until STOP.
pub fn receive(ep: &mut dyn Endpoint, plan: &Plan) -> io::Result<ReceiverReport> {
    let clock = plan.clock;
    let duplex = plan.pattern == Pattern::Pingpong;
    let timed = matches!(plan.pattern, Pattern::Oneway | Pattern::Fanout);
    let measured = plan.warmup..plan.warmup + plan.count;
    let mut hist = new_hist();
    let check = Check::new(plan.msg_size);
    let mut checksum_errors = 0u64;
    let mut echo = vec![0u8; plan.msg_size];
    let mut counters = Counters::for_this_thread();
    let mut before = None;
    // The process's CPU time and the clock at START (or at the first
    // measured message, if START was lost).
    let mut cpu_from: Option<(u64, u64)> = None;
    let (mut received, mut first, mut last, mut reported_lost) = (0u64, 0u64, 0u64, 0u64);
    if crate::fault::injected() == Some(crate::fault::Fault::ReceiverFails) {
        return Err(io::Error::other(format!(
            "failed as {}=receiver-fails asked",
            crate::fault::VAR
        )));
    }
    // The same at STOP.
    let stopped = loop {
        let msg = match ep.recv()? {
            Got::Msg(m) => m,
            Got::Lost(n) => {
                reported_lost += n;
                continue;
            }
        };
        let (seq, sent) = unstamp(msg);
        if seq == marker::STOP {
            break (crate::cpu::process_cpu_ns(), clock.now());
        }
        // Every byte is read before the clock is: the message has arrived
        // when its consumer has it all. Markers carry no pattern.
        let intact = seq == marker::START || check.holds(msg, seq, sent);
        let now = clock.now();
        if duplex {
            echo.copy_from_slice(msg);
            ep.send(&echo)?;
        }
        if seq == marker::START {
            before = Some(counters.snapshot());
            cpu_from = Some((crate::cpu::process_cpu_ns(), now));
            continue;
        }
        if measured.contains(&seq) {
            checksum_errors += u64::from(!intact);
            if before.is_none() {
                // START was lost (a lossy mechanism): count from here.
                before = Some(counters.snapshot());
                cpu_from = Some((crate::cpu::process_cpu_ns(), now));
            }
            if received == 0 {
                first = now;
            }
            received += 1;
            last = now;
            if timed {
                hist.saturating_record(now.wrapping_sub(sent).max(1));
            }
        }
    };
    let after = counters.snapshot();
    let counters = before.map(|b| b.since(&after)).unwrap_or_default();
    let latency = timed.then(|| serialize(&hist));
    let (cpu_ns, span) = match (cpu_from, stopped) {
        (Some((c0, t0)), (c1, t1)) => (Some(c1.saturating_sub(c0)), t1.wrapping_sub(t0)),
        (None, _) => (None, 0),
    };
    Ok(ReceiverReport {
        received,
        latency,
        first,
        last,
        counters,
        reported_lost,
        checksum_errors,
        cpu_ns,
        span,
    })
}

/// A histogram as hex text, to cross a pipe inside a JSON line.
pub fn serialize(h: &Histogram<u64>) -> String {
    use hdrhistogram::serialization::Serializer;
    let mut bytes = Vec::new();
    hdrhistogram::serialization::V2Serializer::new()
        .serialize(h, &mut bytes)
        .expect("in-memory write");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The inverse of [`serialize`].
pub fn deserialize(hex: &str) -> Result<Histogram<u64>, BenchError> {
    let bytes: Result<Vec<u8>, _> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2).unwrap_or("zz"), 16))
        .collect();
    let bytes = bytes.map_err(BenchError::HistogramHex)?;
    hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut &bytes[..])
        .map_err(BenchError::HistogramDecode)
}
