//! Pool buses: messages of any length up to a block live in a pool of
//! blocks in shared memory. A publisher loans a block
//! (`shmbus_pool_publisher_loan` → `shmbus_loan_t`), writes the message in
//! place and publishes it; a subscriber receives a `shmbus_sample_t` that
//! points at the block in place, and holds it until
//! `shmbus_sample_release`.
//!
//! # How a loan is kept
//! A loan owns its publisher: `shmbus_pool_publisher_loan` moves the
//! handle's `pool::Publisher` into an `OwnedLoan` (`into_loan`), leaving the
//! handle's `publisher` empty, and the loan's end (publish or discard)
//! puts it back. So "a loan is out" is that empty slot: every call that
//! needs the publisher refuses meanwhile, as a second loan does. Closing
//! the handle with a loan out only sets `closed`, and the loan's end then
//! drops the publisher it gets back and frees the handle, so the handle a
//! loan points to (to give its publisher back) outlives the loan.

use std::ffi::{c_char, c_void};
use std::ptr::NonNull;

use shmbus_core::{
    Received,
    pool::{self, LoanError, OwnedLoan, Sample},
};

use crate::args::{give, handle, nothing, out_handle, put, take_back, wait_of};
use crate::bodies::{create_handle, lagged, open_handle, query};
use crate::entry::{Failure, entry, entry_void, error};
use crate::options::{BusOpts, OpenOpts};
use crate::status::Status;

/// How many samples one pool subscriber may hold at once.
pub const SHMBUS_POOL_MAX_HELD: u32 = 8;

/// A publisher of a pool bus (opaque).
pub struct ShmbusPoolPublisher {
    /// The publisher; `None` while a `ShmbusLoan` owns it.
    publisher: Option<pool::Publisher<[u8]>>,
    /// Its block size, so asking for it never needs a loaned publisher.
    block_size: usize,
    /// `shmbus_pool_publisher_close` was called while a loan was out.
    closed: bool,
}

/// A block loaned to a pool publisher, to write a message into (opaque).
pub struct ShmbusLoan {
    /// The loan, which owns the publisher until it ends.
    loan: OwnedLoan<[u8]>,
    /// The publisher handle it was loaned from (the pointer C passed in),
    /// to which the loan's end gives the publisher back (see the module
    /// comment for why that handle outlives the loan).
    owner: NonNull<ShmbusPoolPublisher>,
}

/// A subscriber of a pool bus (opaque).
pub struct ShmbusPoolSubscriber(pool::Subscriber<[u8]>);

/// One received message of a pool bus, held in place (opaque). It keeps
/// the bus mapped: it may outlive its subscriber.
pub struct ShmbusSample(Sample<[u8]>);

fn wrap(p: pool::Publisher<[u8]>) -> ShmbusPoolPublisher {
    ShmbusPoolPublisher {
        block_size: p.block_size(),
        publisher: Some(p),
        closed: false,
    }
}

/// Creates the pool bus `name`: `opts->capacity` slots, a pool of
/// `opts->pool_blocks` blocks of `opts->pool_block_size` bytes (msg_size
/// and type_name are not used), and becomes its one publisher.
///
/// Statuses: `SHMBUS_OK` (`*out`, closed with
/// `shmbus_pool_publisher_close`); `SHMBUS_ERROR` (`*out` is NULL).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `opts` NULL or a valid
/// options struct; `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_pool_publisher_create(
    name: *const c_char,
    opts: *const BusOpts,
    out: *mut *mut ShmbusPoolPublisher,
) -> Status {
    // SAFETY: each pointer as the contract says.
    unsafe {
        create_handle(name, opts, out, |name, opts| {
            pool::Publisher::<[u8]>::create(name, opts).map(wrap)
        })
    }
}

/// As `shmbus_pool_publisher_create`, for a pool bus any number of
/// publishers share (`shmbus_pool_publisher_attach_many`).
///
/// # Safety
/// As `shmbus_pool_publisher_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_pool_publisher_create_many(
    name: *const c_char,
    opts: *const BusOpts,
    out: *mut *mut ShmbusPoolPublisher,
) -> Status {
    // SAFETY: each pointer as the contract says.
    unsafe {
        create_handle(name, opts, out, |name, opts| {
            pool::Publisher::<[u8]>::create_many(name, opts).map(wrap)
        })
    }
}

