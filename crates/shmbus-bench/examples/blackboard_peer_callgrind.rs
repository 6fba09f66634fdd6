//! ringfire's blackboard write and read in instructions, as the
//! `--blackboard` rows drive it (a `BlackboardProducer<[u64; 8]>` of 1000
//! slots, one key written `n` times, then read `n` times), to set beside
//! shmbus's own counts (`crates/shmbus/examples/blackboard_callgrind.rs`):
//! the inclusive cost of `write_one` (or `read_one`) over `n` is its
//! instructions per operation.
//!
//! `cargo build --release -p shmbus-bench --example blackboard_peer_callgrind`, then
//! `valgrind --tool=callgrind target/release/examples/blackboard_peer_callgrind [n]`
//! (default 100 000 of each).

use std::hint::black_box;

use ringfire::{BlackboardConsumer, BlackboardProducer};

type Value = [u64; 8];

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    let path = format!("/dev/shm/shmbus-bb-peer-callgrind-{}", std::process::id());
    let mut producer = BlackboardProducer::<Value>::create(&path, 1000).expect("create");
    let consumer = BlackboardConsumer::<Value>::attach(&path).expect("attach");
    for i in 0..n {
        write_one(&mut producer, i);
    }
    let mut sum = 0u64;
    for _ in 0..n {
        sum = sum.wrapping_add(read_one(&consumer));
    }
    println!("{sum}");
    drop((producer, consumer));
    let _ = std::fs::remove_file(&path);
}

#[inline(never)]
fn write_one(p: &mut BlackboardProducer<Value>, i: u64) {
    p.write(black_box(7), &[i; 8]).expect("write");
}

#[inline(never)]
fn read_one(c: &BlackboardConsumer<Value>) -> u64 {
    c.read(black_box(7)).expect("read").expect("written")[3]
}
