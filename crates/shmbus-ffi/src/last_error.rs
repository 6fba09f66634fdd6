//! This thread's last error: the message and the code the last failing
//! call left ([`shmbus_error_message`], [`shmbus_error_code`]), kept until
//! the next call that sets them.

use std::cell::{Cell, RefCell};
use std::ffi::{CString, c_char};
use std::panic::catch_unwind;

use crate::error_code::ErrorCode;

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

/// This thread's message for the last call that returned `SHMBUS_ERROR`
/// (or `SHMBUS_TOO_SMALL`, `SHMBUS_ABANDONED`, `SHMBUS_PEER_GONE`,
/// `SHMBUS_REFUSED`, `SHMBUS_NO_SERVER`, and the
/// `SHMBUS_FULL`/`SHMBUS_TIMED_OUT` of the calls that say so): what was
/// found and what was expected. Never NULL
/// ("" before any failure). Owned by the library: valid until the next
/// call into it on this thread; copy it to keep it.
#[unsafe(no_mangle)]
pub extern "C" fn shmbus_error_message() -> *const c_char {
    catch_unwind(|| LAST_ERROR.with(|e| e.borrow().as_ptr())).unwrap_or(c"".as_ptr())
}

/// This thread's code for the last call that set a message (the calls
/// shmbus_error_message() speaks for): which kind of failure it was, to
/// switch on instead of matching the message. SHMBUS_E_NONE before any
/// failure; like the message, left as it was by calls that succeed.
#[unsafe(no_mangle)]
pub extern "C" fn shmbus_error_code() -> ErrorCode {
    catch_unwind(|| LAST_CODE.with(Cell::get)).unwrap_or(ErrorCode::SHMBUS_E_OTHER)
}
