//! The request-response rows: clients call one server in another process,
//! each call one request and its response of the same size, both sides
//! spinning.
//!
//! Rows, at 64 B, 4 KiB and 1 MiB, with 1 client and with 4:
//! - `shmbus-reqrep`: shmbus's request-response service (`reqrep`), both
//!   sides `WaitStrategy::BusySpin`; the client writes its request in place
//!   (`send_with`) and reads the response in place (`wait_with`), the
//!   server reads the request in place (`bytes`) and writes the response
//!   in place (`respond_with`). One call slot per client: a client that
//!   waits for each answer uses its first slot only, whatever the count.
//! - `iceoryx2-reqrep`: iceoryx2's request-response (`ipc` service, `[u8]`
//!   slices loaned from static segments, written and read in place; both
//!   sides busy-poll `receive`).
//! - `uds-reqrep`: a Unix stream socket per client, blocking `read`/`write`
//!   with the kernel's default buffers (the server `poll`s its sockets when
//!   it has more than one).
//! - `shmbus-2bus` (1 client): the bus's own ping-pong, two buses, one each
//!   way, subscribers busy-polling `try_recv` (the bench's `shmbus` ping-pong
//!   row, sized by the same rule).
//! - `floor` (64 B, 1 client): two bare `u64`s on cache lines of their
//!   own, no payload: the least a round trip between the two cores costs.
//!
//! Every side moves each message's bytes once (into the slot, the ring or
//! the socket: a copy of a pattern written once) and the side that gets it
//! reads every byte (`payload::Check`: the server each request, the client
//! each response, whose sequence must be its call's). A torn or wrong
//! message, or a side that fails, fails the row: its figures are not
//! reported, and the run exits 1.
//!
//! Method: the server is a child process (this binary's `child` subcommand)
//! pinned to the second CPU of `--cpus`; the clients are threads of this
//! process pinned to the others (with two CPUs, all on the first: 4 clients
//! then share one core, as 4 spinning processes would). A block warms up,
//! then every client calls in a loop for the measured interval, timing each
//! call (a histogram per row and round, in clock ticks), then sends a stop
//! request. Calls per second are every client's calls in the interval over
//! its length; the least-served share is the fewest calls any client made
//! over the mean. System calls are counted per thread (`counters`): each
//! client's over the interval, the server's over all it served. Rounds:
//! each runs every row of every case once, the order rotating, so that a
//! ratio taken within a round compares figures measured seconds apart
//! (this VM changes speed by itself); each figure is the median of its
//! rounds, each target the median of the rounds' ratios.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, mpsc};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde_json::{Value, json};

use crate::clock;
use crate::counters::{Counters, Delta};
use crate::error::BenchError;
use crate::mech::{self, marker};
use crate::payload::{self, Check};
use crate::runner::BLOCK_LIMIT;

/// The child's `--mechanism`: the server of one block.
pub const CHILD: &str = "reqrep-server";

/// Request and response sizes.
pub const SIZES: [usize; 3] = [64, 4096, 1 << 20];
/// Client counts.
pub const CLIENTS: [usize; 2] = [1, 4];

/// One implementation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Impl {
    /// shmbus's request-response service.
    Shmbus,
    /// Two shmbus buses, one each way.
    TwoBus,
    /// iceoryx2's request-response.
    Iceoryx2,
    /// A Unix stream socket per client.
    Uds,
    /// Two bare cache lines.
    Floor,
}

/// Every implementation, in table order.
pub const IMPLS: [Impl; 5] = [
    Impl::Shmbus,
    Impl::TwoBus,
    Impl::Iceoryx2,
    Impl::Uds,
    Impl::Floor,
];

impl Impl {
    /// Its row's name.
    pub fn name(self) -> &'static str {
        match self {
            Impl::Shmbus => "shmbus-reqrep",
            Impl::TwoBus => "shmbus-2bus",
            Impl::Iceoryx2 => "iceoryx2-reqrep",
            Impl::Uds => "uds-reqrep",
            Impl::Floor => "floor",
        }
    }

    fn parse(name: &str) -> Option<Impl> {
        IMPLS.into_iter().find(|i| i.name() == name)
    }

    /// Whether it runs this case: the bus's ping-pong and the floor are
    /// one pair of ends, and the floor carries no payload.
    pub fn runs(self, size: usize, clients: usize) -> bool {
        match self {
            Impl::TwoBus => clients == 1,
            Impl::Floor => clients == 1 && size == SIZES[0],
            _ => true,
        }
    }
}

/// One round of one row.
#[derive(Clone, Debug)]
pub struct Round {
    /// Call round trip, ns.
    pub p50_ns: f64,
    /// Call round trip, ns.
    pub p99_ns: f64,
    /// Call round trip, ns.
    pub p999_ns: f64,
    /// Call round trip, ns.
    pub max_ns: f64,
    /// Calls by every client in the measured interval.
    pub calls: u64,
    /// Calls per second, every client together.
    pub calls_per_sec: f64,
    /// The fewest calls of any client over the mean.
    pub least_share: f64,
    /// The clients' system calls per call (`None`: not countable here).
    pub client_syscalls_per_call: Option<f64>,
    /// The server's system calls per call served.
    pub server_syscalls_per_call: Option<f64>,
    /// The clients' context switches per call (voluntary + involuntary).
    pub client_ctx_per_call: f64,
}

impl Round {
    /// Both sides' system calls per call.
    pub fn syscalls_per_call(&self) -> Option<f64> {
        Some(self.client_syscalls_per_call? + self.server_syscalls_per_call?)
    }
}

/// One row: an implementation at one size and client count.
#[derive(Clone, Debug)]
pub struct Row {
    /// Which.
    pub imp: Impl,
    /// Request and response bytes.
    pub size: usize,
    /// Client count.
    pub clients: usize,
    /// Its rounds, in order (fewer once it failed).
    pub rounds: Vec<Round>,
    /// Why it failed, if it did: its figures are not figures.
    pub failed: Option<String>,
}

/// The median of `v` (`None` if empty).
pub fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    Some(v[v.len() / 2])
}

