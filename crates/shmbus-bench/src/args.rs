//! The command line: what the user asks of a run, and what the parent tells
//! each receiver process it spawns (the hidden `child` subcommand).

use crate::case::Pattern;

/// Arguments of `shmbus-bench`.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchArgs {
    /// A short run: under 60 s on a 2-core machine.
    #[arg(long)]
    pub quick: bool,
    /// Write every result as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<std::path::PathBuf>,
    /// Write an SVG plot (latency percentiles, throughput by size) to FILE.
    #[arg(long, value_name = "FILE")]
    pub plot: Option<std::path::PathBuf>,
    /// CPUs to pin to: the sender on the first, receivers on the others
    /// (default: every CPU this process may run on).
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub cpus: Option<Vec<usize>>,
    /// Receiver counts of the fanout cases (default: 1,2 with --quick,
    /// 1,2,4 without, and each of 4, 8 and 14 that has a CPU of --cpus per
    /// receiver beside the sender's: the widest only with --quick).
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub fanout: Option<Vec<usize>>,
    /// Only these mechanisms (comma-separated names).
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub mechanisms: Option<Vec<String>>,
    /// Only these patterns.
    #[arg(long, value_delimiter = ',', value_name = "PATTERNS")]
    pub patterns: Option<Vec<Pattern>>,
    /// Message size for pingpong, oneway and fanout.
    #[arg(long, default_value_t = 64, value_name = "BYTES")]
    pub msg_size: usize,
    /// Rounds per case (default: 3 quick, 4 full).
    #[arg(long)]
    pub rounds: Option<u32>,
    /// Measured round trips per pingpong block (default: 5000 quick, 20000 full).
    #[arg(long)]
    pub count: Option<u64>,
    /// The zero-copy table: pingpong, oneway and throughput at 64 B,
    /// 64 KiB, 1 MiB and 4 MiB (64 B and 1 MiB with --quick), for shmbus,
    /// shmbus-zc, iceoryx2 and crossbar-pool unless --mechanisms names
    /// others.
    #[arg(long, conflicts_with = "mpmc")]
    pub large: bool,
    /// Only these message sizes in the `--large` table (bytes,
    /// comma-separated; default: its sizes above).
    #[arg(long, value_delimiter = ',', value_name = "BYTES", requires = "large")]
    pub sizes: Option<Vec<usize>>,
    /// List the mechanisms and exit.
    #[arg(long)]
    pub list: bool,
    /// Only the many-publishers and subscriber-group table (it also runs,
    /// first, whenever shmbus is among the mechanisms).
    #[arg(long)]
    pub mpmc: bool,
    /// Only the blackboard rows: write, read and cross-core
    /// visibility of a 64 B value in shmbus's blackboard, ringfire's and
    /// iceoryx2's (they also run whenever shmbus is among the mechanisms).
    #[arg(long, conflicts_with_all = ["mpmc", "large"])]
    pub blackboard: bool,
    /// Only the request-response rows: call round trip (p50, p99),
    /// calls per second, the least-served client's share and system
    /// calls per call at 64 B, 4 KiB and 1 MiB with 1 and 4 clients, for
    /// shmbus's request-response service beside iceoryx2's, a Unix
    /// socket, the bus's two-bus ping-pong and the cache-line floor (they
    /// also run whenever shmbus is among the mechanisms).
    #[arg(long, conflicts_with_all = ["mpmc", "large", "blackboard", "record"])]
    pub reqrep: bool,
    /// Only the recording and replay table: capture rate at
    /// 4 KiB and 64 B, the publish cost with a recorder attached, and
    /// `shmbus replay`'s pace error and top speed (`$SHMBUS_BIN`, else
    /// the `shmbus` beside this binary).
    #[arg(long, conflicts_with_all = ["mpmc", "large"])]
    pub record: bool,
}

/// Arguments of the hidden `shmbus-bench child`: one receiver.
#[derive(clap::Args, Debug, Clone)]
pub struct ChildArgs {
    #[arg(long)]
    pub mechanism: String,
    #[arg(long)]
    pub pattern: Pattern,
    #[arg(long)]
    pub msg_size: usize,
    #[arg(long)]
    pub receivers: usize,
    #[arg(long)]
    pub index: usize,
    #[arg(long)]
    pub token: String,
    #[arg(long)]
    pub prefix: String,
    #[arg(long)]
    pub cpu: Option<usize>,
    #[arg(long)]
    pub warmup: u64,
    #[arg(long)]
    pub count: u64,
    #[arg(long)]
    pub pace: u64,
    #[arg(long)]
    pub clock: String,
}
