//! loom models of the real slot and sleep protocols (`bus::ring::Ring`),
//! through the `sync` facade. Run with:
//! `RUSTFLAGS="--cfg loom" cargo test -p shmbus --release --lib loom`

use std::sync::Arc;

use loom::thread;

use crate::bus::Cursor;
use crate::bus::Publisher;
use crate::bus::ring::Poll;
use crate::mem::HeapRegion;
use crate::options::Start;
use crate::wait::WaitStrategy;

type Msg = [u64; 2];

/// Bounded preemptions keep the search to minutes; bugs in protocols this
/// small show up within two or three (the loom docs' advice).
pub(crate) fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(3);
    }
    builder.check(f);
}

fn bus(capacity: u64) -> Publisher<Msg, Arc<HeapRegion>> {
    Publisher::on_heap(capacity).expect("valid geometry")
}

/// A reader racing a writer on the same slot never returns a mix of two
/// messages: every message delivered has both words from the same write.
#[test]
fn loom_a_racing_reader_never_sees_a_torn_message() {
    model(|| {
        let mut publisher = bus(1);
        let mut subscriber = publisher.subscribe(Start::Oldest, WaitStrategy::BusySpin);
        let writer = thread::spawn(move || {
            publisher.publish(&[1, 1]);
            publisher.publish(&[2, 2]);
        });
        for _ in 0..2 {
            if let Some(crate::Received::Message(m)) = subscriber.try_recv() {
                assert_eq!(m[0], m[1], "torn read: {m:?}");
                assert!(m[0] == 1 || m[0] == 2);
            }
        }
        writer.join().unwrap();
    });
}

/// Lapped or not, delivered + skipped == published, and the messages that
/// are delivered arrive in order: two publishes on one slot, the reader
/// retrying until it has caught up.
#[test]
fn loom_delivered_plus_skipped_equals_published() {
    model(|| {
        let mut publisher = bus(1);
        let mut subscriber = publisher.subscribe(Start::Oldest, WaitStrategy::BusySpin);
        let writer = thread::spawn(move || {
            publisher.publish(&[1, 1]);
            publisher.publish(&[2, 2]);
        });
        let mut count = Count::default();
        while subscriber.position() < 2 {
            match subscriber.try_recv() {
                Some(r) => count.observe(r),
                None => thread::yield_now(),
            }
        }
        assert_eq!(count.delivered + count.skipped, 2);
        writer.join().unwrap();
    });
}

/// The same count when the reader is lapped by two while it reads: three
/// publishes on one slot against three receives (each empty one yields,
/// as the retry loop above does), then, after the writer is done, the rest.
/// Three receives are every step a racing reader can take: each one that
/// finds something moves it on, and one that finds nothing changes no
/// shared or subscriber state. (A retry loop to the end, as above, made
/// this the costliest model, about 3 million interleavings: what it adds
/// is more empty polls.)
#[test]
fn loom_a_reader_lapped_twice_while_it_reads_counts_every_message() {
    model(|| {
        let mut publisher = bus(1);
        let mut subscriber = publisher.subscribe(Start::Oldest, WaitStrategy::BusySpin);
        let writer = thread::spawn(move || {
            for i in 1..=3 {
                publisher.publish(&[i, i]);
            }
        });
        let mut count = Count::default();
        for _ in 0..3 {
            match subscriber.try_recv() {
                Some(r) => count.observe(r),
                None => thread::yield_now(),
            }
        }
        writer.join().unwrap();
        while let Some(r) = subscriber.try_recv() {
            count.observe(r);
        }
        assert_eq!(subscriber.position(), 3);
        assert_eq!(count.delivered + count.skipped, 3);
    });
}

/// What a reader saw: messages whole and in order, and the lag reported.
#[derive(Default)]
struct Count {
    delivered: u64,
    skipped: u64,
    last: u64,
    seen: Vec<u64>,
}

impl Count {
    fn observe(&mut self, r: crate::Received<Msg>) {
        match r {
            crate::Received::Message(m) => {
                assert_eq!(m[0], m[1], "torn read: {m:?}");
                assert!(
                    m[0] > self.last,
                    "out of order: {} after {}",
                    m[0],
                    self.last
                );
                self.last = m[0];
                self.seen.push(m[0]);
                self.delivered += 1;
            }
            crate::Received::Lagged { skipped } => self.skipped += skipped,
        }
    }
}

