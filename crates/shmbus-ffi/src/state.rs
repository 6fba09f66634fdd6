//! The keyed state of a journaled bus: `shmbus_state_*` joins the bus (as
//! `shmbus_journal_subscriber_join`) and folds every message into the
//! last value per key, a message's key being its first 8 bytes as a
//! little-endian `uint64_t` (as a raw journal compacts). It rejoins by
//! itself after a loss the journal cannot repair. The fold is the core's
//! `journal::State<[u8]>`.

use std::ffi::{c_char, c_void};

use shmbus_core::{ErrorKind, journal::State};

use crate::args::{
    buffer, capacity_in, copy_into, handle, nothing, out_ptr, put, take_back, wait_of,
};
use crate::bodies::{open_handle, query};
use crate::entry::{Failure, entry, entry_void, error};
use crate::journal::join_options;
use crate::options::{OpenOpts, Opened};
use crate::status::Status;

/// The keyed state of a journaled bus (opaque).
pub struct ShmbusState(State<[u8]>);

/// Joins the journaled bus `name` as `shmbus_journal_subscriber_join`
/// does (`opts` likewise; NULL for the defaults) and folds nothing yet:
/// call `shmbus_state_poll` or `shmbus_state_wait_for`.
///
/// Statuses: `SHMBUS_OK` (`*out`, closed with `shmbus_state_close`);
/// `SHMBUS_ERROR` (no such bus, no journal, the publisher died or did not
/// flush in time, ...; `*out` is NULL).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `opts` NULL or a valid
/// options struct; `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_state_join(
    name: *const c_char,
    opts: *const OpenOpts,
    out: *mut *mut ShmbusState,
) -> Status {
    let make =
        |name: &str, o: &Opened| State::<[u8]>::join(name, &join_options(o)).map(ShmbusState);
    // SAFETY: each pointer as the contract says.
    unsafe { open_handle(name, opts, out, make) }
}

/// Folds in every message there now, without waiting; writes how many it
/// took to `*folded` (`folded` may be NULL).
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_ERROR` (it had to join again after a
/// loss the journal could not repair, and that failed: the errors of
/// `shmbus_state_join`).
///
/// # Safety
/// `state` is NULL or a live state; `folded` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_state_poll(state: *mut ShmbusState, folded: *mut usize) -> Status {
    entry(|| {
        // SAFETY: each pointer as the contract says.
        let s = unsafe { handle(state, "state") }?;
        let n = s.0.poll().map_err(error)?;
        // SAFETY: as above.
        unsafe { put(folded, n) };
        Ok(Status::SHMBUS_OK)
    })
}

/// Folds in messages until sequence `seq` is in, waiting as `timeout_ns`
/// says.
///
/// Statuses: `SHMBUS_OK` (`seq` is in); `SHMBUS_EMPTY` (not yet,
/// `timeout_ns` 0); `SHMBUS_TIMED_OUT`; `SHMBUS_ERROR` (a rejoin failed,
/// as for `shmbus_state_poll`).
///
/// # Safety
/// `state` is NULL or a live state.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_state_wait_for(
    state: *mut ShmbusState,
    seq: u64,
    timeout_ns: i64,
) -> Status {
    entry(|| {
        // SAFETY: as the contract says.
        let s = unsafe { handle(state, "state") }?;
        if s.0.wait_for(seq, wait_of(timeout_ns)).map_err(error)? {
            Ok(Status::SHMBUS_OK)
        } else {
            Ok(nothing(timeout_ns))
        }
    })
}

/// Copies the last value of `key` (the whole message, the bus's message
/// size: `shmbus_state_msg_size`) into `buf`. `*len` holds the buffer's
/// length on entry and the value's on `SHMBUS_OK`.
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_EMPTY` (no value for `key` yet);
/// `SHMBUS_TOO_SMALL` (`*len` is the value's length; nothing copied);
/// `SHMBUS_ERROR` (a NULL argument).
///
/// # Safety
/// `state` is NULL or a live state; `buf` valid for `*len` writable bytes;
/// `len` NULL or an initialised, writable `size_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_state_get(
    state: *mut ShmbusState,
    key: u64,
    buf: *mut c_void,
    len: *mut usize,
) -> Status {
    entry(|| {
        // SAFETY: each pointer as the contract says.
        let s = unsafe { handle(state, "state") }?;
        // SAFETY: as above.
        let cap = unsafe { capacity_in(len) }?;
        let Some(value) = s.0.state().get(key) else {
            return Ok(Status::SHMBUS_EMPTY);
        };
        let n = value.len();
        if n > cap {
            // SAFETY: as above (`len` is not NULL: capacity_in read it).
            unsafe { put(len, n) };
            return Err(Failure::new(
                Status::SHMBUS_TOO_SMALL,
                ErrorKind::TooLong,
                format!("the value of key {key} is {n} bytes, the buffer holds {cap}"),
            ));
        }
        // SAFETY: as above.
        let out = unsafe { buffer(buf, cap, "buf") }?;
        copy_into(out, value);
        // SAFETY: as above.
        unsafe { put(len, n) };
        Ok(Status::SHMBUS_OK)
    })
}

