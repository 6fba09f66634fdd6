//! Buses of fixed-size raw messages: one publisher (`shmbus_publisher_*`),
//! many (`shmbus_many_publisher_*`), and their subscribers
//! (`shmbus_subscriber_*`).

use std::ffi::{c_char, c_void};

use shmbus_core::{
    Publisher, Received, Subscriber,
    bus::{ManyPublishError, ManyPublisher, TryPublishError},
};

use crate::args::{handle, nothing, out_ptr, take_back, wait_of};
use crate::bodies::{
    create_handle, deliver, lagged, message_buffer, open_handle, publish_bytes, query,
};
use crate::entry::{Failure, entry, entry_void, error};
use crate::options::{BusOpts, OpenOpts};
use crate::status::Status;

/// The publisher of a single-publisher bus (opaque).
pub struct ShmbusPublisher(Publisher<[u8]>);

/// A subscriber of a bus, at its own cursor (opaque).
pub struct ShmbusSubscriber(Subscriber<[u8]>);

/// One of the publishers of a many-publisher bus (opaque).
pub struct ShmbusManyPublisher(ManyPublisher<[u8]>);

/// Creates the single-publisher bus `name` (a bare name lives in
/// /dev/shm; a path elsewhere) of `opts->capacity` slots of
/// `opts->msg_size` bytes, and becomes its publisher.
///
/// Statuses: `SHMBUS_OK` (`*out` is the publisher: close it with
/// `shmbus_publisher_close`; the bus stays until `shmbus_remove`);
/// `SHMBUS_ERROR` (the name exists, a capacity that is not a power of two,
/// no msg_size, ...; `*out` is NULL).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `opts` NULL or a valid
/// options struct; `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_publisher_create(
    name: *const c_char,
    opts: *const BusOpts,
    out: *mut *mut ShmbusPublisher,
) -> Status {
    // SAFETY: each pointer as the contract says.
    unsafe {
        create_handle(name, opts, out, |name, opts| {
            Publisher::<[u8]>::create(name, opts).map(ShmbusPublisher)
        })
    }
}

/// Becomes the publisher of the existing single-publisher bus `name` (made
/// by `shmbus create`, or whose publisher exited or died): carries on its
/// sequence and bumps its epoch. `opts` may be NULL; with a `type_name` the
/// bus must carry that type.
///
/// Statuses: `SHMBUS_OK` (`*out` is the publisher, closed with
/// `shmbus_publisher_close`); `SHMBUS_ERROR` (no such bus, another live
/// publisher, a journaled, pool or many-publisher bus, a type mismatch,
/// ...; `*out` is NULL).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `opts` NULL or a valid
/// options struct; `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_publisher_attach(
    name: *const c_char,
    opts: *const OpenOpts,
    out: *mut *mut ShmbusPublisher,
) -> Status {
    // SAFETY: each pointer as the contract says.
    unsafe {
        open_handle(name, opts, out, |name, opts| {
            Publisher::<[u8]>::attach(name, &opts.open).map(ShmbusPublisher)
        })
    }
}

/// Publishes the `len` bytes at `data` (zero-padded to the message size)
/// and writes its sequence number to `*seq` (`seq` may be NULL). A lossy
/// subscriber is lapped, never waited for. A lossless one
/// (`SHMBUS_LOSSLESS`) that has not read the message this would
/// overwrite is waited for, until it reads on, dies, or has held the
/// publisher back for the bus's eviction timeout (`evict_after_ns`, 1 s
/// by default), when it is evicted (demoted to lossy) and the publish
/// goes on; `shmbus_publisher_try_publish` never waits.
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_ERROR` (longer than the message size:
/// nothing published; a NULL argument).
///
/// # Safety
/// `publisher` is NULL or a live publisher; `data` valid for `len` bytes
/// (NULL allowed if `len` is 0); `seq` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_publisher_publish(
    publisher: *mut ShmbusPublisher,
    data: *const c_void,
    len: usize,
    seq: *mut u64,
) -> Status {
    // SAFETY: each pointer as the contract says.
    unsafe {
        publish_bytes(publisher, data, len, seq, |p, data| {
            p.0.publish(data).map_err(error)
        })
    }
}

/// As `shmbus_publisher_publish`, but never waits: if a lossless
/// subscriber has not read the message this would overwrite, nothing is
/// published and it says `SHMBUS_FULL`, with `SHMBUS_E_FULL` and a message
/// naming that subscriber's registry entry and pid. Without lossless
/// subscribers it is `shmbus_publisher_publish`. A subscriber found in
/// the way for the eviction timeout, over calls, is evicted by the call
/// that finds it so, which then publishes.
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_FULL` (no room: publish again later);
/// `SHMBUS_ERROR` (longer than the message size: nothing published; a
/// NULL argument).
///
/// # Safety
/// As `shmbus_publisher_publish`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_publisher_try_publish(
    publisher: *mut ShmbusPublisher,
    data: *const c_void,
    len: usize,
    seq: *mut u64,
) -> Status {
    // SAFETY: each pointer as the contract says.
    unsafe {
        publish_bytes(publisher, data, len, seq, |p, data| {
            p.0.try_publish(data).map_err(|e| match e {
                TryPublishError::Full { .. } => Failure::of(Status::SHMBUS_FULL, &e),
                other => error(other),
            })
        })
    }
}

