//! The pool's unit tests, on the heap: the protocol (loan, reclaim, take,
//! release) through the real handles, and its accounting.

use std::sync::Arc;

use super::{Publisher, RecvError, Sample, Subscriber};
use crate::bus::Received;
use crate::mem::HeapRegion;
use crate::options::Start;
use crate::wait::{Wait, WaitStrategy};

type Sub = Subscriber<[u8], Arc<HeapRegion>>;
type Pub = Publisher<[u8], Arc<HeapRegion>>;

fn bus(capacity: u64, blocks: u64) -> Pub {
    Publisher::on_heap(capacity, 64, blocks).expect("valid geometry")
}

fn subscribe<T: ?Sized + crate::bus::Payload>(
    p: &Publisher<T, Arc<HeapRegion>>,
) -> Subscriber<T, Arc<HeapRegion>> {
    p.subscribe(Start::Oldest, WaitStrategy::BusySpin)
        .expect("an entry")
}

fn send(p: &mut Pub, byte: u8) -> u64 {
    let mut loan = p.loan(8, Wait::Never).expect("a free block");
    loan.fill(byte);
    loan.publish().expect("single publisher")
}

/// The pool's census seen through a subscriber, for when no publisher is
/// at hand (an owned loan has it, or was dropped with it).
fn census_of(s: &Sub) -> super::Census {
    let inner = &*s.inner;
    inner.blocks.census(inner.ring.region(), inner.ring.head())
}

fn take<T: ?Sized + crate::bus::Payload>(
    s: &mut Subscriber<T, Arc<HeapRegion>>,
) -> Sample<T, Arc<HeapRegion>> {
    match s.recv(Wait::Never) {
        Ok(Some(Received::Message(sample))) => sample,
        other => panic!("expected a sample, got {other:?}"),
    }
}

#[test]
fn a_held_sample_keeps_its_bytes_while_the_ring_laps_it_many_times() {
    let mut p = bus(4, 6);
    let mut s = subscribe(&p);
    send(&mut p, 1);
    let held = take(&mut s);
    for i in 0..40 {
        send(&mut p, 2 + i);
    }
    assert_eq!(&*held, &[1; 8]);
    let census = p.census();
    assert_eq!(census.held, 1);
    assert_eq!(census.on_ring, 4);
    drop(held);
    assert_eq!(p.census().held, 0);
}

#[test]
fn a_pool_with_every_block_on_the_ring_or_held_is_exhausted_and_says_where_they_are() {
    let mut p = bus(2, 3);
    let mut s = subscribe(&p);
    send(&mut p, 1);
    let a = take(&mut s);
    send(&mut p, 2);
    let b = take(&mut s);
    // Blocks: two held, one free; the ring's two descriptors name the held
    // ones until a third message overwrites the first.
    send(&mut p, 3);
    match p.loan(8, Wait::Never) {
        Err(super::LoanError::Exhausted { census }) => {
            assert_eq!((census.on_ring, census.held, census.free), (2, 1, 0));
        }
        other => panic!("expected an exhausted pool, got {other:?}"),
    }
    drop((a, b));
    send(&mut p, 4);
}

#[test]
fn a_subscriber_holding_its_limit_is_refused_without_losing_the_next_message() {
    let mut p = bus(16, 32);
    let mut s = subscribe(&p);
    for i in 0..=Sub::MAX_HELD as u8 {
        send(&mut p, i);
    }
    let held: Vec<_> = (0..Sub::MAX_HELD).map(|_| take(&mut s)).collect();
    assert_eq!(s.held(), Sub::MAX_HELD);
    assert_eq!(
        s.recv(Wait::Never).err(),
        Some(RecvError::TooManySamples { max: Sub::MAX_HELD })
    );
    drop(held);
    assert_eq!(&*take(&mut s), &[Sub::MAX_HELD as u8; 8]);
}

#[test]
fn a_block_reclaimed_between_reading_its_descriptor_and_taking_it_is_one_skipped_message() {
    let mut p = bus(2, 3);
    let s = subscribe(&p);
    let seq = send(&mut p, 1);
    // The subscriber read the descriptor of `seq` (block 0)... then the
    // ring laps it and the publisher reclaims block 0 for a new loan.
    send(&mut p, 2);
    send(&mut p, 3);
    let loan = p.loan(8, Wait::Never).expect("block 0, reclaimed");
    let inner = &*s.inner;
    let slot = inner
        .blocks
        .free_slot(inner.ring.region(), inner.entry)
        .expect("a slot");
    assert!(
        !inner
            .blocks
            .take(inner.ring.region(), inner.entry, slot, 0, seq)
    );
    assert_eq!(s.held(), 0, "a failed take lets go of its hold");
    drop(loan);
}

