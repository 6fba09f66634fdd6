//! loom models of the many-publisher claim, commit and unblock protocol
//! (`bus::claim`): the real `ManyPublisher` and subscriber over the heap, through
//! the `sync` facade, with a zero unblock timeout so that every reader or
//! lapping publisher that finds a claim unfinished may skip it at once, and
//! loom explores both the commit-wins and the unblock-wins orders. Run with:
//! `RUSTFLAGS="--cfg loom" cargo test -p shmbus --release --lib loom`

use std::sync::atomic::{AtomicUsize, Ordering as Std};
use std::time::Duration;

use loom::thread;

use crate::loom::bus::model;

use crate::bus::ManyPublisher;
use crate::wait::WaitStrategy;
use crate::{Received, Start};

type Msg = [u64; 2];

/// A reader racing a publisher's commit with its unblock: exactly one wins.
/// If the commit wins, the reader gets the whole message and the publisher
/// `Ok`; if the unblock wins, the reader gets `Lagged { skipped: 1 }` and
/// the publisher `Abandoned`. Both orders occur.
#[test]
fn loom_commit_and_unblock_exclude_each_other() {
    static COMMITTED: AtomicUsize = AtomicUsize::new(0);
    static SKIPPED: AtomicUsize = AtomicUsize::new(0);
    model(|| {
        let mut publisher = ManyPublisher::<Msg, _>::on_heap(2, Duration::ZERO).expect("geometry");
        let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::BusySpin);
        let writer = thread::spawn(move || publisher.publish(&[5, 5]));
        let got = loop {
            match subscriber.try_recv() {
                Some(got) => break got,
                None => thread::yield_now(),
            }
        };
        let published = writer.join().unwrap();
        match got {
            Received::Message(m) => {
                assert_eq!(m, [5, 5], "torn or wrong message");
                assert_eq!(published, Ok(0));
                COMMITTED.fetch_add(1, Std::Relaxed);
            }
            Received::Lagged { skipped } => {
                assert_eq!(skipped, 1);
                assert!(published.is_err(), "skipped, yet committed: {published:?}");
                SKIPPED.fetch_add(1, Std::Relaxed);
            }
        }
        assert_eq!(subscriber.try_recv(), None);
    });
    assert!(COMMITTED.load(Std::Relaxed) > 0, "commit never won");
    assert!(SKIPPED.load(Std::Relaxed) > 0, "unblock never won");
}

/// Two publishers on one slot, the first killed between its claim (and
/// its `writing` stamp) and its commit: the second laps it, skipping the
/// unfinished claim, and the reader sees no torn message, only the second
/// publisher's (and only if it was told it committed), and delivered + skipped == published.
///
/// A first publisher that is only slow, not dead, and goes on storing its
/// payload after the lap took the slot is the window `bus::claim` documents (a
/// timeout cannot tell slow from dead); this model with a zero timeout
/// finds it, so it models death, not slowness.
#[test]
fn loom_a_lapping_publisher_skips_a_dead_claim_and_publishes_whole() {
    model(|| {
        let a = ManyPublisher::<Msg, _>::on_heap(1, Duration::ZERO).expect("geometry");
        let mut b = a.another();
        let mut subscriber = a.subscribe(Start::Next, WaitStrategy::BusySpin);
        let ta = thread::spawn(move || {
            let seq = a.claim_for_test();
            let _ = a.begin_for_test(seq);
            seq
        });
        let tb = thread::spawn(move || b.publish(&[2, 2]));
        let (mut delivered, mut skipped) = (0, 0);
        while subscriber.position() < 2 {
            match subscriber.try_recv() {
                Some(Received::Message(m)) => {
                    assert_eq!(m, [2, 2], "torn or dead publisher's message");
                    delivered += 1;
                }
                Some(Received::Lagged { skipped: n }) => skipped += n,
                None => thread::yield_now(),
            }
        }
        ta.join().unwrap();
        let b_published = tb.join().unwrap();
        // b may be skipped too (the zero timeout makes it "stalled" to the
        // reader, or lapped by a's claim), but never delivered and skipped.
        assert!(delivered == 0 || b_published.is_ok(), "{b_published:?}");
        assert_eq!(delivered + skipped, 2);
    });
}

/// Two publishers on a one-slot bus and one lossless subscriber: the
/// subscriber gets both messages, whole, and is never lapped: the second
/// claim waits at the gate (asleep on `ROOM`) until the subscriber's
/// Release position store says the first was read, and only then takes
/// the slot. A long unblock timeout: nobody dies here, so no claim may be
/// skipped. Mutation-checked: without the claim's gate check
/// (`Writer::write`) loom finds a lap at once.
#[test]
fn loom_two_publishers_never_pass_a_lossless_subscriber() {
    model(|| {
        let a = ManyPublisher::<Msg, _>::on_heap(1, Duration::from_secs(3600)).expect("geometry");
        let mut subscriber = a
            .subscribe_lossless(Start::Next, WaitStrategy::BusySpin)
            .expect("a heap bus takes lossless subscribers");
        let mut a = a;
        let mut b = a.another();
        let ta = thread::spawn(move || a.publish(&[1, 1]));
        let tb = thread::spawn(move || b.publish(&[2, 2]));
        let mut seen = [false; 3];
        let mut got = 0;
        while got < 2 {
            match subscriber.try_recv() {
                Some(Received::Message(m)) => {
                    assert_eq!(m[0], m[1], "torn message {m:?}");
                    let id = m[0] as usize;
                    assert!(!seen[id], "delivered twice");
                    seen[id] = true;
                    got += 1;
                }
                Some(lag) => panic!("a lossless subscriber got {lag:?}"),
                None => thread::yield_now(),
            }
        }
        assert!(ta.join().unwrap().is_ok());
        assert!(tb.join().unwrap().is_ok());
    });
}
