//! The C API of shmbus: `libshmbus.so` / `libshmbus.a` and
//! `include/shmbus.h` (generated from this crate by cbindgen; see
//! `crates/shmbus-ffi/cbindgen.sh`).
//!
//! # Conventions (the header repeats them)
//! - Every handle is an opaque pointer made by a `_create`, `_attach`,
//!   `_open` or `_join` call, which writes it through an out-parameter and
//!   writes NULL there on failure. Each has a `_close` (a `_discard` or
//!   `_release` for loans and samples) that accepts NULL. A handle is used
//!   by one thread at a time; it may move between threads between calls.
//! - Every call returns a [`Status`]. On `SHMBUS_ERROR` (and on the other
//!   statuses that say something went wrong: `SHMBUS_TOO_SMALL`,
//!   `SHMBUS_ABANDONED`, `SHMBUS_PEER_GONE`), [`shmbus_error_message`]
//!   returns this thread's message for it and [`shmbus_error_code`] its
//!   [`ErrorCode`], the kind of failure (`SHMBUS_E_NOT_FOUND`, ...: the
//!   core's `ErrorKind`, as Python's exception classes are) to switch on
//!   instead of matching the message. Other statuses leave both as they
//!   were (so a polling loop formats nothing), except where a function
//!   says it sets one.
//! - Timeouts are `int64_t timeout_ns`: negative waits as long as it
//!   takes, 0 does not wait, else at most that many nanoseconds.
//! - No Rust panic crosses into C: every entry point catches one and
//!   returns `SHMBUS_ERROR` with its message (then close the handle it was
//!   called on: it may be half-way through an operation). NULL pointers,
//!   names that are not UTF-8, zero or unknown options are `SHMBUS_ERROR`
//!   with `SHMBUS_E_INVALID_ARGUMENT` and a message, never undefined
//!   behaviour. What C cannot be checked
//!   for (a dangling handle, a buffer shorter than the length given, a
//!   string without its NUL) is the caller's to get right.
//!
//! # Layout of the crate
//! `lib.rs`: statuses, the thread's error message, the options structs,
//! the helpers every entry point uses ([`entry`]) and the bodies many
//! share (making a handle, reading one value, publishing, receiving into
//! a buffer); `bus.rs`: single and
//! multi-publisher buses and their subscribers; `stream.rs`: producer and
//! consumer; `journal.rs`; `pool.rs`: pool buses, loans and samples.

#![deny(unsafe_op_in_unsafe_fn)]

use std::cell::{Cell, RefCell};
use std::ffi::{c_char, c_void, CStr, CString};
use std::mem::MaybeUninit;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

use shmbus_core::{
    mem::HugePages, stream::StreamOptions, BusOptions, ErrorKind, OpenOptions, Start, Wait,
    WaitStrategy,
};

use error_code::Classified;
pub use error_code::ErrorCode;

pub mod bus;
pub mod error_code;
pub mod journal;
pub mod pool;
pub mod stream;

// Unit tests, not tests/: a Rust test crate would need an rlib of this
// library, whose file name (libshmbus.rlib) is the core crate's too.
#[cfg(test)]
mod api_tests;

/// What a call did. `SHMBUS_ERROR`, `SHMBUS_TOO_SMALL`, `SHMBUS_ABANDONED`
/// and `SHMBUS_PEER_GONE` come with a message from `shmbus_error_message()`
/// and a code from `shmbus_error_code()` (and `SHMBUS_FULL`/
/// `SHMBUS_TIMED_OUT` where a function says so); the others leave them as
/// they were.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Done.
    SHMBUS_OK = 0,
    /// A receive returned a message (or a stream record).
    SHMBUS_MESSAGE = 1,
    /// A receive found that this subscriber was lapped: the count of lost
    /// messages is in its `skipped` out-parameter. Not an error: receive
    /// again for the next message.
    SHMBUS_LAGGED = 2,
    /// Nothing there, and the call was not to wait (`timeout_ns` 0).
    SHMBUS_EMPTY = 3,
    /// Nothing came (or no room came free) before `timeout_ns` ran out.
    SHMBUS_TIMED_OUT = 4,
    /// The caller's buffer is too short: its length out-parameter says how
    /// long it must be. Nothing was consumed: call again with a larger one.
    SHMBUS_TOO_SMALL = 5,
    /// No room and the call was not to wait: a full stream, a pool with no
    /// free block, a pool subscriber already holding as many samples as it
    /// may (`SHMBUS_POOL_MAX_HELD`; release one).
    SHMBUS_FULL = 6,
    /// A multi-publisher bus skipped this publisher's claimed slot (it
    /// stalled past the bus's unblock timeout): nothing was published.
    SHMBUS_ABANDONED = 7,
    /// A stream's other side is gone (it exited or died) and nothing is
    /// left to read, or no room will come free.
    SHMBUS_PEER_GONE = 8,
    /// The call failed: see `shmbus_error_code()` and
    /// `shmbus_error_message()`.
    SHMBUS_ERROR = -1,
}

