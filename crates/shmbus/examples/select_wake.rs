//! Wake-up latency of a select over 64 buses against one subscriber's
//! futex wake (the target: within 1.2x), side by side, interleaved
//! round by round. A publisher thread stamps each message with the time it
//! publishes, then pauses 100 µs, so every receive finds nothing and
//! sleeps; the receiver (spin 0: straight to the futex) takes the time it
//! returns. One /dev/shm bus of the 64 carries the messages; the other 63
//! stay idle.
//!
//! `cargo run --release -p shmbus --example select_wake [ROUNDS] [PER_ROUND]`

use std::time::{Duration, Instant};

use shmbus::select::{Select, Selectable};
use shmbus::{BusOptions, OpenOptions, Publisher, Received, Subscriber, Wait, WaitStrategy};

const BUSES: usize = 64;

fn main() {
    let mut args = std::env::args()
        .skip(1)
        .map(|a| a.parse::<usize>().expect("a number"));
    let rounds = args.next().unwrap_or(6);
    let per_round = args.next().unwrap_or(2000);
    let base = Instant::now();
    let names: Vec<String> = (0..BUSES)
        .map(|i| format!("/dev/shm/shmbus-select-wake-{}-{i}", std::process::id()))
        .collect();
    let mut publishers: Vec<Publisher<u64>> = names
        .iter()
        .map(|n| Publisher::<u64>::create(n, &BusOptions::new(1024)).expect("create"))
        .collect();
    let open = OpenOptions::default().wait_strategy(WaitStrategy::SpinFutex {
        spin: Duration::ZERO,
    });
    let mut subs: Vec<Subscriber<u64>> = names
        .iter()
        .map(|n| Subscriber::<u64>::open(n, &open).expect("open"))
        .collect();
    let live = BUSES / 2;
    let mut single = Vec::new();
    let mut selected = Vec::new();
    for round in 0..2 * rounds {
        let use_select = round % 2 == 1;
        let publisher = publishers.swap_remove(live);
        let writer = std::thread::spawn(move || {
            let mut p = publisher;
            for _ in 0..per_round {
                std::thread::sleep(Duration::from_micros(100));
                p.publish(&(base.elapsed().as_nanos() as u64));
            }
            p
        });
        let mut select = Select::with_strategy(WaitStrategy::SpinFutex {
            spin: Duration::ZERO,
        });
        let mut got = 0;
        while got < per_round {
            let sent = if use_select {
                let i = {
                    let members: Vec<&dyn Selectable> =
                        subs.iter().map(|s| s as &dyn Selectable).collect();
                    select.ready(&members, Wait::Forever).expect("a member")
                };
                match subs[i].recv(Wait::Never) {
                    Some(Received::Message(t)) => t,
                    _ => continue,
                }
            } else {
                match subs[live].recv(Wait::Forever) {
                    Some(Received::Message(t)) => t,
                    _ => continue,
                }
            };
            let took = base.elapsed().as_nanos() as u64 - sent;
            if use_select {
                &mut selected
            } else {
                &mut single
            }
            .push(took);
            got += 1;
        }
        let p = writer.join().expect("writer");
        publishers.push(p);
        let last = publishers.len() - 1;
        publishers.swap(live, last);
    }
    let show = |what: &str, v: &mut Vec<u64>| {
        v.sort_unstable();
        let q = |f: f64| v[((v.len() - 1) as f64 * f) as usize];
        println!(
            "{what:<26} n={:<6} p50 {:>7} ns  p90 {:>7} ns  p99 {:>7} ns  max {:>8} ns",
            v.len(),
            q(0.5),
            q(0.9),
            q(0.99),
            v[v.len() - 1]
        );
        q(0.5) as f64
    };
    let a = show("one subscriber (futex)", &mut single);
    let b = show(&format!("select over {BUSES} buses"), &mut selected);
    println!("select / one subscriber at p50: {:.2}", b / a);
    drop(subs);
    drop(publishers);
    for n in &names {
        let _ = shmbus::remove(n);
    }
}