/// Writes the bus's message size in bytes to `*size`.
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_ERROR` (a NULL argument).
///
/// # Safety
/// `publisher` is NULL or a live publisher; `size` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_publisher_msg_size(
    publisher: *mut ShmbusPublisher,
    size: *mut usize,
) -> Status {
    // SAFETY: each pointer as the contract says.
    unsafe { query(publisher, "publisher", size, "size", |p| p.0.msg_size()) }
}

/// Writes the sequence number the next message will get to `*seq`.
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_ERROR` (a NULL argument).
///
/// # Safety
/// `publisher` is NULL or a live publisher; `seq` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_publisher_next_sequence(
    publisher: *mut ShmbusPublisher,
    seq: *mut u64,
) -> Status {
    // SAFETY: each pointer as the contract says.
    unsafe { query(publisher, "publisher", seq, "seq", |p| p.0.next_sequence()) }
}

/// Stops publishing and frees the publisher (NULL: nothing). The bus
/// stays; another process may attach.
///
/// # Safety
/// `publisher` is NULL or a live publisher, not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_publisher_close(publisher: *mut ShmbusPublisher) {
    // SAFETY: NULL or a live handle `give` made, by the contract.
    entry_void(|| unsafe { take_back(publisher) });
}

/// Opens the bus `name` as a subscriber that starts where `opts->start`
/// says (NULL `opts`: at the next message published). Any bus of
/// fixed-size messages (single, many or journaled publishers); with a
/// `type_name` the bus must carry that type.
///
/// Statuses: `SHMBUS_OK` (`*out` is the subscriber, closed with
/// `shmbus_subscriber_close`); `SHMBUS_ERROR` (no such bus, a stream or a
/// pool bus, a type mismatch, ...; `*out` is NULL).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `opts` NULL or a valid
/// options struct; `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_subscriber_open(
    name: *const c_char,
    opts: *const OpenOpts,
    out: *mut *mut ShmbusSubscriber,
) -> Status {
    // SAFETY: each pointer as the contract says.
    unsafe {
        open_handle(name, opts, out, |name, opts| {
            Subscriber::<[u8]>::open(name, &opts.open).map(ShmbusSubscriber)
        })
    }
}

/// Receives the next message into `buf`, waiting as `timeout_ns` says.
/// `*len` holds the buffer's length on entry and the message's on
/// `SHMBUS_MESSAGE` (always the bus's message size: shorter messages
/// come zero-padded as published).
///
/// Statuses: `SHMBUS_MESSAGE`; `SHMBUS_LAGGED` (this subscriber was lapped:
/// `*skipped` messages were lost; it goes on half a ring behind the
/// newest: receive again); `SHMBUS_EMPTY` (nothing, `timeout_ns` 0);
/// `SHMBUS_TIMED_OUT`; `SHMBUS_TOO_SMALL` (the buffer is shorter than
/// the message size, now in `*len`; nothing was received); `SHMBUS_ERROR`.
/// `*len` is left as it was on the other statuses.
///
/// # Safety
/// `subscriber` is NULL or a live subscriber; `buf` valid for `*len`
/// writable bytes; `len` NULL or an initialised, writable `size_t`;
/// `skipped` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_subscriber_recv(
    subscriber: *mut ShmbusSubscriber,
    buf: *mut c_void,
    len: *mut usize,
    skipped: *mut u64,
    timeout_ns: i64,
) -> Status {
    entry(|| {
        // SAFETY: each pointer as the contract says.
        let s = unsafe { handle(subscriber, "subscriber") }?;
        // SAFETY: as above.
        let out = unsafe { message_buffer(buf, len, s.0.msg_size()) }?;
        match s.0.recv(wait_of(timeout_ns)) {
            // SAFETY: as above.
            Some(Received::Message(msg)) => unsafe { deliver(out, len, msg) },
            // SAFETY: as above.
            Some(Received::Lagged { skipped: n }) => unsafe { lagged(skipped, n) },
            None => Ok(nothing(timeout_ns)),
        }
    })
}