/// Becomes the publisher of the existing single-publisher pool bus `name`
/// (`shmbus create --pool`); loans a dead publisher left are freed.
///
/// Statuses: `SHMBUS_OK` (`*out`, closed with
/// `shmbus_pool_publisher_close`); `SHMBUS_ERROR` (no such bus, not a pool
/// bus, a live publisher, ...; `*out` is NULL).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `opts` NULL or a valid
/// options struct; `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_pool_publisher_attach(
    name: *const c_char,
    opts: *const OpenOpts,
    out: *mut *mut ShmbusPoolPublisher,
) -> Status {
    // SAFETY: each pointer as the contract says.
    unsafe {
        open_handle(name, opts, out, |name, opts| {
            pool::Publisher::<[u8]>::attach(name, &opts.open).map(wrap)
        })
    }
}

/// Becomes one more publisher of the existing many-publisher pool bus
/// `name`.
///
/// # Safety
/// As `shmbus_pool_publisher_attach`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_pool_publisher_attach_many(
    name: *const c_char,
    opts: *const OpenOpts,
    out: *mut *mut ShmbusPoolPublisher,
) -> Status {
    // SAFETY: each pointer as the contract says.
    unsafe {
        open_handle(name, opts, out, |name, opts| {
            pool::Publisher::<[u8]>::attach_many(name, &opts.open).map(wrap)
        })
    }
}

/// Loans a block for a message of `len` bytes (at most the block size;
/// `shmbus_loan_truncate` publishes fewer), waiting as `timeout_ns` says
/// while every block is in use. On `SHMBUS_OK`, `*loan` is the loan and
/// `*data` (`data` may be NULL; see also `shmbus_loan_data`) points to its
/// `len` writable bytes, 64-byte aligned, which hold whatever the block
/// held before: write all of them, then `shmbus_loan_publish` or
/// `shmbus_loan_discard`. One loan per publisher at a time.
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_FULL` (no free block, `timeout_ns` 0) or
/// `SHMBUS_TIMED_OUT`, both with a message giving where the blocks are;
/// `SHMBUS_ERROR` (`len` above the block size, a loan already out; `*loan`
/// is NULL).
///
/// # Safety
/// `publisher` is NULL or a live publisher; `loan` NULL or writable;
/// `data` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_pool_publisher_loan(
    publisher: *mut ShmbusPoolPublisher,
    len: usize,
    timeout_ns: i64,
    loan: *mut *mut ShmbusLoan,
    data: *mut *mut c_void,
) -> Status {
    entry(|| {
        // SAFETY: each pointer as the contract says.
        let out = unsafe { out_handle(loan) }?;
        let owner =
            NonNull::new(publisher).ok_or_else(|| Failure::argument("publisher is NULL"))?;
        // SAFETY: as above.
        let h = unsafe { handle(publisher, "publisher") }?;
        let Some(p) = h.publisher.take() else {
            return Err(Failure::argument(
                "this publisher has a loan out: publish or discard it before the next loan",
            ));
        };
        let mut l = match p.into_loan(len, wait_of(timeout_ns)) {
            Ok(l) => l,
            Err(failed) => {
                let (p, e) = failed.into_parts();
                h.publisher = Some(p);
                return Err(match e {
                    LoanError::Exhausted { .. } if timeout_ns == 0 => {
                        Failure::of(Status::SHMBUS_FULL, &e)
                    }
                    LoanError::Exhausted { .. } => Failure::of(Status::SHMBUS_TIMED_OUT, &e),
                    other => error(other),
                });
            }
        };
        // SAFETY: as the contract says.
        unsafe { put(data, l.as_mut_ptr().cast()) };
        give(out, ShmbusLoan { loan: l, owner })
    })
}

/// Writes the loan's bytes to `*data` and their length to `*len` (either
/// may be NULL).
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_ERROR` (a NULL loan).
///
/// # Safety
/// `loan` is NULL or a live loan; `data`, `len` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_loan_data(
    loan: *mut ShmbusLoan,
    data: *mut *mut c_void,
    len: *mut usize,
) -> Status {
    entry(|| {
        // SAFETY: each pointer as the contract says.
        let l = unsafe { handle(loan, "loan") }?;
        // SAFETY: as above.
        unsafe { put(data, l.loan.as_mut_ptr().cast()) };
        // SAFETY: as above.
        unsafe { put(len, l.loan.len()) };
        Ok(Status::SHMBUS_OK)
    })
}

