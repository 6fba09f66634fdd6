//! loom model of a many-writer blackboard (`blackboard/many_writer.rs`):
//! two real `ManyWriter`s insert two distinct keys whose probes start at
//! the same empty entry, racing for its claim, while a reader makes one
//! attempt at that entry (`entry::try_read`). Every copy the reader keeps
//! is one write whole; after both, each key is found with its value and
//! `KEYS` is 2. Run with:
//! `RUSTFLAGS="--cfg loom" cargo test -p shmbus --release --lib loom`
//!
//! Mutation-checked: with the claim's CAS (`ManyWriter::claim`) replaced
//! by a plain store of the odd stamp, loom finds both writers in the
//! same entry and one key lost (the "both keys found" assertion).
//!
//! What it cannot see: the unblock timeout (set far beyond the model's
//! run, so no takeover happens), and the x86_64 `asm!` copy, as
//! `loom/blackboard.rs`.

use std::sync::Arc;

use loom::thread;

use crate::blackboard::ManyWriter;
use crate::blackboard::entry::{Attempt, try_read};
use crate::blackboard::table::Table;
use crate::mem::{HeapRegion, Region};
use crate::sync::Ordering;
use crate::wait::WaitStrategy;
use crate::wire::BlackboardGeometry;
use crate::wire::blackboard::{control, tag};

type Many = ManyWriter<u64, [u64; 2], Arc<HeapRegion>>;

/// A two-key table (four entries of 64 bytes) of 8-byte keys and 16-byte
/// values: its control words at 0 (through the doorbell, at 256), its
/// entries at 320. The unblock timeout is the largest there is.
fn writer() -> Many {
    let geo = BlackboardGeometry::new(2, 8, 16).expect("geometry");
    let region = Arc::new(HeapRegion::new(320 + 4 * 64));
    region
        .word(control::UNBLOCK_NS)
        .store(u64::MAX, Ordering::Relaxed);
    ManyWriter::new(Table::new(region, geo, 0, 320), WaitStrategy::default())
}

/// Two keys whose probes start at the same entry.
fn colliding(t: &Table<Arc<HeapRegion>>) -> (u64, u64) {
    let home = |k: u64| t.home(&k.to_ne_bytes());
    (2..16)
        .map(|k| (1, k))
        .find(|&(a, b)| home(a) == home(b))
        .expect("a collision")
}

/// One attempt at `entry`: what it kept must be a whole write.
fn attempt(t: &Table<Arc<HeapRegion>>, entry: u64, keys: (u64, u64)) {
    let mut buf = [0u8; 32];
    if let Attempt::Stable(version) = try_read(t.stamp(entry), t.body(entry), &mut buf) {
        let w = |i: usize| u64::from_ne_bytes(buf[8 * i..8 * i + 8].try_into().unwrap());
        let words = [w(0), w(1), w(2), w(3)];
        match version {
            0 => assert_eq!(words, [0; 4], "never written"),
            1 | 2 => assert!(
                words == [tag::LIVE, keys.0, keys.0, keys.0]
                    || words == [tag::LIVE, keys.1, keys.1, keys.1],
                "a torn copy {words:?} at version {version}"
            ),
            v => panic!("version {v} was never written"),
        }
    }
}

/// Preemption bound 2, as `loom/blackboard.rs`: three threads at bound 3
/// cost minutes, and a lost key or a torn copy takes one or two
/// preemptions (a writer stopped between its probe and its claim).
#[test]
fn loom_two_writers_inserting_distinct_keys_into_one_entry_lose_neither_and_tear_nothing() {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(2);
    }
    builder.check(|| {
        let mut a = writer();
        let mut b = a.another();
        let mut reader = a.reader();
        let t = a.table_for_loom();
        let keys = colliding(t);
        let home = t.home(&keys.0.to_ne_bytes());
        let t = Arc::new(t.same(t.region.clone()));
        let ta = thread::spawn(move || {
            let k = keys.0;
            a.put_quiet(&k.to_ne_bytes(), bytemuck::bytes_of(&[k, k]))
                .expect("put");
            a
        });
        let tb = thread::spawn(move || {
            let k = keys.1;
            b.put_quiet(&k.to_ne_bytes(), bytemuck::bytes_of(&[k, k]))
                .expect("put");
        });
        attempt(&t, home, keys);
        let a = ta.join().unwrap();
        tb.join().unwrap();
        for k in [keys.0, keys.1] {
            let got = reader.get(&k).expect("get").expect("both keys found");
            assert_eq!(got.value, [k, k]);
        }
        assert_eq!(a.keys(), 2);
    });
}