/// As `shmbus_subscriber_recv`, without the copy into a buffer of yours:
/// on `SHMBUS_MESSAGE`, `*data` points to the message and `*len` is its
/// length (the message size). The bytes are this subscriber's own copy
/// (the ring's slot was copied and checked once, as for every receive),
/// not shared memory: they stay as they are until the next call on this
/// subscriber, and the pointer is valid until then or its close.
///
/// Statuses: as `shmbus_subscriber_recv` (no `SHMBUS_TOO_SMALL`).
///
/// # Safety
/// `subscriber` is NULL or a live subscriber; `data`, `len` NULL or
/// writable; `skipped` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_subscriber_recv_borrow(
    subscriber: *mut ShmbusSubscriber,
    data: *mut *const c_void,
    len: *mut usize,
    skipped: *mut u64,
    timeout_ns: i64,
) -> Status {
    entry(|| {
        // SAFETY: each pointer as the contract says.
        let s = unsafe { handle(subscriber, "subscriber") }?;
        // SAFETY: as above.
        let mut data = unsafe { out_ptr(data, "data") }?;
        // SAFETY: as above.
        let mut len = unsafe { out_ptr(len, "len") }?;
        match s.0.recv(wait_of(timeout_ns)) {
            Some(Received::Message(msg)) => {
                data.set(msg.as_ptr().cast());
                len.set(msg.len());
                Ok(Status::SHMBUS_MESSAGE)
            }
            // SAFETY: as above.
            Some(Received::Lagged { skipped: n }) => unsafe { lagged(skipped, n) },
            None => Ok(nothing(timeout_ns)),
        }
    })
}

/// Copies the newest message on the bus into `buf` without moving this
/// subscriber's cursor. `*len` as for `shmbus_subscriber_recv`.
///
/// Statuses: `SHMBUS_MESSAGE`; `SHMBUS_EMPTY` (nothing published yet, or
/// the newest slot was being rewritten); `SHMBUS_TOO_SMALL`;
/// `SHMBUS_ERROR`.
///
/// # Safety
/// As `shmbus_subscriber_recv`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_subscriber_latest(
    subscriber: *mut ShmbusSubscriber,
    buf: *mut c_void,
    len: *mut usize,
) -> Status {
    entry(|| {
        // SAFETY: each pointer as the contract says.
        let s = unsafe { handle(subscriber, "subscriber") }?;
        // SAFETY: as above.
        let out = unsafe { message_buffer(buf, len, s.0.msg_size()) }?;
        match s.0.latest() {
            // SAFETY: as above.
            Some(msg) => unsafe { deliver(out, len, msg) },
            None => Ok(Status::SHMBUS_EMPTY),
        }
    })
}

/// Writes the bus's message size in bytes to `*size`.
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_ERROR` (a NULL argument).
///
/// # Safety
/// `subscriber` is NULL or a live subscriber; `size` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_subscriber_msg_size(
    subscriber: *mut ShmbusSubscriber,
    size: *mut usize,
) -> Status {
    // SAFETY: each pointer as the contract says.
    unsafe { query(subscriber, "subscriber", size, "size", |s| s.0.msg_size()) }
}

/// Writes the sequence number this subscriber reads next to `*seq` (after
/// a `SHMBUS_MESSAGE`, that message's sequence is `*seq - 1`).
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_ERROR` (a NULL argument).
///
/// # Safety
/// `subscriber` is NULL or a live subscriber; `seq` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_subscriber_position(
    subscriber: *mut ShmbusSubscriber,
    seq: *mut u64,
) -> Status {
    // SAFETY: each pointer as the contract says.
    unsafe { query(subscriber, "subscriber", seq, "seq", |s| s.0.position()) }
}

