//! The stream's per-record cost: a producer and a consumer
//! thread over a /dev/shm stream, `n` records of `size` bytes, every byte
//! received read into a checksum. Prints records/s and ns/record.
//!
//! `cargo run --release -p shmbus --example stream_bench -- [size] [n] [mode] [capacity]`
//! (default 256 bytes, 10 000 000 records, mode `threads`, a 4 MiB ring).
//! The consumer reads in place (`read_with`); with a mode ending in `-pop`
//! it copies each record out (`pop`) and sums the copy.
//!
//! Mode `alternate` runs both ends on one thread, pushing a batch then
//! popping it, so that `valgrind --tool=callgrind` counts the instructions
//! of `push_batch` and `pop_batch` alone (no spinning on the other side):
//! their inclusive cost divided by `n` is the instructions per record.

use std::time::Instant;

use shmbus::{
    OpenOptions, Wait,
    stream::{self, Consumer, PopError, Producer, PushError},
};

/// Records per batch in `alternate` mode: a batch fits in the ring.
const BATCH: u64 = 256;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let size: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(256);
    let n: u64 = args
        .get(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000_000);
    let mode = args.get(3).map_or("threads", String::as_str);
    let capacity: u64 = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(4 << 20);
    let name = format!("/dev/shm/shmbus-stream-bench-{}", std::process::id());
    let opts = stream::Options::new(capacity).prefault(true);
    let mut producer = Producer::<[u8]>::create(&name, &opts).expect("create");
    let mut consumer = Consumer::<[u8]>::attach(&name, &OpenOptions::default()).expect("open");
    let msg: Vec<u8> = (0..size).map(|i| i as u8).collect();
    let expected = checksum(&msg).wrapping_mul(n);

    let copy = mode.ends_with("-pop");
    let start = Instant::now();
    let (sum, full, empty) = match mode.trim_end_matches("-pop") {
        "threads" => std::thread::scope(|s| {
            let reader = s.spawn(|| pop_batch(&mut consumer, n, copy));
            let full = push_batch(&mut producer, &msg, n);
            let (sum, empty) = reader.join().expect("consumer thread");
            (sum, full, empty)
        }),
        "alternate" => {
            let mut sum = 0u64;
            let mut left = n;
            while left > 0 {
                let k = left.min(BATCH);
                push_batch(&mut producer, &msg, k);
                sum = sum.wrapping_add(pop_batch(&mut consumer, k, copy).0);
                left -= k;
            }
            (sum, 0, 0)
        }
        other => panic!("mode is threads or alternate (each with -pop or not), not {other}"),
    };
    let secs = start.elapsed().as_secs_f64();
    drop((producer, consumer));
    shmbus::remove(&name).expect("remove");
    assert_eq!(sum, expected, "checksum");
    // Which side waited tells which regime this was: a producer that often
    // finds the ring full runs ahead; a consumer that finds it empty, behind.
    println!(
        "size {size:>5} B  {n} records  {mode}: {:>7.2} M records/s  {:>7.2} ns/record  \
         (full {:.2}/record, empty {:.2}/record)",
        n as f64 / secs / 1e6,
        secs * 1e9 / n as f64,
        full as f64 / n as f64,
        empty as f64 / n as f64,
    );
}

/// Pushes `n` copies of `msg`, spinning while the ring is full; returns
/// how many pushes found it full.
#[inline(never)]
fn push_batch(producer: &mut Producer<[u8]>, msg: &[u8], n: u64) -> u64 {
    let mut full = 0;
    for _ in 0..n {
        loop {
            match producer.push(msg, Wait::Never) {
                Ok(()) => break,
                Err(PushError::Full) => {
                    full += 1;
                    std::hint::spin_loop();
                }
                Err(e) => panic!("push: {e}"),
            }
        }
    }
    full
}

/// Reads `n` records (in place, or copied out if `copy`), spinning while
/// the ring is empty; returns the sum of their checksums and how many
/// reads found it empty.
#[inline(never)]
fn pop_batch(consumer: &mut Consumer<[u8]>, n: u64, copy: bool) -> (u64, u64) {
    let mut sum = 0u64;
    let mut empty = 0;
    let mut out = Vec::new();
    for _ in 0..n {
        loop {
            let got = if copy {
                consumer.pop(&mut out, Wait::Never).map(|()| checksum(&out))
            } else {
                consumer.read_with(Wait::Never, checksum)
            };
            match got {
                Ok(c) => {
                    sum = sum.wrapping_add(c);
                    break;
                }
                Err(PopError::Empty) => {
                    empty += 1;
                    std::hint::spin_loop();
                }
                Err(e) => panic!("pop: {e}"),
            }
        }
    }
    (sum, empty)
}

/// Every byte, summed as little-endian 64-bit words (the tail zero padded).
fn checksum(bytes: &[u8]) -> u64 {
    let mut words = bytes.chunks_exact(8);
    let mut sum = words.by_ref().fold(0u64, |s, w| {
        s.wrapping_add(u64::from_le_bytes(w.try_into().unwrap()))
    });
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut last = [0u8; 8];
        last[..rest.len()].copy_from_slice(rest);
        sum = sum.wrapping_add(u64::from_le_bytes(last));
    }
    sum
}
