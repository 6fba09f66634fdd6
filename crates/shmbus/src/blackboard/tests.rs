//! The blackboard's unit tests, on the heap (Miri runs them): the hash and
//! geometry of LAYOUT §25's worked example, the entry seqlock through the
//! real handles, bounded reads of a mid-write entry, and a writer thread
//! against reader threads that check every value.

use std::sync::atomic::{AtomicBool, Ordering as Std};
use std::sync::Arc;

use super::table::hash;
use super::{BlackboardOptions, GetError, Writer};
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
    let mut writer = Writer::<u64, u64, _>::on_heap(&BlackboardOptions::new(4)).expect("heap");
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
    let mut writer = Writer::<u64, u64, _>::on_heap(&BlackboardOptions::new(4)).expect("heap");
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

#[test]
fn readers_on_other_threads_never_see_a_torn_value() {
    let rounds = if cfg!(miri) { 20 } else { 2000 };
    let keys = 8u64;
    let mut writer =
        Writer::<u64, [u64; 4], _>::on_heap(&BlackboardOptions::new(keys)).expect("heap");
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
