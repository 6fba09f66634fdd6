//! What kind of failure an error is, across the error enums: the one
//! classification the bindings share ([`ErrorKind`]).

use crate::blackboard::{GetError, PutError, RemoveError};
use crate::bus::{Abandoned, ManyPublishError, PublishError, TryPublishError};
use crate::error::{AttachError, CreateError, NameError, OpenError};
use crate::stream::{PopError, PushError};
use crate::wire::GeometryError;
#[cfg(not(loom))]
use crate::{
    journal::{
        AppendError, CloseError, FeedError, JoinError, JournalAttachError, JournalCreateError,
        JournalOpenError,
    },
    pool::{LoanError, PoolRecvError},
    record::{AddBusError, CaptureError, OpenRecordingError, ReadError, WriteError},
};

/// What kind of failure an error is, whichever operation's enum it came
/// in: the `kind()` of every error enum. The C API returns it as its
/// error code (`shmbus_error_code()`) and the Python binding raises the
/// class it names (`BusNotFoundError` for [`ErrorKind::NotFound`] from an
/// open, ...), or the operation's base class (`OpenError`, `JoinError`,
/// ...) where Python has no subclass for it there.
///
/// More kinds may come: match with a `_` arm.
///
/// # Examples
/// ```
/// use shmbus::{ErrorKind, OpenOptions, Subscriber};
///
/// let name = format!("/dev/shm/shmbus-doc-errorkind-{}", std::process::id());
/// let err = Subscriber::<u64>::open(&name, &OpenOptions::default()).err().unwrap();
/// assert_eq!(err.kind(), ErrorKind::NotFound);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// No such bus or stream (open), or no directory to create it in.
    NotFound,
    /// Something already has the name (create).
    Exists,
    /// The file's mode (open) or the directory's (create) does not let
    /// this user in.
    Permission,
    /// The bus or stream carries another message type than the caller's
    /// (or a typed stream holds a record that is not one of its type).
    TypeMismatch,
    /// A segment of another kind than the call wants: a stream opened as a
    /// bus, a pool bus by a copying handle, a single-publisher bus by a
    /// many-publisher one, a journaled bus by a plain publisher.
    WrongKind,
    /// The name is not a valid bus name.
    InvalidName,
    /// An impossible geometry or option (a capacity that is not a power of
    /// two, a journal chunk too large, ...).
    InvalidArgument,
    /// A live process holds the role: publisher, producer or consumer.
    RoleTaken,
    /// A message longer than the slot, block or stream record allows.
    TooLong,
    /// A many-publisher claim was skipped before its commit: nothing was
    /// published.
    Abandoned,
    /// A wait ended without what it waited for (a full or empty stream, a
    /// journal flush, a segment still being created or locked).
    TimedOut,
    /// No pool block came free.
    PoolExhausted,
    /// A pool subscriber holds as many samples as it may.
    TooManySamples,
    /// The other side died: a stream's producer or consumer, a journaled
    /// bus's publisher.
    PeerGone,
    /// Cursors, a record header or a segment header that cannot be right.
    Corrupt,
    /// The bus has no journal.
    NotJournaled,
    /// The journal file could not be opened, read, written or compacted.
    Journal,
    /// A publish that was not to wait found no room: a lossless subscriber
    /// has not read the message it would overwrite
    /// ([`TryPublishError::Full`](crate::bus::TryPublishError::Full)).
    Full,
    /// A lossless subscriber was refused
    /// ([`LosslessRefused`](crate::bus::LosslessRefused)): the bus refuses
    /// them, has as many as it allows, or has no free registry entry.
    LosslessRefused,
    /// A blackboard entry was being written through every try: a read
    /// found it mid-write each time, or another writer holds it
    /// ([`GetError::Busy`], [`PutError::Busy`]). Try again.
    Busy,
    /// A blackboard entry was left mid-write by a writer that died
    /// ([`GetError::Stuck`]): its value is lost until the next writer
    /// attaches.
    Stuck,
    /// Anything else (a system error, a file that is no shmbus segment,
    /// ...): the message says what.
    Other,
}

impl ErrorKind {
    /// Every kind, in declaration order.
    ///
    /// # Examples
    /// ```
    /// use shmbus::ErrorKind;
    ///
    /// assert_eq!(ErrorKind::ALL[0], ErrorKind::NotFound);
    /// assert_eq!(ErrorKind::ALL.last(), Some(&ErrorKind::Other));
    /// ```
    pub const ALL: [ErrorKind; 22] = [
        ErrorKind::NotFound,
        ErrorKind::Exists,
        ErrorKind::Permission,
        ErrorKind::TypeMismatch,
        ErrorKind::WrongKind,
        ErrorKind::InvalidName,
        ErrorKind::InvalidArgument,
        ErrorKind::RoleTaken,
        ErrorKind::TooLong,
        ErrorKind::Abandoned,
        ErrorKind::TimedOut,
        ErrorKind::PoolExhausted,
        ErrorKind::TooManySamples,
        ErrorKind::PeerGone,
        ErrorKind::Corrupt,
        ErrorKind::NotJournaled,
        ErrorKind::Journal,
        ErrorKind::Full,
        ErrorKind::LosslessRefused,
        ErrorKind::Busy,
        ErrorKind::Stuck,
        ErrorKind::Other,
    ];
}

