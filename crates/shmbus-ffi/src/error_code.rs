//! The error code a failing call leaves with its message
//! (`shmbus_error_code()`): which kind of failure it was, from the core's
//! [`ErrorKind`] (the classification Python's exception classes follow),
//! and its name (`shmbus_error_code_name()`).

use std::ffi::c_char;
use std::fmt::Display;

use shmbus_core::ErrorKind;

/// What kind of failure the last call that set a message had
/// (`shmbus_error_code()`): switch on it instead of matching the message.
/// Each is one kind of the Rust errors (`shmbus::ErrorKind`), the kind
/// that also names the Python exception of the same failure (NOT_FOUND is
/// BusNotFoundError, BUSY is EntryBusyError, ...). More codes may come:
/// keep a default case.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// No call on this thread has failed yet.
    SHMBUS_E_NONE = 0,
    /// No such bus or stream, or no directory to create it in.
    SHMBUS_E_NOT_FOUND = 1,
    /// Something already has the name.
    SHMBUS_E_EXISTS = 2,
    /// The file's (or the directory's) mode does not let this user in.
    SHMBUS_E_PERMISSION = 3,
    /// The bus carries another message type (type_name, size, alignment).
    SHMBUS_E_TYPE_MISMATCH = 4,
    /// A segment of another kind: a stream opened as a bus, a pool bus by
    /// a copying call, a single-publisher bus by a many-publisher call, a
    /// journaled bus by a plain publisher.
    SHMBUS_E_WRONG_KIND = 5,
    /// The name is not a valid bus name.
    SHMBUS_E_INVALID_NAME = 6,
    /// A bad argument: a NULL pointer, a name that is not UTF-8, unknown
    /// flags or options, an impossible geometry, a loan while one is out.
    SHMBUS_E_INVALID_ARGUMENT = 7,
    /// A live process is the bus's publisher, or the stream's producer or
    /// consumer.
    SHMBUS_E_ROLE_TAKEN = 8,
    /// A message longer than the bus, block or stream carries (and, with
    /// SHMBUS_TOO_SMALL, longer than the caller's buffer).
    SHMBUS_E_TOO_LONG = 9,
    /// A many-publisher claim was skipped (SHMBUS_ABANDONED).
    SHMBUS_E_ABANDONED = 10,
    /// A wait ran out: a journal flush, a bus still being created.
    SHMBUS_E_TIMED_OUT = 11,
    /// No pool block came free (SHMBUS_FULL or SHMBUS_TIMED_OUT of a loan).
    SHMBUS_E_POOL_EXHAUSTED = 12,
    /// A pool subscriber holds SHMBUS_POOL_MAX_HELD samples.
    SHMBUS_E_TOO_MANY_SAMPLES = 13,
    /// The other side died: a stream's producer or consumer
    /// (SHMBUS_PEER_GONE), a journaled bus's publisher during a join.
    SHMBUS_E_PEER_GONE = 14,
    /// Cursors or headers that cannot be right.
    SHMBUS_E_CORRUPT = 15,
    /// The bus has no journal.
    SHMBUS_E_NOT_JOURNALED = 16,
    /// The journal file could not be opened, read, written or synced.
    SHMBUS_E_JOURNAL = 17,
    /// Anything else (a system error, an internal error): see the message.
    SHMBUS_E_OTHER = 18,
    /// A lossless subscriber has not read the message a publish would
    /// overwrite (SHMBUS_FULL of `shmbus_publisher_try_publish`; the
    /// message names its registry entry and pid).
    SHMBUS_E_FULL = 19,
    /// A lossless subscriber (`SHMBUS_LOSSLESS`) was refused: the bus
    /// refuses them (`SHMBUS_NO_LOSSLESS`), has as many as it allows, or has
    /// no free registry entry; the message says which.
    SHMBUS_E_LOSSLESS_REFUSED = 20,
    /// A blackboard entry was being written through every try of a read
    /// (the writer is live and writes it very often), or another writer
    /// holds it: try again.
    SHMBUS_E_BUSY = 21,
    /// A blackboard entry was left mid-write by a writer that died: its
    /// value is lost until the next writer attaches (which removes it).
    SHMBUS_E_STUCK = 22,
}

