//! The errors every kind shares: making a bus file ([`CreateError`]),
//! opening one ([`OpenError`]), taking over a role ([`AttachError`]), and
//! what those wrap. Each kind's own errors live in its module
//! ([`crate::bus::PublishError`], [`stream::PushError`](crate::stream::PushError), ...).
//!
//! One error enum per operation. Each `Display` names what was found and
//! what was expected, so the CLI can print it as its one line; each has a
//! `kind()`, beside the enum, giving its [`ErrorKind`]: the one
//! classification, defined here, from which C chooses its error code and
//! Python its exception class.

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use thiserror::Error;

pub use crate::mem::huge::HugePageError;
pub use crate::sys::NameError;
pub use crate::wire::GeometryError;
use crate::wire::{Kind, Publishers, TypeFingerprint};

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
    /// ([`LosslessRefused`]): the bus refuses
    /// them, has as many as it allows, or has no free registry entry.
    LosslessRefused,
    /// A blackboard entry was being written through every try: a read
    /// found it mid-write each time, or another writer holds it
    /// ([`GetError::Busy`](crate::blackboard::GetError::Busy),
    /// [`PutError::Busy`](crate::blackboard::PutError::Busy)). Try again.
    Busy,
    /// A blackboard entry was left mid-write by a writer that died
    /// ([`GetError::Stuck`](crate::blackboard::GetError::Stuck)): its value is lost until the next writer
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

/// Why a segment could not be opened (by a subscriber, `stat`, or as the
/// first step of a publisher attaching).
///
/// # Examples
/// ```
/// use shmbus::{BusOptions, OpenError, OpenOptions, Publisher, Subscriber};
///
/// let name = format!("/dev/shm/shmbus-doc-openerror-{}", std::process::id());
/// match Subscriber::<u64>::open(&name, &OpenOptions::default()) {
///     Err(OpenError::NotFound { path }) => assert_eq!(path, std::path::Path::new(&name)),
///     Err(other) => panic!("unexpected error: {other}"),
///     Ok(_) => panic!("there is no such bus"),
/// }
///
/// // A bus of `u64` opened as a bus of `u32`:
/// let publisher = Publisher::<u64>::create(&name, &BusOptions::new(64))?;
/// let err = Subscriber::<u32>::open(&name, &OpenOptions::default()).err();
/// assert!(matches!(err, Some(OpenError::TypeMismatch { .. })));
/// # shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum OpenError {
    /// The name is not a valid bus name.
    #[error(transparent)]
    Name(#[from] NameError),
    /// No file at the path.
    #[error("{path}: no such bus")]
    NotFound {
        /// Where it was looked for.
        path: PathBuf,
    },
    /// The file's mode does not let this user open it.
    #[error("{path}: permission denied")]
    PermissionDenied {
        /// The file.
        path: PathBuf,
    },
    /// Opened with [`OpenOptions::only_own`](crate::OpenOptions::only_own):
    /// the file belongs to another user, or grants someone permissions
    /// beyond the mode asked for.
    #[error(
        "{path}: owned by uid {owner} with mode {mode:o}, expected uid {uid} and no permission beyond {max_mode:o}"
    )]
    NotOwn {
        /// The file.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// Its permission bits.
        mode: u32,
        /// This process's effective uid.
        uid: u32,
        /// The most the file may grant.
        max_mode: u32,
    },
    /// The path is a symlink; shmbus never follows one.
    #[error("{path}: is a symbolic link; refusing to follow it")]
    Symlink {
        /// The link.
        path: PathBuf,
    },
    /// The path is a directory, device or other non-regular file.
    #[error("{path}: not a regular file")]
    NotAFile {
        /// The path.
        path: PathBuf,
    },
    /// The file exists but its creator has not finished (or died before)
    /// writing the header.
    #[error(
        "{path}: not initialized (no header after waiting {waited:?}); its creator may have died"
    )]
    NotInitialized {
        /// The file.
        path: PathBuf,
        /// How long the opener waited for the magic.
        waited: Duration,
    },
    /// The first 8 bytes are not shmbus's magic.
    #[error("{path}: not a shmbus segment: magic is {found:#018x}, expected {expected:#018x}")]
    BadMagic {
        /// The file.
        path: PathBuf,
        /// What the file holds.
        found: u64,
        /// [`crate::wire::MAGIC`].
        expected: u64,
    },
    /// A layout this build does not speak.
    #[error("layout version {found}, expected {expected}")]
    VersionMismatch {
        /// What the file holds.
        found: u32,
        /// [`crate::wire::VERSION`].
        expected: u32,
    },
    /// A segment of another kind (a stream opened as a bus, say).
    #[error("segment kind is {found}, expected {expected}")]
    WrongKind {
        /// What the file holds.
        found: Kind,
        /// What the caller asked for.
        expected: Kind,
    },
    /// The bus carries another message type.
    #[error("message type mismatch: bus carries {found}, expected {expected}")]
    TypeMismatch {
        /// The bus's fingerprint.
        found: TypeFingerprint,
        /// The caller's.
        expected: TypeFingerprint,
    },
    /// The file is shorter than a segment can be, or than its header says
    /// the segment is.
    #[error("{path}: truncated segment: the file is {len} bytes, expected at least {expected}")]
    Truncated {
        /// The file.
        path: PathBuf,
        /// `fstat` length.
        len: u64,
        /// What the header's geometry needs.
        expected: u64,
    },
    /// The header's geometry is impossible.
    #[error("invalid geometry: {0}")]
    InvalidGeometry(String),
    /// Another process held the segment's attach lock exclusively for the
    /// whole init timeout: `shmbus clean` deciding to remove it holds it
    /// for a moment, anything longer is not shmbus.
    #[error(
        "{path}: locked exclusively by another process for {waited:?} (shmbus clean removing it?), expected the shared attach lock to be free"
    )]
    Locked {
        /// The file.
        path: PathBuf,
        /// How long the opener tried.
        waited: Duration,
    },
    /// `mlock` failed (often `RLIMIT_MEMLOCK`).
    #[error("cannot lock the segment in memory: {0}")]
    Mlock(io::Error),
    /// A pool bus opened by a handle that copies messages, or a copying
    /// bus opened by a pool handle (`pool::Publisher`, `pool::Subscriber`).
    #[error("{}", if *found { "bus carries its messages in a block pool: open it with pool::Subscriber or pool::Publisher" } else { "bus has no block pool: open it with Subscriber or Publisher" })]
    PoolMismatch {
        /// Whether the bus has a pool.
        found: bool,
    },
    /// Every registry entry is taken (by live subscribers): a pool
    /// subscriber needs one to record the blocks it holds.
    #[error(
        "all {entries} registry entries are taken by live subscribers; a pool subscriber needs one"
    )]
    RegistryFull {
        /// The registry's size.
        entries: usize,
    },
    /// A lossless subscriber
    /// ([`OpenOptions::lossless`](crate::OpenOptions::lossless)) refused:
    /// the reason says why.
    #[error("lossless subscriber refused: {0}")]
    Lossless(#[from] LosslessRefused),
    /// Any other system error, with the step that failed.
    #[error("{what}: {source}")]
    Io {
        /// The step.
        what: &'static str,
        /// The error.
        source: io::Error,
    },
}