#[test]
fn a_descriptor_naming_a_block_past_the_pool_is_one_skipped_message() {
    let mut p = bus(4, 5);
    let mut s = subscribe(&p);
    let mut bogus = [0u8; 16];
    bogus[..8].copy_from_slice(&99u64.to_le_bytes());
    p.ring.write(0, &bogus);
    p.next = 1;
    let mut long = [0u8; 16];
    long[8..].copy_from_slice(&65u64.to_le_bytes());
    p.ring.write(1, &long);
    p.next = 2;
    send(&mut p, 7);
    for _ in 0..2 {
        let got = s.recv(Wait::Never);
        assert!(
            matches!(got, Ok(Some(Received::Lagged { skipped: 1 }))),
            "{got:?}"
        );
    }
    assert_eq!(&*take(&mut s), &[7; 8]);
}

#[test]
fn a_dropped_loan_and_a_dropped_subscriber_give_every_block_back() {
    let mut p = bus(2, 4);
    let mut s = subscribe(&p);
    drop(p.loan(8, Wait::Never).expect("a block"));
    assert_eq!(p.census().free, 4);
    send(&mut p, 1);
    let sample = take(&mut s);
    drop(s); // the sample keeps the subscriber's entry alive
    for i in 0..4 {
        send(&mut p, i);
    }
    assert_eq!(p.census().held, 1);
    drop(sample);
    let c = p.census();
    assert_eq!((c.held, c.on_ring, c.reclaimable), (0, 2, 2));
}

#[test]
fn delivered_plus_skipped_equals_published_with_a_reader_on_another_thread() {
    // Under SHMBUS_TEST_SCALE; at least 1 000 (125 laps of the 8 slots), or
    // under Miri 50 (6 laps).
    let n = if cfg!(miri) {
        shmbus_testkit::scale_min(200, 50)
    } else {
        shmbus_testkit::scale_min(100_000, 1_000)
    };
    let mut p = Pub::on_heap(8, 64, 24).expect("valid geometry");
    let mut s = p
        .subscribe(Start::Next, WaitStrategy::BusySpin)
        .expect("an entry");
    let reader = std::thread::spawn(move || {
        let (mut delivered, mut skipped, mut last) = (0u64, 0u64, None);
        while delivered + skipped < n {
            match s.recv(Wait::Forever) {
                Ok(Some(Received::Message(m))) => {
                    let seq = u64::from_le_bytes(m[..8].try_into().unwrap());
                    assert_eq!(seq, m.sequence(), "a block holds its own message");
                    assert!(m[8..].iter().all(|&b| b == seq as u8), "torn block");
                    assert!(last.is_none_or(|l| seq > l));
                    last = Some(seq);
                    delivered += 1;
                }
                Ok(Some(Received::Lagged { skipped: k })) => skipped += k,
                other => panic!("{other:?}"),
            }
        }
        (delivered, skipped)
    });
    for i in 0..n {
        let mut loan = p.loan(64, Wait::Forever).expect("blocks come free");
        loan[..8].copy_from_slice(&i.to_le_bytes());
        loan[8..].fill(i as u8);
        assert_eq!(loan.publish(), Ok(i));
    }
    let (delivered, skipped) = reader.join().unwrap();
    assert_eq!(delivered + skipped, n);
}

#[test]
fn a_pool_smaller_than_the_ring_plus_one_is_refused() {
    assert!(matches!(
        Pub::on_heap(8, 64, 8),
        Err(crate::CreateError::InvalidGeometry(
            crate::error::GeometryError::PoolTooSmall { .. }
        ))
    ));
    assert!(matches!(
        Pub::on_heap(8, 100, 9),
        Err(crate::CreateError::InvalidGeometry(
            crate::error::GeometryError::PoolBlockSize { .. }
        ))
    ));
}