/// A subscriber that goes to sleep on the futex is always woken by the next
/// publish: the model's futex blocks until the word changes, so a lost
/// wake-up would never return.
#[test]
fn loom_a_sleeping_subscriber_is_never_left_asleep() {
    model(|| {
        let mut publisher = bus(2);
        let subscriber = publisher.subscribe(Start::Next, WaitStrategy::BusySpin);
        let writer = thread::spawn(move || {
            publisher.publish(&[7, 7]);
        });
        let ring = &subscriber.ring;
        let mut cursor = Cursor::new(subscriber.position(), WaitStrategy::BusySpin);
        let mut buf = [0u8; 16];
        loop {
            match ring.poll(&mut cursor, &mut buf) {
                Poll::Message => break,
                Poll::Empty => ring.sleep(cursor.pos, None),
                Poll::Lagged(n) | Poll::Lapped(n) => panic!("lagged by {n} with room for two"),
            }
        }
        assert_eq!(buf, bytemuck::cast::<Msg, [u8; 16]>([7, 7]));
        writer.join().unwrap();
    });
}

/// A skip racing a reader: the skipped sequences are reported, never
/// delivered, never waited on forever, and the count stays exact whether
/// the reader is inside the gap, behind it or lapped by it.
#[test]
fn loom_a_skip_is_counted_exactly_by_a_racing_reader() {
    model(|| {
        let mut publisher = bus(2);
        let mut subscriber = publisher.subscribe(Start::Oldest, WaitStrategy::BusySpin);
        let writer = thread::spawn(move || {
            publisher.publish(&[1, 1]);
            publisher.skip(2).expect("a small skip");
            publisher.publish(&[4, 4]);
        });
        let mut count = Count::default();
        while subscriber.position() < 4 {
            match subscriber.try_recv() {
                Some(r) => count.observe(r),
                None => thread::yield_now(),
            }
        }
        let skipped_one = count.seen.iter().find(|&&m| m != 1 && m != 4);
        assert_eq!(skipped_one, None, "a skipped sequence delivered");
        assert_eq!(count.delivered + count.skipped, 4);
        writer.join().unwrap();
    });
}

/// A reader following a skip is told it as one lag report of its length,
/// whatever the interleaving: it sees the marked stamps only once the
/// cursor (stored after them, Release; loaded Acquire) is past them, and
/// then sees them all. Mutation-checked: with `skip` storing the cursor
/// before the stamps, loom finds a report split in two.
#[test]
fn loom_a_followed_skip_is_one_lag_report_of_its_length() {
    model(|| {
        let mut publisher = bus(4);
        let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::BusySpin);
        let writer = thread::spawn(move || {
            publisher.skip(3).expect("a small skip");
        });
        let mut reports = Vec::new();
        while subscriber.position() < 3 {
            match subscriber.try_recv() {
                Some(r) => reports.push(r),
                None => thread::yield_now(),
            }
        }
        assert_eq!(reports, vec![crate::Received::Lagged { skipped: 3 }]);
        writer.join().unwrap();
    });
}

/// A lossless subscriber on a one-slot bus gets every message, in order,
/// and is never lapped: the publisher's second write waits (asleep on
/// `ROOM`) until the subscriber's Release position store says the first
/// was read. Mutation-checked: without the publisher's gate check loom
/// finds a lag at once; without the subscriber's ring of `ROOM` the
/// publisher sleeps for good (loom: branch limit exceeded). That store
/// made Relaxed is not caught: the reordering it allows is load
/// buffering, which loom does not model (and the seqlock would turn it
/// into a false `Lagged`, never a torn message).
#[test]
fn loom_a_lossless_subscriber_is_never_lapped_and_never_leaves_the_publisher_asleep() {
    model(|| {
        let mut publisher = bus(1);
        let mut subscriber = publisher
            .subscribe_lossless(Start::Next, WaitStrategy::BusySpin)
            .expect("a heap bus takes lossless subscribers");
        let writer = thread::spawn(move || {
            publisher.publish(&[1, 1]);
            publisher.publish(&[2, 2]);
        });
        let mut next = 1;
        while next <= 2 {
            match subscriber.try_recv() {
                Some(crate::Received::Message(m)) => {
                    assert_eq!(m, [next, next], "lost, torn or out of order");
                    next += 1;
                }
                Some(lag) => panic!("a lossless subscriber got {lag:?}"),
                None => thread::yield_now(),
            }
        }
        writer.join().unwrap();
    });
}

