//! `shmbus-bench`: every way to move a message between processes, side by
//! side, in one run.
//!
//! Method: the parent is the sender, pinned to the first CPU of `--cpus`;
//! receivers are child processes re-executed from this binary as its hidden
//! `child` subcommand (or threads, for in-process mechanisms), pinned to the
//! others. For each case (pattern, message size, receivers) the mechanisms
//! run one block each per round, round after round, the order rotating, so
//! drift hits all alike. Every block warms up first; only the measured
//! interval is timed and counted.
//! Latencies go into HDR histograms in clock ticks (see `clock`) and are
//! converted to nanoseconds once, by the parent.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

mod clock;
mod counters;
mod mech;
mod mpmc;
mod pattern;
mod plot;
mod report;

use mech::{marker, stamp, ChannelSpec, Mechanism, Side};
use pattern::{Plan, ReceiverReport, SenderReport};

/// Measure shmbus against the kernel's IPC mechanisms and peer libraries.
#[derive(clap::Parser, Debug)]
#[command(name = "shmbus-bench", version, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(flatten)]
    args: BenchArgs,
    #[command(subcommand)]
    hidden: Option<Hidden>,
}

/// Subcommands the benchmark runs itself, never the user.
#[derive(clap::Subcommand, Debug)]
enum Hidden {
    /// One side of a benchmark (run by `shmbus-bench` itself).
    #[command(hide = true)]
    Child(ChildArgs),
}

fn main() -> ExitCode {
    use clap::Parser;
    let cli = Cli::parse();
    let result = match &cli.hidden {
        Some(Hidden::Child(args)) => run_child(args),
        None => run(&cli.args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            use std::io::Write;
            let _ = writeln!(std::io::stderr().lock(), "shmbus-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

/// What a block measures.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, clap::ValueEnum, serde::Serialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    /// Round trip: ping, then wait for the pong.
    Pingpong,
    /// One-way latency, paced so nothing queues.
    Oneway,
    /// Messages and bytes per second, as fast as the sender can go.
    Throughput,
    /// One sender, several receiver processes, one-way latency.
    Fanout,
}

impl Pattern {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Pingpong => "pingpong",
            Pattern::Oneway => "oneway",
            Pattern::Throughput => "throughput",
            Pattern::Fanout => "fanout",
        }
    }
}

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
    /// CPUs to pin to: the sender on the first, receivers on the others.
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub cpus: Option<Vec<usize>>,
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
    /// List the mechanisms and exit.
    #[arg(long)]
    pub list: bool,
    /// Only the many-publishers and subscriber-group table (it also runs,
    /// first, whenever shmbus is among the mechanisms).
    #[arg(long)]
    pub mpmc: bool,
}

/// Arguments of the hidden `shmbus-bench child`: one receiver.
#[derive(clap::Args, Debug, Clone)]
pub struct ChildArgs {
    #[arg(long)]
    mechanism: String,
    #[arg(long)]
    pattern: Pattern,
    #[arg(long)]
    msg_size: usize,
    #[arg(long)]
    receivers: usize,
    #[arg(long)]
    index: usize,
    #[arg(long)]
    token: String,
    #[arg(long)]
    prefix: String,
    #[arg(long)]
    cpu: Option<usize>,
    #[arg(long)]
    warmup: u64,
    #[arg(long)]
    count: u64,
    #[arg(long)]
    pace: u64,
    #[arg(long)]
    clock: String,
}

/// How long any block may take before its children are killed.
const BLOCK_LIMIT: Duration = Duration::from_secs(60);

fn find(name: &str) -> Result<&'static dyn Mechanism, String> {
    mech::all()
        .into_iter()
        .find(|m| m.name() == name)
        .ok_or_else(|| format!("unknown mechanism {name:?}; `shmbus-bench --list` names them"))
}

