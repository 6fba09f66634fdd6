//! The blackboard (the core's `blackboard`): the latest value of each key,
//! raw bytes of sizes fixed at creation. `shmbus_blackboard_writer_*` (one
//! per table) and `shmbus_blackboard_reader_*` (any number). An entry
//! handle (`shmbus_blackboard_reader_entry`, `shmbus_blackboard_writer_entry`)
//! is one key resolved once, for a loop that reads or writes the same keys
//! over and over: no hash and no probe while the key stays where it was
//! found, and it finds the key again when it moves.
//!
//! Statuses: a key that is not there is `SHMBUS_EMPTY`; a full table
//! `SHMBUS_FULL` (with `SHMBUS_E_FULL`); a read that gave up on an entry
//! `SHMBUS_ERROR` with `SHMBUS_E_BUSY` (try again), `SHMBUS_E_STUCK` (a
//! writer died writing it) or `SHMBUS_E_CORRUPT`; a key or value of
//! another size `SHMBUS_E_INVALID_ARGUMENT`.

use std::ffi::{c_char, c_int, c_void};

use shmbus_core::{
    ErrorKind,
    blackboard::{self, EntryReader, EntryWriter, GetError, PutError, Reader, RemoveError, Writer},
};

use crate::args::{
    buffer, bytes, c_str, capacity_in, copy_into, give, handle, out_handle, put, take_back,
};
use crate::bodies::{new_handle, open_handle, query};
use crate::entry::{Failure, Outcome, entry, entry_void};
use crate::options::{OpenOpts, creation, with_creation};
use crate::status::Status;

/// How to create a blackboard (`shmbus_blackboard_writer_create`). Start
/// from `shmbus_blackboard_options_default()` (or zero it) and set `keys`,
/// `key_size` and `value_size`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct BlackboardOpts {
    /// The most keys the table holds (1 to 2^24).
    pub keys: u64,
    /// Every key's size in bytes (at least 1).
    pub key_size: u32,
    /// Every value's size in bytes (at least 1).
    pub value_size: u32,
    /// File mode bits within 0777 (0 = 0600); any other bit is refused.
    pub mode: u32,
    /// `SHMBUS_PREFAULT`, `SHMBUS_MLOCK`, `SHMBUS_HUGE_PAGES_*`.
    pub flags: u32,
    /// The keys' schema name, recorded in the table (NULL: raw bytes); a
    /// Rust `Reader<K, _>` of that type opens it.
    pub key_type: *const c_char,
    /// The values' schema name (NULL: raw bytes).
    pub value_type: *const c_char,
    /// The alignment recorded with a schema name (0 = 1).
    pub type_align: u32,
}

/// Blackboard options with every default: keys and sizes still to set.
#[unsafe(no_mangle)]
pub extern "C" fn shmbus_blackboard_options_default() -> BlackboardOpts {
    BlackboardOpts {
        keys: 0,
        key_size: 0,
        value_size: 0,
        mode: 0o600,
        flags: 0,
        key_type: std::ptr::null(),
        value_type: std::ptr::null(),
        type_align: 0,
    }
}

/// `shmbus_blackboard_options_t` as `blackboard::Options`.
///
/// # Safety
/// `opts` is NULL or points to a live `BlackboardOpts` whose names are NULL
/// or NUL-terminated strings.
unsafe fn blackboard_options(opts: *const BlackboardOpts) -> Result<blackboard::Options, Failure> {
    const WHAT: &str = "blackboard options";
    // SAFETY: NULL or live, by the contract.
    let o = unsafe {
        crate::args::required(opts, "blackboard options (shmbus_blackboard_options_t*)")
    }?;
    if o.key_size == 0 || o.value_size == 0 {
        return Err(Failure::argument(format!(
            "{WHAT}: key_size {} and value_size {}, expected both at least 1 byte",
            o.key_size, o.value_size
        )));
    }
    let c = creation(o.mode, o.flags, WHAT)?;
    let align = o.type_align.max(1);
    let mut opts = with_creation!(
        blackboard::Options::new(o.keys)
            .key_size(o.key_size)
            .value_size(o.value_size),
        c
    );
    if !o.key_type.is_null() {
        // SAFETY: not NULL, NUL-terminated by the contract.
        opts = opts.key_type(unsafe { c_str(o.key_type, "key_type") }?, align);
    }
    if !o.value_type.is_null() {
        // SAFETY: as above.
        opts = opts.value_type(unsafe { c_str(o.value_type, "value_type") }?, align);
    }
    Ok(opts)
}

