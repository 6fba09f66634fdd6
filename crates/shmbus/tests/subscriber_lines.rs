//! Each registered subscriber's line (docs/LAYOUT.md §5.1) as `stat` reads
//! it: exact counts, gone entries and their reuse, and lines a hostile peer
//! wrote, which are reported as corrupt and never believed or panicked on.
//! And a stream's two side lines (§20).

mod common;

use common::{BusName, write_at};
use proptest::prelude::*;
use shmbus::stat::{self, SubscriberStat};
use shmbus::wire::control;
use shmbus::{
    BusOptions, OpenOptions, Publisher, Received, Start, Subscriber, Wait,
    stream::{self, Consumer, Producer},
};

/// Where registry entry `i`'s line is in the file (page size 4096).
fn line_offset(i: usize) -> u64 {
    (4096 + control::SUBSCRIBERS + 64 * i) as u64
}

fn only_line(name: &str) -> SubscriberStat {
    let s = stat::stat(name).expect("stat");
    assert_eq!(s.subscribers.len(), 1, "{:?}", s.subscribers);
    s.subscribers[0].clone()
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_subscribers_line_counts_what_it_received_and_what_its_lags_reported() {
    let bus = BusName::new("lines-exact");
    let mut publisher = Publisher::<u64>::create(bus.name(), &BusOptions::new(8)).expect("create");
    let mut sub = Subscriber::<u64>::open(bus.name(), &OpenOptions::default()).expect("open");
    let (mut delivered, mut skipped) = (0u64, 0u64);
    for round in 0..50u64 {
        // Publish more than the ring holds every 7th round: lapped.
        let n = if round % 7 == 0 { 20 } else { 3 };
        for i in 0..n {
            publisher.publish(&i);
        }
        while let Some(got) = sub.recv(Wait::Never) {
            match got {
                Received::Message(_) => delivered += 1,
                Received::Lagged { skipped: s } => skipped += s,
            }
        }
        let line = only_line(bus.name());
        assert_eq!(line.corrupt, None);
        assert_eq!((line.delivered, line.skipped), (delivered, skipped));
        assert_eq!(line.position, sub.position());
        assert_eq!(line.lag, 0);
        assert_eq!(line.pid, std::process::id());
    }
    assert!(skipped > 0, "the test meant to lap the subscriber");
    // Unread messages are lag, not yet delivered.
    publisher.publish(&1);
    publisher.publish(&2);
    assert_eq!(only_line(bus.name()).lag, 2);
    drop(sub);
    drop(publisher);
    bus.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_subscriber_that_left_shows_as_gone_and_its_entry_is_reused_with_a_fresh_line() {
    let bus = BusName::new("lines-gone");
    let mut publisher = Publisher::<u64>::create(bus.name(), &BusOptions::new(64)).expect("create");
    let mut first = Subscriber::<u64>::open(bus.name(), &OpenOptions::default()).expect("open");
    for i in 0..10 {
        publisher.publish(&i);
    }
    while first.recv(Wait::Never).is_some() {}
    drop(first);
    let s = stat::stat(bus.name()).expect("stat");
    assert!(s.subscribers.is_empty());
    assert_eq!(s.gone.len(), 1);
    assert_eq!((s.gone[0].entry, s.gone[0].delivered), (0, 10));
    let _second = Subscriber::<u64>::open(bus.name(), &OpenOptions::default()).expect("open");
    let s = stat::stat(bus.name()).expect("stat");
    assert!(s.gone.is_empty());
    let line = &s.subscribers[0];
    assert_eq!(
        (line.entry, line.position, line.delivered, line.skipped),
        (0, 10, 0, 0)
    );
    drop(publisher);
    bus.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn an_unregistered_subscriber_has_no_line_and_receives_all_the_same() {
    let bus = BusName::new("lines-unregistered");
    let mut publisher = Publisher::<u64>::create(bus.name(), &BusOptions::new(8)).expect("create");
    let opts = OpenOptions::default().register(false).start(Start::Next);
    let mut sub = Subscriber::<u64>::open(bus.name(), &opts).expect("open");
    publisher.publish(&5);
    assert_eq!(sub.recv(Wait::Never), Some(Received::Message(5)));
    let s = stat::stat(bus.name()).expect("stat");
    assert!(s.subscribers.is_empty() && s.gone.is_empty());
    drop(sub);
    drop(publisher);
    bus.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_line_ahead_of_the_head_or_skipping_more_than_it_moved_is_corrupt() {
    let bus = BusName::new("lines-corrupt");
    let mut publisher = Publisher::<u64>::create(bus.name(), &BusOptions::new(8)).expect("create");
    let _sub = Subscriber::<u64>::open(bus.name(), &OpenOptions::default()).expect("open");
    publisher.publish(&1);
    let at = line_offset(0);
    // position 1000 with head 1.
    write_at(bus.path(), at, &1000u64.to_le_bytes());
    let why = only_line(bus.name()).corrupt.expect("corrupt");
    assert!(why.contains("more than one past the cursor 1"), "{why}");
    // position 1, start 0, skipped 5.
    write_at(bus.path(), at, &1u64.to_le_bytes());
    write_at(bus.path(), at + 8, &5u64.to_le_bytes());
    let why = only_line(bus.name()).corrupt.expect("corrupt");
    assert!(why.contains("skipped 5"), "{why}");
    // A sequence lock left odd: never settles.
    write_at(bus.path(), at + 8, &0u64.to_le_bytes());
    write_at(bus.path(), at + 32, &7u32.to_le_bytes());
    let why = only_line(bus.name()).corrupt.expect("corrupt");
    assert!(why.contains("kept changing"), "{why}");
    drop(publisher);
    bus.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_streams_sides_count_their_records_and_a_new_producer_starts_over() {
    let bus = BusName::new("lines-stream");
    let mut producer =
        Producer::<[u8]>::create(bus.name(), &stream::Options::new(4096)).expect("create");
    let mut consumer = Consumer::<[u8]>::attach(bus.name(), &OpenOptions::default()).expect("open");
    for i in 0..10u8 {
        producer.push(&[i; 5], Wait::Never).expect("push");
    }
    let mut out = Vec::new();
    for _ in 0..4 {
        consumer.pop(&mut out, Wait::Never).expect("pop");
    }
    let st = stat::stat(bus.name())
        .expect("stat")
        .stream
        .expect("a stream");
    assert_eq!((st.producer_records, st.consumer_records), (10, 4));
    assert!(st.producer_active_ns > 0 && st.consumer_active_ns > 0);
    assert!(st.producer_active_ns <= stat::monotonic_ns());
    drop(producer);
    let mut again = Producer::<[u8]>::attach(bus.name(), &OpenOptions::default()).expect("attach");
    again.push(b"x", Wait::Never).expect("push");
    let st = stat::stat(bus.name())
        .expect("stat")
        .stream
        .expect("a stream");
    assert_eq!((st.producer_records, st.consumer_records), (1, 4));
    drop((again, consumer));
    bus.finish();
}

proptest! {
    // Under SHMBUS_TEST_SCALE; at least 8 cases.
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) {
        0
    } else {
        u32::try_from(common::scale_min(64, 8)).unwrap_or(u32::MAX)
    }))]

    /// Whatever a hostile subscriber writes on its line, `stat` returns,
    /// and a line it believes is consistent with the bus.
    #[test]
    fn any_bytes_on_a_line_are_either_reported_corrupt_or_consistent(
        bytes in proptest::collection::vec(any::<u8>(), 64),
        published in 0u64..40,
    ) {
        let bus = BusName::new("lines-fuzz");
        let mut publisher =
            Publisher::<u64>::create(bus.name(), &BusOptions::new(8)).expect("create");
        let _sub = Subscriber::<u64>::open(bus.name(), &OpenOptions::default()).expect("open");
        for i in 0..published {
            publisher.publish(&i);
        }
        write_at(bus.path(), line_offset(0), &bytes);
        let line = only_line(bus.name());
        if line.corrupt.is_none() {
            // One past the cursor is honest (LAYOUT §5.1, §13): lag 0.
            prop_assert!(line.position <= published + 1);
            prop_assert_eq!(line.lag, published.saturating_sub(line.position));
            prop_assert!(line.delivered + line.skipped <= line.position);
        }
        drop(publisher);
        bus.finish();
    }
}
