//! A stalled lossless subscriber against the publisher (the lossless rows' third
//! target: "a stalled lossless subscriber blocks the publisher for no
//! longer than the eviction timeout plus 1 ms").
//!
//! Each stall: a fresh 64-slot bus of 64 B messages with an eviction
//! timeout of [`EVICT`]; one lossless subscriber in a child process (this
//! binary's hidden `child`) that busy-polls, reading every message; the
//! publisher here publishes flat out, the subscriber keeping up (the gate
//! holds the publisher to its pace); then the child is SIGSTOPped and the
//! publisher goes on publishing flat out, each `publish` timed, until one
//! has waited for the eviction and a few thousand more have gone through.
//! A stall that measured nothing (its subscriber already evicted when
//! stopped, or evicted with no publish waiting half the timeout, on a
//! loaded machine) is run again, and counted (`voided`).
//! The figure of a stall is its longest single `publish`; the row is every
//! stall's, with the publisher's involuntary and voluntary context
//! switches over the stopped phase (the scheduler's part and the sleeps).
//!
//! Two rows: the publisher's default wait (`SpinFutex`: spin 50 µs, then
//! sleep on the bus's futex in naps of at most 2 ms, the last one to the
//! eviction deadline) and `BusySpin` (never sleeps): where the first
//! misses and the second meets, the sleep's wake-up is the cause; where
//! both miss, the scheduler (this process was not running).
//!
//! It runs before the bench pins itself, like the many-publishers table:
//! publisher and subscriber go where the scheduler puts them, as a user's
//! would.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use shmbus::{BusOptions, OpenOptions, Publisher, Received, Start, Subscriber, WaitStrategy};

use crate::error::BenchError;

/// The `--mechanism` name `child` takes for the stalled subscriber.
pub const CHILD: &str = "shmbus-stalled-subscriber";

/// The bus's eviction timeout in every stall.
pub const EVICT: Duration = Duration::from_millis(20);

/// Slots of each stall's bus: small, so that the ring fills at once.
const SLOTS: u64 = 64;

/// Bytes per message.
const MSG: usize = 64;

/// Publishes after the one that waited for the eviction (the publisher
/// must go on at full speed once the subscriber is demoted).
const AFTER: u64 = 4096;

/// How long a stall may take before the subscriber is called never
/// evicted (the bench fails: the guarantee is broken).
const STALL_LIMIT: Duration = Duration::from_secs(5);

/// Tries of one stall that measured nothing: its subscriber was already
/// evicted when stopped (the scheduler kept it off a CPU for longer than
/// [`EVICT`] while it kept up), or was evicted without any publish
/// waiting half the timeout (its last sign of life was that old when
/// stopped): on a loaded machine, not a broken guarantee. Past them the
/// bench fails.
const TRIES: u32 = 5;

/// One stall.
pub struct Stall {
    /// The longest single publish, ns.
    pub block_ns: u64,
    /// The publisher's involuntary context switches while the subscriber
    /// was stopped (preempted: waiting for a CPU).
    pub involuntary: u64,
    /// Its voluntary ones (futex sleeps).
    pub voluntary: u64,
}

/// One row: every stall of one publisher wait strategy.
pub struct Row {
    /// The publisher's wait strategy, as the table names it.
    pub wait: &'static str,
    /// Each stall, in order.
    pub stalls: Vec<Stall>,
    /// Stalls run again because their subscriber had been evicted before
    /// it was stopped (see [`TRIES`]).
    pub voided: u32,
}

impl Row {
    /// The longest block of all stalls, ns.
    pub fn max_ns(&self) -> Option<u64> {
        self.stalls.iter().map(|s| s.block_ns).max()
    }

    /// The median stall's block, ns.
    pub fn p50_ns(&self) -> Option<u64> {
        let mut v: Vec<u64> = self.stalls.iter().map(|s| s.block_ns).collect();
        v.sort_unstable();
        v.get(v.len() / 2).copied()
    }
}

/// Removes a stall's bus when dropped, even on error.
struct Gone(String);

impl Drop for Gone {
    fn drop(&mut self) {
        let _ = shmbus::remove(&self.0);
    }
}

/// A child process killed (after a SIGCONT) when dropped.
struct Victim(std::process::Child);

