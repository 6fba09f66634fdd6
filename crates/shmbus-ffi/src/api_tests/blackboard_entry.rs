//! The blackboard's entry handles through the C calls: a reader's handle
//! follows its key when it is removed and put again in another entry and
//! never reads the key that took its old one; a writer's handle writes in
//! place and never over another key; every refusal has its status and
//! code. Keys that share a probe are picked by LAYOUT §21.4's hash, so
//! where each key goes is known.

use std::ptr::{NonNull, null, null_mut};

use super::{common, last_error};
use crate::blackboard::*;
use crate::error_code::*;
use crate::last_error::*;
use crate::status::*;
use common::Bus;

/// A table of 4 keys (8 entries) of 4-byte keys and 8-byte values, its
/// writer and a reader.
fn board(bus: &Bus) -> (*mut ShmbusBlackboardWriter, *mut ShmbusBlackboardReader) {
    let mut opts = shmbus_blackboard_options_default();
    opts.keys = 4;
    opts.key_size = 4;
    opts.value_size = 8;
    let (mut writer, mut reader) = (null_mut(), null_mut());
    // SAFETY: a NUL-terminated name, live options and out-parameters.
    unsafe {
        assert_eq!(
            shmbus_blackboard_writer_create(bus.ptr(), &opts, &mut writer),
            Status::SHMBUS_OK,
            "{}",
            last_error()
        );
        assert_eq!(
            shmbus_blackboard_reader_open(bus.ptr(), null(), &mut reader),
            Status::SHMBUS_OK,
            "{}",
            last_error()
        );
    }
    (writer, reader)
}

/// Two 4-byte keys whose probes start at the same entry of an 8-entry
/// table: the first put goes there, the second to the entry after it.
fn sharing_a_home() -> (Vec<u8>, Vec<u8>) {
    let home = |key: &[u8]| shmbus_testkit::blackboard_home(key, 8);
    let mut keys = (0..1000)
        .map(|n| format!("k{n:03}").into_bytes())
        .filter(|k| home(k) == home(b"k000"));
    (keys.next().unwrap(), keys.next().unwrap())
}

/// `shmbus_blackboard_writer_put` of `key`: the write's version.
fn put(writer: *mut ShmbusBlackboardWriter, key: &[u8], value: &[u8; 8]) -> u64 {
    let mut version = 0;
    // SAFETY: a live writer; the key, value and out-parameter are live.
    let st = unsafe {
        shmbus_blackboard_writer_put(
            writer,
            key.as_ptr().cast(),
            key.len(),
            value.as_ptr().cast(),
            value.len(),
            &mut version,
        )
    };
    assert_eq!(st, Status::SHMBUS_OK, "{}", last_error());
    version
}

fn remove(writer: *mut ShmbusBlackboardWriter, key: &[u8]) {
    // SAFETY: a live writer and key.
    let st = unsafe {
        shmbus_blackboard_writer_remove(writer, key.as_ptr().cast(), key.len(), null_mut())
    };
    assert_eq!(st, Status::SHMBUS_OK, "{}", last_error());
}

/// `shmbus_blackboard_reader_get` of `key`: the value, if there.
fn get(reader: *mut ShmbusBlackboardReader, key: &[u8]) -> Option<[u8; 8]> {
    let mut buf = [0u8; 8];
    let mut len = buf.len();
    // SAFETY: a live reader; the key, buffer and out-parameters are live.
    let st = unsafe {
        shmbus_blackboard_reader_get(
            reader,
            key.as_ptr().cast(),
            key.len(),
            buf.as_mut_ptr().cast(),
            &mut len,
            null_mut(),
        )
    };
    match st {
        Status::SHMBUS_MESSAGE => Some(buf),
        Status::SHMBUS_EMPTY => None,
        st => panic!("get: {st:?}: {}", last_error()),
    }
}

fn reader_entry(
    reader: *mut ShmbusBlackboardReader,
    key: &[u8],
) -> *mut ShmbusBlackboardEntryReader {
    let mut entry = null_mut();
    // SAFETY: a live reader, key and out-parameter.
    let st = unsafe {
        shmbus_blackboard_reader_entry(reader, key.as_ptr().cast(), key.len(), &mut entry)
    };
    assert_eq!(st, Status::SHMBUS_OK, "{}", last_error());
    entry
}

