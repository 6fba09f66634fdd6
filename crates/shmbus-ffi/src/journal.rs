//! Journaled buses: `shmbus_journal_publisher_*` appends every message to
//! a file before it goes on the ring, and `shmbus_journal_subscriber_*`
//! joins late and still gets every message, without gap or duplicate.

use std::ffi::{c_char, c_void};

use shmbus_core::{
    ErrorKind, Received,
    journal::{self, Entry, JoinOptions},
};

use crate::args::{c_str, handle, nothing, put, required, take_back, wait_of};
use crate::bodies::{
    deliver, lagged, message_buffer, new_handle, open_handle, publish_bytes, query,
};
use crate::entry::{Failure, entry, entry_void, error};
use crate::options::{BusOpts, OpenOpts, Opened, bus_options};
use crate::status::Status;

/// Where a journaled bus keeps its journal (`shmbus_journal_publisher_create`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct JournalOpts {
    /// The journal file (its directory must exist; an existing journal is
    /// continued). Required.
    pub path: *const c_char,
    /// How much the file grows by at a time (0 = 8 MiB).
    pub chunk_bytes: u64,
    /// How much file to allocate ahead at the start (0 = one chunk).
    pub preallocate_bytes: u64,
}

/// The publisher of a journaled bus (opaque).
pub struct ShmbusJournalPublisher(journal::Publisher<[u8]>);

/// A subscriber of a journaled bus that started with its journal (opaque).
pub struct ShmbusJournalSubscriber(journal::Subscriber<[u8]>);

/// Creates the journaled bus `name` (`opts` as for
/// `shmbus_publisher_create`) with its journal at `journal->path` (an
/// existing journal there is continued: the bus carries on its sequence),
/// and becomes its publisher.
///
/// Statuses: `SHMBUS_OK` (`*out`, closed with
/// `shmbus_journal_publisher_close`); `SHMBUS_ERROR` (`*out` is NULL).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `opts` and `journal` NULL or
/// valid options structs; `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_journal_publisher_create(
    name: *const c_char,
    opts: *const BusOpts,
    journal: *const JournalOpts,
    out: *mut *mut ShmbusJournalPublisher,
) -> Status {
    let make = |name: &str| {
        // SAFETY: `opts` as the contract says.
        let opts = unsafe { bus_options(opts) }?;
        // SAFETY: `journal` as the contract says.
        let j = unsafe { required(journal, "journal options (shmbus_journal_options_t*)") }?;
        // SAFETY: a valid options struct's path is NULL or a C string.
        let path = unsafe { c_str(j.path, "journal path") }?;
        let mut jo = journal::Options::new(path);
        if j.chunk_bytes != 0 {
            jo = jo.chunk_bytes(usize::try_from(j.chunk_bytes).unwrap_or(usize::MAX));
        }
        if j.preallocate_bytes != 0 {
            jo = jo.preallocate_bytes(usize::try_from(j.preallocate_bytes).unwrap_or(usize::MAX));
        }
        journal::Publisher::<[u8]>::create(name, &opts, &jo)
            .map(ShmbusJournalPublisher)
            .map_err(error)
    };
    // SAFETY: `name` and `out` as the contract says.
    unsafe { new_handle(name, out, make) }
}

/// Becomes the publisher of the existing journaled bus `name` (made by
/// `shmbus create --journal`, or whose publisher exited or died),
/// carrying on its journal and sequence.
///
/// Statuses: `SHMBUS_OK` (`*out`, closed with
/// `shmbus_journal_publisher_close`); `SHMBUS_ERROR` (no such bus, no
/// journal, a live publisher, ...; `*out` is NULL).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `opts` NULL or a valid
/// options struct; `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_journal_publisher_attach(
    name: *const c_char,
    opts: *const OpenOpts,
    out: *mut *mut ShmbusJournalPublisher,
) -> Status {
    // SAFETY: each pointer as the contract says.
    unsafe {
        open_handle(name, opts, out, |name, opts| {
            journal::Publisher::<[u8]>::attach(name, &opts.open).map(ShmbusJournalPublisher)
        })
    }
}

/// Appends the `len` bytes at `data` (zero-padded to the message size) to
/// the journal, then publishes them; writes the sequence to `*seq` (`seq`
/// may be NULL).
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_ERROR` (longer than the message size, a
/// full disk, an I/O error: neither journaled nor published).
///
/// # Safety
/// `publisher` is NULL or a live publisher; `data` valid for `len` bytes
/// (NULL allowed if `len` is 0); `seq` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_journal_publisher_publish(
    publisher: *mut ShmbusJournalPublisher,
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

/// Makes everything published so far durable (`fdatasync` of the
/// journal). Joining subscribers need no flush from you: they ask the
/// publisher for one, which it serves from its own thread.
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_ERROR` (the sync failed).
///
/// # Safety
/// `publisher` is NULL or a live publisher.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_journal_publisher_flush(
    publisher: *mut ShmbusJournalPublisher,
) -> Status {
    entry(|| {
        // SAFETY: the pointer as the contract says.
        let p = unsafe { handle(publisher, "publisher") }?;
        p.0.flush().map_err(|e| {
            let message = format!("flushing the journal: {e}");
            Failure::new(Status::SHMBUS_ERROR, ErrorKind::Journal, message)
        })?;
        Ok(Status::SHMBUS_OK)
    })
}

