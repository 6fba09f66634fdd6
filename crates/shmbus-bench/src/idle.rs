//! Idle CPU: what async subscribers that have nothing to receive
//! cost. One receiver process (a hidden `child` of this binary, not pinned)
//! opens 1, or 100, subscribers, each on a bus (ring) of its own that
//! nobody publishes on, and awaits each in a task of one tokio
//! current-thread runtime (`shmbus_wake::runtime`, the async rows' own,
//! its tasks on a `LocalSet`). Once every task waits (shmbus: every
//! future registered with the `aio` waiter, `aio::registrations`;
//! ringfire: every task started) and a settling pause is over, the child
//! reads its process's CPU time (every thread, user and system,
//! `getrusage(RUSAGE_SELF)`), sleeps the window (10 s; 1 s with
//! `--quick`), reads it again and reports both with the window's length.
//!
//! Rows: `shmbus-async` (`recv_async`) and `ringfire-async`
//! (`AsyncRingConsumer::recv_detailed`, its spin, `yield_now` and 50 µs
//! timer), each at 1 and 100 subscribers, whenever that row is among the
//! run's mechanisms.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::error::BenchError;
use crate::mech::{self, shmbus_wake};

/// The `--mechanism` name `child` takes for an idle shmbus receiver.
pub const CHILD_SHMBUS: &str = "idle-shmbus-async";
/// The same for ringfire.
pub const CHILD_RINGFIRE: &str = "idle-ringfire-async";

/// Subscribers per process of each row.
pub const COUNTS: [usize; 2] = [1, 100];

/// The rows' mechanisms, each with its child's name.
const ROWS: [(&str, &str); 2] = [
    ("shmbus-async", CHILD_SHMBUS),
    ("ringfire-async", CHILD_RINGFIRE),
];

/// Slots of each idle bus or ring (nothing is ever published on it).
const SLOTS: u64 = 64;

/// Bytes per message of each idle bus or ring.
const MSG_SIZE: usize = 64;

/// How long after every task waits the window starts: the runtime's and
/// the waiter's start-up is not idle time.
const SETTLE: Duration = Duration::from_millis(200);

/// How long a child may take to get every task waiting.
const READY_LIMIT: Duration = Duration::from_secs(20);

/// One row: a mechanism's idle subscribers in one process.
pub struct Row {
    /// `shmbus-async` or `ringfire-async`.
    pub mechanism: &'static str,
    /// Subscribers (tasks) in the process.
    pub subscribers: usize,
    /// The window's length, seconds.
    pub secs: f64,
    /// CPU time the process used in the window, ns (all threads).
    pub cpu_ns: u64,
    /// Why it failed, if it did: the run fails once the tables are out.
    pub failed: Option<String>,
}

impl Row {
    /// What is wrong with this row, if anything, named.
    pub fn fault(&self) -> Option<String> {
        let why = self.failed.as_ref()?;
        Some(format!(
            "idle {} x{}: {why}",
            self.mechanism, self.subscribers
        ))
    }

    /// The share of one core the process used, in %.
    pub fn percent(&self) -> Option<f64> {
        (self.failed.is_none() && self.secs > 0.0)
            .then(|| self.cpu_ns as f64 / (self.secs * 1e9) * 100.0)
    }

    /// What `--json` writes for this row.
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "mechanism": self.mechanism,
            "subscribers": self.subscribers,
            "secs": self.secs,
            "cpu_ns": self.failed.is_none().then_some(self.cpu_ns),
            "cpu_percent": self.percent().map(|p| (p * 1e4).round() / 1e4),
            "failed": self.failed,
        })
    }
}

/// Runs the idle rows of the mechanisms in `names` that have them.
pub fn run(quick: bool, names: &[&str]) -> Result<Vec<Row>, BenchError> {
    let window = if quick {
        Duration::from_secs(1)
    } else {
        Duration::from_secs(10)
    };
    let mut rows = Vec::new();
    for (mechanism, child) in ROWS {
        if !names.contains(&mechanism) {
            continue;
        }
        for n in COUNTS {
            eprintln!(
                "idle: {mechanism}, {n} subscriber(s), {} s",
                window.as_secs()
            );
            let mut row = Row {
                mechanism,
                subscribers: n,
                secs: window.as_secs_f64(),
                cpu_ns: 0,
                failed: None,
            };
            match measure(child, n, window) {
                Ok((cpu_ns, secs)) => (row.cpu_ns, row.secs) = (cpu_ns, secs),
                Err(e) => {
                    eprintln!("shmbus-bench: idle {mechanism} x{n}: {e}");
                    row.failed = Some(e.to_string());
                }
            }
            rows.push(row);
        }
    }
    Ok(rows)
}