#[test]
fn a_loan_that_waits_frees_what_the_dead_hold_again_and_again_not_once() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static SWEEPS: AtomicUsize = AtomicUsize::new(0);
    let (ring, blocks) =
        super::heap::ring(2, 64, 3, crate::TypeFingerprint::bytes(64)).expect("valid geometry");
    let mut p = Pub::from_parts(ring, blocks, 0, false, |_, _| {
        SWEEPS.fetch_add(1, Ordering::Relaxed);
    });
    let mut s = subscribe(&p);
    send(&mut p, 1);
    let held = take(&mut s);
    send(&mut p, 2);
    send(&mut p, 3);
    // A holder that dies during this wait is swept within 50 ms of it.
    let wait = std::time::Duration::from_millis(200);
    assert!(p.loan(8, Wait::For(wait)).is_err());
    assert!(SWEEPS.load(Ordering::Relaxed) >= 2, "swept once only");
    drop(held);
}

#[test]
fn a_typed_loan_is_one_t_and_its_sample_reads_it_back_in_place() {
    let mut p = Publisher::<[u32; 4], _>::on_heap(4, 64, 6).expect("valid geometry");
    let mut s = subscribe(&p);
    let mut loan = p.loan(Wait::Never).expect("a free block");
    assert_eq!(*loan, [0; 4], "a new pool's blocks are zero");
    *loan = [1, 2, 3, 4];
    loan[2] = 30;
    loan.publish().expect("single publisher");
    let sample = take(&mut s);
    assert_eq!(*sample, [1, 2, 30, 4]);
    assert_eq!(sample.sequence(), 0);
    // An owned typed loan is one `T` too.
    let mut owned = p.into_loan(Wait::Never).expect("a free block");
    *owned = [5; 4];
    let (_, published) = owned.publish();
    assert_eq!(published, Ok(1));
    assert_eq!(*take(&mut s), [5; 4]);
}

#[test]
fn a_type_aligned_past_64_bytes_or_larger_than_a_block_is_refused_when_the_pool_is_made() {
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    #[repr(C, align(128))]
    struct Wide([u8; 128]);
    impl crate::Message for Wide {
        const NAME: &'static str = "test.Wide";
    }
    use crate::error::GeometryError::PoolBlockType;
    match Publisher::<Wide, _>::on_heap(4, 256, 6) {
        Err(crate::CreateError::InvalidGeometry(PoolBlockType {
            align: 128,
            block_size: 256,
            ..
        })) => {}
        other => panic!("expected PoolBlockType, got {other:?}"),
    }
    match Publisher::<[u64; 9], _>::on_heap(4, 64, 6) {
        Err(crate::CreateError::InvalidGeometry(e @ PoolBlockType { size: 72, .. })) => {
            let text = e.to_string();
            assert!(
                text.contains("`u64[9]`") && text.contains("64-byte blocks"),
                "{text}"
            );
        }
        other => panic!("expected PoolBlockType, got {other:?}"),
    }
    assert!(Publisher::<[u64; 8], _>::on_heap(4, 64, 6).is_ok());
}

#[test]
fn a_typed_subscriber_counts_a_descriptor_of_another_length_as_lost_and_reads_on() {
    let mut p = Publisher::<u64, _>::on_heap(4, 64, 6).expect("valid geometry");
    let mut s = subscribe(&p);
    // As a raw or hostile writer would, through the publish path every
    // loan takes: 3 bytes, then a whole block.
    for len in [3, 64] {
        let mut block = p.lend(len, Wait::Never).expect("a free block");
        block.publish(&mut p).expect("single publisher");
    }
    let mut loan = p.loan(Wait::Never).expect("a free block");
    *loan = 7;
    loan.publish().expect("single publisher");
    for _ in 0..2 {
        let got = s.recv(Wait::Never);
        assert!(
            matches!(got, Ok(Some(Received::Lagged { skipped: 1 }))),
            "{got:?}"
        );
    }
    assert_eq!(s.held(), 0, "nothing held for a lost message");
    assert_eq!(*take(&mut s), 7);
}

