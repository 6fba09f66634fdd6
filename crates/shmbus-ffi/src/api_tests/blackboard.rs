//! The blackboard's C calls on an entry a writer left mid-write (other
//! keys on its probe read as ever), and on one whose tag no writer
//! stores: a read gives up with a code of its own, never a torn value or
//! a hang.

use std::ptr::null_mut;

use super::{common, last_error};
use crate::blackboard::*;
use crate::error_code::*;
use crate::last_error::*;
use crate::status::*;
use common::Bus;

/// `shmbus_blackboard_reader_get` of `key`: its status and this thread's code.
fn get(reader: *mut ShmbusBlackboardReader, key: &[u8]) -> (Status, ErrorCode) {
    let mut buf = [0u8; 8];
    let mut len = buf.len();
    let mut version = 0;
    // SAFETY: a live reader; the key, buffer and out-parameters are live.
    let st = unsafe {
        shmbus_blackboard_reader_get(
            reader,
            key.as_ptr().cast(),
            key.len(),
            buf.as_mut_ptr().cast(),
            &mut len,
            &mut version,
        )
    };
    (st, shmbus_error_code())
}

#[test]
fn a_read_of_an_entry_left_mid_write_is_busy_while_the_writer_lives_and_stuck_once_it_is_gone() {
    let bus = Bus::new("board-stuck");
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
            shmbus_blackboard_reader_open(bus.ptr(), std::ptr::null(), &mut reader),
            Status::SHMBUS_OK,
            "{}",
            last_error()
        );
        let ok = shmbus_blackboard_writer_put(
            writer,
            b"good".as_ptr().cast(),
            4,
            b"12345678".as_ptr().cast(),
            8,
            null_mut(),
        );
        assert_eq!(ok, Status::SHMBUS_OK);
        // As a writer killed between the odd stamp and the commit.
        (*writer)
            .0
            .put_and_stop_mid_write(b"half", b"abcdefgh")
            .unwrap();
    }
    assert_eq!(
        get(reader, b"half"),
        (Status::SHMBUS_ERROR, ErrorCode::SHMBUS_E_BUSY),
        "{}",
        last_error()
    );
    assert_eq!(get(reader, b"good").0, Status::SHMBUS_MESSAGE);
    // SAFETY: the live writer, not used again.
    unsafe { shmbus_blackboard_writer_close(writer) };
    assert_eq!(
        get(reader, b"half"),
        (Status::SHMBUS_ERROR, ErrorCode::SHMBUS_E_STUCK),
        "{}",
        last_error()
    );
    assert!(last_error().contains("stuck"), "{}", last_error());
    // SAFETY: the live reader, not used again.
    unsafe { shmbus_blackboard_reader_close(reader) };
}

#[test]
fn a_key_beside_an_entry_left_mid_write_is_read_and_a_key_never_written_is_empty() {
    let bus = Bus::new("board-beside");
    let mut opts = shmbus_blackboard_options_default();
    opts.keys = 4;
    opts.key_size = 4;
    opts.value_size = 8;
    // 8 entries: `beside` and `never` start their probe at `half`'s.
    let home = |key: &[u8]| shmbus_testkit::blackboard_home(key, 8);
    let mut sharing = (0..1000)
        .map(|n| format!("k{n:03}").into_bytes())
        .filter(|k| home(k) == home(b"half"));
    let (beside, never) = (sharing.next().unwrap(), sharing.next().unwrap());
    let (mut writer, mut reader) = (null_mut(), null_mut());
    // SAFETY: a NUL-terminated name, live options and out-parameters;
    // then the live writer, live keys and values.
    unsafe {
        assert_eq!(
            shmbus_blackboard_writer_create(bus.ptr(), &opts, &mut writer),
            Status::SHMBUS_OK,
            "{}",
            last_error()
        );
        assert_eq!(
            shmbus_blackboard_reader_open(bus.ptr(), std::ptr::null(), &mut reader),
            Status::SHMBUS_OK,
            "{}",
            last_error()
        );
        for key in [&b"half"[..], &beside] {
            let put = shmbus_blackboard_writer_put(
                writer,
                key.as_ptr().cast(),
                4,
                b"12345678".as_ptr().cast(),
                8,
                null_mut(),
            );
            assert_eq!(put, Status::SHMBUS_OK, "{}", last_error());
        }
        // As a writer killed between the odd stamp and the commit.
        (*writer)
            .0
            .put_and_stop_mid_write(b"half", b"abcdefgh")
            .unwrap();
    }
    assert_eq!(get(reader, b"half").1, ErrorCode::SHMBUS_E_BUSY);
    assert_eq!(
        get(reader, &beside).0,
        Status::SHMBUS_MESSAGE,
        "{}",
        last_error()
    );
    assert_eq!(
        get(reader, &never).0,
        Status::SHMBUS_EMPTY,
        "{}",
        last_error()
    );
    // SAFETY: the live writer, not used again.
    unsafe { shmbus_blackboard_writer_close(writer) };
    assert_eq!(get(reader, b"half").1, ErrorCode::SHMBUS_E_STUCK);
    assert_eq!(
        get(reader, &beside).0,
        Status::SHMBUS_MESSAGE,
        "{}",
        last_error()
    );
    assert_eq!(
        get(reader, &never).0,
        Status::SHMBUS_EMPTY,
        "{}",
        last_error()
    );
    // SAFETY: the live reader, not used again.
    unsafe { shmbus_blackboard_reader_close(reader) };
}