impl OpenError {
    /// The same error, naming `path` where it names a file (errors found
    /// in a mapped header do not know where the mapping came from).
    pub(crate) fn at(mut self, at: &std::path::Path) -> OpenError {
        match &mut self {
            OpenError::BadMagic { path, .. } | OpenError::Truncated { path, .. } => {
                *path = at.to_owned()
            }
            _ => {}
        }
        self
    }

    pub(crate) fn from_open(path: &std::path::Path, err: io::Error) -> OpenError {
        let path = path.to_owned();
        match err.raw_os_error() {
            Some(libc::ENOENT) => OpenError::NotFound { path },
            Some(libc::EACCES) | Some(libc::EPERM) => OpenError::PermissionDenied { path },
            Some(libc::ELOOP) => OpenError::Symlink { path },
            Some(libc::EISDIR) | Some(libc::ENXIO) => OpenError::NotAFile { path },
            _ if err.kind() == io::ErrorKind::InvalidInput => OpenError::NotAFile { path },
            _ => OpenError::Io {
                what: "open",
                source: err,
            },
        }
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

/// Why a bus could not be created.
///
/// # Examples
/// ```
/// use shmbus::{BusOptions, CreateError, Publisher};
/// # let name = format!("/dev/shm/shmbus-doc-createerror-{}", std::process::id());
/// let publisher = Publisher::<u64>::create(&name, &BusOptions::new(64))?;
/// // Create never truncates or reuses a file:
/// match Publisher::<u64>::create(&name, &BusOptions::new(64)) {
///     Err(CreateError::AlreadyExists { path }) => assert_eq!(path, std::path::Path::new(&name)),
///     Err(other) => panic!("unexpected error: {other}"),
///     Ok(_) => panic!("the name is taken"),
/// }
/// // A capacity that is not a power of two is refused before any file is made:
/// let err = Publisher::<u64>::create(&format!("{name}-odd"), &BusOptions::new(100)).err();
/// assert!(matches!(err, Some(CreateError::InvalidGeometry(_))));
/// # shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum CreateError {
    /// The name is not a valid bus name.
    #[error(transparent)]
    Name(#[from] NameError),
    /// Something already has this name; create never truncates or reuses.
    #[error("{path}: already exists")]
    AlreadyExists {
        /// The path.
        path: PathBuf,
    },
    /// The directory does not let this user create a file.
    #[error("{path}: permission denied")]
    PermissionDenied {
        /// The path.
        path: PathBuf,
    },
    /// The requested geometry is impossible.
    #[error("invalid geometry: {0}")]
    InvalidGeometry(#[from] GeometryError),
    /// The file system has no room for the segment.
    #[error("{path}: no space for {len} bytes")]
    NoSpace {
        /// The path.
        path: PathBuf,
        /// Bytes asked for.
        len: u64,
    },
    /// `mlock` failed (often `RLIMIT_MEMLOCK`).
    #[error("cannot lock the segment in memory: {0}")]
    Mlock(io::Error),
    /// Huge pages were asked for and this system cannot give them.
    #[error(transparent)]
    HugePages(#[from] HugePageError),
    /// The directory the bus would live in does not exist.
    #[error("{path}: no such directory to create the bus in")]
    NoDirectory {
        /// The bus's path.
        path: PathBuf,
    },
    /// The file could not be created for another reason (a read-only file
    /// system, say).
    #[error("{path}: cannot create: {source}")]
    File {
        /// The bus's path.
        path: PathBuf,
        /// The system's answer.
        source: io::Error,
    },
    /// Any other system error, with the step that failed.
    #[error("{what}: {source}")]
    Io {
        /// The step.
        what: &'static str,
        /// The error.
        source: io::Error,
    },
    /// The file could not be given the group asked for
    /// ([`BusOptions::group`](crate::BusOptions::group)): a user may give
    /// a file only a group it is a member of (`EPERM`). Nothing is left
    /// behind.
    #[error(
        "{path}: cannot give the file group {gid}: {source} (a user may give only a group it is a member of)"
    )]
    Group {
        /// The bus's path.
        path: PathBuf,
        /// The group asked for.
        gid: u32,
        /// The system's answer to `fchown`.
        source: io::Error,
    },
}

impl CreateError {
    pub(crate) fn from_create(path: &std::path::Path, len: u64, err: io::Error) -> CreateError {
        let path = path.to_owned();
        match err.raw_os_error() {
            Some(libc::EEXIST) => CreateError::AlreadyExists { path },
            Some(libc::EACCES) | Some(libc::EPERM) => CreateError::PermissionDenied { path },
            Some(libc::ENOSPC) | Some(libc::EFBIG) => CreateError::NoSpace { path, len },
            Some(libc::ELOOP) => CreateError::AlreadyExists { path },
            Some(libc::ENOENT) | Some(libc::ENOTDIR) => CreateError::NoDirectory { path },
            _ => CreateError::File { path, source: err },
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

/// Why a publisher, writer, producer or consumer could not take its role
/// on an existing segment.
///
/// # Examples
/// ```
/// use shmbus::{error::Role, AttachError, BusOptions, OpenOptions, Publisher};
/// # let name = format!("/dev/shm/shmbus-doc-attacherror-{}", std::process::id());
/// let publisher = Publisher::<u64>::create(&name, &BusOptions::new(64))?;
/// // The creator is still publishing (its lock is held), so no one else may:
/// match Publisher::<u64>::attach(&name, &OpenOptions::default()) {
///     Err(AttachError::RoleTaken { role: Role::Publisher, pid }) => {
///         assert_eq!(pid, std::process::id())
///     }
///     Err(other) => panic!("unexpected error: {other}"),
///     Ok(_) => panic!("the bus has a live publisher"),
/// }
/// # shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum AttachError {
    /// The segment itself could not be opened.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// Another live process holds the role: it publishes on this bus,
    /// writes this blackboard, produces into or consumes this stream.
    #[error("{} already has a live {role} (pid {pid})", role.segment())]
    RoleTaken {
        /// The role asked for.
        role: Role,
        /// The holder's pid, from the control page.
        pid: u32,
    },
    /// The bus has a journal: only a journaled publisher may write to it,
    /// or the journal would miss messages.
    #[error("bus is journaled (journal {path}): attach a journaled publisher")]
    Journaled {
        /// The journal.
        path: PathBuf,
    },
    /// The segment is made for one holder of the role and the handle is
    /// of the many kind, or the other way round: a single-publisher bus
    /// attached by a `ManyPublisher` (the header's `MULTI_PUBLISHER`
    /// flag), a many-writer blackboard by a `Writer` (`MULTI_WRITER`), ...
    #[error("{}", wrong_mode(*role, *found, *expected))]
    WrongMode {
        /// The role asked for: [`Role::Publisher`] or [`Role::Writer`].
        role: Role,
        /// How many holders the segment is made for.
        found: Publishers,
        /// How many the handle that tried is for.
        expected: Publishers,
    },
    /// A many-publisher pool bus made in another pid namespace: its
    /// publishers free a dead publisher's loans by pid, and pids mean
    /// nothing across namespaces (subscribers may open it from anywhere).
    #[error(
        "pool bus was made in pid namespace {bus} and this process is in {}: \
         its publishers must share one",
        if *ours == 0 { "an unknown one (no /proc)".to_string() } else { ours.to_string() }
    )]
    PidNamespace {
        /// The inode of the creator's pid namespace, from the header.
        bus: u64,
        /// This process's (0: /proc could not say).
        ours: u64,
    },
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

/// A role one process at a time may hold on a segment (or, in a segment
/// made for many, any number): what [`AttachError::RoleTaken`] and
/// [`AttachError::WrongMode`] name.
///
/// # Examples
/// ```
/// use shmbus::error::Role;
/// assert_eq!(Role::Writer.to_string(), "writer");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Role {
    /// A bus's publisher.
    Publisher,
    /// A blackboard's writer.
    Writer,
    /// A stream's producer.
    Producer,
    /// A stream's consumer.
    Consumer,
}

impl Role {
    /// The kind of segment the role is held on: "bus", "blackboard",
    /// "stream".
    fn segment(self) -> &'static str {
        match self {
            Role::Publisher => "bus",
            Role::Writer => "blackboard",
            Role::Producer | Role::Consumer => "stream",
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Role::Publisher => "publisher",
            Role::Writer => "writer",
            Role::Producer => "producer",
            Role::Consumer => "consumer",
        })
    }
}

