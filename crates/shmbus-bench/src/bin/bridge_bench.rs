//! `bridge_bench`: the shmbus ↔ Zenoh bridge against a plain Zenoh
//! publisher → subscriber pair, between two network namespaces joined by a
//! veth pair (set up by ci/zenoh_bench.sh), in one run.
//!
//! `run` is the driver, in the root namespace: it makes the buses (the
//! namespaces share /dev/shm), starts the long-lived `shmbus bridge out`
//! (namespace A) and `shmbus bridge in` (B), and then, round after round,
//! runs one block per case, each side a child re-executed from this binary
//! in its namespace (`ip netns exec`): the roles `plain-pub`, `plain-sub`,
//! `bus-pub`, `bus-sub`. Blocks alternate plain and bridge, the order
//! flipping every round, so drift hits both alike.
//!
//! One-way latency is the receive time minus the send time carried in the
//! 64-byte message: both read CLOCK_MONOTONIC, one clock for every process
//! on one machine whatever its network namespace. Every receiver checks
//! every byte of every message against the pattern its index implies.
//! Children print `ready`, wait for `go` on stdin, and end with one
//! `result {json}` line; every wait on them is bounded.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, ExitCode, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use serde_json::{Value, json};
use shmbus::{BusOptions, OpenOptions, Publisher, Received, Start, Subscriber, WaitStrategy};
use shmbus_zenoh::{Endpoints, session};
use zenoh::Wait as _;
use zenoh::qos::CongestionControl;

/// Every message: 64 bytes, `[send ns, index, pattern(index) x 6]`.
const MSG: usize = 64;
/// A receiver that sees nothing new for this long ends its block.
const IDLE_LIMIT: Duration = Duration::from_secs(10);

/// The bridge against plain Zenoh (run by ci/zenoh_bench.sh).
#[derive(clap::Parser, Debug)]
#[command(name = "bridge_bench")]
enum Cli {
    /// Drive a whole run (root namespace; the namespaces exist already).
    Run(RunArgs),
    /// A Zenoh publisher (namespace A).
    PlainPub(PubArgs),
    /// A Zenoh subscriber, callback (namespace B).
    PlainSub(SubArgs),
    /// A shmbus publisher on an existing bus.
    BusPub(PubArgs),
    /// A spinning shmbus subscriber.
    BusSub(SubArgs),
}

#[derive(clap::Args, Debug)]
struct RunArgs {
    /// Namespace of the upstream side.
    #[arg(long)]
    ns_a: String,
    /// Namespace of the downstream side.
    #[arg(long)]
    ns_b: String,
    /// Address of B on the veth pair (listeners bind there).
    #[arg(long)]
    addr_b: String,
    /// The `shmbus` binary (for `shmbus bridge out|in`).
    #[arg(long)]
    shmbus: String,
    /// Rounds (each: every case once).
    #[arg(long, default_value_t = 5)]
    rounds: u32,
    /// Latency samples per block.
    #[arg(long, default_value_t = 40_000)]
    lat_samples: u64,
    /// Send period of the latency blocks, in microseconds.
    #[arg(long, default_value_t = 50)]
    pace_us: u64,
    /// Messages per throughput block.
    #[arg(long, default_value_t = 2_000_000)]
    thr_count: u64,
    /// Messages per put in the packed plain-Zenoh throughput block (the
    /// bridge's batch: 32 KiB of 64-byte messages).
    #[arg(long, default_value_t = 512)]
    pack: u64,
    /// Small counts and one round: checks the plumbing, not the figures.
    #[arg(long)]
    quick: bool,
    /// Write the figures as JSON here.
    #[arg(long)]
    json: Option<String>,
    /// The bus subscriber sleeps on the bus's futex after a 5 µs spin
    /// instead of spinning (fewer CPUs taken from the bridges).
    #[arg(long)]
    sub_futex: bool,
    /// How the latency case's bridge-out waits on its bus (`shmbus bridge
    /// out --wait`): spin (a core busy) or futex (spin 50 µs, then sleep).
    #[arg(long, default_value = "futex")]
    out_wait: String,
}

#[derive(clap::Args, Debug, Clone)]
struct PubArgs {
    /// Zenoh: the key; shmbus: the bus.
    #[arg(long)]
    target: String,
    /// Zenoh endpoint to connect to.
    #[arg(long)]
    connect: Option<String>,
    /// Messages counted (after the warm-up).
    #[arg(long)]
    count: u64,
    /// Messages first sent and not counted.
    #[arg(long, default_value_t = 0)]
    warmup: u64,
    /// Period between sends in ns (0: as fast as possible).
    #[arg(long, default_value_t = 0)]
    pace_ns: u64,
    /// Messages per Zenoh put.
    #[arg(long, default_value_t = 1)]
    pack: u64,
}

