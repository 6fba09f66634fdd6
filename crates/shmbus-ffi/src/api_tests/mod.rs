//! The C API called as C calls it: through the extern "C" functions, with
//! raw pointers, out-parameters and statuses.

// The examples test's helpers (unique bus names removed again, journal
// directories): one file for both test crates.
mod blackboard;
mod blackboard_entry;
#[path = "../../tests/common/mod.rs"]
mod common;
mod error_codes;
mod lossless;
mod peek_and_state;
mod reqrep;

use std::ffi::{CStr, c_void};
use std::ptr::{null, null_mut};
use std::time::{Duration, Instant};

use crate::bus::*;
use crate::error_code::*;
use crate::journal::*;
use crate::last_error::*;
use crate::options::*;
use crate::pool::*;
use crate::remove::*;
use crate::status::*;
use crate::stream::*;
use crate::version::*;
use crate::*;
use common::{Bus, TempDir};

/// This thread's last error message.
fn last_error() -> String {
    // SAFETY: shmbus_error_message never returns NULL, and the string is
    // valid until the next call on this thread; it is copied at once.
    unsafe { CStr::from_ptr(shmbus_error_message()) }
        .to_string_lossy()
        .into_owned()
}

fn bus_opts(capacity: u64, msg_size: u32) -> BusOpts {
    let mut o = shmbus_bus_options_default();
    o.capacity = capacity;
    o.msg_size = msg_size;
    o
}

fn oldest() -> OpenOpts {
    let mut o = shmbus_open_options_default();
    o.start = SHMBUS_START_OLDEST;
    o
}

fn publish(p: *mut ShmbusPublisher, msg: &[u8]) -> u64 {
    let mut seq = u64::MAX;
    // SAFETY: `p` is a live publisher; `msg` is readable for its length.
    let st = unsafe { shmbus_publisher_publish(p, msg.as_ptr().cast(), msg.len(), &mut seq) };
    assert_eq!(st, Status::SHMBUS_OK, "{}", last_error());
    seq
}

/// Receives into a buffer of `cap` bytes: (status, bytes, skipped).
fn recv(s: *mut ShmbusSubscriber, cap: usize, timeout_ns: i64) -> (Status, Vec<u8>, u64) {
    let mut buf = vec![0u8; cap];
    let mut len = cap;
    let mut skipped = 0;
    // SAFETY: `s` is a live subscriber; `buf` holds `len` writable bytes.
    let st = unsafe {
        shmbus_subscriber_recv(
            s,
            buf.as_mut_ptr().cast(),
            &mut len,
            &mut skipped,
            timeout_ns,
        )
    };
    buf.truncate(len.min(cap));
    (st, buf, skipped)
}

#[test]
fn a_message_published_through_the_c_api_arrives_whole_and_zero_padded() {
    let bus = Bus::new("roundtrip");
    let mut p = null_mut();
    let mut s = null_mut();
    // SAFETY: valid C strings, options and out-parameters; the handles are
    // used while live and closed once.
    unsafe {
        assert_eq!(
            shmbus_publisher_create(bus.ptr(), &bus_opts(16, 8), &mut p),
            Status::SHMBUS_OK,
            "{}",
            last_error()
        );
        assert_eq!(
            shmbus_subscriber_open(bus.ptr(), &oldest(), &mut s),
            Status::SHMBUS_OK
        );
        assert_eq!(publish(p, b"abc"), 0);
        assert_eq!(publish(p, b"12345678"), 1);
        let (st, msg, _) = recv(s, 64, 0);
        assert_eq!(
            (st, msg.as_slice()),
            (Status::SHMBUS_MESSAGE, &b"abc\0\0\0\0\0"[..])
        );
        let (st, msg, _) = recv(s, 8, -1);
        assert_eq!(
            (st, msg.as_slice()),
            (Status::SHMBUS_MESSAGE, &b"12345678"[..])
        );
        let mut pos = 0;
        assert_eq!(shmbus_subscriber_position(s, &mut pos), Status::SHMBUS_OK);
        assert_eq!(pos, 2);
        let mut next = 0;
        assert_eq!(
            shmbus_publisher_next_sequence(p, &mut next),
            Status::SHMBUS_OK
        );
        assert_eq!(next, 2);
        let mut buf = [0u8; 8];
        let mut len = buf.len();
        assert_eq!(
            shmbus_subscriber_latest(s, buf.as_mut_ptr().cast(), &mut len),
            Status::SHMBUS_MESSAGE
        );
        assert_eq!(&buf, b"12345678");
        shmbus_subscriber_close(s);
        shmbus_publisher_close(p);
    }
}

#[test]
fn a_lagged_subscriber_reports_the_exact_skipped_count() {
    let bus = Bus::new("lag");
    let mut p = null_mut();
    let mut s = null_mut();
    // SAFETY: as in the first test.
    unsafe {
        assert_eq!(
            shmbus_publisher_create(bus.ptr(), &bus_opts(4, 8), &mut p),
            Status::SHMBUS_OK
        );
        assert_eq!(
            shmbus_subscriber_open(bus.ptr(), null(), &mut s),
            Status::SHMBUS_OK
        );
        for i in 0..10u64 {
            publish(p, &i.to_le_bytes());
        }
        let mut delivered = 0;
        let mut skipped_total = 0;
        loop {
            match recv(s, 8, 0) {
                (Status::SHMBUS_LAGGED, _, n) => skipped_total += n,
                (Status::SHMBUS_MESSAGE, m, _) => {
                    // What is delivered after the lag is the newest, in order.
                    let v = u64::from_le_bytes(m.try_into().unwrap());
                    assert_eq!(v, skipped_total + delivered);
                    delivered += 1;
                }
                (Status::SHMBUS_EMPTY, _, _) => break,
                (other, _, _) => panic!("{other:?}: {}", last_error()),
            }
        }
        assert!(skipped_total > 0, "a 4-slot ring lapped by 10 messages");
        assert_eq!(delivered + skipped_total, 10);
        shmbus_subscriber_close(s);
        shmbus_publisher_close(p);
    }
}