// ---------------------------------------------------------------------------
// The kind of each error enum's variants: the one place they are decided.
// Python's classes follow from these (python/src/errors.rs), as do C's
// codes (crates/shmbus-ffi), so a variant's kind is chosen to give the
// class Python raised for it before kinds existed: where Python raises the
// operation's base class, the kind is `Other` or one that the operation's
// Python family has no subclass for (a journal flush that timed out is a
// `JoinError` in Python and `TimedOut` in C).

impl NameError {
    /// [`ErrorKind::InvalidName`], whatever is wrong with the name.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{ErrorKind, error::NameError};
    ///
    /// assert_eq!(NameError::Empty.kind(), ErrorKind::InvalidName);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        ErrorKind::InvalidName
    }
}

impl GeometryError {
    /// [`ErrorKind::InvalidArgument`], whatever is impossible.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{ErrorKind, error::GeometryError};
    ///
    /// let e = GeometryError::Capacity { capacity: 100 };
    /// assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        ErrorKind::InvalidArgument
    }
}

impl OpenError {
    /// What kind of failure this is: [`ErrorKind::NotFound`] for no such
    /// bus, [`ErrorKind::WrongKind`] for a stream opened as a bus, ...
    ///
    /// # Examples
    /// ```
    /// use shmbus::{ErrorKind, OpenOptions, Subscriber};
    ///
    /// let name = format!("/dev/shm/shmbus-doc-openkind-{}", std::process::id());
    /// let err = Subscriber::<u64>::open(&name, &OpenOptions::default()).err().unwrap();
    /// assert_eq!(err.kind(), ErrorKind::NotFound);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            OpenError::Name(e) => e.kind(),
            OpenError::NotFound { .. } => ErrorKind::NotFound,
            OpenError::PermissionDenied { .. } => ErrorKind::Permission,
            OpenError::TypeMismatch { .. } => ErrorKind::TypeMismatch,
            OpenError::WrongKind { .. } | OpenError::PoolMismatch { .. } => ErrorKind::WrongKind,
            OpenError::NotInitialized { .. } | OpenError::Locked { .. } => ErrorKind::TimedOut,
            OpenError::Truncated { .. } | OpenError::InvalidGeometry(_) => ErrorKind::Corrupt,
            OpenError::NotOwn { .. }
            | OpenError::Symlink { .. }
            | OpenError::NotAFile { .. }
            | OpenError::BadMagic { .. }
            | OpenError::VersionMismatch { .. }
            | OpenError::Mlock(_)
            | OpenError::RegistryFull { .. }
            | OpenError::Io { .. } => ErrorKind::Other,
            OpenError::Lossless(_) => ErrorKind::LosslessRefused,
        }
    }
}

impl CreateError {
    /// What kind of failure this is: [`ErrorKind::Exists`] for a name
    /// that is taken, [`ErrorKind::InvalidArgument`] for an impossible
    /// geometry, ...
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, ErrorKind, Publisher};
    ///
    /// let name = format!("/dev/shm/shmbus-doc-createkind-{}", std::process::id());
    /// // 100 slots: not a power of two, refused before any file is made.
    /// let err = Publisher::<u64>::create(&name, &BusOptions::new(100)).err().unwrap();
    /// assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            CreateError::Name(e) => e.kind(),
            CreateError::AlreadyExists { .. } => ErrorKind::Exists,
            CreateError::PermissionDenied { .. } | CreateError::Group { .. } => {
                ErrorKind::Permission
            }
            CreateError::InvalidGeometry(e) => e.kind(),
            CreateError::NoDirectory { .. } => ErrorKind::NotFound,
            CreateError::NoSpace { .. }
            | CreateError::Mlock(_)
            | CreateError::HugePages(_)
            | CreateError::File { .. }
            | CreateError::Io { .. } => ErrorKind::Other,
        }
    }
}

impl AttachError {
    /// What kind of failure this is: [`ErrorKind::RoleTaken`] for a live
    /// publisher, producer or consumer, the open's kind for a segment that
    /// could not be opened, ...
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, ErrorKind, OpenOptions, Publisher};
    /// # let name = format!("/dev/shm/shmbus-doc-attachkind-{}", std::process::id());
    /// let publisher = Publisher::<u64>::create(&name, &BusOptions::new(64))?;
    /// let err = Publisher::<u64>::attach(&name, &OpenOptions::default()).err().unwrap();
    /// assert_eq!(err.kind(), ErrorKind::RoleTaken);
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            AttachError::Open(e) => e.kind(),
            AttachError::RoleTaken { .. } => ErrorKind::RoleTaken,
            AttachError::Journaled { .. } | AttachError::WrongMode { .. } => ErrorKind::WrongKind,
            AttachError::PidNamespace { .. } => ErrorKind::Other,
        }
    }
}

