//! Rust errors to the exceptions of `shmbus.errors` (python/shmbus/errors.py):
//! one class per enum, a subclass where a variant deserves its own `except`
//! (and a standard exception where one fits). Which subclass follows from
//! the error's `kind()` (`shmbus::ErrorKind`, the classification the C
//! API's error codes follow too) and its enum ([`class`]). The message is
//! always the Rust error's `Display`.

use pyo3::prelude::*;
use pyo3::types::PyTuple;
use shmbus::{
    bus::{MpPublishError, PublishError},
    journal::{
        AppendError, CloseError, JoinError, JournalAttachError, JournalCreateError,
        JournalOpenError,
    },
    pool::{LoanError, PoolRecvError},
    stream::{PopError, PushError},
    AttachError, CreateError, ErrorKind, OpenError, TypeFingerprint,
};

/// An instance of `shmbus.errors.<class>(msg)` with `attrs` set on it.
pub(crate) fn raise(
    py: Python<'_>,
    class: &str,
    msg: String,
    attrs: &[(&str, Py<PyAny>)],
) -> PyErr {
    let made = (|| -> PyResult<PyErr> {
        let cls = py.import("shmbus.errors")?.getattr(class)?;
        let err = cls.call1((msg,))?;
        for (name, value) in attrs {
            err.setattr(*name, value)?;
        }
        Ok(PyErr::from_value(err))
    })();
    made.unwrap_or_else(|e| e)
}

/// A `shmbus.errors.MessageType` of a fingerprint.
fn message_type(py: Python<'_>, fp: &TypeFingerprint) -> Py<PyAny> {
    let made = (|| -> PyResult<Py<PyAny>> {
        let cls = py.import("shmbus.errors")?.getattr("MessageType")?;
        let args = PyTuple::new(
            py,
            [
                fp.name.clone().into_pyobject(py)?.into_any(),
                fp.size.into_pyobject(py)?.into_any(),
                fp.align.into_pyobject(py)?.into_any(),
                fp.name_hash.into_pyobject(py)?.into_any(),
            ],
        )?;
        Ok(cls.call1(args)?.unbind())
    })();
    made.unwrap_or_else(|_| py.None())
}

fn num(py: Python<'_>, v: u64) -> Py<PyAny> {
    v.into_pyobject(py)
        .map(|b| b.into_any().unbind())
        .unwrap_or_else(|_| py.None())
}

/// Which operation's error an error is: Python's classes are one family
/// per Rust enum, and some kinds have a subclass in one family only
/// (`BusNotFoundError` is an `OpenError`, `NoDirectoryError` a
/// `CreateError`, a timed-out join a plain `JoinError`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Family {
    Open,
    Create,
    Attach,
    Publish,
    Loan,
    Receive,
    Stream,
    Join,
    Journal,
}

impl Family {
    /// The family's base class: for a kind it has no subclass for.
    fn base(self) -> &'static str {
        match self {
            Family::Open => "OpenError",
            Family::Create => "CreateError",
            Family::Attach => "AttachError",
            Family::Publish | Family::Receive => "Error",
            Family::Loan => "LoanError",
            Family::Stream => "StreamError",
            Family::Join => "JoinError",
            Family::Journal => "JournalError",
        }
    }
}

/// The class of `shmbus.errors` an error of `kind` from `family` raises:
/// the kind's own class where the family has it, else the family's base.
fn class(kind: ErrorKind, family: Family) -> &'static str {
    use ErrorKind as K;
    use Family as F;
    match (kind, family) {
        (K::InvalidName, _) => "InvalidNameError",
        (K::NotFound, F::Open) => "BusNotFoundError",
        (K::NotFound, F::Create) => "NoDirectoryError",
        (K::Exists, _) => "BusExistsError",
        (K::Permission, F::Open) => "OpenPermissionError",
        (K::Permission, F::Create) => "CreatePermissionError",
        (K::TypeMismatch, _) => "TypeMismatchError",
        (K::WrongKind, F::Open) => "WrongKindError",
        (K::InvalidArgument, F::Create) => "InvalidGeometryError",
        (K::RoleTaken, _) => "RoleTakenError",
        (K::TooLong, _) => "MessageTooLongError",
        (K::Abandoned, _) => "AbandonedError",
        (K::TimedOut, F::Stream) => "TimeoutError",
        (K::PoolExhausted, _) => "PoolExhaustedError",
        (K::TooManySamples, _) => "TooManySamplesError",
        (K::PeerGone, F::Stream) => "PeerGoneError",
        (K::Corrupt, F::Stream) => "CorruptError",
        (K::NotJournaled, _) => "NotJournaledError",
        (K::Journal, F::Journal) => "JournalError",
        _ => family.base(),
    }
}

/// `e` as the class of its kind in `family`, without extra attributes.
fn plain(py: Python<'_>, kind: ErrorKind, family: Family, e: impl std::fmt::Display) -> PyErr {
    raise(py, class(kind, family), e.to_string(), &[])
}