/// Writes the bus's message size in bytes to `*size`.
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_ERROR` (a NULL argument).
///
/// # Safety
/// `publisher` is NULL or a live publisher; `size` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_journal_publisher_msg_size(
    publisher: *mut ShmbusJournalPublisher,
    size: *mut usize,
) -> Status {
    // SAFETY: each pointer as the contract says.
    unsafe { query(publisher, "publisher", size, "size", |p| p.0.msg_size()) }
}

/// Stops publishing (its threads finish; a compaction under way is
/// completed) and frees the publisher, whatever the status (NULL:
/// `SHMBUS_OK`).
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_ERROR` (a compaction failed: the journal
/// is left whole, uncompacted).
///
/// # Safety
/// `publisher` is NULL or a live publisher, not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_journal_publisher_close(
    publisher: *mut ShmbusJournalPublisher,
) -> Status {
    entry(|| {
        if publisher.is_null() {
            return Ok(Status::SHMBUS_OK);
        }
        // SAFETY: a live handle `give` made (Box::into_raw), not freed yet,
        // by the contract.
        let p = unsafe { Box::from_raw(publisher) };
        p.0.close().map_err(error)?;
        Ok(Status::SHMBUS_OK)
    })
}

/// Joins the journaled bus `name`: waits for the publisher to flush, then
/// delivers the journal from its start and goes on with the ring, every
/// sequence once, in order. `opts` may be NULL: `wait`, `spin_ns`,
/// `init_timeout_ns`, `flush_timeout_ns` and the type fields apply;
/// `start` does not (a joiner starts with the journal).
///
/// Statuses: `SHMBUS_OK` (`*out`, closed with
/// `shmbus_journal_subscriber_close`); `SHMBUS_ERROR` (no such bus, no
/// journal, the publisher died or did not flush in time, ...; `*out` is
/// NULL).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `opts` NULL or a valid
/// options struct; `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_journal_subscriber_join(
    name: *const c_char,
    opts: *const OpenOpts,
    out: *mut *mut ShmbusJournalSubscriber,
) -> Status {
    let make = |name: &str, o: &Opened| {
        journal::Subscriber::<[u8]>::join(name, &join_options(o)).map(ShmbusJournalSubscriber)
    };
    // SAFETY: each pointer as the contract says.
    unsafe { open_handle(name, opts, out, make) }
}

/// The join options C's open options give (`start` does not apply).
pub(crate) fn join_options(o: &Opened) -> JoinOptions {
    let mut join = JoinOptions::default()
        .wait_strategy(o.wait)
        .init_timeout(o.init_timeout);
    if let Some(t) = o.flush_timeout {
        join = join.flush_timeout(t);
    }
    if let Some((type_name, size, align)) = &o.message_type {
        join = join.message_type(type_name, *size, *align);
    }
    join
}

/// Receives the next message into `buf` with its sequence number in
/// `*seq`, waiting as `timeout_ns` says. `*len` holds the buffer's length
/// on entry and the message's (the message size) on `SHMBUS_MESSAGE`.
///
/// Statuses: `SHMBUS_MESSAGE`; `SHMBUS_LAGGED` (`*skipped` messages were
/// lost that neither the ring nor the journal still had); `SHMBUS_EMPTY`
/// (`timeout_ns` 0); `SHMBUS_TIMED_OUT`; `SHMBUS_TOO_SMALL` (`*len` is the
/// message size; nothing received); `SHMBUS_ERROR`.
///
/// # Safety
/// `subscriber` is NULL or a live subscriber; `buf` valid for `*len`
/// writable bytes; `len` NULL or an initialised, writable `size_t`; `seq`
/// and `skipped` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_journal_subscriber_recv(
    subscriber: *mut ShmbusJournalSubscriber,
    buf: *mut c_void,
    len: *mut usize,
    seq: *mut u64,
    skipped: *mut u64,
    timeout_ns: i64,
) -> Status {
    entry(|| {
        // SAFETY: each pointer as the contract says.
        let s = unsafe { handle(subscriber, "subscriber") }?;
        // SAFETY: as above.
        let out = unsafe { message_buffer(buf, len, s.0.msg_size()) }?;
        match s.0.recv(wait_of(timeout_ns)) {
            Some(Received::Message(Entry { seq: n, msg })) => {
                // SAFETY: as above.
                unsafe { put(seq, n) };
                // SAFETY: as above.
                unsafe { deliver(out, len, msg) }
            }
            // SAFETY: as above.
            Some(Received::Lagged { skipped: n }) => unsafe { lagged(skipped, n) },
            None => Ok(nothing(timeout_ns)),
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
pub unsafe extern "C" fn shmbus_journal_subscriber_msg_size(
    subscriber: *mut ShmbusJournalSubscriber,
    size: *mut usize,
) -> Status {
    // SAFETY: each pointer as the contract says.
    unsafe { query(subscriber, "subscriber", size, "size", |s| s.0.msg_size()) }
}

/// Writes the sequence this subscriber delivers next to `*seq`, and
/// whether it has caught up with the ring (past the journal) to `*live`
/// (either may be NULL).
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_ERROR` (a NULL subscriber).
///
/// # Safety
/// `subscriber` is NULL or a live subscriber; `seq`, `live` NULL or
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_journal_subscriber_position(
    subscriber: *mut ShmbusJournalSubscriber,
    seq: *mut u64,
    live: *mut bool,
) -> Status {
    entry(|| {
        // SAFETY: each pointer as the contract says.
        let s = unsafe { handle(subscriber, "subscriber") }?;
        // SAFETY: as above.
        unsafe { put(seq, s.0.position()) };
        // SAFETY: as above.
        unsafe { put(live, s.0.is_live()) };
        Ok(Status::SHMBUS_OK)
    })
}

/// Frees the subscriber (NULL: nothing).
///
/// # Safety
/// `subscriber` is NULL or a live subscriber, not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_journal_subscriber_close(subscriber: *mut ShmbusJournalSubscriber) {
    // SAFETY: NULL or a live handle `give` made, by the contract.
    entry_void(|| unsafe { take_back(subscriber) });
}