#[derive(clap::Args, Debug, Clone)]
struct SubArgs {
    /// Zenoh: the key; shmbus: the bus.
    #[arg(long)]
    target: String,
    /// Zenoh endpoint to listen on.
    #[arg(long)]
    listen: Option<String>,
    /// Messages counted (after the warm-up).
    #[arg(long)]
    count: u64,
    /// Messages first sent and not counted.
    #[arg(long, default_value_t = 0)]
    warmup: u64,
    /// shmbus: wait on the futex after a 5 µs spin, not spin.
    #[arg(long)]
    futex: bool,
}

fn main() -> ExitCode {
    use clap::Parser;
    let cli = Cli::parse();
    let result = match cli {
        Cli::Run(a) => run(&a),
        Cli::PlainPub(a) => plain_pub(&a),
        Cli::PlainSub(a) => plain_sub(&a),
        Cli::BusPub(a) => bus_pub(&a),
        Cli::BusSub(a) => bus_sub(&a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bridge_bench: {e}");
            ExitCode::FAILURE
        }
    }
}

/// CLOCK_MONOTONIC in ns: the same clock in every process of the machine.
fn now_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

fn pattern(index: u64, word: usize) -> u64 {
    index.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ word as u64
}

fn fill(msg: &mut [u8; MSG], index: u64) {
    for w in 2..MSG / 8 {
        msg[w * 8..w * 8 + 8].copy_from_slice(&pattern(index, w).to_le_bytes());
    }
    msg[8..16].copy_from_slice(&index.to_le_bytes());
}

fn word(b: &[u8], w: usize) -> u64 {
    u64::from_le_bytes(b[w * 8..w * 8 + 8].try_into().unwrap_or_default())
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000_000, 3).unwrap_or_else(|_| Histogram::new(3).unwrap())
}

fn encode(h: &Histogram<u64>) -> String {
    let mut buf = Vec::new();
    let _ = V2Serializer::new().serialize(h, &mut buf);
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

fn decode(s: &str) -> Option<Histogram<u64>> {
    let bytes = (0..s.len() / 2)
        .map(|i| u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok())
        .collect::<Option<Vec<u8>>>()?;
    Deserializer::new().deserialize(&mut &bytes[..]).ok()
}

/// Waits (at most `limit`) for `go` on stdin.
fn wait_go() -> Result<(), String> {
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .map_err(|e| format!("stdin: {e}"))?;
    if line.trim() == "go" {
        Ok(())
    } else {
        Err(format!("expected go on stdin, read {line:?}"))
    }
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// Short sleeps as asked: the default 50 µs timer slack would stretch a
/// 50 µs period to 100.
fn tight_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes an integer and touches no memory.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000u64, 0, 0, 0) };
}

/// Sleeps until `deadline` (CLOCK_MONOTONIC ns), if it is ahead.
fn sleep_until(deadline: u64) {
    let now = now_ns();
    if deadline > now {
        std::thread::sleep(Duration::from_nanos(deadline - now));
    }
}

/// What a receiver counts, whatever carries the messages.
struct Tally {
    warmup: u64,
    want: u64,
    delivered: u64,
    skipped: u64,
    corrupt: u64,
    checksum: u64,
    latency: Histogram<u64>,
    first_recv: u64,
    last_recv: u64,
}

impl Tally {
    fn new(warmup: u64, count: u64) -> Tally {
        Tally {
            warmup,
            want: warmup + count,
            delivered: 0,
            skipped: 0,
            corrupt: 0,
            checksum: 0,
            latency: histogram(),
            first_recv: 0,
            last_recv: 0,
        }
    }

    /// One message, read whole, at `now`.
    #[inline]
    fn message(&mut self, m: &[u8], now: u64) {
        if m.len() < MSG {
            self.corrupt += 1;
            return;
        }
        let (sent, index) = (word(m, 0), word(m, 1));
        let mut sum = sent ^ index;
        let mut bad = false;
        for w in 2..MSG / 8 {
            let v = word(m, w);
            sum = sum.wrapping_add(v);
            bad |= v != pattern(index, w);
        }
        self.checksum = self.checksum.wrapping_add(sum);
        self.corrupt += bad as u64;
        if self.delivered == 0 {
            self.first_recv = now;
        }
        self.last_recv = now;
        self.delivered += 1;
        if index >= self.warmup && now >= sent {
            let _ = self.latency.record((now - sent).max(1));
        }
    }