#[test]
fn a_buffer_shorter_than_the_message_is_too_small_and_loses_nothing() {
    let bus = Bus::new("small");
    let mut p = null_mut();
    let mut s = null_mut();
    // SAFETY: as in the first test.
    unsafe {
        assert_eq!(
            shmbus_publisher_create(bus.ptr(), &bus_opts(8, 16), &mut p),
            Status::SHMBUS_OK
        );
        assert_eq!(
            shmbus_subscriber_open(bus.ptr(), &oldest(), &mut s),
            Status::SHMBUS_OK
        );
        publish(p, b"sixteen bytes!!!");
        let mut buf = [0u8; 4];
        let mut len = buf.len();
        let st = shmbus_subscriber_recv(s, buf.as_mut_ptr().cast(), &mut len, null_mut(), 0);
        assert_eq!(st, Status::SHMBUS_TOO_SMALL);
        assert_eq!(len, 16, "the length needed");
        assert!(last_error().contains("holds 4 bytes"), "{}", last_error());
        // A NULL buffer of length 0 asks for the length.
        let mut len = 0;
        let st = shmbus_subscriber_recv(s, null_mut(), &mut len, null_mut(), 0);
        assert_eq!((st, len), (Status::SHMBUS_TOO_SMALL, 16));
        let (st, msg, _) = recv(s, 16, 0);
        assert_eq!(
            (st, msg.as_slice()),
            (Status::SHMBUS_MESSAGE, &b"sixteen bytes!!!"[..])
        );
        shmbus_subscriber_close(s);
        shmbus_publisher_close(p);
    }
}

#[test]
fn a_borrowed_message_points_at_the_subscribers_copy_until_the_next_call() {
    let bus = Bus::new("borrow");
    let mut p = null_mut();
    let mut s = null_mut();
    // SAFETY: as in the first test; the borrowed bytes are read before the
    // next call on the subscriber.
    unsafe {
        assert_eq!(
            shmbus_publisher_create(bus.ptr(), &bus_opts(8, 4), &mut p),
            Status::SHMBUS_OK
        );
        assert_eq!(
            shmbus_subscriber_open(bus.ptr(), &oldest(), &mut s),
            Status::SHMBUS_OK
        );
        publish(p, b"one");
        publish(p, b"two");
        for want in [b"one\0", b"two\0"] {
            let mut data: *const c_void = null();
            let mut len = 0;
            let st = shmbus_subscriber_recv_borrow(s, &mut data, &mut len, null_mut(), 0);
            assert_eq!(st, Status::SHMBUS_MESSAGE);
            assert_eq!(std::slice::from_raw_parts(data.cast::<u8>(), len), want);
        }
        let mut data: *const c_void = null();
        let mut len = 0;
        assert_eq!(
            shmbus_subscriber_recv_borrow(s, &mut data, &mut len, null_mut(), 0),
            Status::SHMBUS_EMPTY
        );
        shmbus_subscriber_close(s);
        shmbus_publisher_close(p);
    }
}

#[test]
fn a_zero_timeout_is_empty_and_a_positive_one_times_out_after_waiting() {
    let bus = Bus::new("timeout");
    let mut p = null_mut();
    let mut s = null_mut();
    // SAFETY: as in the first test.
    unsafe {
        assert_eq!(
            shmbus_publisher_create(bus.ptr(), &bus_opts(8, 8), &mut p),
            Status::SHMBUS_OK
        );
        assert_eq!(
            shmbus_subscriber_open(bus.ptr(), null(), &mut s),
            Status::SHMBUS_OK
        );
        assert_eq!(recv(s, 8, 0).0, Status::SHMBUS_EMPTY);
        let t = Instant::now();
        assert_eq!(recv(s, 8, 20_000_000).0, Status::SHMBUS_TIMED_OUT);
        assert!(t.elapsed() >= Duration::from_millis(20));
        shmbus_subscriber_close(s);
        shmbus_publisher_close(p);
    }
}

#[test]
fn null_pointers_and_bad_arguments_are_errors_with_a_message() {
    let bus = Bus::new("bad");
    // Garbage: every failure below must make it NULL.
    let mut p: *mut ShmbusPublisher = std::ptr::dangling_mut();
    // SAFETY: every pointer is NULL or valid; the library must refuse the
    // NULL ones and the bad values without touching anything.
    unsafe {
        assert_eq!(
            shmbus_publisher_create(null(), &bus_opts(8, 8), &mut p),
            Status::SHMBUS_ERROR
        );
        assert!(p.is_null(), "the out-parameter is NULL on failure");
        assert!(last_error().contains("name is NULL"), "{}", last_error());

        assert_eq!(
            shmbus_publisher_create(bus.ptr(), null(), &mut p),
            Status::SHMBUS_ERROR
        );
        assert!(last_error().contains("NULL"), "{}", last_error());
        assert_eq!(
            shmbus_publisher_create(bus.ptr(), &bus_opts(8, 8), null_mut()),
            Status::SHMBUS_ERROR
        );
        assert!(last_error().contains("out-parameter"), "{}", last_error());

        let not_utf8 = c"caf\xe9";
        assert_eq!(
            shmbus_publisher_create(not_utf8.as_ptr(), &bus_opts(8, 8), &mut p),
            Status::SHMBUS_ERROR
        );
        assert!(last_error().contains("not valid UTF-8"), "{}", last_error());

        assert_eq!(
            shmbus_publisher_create(bus.ptr(), &bus_opts(0, 8), &mut p),
            Status::SHMBUS_ERROR
        );
        assert!(last_error().contains("capacity is 0"), "{}", last_error());
        assert_eq!(
            shmbus_publisher_create(bus.ptr(), &bus_opts(8, 0), &mut p),
            Status::SHMBUS_ERROR
        );
        assert!(last_error().contains("msg_size is 0"), "{}", last_error());
        let mut flags = bus_opts(8, 8);
        flags.flags = 0x100;
        assert_eq!(
            shmbus_publisher_create(bus.ptr(), &flags, &mut p),
            Status::SHMBUS_ERROR
        );
        assert!(
            last_error().contains("unknown flag bits 0x100"),
            "{}",
            last_error()
        );
        let mut pool = bus_opts(8, 8);
        pool.pool_blocks = 16;
        assert_eq!(
            shmbus_publisher_create(bus.ptr(), &pool, &mut p),
            Status::SHMBUS_ERROR
        );
        assert!(
            last_error().contains("shmbus_pool_publisher_create"),
            "{}",
            last_error()
        );
        assert!(p.is_null());

        // Nothing was created by any of them.
        assert!(!std::path::Path::new("/dev/shm").join(&bus.name).exists());

        assert_eq!(
            shmbus_publisher_create(bus.ptr(), &bus_opts(8, 8), &mut p),
            Status::SHMBUS_OK
        );
        let mut s = null_mut();
        let mut bad_start = shmbus_open_options_default();
        bad_start.start = 7;
        assert_eq!(
            shmbus_subscriber_open(bus.ptr(), &bad_start, &mut s),
            Status::SHMBUS_ERROR
        );
        assert!(last_error().contains("start is 7"), "{}", last_error());
        let mut bad_wait = shmbus_open_options_default();
        bad_wait.wait = 9;
        assert_eq!(
            shmbus_subscriber_open(bus.ptr(), &bad_wait, &mut s),
            Status::SHMBUS_ERROR
        );
        assert!(last_error().contains("wait is 9"), "{}", last_error());

        assert_eq!(
            shmbus_publisher_publish(null_mut(), null(), 0, null_mut()),
            Status::SHMBUS_ERROR
        );
        assert!(
            last_error().contains("publisher is NULL"),
            "{}",
            last_error()
        );
        assert_eq!(
            shmbus_publisher_publish(p, null(), 3, null_mut()),
            Status::SHMBUS_ERROR
        );
        assert!(
            last_error().contains("data is NULL with length 3"),
            "{}",
            last_error()
        );
        assert_eq!(
            shmbus_publisher_publish(p, null(), 0, null_mut()),
            Status::SHMBUS_OK
        );
        assert_eq!(
            shmbus_subscriber_recv(null_mut(), null_mut(), null_mut(), null_mut(), 0),
            Status::SHMBUS_ERROR
        );
        shmbus_publisher_close(p);
    }
}

