//! The blackboard's read in the simplest caller: a loop that does nothing
//! but read one key of a 64-byte value and hand it to `black_box`, with
//! the read inlined into it, for shmbus through an entry handle, shmbus
//! by key and ringfire, in turn in each round. What the `--blackboard`
//! rows measure inside the bench's larger closures, where the compiler
//! may keep shmbus's `get` out of line (docs/bench-ab/blackboard-handles.md
//! says what that costs).
//!
//! `cargo run --release -p shmbus-bench --example blackboard_read_loop [rounds] [n]`
//! (default 7 rounds of 5 000 000 reads): each round's ns per read, and
//! each figure over ringfire's in the same round.

use std::hint::black_box;
use std::time::Instant;

use ringfire::{BlackboardConsumer, BlackboardProducer};
use shmbus::OpenOptions;
use shmbus::blackboard::{self, EntryReader, Reader, Writer};

type Value = [u64; 8];

fn main() {
    let mut args = std::env::args().skip(1).map(|s| s.parse::<u64>());
    let rounds = args.next().and_then(Result::ok).unwrap_or(7);
    let n = args.next().and_then(Result::ok).unwrap_or(5_000_000);
    let pid = std::process::id();
    let name = format!("shmbus-bb-read-loop-{pid}");
    let peer = format!("/dev/shm/shmbus-bb-read-loop-peer-{pid}");
    let mut writer =
        Writer::<u64, Value>::create(&name, &blackboard::Options::new(1000)).expect("create");
    let mut reader = Reader::<u64, Value>::open(&name, &OpenOptions::default()).expect("open");
    let mut put = writer.entry(&7).expect("entry");
    writer.put_entry(&mut put, &[1; 8]).expect("put");
    let mut get = reader.entry(&7).expect("entry");
    let mut producer = BlackboardProducer::<Value>::create(&peer, 1000).expect("create");
    producer.write(7, &[1; 8]).expect("write");
    let consumer = BlackboardConsumer::<Value>::attach(&peer).expect("attach");
    println!("round  handle ns  by key ns  ringfire ns  handle/ringfire  by key/handle");
    for r in 0..rounds {
        let h = handle(&mut get, n);
        let k = by_key(&mut reader, n);
        let f = peer_read(&consumer, n);
        println!(
            "{r:>5}  {h:>9.2}  {k:>9.2}  {f:>11.2}  {:>15.2}  {:>13.2}",
            h / f,
            k / h
        );
    }
    drop((writer, reader, get, put, producer, consumer));
    let _ = shmbus::remove(&name);
    let _ = std::fs::remove_file(&peer);
}

#[inline(never)]
fn handle(get: &mut EntryReader<u64, Value>, n: u64) -> f64 {
    let t = Instant::now();
    for _ in 0..n {
        black_box(get.get().expect("get"));
    }
    t.elapsed().as_nanos() as f64 / n as f64
}

#[inline(never)]
fn by_key(reader: &mut Reader<u64, Value>, n: u64) -> f64 {
    let t = Instant::now();
    for _ in 0..n {
        black_box(reader.get(black_box(&7)).expect("get"));
    }
    t.elapsed().as_nanos() as f64 / n as f64
}

#[inline(never)]
fn peer_read(consumer: &BlackboardConsumer<Value>, n: u64) -> f64 {
    let t = Instant::now();
    for _ in 0..n {
        black_box(consumer.read(black_box(7)).expect("read"));
    }
    t.elapsed().as_nanos() as f64 / n as f64
}
