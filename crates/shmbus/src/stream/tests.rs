//! The stream's unit tests, on the heap.

use std::time::{Duration, Instant};

use super::ring::StreamRing;
use super::*;
use crate::mem::Region;
use crate::sync::Ordering;
use crate::wait::Wait;
use crate::wire::stream_control as ctl;

fn pair(capacity: u64) -> HeapStream {
    on_heap::<[u8]>(capacity, WaitStrategy::default()).expect("valid geometry")
}

#[test]
fn records_of_every_length_arrive_whole_and_in_order() {
    let (mut p, mut c) = pair(256);
    let mut out = Vec::new();
    for len in 0..=p.max_record() {
        let rec: Vec<u8> = (0..len).map(|i| (i + len) as u8).collect();
        p.push(&rec, Wait::Never).expect("room");
        c.pop(&mut out, Wait::Never).expect("a record");
        assert_eq!(out, rec);
    }
    assert_eq!(c.pop(&mut out, Wait::Never), Err(PopError::Empty));
}

#[test]
fn a_reused_pop_buffer_holds_exactly_each_record_shorter_or_longer_than_before() {
    let (mut p, mut c) = pair(256);
    let mut out = vec![0xEE; 100];
    for len in [40, 3, 0, 17, 64, 64, 1] {
        let rec: Vec<u8> = (0..len).map(|i| (i * 7 + len) as u8).collect();
        p.push(&rec, Wait::Never).expect("room");
        c.pop(&mut out, Wait::Never).expect("a record");
        assert_eq!(out, rec, "a {len}-byte record");
    }
}

#[test]
fn a_full_stream_says_full_and_a_too_long_record_is_refused() {
    let (mut p, mut c) = pair(64);
    assert_eq!(p.max_record(), 24);
    assert_eq!(
        p.push(&[0; 25], Wait::Never),
        Err(PushError::TooLong { len: 25, max: 24 })
    );
    p.push(&[1; 24], Wait::Never).expect("room");
    p.push(&[2; 24], Wait::Never).expect("room");
    assert_eq!(p.push(&[], Wait::Never), Err(PushError::Full));
    assert_eq!(
        p.push(&[], Wait::For(Duration::from_millis(5))),
        Err(PushError::TimedOut(Duration::from_millis(5)))
    );
    let mut out = Vec::new();
    c.pop(&mut out, Wait::Never).expect("first");
    assert_eq!(out, [1; 24]);
    p.push(&[], Wait::Never).expect("room again");
}

#[test]
fn a_record_exactly_filling_the_space_before_the_end_needs_no_wrap_marker() {
    let (mut p, mut c) = pair(64);
    let mut out = Vec::new();
    p.push(&[1; 16], Wait::Never).expect("room"); // 24 bytes
    c.pop(&mut out, Wait::Never).expect("first");
    p.push(&[2; 16], Wait::Never).expect("room"); // 24 bytes, at 24
    c.pop(&mut out, Wait::Never).expect("second");
    p.push(&[3; 8], Wait::Never).expect("room"); // exactly the 16 bytes left
    p.push(&[4; 24], Wait::Never).expect("room at 0");
    c.pop(&mut out, Wait::Never).expect("third");
    assert_eq!(out, [3; 8]);
    c.pop(&mut out, Wait::Never).expect("fourth");
    assert_eq!(out, [4; 24]);
}

#[test]
fn a_record_that_does_not_fit_before_the_end_wraps_whole() {
    let (mut p, mut c) = pair(64);
    let mut out = Vec::new();
    p.push(&[1; 20], Wait::Never).expect("room"); // 32 bytes
    c.pop(&mut out, Wait::Never).expect("first");
    p.push(&[2; 24], Wait::Never)
        .expect("wraps: marker at 32, record at 0");
    c.pop(&mut out, Wait::Never).expect("second");
    assert_eq!(out, [2; 24]);
    assert!(c.is_empty());
}

#[test]
fn chunks_are_written_and_read_in_place() {
    let (mut p, mut c) = pair(128);
    let mut chunk = p.reserve(5, Wait::Never).expect("room");
    chunk.copy_from_slice(b"hello");
    chunk.commit();
    {
        let _unpublished = p.reserve(3, Wait::Never).expect("room");
    }
    {
        let peeked = c.peek(Wait::Never).expect("a record");
        assert_eq!(&*peeked, b"hello"); // not released: read again below
    }
    assert_eq!(
        c.read_with(Wait::Never, |r| r.to_vec()),
        Ok(b"hello".to_vec())
    );
    assert_eq!(c.peek(Wait::Never).err(), Some(PopError::Empty));
}

