//! Typed streams (`Producer<T>`, `Consumer<T>`) between real processes:
//! every record is one `T`, and crosses once, in order, whole; the stream
//! records `T`'s name and alignment, and a typed opener of another type is
//! refused with the bus's `TypeMismatch`; a raw consumer reads a typed
//! stream's records as their bytes; a typed consumer that meets a record
//! of another length (a raw producer wrote it) gets `RecordLength` and
//! stays before it.
//!
//! Children are this test binary run again (see `common`), under its
//! watchdog; every wait in the parent is bounded.

mod common;

use std::time::Duration;

use common::{BusName, param, print_result, role};
use shmbus::stream::{self, Consumer, PopError, Producer};
use shmbus::{AttachError, Message, OpenError, OpenOptions, Wait};

/// How long the parent's own pushes and pops may wait for a child.
const PATIENCE: Wait = Wait::For(Duration::from_secs(30));

/// A record type that is not a multiple of the ring's 8-byte records in
/// its parts: 24 bytes, aligned to 8.
#[derive(Clone, Copy, Debug, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Tick {
    seq: u64,
    key: u64,
    val: u32,
    check: u32,
}

impl Message for Tick {
    const NAME: &'static str = "test.Tick";
}

impl Tick {
    /// Record `i`: a function of `i` alone, so the reader checks each one.
    fn nth(i: u64) -> Tick {
        let key = common::splitmix(i);
        let val = (key >> 17) as u32;
        Tick {
            seq: i,
            key,
            val,
            check: (key as u32) ^ val ^ (i as u32),
        }
    }
}

/// A 1 KiB ring: a record (32 bytes with its header) wraps every 32.
const CAP: u64 = 1024;

fn create_and_leave(bus: &BusName) {
    let guard = common::no_spawn_in_flight();
    drop(Producer::<Tick>::create(bus.name(), &stream::Options::new(CAP)).expect("create"));
    drop(guard);
}

fn child(entry: &str, role: &str, bus: &BusName, count: u64) -> common::Watched {
    common::spawn_child(
        entry,
        role,
        &[
            ("SHMBUS_BUS", bus.name().to_owned()),
            ("SHMBUS_COUNT", count.to_string()),
        ],
    )
}

/// Attaches as a typed consumer and checks COUNT ticks, in order.
#[test]
fn as_child_consume_ticks() {
    role("consume_ticks", || {
        let name: String = param("SHMBUS_BUS");
        let count: u64 = param("SHMBUS_COUNT");
        let mut c = Consumer::<Tick>::attach(&name, &OpenOptions::default()).expect("attach");
        let (mut got, mut faults) = (0u64, 0u64);
        for i in 0..count {
            // Half by value, half in place.
            let tick = if i % 2 == 0 {
                c.pop(PATIENCE).expect("a tick")
            } else {
                c.read_with(PATIENCE, |t| *t).expect("a tick")
            };
            faults += u64::from(tick != Tick::nth(i));
            got += 1;
        }
        let extra = c.pop(Wait::Never) != Err(PopError::Empty);
        print_result(&[
            ("got", got.to_string()),
            ("faults", faults.to_string()),
            ("extra", extra.to_string()),
        ]);
    });
}

/// Attaches as a typed producer and pushes COUNT ticks.
#[test]
fn as_child_produce_ticks() {
    role("produce_ticks", || {
        let name: String = param("SHMBUS_BUS");
        let count: u64 = param("SHMBUS_COUNT");
        let mut p = Producer::<Tick>::attach(&name, &OpenOptions::default()).expect("attach");
        for i in 0..count {
            if i % 2 == 0 {
                p.push(&Tick::nth(i), PATIENCE).expect("push");
            } else {
                let mut chunk = p.reserve(PATIENCE).expect("reserve");
                *chunk = Tick::nth(i);
                chunk.commit();
            }
        }
        print_result(&[("pushed", count.to_string())]);
    });
}

/// Attaches as a raw producer and pushes a 3-byte record, then one tick's
/// bytes.
#[test]
fn as_child_push_a_short_record_raw() {
    role("push_raw", || {
        let name: String = param("SHMBUS_BUS");
        let mut p = Producer::<[u8]>::attach(&name, &OpenOptions::default()).expect("raw attach");
        p.push(b"abc", Wait::Never).expect("push");
        p.push(bytemuck::bytes_of(&Tick::nth(7)), Wait::Never)
            .expect("push");
        print_result(&[("pushed", "2".into())]);
    });
}

#[test]
fn a_typed_stream_carries_each_record_across_processes_once_in_order_and_whole() {
    let bus = BusName::new("typed");
    create_and_leave(&bus);
    let n = common::scale_min(100_000, 5_000);
    let consumer = child("as_child_consume_ticks", "consume_ticks", &bus, n);
    let mut p = Producer::<Tick>::attach(bus.name(), &OpenOptions::default()).expect("attach");
    for i in 0..n {
        p.push(&Tick::nth(i), PATIENCE).expect("push");
    }
    let f = consumer.wait_success();
    let r = f.result();
    assert_eq!(r.get::<u64>("faults"), 0, "{}", f.output());
    assert_eq!(r.get::<u64>("got"), n, "{}", f.output());
    assert_eq!(r.raw("extra"), Some("false"), "{}", f.output());
    drop(p);
    bus.finish();
}