/// The writer of a blackboard (opaque).
pub struct ShmbusBlackboardWriter(pub(crate) Writer<[u8], [u8]>);

/// A reader of a blackboard (opaque).
pub struct ShmbusBlackboardReader(Reader<[u8], [u8]>);

/// A reader's handle on one key of a blackboard (opaque), made by
/// `shmbus_blackboard_reader_entry`. It keeps the table mapped: it may
/// outlive the reader that made it.
pub struct ShmbusBlackboardEntryReader {
    entry: EntryReader<[u8], [u8]>,
    /// The table's value size: a buffer too short for it is refused
    /// before anything is read, as `shmbus_blackboard_reader_get` does.
    value_size: usize,
}

/// A writer's handle on one key of a blackboard (opaque), made by
/// `shmbus_blackboard_writer_entry`: the key and where it was last
/// written, passed to `shmbus_blackboard_writer_put_entry`.
pub struct ShmbusBlackboardEntryWriter(EntryWriter<[u8], [u8]>);

// Each error's code is its kind's; only the status is chosen here.

pub(crate) fn get_failed(e: GetError) -> Failure {
    crate::entry::error(e)
}

/// A full table is `SHMBUS_FULL`; every other refusal `SHMBUS_ERROR`.
pub(crate) fn put_failed(e: PutError) -> Failure {
    let status = match e.kind() {
        ErrorKind::Full => Status::SHMBUS_FULL,
        _ => Status::SHMBUS_ERROR,
    };
    Failure::of(status, &e)
}

pub(crate) fn remove_failed(e: RemoveError) -> Failure {
    crate::entry::error(e)
}

/// Creates the blackboard `name` and becomes its writer.
///
/// Statuses: `SHMBUS_OK` (`*out`, closed with
/// `shmbus_blackboard_writer_close`); `SHMBUS_ERROR` (`*out` is NULL).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `opts` NULL or a valid
/// options struct; `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_blackboard_writer_create(
    name: *const c_char,
    opts: *const BlackboardOpts,
    out: *mut *mut ShmbusBlackboardWriter,
) -> Status {
    let make = |name: &str| {
        // SAFETY: `opts` as the contract says.
        let opts = unsafe { blackboard_options(opts) }?;
        Writer::<[u8], [u8]>::create(name, &opts)
            .map(ShmbusBlackboardWriter)
            .map_err(crate::entry::error)
    };
    // SAFETY: `name` and `out` as the contract says.
    unsafe { new_handle(name, out, make) }
}

/// Becomes the writer of the existing blackboard `name` (its writer
/// exited or died; entries a dead writer left mid-write are removed).
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_ERROR` (`SHMBUS_E_ROLE_TAKEN` while a
/// writer lives, ...; `*out` is NULL).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `opts` NULL or a valid
/// options struct; `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_blackboard_writer_attach(
    name: *const c_char,
    opts: *const OpenOpts,
    out: *mut *mut ShmbusBlackboardWriter,
) -> Status {
    // SAFETY: each pointer as the contract says.
    unsafe {
        open_handle(name, opts, out, |name, opts| {
            Writer::<[u8], [u8]>::attach(name, &opts.open).map(ShmbusBlackboardWriter)
        })
    }
}

