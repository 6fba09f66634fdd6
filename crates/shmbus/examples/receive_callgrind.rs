//! A bus receive's cost in instructions: one thread runs `n` rounds of
//! publish a u64 on a 1024-slot heap bus, then receive it (`receive`), so
//! that `valgrind --tool=callgrind` counts the receive alone (nobody
//! spins). The inclusive cost of `receive` divided by `n` is instructions
//! per message received.
//!
//! `cargo build --release -p shmbus --example receive_callgrind`, then
//! `valgrind --tool=callgrind target/release/examples/receive_callgrind [n] [kind]`
//! (default 1 000 000 rounds; kind `lossy`, `lossless`, `many` (a
//! many-publisher bus), `group` (a group of 4) or `forever` (a lossy
//! `recv(Wait::Forever)` that finds its message at once)).
use std::time::Duration;

use shmbus::bus::ManyPublisher;
use shmbus::{Publisher, Received, Start, Wait, WaitStrategy};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: u64 = args
        .get(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let kind = args.get(2).map_or("lossy", String::as_str);
    let start = (Start::Next, WaitStrategy::default());
    let mut sum = 0u64;
    match kind {
        "lossy" | "forever" | "lossless" => {
            let mut p = Publisher::<u64, _>::on_heap(1024).expect("heap bus");
            let mut s = if kind == "lossless" {
                p.subscribe_lossless(start.0, start.1).expect("lossless")
            } else {
                p.subscribe(start.0, start.1)
            };
            let wait = if kind == "forever" {
                Wait::Forever
            } else {
                Wait::Never
            };
            for i in 0..n {
                p.publish(&i);
                sum = sum.wrapping_add(receive(&mut || s.recv(wait)));
            }
        }
        "many" => {
            let mut p =
                ManyPublisher::<u64, _>::on_heap(1024, Duration::from_secs(1)).expect("heap bus");
            let mut s = p.subscribe(start.0, start.1);
            for i in 0..n {
                p.publish(&i).expect("publish");
                sum = sum.wrapping_add(receive(&mut || s.recv(Wait::Never)));
            }
        }
        "group" => {
            let mut p = Publisher::<u64, _>::on_heap(1024).expect("heap bus");
            let mut g = p.subscribe_group::<4>(start.0, start.1);
            for i in 0..n {
                p.publish(&i);
                sum = sum.wrapping_add(receive(&mut || g.recv(Wait::Never)));
            }
        }
        other => panic!("kind {other:?}: expected lossy, lossless, many, group or forever"),
    }
    println!("{sum}");
}

#[inline(never)]
fn receive(recv: &mut dyn FnMut() -> Option<Received<u64>>) -> u64 {
    match recv() {
        Some(Received::Message(m)) => m,
        other => panic!("{other:?}"),
    }
}