/// Where a new subscriber starts: only messages published after it opened
/// (the default, 0).
pub const SHMBUS_START_NEXT: u32 = 0;
/// Where a new subscriber starts: the oldest message still in the ring.
pub const SHMBUS_START_OLDEST: u32 = 1;
/// Where a new subscriber starts: the newest message already published.
pub const SHMBUS_START_LATEST: u32 = 2;

/// How a call waits: spin for `spin_ns`, then sleep on a futex (the
/// default, 0).
pub const SHMBUS_WAIT_SPIN_FUTEX: u32 = 0;
/// How a call waits: spin for `spin_ns`, then spin with `sched_yield`.
pub const SHMBUS_WAIT_SPIN_YIELD: u32 = 1;
/// How a call waits: spin without pause (lowest latency, a core at 100%).
pub const SHMBUS_WAIT_BUSY_SPIN: u32 = 2;

/// Flag: touch every page now, so the first messages do not fault.
pub const SHMBUS_PREFAULT: u32 = 1;
/// Flag: `mlock` the segment (fails if `RLIMIT_MEMLOCK` is too low).
pub const SHMBUS_MLOCK: u32 = 2;
/// Open flag: a bus subscriber takes no entry in the bus's registry (not
/// shown by `shmbus stat`/`top`).
pub const SHMBUS_NO_REGISTER: u32 = 4;
/// Create flag: back a bus named by a bare name with transparent huge pages.
pub const SHMBUS_HUGE_PAGES_TRANSPARENT: u32 = 8;
/// Create flag: the bus is a path on a hugetlbfs mount.
pub const SHMBUS_HUGE_PAGES_HUGETLBFS: u32 = 16;

/// How many samples one pool subscriber may hold at once.
pub const SHMBUS_POOL_MAX_HELD: u32 = 8;

/// How to create a bus (`shmbus_publisher_create`,
/// `shmbus_mp_publisher_create`, `shmbus_journal_publisher_create`,
/// `shmbus_pool_publisher_create`). Start from
/// `shmbus_bus_options_default()` (or zero it) and set `capacity` and
/// `msg_size` (or the pool's two fields).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct BusOpts {
    /// Slots in the ring: a power of two.
    pub capacity: u64,
    /// Many-publisher buses: nanoseconds a claimed slot may stay
    /// uncommitted (its publisher died or stalled) before subscribers skip
    /// it; 0 = 1 s.
    pub unblock_timeout_ns: u64,
    /// Pool buses only: bytes per block (a multiple of 64); 0 elsewhere.
    pub pool_block_size: u64,
    /// Pool buses only: blocks in the pool (more than `capacity`); 0
    /// elsewhere.
    pub pool_blocks: u64,
    /// The message type's name the bus records (NULL: raw bytes, recorded
    /// as "bytes" with alignment 1). Openers that name a type
    /// (`shmbus_open_options_t.type_name`) must name this one.
    pub type_name: *const c_char,
    /// Bytes per message (not for a pool bus, whose messages are any
    /// length up to a block).
    pub msg_size: u32,
    /// The message type's alignment, recorded with `type_name` (0 = 1);
    /// 0 without a `type_name`.
    pub type_align: u32,
    /// File mode bits within 0777 (0 = 0600, owner only; 0660 lets the
    /// group in); any other bit is refused.
    pub mode: u32,
    /// `SHMBUS_PREFAULT`, `SHMBUS_MLOCK`, `SHMBUS_HUGE_PAGES_*`.
    pub flags: u32,
}

/// How to open an existing bus or stream (subscribers, publishers and
/// producers that attach, consumers, journal joiners). NULL where a call
/// takes one means all defaults, as does `shmbus_open_options_default()`
/// or a zeroed struct.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct OpenOpts {
    /// How long the blocking calls of this handle spin before they yield or
    /// sleep (0 = 50 µs).
    pub spin_ns: u64,
    /// How long to wait for a bus that is being created (0 = 1 s).
    pub init_timeout_ns: u64,
    /// Journal joins: how long to wait for the publisher's flush (0 = 5 s).
    pub flush_timeout_ns: u64,
    /// A message type the bus must carry (NULL: any). A bus made with
    /// another name, size or alignment is refused with a message naming
    /// both.
    pub type_name: *const c_char,
    /// With `type_name`: the type's size in bytes; 0 without one.
    pub type_size: u32,
    /// With `type_name`: the type's alignment (0 = 1); 0 without one.
    pub type_align: u32,
    /// Bus subscribers: `SHMBUS_START_NEXT`, `_OLDEST` or `_LATEST`.
    pub start: u32,
    /// `SHMBUS_WAIT_SPIN_FUTEX`, `_SPIN_YIELD` or `_BUSY_SPIN`.
    pub wait: u32,
    /// `SHMBUS_PREFAULT`, `SHMBUS_MLOCK`, `SHMBUS_NO_REGISTER`.
    pub flags: u32,
}

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
}

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

