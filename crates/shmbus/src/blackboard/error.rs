//! The blackboard's errors, one enum per operation: [`GetError`] (every
//! read), [`PutError`], [`RemoveError`], [`EntryError`] (making an entry
//! handle).

use crate::error::ErrorKind;
use thiserror::Error;

/// Why a read (`get`, `entries`, `changed_since`, the waits) gave up on
/// an entry. Never a hang: each entry is tried a bounded number of times.
///
/// # Examples
/// ```
/// use shmbus::blackboard::{self, GetError, Writer};
///
/// let writer = Writer::<[u8], u64, _>::on_heap(&blackboard::Options::new(8).key_size(4))?;
/// let mut reader = writer.reader();
/// // A raw key of the wrong size:
/// match reader.get(b"too long") {
///     Err(GetError::KeySize { found, expected }) => assert_eq!((found, expected), (8, 4)),
///     other => panic!("expected KeySize, got {other:?}"),
/// }
/// # Ok::<(), shmbus::CreateError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum GetError {
    /// A write kept the entry busy (or tore every copy) through every
    /// try: the writer is live and writing this entry very often, or was
    /// preempted mid-write. Try again.
    #[error("entry {entry} was being written through every try: busy, try again")]
    Busy {
        /// The entry (its index in the table).
        entry: u64,
    },
    /// The entry's stamp stayed odd through every try and no process
    /// holds the writer's lock: a writer died while writing it. Its value
    /// is lost; the next writer to attach removes it (and counts it).
    #[error(
        "entry {entry} is stuck mid-write of version {version} and no writer lives: a writer died writing it"
    )]
    Stuck {
        /// The entry (its index in the table).
        entry: u64,
        /// The version its dead writer was writing.
        version: u64,
    },
    /// The entry's tag is none of a writer's three (empty, live,
    /// removed): the file was written by something else.
    #[error(
        "entry {entry} has tag {tag}, expected 0 (empty), 1 (live) or 2 (removed): a corrupt table"
    )]
    Corrupt {
        /// The entry (its index in the table).
        entry: u64,
        /// The tag found.
        tag: u64,
    },
    /// A raw key of another size than the table's keys.
    #[error("a key of {found} bytes, the table's keys are {expected}")]
    KeySize {
        /// The key's length.
        found: usize,
        /// The table's key size.
        expected: usize,
    },
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

/// Why a write (`put`, `put_bytes`) was refused. Nothing was written.
///
/// # Examples
/// ```
/// use shmbus::blackboard::{self, PutError, Writer};
///
/// let mut writer = Writer::<u64, u64, _>::on_heap(&blackboard::Options::new(1))?;
/// writer.put(&1, &10)?;
/// assert_eq!(writer.put(&2, &20), Err(PutError::Full { keys: 1 }));
/// writer.put(&1, &11)?; // an update needs no room
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum PutError {
    /// A new key, and the table holds as many as it was made for (or no
    /// entry on the key's probe is free: only a corrupt table).
    #[error("the blackboard is full: it holds {keys} keys, its capacity")]
    Full {
        /// Keys the table holds.
        keys: u64,
    },
    /// A raw key of another size than the table's keys.
    #[error("a key of {found} bytes, the table's keys are {expected}")]
    KeySize {
        /// The key's length.
        found: usize,
        /// The table's key size.
        expected: usize,
    },
    /// A raw value of another size than the table's values.
    #[error("a value of {found} bytes, the table's values are {expected}")]
    ValueSize {
        /// The value's length.
        found: usize,
        /// The table's value size.
        expected: usize,
    },
    /// Many writers only ([`ManyWriter`](super::ManyWriter)): the key's
    /// entry is mid-write by another handle (a writer that broke the
    /// one-writer-per-key rule, or one that died or stalled there, whose
    /// entry is taken over once the table's unblock timeout has passed),
    /// or other writers won every claim this call tried. Try again.
    #[error("entry {entry} is being written by another writer: busy, try again")]
    Busy {
        /// The entry (its index in the table).
        entry: u64,
    },
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

/// Why a removal was refused. Nothing was written.
///
/// # Examples
/// ```
/// use shmbus::blackboard::{self, RemoveError, Writer};
///
/// let mut writer = Writer::<[u8], u64, _>::on_heap(&blackboard::Options::new(8).key_size(4))?;
/// assert_eq!(
///     writer.remove(b"abc"),
///     Err(RemoveError::KeySize { found: 3, expected: 4 })
/// );
/// # Ok::<(), shmbus::CreateError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum RemoveError {
    /// A raw key of another size than the table's keys.
    #[error("a key of {found} bytes, the table's keys are {expected}")]
    KeySize {
        /// The key's length.
        found: usize,
        /// The table's key size.
        expected: usize,
    },
    /// Many writers only: as [`PutError::Busy`].
    #[error("entry {entry} is being written by another writer: busy, try again")]
    Busy {
        /// The entry (its index in the table).
        entry: u64,
    },
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

/// Why an entry handle ([`Reader::entry`](super::Reader::entry),
/// [`Writer::entry`](super::Writer::entry)) could not be made.
///
/// # Examples
/// ```
/// use shmbus::blackboard::{self, EntryError, Writer};
///
/// let writer = Writer::<[u8], u64, _>::on_heap(&blackboard::Options::new(8).key_size(4))?;
/// assert_eq!(
///     writer.entry(b"abc").map(|_| ()),
///     Err(EntryError::KeySize { found: 3, expected: 4 })
/// );
/// # Ok::<(), shmbus::CreateError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum EntryError {
    /// A raw key of another size than the table's keys.
    #[error("a key of {found} bytes, the table's keys are {expected}")]
    KeySize {
        /// The key's length.
        found: usize,
        /// The table's key size.
        expected: usize,
    },
}

impl EntryError {
    /// [`ErrorKind::InvalidArgument`] for a raw key of the wrong size.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{ErrorKind, blackboard::EntryError};
    ///
    /// let e = EntryError::KeySize { found: 3, expected: 8 };
    /// assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            EntryError::KeySize { .. } => ErrorKind::InvalidArgument,
        }
    }
}

impl From<super::table::NotRead> for GetError {
    fn from(e: super::table::NotRead) -> Self {
        use super::table::NotRead;
        match e {
            NotRead::Busy { entry } => GetError::Busy { entry },
            NotRead::Stuck { entry, version } => GetError::Stuck { entry, version },
            NotRead::BadTag { entry, tag } => GetError::Corrupt { entry, tag },
        }
    }
}
