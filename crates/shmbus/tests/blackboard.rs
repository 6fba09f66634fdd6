//! The blackboard between processes and threads: puts read back by key,
//! a full table, type and kind checks, one writer at a time, a writer
//! killed mid-write (a stuck entry reported, never a hang, repaired by the
//! next writer), hostile bytes in the table, and 1 000 keys written
//! round-robin under four readers that check every value they read.
//!
//! Each child is this test binary run again (see `common`); its entry is
//! an `as_child_*` test that does nothing unless `SHMBUS_CHILD_ROLE` names it.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::{BusName, param, print_ready, role, scale_min, spawn_child, splitmix};
use shmbus::blackboard::{self, GetError, PutError, Reader, RemoveError, Writer};
use shmbus::error::Role;
use shmbus::{AttachError, BusOptions, Kind, OpenError, OpenOptions, Publisher, Wait};

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

#[test]
fn a_put_is_read_back_by_key_in_another_handle_and_a_removal_is_seen() {
    let name = BusName::new("C-bb-basic");
    let mut writer =
        Writer::<u64, Value>::create(name.name(), &blackboard::Options::new(100)).expect("create");
    for k in 0..100 {
        writer.put(&k, &value(k, 1)).expect("put");
    }
    let mut reader =
        Reader::<u64, Value>::open(name.name(), &OpenOptions::default()).expect("open");
    assert_eq!((reader.keys(), reader.capacity()), (100, 100));
    for k in 0..100 {
        let got = reader.get(&k).expect("get").expect("present");
        assert_eq!((got.value, got.version), (value(k, 1), k + 1));
    }
    assert_eq!(reader.get(&1000).expect("get"), None);
    let seen = reader.version();
    writer.put(&5, &value(5, 2)).expect("update");
    assert_eq!(writer.remove(&6).expect("remove"), Some(seen + 2));
    assert_eq!(
        reader.get(&5).expect("get").map(|e| e.value),
        Some(value(5, 2))
    );
    assert_eq!(reader.get(&6).expect("get"), None);
    let changed: Vec<_> = reader
        .changed_since(seen)
        .collect::<Result<_, _>>()
        .expect("view");
    let mut keys: Vec<_> = changed.iter().map(|i| (i.key, i.value.is_some())).collect();
    keys.sort();
    assert_eq!(keys, [(5, true), (6, false)]);
    assert_eq!(reader.entries().count(), 99);
    // A removed key's entry is reused by the next new key that probes it.
    writer.put(&6, &value(6, 3)).expect("put again");
    assert_eq!(
        reader.get(&6).expect("get").map(|e| e.value),
        Some(value(6, 3))
    );
    name.finish();
}

#[test]
fn a_full_table_refuses_a_new_key_and_still_takes_updates_and_removals() {
    let mut writer = Writer::<u32, u64, _>::on_heap(&blackboard::Options::new(3)).expect("on_heap");
    for k in 0..3 {
        writer.put(&k, &u64::from(k)).expect("room");
    }
    assert_eq!(writer.put(&3, &3), Err(PutError::Full { keys: 3 }));
    writer.put(&1, &10).expect("an update needs no room");
    writer.remove(&0).expect("remove");
    writer.put(&3, &3).expect("a removal makes room");
    assert_eq!(
        writer.reader().get(&3).expect("get").map(|e| e.value),
        Some(3)
    );
}

#[test]
fn openers_of_another_key_type_value_type_or_kind_are_refused() {
    let name = BusName::new("C-bb-types");
    let _writer =
        Writer::<u64, Value>::create(name.name(), &blackboard::Options::new(4)).expect("create");
    let opts = OpenOptions::default();
    match Reader::<u32, Value>::open(name.name(), &opts) {
        Err(OpenError::TypeMismatch { found, expected }) => {
            assert_eq!(
                (found.name.as_str(), expected.name.as_str()),
                ("u64", "u32")
            )
        }
        other => panic!("a u32 key reader: expected TypeMismatch, got {other:?}"),
    }
    assert!(matches!(
        Reader::<u64, u64>::open(name.name(), &opts),
        Err(OpenError::TypeMismatch { .. })
    ));
    // Raw sides take any type.
    Reader::<[u8], [u8]>::open(name.name(), &opts).expect("raw");
    // A bus is no blackboard, nor a blackboard a bus.
    let bus = BusName::new("C-bb-bus");
    let _publisher = Publisher::<u64>::create(bus.name(), &BusOptions::new(8)).expect("bus");
    match Reader::<u64, u64>::open(bus.name(), &opts) {
        Err(OpenError::WrongKind { found, expected }) => {
            assert_eq!((found, expected), (Kind::Broadcast, Kind::Blackboard))
        }
        other => panic!("expected WrongKind, got {other:?}"),
    }
    assert!(matches!(
        shmbus::Subscriber::<u64>::open(name.name(), &opts),
        Err(OpenError::WrongKind {
            found: Kind::Blackboard,
            ..
        })
    ));
    name.finish();
    bus.finish();
}

