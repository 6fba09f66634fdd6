//! The lossless stream of byte records: `shmbus_producer_*` and
//! `shmbus_consumer_*`.
//!
//! # How a peeked record is kept
//! `shmbus_consumer_peek` moves the handle's `Consumer` into an
//! `OwnedReadChunk` (`into_chunk`), which owns it until
//! `shmbus_consumer_release` consumes the record and puts the consumer
//! back. So "a record is peeked" is the handle holding a chunk: every call
//! that reads refuses meanwhile, and C's pointer into the ring stays valid
//! until the release (or the close) with no borrow kept between calls.

use std::ffi::{c_char, c_void};

use shmbus_core::{
    ErrorKind,
    stream::{self, Consumer, OwnedReadChunk, PopError, Producer, PushError},
};

use crate::args::{
    buffer, bytes, c_str, capacity_in, copy_into, handle, out_ptr, put, required, take_back,
    wait_of,
};
use crate::bodies::{new_handle, open_handle, query};
use crate::entry::{Failure, entry, entry_void, error};
use crate::options::{OpenOpts, SHMBUS_WAIT_SPIN_FUTEX, creation, strategy, with_creation};
use crate::status::Status;

/// How to create a stream (`shmbus_producer_create`). Start from
/// `shmbus_stream_options_default()` (or zero it) and set `capacity`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct StreamOpts {
    /// The ring's size in bytes: a power of two, 64 B to 4 GiB. Records
    /// are up to half of it less 8 bytes.
    pub capacity: u64,
    /// How long the producer spins before it yields or sleeps (0 = 50 µs).
    pub spin_ns: u64,
    /// File mode bits within 0777 (0 = 0600); any other bit is refused.
    pub mode: u32,
    /// `SHMBUS_WAIT_*`: how the producer waits for room.
    pub wait: u32,
    /// `SHMBUS_PREFAULT`, `SHMBUS_MLOCK`, `SHMBUS_HUGE_PAGES_*`.
    pub flags: u32,
    /// The record type the stream records (NULL: raw records of any
    /// length, recorded as "stream"). Openers that name a type
    /// (`shmbus_open_options_t.type_name`) must name this one, and a Rust
    /// `Consumer<T>` of that type opens it.
    pub type_name: *const c_char,
    /// The record type's alignment, recorded with `type_name` (0 = 1, at
    /// most 8: records start 8-aligned); 0 without a `type_name`.
    pub type_align: u32,
}

/// Stream options with every default: capacity still to set.
#[unsafe(no_mangle)]
pub extern "C" fn shmbus_stream_options_default() -> StreamOpts {
    StreamOpts {
        capacity: 0,
        spin_ns: 0,
        mode: 0o600,
        wait: SHMBUS_WAIT_SPIN_FUTEX,
        flags: 0,
        type_name: std::ptr::null(),
        type_align: 0,
    }
}

/// `shmbus_stream_options_t` as `stream::Options`.
///
/// # Safety
/// `opts` is NULL or points to a live `StreamOpts` whose `type_name` is
/// NULL or a NUL-terminated string.
pub(crate) unsafe fn stream_options(opts: *const StreamOpts) -> Result<stream::Options, Failure> {
    const WHAT: &str = "stream options";
    // SAFETY: NULL or live, by the contract.
    let o = unsafe { required(opts, "stream options (shmbus_stream_options_t*)") }?;
    if o.capacity == 0 {
        return Err(Failure::argument(format!(
            "{WHAT}: capacity is 0, expected the ring's size in bytes (a power of two, 64 B to 4 GiB)"
        )));
    }
    let c = creation(o.mode, o.flags, WHAT)?;
    let strategy = strategy(o.wait, o.spin_ns, WHAT)?;
    let mut opts = with_creation!(stream::Options::new(o.capacity), c).wait_strategy(strategy);
    if o.type_name.is_null() {
        if o.type_align != 0 {
            return Err(Failure::argument(format!(
                "{WHAT}: type_align is {} without a type_name, expected 0 \
                 (an alignment is recorded only with the type's name)",
                o.type_align
            )));
        }
    } else {
        // SAFETY: not NULL, NUL-terminated by the contract.
        let name = unsafe { c_str(o.type_name, "type_name") }?;
        let align = if o.type_align == 0 { 1 } else { o.type_align };
        // A bad name or alignment is refused by the create.
        opts = opts.message_type(name, align);
    }
    Ok(opts)
}

