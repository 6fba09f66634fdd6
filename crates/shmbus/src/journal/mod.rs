//! The journal: late join without a gap and without a duplicate.
//!
//! A journaled bus is a broadcast bus whose publisher appends every message
//! to a flat file (`format`) before it publishes it on the ring, and
//! whose header names that file. A subscriber that starts late
//! ([`JournalSubscriber::join`]) reads the file first and the ring after.
//!
//! [`Keyed`] shows the whole round: publish, compact, join, fold.
//!
//! # The handshake
//! 1. The joiner opens the bus as a subscriber. It notes no head: see the
//!    hand-over below.
//! 2. It raises a flush request: `FLUSH_REQUEST` += 1 (AcqRel), token `r`.
//! 3. The publisher's flusher thread sees `r`, `fdatasync`s the journal, and
//!    stores `FLUSH_DONE = r` (Release); the joiner waits for it (futex, with
//!    a timeout, and `PublisherGone` if the publisher dies meanwhile). With
//!    no live publisher at all, steps 2 and 3 are skipped: nothing is
//!    appending, so the file's valid prefix is the whole history; the joiner
//!    reads it and then waits on the ring for the next publisher.
//! 4. The joiner reads the journal from its start, then continues on the
//!    ring from the sequence after the last record it read.
//!
//! The usual form of this handshake has the joiner note the ring's head `H`
//! in step 1 and hand over from file to ring at `H`: replay records below
//! `H`, take the ring from `H`. We hand over at the *end of the file*
//! instead, which is at least `H` (every message is in the file before it
//! is on the ring, and the flush makes the file's pages visible). This is
//! exact too (each sequence comes from exactly one of the two), and it
//! removes two holes a hand-over at `H` leaves: the ring may lap the joiner
//! while it reads a large file (then the messages between `H` and the lap
//! would be gone), and a compaction may fold records at or above `H` into
//! the snapshot. The
//! same rule repairs a lag later: a journaled subscriber that the ring laps
//! re-reads the lost range from the file, so it loses nothing while the
//! file has it.
//!
//! # Compaction
//! For keyed messages ([`Keyed`]), the journal is rewritten as one record
//! per key (the snapshot, the last value of each key below a cut) followed
//! by every record from the cut on. A background thread folds the file,
//! writes `PATH.compacting`, copies the records appended meanwhile and
//! `fdatasync`s it; the publisher then copies the few records appended since
//! that copy, renames the new file over the old one, and marks the old one
//! SEALED (readers that still hold it open move on to the new file). The
//! hot path pauses for the last copy and the rename only.
//!
//! Before handing over, the compactor hard-links the file being replaced
//! as `PATH.prev`. A subscriber that the ring laps while a compaction
//! folds its position into the snapshot reads the range back from there
//! (it ends sealed and leads back to `PATH`), so a lag is repaired in full
//! unless it spans two compactions; then the snapshot's last values come
//! first and a `Lagged` for the rest. Tracking every reader's position
//! instead would make compaction wait for the slowest reader; one old
//! generation on disk costs at most the file's size once more. The compactor
//! chases the publisher for at most four passes, so a publisher faster than
//! the copy makes the last copy longer (a memcpy from its own mapping),
//! never the compaction endless.
//!
//! A publisher that closes (`close`, or drop) first finishes what
//! compaction it owes: it waits for a running one and switches it in, then
//! runs the one `compact_after` makes due. `compact_after` counts the
//! records from the file's base on, which the file itself holds, so the
//! count carries over from one publisher to the next; with both, a journal
//! fed by any number of short-lived publishers stays at one record per key
//! plus fewer than `compact_after` records. A publisher that is killed
//! leaves at worst a `PATH.compacting`, which the next one removes.
//!
//! # Cost of a journaled publish
//! An append is a few stores into the file's page cache through the shared
//! mapping, and no system call: the grower thread grows the file ahead of
//! the writer (`fallocate`, zeros written, mapped, write faults taken), a
//! whole chunk ahead, and the writer waits for the kernel only when the
//! grower falls that far behind.
//!
//! The publishing thread does more than a plain publisher (the record's
//! stores, into a fresh cache line every other record, its check word and
//! the bookkeeping), and the mean depends on growth keeping up: a
//! publisher at full speed can outrun the grower, which waits for the
//! kernel to supply new page-cache pages. With the run's file
//! preallocated (`JournalOptions::preallocate_bytes`, paid at start) that
//! wait moves to the start. Sustained journaling is in any case bounded
//! by page-cache allocation and, in the end, by the disk. Measured:
//! docs/GUIDE.md, "The journal's cost".
//!
//! # Invariants
//! - Journal record `seq` is written (check word last) before ring slot
//!   `seq`; a publisher that re-attaches re-publishes a record that made it
//!   into the file but not onto the ring, so file and ring never disagree.
//! - Control page: `FLUSH_REQUEST` (u32) is incremented by joiners only;
//!   `FLUSH_DONE` and `FLUSH_FAILED` (u32) are stored by the publisher's
//!   flusher only. Counters wrap; they are compared by signed distance.
//! - The journal's path is read from a bus header: untrusted. An existing
//!   journal file (`PATH`, `PATH.prev`) is opened only as a regular file,
//!   without following a symlink and without blocking
//!   ([`JournalOpenError::NotRegular`] otherwise); every wait of a joiner
//!   is bounded by its [`JoinOptions`] (`init_timeout`, `flush_timeout`).
//! - Every journal file the library creates (`PATH`, `PATH.compacting`,
//!   which becomes `PATH`) has exactly the bus's mode, whatever the umask
//!   (`fchmod` after the create); `PATH.prev` is a hard link, so it has the
//!   mode of the file it was. `create` over an existing journal gives it the
//!   bus's mode too.

