//! The stream against a corrupt file (issue 11): cursors no writer could
//! have left are a typed `CorruptCursors` at once, from a new producer and
//! a new consumer alike, and flagged by `stat`. Every wait is bounded.

mod common;

use std::sync::mpsc;
use std::time::Duration;

use common::BusName;
use shmbus::layout::stream_control as sc;
use shmbus::stream::{Consumer, PopError, Producer, PushError, Wait};
use shmbus::{CreateOptions, OpenOptions};

/// What may pass before a call that must answer at once counts as a hang.
const AT_ONCE: Duration = Duration::from_secs(10);

/// The file offset of a control-page field.
fn control(bus: &BusName, field: usize) -> u64 {
    let st = shmbus::stat::stat(bus.name()).expect("stat");
    st.header.control_offset + field as u64
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

#[test]
#[cfg_attr(miri, ignore)]
fn a_tail_more_than_the_capacity_ahead_of_head_is_corrupt_cursors_for_both_sides_and_stat() {
    const CAP: u64 = 4096;
    let bus = BusName::new("hardening-corrupt-tail");
    let mut p = Producer::create(bus.name(), &CreateOptions::new(CAP)).expect("create");
    p.push(b"one", Wait::Never).expect("room");
    p.push(b"two", Wait::Never).expect("room");
    drop(p);
    // Both records are valid; only TAIL is wrong: 17 rings ahead of HEAD.
    let tail = 17 * CAP;
    common::patch_u64(bus.path(), control(&bus, sc::TAIL), tail);

    let st = shmbus::stat::stat(bus.name()).expect("stat");
    let s = st.stream.expect("a stream");
    assert!(s.corrupt, "stat flags the cursors: {s:?}");
    assert_eq!((s.head, s.tail, s.fill), (0, tail, tail));

    // The consumer blames the cursors, not the (valid) record header.
    let name = bus.name().to_owned();
    let r = within("pop", move || {
        let mut c = Consumer::open(&name, &OpenOptions::default()).expect("open");
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
        let mut p = Producer::attach(&name, &OpenOptions::default()).expect("attach");
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
    let mut p = Producer::create(bus.name(), &CreateOptions::new(CAP)).expect("create");
    p.push(b"one", Wait::Never).expect("room"); // 16 bytes
    drop(p);
    common::patch_u64(bus.path(), control(&bus, sc::HEAD), 64);
    let s = shmbus::stat::stat(bus.name())
        .expect("stat")
        .stream
        .expect("a stream");
    assert!(s.corrupt, "{s:?}");

    let name = bus.name().to_owned();
    let r = within("pop", move || {
        let mut c = Consumer::open(&name, &OpenOptions::default()).expect("open");
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
        let mut p = Producer::attach(&name, &OpenOptions::default()).expect("attach");
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
