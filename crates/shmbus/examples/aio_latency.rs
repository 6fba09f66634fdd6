//! One-way wake latency of an async subscriber (`recv_async` on a tokio
//! current-thread runtime: with its I/O driver, woken through io_uring
//! where the feature and kernel allow; without, by the `aio` waiter
//! thread) against the synchronous futex subscriber's (`recv(Wait::Forever)` with no spin, so
//! each message wakes a sleeper). 64-byte messages, paced (one
//! every `pace` µs, so that the reader is asleep when each comes); the
//! publisher stamps CLOCK_MONOTONIC, the reader subtracts on receipt.
//! Prints p50, p99 and p99.9 for each, in the same run.
//!
//! `cargo run --release -p shmbus --features io-uring --example aio_latency -- [n] [pace_us] [rounds]`
//! (default 5 000 messages per reader, 200 µs apart, in 5 interleaved
//! rounds).

use std::time::Duration;

use shmbus::{BusOptions, OpenOptions, Publisher, Received, Start, Subscriber, Wait, WaitStrategy};

#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Stamp {
    ns: u64,
    seq: u64,
    pad: [u64; 6],
}

impl shmbus::Message for Stamp {
    const NAME: &'static str = "bench.Stamp";
}

fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a live timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Publishes `n` stamps, `pace` apart, from a thread of its own.
fn publish(name: String, n: u64, pace: Duration) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut p = Publisher::<Stamp>::attach(&name, &OpenOptions::default()).expect("attach");
        // Let the reader fall asleep first.
        std::thread::sleep(Duration::from_millis(20));
        for seq in 0..n {
            std::thread::sleep(pace);
            p.publish(&Stamp {
                ns: now_ns(),
                seq,
                pad: [0; 6],
            });
        }
    })
}

fn report(label: &str, mut lat: Vec<u64>) {
    lat.sort_unstable();
    let q = |p: f64| lat[((lat.len() - 1) as f64 * p) as usize];
    println!(
        "{label:<30} n={:<6} p50={:>6} ns  p99={:>7} ns  p99.9={:>7} ns",
        lat.len(),
        q(0.50),
        q(0.99),
        q(0.999)
    );
}

/// One reader's turn: `n` stamps received as `how` says, their latencies
/// appended to `lat`.
fn take(name: &str, opts: &OpenOptions, n: u64, pace: Duration, how: How, lat: &mut Vec<u64>) {
    let mut sub = Subscriber::<Stamp>::open(name, opts).expect("open");
    let feeder = publish(name.to_owned(), n, pace);
    let want = lat.len() + n as usize;
    let note = |lat: &mut Vec<u64>, r: Received<Stamp>| {
        if let Received::Message(s) = r {
            lat.push(now_ns().saturating_sub(s.ns));
        }
    };
    match how {
        How::Sync => {
            while lat.len() < want {
                if let Some(r) = sub.recv(Wait::Forever) {
                    note(lat, r);
                }
            }
        }
        How::Async { io } => {
            let mut b = tokio::runtime::Builder::new_current_thread();
            if io {
                b.enable_io();
            }
            let rt = b.build().expect("runtime");
            rt.block_on(async {
                while lat.len() < want {
                    note(lat, sub.recv_async().await);
                }
            });
        }
    }
    feeder.join().expect("feeder");
}

#[derive(Clone, Copy)]
enum How {
    Sync,
    /// `io`: the runtime has its I/O driver, so a wait may use the
    /// io_uring wake; without it, the waiter thread.
    Async {
        io: bool,
    },
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(5_000);
    let pace = Duration::from_micros(args.get(2).and_then(|s| s.parse().ok()).unwrap_or(200));
    let rounds: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(5);
    let name = format!("/dev/shm/shmbus-aio-latency-{}", std::process::id());
    drop(Publisher::<Stamp>::create(&name, &BusOptions::new(1 << 12)).expect("create"));
    // No spin: every message wakes a sleeping reader, as an async one is.
    let opts = OpenOptions::default()
        .start(Start::Next)
        .wait_strategy(WaitStrategy::SpinFutex {
            spin: Duration::ZERO,
        });
    let ring = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .expect("runtime")
        .block_on(async { shmbus::aio::wake_mechanism() });
    let readers = [
        ("sync futex subscriber", How::Sync),
        ("async, runtime with I/O", How::Async { io: true }),
        ("async, waiter thread", How::Async { io: false }),
    ];
    // Interleaved rounds: each reader takes n / rounds stamps per round,
    // so a change of the machine's speed falls on all of them.
    let mut lat: Vec<Vec<u64>> = vec![Vec::with_capacity(n as usize); readers.len()];
    let per_round = (n / rounds).max(1);
    for _ in 0..rounds {
        for (i, &(_, how)) in readers.iter().enumerate() {
            take(&name, &opts, per_round, pace, how, &mut lat[i]);
        }
    }
    shmbus::remove(&name).expect("remove");

    println!(
        "64 B, one every {} µs, {} CPUs, {rounds} interleaved rounds",
        pace.as_micros(),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!("the runtime with I/O wakes through: {ring}");
    let sync50 = median(&lat[0]);
    for ((label, _), l) in readers.iter().zip(lat) {
        let m = median(&l);
        report(label, l);
        println!("  p50 / sync p50: {:.2}x", m as f64 / sync50 as f64);
    }
}

fn median(v: &[u64]) -> u64 {
    let mut v = v.to_vec();
    v.sort_unstable();
    v[v.len() / 2]
}