#[test]
// Its 10 s limit is real time, and Miri runs the loan's thread slower.
#[cfg_attr(miri, ignore)]
fn a_loan_whose_sweeps_are_slow_still_ends_at_its_deadline() {
    // A pass and its sweep longer than the sweep interval once kept the
    // loan sweeping and never looking at its deadline.
    let (ring, blocks) =
        super::heap::ring(2, 64, 3, crate::TypeFingerprint::bytes(64)).expect("valid geometry");
    let mut p = Pub::from_parts(ring, blocks, 0, false, |_, _| {
        std::thread::sleep(std::time::Duration::from_millis(60));
    });
    let mut s = subscribe(&p);
    send(&mut p, 1);
    let held = take(&mut s);
    send(&mut p, 2);
    send(&mut p, 3);
    let (tx, rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let exhausted = matches!(
            p.loan(8, Wait::Never),
            Err(super::LoanError::Exhausted { .. })
        );
        let _ = tx.send(exhausted);
        p
    });
    let ended = rx.recv_timeout(std::time::Duration::from_secs(10));
    assert_eq!(ended, Ok(true), "the loan did not end at its deadline");
    drop(waiter.join().expect("the loan's thread"));
    drop(held);
}

#[test]
fn a_published_owned_loan_is_received_and_its_publisher_loans_again() {
    let p = bus(4, 6);
    let mut s = subscribe(&p);
    let mut loan = p.into_loan(64, Wait::Never).expect("a free block");
    loan[..5].copy_from_slice(b"first");
    loan.truncate(5);
    assert_eq!(loan.len(), 5);
    let (p, published) = loan.publish();
    assert_eq!(published, Ok(0));
    assert_eq!(&*take(&mut s), b"first");

    let mut again = p.into_loan(6, Wait::Never).expect("a free block");
    again.copy_from_slice(b"second");
    let (p, published) = again.publish();
    assert_eq!(published, Ok(1));
    assert_eq!(&*take(&mut s), b"second");
    assert_eq!(p.census().loaned, 0);
}

#[test]
fn a_dropped_or_cancelled_owned_loan_frees_its_block() {
    let p = bus(4, 5);
    let watcher = subscribe(&p);
    let loan = p.into_loan(8, Wait::Never).expect("a free block");
    let census = census_of(&watcher);
    assert_eq!((census.loaned, census.free), (1, 4));
    let p = loan.cancel();
    assert_eq!(p.census().free, 5, "a cancelled loan frees its block");

    let loan = p.into_loan(8, Wait::Never).expect("a free block");
    assert_eq!(census_of(&watcher).loaned, 1);
    drop(loan);
    let census = census_of(&watcher);
    assert_eq!(
        (census.loaned, census.free),
        (0, 5),
        "a dropped loan frees its block"
    );
}

#[test]
fn an_exhausted_into_loan_gives_the_publisher_back_in_its_error() {
    let mut p = bus(2, 3);
    let mut s = subscribe(&p);
    send(&mut p, 1);
    let a = take(&mut s);
    send(&mut p, 2);
    send(&mut p, 3);
    // Blocks: one held, two on the ring: none free.
    let failed = p.into_loan(8, Wait::Never).expect_err("an exhausted pool");
    match failed.error() {
        super::LoanError::Exhausted { census } => {
            assert_eq!((census.on_ring, census.held, census.free), (2, 1, 0));
        }
        other => panic!("expected an exhausted pool, got {other:?}"),
    }
    assert!(
        failed.to_string().contains("pool exhausted"),
        "{failed} names the error"
    );
    assert!(std::error::Error::source(&failed).is_some());
    let (mut p, _) = failed.into_parts();
    drop(a);
    assert_eq!(send(&mut p, 4), 3, "the publisher given back publishes on");
}

#[test]
fn an_owned_loan_of_a_bus_in_shared_memory_can_move_to_another_thread() {
    fn sendable<T: Send + Sync>() {}
    sendable::<super::OwnedLoan<[u8], crate::mem::ShmRegion>>();
    sendable::<super::OwnedLoan<u64, crate::mem::ShmRegion>>();
    let p = bus(4, 5);
    let loan = p.into_loan(3, Wait::Never).expect("a free block");
    let loan = std::thread::spawn(move || {
        let mut loan = loan;
        loan.copy_from_slice(b"abc");
        loan
    })
    .join()
    .expect("the writer");
    let (_, published) = loan.publish();
    assert_eq!(published, Ok(0));
}

