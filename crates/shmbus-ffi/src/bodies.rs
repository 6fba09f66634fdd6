//! The bodies that many entry points share: making a handle from a name,
//! reading one value of a handle, publishing bytes, receiving into the
//! caller's buffer. Each takes the entry point's raw arguments, so the
//! order in which they are checked (and so which message a call with two
//! bad arguments gets) is the same everywhere.

use std::ffi::{c_char, c_void};
use std::mem::MaybeUninit;

use shmbus_core::ErrorKind;

use crate::args::{
    buffer, bytes, c_str, capacity_in, copy_into, give, handle, out_handle, out_ptr, put,
};
use crate::entry::{Failure, Outcome, entry, error};
use crate::error_code::Classified;
use crate::options::{BusOpts, CreateOptions, OpenOpts, Opened, open_options};
use crate::status::Status;

/// The body of every call that makes a handle from a name: `*out` is made
/// NULL before anything else is looked at (so it is NULL on every
/// failure), then `name` is read and `make` runs with it.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `out` NULL or writable.
pub(crate) unsafe fn new_handle<H>(
    name: *const c_char,
    out: *mut *mut H,
    make: impl FnOnce(&str) -> Result<H, Failure>,
) -> Status {
    entry(|| {
        // SAFETY: NULL or writable, by this function's contract.
        let out = unsafe { out_handle(out) }?;
        // SAFETY: NULL or NUL-terminated, by this function's contract.
        let name = unsafe { c_str(name, "name") }?;
        give(out, make(name)?)
    })
}

/// [`new_handle`] for a call that creates a bus from
/// `shmbus_bus_options_t`, read as the options `make` takes (a copying
/// bus's or a pool bus's).
///
/// # Safety
/// As [`new_handle`]; `opts` as [`crate::options::bus_options`] says.
pub(crate) unsafe fn create_handle<H, E: Classified, O: CreateOptions>(
    name: *const c_char,
    opts: *const BusOpts,
    out: *mut *mut H,
    make: impl FnOnce(&str, &O) -> Result<H, E>,
) -> Status {
    let make = |name: &str| {
        // SAFETY: `opts` as this function's contract says.
        let opts = unsafe { O::from_c(opts) }?;
        make(name, &opts).map_err(error)
    };
    // SAFETY: `name` and `out` as this function's contract says.
    unsafe { new_handle(name, out, make) }
}

/// [`new_handle`] for a call that opens (or attaches to, or joins) an
/// existing bus or stream with `shmbus_open_options_t`.
///
/// # Safety
/// As [`new_handle`]; `opts` as [`open_options`] says.
pub(crate) unsafe fn open_handle<H, E: Classified>(
    name: *const c_char,
    opts: *const OpenOpts,
    out: *mut *mut H,
    make: impl FnOnce(&str, &Opened) -> Result<H, E>,
) -> Status {
    let make = |name: &str| {
        // SAFETY: `opts` as this function's contract says.
        let opts = unsafe { open_options(opts) }?;
        make(name, &opts).map_err(error)
    };
    // SAFETY: `name` and `out` as this function's contract says.
    unsafe { new_handle(name, out, make) }
}

/// The body of the calls that write one value of a handle to a required
/// out-parameter `out` (named `out_what` in the message if it is NULL).
///
/// # Safety
/// `ptr` as [`handle`] says; `out` NULL or writable.
pub(crate) unsafe fn query<H, T>(
    ptr: *mut H,
    what: &str,
    out: *mut T,
    out_what: &str,
    value: impl FnOnce(&H) -> T,
) -> Status {
    entry(|| {
        // SAFETY: as this function's contract says.
        let h = unsafe { handle(ptr, what) }?;
        // SAFETY: as this function's contract says.
        unsafe { out_ptr(out, out_what) }?.set(value(h));
        Ok(Status::SHMBUS_OK)
    })
}

/// The body of the calls that publish the `len` bytes at `data` through
/// the publisher `ptr` and write the new message's sequence to `*seq`
/// (`seq` may be NULL).
///
/// # Safety
/// `ptr` as [`handle`] says; `data` as [`bytes`]; `seq` NULL or writable.
pub(crate) unsafe fn publish_bytes<H>(
    ptr: *mut H,
    data: *const c_void,
    len: usize,
    seq: *mut u64,
    publish: impl FnOnce(&mut H, &[u8]) -> Result<u64, Failure>,
) -> Status {
    entry(|| {
        // SAFETY: as this function's contract says.
        let p = unsafe { handle(ptr, "publisher") }?;
        // SAFETY: as this function's contract says.
        let data = unsafe { bytes(data, len, "data") }?;
        let s = publish(p, data)?;
        // SAFETY: as this function's contract says.
        unsafe { put(seq, s) };
        Ok(Status::SHMBUS_OK)
    })
}

/// The caller's buffer (`buf`, `*len` bytes) for a message of `need`
/// bytes; if it is shorter, `SHMBUS_TOO_SMALL` with `*len` set to `need`
/// and nothing received.
///
/// # Safety
/// `len` is NULL or an initialised, writable `size_t`; `buf` as
/// [`buffer`] says for `*len` bytes.
pub(crate) unsafe fn message_buffer<'a>(
    buf: *mut c_void,
    len: *mut usize,
    need: usize,
) -> Result<&'a mut [MaybeUninit<u8>], Failure> {
    // SAFETY: as this function's contract says.
    let cap = unsafe { capacity_in(len) }?;
    if cap < need {
        // SAFETY: writable by the contract, and not NULL: capacity_in read
        // it.
        unsafe { put(len, need) };
        return Err(Failure::new(
            Status::SHMBUS_TOO_SMALL,
            ErrorKind::TooLong,
            format!(
                "the buffer holds {cap} bytes, a message of this bus is {need}: \
                 nothing was received"
            ),
        ));
    }
    // SAFETY: as this function's contract says.
    unsafe { buffer(buf, cap, "buf") }
}

/// Copies a received message into the buffer [`message_buffer`] gave
/// (which holds at least its length) and writes its length to `*len`.
///
/// # Safety
/// `len` is NULL or writable.
pub(crate) unsafe fn deliver(out: &mut [MaybeUninit<u8>], len: *mut usize, msg: &[u8]) -> Outcome {
    copy_into(out, msg);
    // SAFETY: as this function's contract says.
    unsafe { put(len, msg.len()) };
    Ok(Status::SHMBUS_MESSAGE)
}

/// A receive that found its subscriber lapped: the count lost goes to
/// `*skipped` (`skipped` may be NULL).
///
/// # Safety
/// `skipped` is NULL or writable.
pub(crate) unsafe fn lagged(skipped: *mut u64, n: u64) -> Outcome {
    // SAFETY: as this function's contract says.
    unsafe { put(skipped, n) };
    Ok(Status::SHMBUS_LAGGED)
}
