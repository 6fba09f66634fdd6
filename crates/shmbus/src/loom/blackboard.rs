//! loom model of a blackboard entry's seqlock: the real writer's stores
//! (`Table::write`, over `entry::begin` and `entry::commit`) and the real
//! reader's attempt (`entry::try_read`), over a heap region, through the
//! `sync` facade. One writer inserts a key and updates it; two readers
//! each make one attempt at the entry, racing both writes: a whole copy
//! (`entry::try_read`, what views and waits read) in one model, and a
//! look-up of the key in place that copies only its value
//! (`entry::try_read_key`, what `Reader::get` reads) in the other. Every copy an
//! attempt keeps (`Stable`) is one the writer wrote whole, with the
//! version of that write; the bounded retries around an attempt
//! (`Table::read`) only repeat it. A third model runs whole look-ups
//! (`Table::find_value`, retries included) of two keys whose probe starts
//! at an entry a writer updates and then dies in: they pass it, and never
//! give up busy there. A fourth runs an entry handle's get
//! (`EntryReader::get`) racing its key's removal, another key's insert
//! into its entry, and its key's insert elsewhere: never the other key's
//! value. Run with:
//! `RUSTFLAGS="--cfg loom" cargo test -p shmbus --release --lib loom`
//!
//! What it cannot see: loom's heap region holds the entry in Relaxed
//! atomics, as the portable copy does (the x86_64 `asm!` copy is not
//! modelled; `bus::copy` argues it has the same effect).

use std::sync::Arc;

use loom::thread;

use crate::blackboard::entry::{Attempt, Holds, try_read, try_read_key, try_read_words};
use crate::blackboard::table::Table;
use crate::mem::HeapRegion;
use crate::wire::BlackboardGeometry;
use crate::wire::blackboard::tag;

/// A one-key table (two entries of 64 bytes) of 8-byte keys and 16-byte
/// values, its control words at 0 (through the doorbell, at 256) and its
/// entries at 320.
fn table() -> Table<Arc<HeapRegion>> {
    let geo = BlackboardGeometry::new(1, 8, 16).expect("geometry");
    let region = Arc::new(HeapRegion::new(320 + 2 * 64));
    Table::new(region, geo, 0, 320)
}

/// One attempt at entry 0: what it kept must be a whole write.
fn attempt(t: &Table<Arc<HeapRegion>>) {
    let mut buf = [0u8; 32];
    if let Attempt::Stable(version) = try_read(t.stamp(0), t.body(0), &mut buf) {
        let word = |i: usize| u64::from_ne_bytes(buf[8 * i..8 * i + 8].try_into().unwrap());
        match version {
            0 => assert_eq!(
                [word(0), word(1), word(2), word(3)],
                [0; 4],
                "never written"
            ),
            1 => assert_eq!([word(0), word(1), word(2), word(3)], [tag::LIVE, 7, 1, 1]),
            2 => assert_eq!([word(0), word(1), word(2), word(3)], [tag::LIVE, 7, 2, 2]),
            v => panic!("version {v} was never written"),
        }
    }
}

/// Mutation-checked: with `try_read` keeping every copy (no stamp
/// re-load) loom finds a torn `[1, 2]` or a version-1 copy of `[2, 2]`;
/// with the writer's Release fence in `entry::begin` removed, a copy of
/// the update's words under the insert's even stamp.
///
/// Preemption bound 2, not `loom::bus::model`'s 3: three threads make
/// bound 3 cost minutes, and a torn copy takes one preemption (a reader
/// stopped between its stamp load and its copy, or inside the copy).
#[test]
fn loom_two_readers_racing_an_insert_and_an_update_never_keep_a_torn_copy() {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(2);
    }
    builder.check(|| {
        let t = Arc::new(table());
        let (r1, r2) = (t.clone(), t.clone());
        let w = thread::spawn(move || {
            let value = |n: u64| [n.to_ne_bytes(), n.to_ne_bytes()].concat();
            t.write(0, 1, tag::LIVE, Some(&7u64.to_ne_bytes()), Some(&value(1)));
            t.write(0, 2, tag::LIVE, None, Some(&value(2)));
        });
        let r = thread::spawn(move || attempt(&r1));
        attempt(&r2);
        w.join().unwrap();
        r.join().unwrap();
    });
}

/// One look-up of key 7 in place: a kept answer is the key's value of the
/// version the stamp names, or "empty" before the first write.
fn look_up(t: &Table<Arc<HeapRegion>>) {
    let mut value = [0u8; 16];
    let (attempt, holds) = try_read_key(t.stamp(0), t.body(0), &7u64.to_ne_bytes(), 2, &mut value);
    if let Attempt::Stable(version) = attempt {
        let word = |i: usize| u64::from_ne_bytes(value[8 * i..8 * i + 8].try_into().unwrap());
        match (version, holds) {
            (0, Holds::Empty) => {}
            (1, Holds::Key) => assert_eq!([word(0), word(1)], [1, 1]),
            (2, Holds::Key) => assert_eq!([word(0), word(1)], [2, 2]),
            other => panic!("kept {other:?}, which was never written whole"),
        }
    }
    // The typed get's form: the value's words into registers, kept only
    // for the key, live and whole.
    if let Some((version, words)) = try_read_words(t.stamp(0), t.body(0), &7u64.to_ne_bytes(), 2, 2)
    {
        assert!(
            matches!((version, words[0], words[1]), (1, 1, 1) | (2, 2, 2)),
            "kept version {version} as {:?}, which was never written whole",
            &words[..2]
        );
    }
}

