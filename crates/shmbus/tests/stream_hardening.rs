//! The stream against a corrupt file and a crashed producer:
//! cursors no writer could have left are a typed `CorruptCursors` at once,
//! from a new producer and a new consumer alike, and flagged by `stat`; a
//! consumer that opens after its producer was killed waits for the next
//! one instead of refusing to start.
//!
//! Children are this test binary run again (see `common`), under its
//! watchdog; every wait in the parent is bounded.

mod common;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{BusName, Watched, param, role};
use shmbus::OpenOptions;
use shmbus::internals::PEER_CHECK;
use shmbus::wire::stream_control as sc;
use shmbus::{
    Wait,
    stream::{Consumer, PopError, Producer, PushError},
};

/// How long the parent's own pops may wait for a child.
const PATIENCE: Wait = Wait::For(Duration::from_secs(30));

/// What may pass before a call that must answer at once counts as a hang.
const AT_ONCE: Duration = Duration::from_secs(10);

/// How long a waiting consumer may take to notice a killed producer (it
/// checks every `PEER_CHECK`; the rest is margin for a loaded machine).
const PEER_GONE_BOUND: Duration = Duration::from_secs(2);

fn create_and_leave(bus: &BusName, capacity: u64) {
    let guard = common::no_spawn_in_flight();
    drop(
        Producer::<[u8]>::create(bus.name(), &shmbus::stream::Options::new(capacity))
            .expect("create stream"),
    );
    drop(guard);
}

/// The file offset of a control-page field.
fn control(bus: &BusName, field: usize) -> u64 {
    let st = shmbus::stat::stat(bus.name()).expect("stat");
    st.raw_header().control_offset + field as u64
}

/// Runs `f` on a thread; fails the test if it has not returned within
/// `AT_ONCE` (the thread is left behind, stuck: the test has failed).
fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(AT_ONCE)
        .unwrap_or_else(|_| panic!("{what} still waiting after {AT_ONCE:?}"))
}

/// Attaches as the producer, pushes `SHMBUS_COUNT` records `rec-<i>`, says
/// it is ready, then idles until killed (`SHMBUS_IDLE=1`) or leaves.
#[test]
fn as_child_push_then_idle_or_leave() {
    role("hardening_producer", || {
        let name: String = param("SHMBUS_BUS");
        let count: u64 = param("SHMBUS_COUNT");
        let idle: u8 = param("SHMBUS_IDLE");
        let mut p = Producer::<[u8]>::attach(&name, &OpenOptions::default()).expect("attach");
        for i in 0..count {
            p.push(
                format!("rec-{i}").as_bytes(),
                Wait::For(common::CHILD_DEADLINE),
            )
            .expect("push");
        }
        common::print_ready();
        if idle == 1 {
            common::idle_until_killed();
        }
    });
}

