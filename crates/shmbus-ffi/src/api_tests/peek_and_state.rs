//! The calls that close the bindings' last gaps, as C calls them: a stream
//! record peeked in place (`shmbus_consumer_peek` / `_release`) and the
//! keyed state of a journaled bus (`shmbus_state_*`).

use std::ffi::CString;
use std::ptr::{null, null_mut};

use super::{bus_opts, last_error};
use crate::error_code::*;
use crate::journal::*;
use crate::last_error::*;
use crate::state::*;
use crate::status::*;
use crate::stream::*;
use common::{Bus, TempDir};

use super::common;

/// Asserts that the last call returned `SHMBUS_ERROR` and left `code`.
#[track_caller]
fn refused(status: Status, code: ErrorCode) {
    assert_eq!(status, Status::SHMBUS_ERROR, "{}", last_error());
    assert_eq!(shmbus_error_code(), code, "{}", last_error());
}

/// A stream of `capacity` bytes: (producer, consumer).
fn stream(bus: &Bus, capacity: u64) -> (*mut ShmbusProducer, *mut ShmbusConsumer) {
    let mut p = null_mut();
    let mut c = null_mut();
    let mut o = shmbus_stream_options_default();
    o.capacity = capacity;
    // SAFETY: a live name, options and out-parameters.
    unsafe {
        assert_eq!(
            shmbus_producer_create(bus.ptr(), &o, &mut p),
            Status::SHMBUS_OK,
            "{}",
            last_error()
        );
        assert_eq!(
            shmbus_consumer_open(bus.ptr(), null(), &mut c),
            Status::SHMBUS_OK,
            "{}",
            last_error()
        );
    }
    (p, c)
}

fn push(p: *mut ShmbusProducer, record: &[u8]) {
    // SAFETY: a live producer; `record` readable for its length.
    let st = unsafe { shmbus_producer_push(p, record.as_ptr().cast(), record.len(), 0) };
    assert_eq!(st, Status::SHMBUS_OK, "{}", last_error());
}

/// Peeks without waiting: (status, the record's bytes copied out).
fn peek(c: *mut ShmbusConsumer) -> (Status, Vec<u8>) {
    let mut data = null();
    let mut len = usize::MAX;
    // SAFETY: a live consumer and out-parameters.
    let st = unsafe { shmbus_consumer_peek(c, 0, &mut data, &mut len) };
    if st != Status::SHMBUS_MESSAGE {
        return (st, Vec::new());
    }
    // SAFETY: on SHMBUS_MESSAGE, `data` points to `len` readable bytes
    // until the release.
    let bytes = unsafe { std::slice::from_raw_parts(data, len) };
    (st, bytes.to_vec())
}

#[test]
fn a_peeked_record_is_read_in_place_until_released_and_a_second_peek_or_pop_is_refused() {
    let bus = Bus::new("peek");
    let (p, c) = stream(&bus, 256);
    assert_eq!(peek(c).0, Status::SHMBUS_EMPTY);
    // Records across several laps of the 256-byte ring, wrap markers too.
    for i in 0..200u32 {
        let record = vec![i as u8; (i % 61) as usize];
        push(p, &record);
        let mut data = null();
        let mut len = 0;
        // SAFETY: a live consumer and out-parameters.
        let st = unsafe { shmbus_consumer_peek(c, 1_000_000_000, &mut data, &mut len) };
        assert_eq!(st, Status::SHMBUS_MESSAGE, "{}", last_error());
        // SAFETY: valid until the release, below.
        let peeked = unsafe { std::slice::from_raw_parts(data, len) };
        assert_eq!(peeked, &record[..]);
        if i == 0 {
            let (again, _) = peek(c);
            refused(again, ErrorCode::SHMBUS_E_INVALID_ARGUMENT);
            assert!(last_error().contains("release it"), "{}", last_error());
            let mut buf = [0u8; 64];
            let mut n = buf.len();
            // SAFETY: a live consumer; `buf` holds `n` writable bytes.
            let popped = unsafe { shmbus_consumer_pop(c, buf.as_mut_ptr().cast(), &mut n, 0) };
            refused(popped, ErrorCode::SHMBUS_E_INVALID_ARGUMENT);
            let mut max = 0;
            // SAFETY: a live consumer and out-parameter.
            let st = unsafe { shmbus_consumer_max_record(c, &mut max) };
            assert_eq!(st, Status::SHMBUS_OK);
            assert_eq!(max, 256 / 2 - 8);
            // The refusals left the record and its pointer as they were.
            // SAFETY: still valid: not released yet.
            let still = unsafe { std::slice::from_raw_parts(data, len) };
            assert_eq!(still, &record[..]);
        }
        // SAFETY: a live consumer.
        let released = unsafe { shmbus_consumer_release(c) };
        assert_eq!(released, Status::SHMBUS_OK, "{}", last_error());
    }
    assert_eq!(peek(c).0, Status::SHMBUS_EMPTY);
    // SAFETY: live handles, not used again.
    unsafe {
        shmbus_consumer_close(c);
        shmbus_producer_close(p);
    }
}

