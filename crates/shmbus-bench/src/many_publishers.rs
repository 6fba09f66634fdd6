//! Many publishers and subscriber groups: the cost of one publish with one
//! or two publishers, and of one receive per logical consumer, side by side
//! in one run.
//!
//! Publish cost is the time a publisher spends in a loop of N publishes (64
//! B messages, no subscriber), divided by N. "2 processes" runs two
//! publisher processes at once on one bus (each a hidden `child` of this
//! binary) and reports the mean of their per-message costs: the claim's
//! cache line then bounces between two cores, which is what MPMC costs.
//! The two start together (each warms up, says READY, and waits for GO on
//! stdin), and each measures its loop in thread CPU time as well as wall
//! time: on a loaded machine a descheduled publisher's wall time counts
//! time it did not run, while its CPU time does not. Contention exists only
//! while both run, so the row is the CPU figure of the one of three rounds
//! in which both publishers had the largest share of a CPU (the table
//! notes it when that share is under 90%); the JSON has every round, with
//! its wall figures, CPU share and time overlap.
//! photon-ring runs in threads of this process, its only mode (its
//! `ManyPublisher` is the in-thread reference).
//!
//! Receive cost per logical consumer: M messages are published into a ring
//! that holds them all; then a `SubscriberGroup` of 10 drains them (one
//! seqlock read per message serves 10 consumers), and 10 independent
//! subscribers drain them one after the other. Both are divided by 10 M.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use shmbus::{
    BusOptions, OpenOptions, Publisher, Received, Start, Subscriber, WaitStrategy,
    bus::{ManyPublisher, SubscriberGroup},
};

use crate::error::BenchError;

/// The 64-byte message every row moves (photon-ring's rows move the bare
/// array, the same bytes).
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(transparent)]
struct Msg([u64; 8]);

impl shmbus::Message for Msg {
    const NAME: &'static str = "shmbus.bench.Msg64";
}

/// The `--mechanism` name `child` takes for one publisher process.
pub const CHILD: &str = "shmbus-mp-publisher";

/// One line of the table.
pub struct Row {
    /// What was measured.
    pub what: String,
    /// Whose code: `shmbus` or `photon-ring`.
    pub mechanism: &'static str,
    /// `publish` (per message) or `receive` (per message per consumer).
    pub measure: &'static str,
    /// Nanoseconds per message (per logical consumer for receive rows).
    pub ns: f64,
    /// Extra figures for the JSON (the two-process rounds).
    pub detail: serde_json::Value,
}

impl Row {
    fn new(what: &str, mechanism: &'static str, measure: &'static str, ns: f64) -> Row {
        Row {
            what: what.into(),
            mechanism,
            measure,
            ns,
            detail: serde_json::Value::Null,
        }
    }

    /// The row as `--json` writes it under `mpmc.rows`.
    pub fn json(&self) -> serde_json::Value {
        let mut v = serde_json::json!({
            "what": self.what,
            "mechanism": self.mechanism,
            "measure": self.measure,
            "ns_per_msg": (self.ns * 1000.0).round() / 1000.0,
        });
        if !self.detail.is_null() {
            v["detail"] = self.detail.clone();
        }
        v
    }
}

fn ns_per(n: u64, t: Duration) -> f64 {
    t.as_nanos() as f64 / n as f64
}

fn bus_name(label: &str) -> String {
    format!("shmbus-bench-mpmc-{}-{label}", std::process::id())
}

/// Removes a bench bus when dropped, even on error.
struct Gone(String);

impl Drop for Gone {
    fn drop(&mut self) {
        let _ = shmbus::remove(&self.0);
    }
}

/// The error for bus `name`, which could not be created.
fn create_error(name: &str) -> impl FnOnce(shmbus::CreateError) -> BenchError + '_ {
    move |source| BenchError::CreateBus {
        name: name.to_owned(),
        source,
    }
}

/// The error for a publisher process's pipe that failed while `doing`.
fn pipe(doing: &'static str) -> impl FnOnce(std::io::Error) -> BenchError {
    move |source| BenchError::PublisherPipe { doing, source }
}