fn writer_entry(
    writer: *mut ShmbusBlackboardWriter,
    key: &[u8],
) -> *mut ShmbusBlackboardEntryWriter {
    let mut entry = null_mut();
    // SAFETY: a live writer, key and out-parameter.
    let st = unsafe {
        shmbus_blackboard_writer_entry(writer, key.as_ptr().cast(), key.len(), &mut entry)
    };
    assert_eq!(st, Status::SHMBUS_OK, "{}", last_error());
    entry
}

/// `shmbus_blackboard_entry_reader_get` into a buffer of `cap` bytes:
/// its status, the bytes, `*len` and the version.
fn entry_get(entry: *mut ShmbusBlackboardEntryReader, cap: usize) -> (Status, Vec<u8>, usize, u64) {
    let mut buf = vec![0u8; cap];
    let mut len = cap;
    let mut version = 0;
    // SAFETY: a live entry reader (or NULL); `buf` holds `len` bytes.
    let st = unsafe {
        shmbus_blackboard_entry_reader_get(entry, buf.as_mut_ptr().cast(), &mut len, &mut version)
    };
    buf.truncate(len.min(cap));
    (st, buf, len, version)
}

/// `shmbus_blackboard_writer_put_entry`: its status and the version.
fn put_entry(
    writer: *mut ShmbusBlackboardWriter,
    entry: *mut ShmbusBlackboardEntryWriter,
    value: &[u8],
) -> (Status, u64) {
    let mut version = 0;
    // SAFETY: a live writer and entry writer (or NULL); a live value.
    let st = unsafe {
        shmbus_blackboard_writer_put_entry(
            writer,
            entry,
            value.as_ptr().cast(),
            value.len(),
            &mut version,
        )
    };
    (st, version)
}

#[test]
fn a_readers_entry_handle_follows_its_key_put_again_elsewhere_and_never_reads_the_key_in_its_entry()
{
    let bus = Bus::new("board-entry-reader");
    let (writer, reader) = board(&bus);
    let (a, b) = sharing_a_home();
    let entry = reader_entry(reader, &a);
    assert_eq!(entry_get(entry, 8).0, Status::SHMBUS_EMPTY, "not put yet");
    put(writer, &a, b"aaaaaaaa"); // a's home
    assert_eq!(
        entry_get(entry, 8),
        (Status::SHMBUS_MESSAGE, b"aaaaaaaa".to_vec(), 8, 1)
    );
    // The handle keeps the table mapped: it outlives the reader.
    // SAFETY: the live reader, not used again.
    unsafe { shmbus_blackboard_reader_close(reader) };
    remove(writer, &a);
    assert_eq!(entry_get(entry, 8).0, Status::SHMBUS_EMPTY, "removed");
    put(writer, &b, b"bbbbbbbb"); // into a's entry
    assert_eq!(
        entry_get(entry, 8).0,
        Status::SHMBUS_EMPTY,
        "b's value read through a's handle"
    );
    let v = put(writer, &a, b"aaaa2222"); // the entry after
    assert_eq!(
        entry_get(entry, 8),
        (Status::SHMBUS_MESSAGE, b"aaaa2222".to_vec(), 8, v),
        "{}",
        last_error()
    );
    // SAFETY: the live handles, not used again.
    unsafe {
        shmbus_blackboard_entry_reader_close(entry);
        shmbus_blackboard_writer_close(writer);
    }
}