/// Mutation-checked: with `entry::try_read_words` keeping a torn copy
/// (the stamp's re-load ignored), loom finds version 2 kept as `[0, 0]`.
#[test]
fn loom_two_readers_looking_up_a_key_in_place_racing_its_insert_and_update_never_keep_a_torn_value()
{
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(2);
    }
    builder.check(|| {
        let t = Arc::new(table());
        let (r1, r2) = (t.clone(), t.clone());
        let w = thread::spawn(move || {
            let value = |n: u64| [n.to_ne_bytes(), n.to_ne_bytes()].concat();
            t.write(0, 1, tag::LIVE, Some(&7u64.to_ne_bytes()), Some(&value(1)));
            t.write(0, 2, tag::LIVE, None, Some(&value(2)));
        });
        let r = thread::spawn(move || look_up(&r1));
        look_up(&r2);
        w.join().unwrap();
        r.join().unwrap();
    });
}

/// Mutation-checked: with `entry::may_hold` always true (no entry passed,
/// as before) loom finds `Busy` at the entry the writer died in; with it
/// always false (every entry mid-write passed), `None` for the key the
/// flag says is in, caught mid-update.
#[test]
fn loom_look_ups_pass_another_keys_entry_mid_write_and_never_miss_a_key_put_before() {
    use crate::blackboard::entry;
    use crate::blackboard::table::{NotRead, hash};
    use loom::sync::atomic::{AtomicBool, Ordering};
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(2);
    }
    // Three keys of one home in the two-entry table: `hot` there, `key`
    // in the other entry, `never` never written.
    let home = |k: u64| hash(&k.to_ne_bytes()) & 1;
    let mut sharing = (1..).filter(|&k| home(k) == home(1));
    let (hot, key, never) = (1, sharing.nth(1).unwrap(), sharing.next().unwrap());
    let (at, beside) = (home(hot), home(hot) ^ 1);
    builder.check(move || {
        let t = Arc::new(table());
        let put = Arc::new(AtomicBool::new(false));
        let (r, seen) = (t.clone(), put.clone());
        let value = |n: u64| [n.to_ne_bytes(), n.to_ne_bytes()].concat();
        let w = thread::spawn(move || {
            t.write(at, 1, tag::LIVE, Some(&hot.to_ne_bytes()), Some(&value(1)));
            t.write(
                beside,
                2,
                tag::LIVE,
                Some(&key.to_ne_bytes()),
                Some(&value(2)),
            );
            // Release, paired with the Acquire load below: who sees it
            // sees both inserts.
            put.store(true, Ordering::Release);
            t.write(beside, 3, tag::LIVE, None, Some(&value(3)));
            // An update of `hot` that its writer dies in: never committed.
            entry::begin(t.stamp(at), 4);
            t.body(at)[2].store(4, crate::sync::Ordering::Relaxed);
        });
        let both_in = seen.load(Ordering::Acquire);
        let mut got = [0u8; 16];
        match r.find_value(&key.to_ne_bytes(), &mut got) {
            Ok(Some(v @ (2 | 3))) => assert_eq!(got[..], value(v)[..], "torn"),
            Ok(None) => assert!(!both_in, "a key put before the look-up not found"),
            // Only at its own entry, caught mid-write.
            Err(NotRead::Busy { entry }) => assert_eq!(entry, beside, "busy at another key's"),
            other => panic!("{other:?} was never written"),
        }
        assert_eq!(r.find_value(&never.to_ne_bytes(), &mut got), Ok(None));
        w.join().unwrap();
    });
}

/// An entry handle's get (`EntryReader::get`: one attempt at its hint,
/// then the look-up) racing its key's removal, another key's insert into
/// the entry it was made at, and its key's insert in the other entry:
/// it returns its own key's whole value (the first or the last) or none,
/// never the other key's, never torn, and afterwards finds its key where
/// it moved.
///
/// Mutation-checked: with the hint's attempt keeping a whole copy of any
/// live key (no key compare), loom finds the other key's value returned.
#[test]
fn loom_an_entry_handles_get_racing_its_keys_move_never_returns_another_keys_value() {
    use crate::blackboard::EntryReader;
    use crate::blackboard::table::hash;
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(2);
    }
    // Two keys of one home in the two-entry table.
    let home = |k: u64| hash(&k.to_ne_bytes()) & 1;
    let mine = 1;
    let other = (2..).find(|&k| home(k) == home(mine)).unwrap();
    let (at, beside) = (home(mine), home(mine) ^ 1);
    builder.check(move || {
        let t = Arc::new(table());
        let value = |k: u64, n: u64| [k.to_ne_bytes(), n.to_ne_bytes()].concat();
        t.write(
            at,
            1,
            tag::LIVE,
            Some(&mine.to_ne_bytes()),
            Some(&value(mine, 1)),
        );
        let mut handle = EntryReader::<u64, [u64; 2], _>::new(t.clone(), &mine.to_ne_bytes());
        let w = {
            let t = t.clone();
            thread::spawn(move || {
                t.write(at, 2, tag::REMOVED, None, None);
                t.write(
                    at,
                    3,
                    tag::LIVE,
                    Some(&other.to_ne_bytes()),
                    Some(&value(other, 3)),
                );
                t.write(
                    beside,
                    4,
                    tag::LIVE,
                    Some(&mine.to_ne_bytes()),
                    Some(&value(mine, 4)),
                );
            })
        };
        match handle.get() {
            Ok(Some(got)) => assert!(
                (got.value, got.version) == ([mine, 1], 1)
                    || (got.value, got.version) == ([mine, 4], 4),
                "read {:?} at version {} as key {mine}'s",
                got.value,
                got.version
            ),
            Ok(None) | Err(crate::blackboard::GetError::Busy { .. }) => {}
            Err(e) => panic!("{e}"),
        }
        w.join().unwrap();
        let got = handle.get().expect("get").expect("put again");
        assert_eq!((got.value, got.version), ([mine, 4], 4));
    });
}
