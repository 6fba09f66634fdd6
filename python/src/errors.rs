//! Rust errors to the exceptions of `shmbus.errors` (python/shmbus/errors.py):
//! one class per enum, a subclass where a variant deserves its own `except`
//! (and a standard exception where one fits). Which subclass follows from
//! the error's `kind()` (`shmbus::ErrorKind`, the classification the C
//! API's error codes follow too) and its enum ([`class`]). The message is
//! always the Rust error's `Display`.
//!
//! The classes are Python's (they derive from standard exceptions too,
//! which pyo3's `create_exception!` cannot): the binding names each by a
//! variant of [`Exc`], so a misspelled class does not compile, and looks
//! them all up once, when the module loads ([`load`]).

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyTuple, PyType};
use shmbus::{
    AttachError, CreateError, ErrorKind, OpenError, TypeFingerprint,
    blackboard::{EntryError, GetError, PutError, RemoveError},
    bus::{LosslessRefused, TryPublishError},
    journal::{self, AppendError, CloseError, JoinError},
    pool::{self, LoanError},
    reqrep::{self, CallError, RespondError, SendError},
    stream::{PopError, PushError},
};

/// `Exc`, one variant per class, named as the class is.
macro_rules! exception_classes {
    ($($class:ident),* $(,)?) => {
        /// An exception class of `shmbus.errors` (the variant's name is the
        /// class's).
        #[derive(Clone, Copy, PartialEq, Eq, Debug)]
        pub(crate) enum Exc {
            $($class),*
        }

        impl Exc {
            /// In declaration order: `ALL[c as usize] == c`.
            const ALL: &[Exc] = &[$(Exc::$class),*];

            fn name(self) -> &'static str {
                match self {
                    $(Exc::$class => stringify!($class)),*
                }
            }
        }
    };
}

exception_classes! {
    Error, InvalidNameError,
    OpenError, BusNotFoundError, OpenPermissionError, TypeMismatchError, WrongKindError,
    CreateError, BusExistsError, CreatePermissionError, NoDirectoryError, InvalidGeometryError,
    AttachError, RoleTakenError,
    MessageTooLongError, AbandonedError, TimeoutError,
    LoanError, PoolExhaustedError, LoanOutstandingError, TooManySamplesError,
    StreamError, PeerGoneError, CorruptError,
    JoinError, NotJournaledError, JournalError,
    BusyError, ClosedError,
    FullError, LosslessRefusedError,
    RecordingError,
    BlackboardError, EntryBusyError, EntryStuckError, EntryCorruptError,
    BlackboardFullError, FieldSizeError, ReadOnlyError,
    CallError, CallTimeoutError, ServerGoneError, NoServerError, RefusedError,
    BadResponseError, UnknownCallError,
}

/// The classes of `shmbus.errors`, looked up once.
struct Classes {
    /// Those of `Exc::ALL`, in its order (indexed by `Exc as usize`).
    exceptions: Vec<Py<PyType>>,
    /// `MessageType`, the named tuple of a type mismatch's attributes.
    message_type: Py<PyAny>,
}

static CLASSES: PyOnceLock<Classes> = PyOnceLock::new();

/// Looks up every class of [`Exc`] in `shmbus.errors`: an `AttributeError`
/// for one missing there, a `TypeError` for one that is not a subclass of
/// `shmbus.errors.Error`. The module's init calls it.
pub(crate) fn load(py: Python<'_>) -> PyResult<()> {
    classes(py).map(|_| ())
}

fn classes(py: Python<'_>) -> PyResult<&'static Classes> {
    CLASSES.get_or_try_init(py, || {
        let module = py.import("shmbus.errors")?;
        let base = module.getattr(Exc::Error.name())?.cast_into::<PyType>()?;
        let exceptions = Exc::ALL
            .iter()
            .map(|&class| {
                let cls = module.getattr(class.name())?.cast_into::<PyType>()?;
                if !cls.is_subclass(&base)? {
                    return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                        "shmbus.errors.{} is not a subclass of shmbus.errors.Error",
                        class.name()
                    )));
                }
                Ok(cls.unbind())
            })
            .collect::<PyResult<Vec<_>>>()?;
        let message_type = module.getattr("MessageType")?.unbind();
        Ok(Classes {
            exceptions,
            message_type,
        })
    })
}

