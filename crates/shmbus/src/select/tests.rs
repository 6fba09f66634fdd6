use std::sync::Arc;
use std::time::Duration;

use super::{Select, Selectable, WAITV_MAX};
use crate::mem::HeapRegion;
use crate::{Publisher, Received, Start, Subscriber, Wait, WaitStrategy};

type HeapPair = (
    Publisher<u64, Arc<HeapRegion>>,
    Subscriber<u64, Arc<HeapRegion>>,
);

/// Waits until a sleeper raised its flag on `p`'s bus (bit 0 of the futex
/// word): on a fresh heap bus, only a select about to sleep does. A
/// publish after this wakes a sleeping select, not one still looking.
fn wait_until_asleep_on(p: &Publisher<u64, Arc<HeapRegion>>) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while p.ring.doorbell().load(crate::sync::Ordering::SeqCst) & 1 == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the select never went to sleep"
        );
        std::thread::yield_now();
    }
}

fn buses(n: usize) -> Vec<HeapPair> {
    (0..n)
        .map(|_| {
            let p = Publisher::<u64, _>::on_heap(4).expect("heap bus");
            let s = p.subscribe(Start::Next, WaitStrategy::default());
            (p, s)
        })
        .collect()
}

#[test]
fn a_select_over_no_members_says_none_at_once_even_with_no_deadline() {
    assert_eq!(Select::new().ready(&[], Wait::Forever), None);
}

#[test]
fn a_select_names_the_member_with_a_message_and_times_out_when_none_has_one() {
    let mut b = buses(3);
    let mut select = Select::new();
    fn members<P>(b: &[(P, Subscriber<u64, Arc<HeapRegion>>)]) -> Vec<&dyn Selectable> {
        b.iter().map(|(_, s)| s as &dyn Selectable).collect()
    }
    assert_eq!(
        select.ready(&members(&b), Wait::For(Duration::from_millis(5))),
        None
    );
    // Spin 0 goes straight to the sleep, and ends at the deadline too.
    let straight = WaitStrategy::SpinFutex {
        spin: Duration::ZERO,
    };
    let asked = std::time::Instant::now();
    let got =
        Select::with_strategy(straight).ready(&members(&b), Wait::For(Duration::from_millis(5)));
    assert_eq!(got, None);
    assert!(asked.elapsed() >= Duration::from_millis(5));
    b[2].0.publish(&9);
    assert_eq!(select.ready(&members(&b), Wait::Never), Some(2));
    assert_eq!(b[2].1.recv(Wait::Never), Some(Received::Message(9)));
    assert_eq!(select.ready(&members(&b), Wait::Never), None);
}

#[test]
fn a_lapped_member_is_ready_and_its_own_receive_reports_the_exact_lag() {
    let mut b = buses(2);
    for i in 0..10 {
        b[1].0.publish(&i);
    }
    let members: Vec<&dyn Selectable> = b.iter().map(|(_, s)| s as &dyn Selectable).collect();
    assert_eq!(Select::new().ready(&members, Wait::Never), Some(1));
    // 10 published on a 4-slot ring: the lag and what follows it account
    // for every one (a lapped reader goes on half a ring behind).
    let Some(Received::Lagged { skipped }) = b[1].1.recv(Wait::Never) else {
        panic!("expected a lag first")
    };
    let mut next = skipped;
    while let Some(Received::Message(m)) = b[1].1.recv(Wait::Never) {
        assert_eq!(m, next);
        next += 1;
    }
    assert_eq!(next, 10);
}

#[test]
fn two_members_that_are_always_ready_are_named_in_turn() {
    let mut b = buses(2);
    b[0].0.publish(&1);
    b[1].0.publish(&2);
    let members: Vec<&dyn Selectable> = b.iter().map(|(_, s)| s as &dyn Selectable).collect();
    let mut select = Select::new();
    let picks: Vec<_> = (0..4)
        .map(|_| select.ready(&members, Wait::Never))
        .collect();
    assert_eq!(picks, [Some(0), Some(1), Some(0), Some(1)]);
}

#[test]
fn a_sleeping_select_wakes_when_another_thread_publishes_on_any_member() {
    let n = if cfg!(miri) { 2 } else { 8 };
    let mut b = buses(n);
    let (mut publisher, _) = b.pop().expect("one bus");
    let subs = b;
    let last = publisher.subscribe(Start::Next, WaitStrategy::default());
    let t = std::thread::spawn(move || {
        wait_until_asleep_on(&publisher);
        publisher.publish(&5);
        publisher
    });
    let mut members: Vec<&dyn Selectable> =
        subs.iter().map(|(_, s)| s as &dyn Selectable).collect();
    members.push(&last);
    let asked = std::time::Instant::now();
    let got = Select::with_strategy(WaitStrategy::SpinFutex {
        spin: Duration::ZERO,
    })
    .ready(&members, Wait::For(Duration::from_secs(10)));
    // Woken by the publish, not by the end of the wait.
    assert!(
        asked.elapsed() < Duration::from_secs(5),
        "{:?}",
        asked.elapsed()
    );
    assert_eq!(got, Some(n - 1));
    drop(t.join().expect("publisher thread"));
}

#[test]
fn a_select_over_more_members_than_futex_waitv_takes_still_wakes() {
    if cfg!(miri) {
        return; // hundreds of heap buses: too slow under Miri
    }
    let mut b = buses(WAITV_MAX + 20);
    let (mut publisher, last) = b.pop().expect("one bus");
    let t = std::thread::spawn(move || {
        wait_until_asleep_on(&publisher);
        publisher.publish(&5);
        publisher
    });
    let mut members: Vec<&dyn Selectable> = b.iter().map(|(_, s)| s as &dyn Selectable).collect();
    members.push(&last);
    let asked = std::time::Instant::now();
    let got = Select::with_strategy(WaitStrategy::SpinFutex {
        spin: Duration::ZERO,
    })
    .ready(&members, Wait::For(Duration::from_secs(10)));
    // Woken by the publish, not by the end of the wait.
    assert!(
        asked.elapsed() < Duration::from_secs(5),
        "{:?}",
        asked.elapsed()
    );
    assert_eq!(got, Some(WAITV_MAX + 19));
    drop(t.join().expect("publisher thread"));
}

#[test]
fn a_stream_consumer_and_a_pool_subscriber_are_members_too() {
    let (mut producer, mut consumer) =
        crate::stream::on_heap::<[u8]>(4096, WaitStrategy::default()).expect("heap stream");
    let mut pool = crate::pool::PoolPublisher::<[u8], _>::on_heap(4, 64, 8).expect("heap pool");
    let on_pool = pool
        .subscribe(Start::Next, WaitStrategy::default())
        .expect("pool subscriber");
    let mut select = Select::new();
    assert_eq!(select.ready(&[&consumer, &on_pool], Wait::Never), None);
    producer.push(b"x", Wait::Never).expect("push");
    assert_eq!(select.ready(&[&consumer, &on_pool], Wait::Never), Some(0));
    let mut out = Vec::new();
    consumer.pop(&mut out, Wait::Never).expect("pop");
    assert_eq!(out, b"x");
    let mut loan = pool.loan(1, Wait::Never).expect("loan");
    loan.copy_from_slice(b"y");
    loan.publish().expect("publish");
    assert_eq!(select.ready(&[&consumer, &on_pool], Wait::Never), Some(1));
}