#[test]
fn errors_name_what_was_found_and_what_was_expected() {
    let bus = Bus::new("errors");
    let mut p = null_mut();
    let mut s = null_mut();
    // SAFETY: as in the first test.
    unsafe {
        assert_eq!(
            shmbus_subscriber_open(bus.ptr(), null(), &mut s),
            Status::SHMBUS_ERROR
        );
        assert!(s.is_null());
        assert!(
            last_error().contains(&bus.name),
            "names the bus: {}",
            last_error()
        );

        assert_eq!(
            shmbus_publisher_create(bus.ptr(), &bus_opts(8, 32), &mut p),
            Status::SHMBUS_OK
        );
        let long = [b'x'; 40];
        let st = shmbus_publisher_publish(p, long.as_ptr().cast(), long.len(), null_mut());
        assert_eq!(st, Status::SHMBUS_ERROR);
        assert_eq!(
            last_error(),
            "message is 40 bytes, the bus carries at most 32"
        );

        // A second publisher while this one lives.
        let mut second = null_mut();
        assert_eq!(
            shmbus_publisher_attach(bus.ptr(), null(), &mut second),
            Status::SHMBUS_ERROR
        );
        assert!(last_error().contains("live publisher"), "{}", last_error());
        // A stream consumer on a bus.
        let mut c = null_mut();
        assert_eq!(
            shmbus_consumer_open(bus.ptr(), null(), &mut c),
            Status::SHMBUS_ERROR
        );
        assert!(!last_error().is_empty());
        shmbus_publisher_close(p);
    }
}

#[test]
fn a_panic_inside_becomes_an_error_with_its_message() {
    let st = run_as_entry_point(|| panic!("the panic of this test"));
    assert_eq!(st, Status::SHMBUS_ERROR);
    assert!(
        last_error().contains("the panic of this test"),
        "{}",
        last_error()
    );
}

#[test]
fn every_close_accepts_null() {
    // SAFETY: NULL is what is being passed, which every close accepts.
    unsafe {
        shmbus_publisher_close(null_mut());
        shmbus_subscriber_close(null_mut());
        shmbus_many_publisher_close(null_mut());
        shmbus_producer_close(null_mut());
        shmbus_consumer_close(null_mut());
        assert_eq!(
            shmbus_journal_publisher_close(null_mut()),
            Status::SHMBUS_OK
        );
        shmbus_journal_subscriber_close(null_mut());
        shmbus_pool_publisher_close(null_mut());
        shmbus_pool_subscriber_close(null_mut());
        shmbus_loan_discard(null_mut());
        shmbus_sample_release(null_mut());
    }
}

#[test]
fn status_names_and_the_version_are_static_strings() {
    // SAFETY: both return static NUL-terminated strings.
    unsafe {
        assert_eq!(CStr::from_ptr(shmbus_status_name(2)), c"SHMBUS_LAGGED");
        assert_eq!(CStr::from_ptr(shmbus_status_name(-1)), c"SHMBUS_ERROR");
        assert_eq!(CStr::from_ptr(shmbus_status_name(9)), c"SHMBUS_REFUSED");
        assert_eq!(CStr::from_ptr(shmbus_status_name(10)), c"SHMBUS_NO_SERVER");
        assert_eq!(CStr::from_ptr(shmbus_status_name(42)), c"unknown status");
        assert_eq!(
            CStr::from_ptr(shmbus_version()).to_str().unwrap(),
            env!("CARGO_PKG_VERSION")
        );
    }
}

#[test]
fn many_publishers_share_one_bus_in_one_order() {
    let bus = Bus::new("many");
    let mut a = null_mut();
    let mut b = null_mut();
    let mut s = null_mut();
    // SAFETY: as in the first test.
    unsafe {
        assert_eq!(
            shmbus_many_publisher_create(bus.ptr(), &bus_opts(16, 8), &mut a),
            Status::SHMBUS_OK
        );
        assert_eq!(
            shmbus_many_publisher_attach(bus.ptr(), null(), &mut b),
            Status::SHMBUS_OK
        );
        assert_eq!(
            shmbus_subscriber_open(bus.ptr(), &oldest(), &mut s),
            Status::SHMBUS_OK
        );
        let mut size = 0;
        assert_eq!(
            shmbus_many_publisher_msg_size(b, &mut size),
            Status::SHMBUS_OK
        );
        assert_eq!(size, 8);
        let mut seqs = Vec::new();
        for (p, m) in [(a, &b"from a"[..]), (b, b"from b"), (a, b"again a")] {
            let mut seq = 0;
            assert_eq!(
                shmbus_many_publisher_publish(p, m.as_ptr().cast(), m.len(), &mut seq),
                Status::SHMBUS_OK
            );
            seqs.push(seq);
        }
        assert_eq!(seqs, [0, 1, 2]);
        for want in [&b"from a\0\0"[..], b"from b\0\0", b"again a\0"] {
            let (st, m, _) = recv(s, 8, 0);
            assert_eq!((st, m.as_slice()), (Status::SHMBUS_MESSAGE, want));
        }
        let long = [0u8; 9];
        assert_eq!(
            shmbus_many_publisher_publish(a, long.as_ptr().cast(), 9, null_mut()),
            Status::SHMBUS_ERROR
        );
        shmbus_subscriber_close(s);
        shmbus_many_publisher_close(a);
        shmbus_many_publisher_close(b);
    }
}

