//! Handles in a forked child (docs/RELIABILITY.md, "fork"): `fork()`
//! copies every handle into the child, and the child's drops (an ordinary
//! exit runs them, as Python's finalizers do) must leave alone what the
//! parent still holds: its pool samples and loans, its stream sides' pids,
//! its journal publisher's threads and files.

mod common;

use std::time::{Duration, Instant};

use common::{BusName, ShmDir};
use shmbus::{
    BusOptions, OpenOptions, Received, Subscriber, Wait,
    bus::ManyPublisher,
    journal, pool,
    stream::{self, Consumer, Producer},
};

/// Forks; the child runs `child` (dropping its copies of the handles) and
/// exits 0, or 1 if it panicked. The parent waits for it, at most 10 s
/// (then kills it), and asserts it exited 0.
fn in_forked_child(child: impl FnOnce()) {
    // No other thread of this binary is between fork and exec meanwhile.
    let _no_fork = common::no_spawn_in_flight();
    // SAFETY: the child runs only `child` (drops of shmbus handles: atomic
    // stores, munmap, frees; glibc's malloc is fork-safe) and then _exit,
    // never returning into the test harness.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
    if pid == 0 {
        let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(child)).is_ok();
        // SAFETY: ends the child without running the parent's atexit work.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut status = 0;
    loop {
        // SAFETY: `status` is a valid out-pointer; `pid` is our child.
        let rc = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if rc == pid {
            break;
        }
        assert_eq!(rc, 0, "waitpid: {}", std::io::Error::last_os_error());
        if Instant::now() > deadline {
            // SAFETY: our own child, not yet reaped.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            panic!("the forked child did not exit within 10 s");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the forked child failed (wait status {status:#x}): its drops panicked"
    );
}

fn message(i: u64) -> Vec<u8> {
    format!("B{i:07}").into_bytes()
}

#[test]
fn a_forked_child_dropping_its_copies_of_a_pool_subscriber_and_sample_leaves_the_parents_block_held()
 {
    let bus = BusName::new("fork-sample");
    let mut publisher =
        pool::Publisher::<[u8]>::create(bus.name(), &shmbus::pool::Options::new(8, 64, 16))
            .expect("create");
    let sub = pool::Subscriber::<[u8]>::open(bus.name(), &OpenOptions::default()).expect("open");
    let mut loan = publisher.loan(8, Wait::Never).expect("loan");
    loan.copy_from_slice(b"AAAAAAAA");
    loan.publish().expect("publish");
    let mut held = Some(sub);
    let sample = match held.as_mut().map(|s| s.recv(Wait::Never)) {
        Some(Ok(Some(Received::Message(s)))) => s,
        other => panic!("expected the message, got {other:?}"),
    };
    assert_eq!(&*sample, b"AAAAAAAA");
    let mut sample = Some(sample);

    // The child drops its copies (the parent's stay in the Options).
    in_forked_child(|| {
        drop(sample.take());
        drop(held.take());
    });

    let (sample, sub) = (
        sample.expect("parent's sample"),
        held.expect("parent's sub"),
    );
    assert_eq!(
        sub.held(),
        1,
        "the child's exit let go of the parent's hold"
    );
    // Enough publishes to reuse every block not held.
    for i in 0..40 {
        let msg = message(i);
        let mut loan = publisher
            .loan(msg.len(), Wait::For(Duration::from_secs(5)))
            .expect("loan");
        loan.copy_from_slice(&msg);
        loan.publish().expect("publish");
    }
    assert_eq!(&*sample, b"AAAAAAAA", "the parent's held block was reused");
    drop(sample);
    drop(sub);
    drop(publisher);
    bus.finish();
}

/// A raw pool bus's publisher.
type RawPool = pool::Publisher<[u8]>;

/// A pool bus of two publishers and a subscriber, for the loan tests.
fn pool_of_two(bus: &BusName) -> (RawPool, RawPool, pool::Subscriber<[u8]>) {
    let mine = pool::Publisher::<[u8]>::create_many(
        bus.name(),
        &shmbus::pool::Options::new(8, 64, 16).many(),
    )
    .expect("create");
    let other =
        pool::Publisher::<[u8]>::attach_many(bus.name(), &OpenOptions::default()).expect("attach");
    let sub = pool::Subscriber::<[u8]>::open(bus.name(), &OpenOptions::default()).expect("open");
    (mine, other, sub)
}

/// Another publisher cycles every free block: a block a child freed would
/// be among them and overwritten.
fn cycle_every_free_block(other: &mut RawPool) {
    for i in 0..40 {
        let msg = message(i);
        let mut l = other
            .loan(msg.len(), Wait::For(Duration::from_secs(5)))
            .expect("loan");
        l.copy_from_slice(&msg);
        l.publish().expect("publish");
    }
}

/// The last message the subscriber can read now: (sequence, bytes).
fn last_message(sub: &mut pool::Subscriber<[u8]>) -> Option<(u64, Vec<u8>)> {
    let mut last = None;
    while let Ok(Some(got)) = sub.recv(Wait::Never) {
        if let Received::Message(s) = got {
            last = Some((s.sequence(), s.to_vec()));
        }
    }
    last
}

#[test]
fn a_forked_child_dropping_its_copy_of_a_loan_leaves_the_parents_block_loaned() {
    let bus = BusName::new("fork-loan");
    let (mut mine, mut other, mut sub) = pool_of_two(&bus);
    let mut loan = Some(mine.loan(8, Wait::Never).expect("loan"));
    if let Some(l) = loan.as_mut() {
        l.copy_from_slice(b"LOANED!!");
    }

    in_forked_child(|| drop(loan.take()));

    cycle_every_free_block(&mut other);
    let loan = loan.expect("parent's loan");
    assert_eq!(&*loan, b"LOANED!!", "the parent's loaned block was reused");
    let seq = loan.publish().expect("publish");
    assert_eq!(last_message(&mut sub), Some((seq, b"LOANED!!".to_vec())));
    drop(sub);
    drop(other);
    drop(mine);
    bus.finish();
}

#[test]
fn a_forked_child_dropping_its_copy_of_an_owned_loan_leaves_the_parents_block_loaned() {
    let bus = BusName::new("fork-owned-loan");
    let (mine, mut other, mut sub) = pool_of_two(&bus);
    let mut loan = Some(mine.into_loan(8, Wait::Never).expect("loan"));
    if let Some(l) = loan.as_mut() {
        l.copy_from_slice(b"OWNED!!!");
    }

    // The child's copy drops both the loan and the publisher it owns.
    in_forked_child(|| drop(loan.take()));

    cycle_every_free_block(&mut other);
    let loan = loan.expect("parent's loan");
    assert_eq!(&*loan, b"OWNED!!!", "the parent's loaned block was reused");
    let (mine, published) = loan.publish();
    let seq = published.expect("publish");
    assert_eq!(last_message(&mut sub), Some((seq, b"OWNED!!!".to_vec())));
    drop(sub);
    drop(other);
    drop(mine);
    bus.finish();
}

#[test]
fn a_forked_child_dropping_its_copies_of_a_streams_producer_and_consumer_leaves_their_pids() {
    let bus = BusName::new("fork-stream");
    let producer =
        Producer::<[u8]>::create(bus.name(), &stream::Options::new(4096)).expect("create");
    let consumer = Consumer::<[u8]>::attach(bus.name(), &OpenOptions::default()).expect("open");
    let me = std::process::id();
    let pids = || {
        let st = shmbus::stat::stat(bus.name()).expect("stat");
        let stream = st.stream.expect("a stream");
        (st.publisher_pid, stream.consumer_pid)
    };
    assert_eq!(pids(), (me, me));
    let mut sides = Some((producer, consumer));

    in_forked_child(|| drop(sides.take()));

    assert_eq!(
        pids(),
        (me, me),
        "the child's exit cleared the parent's pids"
    );
    let (mut producer, mut consumer) = sides.expect("parent's sides");
    producer.push(b"still here", Wait::Never).expect("push");
    let mut out = Vec::new();
    consumer.pop(&mut out, Wait::Never).expect("pop");
    assert_eq!(out, b"still here");
    drop((producer, consumer));
    bus.finish();
}

#[test]
fn a_forked_child_dropping_its_copy_of_a_journal_publisher_neither_panics_nor_stops_the_parents() {
    let dir = ShmDir::new("fork-journal");
    let bus = BusName::new("fork-journal");
    let publisher = journal::Publisher::<[u8; 8]>::create(
        bus.name(),
        &BusOptions::new(64),
        &journal::Options::new(dir.path().join("j")),
    )
    .expect("create");
    let mut p = Some(publisher);
    p.as_mut()
        .map(|p| p.publish(b"AAAAAAAA"))
        .transpose()
        .expect("publish");

    // Joining the parent's threads in the child panicked here.
    in_forked_child(|| drop(p.take()));

    let mut p = p.expect("parent's publisher");
    p.publish(b"BBBBBBBB").expect("publish after the fork");
    p.flush().expect("the parent's flusher still answers");
    p.close().expect("close");
    bus.finish();
    dir.finish();
}

/// Bus subscribers and many-publisher publishers write nothing on drop
/// (their registry entry and claim are OFD locks, which the child shares
/// and so cannot release): a guard that they stay so.
#[test]
fn a_forked_child_dropping_its_copies_of_a_bus_subscriber_and_publisher_leaves_the_parents_entry() {
    let bus = BusName::new("fork-bus");
    let publisher =
        ManyPublisher::<u64>::create(bus.name(), &BusOptions::new(8).many()).expect("create");
    let sub = Subscriber::<u64>::open(bus.name(), &OpenOptions::default()).expect("open");
    let me = std::process::id();
    let live = || {
        let st = shmbus::stat::stat(bus.name()).expect("stat");
        st.subscribers.iter().map(|l| l.pid).collect::<Vec<_>>()
    };
    assert_eq!(live(), vec![me]);
    let mut handles = Some((publisher, sub));

    in_forked_child(|| drop(handles.take()));

    assert_eq!(
        live(),
        vec![me],
        "the child's exit took the parent's registry entry"
    );
    let (mut publisher, mut sub) = handles.expect("parent's handles");
    publisher.publish(&7).expect("publish");
    assert_eq!(sub.recv(Wait::Never), Some(Received::Message(7)));
    drop((publisher, sub));
    bus.finish();
}

/// A lossless subscriber's drop leaves the gating set: its copy in a
/// forked child must not, or the parent's would stop holding the
/// publisher back while it still counts on it.
#[test]
fn a_forked_child_dropping_its_copy_of_a_lossless_subscriber_leaves_it_gating() {
    let bus = BusName::new("fork-lossless");
    let mut publisher =
        shmbus::Publisher::<u64>::create(bus.name(), &BusOptions::new(2)).expect("create");
    let sub =
        Subscriber::<u64>::open(bus.name(), &OpenOptions::default().lossless(true)).expect("open");
    let mut handle = Some(sub);

    in_forked_child(|| drop(handle.take()));

    let mut sub = handle.expect("parent's handle");
    assert!(sub.is_lossless(), "the child's drop ungated the parent's");
    publisher.try_publish(&1).expect("room");
    publisher.try_publish(&2).expect("room");
    assert!(
        publisher.try_publish(&3).is_err(),
        "the parent's lossless subscriber still holds the publisher back"
    );
    assert_eq!(sub.recv(Wait::Never), Some(Received::Message(1)));
    drop((publisher, sub));
    bus.finish();
}