#[test]
fn a_second_writer_is_refused_while_the_first_lives_and_attaches_once_it_is_gone() {
    let name = BusName::new("C-bb-writer");
    let mut first =
        Writer::<u64, u64>::create(name.name(), &blackboard::Options::new(4)).expect("create");
    first.put(&1, &1).expect("put");
    match Writer::<u64, u64>::attach(name.name(), &OpenOptions::default()) {
        Err(AttachError::RoleTaken {
            role: Role::Writer,
            pid,
        }) => assert_eq!(pid, std::process::id()),
        other => panic!("expected RoleTaken Writer, got {other:?}"),
    }
    drop(first);
    let mut second =
        Writer::<u64, u64>::attach(name.name(), &OpenOptions::default()).expect("attach");
    assert_eq!((second.keys(), second.version()), (1, 1));
    assert_eq!(second.put(&2, &2).expect("put"), 2, "versions go on");
    name.finish();
}

#[test]
fn as_child_write_then_stop_mid_write() {
    role("bb_stop_mid_write", || {
        let name: String = param("SHMBUS_BUS");
        let mut writer =
            Writer::<u64, Value>::attach(&name, &OpenOptions::default()).expect("attach");
        writer
            .put_and_stop_mid_write(&7u64.to_ne_bytes(), bytemuck::bytes_of(&value(7, 2)))
            .expect("stop mid-write");
        print_ready();
        common::idle_until_killed();
    });
}

#[test]
fn a_writer_killed_mid_write_leaves_a_stuck_entry_that_readers_report_and_the_next_writer_removes()
{
    let name = BusName::new("C-bb-killed");
    let mut writer =
        Writer::<u64, Value>::create(name.name(), &blackboard::Options::new(16)).expect("create");
    for k in 0..16 {
        writer.put(&k, &value(k, 1)).expect("put");
    }
    drop(writer);
    let mut child = spawn_child(
        "as_child_write_then_stop_mid_write",
        "bb_stop_mid_write",
        &[("SHMBUS_BUS", name.name().to_owned())],
    );
    child.wait_ready();
    let mut reader =
        Reader::<u64, Value>::open(name.name(), &OpenOptions::default()).expect("open");
    // While the writer lives the entry is busy, not stuck.
    assert!(
        matches!(reader.get(&7), Err(GetError::Busy { .. })),
        "{:?}",
        reader.get(&7)
    );
    // `stat`'s view of the entry (what `top` reads): busy, never waited on.
    let bb = shmbus::stat::stat(name.name())
        .expect("stat")
        .blackboard
        .expect("a blackboard");
    let mid = bb
        .versions
        .iter()
        .find(|e| e.writing)
        .expect("the entry mid-write");
    assert_eq!((bb.mid_write, mid.version), (1, 17));
    let keys = |e| {
        shmbus::stat::blackboard_keys(name.name(), &[e]).expect("keys")[0]
            .read
            .clone()
    };
    assert_eq!(keys(mid.entry), shmbus::stat::KeyRead::Busy);
    child.kill();
    match reader.get(&7) {
        Err(GetError::Stuck { version, .. }) => assert_eq!(version, 17),
        other => panic!("expected Stuck, got {other:?}"),
    }
    assert_eq!(
        keys(mid.entry),
        shmbus::stat::KeyRead::Stuck { version: 17 }
    );
    // Every other key reads whole; the view reports the stuck entry.
    for k in (0..16).filter(|&k| k != 7) {
        let got = reader.get(&k).expect("get").expect("present");
        assert!(check(k, &got.value));
    }
    let errors = reader.entries().filter(|e| e.is_err()).count();
    assert_eq!(errors, 1);
    let mut next = Writer::<u64, Value>::attach(name.name(), &OpenOptions::default())
        .expect("attach after the kill");
    assert_eq!((next.repaired(), next.keys()), (1, 15));
    assert_eq!(reader.get(&7).expect("repaired"), None);
    next.put(&7, &value(7, 3)).expect("put again");
    assert_eq!(
        reader.get(&7).expect("get").map(|e| e.value),
        Some(value(7, 3))
    );
    name.finish();
}