/// Shortens the loan's message to its first `len` bytes, so a writer that
/// learns the length only as it writes can loan a whole block
/// (`shmbus_pool_publisher_block_size`) and publish what it wrote.
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_ERROR` (a NULL loan, or `len` above the
/// loan's length: a loan never grows).
///
/// # Safety
/// `loan` is NULL or a live loan.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_loan_truncate(loan: *mut ShmbusLoan, len: usize) -> Status {
    entry(|| {
        // SAFETY: as the contract says.
        let l = unsafe { handle(loan, "loan") }?;
        let have = l.loan.len();
        if len > have {
            return Err(Failure::argument(format!(
                "a loan of {have} bytes cannot be truncated to {len}: a loan never grows"
            )));
        }
        l.loan.truncate(len);
        Ok(Status::SHMBUS_OK)
    })
}

/// Ends a loan: publishes it (`publish`) or gives the block back. Frees
/// the loan handle, and the publisher's if it was closed meanwhile.
///
/// # Safety
/// `loan` is a live loan (not NULL), not used again.
unsafe fn end_loan(loan: *mut ShmbusLoan, publish: bool) -> Result<Option<u64>, Failure> {
    // SAFETY: made by Box::into_raw in `give`, not freed yet (contract).
    let ShmbusLoan { loan, owner } = *unsafe { Box::from_raw(loan) };
    let (publisher, result) = if publish {
        let (publisher, published) = loan.publish();
        (publisher, Some(published))
    } else {
        (loan.cancel(), None)
    };
    // SAFETY: the owner handle is live: it is freed only when closed with
    // no loan out, and this loan was out until now; no reference to it is
    // held between calls (the loan keeps only its pointer).
    let h = unsafe { &mut *owner.as_ptr() };
    if h.closed {
        drop(publisher);
        // SAFETY: made by `give`, closed by C (never used again), and no
        // loan is out any more to give a publisher back to it.
        unsafe { take_back(owner.as_ptr()) };
    } else {
        h.publisher = Some(publisher);
    }
    match result {
        None => Ok(None),
        Some(Ok(seq)) => Ok(Some(seq)),
        Some(Err(abandoned)) => Err(Failure::of(Status::SHMBUS_ABANDONED, &abandoned)),
    }
}

/// Publishes the loan's message (its `len` bytes, as loaned or
/// truncated) and writes its sequence number to `*seq` (`seq` may be
/// NULL). The loan handle is freed whatever the status: do not use it or
/// its bytes again.
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_ABANDONED` (a many-publisher bus skipped
/// the claim: nothing published, the block is free again); `SHMBUS_ERROR`
/// (a NULL loan).
///
/// # Safety
/// `loan` is NULL or a live loan, not used again; `seq` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_loan_publish(loan: *mut ShmbusLoan, seq: *mut u64) -> Status {
    entry(|| {
        if loan.is_null() {
            return Err(Failure::argument("loan is NULL"));
        }
        // SAFETY: live and not used again, by the contract.
        let s = unsafe { end_loan(loan, true) }?;
        if let Some(s) = s {
            // SAFETY: NULL or writable, by the contract.
            unsafe { put(seq, s) };
        }
        Ok(Status::SHMBUS_OK)
    })
}

/// Gives the loan's block back unpublished and frees the loan (NULL:
/// nothing).
///
/// # Safety
/// `loan` is NULL or a live loan, not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_loan_discard(loan: *mut ShmbusLoan) {
    entry_void(|| {
        if !loan.is_null() {
            // SAFETY: live and not used again, by the contract.
            let _ = unsafe { end_loan(loan, false) };
        }
    });
}

/// Writes the pool's block size (the longest message) to `*size`.
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_ERROR` (a NULL argument).
///
/// # Safety
/// `publisher` is NULL or a live publisher; `size` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_pool_publisher_block_size(
    publisher: *mut ShmbusPoolPublisher,
    size: *mut usize,
) -> Status {
    // SAFETY: each pointer as the contract says.
    unsafe { query(publisher, "publisher", size, "size", |h| h.block_size) }
}

/// Closes the publisher (NULL: nothing). With a loan out, the publisher
/// lives on until that loan is published or discarded.
///
/// # Safety
/// `publisher` is NULL or a live publisher, not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_pool_publisher_close(publisher: *mut ShmbusPoolPublisher) {
    entry_void(|| {
        let Some(h) = NonNull::new(publisher) else {
            return;
        };
        // SAFETY: a live handle (contract); the loan, if any, does not hold
        // a reference to the handle between calls, only its pointer.
        let handle = unsafe { &mut *h.as_ptr() };
        if handle.publisher.is_none() {
            // A loan owns the publisher: its end frees both.
            handle.closed = true;
        } else {
            // SAFETY: made by `give`, not used again (contract), no loan out.
            unsafe { take_back(h.as_ptr()) };
        }
    });
}

/// Opens the pool bus `name` as a subscriber that starts where
/// `opts->start` says (NULL `opts`: at the next message).
///
/// Statuses: `SHMBUS_OK` (`*out`, closed with
/// `shmbus_pool_subscriber_close`); `SHMBUS_ERROR` (no such bus, not a
/// pool bus, ...; `*out` is NULL).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `opts` NULL or a valid
/// options struct; `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_pool_subscriber_open(
    name: *const c_char,
    opts: *const OpenOpts,
    out: *mut *mut ShmbusPoolSubscriber,
) -> Status {
    // SAFETY: each pointer as the contract says.
    unsafe {
        open_handle(name, opts, out, |name, opts| {
            pool::Subscriber::<[u8]>::open(name, &opts.open).map(ShmbusPoolSubscriber)
        })
    }
}