    fn done(&self) -> bool {
        self.delivered + self.skipped >= self.want
    }

    fn result(&self) -> Value {
        json!({
            "delivered": self.delivered,
            "skipped": self.skipped,
            "corrupt": self.corrupt,
            "checksum": self.checksum,
            "first_recv": self.first_recv,
            "last_recv": self.last_recv,
            "complete": self.done(),
            "latency": encode(&self.latency),
        })
    }
}

fn plain_sub(a: &SubArgs) -> Result<(), String> {
    let endpoints = Endpoints {
        listen: a.listen.iter().cloned().collect(),
        ..Endpoints::default()
    };
    let session = session(&endpoints).map_err(|e| e.to_string())?;
    let tally = Arc::new(Mutex::new(Tally::new(a.warmup, a.count)));
    let seen = Arc::clone(&tally);
    // A callback: Zenoh's own receive thread reads each sample, no hop to
    // another thread (its fastest delivery).
    let _sub = session
        .declare_subscriber(a.target.clone())
        .callback(move |sample| {
            let now = now_ns();
            let payload = sample.payload().to_bytes();
            let mut t = seen.lock().unwrap_or_else(|p| p.into_inner());
            for m in payload.chunks(MSG) {
                t.message(m, now);
            }
        })
        .wait()
        .map_err(|e| e.to_string())?;
    say("ready");
    let mut last = (0, Instant::now());
    loop {
        std::thread::sleep(Duration::from_millis(5));
        let t = tally.lock().unwrap_or_else(|p| p.into_inner());
        if t.done() {
            break;
        }
        if t.delivered != last.0 {
            last = (t.delivered, Instant::now());
        } else if last.1.elapsed() > IDLE_LIMIT {
            break;
        }
    }
    let t = tally.lock().unwrap_or_else(|p| p.into_inner());
    say(&format!("result {}", t.result()));
    Ok(())
}

fn bus_sub(a: &SubArgs) -> Result<(), String> {
    let wait = if a.futex {
        WaitStrategy::SpinFutex {
            spin: Duration::from_micros(5),
        }
    } else {
        WaitStrategy::BusySpin
    };
    let opts = OpenOptions::default()
        .start(Start::Next)
        .wait_strategy(wait);
    let mut sub = Subscriber::<[u8]>::open(&a.target, &opts).map_err(|e| e.to_string())?;
    let mut t = Tally::new(a.warmup, a.count);
    say("ready");
    let mut last = Instant::now();
    let mut polls = 0u32;
    // Spins (its fastest delivery), or waits as asked.
    let step = if a.futex {
        shmbus::Wait::For(Duration::from_millis(100))
    } else {
        shmbus::Wait::Never
    };
    while !t.done() {
        match sub.recv(step) {
            Some(Received::Message(m)) => {
                let now = now_ns();
                t.message(m, now);
                polls = 0;
            }
            Some(Received::Lagged { skipped }) => {
                t.skipped += skipped;
                polls = 0;
            }
            None => {
                polls += 1;
                if polls == 1 {
                    last = Instant::now();
                } else if (a.futex || polls.is_multiple_of(4096)) && last.elapsed() > IDLE_LIMIT {
                    break;
                }
            }
        }
    }
    say(&format!("result {}", t.result()));
    Ok(())
}

/// What a sender reports: when it started, how long it took and what each
/// send cost it (per `chunk` sends when unpaced, so the clock's own cost
/// is spread).
fn pub_result(start: u64, end: u64, sent: u64, cost: &Histogram<u64>, chunk: u64) -> Value {
    json!({
        "start": start,
        "end": end,
        "sent": sent,
        "cost_chunk": chunk,
        "cost": encode(cost),
    })
}

fn bus_pub(a: &PubArgs) -> Result<(), String> {
    tight_timer_slack();
    let mut p =
        Publisher::<[u8]>::attach(&a.target, &OpenOptions::default()).map_err(|e| e.to_string())?;
    let mut msg = [0u8; MSG];
    let mut cost = histogram();
    say("ready");
    wait_go()?;
    let total = a.warmup + a.count;
    let chunk = if a.pace_ns == 0 { 256 } else { 1 };
    let start = now_ns();
    let mut i = 0;
    while i < total {
        let n = chunk.min(total - i);
        if a.pace_ns > 0 {
            sleep_until(start + i * a.pace_ns);
        }
        let t0 = now_ns();
        for k in i..i + n {
            fill(&mut msg, k);
            msg[..8].copy_from_slice(&now_ns().to_le_bytes());
            p.publish(&msg).map_err(|e| e.to_string())?;
        }
        let t1 = now_ns();
        if i >= a.warmup {
            let _ = cost.record(((t1 - t0) / n).max(1));
        }
        i += n;
    }
    let end = now_ns();
    say(&format!(
        "result {}",
        pub_result(start, end, total, &cost, chunk)
    ));
    Ok(())
}

