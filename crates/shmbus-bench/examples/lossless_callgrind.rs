//! One publish and one receive in instructions, shmbus beside ringfire,
//! lossy and lossless, as the `throughput` rows configure them (a
//! registered raw subscriber on a bus in /dev/shm; ringfire's
//! `RingProducer<[u8; N]>` and a consumer from the head, with its reader
//! registry under `LosslessBackpressure`), ring sizes as `ring_slots`.
//! One thread, so `valgrind --tool=callgrind` counts each side alone:
//! the inclusive cost of `publish` (or `receive`) over `n` is its
//! instructions per message.
//!
//! `cargo build --release -p shmbus-bench --example lossless_callgrind`, then
//! `valgrind --tool=callgrind target/release/examples/lossless_callgrind MECH SIZE [N] [MODE]`
//! with MECH one of `shmbus`, `shmbus-lossless`, `ringfire`,
//! `ringfire-lossless`, SIZE 16, 64 or 256, N messages (default 1 000 000),
//! MODE `lockstep` (default: publish one, receive it: a receiver that
//! keeps up) or `full` (the receiver a ring less one behind, as in a
//! flat-out run whose publisher is faster: the gate is at its limit on
//! every publish).

use std::hint::black_box;

use ringfire::{
    ConsumerStartMode, FlowControl, RecvStatus, RingConsumerBuilder, RingProducerBuilder,
};
use shmbus::{BusOptions, OpenOptions, Publisher, Received, Start, Subscriber, WaitStrategy};

/// The bench's ring size for a message size (`mech::ring_slots`).
fn ring_slots(msg_size: usize) -> u64 {
    let slot = (msg_size + 8).div_ceil(64) * 64;
    ((4 << 20) / slot)
        .clamp(64, 16384)
        .next_power_of_two()
        .min(16384) as u64
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mech = args.get(1).map_or("shmbus-lossless", String::as_str);
    let size: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(16);
    let n: u64 = args
        .get(3)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let full = args.get(4).is_some_and(|m| m == "full");
    let sum = match (mech, size) {
        ("shmbus" | "shmbus-lossless", _) => shmbus_run(mech == "shmbus-lossless", size, n, full),
        ("shmbus-typed" | "shmbus-typed-lossless", 16) => typed_run::<16>(mech, n, full),
        ("shmbus-typed" | "shmbus-typed-lossless", 64) => typed_run::<64>(mech, n, full),
        ("shmbus-typed" | "shmbus-typed-lossless", 256) => typed_run::<256>(mech, n, full),
        ("ringfire" | "ringfire-lossless", 16) => ringfire_run::<16>(mech, n, full),
        ("ringfire" | "ringfire-lossless", 64) => ringfire_run::<64>(mech, n, full),
        ("ringfire" | "ringfire-lossless", 256) => ringfire_run::<256>(mech, n, full),
        other => panic!(
            "{other:?}: expected shmbus[-lossless] or ringfire[-lossless] at 16, 64 or 256 B"
        ),
    };
    println!("{sum}");
}

fn shmbus_run(lossless: bool, size: usize, n: u64, full: bool) -> u64 {
    let name = format!("/dev/shm/lossless-callgrind-{}", std::process::id());
    let opts = BusOptions::new(ring_slots(size))
        .msg_size(size as u32)
        .prefault(true);
    let mut p = Publisher::<[u8]>::create(&name, &opts).expect("create");
    let sub_opts = OpenOptions::default()
        .start(Start::Next)
        .wait_strategy(WaitStrategy::BusySpin)
        .lossless(lossless);
    let mut s = Subscriber::<[u8]>::open(&name, &sub_opts).expect("open");
    let msg = vec![7u8; size];
    let mut sum = 0u64;
    if full {
        for _ in 1..ring_slots(size) {
            p.publish(&msg).expect("publish");
        }
    }
    for _ in 0..n {
        shmbus_publish(&mut p, &msg);
        sum = sum.wrapping_add(shmbus_receive(&mut s));
    }
    drop(s);
    drop(p);
    shmbus::remove(&name).expect("remove");
    sum
}

