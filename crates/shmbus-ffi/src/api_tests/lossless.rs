//! Lossless subscribers through the C API: `SHMBUS_LOSSLESS`,
//! the bus options' limit and eviction timeout, `SHMBUS_NO_LOSSLESS`,
//! `shmbus_publisher_try_publish` and `shmbus_subscriber_is_lossless`.
//! (ci/c.sh runs the same with a C subscriber in another process.)

use std::ptr::null_mut;
use std::time::{Duration, Instant};

use super::{bus_opts, last_error, publish, recv};
use crate::bus::*;
use crate::error_code::*;
use crate::last_error::*;
use crate::options::*;
use crate::pool::*;
use crate::status::*;
use common::Bus;

use super::common;

fn lossless_opts() -> OpenOpts {
    let mut o = shmbus_open_options_default();
    o.flags = SHMBUS_LOSSLESS;
    o
}

fn create(bus: &Bus, opts: &BusOpts) -> *mut ShmbusPublisher {
    let mut p = null_mut();
    // SAFETY: valid C string, options and out-parameter.
    let st = unsafe { shmbus_publisher_create(bus.ptr(), opts, &mut p) };
    assert_eq!(st, Status::SHMBUS_OK, "{}", last_error());
    p
}

fn open(bus: &Bus, opts: &OpenOpts) -> *mut ShmbusSubscriber {
    let mut s = null_mut();
    // SAFETY: valid C string, options and out-parameter.
    let st = unsafe { shmbus_subscriber_open(bus.ptr(), opts, &mut s) };
    assert_eq!(st, Status::SHMBUS_OK, "{}", last_error());
    s
}

/// The status of opening `bus` with `opts`, and the code it left (the
/// handle, if one was made, is closed).
fn open_status(bus: &Bus, opts: &OpenOpts) -> (Status, ErrorCode) {
    let mut s = null_mut();
    // SAFETY: valid C string, options and out-parameter; the handle is
    // closed once.
    unsafe {
        let st = shmbus_subscriber_open(bus.ptr(), opts, &mut s);
        shmbus_subscriber_close(s);
        (st, shmbus_error_code())
    }
}

fn try_publish(p: *mut ShmbusPublisher, msg: &[u8]) -> Status {
    let mut seq = 0;
    // SAFETY: `p` is a live publisher; `msg` is readable for its length.
    unsafe { shmbus_publisher_try_publish(p, msg.as_ptr().cast(), msg.len(), &mut seq) }
}

fn is_lossless(s: *mut ShmbusSubscriber) -> bool {
    let mut lossless = false;
    // SAFETY: `s` is a live subscriber; the out-parameter is writable.
    let st = unsafe { shmbus_subscriber_is_lossless(s, &mut lossless) };
    assert_eq!(st, Status::SHMBUS_OK, "{}", last_error());
    lossless
}

/// Receives until empty: (messages skipped, messages delivered).
fn drain(s: *mut ShmbusSubscriber) -> (u64, u64) {
    let (mut skipped, mut delivered) = (0, 0);
    loop {
        match recv(s, 8, 0) {
            (Status::SHMBUS_MESSAGE, _, _) => delivered += 1,
            (Status::SHMBUS_LAGGED, _, n) => skipped += n,
            (st, _, _) => {
                assert_eq!(st, Status::SHMBUS_EMPTY, "{}", last_error());
                return (skipped, delivered);
            }
        }
    }
}

#[test]
fn try_publish_is_full_naming_the_lossless_subscriber_and_goes_on_once_it_reads() {
    let bus = Bus::new("lossless-full");
    let p = create(&bus, &bus_opts(4, 8));
    let lossless = open(&bus, &lossless_opts());
    let lossy = open(&bus, &shmbus_open_options_default());
    assert!(is_lossless(lossless));
    assert!(!is_lossless(lossy));
    for i in 0..4u8 {
        assert_eq!(try_publish(p, &[i]), Status::SHMBUS_OK, "{}", last_error());
    }
    // A fifth message would overwrite the lossless subscriber's first.
    assert_eq!(try_publish(p, &[4]), Status::SHMBUS_FULL);
    assert_eq!(shmbus_error_code(), ErrorCode::SHMBUS_E_FULL);
    let msg = last_error();
    assert!(msg.contains("registry entry 0"), "{msg}");
    assert!(
        msg.contains(&format!("pid {}", std::process::id())),
        "{msg}"
    );
    // Reading one frees one slot.
    assert_eq!(recv(lossless, 8, 0).1[0], 0);
    assert_eq!(try_publish(p, &[4]), Status::SHMBUS_OK, "{}", last_error());
    for i in 1..5u8 {
        let (st, got, _) = recv(lossless, 8, 0);
        assert_eq!((st, got[0]), (Status::SHMBUS_MESSAGE, i));
    }
    // The lossy one beside it was never waited for: lapped, it is told
    // exactly what it lost (delivered + skipped = published).
    let (skipped, delivered) = drain(lossy);
    assert!(skipped > 0);
    assert_eq!(skipped + delivered, 5);
    // Too long is still an error, not FULL.
    assert_eq!(try_publish(p, &[0; 9]), Status::SHMBUS_ERROR);
    assert_eq!(shmbus_error_code(), ErrorCode::SHMBUS_E_TOO_LONG);
    // SAFETY: each handle closed once.
    unsafe {
        shmbus_subscriber_close(lossless);
        shmbus_subscriber_close(lossy);
        shmbus_publisher_close(p);
    }
}