fn plain_pub(a: &PubArgs) -> Result<(), String> {
    tight_timer_slack();
    let endpoints = Endpoints {
        connect: a.connect.iter().cloned().collect(),
        ..Endpoints::default()
    };
    let session = session(&endpoints).map_err(|e| e.to_string())?;
    // As the bridge-out declares its own.
    let publisher = session
        .declare_publisher(a.target.clone())
        .congestion_control(CongestionControl::Block)
        .wait()
        .map_err(|e| e.to_string())?;
    let deadline = Instant::now() + Duration::from_secs(30);
    while !publisher
        .matching_status()
        .wait()
        .map(|m| m.matching())
        .unwrap_or(false)
    {
        if Instant::now() > deadline {
            return Err("no subscriber matched in 30 s".into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut cost = histogram();
    say("ready");
    wait_go()?;
    let total = a.warmup + a.count;
    let pack = a.pack.max(1);
    let start = now_ns();
    let mut msg = [0u8; MSG];
    let mut i = 0;
    while i < total {
        let n = pack.min(total - i);
        if a.pace_ns > 0 {
            sleep_until(start + i * a.pace_ns);
        }
        let t0 = now_ns();
        let mut put = Vec::with_capacity(n as usize * MSG);
        for k in i..i + n {
            fill(&mut msg, k);
            msg[..8].copy_from_slice(&now_ns().to_le_bytes());
            put.extend_from_slice(&msg);
        }
        publisher.put(put).wait().map_err(|e| e.to_string())?;
        if i >= a.warmup {
            let _ = cost.record(((now_ns() - t0) / n).max(1));
        }
        i += n;
    }
    let end = now_ns();
    say(&format!(
        "result {}",
        pub_result(start, end, total, &cost, pack)
    ));
    Ok(())
}

// ---------------------------------------------------------------- driver

/// A child process and its stdout, line by line; killed if still running
/// when dropped.
struct Proc {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl Proc {
    fn start(
        name: &str,
        ns: &str,
        program: &str,
        args: &[String],
        log: &str,
    ) -> Result<Proc, String> {
        let err = std::fs::File::create(log).map_err(|e| format!("{log}: {e}"))?;
        let mut child = Command::new("ip")
            .args(["netns", "exec", ns, program])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(err)
            .spawn()
            .map_err(|e| format!("starting {name}: {e}"))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Proc {
            name: name.to_owned(),
            stdin: child.stdin.take(),
            child,
            lines,
        })
    }

    /// The first line starting with `prefix`, within `limit`.
    fn expect(&mut self, prefix: &str, limit: Duration) -> Result<String, String> {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.starts_with(prefix) => return Ok(line),
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => {
                    return Err(format!("{}: no '{prefix}' within {limit:?}", self.name));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(format!(
                        "{}: exited before '{prefix}' (see its log)",
                        self.name
                    ));
                }
            }
        }
    }

    fn result(&mut self, limit: Duration) -> Result<Value, String> {
        let line = self.expect("result ", limit)?;
        serde_json::from_str(&line["result ".len()..]).map_err(|e| format!("{}: {e}", self.name))
    }

    fn go(&mut self) -> Result<(), String> {
        let stdin = self.stdin.as_mut().ok_or("no stdin")?;
        writeln!(stdin, "go").map_err(|e| format!("{}: {e}", self.name))
    }

    /// SIGTERM, then a bounded wait, then SIGKILL.
    fn stop(mut self) {
        let pid = rustix::process::Pid::from_raw(self.child.id() as i32);
        if let Some(pid) = pid {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
        for _ in 0..500 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The buses of a run, removed when it ends however it ends.
struct Buses(Vec<String>);

impl Buses {
    fn create(&mut self, name: String, capacity: u64) -> Result<String, String> {
        let _ = shmbus::remove(&name);
        let p = Publisher::<[u8]>::create(&name, &BusOptions::new(capacity).msg_size(MSG as u32))
            .map_err(|e| format!("creating {name}: {e}"))?;
        // Nobody publishes yet: the bridge-in and the bus-pub attach.
        drop(p);
        self.0.push(name.clone());
        Ok(name)
    }
}

impl Drop for Buses {
    fn drop(&mut self) {
        for b in &self.0 {
            let _ = shmbus::remove(b);
        }
    }
}

/// What one block measured, as the driver keeps it.
#[derive(Default)]
struct Acc {
    latency: Option<Histogram<u64>>,
    cost: Option<Histogram<u64>>,
    cost_sum_ns: f64,
    cost_n: u64,
    delivered: u64,
    skipped: u64,
    corrupt: u64,
    sent: u64,
    rates: Vec<f64>,
    p50s: Vec<u64>,
    cost_p50s: Vec<u64>,
}

impl Acc {
    fn merge(h: &mut Option<Histogram<u64>>, add: &Histogram<u64>) {
        match h {
            Some(h) => {
                let _ = h.add(add);
            }
            None => *h = Some(add.clone()),
        }
    }

    fn add_sub(&mut self, r: &Value, start: u64) {
        if let Some(h) = r["latency"].as_str().and_then(decode) {
            if !h.is_empty() {
                self.p50s.push(h.value_at_quantile(0.5));
            }
            Acc::merge(&mut self.latency, &h);
        }
        let n = |k: &str| r[k].as_u64().unwrap_or(0);
        self.delivered += n("delivered");
        self.skipped += n("skipped");
        self.corrupt += n("corrupt");
        let span = n("last_recv").saturating_sub(start);
        if span > 0 {
            self.rates.push(n("delivered") as f64 * 1e9 / span as f64);
        }
    }

    fn add_pub(&mut self, r: &Value) {
        if let Some(h) = r["cost"].as_str().and_then(decode) {
            if !h.is_empty() {
                self.cost_p50s.push(h.value_at_quantile(0.5));
                self.cost_sum_ns += h.mean() * h.len() as f64;
                self.cost_n += h.len();
            }
            Acc::merge(&mut self.cost, &h);
        }
        self.sent += r["sent"].as_u64().unwrap_or(0);
    }

    fn json(&self) -> Value {
        let dist = |h: &Option<Histogram<u64>>| match h {
            Some(h) if !h.is_empty() => json!({
                "samples": h.len(),
                "p50_ns": h.value_at_quantile(0.5),
                "p99_ns": h.value_at_quantile(0.99),
                "p999_ns": h.value_at_quantile(0.999),
                "max_ns": h.max(),
                "mean_ns": h.mean(),
            }),
            _ => Value::Null,
        };
        let mut rates = self.rates.clone();
        rates.sort_by(f64::total_cmp);
        json!({
            "latency": dist(&self.latency),
            "latency_p50_per_round_ns": self.p50s,
            "publish_cost": dist(&self.cost),
            "publish_cost_p50_per_round_ns": self.cost_p50s,
            "sent": self.sent,
            "delivered": self.delivered,
            "skipped": self.skipped,
            "corrupt": self.corrupt,
            "msgs_per_s_per_round": self.rates,
            "msgs_per_s_median": rates.get(rates.len() / 2).copied(),
        })
    }
}

/// How long a block may take before it is called stuck.
fn block_limit(count: u64, pace_ns: u64) -> Duration {
    Duration::from_secs(60) + Duration::from_nanos(count.saturating_mul(pace_ns.max(2_000)))
}

fn run(a: &RunArgs) -> Result<(), String> {
    let exe = std::env::current_exe()
        .map_err(|e| e.to_string())?
        .to_string_lossy()
        .into_owned();
    let (rounds, lat, thr) = if a.quick {
        (1, 2_000, 50_000)
    } else {
        (a.rounds, a.lat_samples, a.thr_count)
    };
    let pace = a.pace_us * 1000;
    let warm_lat = lat / 20 + 100;
    let work = std::env::temp_dir().join(format!("bridge_bench-{}", std::process::id()));
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    let log = |name: &str| {
        work.join(format!("{name}.log"))
            .to_string_lossy()
            .into_owned()
    };
    let tag = std::process::id();
    let mut buses = Buses(Vec::new());
    // Latency and publish cost on small rings; throughput on rings that
    // hold a whole block, so a block measures how fast the bridge drains
    // it (a lap would show as skipped).
    let ring_thr = (thr + warm_lat).next_power_of_two();
    let up_l = buses.create(format!("/dev/shm/zbench-{tag}-up-lat"), 4096)?;
    let down_l = buses.create(format!("/dev/shm/zbench-{tag}-down-lat"), 4096)?;
    let up_t = buses.create(format!("/dev/shm/zbench-{tag}-up-thr"), ring_thr)?;
    let down_t = buses.create(format!("/dev/shm/zbench-{tag}-down-thr"), ring_thr)?;
    let alone_l = buses.create(format!("/dev/shm/zbench-{tag}-alone-lat"), 4096)?;
    let alone_t = buses.create(format!("/dev/shm/zbench-{tag}-alone-thr"), ring_thr)?;

    // The bridges, long-lived as deployed: one pair per upstream bus.
    let mut bridges = Vec::new();
    for (i, (up, down)) in [(&up_l, &down_l), (&up_t, &down_t)].into_iter().enumerate() {
        let ep = format!("tcp/{}:{}", a.addr_b, 7447 + i);
        let key = format!("zbench/{tag}/{i}");
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let mut bin = Proc::start(
            &format!("bridge-in-{i}"),
            &a.ns_b,
            &a.shmbus,
            &s(&["bridge", "in", &key, down, "--listen", &ep]),
            &log(&format!("bridge-in-{i}")),
        )?;
        bin.expect("listening", Duration::from_secs(30))?;
        let mut bout = Proc::start(
            &format!("bridge-out-{i}"),
            &a.ns_a,
            &a.shmbus,
            &s(&[
                "bridge",
                "out",
                up,
                "--key",
                &key,
                "--connect",
                &ep,
                "--wait",
                if i == 0 { &a.out_wait } else { "futex" },
            ]),
            &log(&format!("bridge-out-{i}")),
        )?;
        bout.expect("matched", Duration::from_secs(30))?;
        bridges.push(bin);
        bridges.push(bout);
    }

    let mut acc: BTreeMap<&str, Acc> = BTreeMap::new();
    let mut port = 7460;
    for round in 0..=rounds {
        // Round 0 warms everything (rings paged in, connections up) and
        // is not counted.
        let counted = round > 0;
        let (lat_n, thr_n) = if counted {
            (lat, thr)
        } else {
            (lat / 10 + 10, thr / 10 + 10)
        };
        let flip = round % 2 == 1;
        eprintln!(
            "round {round}/{rounds}{}",
            if counted { "" } else { " (warm-up)" }
        );
        let mut blocks: Vec<(&str, Block)> = vec![
            ("latency_plain", Block::plain(lat_n, warm_lat, pace, 1)),
            (
                "latency_bridge",
                Block::bus(&up_l, &down_l, lat_n, warm_lat, pace),
            ),
            ("throughput_plain", Block::plain(thr_n, 0, 0, 1)),
            ("throughput_bridge", Block::bus(&up_t, &down_t, thr_n, 0, 0)),
            ("throughput_plain_packed", Block::plain(thr_n, 0, 0, a.pack)),
            (
                "publish_cost_paced_alone",
                Block::alone(&alone_l, lat_n, warm_lat, pace),
            ),
            (
                "publish_cost_flat_alone",
                Block::alone(&alone_t, thr_n, 0, 0),
            ),
        ];
        if flip {
            // Plain first in even rounds, the bridge first in odd ones.
            blocks.swap(0, 1);
            blocks.swap(2, 3);
        }
        for (name, block) in blocks {
            port += 1;
            let key = format!("zbench/{tag}/plain/{port}");
            let results = block.run(a, &exe, &key, port, &log(name))?;
            if counted {
                let e = acc.entry(name).or_default();
                let (p, s) = results;
                e.add_pub(&p);
                if let Some(s) = s {
                    e.add_sub(&s, p["start"].as_u64().unwrap_or(0));
                }
                eprintln!("  {name}: {}", summary(e));
            }
        }
    }
    for b in bridges {
        b.stop();
    }
    drop(buses);
    report(a, &acc, rounds, lat, thr, pace)
}

fn summary(e: &Acc) -> String {
    let p50 = e
        .p50s
        .last()
        .map(|v| format!("p50 {v} ns "))
        .unwrap_or_default();
    let rate = e
        .rates
        .last()
        .map(|v| format!("{:.0} msg/s ", v))
        .unwrap_or_default();
    let cost = e
        .cost_p50s
        .last()
        .map(|v| format!("cost p50 {v} ns"))
        .unwrap_or_default();
    format!("{p50}{rate}{cost}")
}

/// One block: a sender and (unless alone) a receiver.
struct Block {
    kind: BlockKind,
    count: u64,
    warmup: u64,
    pace_ns: u64,
}

enum BlockKind {
    Plain { pack: u64 },
    Bus { up: String, down: String },
    Alone { bus: String },
}

impl Block {
    fn plain(count: u64, warmup: u64, pace_ns: u64, pack: u64) -> Block {
        Block {
            kind: BlockKind::Plain { pack },
            count,
            warmup,
            pace_ns,
        }
    }
    fn bus(up: &str, down: &str, count: u64, warmup: u64, pace_ns: u64) -> Block {
        Block {
            kind: BlockKind::Bus {
                up: up.into(),
                down: down.into(),
            },
            count,
            warmup,
            pace_ns,
        }
    }
    fn alone(bus: &str, count: u64, warmup: u64, pace_ns: u64) -> Block {
        Block {
            kind: BlockKind::Alone { bus: bus.into() },
            count,
            warmup,
            pace_ns,
        }
    }

    /// Runs it: the receiver first (ready), then the sender (ready), then
    /// go; returns the sender's and the receiver's results.
    fn run(
        &self,
        a: &RunArgs,
        exe: &str,
        key: &str,
        port: u32,
        log: &str,
    ) -> Result<(Value, Option<Value>), String> {
        let n = |k: &str, v: u64| [format!("--{k}"), v.to_string()];
        let mut common: Vec<String> = Vec::new();
        common.extend(n("count", self.count));
        common.extend(n("warmup", self.warmup));
        let ep = format!("tcp/{}:{port}", a.addr_b);
        let (sub, mut publisher) = match &self.kind {
            BlockKind::Plain { pack } => {
                let mut sargs = vec![
                    "plain-sub".into(),
                    "--target".into(),
                    key.into(),
                    "--listen".into(),
                    ep.clone(),
                ];
                sargs.extend(common.clone());
                let mut sub =
                    Proc::start("plain-sub", &a.ns_b, exe, &sargs, &format!("{log}.sub"))?;
                sub.expect("ready", Duration::from_secs(30))?;
                let mut pargs = vec![
                    "plain-pub".into(),
                    "--target".into(),
                    key.into(),
                    "--connect".into(),
                    ep,
                ];
                pargs.extend(common);
                pargs.extend(n("pace-ns", self.pace_ns));
                pargs.extend(n("pack", *pack));
                let p = Proc::start("plain-pub", &a.ns_a, exe, &pargs, &format!("{log}.pub"))?;
                (Some(sub), p)
            }
            BlockKind::Bus { up, down } => {
                let mut sargs = vec!["bus-sub".into(), "--target".into(), down.clone()];
                sargs.extend(common.clone());
                if a.sub_futex {
                    sargs.push("--futex".into());
                }
                let mut sub = Proc::start("bus-sub", &a.ns_b, exe, &sargs, &format!("{log}.sub"))?;
                sub.expect("ready", Duration::from_secs(30))?;
                let mut pargs = vec!["bus-pub".into(), "--target".into(), up.clone()];
                pargs.extend(common);
                pargs.extend(n("pace-ns", self.pace_ns));
                let p = Proc::start("bus-pub", &a.ns_a, exe, &pargs, &format!("{log}.pub"))?;
                (Some(sub), p)
            }
            BlockKind::Alone { bus } => {
                let mut pargs = vec!["bus-pub".into(), "--target".into(), bus.clone()];
                pargs.extend(common);
                pargs.extend(n("pace-ns", self.pace_ns));
                let p = Proc::start("bus-pub", &a.ns_a, exe, &pargs, &format!("{log}.pub"))?;
                (None, p)
            }
        };
        publisher.expect("ready", Duration::from_secs(30))?;
        publisher.go()?;
        let limit = block_limit(self.count + self.warmup, self.pace_ns);
        let p = publisher.result(limit)?;
        let s = match sub {
            Some(mut s) => Some(s.result(limit + IDLE_LIMIT)?),
            None => None,
        };
        Ok((p, s))
    }
}

fn report(
    a: &RunArgs,
    acc: &BTreeMap<&str, Acc>,
    rounds: u32,
    lat: u64,
    thr: u64,
    pace: u64,
) -> Result<(), String> {
    let get = |k: &str| acc.get(k).map(Acc::json).unwrap_or(Value::Null);
    let rows: BTreeMap<&str, Value> = [
        "latency_plain",
        "latency_bridge",
        "throughput_plain",
        "throughput_plain_packed",
        "throughput_bridge",
        "publish_cost_paced_alone",
        "publish_cost_flat_alone",
    ]
    .into_iter()
    .map(|k| (k, get(k)))
    .collect();
    let f = |k: &str, path: &[&str]| {
        let mut v = &rows[k];
        for p in path {
            v = &v[*p];
        }
        v.as_f64()
    };
    let ratio = |x: Option<f64>, y: Option<f64>| match (x, y) {
        (Some(x), Some(y)) if y > 0.0 => Some(x / y),
        _ => None,
    };
    let lat_ratio = ratio(
        f("latency_bridge", &["latency", "p50_ns"]),
        f("latency_plain", &["latency", "p50_ns"]),
    );
    let thr_bridge = f("throughput_bridge", &["msgs_per_s_median"]);
    let thr_ratio = ratio(thr_bridge, f("throughput_plain", &["msgs_per_s_median"]));
    let thr_ratio_packed = ratio(
        thr_bridge,
        f("throughput_plain_packed", &["msgs_per_s_median"]),
    );
    let cost = |with: &str, alone: &str, k: &str| {
        ratio(
            f(with, &["publish_cost", k]),
            f(alone, &["publish_cost", k]),
        )
    };
    let ratios = json!({
        "latency_p50_bridge_over_plain": lat_ratio,
        "throughput_bridge_over_plain": thr_ratio,
        "throughput_bridge_over_plain_packed": thr_ratio_packed,
        "publish_cost_paced_p50_bridged_over_alone": cost("latency_bridge", "publish_cost_paced_alone", "p50_ns"),
        "publish_cost_paced_mean_bridged_over_alone": cost("latency_bridge", "publish_cost_paced_alone", "mean_ns"),
        "publish_cost_flat_p50_bridged_over_alone": cost("throughput_bridge", "publish_cost_flat_alone", "p50_ns"),
        "publish_cost_flat_mean_bridged_over_alone": cost("throughput_bridge", "publish_cost_flat_alone", "mean_ns"),
    });
    let targets = json!({
        "latency_p50_ratio_at_most_1_2": lat_ratio.map(|r| r <= 1.2),
        "throughput_ratio_at_least_0_9": thr_ratio.map(|r| r >= 0.9),
        "throughput_at_least_1M": thr_bridge.map(|r| r >= 1e6),
    });
    let out = json!({
        "settings": {
            "quick": a.quick,
            "rounds": rounds,
            "latency_samples_per_block": lat,
            "pace_ns": pace,
            "throughput_msgs_per_block": thr,
            "msg_bytes": MSG,
            "packed_msgs_per_put": a.pack,
            "batch_bytes": shmbus_zenoh::BATCH_BYTES,
            "clock": "CLOCK_MONOTONIC, one clock for every process of the machine",
            "plain_receiver": "zenoh subscriber callback (zenoh's receive thread)",
            "bus_receiver": if a.sub_futex { "shmbus subscriber, 5 µs spin then futex" } else { "shmbus subscriber, busy spin" },
        },
        "rows": rows,
        "ratios": ratios,
        "targets": targets,
    });
    print_table(&rows, &ratios, &targets);
    if let Some(path) = &a.json {
        let text = serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?;
        std::fs::write(path, text + "\n").map_err(|e| format!("{path}: {e}"))?;
    }
    Ok(())
}

fn print_table(rows: &BTreeMap<&str, Value>, ratios: &Value, targets: &Value) {
    let us = |v: &Value| {
        v.as_f64()
            .map(|x| format!("{:.1}", x / 1000.0))
            .unwrap_or("-".into())
    };
    println!("one-way latency, 64 B (µs)      p50     p99   p99.9     max  samples");
    for k in ["latency_plain", "latency_bridge"] {
        let l = &rows[k]["latency"];
        println!(
            "  {k:<28} {:>7} {:>7} {:>7} {:>7} {:>8}",
            us(&l["p50_ns"]),
            us(&l["p99_ns"]),
            us(&l["p999_ns"]),
            us(&l["max_ns"]),
            l["samples"]
        );
    }
    println!("throughput, 64 B           msg/s (median)  delivered  skipped  corrupt");
    for k in [
        "throughput_plain",
        "throughput_plain_packed",
        "throughput_bridge",
    ] {
        let r = &rows[k];
        println!(
            "  {k:<28} {:>10} {:>10} {:>8} {:>8}",
            r["msgs_per_s_median"]
                .as_f64()
                .map(|x| format!("{x:.0}"))
                .unwrap_or("-".into()),
            r["delivered"],
            r["skipped"],
            r["corrupt"]
        );
    }
    println!("upstream publish cost (ns)          p50    mean     p99");
    for (label, k) in [
        ("paced, bridge-out attached", "latency_bridge"),
        ("paced, alone", "publish_cost_paced_alone"),
        ("flat out, bridge-out attached", "throughput_bridge"),
        ("flat out, alone", "publish_cost_flat_alone"),
    ] {
        let c = &rows[k]["publish_cost"];
        let ns = |v: &Value| v.as_f64().map(|x| format!("{x:.0}")).unwrap_or("-".into());
        println!(
            "  {label:<32} {:>6} {:>7} {:>7}",
            ns(&c["p50_ns"]),
            ns(&c["mean_ns"]),
            ns(&c["p99_ns"])
        );
    }
    println!("ratios: {ratios}");
    println!("targets: {targets}");
}