/// Pins the calling thread to `cpu`.
pub fn pin(cpu: usize) -> Result<(), String> {
    let mut set = rustix::thread::CpuSet::new();
    set.set(cpu);
    rustix::thread::sched_setaffinity(None, &set)
        .map_err(|e| format!("cannot pin to CPU {cpu}: {e}"))
}

/// The CPUs this process may run on.
pub fn allowed_cpus() -> Vec<usize> {
    match rustix::thread::sched_getaffinity(None) {
        Ok(set) => (0..rustix::thread::CpuSet::MAX_CPU)
            .filter(|&c| set.is_set(c))
            .collect(),
        Err(_) => vec![0],
    }
}

/// Runs one receiver in this process (a child of `shmbus-bench`).
pub fn run_child(args: &ChildArgs) -> Result<(), String> {
    use std::io::Write;
    if let Some(cpu) = args.cpu {
        pin(cpu)?;
    }
    mech::set_deadline(BLOCK_LIMIT);
    if args.mechanism == mpmc::CHILD {
        return mpmc::run_publisher_child(&args.token, args.count);
    }
    let m = find(&args.mechanism)?;
    let clock = clock::Source::parse(&args.clock).ok_or("bad clock")?;
    let spec = ChannelSpec {
        msg_size: args.msg_size,
        receivers: args.receivers,
        duplex: args.pattern == Pattern::Pingpong,
        prefix: args.prefix.clone(),
    };
    let plan = Plan {
        pattern: args.pattern,
        msg_size: args.msg_size,
        warmup: args.warmup,
        count: args.count,
        pace: args.pace,
        clock,
    };
    let mut ep = m
        .open(&args.token, Side::Receiver(args.index), &spec)
        .map_err(|e| format!("{}: open: {e}", m.name()))?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "READY")
        .and_then(|_| out.flush())
        .map_err(|e| e.to_string())?;
    let report =
        pattern::receive(ep.as_mut(), &plan).map_err(|e| format!("{}: receive: {e}", m.name()))?;
    drop(ep);
    let line = serde_json::to_string(&report).map_err(|e| e.to_string())?;
    writeln!(out, "REPORT {line}")
        .and_then(|_| out.flush())
        .map_err(|e| e.to_string())
}

/// One block's raw outcome.
pub struct Block {
    /// The sender's side.
    pub sender: SenderReport,
    /// Each receiver's side.
    pub receivers: Vec<ReceiverReport>,
}

/// Everything a block needs to know.
#[derive(Clone, Debug)]
pub struct Case {
    /// The pattern.
    pub pattern: Pattern,
    /// Message size.
    pub msg_size: usize,
    /// Number of receivers.
    pub receivers: usize,
    /// If set, only these mechanisms run this case.
    pub only: Option<&'static [&'static str]>,
}

/// Runs blocks: pins, spawns, collects.
pub struct Runner {
    cpus: Vec<usize>,
    blocks: u64,
}

impl Runner {
    fn receiver_cpu(&self, i: usize) -> Option<usize> {
        match self.cpus.len() {
            0 => None,
            1 => Some(self.cpus[0]),
            n => Some(self.cpus[1 + i % (n - 1)]),
        }
    }

    fn run_block(&mut self, m: &dyn Mechanism, case: &Case, plan: &Plan) -> Result<Block, String> {
        self.blocks += 1;
        mech::set_deadline(BLOCK_LIMIT);
        let spec = ChannelSpec {
            msg_size: case.msg_size,
            receivers: case.receivers,
            duplex: case.pattern == Pattern::Pingpong,
            prefix: format!("shmbus-bench-{}-{}", std::process::id(), self.blocks),
        };
        if m.in_process() {
            self.run_threads(m, &spec, plan)
        } else {
            self.run_processes(m, &spec, plan)
        }
    }