/// Writes whether this subscriber is lossless now to `*lossless`: true
/// for one opened with `SHMBUS_LOSSLESS` until it is evicted (it held the
/// publisher back for the bus's eviction timeout; its next receive said
/// `SHMBUS_LAGGED`), false for a lossy one.
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_ERROR` (a NULL argument).
///
/// # Safety
/// `subscriber` is NULL or a live subscriber; `lossless` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_subscriber_is_lossless(
    subscriber: *mut ShmbusSubscriber,
    lossless: *mut bool,
) -> Status {
    // SAFETY: each pointer as the contract says.
    unsafe {
        query(subscriber, "subscriber", lossless, "lossless", |s| {
            s.0.is_lossless()
        })
    }
}

/// Closes the subscriber (NULL: nothing); a pointer from
/// `shmbus_subscriber_recv_borrow` dies with it.
///
/// # Safety
/// `subscriber` is NULL or a live subscriber, not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_subscriber_close(subscriber: *mut ShmbusSubscriber) {
    // SAFETY: NULL or a live handle `give` made, by the contract.
    entry_void(|| unsafe { take_back(subscriber) });
}

/// Creates the many-publisher bus `name` (any number of processes publish
/// at once, in one total order) and becomes one of its publishers.
/// `opts->unblock_timeout_ns`: how long a claimed slot may stay
/// unwritten (its publisher died) before subscribers skip it.
///
/// Statuses: `SHMBUS_OK` (`*out`, closed with `shmbus_many_publisher_close`);
/// `SHMBUS_ERROR` (`*out` is NULL).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `opts` NULL or a valid
/// options struct; `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_many_publisher_create(
    name: *const c_char,
    opts: *const BusOpts,
    out: *mut *mut ShmbusManyPublisher,
) -> Status {
    // SAFETY: each pointer as the contract says.
    unsafe {
        create_handle(name, opts, out, |name, opts| {
            ManyPublisher::<[u8]>::create(name, opts).map(ShmbusManyPublisher)
        })
    }
}

/// Becomes one more publisher of the existing many-publisher bus `name`
/// (`shmbus create --publishers many`).
///
/// Statuses: `SHMBUS_OK` (`*out`, closed with `shmbus_many_publisher_close`);
/// `SHMBUS_ERROR` (no such bus, a single-publisher bus, a type mismatch,
/// ...; `*out` is NULL).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `opts` NULL or a valid
/// options struct; `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_many_publisher_attach(
    name: *const c_char,
    opts: *const OpenOpts,
    out: *mut *mut ShmbusManyPublisher,
) -> Status {
    // SAFETY: each pointer as the contract says.
    unsafe {
        open_handle(name, opts, out, |name, opts| {
            ManyPublisher::<[u8]>::attach(name, &opts.open).map(ShmbusManyPublisher)
        })
    }
}

/// Publishes the `len` bytes at `data` (zero-padded to the message size)
/// and writes its sequence number to `*seq` (`seq` may be NULL).
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_ABANDONED` (this publisher stalled past
/// the unblock timeout between claiming its slot and writing it, and
/// subscribers skipped it: nothing was published; publish again);
/// `SHMBUS_ERROR` (longer than the message size: nothing published).
///
/// # Safety
/// `publisher` is NULL or a live publisher; `data` valid for `len` bytes
/// (NULL allowed if `len` is 0); `seq` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_many_publisher_publish(
    publisher: *mut ShmbusManyPublisher,
    data: *const c_void,
    len: usize,
    seq: *mut u64,
) -> Status {
    // SAFETY: each pointer as the contract says.
    unsafe {
        publish_bytes(publisher, data, len, seq, |p, data| {
            p.0.publish(data).map_err(|e| match e {
                ManyPublishError::Abandoned(a) => Failure::of(Status::SHMBUS_ABANDONED, &a),
                other => error(other),
            })
        })
    }
}

/// Writes the bus's message size in bytes to `*size`.
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_ERROR` (a NULL argument).
///
/// # Safety
/// `publisher` is NULL or a live publisher; `size` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_many_publisher_msg_size(
    publisher: *mut ShmbusManyPublisher,
    size: *mut usize,
) -> Status {
    // SAFETY: each pointer as the contract says.
    unsafe { query(publisher, "publisher", size, "size", |p| p.0.msg_size()) }
}

/// Frees the publisher (NULL: nothing).
///
/// # Safety
/// `publisher` is NULL or a live publisher, not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_many_publisher_close(publisher: *mut ShmbusManyPublisher) {
    // SAFETY: NULL or a live handle `give` made, by the contract.
    entry_void(|| unsafe { take_back(publisher) });
}