/// Writes the keys folded so far, in ascending order, to `keys`. `*count`
/// holds how many `uint64_t` the array holds on entry, and how many keys
/// there are on `SHMBUS_OK` and `SHMBUS_TOO_SMALL` (then nothing is
/// written: call again with an array that long).
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_TOO_SMALL`; `SHMBUS_ERROR` (a NULL
/// argument).
///
/// # Safety
/// `state` is NULL or a live state; `keys` valid for `*count` writable
/// `uint64_t`; `count` NULL or an initialised, writable `size_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_state_keys(
    state: *mut ShmbusState,
    keys: *mut u64,
    count: *mut usize,
) -> Status {
    entry(|| {
        // SAFETY: each pointer as the contract says.
        let s = unsafe { handle(state, "state") }?;
        // SAFETY: as above.
        let cap = unsafe { capacity_in(count) }
            .map_err(|_| Failure::argument("count (the array's length, in and out) is NULL"))?;
        let mut all: Vec<u64> = s.0.state().iter().map(|(k, _)| k).collect();
        all.sort_unstable();
        let n = all.len();
        // SAFETY: as above (`count` is not NULL: capacity_in read it).
        unsafe { put(count, n) };
        if n > cap {
            return Err(Failure::new(
                Status::SHMBUS_TOO_SMALL,
                ErrorKind::TooLong,
                format!("the state holds {n} keys, the array {cap}"),
            ));
        }
        if n > 0 {
            if keys.is_null() {
                return Err(Failure::argument(format!("keys is NULL with count {cap}")));
            }
            // SAFETY: not NULL, valid for `cap >= n` writes (contract);
            // `copy_nonoverlapping` does not read what was there.
            unsafe { std::ptr::copy_nonoverlapping(all.as_ptr(), keys, n) };
        }
        Ok(Status::SHMBUS_OK)
    })
}

/// Writes how many keys the state holds to `*count`.
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_ERROR` (a NULL argument).
///
/// # Safety
/// `state` is NULL or a live state; `count` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_state_len(state: *mut ShmbusState, count: *mut usize) -> Status {
    // SAFETY: each pointer as the contract says.
    unsafe { query(state, "state", count, "count", |s| s.0.state().len()) }
}

/// Writes the sequence of the last message folded in to `*seq`.
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_EMPTY` (nothing folded yet: `*seq` is
/// left as it was); `SHMBUS_ERROR` (a NULL argument).
///
/// # Safety
/// `state` is NULL or a live state; `seq` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_state_last_seq(state: *mut ShmbusState, seq: *mut u64) -> Status {
    entry(|| {
        // SAFETY: each pointer as the contract says.
        let s = unsafe { handle(state, "state") }?;
        // SAFETY: as above.
        let mut out = unsafe { out_ptr(seq, "seq") }?;
        match s.0.state().last_seq() {
            Some(last) => {
                out.set(last);
                Ok(Status::SHMBUS_OK)
            }
            None => Ok(Status::SHMBUS_EMPTY),
        }
    })
}

/// Writes how many times the state joined again after a loss the journal
/// could not repair to `*rejoins`.
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_ERROR` (a NULL argument).
///
/// # Safety
/// `state` is NULL or a live state; `rejoins` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_state_rejoins(
    state: *mut ShmbusState,
    rejoins: *mut u64,
) -> Status {
    // SAFETY: each pointer as the contract says.
    unsafe { query(state, "state", rejoins, "rejoins", |s| s.0.rejoins()) }
}

/// Writes the bus's message size in bytes (every value's length) to
/// `*size`.
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_ERROR` (a NULL argument).
///
/// # Safety
/// `state` is NULL or a live state; `size` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_state_msg_size(
    state: *mut ShmbusState,
    size: *mut usize,
) -> Status {
    // SAFETY: each pointer as the contract says.
    unsafe {
        query(state, "state", size, "size", |s| {
            s.0.subscriber().msg_size()
        })
    }
}

/// Frees the state (NULL: nothing).
///
/// # Safety
/// `state` is NULL or a live state, not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_state_close(state: *mut ShmbusState) {
    // SAFETY: NULL or a live handle `give` made, by the contract.
    entry_void(|| unsafe { take_back(state) });
}