#[test]
fn a_chunk_grows_in_place_or_moves_past_the_end_keeping_its_bytes() {
    let (mut p, mut c) = pair(256);
    let mut out = Vec::new();
    // At 0: grows in place, and only the first 50 bytes are published.
    let mut chunk = p.reserve(10, Wait::Never).expect("room");
    chunk.copy_from_slice(&[1; 10]);
    chunk.grow(100, Wait::Never).expect("room");
    assert_eq!(&chunk[..10], &[1; 10]);
    chunk[10..].fill(2);
    chunk.truncate(50);
    chunk.commit(); // 64 bytes
    c.pop(&mut out, Wait::Never).expect("first");
    assert_eq!(out, [[1; 10].as_slice(), &[2; 40]].concat());
    p.push(&[7; 104], Wait::Never).expect("room"); // 112, at 64
    c.pop(&mut out, Wait::Never).expect("filler");
    // At 176: 16 bytes fit before the end, 80 do not: the chunk moves
    // to 0 with its bytes, behind a wrap marker.
    let mut chunk = p.reserve(16, Wait::Never).expect("room");
    chunk.copy_from_slice(&[3; 16]);
    chunk.grow(80, Wait::Never).expect("room after the wrap");
    assert_eq!(&chunk[..16], &[3; 16]);
    chunk[16..].fill(4);
    chunk.commit();
    c.pop(&mut out, Wait::Never).expect("the moved record");
    assert_eq!(out, [[3; 16].as_slice(), &[4; 64]].concat());
    assert!(c.is_empty());
    assert_eq!(p.len(), 0);
}

#[test]
fn a_chunk_that_cannot_grow_stays_as_it_was() {
    let (mut p, mut c) = pair(256);
    p.push(&[9; 120], Wait::Never).expect("room"); // 128
    p.push(&[8; 40], Wait::Never).expect("room"); // 48, to 176
    let mut chunk = p.reserve(40, Wait::Never).expect("room"); // 48 of 80
    chunk.copy_from_slice(&[5; 40]);
    assert_eq!(chunk.grow(100, Wait::Never), Err(PushError::Full));
    assert_eq!(
        chunk.grow(100, Wait::For(Duration::from_millis(5))),
        Err(PushError::TimedOut(Duration::from_millis(5)))
    );
    assert_eq!(&*chunk, &[5; 40]);
    chunk.commit();
    let mut out = Vec::new();
    for want in [[9; 120].as_slice(), &[8; 40], &[5; 40]] {
        c.pop(&mut out, Wait::Never).expect("a record");
        assert_eq!(out, want);
    }
    assert_eq!(c.pop(&mut out, Wait::Never), Err(PopError::Empty));
}

#[test]
fn cursors_out_of_range_are_corrupt_cursors_not_a_wait_nor_a_bad_header() {
    let (mut p, mut c) = pair(256);
    // Bounded, so that a regression fails instead of hanging; the
    // answer must come at once all the same.
    let patience = Wait::For(Duration::from_secs(10));
    let started = Instant::now();
    // What a corrupt file (or a stray writer) would hold.
    fn set<R: Region>(ring: &StreamRing<R>, field: usize, value: u64) {
        ring.cursor(field).store(value, Ordering::Relaxed);
    }
    p.push(&[1; 8], Wait::Never).expect("room"); // 16
    let mut out = Vec::new();
    c.pop(&mut out, Wait::Never).expect("first");
    // TAIL more than the capacity ahead of HEAD (16).
    set(&c.ring, ctl::TAIL, 16 + 257 * 8);
    let corrupt = PopError::CorruptCursors {
        head: 16,
        tail: 16 + 257 * 8,
        capacity: 256,
    };
    assert_eq!(c.pop(&mut out, Wait::Never), Err(corrupt.clone()));
    assert_eq!(c.pop(&mut out, patience), Err(corrupt));
    // TAIL behind HEAD.
    set(&c.ring, ctl::TAIL, 8);
    assert!(matches!(
        c.pop(&mut out, patience),
        Err(PopError::CorruptCursors { tail: 8, .. })
    ));
    set(&c.ring, ctl::TAIL, 16);

    // The producer fills the ring, then finds HEAD past TAIL...
    while p.push(&[2; 8], Wait::Never).is_ok() {}
    let t = 16 + 256;
    set(&p.ring, ctl::HEAD, t + 64);
    assert_eq!(
        p.push(&[3; 8], patience),
        Err(PushError::CorruptCursors {
            head: t + 64,
            tail: t,
            capacity: 256,
            min_head: 16,
        })
    );
    // ... or moved back from the 16 it saw last.
    set(&p.ring, ctl::HEAD, 8);
    assert!(matches!(
        p.push(&[3; 8], patience),
        Err(PushError::CorruptCursors {
            head: 8,
            min_head: 16,
            ..
        })
    ));
    // Put right, both carry on.
    set(&p.ring, ctl::HEAD, 16);
    set(&c.ring, ctl::TAIL, t);
    c.pop(&mut out, Wait::Never).expect("a record");
    assert_eq!(out, [2; 8]);
    p.push(&[3; 8], Wait::Never).expect("room again");
    assert!(started.elapsed() < Duration::from_secs(5), "a wait");
}