/// The producer of a stream (opaque).
pub struct ShmbusProducer(Producer<[u8]>);

/// The consumer of a stream (opaque).
pub struct ShmbusConsumer {
    /// The consumer, or the record peeked with it; `None` only inside a
    /// call that moves one into the other.
    held: Option<Held>,
    /// Its largest record, so asking for it never needs the consumer.
    max_record: usize,
}

/// What a consumer handle holds between calls.
enum Held {
    /// Nothing peeked: the consumer.
    Consumer(Consumer<[u8]>),
    /// A record peeked (`shmbus_consumer_peek`), which owns the consumer
    /// until `shmbus_consumer_release`.
    Peeked(OwnedReadChunk<[u8]>),
}

impl ShmbusConsumer {
    fn new(consumer: Consumer<[u8]>) -> Self {
        ShmbusConsumer {
            max_record: consumer.max_record(),
            held: Some(Held::Consumer(consumer)),
        }
    }

    /// The consumer, for a call that reads: refused while a record is
    /// peeked (as a second loan is while one is out).
    fn reader(&mut self) -> Result<&mut Consumer<[u8]>, Failure> {
        match &mut self.held {
            Some(Held::Consumer(c)) => Ok(c),
            Some(Held::Peeked(chunk)) => Err(Failure::argument(format!(
                "this consumer holds a peeked record ({} bytes): release it \
                 (shmbus_consumer_release) before the next read",
                chunk.len()
            ))),
            None => Err(Failure::argument(
                "this consumer was lost by an earlier call that failed half-way: close it",
            )),
        }
    }
}

/// A failed read's status, for `pop` and `peek` alike.
fn pop_failed(e: PopError) -> Result<Status, Failure> {
    match e {
        // Statuses a polling loop sees often: no message to format.
        PopError::Empty => Ok(Status::SHMBUS_EMPTY),
        PopError::TimedOut(_) => Ok(Status::SHMBUS_TIMED_OUT),
        e @ PopError::PeerGone { .. } => Err(Failure::of(Status::SHMBUS_PEER_GONE, &e)),
        e => Err(error(e)),
    }
}

/// Creates the stream `name`, a ring of `opts->capacity` bytes, and
/// becomes its producer.
///
/// Statuses: `SHMBUS_OK` (`*out`, closed with `shmbus_producer_close`);
/// `SHMBUS_ERROR` (`*out` is NULL).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `opts` NULL or a valid
/// options struct; `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_producer_create(
    name: *const c_char,
    opts: *const StreamOpts,
    out: *mut *mut ShmbusProducer,
) -> Status {
    let make = |name: &str| {
        // SAFETY: `opts` as the contract says.
        let opts = unsafe { stream_options(opts) }?;
        Producer::<[u8]>::create(name, &opts)
            .map(ShmbusProducer)
            .map_err(error)
    };
    // SAFETY: `name` and `out` as the contract says.
    unsafe { new_handle(name, out, make) }
}

/// Becomes the producer of the existing stream `name` (its previous
/// producer exited or died).
///
/// Statuses: `SHMBUS_OK` (`*out`, closed with `shmbus_producer_close`);
/// `SHMBUS_ERROR` (no such stream, a live producer, ...; `*out` is NULL).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `opts` NULL or a valid
/// options struct; `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_producer_attach(
    name: *const c_char,
    opts: *const OpenOpts,
    out: *mut *mut ShmbusProducer,
) -> Status {
    // SAFETY: each pointer as the contract says.
    unsafe {
        open_handle(name, opts, out, |name, opts| {
            Producer::<[u8]>::attach(name, &opts.open).map(ShmbusProducer)
        })
    }
}