/// Sets the key of `key_len` bytes to the value of `value_len` bytes (each
/// exactly the table's size); `*version` (NULL: not written) is the
/// write's version.
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_FULL` (a new key and the table holds as
/// many as it was made for; `SHMBUS_E_FULL`); `SHMBUS_ERROR`
/// (`SHMBUS_E_INVALID_ARGUMENT`: a size that is not the table's). Nothing
/// is written unless `SHMBUS_OK`.
///
/// # Safety
/// `writer` is NULL or a live writer; `key` and `value` valid for their
/// lengths; `version` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_blackboard_writer_put(
    writer: *mut ShmbusBlackboardWriter,
    key: *const c_void,
    key_len: usize,
    value: *const c_void,
    value_len: usize,
    version: *mut u64,
) -> Status {
    entry(|| {
        // SAFETY: each pointer as the contract says.
        let w = unsafe { handle(writer, "writer") }?;
        // SAFETY: as above.
        let key = unsafe { bytes(key, key_len, "key") }?;
        // SAFETY: as above.
        let value = unsafe { bytes(value, value_len, "value") }?;
        let v = w.0.put_bytes(key, value).map_err(put_failed)?;
        // SAFETY: NULL or writable, as above.
        unsafe { put(version, v) };
        Ok(Status::SHMBUS_OK)
    })
}

/// Removes the key of `key_len` bytes; `*version` (NULL: not written) is
/// the removal's version.
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_EMPTY` (the key was not there: nothing
/// written); `SHMBUS_ERROR` (a key of another size).
///
/// # Safety
/// `writer` is NULL or a live writer; `key` valid for `key_len` bytes;
/// `version` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_blackboard_writer_remove(
    writer: *mut ShmbusBlackboardWriter,
    key: *const c_void,
    key_len: usize,
    version: *mut u64,
) -> Status {
    entry(|| {
        // SAFETY: each pointer as the contract says.
        let w = unsafe { handle(writer, "writer") }?;
        // SAFETY: as above.
        let key = unsafe { bytes(key, key_len, "key") }?;
        match w.0.remove_bytes(key).map_err(remove_failed)? {
            Some(v) => {
                // SAFETY: NULL or writable, as above.
                unsafe { put(version, v) };
                Ok(Status::SHMBUS_OK)
            }
            None => Ok(Status::SHMBUS_EMPTY),
        }
    })
}

/// Frees the writer (NULL: nothing); the table and its values stay, and
/// another writer may attach.
///
/// # Safety
/// `writer` is NULL or a live writer, not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_blackboard_writer_close(writer: *mut ShmbusBlackboardWriter) {
    // SAFETY: NULL or a live handle, by the contract.
    entry_void(|| unsafe { take_back(writer) });
}

/// Makes a handle on the key of `key_len` bytes (exactly the table's key
/// size) for `shmbus_blackboard_writer_put_entry` and
/// `shmbus_blackboard_writer_remove_entry`: a put through it writes where
/// the key was last written, with no hash and no probe, and looks the key
/// up again only when it moved (removed, or not put yet). The key need
/// not be in the table. The handle is a key, not a borrow of the writer:
/// it outlives removals of its key, and a later writer of the same table
/// (after `shmbus_blackboard_writer_attach`) may use it.
///
/// Statuses: `SHMBUS_OK` (`*out`, closed with
/// `shmbus_blackboard_entry_writer_close`); `SHMBUS_ERROR`
/// (`SHMBUS_E_INVALID_ARGUMENT`: a key of another size, a NULL argument;
/// `*out` is NULL).
///
/// # Safety
/// `writer` is NULL or a live writer; `key` valid for `key_len` bytes;
/// `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_blackboard_writer_entry(
    writer: *mut ShmbusBlackboardWriter,
    key: *const c_void,
    key_len: usize,
    out: *mut *mut ShmbusBlackboardEntryWriter,
) -> Status {
    entry(|| {
        // SAFETY: NULL or writable, as the contract says.
        let out = unsafe { out_handle(out) }?;
        // SAFETY: NULL or live, as the contract says.
        let w = unsafe { handle(writer, "writer") }?;
        // SAFETY: valid for its length, as the contract says.
        let key = unsafe { bytes(key, key_len, "key") }?;
        let e = w.0.entry(key).map_err(crate::entry::error)?;
        give(out, ShmbusBlackboardEntryWriter(e))
    })
}

