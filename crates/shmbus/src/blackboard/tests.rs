//! The blackboard's unit tests, on the heap (Miri runs them): the hash and
//! geometry of LAYOUT §21's worked example, the entry seqlock through the
//! real handles, bounded reads of a mid-write entry, and a writer thread
//! against reader threads that check every value.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering as Std};

use super::table::hash;
use super::{GetError, Options, Writer};
use crate::mem::{HeapRegion, Region};
use crate::sync::Ordering;
use crate::wire::{BlackboardGeometry, Header, TypeFingerprint};

#[test]
fn the_worked_example_of_layout_25_6_holds() {
    let h = hash(&7u64.to_le_bytes());
    assert_eq!(h, 0x9619_F5A3_31F7_9CC7);
    assert_eq!(h & 2047, 1223);
    let geo = BlackboardGeometry::new(1000, 8, 64).expect("geometry");
    assert_eq!((geo.entries, geo.entry_size), (2048, 128));
    let header = Header::blackboard(
        &geo,
        TypeFingerprint::of::<u64>(),
        TypeFingerprint::of::<[u64; 8]>(),
        4096,
    )
    .expect("header");
    assert_eq!(header.total_len, 270_336);
}

#[test]
fn a_first_put_writes_the_bytes_layout_25_gives() {
    let mut writer = Writer::<u64, u64, _>::on_heap(&Options::new(4)).expect("heap");
    writer.put(&7, &0xABCD).expect("put");
    let region: &Arc<HeapRegion> = &writer.reader().table_region();
    let page = crate::mem::heap::HEAP_PAGE as usize;
    let i = (hash(&7u64.to_le_bytes()) & 7) as usize;
    let entry = 2 * page + i * 64;
    let word = |off: usize| region.word(off).load(Ordering::Relaxed);
    assert_eq!((word(entry), word(entry + 8)), (2, 1));
    assert_eq!((word(entry + 16), word(entry + 24)), (7, 0xABCD));
    assert_eq!((word(page), word(page + 8)), (1, 1));
}

#[test]
fn a_read_of_an_entry_left_mid_write_gives_up_busy_after_a_bounded_number_of_tries() {
    let mut writer = Writer::<u64, u64, _>::on_heap(&Options::new(4)).expect("heap");
    writer.put(&1, &1).expect("put");
    let mut reader = writer.reader();
    let region = reader.table_region();
    let i = hash(&1u64.to_le_bytes()) & 7;
    let stamp = region.word(2 * crate::mem::heap::HEAP_PAGE as usize + i as usize * 64);
    stamp.store(3, Ordering::Relaxed);
    // The heap has no lock to say the writer is dead: busy, not stuck.
    assert_eq!(reader.get(&1), Err(GetError::Busy { entry: i }));
    stamp.store(2, Ordering::Relaxed);
    assert_eq!(reader.get(&1).expect("get").map(|e| e.value), Some(1));
}

/// The first `n` keys whose probe starts at the same entry of an
/// `entries`-entry table as key 1's.
fn keys_sharing_a_home(n: usize, entries: u64) -> Vec<u64> {
    let home = |k: u64| hash(&k.to_ne_bytes()) & (entries - 1);
    (1..).filter(|&k| home(k) == home(1)).take(n).collect()
}

/// Entry `i`'s word at byte `at` of a heap table of 64-byte entries.
fn entry_word(region: &Arc<HeapRegion>, i: u64, at: usize) -> &crate::sync::AtomicU64 {
    region.word(2 * crate::mem::heap::HEAP_PAGE as usize + i as usize * 64 + at)
}

#[test]
fn a_key_whose_home_holds_another_key_left_mid_write_is_read_and_a_key_never_written_is_not_found()
{
    let mut writer = Writer::<u64, u64, _>::on_heap(&Options::new(4)).expect("heap");
    let [stuck, beside, never] = keys_sharing_a_home(3, 8)[..] else {
        unreachable!("three keys")
    };
    writer.put(&stuck, &10).expect("put");
    writer.put(&beside, &20).expect("put");
    let mut reader = writer.reader();
    let region = reader.table_region();
    let home = hash(&stuck.to_ne_bytes()) & 7;
    // `stuck`'s entry mid-write, as a writer stopped (or killed) there
    // leaves it: `beside` and `never` probe on past it.
    entry_word(&region, home, 0).store(3, Ordering::Relaxed);
    assert_eq!(reader.get(&beside).expect("get").map(|e| e.value), Some(20));
    assert_eq!(reader.get(&never), Ok(None));
    assert_eq!(reader.get(&stuck), Err(GetError::Busy { entry: home }));
    let waited = reader
        .wait_key(&beside, 0, crate::Wait::Never)
        .expect("wait");
    assert_eq!(waited.map(|e| (e.value, e.version)), Some((Some(20), 2)));
    assert_eq!(reader.wait_key(&never, 0, crate::Wait::Never), Ok(None));
}