#[inline(never)]
fn shmbus_publish(p: &mut Publisher<[u8]>, msg: &[u8]) {
    p.publish(black_box(msg)).expect("publish");
}

#[inline(never)]
fn shmbus_receive(s: &mut Subscriber<[u8]>) -> u64 {
    match s.try_recv() {
        Some(Received::Message(m)) => u64::from(black_box(m)[0]),
        other => panic!("{other:?}"),
    }
}

/// shmbus's typed API on `[u8; N]`, as ringfire's is driven (the size
/// known to the compiler), beside the raw `[u8]` one the bench drives.
fn typed_run<const N: usize>(mech: &str, n: u64, full: bool) -> u64
where
    [u8; N]: shmbus::Message,
{
    let name = format!("/dev/shm/lossless-callgrind-t-{}", std::process::id());
    let opts = BusOptions::new(ring_slots(N)).prefault(true);
    let mut p = Publisher::<[u8; N]>::create(&name, &opts).expect("create");
    let sub_opts = OpenOptions::default()
        .start(Start::Next)
        .wait_strategy(WaitStrategy::BusySpin)
        .lossless(mech == "shmbus-typed-lossless");
    let mut s = Subscriber::<[u8; N]>::open(&name, &sub_opts).expect("open");
    let msg = [7u8; N];
    let mut last = Box::new([0u8; N]);
    let mut sum = 0u64;
    if full {
        for _ in 1..ring_slots(N) {
            p.publish(&msg);
        }
    }
    for _ in 0..n {
        typed_publish(&mut p, &msg);
        sum = sum.wrapping_add(typed_receive(&mut s, &mut last));
    }
    drop(s);
    drop(p);
    shmbus::remove(&name).expect("remove");
    sum
}

#[inline(never)]
fn typed_publish<const N: usize>(p: &mut Publisher<[u8; N]>, msg: &[u8; N])
where
    [u8; N]: shmbus::Message,
{
    p.publish(black_box(msg));
}

#[inline(never)]
fn typed_receive<const N: usize>(s: &mut Subscriber<[u8; N]>, last: &mut [u8; N]) -> u64
where
    [u8; N]: shmbus::Message,
{
    match s.try_recv() {
        Some(Received::Message(m)) => {
            *last = m;
            u64::from(black_box(&last)[0])
        }
        other => panic!("{other:?}"),
    }
}

fn ringfire_run<const N: usize>(mech: &str, n: u64, full: bool) -> u64 {
    let path = format!("/dev/shm/lossless-callgrind-rf-{}", std::process::id());
    let builder = RingProducerBuilder::new(ring_slots(N));
    let builder = if mech == "ringfire-lossless" {
        builder.flow_control(FlowControl::LosslessBackpressure)
    } else {
        builder
            .flow_control(FlowControl::LossyLatestWins)
            .max_readers(0)
    };
    let mut p = builder.build::<[u8; N], _>(&path).expect("create");
    let mut c = RingConsumerBuilder::<[u8; N]>::new()
        .start_mode(ConsumerStartMode::Head)
        .attach(&path)
        .expect("attach");
    let msg = [7u8; N];
    let mut last = Box::new([0u8; N]);
    let mut sum = 0u64;
    if full {
        for _ in 1..ring_slots(N) {
            p.push(&msg);
        }
    }
    for _ in 0..n {
        ringfire_publish(&mut p, &msg);
        sum = sum.wrapping_add(ringfire_receive(&mut c, &mut last));
    }
    sum
}

#[inline(never)]
fn ringfire_publish<const N: usize>(p: &mut ringfire::RingProducer<[u8; N]>, msg: &[u8; N]) {
    p.push(black_box(msg));
}

/// As the bench's endpoint: the message copied into the endpoint's own
/// buffer (`Ends::last`).
#[inline(never)]
fn ringfire_receive<const N: usize>(
    c: &mut ringfire::RingConsumer<[u8; N]>,
    last: &mut [u8; N],
) -> u64 {
    match c.recv_status() {
        RecvStatus::Ok(m) => {
            *last = m;
            u64::from(black_box(&last)[0])
        }
        RecvStatus::Lapped { .. } | RecvStatus::Empty => panic!("not lockstep"),
    }
}