#[test]
fn a_release_without_a_peek_is_refused_and_a_record_peeked_by_a_closed_consumer_goes_to_the_next() {
    let bus = Bus::new("release");
    let (p, c) = stream(&bus, 4096);
    // SAFETY: a live consumer; then NULLs, which are refused, not UB.
    unsafe {
        refused(
            shmbus_consumer_release(c),
            ErrorCode::SHMBUS_E_INVALID_ARGUMENT,
        );
        assert!(
            last_error().contains("nothing to release"),
            "{}",
            last_error()
        );
        refused(
            shmbus_consumer_release(null_mut()),
            ErrorCode::SHMBUS_E_INVALID_ARGUMENT,
        );
        let mut len = 0;
        refused(
            shmbus_consumer_peek(c, 0, null_mut(), &mut len),
            ErrorCode::SHMBUS_E_INVALID_ARGUMENT,
        );
    }
    push(p, b"kept");
    push(p, b"after");
    assert_eq!(peek(c), (Status::SHMBUS_MESSAGE, b"kept".to_vec()));
    // SAFETY: live, not used again; the record was peeked, not released.
    unsafe { shmbus_consumer_close(c) };
    let mut next = null_mut();
    // SAFETY: a live name and out-parameter.
    let st = unsafe { shmbus_consumer_open(bus.ptr(), null(), &mut next) };
    assert_eq!(st, Status::SHMBUS_OK, "{}", last_error());
    assert_eq!(peek(next), (Status::SHMBUS_MESSAGE, b"kept".to_vec()));
    // SAFETY: a live consumer with a record peeked.
    assert_eq!(unsafe { shmbus_consumer_release(next) }, Status::SHMBUS_OK);
    assert_eq!(peek(next), (Status::SHMBUS_MESSAGE, b"after".to_vec()));
    // SAFETY: live handles, not used again (the peeked record is freed with
    // the consumer).
    unsafe {
        shmbus_consumer_close(next);
        shmbus_producer_close(p);
    }
}

/// A raw message of 16 bytes: `key` (8 bytes, little-endian), then `val`.
fn kv(key: u64, val: u64) -> [u8; 16] {
    let mut m = [0u8; 16];
    m[..8].copy_from_slice(&key.to_le_bytes());
    m[8..].copy_from_slice(&val.to_le_bytes());
    m
}