#[test]
fn a_c_stream_records_the_record_type_it_names_and_a_typed_rust_consumer_reads_it() {
    let bus = Bus::new("cnamedstream");
    let mut p = null_mut();
    // SAFETY: as in the first test; the type name is a C string literal.
    unsafe {
        let mut o = shmbus_stream_options_default();
        o.capacity = 4096;
        o.type_align = 8;
        assert_eq!(
            shmbus_producer_create(bus.ptr(), &o, &mut p),
            Status::SHMBUS_ERROR,
            "an alignment without a type"
        );
        assert_eq!(shmbus_error_code(), ErrorCode::SHMBUS_E_INVALID_ARGUMENT);
        o.type_name = c"u64".as_ptr();
        assert_eq!(
            shmbus_producer_create(bus.ptr(), &o, &mut p),
            Status::SHMBUS_OK,
            "{}",
            last_error()
        );
        let open = shmbus_core::OpenOptions::default();
        let mut rust = shmbus_core::stream::Consumer::<u64>::attach(&bus.name, &open)
            .expect("the type C named opens typed");
        let record = 0x0a0b_0c0du64.to_ne_bytes();
        assert_eq!(
            shmbus_producer_push(p, record.as_ptr().cast(), record.len(), 0),
            Status::SHMBUS_OK
        );
        assert_eq!(rust.pop(shmbus_core::Wait::Never), Ok(0x0a0b_0c0d));
        shmbus_producer_close(p);
    }
}

#[test]
fn a_stream_record_longer_than_the_buffer_stays_until_a_buffer_fits_it() {
    let bus = Bus::new("stream");
    let mut p = null_mut();
    let mut c = null_mut();
    // SAFETY: as in the first test.
    unsafe {
        let mut o = shmbus_stream_options_default();
        o.capacity = 4096;
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
        let record = [7u8; 100];
        assert_eq!(
            shmbus_producer_push(p, record.as_ptr().cast(), 100, 0),
            Status::SHMBUS_OK
        );
        assert_eq!(
            shmbus_producer_push(p, b"next".as_ptr().cast(), 4, 0),
            Status::SHMBUS_OK
        );
        let mut buf = vec![0u8; 10];
        let mut len = buf.len();
        assert_eq!(
            shmbus_consumer_pop(c, buf.as_mut_ptr().cast(), &mut len, 0),
            Status::SHMBUS_TOO_SMALL
        );
        assert_eq!(len, 100);
        assert!(last_error().contains("100 bytes"), "{}", last_error());
        buf.resize(len, 0);
        assert_eq!(
            shmbus_consumer_pop(c, buf.as_mut_ptr().cast(), &mut len, 0),
            Status::SHMBUS_MESSAGE
        );
        assert_eq!((len, buf.as_slice()), (100, &record[..]));
        let mut len = buf.len();
        assert_eq!(
            shmbus_consumer_pop(c, buf.as_mut_ptr().cast(), &mut len, -1),
            Status::SHMBUS_MESSAGE
        );
        assert_eq!(&buf[..len], b"next");
        let mut len = buf.len();
        assert_eq!(
            shmbus_consumer_pop(c, buf.as_mut_ptr().cast(), &mut len, 0),
            Status::SHMBUS_EMPTY
        );
        assert_eq!(
            shmbus_consumer_pop(c, buf.as_mut_ptr().cast(), &mut len, 1_000_000),
            Status::SHMBUS_TIMED_OUT
        );
        let mut max = 0;
        assert_eq!(shmbus_consumer_max_record(c, &mut max), Status::SHMBUS_OK);
        assert_eq!(max, 4096 / 2 - 8);
        shmbus_consumer_close(c);
        shmbus_producer_close(p);
    }
}

#[test]
fn a_full_stream_is_full_at_once_and_times_out_after_waiting() {
    let bus = Bus::new("full");
    let mut p = null_mut();
    // SAFETY: as in the first test.
    unsafe {
        let mut o = shmbus_stream_options_default();
        o.capacity = 64;
        assert_eq!(
            shmbus_producer_create(bus.ptr(), &o, &mut p),
            Status::SHMBUS_OK
        );
        let rec = [1u8; 24];
        assert_eq!(
            shmbus_producer_push(p, rec.as_ptr().cast(), 24, 0),
            Status::SHMBUS_OK
        );
        assert_eq!(
            shmbus_producer_push(p, rec.as_ptr().cast(), 24, 0),
            Status::SHMBUS_OK
        );
        assert_eq!(
            shmbus_producer_push(p, rec.as_ptr().cast(), 1, 0),
            Status::SHMBUS_FULL
        );
        assert_eq!(
            shmbus_producer_push(p, rec.as_ptr().cast(), 1, 1_000_000),
            Status::SHMBUS_TIMED_OUT
        );
        let big = [0u8; 64];
        assert_eq!(
            shmbus_producer_push(p, big.as_ptr().cast(), 64, 0),
            Status::SHMBUS_ERROR
        );
        assert!(last_error().contains("at most 24"), "{}", last_error());
        shmbus_producer_close(p);
    }
}

#[test]
fn a_late_journal_joiner_gets_every_sequence_from_the_start() {
    let bus = Bus::new("journal");
    let dir = TempDir::new("journal");
    let path = std::ffi::CString::new(dir.0.join("j.journal").to_str().unwrap()).unwrap();
    let mut p = null_mut();
    let mut s = null_mut();
    // SAFETY: as in the first test.
    unsafe {
        let j = JournalOpts {
            path: path.as_ptr(),
            chunk_bytes: 64 << 10,
            preallocate_bytes: 0,
        };
        assert_eq!(
            shmbus_journal_publisher_create(bus.ptr(), &bus_opts(4, 8), &j, &mut p),
            Status::SHMBUS_OK,
            "{}",
            last_error()
        );
        for i in 0..10u64 {
            let mut seq = 0;
            let m = i.to_le_bytes();
            assert_eq!(
                shmbus_journal_publisher_publish(p, m.as_ptr().cast(), 8, &mut seq),
                Status::SHMBUS_OK
            );
            assert_eq!(seq, i);
        }
        // Ten messages into four slots: only the journal has them all.
        assert_eq!(
            shmbus_journal_subscriber_join(bus.ptr(), null(), &mut s),
            Status::SHMBUS_OK,
            "{}",
            last_error()
        );
        for i in 0..10u64 {
            let mut buf = [0u8; 8];
            let mut len = 8;
            let mut seq = u64::MAX;
            let st = shmbus_journal_subscriber_recv(
                s,
                buf.as_mut_ptr().cast(),
                &mut len,
                &mut seq,
                null_mut(),
                1_000_000_000,
            );
            assert_eq!(st, Status::SHMBUS_MESSAGE, "{}", last_error());
            assert_eq!((seq, u64::from_le_bytes(buf)), (i, i));
        }
        let mut buf = [0u8; 8];
        let mut len = 2;
        assert_eq!(
            shmbus_journal_subscriber_recv(
                s,
                buf.as_mut_ptr().cast(),
                &mut len,
                null_mut(),
                null_mut(),
                0
            ),
            Status::SHMBUS_TOO_SMALL
        );
        assert_eq!(len, 8);
        let mut pos = 0;
        let mut live = false;
        assert_eq!(
            shmbus_journal_subscriber_position(s, &mut pos, &mut live),
            Status::SHMBUS_OK
        );
        assert_eq!(pos, 10);
        assert_eq!(shmbus_journal_publisher_flush(p), Status::SHMBUS_OK);
        shmbus_journal_subscriber_close(s);
        assert_eq!(
            shmbus_journal_publisher_close(p),
            Status::SHMBUS_OK,
            "{}",
            last_error()
        );
    }
}

