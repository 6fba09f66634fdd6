//! A blackboard made for many writers, between processes: two writer
//! processes on their own keys while reader threads check every value
//! they read is whole; one writer stopped mid-write by the test hook and
//! killed, its entry reported stuck while no writer lives, then taken
//! over by the next writer once the (short) unblock timeout has passed;
//! and each writer mode refused to the other's handle.
//!
//! Each child is this test binary run again (see `common`); its entry is
//! an `as_child_*` test that does nothing unless `SHMBUS_CHILD_ROLE` names it.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::{BusName, param, print_ready, print_result, role, scale_min, spawn_child, splitmix};
use shmbus::blackboard::{self, GetError, ManyWriter, PutError, Reader, Writer};
use shmbus::error::Role;
use shmbus::{AttachError, OpenOptions, Publishers};

/// A 64-byte value whose every mix of two writes fails [`check`].
type Value = [u64; 8];

/// The value of `key` at its `n`th write.
fn value(key: u64, n: u64) -> Value {
    let mut v = [key, n, 0, 0, 0, 0, 0, 0];
    for (i, w) in v.iter_mut().enumerate().skip(2) {
        *w = splitmix(key ^ n.rotate_left(17) ^ (i as u64) << 56);
    }
    v
}

/// Whether `v` is a whole write of `key`.
fn check(key: u64, v: &Value) -> bool {
    v[0] == key && *v == value(key, v[1])
}

/// The keys each writer process owns.
const PER_WRITER: u64 = 32;
/// The key the stopped writer leaves mid-write.
const STOPPED_KEY: u64 = 5;
/// The test's unblock timeout.
const UNBLOCK: Duration = Duration::from_millis(100);

#[test]
fn as_child_write_own_keys() {
    role("bbm_writer", || {
        let name: String = param("SHMBUS_BUS");
        let first: u64 = param("SHMBUS_FIRST");
        let rounds: u64 = param("SHMBUS_ROUNDS");
        let stop: bool = param("SHMBUS_STOP");
        let mut w =
            ManyWriter::<u64, Value>::attach(&name, &OpenOptions::default()).expect("attach");
        let mut busy = 0u64;
        for n in 2..rounds + 2 {
            for k in first..first + PER_WRITER {
                match w.put(&k, &value(k, n)) {
                    Ok(_) => {}
                    Err(PutError::Busy { .. }) => busy += 1,
                    Err(e) => panic!("key {k}: {e}"),
                }
            }
        }
        print_result(&[("busy", busy.to_string())]);
        if stop {
            let k = first + STOPPED_KEY;
            w.put_and_stop_mid_write(&k.to_ne_bytes(), bytemuck::bytes_of(&value(k, u64::MAX)))
                .expect("stop mid-write");
            print_ready();
            common::idle_until_killed();
        }
    });
}

/// Reader threads over every key until `stop`: (reads, torn, stuck).
fn readers(
    name: &str,
    keys: u64,
    stop: &Arc<AtomicBool>,
) -> Vec<std::thread::JoinHandle<[u64; 3]>> {
    (0..2u64)
        .map(|t| {
            let stop = stop.clone();
            let mut reader =
                Reader::<u64, Value>::open(name, &OpenOptions::default()).expect("open");
            std::thread::spawn(move || {
                let mut counts = [0u64; 3];
                let mut r = t;
                while !stop.load(Ordering::Relaxed) {
                    r = splitmix(r);
                    let k = r % keys;
                    match reader.get(&k) {
                        Ok(Some(got)) => {
                            counts[0] += 1;
                            counts[1] += u64::from(!check(k, &got.value));
                        }
                        Ok(None) => panic!("key {k} vanished"),
                        Err(GetError::Busy { .. }) => {}
                        Err(GetError::Stuck { .. }) => counts[2] += 1,
                        Err(e) => panic!("key {k}: {e}"),
                    }
                }
                counts
            })
        })
        .collect()
}