#[test]
fn a_writers_entry_handle_puts_and_removes_its_key_and_never_writes_over_the_key_in_its_entry() {
    let bus = Bus::new("board-entry-writer");
    let (writer, reader) = board(&bus);
    let (a, b) = sharing_a_home();
    let entry = writer_entry(writer, &a);
    assert_eq!(
        put_entry(writer, entry, b"aaaaaaaa"),
        (Status::SHMBUS_OK, 1)
    );
    assert_eq!(
        put_entry(writer, entry, b"aaaa2222"),
        (Status::SHMBUS_OK, 2)
    );
    assert_eq!(get(reader, &a), Some(*b"aaaa2222"));
    let mut version = 0;
    // SAFETY: the live writer and entry writer; a live out-parameter.
    unsafe {
        assert_eq!(
            shmbus_blackboard_writer_remove_entry(writer, entry, &mut version),
            Status::SHMBUS_OK
        );
        assert_eq!(version, 3);
        assert_eq!(
            shmbus_blackboard_writer_remove_entry(writer, entry, &mut version),
            Status::SHMBUS_EMPTY,
            "removed already"
        );
    }
    assert_eq!(get(reader, &a), None);
    put(writer, &b, b"bbbbbbbb"); // into a's entry
    assert_eq!(
        put_entry(writer, entry, b"aaaa3333"),
        (Status::SHMBUS_OK, 5)
    );
    assert_eq!(get(reader, &b), Some(*b"bbbbbbbb"), "a written over b");
    assert_eq!(get(reader, &a), Some(*b"aaaa3333"));
    // The handle is a key, not a borrow: a later writer uses it.
    let mut again = null_mut();
    // SAFETY: the live writer, not used again; a NUL-terminated name.
    unsafe {
        shmbus_blackboard_writer_close(writer);
        assert_eq!(
            shmbus_blackboard_writer_attach(bus.ptr(), null(), &mut again),
            Status::SHMBUS_OK,
            "{}",
            last_error()
        );
    }
    assert_eq!(put_entry(again, entry, b"aaaa4444"), (Status::SHMBUS_OK, 6));
    assert_eq!(get(reader, &a), Some(*b"aaaa4444"));
    // SAFETY: the live handles, not used again.
    unsafe {
        shmbus_blackboard_entry_writer_close(entry);
        shmbus_blackboard_writer_close(again);
        shmbus_blackboard_reader_close(reader);
    }
}