#[test]
fn a_zeroed_bus_options_struct_lets_eight_lossless_subscribers_gate_for_one_second() {
    let bus = Bus::new("lossless-zeroed");
    // SAFETY: every field of BusOpts is an integer or a pointer, for
    // which all-zero bytes are a valid value (NULL).
    let mut o: BusOpts = unsafe { std::mem::zeroed() };
    o.capacity = 8;
    o.msg_size = 8;
    let p = create(&bus, &o);
    let stat = shmbus_core::stat::stat(&bus.name).unwrap();
    assert_eq!(stat.lossless.expect("a bus").max, 8);
    assert_eq!(stat.lossless.expect("a bus").evict_ns, 1_000_000_000);
    let subs: Vec<_> = (0..8).map(|_| open(&bus, &lossless_opts())).collect();
    assert_eq!(
        open_status(&bus, &lossless_opts()),
        (Status::SHMBUS_ERROR, ErrorCode::SHMBUS_E_LOSSLESS_REFUSED)
    );
    assert!(last_error().contains("at most 8"), "{}", last_error());
    // SAFETY: each handle closed once.
    unsafe {
        for s in subs {
            shmbus_subscriber_close(s);
        }
        shmbus_publisher_close(p);
    }
}

#[test]
fn no_lossless_and_a_limit_refuse_lossless_subscribers_with_their_code() {
    let refusing = Bus::new("lossless-refusing");
    let mut o = bus_opts(8, 8);
    o.flags = SHMBUS_NO_LOSSLESS;
    let p = create(&refusing, &o);
    assert_eq!(
        shmbus_core::stat::stat(&refusing.name)
            .unwrap()
            .lossless
            .expect("a bus")
            .max,
        0
    );
    assert_eq!(
        open_status(&refusing, &lossless_opts()),
        (Status::SHMBUS_ERROR, ErrorCode::SHMBUS_E_LOSSLESS_REFUSED)
    );
    assert!(last_error().contains("refusing"), "{}", last_error());
    // A lossy subscriber is welcome there.
    let lossy = open(&refusing, &shmbus_open_options_default());

    let one = Bus::new("lossless-one");
    let mut o = bus_opts(8, 8);
    o.lossless_subscribers = 1;
    let q = create(&one, &o);
    let first = open(&one, &lossless_opts());
    assert_eq!(
        open_status(&one, &lossless_opts()),
        (Status::SHMBUS_ERROR, ErrorCode::SHMBUS_E_LOSSLESS_REFUSED)
    );
    assert!(last_error().contains("at most 1"), "{}", last_error());

    let many = Bus::new("lossless-many");
    let mut m = null_mut();
    // SAFETY: valid C string, options and out-parameter; closed once below.
    let st = unsafe { shmbus_many_publisher_create(many.ptr(), &bus_opts(8, 8), &mut m) };
    assert_eq!(st, Status::SHMBUS_OK, "{}", last_error());
    // Every kind takes one: a many-publisher bus too.
    assert_eq!(
        open_status(&many, &lossless_opts()).0,
        Status::SHMBUS_OK,
        "{}",
        last_error()
    );
    // SAFETY: each handle closed once.
    unsafe {
        shmbus_subscriber_close(lossy);
        shmbus_subscriber_close(first);
        shmbus_publisher_close(p);
        shmbus_publisher_close(q);
        shmbus_many_publisher_close(m);
    }
}