mod compaction;
mod flusher;
#[doc(hidden)] // reached through `internals`
pub mod format;
mod grower;
mod join;
mod publish;
mod reader;
mod shared;
mod state;
mod writer;

#[doc(hidden)] // reached through `internals`
pub use compaction::side_files;
pub use join::{Entry, JoinError, JoinOptions, JournalSubscriber, SeekError};
pub use publish::{
    CloseError, JournalAttachError, JournalCreateError, JournalOptions, JournalPublisher,
    SnapshotError,
};
pub use state::{KeyedState, State};

use std::io;
use std::path::{Path, PathBuf};

/// A message with a key: the journal keeps the last message per key when it
/// compacts, and [`State`] folds messages into last-value-per-key.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use shmbus::journal::{JoinOptions, JournalOptions, JournalPublisher, Keyed, State};
/// use shmbus::{BusOptions, Wait};
///
/// #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
/// #[repr(C)]
/// struct Tick { key: u64, val: u64 }
///
/// impl shmbus::Message for Tick { const NAME: &'static str = "md.Tick"; }
/// impl Keyed for Tick { fn key(&self) -> u64 { self.key } }
///
/// # let dir = std::env::temp_dir().join(format!("shmbus-doc-keyed-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// # let name = format!("/dev/shm/shmbus-doc-keyed-{}", std::process::id());
/// let mut publisher = JournalPublisher::<Tick>::create(
///     &name, &BusOptions::new(4096), &JournalOptions::new(dir.join("ticks.journal")))?;
/// publisher.compact_after(Some(1_000_000));
/// publisher.publish(&Tick { key: 1, val: 41 })?;
/// let last = publisher.publish(&Tick { key: 1, val: 42 })?;
/// assert!(publisher.compact()); // one record per key, in the background
///
/// let mut state = State::<Tick>::join(&name, &JoinOptions::default())?;
/// assert!(state.wait_for(last, Wait::For(Duration::from_secs(5)))?);
/// assert_eq!(state.state().get(1).map(|t| t.val), Some(42));
/// # drop(state); publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Keyed: crate::wire::Message {
    /// The key this message updates.
    ///
    /// # Examples
    /// ```
    /// #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    /// #[repr(C)]
    /// struct Price { instrument: u32, cents: u32 }
    /// # impl shmbus::Message for Price { const NAME: &'static str = "example.Price"; }
    /// impl shmbus::journal::Keyed for Price {
    ///     fn key(&self) -> u64 { u64::from(self.instrument) }
    /// }
    /// use shmbus::journal::Keyed;
    /// assert_eq!(Price { instrument: 7, cents: 100 }.key(), 7);
    /// ```
    fn key(&self) -> u64;
}