#[test]
fn two_writer_processes_and_readers_see_no_torn_value_and_a_killed_writers_entry_is_taken_over() {
    let name = BusName::new("K-bb-many");
    let keys = 2 * PER_WRITER;
    let opts = blackboard::Options::new(keys).unblock_timeout(UNBLOCK);
    let mut creator = ManyWriter::<u64, Value>::create(name.name(), &opts).expect("create");
    for k in 0..keys {
        creator.put(&k, &value(k, 1)).expect("put");
    }
    drop(creator);
    let stop = Arc::new(AtomicBool::new(false));
    let threads = readers(name.name(), keys, &stop);
    let rounds = scale_min(400, 20);
    let spawn = |first: u64, stopper: bool| {
        spawn_child(
            "as_child_write_own_keys",
            "bbm_writer",
            &[
                ("SHMBUS_BUS", name.name().to_owned()),
                ("SHMBUS_FIRST", first.to_string()),
                ("SHMBUS_ROUNDS", rounds.to_string()),
                ("SHMBUS_STOP", stopper.to_string()),
            ],
        )
    };
    let mut stopper = spawn(0, true);
    let other = spawn(PER_WRITER, false);
    let finished = other.wait_success();
    assert_eq!(
        finished.result().get::<u64>("busy"),
        0,
        "its keys are its own"
    );
    stopper.wait_ready();
    stopper.kill();
    // No writer holds the table: the entry left mid-write is stuck.
    let mut reader =
        Reader::<u64, Value>::open(name.name(), &OpenOptions::default()).expect("open");
    let stuck = match reader.get(&STOPPED_KEY) {
        Err(GetError::Stuck { entry, .. }) => entry,
        other => panic!("expected Stuck, got {other:?}"),
    };
    // The next writer: busy within the timeout, then takes it over.
    let mut next =
        ManyWriter::<u64, Value>::attach(name.name(), &OpenOptions::default()).expect("attach");
    assert!(matches!(
        reader.get(&STOPPED_KEY),
        Err(GetError::Busy { .. })
    ));
    let start = Instant::now();
    let version = loop {
        match next.put(&STOPPED_KEY, &value(STOPPED_KEY, 9)) {
            Ok(v) => break v,
            Err(PutError::Busy { entry }) => assert_eq!(entry, stuck),
            Err(e) => panic!("{e}"),
        }
        assert!(start.elapsed() < UNBLOCK * 50, "never taken over");
        std::thread::sleep(UNBLOCK / 10);
    };
    assert!(start.elapsed() >= UNBLOCK, "taken over before the timeout");
    assert_eq!((next.taken_over(), next.keys()), (1, keys));
    let got = reader.get(&STOPPED_KEY).expect("get").expect("present");
    assert_eq!((got.value, got.version), (value(STOPPED_KEY, 9), version));
    stop.store(true, Ordering::Relaxed);
    let (mut reads, mut torn) = (0, 0);
    for t in threads {
        let [r, tr, _stuck] = t.join().expect("reader");
        reads += r;
        torn += tr;
    }
    eprintln!("{rounds} rounds of {keys} keys by two processes: {reads} reads, {torn} torn");
    assert!(reads > 0, "the readers read nothing");
    assert_eq!(torn, 0);
    for k in 0..keys {
        let got = reader.get(&k).expect("get").expect("present");
        assert!(check(k, &got.value), "key {k}");
    }
    drop(next);
    name.finish();
}

#[test]
fn each_writer_mode_is_refused_to_the_other_handle_and_many_writers_attach_at_once() {
    let single = BusName::new("K-bb-one");
    let one = Writer::<u64, u64>::create(single.name(), &blackboard::Options::new(4)).expect("one");
    match ManyWriter::<u64, u64>::attach(single.name(), &OpenOptions::default()) {
        Err(AttachError::WrongMode {
            role: Role::Writer,
            found,
            expected,
        }) => {
            assert_eq!((found, expected), (Publishers::One, Publishers::Many))
        }
        other => panic!("expected WrongMode, got {other:?}"),
    }
    drop(one);
    let many = BusName::new("K-bb-many-modes");
    let mut a =
        ManyWriter::<u64, u64>::create(many.name(), &blackboard::Options::new(4)).expect("many");
    let mut b = ManyWriter::<u64, u64>::attach(many.name(), &OpenOptions::default()).expect("b");
    let err = Writer::<u64, u64>::attach(many.name(), &OpenOptions::default()).unwrap_err();
    assert!(
        matches!(
            err,
            AttachError::WrongMode {
                role: Role::Writer,
                found: Publishers::Many,
                expected: Publishers::One
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "blackboard is made for many writers (`ManyWriter`), expected one made for one writer (`Writer`)"
    );
    a.put(&1, &1).expect("a");
    b.put(&2, &2).expect("b");
    assert_eq!(a.keys(), 2);
    drop((a, b));
    single.finish();
    many.finish();
}

#[test]
fn an_unblock_timeout_of_0_or_outside_1_ms_to_60_s_is_refused_naming_it_and_leaves_no_file() {
    use shmbus::{CreateError, error::GeometryError};
    let name = BusName::new("K-bb-unblock");
    let (min, max) = (shmbus::bus::MIN_TIMEOUT, shmbus::bus::MAX_UNBLOCK);
    for found in [
        Duration::ZERO,
        Duration::from_micros(999),
        max + Duration::from_nanos(1),
    ] {
        let opts = blackboard::Options::new(4).unblock_timeout(found);
        match ManyWriter::<u64, u64>::create(name.name(), &opts) {
            Err(CreateError::InvalidGeometry(e)) => assert_eq!(
                e,
                GeometryError::Timeout {
                    option: "unblock timeout",
                    found,
                    min,
                    max
                }
            ),
            other => panic!("{found:?}: expected a timeout error, got {:?}", other.err()),
        }
        assert!(!name.path().exists(), "a refused create left its file");
    }
    for ok in [min, max] {
        let opts = blackboard::Options::new(4).unblock_timeout(ok);
        let w = ManyWriter::<u64, u64>::create(name.name(), &opts).expect("in bounds");
        assert_eq!(w.unblock_timeout(), ok);
        drop(w);
        shmbus::remove(name.name()).expect("remove");
    }
    name.finish();
}