/// `shmbus_blackboard_writer_put` through an entry handle: sets the
/// handle's key to the value of `value_len` bytes (exactly the table's
/// value size); `*version` (NULL: not written) is the write's version.
/// If the entry the handle last wrote still holds its key, the put is
/// that entry's write; else it is the put by key, and the handle
/// remembers where it wrote. Never writes over another key's entry.
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_FULL` (the key is not in the table and
/// the table holds as many as it was made for; `SHMBUS_E_FULL`);
/// `SHMBUS_ERROR` (`SHMBUS_E_INVALID_ARGUMENT`: a value of another size,
/// a handle of a table of another key size, a NULL argument). Nothing is
/// written unless `SHMBUS_OK`.
///
/// # Safety
/// `writer` is NULL or a live writer; `entry` NULL or a live entry
/// writer; `value` valid for `value_len` bytes; `version` NULL or
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_blackboard_writer_put_entry(
    writer: *mut ShmbusBlackboardWriter,
    entry: *mut ShmbusBlackboardEntryWriter,
    value: *const c_void,
    value_len: usize,
    version: *mut u64,
) -> Status {
    crate::entry::entry(|| {
        // SAFETY: each pointer as the contract says.
        let w = unsafe { handle(writer, "writer") }?;
        // SAFETY: as above.
        let e = unsafe { handle(entry, "entry") }?;
        // SAFETY: as above.
        let value = unsafe { bytes(value, value_len, "value") }?;
        let v = w.0.put_entry_bytes(&mut e.0, value).map_err(put_failed)?;
        // SAFETY: NULL or writable, as above.
        unsafe { put(version, v) };
        Ok(Status::SHMBUS_OK)
    })
}

/// `shmbus_blackboard_writer_remove` through an entry handle: removes the
/// handle's key; `*version` (NULL: not written) is the removal's version.
/// The handle stays: a later `shmbus_blackboard_writer_put_entry` puts
/// the key back.
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_EMPTY` (the key was not there: nothing
/// written); `SHMBUS_ERROR` (a handle of a table of another key size, a
/// NULL argument).
///
/// # Safety
/// `writer` is NULL or a live writer; `entry` NULL or a live entry
/// writer; `version` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_blackboard_writer_remove_entry(
    writer: *mut ShmbusBlackboardWriter,
    entry: *mut ShmbusBlackboardEntryWriter,
    version: *mut u64,
) -> Status {
    crate::entry::entry(|| {
        // SAFETY: each pointer as the contract says.
        let w = unsafe { handle(writer, "writer") }?;
        // SAFETY: as above.
        let e = unsafe { handle(entry, "entry") }?;
        match w.0.remove_entry(&mut e.0).map_err(remove_failed)? {
            Some(v) => {
                // SAFETY: NULL or writable, as above.
                unsafe { put(version, v) };
                Ok(Status::SHMBUS_OK)
            }
            None => Ok(Status::SHMBUS_EMPTY),
        }
    })
}

/// Frees an entry writer (NULL: nothing); its key stays in the table.
///
/// # Safety
/// `entry` is NULL or a live entry writer, not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_blackboard_entry_writer_close(
    entry: *mut ShmbusBlackboardEntryWriter,
) {
    // SAFETY: NULL or a live handle, by the contract.
    entry_void(|| unsafe { take_back(entry) });
}

/// Opens the blackboard `name` to read (any number of readers). With
/// `opts->type_name`, `opts->type_size` must be the table's value size
/// (`SHMBUS_E_TYPE_MISMATCH`; the name itself is not compared).
///
/// Statuses: `SHMBUS_OK` (`*out`, closed with
/// `shmbus_blackboard_reader_close`); `SHMBUS_ERROR` (no such table,
/// another kind: `SHMBUS_E_WRONG_KIND`, ...; `*out` is NULL).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `opts` NULL or a valid
/// options struct; `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_blackboard_reader_open(
    name: *const c_char,
    opts: *const OpenOpts,
    out: *mut *mut ShmbusBlackboardReader,
) -> Status {
    let make = |name: &str| {
        // SAFETY: `opts` as the contract says.
        let opened = unsafe { crate::options::open_options(opts) }?;
        let reader = Reader::<[u8], [u8]>::open(name, &opened.open).map_err(crate::entry::error)?;
        if let Some((type_name, size, _)) = &opened.message_type {
            if *size as usize != reader.value_size() {
                return Err(Failure::new(
                    Status::SHMBUS_ERROR,
                    ErrorKind::TypeMismatch,
                    format!(
                        "blackboard {name} holds values of {} bytes, expected {type_name} of {size} bytes",
                        reader.value_size()
                    ),
                ));
            }
        }
        Ok(ShmbusBlackboardReader(reader))
    };
    // SAFETY: `name` and `out` as the contract says.
    unsafe { new_handle(name, out, make) }
}