// ---------------------------------------------------------------------------
// The thread's last error, and the wrapper of every entry point.

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
    static LAST_CODE: Cell<ErrorCode> = const { Cell::new(ErrorCode::SHMBUS_E_NONE) };
}

/// Makes `message` and `code` this thread's last error (a NUL inside the
/// message is shown as `\0`, so the C string is the whole message).
pub(crate) fn set_error(message: &str, code: ErrorCode) {
    let c = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = c);
    LAST_CODE.with(|e| e.set(code));
}

/// A call that did not succeed: the status to return, and the code and
/// message for `shmbus_error_code` and `shmbus_error_message`.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) status: Status,
    pub(crate) code: ErrorCode,
    pub(crate) message: String,
}

impl Failure {
    pub(crate) fn new(status: Status, kind: ErrorKind, message: impl Into<String>) -> Failure {
        Failure {
            status,
            code: kind.into(),
            message: message.into(),
        }
    }
    /// The core error `e` as `status`, with its kind and its message.
    pub(crate) fn of(status: Status, e: &impl Classified) -> Failure {
        Failure::new(status, e.kind(), e.to_string())
    }
    /// A bad argument, found by the C API's own checks: `SHMBUS_ERROR`
    /// with `SHMBUS_E_INVALID_ARGUMENT`.
    pub(crate) fn argument(message: impl Into<String>) -> Failure {
        Failure::new(Status::SHMBUS_ERROR, ErrorKind::InvalidArgument, message)
    }
}

pub(crate) type Outcome = Result<Status, Failure>;

/// Runs one entry point: a panic becomes `SHMBUS_ERROR` with its message,
/// a [`Failure`] its status with its message.
pub(crate) fn entry(f: impl FnOnce() -> Outcome) -> Status {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(status)) => status,
        Ok(Err(failure)) => {
            set_error(&failure.message, failure.code);
            failure.status
        }
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".to_owned());
            set_error(
                &format!("internal error in libshmbus (a Rust panic): {what}"),
                ErrorCode::SHMBUS_E_OTHER,
            );
            Status::SHMBUS_ERROR
        }
    }
}

/// For this crate's tests: runs `f` as every entry point runs its body
/// (a panic in it becomes `SHMBUS_ERROR` with a message).
#[doc(hidden)]
pub fn run_as_entry_point(f: impl FnOnce() -> Status) -> Status {
    entry(|| Ok(f()))
}

/// Runs a function that frees a handle: a panic there is swallowed (there
/// is nothing to report it through) and leaves the message set.
pub(crate) fn entry_void(f: impl FnOnce()) {
    let _ = entry(|| {
        f();
        Ok(Status::SHMBUS_OK)
    });
}

// ---------------------------------------------------------------------------
// Checked conversions of C arguments.

/// The handle behind `ptr`, or an error naming `what` if it is NULL.
///
/// # Safety
/// `ptr` is NULL or a live handle of type `T` that no other reference
/// aliases for `'a` (the caller uses a handle from one thread at a time).
pub(crate) unsafe fn handle<'a, T>(ptr: *mut T, what: &str) -> Result<&'a mut T, Failure> {
    // SAFETY: NULL or live and unaliased, by this function's contract.
    unsafe { ptr.as_mut() }.ok_or_else(|| Failure::argument(format!("{what} is NULL")))
}

/// The options struct behind `ptr`, or an error naming `what` (the
/// struct's C type among it) if it is NULL.
///
/// # Safety
/// `ptr` is NULL or points to a live `T` for `'a`.
pub(crate) unsafe fn required<'a, T>(ptr: *const T, what: &str) -> Result<&'a T, Failure> {
    // SAFETY: NULL or live, by this function's contract.
    unsafe { ptr.as_ref() }.ok_or_else(|| Failure::argument(format!("{what} are NULL")))
}

/// A required out-parameter: written, never read (it may hold garbage).
pub(crate) struct Out<T>(*mut T);