#[test]
fn entry_handles_read_and_write_their_key_across_a_writer_killed_mid_write_and_the_next_writers_repair()
 {
    let name = BusName::new("C-bb-handle-killed");
    let mut writer =
        Writer::<u64, Value>::create(name.name(), &blackboard::Options::new(16)).expect("create");
    for k in 0..16 {
        writer.put(&k, &value(k, 1)).expect("put");
    }
    let mut mine = writer.entry(&7).expect("entry");
    writer.put_entry(&mut mine, &value(7, 1)).expect("put");
    drop(writer);
    let reader = Reader::<u64, Value>::open(name.name(), &OpenOptions::default()).expect("open");
    let mut seven = reader.entry(&7).expect("entry");
    let mut eight = reader.entry(&8).expect("entry");
    assert_eq!(
        seven.get().expect("get").map(|e| e.value),
        Some(value(7, 1))
    );
    let mut child = spawn_child(
        "as_child_write_then_stop_mid_write",
        "bb_stop_mid_write",
        &[("SHMBUS_BUS", name.name().to_owned())],
    );
    child.wait_ready();
    // While the writer lives its entry is busy; another key reads whole.
    assert!(
        matches!(seven.get(), Err(GetError::Busy { .. })),
        "{:?}",
        seven.get()
    );
    assert!(check(8, &eight.get().expect("get").expect("present").value));
    child.kill();
    match seven.get() {
        Err(GetError::Stuck { version, .. }) => assert_eq!(version, 18),
        other => panic!("expected Stuck, got {other:?}"),
    }
    let mut next = Writer::<u64, Value>::attach(name.name(), &OpenOptions::default())
        .expect("attach after the kill");
    assert_eq!(next.repaired(), 1);
    assert_eq!(seven.get().expect("repaired"), None);
    // The dead writer's handle is only a key: the next writer takes it.
    next.put_entry(&mut mine, &value(7, 3)).expect("put again");
    let got = seven.get().expect("get").expect("put again");
    assert_eq!((got.value, got.version), (value(7, 3), next.version()));
    assert!(check(8, &eight.get().expect("get").expect("present").value));
    drop(reader);
    assert_eq!(
        seven
            .get()
            .expect("the handle keeps the table mapped")
            .map(|e| e.value),
        Some(value(7, 3))
    );
    name.finish();
}

#[test]
fn keys_sharing_a_home_with_an_entry_left_mid_write_are_read_whether_its_writer_lives_or_not() {
    let name = BusName::new("C-bb-beside");
    let mut writer =
        Writer::<u64, Value>::create(name.name(), &blackboard::Options::new(16)).expect("create");
    let entries = 32;
    let home = |k: u64| common::blackboard_home(&k.to_le_bytes(), entries);
    let mut sharing = (8..).filter(|&k| home(k) == home(7));
    let (beside, never) = (
        sharing.next().expect("a key"),
        sharing.next().expect("a key"),
    );
    // 7 in its home entry, `beside` in the next on the same probe.
    writer.put(&7, &value(7, 1)).expect("put");
    writer.put(&beside, &value(beside, 1)).expect("put");
    drop(writer);
    let mut child = spawn_child(
        "as_child_write_then_stop_mid_write",
        "bb_stop_mid_write",
        &[("SHMBUS_BUS", name.name().to_owned())],
    );
    child.wait_ready();
    let mut reader =
        Reader::<u64, Value>::open(name.name(), &OpenOptions::default()).expect("open");
    let check_beside = |reader: &mut Reader<u64, Value>| {
        let got = reader.get(&beside).expect("get beside").expect("present");
        assert_eq!((got.value, got.version), (value(beside, 1), 2));
        assert_eq!(reader.get(&never).expect("get a key never written"), None);
        let waited = reader.wait_key(&beside, 0, Wait::Never).expect("wait_key");
        assert_eq!(waited.map(|e| e.version), Some(2));
    };
    // The writer lives, stopped mid-write of 7: 7 is busy, not the rest.
    assert!(
        matches!(reader.get(&7), Err(GetError::Busy { .. })),
        "{:?}",
        reader.get(&7)
    );
    check_beside(&mut reader);
    child.kill();
    // It died there: 7 is stuck, still not the rest.
    assert!(
        matches!(reader.get(&7), Err(GetError::Stuck { version: 3, .. })),
        "{:?}",
        reader.get(&7)
    );
    check_beside(&mut reader);
    name.finish();
}