#[test]
fn lossless_bus_options_that_cannot_be_meant_are_refused_naming_the_field() {
    let bus = Bus::new("lossless-bad");
    let mut p = null_mut();
    let mut cases = Vec::new();
    let mut o = bus_opts(8, 8);
    o.flags = SHMBUS_NO_LOSSLESS;
    o.lossless_subscribers = 2;
    cases.push((o, "SHMBUS_NO_LOSSLESS with lossless_subscribers 2"));
    // A timeout is 1 ms to 60 s; 0 is the default (1 s), never "at once".
    for ns in [1, 999_999, 60_000_000_001, u64::MAX] {
        let mut o = bus_opts(8, 8);
        o.evict_after_ns = ns;
        let expected = format!(
            "evict_after_ns is {ns}, expected 1000000 to 60000000000 ns (1 ms to 60 s), \
             or 0 for the default (1 s)"
        );
        cases.push((o, expected.leak() as &str));
    }
    for (o, expected) in cases {
        // SAFETY: valid C string, options and out-parameter.
        let st = unsafe { shmbus_publisher_create(bus.ptr(), &o, &mut p) };
        assert_eq!(st, Status::SHMBUS_ERROR);
        assert!(p.is_null());
        assert_eq!(shmbus_error_code(), ErrorCode::SHMBUS_E_INVALID_ARGUMENT);
        assert!(last_error().contains(expected), "{}", last_error());
        assert!(!std::path::Path::new(&bus.name).exists(), "{expected}");
    }
    // A many-publisher bus's unblock timeout, the same way.
    for ns in [1, 60_000_000_001] {
        let mut o = bus_opts(8, 8);
        o.unblock_timeout_ns = ns;
        let mut m = null_mut();
        // SAFETY: as above.
        let st = unsafe { crate::bus::shmbus_many_publisher_create(bus.ptr(), &o, &mut m) };
        assert_eq!(st, Status::SHMBUS_ERROR);
        assert_eq!(shmbus_error_code(), ErrorCode::SHMBUS_E_INVALID_ARGUMENT);
        assert!(
            last_error().contains(&format!("unblock_timeout_ns is {ns}, expected 1000000")),
            "{}",
            last_error()
        );
    }
    // The bounds are taken, and 0 is the default: 1 s.
    for (ns, recorded) in [
        (0, 1_000_000_000),
        (1_000_000, 1_000_000),
        (60_000_000_000, 60_000_000_000),
    ] {
        let mut o = bus_opts(8, 8);
        o.evict_after_ns = ns;
        o.unblock_timeout_ns = ns;
        let m = {
            let mut m = null_mut();
            // SAFETY: as above.
            let st = unsafe { crate::bus::shmbus_many_publisher_create(bus.ptr(), &o, &mut m) };
            assert_eq!(st, Status::SHMBUS_OK, "{ns}: {}", last_error());
            m
        };
        let stat = shmbus_core::stat::stat(&bus.name).unwrap();
        assert_eq!(stat.lossless.expect("a bus").evict_ns, recorded, "{ns}");
        // SAFETY: closed once.
        unsafe { crate::bus::shmbus_many_publisher_close(m) };
        shmbus_core::remove(&bus.name).unwrap();
    }
    // A pool bus takes the same fields, checked the same way.
    let mut o = super::pool_opts(8, 64, 16);
    o.evict_after_ns = 999_999;
    let mut pool = null_mut();
    // SAFETY: as above.
    let st = unsafe { shmbus_pool_publisher_create(bus.ptr(), &o, &mut pool) };
    assert_eq!(st, Status::SHMBUS_ERROR);
    assert!(last_error().contains("evict_after_ns"), "{}", last_error());
    // A stream knows no SHMBUS_NO_LOSSLESS.
    let mut s = crate::stream::shmbus_stream_options_default();
    s.capacity = 64;
    s.flags = SHMBUS_NO_LOSSLESS;
    let mut producer = null_mut();
    // SAFETY: as above.
    let st = unsafe { crate::stream::shmbus_producer_create(bus.ptr(), &s, &mut producer) };
    assert_eq!(st, Status::SHMBUS_ERROR);
    assert!(
        last_error().contains("unknown flag bits"),
        "{}",
        last_error()
    );
}

#[test]
fn a_lossless_subscriber_that_stops_reading_is_evicted_after_the_timeout_and_told_its_lag() {
    let bus = Bus::new("lossless-evict");
    let mut o = bus_opts(4, 8);
    o.evict_after_ns = 50_000_000;
    let p = create(&bus, &o);
    assert_eq!(
        shmbus_core::stat::stat(&bus.name)
            .unwrap()
            .lossless
            .expect("a bus")
            .evict_ns,
        50_000_000
    );
    let s = open(&bus, &lossless_opts());
    let start = Instant::now();
    // The fifth waits for the subscriber, which never reads: evicted.
    for i in 0..10u8 {
        publish(p, &[i]);
    }
    let waited = start.elapsed();
    assert!(waited >= Duration::from_millis(50), "{waited:?}");
    assert!(!is_lossless(s));
    // Its next receive says exactly what it lost, then it reads on, as a
    // lossy subscriber: delivered + skipped = published.
    let (st, _, skipped) = recv(s, 8, 0);
    assert_eq!(st, Status::SHMBUS_LAGGED);
    let mut next = skipped;
    loop {
        match recv(s, 8, 0) {
            (Status::SHMBUS_MESSAGE, got, _) => {
                assert_eq!(u64::from(got[0]), next);
                next += 1;
            }
            (st, _, _) => {
                assert_eq!(st, Status::SHMBUS_EMPTY, "{}", last_error());
                break;
            }
        }
    }
    assert_eq!(next, 10);
    // SAFETY: each handle closed once.
    unsafe {
        shmbus_subscriber_close(s);
        shmbus_publisher_close(p);
    }
}
