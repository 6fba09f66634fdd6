//! Checked conversions of C arguments: handles, options structs and
//! out-parameters that may be NULL, C strings that may not be UTF-8,
//! byte buffers, `timeout_ns`. Each bad one is a [`Failure`] naming it,
//! never undefined behaviour.

use std::ffi::{CStr, c_char, c_void};
use std::mem::MaybeUninit;
use std::time::Duration;

use shmbus_core::Wait;

use crate::entry::{Failure, Outcome};
use crate::status::Status;

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
