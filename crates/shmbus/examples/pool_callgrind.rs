//! A pool bus's per-message cost in instructions: one thread runs `n`
//! rounds of loan, fill, publish, then receive, sum every byte, drop, so
//! that `valgrind --tool=callgrind` counts the path alone (nobody spins).
//! The inclusive cost of `round` divided by `n` is instructions a message.
//!
//! `cargo build --release -p shmbus --example pool_callgrind`, then
//! `valgrind --tool=callgrind target/release/examples/pool_callgrind [size] [n] [slots] [blocks]`
//! (default 64 bytes, 100 000 rounds, 64 slots, 128 blocks of 4 KiB, or
//! of `size` rounded up to 64 bytes for a larger message). With
//! `--cache-sim=yes` the data misses per round show the pool's working
//! set: the blocks a publisher cycles through.
use shmbus::pool;
use shmbus::{OpenOptions, Received, Wait};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let size: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(64);
    let n: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let slots: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(64);
    let blocks: u64 = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(128);
    let block_size = size.next_multiple_of(64).max(4096) as u64;
    let name = format!("/dev/shm/shmbus-pool-callgrind-{}", std::process::id());
    let opts = pool::Options::new(slots, block_size, blocks);
    let mut p = pool::Publisher::<[u8]>::create(&name, &opts).expect("create");
    let mut s = pool::Subscriber::<[u8]>::open(&name, &OpenOptions::default()).expect("open");
    let mut sum = 0u64;
    for i in 0..n {
        round(&mut p, &mut s, size, i, &mut sum);
    }
    println!("{sum}");
    shmbus::remove(&name).expect("rm");
}

#[inline(never)]
fn round(
    p: &mut pool::Publisher<[u8]>,
    s: &mut pool::Subscriber<[u8]>,
    size: usize,
    i: u64,
    sum: &mut u64,
) {
    let mut loan = p.loan(size, Wait::Never).expect("loan");
    loan.fill(i as u8);
    loan.publish().expect("publish");
    match s.recv(Wait::Never).expect("recv") {
        Some(Received::Message(m)) => *sum += m.iter().map(|&b| b as u64).sum::<u64>(),
        other => panic!("{other:?}"),
    }
}