fn pool_opts(capacity: u64, block: u64, blocks: u64) -> BusOpts {
    let mut o = shmbus_bus_options_default();
    o.capacity = capacity;
    o.pool_block_size = block;
    o.pool_blocks = blocks;
    o
}

/// Loans `msg.len()` bytes, writes `msg` in place and publishes it.
///
/// # Safety
/// `p` is a live pool publisher.
/// A pool bus `bus` of 4 slots and 16 blocks of 128 bytes, its publisher
/// and a subscriber from the oldest message.
///
/// # Safety
/// Both handles are the caller's to close.
unsafe fn pool_and_subscriber(bus: &Bus) -> (*mut ShmbusPoolPublisher, *mut ShmbusPoolSubscriber) {
    let (mut p, mut s) = (null_mut(), null_mut());
    // SAFETY: the name is live; the out pointers are writable.
    unsafe {
        assert_eq!(
            shmbus_pool_publisher_create(bus.ptr(), &pool_opts(4, 128, 16), &mut p),
            Status::SHMBUS_OK,
            "{}",
            last_error()
        );
        assert_eq!(
            shmbus_pool_subscriber_open(bus.ptr(), &oldest(), &mut s),
            Status::SHMBUS_OK
        );
    }
    (p, s)
}

unsafe fn pool_publish(p: *mut ShmbusPoolPublisher, msg: &[u8]) -> u64 {
    let mut loan = null_mut();
    let mut data: *mut c_void = null_mut();
    // SAFETY: `p` is live (contract); the loan's `len` bytes at `data` are
    // ours until it is published.
    unsafe {
        assert_eq!(
            shmbus_pool_publisher_loan(p, msg.len(), 0, &mut loan, &mut data),
            Status::SHMBUS_OK,
            "{}",
            last_error()
        );
        std::ptr::copy_nonoverlapping(msg.as_ptr(), data.cast::<u8>(), msg.len());
        let mut seq = 0;
        assert_eq!(shmbus_loan_publish(loan, &mut seq), Status::SHMBUS_OK);
        seq
    }
}

#[test]
fn every_constructor_writes_null_to_its_out_parameter_when_its_options_are_bad() {
    let bus = Bus::new("badopts");
    let mut bad_open = shmbus_open_options_default();
    bad_open.start = 7;
    let mut bad_stream = shmbus_stream_options_default();
    bad_stream.capacity = 1024;
    bad_stream.wait = 9;
    // SAFETY: valid C strings and options; each out-parameter holds
    // garbage that the call must overwrite with NULL, and nothing is made.
    unsafe {
        let mut p: *mut ShmbusPoolPublisher = std::ptr::dangling_mut();
        let no_blocks = pool_opts(8, 64, 0);
        let st = shmbus_pool_publisher_create(bus.ptr(), &no_blocks, &mut p);
        assert_eq!((st, p), (Status::SHMBUS_ERROR, null_mut()));
        assert!(last_error().contains("pool_blocks"), "{}", last_error());
        p = std::ptr::dangling_mut();
        let st = shmbus_pool_publisher_create_many(bus.ptr(), null(), &mut p);
        assert_eq!((st, p), (Status::SHMBUS_ERROR, null_mut()));
        p = std::ptr::dangling_mut();
        let st = shmbus_pool_publisher_attach(bus.ptr(), &bad_open, &mut p);
        assert_eq!((st, p), (Status::SHMBUS_ERROR, null_mut()));
        assert!(last_error().contains("start is 7"), "{}", last_error());

        let mut j: *mut ShmbusJournalPublisher = std::ptr::dangling_mut();
        let st = shmbus_journal_publisher_create(bus.ptr(), &bus_opts(8, 8), null(), &mut j);
        assert_eq!((st, j), (Status::SHMBUS_ERROR, null_mut()));
        assert!(last_error().contains("journal options"), "{}", last_error());

        let mut producer: *mut ShmbusProducer = std::ptr::dangling_mut();
        let st = shmbus_producer_create(bus.ptr(), &bad_stream, &mut producer);
        assert_eq!((st, producer), (Status::SHMBUS_ERROR, null_mut()));
        assert!(last_error().contains("wait is 9"), "{}", last_error());

        let mut c: *mut ShmbusConsumer = std::ptr::dangling_mut();
        let st = shmbus_consumer_open(bus.ptr(), &bad_open, &mut c);
        assert_eq!((st, c), (Status::SHMBUS_ERROR, null_mut()));
    }
    assert!(!std::path::Path::new("/dev/shm").join(&bus.name).exists());
}

#[test]
fn a_pool_loan_is_written_in_place_and_received_as_a_sample_that_outlives_its_subscriber() {
    let bus = Bus::new("pool");
    // SAFETY: as in the first test; sample bytes are read while it is held.
    unsafe {
        let (p, s) = pool_and_subscriber(&bus);
        let mut bs = 0;
        assert_eq!(
            shmbus_pool_publisher_block_size(p, &mut bs),
            Status::SHMBUS_OK
        );
        assert_eq!(bs, 128);
        assert_eq!(pool_publish(p, b"in place"), 0);
        assert_eq!(pool_publish(p, b""), 1);
        let mut sample = null_mut();
        assert_eq!(
            shmbus_pool_subscriber_recv(s, &mut sample, null_mut(), 0),
            Status::SHMBUS_MESSAGE
        );
        let mut second = null_mut();
        assert_eq!(
            shmbus_pool_subscriber_recv(s, &mut second, null_mut(), -1),
            Status::SHMBUS_MESSAGE
        );
        let mut empty = null_mut();
        assert_eq!(
            shmbus_pool_subscriber_recv(s, &mut empty, null_mut(), 0),
            Status::SHMBUS_EMPTY
        );
        assert!(empty.is_null());
        shmbus_pool_subscriber_close(s);
        let (mut data, mut len, mut seq) = (null(), 0, 9);
        assert_eq!(
            shmbus_sample_data(sample, &mut data, &mut len, &mut seq),
            Status::SHMBUS_OK
        );
        assert_eq!(
            (std::slice::from_raw_parts(data.cast::<u8>(), len), seq),
            (&b"in place"[..], 0)
        );
        assert_eq!(
            shmbus_sample_data(second, &mut data, &mut len, &mut seq),
            Status::SHMBUS_OK
        );
        assert_eq!((len, seq), (0, 1));
        shmbus_sample_release(sample);
        shmbus_sample_release(second);

        // Too long for a block; a discarded loan gives its block back.
        let mut loan = null_mut();
        assert_eq!(
            shmbus_pool_publisher_loan(p, 129, 0, &mut loan, null_mut()),
            Status::SHMBUS_ERROR
        );
        assert!(loan.is_null());
        assert!(last_error().contains("129"), "{}", last_error());
        assert_eq!(
            shmbus_pool_publisher_loan(p, 64, 0, &mut loan, null_mut()),
            Status::SHMBUS_OK
        );
        let mut again = null_mut();
        assert_eq!(
            shmbus_pool_publisher_loan(p, 64, 0, &mut again, null_mut()),
            Status::SHMBUS_ERROR
        );
        assert!(last_error().contains("loan out"), "{}", last_error());
        let (mut d, mut l) = (null_mut(), 0);
        assert_eq!(shmbus_loan_data(loan, &mut d, &mut l), Status::SHMBUS_OK);
        assert_eq!(l, 64);
        assert_eq!(d as usize % 64, 0, "blocks are 64-byte aligned");
        shmbus_loan_discard(loan);
        assert_eq!(pool_publish(p, b"after"), 2);
        shmbus_pool_publisher_close(p);
    }
}