impl Row {
    /// The median over its rounds of `f`, `None` for a failed row.
    pub fn median(&self, f: impl Fn(&Round) -> Option<f64>) -> Option<f64> {
        if self.failed.is_some() {
            return None;
        }
        median(self.rounds.iter().filter_map(f).collect())
    }
}

/// Every row and how they were measured.
pub struct Report {
    /// Rows, case by case.
    pub rows: Vec<Row>,
    /// Rounds run.
    pub rounds: usize,
    /// Warm-up of each block.
    pub warmup: Duration,
    /// Measured interval of each block.
    pub measure: Duration,
    /// The server's CPU.
    pub server_cpu: usize,
    /// The clients' CPUs (client `i` on `client_cpus[i % len]`).
    pub client_cpus: Vec<usize>,
    /// A `--quick` run.
    pub quick: bool,
    /// The counter the clients time calls with.
    pub clock: clock::Source,
    /// Whether system calls could be counted.
    pub syscalls_counted: bool,
}

impl Report {
    /// The row of `imp` at `size` with `clients`.
    pub fn row(&self, imp: Impl, size: usize, clients: usize) -> Option<&Row> {
        self.rows
            .iter()
            .find(|r| r.imp == imp && r.size == size && r.clients == clients)
    }

    /// The median over the rounds both rows ran of `f(a's round, b's)`;
    /// `None` if either row failed or is missing.
    pub fn round_ratio(
        &self,
        a: Option<&Row>,
        b: Option<&Row>,
        f: impl Fn(&Round, &Round) -> Option<f64>,
    ) -> Option<f64> {
        let (a, b) = (a?, b?);
        if a.failed.is_some() || b.failed.is_some() {
            return None;
        }
        median(
            a.rounds
                .iter()
                .zip(&b.rounds)
                .filter_map(|(x, y)| f(x, y))
                .collect(),
        )
    }

    /// The failed rows, one line each.
    pub fn faults(&self) -> Vec<String> {
        self.rows
            .iter()
            .filter_map(|r| {
                let why = r.failed.as_ref()?;
                Some(format!(
                    "{} {} B x{}: {why}",
                    r.imp.name(),
                    r.size,
                    r.clients
                ))
            })
            .collect()
    }
}

/// Runs every row; `rounds`, or 3 (`quick`) or 7. A row that fails is
/// marked so and runs no more rounds; the caller fails the run.
pub fn run(quick: bool, rounds: Option<u32>, cpus: &[usize]) -> Result<Report, BenchError> {
    let rounds = rounds.map_or(if quick { 3 } else { 7 }, |r| r.max(1) as usize);
    let (warmup, measure) = if quick {
        (Duration::from_millis(20), Duration::from_millis(60))
    } else {
        (Duration::from_millis(100), Duration::from_millis(400))
    };
    let server_cpu = cpus[cpus.len().min(2) - 1];
    let mut client_cpus: Vec<usize> = cpus.iter().copied().filter(|&c| c != server_cpu).collect();
    if client_cpus.is_empty() {
        client_cpus.push(server_cpu);
    }
    let clock = clock::Source::detect();
    let ticks_per_ns = clock.calibrate(Duration::from_millis(100));
    let mut rows = Vec::new();
    for &size in &SIZES {
        for &clients in &CLIENTS {
            for imp in IMPLS.into_iter().filter(|i| i.runs(size, clients)) {
                rows.push(Row {
                    imp,
                    size,
                    clients,
                    rounds: Vec::new(),
                    failed: None,
                });
            }
        }
    }
    let place = Place {
        server_cpu,
        client_cpus: client_cpus.clone(),
        clock,
        ticks_per_ns,
        warmup,
        measure,
    };
    let total = (rounds * rows.len()) as u64;
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(total),
        indicatif::ProgressDrawTarget::stderr(),
    );
    let mut blocks = 0u64;
    for round in 0..rounds {
        // Case by case; within a case the rows' order rotates each round.
        let mut start = 0;
        while start < rows.len() {
            let (size, clients) = (rows[start].size, rows[start].clients);
            let end = start
                + rows[start..]
                    .iter()
                    .take_while(|r| r.size == size && r.clients == clients)
                    .count();
            let n = end - start;
            for k in 0..n {
                let row = &mut rows[start + (k + round) % n];
                bar.inc(1);
                if row.failed.is_some() {
                    continue;
                }
                bar.set_message(format!(
                    "request-response {} {size} B x{clients} round {}",
                    row.imp.name(),
                    round + 1
                ));
                blocks += 1;
                match block(row.imp, size, clients, &place, blocks) {
                    Ok(r) => row.rounds.push(r),
                    Err(e) => {
                        bar.suspend(|| eprintln!("shmbus-bench: request-response {e}"));
                        row.failed = Some(e);
                    }
                }
            }
            start = end;
        }
    }
    bar.finish_and_clear();
    Ok(Report {
        rows,
        rounds,
        warmup,
        measure,
        server_cpu,
        client_cpus,
        quick,
        clock,
        syscalls_counted: Counters::for_this_thread().counts_syscalls(),
    })
}

/// Where and how long a block runs.
struct Place {
    server_cpu: usize,
    client_cpus: Vec<usize>,
    clock: clock::Source,
    ticks_per_ns: f64,
    warmup: Duration,
    measure: Duration,
}

/// The block's phase, read by every client between calls.
const WARMUP: u8 = 0;
const MEASURE: u8 = 1;
const STOP: u8 = 2;

/// What one client thread measured.
struct ClientOut {
    hist: Histogram<u64>,
    calls: u64,
    counted: Delta,
}

/// The server's last line.
#[derive(serde::Serialize, serde::Deserialize)]
struct ServerReport {
    /// Calls it answered, stop requests aside.
    served: u64,
    /// Requests that failed their check.
    bad: u64,
    /// System calls from its first request to its last.
    syscalls: Option<u64>,
}

/// A name for block `n`'s files, unique to this run.
fn block_name(n: u64) -> String {
    format!("shmbus-bench-rr-{}-{n}", std::process::id())
}

/// What a block leaves behind, removed when dropped (whichever exist).
struct Leftovers {
    name: String,
}