/// Reads the latest value of the key of `key_len` bytes into `buf`: `*len`
/// holds the buffer's length on entry and the value's on
/// `SHMBUS_MESSAGE`; `*version` (NULL: not written) its version. Never a
/// torn value; never waits for the writer (each entry is tried a bounded
/// number of times).
///
/// Statuses: `SHMBUS_MESSAGE`; `SHMBUS_EMPTY` (the key is not there);
/// `SHMBUS_TOO_SMALL` (`*len` is the value size); `SHMBUS_ERROR` with
/// `SHMBUS_E_BUSY` (the writer kept the entry busy through every try: try
/// again), `SHMBUS_E_STUCK` (a writer died writing it), `SHMBUS_E_CORRUPT`
/// (an entry no writer wrote), `SHMBUS_E_INVALID_ARGUMENT` (a key of
/// another size).
///
/// # Safety
/// `reader` is NULL or a live reader; `key` valid for `key_len` bytes;
/// `buf` valid for `*len` writable bytes; `len` NULL or an initialised,
/// writable `size_t`; `version` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_blackboard_reader_get(
    reader: *mut ShmbusBlackboardReader,
    key: *const c_void,
    key_len: usize,
    buf: *mut c_void,
    len: *mut usize,
    version: *mut u64,
) -> Status {
    entry(|| {
        // SAFETY: each pointer as the contract says.
        let r = unsafe { handle(reader, "reader") }?;
        // SAFETY: as above.
        let key = unsafe { bytes(key, key_len, "key") }?;
        let value_size = r.0.value_size();
        // SAFETY: `buf`, `len` and `version` as the contract says.
        unsafe { get_into(buf, len, version, value_size, || r.0.get_bytes(key)) }
    })
}

/// The body of both gets (by key, through a handle): the buffer checked
/// against `value_size` before anything is read, then `read`'s value
/// copied into it, its length to `*len` and its version to `*version`.
///
/// # Safety
/// `buf` valid for `*len` writable bytes; `len` NULL or an initialised,
/// writable `size_t`; `version` NULL or writable.
unsafe fn get_into<'a>(
    buf: *mut c_void,
    len: *mut usize,
    version: *mut u64,
    value_size: usize,
    read: impl FnOnce() -> Result<Option<(&'a [u8], u64)>, GetError>,
) -> Outcome {
    // SAFETY: NULL or initialised, by the contract.
    let cap = unsafe { capacity_in(len) }?;
    // SAFETY: `cap` writable bytes, by the contract.
    let out = unsafe { buffer(buf, cap, "buf") }?;
    if value_size > cap {
        // SAFETY: `len` is not NULL: capacity_in read it.
        unsafe { put(len, value_size) };
        return Err(Failure::new(
            Status::SHMBUS_TOO_SMALL,
            ErrorKind::TooLong,
            format!("values are {value_size} bytes, the buffer holds {cap}"),
        ));
    }
    let Some((value, v)) = read().map_err(get_failed)? else {
        return Ok(Status::SHMBUS_EMPTY);
    };
    copy_into(&mut out[..value.len()], value);
    // SAFETY: as above.
    unsafe { put(len, value.len()) };
    // SAFETY: NULL or writable, by the contract.
    unsafe { put(version, v) };
    Ok(Status::SHMBUS_MESSAGE)
}

/// What `shmbus_blackboard_reader_changed_since` and `_entries` call for
/// each entry: its key and value (`value` NULL for a removed key) and
/// version; `ctx` as given. Return 0 to go on, anything else to stop.
/// The pointers are valid only during the call, and the visit must not
/// call the reader it visits (another handle is fine).
pub type ShmbusBlackboardVisit = Option<
    unsafe extern "C" fn(
        ctx: *mut c_void,
        key: *const u8,
        key_len: usize,
        value: *const u8,
        value_len: usize,
        version: u64,
    ) -> c_int,
>;

