//! One-way wake latency of an async subscriber (`recv_async` on a tokio
//! current-thread runtime, woken by the `aio` waiter thread) against the
//! synchronous futex subscriber's (`recv(Wait::Forever)` with no spin, so
//! each message wakes a sleeper). 64-byte messages, paced (one
//! every `pace` µs, so that the reader is asleep when each comes); the
//! publisher stamps CLOCK_MONOTONIC, the reader subtracts on receipt.
//! Prints p50, p99 and p99.9 for each, in the same run.
//!
//! `cargo run --release -p shmbus --example aio_latency -- [n] [pace_us]`
//! (default 5 000 messages, 200 µs apart).

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
        "{label:<28} n={:<6} p50={:>6} ns  p99={:>7} ns  p99.9={:>7} ns",
        lat.len(),
        q(0.50),
        q(0.99),
        q(0.999)
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(5_000);
    let pace = Duration::from_micros(args.get(2).and_then(|s| s.parse().ok()).unwrap_or(200));
    let name = format!("/dev/shm/shmbus-aio-latency-{}", std::process::id());
    drop(Publisher::<Stamp>::create(&name, &BusOptions::new(1 << 12)).expect("create"));
    // No spin: every message wakes a sleeping reader, as an async one is.
    let opts = OpenOptions::default()
        .start(Start::Next)
        .wait_strategy(WaitStrategy::SpinFutex {
            spin: Duration::ZERO,
        });

    let mut sync_sub = Subscriber::<Stamp>::open(&name, &opts).expect("open");
    let feeder = publish(name.clone(), n, pace);
    let mut sync_lat = Vec::with_capacity(n as usize);
    while (sync_lat.len() as u64) < n {
        if let Some(Received::Message(s)) = sync_sub.recv(Wait::Forever) {
            sync_lat.push(now_ns().saturating_sub(s.ns));
        }
    }
    feeder.join().expect("feeder");
    drop(sync_sub);

    let mut async_sub = Subscriber::<Stamp>::open(&name, &opts).expect("open");
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let feeder = publish(name.clone(), n, pace);
    let async_lat = rt.block_on(async {
        let mut lat = Vec::with_capacity(n as usize);
        while (lat.len() as u64) < n {
            if let Received::Message(s) = async_sub.recv_async().await {
                lat.push(now_ns().saturating_sub(s.ns));
            }
        }
        lat
    });
    feeder.join().expect("feeder");
    drop(async_sub);
    shmbus::remove(&name).expect("remove");

    println!(
        "64 B, one every {} µs, {} CPUs",
        pace.as_micros(),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    let (s50, a50) = (median(&sync_lat), median(&async_lat));
    report("sync futex subscriber", sync_lat);
    report("async (aio waiter thread)", async_lat);
    println!("async/sync p50: {:.2}x", a50 as f64 / s50 as f64);
}

fn median(v: &[u64]) -> u64 {
    let mut v = v.to_vec();
    v.sort_unstable();
    v[v.len() / 2]
}
