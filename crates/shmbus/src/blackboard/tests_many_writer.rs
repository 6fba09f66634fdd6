//! [`ManyWriter`]'s unit tests, on the heap (Miri runs them): each path of
//! the claim protocol (insert, update, removal, a full table, a claim
//! lost to another writer, an entry left mid-write taken over), and
//! writer threads on their own keys against a reader that checks every
//! value it reads.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering as Std};
use std::time::Duration;

use super::*;
use crate::blackboard::GetError;

/// An 8-word value that is `key` repeated, with the write's number in
/// the middle word: a mix of two writes is never one.
fn value(key: u64, n: u64) -> [u64; 8] {
    let mut v = [key; 8];
    v[4] = n;
    v[7] = key ^ n;
    v
}

fn whole(key: u64, v: &[u64; 8]) -> bool {
    *v == value(key, v[4])
}

type Many = ManyWriter<u64, [u64; 8], Arc<HeapRegion>>;

/// Two keys whose probes start at the same entry of a table of `keys`.
fn colliding(w: &Many) -> (u64, u64) {
    let home = |k: u64| w.table.home(&k.to_ne_bytes());
    (1..)
        .find_map(|k| {
            (k + 1..k + 64)
                .find(|&j| home(j) == home(k))
                .map(|j| (k, j))
        })
        .expect("two keys share an entry")
}

