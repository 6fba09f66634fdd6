//! The journal's errors, one enum per operation: appending
//! ([`AppendError`]), opening a journal file ([`OpenError`]),
//! creating a journaled bus ([`CreateError`], with its snapshot's
//! [`SnapshotError`]), attaching a publisher ([`AttachError`]),
//! closing one ([`CloseError`]), joining ([`JoinError`]) and seeking
//! ([`SeekError`]).

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::format;
use crate::error::ErrorKind;

/// Why a message could not be appended to the journal. The message is then
/// neither in the journal nor on the ring; everything before it is.
///
/// # Examples
/// ```
/// use shmbus::{BusOptions, journal::{self, AppendError}};
/// # let dir = std::env::temp_dir().join(format!("shmbus-doc-appenderror-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// # let name = format!("/dev/shm/shmbus-doc-appenderror-{}", std::process::id());
/// let mut publisher = journal::Publisher::<[u8]>::create(
///     &name,
///     &BusOptions::new(64).msg_size(8),
///     &journal::Options::new(dir.join("raw.journal")),
/// )?;
/// match publisher.publish(b"more than eight") {
///     Err(AppendError::TooLong { len, max }) => assert_eq!((len, max), (15, 8)),
///     Err(other) => panic!("unexpected error: {other}"),
///     Ok(_) => panic!("15 bytes do not fit in 8"),
/// }
/// assert_eq!(publisher.next_sequence(), 0); // neither journaled nor published
/// # publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AppendError {
    /// The file system (or `RLIMIT_FSIZE`) has no room to grow the journal.
    #[error("{path}: journal full: no room to grow it to {len} bytes")]
    Full {
        /// The journal.
        path: PathBuf,
        /// The size it needed.
        len: u64,
    },
    /// A raw message longer than the bus's message size.
    #[error("message is {len} bytes, the bus carries at most {max}")]
    TooLong {
        /// The message's length.
        len: usize,
        /// The bus's message size.
        max: usize,
    },
    /// Another system error, with the step that failed.
    #[error("{path}: {what}: {source}")]
    Io {
        /// The journal.
        path: PathBuf,
        /// The step.
        what: &'static str,
        /// The error.
        source: io::Error,
    },
}

impl AppendError {
    pub(crate) fn from_io(
        path: PathBuf,
        what: &'static str,
        len: u64,
        e: io::Error,
    ) -> AppendError {
        match e.raw_os_error() {
            Some(libc::ENOSPC) | Some(libc::EFBIG) | Some(libc::EDQUOT) => {
                AppendError::Full { path, len }
            }
            _ => AppendError::Io {
                path,
                what,
                source: e,
            },
        }
    }
}

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