impl<T> Out<T> {
    /// Writes `value` (without dropping what was there).
    pub(crate) fn set(&mut self, value: T) {
        // SAFETY: `self.0` is not NULL and valid for writes (`out_ptr`'s
        // contract); `write` neither reads nor drops the old contents.
        unsafe { self.0.write(value) }
    }
}

/// The out-parameter `ptr`, or an error naming `what` if it is NULL.
///
/// # Safety
/// `ptr` is NULL or valid for writes of a `T` for as long as the `Out`
/// is used.
pub(crate) unsafe fn out_ptr<T>(ptr: *mut T, what: &str) -> Result<Out<T>, Failure> {
    if ptr.is_null() {
        return Err(Failure::argument(format!(
            "{what} (an out-parameter) is NULL"
        )));
    }
    Ok(Out(ptr))
}

/// A handle's out-parameter: set to NULL at once, so it is NULL on every
/// failure, and to the new handle on success.
///
/// # Safety
/// As [`out_ptr`].
pub(crate) unsafe fn out_handle<T>(ptr: *mut *mut T) -> Result<Out<*mut T>, Failure> {
    // SAFETY: the contract is out_ptr's.
    let mut out = unsafe { out_ptr(ptr, "the handle's out-parameter") }?;
    out.set(std::ptr::null_mut());
    Ok(out)
}

/// Moves `value` to the heap and hands it to C through `out`.
pub(crate) fn give<T>(mut out: Out<*mut T>, value: T) -> Outcome {
    out.set(Box::into_raw(Box::new(value)));
    Ok(Status::SHMBUS_OK)
}

/// Takes back and drops a handle `give` made (NULL: nothing).
///
/// # Safety
/// `ptr` is NULL or a pointer `give` made that was not taken back yet.
pub(crate) unsafe fn take_back<T>(ptr: *mut T) {
    if !ptr.is_null() {
        // SAFETY: made by Box::into_raw in `give`, not freed yet.
        drop(unsafe { Box::from_raw(ptr) });
    }
}

/// The capacity a caller's in/out length holds.
///
/// # Safety
/// `len` is NULL or points to an initialised `size_t`.
pub(crate) unsafe fn capacity_in(len: *const usize) -> Result<usize, Failure> {
    // SAFETY: NULL or initialised, by the contract.
    unsafe { len.as_ref() }
        .copied()
        .ok_or_else(|| Failure::argument("len (the buffer's length, in and out) is NULL"))
}

/// Writes `value` through `ptr` unless it is NULL (optional out-parameters).
///
/// # Safety
/// `ptr` is NULL or valid for a write of a `T`.
pub(crate) unsafe fn put<T>(ptr: *mut T, value: T) {
    if !ptr.is_null() {
        // SAFETY: not NULL, valid for a write by this function's contract;
        // `write` does not read (nor drop) what was there.
        unsafe { ptr.write(value) };
    }
}

/// A C string argument as UTF-8.
///
/// # Safety
/// `ptr` is NULL or a NUL-terminated string live for `'a`.
pub(crate) unsafe fn c_str<'a>(ptr: *const c_char, what: &str) -> Result<&'a str, Failure> {
    if ptr.is_null() {
        return Err(Failure::argument(format!("{what} is NULL")));
    }
    // SAFETY: not NULL, and NUL-terminated and live by the contract.
    let c = unsafe { CStr::from_ptr(ptr) };
    c.to_str().map_err(|e| {
        Failure::argument(format!(
            "{what} {:?} is not valid UTF-8 ({e})",
            c.to_string_lossy()
        ))
    })
}

/// `len` bytes at `ptr` (NULL allowed when `len` is 0).
///
/// # Safety
/// When `len > 0`, `ptr` is NULL or valid for reads of `len` bytes that
/// nothing writes for `'a`.
pub(crate) unsafe fn bytes<'a>(
    ptr: *const c_void,
    len: usize,
    what: &str,
) -> Result<&'a [u8], Failure> {
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(Failure::argument(format!(
            "{what} is NULL with length {len}"
        )));
    }
    if len > isize::MAX as usize {
        return Err(Failure::argument(format!(
            "{what}: length {len} is too large"
        )));
    }
    // SAFETY: not NULL, `len` readable bytes by the contract, and `len`
    // fits an isize (checked above).
    Ok(unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) })
}