/// Appends the record of `len` bytes at `data`, waiting for room as
/// `timeout_ns` says. Records are never lost: a full stream waits for its
/// consumer.
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_FULL` (no room, `timeout_ns` 0);
/// `SHMBUS_TIMED_OUT`; `SHMBUS_PEER_GONE` (the consumer died and the
/// stream is full); `SHMBUS_ERROR` (longer than the largest record,
/// `shmbus_producer_max_record`; corrupt cursors). Nothing is appended
/// unless `SHMBUS_OK`.
///
/// # Safety
/// `producer` is NULL or a live producer; `data` valid for `len` bytes
/// (NULL allowed if `len` is 0).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_producer_push(
    producer: *mut ShmbusProducer,
    data: *const c_void,
    len: usize,
    timeout_ns: i64,
) -> Status {
    entry(|| {
        // SAFETY: each pointer as the contract says.
        let p = unsafe { handle(producer, "producer") }?;
        // SAFETY: as above.
        let data = unsafe { bytes(data, len, "data") }?;
        match p.0.push(data, wait_of(timeout_ns)) {
            Ok(()) => Ok(Status::SHMBUS_OK),
            // Statuses a polling loop sees often: no message to format.
            Err(PushError::Full) => Ok(Status::SHMBUS_FULL),
            Err(PushError::TimedOut(_)) => Ok(Status::SHMBUS_TIMED_OUT),
            Err(e @ PushError::PeerGone { .. }) => Err(Failure::of(Status::SHMBUS_PEER_GONE, &e)),
            Err(e) => Err(error(e)),
        }
    })
}

/// Writes the largest record the stream carries (half the ring less 8
/// bytes) to `*max`.
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_ERROR` (a NULL argument).
///
/// # Safety
/// `producer` is NULL or a live producer; `max` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_producer_max_record(
    producer: *mut ShmbusProducer,
    max: *mut usize,
) -> Status {
    // SAFETY: each pointer as the contract says.
    unsafe { query(producer, "producer", max, "max", |p| p.0.max_record()) }
}

/// Frees the producer (NULL: nothing). What it pushed stays for the
/// consumer.
///
/// # Safety
/// `producer` is NULL or a live producer, not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_producer_close(producer: *mut ShmbusProducer) {
    // SAFETY: NULL or a live handle `give` made, by the contract.
    entry_void(|| unsafe { take_back(producer) });
}

/// Opens the stream `name` as its consumer (one at a time; it carries on
/// where the last one stopped).
///
/// Statuses: `SHMBUS_OK` (`*out`, closed with `shmbus_consumer_close`);
/// `SHMBUS_ERROR` (no such stream, a live consumer, ...; `*out` is NULL).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `opts` NULL or a valid
/// options struct; `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_consumer_open(
    name: *const c_char,
    opts: *const OpenOpts,
    out: *mut *mut ShmbusConsumer,
) -> Status {
    // SAFETY: each pointer as the contract says.
    unsafe {
        open_handle(name, opts, out, |name, opts| {
            Consumer::<[u8]>::attach(name, &opts.open).map(ShmbusConsumer::new)
        })
    }
}

/// Pops the next record into `buf`, waiting as `timeout_ns` says. `*len`
/// holds the buffer's length on entry and the record's on `SHMBUS_MESSAGE`.
///
/// Statuses: `SHMBUS_MESSAGE`; `SHMBUS_EMPTY` (nothing, `timeout_ns` 0);
/// `SHMBUS_TIMED_OUT`; `SHMBUS_TOO_SMALL` (the record is longer than the
/// buffer: `*len` is its length and it stays first in the stream, so call
/// again with a buffer that long); `SHMBUS_PEER_GONE` (the producer died
/// and nothing is left); `SHMBUS_ERROR` (corrupt cursors or record). Only
/// `SHMBUS_MESSAGE` consumes a record. While a record is peeked
/// (`shmbus_consumer_peek`), `SHMBUS_ERROR` with
/// `SHMBUS_E_INVALID_ARGUMENT`: release it first.
///
/// # Safety
/// `consumer` is NULL or a live consumer; `buf` valid for `*len` writable
/// bytes; `len` NULL or an initialised, writable `size_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_consumer_pop(
    consumer: *mut ShmbusConsumer,
    buf: *mut c_void,
    len: *mut usize,
    timeout_ns: i64,
) -> Status {
    entry(|| {
        // SAFETY: each pointer as the contract says.
        let c = unsafe { handle(consumer, "consumer") }?;
        // SAFETY: as above.
        let cap = unsafe { capacity_in(len) }?;
        // SAFETY: as above.
        let out = unsafe { buffer(buf, cap, "buf") }?;
        let chunk = match c.reader()?.peek(wait_of(timeout_ns)) {
            Ok(chunk) => chunk,
            Err(e) => return pop_failed(e),
        };
        let n = chunk.len();
        if n > cap {
            // The chunk is not released: the record stays where it is.
            // SAFETY: as above (`len` is not NULL: capacity_in read it).
            unsafe { put(len, n) };
            return Err(Failure::new(
                Status::SHMBUS_TOO_SMALL,
                ErrorKind::TooLong,
                format!(
                    "the next record is {n} bytes, the buffer holds {cap}: it stays in the stream"
                ),
            ));
        }
        copy_into(&mut out[..n], &chunk);
        chunk.release();
        // SAFETY: as above.
        unsafe { put(len, n) };
        Ok(Status::SHMBUS_MESSAGE)
    })
}