/// Why a journal file could not be created or opened.
///
/// # Examples
/// ```
/// use shmbus::{BusOptions, journal};
/// # let dir = std::env::temp_dir().join(format!("shmbus-doc-journalopenerror-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// # let name = format!("/dev/shm/shmbus-doc-journalopenerror-{}", std::process::id());
/// // A directory where the journal file should be:
/// let err = journal::Publisher::<u64>::create(&name, &BusOptions::new(64), &journal::Options::new(&dir))
///     .err();
/// match err {
///     Some(journal::CreateError::Journal(journal::OpenError::NotRegular { found, .. })) => {
///         assert_eq!(found, "a directory");
///     }
///     Some(other) => panic!("unexpected error: {other}"),
///     None => panic!("a directory is no journal"),
/// }
/// assert!(shmbus::remove(&name).is_err()); // no bus was made either
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// The header is not a journal header this build reads.
    #[error("{path}: {source}")]
    Header {
        /// The journal.
        path: PathBuf,
        /// What is wrong with it.
        source: format::HeaderError,
    },
    /// The journal holds messages of another size or type than the bus.
    #[error(
        "{path}: journal holds {}-byte messages of type hash {:#018x}, the bus carries {}-byte messages of type hash {:#018x}",
        found.0, found.1, expected.0, expected.1
    )]
    TypeMismatch {
        /// The journal.
        path: PathBuf,
        /// (message size, type hash) in the journal.
        found: (u32, u64),
        /// (message size, type hash) of the bus.
        expected: (u32, u64),
    },
    /// A compaction replaced this file; open the path again.
    #[error("{path}: this journal file was replaced by a compaction")]
    Sealed {
        /// The journal.
        path: PathBuf,
    },
    /// The journal and the ring disagree on where the sequence stands.
    #[error(
        "{path}: journal ends before sequence {journal_next}, but the bus is at {ring_next}: the journal is not this bus's, or lost records"
    )]
    Behind {
        /// The journal.
        path: PathBuf,
        /// The sequence after the journal's last record.
        journal_next: u64,
        /// The bus's next sequence.
        ring_next: u64,
    },
    /// An existing journal that someone else could have written: it is not
    /// owned by a user this process trusts (itself, or, for a publisher
    /// attaching to a bus, the bus's owner), or it lets write someone the
    /// bus's mode does not. Its records are refused as the bus's history.
    #[error(
        "{path}: journal is owned by uid {owner} with mode {mode:o}; continued only if owned by uid {} and writable by no one mode {allowed:o} does not let write",
        trusted.iter().map(|u| u.to_string()).collect::<Vec<_>>().join(" or uid ")
    )]
    NotOwned {
        /// The journal.
        path: PathBuf,
        /// The file's owner.
        owner: u32,
        /// The file's permission bits.
        mode: u32,
        /// The owners that would have been continued.
        trusted: Vec<u32>,
        /// The bus's mode: the file may grant write to no one else.
        allowed: u32,
    },
    /// Something other than a regular file is at the journal's path (which
    /// a bus header names, so anyone who can create a bus can plant it).
    #[error("{path}: is {found}, not a regular file: refused as a journal")]
    NotRegular {
        /// The journal's path.
        path: PathBuf,
        /// What is there: "a FIFO", "a character device", "a symlink", ...
        found: &'static str,
    },
    /// The journal path does not fit in the bus header.
    #[error("journal path is {len} bytes, at most {max} fit in the bus header")]
    PathTooLong {
        /// Its length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// No room for the journal.
    #[error("{path}: journal full: no room to grow it to {len} bytes")]
    Full {
        /// The journal.
        path: PathBuf,
        /// The size it needed.
        len: u64,
    },
    /// Another system error, with the step that failed.
    #[error("{path}: {what}: {source}")]
    Io {
        /// The journal.
        path: PathBuf,
        /// The step.
        what: &'static str,
        /// The error.
        source: io::Error,
    },
}

impl OpenError {
    pub(crate) fn io(path: &Path, what: &'static str, source: io::Error) -> OpenError {
        match source.raw_os_error() {
            Some(libc::ENOSPC) | Some(libc::EFBIG) | Some(libc::EDQUOT) => OpenError::Full {
                path: path.to_owned(),
                len: 0,
            },
            _ => OpenError::Io {
                path: path.to_owned(),
                what,
                source,
            },
        }
    }
}

impl OpenError {
    /// [`ErrorKind::Journal`], whatever is wrong with the file.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{ErrorKind, journal};
    ///
    /// let e = journal::OpenError::Sealed { path: "ticks.journal".into() };
    /// assert_eq!(e.kind(), ErrorKind::Journal);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        ErrorKind::Journal
    }
}

