//! The errors of recording and reading a recording, one enum per
//! operation.

use crate::error::ErrorKind;
use std::io;
use std::path::PathBuf;

/// Why [`Recorder::add_bus`](super::Recorder::add_bus) failed.
///
/// # Examples
/// ```
/// use shmbus::record::{AddBusError, RecordedKind, Recorder};
///
/// let mut recorder = Recorder::new(Vec::new())?;
/// let err = recorder.add_bus("big", RecordedKind::Bus, u32::MAX).unwrap_err();
/// assert!(matches!(err, AddBusError::MessageTooLarge { found: u32::MAX, .. }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AddBusError {
    /// Writing the bus record failed.
    #[error("writing the recording: {0}")]
    Io(#[from] io::Error),
    /// The name is longer than a recording holds.
    #[error("bus name is {found} bytes, a recording holds at most {max}")]
    NameTooLong {
        /// The name's length in bytes.
        found: usize,
        /// The longest a recording holds.
        max: usize,
    },
    /// The message size is larger than a recording holds.
    #[error("message size is {found} bytes, a recording holds at most {max}")]
    MessageTooLarge {
        /// The bus's message size.
        found: u32,
        /// The largest a recording holds.
        max: usize,
    },
    /// The recording already declares as many buses as it may.
    #[error("the recording already has {found} buses, at most {max}")]
    TooManyBuses {
        /// Buses declared so far.
        found: usize,
        /// The most a recording declares.
        max: usize,
    },
    /// The message type's name is longer than a recording holds.
    #[error("message type name is {found} bytes, a recording holds at most {max}")]
    TypeNameTooLong {
        /// The name's length in bytes.
        found: usize,
        /// The longest a recording holds.
        max: usize,
    },
}

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

/// Why writing a message or a gap to a [`Recorder`](super::Recorder), its
/// header or its flush failed.
///
/// # Examples
/// ```
/// use shmbus::record::{RecordedKind, Recorder, WriteError};
///
/// let mut recorder = Recorder::new(Vec::new())?;
/// let bus = recorder.add_bus("ticks", RecordedKind::Bus, 8)?;
/// let err = recorder.message(bus, 0, 0, 0, b"short").unwrap_err();
/// assert!(matches!(err, WriteError::PayloadSize { found: 5, expected: 8, .. }));
/// assert_eq!(err.to_string(), "payload is 5 bytes, bus 0 carries 8");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// The writer failed.
    #[error("writing the recording: {0}")]
    Io(#[from] io::Error),
    /// No bus with that id was added.
    #[error("no bus {found} in this recording: it has {buses}")]
    UnknownBus {
        /// The id given.
        found: u32,
        /// Buses declared so far (ids `0..buses`).
        buses: usize,
    },
    /// The payload is not the bus's message size.
    #[error("payload is {found} bytes, bus {bus} carries {expected}")]
    PayloadSize {
        /// The bus.
        bus: u32,
        /// The payload's length.
        found: usize,
        /// The bus's message size.
        expected: u32,
    },
    /// A gap of no messages.
    #[error("a gap of 0 messages on bus {bus}: expected at least 1")]
    EmptyGap {
        /// The bus.
        bus: u32,
    },
    /// A file of the recording (a part, an index) could not be made or
    /// written: the file, the step, and why (a file already there, for a
    /// part that a rotation would make).
    #[error("{path}: {what}: {source}")]
    File {
        /// The file.
        path: PathBuf,
        /// The step: `create`, `chgrp`, `chmod`, `write`.
        what: &'static str,
        /// Why.
        source: io::Error,
    },
}

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

/// Why [`Recording::new`](super::Recording::new) refused a file.
///
/// # Examples
/// ```
/// use shmbus::record::{OpenRecordingError, Recording};
///
/// let err = Recording::new(&b"not a recording!"[..]).unwrap_err();
/// assert!(matches!(err, OpenRecordingError::BadMagic { .. }));
/// let err = Recording::new(&b"short"[..]).unwrap_err();
/// assert!(matches!(err, OpenRecordingError::Truncated { found: 5, expected: 16 }));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenRecordingError {
    /// Reading failed.
    #[error("reading the recording: {0}")]
    Io(#[from] io::Error),
    /// The file ends inside its header.
    #[error("the file is {found} bytes, a recording's header is {expected}")]
    Truncated {
        /// Bytes read.
        found: usize,
        /// The header's length.
        expected: usize,
    },
    /// Not a recording.
    #[error("not a shmbus recording: magic {found:#018x}, expected {expected:#018x}")]
    BadMagic {
        /// The first eight bytes, little-endian.
        found: u64,
        /// "SHMBREC\0".
        expected: u64,
    },
    /// A recording of a version this code does not read.
    #[error("recording version {found}, this build reads 1 to {expected}")]
    Version {
        /// The file's version.
        found: u32,
        /// The newest version this code reads.
        expected: u32,
    },
    /// A rotated part that does not follow the one before it, though the
    /// part after it does: a part lost or replaced.
    #[error(
        "{path}: part {found} of recording {id:#018x}, expected part {expected} of recording {expected_id:#018x}"
    )]
    PartMismatch {
        /// The part's file.
        path: String,
        /// Its part number.
        found: u32,
        /// Its recording id.
        id: u64,
        /// The part number that should come next.
        expected: u32,
        /// The recording id of the first part.
        expected_id: u64,
    },
    /// A rotated part that is no part (cut inside its header, not a
    /// recording, another version), though the part after it is one: a
    /// part lost or replaced.
    #[error("{path}: {source}")]
    InPart {
        /// The part's file.
        path: String,
        /// What is wrong with it.
        source: Box<OpenRecordingError>,
    },
}

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