    fn run_threads(
        &self,
        m: &dyn Mechanism,
        spec: &ChannelSpec,
        plan: &Plan,
    ) -> Result<Block, String> {
        let (mut tx, rxs) = m.pair(spec).map_err(|e| format!("{}: {e}", m.name()))?;
        let ready = std::sync::Arc::new(std::sync::Barrier::new(rxs.len() + 1));
        let handles: Vec<_> = rxs
            .into_iter()
            .enumerate()
            .map(|(i, mut rx)| {
                let (plan, ready, cpu) = (plan.clone(), ready.clone(), self.receiver_cpu(i));
                std::thread::spawn(move || {
                    if let Some(cpu) = cpu {
                        let _ = pin(cpu);
                    }
                    ready.wait();
                    pattern::receive(rx.as_mut(), &plan).map_err(|e| e.to_string())
                })
            })
            .collect();
        ready.wait();
        let sender =
            pattern::send(tx.as_mut(), plan).map_err(|e| format!("{}: send: {e}", m.name()))?;
        let mut stop = vec![0u8; spec.msg_size];
        stamp(&mut stop, marker::STOP, 0);
        tx.send(&stop)
            .map_err(|e| format!("{}: stop: {e}", m.name()))?;
        let mut receivers = Vec::new();
        for h in handles {
            receivers.push(
                h.join()
                    .map_err(|_| format!("{}: receiver thread panicked", m.name()))??,
            );
        }
        Ok(Block { sender, receivers })
    }

    fn run_processes(
        &self,
        m: &dyn Mechanism,
        spec: &ChannelSpec,
        plan: &Plan,
    ) -> Result<Block, String> {
        let name = m.name();
        let resources = m.setup(spec).map_err(|e| format!("{name}: setup: {e}"))?;
        let token = resources.token();
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let mut children = Vec::new();
        let (lines_tx, lines) = mpsc::channel::<(usize, String)>();
        for i in 0..spec.receivers {
            let mut cmd = Command::new(&exe);
            cmd.arg("child")
                .args(["--mechanism", name, "--pattern", plan.pattern.name()])
                .args([
                    "--msg-size",
                    &spec.msg_size.to_string(),
                    "--receivers",
                    &spec.receivers.to_string(),
                ])
                .args([
                    "--index",
                    &i.to_string(),
                    "--token",
                    &token,
                    "--prefix",
                    &spec.prefix,
                ])
                .args([
                    "--warmup",
                    &plan.warmup.to_string(),
                    "--count",
                    &plan.count.to_string(),
                ])
                .args([
                    "--pace",
                    &plan.pace.to_string(),
                    "--clock",
                    plan.clock.name(),
                ])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            if let Some(cpu) = self.receiver_cpu(i) {
                cmd.args(["--cpu", &cpu.to_string()]);
            }
            let mut child = cmd.spawn().map_err(|e| format!("{name}: spawn: {e}"))?;
            let out = child.stdout.take().expect("piped");
            let tx = lines_tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines().map_while(Result::ok) {
                    if tx.send((i, line)).is_err() {
                        break;
                    }
                }
            });
            children.push(Watched(child));
        }
        drop(lines_tx);
        let deadline = Instant::now() + BLOCK_LIMIT;
        let result = (|| {
            let mut ep = m
                .open(&token, Side::Sender, spec)
                .map_err(|e| format!("{name}: open: {e}"))?;
            let mut reports: Vec<Option<ReceiverReport>> =
                (0..spec.receivers).map(|_| None).collect();
            let mut ready = 0;
            while ready < spec.receivers {
                let (_, line) = next_line(&lines, deadline, &mut children, name)?;
                if line == "READY" {
                    ready += 1;
                }
            }
            let sender =
                pattern::send(ep.as_mut(), plan).map_err(|e| format!("{name}: send: {e}"))?;
            // STOP, again every 50 ms until every child reported: a lossy
            // mechanism may drop it.
            let mut stop = vec![0u8; spec.msg_size];
            stamp(&mut stop, marker::STOP, 0);
            let mut reported = 0;
            while reported < spec.receivers {
                let _ = ep.send(&stop);
                let until = (Instant::now() + Duration::from_millis(50)).min(deadline);
                while reported < spec.receivers {
                    match lines.recv_timeout(until.saturating_duration_since(Instant::now())) {
                        Ok((i, line)) => {
                            if let Some(json) = line.strip_prefix("REPORT ") {
                                reports[i] = Some(
                                    serde_json::from_str(json)
                                        .map_err(|e| format!("{name}: report: {e}"))?,
                                );
                                reported += 1;
                            }
                        }
                        Err(_) if Instant::now() < deadline => break,
                        Err(_) => return Err(child_failure(name, &mut children)),
                    }
                }
            }
            drop(ep);
            Ok(Block {
                sender,
                receivers: reports
                    .into_iter()
                    .map(|r| r.expect("all reported"))
                    .collect(),
            })
        })();
        for c in &mut children {
            c.finish(Duration::from_secs(5));
        }
        drop(resources);
        result
    }
}

