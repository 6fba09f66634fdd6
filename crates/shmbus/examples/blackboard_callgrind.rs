//! A blackboard's read and write cost in instructions: one thread runs
//! `n` puts of a 64 B value to one key (`put_one`), then `n` gets of it
//! (`get_one`), then the same through entry handles (`put_handle`,
//! `get_handle`), so that `valgrind --tool=callgrind` counts each path
//! alone. The inclusive cost of each function divided by `n` is
//! instructions per write and per read.
//!
//! `cargo build --release -p shmbus --example blackboard_callgrind`, then
//! `valgrind --tool=callgrind target/release/examples/blackboard_callgrind [n]`
//! (default 100 000 of each). With a second argument `many`, the puts go
//! through a `ManyWriter` on a table made for many writers (`put_many`).
use shmbus::OpenOptions;
use shmbus::blackboard::{self, EntryReader, EntryWriter, ManyWriter, Reader, Writer};

type Value = [u64; 8];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let name = format!("/dev/shm/shmbus-bb-callgrind-{}", std::process::id());
    if args.get(2).map(String::as_str) == Some("many") {
        let opts = blackboard::Options::new(1000);
        let mut w = ManyWriter::<u64, Value>::create(&name, &opts).expect("create");
        for k in 0..1000 {
            w.put(&k, &[k; 8]).expect("put");
        }
        for i in 0..n {
            put_many(&mut w, i);
        }
        shmbus::remove(&name).expect("rm");
        return;
    }
    let mut w =
        Writer::<u64, Value>::create(&name, &blackboard::Options::new(1000)).expect("create");
    let mut r = Reader::<u64, Value>::open(&name, &OpenOptions::default()).expect("open");
    for k in 0..1000 {
        w.put(&k, &[k; 8]).expect("put");
    }
    let mut sum = 0u64;
    for i in 0..n {
        put_one(&mut w, i);
    }
    for _ in 0..n {
        sum = sum.wrapping_add(get_one(&mut r));
    }
    let mut we = w.entry(&7).expect("entry");
    let mut re = r.entry(&7).expect("entry");
    for i in 0..n {
        put_handle(&mut w, &mut we, i);
    }
    for _ in 0..n {
        sum = sum.wrapping_add(get_handle(&mut re));
    }
    println!("{sum}");
    shmbus::remove(&name).expect("rm");
}

#[inline(never)]
fn put_one(w: &mut Writer<u64, Value>, i: u64) {
    w.put(&7, &[i; 8]).expect("put");
}

#[inline(never)]
fn get_one(r: &mut Reader<u64, Value>) -> u64 {
    r.get(&7).expect("get").expect("key 7").value[3]
}

#[inline(never)]
fn put_handle(w: &mut Writer<u64, Value>, e: &mut EntryWriter<u64, Value>, i: u64) {
    w.put_entry(e, &[i; 8]).expect("put");
}

#[inline(never)]
fn get_handle(e: &mut EntryReader<u64, Value>) -> u64 {
    e.get().expect("get").expect("key 7").value[3]
}

#[inline(never)]
fn put_many(w: &mut ManyWriter<u64, Value>, i: u64) {
    w.put(&7, &[i; 8]).expect("put");
}