#[test]
fn hostile_bytes_in_the_table_never_hang_or_crash_a_reader_or_a_writer() {
    let name = BusName::new("C-bb-hostile");
    let keys = 32;
    let mut writer =
        Writer::<u64, Value>::create(name.name(), &blackboard::Options::new(keys)).expect("create");
    for k in 0..keys {
        writer.put(&k, &value(k, 1)).expect("put");
    }
    drop(writer);
    let path = name.path().to_owned();
    let page = rustix::param::page_size() as u64;
    let table = std::fs::metadata(&path).expect("stat").len() - 2 * page;
    let rounds = scale_min(200, 20);
    let (mut busy, mut stuck, mut corrupt, mut found) = (0, 0, 0, 0);
    let (mut written, mut removed, mut refused) = (0u64, 0u64, 0u64);
    for round in 0..rounds {
        // Some rounds trash everything, others a few words: odd stamps,
        // unknown tags, keys that match nothing, versions near the top.
        let words = if round % 2 == 0 { table / 8 } else { 16 };
        for i in 0..words {
            let r = splitmix(round << 32 | i);
            let at = if round % 2 == 0 {
                i * 8
            } else {
                r % (table / 8) * 8
            };
            let word = match r % 5 {
                0 => r | 1,
                1 => r % 4,
                2 => u64::MAX - r % 3,
                _ => r,
            };
            common::write_at(&path, 2 * page + at, &word.to_le_bytes());
        }
        let mut reader =
            Reader::<u64, Value>::open(name.name(), &OpenOptions::default()).expect("open");
        for k in 0..keys + 8 {
            match reader.get(&k) {
                Ok(Some(_)) => found += 1,
                Ok(None) => {}
                Err(GetError::Busy { .. }) => busy += 1,
                Err(GetError::Stuck { .. }) => stuck += 1,
                Err(GetError::Corrupt { .. }) => corrupt += 1,
                Err(e) => panic!("unexpected {e}"),
            }
        }
        let _ = reader.entries().count();
        let _ = reader.changed_since(0).count();
        let _ = reader.wait_key(&3, u64::MAX, Wait::Never);
        // A writer attaching to the wreck repairs what is odd and writes.
        let mut writer =
            Writer::<u64, Value>::attach(name.name(), &OpenOptions::default()).expect("attach");
        for k in 0..keys + 8 {
            // Full (the wreck's keys fill the table) and Busy are what a
            // wreck may cost; a put that says Ok wrote what it was given.
            match writer.put(&k, &value(k, 2)) {
                Ok(_) => {
                    written += 1;
                    if let Ok(got) = reader.get(&k) {
                        let got = got.map(|e| e.value);
                        assert_eq!(got, Some(value(k, 2)), "round {round}: key {k} put");
                    }
                }
                Err(PutError::Full { .. } | PutError::Busy { .. }) => refused += 1,
                Err(e) => panic!("round {round}: put {k}: {e}"),
            }
            if k % 3 == 0 {
                match writer.remove(&k) {
                    Ok(_) => removed += 1,
                    Err(RemoveError::Busy { .. }) => refused += 1,
                    Err(e) => panic!("round {round}: remove {k}: {e}"),
                }
            }
        }
    }
    assert!(stuck + corrupt > 0, "the hostile bytes were never seen");
    // The writer repairs the wreck: most of its writes go through.
    assert!(
        written > refused,
        "{written} puts written, {refused} puts and removes refused"
    );
    eprintln!(
        "hostile: found {found} busy {busy} stuck {stuck} corrupt {corrupt}; \
         written {written} removed {removed} refused {refused}"
    );
    name.finish();
}