impl GetError {
    /// [`ErrorKind::Busy`] for an entry busy through every try,
    /// [`ErrorKind::Stuck`] for one a dead writer left mid-write,
    /// [`ErrorKind::Corrupt`], [`ErrorKind::InvalidArgument`] for a raw
    /// key of the wrong size.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{ErrorKind, blackboard::GetError};
    ///
    /// assert_eq!(GetError::Stuck { entry: 3, version: 9 }.kind(), ErrorKind::Stuck);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            GetError::Busy { .. } => ErrorKind::Busy,
            GetError::Stuck { .. } => ErrorKind::Stuck,
            GetError::Corrupt { .. } => ErrorKind::Corrupt,
            GetError::KeySize { .. } => ErrorKind::InvalidArgument,
        }
    }
}

impl PutError {
    /// [`ErrorKind::Full`] for a full table, [`ErrorKind::InvalidArgument`]
    /// for raw bytes of the wrong size, [`ErrorKind::Busy`] for an entry
    /// another writer holds (as [`GetError::Busy`]).
    ///
    /// # Examples
    /// ```
    /// use shmbus::{ErrorKind, blackboard::PutError};
    ///
    /// assert_eq!(PutError::Full { keys: 8 }.kind(), ErrorKind::Full);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            PutError::Full { .. } => ErrorKind::Full,
            PutError::KeySize { .. } | PutError::ValueSize { .. } => ErrorKind::InvalidArgument,
            PutError::Busy { .. } => ErrorKind::Busy,
        }
    }
}

impl RemoveError {
    /// [`ErrorKind::InvalidArgument`] for a raw key of the wrong size,
    /// [`ErrorKind::Busy`] for an entry another writer holds.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{ErrorKind, blackboard::RemoveError};
    ///
    /// let e = RemoveError::KeySize { found: 3, expected: 8 };
    /// assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            RemoveError::KeySize { .. } => ErrorKind::InvalidArgument,
            RemoveError::Busy { .. } => ErrorKind::Busy,
        }
    }
}

#[cfg(not(loom))]
impl FeedError {
    /// The join's kind, or the table's refusal's ([`ErrorKind::Full`]),
    /// or [`ErrorKind::TypeMismatch`] for values of another size.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{ErrorKind, blackboard::PutError, journal::FeedError};
    ///
    /// assert_eq!(FeedError::Board(PutError::Full { keys: 8 }).kind(), ErrorKind::Full);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            FeedError::Join(e) => e.kind(),
            FeedError::Board(e) => e.kind(),
            FeedError::ValueSize { .. } => ErrorKind::TypeMismatch,
        }
    }
}

impl PublishError {
    /// [`ErrorKind::TooLong`], the only way a publish fails.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{ErrorKind, Publisher};
    ///
    /// let mut publisher = Publisher::<[u8], _>::on_heap_bytes(4, 8)?;
    /// let err = publisher.publish(b"too long").unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::TooLong);
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            PublishError::TooLong { .. } => ErrorKind::TooLong,
        }
    }
}

impl TryPublishError {
    /// [`ErrorKind::Full`] for a lossless subscriber in the way,
    /// [`ErrorKind::TooLong`] for a message longer than the bus carries,
    /// [`ErrorKind::Abandoned`] for a many-publisher claim skipped.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{ErrorKind, Publisher};
    ///
    /// let mut publisher = Publisher::<[u8], _>::on_heap_bytes(4, 8)?;
    /// let err = publisher.try_publish(b"too long").unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::TooLong);
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            TryPublishError::Full { .. } => ErrorKind::Full,
            TryPublishError::TooLong { .. } => ErrorKind::TooLong,
            TryPublishError::Abandoned(e) => e.kind(),
        }
    }
}

impl Abandoned {
    /// [`ErrorKind::Abandoned`].
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use shmbus::{ErrorKind, bus::Abandoned};
    ///
    /// let e = Abandoned { seq: 3, unblock: Duration::from_secs(1) };
    /// assert_eq!(e.kind(), ErrorKind::Abandoned);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        ErrorKind::Abandoned
    }
}

impl ManyPublishError {
    /// [`ErrorKind::TooLong`] or [`ErrorKind::Abandoned`].
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use shmbus::{ErrorKind, bus::ManyPublisher};
    ///
    /// let mut publisher = ManyPublisher::<[u8], _>::on_heap_bytes(4, 8, Duration::from_secs(1))?;
    /// let err = publisher.publish(b"too long").unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::TooLong);
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            ManyPublishError::TooLong { .. } => ErrorKind::TooLong,
            ManyPublishError::Abandoned(e) => e.kind(),
        }
    }
}