pub(crate) fn open(py: Python<'_>, e: OpenError) -> PyErr {
    let attrs = match &e {
        OpenError::TypeMismatch { found, expected } => vec![
            ("found", message_type(py, found)),
            ("expected", message_type(py, expected)),
        ],
        _ => Vec::new(),
    };
    raise(py, class(e.kind(), Family::Open), e.to_string(), &attrs)
}

pub(crate) fn create(py: Python<'_>, e: CreateError) -> PyErr {
    plain(py, e.kind(), Family::Create, e)
}

pub(crate) fn attach(py: Python<'_>, e: AttachError) -> PyErr {
    let attrs = match e {
        AttachError::Open(e) => return open(py, e),
        AttachError::PublisherActive { pid }
        | AttachError::ProducerActive { pid }
        | AttachError::ConsumerActive { pid } => vec![("pid", num(py, pid.into()))],
        _ => Vec::new(),
    };
    raise(py, class(e.kind(), Family::Attach), e.to_string(), &attrs)
}

pub(crate) fn too_long(py: Python<'_>, msg: String, len: usize, max: usize) -> PyErr {
    raise(
        py,
        class(ErrorKind::TooLong, Family::Publish),
        msg,
        &[
            ("length", num(py, len as u64)),
            ("max", num(py, max as u64)),
        ],
    )
}

pub(crate) fn publish(py: Python<'_>, e: PublishError) -> PyErr {
    match e {
        PublishError::TooLong { len, max } => too_long(py, e.to_string(), len, max),
        e => plain(py, e.kind(), Family::Publish, e),
    }
}

pub(crate) fn mp_publish(py: Python<'_>, e: MpPublishError) -> PyErr {
    match e {
        MpPublishError::TooLong { len, max } => too_long(py, e.to_string(), len, max),
        e => plain(py, e.kind(), Family::Publish, e),
    }
}

pub(crate) fn abandoned(py: Python<'_>, e: shmbus::bus::Abandoned) -> PyErr {
    plain(py, e.kind(), Family::Publish, e)
}

pub(crate) fn loan(py: Python<'_>, e: LoanError) -> PyErr {
    match e {
        LoanError::TooLong { len, max } => too_long(py, e.to_string(), len, max),
        e => plain(py, e.kind(), Family::Loan, e),
    }
}

pub(crate) fn pool_recv(py: Python<'_>, e: PoolRecvError) -> PyErr {
    plain(py, e.kind(), Family::Receive, e)
}

pub(crate) fn push(py: Python<'_>, e: PushError) -> PyErr {
    match e {
        PushError::TooLong { len, max } => too_long(py, e.to_string(), len, max),
        e => plain(py, e.kind(), Family::Stream, e),
    }
}

pub(crate) fn pop(py: Python<'_>, e: PopError) -> PyErr {
    plain(py, e.kind(), Family::Stream, e)
}

pub(crate) fn journal(py: Python<'_>, e: JournalOpenError) -> PyErr {
    plain(py, e.kind(), Family::Journal, e)
}

pub(crate) fn join(py: Python<'_>, e: JoinError) -> PyErr {
    match e {
        JoinError::Open(e) => open(py, e),
        JoinError::Journal(e) => journal(py, e),
        e => plain(py, e.kind(), Family::Join, e),
    }
}

pub(crate) fn journal_create(py: Python<'_>, e: JournalCreateError) -> PyErr {
    match e {
        JournalCreateError::Create(e) => create(py, e),
        JournalCreateError::Journal(e) => journal(py, e),
        // A snapshot or an option the journal cannot use (the binding
        // starts no journal from a snapshot): a journal error.
        e => plain(py, e.kind(), Family::Journal, e),
    }
}

pub(crate) fn journal_attach(py: Python<'_>, e: JournalAttachError) -> PyErr {
    match e {
        JournalAttachError::Attach(e) => attach(py, e),
        JournalAttachError::Journal(e) => journal(py, e),
        e => plain(py, e.kind(), Family::Journal, e),
    }
}

pub(crate) fn append(py: Python<'_>, e: AppendError) -> PyErr {
    match e {
        AppendError::TooLong { len, max } => too_long(py, e.to_string(), len, max),
        e => plain(py, e.kind(), Family::Journal, e),
    }
}

pub(crate) fn close(py: Python<'_>, e: CloseError) -> PyErr {
    plain(py, e.kind(), Family::Journal, e)
}

/// Using a handle after `close()` (or a sample after `release()`, a loan
/// after `publish()`).
pub(crate) fn closed(py: Python<'_>, what: &str) -> PyErr {
    raise(py, "ClosedError", what.to_string(), &[])
}

/// A call while another thread is in a call of the same handle.
pub(crate) fn busy(py: Python<'_>, closed: &str) -> PyErr {
    // `closed` is "the <handle> is closed": name the handle the same way.
    let what = closed.strip_suffix(" is closed").unwrap_or("this handle");
    raise(
        py,
        "BusyError",
        format!(
            "{what} is in use by another thread (a handle serves one thread at a time; \
             close() from another thread ends its wait)"
        ),
        &[],
    )
}