#[test]
fn a_loan_of_a_whole_block_is_published_truncated_to_what_was_written() {
    let bus = Bus::new("pooltrunc");
    // SAFETY: as in the first test; the loan's bytes are written while it
    // is out, a sample's read while it is held.
    unsafe {
        let (p, s) = pool_and_subscriber(&bus);
        let (mut loan, mut data) = (null_mut(), null_mut::<c_void>());
        assert_eq!(
            shmbus_pool_publisher_loan(p, 128, 0, &mut loan, &mut data),
            Status::SHMBUS_OK
        );
        let line = b"a line of unknown length";
        std::ptr::copy_nonoverlapping(line.as_ptr(), data.cast::<u8>(), line.len());
        // A loan never grows; the refusal leaves it as it was.
        assert_eq!(shmbus_loan_truncate(loan, 129), Status::SHMBUS_ERROR);
        assert!(last_error().contains("never grows"), "{}", last_error());
        assert_eq!(shmbus_loan_truncate(loan, line.len()), Status::SHMBUS_OK);
        let (mut d, mut l) = (null_mut(), 0);
        assert_eq!(shmbus_loan_data(loan, &mut d, &mut l), Status::SHMBUS_OK);
        assert_eq!((d, l), (data, line.len()));
        assert_eq!(shmbus_loan_publish(loan, null_mut()), Status::SHMBUS_OK);

        let mut sample = null_mut();
        assert_eq!(
            shmbus_pool_subscriber_recv(s, &mut sample, null_mut(), 0),
            Status::SHMBUS_MESSAGE
        );
        let (mut got, mut len, mut seq) = (null(), 0, 9);
        assert_eq!(
            shmbus_sample_data(sample, &mut got, &mut len, &mut seq),
            Status::SHMBUS_OK
        );
        assert_eq!(
            (std::slice::from_raw_parts(got.cast::<u8>(), len), seq),
            (&line[..], 0)
        );
        shmbus_sample_release(sample);
        assert_eq!(shmbus_loan_truncate(null_mut(), 0), Status::SHMBUS_ERROR);
        shmbus_pool_subscriber_close(s);
        shmbus_pool_publisher_close(p);
    }
}

#[test]
fn a_pool_publisher_closed_with_a_loan_out_lives_until_the_loan_is_published() {
    let bus = Bus::new("poolclose");
    let mut p = null_mut();
    let mut s = null_mut();
    // SAFETY: as in the first test; the loan is used after its publisher's
    // close, which the API allows.
    unsafe {
        assert_eq!(
            shmbus_pool_publisher_create(bus.ptr(), &pool_opts(4, 64, 8), &mut p),
            Status::SHMBUS_OK
        );
        assert_eq!(
            shmbus_pool_subscriber_open(bus.ptr(), &oldest(), &mut s),
            Status::SHMBUS_OK
        );
        let mut loan = null_mut();
        let mut data: *mut c_void = null_mut();
        assert_eq!(
            shmbus_pool_publisher_loan(p, 5, -1, &mut loan, &mut data),
            Status::SHMBUS_OK
        );
        shmbus_pool_publisher_close(p);
        std::ptr::copy_nonoverlapping(b"later".as_ptr(), data.cast::<u8>(), 5);
        assert_eq!(shmbus_loan_publish(loan, null_mut()), Status::SHMBUS_OK);
        let mut sample = null_mut();
        assert_eq!(
            shmbus_pool_subscriber_recv(s, &mut sample, null_mut(), 0),
            Status::SHMBUS_MESSAGE
        );
        let (mut d, mut l) = (null(), 0);
        shmbus_sample_data(sample, &mut d, &mut l, null_mut());
        assert_eq!(std::slice::from_raw_parts(d.cast::<u8>(), l), b"later");
        shmbus_sample_release(sample);
        // The publisher is gone: a new one may attach.
        let mut p2 = null_mut();
        assert_eq!(
            shmbus_pool_publisher_attach(bus.ptr(), null(), &mut p2),
            Status::SHMBUS_OK,
            "{}",
            last_error()
        );
        shmbus_pool_publisher_close(p2);
        shmbus_pool_subscriber_close(s);
    }
}

#[test]
fn a_c_pool_subscriber_reads_a_typed_rust_pool_and_a_type_it_names_must_be_the_blocks() {
    let bus = Bus::new("typedpool");
    let opts = shmbus_core::pool::Options::new(4, 64, 8);
    let mut rust =
        shmbus_core::pool::Publisher::<u64>::create(&bus.name, &opts).expect("a typed Rust pool");
    // SAFETY: as in the first test; the type names are C string literals.
    unsafe {
        let mut wrong = oldest();
        wrong.type_name = c"f64".as_ptr();
        wrong.type_size = 8;
        wrong.type_align = 8;
        let mut s = null_mut();
        assert_eq!(
            shmbus_pool_subscriber_open(bus.ptr(), &wrong, &mut s),
            Status::SHMBUS_ERROR
        );
        assert_eq!(shmbus_error_code(), ErrorCode::SHMBUS_E_TYPE_MISMATCH);
        let e = last_error();
        assert!(e.contains("`u64`") && e.contains("`f64`"), "{e}");
        let mut right = wrong;
        right.type_name = c"u64".as_ptr();
        assert_eq!(
            shmbus_pool_subscriber_open(bus.ptr(), &right, &mut s),
            Status::SHMBUS_OK,
            "{}",
            last_error()
        );
        let mut loan = rust.loan(shmbus_core::Wait::Never).expect("a block");
        *loan = 0x0102_0304;
        loan.publish().expect("single publisher");
        let mut sample = null_mut();
        assert_eq!(
            shmbus_pool_subscriber_recv(s, &mut sample, null_mut(), 0),
            Status::SHMBUS_MESSAGE
        );
        let (mut d, mut l, mut seq) = (null(), 0, 0);
        shmbus_sample_data(sample, &mut d, &mut l, &mut seq);
        let bytes = std::slice::from_raw_parts(d.cast::<u8>(), l);
        assert_eq!(bytes, 0x0102_0304u64.to_le_bytes());
        shmbus_sample_release(sample);
        shmbus_pool_subscriber_close(s);
    }
}