impl PushError {
    /// What kind of failure this is: [`ErrorKind::TimedOut`] for a stream
    /// that stayed full (`Full` included), [`ErrorKind::PeerGone`],
    /// [`ErrorKind::TooLong`] or [`ErrorKind::Corrupt`].
    ///
    /// # Examples
    /// ```
    /// use shmbus::{ErrorKind, stream::PushError};
    ///
    /// assert_eq!(PushError::Full.kind(), ErrorKind::TimedOut);
    /// assert_eq!(PushError::PeerGone { pid: 1 }.kind(), ErrorKind::PeerGone);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            PushError::TooLong { .. } => ErrorKind::TooLong,
            PushError::Full | PushError::TimedOut(_) => ErrorKind::TimedOut,
            PushError::PeerGone { .. } => ErrorKind::PeerGone,
            PushError::CorruptCursors { .. } => ErrorKind::Corrupt,
        }
    }
}

impl PopError {
    /// What kind of failure this is: [`ErrorKind::TimedOut`] for a stream
    /// that stayed empty (`Empty` included), [`ErrorKind::PeerGone`],
    /// [`ErrorKind::Corrupt`], or [`ErrorKind::TypeMismatch`] for a record
    /// that is not one of a typed consumer's type.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{ErrorKind, stream::PopError};
    ///
    /// assert_eq!(PopError::Empty.kind(), ErrorKind::TimedOut);
    /// assert_eq!(PopError::Corrupt { at: 0, header: 0 }.kind(), ErrorKind::Corrupt);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            PopError::Empty | PopError::TimedOut(_) => ErrorKind::TimedOut,
            PopError::PeerGone { .. } => ErrorKind::PeerGone,
            PopError::CorruptCursors { .. } | PopError::Corrupt { .. } => ErrorKind::Corrupt,
            PopError::RecordLength { .. } => ErrorKind::TypeMismatch,
        }
    }
}

#[cfg(not(loom))]
impl LoanError {
    /// What kind of failure this is: [`ErrorKind::PoolExhausted`] or
    /// [`ErrorKind::TooLong`].
    ///
    /// # Examples
    /// ```
    /// use shmbus::{ErrorKind, Wait, pool::PoolPublisher};
    ///
    /// let mut publisher = PoolPublisher::<[u8], _>::on_heap(2, 64, 3)?;
    /// let err = publisher.loan(100, Wait::Never).err().unwrap();
    /// assert_eq!(err.kind(), ErrorKind::TooLong);
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            LoanError::TooLong { .. } => ErrorKind::TooLong,
            LoanError::Exhausted { .. } => ErrorKind::PoolExhausted,
        }
    }
}

#[cfg(not(loom))]
impl PoolRecvError {
    /// [`ErrorKind::TooManySamples`].
    ///
    /// # Examples
    /// ```
    /// use shmbus::{ErrorKind, pool::PoolRecvError};
    ///
    /// let e = PoolRecvError::TooManySamples { max: 8 };
    /// assert_eq!(e.kind(), ErrorKind::TooManySamples);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            PoolRecvError::TooManySamples { .. } => ErrorKind::TooManySamples,
        }
    }
}

#[cfg(not(loom))]
impl JournalOpenError {
    /// [`ErrorKind::Journal`], whatever is wrong with the file.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{ErrorKind, journal::JournalOpenError};
    ///
    /// let e = JournalOpenError::Sealed { path: "ticks.journal".into() };
    /// assert_eq!(e.kind(), ErrorKind::Journal);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        ErrorKind::Journal
    }
}

#[cfg(not(loom))]
impl JoinError {
    /// What kind of failure this is: the open's kind for a bus that could
    /// not be opened, [`ErrorKind::NotJournaled`], [`ErrorKind::PeerGone`]
    /// for a publisher that died before its flush, [`ErrorKind::TimedOut`]
    /// for one that did not flush in time, ...
    ///
    /// # Examples
    /// ```
    /// use shmbus::{ErrorKind, journal::JoinError};
    ///
    /// let e = JoinError::NotJournaled { name: "ticks".into() };
    /// assert_eq!(e.kind(), ErrorKind::NotJournaled);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            JoinError::Open(e) => e.kind(),
            JoinError::NotJournaled { .. } => ErrorKind::NotJournaled,
            JoinError::PublisherGone { .. } => ErrorKind::PeerGone,
            JoinError::FlushTimeout { .. } => ErrorKind::TimedOut,
            JoinError::FlushFailed => ErrorKind::Journal,
            JoinError::Journal(e) => e.kind(),
            JoinError::Cancelled => ErrorKind::Other,
        }
    }
}