fn name(token: &str, i: usize) -> String {
    format!("{token}-{i}")
}

/// The idle buses or rings of one row, removed (or, for ringfire, their
/// producers dropped, which unlinks each file) when dropped.
struct Rings {
    _buses: Option<mech::Segments>,
    /// Dropped before `_files`, which removes what a killed child left.
    _producers: Vec<::ringfire::RingProducer<[u8; MSG_SIZE]>>,
    _files: Option<mech::Files>,
}

fn make(child: &str, token: &str, n: usize) -> std::io::Result<Rings> {
    if child == CHILD_SHMBUS {
        let mut segs = mech::Segments {
            token: token.into(),
            names: Vec::new(),
        };
        for i in 0..n {
            let opts = shmbus::BusOptions::new(SLOTS).msg_size(MSG_SIZE as u32);
            shmbus::Publisher::<[u8]>::create(&name(token, i), &opts)
                .map_err(|e| std::io::Error::other(e.to_string()))?;
            segs.names.push(name(token, i));
        }
        Ok(Rings {
            _buses: Some(segs),
            _producers: Vec::new(),
            _files: None,
        })
    } else {
        let files = mech::Files {
            token: token.into(),
            paths: (0..n)
                .map(|i| mech::ringfire::path(&name(token, i)))
                .collect(),
        };
        let producers = (0..n)
            .map(|i| {
                ::ringfire::RingProducerBuilder::new(SLOTS)
                    .flow_control(::ringfire::FlowControl::LossyLatestWins)
                    .max_readers(0)
                    .build::<[u8; MSG_SIZE], _>(mech::ringfire::path(&name(token, i)))
                    .map_err(|e| std::io::Error::other(format!("ringfire: {e}")))
            })
            .collect::<std::io::Result<_>>()?;
        Ok(Rings {
            _buses: None,
            _producers: producers,
            _files: Some(files),
        })
    }
}

/// One row's child: its CPU time over the window, and the window, seconds.
fn measure(child: &str, n: usize, window: Duration) -> Result<(u64, f64), BenchError> {
    let failed = |source| BenchError::Mechanism {
        mechanism: "idle",
        stage: "measure",
        source,
    };
    let token = format!("shmbus-bench-{}-idle-{n}", std::process::id());
    let rings = make(child, &token, n).map_err(failed)?;
    let exe = std::env::current_exe().map_err(BenchError::CurrentExe)?;
    let mut proc = Command::new(exe)
        .args(["child", "--mechanism", child, "--pattern", "oneway"])
        .args(["--msg-size", &MSG_SIZE.to_string()])
        .args(["--receivers", &n.to_string(), "--index", "0"])
        .args(["--token", &token, "--prefix", "idle", "--warmup", "0"])
        .args(["--count", &window.as_millis().to_string()])
        .args(["--pace", "0", "--clock", "-"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|source| BenchError::Spawn {
            what: format!("an idle {child} process"),
            source,
        })?;
    let out = proc.stdout.take().expect("piped stdout");
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + READY_LIMIT + window + Duration::from_secs(10);
    let result = loop {
        match lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) => {
                if let Some(r) = line.strip_prefix("IDLE ") {
                    break parse(r).ok_or_else(|| {
                        failed(std::io::Error::other(format!("a bad IDLE line: {r:?}")))
                    });
                }
            }
            Err(_) => {
                break Err(failed(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "the idle child did not report (see its error above)",
                )));
            }
        }
    };
    let _ = proc.kill();
    let _ = proc.wait();
    drop(rings);
    result
}

/// `cpu_ns=N secs=S`.
fn parse(line: &str) -> Option<(u64, f64)> {
    let mut cpu = None;
    let mut secs = None;
    for kv in line.split_whitespace() {
        match kv.split_once('=')? {
            ("cpu_ns", v) => cpu = v.parse().ok(),
            ("secs", v) => secs = v.parse().ok(),
            _ => return None,
        }
    }
    Some((cpu?, secs?))
}

/// Whether `mechanism` is an idle child's name.
pub fn is_child(mechanism: &str) -> bool {
    mechanism == CHILD_SHMBUS || mechanism == CHILD_RINGFIRE
}