#[test]
fn a_read_of_an_entry_whose_tag_no_writer_stores_is_corrupt() {
    use std::os::unix::fs::FileExt;
    let bus = Bus::new("board-corrupt");
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
            shmbus_blackboard_reader_open(bus.ptr(), std::ptr::null(), &mut reader),
            Status::SHMBUS_OK,
            "{}",
            last_error()
        );
        let ok = shmbus_blackboard_writer_put(
            writer,
            b"good".as_ptr().cast(),
            4,
            b"12345678".as_ptr().cast(),
            8,
            null_mut(),
        );
        assert_eq!(ok, Status::SHMBUS_OK);
    }
    assert_eq!(get(reader, b"good").0, Status::SHMBUS_MESSAGE);
    // The entry in the file (LAYOUT §21: stamp, tag, the key padded to a
    // word, the value): found by its key and value, its tag set to 7.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(format!("/dev/shm/{}", bus.name))
        .expect("the table's file");
    let bytes = std::fs::read(format!("/dev/shm/{}", bus.name)).expect("read");
    let body = [&b"good\0\0\0\0"[..], b"12345678"].concat();
    let at = bytes
        .windows(body.len())
        .position(|w| w == &body[..])
        .expect("the entry's key and value");
    assert_eq!(bytes[at - 8..at], 1u64.to_le_bytes(), "a live tag");
    file.write_all_at(&7u64.to_le_bytes(), (at - 8) as u64)
        .expect("patch");
    assert_eq!(
        get(reader, b"good"),
        (Status::SHMBUS_ERROR, ErrorCode::SHMBUS_E_CORRUPT),
        "{}",
        last_error()
    );
    assert!(last_error().contains('7'), "{}", last_error());
    // SAFETY: the live handles, not used again.
    unsafe {
        shmbus_blackboard_writer_close(writer);
        shmbus_blackboard_reader_close(reader);
    }
}

#[test]
fn every_blackboard_refusal_leaves_the_code_of_its_kind_a_busy_put_busy_not_invalid_argument() {
    use shmbus_core::blackboard::{GetError, PutError, RemoveError};
    let puts = [
        (PutError::Full { keys: 4 }, Status::SHMBUS_FULL),
        (
            PutError::KeySize {
                found: 3,
                expected: 8,
            },
            Status::SHMBUS_ERROR,
        ),
        (
            PutError::ValueSize {
                found: 3,
                expected: 8,
            },
            Status::SHMBUS_ERROR,
        ),
        (PutError::Busy { entry: 1 }, Status::SHMBUS_ERROR),
    ];
    for (e, status) in puts {
        let failure = put_failed(e.clone());
        assert_eq!(
            (failure.status, failure.code),
            (status, ErrorCode::from(e.kind())),
            "{e:?}"
        );
    }
    assert_eq!(
        put_failed(PutError::Busy { entry: 1 }).code,
        ErrorCode::SHMBUS_E_BUSY
    );
    let gets = [
        GetError::Busy { entry: 1 },
        GetError::Stuck {
            entry: 1,
            version: 3,
        },
        GetError::Corrupt { entry: 1, tag: 9 },
        GetError::KeySize {
            found: 3,
            expected: 8,
        },
    ];
    for e in gets {
        assert_eq!(
            get_failed(e.clone()).code,
            ErrorCode::from(e.kind()),
            "{e:?}"
        );
    }
    let busy = RemoveError::Busy { entry: 1 };
    assert_eq!(remove_failed(busy).code, ErrorCode::SHMBUS_E_BUSY);
}
