//! What a call did: [`Status`], the value every entry point returns, and
//! its names.

use std::ffi::{CStr, c_char};

/// What a call did. `SHMBUS_ERROR`, `SHMBUS_TOO_SMALL`, `SHMBUS_ABANDONED`,
/// `SHMBUS_PEER_GONE`, `SHMBUS_REFUSED` and `SHMBUS_NO_SERVER` come with a message from `shmbus_error_message()`
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
    /// may (`SHMBUS_POOL_MAX_HELD`; release one), a lossless subscriber
    /// that has not read the message `shmbus_publisher_try_publish` would
    /// overwrite.
    SHMBUS_FULL = 6,
    /// A many-publisher bus skipped this publisher's claimed slot (it
    /// stalled past the bus's unblock timeout): nothing was published.
    SHMBUS_ABANDONED = 7,
    /// A stream's other side is gone (it exited or died) and nothing is
    /// left to read, or no room will come free.
    SHMBUS_PEER_GONE = 8,
    /// A request-response call: the server dropped the request unanswered
    /// (it declined it); with `SHMBUS_E_PEER_GONE`.
    SHMBUS_REFUSED = 9,
    /// A request-response call: no server is alive to take the request,
    /// which was withdrawn unseen (safe to send again once one serves);
    /// with `SHMBUS_E_PEER_GONE`.
    SHMBUS_NO_SERVER = 10,
    /// The call failed: see `shmbus_error_code()` and
    /// `shmbus_error_message()`.
    SHMBUS_ERROR = -1,
}

/// The name of a status ("SHMBUS_OK", ...) as a static string; "unknown
/// status" for an int that is none.
#[unsafe(no_mangle)]
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
        9 => c"SHMBUS_REFUSED",
        10 => c"SHMBUS_NO_SERVER",
        -1 => c"SHMBUS_ERROR",
        _ => c"unknown status",
    };
    name.as_ptr()
}
