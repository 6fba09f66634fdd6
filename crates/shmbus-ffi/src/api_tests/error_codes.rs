//! `shmbus_error_code()`: each failure a C caller can meet leaves the code
//! of its kind, and `shmbus_error_code_name()` names every code.

use std::ffi::{CStr, CString, c_int};
use std::ptr::{null, null_mut};

use super::{bus_opts, last_error, oldest, pool_opts, pool_publish, publish};
use crate::bus::*;
use crate::error_code::*;
use crate::journal::*;
use crate::last_error::*;
use crate::options::*;
use crate::pool::*;
use crate::remove::*;
use crate::status::*;
use crate::stream::*;
use crate::*;
use common::{Bus, TempDir};

use super::common;

/// Asserts that the last call returned `status` and left `code`.
#[track_caller]
fn failed(status: Status, expected: Status, code: ErrorCode) {
    assert_eq!(status, expected, "{}", last_error());
    assert_eq!(shmbus_error_code(), code, "{}", last_error());
}

#[track_caller]
fn error(status: Status, code: ErrorCode) {
    failed(status, Status::SHMBUS_ERROR, code);
}

fn stream_opts(capacity: u64) -> StreamOpts {
    let mut o = shmbus_stream_options_default();
    o.capacity = capacity;
    o
}

#[test]
fn a_missing_bus_fails_with_the_not_found_code() {
    let bus = Bus::new("code-missing");
    let mut s = null_mut();
    // SAFETY: valid C strings, options and out-parameters.
    unsafe {
        error(
            shmbus_subscriber_open(bus.ptr(), null(), &mut s),
            ErrorCode::SHMBUS_E_NOT_FOUND,
        );
        error(shmbus_remove(bus.ptr()), ErrorCode::SHMBUS_E_NOT_FOUND);
        let mut c = null_mut();
        error(
            shmbus_consumer_open(bus.ptr(), null(), &mut c),
            ErrorCode::SHMBUS_E_NOT_FOUND,
        );
    }
}

#[test]
fn an_existing_name_fails_with_the_exists_code() {
    let bus = Bus::new("code-exists");
    let (mut p, mut q) = (null_mut(), null_mut());
    // SAFETY: as above; the handle made is closed once.
    unsafe {
        let st = shmbus_publisher_create(bus.ptr(), &bus_opts(8, 8), &mut p);
        assert_eq!(st, Status::SHMBUS_OK, "{}", last_error());
        error(
            shmbus_publisher_create(bus.ptr(), &bus_opts(8, 8), &mut q),
            ErrorCode::SHMBUS_E_EXISTS,
        );
        let mut c = null_mut();
        error(
            shmbus_producer_create(bus.ptr(), &stream_opts(64), &mut c),
            ErrorCode::SHMBUS_E_EXISTS,
        );
        shmbus_publisher_close(p);
    }
}

#[test]
fn an_opener_naming_another_type_fails_with_the_type_mismatch_code() {
    let bus = Bus::new("code-type");
    let mut p = null_mut();
    // SAFETY: as above.
    unsafe {
        let mut create = bus_opts(8, 8);
        create.type_name = c"md.Tick".as_ptr();
        let st = shmbus_publisher_create(bus.ptr(), &create, &mut p);
        assert_eq!(st, Status::SHMBUS_OK, "{}", last_error());
        let mut other = shmbus_open_options_default();
        other.type_name = c"md.Quote".as_ptr();
        other.type_size = 8;
        let mut s = null_mut();
        error(
            shmbus_subscriber_open(bus.ptr(), &other, &mut s),
            ErrorCode::SHMBUS_E_TYPE_MISMATCH,
        );
        shmbus_publisher_close(p);
    }
}

