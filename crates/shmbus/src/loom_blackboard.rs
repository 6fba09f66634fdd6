//! loom model of a blackboard entry's seqlock: the real `Writer` and
//! `Reader` over the heap, through the `sync` facade. One writer inserts a
//! key and updates it; two readers each look it up racing both writes.
//! Every value a reader returns is one the writer wrote whole, with the
//! version of that write; a read that cannot get a whole copy within its
//! bounded tries says `Busy`, never a mix. Run with:
//! `RUSTFLAGS="--cfg loom" cargo test -p shmbus --release --lib loom`
//!
//! What it cannot see: loom's heap region holds the entry in Relaxed
//! atomics, as the portable copy does (the x86_64 `asm!` copy is not
//! modelled; `bus::copy` argues it has the same effect).

use loom::thread;

use crate::blackboard::{BlackboardOptions, GetError, Writer};
use crate::loom_tests::model;

type Value = [u64; 2];

fn check(got: Result<Option<crate::blackboard::Versioned<Value>>, GetError>) {
    match got {
        // Before the insert was committed.
        Ok(None) => {}
        Ok(Some(v)) => match v.version {
            1 => assert_eq!(v.value, [1, 1], "torn or wrong version"),
            2 => assert_eq!(v.value, [2, 2], "torn or wrong version"),
            other => panic!("version {other} was never written"),
        },
        Err(GetError::Busy { .. }) => {}
        Err(e) => panic!("{e}"),
    }
}

/// Mutation-checked: without the reader's stamp re-load (`entry::try_read`
/// keeping every copy) loom finds a torn `[1, 2]` or `[2, 1]`; without the
/// writer's Release fence after the odd stamp, a copy of the new value
/// under the old even stamp.
#[test]
fn loom_two_readers_racing_an_insert_and_an_update_never_see_a_torn_value() {
    model(|| {
        let mut writer = Writer::<u64, Value, _>::on_heap(&BlackboardOptions::new(1))
            .expect("geometry");
        let mut first = writer.reader();
        let mut second = writer.reader();
        let w = thread::spawn(move || {
            assert_eq!(writer.put(&1, &[1, 1]), Ok(1));
            assert_eq!(writer.put(&1, &[2, 2]), Ok(2));
        });
        let r = thread::spawn(move || check(first.get(&1)));
        check(second.get(&1));
        w.join().unwrap();
        r.join().unwrap();
    });
}