fn timed(n: u64, mut f: impl FnMut(u64)) -> f64 {
    // Warm up (page faults, branch predictors), then measure.
    for i in 0..n / 10 {
        f(i);
    }
    let start = Instant::now();
    for i in 0..n {
        f(i);
    }
    ns_per(n, start.elapsed())
}

fn now(clock: rustix::time::ClockId) -> u64 {
    let t = rustix::time::clock_gettime(clock);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// The body of one publisher process (`child --mechanism
/// shmbus-mp-publisher --token BUS --count N`): warms up, prints `READY`,
/// waits for a line on stdin, then publishes N messages and prints `ns=`
/// (wall) `cpu_ns=` (thread CPU time), both per message, and the loop's
/// `start=`/`end=` in CLOCK_MONOTONIC ns, comparable between processes.
pub fn run_publisher_child(bus: &str, count: u64) -> Result<(), BenchError> {
    use std::io::{BufRead, Write};
    let mut p = ManyPublisher::<Msg>::attach(bus, &OpenOptions::default()).map_err(|source| {
        BenchError::AttachBus {
            name: bus.to_owned(),
            source,
        }
    })?;
    let mut lost = 0u64;
    let mut publish = |i| {
        if p.publish(&Msg([i; 8])).is_err() {
            lost += 1;
        }
    };
    for i in 0..count / 10 {
        publish(i);
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "READY")
        .and_then(|_| out.flush())
        .map_err(BenchError::Stdout)?;
    let mut go = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut go)
        .map_err(|source| BenchError::PublisherPipe {
            doing: "waiting for GO on standard input",
            source,
        })?;
    let f = measure(count, publish);
    writeln!(
        out,
        "ns={:.3} cpu_ns={:.3} start={} end={} abandoned={lost}",
        f.wall_ns, f.cpu_ns, f.start, f.end
    )
    .map_err(BenchError::Stdout)
}

/// Runs `f` for `0..n`, timed in wall and this thread's CPU time.
fn measure(n: u64, mut f: impl FnMut(u64)) -> ChildFigures {
    use rustix::time::ClockId;
    let (start, cpu0) = (now(ClockId::Monotonic), now(ClockId::ThreadCPUTime));
    for i in 0..n {
        f(i);
    }
    let (end, cpu1) = (now(ClockId::Monotonic), now(ClockId::ThreadCPUTime));
    let per = |ns: u64| ns as f64 / n as f64;
    ChildFigures {
        wall_ns: per(end - start),
        cpu_ns: per(cpu1 - cpu0),
        start,
        end,
        abandoned: 0,
    }
}

/// One publisher's figures (a process's, from its result line).
struct ChildFigures {
    wall_ns: f64,
    cpu_ns: f64,
    start: u64,
    end: u64,
    /// Its publishes whose claim another publisher gave up on: with no
    /// subscriber and live publishers, none may be.
    abandoned: u64,
}

/// A publish row's claims were never abandoned: one that was timed a
/// publish that did not happen.
fn no_claim_abandoned(abandoned: u64) -> Result<(), BenchError> {
    if abandoned == 0 {
        return Ok(());
    }
    Err(BenchError::Mpmc {
        found: format!("{abandoned} publish(es) whose claim was abandoned"),
        expected: "every claim published (no subscriber, every publisher alive)",
    })
}

fn parse_child(line: &str) -> Option<ChildFigures> {
    let field = |k: &str| {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(k)?.strip_prefix('='))
    };
    Some(ChildFigures {
        wall_ns: field("ns")?.parse().ok()?,
        cpu_ns: field("cpu_ns")?.parse().ok()?,
        start: field("start")?.parse().ok()?,
        end: field("end")?.parse().ok()?,
        abandoned: field("abandoned")?.parse().ok()?,
    })
}