/// Calls `visit` for each entry of a view: every live key (`since` <
/// 0) or every entry written after version `since` (removals too).
fn visit_entries(
    r: &mut ShmbusBlackboardReader,
    since: Option<u64>,
    visit: ShmbusBlackboardVisit,
    ctx: *mut c_void,
) -> Outcome {
    let Some(visit) = visit else {
        return Err(Failure::argument("visit is NULL"));
    };
    let entries = match since {
        Some(v) => r.0.changed_since(v),
        None => r.0.entries(),
    };
    for item in entries {
        let item = item.map_err(get_failed)?;
        let (value, value_len) = match &item.value {
            Some(v) => (v.as_ptr(), v.len()),
            None => (std::ptr::null(), 0),
        };
        // SAFETY: a C function pointer of this signature, by the contract
        // of the entry points; the slices outlive the call.
        let stop = unsafe {
            visit(
                ctx,
                item.key.as_ptr(),
                item.key.len(),
                value,
                value_len,
                item.version,
            )
        };
        if stop != 0 {
            break;
        }
    }
    Ok(Status::SHMBUS_OK)
}

/// Calls `visit(ctx, ...)` for every live key, in table order, until it
/// returns non-zero.
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_ERROR` (an entry that could not be read:
/// `SHMBUS_E_BUSY`, `SHMBUS_E_STUCK`, `SHMBUS_E_CORRUPT`; the visit stops
/// there; a NULL argument).
///
/// # Safety
/// `reader` is NULL or a live reader; `visit` NULL or a function of that
/// signature, which must not unwind nor call `reader`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_blackboard_reader_entries(
    reader: *mut ShmbusBlackboardReader,
    visit: ShmbusBlackboardVisit,
    ctx: *mut c_void,
) -> Status {
    entry(|| {
        // SAFETY: as the contract says.
        let r = unsafe { handle(reader, "reader") }?;
        visit_entries(r, None, visit, ctx)
    })
}

/// Calls `visit(ctx, ...)` for every entry written after version `since`
/// (a removed key with `value` NULL), until it returns non-zero. Pass the
/// version `shmbus_blackboard_reader_version` gave before the previous
/// call to see each change at least once.
///
/// Statuses: as `shmbus_blackboard_reader_entries`.
///
/// # Safety
/// As `shmbus_blackboard_reader_entries`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_blackboard_reader_changed_since(
    reader: *mut ShmbusBlackboardReader,
    since: u64,
    visit: ShmbusBlackboardVisit,
    ctx: *mut c_void,
) -> Status {
    entry(|| {
        // SAFETY: as the contract says.
        let r = unsafe { handle(reader, "reader") }?;
        visit_entries(r, Some(since), visit, ctx)
    })
}

/// Writes the table's version (the last version written, 0 before any) to
/// `*version`.
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_ERROR` (a NULL argument).
///
/// # Safety
/// `reader` is NULL or a live reader; `version` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_blackboard_reader_version(
    reader: *mut ShmbusBlackboardReader,
    version: *mut u64,
) -> Status {
    // SAFETY: each pointer as the contract says.
    unsafe { query(reader, "reader", version, "version", |r| r.0.version()) }
}

/// Writes the table's key and value sizes to `*key_size` and
/// `*value_size`.
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_ERROR` (a NULL argument).
///
/// # Safety
/// `reader` is NULL or a live reader; `key_size` and `value_size` NULL or
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_blackboard_reader_sizes(
    reader: *mut ShmbusBlackboardReader,
    key_size: *mut usize,
    value_size: *mut usize,
) -> Status {
    entry(|| {
        // SAFETY: as the contract says.
        let r = unsafe { handle(reader, "reader") }?;
        // SAFETY: as the contract says.
        let mut k = unsafe { crate::args::out_ptr(key_size, "key_size") }?;
        // SAFETY: as the contract says.
        let mut v = unsafe { crate::args::out_ptr(value_size, "value_size") }?;
        k.set(r.0.key_size());
        v.set(r.0.value_size());
        Ok(Status::SHMBUS_OK)
    })
}

/// Waits as `timeout_ns` says until the table's version passes `since`
/// (any key written or removed), on the table's shared futex; writes the
/// new version to `*version` (NULL: not written).
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_EMPTY` (not yet, `timeout_ns` 0);
/// `SHMBUS_TIMED_OUT`; `SHMBUS_ERROR` (a NULL reader).
///
/// # Safety
/// `reader` is NULL or a live reader; `version` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_blackboard_reader_wait(
    reader: *mut ShmbusBlackboardReader,
    since: u64,
    timeout_ns: i64,
    version: *mut u64,
) -> Status {
    entry(|| {
        // SAFETY: as the contract says.
        let r = unsafe { handle(reader, "reader") }?;
        match r.0.wait_changed(since, crate::args::wait_of(timeout_ns)) {
            Some(v) => {
                // SAFETY: NULL or writable, as the contract says.
                unsafe { put(version, v) };
                Ok(Status::SHMBUS_OK)
            }
            None => Ok(crate::args::nothing(timeout_ns)),
        }
    })
}