#[cfg(not(loom))]
impl JournalCreateError {
    /// What kind of failure this is: the bus's create's kind, or
    /// [`ErrorKind::Journal`] for the journal, or
    /// [`ErrorKind::InvalidArgument`] for an impossible option or snapshot.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{ErrorKind, journal::JournalCreateError};
    ///
    /// let e = JournalCreateError::TooLarge { option: "chunk_bytes", value: 1 << 40, max: 1 << 30 };
    /// assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            JournalCreateError::Create(e) => e.kind(),
            JournalCreateError::Journal(e) => e.kind(),
            JournalCreateError::Snapshot(_) | JournalCreateError::TooLarge { .. } => {
                ErrorKind::InvalidArgument
            }
        }
    }
}

#[cfg(not(loom))]
impl JournalAttachError {
    /// What kind of failure this is: the attach's kind,
    /// [`ErrorKind::NotJournaled`] or [`ErrorKind::Journal`].
    ///
    /// # Examples
    /// ```
    /// use shmbus::{ErrorKind, journal::JournalAttachError};
    ///
    /// let e = JournalAttachError::NotJournaled { name: "ticks".into() };
    /// assert_eq!(e.kind(), ErrorKind::NotJournaled);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            JournalAttachError::Attach(e) => e.kind(),
            JournalAttachError::NotJournaled { .. } => ErrorKind::NotJournaled,
            JournalAttachError::Journal(e) => e.kind(),
        }
    }
}

#[cfg(not(loom))]
impl AppendError {
    /// [`ErrorKind::TooLong`] for a message longer than the bus's, else
    /// [`ErrorKind::Journal`].
    ///
    /// # Examples
    /// ```
    /// use shmbus::{ErrorKind, journal::AppendError};
    ///
    /// assert_eq!(AppendError::TooLong { len: 9, max: 8 }.kind(), ErrorKind::TooLong);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            AppendError::TooLong { .. } => ErrorKind::TooLong,
            AppendError::Full { .. } | AppendError::Io { .. } => ErrorKind::Journal,
        }
    }
}

#[cfg(not(loom))]
impl CloseError {
    /// [`ErrorKind::Journal`].
    ///
    /// # Examples
    /// ```
    /// use shmbus::{ErrorKind, journal::CloseError};
    ///
    /// let e = CloseError::Compaction { path: "ticks.journal".into(), reason: "disk full".into() };
    /// assert_eq!(e.kind(), ErrorKind::Journal);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            CloseError::Compaction { .. } => ErrorKind::Journal,
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::io;
    use std::path::PathBuf;
    use std::time::Duration;

    use super::*;
    use crate::error::{HugePageError, Role};
    use crate::journal::SnapshotError;
    use crate::pool::Census;
    use crate::wire::{Kind, Publishers, TypeFingerprint};
    use ErrorKind as K;

    fn path() -> PathBuf {
        PathBuf::from("/dev/shm/x")
    }

    fn io() -> io::Error {
        io::Error::from_raw_os_error(libc::EIO)
    }

    fn fingerprint() -> TypeFingerprint {
        TypeFingerprint {
            size: 8,
            align: 8,
            name_hash: 1,
            name: "u64".into(),
        }
    }

    fn open_errors() -> Vec<(OpenError, ErrorKind)> {
        let waited = Duration::from_secs(1);
        vec![
            (OpenError::Name(NameError::Empty), K::InvalidName),
            (OpenError::NotFound { path: path() }, K::NotFound),
            (OpenError::PermissionDenied { path: path() }, K::Permission),
            (
                OpenError::NotOwn {
                    path: path(),
                    owner: 1,
                    mode: 0o666,
                    uid: 2,
                    max_mode: 0o600,
                },
                K::Other,
            ),
            (OpenError::Symlink { path: path() }, K::Other),
            (OpenError::NotAFile { path: path() }, K::Other),
            (
                OpenError::NotInitialized {
                    path: path(),
                    waited,
                },
                K::TimedOut,
            ),
            (
                OpenError::BadMagic {
                    path: path(),
                    found: 0,
                    expected: 1,
                },
                K::Other,
            ),
            (
                OpenError::VersionMismatch {
                    found: 0,
                    expected: 1,
                },
                K::Other,
            ),
            (
                OpenError::WrongKind {
                    found: Kind::Stream,
                    expected: Kind::Broadcast,
                },
                K::WrongKind,
            ),
            (
                OpenError::TypeMismatch {
                    found: fingerprint(),
                    expected: fingerprint(),
                },
                K::TypeMismatch,
            ),
            (
                OpenError::Truncated {
                    path: path(),
                    len: 0,
                    expected: 1,
                },
                K::Corrupt,
            ),
            (OpenError::InvalidGeometry("x".into()), K::Corrupt),
            (
                OpenError::Locked {
                    path: path(),
                    waited,
                },
                K::TimedOut,
            ),
            (OpenError::Mlock(io()), K::Other),
            (OpenError::PoolMismatch { found: true }, K::WrongKind),
            (OpenError::RegistryFull { entries: 1 }, K::Other),
            (
                OpenError::Lossless(crate::bus::LosslessRefused::NotAllowed),
                K::LosslessRefused,
            ),
            (
                OpenError::Io {
                    what: "open",
                    source: io(),
                },
                K::Other,
            ),
        ]
    }

