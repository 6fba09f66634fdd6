//! The wrapper of every entry point: a [`Failure`] becomes its status and
//! this thread's error, a panic `SHMBUS_ERROR` with its message, so that
//! no Rust panic crosses into C.

use std::panic::{AssertUnwindSafe, catch_unwind};

use shmbus_core::ErrorKind;

use crate::error_code::{Classified, ErrorCode};
use crate::last_error::set_error;
use crate::status::Status;

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

/// A core error as a `SHMBUS_ERROR` with its kind's code and its message.
pub(crate) fn error(e: impl Classified) -> Failure {
    Failure::of(Status::SHMBUS_ERROR, &e)
}

/// A core error as a `SHMBUS_ERROR` with its kind's code, its message
/// prefixed with what was being done.
pub(crate) fn fail(doing: &str, e: impl Classified) -> Failure {
    Failure::new(Status::SHMBUS_ERROR, e.kind(), format!("{doing}: {e}"))
}
