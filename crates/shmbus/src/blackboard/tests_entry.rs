//! Entry handles on the heap (Miri runs them): a handle whose key is
//! removed and put again elsewhere, whose entry another key takes, and a
//! handle used with a table it was not made for. Each case is built from
//! keys whose probes share an entry, so that where a key goes is known.

use super::table::hash;
use super::{EntryError, ManyWriter, Options, PutError, Writer};

/// The first `n` keys whose probe starts at key 1's entry of an
/// `entries`-entry table, and that entry.
fn sharing_a_home(n: usize, entries: u64) -> (Vec<u64>, u64) {
    let home = |k: u64| hash(&k.to_ne_bytes()) & (entries - 1);
    (
        (1..).filter(|&k| home(k) == home(1)).take(n).collect(),
        home(1),
    )
}

#[test]
fn a_readers_entry_handle_follows_its_key_when_it_is_removed_and_put_again_in_another_entry() {
    // 4 keys: 8 entries.
    let mut writer = Writer::<u64, u64, _>::on_heap(&Options::new(4)).expect("heap");
    let (keys, _) = sharing_a_home(2, 8);
    let (a, b) = (keys[0], keys[1]);
    writer.put(&a, &1).expect("put"); // home
    writer.put(&b, &2).expect("put"); // home + 1
    let reader = writer.reader();
    let mut handle = reader.entry(&b).expect("entry");
    assert_eq!(handle.get().expect("get").map(|e| e.value), Some(2));
    writer.remove(&b).expect("remove");
    assert_eq!(handle.get().expect("get"), None, "removed");
    writer.remove(&a).expect("remove");
    // b again, now in the home entry (the first removed on its probe).
    let v = writer.put(&b, &3).expect("put");
    let got = handle.get().expect("get").expect("put again");
    assert_eq!((got.value, got.version), (3, v));
    // a in b's old entry: the handle reads b where it now is.
    writer.put(&a, &4).expect("put");
    assert_eq!(handle.get().expect("get").map(|e| e.value), Some(3));
    writer.put(&b, &5).expect("put");
    assert_eq!(handle.get().expect("get").map(|e| e.value), Some(5));
}

#[test]
fn a_readers_entry_handle_never_reads_the_value_of_another_key_put_into_its_entry() {
    let mut writer = Writer::<u64, u64, _>::on_heap(&Options::new(4)).expect("heap");
    let (keys, _) = sharing_a_home(2, 8);
    let (a, b) = (keys[0], keys[1]);
    writer.put(&a, &1).expect("put");
    let mut handle = writer.reader().entry(&a).expect("entry");
    writer.remove(&a).expect("remove");
    writer.put(&b, &2).expect("put"); // into a's entry
    assert_eq!(handle.get().expect("get"), None, "b's value read as a's");
    writer.put(&a, &3).expect("put");
    assert_eq!(handle.get().expect("get").map(|e| e.value), Some(3));
}

#[test]
fn a_readers_entry_handle_made_before_its_key_is_put_finds_it_once_it_is() {
    let mut writer =
        Writer::<[u8], [u8], _>::on_heap(&Options::new(4).key_size(3).value_size(5)).expect("heap");
    let reader = writer.reader();
    let mut handle = reader.entry(b"abc").expect("entry");
    assert_eq!(handle.get_bytes().expect("get"), None);
    writer.put(b"abc", b"hello").expect("put");
    assert_eq!(handle.get_bytes().expect("get"), Some((&b"hello"[..], 1)));
    assert_eq!(
        reader.entry(b"ab").map(|_| ()),
        Err(EntryError::KeySize {
            found: 2,
            expected: 3
        })
    );
}

#[test]
fn a_writers_entry_handle_writes_in_place_and_never_over_another_key_that_took_its_entry() {
    let mut writer = Writer::<u64, u64, _>::on_heap(&Options::new(4)).expect("heap");
    let mut reader = writer.reader();
    let (keys, home) = sharing_a_home(2, 8);
    let (a, b) = (keys[0], keys[1]);
    let mut handle = writer.entry(&a).expect("entry");
    assert_eq!(
        handle.hint, home,
        "an absent key's handle starts where it would go"
    );
    assert_eq!(writer.put_entry(&mut handle, &1).expect("put"), 1);
    assert_eq!(writer.put_entry(&mut handle, &2).expect("put"), 2);
    assert_eq!((writer.keys(), handle.hint), (1, home));
    writer.remove(&a).expect("remove");
    writer.put(&b, &20).expect("put"); // b takes a's entry
    assert_eq!(writer.put_entry(&mut handle, &3).expect("put"), 5);
    assert_eq!(reader.get(&b).expect("get").map(|e| e.value), Some(20));
    assert_eq!(reader.get(&a).expect("get").map(|e| e.value), Some(3));
    assert_eq!((writer.keys(), handle.hint), (2, (home + 1) & 7));
    assert_eq!(writer.remove_entry(&mut handle).expect("remove"), Some(6));
    assert_eq!(writer.remove_entry(&mut handle).expect("remove"), None);
    assert_eq!(writer.keys(), 1);
}

#[test]
fn a_put_through_a_handle_into_a_full_table_is_refused_and_writes_nothing() {
    let mut writer = Writer::<u64, u64, _>::on_heap(&Options::new(1)).expect("heap");
    writer.put(&1, &1).expect("put");
    let mut other = writer.entry(&2).expect("entry");
    assert_eq!(
        writer.put_entry(&mut other, &2),
        Err(PutError::Full { keys: 1 })
    );
    assert_eq!((writer.keys(), writer.version()), (1, 1));
}

#[test]
fn a_handle_made_by_a_writer_of_another_key_size_is_refused_by_a_put() {
    let eight = Writer::<[u8], u64, _>::on_heap(&Options::new(4).key_size(8)).expect("heap");
    let mut four = Writer::<[u8], u64, _>::on_heap(&Options::new(4).key_size(4)).expect("heap");
    let mut handle = eight.entry(b"12345678").expect("entry");
    assert_eq!(
        four.put_entry(&mut handle, &1),
        Err(PutError::KeySize {
            found: 8,
            expected: 4
        })
    );
}

#[test]
fn a_many_writers_entry_handle_writes_in_place_and_follows_its_key_past_another_writers_insert() {
    let mut a = ManyWriter::<u64, u64, _>::on_heap(&Options::new(4)).expect("heap");
    let mut b = a.another();
    let mut reader = a.reader();
    let (keys, home) = sharing_a_home(2, 8);
    let (x, y) = (keys[0], keys[1]);
    let mut hx = a.entry(&x).expect("entry");
    assert_eq!(a.put_entry(&mut hx, &1).expect("put"), 1);
    assert_eq!(a.put_entry(&mut hx, &2).expect("put"), 2);
    assert_eq!(hx.hint, home);
    a.remove_entry(&mut hx).expect("remove");
    b.put(&y, &20).expect("put"); // y takes x's entry
    a.put_entry(&mut hx, &3).expect("put");
    assert_eq!(reader.get(&y).expect("get").map(|e| e.value), Some(20));
    assert_eq!(reader.get(&x).expect("get").map(|e| e.value), Some(3));
    assert_eq!(hx.hint, (home + 1) & 7);
    assert_eq!(a.keys(), 2);
}