#[test]
fn a_second_publisher_producer_or_consumer_fails_with_the_role_taken_code() {
    let bus = Bus::new("code-role");
    let stream = Bus::new("code-role-stream");
    let (mut p, mut c) = (null_mut(), null_mut());
    // SAFETY: as above.
    unsafe {
        let st = shmbus_publisher_create(bus.ptr(), &bus_opts(8, 8), &mut p);
        assert_eq!(st, Status::SHMBUS_OK, "{}", last_error());
        let mut second = null_mut();
        error(
            shmbus_publisher_attach(bus.ptr(), null(), &mut second),
            ErrorCode::SHMBUS_E_ROLE_TAKEN,
        );
        let mut producer = null_mut();
        let st = shmbus_producer_create(stream.ptr(), &stream_opts(64), &mut producer);
        assert_eq!(st, Status::SHMBUS_OK, "{}", last_error());
        let mut again = null_mut();
        error(
            shmbus_producer_attach(stream.ptr(), null(), &mut again),
            ErrorCode::SHMBUS_E_ROLE_TAKEN,
        );
        let st = shmbus_consumer_open(stream.ptr(), null(), &mut c);
        assert_eq!(st, Status::SHMBUS_OK, "{}", last_error());
        let mut other = null_mut();
        error(
            shmbus_consumer_open(stream.ptr(), null(), &mut other),
            ErrorCode::SHMBUS_E_ROLE_TAKEN,
        );
        shmbus_consumer_close(c);
        shmbus_producer_close(producer);
        shmbus_publisher_close(p);
    }
}

#[test]
fn a_message_longer_than_the_bus_or_the_buffer_fails_with_the_too_long_code() {
    let bus = Bus::new("code-long");
    let stream = Bus::new("code-long-stream");
    let (mut p, mut s, mut producer) = (null_mut(), null_mut(), null_mut());
    // SAFETY: as above; every buffer is readable or writable for the
    // length given with it.
    unsafe {
        let st = shmbus_publisher_create(bus.ptr(), &bus_opts(8, 8), &mut p);
        assert_eq!(st, Status::SHMBUS_OK, "{}", last_error());
        let long = [0u8; 9];
        error(
            shmbus_publisher_publish(p, long.as_ptr().cast(), long.len(), null_mut()),
            ErrorCode::SHMBUS_E_TOO_LONG,
        );
        let st = shmbus_subscriber_open(bus.ptr(), &oldest(), &mut s);
        assert_eq!(st, Status::SHMBUS_OK, "{}", last_error());
        publish(p, b"12345678");
        let mut buf = [0u8; 4];
        let mut len = buf.len();
        let st = shmbus_subscriber_recv(s, buf.as_mut_ptr().cast(), &mut len, null_mut(), 0);
        failed(st, Status::SHMBUS_TOO_SMALL, ErrorCode::SHMBUS_E_TOO_LONG);

        let st = shmbus_producer_create(stream.ptr(), &stream_opts(64), &mut producer);
        assert_eq!(st, Status::SHMBUS_OK, "{}", last_error());
        let record = [0u8; 64];
        error(
            shmbus_producer_push(producer, record.as_ptr().cast(), record.len(), 0),
            ErrorCode::SHMBUS_E_TOO_LONG,
        );
        shmbus_producer_close(producer);
        shmbus_subscriber_close(s);
        shmbus_publisher_close(p);
    }
}

#[test]
fn null_pointers_bad_options_and_impossible_geometries_fail_with_the_invalid_argument_code() {
    let bus = Bus::new("code-argument");
    let mut p = null_mut();
    // SAFETY: every pointer is NULL or valid; the library refuses the NULL
    // ones and the bad values.
    unsafe {
        error(
            shmbus_publisher_create(null(), &bus_opts(8, 8), &mut p),
            ErrorCode::SHMBUS_E_INVALID_ARGUMENT,
        );
        error(
            shmbus_publisher_create(bus.ptr(), null(), &mut p),
            ErrorCode::SHMBUS_E_INVALID_ARGUMENT,
        );
        error(
            shmbus_publisher_create(c"caf\xe9".as_ptr(), &bus_opts(8, 8), &mut p),
            ErrorCode::SHMBUS_E_INVALID_ARGUMENT,
        );
        let mut flags = bus_opts(8, 8);
        flags.flags = 0x100;
        error(
            shmbus_publisher_create(bus.ptr(), &flags, &mut p),
            ErrorCode::SHMBUS_E_INVALID_ARGUMENT,
        );
        // Checked by the core, not by the C API: the same code.
        error(
            shmbus_publisher_create(bus.ptr(), &bus_opts(100, 8), &mut p),
            ErrorCode::SHMBUS_E_INVALID_ARGUMENT,
        );
        error(
            shmbus_publisher_publish(null_mut(), null(), 0, null_mut()),
            ErrorCode::SHMBUS_E_INVALID_ARGUMENT,
        );
    }
}