/// The class object of `class`.
fn class_object(py: Python<'_>, class: Exc) -> PyResult<&Bound<'_, PyType>> {
    Ok(classes(py)?.exceptions[class as usize].bind(py))
}

/// Whether `err` is a `class` (or a subclass of it).
pub(crate) fn is(py: Python<'_>, err: &PyErr, class: Exc) -> PyResult<bool> {
    Ok(err.is_instance(py, class_object(py, class)?))
}

/// An instance of `shmbus.errors.<class>(msg)` with `attrs` set on it.
pub(crate) fn raise(py: Python<'_>, class: Exc, msg: String, attrs: &[(&str, Py<PyAny>)]) -> PyErr {
    let made = (|| -> PyResult<PyErr> {
        let err = class_object(py, class)?.call1((msg,))?;
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
        let cls = classes(py)?.message_type.bind(py);
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
    Blackboard,
    Service,
}

impl Family {
    const ALL: [Family; 11] = [
        Family::Open,
        Family::Create,
        Family::Attach,
        Family::Publish,
        Family::Loan,
        Family::Receive,
        Family::Stream,
        Family::Join,
        Family::Journal,
        Family::Blackboard,
        Family::Service,
    ];

    /// The family's base class: for a kind it has no subclass for.
    fn base(self) -> Exc {
        match self {
            Family::Open => Exc::OpenError,
            Family::Create => Exc::CreateError,
            Family::Attach => Exc::AttachError,
            Family::Publish | Family::Receive => Exc::Error,
            Family::Loan => Exc::LoanError,
            Family::Stream => Exc::StreamError,
            Family::Join => Exc::JoinError,
            Family::Journal => Exc::JournalError,
            Family::Blackboard => Exc::BlackboardError,
            Family::Service => Exc::CallError,
        }
    }
}

/// The class of `shmbus.errors` an error of `kind` from `family` raises:
/// the kind's own class where the family has it, else the family's base.
fn class(kind: ErrorKind, family: Family) -> Exc {
    own_class(kind, family).unwrap_or(family.base())
}

/// The kind's own class in `family`, if the family has one for it.
fn own_class(kind: ErrorKind, family: Family) -> Option<Exc> {
    use ErrorKind as K;
    use Family as F;
    Some(match (kind, family) {
        (K::InvalidName, _) => Exc::InvalidNameError,
        (K::NotFound, F::Open) => Exc::BusNotFoundError,
        (K::NotFound, F::Create) => Exc::NoDirectoryError,
        (K::Exists, _) => Exc::BusExistsError,
        (K::Permission, F::Open) => Exc::OpenPermissionError,
        (K::Permission, F::Create) => Exc::CreatePermissionError,
        (K::TypeMismatch, _) => Exc::TypeMismatchError,
        (K::WrongKind, F::Open) => Exc::WrongKindError,
        (K::InvalidArgument, F::Create) => Exc::InvalidGeometryError,
        (K::RoleTaken, _) => Exc::RoleTakenError,
        (K::TooLong, _) => Exc::MessageTooLongError,
        (K::Abandoned, _) => Exc::AbandonedError,
        (K::TimedOut, F::Stream) => Exc::TimeoutError,
        (K::TimedOut, F::Service) => Exc::CallTimeoutError,
        (K::Corrupt, F::Service) => Exc::BadResponseError,
        (K::InvalidArgument, F::Service) => Exc::UnknownCallError,
        (K::PoolExhausted, _) => Exc::PoolExhaustedError,
        (K::TooManySamples, _) => Exc::TooManySamplesError,
        (K::PeerGone, F::Stream) => Exc::PeerGoneError,
        (K::Corrupt, F::Stream) => Exc::CorruptError,
        (K::NotJournaled, _) => Exc::NotJournaledError,
        (K::Journal, F::Journal) => Exc::JournalError,
        (K::Corrupt, F::Blackboard) => Exc::EntryCorruptError,
        (K::InvalidArgument, F::Blackboard) => Exc::FieldSizeError,
        (K::Full, F::Blackboard) => Exc::BlackboardFullError,
        (K::Full, _) => Exc::FullError,
        (K::LosslessRefused, F::Open) => Exc::LosslessRefusedError,
        (K::Busy, _) => Exc::EntryBusyError,
        (K::Stuck, _) => Exc::EntryStuckError,
        _ => return None,
    })
}

/// `shmbus._shmbus._kind_classes()`: each core kind's name (`"NotFound"`,
/// ...) and the class of its own it raises in the first family that has
/// one (None: only the families' bases, as for `Other`). The tests check
/// that every kind but `Other` has one, so a new kind without a class
/// fails them.
#[pyfunction]
pub(crate) fn _kind_classes() -> Vec<(String, Option<&'static str>)> {
    ErrorKind::ALL
        .iter()
        .map(|&kind| {
            let own = Family::ALL
                .iter()
                .find_map(|&f| own_class(kind, f))
                .map(Exc::name);
            (format!("{kind:?}"), own)
        })
        .collect()
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
        OpenError::Lossless(refused) => lossless_refused(py, refused),
        _ => Vec::new(),
    };
    // The core's words name Rust's handles (`pool::Subscriber`); here they
    // are Python's classes.
    let msg = match &e {
        OpenError::PoolMismatch { found: true, .. } => {
            "bus carries its messages in a block pool: open it with PoolSubscriber or PoolPublisher"
                .to_string()
        }
        _ => e.to_string(),
    };
    raise(py, class(e.kind(), Family::Open), msg, &attrs)
}

pub(crate) fn create(py: Python<'_>, e: CreateError) -> PyErr {
    plain(py, e.kind(), Family::Create, e)
}

pub(crate) fn attach(py: Python<'_>, e: AttachError) -> PyErr {
    let attrs = match e {
        AttachError::Open(e) => return open(py, e),
        AttachError::RoleTaken { pid, .. } => vec![("pid", num(py, pid.into()))],
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

/// A `try_publish` that published nothing: `FullError` with `.entry` and
/// `.pid` (None on the heap) of the lossless subscriber in the way, or
/// `MessageTooLongError`.
pub(crate) fn try_publish(py: Python<'_>, e: TryPublishError) -> PyErr {
    match e {
        TryPublishError::TooLong { len, max } => too_long(py, e.to_string(), len, max),
        TryPublishError::Full { entry, pid } => {
            let pid = match pid {
                Some(p) => num(py, p.into()),
                None => py.None(),
            };
            raise(
                py,
                class(e.kind(), Family::Publish),
                e.to_string(),
                &[("entry", num(py, entry as u64)), ("pid", pid)],
            )
        }
        e => plain(py, e.kind(), Family::Publish, e),
    }
}

/// `LosslessRefusedError`'s attributes: `.kind`, which refusal
/// ("not_allowed", "too_many", "registry_full"), and `.max`
/// (the bus's limit) for "too_many".
fn lossless_refused(py: Python<'_>, refused: &LosslessRefused) -> Vec<(&'static str, Py<PyAny>)> {
    let text = |s: &str| -> Py<PyAny> {
        s.into_pyobject(py)
            .map(|b| b.into_any().unbind())
            .unwrap_or_else(|_| py.None())
    };
    let (kind, max) = match refused {
        LosslessRefused::NotAllowed => ("not_allowed", None),
        LosslessRefused::TooMany { max } => ("too_many", Some(*max)),
        LosslessRefused::RegistryFull { .. } => ("registry_full", None),
        _ => ("other", None),
    };
    vec![
        ("kind", text(kind)),
        ("max", max.map_or_else(|| py.None(), |m| num(py, m.into()))),
    ]
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

pub(crate) fn pool_recv(py: Python<'_>, e: pool::RecvError) -> PyErr {
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

pub(crate) fn journal(py: Python<'_>, e: journal::OpenError) -> PyErr {
    plain(py, e.kind(), Family::Journal, e)
}

pub(crate) fn join(py: Python<'_>, e: JoinError) -> PyErr {
    match e {
        JoinError::Open(e) => open(py, e),
        JoinError::Journal(e) => journal(py, e),
        e => plain(py, e.kind(), Family::Join, e),
    }
}

pub(crate) fn journal_create(py: Python<'_>, e: journal::CreateError) -> PyErr {
    match e {
        journal::CreateError::Create(e) => create(py, e),
        journal::CreateError::Journal(e) => journal(py, e),
        // A snapshot or an option the journal cannot use (the binding
        // starts no journal from a snapshot): a journal error.
        e => plain(py, e.kind(), Family::Journal, e),
    }
}

pub(crate) fn journal_attach(py: Python<'_>, e: journal::AttachError) -> PyErr {
    match e {
        journal::AttachError::Attach(e) => attach(py, e),
        journal::AttachError::Journal(e) => journal(py, e),
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
    raise(py, Exc::ClosedError, what.to_string(), &[])
}

/// A call while another thread is in a call of the same handle.
pub(crate) fn busy(py: Python<'_>, closed: &str) -> PyErr {
    // `closed` is "the <handle> is closed": name the handle the same way.
    let what = closed.strip_suffix(" is closed").unwrap_or("this handle");
    raise(
        py,
        Exc::BusyError,
        format!(
            "{what} is in use by another thread (a handle serves one thread at a time; \
             close() from another thread ends its wait)"
        ),
        &[],
    )
}

/// A key or value of the wrong size for the table: `FieldSizeError`'s
/// attributes.
fn field_size(py: Python<'_>, field: &str, found: usize, expected: usize) -> Attrs {
    let field = pyo3::types::PyString::new(py, field).into_any().unbind();
    vec![
        ("field", field),
        ("found", num(py, found as u64)),
        ("expected", num(py, expected as u64)),
    ]
}

type Attrs = Vec<(&'static str, Py<PyAny>)>;

/// A blackboard read that gave up on an entry.
pub(crate) fn board_get(py: Python<'_>, e: GetError) -> PyErr {
    let attrs = match e {
        GetError::Busy { entry } => vec![("entry", num(py, entry))],
        GetError::Stuck { entry, version } => {
            vec![("entry", num(py, entry)), ("version", num(py, version))]
        }
        GetError::Corrupt { entry, tag } => vec![("entry", num(py, entry)), ("tag", num(py, tag))],
        GetError::KeySize { found, expected } => field_size(py, "key", found, expected),
        _ => Vec::new(),
    };
    raise(
        py,
        class(e.kind(), Family::Blackboard),
        e.to_string(),
        &attrs,
    )
}

/// A blackboard write refused.
pub(crate) fn board_put(py: Python<'_>, e: PutError) -> PyErr {
    let attrs = match e {
        PutError::Full { keys } => vec![("keys", num(py, keys))],
        PutError::KeySize { found, expected } => field_size(py, "key", found, expected),
        PutError::ValueSize { found, expected } => field_size(py, "value", found, expected),
        PutError::Busy { entry } => vec![("entry", num(py, entry))],
        _ => Vec::new(),
    };
    raise(
        py,
        class(e.kind(), Family::Blackboard),
        e.to_string(),
        &attrs,
    )
}

/// A blackboard removal refused.
pub(crate) fn board_remove(py: Python<'_>, e: RemoveError) -> PyErr {
    let attrs = match e {
        RemoveError::KeySize { found, expected } => field_size(py, "key", found, expected),
        RemoveError::Busy { entry } => vec![("entry", num(py, entry))],
        _ => Vec::new(),
    };
    raise(
        py,
        class(e.kind(), Family::Blackboard),
        e.to_string(),
        &attrs,
    )
}

/// A blackboard entry handle refused.
pub(crate) fn board_entry(py: Python<'_>, e: EntryError) -> PyErr {
    let attrs = match e {
        EntryError::KeySize { found, expected } => field_size(py, "key", found, expected),
        _ => Vec::new(),
    };
    raise(
        py,
        class(e.kind(), Family::Blackboard),
        e.to_string(),
        &attrs,
    )
}

/// `put` or `remove` on a blackboard opened to read.
pub(crate) fn read_only(py: Python<'_>) -> PyErr {
    raise(
        py,
        Exc::ReadOnlyError,
        "this blackboard was opened to read: Blackboard.create or Blackboard.attach writes".into(),
        &[],
    )
}

/// A service's attach refused: `RoleTakenError` when every entry of its
/// side is held (`.side`, `.entries`), else as an open's.
pub(crate) fn service_attach(py: Python<'_>, e: reqrep::AttachError) -> PyErr {
    match e {
        reqrep::AttachError::Open(e) => open(py, e),
        reqrep::AttachError::NoEntry { side, entries } => {
            let side = pyo3::types::PyString::new(py, &side.to_string())
                .into_any()
                .unbind();
            raise(
                py,
                class(e.kind(), Family::Attach),
                e.to_string(),
                &[("side", side), ("entries", num(py, entries.into()))],
            )
        }
        e => plain(py, e.kind(), Family::Attach, e),
    }
}

/// A request not sent: `FullError` (`.outstanding`) or
/// `MessageTooLongError`.
pub(crate) fn send(py: Python<'_>, e: SendError) -> PyErr {
    match e {
        SendError::TooLong { len, max } => too_long(py, e.to_string(), len, max),
        SendError::Full { outstanding } => raise(
            py,
            class(e.kind(), Family::Publish),
            e.to_string(),
            &[("outstanding", num(py, outstanding.into()))],
        ),
        e => plain(py, e.kind(), Family::Publish, e),
    }
}

/// How a call ended without a response: a `CallError` subclass per
/// outcome (`.call`, the call's id; `.pid` of the server where there is
/// one), or the send's error.
pub(crate) fn call(py: Python<'_>, e: CallError, id: Option<u64>) -> PyErr {
    let mut attrs = vec![("call", id.map_or_else(|| py.None(), |c| num(py, c)))];
    let class = match e {
        CallError::Send(e) => return send(py, e),
        CallError::ServerGone { pid } => {
            attrs.push(("pid", num(py, pid.into())));
            Exc::ServerGoneError
        }
        CallError::NoServer => Exc::NoServerError,
        CallError::Refused { pid } => {
            attrs.push(("pid", num(py, pid.into())));
            Exc::RefusedError
        }
        e => class(e.kind(), Family::Service),
    };
    raise(py, class, e.to_string(), &attrs)
}

/// A response refused (one too long is caught before the core sees it).
pub(crate) fn respond(py: Python<'_>, e: RespondError) -> PyErr {
    match e {
        RespondError::TooLong { len, max } => too_long(py, e.to_string(), len, max),
        e => plain(py, e.kind(), Family::Service, e),
    }
}