impl Drop for Leftovers {
    fn drop(&mut self) {
        let n = &self.name;
        let _ = shmbus::remove(n);
        let _ = shmbus::remove(&format!("{n}-req"));
        let _ = shmbus::remove(&format!("{n}-resp"));
        let _ = std::fs::remove_file(format!("/dev/shm/{n}-floor"));
        let _ = std::fs::remove_file(uds_path(n));
        // iceoryx2: the domain's management segment and directories
        // outlive its last node.
        let (prefix, root) = iox2_domain(n);
        let _ = std::fs::remove_dir_all(root);
        if let Ok(dir) = std::fs::read_dir("/dev/shm") {
            for e in dir.flatten() {
                if e.file_name().to_string_lossy().starts_with(&prefix) {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
    }
}

/// The server process, killed if still running when dropped.
struct ServerProcess {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl ServerProcess {
    fn spawn(
        imp: Impl,
        name: &str,
        size: usize,
        clients: usize,
        cpu: usize,
    ) -> Result<Self, String> {
        let exe = std::env::current_exe().map_err(|e| format!("this executable: {e}"))?;
        let mut child = Command::new(exe)
            .args(["child", "--mechanism", CHILD, "--pattern", "pingpong"])
            .args(["--msg-size", &size.to_string()])
            .args(["--receivers", &clients.to_string(), "--index", "0"])
            .args(["--token", imp.name(), "--prefix", name])
            .args([
                "--warmup", "0", "--count", "0", "--pace", "0", "--clock", "-",
            ])
            .args(["--cpu", &cpu.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start the server process: {e}"))?;
        let out = child.stdout.take().expect("piped");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(ServerProcess { child, lines })
    }

    /// Its next line, or why there is none (what it said on stderr).
    fn line(&mut self, until: Instant) -> Result<String, String> {
        match self
            .lines
            .recv_timeout(until.saturating_duration_since(Instant::now()))
        {
            Ok(l) => Ok(l),
            Err(_) => Err(format!("server: {}", self.failure())),
        }
    }

    /// Kills it and returns the last line of its stderr, if it wrote one.
    fn said(&mut self) -> Option<String> {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let mut err = String::new();
        if let Some(mut pipe) = self.child.stderr.take() {
            let _ = pipe.read_to_string(&mut err);
        }
        err.lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(|l| l.trim().trim_start_matches("shmbus-bench: ").to_owned())
    }

    /// Kills it and says why it gave no line.
    fn failure(&mut self) -> String {
        self.said()
            .unwrap_or_else(|| "no report before the block's deadline".into())
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// One block: the server process, `clients` client threads; the round's
/// figures or why there are none.
fn block(imp: Impl, size: usize, clients: usize, place: &Place, n: u64) -> Result<Round, String> {
    let name = block_name(n);
    let _leftovers = Leftovers { name: name.clone() };
    let deadline = Instant::now() + BLOCK_LIMIT;
    mech::set_deadline(BLOCK_LIMIT);
    if imp == Impl::Floor {
        floor_file(&name).map_err(|e| format!("floor file: {e}"))?;
    }
    let mut server = ServerProcess::spawn(imp, &name, size, clients, place.server_cpu)?;
    let ready = server.line(deadline)?;
    if ready != "READY" {
        return Err(format!("server said {ready:?}, expected READY"));
    }
    let phase = Arc::new(AtomicU8::new(WARMUP));
    let start = Arc::new(Barrier::new(clients + 1));
    let handles: Vec<_> = (0..clients)
        .map(|i| {
            let (name, phase, start) = (name.clone(), phase.clone(), start.clone());
            let cpu = place.client_cpus[i % place.client_cpus.len()];
            let clock = place.clock;
            std::thread::spawn(move || client(imp, &name, size, i, cpu, clock, &start, &phase))
        })
        .collect();
    start.wait();
    std::thread::sleep(place.warmup);
    phase.store(MEASURE, Ordering::Relaxed);
    let t0 = Instant::now();
    std::thread::sleep(place.measure);
    phase.store(STOP, Ordering::Relaxed);
    let secs = t0.elapsed().as_secs_f64();
    // A client stuck on a server that hangs: the server is killed at the
    // deadline, and every client's wait then ends in an error.
    while !handles.iter().all(|h| h.is_finished()) {
        if Instant::now() > deadline {
            let why = server.failure();
            return Err(format!("a client did not finish: server: {why}"));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let mut outs = Vec::new();
    for h in handles {
        match h.join() {
            Ok(Ok(o)) => outs.push(o),
            Ok(Err(e)) => {
                return Err(match server.said() {
                    Some(why) => format!("{e} (server: {why})"),
                    None => e,
                });
            }
            Err(_) => return Err("a client thread panicked".into()),
        }
    }
    let line = server.line(deadline)?;
    let report: ServerReport = line
        .strip_prefix("REPORT ")
        .and_then(|j| serde_json::from_str(j).ok())
        .ok_or_else(|| format!("server said {line:?}, expected its REPORT"))?;
    let _ = server.child.wait();
    if report.bad > 0 {
        return Err(format!(
            "{} request(s) failed their check at the server",
            report.bad
        ));
    }
    let t = place.ticks_per_ns;
    let mut hist = outs[0].hist.clone();
    for o in &outs[1..] {
        hist.add(&o.hist).map_err(|e| format!("histograms: {e}"))?;
    }
    let calls: u64 = outs.iter().map(|o| o.calls).sum();
    if calls == 0 {
        return Err("no call completed in the measured interval".into());
    }
    let mean = calls as f64 / clients as f64;
    let least = outs.iter().map(|o| o.calls).min().unwrap_or(0) as f64;
    let sum = |f: &dyn Fn(&Delta) -> Option<u64>| -> Option<u64> {
        outs.iter().map(|o| f(&o.counted)).sum::<Option<u64>>()
    };
    let q = |p: f64| hist.value_at_quantile(p) as f64 / t;
    Ok(Round {
        p50_ns: q(0.5),
        p99_ns: q(0.99),
        p999_ns: q(0.999),
        max_ns: hist.max() as f64 / t,
        calls,
        calls_per_sec: calls as f64 / secs,
        least_share: least / mean,
        client_syscalls_per_call: sum(&|d| d.syscalls).map(|s| s as f64 / calls as f64),
        server_syscalls_per_call: report
            .syscalls
            .map(|s| s as f64 / report.served.max(1) as f64),
        client_ctx_per_call: sum(&|d| Some(d.voluntary + d.involuntary)).unwrap_or(0) as f64
            / calls as f64,
    })
}

/// One client thread: calls in a loop until the phase says stop, timing
/// and counting the calls of the measured interval; then one stop request.
#[allow(clippy::too_many_arguments)]
fn client(
    imp: Impl,
    name: &str,
    size: usize,
    index: usize,
    cpu: usize,
    clock: clock::Source,
    start: &Barrier,
    phase: &AtomicU8,
) -> Result<ClientOut, String> {
    let pinned = crate::cpu::pin(cpu).map_err(|e| e.to_string());
    let opened = pinned.and_then(|()| open_caller(imp, name, size, index as u64));
    // Past the barrier whatever happened, so the block does not wait for
    // a client that failed to open.
    start.wait();
    let mut caller = opened?;
    let mut counters = Counters::for_this_thread();
    let mut hist = Histogram::new_with_bounds(1, 1 << 40, 3).expect("valid bounds");
    let (mut seq, mut calls) = (0u64, 0u64);
    let mut before = None;
    let fail = |seq: u64| format!("client {index}: call {seq}: a response torn, or not its call's");
    loop {
        match phase.load(Ordering::Relaxed) {
            STOP => break,
            MEASURE if before.is_none() => before = Some(counters.snapshot()),
            _ => {}
        }
        seq += 1;
        let t0 = clock.now();
        let intact = caller
            .call(seq)
            .map_err(|e| format!("client {index}: {e}"))?;
        let t1 = clock.now();
        if !intact {
            return Err(fail(seq));
        }
        if before.is_some() {
            let _ = hist.record(t1.saturating_sub(t0).max(1));
            calls += 1;
        }
    }
    let after = counters.snapshot();
    if !caller
        .call(marker::STOP)
        .map_err(|e| format!("client {index}: stop: {e}"))?
    {
        return Err(fail(marker::STOP));
    }
    let counted = before.map(|b| b.since(&after)).unwrap_or_default();
    Ok(ClientOut {
        hist,
        calls,
        counted,
    })
}

/// A client's end: one call at a time.
trait Caller {
    /// Sends request `seq` and waits for its response; whether the
    /// response is intact and `seq`'s.
    fn call(&mut self, seq: u64) -> io::Result<bool>;
}

/// What both sides write and check: the pattern once, the header and
/// trailer per message.
struct Bytes {
    template: Vec<u8>,
    check: Check,
    index: u64,
}

impl Bytes {
    fn new(size: usize, index: u64) -> Bytes {
        let mut template = vec![0u8; size];
        payload::fill(&mut template);
        Bytes {
            template,
            check: Check::new(size),
            index,
        }
    }

    /// Writes message `seq` into `out` (the template copied, then sealed).
    #[inline]
    fn write(&self, out: &mut [u8], seq: u64) {
        out.copy_from_slice(&self.template);
        payload::seal(out, seq, self.index);
    }

    /// Whether `msg` is message `seq`, intact: every byte read.
    #[inline]
    fn holds(&self, msg: &[u8], seq: u64) -> bool {
        if msg.len() != self.template.len() {
            return false;
        }
        let (s, who) = payload::unstamp(msg);
        let sum = self.check.holds(msg, s, who);
        sum && s == seq && who == self.index
    }
}

fn other(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(e.to_string())
}

fn open_caller(imp: Impl, name: &str, size: usize, index: u64) -> Result<Box<dyn Caller>, String> {
    let opened: io::Result<Box<dyn Caller>> = match imp {
        Impl::Shmbus => ShmbusCaller::open(name, size, index).map(|c| Box::new(c) as _),
        Impl::TwoBus => TwoBusCaller::open(name, size, index).map(|c| Box::new(c) as _),
        Impl::Iceoryx2 => Iox2Caller::open(name, size, index).map(|c| Box::new(c) as _),
        Impl::Uds => UdsCaller::open(name, size, index).map(|c| Box::new(c) as _),
        Impl::Floor => FloorEnd::open(name, false).map(|c| Box::new(c) as _),
    };
    opened.map_err(|e| format!("client {index}: open: {e}"))
}

// --- shmbus request-response -------------------------------------------

struct ShmbusCaller {
    client: shmbus::reqrep::Client<[u8], [u8]>,
    bytes: Bytes,
}

impl ShmbusCaller {
    fn open(name: &str, size: usize, index: u64) -> io::Result<ShmbusCaller> {
        let opts = shmbus::OpenOptions::default().wait_strategy(shmbus::WaitStrategy::BusySpin);
        let client = shmbus::reqrep::Client::<[u8], [u8]>::attach(name, &opts).map_err(other)?;
        Ok(ShmbusCaller {
            client,
            bytes: Bytes::new(size, index),
        })
    }
}

impl Caller for ShmbusCaller {
    #[inline]
    fn call(&mut self, seq: u64) -> io::Result<bool> {
        use shmbus::Wait;
        let b = &self.bytes;
        let call = self
            .client
            .send_with(b.template.len(), Wait::Forever, |out| b.write(out, seq))
            .map_err(other)?;
        self.client
            .wait_with(call, Wait::Forever, |resp| b.holds(resp, seq))
            .map_err(other)
    }
}

// --- two shmbus buses ------------------------------------------------------

struct TwoBusCaller {
    tx: shmbus::Publisher<[u8]>,
    rx: shmbus::Subscriber<[u8]>,
    buf: Vec<u8>,
    bytes: Bytes,
}

fn bus_sub(name: &str) -> io::Result<shmbus::Subscriber<[u8]>> {
    let opts = shmbus::OpenOptions::default()
        .start(shmbus::Start::Next)
        .wait_strategy(shmbus::WaitStrategy::BusySpin)
        .prefault(true);
    shmbus::Subscriber::<[u8]>::open(name, &opts).map_err(other)
}

/// The next message on `rx`, busy-polling; a lost one is an error (a
/// ping-pong never laps its reader).
#[inline]
fn bus_next(rx: &mut shmbus::Subscriber<[u8]>) -> io::Result<&[u8]> {
    let mut patience = mech::Patience::default();
    loop {
        match rx.try_recv() {
            Some(shmbus::Received::Message(_)) => return Ok(rx.message()),
            Some(shmbus::Received::Lagged { skipped }) => {
                return Err(other(format!("{skipped} message(s) lost")));
            }
            None => patience.spin()?,
        }
    }
}

impl TwoBusCaller {
    fn open(name: &str, size: usize, index: u64) -> io::Result<TwoBusCaller> {
        let opts = shmbus::OpenOptions::default().prefault(true);
        let tx = shmbus::Publisher::<[u8]>::attach(&format!("{name}-req"), &opts).map_err(other)?;
        let rx = bus_sub(&format!("{name}-resp"))?;
        let bytes = Bytes::new(size, index);
        Ok(TwoBusCaller {
            tx,
            rx,
            buf: bytes.template.clone(),
            bytes,
        })
    }
}

impl Caller for TwoBusCaller {
    #[inline]
    fn call(&mut self, seq: u64) -> io::Result<bool> {
        // The pattern is in `buf` already: the header and trailer make
        // the message, and `publish` copies it into the ring.
        payload::seal(&mut self.buf, seq, self.bytes.index);
        self.tx.publish(&self.buf).map_err(other)?;
        let resp = bus_next(&mut self.rx)?;
        Ok(self.bytes.holds(resp, seq))
    }
}

// --- iceoryx2 request-response --------------------------------------------

type Iox2Node = iceoryx2::prelude::Node<iceoryx2::prelude::ipc::Service>;
type Iox2Service = iceoryx2::service::port_factory::request_response::PortFactory<
    iceoryx2::prelude::ipc::Service,
    [u8],
    (),
    [u8],
    (),
>;

/// The block's iceoryx2 domain: its file prefix in /dev/shm and its root
/// directory.
fn iox2_domain(name: &str) -> (String, String) {
    (format!("{name}-iox2_"), format!("/tmp/{name}-iceoryx2"))
}

fn iox2_node(name: &str) -> io::Result<Iox2Node> {
    use iceoryx2::prelude::{
        Config, FileName, NodeBuilder, Path, SemanticString, SignalHandlingMode,
    };
    let (prefix, root) = iox2_domain(name);
    let mut config = Config::default();
    config.global.prefix = FileName::new(prefix.as_bytes()).map_err(|e| other(format!("{e:?}")))?;
    config
        .global
        .set_root_path(&Path::new(root.as_bytes()).map_err(|e| other(format!("{e:?}")))?);
    NodeBuilder::new()
        .config(&config)
        .signal_handling_mode(SignalHandlingMode::Disabled)
        .create::<iceoryx2::prelude::ipc::Service>()
        .map_err(|e| other(format!("create node: {e:?}")))
}

fn iox2_service_name(name: &str) -> io::Result<iceoryx2::prelude::ServiceName> {
    iceoryx2::prelude::ServiceName::new(&format!("{name}/reqrep"))
        .map_err(|e| other(format!("{e:?}")))
}

struct Iox2Caller {
    // Dropped in order: the port, the service, the node.
    client: iceoryx2::port::client::Client<iceoryx2::prelude::ipc::Service, [u8], (), [u8], ()>,
    _service: Iox2Service,
    _node: Iox2Node,
    bytes: Bytes,
}

impl Iox2Caller {
    fn open(name: &str, size: usize, index: u64) -> io::Result<Iox2Caller> {
        use iceoryx2::prelude::AllocationStrategy;
        use iceoryx2::service::builder::request_response::RequestResponseOpenError as E;
        let node = iox2_node(name)?;
        let service_name = iox2_service_name(name)?;
        let until = Instant::now() + Duration::from_secs(10);
        let service = loop {
            match node
                .service_builder(&service_name)
                .request_response::<[u8], [u8]>()
                .open()
            {
                Ok(s) => break s,
                Err(E::DoesNotExist | E::HangsInCreation | E::Interrupt)
                    if Instant::now() < until =>
                {
                    std::thread::sleep(Duration::from_millis(1))
                }
                Err(e) => return Err(other(format!("open service: {e:?}"))),
            }
        };
        let client = service
            .client_builder()
            .initial_max_slice_len(size)
            .allocation_strategy(AllocationStrategy::Static)
            .create()
            .map_err(|e| other(format!("create client: {e:?}")))?;
        Ok(Iox2Caller {
            client,
            _service: service,
            _node: node,
            bytes: Bytes::new(size, index),
        })
    }
}

impl Caller for Iox2Caller {
    #[inline]
    fn call(&mut self, seq: u64) -> io::Result<bool> {
        let b = &self.bytes;
        let request = self
            .client
            .loan_slice_uninit(b.template.len())
            .map_err(|e| other(format!("loan: {e:?}")))?;
        let mut request = request.write_from_slice(&b.template);
        payload::seal(request.payload_mut(), seq, b.index);
        let pending = request.send().map_err(|e| other(format!("send: {e:?}")))?;
        let mut patience = mech::Patience::default();
        loop {
            match pending.receive() {
                Ok(Some(resp)) => return Ok(b.holds(resp.payload(), seq)),
                Ok(None) => patience.spin()?,
                Err(e) => return Err(other(format!("receive: {e:?}"))),
            }
        }
    }
}

// --- Unix stream sockets ----------------------------------------------------

fn uds_path(name: &str) -> String {
    format!("{}/{name}.sock", std::env::temp_dir().display())
}

struct UdsCaller {
    stream: std::os::unix::net::UnixStream,
    buf: Vec<u8>,
    got: Vec<u8>,
    bytes: Bytes,
}

impl UdsCaller {
    fn open(name: &str, size: usize, index: u64) -> io::Result<UdsCaller> {
        let stream = std::os::unix::net::UnixStream::connect(uds_path(name))?;
        let bytes = Bytes::new(size, index);
        Ok(UdsCaller {
            stream,
            buf: bytes.template.clone(),
            got: vec![0; size],
            bytes,
        })
    }
}

impl Caller for UdsCaller {
    #[inline]
    fn call(&mut self, seq: u64) -> io::Result<bool> {
        payload::seal(&mut self.buf, seq, self.bytes.index);
        self.stream.write_all(&self.buf)?;
        self.stream.read_exact(&mut self.got)?;
        Ok(self.bytes.holds(&self.got, seq))
    }
}

// --- the cache-line floor -------------------------------------------------

/// Creates the floor's file: two lines, both idle.
fn floor_file(name: &str) -> io::Result<()> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(format!("/dev/shm/{name}-floor"))?;
    f.set_len(4096)
}

/// One end of the floor: the client writes line 0 and waits on line 1,
/// the server the other way round.
struct FloorEnd {
    map: shmbus::mem::ShmRegion,
    out: usize,
    inp: usize,
}

impl FloorEnd {
    fn open(name: &str, server: bool) -> io::Result<FloorEnd> {
        use shmbus::internals::Access;
        let path = format!("/dev/shm/{name}-floor");
        let path = std::path::Path::new(&path);
        let (fd, len) = shmbus::mem::ShmRegion::open_file(path, Access::ReadWrite)?;
        let map = shmbus::mem::ShmRegion::map(fd, path, len as usize, Access::ReadWrite)?;
        let (out, inp) = if server { (128, 0) } else { (0, 128) };
        Ok(FloorEnd { map, out, inp })
    }

    fn word(&self, at: usize) -> &AtomicU64 {
        use shmbus::mem::Region;
        self.map.word(at)
    }

    /// The next value other than `last` on our line in, spinning.
    #[inline]
    fn next(&self, last: u64) -> io::Result<u64> {
        let mut patience = mech::Patience::default();
        loop {
            // Acquire, paired with the other side's Release store.
            let v = self.word(self.inp).load(Ordering::Acquire);
            if v != last {
                return Ok(v);
            }
            patience.spin()?;
        }
    }
}

impl Caller for FloorEnd {
    #[inline]
    fn call(&mut self, seq: u64) -> io::Result<bool> {
        let last = self.word(self.inp).load(Ordering::Relaxed);
        self.word(self.out).store(seq, Ordering::Release);
        Ok(self.next(last)? == seq)
    }
}

// --- the server process -------------------------------------------------

/// What the server checks and writes, and what it counts.
struct Serving {
    bytes: Bytes,
    clients: usize,
    stops: usize,
    served: u64,
    bad: u64,
    /// `SHMBUS_BENCH_FAULT=torn-payload`: every response torn.
    tear: bool,
}

impl Serving {
    fn new(size: usize, clients: usize) -> Serving {
        Serving {
            bytes: Bytes::new(size, 0),
            clients,
            stops: 0,
            served: 0,
            bad: 0,
            tear: crate::fault::injected() == Some(crate::fault::Fault::TornPayload),
        }
    }

    /// Reads request `req` in full: its sequence and client.
    #[inline]
    fn read(&mut self, req: &[u8]) -> (u64, u64) {
        if req.len() != self.bytes.template.len() || req.len() < payload::HEADER {
            self.bad += 1;
            return (0, 0);
        }
        let (seq, who) = payload::unstamp(req);
        if !self.bytes.check.holds(req, seq, who) {
            self.bad += 1;
        }
        if seq == marker::STOP {
            self.stops += 1;
        } else {
            self.served += 1;
        }
        (seq, who)
    }

    /// Writes the response to request `seq` of client `who` into `out`.
    #[inline]
    fn write(&self, out: &mut [u8], seq: u64, who: u64) {
        out.copy_from_slice(&self.bytes.template);
        payload::seal(out, seq, who);
        if self.tear && out.len() >= 32 {
            out[payload::HEADER] ^= 0x10;
        }
    }

    fn done(&self) -> bool {
        self.stops >= self.clients
    }
}

fn ready() -> io::Result<()> {
    let mut out = io::stdout().lock();
    writeln!(out, "READY")?;
    out.flush()
}

/// The body of the server process (`child --mechanism reqrep-server
/// --token IMPL --prefix NAME --msg-size N --receivers CLIENTS`): sets up,
/// prints `READY`, answers until every client sent its stop request, then
/// prints `REPORT` and its JSON.
pub fn run_server_child(
    imp: &str,
    name: &str,
    size: usize,
    clients: usize,
) -> Result<(), BenchError> {
    let failed = |why: String| BenchError::Mechanism {
        mechanism: "request-response server",
        stage: "serve",
        source: io::Error::other(why),
    };
    let imp = Impl::parse(imp).ok_or_else(|| failed(format!("no row {imp:?}")))?;
    if crate::fault::injected() == Some(crate::fault::Fault::ReceiverFails) {
        return Err(failed(
            "failing before the first request, as SHMBUS_BENCH_FAULT=receiver-fails asked".into(),
        ));
    }
    let mut st = Serving::new(size, clients);
    let syscalls = match imp {
        Impl::Shmbus => serve_shmbus(name, &mut st),
        Impl::TwoBus => serve_two_bus(name, &mut st),
        Impl::Iceoryx2 => serve_iox2(name, &mut st),
        Impl::Uds => serve_uds(name, &mut st),
        Impl::Floor => serve_floor(name, &mut st),
    }
    .map_err(|e| failed(e.to_string()))?;
    let report = ServerReport {
        served: st.served,
        bad: st.bad,
        syscalls,
    };
    let line = serde_json::to_string(&report).map_err(|source| BenchError::Encode {
        what: "the server's report",
        source,
    })?;
    let mut out = io::stdout().lock();
    writeln!(out, "REPORT {line}")
        .and_then(|_| out.flush())
        .map_err(BenchError::Stdout)
}

/// Counts the serving thread's system calls from the first request on.
struct Count {
    counters: Counters,
    from: Option<crate::counters::Snapshot>,
}

impl Count {
    fn new() -> Count {
        Count {
            counters: Counters::for_this_thread(),
            from: None,
        }
    }
    #[inline]
    fn first(&mut self) {
        if self.from.is_none() {
            self.from = Some(self.counters.snapshot());
        }
    }
    fn end(mut self) -> Option<u64> {
        let to = self.counters.snapshot();
        self.from?.since(&to).syscalls
    }
}

/// Past the block's deadline: no client is coming.
fn late(deadline: Instant) -> io::Result<()> {
    if Instant::now() > deadline {
        return Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "no request before the block's deadline",
        ));
    }
    Ok(())
}

fn serve_shmbus(name: &str, st: &mut Serving) -> io::Result<Option<u64>> {
    use shmbus::{Wait, WaitStrategy, reqrep};
    let size = st.bytes.template.len() as u32;
    let opts = reqrep::Options::new(st.clients as u32)
        .slots(1)
        .servers(1)
        .request_size(size)
        .response_size(size)
        .prefault(true)
        .wait_strategy(WaitStrategy::BusySpin);
    let server = reqrep::Server::<[u8], [u8]>::create(name, &opts).map_err(other)?;
    ready()?;
    let deadline = Instant::now() + BLOCK_LIMIT;
    let mut count = Count::new();
    while !st.done() {
        // A bounded wait, so that a server whose clients are gone ends.
        let Some(request) = server.recv(Wait::For(Duration::from_millis(100))) else {
            late(deadline)?;
            continue;
        };
        count.first();
        let (seq, who) = st.read(request.bytes());
        let len = request.bytes().len();
        request
            .respond_with(len, |out| st.write(out, seq, who))
            .map_err(other)?;
    }
    Ok(count.end())
}

fn serve_two_bus(name: &str, st: &mut Serving) -> io::Result<Option<u64>> {
    use shmbus::{BusOptions, Publisher};
    let size = st.bytes.template.len();
    let opts = BusOptions::new(mech::ring_slots(size) as u64)
        .prefault(true)
        .msg_size(size as u32);
    let req = format!("{name}-req");
    Publisher::<[u8]>::create(&req, &opts).map_err(other)?;
    let mut tx = Publisher::<[u8]>::create(&format!("{name}-resp"), &opts).map_err(other)?;
    let mut rx = bus_sub(&req)?;
    let mut buf = st.bytes.template.clone();
    ready()?;
    let mut count = Count::new();
    while !st.done() {
        let msg = bus_next(&mut rx)?;
        count.first();
        let (seq, who) = st.read(msg);
        payload::seal(&mut buf, seq, who);
        if st.tear {
            buf[payload::HEADER] ^= 0x10;
        }
        tx.publish(&buf).map_err(other)?;
        if st.tear {
            buf[payload::HEADER] ^= 0x10;
        }
    }
    Ok(count.end())
}

fn serve_iox2(name: &str, st: &mut Serving) -> io::Result<Option<u64>> {
    use iceoryx2::prelude::AllocationStrategy;
    let size = st.bytes.template.len();
    let node = iox2_node(name)?;
    let service = node
        .service_builder(&iox2_service_name(name)?)
        .request_response::<[u8], [u8]>()
        .max_clients(st.clients)
        .max_servers(1)
        // This node and every client's.
        .max_nodes(st.clients + 1)
        .create()
        .map_err(|e| other(format!("create service: {e:?}")))?;
    let server = service
        .server_builder()
        .initial_max_slice_len(size)
        .allocation_strategy(AllocationStrategy::Static)
        .create()
        .map_err(|e| other(format!("create server: {e:?}")))?;
    ready()?;
    let mut count = Count::new();
    let mut patience = mech::Patience::default();
    while !st.done() {
        let Some(request) = server
            .receive()
            .map_err(|e| other(format!("receive: {e:?}")))?
        else {
            patience.spin()?;
            continue;
        };
        count.first();
        let (seq, who) = st.read(request.payload());
        let response = request
            .loan_slice_uninit(size)
            .map_err(|e| other(format!("loan: {e:?}")))?;
        let mut response = response.write_from_slice(&st.bytes.template);
        st.write(response.payload_mut(), seq, who);
        response.send().map_err(|e| other(format!("send: {e:?}")))?;
    }
    Ok(count.end())
}

fn serve_uds(name: &str, st: &mut Serving) -> io::Result<Option<u64>> {
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixListener;
    let path = uds_path(name);
    let listener = UnixListener::bind(&path)?;
    ready()?;
    let mut conns = Vec::new();
    for _ in 0..st.clients {
        conns.push(listener.accept()?.0);
    }
    let size = st.bytes.template.len();
    let (mut got, mut buf) = (vec![0u8; size], st.bytes.template.clone());
    // From before the first request: a blocking read is a system call
    // of every call, the first's too.
    let mut count = Count::new();
    count.first();
    let mut answer =
        |s: &mut std::os::unix::net::UnixStream, st: &mut Serving| -> io::Result<bool> {
            s.read_exact(&mut got)?;
            let (seq, who) = st.read(&got);
            st.write(&mut buf, seq, who);
            s.write_all(&buf)?;
            Ok(seq == marker::STOP)
        };
    if let [only] = conns.as_mut_slice() {
        while !st.done() {
            answer(only, st)?;
        }
        return Ok(count.end());
    }
    let mut fds: Vec<libc::pollfd> = conns
        .iter()
        .map(|c| libc::pollfd {
            fd: c.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    while !st.done() {
        // SAFETY: `fds` is a valid array of `fds.len()` pollfds for the call.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 1000) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        for (p, c) in fds.iter_mut().zip(conns.iter_mut()) {
            if p.fd >= 0 && p.revents != 0 && answer(c, st)? {
                // Its stop answered: no more from this client.
                p.fd = -1;
            }
        }
    }
    Ok(count.end())
}

fn serve_floor(name: &str, st: &mut Serving) -> io::Result<Option<u64>> {
    let end = FloorEnd::open(name, true)?;
    ready()?;
    let mut count = Count::new();
    let mut last = 0;
    while !st.done() {
        let v = end.next(last)?;
        count.first();
        last = v;
        if v == marker::STOP {
            st.stops += 1;
        } else {
            st.served += 1;
        }
        end.word(end.out).store(v, Ordering::Release);
    }
    Ok(count.end())
}

// --- output ---------------------------------------------------------------

fn size_name(size: usize) -> String {
    match size {
        s if s >= 1 << 20 && s % (1 << 20) == 0 => format!("{} MiB", s >> 20),
        s if s >= 1 << 10 && s % (1 << 10) == 0 => format!("{} KiB", s >> 10),
        s => format!("{s} B"),
    }
}

/// The table on stdout.
pub fn print(r: &Report) {
    println!(
        "\nRequest-response (call round trip, both sides spinning; median of {} rounds of {} ms each)",
        r.rounds,
        r.measure.as_millis()
    );
    println!(
        "{:16} {:>8} {:>7} {:>10} {:>10} {:>12} {:>7} {:>9}",
        "", "size", "clients", "p50 ns", "p99 ns", "calls/s", "least", "sys/call"
    );
    let cell = |v: Option<f64>, d: usize| v.map_or("-".to_string(), |v| format!("{v:.d$}"));
    for row in &r.rows {
        if let Some(why) = &row.failed {
            println!(
                "{:16} {:>8} {:>7} FAILED: {why}",
                row.imp.name(),
                size_name(row.size),
                row.clients
            );
            continue;
        }
        println!(
            "{:16} {:>8} {:>7} {:>10} {:>10} {:>12} {:>7} {:>9}",
            row.imp.name(),
            size_name(row.size),
            row.clients,
            cell(row.median(|x| Some(x.p50_ns)), 0),
            cell(row.median(|x| Some(x.p99_ns)), 0),
            cell(row.median(|x| Some(x.calls_per_sec)), 0),
            cell(row.median(|x| Some(x.least_share)), 2),
            cell(row.median(Round::syscalls_per_call), 3),
        );
    }
}

/// The rows as JSON (`json::reqrep` adds their targets).
pub fn json(r: &Report) -> Value {
    let rows: Vec<Value> = r
        .rows
        .iter()
        .map(|row| {
            let m = |f: &dyn Fn(&Round) -> Option<f64>| row.median(f);
            json!({
                "name": row.imp.name(),
                "msg_size": row.size,
                "clients": row.clients,
                "p50_ns": m(&|x| Some(x.p50_ns)),
                "p99_ns": m(&|x| Some(x.p99_ns)),
                "p999_ns": m(&|x| Some(x.p999_ns)),
                "max_ns": m(&|x| Some(x.max_ns)),
                "calls_per_sec": m(&|x| Some(x.calls_per_sec)),
                "least_served_share": m(&|x| Some(x.least_share)),
                "syscalls_per_call": m(&Round::syscalls_per_call),
                "client_syscalls_per_call": m(&|x| x.client_syscalls_per_call),
                "server_syscalls_per_call": m(&|x| x.server_syscalls_per_call),
                "client_ctx_switches_per_call": m(&|x| Some(x.client_ctx_per_call)),
                "rounds": row.rounds.iter().map(|x| json!({
                    "p50_ns": x.p50_ns, "p99_ns": x.p99_ns, "p999_ns": x.p999_ns,
                    "max_ns": x.max_ns, "calls": x.calls, "calls_per_sec": x.calls_per_sec,
                    "least_served_share": x.least_share,
                    "client_syscalls_per_call": x.client_syscalls_per_call,
                    "server_syscalls_per_call": x.server_syscalls_per_call,
                    "client_ctx_switches_per_call": x.client_ctx_per_call,
                })).collect::<Vec<_>>(),
                // A row that failed: the run failed too (its exit status).
                "failed": row.failed,
            })
        })
        .collect();
    json!({
        "quick": r.quick,
        "rounds": r.rounds,
        "warmup_ms": r.warmup.as_millis() as u64,
        "measure_ms": r.measure.as_millis() as u64,
        "server_cpu": r.server_cpu,
        "client_cpus": r.client_cpus,
        "clock": r.clock.name(),
        "syscalls_counted": r.syscalls_counted,
        "sizes": SIZES,
        "clients": CLIENTS,
        "rows": rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_is_held_only_as_its_own_call_intact() {
        for size in [64, 4096] {
            let b = Bytes::new(size, 3);
            let mut msg = vec![0u8; size];
            b.write(&mut msg, 7);
            assert!(b.holds(&msg, 7));
            assert!(!b.holds(&msg, 8), "another call's sequence");
            assert!(!Bytes::new(size, 2).holds(&msg, 7), "another client's");
            msg[size / 2] ^= 1;
            assert!(!b.holds(&msg, 7), "a flipped byte");
            assert!(!b.holds(&msg[..size - 8], 7), "a short message");
        }
    }

    #[test]
    fn every_case_has_the_rows_its_targets_compare() {
        for size in SIZES {
            for clients in CLIENTS {
                assert!(Impl::Shmbus.runs(size, clients));
                assert!(Impl::Iceoryx2.runs(size, clients));
                assert!(Impl::Uds.runs(size, clients));
            }
            assert!(Impl::TwoBus.runs(size, 1) && !Impl::TwoBus.runs(size, 4));
        }
        assert!(Impl::Floor.runs(64, 1) && !Impl::Floor.runs(4096, 1));
        for imp in IMPLS {
            assert_eq!(Impl::parse(imp.name()), Some(imp));
        }
    }

    #[test]
    fn ratios_are_taken_within_rounds_and_their_median_reported() {
        let round = |p50: f64| Round {
            p50_ns: p50,
            p99_ns: p50,
            p999_ns: p50,
            max_ns: p50,
            calls: 1,
            calls_per_sec: 1.0,
            least_share: 1.0,
            client_syscalls_per_call: Some(0.0),
            server_syscalls_per_call: Some(0.0),
            client_ctx_per_call: 0.0,
        };
        let row = |imp, p50s: &[f64]| Row {
            imp,
            size: 64,
            clients: 1,
            rounds: p50s.iter().map(|&p| round(p)).collect(),
            failed: None,
        };
        let r = Report {
            rows: vec![
                row(Impl::Shmbus, &[200.0, 330.0, 120.0]),
                row(Impl::TwoBus, &[100.0, 300.0, 100.0]),
            ],
            rounds: 3,
            warmup: Duration::ZERO,
            measure: Duration::ZERO,
            server_cpu: 1,
            client_cpus: vec![0],
            quick: true,
            clock: clock::Source::Monotonic,
            syscalls_counted: true,
        };
        let ratio = r.round_ratio(
            r.row(Impl::Shmbus, 64, 1),
            r.row(Impl::TwoBus, 64, 1),
            |a, b| Some(a.p50_ns / b.p50_ns),
        );
        // 2.0, 1.1, 1.2: the median of the rounds' ratios, not the ratio
        // of the medians (200 / 100).
        assert_eq!(ratio, Some(1.2));
    }
}