/// Many publishers: a claim waiting at the gate runs the cursor more than
/// a ring past a descriptor the lossless subscriber has not read; a loan
/// made then must not take that descriptor's block (its bytes would
/// change under the subscriber that reads it next).
#[test]
// A /dev/shm file: Miri maps no files.
#[cfg_attr(miri, ignore)]
fn a_many_publisher_pool_never_reclaims_the_block_of_a_descriptor_a_lossless_subscriber_has_not_read()
 {
    use crate::options::OpenOptions;
    use crate::pool::Options;
    struct Name(String);
    impl Drop for Name {
        fn drop(&mut self) {
            let _ = crate::remove(&self.0);
        }
    }
    let name = Name(format!(
        "/dev/shm/shmbus-unit-pool-lossless-{}",
        std::process::id()
    ));
    // Eviction is not under test: a reader paused a second by a loaded
    // machine (CI's sanitizer lane) must not be evicted and lapped.
    let opts = Options::new(2, 64, 4)
        .many()
        .evict_after(std::time::Duration::from_secs(60));
    let mut a = Publisher::<[u8]>::create_many(&name.0, &opts).expect("create");
    let mut lossless = Subscriber::<[u8]>::open(&name.0, &OpenOptions::default().lossless(true))
        .expect("a pool takes lossless subscribers");
    assert!(lossless.is_lossless());
    let mut b = Publisher::<[u8]>::attach_many(&name.0, &OpenOptions::default()).expect("attach");
    for tag in [0u8, 1] {
        let mut loan = a.loan(64, Wait::Never).expect("a free block");
        loan.fill(tag);
        loan.publish().expect("published");
    }
    // Claims 2 and waits at the gate: the subscriber has not read 0.
    let waiting = std::thread::spawn(move || {
        let mut loan = a.loan(64, Wait::Never).expect("a free block");
        loan.fill(2);
        loan.publish()
    });
    let start = std::time::Instant::now();
    while b.ring.head() != 3 {
        assert!(start.elapsed() < std::time::Duration::from_secs(10));
        std::thread::yield_now();
    }
    // Block of 0 is "overwritten" by the cursor (3 > 0 + 2), yet unread.
    let mut loan = b.loan(64, Wait::Never).expect("the free block");
    loan.fill(0xEE);
    for tag in [0u8, 1] {
        match lossless.recv(Wait::For(std::time::Duration::from_secs(5))) {
            Ok(Some(Received::Message(m))) => {
                assert!(m.iter().all(|&x| x == tag), "message {tag} changed: {m:?}")
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(waiting.join().unwrap().is_ok());
    drop(loan);
}

/// A loan through the path every loan takes, with the block it got.
fn lend(p: &mut Pub) -> (u64, super::publisher::LoanedBlock) {
    let block = p.lend(8, Wait::Never).expect("a free block");
    (block.index(), block)
}

/// Sends `seq` (its first 8 bytes, then its low byte) as a loan does, and
/// returns the block that carried it.
fn send_seq(p: &mut Pub, seq: u64) -> u64 {
    let (b, mut block) = lend(p);
    block.bytes_mut().copy_from_slice(&seq.to_le_bytes());
    assert_eq!(block.publish(p), Ok(seq));
    b
}

fn seq_of(sample: &Sample<[u8], Arc<HeapRegion>>) -> u64 {
    u64::from_le_bytes(sample[..8].try_into().expect("8 bytes"))
}

/// A unique /dev/shm name, removed when dropped.
struct ShmName(String);

impl ShmName {
    fn new(what: &str) -> ShmName {
        ShmName(format!(
            "/dev/shm/shmbus-unit-pool-{what}-{}",
            std::process::id()
        ))
    }
}

impl Drop for ShmName {
    fn drop(&mut self) {
        let _ = crate::remove(&self.0);
    }
}

#[test]
fn a_round_trip_reuses_the_block_whose_descriptor_left_the_ring_a_cushion_of_publishes_back() {
    let cap = 4;
    let cushion = super::publisher::CUSHION as u64;
    let mut p = bus(cap, 16);
    let mut s = subscribe(&p);
    let mut carried = Vec::new();
    for seq in 0..60 {
        let b = send_seq(&mut p, seq);
        if seq > cap + cushion {
            // The publish of `seq - 1 - cushion` overwrote the descriptor
            // of `seq - 1 - cushion - cap`: its block is this loan's.
            assert_eq!(b, carried[(seq - 1 - cushion - cap) as usize], "seq {seq}");
        }
        carried.push(b);
        assert_eq!(seq_of(&take(&mut s)), seq);
    }
    assert_eq!(
        p.warm_loans,
        60 - (cap + cushion + 1),
        "first tries that found their block"
    );
    carried.sort_unstable();
    carried.dedup();
    assert_eq!(
        carried.len() as u64,
        cap + cushion + 1,
        "the working set: {carried:?}"
    );
}

#[test]
fn a_pool_with_one_block_to_spare_keeps_a_cushion_of_one() {
    // capacity + 2 blocks: one beyond the ring and the loan, so the
    // cushion holds one, and the warm block is the one that the publish
    // before the last overwrote.
    let cap = 4;
    let mut p = bus(cap, cap + 2);
    let mut s = subscribe(&p);
    let mut carried = Vec::new();
    for seq in 0..40 {
        let b = send_seq(&mut p, seq);
        if seq > cap + 1 {
            assert_eq!(b, carried[(seq - 2 - cap) as usize], "seq {seq}");
        }
        carried.push(b);
        assert_eq!(seq_of(&take(&mut s)), seq);
    }
    // Every loan from `cap + 2` on found its block at the first try (a
    // cushion longer than the pool can spare would leave each warm block
    // on the ring, and the search would find it).
    assert_eq!(p.warm_loans, 40 - (cap + 2));
}

#[test]
fn a_held_block_is_not_reused_first_but_the_search_goes_on() {
    let cap = 4;
    let mut p = bus(cap, 16);
    let mut s = subscribe(&p);
    let held_block = send_seq(&mut p, 0);
    let held = take(&mut s);
    for seq in 1..=cap {
        send_seq(&mut p, seq);
        drop(take(&mut s));
    }
    // The publish of `cap` overwrote the descriptor of 0, whose block is
    // held: the loan that tries it, a cushion later, leaves it and takes
    // another.
    for seq in cap + 1..40 {
        assert_ne!(send_seq(&mut p, seq), held_block, "seq {seq}");
        drop(take(&mut s));
    }
    assert_eq!(seq_of(&held), 0);
    assert_eq!(p.census().held, 1);
    drop(held);
    assert_eq!(p.census().held, 0);
}

#[test]
fn a_late_subscriber_still_reads_every_block_still_on_the_ring_and_a_lagging_one_loses_exactly_the_rest()
 {
    let cap = 8;
    let mut p = bus(cap, 24);
    let mut reader = subscribe(&p);
    let mut lagging = subscribe(&p);
    let n = 100;
    for seq in 0..n {
        send_seq(&mut p, seq);
        drop(take(&mut reader));
    }
    let mut late = subscribe(&p);
    for seq in n - cap..n {
        assert_eq!(seq_of(&take(&mut late)), seq);
    }
    // The lapped one resumes inside the ring, told exactly what it lost,
    // and every block it reads still holds its message.
    let (mut delivered, mut skipped) = (0, 0);
    while let Some(got) = lagging.recv(Wait::Never).expect("a free hold slot") {
        match got {
            Received::Message(m) => {
                assert_eq!(seq_of(&m), m.sequence());
                assert_eq!(m.sequence(), skipped + delivered);
                delivered += 1;
            }
            Received::Lagged { skipped: k } => skipped += k,
        }
    }
    assert_eq!(delivered + skipped, n);
    assert!(
        delivered > 0 && skipped >= n - cap,
        "{delivered} + {skipped}"
    );
}

#[test]
fn a_loan_never_takes_the_block_it_tries_first_while_a_lossless_subscriber_needs_it() {
    let (ring, blocks) =
        super::heap::ring(2, 64, 4, crate::TypeFingerprint::bytes(64)).expect("valid geometry");
    let r = ring.region();
    // Blocks 0, 1, 2 carry messages 0, 1, 2; block 3 is free. At cursor 3
    // the descriptor of 0 has left the ring.
    for b in 0..3 {
        blocks
            .loan(r, 7, b, None, &mut 0, &|_| false)
            .expect("free");
        blocks.publish(r, b, b);
    }
    let needs_0 = |s: u64| s == 0;
    assert_eq!(blocks.loan(r, 7, 3, Some(0), &mut 0, &needs_0), Some(3));
    blocks.free(r, 3);
    assert_eq!(blocks.loan(r, 7, 3, Some(0), &mut 0, &|_| false), Some(0));
}

#[test]
fn a_pass_tries_the_block_it_tries_first_once_and_each_other_block_once() {
    let (ring, blocks) =
        super::heap::ring(2, 64, 4, crate::TypeFingerprint::bytes(64)).expect("valid geometry");
    let r = ring.region();
    blocks.enter(r, 0);
    for b in 0..4 {
        blocks
            .loan(r, 7, b, None, &mut 0, &|_| false)
            .expect("free");
        blocks.publish(r, b, b);
        assert!(blocks.take(r, 0, b as usize, b, b));
    }
    // Every block overwritten (cursor 10) and held: none to take.
    let tries = std::cell::Cell::new(0);
    let count = |_| {
        tries.set(tries.get() + 1);
        false
    };
    let mut hint = 1;
    assert_eq!(blocks.loan(r, 7, 10, Some(2), &mut hint, &count), None);
    assert_eq!(tries.get(), 4);
    assert_eq!(hint, 1, "a pass that found nothing leaves its start");
    // A block tried first past the pool is no block: the pass alone.
    tries.set(0);
    assert_eq!(blocks.loan(r, 7, 10, Some(99), &mut hint, &count), None);
    assert_eq!(tries.get(), 4);
}

#[test]
fn a_loan_given_back_unpublished_is_the_next_loan_s_block() {
    let mut p = bus(4, 16);
    let (b, block) = lend(&mut p);
    drop(Loan_(block, &mut p));
    let (again, block) = lend(&mut p);
    assert_eq!(again, b);
    drop(Loan_(block, &mut p));
}

/// Frees a `LoanedBlock` as a dropped loan does.
struct Loan_<'a>(super::publisher::LoanedBlock, &'a mut Pub);

impl Drop for Loan_<'_> {
    fn drop(&mut self) {
        self.0.free(self.1);
    }
}

/// A single publisher with a lossless subscriber: each loan's block is
/// never one whose message the subscriber has yet to read, though the
/// publisher tries first the block of the descriptor it last overwrote.
#[test]
// A /dev/shm file: Miri maps no files.
#[cfg_attr(miri, ignore)]
fn a_single_publisher_never_reuses_the_block_of_a_message_a_lossless_subscriber_has_not_read() {
    use crate::options::OpenOptions;
    use crate::pool::Options;
    let name = ShmName::new("lossless-single");
    let cap = 4;
    let opts = Options::new(cap, 64, 12).evict_after(std::time::Duration::from_secs(60));
    let mut p = Publisher::<[u8]>::create(&name.0, &opts).expect("create");
    let mut s = Subscriber::<[u8]>::open(&name.0, &OpenOptions::default().lossless(true))
        .expect("a pool takes lossless subscribers");
    let mut carried: Vec<u64> = Vec::new();
    let mut read = 0u64;
    for step in 0..200u64 {
        let mut block = p.lend(8, Wait::Never).expect("a free block");
        let b = block.index();
        let unread = &carried[read as usize..];
        assert!(
            !unread.contains(&b),
            "block {b} of an unread message, step {step}"
        );
        let seq = carried.len() as u64;
        block.bytes_mut().copy_from_slice(&seq.to_le_bytes());
        match block.try_publish(&mut p, Some(std::time::Instant::now())) {
            Ok(got) => {
                assert_eq!(got, seq);
                carried.push(b);
            }
            Err(crate::bus::TryPublishError::Full { .. }) => block.free(&mut p),
            Err(e) => panic!("{e:?}"),
        }
        // Reads one now and then, and two at a time after a full ring.
        for _ in 0..(step % 3) {
            match s.recv(Wait::Never) {
                Ok(Some(Received::Message(m))) => {
                    assert_eq!(u64::from_le_bytes(m[..8].try_into().unwrap()), read);
                    read += 1;
                }
                Ok(None) => {}
                other => panic!("{other:?}"),
            }
        }
    }
    assert!(read > 2 * cap, "the subscriber read {read}");
}

/// Many publishers: each claim's slot still holds the descriptor it
/// overwrites, and that block is the claimer's loan a cushion later.
#[test]
// A /dev/shm file: Miri maps no files.
#[cfg_attr(miri, ignore)]
fn each_of_many_publishers_reuses_the_block_whose_descriptor_its_own_publish_a_cushion_back_overwrote()
 {
    use crate::options::OpenOptions;
    use crate::pool::Options;
    let name = ShmName::new("warm-many");
    let cap = 4;
    let opts = Options::new(cap, 64, 16).many();
    let a = Publisher::<[u8]>::create_many(&name.0, &opts).expect("create");
    let b = Publisher::<[u8]>::attach_many(&name.0, &OpenOptions::default()).expect("attach");
    let mut s = Subscriber::<[u8]>::open(&name.0, &OpenOptions::default()).expect("open");
    let mut publishers = [a, b];
    let cushion = super::publisher::CUSHION;
    let mut carried: Vec<u64> = Vec::new();
    // Per publisher, the sequences it published.
    let mut mine: [Vec<u64>; 2] = [Vec::new(), Vec::new()];
    for seq in 0..60u64 {
        let who = (seq % 2) as usize;
        let p = &mut publishers[who];
        let mut block = p.lend(8, Wait::Never).expect("a free block");
        let got = block.index();
        // Its publish a cushion back overwrote the descriptor of `back -
        // cap`: that block is this loan's.
        let back = mine[who]
            .len()
            .checked_sub(cushion + 1)
            .map(|k| mine[who][k]);
        if let Some(back) = back.filter(|&back| back >= cap) {
            assert_eq!(got, carried[(back - cap) as usize], "seq {seq}");
        }
        block.bytes_mut().copy_from_slice(&seq.to_le_bytes());
        assert_eq!(block.publish(p), Ok(seq));
        carried.push(got);
        mine[who].push(seq);
        match s.recv(Wait::Never) {
            Ok(Some(Received::Message(m))) => {
                assert_eq!(u64::from_le_bytes(m[..8].try_into().unwrap()), seq)
            }
            other => panic!("{other:?}"),
        }
    }
}

/// docs/LAYOUT.md §19.7: which block each loan takes, and the census.
#[test]
// A /dev/shm file: Miri maps no files.
#[cfg_attr(miri, ignore)]
fn the_layout_s_worked_example_loans_the_blocks_it_says() {
    use crate::options::OpenOptions;
    use crate::pool::Options;
    let name = ShmName::new("worked-example");
    let mut p = Publisher::<[u8]>::create(&name.0, &Options::new(8, 4096, 16)).expect("create");
    let mut first = Subscriber::<[u8]>::open(&name.0, &OpenOptions::default()).expect("open");
    let _second = Subscriber::<[u8]>::open(&name.0, &OpenOptions::default()).expect("open");
    let mut kept = Vec::new();
    let mut carried = Vec::new();
    for seq in 0..12u64 {
        let text = if seq < 2 {
            format!("held-{seq}")
        } else {
            format!("msg-{seq:02}")
        };
        let mut block = p.lend(text.len(), Wait::Never).expect("a block");
        carried.push(block.index());
        block.bytes_mut().copy_from_slice(text.as_bytes());
        assert_eq!(block.publish(&mut p), Ok(seq));
        if seq < 2 {
            match first.recv(Wait::Never) {
                Ok(Some(Received::Message(m))) => kept.push(m),
                other => panic!("{other:?}"),
            }
        }
    }
    assert_eq!(carried, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    let loan = p.loan(8, Wait::Never).expect("a block");
    drop(loan);
    let loan = p.lend(8, Wait::Never).expect("a block");
    assert_eq!(loan.index(), 12, "a loan given back is the next one's");
    let census = p.census();
    assert_eq!(
        (census.free, census.loaned, census.on_ring, census.held),
        (3, 1, 8, 2)
    );
    assert_eq!((census.reclaimable, census.corrupt), (2, 0));
    let mut loan = loan;
    loan.bytes_mut().copy_from_slice(b"msg-12\0\0");
    assert_eq!(loan.publish(&mut p), Ok(12));
    // Warm now: block 0, whose descriptor publishing 8 overwrote; held.
    let next = p.lend(8, Wait::Never).expect("a block");
    assert_eq!(next.index(), 13, "block 0 is held: the search goes on");
    let mut next = next;
    next.bytes_mut().copy_from_slice(b"msg-13\0\0");
    assert_eq!(next.publish(&mut p), Ok(13));
    let mut again = p.lend(8, Wait::Never).expect("a block");
    assert_eq!(again.index(), 14, "block 1 is held");
    again.free(&mut p);
    let mut last = p.lend(8, Wait::Never).expect("a block");
    assert_eq!(last.index(), 14, "a loan given back is the next one's");
    last.bytes_mut().copy_from_slice(b"msg-14\0\0");
    assert_eq!(last.publish(&mut p), Ok(14));
    let next = p.lend(8, Wait::Never).expect("a block");
    assert_eq!(next.index(), 2, "block 2 left the ring a cushion back");
    drop(kept);
    let mut next = next;
    next.free(&mut p);
}