#[test]
fn a_c_pool_records_the_block_type_it_names_and_a_typed_rust_subscriber_reads_it() {
    let bus = Bus::new("cnamedpool");
    // SAFETY: as in the first test; the type names are C string literals.
    unsafe {
        let mut p = null_mut();
        // A type without its size, or a size without a type: refused.
        let mut sizeless = pool_opts(4, 64, 8);
        sizeless.type_name = c"u64".as_ptr();
        for bad in [sizeless, {
            let mut o = pool_opts(4, 64, 8);
            o.msg_size = 8;
            o
        }] {
            assert_eq!(
                shmbus_pool_publisher_create(bus.ptr(), &bad, &mut p),
                Status::SHMBUS_ERROR
            );
            assert_eq!(shmbus_error_code(), ErrorCode::SHMBUS_E_INVALID_ARGUMENT);
        }
        let mut named = sizeless;
        named.msg_size = 8;
        named.type_align = 8;
        assert_eq!(
            shmbus_pool_publisher_create(bus.ptr(), &named, &mut p),
            Status::SHMBUS_OK,
            "{}",
            last_error()
        );
        let start = shmbus_core::OpenOptions::default().start(shmbus_core::Start::Oldest);
        let mut rust = shmbus_core::pool::Subscriber::<u64>::open(&bus.name, &start)
            .expect("the type C named opens typed");
        assert!(shmbus_core::pool::Subscriber::<f64>::open(&bus.name, &start).is_err());
        pool_publish(p, &0x0a0b_0c0du64.to_ne_bytes());
        match rust.recv(shmbus_core::Wait::Never) {
            Ok(Some(shmbus_core::Received::Message(sample))) => assert_eq!(*sample, 0x0a0b_0c0d),
            other => panic!("expected the message, got {other:?}"),
        }
        shmbus_pool_publisher_close(p);
    }
}

#[test]
fn a_pool_subscriber_holding_its_most_samples_is_full_and_loses_nothing() {
    let bus = Bus::new("held");
    let mut p = null_mut();
    let mut s = null_mut();
    // SAFETY: as in the first test.
    unsafe {
        assert_eq!(
            shmbus_pool_publisher_create(bus.ptr(), &pool_opts(16, 64, 40), &mut p),
            Status::SHMBUS_OK
        );
        assert_eq!(
            shmbus_pool_subscriber_open(bus.ptr(), &oldest(), &mut s),
            Status::SHMBUS_OK
        );
        for i in 0..=SHMBUS_POOL_MAX_HELD as u8 {
            pool_publish(p, &[i]);
        }
        let mut held = Vec::new();
        for _ in 0..SHMBUS_POOL_MAX_HELD {
            let mut sample = null_mut();
            assert_eq!(
                shmbus_pool_subscriber_recv(s, &mut sample, null_mut(), 0),
                Status::SHMBUS_MESSAGE
            );
            held.push(sample);
        }
        let mut sample = null_mut();
        assert_eq!(
            shmbus_pool_subscriber_recv(s, &mut sample, null_mut(), 0),
            Status::SHMBUS_FULL
        );
        assert!(last_error().contains("holds 8 samples"), "{}", last_error());
        assert_eq!(shmbus_error_code(), ErrorCode::SHMBUS_E_TOO_MANY_SAMPLES);
        shmbus_sample_release(held.pop().unwrap());
        assert_eq!(
            shmbus_pool_subscriber_recv(s, &mut sample, null_mut(), 0),
            Status::SHMBUS_MESSAGE
        );
        let (mut d, mut l, mut seq) = (null(), 0, 0);
        shmbus_sample_data(sample, &mut d, &mut l, &mut seq);
        assert_eq!((*d.cast::<u8>(), seq), (SHMBUS_POOL_MAX_HELD as u8, 8));
        shmbus_sample_release(sample);
        for h in held {
            shmbus_sample_release(h);
        }
        shmbus_pool_subscriber_close(s);
        shmbus_pool_publisher_close(p);
    }
}

#[test]
fn remove_deletes_a_bus_and_says_when_there_is_none() {
    let bus = Bus::new("remove");
    let mut p = null_mut();
    // SAFETY: as in the first test.
    unsafe {
        assert_eq!(
            shmbus_publisher_create(bus.ptr(), &bus_opts(8, 8), &mut p),
            Status::SHMBUS_OK
        );
        shmbus_publisher_close(p);
        assert_eq!(shmbus_remove(bus.ptr()), Status::SHMBUS_OK);
        assert!(!std::path::Path::new("/dev/shm").join(&bus.name).exists());
        assert_eq!(shmbus_remove(bus.ptr()), Status::SHMBUS_ERROR);
        assert!(last_error().contains(&bus.name), "{}", last_error());
    }
}