/// Why a lossless subscriber was refused.
///
/// # Examples
/// ```
/// use shmbus::bus::LosslessRefused;
/// let e = LosslessRefused::TooMany { max: 2 };
/// assert_eq!(e.to_string(), "the bus lets at most 2 lossless subscribers gate it, and 2 do");
/// ```
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LosslessRefused {
    /// The bus was created refusing them (`lossless_subscribers(0)`, or
    /// by a build that did not know them).
    #[error("the bus was created refusing lossless subscribers (allows 0), expected at least 1")]
    NotAllowed,
    /// As many as the bus allows gate it already.
    #[error("the bus lets at most {max} lossless subscribers gate it, and {max} do")]
    TooMany {
        /// What the bus allows.
        max: u32,
    },
    /// No registry entry is free (a lossless subscriber needs one).
    #[error("all {entries} registry entries are taken; a lossless subscriber needs one")]
    RegistryFull {
        /// The registry's size.
        entries: usize,
    },
}

/// [`AttachError::WrongMode`]'s message: the mode found and the one the
/// handle expected, in the role's words (a bus's publishers, a
/// blackboard's writers).
fn wrong_mode(role: Role, found: Publishers, expected: Publishers) -> String {
    if role == Role::Writer {
        let mode = |p| match p {
            Publishers::One => "one writer (`Writer`)",
            Publishers::Many => "many writers (`ManyWriter`)",
        };
        return format!(
            "blackboard is made for {}, expected one made for {}",
            mode(found),
            mode(expected)
        );
    }
    format!(
        "{} is {found}, a {expected} {role} cannot attach to it",
        role.segment()
    )
}