/// Receives the next message in place, waiting as `timeout_ns` says. On
/// `SHMBUS_MESSAGE`, `*sample` holds it (`shmbus_sample_data` gives its
/// bytes, length and sequence) until `shmbus_sample_release`; a subscriber
/// holds at most `SHMBUS_POOL_MAX_HELD` samples.
///
/// Statuses: `SHMBUS_MESSAGE`; `SHMBUS_LAGGED` (`*skipped` messages lost);
/// `SHMBUS_EMPTY` (`timeout_ns` 0); `SHMBUS_TIMED_OUT`; `SHMBUS_FULL`
/// (already holding `SHMBUS_POOL_MAX_HELD` samples: release one; nothing
/// was received; with a message); `SHMBUS_ERROR`. `*sample` is NULL
/// unless `SHMBUS_MESSAGE`.
///
/// # Safety
/// `subscriber` is NULL or a live subscriber; `sample` NULL or writable;
/// `skipped` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_pool_subscriber_recv(
    subscriber: *mut ShmbusPoolSubscriber,
    sample: *mut *mut ShmbusSample,
    skipped: *mut u64,
    timeout_ns: i64,
) -> Status {
    entry(|| {
        // SAFETY: each pointer as the contract says.
        let out = unsafe { out_handle(sample) }?;
        // SAFETY: as above.
        let s = unsafe { handle(subscriber, "subscriber") }?;
        match s.0.recv(wait_of(timeout_ns)) {
            Ok(Some(Received::Message(m))) => {
                give(out, ShmbusSample(m))?;
                Ok(Status::SHMBUS_MESSAGE)
            }
            // SAFETY: as above.
            Ok(Some(Received::Lagged { skipped: n })) => unsafe { lagged(skipped, n) },
            Ok(None) => Ok(nothing(timeout_ns)),
            Err(e @ pool::RecvError::TooManySamples { .. }) => {
                Err(Failure::of(Status::SHMBUS_FULL, &e))
            }
            Err(e) => Err(error(e)),
        }
    })
}

/// Writes the sample's bytes (in place in shared memory: read them, do not
/// write them) to `*data`, its length to `*len` and its sequence number to
/// `*seq` (each may be NULL). The bytes stay valid until
/// `shmbus_sample_release`.
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_ERROR` (a NULL sample).
///
/// # Safety
/// `sample` is NULL or a live sample; `data`, `len`, `seq` NULL or
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_sample_data(
    sample: *mut ShmbusSample,
    data: *mut *const c_void,
    len: *mut usize,
    seq: *mut u64,
) -> Status {
    entry(|| {
        // SAFETY: each pointer as the contract says.
        let s = unsafe { handle(sample, "sample") }?;
        // SAFETY: as above.
        unsafe { put(data, s.0.as_ptr().cast()) };
        // SAFETY: as above.
        unsafe { put(len, s.0.len()) };
        // SAFETY: as above.
        unsafe { put(seq, s.0.sequence()) };
        Ok(Status::SHMBUS_OK)
    })
}

/// Lets the sample's block go (NULL: nothing). A sample may outlive its
/// subscriber.
///
/// # Safety
/// `sample` is NULL or a live sample, not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_sample_release(sample: *mut ShmbusSample) {
    // SAFETY: NULL or a live handle `give` made, by the contract.
    entry_void(|| unsafe { take_back(sample) });
}

/// Frees the subscriber (NULL: nothing); samples it received stay valid
/// until released.
///
/// # Safety
/// `subscriber` is NULL or a live subscriber, not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_pool_subscriber_close(subscriber: *mut ShmbusPoolSubscriber) {
    // SAFETY: NULL or a live handle `give` made, by the contract.
    entry_void(|| unsafe { take_back(subscriber) });
}