#[test]
fn an_unblock_timeout_on_a_single_publisher_bus_or_pool_fails_with_the_invalid_argument_code() {
    let bus = Bus::new("code-unblock");
    let exists = || std::path::Path::new("/dev/shm").join(&bus.name).exists();
    let mut plain = bus_opts(8, 8);
    plain.unblock_timeout_ns = 50_000_000;
    let mut pool = pool_opts(8, 64, 16);
    pool.unblock_timeout_ns = 50_000_000;
    let dir = TempDir::new("code-unblock");
    let journal = CString::new(dir.0.join("j.journal").to_str().unwrap()).unwrap();
    let jopts = JournalOpts {
        path: journal.as_ptr(),
        chunk_bytes: 64 << 10,
        preallocate_bytes: 0,
    };
    // SAFETY: valid C strings, options and out-parameters.
    unsafe {
        // A single publisher claims nothing to unblock: the timeout would
        // be ignored, so it is refused, naming the field, and nothing is
        // made.
        let mut p = null_mut();
        error(
            shmbus_publisher_create(bus.ptr(), &plain, &mut p),
            ErrorCode::SHMBUS_E_INVALID_ARGUMENT,
        );
        assert!(
            last_error().contains("unblock_timeout_ns is 50000000"),
            "{}",
            last_error()
        );
        assert!(
            last_error().contains("shmbus_many_publisher_create"),
            "{}",
            last_error()
        );
        let mut j = null_mut();
        error(
            shmbus_journal_publisher_create(bus.ptr(), &plain, &jopts, &mut j),
            ErrorCode::SHMBUS_E_INVALID_ARGUMENT,
        );
        assert!(
            last_error().contains("unblock_timeout_ns"),
            "{}",
            last_error()
        );
        let mut pp = null_mut();
        error(
            shmbus_pool_publisher_create(bus.ptr(), &pool, &mut pp),
            ErrorCode::SHMBUS_E_INVALID_ARGUMENT,
        );
        assert!(
            last_error().contains("shmbus_pool_publisher_create_many"),
            "{}",
            last_error()
        );
        assert!(!exists(), "a refused create made {}", bus.name);
        // The many-publisher creates take it.
        let mut m = null_mut();
        let st = shmbus_many_publisher_create(bus.ptr(), &plain, &mut m);
        assert_eq!(st, Status::SHMBUS_OK, "{}", last_error());
        shmbus_many_publisher_close(m);
        shmbus_remove(bus.ptr());
        let st = shmbus_pool_publisher_create_many(bus.ptr(), &pool, &mut pp);
        assert_eq!(st, Status::SHMBUS_OK, "{}", last_error());
        shmbus_pool_publisher_close(pp);
    }
}

#[test]
fn a_name_that_is_no_bus_name_fails_with_the_invalid_name_code() {
    let mut s = null_mut();
    // SAFETY: valid C strings and out-parameters.
    unsafe {
        error(
            shmbus_subscriber_open(c"".as_ptr(), null(), &mut s),
            ErrorCode::SHMBUS_E_INVALID_NAME,
        );
        error(
            shmbus_remove(c"..".as_ptr()),
            ErrorCode::SHMBUS_E_INVALID_NAME,
        );
    }
}