    fn create_errors() -> Vec<(CreateError, ErrorKind)> {
        vec![
            (CreateError::Name(NameError::Nul), K::InvalidName),
            (CreateError::AlreadyExists { path: path() }, K::Exists),
            (
                CreateError::PermissionDenied { path: path() },
                K::Permission,
            ),
            (
                CreateError::Group {
                    path: path(),
                    gid: 1,
                    source: io(),
                },
                K::Permission,
            ),
            (
                CreateError::InvalidGeometry(GeometryError::RawNeedsMsgSize),
                K::InvalidArgument,
            ),
            (
                CreateError::NoSpace {
                    path: path(),
                    len: 1,
                },
                K::Other,
            ),
            (CreateError::Mlock(io()), K::Other),
            (
                CreateError::HugePages(HugePageError::ShmemDenied {
                    found: "deny".into(),
                }),
                K::Other,
            ),
            (CreateError::NoDirectory { path: path() }, K::NotFound),
            (
                CreateError::File {
                    path: path(),
                    source: io(),
                },
                K::Other,
            ),
            (
                CreateError::Io {
                    what: "x",
                    source: io(),
                },
                K::Other,
            ),
        ]
    }

    #[test]
    fn every_open_and_create_error_has_the_kind_python_raises_for_it() {
        for (e, kind) in open_errors() {
            assert_eq!(e.kind(), kind, "{e:?}");
        }
        for (e, kind) in create_errors() {
            assert_eq!(e.kind(), kind, "{e:?}");
        }
    }

    #[test]
    fn an_attach_error_has_its_open_errors_kind_or_its_own() {
        for (e, kind) in open_errors() {
            assert_eq!(AttachError::Open(e).kind(), kind);
        }
        let cases = [
            (
                AttachError::RoleTaken {
                    role: Role::Publisher,
                    pid: 1,
                },
                K::RoleTaken,
            ),
            (
                AttachError::RoleTaken {
                    role: Role::Consumer,
                    pid: 1,
                },
                K::RoleTaken,
            ),
            (AttachError::Journaled { path: path() }, K::WrongKind),
            (
                AttachError::WrongMode {
                    role: Role::Writer,
                    found: Publishers::One,
                    expected: Publishers::Many,
                },
                K::WrongKind,
            ),
            (AttachError::PidNamespace { bus: 1, ours: 2 }, K::Other),
        ];
        for (e, kind) in cases {
            assert_eq!(e.kind(), kind, "{e:?}");
        }
    }

    #[test]
    fn a_wrong_mode_names_publishers_for_a_bus_and_writers_for_a_blackboard() {
        let (one, many) = (Publishers::One, Publishers::Many);
        let bus = AttachError::WrongMode {
            role: Role::Publisher,
            found: one,
            expected: many,
        };
        assert_eq!(
            bus.to_string(),
            "bus is single-publisher, a many-publisher publisher cannot attach to it"
        );
        let board = AttachError::WrongMode {
            role: Role::Writer,
            found: many,
            expected: one,
        };
        assert_eq!(
            board.to_string(),
            "blackboard is made for many writers (`ManyWriter`), expected one made for one writer (`Writer`)"
        );
        let taken = AttachError::RoleTaken {
            role: Role::Consumer,
            pid: 7,
        };
        assert_eq!(
            taken.to_string(),
            "stream already has a live consumer (pid 7)"
        );
    }

    #[test]
    fn publish_loan_and_receive_errors_have_their_kinds() {
        let abandoned = Abandoned {
            seq: 1,
            unblock: Duration::from_secs(1),
        };
        assert_eq!(PublishError::TooLong { len: 2, max: 1 }.kind(), K::TooLong);
        assert_eq!(
            ManyPublishError::TooLong { len: 2, max: 1 }.kind(),
            K::TooLong
        );
        assert_eq!(ManyPublishError::Abandoned(abandoned).kind(), K::Abandoned);
        let full = TryPublishError::Full {
            entry: 3,
            pid: Some(7),
        };
        assert_eq!(full.kind(), K::Full);
        assert_eq!(
            TryPublishError::TooLong { len: 2, max: 1 }.kind(),
            K::TooLong
        );
        assert_eq!(abandoned.kind(), K::Abandoned);
        assert_eq!(LoanError::TooLong { len: 2, max: 1 }.kind(), K::TooLong);
        let census = Census::default();
        assert_eq!(LoanError::Exhausted { census }.kind(), K::PoolExhausted);
        let held = PoolRecvError::TooManySamples { max: 8 };
        assert_eq!(held.kind(), K::TooManySamples);
    }

