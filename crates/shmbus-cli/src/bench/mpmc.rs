//! Many publishers and subscriber groups: the cost of one publish with one
//! or two publishers, and of one receive per logical consumer, side by side
//! in one run.
//!
//! Publish cost is the time a publisher spends in a loop of N publishes (64
//! B messages, no subscriber), divided by N. "2 processes" runs two
//! publisher processes at once on one bus (each a `bench-child` of this
//! binary) and reports the mean of their per-message costs: the claim's
//! cache line then bounces between two cores, which is what MPMC costs.
//! photon-ring runs in threads of this process, its only mode (its
//! `MpPublisher` is the in-thread reference).
//!
//! Receive cost per logical consumer: M messages are published into a ring
//! that holds them all; then a `SubscriberGroup` of 10 drains them (one
//! seqlock read per message serves 10 consumers), and 10 independent
//! subscribers drain them one after the other. Both are divided by 10 M.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use shmbus::{
    CreateOptions, MpPublisher, OpenOptions, Publisher, Received, Start, Subscriber,
    SubscriberGroup, WaitStrategy,
};

type Msg = [u64; 8];

/// The `--mechanism` name `bench-child` takes for one publisher process.
pub const CHILD: &str = "shmbus-mp-publisher";

/// One line of the table.
pub struct Row {
    /// What was measured.
    pub what: String,
    /// Nanoseconds per message (per logical consumer for receive rows).
    pub ns: f64,
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

/// The body of one publisher process (`bench-child --mechanism
/// shmbus-mp-publisher --token BUS --count N`): prints `ns=<per message>`.
pub fn run_publisher_child(bus: &str, count: u64) -> Result<(), String> {
    let mut p = MpPublisher::<Msg>::attach(bus, &OpenOptions::default())
        .map_err(|e| format!("attach {bus}: {e}"))?;
    let mut lost = 0u64;
    let ns = timed(count, |i| {
        if p.publish(&[i; 8]).is_err() {
            lost += 1;
        }
    });
    println!("ns={ns:.3} abandoned={lost}");
    Ok(())
}

fn two_publisher_processes(count: u64) -> Result<f64, String> {
    let name = bus_name("mp2");
    let _gone = Gone(name.clone());
    let _creator = MpPublisher::<Msg>::create(&name, &CreateOptions::new(4096))
        .map_err(|e| format!("create {name}: {e}"))?;
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let children = (0..2)
        .map(|i| {
            Command::new(&exe)
                .args([
                    "bench-child",
                    "--mechanism",
                    CHILD,
                    "--pattern",
                    "throughput",
                ])
                .args(["--msg-size", "64", "--receivers", "2", "--index"])
                .arg(i.to_string())
                .args(["--token", &name, "--prefix", "mpmc", "--warmup", "0"])
                .args(["--count", &count.to_string(), "--pace", "0", "--clock", "-"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| format!("spawn publisher: {e}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut total = 0.0;
    for c in children {
        let out = c
            .wait_with_output()
            .map_err(|e| format!("publisher: {e}"))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let ns: f64 = text
            .split_whitespace()
            .find_map(|w| w.strip_prefix("ns=")?.parse().ok())
            .ok_or_else(|| {
                format!(
                    "publisher printed no result: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                )
            })?;
        total += ns;
    }
    Ok(total / 2.0)
}

fn photon_threads(threads: usize, count: u64) -> f64 {
    let (p, _subs) = photon_ring::channel_mpmc::<[u64; 8]>(4096);
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let p = p.clone();
            std::thread::spawn(move || timed(count, |i| p.publish([i; 8])))
        })
        .collect();
    let sum: f64 = handles
        .into_iter()
        .map(|h| h.join().unwrap_or(f64::NAN))
        .sum();
    sum / threads as f64
}

fn receive_rows(m: u64) -> Result<[Row; 2], String> {
    let name = bus_name("group");
    let _gone = Gone(name.clone());
    let mut p = Publisher::<Msg>::create(&name, &CreateOptions::new(m.next_power_of_two()))
        .map_err(|e| format!("create {name}: {e}"))?;
    for i in 0..m {
        p.publish(&[i; 8]);
    }
    let opts = OpenOptions::default()
        .start(Start::Oldest)
        .wait(WaitStrategy::BusySpin);
    let open_err = |e: shmbus::OpenError| format!("open {name}: {e}");
    let drain = |got: Option<Received<Msg>>| match got {
        Some(Received::Message(msg)) => std::hint::black_box(msg)[0] + 1,
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
        Row {
            what: "shmbus SubscriberGroup of 10, per consumer".into(),
            ns: group_ns,
        },
        Row {
            what: "shmbus 10 independent subscribers, per consumer".into(),
            ns: alone_ns,
        },
    ])
}

/// Measures every row.
pub fn run(quick: bool) -> Result<Vec<Row>, String> {
    let n: u64 = if quick { 2_000_000 } else { 20_000_000 };
    let m: u64 = if quick { 16_384 } else { 65_536 };
    let mut rows = Vec::new();
    {
        let name = bus_name("single");
        let _gone = Gone(name.clone());
        let mut p = Publisher::<Msg>::create(&name, &CreateOptions::new(4096))
            .map_err(|e| format!("create {name}: {e}"))?;
        rows.push(Row {
            what: "shmbus Publisher, 1 process".into(),
            ns: timed(n, |i| p.publish(&[i; 8])),
        });
    }
    {
        let name = bus_name("mp1");
        let _gone = Gone(name.clone());
        let mut p = MpPublisher::<Msg>::create(&name, &CreateOptions::new(4096))
            .map_err(|e| format!("create {name}: {e}"))?;
        rows.push(Row {
            what: "shmbus MpPublisher, 1 process".into(),
            ns: timed(n, |i| {
                let _ = p.publish(&[i; 8]);
            }),
        });
    }
    rows.push(Row {
        what: "shmbus MpPublisher, 2 processes (mean)".into(),
        ns: two_publisher_processes(n)?,
    });
    {
        let (mut p, _subs) = photon_ring::channel::<[u64; 8]>(4096);
        rows.push(Row {
            what: "photon-ring Publisher, 1 thread".into(),
            ns: timed(n, |i| p.publish([i; 8])),
        });
    }
    rows.push(Row {
        what: "photon-ring MpPublisher, 1 thread".into(),
        ns: photon_threads(1, n),
    });
    rows.push(Row {
        what: "photon-ring MpPublisher, 2 threads (mean)".into(),
        ns: photon_threads(2, n),
    });
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
}