#[test]
fn a_segment_of_another_kind_fails_with_the_wrong_kind_code() {
    let stream = Bus::new("code-kind-stream");
    let pool = Bus::new("code-kind-pool");
    let journaled = Bus::new("code-kind-journaled");
    let dir = TempDir::new("code-kind");
    let path = CString::new(dir.0.join("k.journal").to_str().unwrap()).unwrap();
    let (mut producer, mut pp, mut jp) = (null_mut(), null_mut(), null_mut());
    // SAFETY: as above.
    unsafe {
        let st = shmbus_producer_create(stream.ptr(), &stream_opts(64), &mut producer);
        assert_eq!(st, Status::SHMBUS_OK, "{}", last_error());
        let mut s = null_mut();
        error(
            shmbus_subscriber_open(stream.ptr(), null(), &mut s),
            ErrorCode::SHMBUS_E_WRONG_KIND,
        );

        let st = shmbus_pool_publisher_create(pool.ptr(), &pool_opts(4, 64, 8), &mut pp);
        assert_eq!(st, Status::SHMBUS_OK, "{}", last_error());
        error(
            shmbus_subscriber_open(pool.ptr(), null(), &mut s),
            ErrorCode::SHMBUS_E_WRONG_KIND,
        );

        let j = JournalOpts {
            path: path.as_ptr(),
            chunk_bytes: 64 << 10,
            preallocate_bytes: 0,
        };
        let st = shmbus_journal_publisher_create(journaled.ptr(), &bus_opts(4, 8), &j, &mut jp);
        assert_eq!(st, Status::SHMBUS_OK, "{}", last_error());
        assert_eq!(shmbus_journal_publisher_close(jp), Status::SHMBUS_OK);
        // No live publisher: a plain one is refused for the journal's sake.
        let mut p = null_mut();
        error(
            shmbus_publisher_attach(journaled.ptr(), null(), &mut p),
            ErrorCode::SHMBUS_E_WRONG_KIND,
        );
        shmbus_pool_publisher_close(pp);
        shmbus_producer_close(producer);
    }
}

#[test]
fn a_bus_without_a_journal_fails_a_join_with_the_not_journaled_code() {
    let bus = Bus::new("code-unjournaled");
    let mut p = null_mut();
    // SAFETY: as above.
    unsafe {
        let st = shmbus_publisher_create(bus.ptr(), &bus_opts(8, 8), &mut p);
        assert_eq!(st, Status::SHMBUS_OK, "{}", last_error());
        let mut js = null_mut();
        error(
            shmbus_journal_subscriber_join(bus.ptr(), null(), &mut js),
            ErrorCode::SHMBUS_E_NOT_JOURNALED,
        );
        shmbus_publisher_close(p);
        let mut jp = null_mut();
        error(
            shmbus_journal_publisher_attach(bus.ptr(), null(), &mut jp),
            ErrorCode::SHMBUS_E_NOT_JOURNALED,
        );
    }
}

#[test]
fn a_journal_path_that_is_a_directory_fails_with_the_journal_code() {
    let bus = Bus::new("code-journal");
    let dir = TempDir::new("code-journal");
    let path = CString::new(dir.0.to_str().unwrap()).unwrap();
    let mut jp = null_mut();
    // SAFETY: as above.
    unsafe {
        let j = JournalOpts {
            path: path.as_ptr(),
            chunk_bytes: 0,
            preallocate_bytes: 0,
        };
        error(
            shmbus_journal_publisher_create(bus.ptr(), &bus_opts(4, 8), &j, &mut jp),
            ErrorCode::SHMBUS_E_JOURNAL,
        );
    }
}

#[test]
fn a_bus_whose_creator_never_finished_fails_with_the_timed_out_code() {
    let bus = Bus::new("code-unfinished");
    // What a creator that died before its header leaves: zeros (which
    // `shmbus_remove`, and so `Bus`, refuses to remove as no bus).
    let file = std::path::Path::new("/dev/shm").join(&bus.name);
    std::fs::write(&file, [0u8; 4096]).unwrap();
    let mut o = shmbus_open_options_default();
    o.init_timeout_ns = 5_000_000;
    let mut s = null_mut();
    // SAFETY: as above.
    unsafe {
        error(
            shmbus_subscriber_open(bus.ptr(), &o, &mut s),
            ErrorCode::SHMBUS_E_TIMED_OUT,
        );
    }
    std::fs::remove_file(&file).unwrap();
}