/// `cap` writable bytes at `ptr` (NULL allowed when `cap` is 0), perhaps
/// uninitialised (C hands in fresh buffers), so never read: fill them with
/// [`copy_into`].
///
/// # Safety
/// When `cap > 0`, `ptr` is NULL or valid for writes of `cap` bytes that
/// nothing else accesses for `'a`.
pub(crate) unsafe fn buffer<'a>(
    ptr: *mut c_void,
    cap: usize,
    what: &str,
) -> Result<&'a mut [MaybeUninit<u8>], Failure> {
    if cap == 0 {
        return Ok(&mut []);
    }
    if ptr.is_null() {
        return Err(Failure::argument(format!(
            "{what} is NULL with length {cap}"
        )));
    }
    if cap > isize::MAX as usize {
        return Err(Failure::argument(format!(
            "{what}: length {cap} is too large"
        )));
    }
    // SAFETY: not NULL, `cap` writable bytes by the contract, and `cap`
    // fits an isize; `MaybeUninit` makes no claim that they are initialised.
    Ok(unsafe { std::slice::from_raw_parts_mut(ptr.cast::<MaybeUninit<u8>>(), cap) })
}

/// Writes `src` to the start of `out` (which holds at least as many).
pub(crate) fn copy_into(out: &mut [MaybeUninit<u8>], src: &[u8]) {
    for (dst, &byte) in out.iter_mut().zip(src) {
        dst.write(byte);
    }
}

/// `int64_t timeout_ns` as a [`Wait`].
pub(crate) fn wait_of(timeout_ns: i64) -> Wait {
    match timeout_ns {
        t if t < 0 => Wait::Forever,
        0 => Wait::Never,
        t => Wait::For(Duration::from_nanos(t as u64)),
    }
}

/// What "nothing came" means for a wait of `timeout_ns`.
pub(crate) fn nothing(timeout_ns: i64) -> Status {
    if timeout_ns == 0 {
        Status::SHMBUS_EMPTY
    } else {
        Status::SHMBUS_TIMED_OUT
    }
}

/// A core error as a `SHMBUS_ERROR` with its kind's code and its message.
pub(crate) fn error(e: impl Classified) -> Failure {
    Failure::of(Status::SHMBUS_ERROR, &e)
}

/// A core error as a `SHMBUS_ERROR` with its kind's code, its message
/// prefixed with what was being done.
pub(crate) fn fail(doing: &str, e: impl Classified) -> Failure {
    Failure::new(Status::SHMBUS_ERROR, e.kind(), format!("{doing}: {e}"))
}

fn check_flags(flags: u32, allowed: u32, what: &str) -> Result<(), Failure> {
    let unknown = flags & !allowed;
    if unknown != 0 {
        return Err(Failure::argument(format!(
            "{what}: unknown flag bits {unknown:#x} (allowed here: {allowed:#x})"
        )));
    }
    Ok(())
}

fn strategy(wait: u32, spin_ns: u64, what: &str) -> Result<WaitStrategy, Failure> {
    let spin = if spin_ns == 0 {
        Duration::from_micros(50)
    } else {
        Duration::from_nanos(spin_ns)
    };
    match wait {
        SHMBUS_WAIT_SPIN_FUTEX => Ok(WaitStrategy::SpinFutex { spin }),
        SHMBUS_WAIT_SPIN_YIELD => Ok(WaitStrategy::SpinYield { spin }),
        SHMBUS_WAIT_BUSY_SPIN => Ok(WaitStrategy::BusySpin),
        other => Err(Failure::argument(format!(
            "{what}: wait is {other}, expected SHMBUS_WAIT_SPIN_FUTEX (0), \
             SHMBUS_WAIT_SPIN_YIELD (1) or SHMBUS_WAIT_BUSY_SPIN (2)"
        ))),
    }
}

/// What creating a bus or a stream takes from its options' `mode` and
/// `flags`.
struct Creation {
    mode: u32,
    prefault: bool,
    mlock: bool,
    huge_pages: Option<HugePages>,
}

fn creation(mode: u32, flags: u32, what: &str) -> Result<Creation, Failure> {
    check_flags(
        flags,
        SHMBUS_PREFAULT
            | SHMBUS_MLOCK
            | SHMBUS_HUGE_PAGES_TRANSPARENT
            | SHMBUS_HUGE_PAGES_HUGETLBFS,
        what,
    )?;
    // A mode the file cannot take is refused, never cut to its low bits:
    // 0xffffffff would otherwise become 0777, open to every user.
    if mode & !0o777 != 0 {
        return Err(Failure::argument(format!(
            "{what}: mode is {mode:#o}, expected permission bits within 0777 (0 = 0600)"
        )));
    }
    Ok(Creation {
        mode: if mode == 0 { 0o600 } else { mode },
        prefault: flags & SHMBUS_PREFAULT != 0,
        mlock: flags & SHMBUS_MLOCK != 0,
        huge_pages: huge_pages(flags, what)?,
    })
}