#[test]
fn a_look_up_racing_its_own_keys_insert_finds_it_absent_until_its_key_words_are_stored() {
    let mut writer = Writer::<u64, u64, _>::on_heap(&Options::new(4)).expect("heap");
    let [gone, new] = keys_sharing_a_home(2, 8)[..] else {
        unreachable!("two keys")
    };
    writer.put(&gone, &10).expect("put");
    writer.remove(&gone).expect("remove");
    let mut reader = writer.reader();
    let region = reader.table_region();
    let home = hash(&gone.to_ne_bytes()) & 7;
    let word = |at| entry_word(&region, home, at);
    // The insert of `new` into `gone`'s removed entry, version 3: the odd
    // stamp and the live tag stored, the key words still `gone`'s. Not
    // committed: `new` is in no entry yet.
    word(0).store(5, Ordering::Relaxed);
    word(8).store(crate::wire::blackboard::tag::LIVE, Ordering::Relaxed);
    assert_eq!(reader.get(&new), Ok(None));
    assert_eq!(reader.wait_key(&new, 0, crate::Wait::Never), Ok(None));
    // Its key words stored: it cannot be told from an update of `new`.
    word(16).store(new, Ordering::Relaxed);
    assert_eq!(reader.get(&new), Err(GetError::Busy { entry: home }));
    word(24).store(30, Ordering::Relaxed);
    word(0).store(6, Ordering::Relaxed);
    assert_eq!(reader.get(&new).expect("get").map(|e| e.value), Some(30));
}

#[test]
fn an_entry_whose_first_write_is_under_way_holds_no_key_not_even_the_one_its_zero_words_spell() {
    let mut writer = Writer::<u64, u64, _>::on_heap(&Options::new(4)).expect("heap");
    let home = hash(&0u64.to_ne_bytes()) & 7;
    // A key elsewhere, so that the table's version is past 0 (`wait_key`
    // then looks).
    let other = (1..).find(|k: &u64| hash(&k.to_ne_bytes()) & 7 != home);
    writer.put(&other.expect("a key"), &1).expect("put");
    let mut reader = writer.reader();
    let region = reader.table_region();
    // The odd stamp of an insert into key 0's home, its tag still empty.
    entry_word(&region, home, 0).store(3, Ordering::Relaxed);
    assert_eq!(reader.get(&0), Ok(None));
    assert_eq!(reader.wait_key(&0, 0, crate::Wait::Never), Ok(None));
}

#[test]
fn readers_on_other_threads_never_see_a_torn_value() {
    let rounds = if cfg!(miri) { 20 } else { 2000 };
    let keys = 8u64;
    let mut writer = Writer::<u64, [u64; 4], _>::on_heap(&Options::new(keys)).expect("heap");
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|t| {
            let mut reader = writer.reader();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut reads = 0u64;
                let mut k = t;
                while !stop.load(Std::Relaxed) || reads == 0 {
                    k = (k + 1) % keys;
                    match reader.get(&k) {
                        Ok(Some(got)) => {
                            let [key, n, a, b] = got.value;
                            assert_eq!((key, a, b), (k, n ^ k, n.wrapping_mul(k)), "torn");
                            reads += 1;
                        }
                        Ok(None) | Err(GetError::Busy { .. }) => {}
                        Err(e) => panic!("{e}"),
                    }
                    if cfg!(miri) && reads > 0 && stop.load(Std::Relaxed) {
                        break;
                    }
                }
                reads
            })
        })
        .collect();
    for n in 0..rounds {
        for k in 0..keys {
            writer
                .put(&k, &[k, n, n ^ k, n.wrapping_mul(k)])
                .expect("put");
        }
    }
    stop.store(true, Std::Relaxed);
    for r in readers {
        assert!(r.join().expect("reader") > 0);
    }
}

/// Every key of a chain sharing one home, read by key and through a
/// handle whose hint is stale, gives its own value: for a value read into
/// registers (64 bytes) and one read through the buffer (72 bytes).
fn reads_agree_on_every_path<V: crate::Message + PartialEq + std::fmt::Debug>(
    value: impl Fn(u64) -> V,
) {
    let mut writer = Writer::<u64, V, _>::on_heap(&Options::new(4)).expect("heap");
    let keys = keys_sharing_a_home(3, 8);
    for &k in &keys {
        writer.put(&k, &value(k)).expect("put");
    }
    let mut reader = writer.reader();
    let mut handles: Vec<_> = keys
        .iter()
        .map(|k| reader.entry(k).expect("entry"))
        .collect();
    // The first key moves behind the others: every hint but its own
    // still holds, its own now names an entry of another key.
    writer.remove(&keys[0]).expect("remove");
    writer.put(&keys[0], &value(100)).expect("put");
    for (i, (&k, h)) in keys.iter().zip(&mut handles).enumerate() {
        let want = if i == 0 { value(100) } else { value(k) };
        assert_eq!(
            reader.get(&k).expect("get").map(|e| e.value),
            Some(want),
            "key {k} by key"
        );
        assert_eq!(
            h.get().expect("get").map(|e| e.value),
            Some(want),
            "key {k} through a handle"
        );
    }
    writer.remove(&keys[1]).expect("remove");
    assert_eq!(reader.get(&keys[1]), Ok(None));
    assert_eq!(handles[1].get(), Ok(None));
}

#[test]
fn small_and_large_typed_values_read_the_same_by_key_and_through_stale_handles() {
    reads_agree_on_every_path(|k| [k; 8]);
    reads_agree_on_every_path(|k| [k; 9]);
}