#[doc(hidden)] // reached through `internals`
/// The key of a raw message: its first 8 bytes, little-endian (fewer bytes
/// are zero-extended). The CLI's journals compact by it.
pub fn raw_key(msg: &[u8]) -> u64 {
    let mut k = [0u8; 8];
    let n = msg.len().min(8);
    k[..n].copy_from_slice(&msg[..n]);
    u64::from_le_bytes(k)
}

/// Why a message could not be appended to the journal. The message is then
/// neither in the journal nor on the ring; everything before it is.
///
/// # Examples
/// ```
/// use shmbus::{BusOptions, journal::{AppendError, JournalOptions, JournalPublisher}};
/// # let dir = std::env::temp_dir().join(format!("shmbus-doc-appenderror-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// # let name = format!("/dev/shm/shmbus-doc-appenderror-{}", std::process::id());
/// let mut publisher = JournalPublisher::<[u8]>::create(
///     &name,
///     &BusOptions::new(64).msg_size(8),
///     &JournalOptions::new(dir.join("raw.journal")),
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

/// Why a journal file could not be created or opened.
///
/// # Examples
/// ```
/// use shmbus::{BusOptions, journal::{JournalCreateError, JournalOpenError, JournalOptions, JournalPublisher}};
/// # let dir = std::env::temp_dir().join(format!("shmbus-doc-journalopenerror-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// # let name = format!("/dev/shm/shmbus-doc-journalopenerror-{}", std::process::id());
/// // A directory where the journal file should be:
/// let err = JournalPublisher::<u64>::create(&name, &BusOptions::new(64), &JournalOptions::new(&dir))
///     .err();
/// match err {
///     Some(JournalCreateError::Journal(JournalOpenError::NotRegular { found, .. })) => {
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
pub enum JournalOpenError {
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

impl JournalOpenError {
    pub(crate) fn io(path: &Path, what: &'static str, source: io::Error) -> JournalOpenError {
        match source.raw_os_error() {
            Some(libc::ENOSPC) | Some(libc::EFBIG) | Some(libc::EDQUOT) => JournalOpenError::Full {
                path: path.to_owned(),
                len: 0,
            },
            _ => JournalOpenError::Io {
                path: path.to_owned(),
                what,
                source,
            },
        }
    }
}

#[doc(hidden)] // reached through `internals`
/// What `stat` shows of a journal file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JournalStat {
    /// The file.
    pub path: PathBuf,
    /// Its size on disk (allocated ahead of the records).
    pub file_bytes: u64,
    /// Records in the valid prefix.
    pub records: u64,
    /// Of which snapshot records.
    pub snapshot: u64,
    /// Sequence of the first record after the snapshot.
    pub base: u64,
    /// The sequence after the last record.
    pub next: u64,
}

#[doc(hidden)] // reached through `internals`
/// Reads a journal file's header and counts its valid records.
pub fn stat(path: &Path) -> Result<JournalStat, JournalOpenError> {
    let file = reader::open_journal(path, false)?;
    let h = reader::read_header(&file, path)?;
    let read = |e| JournalOpenError::io(path, "read", e);
    let records = reader::Reader::new(file.try_clone().map_err(read)?, h)
        .count()
        .map_err(read)?;
    let file_bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
    Ok(JournalStat {
        path: path.to_owned(),
        file_bytes,
        records,
        snapshot: h.snapshot.min(records),
        base: h.base,
        next: h.base.wrapping_add(records.saturating_sub(h.snapshot)),
    })
}