/// Why a journal's starting snapshot ([`Options::snapshot`](super::Options::snapshot)) was
/// refused.
///
/// # Examples
/// ```
/// use shmbus::{BusOptions, journal::{self, SnapshotError}};
/// # let dir = std::env::temp_dir().join(format!("shmbus-doc-snapshoterror-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// # let name = format!("/dev/shm/shmbus-doc-snapshoterror-{}", std::process::id());
/// let journal = journal::Options::new(dir.join("j")).snapshot(vec![(5, vec![1])]);
/// match journal::Publisher::<u64>::create(&name, &BusOptions::new(64).first_sequence(5), &journal) {
///     Err(journal::CreateError::Snapshot(SnapshotError::Order { index: 0, seq: 5, .. })) => {}
///     other => panic!("expected an order error, got {:?}", other.map(|_| ())),
/// }
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum SnapshotError {
    /// A record's sequence is not above the one before it, or not below
    /// the bus's first sequence.
    #[error(
        "snapshot record {index} has sequence {seq}, expected above {after:?} and below the first sequence {first}"
    )]
    Order {
        /// Its place in the snapshot.
        index: usize,
        /// Its sequence.
        seq: u64,
        /// The sequence of the record before it.
        after: Option<u64>,
        /// The bus's first sequence.
        first: u64,
    },
    /// A record longer than the bus's messages.
    #[error(
        "snapshot record {index} is {len} bytes, longer than the bus's {msg_size}-byte messages"
    )]
    TooLong {
        /// Its place in the snapshot.
        index: usize,
        /// Its length.
        len: usize,
        /// The bus's message size.
        msg_size: u32,
    },
    /// A journal is at the path already: a snapshot starts a new one.
    #[error("{path}: a journal is there already; a snapshot only starts a new one")]
    Exists {
        /// The journal.
        path: PathBuf,
    },
}

/// Why a journaled bus could not be created.
///
/// # Examples
/// ```
/// use shmbus::{BusOptions, CreateError, journal};
/// use shmbus::Publisher;
/// # let dir = std::env::temp_dir().join(format!("shmbus-doc-journalcreateerror-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// # let name = format!("/dev/shm/shmbus-doc-journalcreateerror-{}", std::process::id());
/// let plain = Publisher::<u64>::create(&name, &BusOptions::new(64))?;
/// let journal = journal::Options::new(dir.join("ticks.journal"));
/// match journal::Publisher::<u64>::create(&name, &BusOptions::new(64), &journal) {
///     Err(journal::CreateError::Create(CreateError::AlreadyExists { .. })) => {}
///     Err(other) => panic!("unexpected error: {other}"),
///     Ok(_) => panic!("the name is taken"),
/// }
/// // The journal file it had made for the bus is removed again.
/// assert!(!dir.join("ticks.journal").exists());
/// # shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CreateError {
    /// The bus.
    #[error(transparent)]
    Create(#[from] crate::error::CreateError),
    /// The journal.
    #[error(transparent)]
    Journal(#[from] OpenError),
    /// The snapshot it was to start with ([`Options::snapshot`](super::Options::snapshot)).
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    /// A size in [`Options`](super::Options) past what a journal can use.
    #[error("journal option {option} is {value} bytes, at most {max} can be used")]
    TooLarge {
        /// `"chunk_bytes"` or `"preallocate_bytes"`.
        option: &'static str,
        /// What was asked for.
        value: usize,
        /// [`Options::MAX_CHUNK_BYTES`](super::Options::MAX_CHUNK_BYTES) or
        /// [`Options::MAX_PREALLOCATE_BYTES`](super::Options::MAX_PREALLOCATE_BYTES).
        max: usize,
    },
}

impl CreateError {
    /// What kind of failure this is: the bus's create's kind, or
    /// [`ErrorKind::Journal`] for the journal, or
    /// [`ErrorKind::InvalidArgument`] for an impossible option or snapshot.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{ErrorKind, journal};
    ///
    /// let e = journal::CreateError::TooLarge { option: "chunk_bytes", value: 1 << 40, max: 1 << 30 };
    /// assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            CreateError::Create(e) => e.kind(),
            CreateError::Journal(e) => e.kind(),
            CreateError::Snapshot(_) | CreateError::TooLarge { .. } => ErrorKind::InvalidArgument,
        }
    }
}