/// The child: `n` idle subscribers on `token`'s buses, awaited in one
/// runtime on a thread of their own; this thread measures the window
/// (`window_ms`), prints `IDLE cpu_ns=.. secs=..` and exits the process.
pub fn run_child(mechanism: &str, token: &str, n: usize, window_ms: u64) -> Result<(), BenchError> {
    let failed = |source| BenchError::Mechanism {
        mechanism: "idle",
        stage: "child",
        source,
    };
    let started = Arc::new(AtomicUsize::new(0));
    let shmbus = mechanism == CHILD_SHMBUS;
    let (token, count) = (token.to_owned(), started.clone());
    let (opened_tx, opened) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = match shmbus_wake::runtime() {
            Ok(rt) => rt,
            Err(e) => {
                let _ = opened_tx.send(Err(e));
                return;
            }
        };
        let local = tokio::task::LocalSet::new();
        local.block_on(&rt, async move {
            for i in 0..n {
                let path = name(&token, i);
                let opened = if shmbus {
                    spawn_shmbus(&path, count.clone())
                } else {
                    spawn_ringfire(&path, count.clone())
                };
                if let Err(e) = opened {
                    let _ = opened_tx.send(Err(e));
                    return;
                }
            }
            let _ = opened_tx.send(Ok(()));
            std::future::pending::<()>().await;
        });
    });
    opened
        .recv()
        .map_err(|_| failed(std::io::Error::other("the runtime's thread ended")))?
        .map_err(failed)?;
    // Every task waiting: shmbus's registered with the waiter thread.
    let until = Instant::now() + READY_LIMIT;
    let waiting =
        || started.load(Ordering::Acquire) == n && (!shmbus || shmbus::aio::registrations() == n);
    while !waiting() {
        if Instant::now() > until {
            return Err(failed(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the idle tasks did not all start waiting",
            )));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(SETTLE);
    let (c0, t0) = (crate::cpu::process_cpu_ns(), Instant::now());
    std::thread::sleep(Duration::from_millis(window_ms));
    let (c1, secs) = (crate::cpu::process_cpu_ns(), t0.elapsed().as_secs_f64());
    let mut out = std::io::stdout().lock();
    writeln!(out, "IDLE cpu_ns={} secs={secs}", c1.saturating_sub(c0))
        .and_then(|_| out.flush())
        .map_err(BenchError::Stdout)?;
    // The runtime's thread waits forever: end it with the process.
    std::process::exit(0)
}

/// One task awaiting a shmbus subscriber on `path`.
fn spawn_shmbus(path: &str, started: Arc<AtomicUsize>) -> std::io::Result<()> {
    let opts = shmbus::OpenOptions::default().start(shmbus::Start::Next);
    let mut sub = shmbus::Subscriber::<[u8]>::open(path, &opts)
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    tokio::task::spawn_local(async move {
        started.fetch_add(1, Ordering::Release);
        loop {
            let _ = sub.recv_async().await;
        }
    });
    Ok(())
}

/// One task awaiting ringfire's `AsyncRingConsumer` on `path`.
fn spawn_ringfire(path: &str, started: Arc<AtomicUsize>) -> std::io::Result<()> {
    let mut rx =
        ::ringfire::AsyncRingConsumer::<[u8; MSG_SIZE]>::from_consumer(mech::ringfire::attach::<
            MSG_SIZE,
        >(path)?);
    tokio::task::spawn_local(async move {
        started.fetch_add(1, Ordering::Release);
        loop {
            let _ = rx.recv_detailed().await;
        }
    });
    Ok(())
}

/// Prints the idle table.
pub fn print(rows: &[Row]) {
    if rows.is_empty() {
        return;
    }
    println!();
    println!("idle async subscribers: CPU used by their process, % of one core");
    for r in rows {
        let what = format!("{} x{} for {:.1} s", r.mechanism, r.subscribers, r.secs);
        match r.percent() {
            Some(p) => println!("  {what:40} {p:8.3} % ({} us)", r.cpu_ns / 1000),
            None => println!("  {what:40} FAILED: {}", r.failed.as_deref().unwrap_or("")),
        }
    }
}

/// What `--json` writes under the top-level key `idle`.
pub fn json(rows: &[Row]) -> serde_json::Value {
    serde_json::json!({
        "msg_size": MSG_SIZE,
        "rows": rows.iter().map(Row::json).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn an_idle_child_line_parses_and_a_bad_one_does_not() {
        assert_eq!(parse("cpu_ns=1200 secs=10.001"), Some((1200, 10.001)));
        assert_eq!(parse("cpu_ns=1200"), None);
        assert_eq!(parse("cpu_ns=x secs=1"), None);
        assert_eq!(parse("what=1 secs=1"), None);
    }
}