/// Frees the reader (NULL: nothing).
///
/// # Safety
/// `reader` is NULL or a live reader, not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_blackboard_reader_close(reader: *mut ShmbusBlackboardReader) {
    // SAFETY: NULL or a live handle, by the contract.
    entry_void(|| unsafe { take_back(reader) });
}

/// Makes a handle on the key of `key_len` bytes (exactly the table's key
/// size) for `shmbus_blackboard_entry_reader_get`: a get through it reads
/// the key where it was last found, with no hash and no probe, and looks
/// the key up again only when it moved (removed and put again, or not put
/// yet). The key need not be in the table. The handle keeps the table
/// mapped: it may outlive `reader`.
///
/// Statuses: `SHMBUS_OK` (`*out`, closed with
/// `shmbus_blackboard_entry_reader_close`); `SHMBUS_ERROR`
/// (`SHMBUS_E_INVALID_ARGUMENT`: a key of another size, a NULL argument;
/// `*out` is NULL).
///
/// # Safety
/// `reader` is NULL or a live reader; `key` valid for `key_len` bytes;
/// `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_blackboard_reader_entry(
    reader: *mut ShmbusBlackboardReader,
    key: *const c_void,
    key_len: usize,
    out: *mut *mut ShmbusBlackboardEntryReader,
) -> Status {
    entry(|| {
        // SAFETY: NULL or writable, as the contract says.
        let out = unsafe { out_handle(out) }?;
        // SAFETY: NULL or live, as the contract says.
        let r = unsafe { handle(reader, "reader") }?;
        // SAFETY: valid for its length, as the contract says.
        let key = unsafe { bytes(key, key_len, "key") }?;
        let e = r.0.entry(key).map_err(crate::entry::error)?;
        let value_size = r.0.value_size();
        give(
            out,
            ShmbusBlackboardEntryReader {
                entry: e,
                value_size,
            },
        )
    })
}

/// `shmbus_blackboard_reader_get` through an entry handle: reads the
/// latest value of the handle's key into `buf`: `*len` holds the
/// buffer's length on entry and the value's on `SHMBUS_MESSAGE`;
/// `*version` (NULL: not written) its version. Never a torn value, never
/// another key's; never waits for the writer.
///
/// Statuses: as `shmbus_blackboard_reader_get`: `SHMBUS_MESSAGE`;
/// `SHMBUS_EMPTY` (the key is not there now); `SHMBUS_TOO_SMALL` (`*len`
/// is the value size); `SHMBUS_ERROR` with `SHMBUS_E_BUSY`,
/// `SHMBUS_E_STUCK`, `SHMBUS_E_CORRUPT`, or `SHMBUS_E_INVALID_ARGUMENT`
/// (a NULL argument).
///
/// # Safety
/// `entry` is NULL or a live entry reader; `buf` valid for `*len`
/// writable bytes; `len` NULL or an initialised, writable `size_t`;
/// `version` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_blackboard_entry_reader_get(
    entry: *mut ShmbusBlackboardEntryReader,
    buf: *mut c_void,
    len: *mut usize,
    version: *mut u64,
) -> Status {
    crate::entry::entry(|| {
        // SAFETY: NULL or live, as the contract says.
        let e = unsafe { handle(entry, "entry") }?;
        let value_size = e.value_size;
        // SAFETY: `buf`, `len` and `version` as the contract says.
        unsafe { get_into(buf, len, version, value_size, || e.entry.get_bytes()) }
    })
}

/// Frees an entry reader (NULL: nothing).
///
/// # Safety
/// `entry` is NULL or a live entry reader, not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_blackboard_entry_reader_close(
    entry: *mut ShmbusBlackboardEntryReader,
) {
    // SAFETY: NULL or a live handle, by the contract.
    entry_void(|| unsafe { take_back(entry) });
}