/// Why a journaled publisher could not close cleanly. Every message it
/// published is in the journal either way; what failed is only the
/// compaction due at close, which leaves the journal as it was before it.
///
/// # Examples
/// ```
/// use shmbus::{BusOptions, journal::{self, CloseError}};
/// # let dir = std::env::temp_dir().join(format!("shmbus-doc-closeerror-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// # let name = format!("/dev/shm/shmbus-doc-closeerror-{}", std::process::id());
/// let mut publisher = journal::Publisher::<u64>::create(
///     &name,
///     &BusOptions::new(64),
///     &journal::Options::new(dir.join("ticks.journal")),
/// )?;
/// publisher.publish(&1)?;
/// match publisher.close() {
///     Ok(()) => {}
///     // Every message is in the journal all the same.
///     Err(CloseError::Compaction { path, reason }) => {
///         eprintln!("{}: left uncompacted: {reason}", path.display())
///     }
///     Err(other) => eprintln!("{other}"), // more reasons may come
/// }
/// # shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CloseError {
    /// The compaction pending or due at close failed (or an earlier one did
    /// and none succeeded since).
    #[error("{path}: compaction failed, the journal is left uncompacted: {reason}")]
    Compaction {
        /// The journal.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
}

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

/// Why a publisher could not attach to a journaled bus.
///
/// # Examples
/// ```
/// use shmbus::{BusOptions, OpenOptions, Publisher, journal};
/// # let name = format!("/dev/shm/shmbus-doc-journalattacherror-{}", std::process::id());
/// drop(Publisher::<u64>::create(&name, &BusOptions::new(64))?); // a bus without a journal
/// match journal::Publisher::<u64>::attach(&name, &OpenOptions::default()) {
///     Err(journal::AttachError::NotJournaled { name: bus }) => assert_eq!(bus, name),
///     Err(other) => panic!("unexpected error: {other}"),
///     Ok(_) => panic!("the bus has no journal"),
/// }
/// # shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AttachError {
    /// The bus.
    #[error(transparent)]
    Attach(#[from] crate::error::AttachError),
    /// The bus has no journal.
    #[error("bus {name:?} has no journal (create it with one)")]
    NotJournaled {
        /// The bus.
        name: String,
    },
    /// The journal.
    #[error(transparent)]
    Journal(#[from] OpenError),
}

impl AttachError {
    /// What kind of failure this is: the attach's kind,
    /// [`ErrorKind::NotJournaled`] or [`ErrorKind::Journal`].
    ///
    /// # Examples
    /// ```
    /// use shmbus::{ErrorKind, journal};
    ///
    /// let e = journal::AttachError::NotJournaled { name: "ticks".into() };
    /// assert_eq!(e.kind(), ErrorKind::NotJournaled);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            AttachError::Attach(e) => e.kind(),
            AttachError::NotJournaled { .. } => ErrorKind::NotJournaled,
            AttachError::Journal(e) => e.kind(),
        }
    }
}

impl From<crate::error::OpenError> for AttachError {
    fn from(e: crate::error::OpenError) -> Self {
        AttachError::Attach(crate::error::AttachError::Open(e))
    }
}