#[test]
fn a_state_joined_through_the_c_api_folds_raw_messages_into_the_last_value_of_each_first_8_bytes() {
    let bus = Bus::new("state");
    let dir = TempDir::new("state");
    let path = CString::new(dir.0.join("j.journal").to_str().unwrap()).unwrap();
    let mut p = null_mut();
    let mut s = null_mut();
    // SAFETY: live names, options, buffers and out-parameters throughout.
    unsafe {
        let j = JournalOpts {
            path: path.as_ptr(),
            chunk_bytes: 64 << 10,
            preallocate_bytes: 0,
        };
        assert_eq!(
            shmbus_journal_publisher_create(bus.ptr(), &bus_opts(4, 16), &j, &mut p),
            Status::SHMBUS_OK,
            "{}",
            last_error()
        );
        let mut last = 0;
        // 30 updates of 3 keys into 4 slots: the journal has them all.
        for i in 0..30u64 {
            let m = kv(i % 3 + 10, i);
            let st = shmbus_journal_publisher_publish(p, m.as_ptr().cast(), 16, &mut last);
            assert_eq!(st, Status::SHMBUS_OK, "{}", last_error());
        }
        assert_eq!(
            shmbus_state_join(bus.ptr(), null(), &mut s),
            Status::SHMBUS_OK,
            "{}",
            last_error()
        );
        let mut seq = u64::MAX;
        assert_eq!(shmbus_state_last_seq(s, &mut seq), Status::SHMBUS_EMPTY);
        assert_eq!(seq, u64::MAX);
        assert_eq!(
            shmbus_state_wait_for(s, last, 5_000_000_000),
            Status::SHMBUS_OK,
            "{}",
            last_error()
        );
        assert_eq!(shmbus_state_last_seq(s, &mut seq), Status::SHMBUS_OK);
        assert_eq!(seq, 29);
        assert_eq!(shmbus_state_wait_for(s, 30, 0), Status::SHMBUS_EMPTY);
        assert_eq!(
            shmbus_state_wait_for(s, 30, 1_000_000),
            Status::SHMBUS_TIMED_OUT
        );
        let mut n = 0;
        assert_eq!(shmbus_state_len(s, &mut n), Status::SHMBUS_OK);
        assert_eq!(n, 3);
        let mut size = 0;
        assert_eq!(shmbus_state_msg_size(s, &mut size), Status::SHMBUS_OK);
        assert_eq!(size, 16);
        let mut keys = [0u64; 3];
        let mut count = 2;
        assert_eq!(
            shmbus_state_keys(s, keys.as_mut_ptr(), &mut count),
            Status::SHMBUS_TOO_SMALL
        );
        assert_eq!(shmbus_error_code(), ErrorCode::SHMBUS_E_TOO_LONG);
        assert_eq!(count, 3);
        assert_eq!(
            shmbus_state_keys(s, keys.as_mut_ptr(), &mut count),
            Status::SHMBUS_OK
        );
        assert_eq!(keys, [10, 11, 12]);
        for (key, val) in [(10, 27), (11, 28), (12, 29)] {
            let mut buf = [0u8; 16];
            let mut len = buf.len();
            assert_eq!(
                shmbus_state_get(s, key, buf.as_mut_ptr().cast(), &mut len),
                Status::SHMBUS_OK
            );
            assert_eq!((len, buf), (16, kv(key, val)));
        }
        let mut buf = [0u8; 8];
        let mut len = buf.len();
        assert_eq!(
            shmbus_state_get(s, 10, buf.as_mut_ptr().cast(), &mut len),
            Status::SHMBUS_TOO_SMALL
        );
        assert_eq!(len, 16);
        let mut len = buf.len();
        assert_eq!(
            shmbus_state_get(s, 99, buf.as_mut_ptr().cast(), &mut len),
            Status::SHMBUS_EMPTY
        );
        // Live updates come in by poll.
        let m = kv(99, 1);
        assert_eq!(
            shmbus_journal_publisher_publish(p, m.as_ptr().cast(), 16, null_mut()),
            Status::SHMBUS_OK
        );
        let mut folded = 0;
        assert_eq!(
            shmbus_state_poll(s, &mut folded),
            Status::SHMBUS_OK,
            "{}",
            last_error()
        );
        assert_eq!(folded, 1);
        let mut big = [0u8; 16];
        let mut len = big.len();
        assert_eq!(
            shmbus_state_get(s, 99, big.as_mut_ptr().cast(), &mut len),
            Status::SHMBUS_OK
        );
        assert_eq!(big, m);
        let mut rejoins = u64::MAX;
        assert_eq!(shmbus_state_rejoins(s, &mut rejoins), Status::SHMBUS_OK);
        assert_eq!(rejoins, 0);
        refused(
            shmbus_state_poll(null_mut(), null_mut()),
            ErrorCode::SHMBUS_E_INVALID_ARGUMENT,
        );
        refused(
            shmbus_state_get(s, 10, buf.as_mut_ptr().cast(), null_mut()),
            ErrorCode::SHMBUS_E_INVALID_ARGUMENT,
        );
        shmbus_state_close(s);
        assert_eq!(shmbus_journal_publisher_close(p), Status::SHMBUS_OK);
        // A bus without a journal has no state.
        let plain = Bus::new("state-plain");
        let mut pp = null_mut();
        assert_eq!(
            crate::bus::shmbus_publisher_create(plain.ptr(), &bus_opts(4, 16), &mut pp),
            Status::SHMBUS_OK
        );
        let mut none = null_mut();
        refused(
            shmbus_state_join(plain.ptr(), null(), &mut none),
            ErrorCode::SHMBUS_E_NOT_JOURNALED,
        );
        assert!(none.is_null());
        crate::bus::shmbus_publisher_close(pp);
    }
}