#[test]
fn every_record_crosses_between_threads_once_in_order() {
    // Under SHMBUS_TEST_SCALE; at least 3 000 records (over a hundred laps of
    // the 1 KiB ring), or under Miri 100 (about five).
    let n = if cfg!(miri) {
        shmbus_testkit::scale_min(300, 100)
    } else {
        shmbus_testkit::scale_min(200_000, 3_000)
    };
    let n = u32::try_from(n).expect("a scale that fits the records' u32 numbering");
    let (mut p, mut c) = pair(1024);
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        for i in 0..n {
            c.pop(&mut out, Wait::Forever).expect("a record");
            let len = (i % 97) as usize;
            assert_eq!(out.len(), len);
            assert!(out.iter().all(|&b| b == i as u8), "record {i} damaged");
        }
    });
    for i in 0..n {
        let rec = vec![i as u8; (i % 97) as usize];
        p.push(&rec, Wait::Forever).expect("pushed");
    }
    reader.join().expect("reader");
}

#[test]
fn typed_records_of_a_size_that_is_no_multiple_of_8_wrap_and_arrive_whole() {
    // 12 bytes, 24 in the ring with header and padding: a 64-byte ring
    // wraps after two, with a marker before the third.
    let (mut p, mut c): HeapStream<[u32; 3]> =
        on_heap(64, WaitStrategy::default()).expect("valid geometry");
    for i in 0..100u32 {
        p.push(&[i, !i, i ^ 0x5555], Wait::Never).expect("room");
        if i % 3 == 0 {
            let mut chunk = p.reserve(Wait::Never).expect("room");
            *chunk = [i; 3];
            chunk.commit();
            assert_eq!(c.pop(Wait::Never), Ok([i, !i, i ^ 0x5555]));
            assert_eq!(*c.peek(Wait::Never).expect("a record"), [i; 3]);
            assert_eq!(c.read_with(Wait::Never, |r| r[0]), Ok(i));
        } else {
            assert_eq!(c.pop(Wait::Never), Ok([i, !i, i ^ 0x5555]));
        }
    }
    assert_eq!(c.pop(Wait::Never), Err(PopError::Empty));
}

#[test]
fn a_heap_stream_of_a_type_the_ring_cannot_carry_is_refused() {
    use crate::error::CreateError;
    use crate::wire::GeometryError;
    let refused = |r: Result<HeapStream<u128>, CreateError>| match r {
        Err(CreateError::InvalidGeometry(e)) => e,
        other => panic!("expected a geometry error, got {:?}", other.err()),
    };
    assert_eq!(
        refused(on_heap::<u128>(4096, WaitStrategy::default())),
        GeometryError::RecordAlign {
            type_name: "u128".into(),
            align: 16,
            max: 8
        }
    );
    match on_heap::<[u64; 4]>(64, WaitStrategy::default()) {
        Err(CreateError::InvalidGeometry(GeometryError::RecordTooLarge {
            size: 32,
            capacity: 64,
            max: 24,
            ..
        })) => {}
        other => panic!("expected RecordTooLarge, got {:?}", other.err()),
    }
}

#[test]
fn a_stream_consumer_and_a_pool_subscriber_are_members_too() {
    let (mut producer, mut consumer) =
        crate::stream::on_heap::<[u8]>(4096, crate::wait::WaitStrategy::default())
            .expect("heap stream");
    let mut pool = crate::pool::Publisher::<[u8], _>::on_heap(4, 64, 8).expect("heap pool");
    let on_pool = pool
        .subscribe(
            crate::options::Start::Next,
            crate::wait::WaitStrategy::default(),
        )
        .expect("pool subscriber");
    let mut select = crate::select::Select::new();
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