#[test]
fn a_stream_of_one_type_opened_as_another_is_refused_with_a_type_mismatch() {
    let bus = BusName::new("typed-mismatch");
    create_and_leave(&bus);
    // Handles are dropped and the bus opened again in this process: no
    // child of another test may be between fork and exec meanwhile, holding
    // a copy of a dropped handle's lock.
    let _no_fork = common::no_spawn_in_flight();
    let o = OpenOptions::default();
    let mismatch = |err: Option<AttachError>| match err {
        Some(AttachError::Open(OpenError::TypeMismatch { found, expected })) => (found, expected),
        other => panic!("expected a type mismatch, got {other:?}"),
    };
    let (found, expected) = mismatch(Consumer::<u64>::attach(bus.name(), &o).err());
    assert_eq!((found.name.as_str(), found.align), ("test.Tick", 8));
    assert_eq!((expected.name.as_str(), expected.size), ("u64", 8));
    mismatch(Producer::<u64>::attach(bus.name(), &o).err());
    // The same name and alignment, but larger than the largest record.
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    #[repr(C)]
    struct Huge([u64; 64]);
    impl Message for Huge {
        const NAME: &'static str = "test.Tick";
    }
    let (found, expected) = mismatch(Consumer::<Huge>::attach(bus.name(), &o).err());
    assert_eq!((found.size, expected.size), (504, 512));
    // The stream's own type still opens, both sides.
    drop(Consumer::<Tick>::attach(bus.name(), &o).expect("same type"));
    drop(Producer::<Tick>::attach(bus.name(), &o).expect("same type"));
    bus.finish();

    // A raw stream is no stream of `u64` either.
    let raw = BusName::new("raw-as-typed");
    drop(Producer::<[u8]>::create(raw.name(), &stream::Options::new(CAP)).expect("create"));
    let (found, _) = mismatch(Consumer::<u64>::attach(raw.name(), &o).err());
    assert_eq!(found.name, "stream");
    raw.finish();
}

#[test]
fn a_raw_consumer_reads_a_typed_streams_records_as_their_bytes() {
    let bus = BusName::new("typed-raw-reader");
    create_and_leave(&bus);
    let n = 200;
    let producer = child("as_child_produce_ticks", "produce_ticks", &bus, n);
    let mut c = Consumer::<[u8]>::attach(bus.name(), &OpenOptions::default()).expect("raw");
    let mut out = Vec::new();
    for i in 0..n {
        c.pop(&mut out, PATIENCE).expect("a record");
        assert_eq!(out, bytemuck::bytes_of(&Tick::nth(i)), "record {i}");
    }
    producer.wait_success();
    bus.finish();
}

#[test]
fn a_typed_consumer_meeting_a_record_of_another_length_gets_record_length_and_stays_before_it() {
    let bus = BusName::new("typed-short");
    create_and_leave(&bus);
    // A raw producer attaches to a typed stream: raw openers take any type.
    child("as_child_push_a_short_record_raw", "push_raw", &bus, 0).wait_success();
    // Handles are dropped and the bus opened again in this process: no
    // child of another test may be between fork and exec meanwhile, holding
    // a copy of a dropped handle's lock.
    let _no_fork = common::no_spawn_in_flight();
    let o = OpenOptions::default();
    let mut c = Consumer::<Tick>::attach(bus.name(), &o).expect("typed");
    let short = PopError::RecordLength {
        at: 0,
        len: 3,
        expected: 24,
        type_name: "test.Tick",
    };
    // Every typed read refuses it, and none consumes it.
    assert_eq!(c.pop(Wait::Never), Err(short.clone()));
    assert_eq!(c.pop(PATIENCE), Err(short.clone()));
    assert_eq!(c.peek(Wait::Never).err(), Some(short.clone()));
    assert_eq!(c.read_with(Wait::Never, |t| *t), Err(short.clone()));
    assert_eq!(
        short.to_string(),
        "record at byte 0 of the stream is 3 bytes, expected 24 (one `test.Tick`)"
    );
    assert_eq!(c.len(), 16 + 32, "nothing consumed");
    drop(c);
    // A raw consumer takes it out of the way; the typed one reads on.
    let mut raw = Consumer::<[u8]>::attach(bus.name(), &o).expect("raw");
    let mut out = Vec::new();
    raw.pop(&mut out, Wait::Never).expect("the short record");
    assert_eq!(out, b"abc");
    drop(raw);
    let mut c = Consumer::<Tick>::attach(bus.name(), &o).expect("typed");
    assert_eq!(c.pop(Wait::Never), Ok(Tick::nth(7)));
    bus.finish();
}

#[test]
fn a_raw_opener_that_names_a_type_is_held_to_it_and_a_raw_creator_may_record_one() {
    let bus = BusName::new("typed-named");
    // Handles are dropped and the bus opened again in this process: no
    // child of another test may be between fork and exec meanwhile, holding
    // a copy of a dropped handle's lock.
    let _no_fork = common::no_spawn_in_flight();
    // A raw creator (as C, Python and the tool create) records a named type.
    let opts = stream::Options::new(CAP).message_type("test.Tick", 8);
    drop(Producer::<[u8]>::create(bus.name(), &opts).expect("create"));
    drop(Consumer::<Tick>::attach(bus.name(), &OpenOptions::default()).expect("the same type"));
    let named = |name: &str, size, align| OpenOptions::default().message_type(name, size, align);
    drop(Consumer::<[u8]>::attach(bus.name(), &named("test.Tick", 24, 8)).expect("the same"));
    for wrong in [
        named("test.Tock", 24, 8),
        named("test.Tick", 24, 4),
        named("test.Tick", 512, 8),
    ] {
        match Consumer::<[u8]>::attach(bus.name(), &wrong) {
            Err(AttachError::Open(OpenError::TypeMismatch { found, .. })) => {
                assert_eq!(found.name, "test.Tick")
            }
            other => panic!("expected a type mismatch, got {other:?}"),
        }
        assert!(matches!(
            Producer::<[u8]>::attach(bus.name(), &wrong),
            Err(AttachError::Open(OpenError::TypeMismatch { .. }))
        ));
    }
    bus.finish();
}