    #[test]
    fn stream_errors_have_their_kinds() {
        let wait = Duration::from_millis(1);
        let push = [
            (PushError::TooLong { len: 2, max: 1 }, K::TooLong),
            (PushError::Full, K::TimedOut),
            (PushError::TimedOut(wait), K::TimedOut),
            (PushError::PeerGone { pid: 1 }, K::PeerGone),
            (
                PushError::CorruptCursors {
                    head: 0,
                    tail: 0,
                    capacity: 64,
                    min_head: 0,
                },
                K::Corrupt,
            ),
        ];
        for (e, kind) in push {
            assert_eq!(e.kind(), kind, "{e:?}");
        }
        let pop = [
            (PopError::Empty, K::TimedOut),
            (PopError::TimedOut(wait), K::TimedOut),
            (PopError::PeerGone { pid: 1 }, K::PeerGone),
            (
                PopError::CorruptCursors {
                    head: 0,
                    tail: 0,
                    capacity: 64,
                },
                K::Corrupt,
            ),
            (PopError::Corrupt { at: 0, header: 0 }, K::Corrupt),
            (
                PopError::RecordLength {
                    at: 0,
                    len: 3,
                    expected: 8,
                    type_name: "u64",
                },
                K::TypeMismatch,
            ),
        ];
        for (e, kind) in pop {
            assert_eq!(e.kind(), kind, "{e:?}");
        }
    }

    #[test]
    fn a_blackboard_entry_busy_or_stuck_is_of_the_busy_or_stuck_kind_not_timed_out_or_peer_gone() {
        let get = [
            (GetError::Busy { entry: 1 }, K::Busy),
            (
                GetError::Stuck {
                    entry: 1,
                    version: 3,
                },
                K::Stuck,
            ),
            (GetError::Corrupt { entry: 1, tag: 9 }, K::Corrupt),
            (
                GetError::KeySize {
                    found: 3,
                    expected: 8,
                },
                K::InvalidArgument,
            ),
        ];
        for (e, kind) in get {
            assert_eq!(e.kind(), kind, "{e:?}");
        }
        let put = [
            (PutError::Full { keys: 8 }, K::Full),
            (
                PutError::KeySize {
                    found: 3,
                    expected: 8,
                },
                K::InvalidArgument,
            ),
            (
                PutError::ValueSize {
                    found: 3,
                    expected: 8,
                },
                K::InvalidArgument,
            ),
            (PutError::Busy { entry: 1 }, K::Busy),
        ];
        for (e, kind) in put {
            assert_eq!(e.kind(), kind, "{e:?}");
        }
        assert_eq!(RemoveError::Busy { entry: 1 }.kind(), K::Busy);
    }

    /// The kind's place in [`ErrorKind::ALL`]: a match with no `_` arm, so
    /// a new kind does not compile until it is placed there.
    fn position(kind: ErrorKind) -> usize {
        match kind {
            K::NotFound => 0,
            K::Exists => 1,
            K::Permission => 2,
            K::TypeMismatch => 3,
            K::WrongKind => 4,
            K::InvalidName => 5,
            K::InvalidArgument => 6,
            K::RoleTaken => 7,
            K::TooLong => 8,
            K::Abandoned => 9,
            K::TimedOut => 10,
            K::PoolExhausted => 11,
            K::TooManySamples => 12,
            K::PeerGone => 13,
            K::Corrupt => 14,
            K::NotJournaled => 15,
            K::Journal => 16,
            K::Full => 17,
            K::LosslessRefused => 18,
            K::Busy => 19,
            K::Stuck => 20,
            K::Other => 21,
        }
    }

    #[test]
    fn every_kind_is_in_all_once_in_declaration_order() {
        for (i, kind) in ErrorKind::ALL.iter().enumerate() {
            assert_eq!(position(*kind), i, "{kind:?}");
        }
        // `Other` is placed last: a kind placed but missing from `ALL`
        // leaves it short.
        assert_eq!(ErrorKind::ALL.len(), position(K::Other) + 1);
    }

    fn journal_error() -> JournalOpenError {
        JournalOpenError::Sealed { path: path() }
    }