fn producer(bus: &BusName, count: u64, idle: bool) -> Watched {
    common::spawn_child(
        "as_child_push_then_idle_or_leave",
        "hardening_producer",
        &[
            ("SHMBUS_BUS", bus.name().to_owned()),
            ("SHMBUS_COUNT", count.to_string()),
            ("SHMBUS_IDLE", u8::from(idle).to_string()),
        ],
    )
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_tail_more_than_the_capacity_ahead_of_head_is_corrupt_cursors_for_both_sides_and_stat() {
    const CAP: u64 = 4096;
    let bus = BusName::new("hardening-corrupt-tail");
    let mut p =
        Producer::<[u8]>::create(bus.name(), &shmbus::stream::Options::new(CAP)).expect("create");
    p.push(b"one", Wait::Never).expect("room");
    p.push(b"two", Wait::Never).expect("room");
    // No child between fork and exec may keep the producer's lock alive.
    let no_fork = common::no_spawn_in_flight();
    drop(p);
    drop(no_fork);
    // Both records are valid; only TAIL is wrong: 17 rings ahead of HEAD.
    let tail = 17 * CAP;
    common::patch_u64(bus.path(), control(&bus, sc::TAIL), tail);

    let st = shmbus::stat::stat(bus.name()).expect("stat");
    let s = st.stream.expect("a stream");
    assert!(s.corrupt, "stat flags the cursors: {s:?}");
    // A corrupt pair has no fill (LAYOUT §20): 0 here, `null` in JSON.
    assert_eq!((s.head, s.tail, s.fill), (0, tail, 0));

    // The consumer blames the cursors, not the (valid) record header.
    let name = bus.name().to_owned();
    let r = within("pop", move || {
        let mut c = Consumer::<[u8]>::attach(&name, &OpenOptions::default()).expect("open");
        c.pop(&mut Vec::new(), Wait::Forever)
    });
    let want = PopError::CorruptCursors {
        head: 0,
        tail,
        capacity: CAP,
    };
    assert_eq!(r, Err(want.clone()));
    let text = want.to_string();
    assert!(
        text.contains("TAIL is 69632") && text.contains("HEAD at 0") && text.contains("0..=4096"),
        "{text}"
    );

    // The producer does not wait for room that can never come.
    let name = bus.name().to_owned();
    let r = within("push", move || {
        let mut p = Producer::<[u8]>::attach(&name, &OpenOptions::default()).expect("attach");
        p.push(b"three", Wait::Forever)
    });
    assert_eq!(
        r,
        Err(PushError::CorruptCursors {
            head: 0,
            tail,
            capacity: CAP,
            min_head: tail - CAP,
        })
    );
    bus.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_head_past_tail_is_corrupt_cursors_for_both_sides_and_stat() {
    const CAP: u64 = 4096;
    let bus = BusName::new("hardening-corrupt-head");
    let mut p =
        Producer::<[u8]>::create(bus.name(), &shmbus::stream::Options::new(CAP)).expect("create");
    p.push(b"one", Wait::Never).expect("room"); // 16 bytes

    // No child between fork and exec may keep the producer's lock alive.
    let no_fork = common::no_spawn_in_flight();
    drop(p);
    drop(no_fork);
    common::patch_u64(bus.path(), control(&bus, sc::HEAD), 64);
    let s = shmbus::stat::stat(bus.name())
        .expect("stat")
        .stream
        .expect("a stream");
    assert!(s.corrupt, "{s:?}");

    let name = bus.name().to_owned();
    let r = within("pop", move || {
        let mut c = Consumer::<[u8]>::attach(&name, &OpenOptions::default()).expect("open");
        c.pop(&mut Vec::new(), Wait::Forever)
    });
    assert_eq!(
        r,
        Err(PopError::CorruptCursors {
            head: 64,
            tail: 16,
            capacity: CAP
        })
    );
    let name = bus.name().to_owned();
    let r = within("push", move || {
        let mut p = Producer::<[u8]>::attach(&name, &OpenOptions::default()).expect("attach");
        p.push(b"two", Wait::Forever)
    });
    assert!(
        matches!(
            r,
            Err(PushError::CorruptCursors {
                head: 64,
                tail: 16,
                ..
            })
        ),
        "{r:?}"
    );
    bus.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_consumer_opened_after_its_producer_was_killed_waits_for_the_next_one() {
    let bus = BusName::new("hardening-killed-producer");
    create_and_leave(&bus, 4096);
    // A producer pushes one record, which a first consumer takes; then the
    // producer is killed: an empty stream whose producer is dead.
    let mut first = producer(&bus, 1, true);
    first.wait_ready();
    let first_pid = first.pid();
    {
        let mut c = Consumer::<[u8]>::attach(bus.name(), &OpenOptions::default()).expect("open");
        let mut out = Vec::new();
        c.pop(&mut out, PATIENCE).expect("the record");
        assert_eq!(out, b"rec-0");
    }
    assert_eq!(first.kill().signal(), Some(libc::SIGKILL));
    let s = shmbus::stat::stat(bus.name()).expect("stat");
    assert_eq!((s.publisher_pid, s.publisher_alive), (first_pid, false));

    // A new consumer opens, and waits through many peer checks: the dead
    // producer is old news, so the wait ends at its timeout.
    let mut c = Consumer::<[u8]>::attach(bus.name(), &OpenOptions::default()).expect("open");
    let mut out = Vec::new();
    assert_eq!(c.pop(&mut out, Wait::Never), Err(PopError::Empty));
    let d = PEER_CHECK * 15;
    assert_eq!(c.pop(&mut out, Wait::For(d)), Err(PopError::TimedOut(d)));

    // A new producer comes while it waits: its records arrive.
    let waiter = std::thread::spawn(move || {
        let mut got = Vec::new();
        for _ in 0..2 {
            let mut out = Vec::new();
            c.pop(&mut out, PATIENCE)
                .expect("a record of the next producer");
            got.push(String::from_utf8(out).expect("text"));
        }
        (got, c)
    });
    producer(&bus, 2, false).wait_success();
    let (got, mut c) = waiter.join().expect("waiting thread");
    assert_eq!(got, ["rec-0", "rec-1"]);

    // One that attached after the consumer opened and is killed while it
    // waits is reported, as before.
    let mut third = producer(&bus, 0, true);
    third.wait_ready();
    let third_pid = third.pid();
    let waiter = std::thread::spawn(move || {
        let r = c.pop(&mut Vec::new(), PATIENCE);
        (r, Instant::now())
    });
    let killed_at = Instant::now();
    third.kill();
    let (r, at) = waiter.join().expect("waiting thread");
    assert_eq!(r, Err(PopError::PeerGone { pid: third_pid }));
    let took = at.saturating_duration_since(killed_at);
    assert!(took < PEER_GONE_BOUND, "PeerGone after {took:?}");
    bus.finish();
}