/// One round: two publisher processes started together.
fn two_publisher_round(count: u64) -> Result<[ChildFigures; 2], BenchError> {
    use std::io::{BufRead, BufReader, Write};
    let name = bus_name("mp2");
    let _gone = Gone(name.clone());
    let _creator = ManyPublisher::<Msg>::create(&name, &BusOptions::new(4096).many())
        .map_err(create_error(&name))?;
    let exe = std::env::current_exe().map_err(BenchError::CurrentExe)?;
    let mut children = (0..2)
        .map(|i| {
            Command::new(&exe)
                .args(["child", "--mechanism", CHILD, "--pattern", "throughput"])
                .args(["--msg-size", "64", "--receivers", "2", "--index"])
                .arg(i.to_string())
                .args(["--token", &name, "--prefix", "mpmc", "--warmup", "0"])
                .args(["--count", &count.to_string(), "--pace", "0", "--clock", "-"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .map_err(|source| BenchError::Spawn {
                    what: "a publisher process".into(),
                    source,
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    // A child that fails ends its stdout: reading then finds no line, and
    // the `?` below returns (the other child ends when its stdin closes).
    let mut outs = Vec::new();
    for c in &mut children {
        let mut out = BufReader::new(c.stdout.take().expect("piped stdout"));
        let mut line = String::new();
        out.read_line(&mut line).map_err(pipe("reading READY"))?;
        if line.trim() != "READY" {
            return Err(BenchError::PublisherSaid {
                found: format!("{:?}", line.trim()),
                expected: "READY",
            });
        }
        outs.push(out);
    }
    for c in &mut children {
        let mut stdin = c.stdin.take().expect("piped stdin");
        stdin.write_all(b"GO\n").map_err(pipe("writing GO"))?;
    }
    let mut figures = Vec::new();
    for (c, mut out) in children.iter_mut().zip(outs) {
        let mut line = String::new();
        out.read_line(&mut line)
            .map_err(pipe("reading its result"))?;
        let status = c.wait().map_err(pipe("waiting for it to exit"))?;
        let f = parse_child(&line).ok_or_else(|| BenchError::PublisherSaid {
            found: format!("{:?} and exited ({status})", line.trim()),
            expected: "its result line, ns=... cpu_ns=... start=... end=... abandoned=...",
        })?;
        no_claim_abandoned(f.abandoned)?;
        figures.push(f);
    }
    figures
        .try_into()
        .map_err(|left: Vec<ChildFigures>| BenchError::PublisherSaid {
            found: format!("{} result lines", left.len()),
            expected: "one from each of the two publishers",
        })
}

/// The mean CPU cost per message of two publisher processes (the round of
/// three in which both ran the most), and every round's figures.
fn two_publisher_processes(count: u64) -> Result<(f64, serde_json::Value), BenchError> {
    let mut rounds = Vec::new();
    for _ in 0..3 {
        let [a, b] = two_publisher_round(count)?;
        let overlap = a.end.min(b.end).saturating_sub(a.start.max(b.start)) as f64
            / (a.end - a.start).max(b.end - b.start).max(1) as f64;
        let share = (a.cpu_ns / a.wall_ns).min(b.cpu_ns / b.wall_ns);
        rounds.push(serde_json::json!({
            "cpu_ns_per_msg": [a.cpu_ns, b.cpu_ns],
            "wall_ns_per_msg": [a.wall_ns, b.wall_ns],
            "cpu_ns_mean": (a.cpu_ns + b.cpu_ns) / 2.0,
            "overlap": (overlap * 1000.0).round() / 1000.0,
            "min_cpu_share": (share * 1000.0).round() / 1000.0,
        }));
    }
    // The round in which both ran most of the time: only while both run is
    // there contention to measure, and a busy machine's rounds fall towards
    // the uncontended cost as one publisher waits for a CPU.
    let share = |r: &serde_json::Value| r["min_cpu_share"].as_f64().unwrap_or(0.0);
    let best = rounds
        .iter()
        .max_by(|x, y| share(x).total_cmp(&share(y)))
        .unwrap_or(&serde_json::Value::Null);
    Ok((
        best["cpu_ns_mean"].as_f64().unwrap_or(f64::NAN),
        serde_json::json!({
            "count_per_publisher": count,
            // Each publisher's CPU time over its wall time in the chosen
            // round: below 1 it was descheduled for part of its loop.
            "min_cpu_share": best["min_cpu_share"],
            "rounds": rounds,
        }),
    ))
}

/// photon-ring's `MpPublisher` in `threads` threads started together:
/// their mean CPU time per message (and wall time), as for the processes.
fn photon_threads(threads: usize, count: u64) -> Result<(f64, serde_json::Value), BenchError> {
    let (p, _subs) = photon_ring::channel_mpmc::<[u64; 8]>(4096);
    let go = std::sync::Arc::new(std::sync::Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (p, go) = (p.clone(), go.clone());
            std::thread::spawn(move || {
                for i in 0..count / 10 {
                    p.publish([i; 8]);
                }
                go.wait();
                measure(count, |i| p.publish([i; 8]))
            })
        })
        .collect();
    // A thread that panicked is a row that failed, not a thread fewer to
    // average over.
    let figures: Vec<ChildFigures> = handles
        .into_iter()
        .map(|h| h.join())
        .collect::<Result<_, _>>()
        .map_err(|_| BenchError::Mpmc {
            found: "a photon-ring publisher thread panicked".into(),
            expected: "every thread's figures",
        })?;
    let mean = |f: fn(&ChildFigures) -> f64| {
        figures.iter().map(f).sum::<f64>() / figures.len().max(1) as f64
    };
    let share = figures
        .iter()
        .map(|f| f.cpu_ns / f.wall_ns)
        .fold(f64::INFINITY, f64::min);
    Ok((
        mean(|f| f.cpu_ns),
        serde_json::json!({
            "wall_ns_per_msg": figures.iter().map(|f| f.wall_ns).collect::<Vec<_>>(),
            "cpu_ns_per_msg": figures.iter().map(|f| f.cpu_ns).collect::<Vec<_>>(),
            "min_cpu_share": (share * 1000.0).round() / 1000.0,
        }),
    ))
}

fn receive_rows(m: u64) -> Result<[Row; 2], BenchError> {
    let name = bus_name("group");
    let _gone = Gone(name.clone());
    let mut p = Publisher::<Msg>::create(&name, &BusOptions::new(m.next_power_of_two()))
        .map_err(create_error(&name))?;
    for i in 0..m {
        p.publish(&Msg([i; 8]));
    }
    let opts = OpenOptions::default()
        .start(Start::Oldest)
        .wait_strategy(WaitStrategy::BusySpin);
    let open_err = |source| BenchError::OpenBus {
        name: name.clone(),
        source,
    };
    let drain = |got: Option<Received<Msg>>| match got {
        Some(Received::Message(msg)) => std::hint::black_box(msg).0[0] + 1,
        _ => 0,
    };
    // Once to fault the pages in, then measured.
    let mut group_ns = f64::MAX;
    let mut alone_ns = f64::MAX;
    for _ in 0..3 {
        let mut group = SubscriberGroup::<Msg, 10>::open(&name, &opts).map_err(open_err)?;
        let start = Instant::now();
        for _ in 0..m {
            drain(group.try_recv());
        }
        group_ns = group_ns.min(ns_per(10 * m, start.elapsed()));
        let mut alone = (0..10)
            .map(|_| Subscriber::<Msg>::open(&name, &opts))
            .collect::<Result<Vec<_>, _>>()
            .map_err(open_err)?;
        let start = Instant::now();
        for s in alone.iter_mut() {
            for _ in 0..m {
                drain(s.try_recv());
            }
        }
        alone_ns = alone_ns.min(ns_per(10 * m, start.elapsed()));
    }
    Ok([
        Row::new(
            "shmbus SubscriberGroup of 10, per consumer",
            "shmbus",
            "receive",
            group_ns,
        ),
        Row::new(
            "shmbus 10 independent subscribers, per consumer",
            "shmbus",
            "receive",
            alone_ns,
        ),
    ])
}

/// Measures every row.
pub fn run(quick: bool) -> Result<Vec<Row>, BenchError> {
    let n: u64 = if quick { 2_000_000 } else { 20_000_000 };
    let m: u64 = if quick { 16_384 } else { 65_536 };
    let mut rows = Vec::new();
    {
        let name = bus_name("single");
        let _gone = Gone(name.clone());
        let mut p =
            Publisher::<Msg>::create(&name, &BusOptions::new(4096)).map_err(create_error(&name))?;
        rows.push(Row::new(
            "shmbus Publisher, 1 process",
            "shmbus",
            "publish",
            timed(n, |i| {
                p.publish(&Msg([i; 8]));
            }),
        ));
    }
    {
        let name = bus_name("mp1");
        let _gone = Gone(name.clone());
        let mut p = ManyPublisher::<Msg>::create(&name, &BusOptions::new(4096).many())
            .map_err(create_error(&name))?;
        let mut abandoned = 0u64;
        let ns = timed(n, |i| {
            abandoned += u64::from(p.publish(&Msg([i; 8])).is_err());
        });
        no_claim_abandoned(abandoned)?;
        rows.push(Row::new(
            "shmbus ManyPublisher, 1 process",
            "shmbus",
            "publish",
            ns,
        ));
    }
    let (ns, detail) = two_publisher_processes(n)?;
    rows.push(Row {
        detail,
        ..Row::new(
            "shmbus ManyPublisher, 2 processes (mean, CPU time)",
            "shmbus",
            "publish",
            ns,
        )
    });
    {
        let (mut p, _subs) = photon_ring::channel::<[u64; 8]>(4096);
        rows.push(Row::new(
            "photon-ring Publisher, 1 thread",
            "photon-ring",
            "publish",
            timed(n, |i| p.publish([i; 8])),
        ));
    }
    for (threads, what) in [
        (1, "photon-ring MpPublisher, 1 thread"),
        (2, "photon-ring MpPublisher, 2 threads (mean, CPU time)"),
    ] {
        let (ns, detail) = photon_threads(threads, n)?;
        rows.push(Row {
            detail,
            ..Row::new(what, "photon-ring", "publish", ns)
        });
    }
    rows.extend(receive_rows(m)?);
    Ok(rows)
}

/// The table, as `report` prints its own.
pub fn print(rows: &[Row]) {
    println!();
    println!("many publishers and subscriber groups (64 B messages, ns per message):");
    for r in rows {
        println!("  {:52} {:8.2}", r.what, r.ns);
    }
    for r in rows.iter().filter(|r| r.what.contains(", 2 ")) {
        let share = r.detail["min_cpu_share"].as_f64().unwrap_or(1.0);
        if share < 0.9 {
            println!(
                "  note: {}: a publisher ran only {:.0}% of its loop's time (the CPUs were \
                 busy), so the figure understates contention",
                r.mechanism,
                share * 100.0
            );
        }
    }
}

/// What `--json` writes under the top-level key `mpmc`.
pub fn json(rows: &[Row], quick: bool) -> serde_json::Value {
    serde_json::json!({
        "msg_size": 64,
        "unit": "ns per message (receive rows: per message per consumer)",
        "quick": quick,
        "rows": rows.iter().map(Row::json).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_publisher_child_result_line_parses_and_a_bad_one_does_not() {
        let f = parse_child("ns=43.5 cpu_ns=22.7 start=100 end=200 abandoned=0").unwrap();
        assert_eq!(
            (f.wall_ns, f.cpu_ns, f.start, f.end),
            (43.5, 22.7, 100, 200)
        );
        assert!(parse_child("ns=43.5 start=100 end=200").is_none());
        assert!(parse_child("").is_none());
    }

    #[test]
    fn the_json_has_every_row_with_its_details_under_rows() {
        let mut two = Row::new(
            "shmbus ManyPublisher, 2 processes",
            "shmbus",
            "publish",
            40.0,
        );
        two.detail = serde_json::json!({"min_cpu_share": 0.98});
        let rows = [
            Row::new("shmbus Publisher, 1 process", "shmbus", "publish", 8.0),
            two,
        ];
        let v = json(&rows, true);
        let out = v["rows"].as_array().unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(out[0]["ns_per_msg"], 8.0);
        assert!(out[0].get("detail").is_none());
        assert_eq!(out[1]["detail"]["min_cpu_share"], 0.98);
        assert_eq!(v["msg_size"], 64);
    }
}