impl ErrorCode {
    /// Every code, in order of value.
    pub(crate) const ALL: [ErrorCode; 23] = [
        ErrorCode::SHMBUS_E_NONE,
        ErrorCode::SHMBUS_E_NOT_FOUND,
        ErrorCode::SHMBUS_E_EXISTS,
        ErrorCode::SHMBUS_E_PERMISSION,
        ErrorCode::SHMBUS_E_TYPE_MISMATCH,
        ErrorCode::SHMBUS_E_WRONG_KIND,
        ErrorCode::SHMBUS_E_INVALID_NAME,
        ErrorCode::SHMBUS_E_INVALID_ARGUMENT,
        ErrorCode::SHMBUS_E_ROLE_TAKEN,
        ErrorCode::SHMBUS_E_TOO_LONG,
        ErrorCode::SHMBUS_E_ABANDONED,
        ErrorCode::SHMBUS_E_TIMED_OUT,
        ErrorCode::SHMBUS_E_POOL_EXHAUSTED,
        ErrorCode::SHMBUS_E_TOO_MANY_SAMPLES,
        ErrorCode::SHMBUS_E_PEER_GONE,
        ErrorCode::SHMBUS_E_CORRUPT,
        ErrorCode::SHMBUS_E_NOT_JOURNALED,
        ErrorCode::SHMBUS_E_JOURNAL,
        ErrorCode::SHMBUS_E_OTHER,
        ErrorCode::SHMBUS_E_FULL,
        ErrorCode::SHMBUS_E_LOSSLESS_REFUSED,
        ErrorCode::SHMBUS_E_BUSY,
        ErrorCode::SHMBUS_E_STUCK,
    ];

    /// The code's name, "SHMBUS_E_NOT_FOUND", ...
    pub(crate) fn name(self) -> &'static std::ffi::CStr {
        match self {
            ErrorCode::SHMBUS_E_NONE => c"SHMBUS_E_NONE",
            ErrorCode::SHMBUS_E_NOT_FOUND => c"SHMBUS_E_NOT_FOUND",
            ErrorCode::SHMBUS_E_EXISTS => c"SHMBUS_E_EXISTS",
            ErrorCode::SHMBUS_E_PERMISSION => c"SHMBUS_E_PERMISSION",
            ErrorCode::SHMBUS_E_TYPE_MISMATCH => c"SHMBUS_E_TYPE_MISMATCH",
            ErrorCode::SHMBUS_E_WRONG_KIND => c"SHMBUS_E_WRONG_KIND",
            ErrorCode::SHMBUS_E_INVALID_NAME => c"SHMBUS_E_INVALID_NAME",
            ErrorCode::SHMBUS_E_INVALID_ARGUMENT => c"SHMBUS_E_INVALID_ARGUMENT",
            ErrorCode::SHMBUS_E_ROLE_TAKEN => c"SHMBUS_E_ROLE_TAKEN",
            ErrorCode::SHMBUS_E_TOO_LONG => c"SHMBUS_E_TOO_LONG",
            ErrorCode::SHMBUS_E_ABANDONED => c"SHMBUS_E_ABANDONED",
            ErrorCode::SHMBUS_E_TIMED_OUT => c"SHMBUS_E_TIMED_OUT",
            ErrorCode::SHMBUS_E_POOL_EXHAUSTED => c"SHMBUS_E_POOL_EXHAUSTED",
            ErrorCode::SHMBUS_E_TOO_MANY_SAMPLES => c"SHMBUS_E_TOO_MANY_SAMPLES",
            ErrorCode::SHMBUS_E_PEER_GONE => c"SHMBUS_E_PEER_GONE",
            ErrorCode::SHMBUS_E_CORRUPT => c"SHMBUS_E_CORRUPT",
            ErrorCode::SHMBUS_E_NOT_JOURNALED => c"SHMBUS_E_NOT_JOURNALED",
            ErrorCode::SHMBUS_E_JOURNAL => c"SHMBUS_E_JOURNAL",
            ErrorCode::SHMBUS_E_OTHER => c"SHMBUS_E_OTHER",
            ErrorCode::SHMBUS_E_FULL => c"SHMBUS_E_FULL",
            ErrorCode::SHMBUS_E_LOSSLESS_REFUSED => c"SHMBUS_E_LOSSLESS_REFUSED",
            ErrorCode::SHMBUS_E_BUSY => c"SHMBUS_E_BUSY",
            ErrorCode::SHMBUS_E_STUCK => c"SHMBUS_E_STUCK",
        }
    }
}

