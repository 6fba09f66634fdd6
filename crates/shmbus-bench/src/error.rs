//! The one error type of the benchmark. `main` prints it as one line,
//! `shmbus-bench: ...`, and exits 2 for bad arguments, 1 for anything that
//! failed while running (see [`BenchError::exit_code`]).
//!
//! A block that fails does not stop the run: `rounds` marks its row failed
//! and goes on with the next, so every table is printed (and the JSON
//! written); then the run fails with [`BenchError::RowsFailed`], naming
//! each failed row and each whose payloads did not pass their check.

use std::io;
use std::path::PathBuf;

/// Why the benchmark, or one of its blocks, stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    /// `--mechanisms` (or a child's `--mechanism`) named none we have.
    #[error("unknown mechanism {found:?}: expected one of {expected}")]
    UnknownMechanism {
        /// The name given.
        found: String,
        /// Every mechanism's name, comma-separated.
        expected: String,
    },
    /// `--msg-size` or a size of `--sizes` leaves no room for the sequence
    /// and timestamp.
    #[error(
        "message size {found} (--msg-size, --sizes) is too small: expected at least {expected}, the header \
         (sequence and timestamp) every message carries"
    )]
    MsgSizeTooSmall {
        /// The size given.
        found: usize,
        /// The header's size, the least a message can be.
        expected: usize,
    },
    /// `--fanout` named no receiver count, or a count of 0.
    #[error("--fanout {found}: expected receiver counts of at least 1, e.g. --fanout 1,2,4,8,14")]
    BadFanout {
        /// The list as given.
        found: String,
    },
    /// `--cpus` was given with no CPU in it.
    #[error("--cpus is empty: expected at least one CPU (the sender's)")]
    NoCpus,
    /// The kernel refused to pin a thread.
    #[error("cannot pin to CPU {cpu}: {source}")]
    Pin {
        /// The CPU asked for.
        cpu: usize,
        /// What sched_setaffinity said.
        source: rustix::io::Errno,
    },
    /// A child's `--clock` is not a clock `clock::Source` knows.
    #[error("unknown clock {found:?}: expected \"tsc\" or \"monotonic\"")]
    UnknownClock {
        /// The name given.
        found: String,
    },
    /// One step of a mechanism failed (`stage`: setup, open, send, ...).
    #[error("{mechanism}: {stage}: {source}")]
    Mechanism {
        /// The mechanism's name.
        mechanism: &'static str,
        /// What it was doing.
        stage: &'static str,
        /// Why it failed.
        source: io::Error,
    },
    /// A receiver process failed or did not report before the deadline.
    #[error("{mechanism}: receiver failed: {why}")]
    ReceiverFailed {
        /// The mechanism's name.
        mechanism: &'static str,
        /// The last line the receiver wrote to stderr, or "timed out".
        why: String,
    },
    /// A receiver thread panicked.
    #[error("{mechanism}: a receiver thread panicked instead of reporting")]
    ReceiverPanicked {
        /// The mechanism's name.
        mechanism: &'static str,
    },
    /// A receiver's `REPORT` line did not parse.
    #[error("{mechanism}: a receiver's REPORT line is not a receiver report in JSON: {source}")]
    BadReport {
        /// The mechanism's name.
        mechanism: &'static str,
        /// What the JSON parser said.
        source: serde_json::Error,
    },
    /// A receiver's latency histogram is not hexadecimal text.
    #[error("a receiver's latency histogram is not hexadecimal: {0}")]
    HistogramHex(#[source] std::num::ParseIntError),
    /// A receiver's latency histogram is hex but not an HdrHistogram.
    #[error("a receiver's latency histogram is not a V2-serialized HdrHistogram: {0}")]
    HistogramDecode(#[source] hdrhistogram::serialization::DeserializeError),
    /// Two latency histograms could not be merged.
    #[error("cannot merge latency histograms: {0}")]
    HistogramMerge(#[source] hdrhistogram::errors::AdditionError),
    /// This executable's path, needed to re-run it as a child, is unknown.
    #[error("cannot find this executable to start its child processes: {0}")]
    CurrentExe(#[source] io::Error),
    /// A child process could not be started.
    #[error("cannot start {what}: {source}")]
    Spawn {
        /// Which child.
        what: String,
        /// What the kernel said.
        source: io::Error,
    },
    /// A child could not write to the parent (its stdout).
    #[error("cannot write to the parent on standard output: {0}")]
    Stdout(#[source] io::Error),
    /// A document could not be encoded as JSON.
    #[error("cannot encode {what} as JSON: {source}")]
    Encode {
        /// What was being encoded.
        what: &'static str,
        /// What serde_json said.
        source: serde_json::Error,
    },
    /// An output file (`--json`) could not be written.
    #[error("cannot write {}: {source}", path.display())]
    WriteFile {
        /// The file.
        path: PathBuf,
        /// What the kernel said.
        source: io::Error,
    },
    /// The plot could not be drawn or written.
    #[error("cannot draw the plot into {}: {why}", path.display())]
    Plot {
        /// The SVG file.
        path: PathBuf,
        /// What plotters said.
        why: String,
    },
    /// A bus of the many-publishers table could not be created.
    #[error("cannot create bus {name}: {source}")]
    CreateBus {
        /// The bus.
        name: String,
        /// What shmbus said.
        source: shmbus::CreateError,
    },
    /// A subscriber of the many-publishers table could not open its bus.
    #[error("cannot open bus {name}: {source}")]
    OpenBus {
        /// The bus.
        name: String,
        /// What shmbus said.
        source: shmbus::OpenError,
    },
    /// A publisher process could not attach to its bus.
    #[error("cannot attach a publisher to bus {name}: {source}")]
    AttachBus {
        /// The bus.
        name: String,
        /// What shmbus said.
        source: shmbus::AttachError,
    },
    /// A publisher process of the many-publishers table could not be read
    /// from (parent) or could not read its GO (child).
    #[error("publisher process: {doing}: {source}")]
    PublisherPipe {
        /// What was being read.
        doing: &'static str,
        /// What the kernel said.
        source: io::Error,
    },
    /// A publisher process of the many-publishers table said something else
    /// than its protocol's next line.
    #[error("a publisher process said {found}, expected {expected}")]
    PublisherSaid {
        /// What it said (quoted), and how it exited if it did.
        found: String,
        /// The line the protocol expects at this point.
        expected: &'static str,
    },
    /// A row of the many-publishers table measured something else than
    /// it names (a claim abandoned, a publisher thread that panicked).
    #[error("the many-publishers table: {found}, expected {expected}")]
    Mpmc {
        /// What happened.
        found: String,
        /// What the row needs.
        expected: &'static str,
    },
    /// The stalled-subscriber row could not run, or its
    /// subscriber was never evicted.
    #[error("the stalled lossless subscriber row: {found}, expected {expected}")]
    Stall {
        /// What happened.
        found: String,
        /// What the row needs at this point.
        expected: &'static str,
    },
    /// The blackboard rows could not run.
    #[error("the blackboard rows: {what}: {why}")]
    Blackboard {
        /// Which implementation and step.
        what: &'static str,
        /// Why.
        why: String,
    },
    /// `SHMBUS_BENCH_FAULT` names no fault the benchmark injects.
    #[error("SHMBUS_BENCH_FAULT={found:?}: expected torn-payload or receiver-fails, or unset")]
    BadFault {
        /// The value found.
        found: String,
    },
    /// Rows failed (a block's error, a receiver that crashed) or delivered
    /// payloads that failed their check; the tables were printed first.
    #[error(
        "{count} row(s) failed, expected every row that runs to run with every payload intact: {rows}"
    )]
    RowsFailed {
        /// How many.
        count: usize,
        /// Each row and why, `; `-separated.
        rows: String,
    },
}

impl BenchError {
    /// 2 for bad arguments (as clap exits for its own), 1 for the rest.
    pub fn exit_code(&self) -> u8 {
        match self {
            BenchError::UnknownMechanism { .. }
            | BenchError::MsgSizeTooSmall { .. }
            | BenchError::BadFanout { .. }
            | BenchError::NoCpus
            | BenchError::BadFault { .. } => 2,
            _ => 1,
        }
    }
}