#[test]
fn an_opener_that_names_another_message_type_is_refused_with_both_named() {
    let bus = Bus::new("types");
    let dir = TempDir::new("types");
    let path = std::ffi::CString::new(dir.0.join("t.journal").to_str().unwrap()).unwrap();
    let mut jp = null_mut();
    // SAFETY: as in the first test; the C strings outlive the calls.
    unsafe {
        let mut create = bus_opts(8, 16);
        create.type_name = c"md.Tick".as_ptr();
        create.type_align = 8;
        let j = JournalOpts {
            path: path.as_ptr(),
            chunk_bytes: 64 << 10,
            preallocate_bytes: 0,
        };
        assert_eq!(
            shmbus_journal_publisher_create(bus.ptr(), &create, &j, &mut jp),
            Status::SHMBUS_OK,
            "{}",
            last_error()
        );
        let mut same = shmbus_open_options_default();
        same.type_name = c"md.Tick".as_ptr();
        same.type_size = 16;
        same.type_align = 8;
        let mut s = null_mut();
        assert_eq!(
            shmbus_subscriber_open(bus.ptr(), &same, &mut s),
            Status::SHMBUS_OK,
            "{}",
            last_error()
        );
        shmbus_subscriber_close(s);
        let mut js = null_mut();
        assert_eq!(
            shmbus_journal_subscriber_join(bus.ptr(), &same, &mut js),
            Status::SHMBUS_OK,
            "{}",
            last_error()
        );
        shmbus_journal_subscriber_close(js);

        let mut other = same;
        other.type_name = c"md.Quote".as_ptr();
        assert_eq!(
            shmbus_subscriber_open(bus.ptr(), &other, &mut s),
            Status::SHMBUS_ERROR
        );
        let e = last_error();
        assert!(e.contains("md.Tick") && e.contains("md.Quote"), "{e}");
        assert!(s.is_null());
        assert_eq!(
            shmbus_journal_subscriber_join(bus.ptr(), &other, &mut js),
            Status::SHMBUS_ERROR
        );
        let e = last_error();
        assert!(e.contains("md.Tick") && e.contains("md.Quote"), "{e}");
        let mut bigger = same;
        bigger.type_size = 32;
        assert_eq!(
            shmbus_subscriber_open(bus.ptr(), &bigger, &mut s),
            Status::SHMBUS_ERROR
        );
        assert!(last_error().contains("32"), "{}", last_error());
        let mut no_size = same;
        no_size.type_size = 0;
        assert_eq!(
            shmbus_subscriber_open(bus.ptr(), &no_size, &mut s),
            Status::SHMBUS_ERROR
        );
        assert!(last_error().contains("type_size 0"), "{}", last_error());
        assert_eq!(shmbus_journal_publisher_close(jp), Status::SHMBUS_OK);

        // The type's opener may attach as the next publisher; another may not.
        let mut p = null_mut();
        assert_eq!(
            shmbus_publisher_attach(bus.ptr(), &other, &mut p),
            Status::SHMBUS_ERROR
        );
        assert!(last_error().contains("md.Quote"), "{}", last_error());
        let mut jp2 = null_mut();
        assert_eq!(
            shmbus_journal_publisher_attach(bus.ptr(), &same, &mut jp2),
            Status::SHMBUS_OK,
            "{}",
            last_error()
        );
        assert_eq!(shmbus_journal_publisher_close(jp2), Status::SHMBUS_OK);
    }
}

#[test]
fn a_bus_created_with_a_type_records_it_and_a_bad_alignment_is_refused() {
    let bus = Bus::new("typecreate");
    let mut p = null_mut();
    // SAFETY: as in the first test.
    unsafe {
        let mut bad = bus_opts(8, 16);
        bad.type_name = c"md.Tick".as_ptr();
        bad.type_align = 3;
        assert_eq!(
            shmbus_publisher_create(bus.ptr(), &bad, &mut p),
            Status::SHMBUS_ERROR
        );
        assert!(p.is_null());
        assert!(!last_error().is_empty());
        let mut good = bad;
        good.type_align = 8;
        let mut mp = null_mut();
        assert_eq!(
            shmbus_many_publisher_create(bus.ptr(), &good, &mut mp),
            Status::SHMBUS_OK,
            "{}",
            last_error()
        );
        let mut other = shmbus_open_options_default();
        other.type_name = c"md.Quote".as_ptr();
        other.type_size = 16;
        other.type_align = 8;
        let mut mp2 = null_mut();
        assert_eq!(
            shmbus_many_publisher_attach(bus.ptr(), &other, &mut mp2),
            Status::SHMBUS_ERROR
        );
        let e = last_error();
        assert!(e.contains("md.Tick") && e.contains("md.Quote"), "{e}");
        // A raw opener (no type named) takes a bus of any type.
        assert_eq!(
            shmbus_many_publisher_attach(bus.ptr(), null(), &mut mp2),
            Status::SHMBUS_OK
        );
        shmbus_many_publisher_close(mp2);
        shmbus_many_publisher_close(mp);
    }
}

#[test]
fn a_mode_beyond_0777_and_a_type_alignment_or_size_without_a_type_name_are_refused() {
    let bus = Bus::new("badmode");
    let mut p = null_mut();
    let mut producer = null_mut();
    let mut s = null_mut();
    // SAFETY: as in the first test.
    unsafe {
        for mode in [0xffff_ffff, 0o7777, 0o1000] {
            let mut o = bus_opts(8, 8);
            o.mode = mode;
            assert_eq!(
                shmbus_publisher_create(bus.ptr(), &o, &mut p),
                Status::SHMBUS_ERROR
            );
            assert!(p.is_null());
            let e = last_error();
            assert!(e.contains("mode") && e.contains("0777"), "{e}");
            let mut so = shmbus_stream_options_default();
            so.capacity = 4096;
            so.mode = mode;
            assert_eq!(
                shmbus_producer_create(bus.ptr(), &so, &mut producer),
                Status::SHMBUS_ERROR
            );
            assert!(producer.is_null());
        }
        let mut aligned = bus_opts(8, 8);
        aligned.type_align = 3;
        assert_eq!(
            shmbus_publisher_create(bus.ptr(), &aligned, &mut p),
            Status::SHMBUS_ERROR
        );
        assert!(last_error().contains("type_align is 3 without a type_name"));
        let mut sized = shmbus_open_options_default();
        sized.type_size = 8;
        assert_eq!(
            shmbus_subscriber_open(bus.ptr(), &sized, &mut s),
            Status::SHMBUS_ERROR
        );
        assert!(
            last_error().contains("without a type_name"),
            "{}",
            last_error()
        );
        // Nothing was made by any of them.
        assert!(shmbus_core::stat::stat(&bus.name).is_err());
    }
}

#[test]
fn a_journal_chunk_or_preallocation_past_what_a_journal_can_use_is_an_error_not_a_panic() {
    let bus = Bus::new("hugechunk");
    let dir = TempDir::new("hugechunk");
    let path = std::ffi::CString::new(dir.0.join("j.journal").to_str().unwrap()).unwrap();
    // SAFETY: as in the first test.
    unsafe {
        for (chunk, pre, option) in [
            (u64::MAX, 0, "chunk_bytes"),
            (u64::MAX - 4095, 0, "chunk_bytes"),
            ((1 << 30) + 1, 0, "chunk_bytes"),
            (0, u64::MAX, "preallocate_bytes"),
        ] {
            let j = JournalOpts {
                path: path.as_ptr(),
                chunk_bytes: chunk,
                preallocate_bytes: pre,
            };
            let mut p = std::ptr::dangling_mut();
            assert_eq!(
                shmbus_journal_publisher_create(bus.ptr(), &bus_opts(4, 8), &j, &mut p),
                Status::SHMBUS_ERROR
            );
            assert!(p.is_null());
            let e = last_error();
            assert!(e.contains(option) && e.contains("at most"), "{e}");
            assert!(!e.contains("panic"), "{e}");
            assert!(!dir.0.join("j.journal").exists(), "no journal is left");
            assert!(
                shmbus_core::stat::stat(&bus.name).is_err(),
                "no bus is left"
            );
        }
    }
}