#[test]
fn entry_handles_refuse_a_key_of_another_size_a_null_argument_a_short_buffer_and_a_full_table() {
    let bus = Bus::new("board-entry-refusals");
    let (writer, reader) = board(&bus);
    // Not NULL before the calls: a failed one makes them NULL.
    let mut er: *mut ShmbusBlackboardEntryReader = NonNull::dangling().as_ptr();
    let mut ew: *mut ShmbusBlackboardEntryWriter = NonNull::dangling().as_ptr();
    // SAFETY: live handles, keys and out-parameters.
    unsafe {
        assert_eq!(
            shmbus_blackboard_reader_entry(reader, b"abc".as_ptr().cast(), 3, &mut er),
            Status::SHMBUS_ERROR
        );
        assert_eq!(
            (shmbus_error_code(), er),
            (ErrorCode::SHMBUS_E_INVALID_ARGUMENT, null_mut())
        );
        assert!(last_error().contains("3 bytes"), "{}", last_error());
        assert_eq!(
            shmbus_blackboard_writer_entry(writer, b"abcde".as_ptr().cast(), 5, &mut ew),
            Status::SHMBUS_ERROR
        );
        assert_eq!(
            (shmbus_error_code(), ew),
            (ErrorCode::SHMBUS_E_INVALID_ARGUMENT, null_mut())
        );
        assert_eq!(
            shmbus_blackboard_reader_entry(null_mut(), b"abcd".as_ptr().cast(), 4, &mut er),
            Status::SHMBUS_ERROR
        );
        assert!(last_error().contains("reader is NULL"), "{}", last_error());
        assert_eq!(
            shmbus_blackboard_writer_entry(writer, b"abcd".as_ptr().cast(), 4, null_mut()),
            Status::SHMBUS_ERROR
        );
        assert_eq!(shmbus_error_code(), ErrorCode::SHMBUS_E_INVALID_ARGUMENT);
    }
    let (er, ew) = (reader_entry(reader, b"abcd"), writer_entry(writer, b"abcd"));
    let (st, _, len, _) = entry_get(er, 4);
    assert_eq!((st, len), (Status::SHMBUS_TOO_SMALL, 8), "{}", last_error());
    assert_eq!(shmbus_error_code(), ErrorCode::SHMBUS_E_TOO_LONG);
    assert_eq!(entry_get(null_mut(), 8).0, Status::SHMBUS_ERROR);
    assert!(last_error().contains("entry is NULL"), "{}", last_error());
    assert_eq!(put_entry(writer, ew, b"1").0, Status::SHMBUS_ERROR);
    assert_eq!(shmbus_error_code(), ErrorCode::SHMBUS_E_INVALID_ARGUMENT);
    assert!(last_error().contains("1 bytes"), "{}", last_error());
    assert_eq!(
        put_entry(writer, null_mut(), b"12345678").0,
        Status::SHMBUS_ERROR
    );
    assert!(last_error().contains("entry is NULL"), "{}", last_error());
    // SAFETY: a NULL writer.
    let st = unsafe { shmbus_blackboard_writer_remove_entry(null_mut(), ew, null_mut()) };
    assert_eq!(st, Status::SHMBUS_ERROR);
    assert!(last_error().contains("writer is NULL"), "{}", last_error());
    // A handle of another table's key size.
    let other = Bus::new("board-entry-other");
    let mut opts = shmbus_blackboard_options_default();
    opts.keys = 4;
    opts.key_size = 8;
    opts.value_size = 8;
    let mut eight = null_mut();
    // SAFETY: a NUL-terminated name, live options and out-parameter.
    unsafe {
        assert_eq!(
            shmbus_blackboard_writer_create(other.ptr(), &opts, &mut eight),
            Status::SHMBUS_OK
        );
    }
    let long = writer_entry(eight, b"12345678");
    assert_eq!(put_entry(writer, long, b"12345678").0, Status::SHMBUS_ERROR);
    assert_eq!(shmbus_error_code(), ErrorCode::SHMBUS_E_INVALID_ARGUMENT);
    assert!(last_error().contains("8 bytes"), "{}", last_error());
    // Full: four keys put by key, a fifth through a handle.
    for key in [b"k001", b"k002", b"k003", b"k004"] {
        put(writer, key, b"12345678");
    }
    assert_eq!(put_entry(writer, ew, b"12345678").0, Status::SHMBUS_FULL);
    assert_eq!(shmbus_error_code(), ErrorCode::SHMBUS_E_FULL);
    assert_eq!(get(reader, b"abcd"), None, "a refused put wrote");
    // SAFETY: the live handles (and NULLs), not used again.
    unsafe {
        shmbus_blackboard_entry_reader_close(er);
        shmbus_blackboard_entry_reader_close(null_mut());
        shmbus_blackboard_entry_writer_close(ew);
        shmbus_blackboard_entry_writer_close(long);
        shmbus_blackboard_entry_writer_close(null_mut());
        shmbus_blackboard_writer_close(eight);
        shmbus_blackboard_writer_close(writer);
        shmbus_blackboard_reader_close(reader);
    }
}

#[test]
fn a_get_through_a_handle_of_an_entry_left_mid_write_is_busy_then_stuck_once_the_writer_is_gone() {
    let bus = Bus::new("board-entry-stuck");
    let (writer, reader) = board(&bus);
    put(writer, b"half", b"12345678");
    let entry = reader_entry(reader, b"half");
    // SAFETY: the live writer. As a writer killed between the odd stamp
    // and the commit.
    unsafe {
        (*writer)
            .0
            .put_and_stop_mid_write(b"half", b"abcdefgh")
            .unwrap();
    }
    let (st, ..) = entry_get(entry, 8);
    assert_eq!(
        (st, shmbus_error_code()),
        (Status::SHMBUS_ERROR, ErrorCode::SHMBUS_E_BUSY),
        "{}",
        last_error()
    );
    // SAFETY: the live writer, not used again.
    unsafe { shmbus_blackboard_writer_close(writer) };
    let (st, ..) = entry_get(entry, 8);
    assert_eq!(
        (st, shmbus_error_code()),
        (Status::SHMBUS_ERROR, ErrorCode::SHMBUS_E_STUCK),
        "{}",
        last_error()
    );
    // SAFETY: the live handles, not used again.
    unsafe {
        shmbus_blackboard_entry_reader_close(entry);
        shmbus_blackboard_reader_close(reader);
    }
}