#[test]
fn an_exhausted_pool_fails_a_loan_with_the_pool_exhausted_code() {
    let bus = Bus::new("code-exhausted");
    let (mut p, mut s) = (null_mut(), null_mut());
    // SAFETY: as above; samples and loans are released once.
    unsafe {
        let st = shmbus_pool_publisher_create(bus.ptr(), &pool_opts(2, 64, 3), &mut p);
        assert_eq!(st, Status::SHMBUS_OK, "{}", last_error());
        let st = shmbus_pool_subscriber_open(bus.ptr(), &oldest(), &mut s);
        assert_eq!(st, Status::SHMBUS_OK, "{}", last_error());
        // Two blocks held, the third on the ring: none free.
        let mut held = Vec::new();
        for i in 0..2u8 {
            pool_publish(p, &[i]);
            let mut sample = null_mut();
            let st = shmbus_pool_subscriber_recv(s, &mut sample, null_mut(), 0);
            assert_eq!(st, Status::SHMBUS_MESSAGE, "{}", last_error());
            held.push(sample);
        }
        pool_publish(p, &[2]);
        let (mut loan, mut data) = (null_mut(), null_mut());
        let st = shmbus_pool_publisher_loan(p, 8, 0, &mut loan, &mut data);
        failed(st, Status::SHMBUS_FULL, ErrorCode::SHMBUS_E_POOL_EXHAUSTED);
        let st = shmbus_pool_publisher_loan(p, 8, 1_000_000, &mut loan, &mut data);
        failed(
            st,
            Status::SHMBUS_TIMED_OUT,
            ErrorCode::SHMBUS_E_POOL_EXHAUSTED,
        );
        for sample in held {
            shmbus_sample_release(sample);
        }
        shmbus_pool_subscriber_close(s);
        shmbus_pool_publisher_close(p);
    }
}

#[test]
fn the_code_is_none_before_any_failure_and_stays_through_calls_that_succeed() {
    std::thread::spawn(|| {
        assert_eq!(shmbus_error_code(), ErrorCode::SHMBUS_E_NONE);
        let bus = Bus::new("code-stays");
        let mut p = null_mut();
        // SAFETY: as above.
        unsafe {
            error(shmbus_remove(bus.ptr()), ErrorCode::SHMBUS_E_NOT_FOUND);
            let st = shmbus_publisher_create(bus.ptr(), &bus_opts(8, 8), &mut p);
            assert_eq!(st, Status::SHMBUS_OK, "{}", last_error());
            publish(p, b"x");
            assert_eq!(shmbus_error_code(), ErrorCode::SHMBUS_E_NOT_FOUND);
            shmbus_publisher_close(p);
        }
    })
    .join()
    .unwrap();
}

#[test]
fn a_panic_inside_fails_with_the_other_code() {
    let st = run_as_entry_point(|| panic!("the panic of this test"));
    error(st, ErrorCode::SHMBUS_E_OTHER);
}

#[test]
fn every_code_has_its_name_and_an_unknown_one_says_so() {
    for code in ErrorCode::ALL {
        let name = format!("{code:?}");
        let c = shmbus_error_code_name(code as c_int);
        // SAFETY: a static NUL-terminated string.
        assert_eq!(unsafe { CStr::from_ptr(c) }.to_str().unwrap(), name);
    }
    // Every value from 0 to the last, each once, in order.
    for (i, code) in ErrorCode::ALL.iter().enumerate() {
        assert_eq!(*code as usize, i, "{code:?}");
    }
    let unknown = shmbus_error_code_name(99);
    // SAFETY: as above.
    let unknown = unsafe { CStr::from_ptr(unknown) };
    assert_eq!(unknown, c"unknown error code");
    let negative = shmbus_error_code_name(-1);
    // SAFETY: as above.
    assert_eq!(unsafe { CStr::from_ptr(negative) }, c"unknown error code");
}

#[test]
fn every_core_kind_has_a_code_of_its_own() {
    let codes: std::collections::HashSet<ErrorCode> = shmbus_core::ErrorKind::ALL
        .iter()
        .map(|&k| ErrorCode::from(k))
        .collect();
    assert_eq!(codes.len(), shmbus_core::ErrorKind::ALL.len());
    assert!(!codes.contains(&ErrorCode::SHMBUS_E_NONE));
}