/// Why the next record of a [`Recording`](super::Recording) could not be
/// read. Each names the record's offset in the file; iteration ends after
/// one.
///
/// # Examples
/// ```
/// use shmbus::record::{ReadError, RecordedKind, Recorder, Recording};
///
/// let mut recorder = Recorder::new(Vec::new())?;
/// recorder.add_bus("ticks", RecordedKind::Bus, 8)?;
/// let mut bytes = recorder.into_inner();
/// bytes[40] ^= 1; // a byte of the bus record, which starts at 32
/// let mut recording = Recording::new(&bytes[..])?;
/// assert!(matches!(recording.next(), Some(Err(ReadError::Checksum { offset: 32, .. }))));
/// assert!(recording.next().is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// Reading failed.
    #[error("reading the recording: {0}")]
    Io(#[from] io::Error),
    /// A whole record whose check is wrong: the file was changed or
    /// damaged there.
    #[error("record at offset {offset}: check {found:#018x}, expected {expected:#018x}")]
    Checksum {
        /// The record's offset.
        offset: u64,
        /// The check stored.
        found: u64,
        /// The check of the bytes read.
        expected: u64,
    },
    /// A record longer than any a recording holds.
    #[error("record at offset {offset}: body of {found} bytes, at most {max}")]
    TooLong {
        /// The record's offset.
        offset: u64,
        /// The length it declares.
        found: u32,
        /// The longest body.
        max: usize,
    },
    /// A record type this version does not know.
    #[error("record at offset {offset}: type {found}, expected 1 (bus), 2 (message) or 3 (gap)")]
    UnknownType {
        /// The record's offset.
        offset: u64,
        /// The type found.
        found: u32,
    },
    /// A body of the wrong length for its type.
    #[error("record at offset {offset}: body of {found} bytes, its type needs {expected}")]
    BodyLength {
        /// The record's offset.
        offset: u64,
        /// The body's length.
        found: usize,
        /// The length its type (and bus) needs.
        expected: usize,
    },
    /// A bus record out of order: ids are 0, 1, 2, ... in the file.
    #[error("record at offset {offset}: bus id {found}, expected {expected}")]
    BusId {
        /// The record's offset.
        offset: u64,
        /// The id found.
        found: u32,
        /// The next id.
        expected: usize,
    },
    /// A message or gap of a bus not declared before it.
    #[error("record at offset {offset}: bus {found}, the recording declares {buses} before it")]
    UnknownBus {
        /// The record's offset.
        offset: u64,
        /// The bus id found.
        found: u32,
        /// Buses declared so far.
        buses: usize,
    },
    /// A bus of a kind this version does not know.
    #[error(
        "record at offset {offset}: bus kind {found}, expected 1 (plain bus) to 5 (journaled bus), or 1 in a version 1 file"
    )]
    UnknownKind {
        /// The record's offset.
        offset: u64,
        /// The kind found.
        found: u32,
    },
    /// A bus record whose names' lengths do not add up to its body.
    #[error(
        "record at offset {offset}: names of {found} bytes in a bus record, which holds {expected}"
    )]
    NameLength {
        /// The record's offset.
        offset: u64,
        /// The lengths the record gives, added.
        found: u64,
        /// The bytes its body has for them.
        expected: usize,
    },
    /// A later part re-declares a bus unlike the first part did.
    #[error("record at offset {offset} of part {part}: bus {bus} differs from the first part's")]
    PartBus {
        /// The part.
        part: u32,
        /// The record's offset in it.
        offset: u64,
        /// The bus id.
        bus: u32,
    },
    /// A bus name that is not UTF-8.
    #[error("record at offset {offset}: the bus name is not UTF-8")]
    NameNotUtf8 {
        /// The record's offset.
        offset: u64,
    },
    /// A bus record's message type name that is not UTF-8.
    #[error("record at offset {offset}: the message type name is not UTF-8")]
    TypeNameNotUtf8 {
        /// The record's offset.
        offset: u64,
    },
    /// An error in a rotated part after the first, naming its file (the
    /// offset inside is that file's).
    #[error("{path}: {source}")]
    InPart {
        /// The part's file.
        path: String,
        /// The error.
        source: Box<ReadError>,
    },
    /// A gap of no messages.
    #[error("record at offset {offset}: a gap of 0 messages, expected at least 1")]
    EmptyGap {
        /// The record's offset.
        offset: u64,
    },
}

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