fn huge_pages(flags: u32, what: &str) -> Result<Option<HugePages>, Failure> {
    match (
        flags & SHMBUS_HUGE_PAGES_TRANSPARENT != 0,
        flags & SHMBUS_HUGE_PAGES_HUGETLBFS != 0,
    ) {
        (false, false) => Ok(None),
        (true, false) => Ok(Some(HugePages::Transparent)),
        (false, true) => Ok(Some(HugePages::Hugetlbfs)),
        (true, true) => Err(Failure::argument(format!(
            "{what}: SHMBUS_HUGE_PAGES_TRANSPARENT and SHMBUS_HUGE_PAGES_HUGETLBFS together"
        ))),
    }
}

/// Which kind of bus `BusOpts` is turned into options for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum BusKind {
    /// A bus of fixed-size messages (single, many or journaled publishers).
    Plain,
    /// A pool bus.
    Pool,
}

/// `shmbus_bus_options_t` as `BusOptions`.
///
/// # Safety
/// `opts` is NULL or points to a live `BusOpts` whose `type_name` is NULL
/// or a NUL-terminated string.
pub(crate) unsafe fn bus_options(
    opts: *const BusOpts,
    kind: BusKind,
) -> Result<BusOptions, Failure> {
    const WHAT: &str = "bus options";
    // SAFETY: NULL or live, by the contract.
    let o = unsafe { required(opts, "bus options (shmbus_bus_options_t*)") }?;
    if o.capacity == 0 {
        return Err(Failure::argument(format!(
            "{WHAT}: capacity is 0, expected a power of two (the number of slots)"
        )));
    }
    let c = creation(o.mode, o.flags, WHAT)?;
    let mut b = BusOptions::new(o.capacity)
        .mode(c.mode)
        .prefault(c.prefault)
        .mlock(c.mlock);
    if let Some(huge) = c.huge_pages {
        b = b.huge_pages(huge);
    }
    if o.unblock_timeout_ns != 0 {
        b = b.unblock_timeout(Duration::from_nanos(o.unblock_timeout_ns));
    }
    match kind {
        BusKind::Pool => {
            if o.pool_block_size == 0 || o.pool_blocks == 0 {
                return Err(Failure::argument(format!(
                    "{WHAT}: a pool bus needs pool_block_size and pool_blocks (found {} and {})",
                    o.pool_block_size, o.pool_blocks
                )));
            }
            if !o.type_name.is_null() {
                return Err(Failure::argument(format!(
                    "{WHAT}: a pool bus carries messages of any length and records no \
                     message type: type_name must be NULL"
                )));
            }
            b = b.pool(o.pool_block_size, o.pool_blocks);
        }
        BusKind::Plain => {
            if o.pool_block_size != 0 || o.pool_blocks != 0 {
                return Err(Failure::argument(format!(
                    "{WHAT}: pool_block_size/pool_blocks are set: create a pool bus with \
                     shmbus_pool_publisher_create"
                )));
            }
            if o.msg_size == 0 {
                return Err(Failure::argument(format!(
                    "{WHAT}: msg_size is 0, expected the bytes per message (1 to 16 MiB)"
                )));
            }
            b = b.msg_size(o.msg_size);
            if o.type_name.is_null() && o.type_align != 0 {
                return Err(Failure::argument(format!(
                    "{WHAT}: type_align is {} without a type_name, expected 0 \
                     (an alignment is recorded only with the type's name)",
                    o.type_align
                )));
            }
            if !o.type_name.is_null() {
                // SAFETY: not NULL, NUL-terminated by the contract.
                let name = unsafe { c_str(o.type_name, "type_name") }?;
                let align = if o.type_align == 0 { 1 } else { o.type_align };
                // A bad name or alignment is refused by the create.
                b = b.message_type(name, align);
            }
        }
    }
    Ok(b)
}

/// The parts of `shmbus_open_options_t` the journal's join also takes.
pub(crate) struct Opened {
    pub(crate) open: OpenOptions,
    pub(crate) wait: WaitStrategy,
    pub(crate) init_timeout: Duration,
    pub(crate) flush_timeout: Option<Duration>,
    /// (name, size, align) of the message type asked for.
    pub(crate) message_type: Option<(String, u32, u32)>,
}