    #[test]
    fn journal_errors_have_their_kinds() {
        assert_eq!(journal_error().kind(), K::Journal);
        let join = [
            (
                JoinError::Open(OpenError::NotFound { path: path() }),
                K::NotFound,
            ),
            (
                JoinError::NotJournaled { name: "x".into() },
                K::NotJournaled,
            ),
            (JoinError::PublisherGone { pid: 1 }, K::PeerGone),
            (
                JoinError::FlushTimeout {
                    waited: Duration::from_secs(1),
                },
                K::TimedOut,
            ),
            (JoinError::FlushFailed, K::Journal),
            (JoinError::Journal(journal_error()), K::Journal),
            (JoinError::Cancelled, K::Other),
        ];
        for (e, kind) in join {
            assert_eq!(e.kind(), kind, "{e:?}");
        }
        let create = [
            (
                JournalCreateError::Create(CreateError::AlreadyExists { path: path() }),
                K::Exists,
            ),
            (JournalCreateError::Journal(journal_error()), K::Journal),
            (
                JournalCreateError::Snapshot(SnapshotError::Exists { path: path() }),
                K::InvalidArgument,
            ),
            (
                JournalCreateError::TooLarge {
                    option: "chunk_bytes",
                    value: 2,
                    max: 1,
                },
                K::InvalidArgument,
            ),
        ];
        for (e, kind) in create {
            assert_eq!(e.kind(), kind, "{e:?}");
        }
        let attach = [
            (
                JournalAttachError::Attach(AttachError::RoleTaken {
                    role: Role::Publisher,
                    pid: 1,
                }),
                K::RoleTaken,
            ),
            (
                JournalAttachError::NotJournaled { name: "x".into() },
                K::NotJournaled,
            ),
            (JournalAttachError::Journal(journal_error()), K::Journal),
        ];
        for (e, kind) in attach {
            assert_eq!(e.kind(), kind, "{e:?}");
        }
        let append = [
            (AppendError::TooLong { len: 2, max: 1 }, K::TooLong),
            (
                AppendError::Full {
                    path: path(),
                    len: 1,
                },
                K::Journal,
            ),
            (
                AppendError::Io {
                    path: path(),
                    what: "x",
                    source: io(),
                },
                K::Journal,
            ),
        ];
        for (e, kind) in append {
            assert_eq!(e.kind(), kind, "{e:?}");
        }
        let close = CloseError::Compaction {
            path: path(),
            reason: "x".into(),
        };
        assert_eq!(close.kind(), K::Journal);
    }
}

#[cfg(not(loom))]
impl AddBusError {
    /// [`ErrorKind::InvalidArgument`] for a bus past the format's bounds,
    /// [`ErrorKind::Other`] for a failed write.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{ErrorKind, record::AddBusError};
    ///
    /// let e = AddBusError::TooManyBuses { found: 65536, max: 65536 };
    /// assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            AddBusError::Io(_) => ErrorKind::Other,
            _ => ErrorKind::InvalidArgument,
        }
    }
}

#[cfg(not(loom))]
impl WriteError {
    /// [`ErrorKind::InvalidArgument`] for a record the recorder refused,
    /// [`ErrorKind::Exists`] for a file in the way of one it makes,
    /// [`ErrorKind::Permission`] for one it may not make, and
    /// [`ErrorKind::Other`] for a failed write.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{ErrorKind, record::WriteError};
    ///
    /// assert_eq!(WriteError::EmptyGap { bus: 0 }.kind(), ErrorKind::InvalidArgument);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            WriteError::File { source, .. } => match source.kind() {
                std::io::ErrorKind::AlreadyExists => ErrorKind::Exists,
                std::io::ErrorKind::PermissionDenied => ErrorKind::Permission,
                _ => ErrorKind::Other,
            },
            WriteError::Io(_) => ErrorKind::Other,
            _ => ErrorKind::InvalidArgument,
        }
    }
}

#[cfg(not(loom))]
impl OpenRecordingError {
    /// [`ErrorKind::Corrupt`] for a header cut short (a part's: its
    /// error's kind), [`ErrorKind::Other`] for a file that is no
    /// recording, of another version, or unreadable.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{ErrorKind, record::OpenRecordingError};
    ///
    /// let e = OpenRecordingError::Truncated { found: 3, expected: 16 };
    /// assert_eq!(e.kind(), ErrorKind::Corrupt);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            OpenRecordingError::Truncated { .. } => ErrorKind::Corrupt,
            OpenRecordingError::InPart { source, .. } => source.kind(),
            _ => ErrorKind::Other,
        }
    }
}

#[cfg(not(loom))]
impl ReadError {
    /// [`ErrorKind::Corrupt`] for a record that cannot be right,
    /// [`ErrorKind::Other`] for a failed read.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{ErrorKind, record::ReadError};
    ///
    /// let e = ReadError::EmptyGap { offset: 16 };
    /// assert_eq!(e.kind(), ErrorKind::Corrupt);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            ReadError::Io(_) => ErrorKind::Other,
            ReadError::InPart { source, .. } => source.kind(),
            _ => ErrorKind::Corrupt,
        }
    }
}

#[cfg(not(loom))]
impl CaptureError {
    /// The kind of the error it wraps ([`ErrorKind::InvalidArgument`] for
    /// a bus added twice).
    ///
    /// # Examples
    /// ```
    /// use shmbus::{ErrorKind, record::{CaptureError, WriteError}};
    ///
    /// let e = CaptureError::Write(WriteError::EmptyGap { bus: 0 });
    /// assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            CaptureError::Open { source, .. } => source.kind(),
            CaptureError::SameBus { .. } => ErrorKind::InvalidArgument,
            CaptureError::Attach { source, .. } => source.kind(),
            CaptureError::AddBus { source, .. } => source.kind(),
            CaptureError::Write(e) => e.kind(),
            CaptureError::Pool { source, .. } => source.kind(),
            CaptureError::Stream { source, .. } => source.kind(),
        }
    }
}