/// A child process that is killed if it is still running when dropped.
struct Watched(Child);

impl Watched {
    fn finish(&mut self, grace: Duration) {
        let until = Instant::now() + grace;
        while Instant::now() < until {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

fn next_line(
    lines: &mpsc::Receiver<(usize, String)>,
    deadline: Instant,
    children: &mut [Watched],
    name: &str,
) -> Result<(usize, String), String> {
    lines
        .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        .map_err(|_| child_failure(name, children))
}

/// Kills the children and says what the first one that failed printed.
fn child_failure(name: &str, children: &mut [Watched]) -> String {
    use std::io::Read;
    let mut why = String::from("timed out");
    for c in children.iter_mut() {
        let _ = c.0.kill();
        let _ = c.0.wait();
        let mut err = String::new();
        if let Some(mut pipe) = c.0.stderr.take() {
            let _ = pipe.read_to_string(&mut err);
        }
        if let Some(line) = err.lines().rev().find(|l| !l.trim().is_empty()) {
            why = line.trim().to_owned();
            break;
        }
    }
    format!("{name}: receiver failed: {why}")
}

/// Runs the benchmark; the error is one line for the user.
pub fn run(args: &BenchArgs) -> Result<(), String> {
    if args.list {
        for m in mech::all() {
            let place = if m.in_process() {
                "in-process"
            } else {
                "cross-process"
            };
            println!("{:16} {place:13} {}", m.name(), m.describe());
        }
        return Ok(());
    }
    if args.msg_size < 16 {
        return Err(format!(
            "--msg-size {} is too small: messages carry a 16-byte header",
            args.msg_size
        ));
    }
    let mechanisms: Vec<&'static dyn Mechanism> = match &args.mechanisms {
        Some(names) => names.iter().map(|n| find(n)).collect::<Result<_, _>>()?,
        None => mech::all(),
    };
    let cpus = match &args.cpus {
        Some(c) if c.is_empty() => return Err("--cpus needs at least one CPU".into()),
        Some(c) => c.clone(),
        None => allowed_cpus().into_iter().take(2).collect(),
    };
    let mpmc_rows = if args.mpmc || mechanisms.iter().any(|m| m.name() == "shmbus") {
        // Before pinning: the two publisher processes (and threads) must be
        // free to run on two CPUs.
        let rows = mpmc::run(args.quick)?;
        mpmc::print(&rows);
        rows
    } else {
        Vec::new()
    };
    if args.mpmc && args.json.is_none() && args.plot.is_none() {
        return Ok(());
    }
    counters::ensure_tracefs();
    let clock = clock::Source::detect();
    let ticks_per_ns = clock.calibrate(Duration::from_millis(200));
    pin(cpus[0])?;
    let mut runner = Runner {
        cpus: cpus.clone(),
        blocks: 0,
    };
    let settings = report::Settings::new(args, &cpus, clock, ticks_per_ns);
    let results = if args.mpmc {
        Vec::new()
    } else {
        report::run_all(&mut runner, &mechanisms, &settings)?
    };
    report::emit(&results, &mpmc_rows, &settings, args)
}