impl Drop for Victim {
    fn drop(&mut self) {
        signal(self.0.id(), libc::SIGCONT);
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn signal(pid: u32, sig: i32) {
    // SAFETY: kill(2) on a child of ours that we have not yet waited for
    // (its pid cannot have been reused).
    unsafe { libc::kill(pid as libc::pid_t, sig) };
}

/// Whether the stall's one subscriber has `contract` now.
fn contract_is(name: &str, contract: shmbus::stat::Contract) -> Result<bool, BenchError> {
    Ok(shmbus::stat::stat(name)
        .map_err(|e| BenchError::Stall {
            found: format!("stat of the stall's bus: {e}"),
            expected: "its subscriber's contract",
        })?
        .subscribers
        .iter()
        .any(|s| s.contract == contract))
}

/// The calling thread's (involuntary, voluntary) context switches.
fn switches() -> (u64, u64) {
    // SAFETY: rusage is plain integers, for which all zeroes is valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes only the struct we own and pass; RUSAGE_THREAD
    // is valid on Linux.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    (ru.ru_nivcsw as u64, ru.ru_nvcsw as u64)
}

/// The body of the stalled subscriber (`child --mechanism
/// shmbus-stalled-subscriber --token BUS`): opens lossless, says READY,
/// and reads every message until it is killed (or the block's deadline).
pub fn run_subscriber_child(bus: &str) -> Result<(), BenchError> {
    let opts = OpenOptions::default()
        .start(Start::Next)
        .wait_strategy(WaitStrategy::BusySpin)
        .lossless(true);
    let mut sub = Subscriber::<[u8]>::open(bus, &opts).map_err(|source| BenchError::OpenBus {
        name: bus.to_owned(),
        source,
    })?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "READY")
        .and_then(|_| out.flush())
        .map_err(BenchError::Stdout)?;
    let mut patience = crate::mech::Patience::default();
    loop {
        match sub.try_recv() {
            Some(Received::Message(_)) => {
                std::hint::black_box(sub.message());
            }
            Some(Received::Lagged { .. }) => {}
            None => patience.spin().map_err(|source| BenchError::Mechanism {
                mechanism: CHILD,
                stage: "receive",
                source,
            })?,
        }
    }
}

/// One stall with the publisher waiting by `wait`, tried again (at most
/// [`TRIES`] times, counted in `voided`) while its subscriber turns out
/// to have been evicted before it was stopped.
fn stall(label: &str, wait: WaitStrategy, voided: &mut u32) -> Result<Stall, BenchError> {
    for n in 0..TRIES {
        if let Some(s) = one_stall(&format!("{label}-{n}"), wait)? {
            return Ok(s);
        }
        *voided += 1;
    }
    Err(BenchError::Stall {
        found: format!("the subscriber evicted before it was stopped, {TRIES} times"),
        expected: "a lossless subscriber still gating the bus when stopped",
    })
}

/// One stall with the publisher waiting by `wait`; `None` if the
/// subscriber was no longer lossless when stopped (evicted already).
fn one_stall(label: &str, wait: WaitStrategy) -> Result<Option<Stall>, BenchError> {
    let name = format!("shmbus-bench-stall-{}-{label}", std::process::id());
    let _gone = Gone(name.clone());
    let opts = BusOptions::new(SLOTS)
        .msg_size(MSG as u32)
        .evict_after(EVICT);
    let mut p =
        Publisher::<[u8]>::create(&name, &opts).map_err(|source| BenchError::CreateBus {
            name: name.clone(),
            source,
        })?;
    p.set_wait_strategy(wait);
    let exe = std::env::current_exe().map_err(BenchError::CurrentExe)?;
    let child = Command::new(&exe)
        .args(["child", "--mechanism", CHILD, "--pattern", "throughput"])
        .args(["--msg-size", &MSG.to_string(), "--receivers", "1"])
        .args(["--index", "0", "--token", &name, "--prefix", "stall"])
        .args([
            "--warmup", "0", "--count", "0", "--pace", "0", "--clock", "-",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|source| BenchError::Spawn {
            what: "a stalled lossless subscriber".into(),
            source,
        })?;
    let mut victim = Victim(child);
    let mut out = BufReader::new(victim.0.stdout.take().expect("piped stdout"));
    let mut line = String::new();
    out.read_line(&mut line).map_err(|e| BenchError::Stall {
        found: format!("reading the subscriber's READY: {e}"),
        expected: "its READY line",
    })?;
    if line.trim() != "READY" {
        return Err(BenchError::Stall {
            found: format!("the subscriber said {:?}", line.trim()),
            expected: "its READY line",
        });
    }
    let msg = [7u8; MSG];
    // The subscriber keeps up: the gate holds the publisher to its pace.
    for _ in 0..SLOTS * 64 {
        p.publish(&msg).map_err(|e| BenchError::Stall {
            found: e.to_string(),
            expected: "a publish",
        })?;
    }
    let pid = victim.0.id();
    let (iv0, v0) = switches();
    signal(pid, libc::SIGSTOP);
    // Only this thread publishes, so nothing can evict the subscriber
    // between this look and the stall: it gates the bus now or never will.
    if !contract_is(&name, shmbus::stat::Contract::Lossless)? {
        return Ok(None);
    }
    let start = Instant::now();
    let mut longest = Duration::ZERO;
    let mut after = None;
    loop {
        let t = Instant::now();
        let published = p.publish(&msg);
        let took = t.elapsed();
        // A publish that failed returned at once: timed, it would pass for
        // one that the eviction let through.
        published.map_err(|e| BenchError::Stall {
            found: e.to_string(),
            expected: "a publish",
        })?;
        longest = longest.max(took);
        if after.is_none() && took >= EVICT / 2 {
            after = Some(0u64);
        }
        if let Some(n) = after.as_mut() {
            *n += 1;
            if *n > AFTER {
                break;
            }
        }
        if after.is_none()
            && start.elapsed() > 10 * EVICT
            && contract_is(&name, shmbus::stat::Contract::Evicted)?
        {
            // Evicted, but no publish waited half the timeout for it: its
            // last sign of life was older than that when it was stopped.
            // The guarantee held; this stall measured nothing.
            return Ok(None);
        }
        if start.elapsed() > STALL_LIMIT {
            return Err(BenchError::Stall {
                found: format!(
                    "no publish waited past half the eviction timeout in {STALL_LIMIT:?}"
                ),
                expected: "the stopped lossless subscriber to hold the publisher, then be evicted",
            });
        }
    }
    let (iv1, v1) = switches();
    drop(victim);
    Ok(Some(Stall {
        block_ns: longest.as_nanos() as u64,
        involuntary: iv1 - iv0,
        voluntary: v1 - v0,
    }))
}

/// Every stall of both rows, interleaved (stall k of each row runs close
/// together).
pub fn run(quick: bool) -> Result<Vec<Row>, BenchError> {
    let stalls = if quick { 3 } else { 10 };
    let mut rows = vec![
        Row {
            wait: "SpinFutex (default)",
            stalls: Vec::new(),
            voided: 0,
        },
        Row {
            wait: "BusySpin",
            stalls: Vec::new(),
            voided: 0,
        },
    ];
    for k in 0..stalls {
        let s = stall(
            &format!("futex-{k}"),
            WaitStrategy::default(),
            &mut rows[0].voided,
        )?;
        rows[0].stalls.push(s);
        let s = stall(
            &format!("spin-{k}"),
            WaitStrategy::BusySpin,
            &mut rows[1].voided,
        )?;
        rows[1].stalls.push(s);
    }
    Ok(rows)
}

/// Prints the rows.
pub fn print(rows: &[Row]) {
    if rows.is_empty() {
        return;
    }
    println!(
        "\nstalled lossless subscriber (SIGSTOP; eviction timeout {EVICT:?}): the publisher's longest single publish"
    );
    for r in rows {
        let ms = |ns: u64| ns as f64 / 1e6;
        let each: Vec<String> = r
            .stalls
            .iter()
            .map(|s| format!("{:.2}", ms(s.block_ns)))
            .collect();
        println!(
            "  {:20} max {:.2} ms, p50 {:.2} ms over {} stalls: [{}] ms{}",
            r.wait,
            ms(r.max_ns().unwrap_or(0)),
            ms(r.p50_ns().unwrap_or(0)),
            r.stalls.len(),
            each.join(", "),
            match r.voided {
                0 => String::new(),
                n => format!(" ({n} run again: evicted before the stop)"),
            }
        );
    }
}

/// The rows as `--json` writes them under `stall`.
pub fn json(rows: &[Row], quick: bool) -> serde_json::Value {
    let ms = |ns: u64| (ns as f64 / 1e3).round() / 1e3;
    serde_json::json!({
        "evict_ms": EVICT.as_secs_f64() * 1e3,
        "slots": SLOTS,
        "msg_size": MSG,
        "quick": quick,
        "rows": rows.iter().map(|r| serde_json::json!({
            "wait": r.wait,
            "max_ms": r.max_ns().map(ms),
            "p50_ms": r.p50_ns().map(ms),
            "block_ms": r.stalls.iter().map(|s| ms(s.block_ns)).collect::<Vec<_>>(),
            "involuntary_cs": r.stalls.iter().map(|s| s.involuntary).collect::<Vec<_>>(),
            "voluntary_cs": r.stalls.iter().map(|s| s.voluntary).collect::<Vec<_>>(),
            "voided": r.voided,
        })).collect::<Vec<_>>(),
    })
}