/// `shmbus_open_options_t` (NULL: defaults) as `OpenOptions`.
///
/// # Safety
/// `opts` is NULL or points to a live `OpenOpts` whose `type_name` is NULL
/// or a NUL-terminated string.
pub(crate) unsafe fn open_options(opts: *const OpenOpts) -> Result<Opened, Failure> {
    const WHAT: &str = "open options";
    let default = open_defaults();
    // SAFETY: NULL or live, by the contract.
    let o = unsafe { opts.as_ref() }.unwrap_or(&default);
    check_flags(
        o.flags,
        SHMBUS_PREFAULT | SHMBUS_MLOCK | SHMBUS_NO_REGISTER,
        WHAT,
    )?;
    let start = match o.start {
        SHMBUS_START_NEXT => Start::Next,
        SHMBUS_START_OLDEST => Start::Oldest,
        SHMBUS_START_LATEST => Start::Latest,
        other => {
            return Err(Failure::argument(format!(
                "{WHAT}: start is {other}, expected SHMBUS_START_NEXT (0), \
                 SHMBUS_START_OLDEST (1) or SHMBUS_START_LATEST (2)"
            )))
        }
    };
    let wait = strategy(o.wait, o.spin_ns, WHAT)?;
    let init_timeout = if o.init_timeout_ns == 0 {
        Duration::from_secs(1)
    } else {
        Duration::from_nanos(o.init_timeout_ns)
    };
    let mut open = OpenOptions::default()
        .start(start)
        .wait_strategy(wait)
        .init_timeout(init_timeout)
        .prefault(o.flags & SHMBUS_PREFAULT != 0)
        .mlock(o.flags & SHMBUS_MLOCK != 0)
        .register(o.flags & SHMBUS_NO_REGISTER == 0);
    if o.type_name.is_null() && (o.type_size != 0 || o.type_align != 0) {
        return Err(Failure::argument(format!(
            "{WHAT}: type_size {} and type_align {} without a type_name, expected 0 \
             (a type is checked only by its name)",
            o.type_size, o.type_align
        )));
    }
    let message_type = if o.type_name.is_null() {
        None
    } else {
        // SAFETY: not NULL, NUL-terminated by the contract.
        let name = unsafe { c_str(o.type_name, "type_name") }?;
        if o.type_size == 0 {
            return Err(Failure::argument(format!(
                "{WHAT}: type_name {name:?} with type_size 0, expected the type's size"
            )));
        }
        let align = if o.type_align == 0 { 1 } else { o.type_align };
        open = open.message_type(name, o.type_size, align);
        Some((name.to_owned(), o.type_size, align))
    };
    Ok(Opened {
        open,
        wait,
        init_timeout,
        flush_timeout: (o.flush_timeout_ns != 0).then(|| Duration::from_nanos(o.flush_timeout_ns)),
        message_type,
    })
}

/// `shmbus_stream_options_t` as `StreamOptions`.
///
/// # Safety
/// `opts` is NULL or points to a live `StreamOpts`.
pub(crate) unsafe fn stream_options(opts: *const StreamOpts) -> Result<StreamOptions, Failure> {
    const WHAT: &str = "stream options";
    // SAFETY: NULL or live, by the contract.
    let o = unsafe { required(opts, "stream options (shmbus_stream_options_t*)") }?;
    if o.capacity == 0 {
        return Err(Failure::argument(format!(
            "{WHAT}: capacity is 0, expected the ring's size in bytes (a power of two, 64 B to 4 GiB)"
        )));
    }
    let c = creation(o.mode, o.flags, WHAT)?;
    let mut s = StreamOptions::new(o.capacity)
        .mode(c.mode)
        .prefault(c.prefault)
        .mlock(c.mlock)
        .wait_strategy(strategy(o.wait, o.spin_ns, WHAT)?);
    if let Some(huge) = c.huge_pages {
        s = s.huge_pages(huge);
    }
    Ok(s)
}

fn open_defaults() -> OpenOpts {
    OpenOpts {
        spin_ns: 0,
        init_timeout_ns: 0,
        flush_timeout_ns: 0,
        type_name: std::ptr::null(),
        type_size: 0,
        type_align: 0,
        start: SHMBUS_START_NEXT,
        wait: SHMBUS_WAIT_SPIN_FUTEX,
        flags: 0,
    }
}

// ---------------------------------------------------------------------------
// The bodies that many entry points share. Each takes the entry point's
// raw arguments, so the order in which they are checked (and so which
// message a call with two bad arguments gets) is the same everywhere.

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