/// What a writer killed after its claim leaves: the odd stamp, half a
/// value of `key`.
fn left_mid_write(w: &Many, key: u64) -> u64 {
    let home = w.table.home(&key.to_ne_bytes());
    let i = (0..w.table.geo.entries)
        .map(|n| (home + n) & (w.table.geo.entries - 1))
        .find(|&i| same_key(&w.table.body(i)[1..2], &key.to_ne_bytes()))
        .expect("the key is in the table");
    let stamp = w.table.stamp(i);
    stamp.store(stamp.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    let vw = w.table.value_at() / 8;
    w.table.body(i)[vw].store(u64::MAX, Ordering::Relaxed);
    i
}

#[test]
fn two_writers_insert_update_and_remove_their_own_keys_and_a_reader_sees_each_write() {
    let mut a = Many::on_heap(&Options::new(8)).expect("heap");
    let mut b = a.another();
    let mut reader = a.reader();
    assert_eq!(a.put(&1, &value(1, 1)), Ok(1));
    assert_eq!(b.put(&2, &value(2, 1)), Ok(2));
    assert_eq!(a.put(&1, &value(1, 2)), Ok(3), "versions are the table's");
    assert_eq!((a.keys(), b.keys()), (2, 2));
    let got = reader.get(&1).expect("get").expect("present");
    assert_eq!((got.value, got.version), (value(1, 2), 3));
    assert_eq!(b.remove(&2), Ok(Some(4)));
    assert_eq!(b.remove(&2), Ok(None));
    assert_eq!(reader.get(&2), Ok(None));
    assert_eq!((a.keys(), a.last_version(), b.last_version()), (1, 3, 4));
    assert_eq!(reader.version(), 4);
}

#[test]
fn a_full_table_is_a_typed_error_and_its_count_is_undone() {
    let mut a = Many::on_heap(&Options::new(2)).expect("heap");
    let mut b = a.another();
    a.put(&1, &value(1, 1)).expect("put");
    b.put(&2, &value(2, 1)).expect("put");
    assert_eq!(a.put(&3, &value(3, 1)), Err(PutError::Full { keys: 2 }));
    assert_eq!(b.keys(), 2, "the refused insert's add was undone");
    a.put(&1, &value(1, 2)).expect("an update needs no room");
    b.remove(&2).expect("remove");
    a.put(&3, &value(3, 1)).expect("room again");
    assert_eq!(a.keys(), 2);
}

#[test]
fn raw_sizes_other_than_the_tables_are_refused() {
    let mut w = ManyWriter::<[u8], [u8], _>::on_heap(&Options::new(4).key_size(4).value_size(8))
        .expect("heap");
    assert_eq!(
        w.put_bytes(b"abc", &[0; 8]),
        Err(PutError::KeySize {
            found: 3,
            expected: 4
        })
    );
    assert_eq!(
        w.remove_bytes(b"abcde"),
        Err(RemoveError::KeySize {
            found: 5,
            expected: 4
        })
    );
}

#[test]
fn a_claim_lost_to_another_writer_probes_again_and_lands_further_on() {
    let mut a = Many::on_heap(&Options::new(4)).expect("heap");
    let mut b = a.another();
    let (k1, k2) = colliding(&a);
    // b's probe read the empty home entry; a claims it first.
    let Probe::Absent {
        free: Some((home, stamp)),
    } = b.probe(&k2.to_ne_bytes())
    else {
        panic!("k2 is absent")
    };
    a.put(&k1, &value(k1, 1)).expect("put");
    assert!(!b.claim(home, stamp), "the stale claim fails");
    b.put(&k2, &value(k2, 1)).expect("put after a re-probe");
    let mut reader = a.reader();
    for k in [k1, k2] {
        let got = reader.get(&k).expect("get").expect("present");
        assert!(whole(k, &got.value));
    }
    assert_eq!(a.keys(), 2);
}

#[test]
fn a_key_left_mid_write_is_busy_within_the_timeout_and_taken_over_after_it() {
    let mut dead = Many::on_heap(&Options::new(4)).expect("heap");
    dead.put(&5, &value(5, 1)).expect("put");
    let i = left_mid_write(&dead, 5);
    // Within the (default, 1 s) timeout: busy, never a wait.
    let mut next = dead.another();
    assert_eq!(next.put(&5, &value(5, 2)), Err(PutError::Busy { entry: i }));
    assert_eq!(next.remove(&5), Err(RemoveError::Busy { entry: i }));
    let mut reader = dead.reader();
    assert!(matches!(reader.get(&5), Err(GetError::Busy { .. })));
    // Once the timeout has passed since this handle first saw the stamp
    // (0 here: at once):
    next.unblock = Duration::ZERO;
    let v = next.put(&5, &value(5, 3)).expect("taken over");
    assert_eq!((next.taken_over(), next.keys()), (1, 1));
    let got = reader.get(&5).expect("get").expect("present");
    assert_eq!((got.value, got.version), (value(5, 3), v));
}

#[test]
fn a_removal_takes_over_its_keys_entry_left_mid_write() {
    let mut dead = Many::on_heap(&Options::new(4)).expect("heap");
    dead.put(&5, &value(5, 1)).expect("put");
    left_mid_write(&dead, 5);
    let mut next = dead.another();
    next.unblock = Duration::ZERO;
    assert!(matches!(next.remove(&5), Err(RemoveError::Busy { .. })));
    assert!(next.remove(&5).expect("taken over").is_some());
    assert_eq!((next.taken_over(), next.keys()), (1, 0));
    assert_eq!(dead.reader().get(&5), Ok(None));
}

#[test]
fn another_keys_entry_left_mid_write_on_the_probe_is_removed_by_the_writer_that_meets_it() {
    let mut dead = Many::on_heap(&Options::new(4)).expect("heap");
    let (k1, k2) = colliding(&dead);
    dead.put(&k1, &value(k1, 1)).expect("put");
    left_mid_write(&dead, k1);
    let mut next = dead.another();
    next.unblock = Duration::ZERO;
    // Within the timeout another key's write is passed over.
    next.put(&k2, &value(k2, 1)).expect("insert past it");
    assert_eq!(next.taken_over(), 0);
    // Past it, the writer that meets it removes it (its value is lost).
    next.put(&k2, &value(k2, 2)).expect("update");
    assert_eq!((next.taken_over(), next.keys()), (1, 1));
    let mut reader = dead.reader();
    assert_eq!(reader.get(&k1), Ok(None));
    let got = reader.get(&k2).expect("get").expect("present");
    assert_eq!(got.value, value(k2, 2));
}

#[test]
fn hostile_bytes_never_hang_a_writer() {
    let mut w = Many::on_heap(&Options::new(8)).expect("heap");
    for k in 0..8 {
        w.put(&k, &value(k, 1)).expect("put");
    }
    // Every stamp odd, every tag live, the count past the capacity.
    for i in 0..w.table.geo.entries {
        w.table.stamp(i).store(2 * i + 1, Ordering::Relaxed);
        w.table.body(i)[0].store(tag::LIVE, Ordering::Relaxed);
    }
    w.table.keys().store(u64::MAX, Ordering::Relaxed);
    w.unblock = Duration::ZERO;
    let (mut outcomes, mut written) = (Vec::new(), 0);
    for k in 0..16 {
        // The first meeting with an odd entry starts its unblock clock
        // (`Busy`); with a zero timeout, the next one takes it over.
        let first = w.put(&k, &value(k, 2));
        let said = format!("put {k}: {first:?}");
        let put = match first {
            Err(PutError::Busy { .. }) => w.put(&k, &value(k, 2)),
            other => other,
        };
        match put {
            Ok(_) => written += 1,
            Err(PutError::Full { .. } | PutError::Busy { .. }) => {}
            Err(e) => panic!("put {k}: {e}"),
        }
        let removed = w.remove(&k);
        assert!(
            matches!(removed, Ok(_) | Err(RemoveError::Busy { .. })),
            "remove {k}: {removed:?}"
        );
        outcomes.push(format!("{said}, then {put:?}; remove: {removed:?}"));
    }
    // Every call ended with a typed outcome (none hung), and the writer
    // took the odd entries over rather than refusing every write.
    assert!(written > 0, "no put went through: {outcomes:#?}");
}

#[test]
fn writer_threads_on_their_own_keys_and_a_reader_never_see_a_torn_value() {
    let keys = 16u64;
    let rounds = if cfg!(miri) { 4 } else { 2000 };
    let a = Many::on_heap(&Options::new(4 * keys)).expect("heap");
    let stop = Arc::new(AtomicBool::new(false));
    let mut reader = a.reader();
    let checker = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let (mut reads, mut torn) = (0u64, 0u64);
            while !stop.load(Std::Relaxed) {
                for k in 0..4 * keys {
                    match reader.get(&k) {
                        Ok(Some(got)) => {
                            reads += 1;
                            torn += u64::from(!whole(k, &got.value));
                        }
                        Ok(None) | Err(GetError::Busy { .. }) => {}
                        Err(e) => panic!("key {k}: {e}"),
                    }
                }
            }
            (reads, torn)
        })
    };
    let writers: Vec<_> = (0..4u64)
        .map(|t| {
            let mut w = a.another();
            std::thread::spawn(move || {
                // `Busy`: another writer, preempted mid-write on an entry
                // of this key's probe (often so under a sanitizer or
                // Miri), which a writer never waits for: try again.
                let deadline = std::time::Instant::now() + Duration::from_secs(60);
                let again = |what: &str| {
                    assert!(std::time::Instant::now() < deadline, "{what} busy for 60 s");
                    std::thread::yield_now();
                };
                for n in 1..=rounds {
                    for k in t * keys..(t + 1) * keys {
                        if n % 7 == 0 && k % 3 == 0 {
                            loop {
                                match w.remove(&k) {
                                    Err(RemoveError::Busy { .. }) => again("remove"),
                                    r => {
                                        r.expect("remove");
                                        break;
                                    }
                                }
                            }
                        } else {
                            loop {
                                match w.put(&k, &value(k, n)) {
                                    Err(PutError::Busy { .. }) => again("put"),
                                    r => {
                                        r.expect("put");
                                        break;
                                    }
                                }
                            }
                        }
                    }
                }
            })
        })
        .collect();
    for w in writers {
        w.join().expect("writer");
    }
    stop.store(true, Std::Relaxed);
    let (reads, torn) = checker.join().expect("reader");
    assert_eq!(torn, 0, "of {reads} reads");
    assert_eq!(a.keys(), 4 * keys);
    let mut reader = a.reader();
    assert_eq!(reader.entries().count() as u64, 4 * keys, "no key twice");
}