/// Writes the largest record the stream carries to `*max` (a buffer this
/// long never gets `SHMBUS_TOO_SMALL`).
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_ERROR` (a NULL argument).
///
/// # Safety
/// `consumer` is NULL or a live consumer; `max` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_consumer_max_record(
    consumer: *mut ShmbusConsumer,
    max: *mut usize,
) -> Status {
    // SAFETY: each pointer as the contract says.
    unsafe { query(consumer, "consumer", max, "max", |c| c.max_record) }
}

/// Peeks at the next record where it lies, waiting as `timeout_ns` says.
/// On `SHMBUS_MESSAGE`, `*data` points to its `*len` bytes in the stream
/// (read-only; no copy), valid until `shmbus_consumer_release` (which
/// consumes the record) or `shmbus_consumer_close` (which leaves it for
/// the next consumer). One record at a time: until the release, another
/// peek or a pop is `SHMBUS_ERROR` with `SHMBUS_E_INVALID_ARGUMENT`.
///
/// Statuses: `SHMBUS_MESSAGE`; `SHMBUS_EMPTY` (nothing, `timeout_ns` 0);
/// `SHMBUS_TIMED_OUT`; `SHMBUS_PEER_GONE` (the producer died and nothing
/// is left); `SHMBUS_ERROR` (a record already peeked, a NULL argument,
/// corrupt cursors or record). Only `SHMBUS_MESSAGE` peeks a record.
///
/// # Safety
/// `consumer` is NULL or a live consumer; `data` and `len` NULL or
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_consumer_peek(
    consumer: *mut ShmbusConsumer,
    timeout_ns: i64,
    data: *mut *const u8,
    len: *mut usize,
) -> Status {
    entry(|| {
        // SAFETY: each pointer as the contract says.
        let h = unsafe { handle(consumer, "consumer") }?;
        // SAFETY: as above.
        let mut data = unsafe { out_ptr(data, "data") }?;
        // SAFETY: as above.
        let mut len = unsafe { out_ptr(len, "len") }?;
        h.reader()?;
        let Some(Held::Consumer(c)) = h.held.take() else {
            unreachable!("reader() found the consumer");
        };
        match c.into_chunk(wait_of(timeout_ns)) {
            Ok(chunk) => {
                data.set(chunk.as_ptr());
                len.set(chunk.len());
                h.held = Some(Held::Peeked(chunk));
                Ok(Status::SHMBUS_MESSAGE)
            }
            Err(failed) => {
                let (c, e) = failed.into_parts();
                h.held = Some(Held::Consumer(c));
                pop_failed(e)
            }
        }
    })
}

/// Consumes the record `shmbus_consumer_peek` gave (its bytes go back to
/// the producer: the pointer peek wrote is no longer valid).
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_ERROR` (no record is peeked, or a NULL
/// consumer: `SHMBUS_E_INVALID_ARGUMENT`).
///
/// # Safety
/// `consumer` is NULL or a live consumer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_consumer_release(consumer: *mut ShmbusConsumer) -> Status {
    entry(|| {
        // SAFETY: as the contract says.
        let h = unsafe { handle(consumer, "consumer") }?;
        match h.held.take() {
            Some(Held::Peeked(chunk)) => {
                h.held = Some(Held::Consumer(chunk.release()));
                Ok(Status::SHMBUS_OK)
            }
            other => {
                h.held = other;
                Err(Failure::argument(
                    "no record is peeked: nothing to release (shmbus_consumer_peek first)",
                ))
            }
        }
    })
}

/// Frees the consumer (NULL: nothing). Records not popped stay for the
/// next consumer, a peeked one not released among them.
///
/// # Safety
/// `consumer` is NULL or a live consumer, not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_consumer_close(consumer: *mut ShmbusConsumer) {
    // SAFETY: NULL or a live handle `give` made, by the contract.
    entry_void(|| unsafe { take_back(consumer) });
}