/// [`new_handle`] for a call that creates a bus of `kind` from
/// `shmbus_bus_options_t`.
///
/// # Safety
/// As [`new_handle`]; `opts` as [`bus_options`] says.
pub(crate) unsafe fn create_handle<H, E: Classified>(
    name: *const c_char,
    opts: *const BusOpts,
    kind: BusKind,
    out: *mut *mut H,
    make: impl FnOnce(&str, &BusOptions) -> Result<H, E>,
) -> Status {
    let make = |name: &str| {
        // SAFETY: `opts` as this function's contract says.
        let opts = unsafe { bus_options(opts, kind) }?;
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

// ---------------------------------------------------------------------------
// Entry points of general use.

/// This thread's message for the last call that returned `SHMBUS_ERROR`
/// (or `SHMBUS_TOO_SMALL`, `SHMBUS_ABANDONED`, `SHMBUS_PEER_GONE`, and the
/// `SHMBUS_FULL`/`SHMBUS_TIMED_OUT` of the calls that say so): what was
/// found and what was expected. Never NULL
/// ("" before any failure). Owned by the library: valid until the next
/// call into it on this thread; copy it to keep it.
#[no_mangle]
pub extern "C" fn shmbus_error_message() -> *const c_char {
    catch_unwind(|| LAST_ERROR.with(|e| e.borrow().as_ptr())).unwrap_or(c"".as_ptr())
}

/// This thread's code for the last call that set a message (the calls
/// shmbus_error_message() speaks for): which kind of failure it was, to
/// switch on instead of matching the message. SHMBUS_E_NONE before any
/// failure; like the message, left as it was by calls that succeed.
#[no_mangle]
pub extern "C" fn shmbus_error_code() -> ErrorCode {
    catch_unwind(|| LAST_CODE.with(Cell::get)).unwrap_or(ErrorCode::SHMBUS_E_OTHER)
}

/// The name of an error code ("SHMBUS_E_NOT_FOUND", ...) as a static
/// string; "unknown error code" for an int that is none.
#[no_mangle]
pub extern "C" fn shmbus_error_code_name(code: std::ffi::c_int) -> *const c_char {
    // An int, not a `shmbus_error_code_t`: a value from C outside the
    // enum is then no undefined behaviour.
    let name = ErrorCode::ALL
        .iter()
        .find(|c| **c as std::ffi::c_int == code)
        .map_or(c"unknown error code", |c| c.name());
    name.as_ptr()
}

/// The name of a status ("SHMBUS_OK", ...) as a static string; "unknown
/// status" for an int that is none.
#[no_mangle]
pub extern "C" fn shmbus_status_name(status: std::ffi::c_int) -> *const c_char {
    // An int, not a `shmbus_status_t`: a value from C outside the enum is
    // then no undefined behaviour.
    let name: &CStr = match status {
        0 => c"SHMBUS_OK",
        1 => c"SHMBUS_MESSAGE",
        2 => c"SHMBUS_LAGGED",
        3 => c"SHMBUS_EMPTY",
        4 => c"SHMBUS_TIMED_OUT",
        5 => c"SHMBUS_TOO_SMALL",
        6 => c"SHMBUS_FULL",
        7 => c"SHMBUS_ABANDONED",
        8 => c"SHMBUS_PEER_GONE",
        -1 => c"SHMBUS_ERROR",
        _ => c"unknown status",
    };
    name.as_ptr()
}

/// The library's version, "MAJOR.MINOR.PATCH" (a static string).
#[no_mangle]
pub extern "C" fn shmbus_version() -> *const c_char {
    const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");
    VERSION.as_ptr().cast()
}

/// Bus options with every default: capacity and msg_size still to set.
#[no_mangle]
pub extern "C" fn shmbus_bus_options_default() -> BusOpts {
    BusOpts {
        capacity: 0,
        unblock_timeout_ns: 0,
        pool_block_size: 0,
        pool_blocks: 0,
        type_name: std::ptr::null(),
        msg_size: 0,
        type_align: 0,
        mode: 0o600,
        flags: 0,
    }
}

/// Open options with every default: start at the next message, spin
/// 50 µs then sleep on the futex, any message type.
#[no_mangle]
pub extern "C" fn shmbus_open_options_default() -> OpenOpts {
    open_defaults()
}

/// Stream options with every default: capacity still to set.
#[no_mangle]
pub extern "C" fn shmbus_stream_options_default() -> StreamOpts {
    StreamOpts {
        capacity: 0,
        spin_ns: 0,
        mode: 0o600,
        wait: SHMBUS_WAIT_SPIN_FUTEX,
        flags: 0,
    }
}

/// Removes the bus or stream `name` (a bare name lives in /dev/shm), and
/// its side files. Processes that have it open keep their mapping.
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_ERROR` (no such bus, not a bus, a bad
/// name, ...).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn shmbus_remove(name: *const c_char) -> Status {
    entry(|| {
        // SAFETY: NULL or NUL-terminated, by the contract.
        let name = unsafe { c_str(name, "name") }?;
        shmbus_core::remove(name).map_err(|e| fail(&format!("removing {name:?}"), e))?;
        Ok(Status::SHMBUS_OK)
    })
}