/// The name of an error code ("SHMBUS_E_NOT_FOUND", ...) as a static
/// string; "unknown error code" for an int that is none.
#[unsafe(no_mangle)]
pub extern "C" fn shmbus_error_code_name(code: std::ffi::c_int) -> *const c_char {
    // An int, not a `shmbus_error_code_t`: a value from C outside the
    // enum is then no undefined behaviour.
    let name = ErrorCode::ALL
        .iter()
        .find(|c| **c as std::ffi::c_int == code)
        .map_or(c"unknown error code", |c| c.name());
    name.as_ptr()
}

impl From<ErrorKind> for ErrorCode {
    fn from(kind: ErrorKind) -> ErrorCode {
        match kind {
            ErrorKind::NotFound => ErrorCode::SHMBUS_E_NOT_FOUND,
            ErrorKind::Exists => ErrorCode::SHMBUS_E_EXISTS,
            ErrorKind::Permission => ErrorCode::SHMBUS_E_PERMISSION,
            ErrorKind::TypeMismatch => ErrorCode::SHMBUS_E_TYPE_MISMATCH,
            ErrorKind::WrongKind => ErrorCode::SHMBUS_E_WRONG_KIND,
            ErrorKind::InvalidName => ErrorCode::SHMBUS_E_INVALID_NAME,
            ErrorKind::InvalidArgument => ErrorCode::SHMBUS_E_INVALID_ARGUMENT,
            ErrorKind::RoleTaken => ErrorCode::SHMBUS_E_ROLE_TAKEN,
            ErrorKind::TooLong => ErrorCode::SHMBUS_E_TOO_LONG,
            ErrorKind::Abandoned => ErrorCode::SHMBUS_E_ABANDONED,
            ErrorKind::TimedOut => ErrorCode::SHMBUS_E_TIMED_OUT,
            ErrorKind::PoolExhausted => ErrorCode::SHMBUS_E_POOL_EXHAUSTED,
            ErrorKind::TooManySamples => ErrorCode::SHMBUS_E_TOO_MANY_SAMPLES,
            ErrorKind::PeerGone => ErrorCode::SHMBUS_E_PEER_GONE,
            ErrorKind::Corrupt => ErrorCode::SHMBUS_E_CORRUPT,
            ErrorKind::NotJournaled => ErrorCode::SHMBUS_E_NOT_JOURNALED,
            ErrorKind::Journal => ErrorCode::SHMBUS_E_JOURNAL,
            ErrorKind::Full => ErrorCode::SHMBUS_E_FULL,
            ErrorKind::LosslessRefused => ErrorCode::SHMBUS_E_LOSSLESS_REFUSED,
            ErrorKind::Busy => ErrorCode::SHMBUS_E_BUSY,
            ErrorKind::Stuck => ErrorCode::SHMBUS_E_STUCK,
            // `Other`, and a kind newer than this list.
            _ => ErrorCode::SHMBUS_E_OTHER,
        }
    }
}

/// A core error: its message and its kind, which become a failing call's
/// message and code.
pub(crate) trait Classified: Display {
    /// The error's [`ErrorKind`].
    fn kind(&self) -> ErrorKind;
}

macro_rules! classified {
    ($($error:path),* $(,)?) => {
        $(impl Classified for $error {
            fn kind(&self) -> ErrorKind {
                <$error>::kind(self)
            }
        })*
    };
}

classified!(
    shmbus_core::OpenError,
    shmbus_core::CreateError,
    shmbus_core::AttachError,
    shmbus_core::bus::PublishError,
    shmbus_core::bus::TryPublishError,
    shmbus_core::bus::Abandoned,
    shmbus_core::bus::ManyPublishError,
    shmbus_core::pool::LoanError,
    shmbus_core::pool::RecvError,
    shmbus_core::stream::PushError,
    shmbus_core::stream::PopError,
    shmbus_core::journal::JoinError,
    shmbus_core::journal::CreateError,
    shmbus_core::journal::AttachError,
    shmbus_core::journal::OpenError,
    shmbus_core::journal::AppendError,
    shmbus_core::journal::CloseError,
    shmbus_core::blackboard::GetError,
    shmbus_core::blackboard::PutError,
    shmbus_core::blackboard::RemoveError,
    shmbus_core::blackboard::EntryError,
    shmbus_core::reqrep::AttachError,
    shmbus_core::reqrep::CallError,
    shmbus_core::reqrep::SendError,
    shmbus_core::reqrep::RespondError,
);