#[test]
fn one_writer_round_robin_over_1000_keys_and_four_readers_read_no_torn_value() {
    let name = BusName::new("C-bb-torn");
    let keys = 1000u64;
    let mut writer =
        Writer::<u64, Value>::create(name.name(), &blackboard::Options::new(keys)).expect("create");
    for k in 0..keys {
        writer.put(&k, &value(k, 0)).expect("put");
    }
    let rounds = scale_min(1000, 50);
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..4u64)
        .map(|t| {
            let stop = stop.clone();
            let mut reader =
                Reader::<u64, Value>::open(name.name(), &OpenOptions::default()).expect("open");
            std::thread::spawn(move || {
                let (mut reads, mut torn, mut busy, mut stale) = (0u64, 0u64, 0u64, 0u64);
                let mut last = vec![0u64; keys as usize];
                let mut r = t;
                while !stop.load(Ordering::Relaxed) {
                    r = splitmix(r);
                    let k = r % keys;
                    match reader.get(&k) {
                        Ok(Some(got)) => {
                            reads += 1;
                            if !check(k, &got.value) {
                                torn += 1;
                            }
                            // A key's writes never go back in time.
                            if got.value[1] < last[k as usize] {
                                stale += 1;
                            }
                            last[k as usize] = got.value[1];
                        }
                        Ok(None) => panic!("key {k} vanished"),
                        Err(GetError::Busy { .. }) => busy += 1,
                        Err(e) => panic!("key {k}: {e}"),
                    }
                }
                (reads, torn, busy, stale)
            })
        })
        .collect();
    for n in 1..=rounds {
        for k in 0..keys {
            writer.put(&k, &value(k, n)).expect("update");
        }
    }
    stop.store(true, Ordering::Relaxed);
    let (mut reads, mut torn, mut busy, mut stale) = (0, 0, 0, 0);
    for h in readers {
        let (r, t, b, s) = h.join().expect("reader");
        reads += r;
        torn += t;
        busy += b;
        stale += s;
    }
    eprintln!(
        "{} updates, {reads} reads, {torn} torn, {busy} busy, {stale} stale",
        rounds * keys
    );
    assert!(reads > 0, "the readers read nothing");
    assert_eq!((torn, stale), (0, 0));
    name.finish();
}

#[test]
fn a_reader_waiting_on_a_key_or_on_the_table_wakes_when_it_is_written() {
    let mut writer = Writer::<u64, u64, _>::on_heap(&blackboard::Options::new(8)).expect("on_heap");
    writer.put(&1, &10).expect("put");
    let mut any = writer.reader();
    let mut one = writer.reader();
    let since = any.version();
    let waiter_any =
        std::thread::spawn(move || any.wait_changed(since, Wait::For(Duration::from_secs(20))));
    let waiter_one =
        std::thread::spawn(move || one.wait_key(&2, since, Wait::For(Duration::from_secs(20))));
    // Key 1 changes first: the key-2 waiter must sleep on through it.
    writer.put(&1, &11).expect("put");
    writer.put(&2, &20).expect("put");
    assert!(waiter_any.join().expect("join").is_some_and(|v| v > since));
    let got = waiter_one
        .join()
        .expect("join")
        .expect("get")
        .expect("woken");
    assert_eq!((got.value, got.version), (Some(20), since + 2));
}

/// A journaled bus's keyed message: key and a value checked whole.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
struct Update {
    key: u64,
    n: u64,
}

impl shmbus::Message for Update {
    const NAME: &'static str = "test.Update";
}

impl shmbus::journal::Keyed for Update {
    fn key(&self) -> u64 {
        self.key
    }
}

#[test]
fn a_journal_fed_blackboard_holds_each_keys_latest_value_for_a_reader_that_never_joins() {
    use shmbus::journal::{self, BoardFeed, FeedError, JoinOptions, State};
    let dir = common::ShmDir::new("C-bb-feed");
    let bus = dir.bus("bus");
    let board = dir.bus("board");
    let mut publisher = journal::Publisher::<Update>::create(
        &bus,
        &BusOptions::new(64),
        &journal::Options::new(dir.path().join("j")),
    )
    .expect("journaled bus");
    // Before the feed starts: in the journal only.
    for n in 0..50 {
        publisher
            .publish(&Update { key: n % 10, n })
            .expect("publish");
    }
    let writer =
        Writer::<u64, Update>::create(&board, &blackboard::Options::new(10)).expect("board");
    let state = State::<Update>::join(&bus, &JoinOptions::default()).expect("join");
    let mut feed = BoardFeed::new(state, writer).expect("feed");
    // Live, from the ring, with more keys than fit at the end.
    let mut last = 0;
    for n in 50..100 {
        last = publisher
            .publish(&Update { key: n % 10, n })
            .expect("publish");
    }
    assert!(
        feed.wait_for(last, Wait::For(Duration::from_secs(10)))
            .expect("fold")
    );
    let mut reader = Reader::<u64, Update>::open(&board, &OpenOptions::default()).expect("open");
    for k in 0..10 {
        let got = reader.get(&k).expect("get").expect("present");
        assert_eq!(got.value, Update { key: k, n: 90 + k });
    }
    assert_eq!(reader.keys(), 10);
    let extra = publisher
        .publish(&Update { key: 10, n: 100 })
        .expect("publish");
    match feed.wait_for(extra, Wait::For(Duration::from_secs(10))) {
        Err(FeedError::Board(PutError::Full { keys: 10 })) => {}
        other => panic!("an eleventh key in a table of ten: expected Full, got {other:?}"),
    }
    drop((feed, reader));
    publisher.close().expect("close");
    dir.finish();
}
