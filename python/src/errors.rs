//! Rust errors to the exceptions of `shmbus.errors` (python/shmbus/errors.py):
//! one class per enum, a subclass where a variant deserves its own `except`
//! (and a standard exception where one fits). The message is always the
//! Rust error's `Display`.

use pyo3::prelude::*;
use pyo3::types::PyTuple;
use shmbus::{
    AppendError, AttachError, CloseError, CreateError, JoinError, JournalAttachError,
    JournalCreateError, JournalOpenError, LoanError, MpPublishError, OpenError, PoolRecvError,
    PopError, PublishError, PushError, TypeFingerprint,
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

pub(crate) fn open(py: Python<'_>, e: OpenError) -> PyErr {
    let msg = e.to_string();
    match e {
        OpenError::Name(_) => raise(py, "InvalidNameError", msg, &[]),
        OpenError::NotFound { .. } => raise(py, "BusNotFoundError", msg, &[]),
        OpenError::PermissionDenied { .. } => raise(py, "OpenPermissionError", msg, &[]),
        OpenError::TypeMismatch { found, expected } => raise(
            py,
            "TypeMismatchError",
            msg,
            &[
                ("found", message_type(py, &found)),
                ("expected", message_type(py, &expected)),
            ],
        ),
        OpenError::WrongKind { .. } | OpenError::PoolMismatch { .. } => {
            raise(py, "WrongKindError", msg, &[])
        }
        _ => raise(py, "OpenError", msg, &[]),
    }
}

pub(crate) fn create(py: Python<'_>, e: CreateError) -> PyErr {
    let msg = e.to_string();
    match e {
        CreateError::Name(_) => raise(py, "InvalidNameError", msg, &[]),
        CreateError::AlreadyExists { .. } => raise(py, "BusExistsError", msg, &[]),
        CreateError::PermissionDenied { .. } => raise(py, "CreatePermissionError", msg, &[]),
        CreateError::NoDirectory { .. } => raise(py, "NoDirectoryError", msg, &[]),
        CreateError::InvalidGeometry(_) => raise(py, "InvalidGeometryError", msg, &[]),
        _ => raise(py, "CreateError", msg, &[]),
    }
}

pub(crate) fn attach(py: Python<'_>, e: AttachError) -> PyErr {
    let msg = e.to_string();
    match e {
        AttachError::Open(e) => open(py, e),
        AttachError::PublisherActive { pid }
        | AttachError::ProducerActive { pid }
        | AttachError::ConsumerActive { pid } => {
            raise(py, "RoleTakenError", msg, &[("pid", num(py, pid.into()))])
        }
        _ => raise(py, "AttachError", msg, &[]),
    }
}

pub(crate) fn too_long(py: Python<'_>, msg: String, len: usize, max: usize) -> PyErr {
    raise(
        py,
        "MessageTooLongError",
        msg,
        &[
            ("length", num(py, len as u64)),
            ("max", num(py, max as u64)),
        ],
    )
}

pub(crate) fn publish(py: Python<'_>, e: PublishError) -> PyErr {
    let msg = e.to_string();
    match e {
        PublishError::TooLong { len, max } => too_long(py, msg, len, max),
        _ => raise(py, "Error", msg, &[]),
    }
}

pub(crate) fn mp_publish(py: Python<'_>, e: MpPublishError) -> PyErr {
    let msg = e.to_string();
    match e {
        MpPublishError::TooLong { len, max } => too_long(py, msg, len, max),
        MpPublishError::Abandoned(_) => raise(py, "AbandonedError", msg, &[]),
        _ => raise(py, "Error", msg, &[]),
    }
}

pub(crate) fn abandoned(py: Python<'_>, e: shmbus::Abandoned) -> PyErr {
    raise(py, "AbandonedError", e.to_string(), &[])
}

pub(crate) fn loan(py: Python<'_>, e: LoanError) -> PyErr {
    let msg = e.to_string();
    match e {
        LoanError::TooLong { len, max } => too_long(py, msg, len, max),
        LoanError::Exhausted { .. } => raise(py, "PoolExhaustedError", msg, &[]),
        _ => raise(py, "LoanError", msg, &[]),
    }
}

pub(crate) fn pool_recv(py: Python<'_>, e: PoolRecvError) -> PyErr {
    raise(py, "TooManySamplesError", e.to_string(), &[])
}

pub(crate) fn push(py: Python<'_>, e: PushError) -> PyErr {
    let msg = e.to_string();
    match e {
        PushError::TooLong { len, max } => too_long(py, msg, len, max),
        PushError::Full | PushError::TimedOut(_) => raise(py, "TimeoutError", msg, &[]),
        PushError::PeerGone { .. } => raise(py, "PeerGoneError", msg, &[]),
        PushError::CorruptCursors { .. } => raise(py, "CorruptError", msg, &[]),
        _ => raise(py, "StreamError", msg, &[]),
    }
}

pub(crate) fn pop(py: Python<'_>, e: PopError) -> PyErr {
    let msg = e.to_string();
    match e {
        PopError::Empty | PopError::TimedOut(_) => raise(py, "TimeoutError", msg, &[]),
        PopError::PeerGone { .. } => raise(py, "PeerGoneError", msg, &[]),
        PopError::CorruptCursors { .. } | PopError::Corrupt { .. } => {
            raise(py, "CorruptError", msg, &[])
        }
        _ => raise(py, "StreamError", msg, &[]),
    }
}

pub(crate) fn journal(py: Python<'_>, e: JournalOpenError) -> PyErr {
    raise(py, "JournalError", e.to_string(), &[])
}

pub(crate) fn join(py: Python<'_>, e: JoinError) -> PyErr {
    let msg = e.to_string();
    match e {
        JoinError::Open(e) => open(py, e),
        JoinError::Journal(e) => journal(py, e),
        JoinError::NotJournaled { .. } => raise(py, "NotJournaledError", msg, &[]),
        _ => raise(py, "JoinError", msg, &[]),
    }
}

pub(crate) fn journal_create(py: Python<'_>, e: JournalCreateError) -> PyErr {
    match e {
        JournalCreateError::Create(e) => create(py, e),
        JournalCreateError::Journal(e) => journal(py, e),
        // The binding starts no journal from a snapshot; a new variant
        // still reaches Python as a journal error.
        e => raise(py, "JournalError", e.to_string(), &[]),
    }
}

pub(crate) fn journal_attach(py: Python<'_>, e: JournalAttachError) -> PyErr {
    let msg = e.to_string();
    match e {
        JournalAttachError::Attach(e) => attach(py, e),
        JournalAttachError::NotJournaled { .. } => raise(py, "NotJournaledError", msg, &[]),
        JournalAttachError::Journal(e) => journal(py, e),
        _ => raise(py, "JournalError", msg, &[]),
    }
}

pub(crate) fn append(py: Python<'_>, e: AppendError) -> PyErr {
    let msg = e.to_string();
    match e {
        AppendError::TooLong { len, max } => too_long(py, msg, len, max),
        _ => raise(py, "JournalError", msg, &[]),
    }
}

pub(crate) fn close(py: Python<'_>, e: CloseError) -> PyErr {
    raise(py, "JournalError", e.to_string(), &[])
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
