//! pingpong in Rust on the shmbus crate directly: the same program as
//! examples/c/pingpong.c, to compare the C API's round trip with Rust's
//! (examples/c/bench.sh runs both, alternately).
//!
//! ```text
//! pingpong serve PING PONG            echo every message of PING on PONG
//! pingpong client PING PONG ROUNDS    ROUNDS timed round trips (after
//!                                     ROUNDS/10 untimed ones, at least 100)
//! ```
//!
//! Both buses exist already (`shmbus create --msg-size 64 --capacity 64`),
//! fresh: each side attaches as the publisher of the bus it writes and
//! reads the other from its oldest message, busy-spinning. Every receiver
//! reads every byte: the server checks the client's pattern, the client
//! compares the echo with what it sent. The client prints
//! `rust rounds=N p50_ns=.. p99_ns=.. p999_ns=.. max_ns=..`.

use std::process::exit;
use std::time::{Duration, Instant};

use shmbus_core::{OpenOptions, Publisher, Received, Start, Subscriber, Wait, WaitStrategy};

const MSG: usize = 64;
const STOP: u64 = u64::MAX;
const SILENCE: Duration = Duration::from_secs(10);

fn usage() -> ! {
    eprintln!("usage: pingpong serve PING PONG | pingpong client PING PONG ROUNDS");
    exit(1)
}

fn die(what: &str, e: impl std::fmt::Display) -> ! {
    eprintln!("pingpong: {what}: {e}");
    exit(1)
}

/// Message `seq`: the sequence in the first 8 bytes, then a pattern of it.
fn fill(msg: &mut [u8; MSG], seq: u64) {
    msg[..8].copy_from_slice(&seq.to_ne_bytes());
    for (i, b) in msg.iter_mut().enumerate().skip(8) {
        *b = seq.wrapping_add(i as u64) as u8;
    }
}

/// The message's sequence, if its pattern is whole.
fn check(msg: &[u8]) -> Option<u64> {
    let seq = u64::from_ne_bytes(msg[..8].try_into().ok()?);
    if seq == STOP {
        return Some(seq);
    }
    let mut bad = 0u8;
    for (i, b) in msg.iter().enumerate().skip(8) {
        bad |= b ^ seq.wrapping_add(i as u64) as u8;
    }
    (bad == 0).then_some(seq)
}

/// The next message of `sub` (a lag is an error: one message is in flight).
fn recv_one(sub: &mut Subscriber<[u8]>) -> &[u8] {
    match sub.recv(Wait::For(SILENCE)) {
        Some(Received::Message(m)) => m,
        Some(Received::Lagged { skipped }) => die("receive", format!("lagged by {skipped}")),
        None => {
            eprintln!("pingpong: no message for 10 s");
            exit(2)
        }
    }
}

fn pct(sorted: &[u64], q: f64) -> u64 {
    let i = (q * sorted.len() as f64) as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let client = match args.get(1).map(String::as_str) {
        Some("client") if args.len() == 5 => true,
        Some("serve") if args.len() == 4 => false,
        _ => usage(),
    };
    let (ping, pong) = (&args[2], &args[3]);
    let opts = OpenOptions::default()
        .start(Start::Oldest)
        .wait_strategy(WaitStrategy::BusySpin);
    let (to, from) = if client { (ping, pong) } else { (pong, ping) };
    let mut publisher = Publisher::<[u8]>::attach(to, &opts).unwrap_or_else(|e| die("attach", e));
    let mut sub = Subscriber::<[u8]>::open(from, &opts).unwrap_or_else(|e| die("open", e));
    if sub.msg_size() != MSG {
        die(
            "open",
            format!(
                "the buses carry {}-byte messages, expected {MSG}",
                sub.msg_size()
            ),
        );
    }

    if !client {
        loop {
            let msg = recv_one(&mut sub);
            match check(msg) {
                Some(STOP) => break,
                Some(_) => {}
                None => die("receive", "a corrupt message"),
            }
            let mut echo = [0u8; MSG];
            echo.copy_from_slice(msg);
            publisher
                .publish(&echo)
                .unwrap_or_else(|e| die("publish", e));
        }
        return;
    }
    let rounds: usize = args[4]
        .parse()
        .ok()
        .filter(|&n| n > 0)
        .unwrap_or_else(|| usage());
    let warmup = (rounds / 10).max(100);
    let mut rtt = Vec::with_capacity(rounds);
    let mut msg = [0u8; MSG];
    for i in 0..(warmup + rounds) as u64 {
        fill(&mut msg, i);
        let t0 = Instant::now();
        publisher
            .publish(&msg)
            .unwrap_or_else(|e| die("publish", e));
        let back = recv_one(&mut sub);
        let t1 = Instant::now();
        if back != msg {
            die("receive", format!("echo {i} differs from the ping"));
        }
        if i as usize >= warmup {
            rtt.push((t1 - t0).as_nanos() as u64);
        }
    }
    publisher
        .publish(&[0xff; MSG])
        .unwrap_or_else(|e| die("publish", e));
    rtt.sort_unstable();
    println!(
        "rust rounds={rounds} p50_ns={} p99_ns={} p999_ns={} max_ns={}",
        pct(&rtt, 0.50),
        pct(&rtt, 0.99),
        pct(&rtt, 0.999),
        rtt[rtt.len() - 1]
    );
}