/// A lossless subscriber beside a skipping publisher loses only the
/// skipped sequences, each gap told in one report: two messages unread on
/// two slots, a skip of three (its marks overwrite both, so it waits for
/// each to be read; and it is longer than the ring, so the subscriber is
/// then more than a ring behind without being lapped), then two more
/// messages (the first waits for the subscriber to step over the skip).
/// Mutation-checked: with the skip's room made for its last mark alone,
/// or with the long skip not remembered (`gate::SkipRun`), loom finds the
/// subscriber lapped ("a lossless subscriber lost more than the gap");
/// without the ring of `ROOM` after a rejoin (the step over the long
/// skip is a lap), the publisher sleeps for good (loom: branch limit
/// exceeded).
#[test]
fn loom_a_lossless_subscriber_beside_a_skipping_publisher_loses_only_the_skipped_sequences() {
    model(|| {
        let mut publisher = bus(2);
        let mut subscriber = publisher
            .subscribe_lossless(Start::Next, WaitStrategy::BusySpin)
            .expect("a heap bus takes lossless subscribers");
        let writer = thread::spawn(move || {
            publisher.publish(&[0, 0]);
            publisher.publish(&[1, 1]);
            publisher.skip(3).expect("a small skip");
            publisher.publish(&[5, 5]);
            publisher.publish(&[6, 6]);
        });
        let mut got = Vec::new();
        while subscriber.position() < 7 {
            match subscriber.try_recv() {
                Some(r) => got.push(r),
                None => thread::yield_now(),
            }
        }
        use crate::Received::{Lagged, Message};
        assert_eq!(
            got,
            vec![
                Message([0, 0]),
                Message([1, 1]),
                Lagged { skipped: 3 },
                Message([5, 5]),
                Message([6, 6])
            ],
            "a lossless subscriber lost more than the gap"
        );
        assert!(subscriber.is_lossless());
        writer.join().unwrap();
    });
}

/// Eviction with a lossy subscriber beside: a one-slot bus whose
/// publisher evicts at the first block (a zero timeout, the eviction a
/// model without a clock can take). The lossless subscriber gets every
/// message whole and in order until it is lapped, and it is lapped only
/// once evicted (its bit clear when it hears `Lagged`, and lossy from then
/// on); delivered + skipped = published for both; and the publisher
/// finishes (a publisher waiting forever is a deadlock or a branch limit
/// to loom). Mutation-checked: without the publisher's gate
/// check in `Publisher::write` the lossless subscriber is lapped with its
/// bit still set (this model and the one above fail); without the bit
/// clear in `Ring::evict` the publisher rescans and evicts the same entry
/// for ever (loom: branch limit exceeded).
#[test]
fn loom_an_evicted_lossless_subscriber_counts_every_message_and_the_publisher_goes_on() {
    model(|| {
        let mut publisher = bus(1);
        publisher.set_evict_timeout(std::time::Duration::ZERO);
        let mut lossless = publisher
            .subscribe_lossless(Start::Next, WaitStrategy::BusySpin)
            .expect("a heap bus takes lossless subscribers");
        let mut lossy = publisher.subscribe(Start::Next, WaitStrategy::BusySpin);
        let writer = thread::spawn(move || {
            publisher.publish(&[1, 1]);
            publisher.publish(&[2, 2]);
        });
        let mut count = Count::default();
        let mut evicted = false;
        while lossless.position() < 2 {
            match lossless.try_recv() {
                Some(crate::Received::Message(m)) => {
                    if !evicted {
                        assert_eq!(m[0], count.last + 1, "lost before its eviction");
                    }
                    count.observe(crate::Received::Message(m));
                }
                Some(lag) => {
                    assert!(!lossless.is_lossless(), "lapped while it gates: {lag:?}");
                    evicted = true;
                    count.observe(lag);
                }
                None => thread::yield_now(),
            }
            assert!(
                !evicted || !lossless.is_lossless(),
                "gating again after eviction"
            );
        }
        assert_eq!(count.delivered + count.skipped, 2);
        writer.join().unwrap();
        let mut count = Count::default();
        while let Some(r) = lossy.try_recv() {
            count.observe(r);
        }
        assert_eq!(count.delivered + count.skipped, 2);
    });
}