/// Why a subscriber could not join.
///
/// # Examples
/// ```
/// use shmbus::{BusOptions, Publisher, journal::{self, JoinError, JoinOptions}};
/// # let name = format!("/dev/shm/shmbus-doc-joinerror-{}", std::process::id());
/// let publisher = Publisher::<u64>::create(&name, &BusOptions::new(64))?; // no journal
/// match journal::Subscriber::<u64>::join(&name, &JoinOptions::default()) {
///     Err(JoinError::NotJournaled { name: bus }) => assert_eq!(bus, name),
///     Err(other) => panic!("unexpected error: {other}"),
///     Ok(_) => panic!("the bus has no journal"),
/// }
/// # shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JoinError {
    /// The bus could not be opened.
    #[error(transparent)]
    Open(#[from] crate::error::OpenError),
    /// The bus has no journal.
    #[error("bus {name:?} has no journal: nothing to bootstrap from")]
    NotJournaled {
        /// The bus.
        name: String,
    },
    /// The publisher died while the joiner waited for its flush.
    #[error("the bus's publisher (pid {pid}) died before it flushed the journal")]
    PublisherGone {
        /// The last publisher's pid, from the control page.
        pid: u32,
    },
    /// The publisher did not serve the flush request in time.
    #[error("publisher did not flush the journal within {waited:?}")]
    FlushTimeout {
        /// How long the joiner waited.
        waited: Duration,
    },
    /// The publisher's `fdatasync` of the journal failed.
    #[error("publisher could not flush the journal (fdatasync failed)")]
    FlushFailed,
    /// The journal file could not be read.
    #[error(transparent)]
    Journal(#[from] OpenError),
    /// The caller's `go_on` said stop while the joiner waited for the
    /// flush ([`Subscriber::join_cancellable`](super::Subscriber::join_cancellable)).
    #[error("the join was cancelled while it waited for the publisher's flush")]
    Cancelled,
}

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

/// Why [`Subscriber::seek`](super::Subscriber::seek) could not position the subscriber. It
/// stays where it was.
///
/// # Examples
/// ```
/// use shmbus::{BusOptions, journal::{self, JoinOptions, SeekError}};
/// # let dir = std::env::temp_dir().join(format!("shmbus-doc-seekerror-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// # let name = format!("/dev/shm/shmbus-doc-seekerror-{}", std::process::id());
/// let mut publisher = journal::Publisher::<u64>::create(
///     &name,
///     &BusOptions::new(64),
///     &journal::Options::new(dir.join("ticks.journal")),
/// )?;
/// publisher.publish(&1)?;
/// let mut late = journal::Subscriber::<u64>::join(&name, &JoinOptions::default())?;
/// match late.seek(5) {
///     Err(SeekError::Ahead { seq: 5, head: 1 }) => {}
///     other => panic!("nothing is at 5 yet, got {other:?}"),
/// }
/// # drop(late); publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SeekError {
    /// The sequence is past the bus's head: nothing was published there.
    #[error("sequence {seq} is ahead of the bus's head {head}: nothing was published there yet")]
    Ahead {
        /// The sequence asked for.
        seq: u64,
        /// The bus's head when asked.
        head: u64,
    },
    /// The journal file could not be opened or read.
    #[error(transparent)]
    Journal(#[from] OpenError),
    /// A snapshot record met by the search is not a whole record in
    /// order: the file was damaged (or written by something else).
    #[error(
        "{path}: snapshot record {index} is {found}, expected a whole record with a sequence below the base {base} and above the previous one"
    )]
    Corrupt {
        /// The journal.
        path: PathBuf,
        /// The record's index in the file.
        index: u64,
        /// What it is: "torn or zeroed (its check does not match)", ...
        found: String,
        /// The file's base (the first sequence after the snapshot).
        base: u64,
    },
    /// The header counts more snapshot records than the file has room for.
    #[error(
        "{path}: the header counts {snapshot} snapshot records, the file has room for {held}: the header is damaged"
    )]
    Oversized {
        /// The journal.
        path: PathBuf,
        /// The header's snapshot count.
        snapshot: u64,
        /// Records the file's length has room for.
        held: u64,
    },
}

/// Why a [`BoardFeed`](super::BoardFeed) stopped: the state's join failed, or the table
/// refused a key. One enum for every call of the feed.
///
/// # Examples
/// ```
/// use shmbus::{blackboard::PutError, journal::FeedError};
/// let e = FeedError::Board(PutError::Full { keys: 8 });
/// assert!(e.to_string().contains("full"));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FeedError {
    /// Folding failed: a rejoin after lost updates could not be made (the
    /// errors of [`State::join`](super::State::join)).
    #[error(transparent)]
    Join(#[from] JoinError),
    /// The blackboard refused a key: it is full (more keys on the bus
    /// than the table holds). Entries folded after it were not written.
    #[error("the blackboard refused a key: {0}")]
    Board(crate::blackboard::PutError),
    /// The table's values are not the bus's messages.
    #[error("the blackboard's values are {board} bytes, the bus's messages {bus}")]
    ValueSize {
        /// The table's value size.
        board: usize,
        /// The bus's message size.
        bus: usize,
    },
}

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
