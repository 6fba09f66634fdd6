//! The 64-bit sequence wrap: a bus whose sequence crosses u64::MAX behaves
//! like any other, on /dev/shm and on the heap (the heap half runs under
//! Miri too).

mod common;

use shmbus::{
    BusOptions, OpenOptions, Publisher, Received, Start, Subscriber, WaitStrategy, mem::Region,
};

const FIRST: u64 = u64::MAX - 40;
const CAPACITY: u64 = 16;
/// Published in bursts of these sizes: 100 in all, across the wrap.
const BURSTS: [u64; 7] = [7, 13, 21, 3, 17, 9, 30];
const COUNT: u64 = 100;

fn seq(i: u64) -> u64 {
    FIRST.wrapping_add(i)
}

/// Reads everything there is, checking each message carries the sequence
/// the position said and that positions only move forward; returns
/// (delivered, skipped).
fn drain<R: Region>(sub: &mut Subscriber<u64, R>, max: usize) -> (u64, u64) {
    let (mut delivered, mut skipped) = (0, 0);
    for _ in 0..max {
        let pos = sub.position();
        match sub.try_recv() {
            Some(Received::Message(v)) => {
                assert_eq!(v, pos, "message at position {pos} carries {v}");
                assert_eq!(sub.position(), pos.wrapping_add(1));
                delivered += 1;
            }
            Some(Received::Lagged { skipped: n }) => {
                assert!(n > 0 && n <= COUNT, "lag of {n} at {pos}");
                assert_eq!(sub.position(), pos.wrapping_add(n));
                skipped += n;
            }
            None => break,
        }
    }
    (delivered, skipped)
}

/// The whole wrap scenario over any region. `open` makes a subscriber.
fn crosses_the_wrap<R: Region>(
    mut publisher: Publisher<u64, R>,
    open: impl Fn(&Publisher<u64, R>, Start) -> Subscriber<u64, R>,
) {
    assert_eq!(publisher.next_sequence(), FIRST);
    let mut reader = open(&publisher, Start::Oldest);
    let mut lapped = open(&publisher, Start::Oldest);
    let mut bursty = open(&publisher, Start::Oldest);
    assert_eq!(reader.position(), FIRST);
    assert_eq!(reader.try_recv(), None);
    assert_eq!(publisher.slots(), CAPACITY);

    let (mut bursty_delivered, mut bursty_skipped) = (0, 0);
    let mut i = 0;
    for burst in BURSTS {
        for _ in 0..burst {
            let s = seq(i);
            assert_eq!(publisher.next_sequence(), s);
            publisher.publish(&s);
            // Reading as it goes: every sequence once, in order.
            assert_eq!(reader.position(), s);
            assert_eq!(reader.pending(), 1);
            assert_eq!(reader.try_recv(), Some(Received::Message(s)));
            assert_eq!(reader.position(), s.wrapping_add(1));
            if s == u64::MAX {
                assert_eq!(reader.position(), 0, "the position wraps to 0");
            }
            i += 1;
        }
        // A few at a time: lapped now and then, never miscounted.
        let (d, s) = drain(&mut bursty, 5);
        bursty_delivered += d;
        bursty_skipped += s;
    }
    assert_eq!(i, COUNT);
    let end = seq(COUNT);
    assert_eq!(end, 59);
    assert_eq!(publisher.next_sequence(), end);
    assert_eq!(reader.try_recv(), None);

    // Lapped across the boundary: one exact lag report, re-synced half a
    // ring behind the head, then the rest.
    assert_eq!(lapped.position(), FIRST);
    assert_eq!(lapped.pending(), COUNT);
    assert_eq!(
        lapped.try_recv(),
        Some(Received::Lagged {
            skipped: COUNT - CAPACITY / 2
        })
    );
    assert_eq!(lapped.position(), seq(COUNT - CAPACITY / 2));
    let (d, s) = drain(&mut lapped, usize::MAX);
    assert_eq!((d, s), (CAPACITY / 2, 0));
    assert_eq!(lapped.position(), end);

    let (d, s) = drain(&mut bursty, usize::MAX);
    bursty_delivered += d;
    bursty_skipped += s;
    assert!(
        bursty_skipped > 0,
        "the bursty reader was lapped at least once"
    );
    assert_eq!(bursty_delivered + bursty_skipped, COUNT);
    assert_eq!(bursty.position(), end);

    // Late subscribers start where they should, across the wrap.
    let mut oldest = open(&publisher, Start::Oldest);
    assert_eq!(oldest.position(), end.wrapping_sub(CAPACITY));
    assert_eq!(drain(&mut oldest, usize::MAX), (CAPACITY, 0));
    let mut latest = open(&publisher, Start::Latest);
    assert_eq!(latest.position(), end - 1);
    assert_eq!(latest.latest(), Some(end - 1));
    assert_eq!(latest.try_recv(), Some(Received::Message(end - 1)));
    let next = open(&publisher, Start::Next);
    assert_eq!(next.position(), end);
    assert_eq!(next.pending(), 0);
}

#[test]
fn a_heap_bus_crosses_the_64_bit_sequence_wrap() {
    let publisher = Publisher::<u64, _>::on_heap_from(CAPACITY, FIRST).expect("heap bus");
    crosses_the_wrap(publisher, |p, start| {
        p.subscribe(start, WaitStrategy::BusySpin)
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_shared_memory_bus_crosses_the_64_bit_sequence_wrap() {
    let bus = common::BusName::new("wrap");
    let publisher =
        Publisher::<u64>::create(bus.name(), &BusOptions::new(CAPACITY).first_sequence(FIRST))
            .expect("create");
    let name = bus.name().to_owned();
    crosses_the_wrap(publisher, |_, start| {
        Subscriber::<u64>::open(&name, &OpenOptions::default().start(start)).expect("open")
    });
    // The publisher was dropped inside; the file says where it got to.
    let st = shmbus::stat::stat(bus.name()).expect("stat");
    assert_eq!(st.raw_header().first_seq, FIRST);
    assert_eq!(st.head, seq(COUNT));
    assert_eq!(st.published, COUNT);
    assert!(!st.publisher_alive);
    bus.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_publisher_attaching_across_the_wrap_continues_after_u64_max() {
    let bus = common::BusName::new("wrap-attach");
    let mut p = Publisher::<u64>::create(
        bus.name(),
        &BusOptions::new(CAPACITY).first_sequence(u64::MAX - 1),
    )
    .expect("create");
    let mut sub = Subscriber::<u64>::open(bus.name(), &OpenOptions::default().start(Start::Oldest))
        .expect("open");
    p.publish(&(u64::MAX - 1));
    p.publish(&u64::MAX);
    drop(p);
    let mut p = Publisher::<u64>::attach(bus.name(), &OpenOptions::default()).expect("attach");
    assert_eq!(p.next_sequence(), 0, "after u64::MAX comes 0");
    p.publish(&0);
    for s in [u64::MAX - 1, u64::MAX, 0] {
        assert_eq!(sub.try_recv(), Some(Received::Message(s)));
    }
    assert_eq!(sub.try_recv(), None);
    drop((p, sub));
    bus.finish();
}