/// A lossless subscriber that joins while the publisher runs (its limit
/// from a scan that found nobody, at its first publish, made before the
/// race) loses nothing from its join point when
/// that is no further back than the join rule allows (`bus::gate`: `S >
/// c - capacity`, here checked against a cursor loaded after the join,
/// which is no earlier than the join's own); one further back may be
/// lapped, and then counts exactly. Mutation-checked: without
/// the `GATE_GEN` bump of `Ring::join` (in `announce_gate_change`) the
/// publisher keeps its far limit and laps the joiner (this model fails:
/// "lapped from its join point").
#[test]
fn loom_a_lossless_subscriber_joining_a_running_publisher_loses_nothing_from_its_join_point() {
    model(|| {
        let mut publisher = bus(1);
        let lossy = publisher.subscribe(Start::Next, WaitStrategy::BusySpin);
        publisher.publish(&[1, 1]);
        let writer = thread::spawn(move || {
            publisher.publish(&[2, 2]);
            publisher.publish(&[3, 3]);
        });
        let mut lossless = crate::bus::Subscriber::<Msg, _>::from_parts(
            lossy.ring.share(),
            Start::Next,
            WaitStrategy::BusySpin,
        );
        lossless.join_heap().expect("a free heap entry");
        let joined_at = lossless.position();
        let cursor = lossy.ring.head();
        let safe = crate::bus::stamp::ahead(joined_at, cursor.wrapping_sub(1)) > 0;
        let mut count = Count::default();
        count.last = joined_at;
        while lossless.position() < 3 {
            match lossless.try_recv() {
                Some(crate::Received::Message(m)) => {
                    assert!(
                        !safe || m[0] == count.last + 1,
                        "lapped from its join point"
                    );
                    count.observe(crate::Received::Message(m));
                }
                Some(lag) => {
                    assert!(!safe, "lapped from its join point: {lag:?}");
                    count.observe(lag);
                }
                None => thread::yield_now(),
            }
        }
        assert_eq!(count.delivered + count.skipped, 3 - joined_at);
        writer.join().unwrap();
    });
}

/// The `TooMany` race: two subscribers joining a bus with one
/// lossless place at once: exactly one gets it, whatever the interleaving
/// (the place is taken by the `GATE_GEN` CAS from the value loaded before
/// the count, `Ring::join`). Mutation-checked: with the old join (set the
/// bit, count, back off when over) loom finds both refused.
#[test]
fn loom_two_subscribers_joining_for_the_last_lossless_place_one_gets_it() {
    model(|| {
        let publisher = bus(2);
        let first = publisher.subscribe(Start::Next, WaitStrategy::BusySpin);
        crate::mem::Region::word32(
            first.ring.region(),
            first.ring.control_field(crate::wire::control::MAX_GATING),
        )
        .store(1, crate::sync::Ordering::Relaxed);
        let mut second = crate::bus::Subscriber::<Msg, _>::from_parts(
            first.ring.share(),
            Start::Next,
            WaitStrategy::BusySpin,
        );
        let racer = thread::spawn(move || {
            let mut first = first;
            let joined = first.join_heap();
            (joined.is_ok(), first)
        });
        let second_joined = second.join_heap();
        let (first_joined, first) = racer.join().unwrap();
        assert_eq!(
            u8::from(first_joined) + u8::from(second_joined.is_ok()),
            1,
            "{first_joined} and {second_joined:?} for one place"
        );
        assert_eq!(first.is_lossless(), first_joined);
        drop(publisher);
    });
}
