//! The errors of writing, reading, replaying and converting MCAP files,
//! one enum per operation.

use std::io;
use std::path::PathBuf;

/// Why [`McapRecorder::create`](crate::McapRecorder::create) failed.
///
/// # Examples
/// ```
/// use shmbus_mcap::{CreateError, McapOptions, McapRecorder};
///
/// let err = McapRecorder::create("/nonexistent/dir/r.mcap".as_ref(), McapOptions::default()).unwrap_err();
/// assert!(matches!(err, CreateError::File { what: "create", .. }));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CreateError {
    /// A file could not be made (one already there included) or set up.
    #[error("{path}: {what}: {source}")]
    File {
        /// The file.
        path: PathBuf,
        /// The step: `create`, `chgrp`, `chmod`.
        what: &'static str,
        /// Why.
        source: io::Error,
    },
    /// The file's header or declarations could not be written.
    #[error("{path}: write: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
}

/// Why [`McapRecording::open`](crate::McapRecording::open) refused a file.
///
/// # Examples
/// ```
/// use shmbus_mcap::{McapRecording, OpenError};
///
/// let err = McapRecording::open("/nonexistent/r.mcap".as_ref()).unwrap_err();
/// assert!(matches!(err, OpenError::Io { .. }));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// The file could not be opened or read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// It does not start with the MCAP magic.
    #[error("{path}: not an MCAP file: it starts {found:02x?}, expected {expected:02x?}")]
    NotMcap {
        /// The file.
        path: PathBuf,
        /// Its first bytes (up to 8).
        found: Vec<u8>,
        /// The MCAP magic.
        expected: &'static [u8],
    },
}

/// Why a record of an MCAP file could not be read.
///
/// # Examples
/// ```
/// use shmbus_mcap::{McapRecording, ReadError};
///
/// let dir = std::env::temp_dir().join(format!("shmbus-mcap-doc-read-err-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("bad.mcap");
/// // The magic, then a record that claims to be 2^60 bytes long.
/// let mut bytes = b"\x89MCAP0\r\n\x01".to_vec();
/// bytes.extend_from_slice(&(1u64 << 60).to_le_bytes());
/// std::fs::write(&path, &bytes)?;
/// let err = McapRecording::open(&path)?.find_map(Result::err).unwrap();
/// assert!(matches!(err, ReadError::Mcap { .. }), "{err}");
/// std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// Reading the file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The MCAP reader found the file damaged (a bad record, a chunk whose
    /// check fails, a length past what it reads).
    #[error("{path}: damaged MCAP file: {source}")]
    Mcap {
        /// The file.
        path: PathBuf,
        /// Why.
        source: mcap::McapError,
    },
    /// A channel a replay cannot take: neither shmbus's nor one of raw
    /// bytes of a fixed size (schema `bytes[N]`).
    #[error(
        "{path}: channel {topic:?} has schema {schema:?} and message encoding {encoding:?}: \
         expected one written by shmbus or a schema `bytes[N]` (raw messages of N bytes)"
    )]
    Unsupported {
        /// The file.
        path: PathBuf,
        /// The channel's topic.
        topic: String,
        /// Its schema's name ("" for none).
        schema: String,
        /// Its message encoding.
        encoding: String,
    },
    /// A channel's shmbus metadata holds a value it cannot.
    #[error("{path}: channel {topic:?}: metadata {key} is {found:?}, expected {expected}")]
    Metadata {
        /// The file.
        path: PathBuf,
        /// The channel's topic.
        topic: String,
        /// The key.
        key: &'static str,
        /// Its value.
        found: String,
        /// What it should be.
        expected: &'static str,
    },
    /// A message of the wrong size for its channel's bus.
    #[error("{path}: channel {topic:?}: a {found}-byte message, its bus carries {expected}")]
    MessageSize {
        /// The file.
        path: PathBuf,
        /// The channel's topic.
        topic: String,
        /// The message's length.
        found: usize,
        /// What the bus carries (exactly, or at most for a pool or a
        /// stream).
        expected: u32,
    },
    /// A message on a channel the file never declared, or a gap or mark
    /// naming a bus it never declared.
    #[error("{path}: a record names {what} {found}, which the file does not declare")]
    Unknown {
        /// The file.
        path: PathBuf,
        /// `channel` or `bus`.
        what: &'static str,
        /// Its id.
        found: u32,
    },
    /// A gap or sequence mark of the wrong length.
    #[error("{path}: a {topic} message of {found} bytes, expected {expected}")]
    Control {
        /// The file.
        path: PathBuf,
        /// `shmbus.gap` or `shmbus.seq`.
        topic: &'static str,
        /// Its length.
        found: usize,
        /// Its right length.
        expected: usize,
    },
    /// A part declares a bus under a name an earlier part declared
    /// otherwise, or a topic twice.
    #[error("{path}: channel {topic:?} is declared again, differently")]
    Redeclared {
        /// The file.
        path: PathBuf,
        /// The topic.
        topic: String,
    },
    /// A message's 64-bit sequence would pass 2^64.
    #[error("{path}: channel {topic:?}: a sequence past 2^64")]
    SequenceOverflow {
        /// The file.
        path: PathBuf,
        /// The topic.
        topic: String,
    },
}

/// Why [`replay`](crate::replay) failed.
///
/// # Examples
/// ```
/// use shmbus::record::{Replayer, Speed};
/// use shmbus_mcap::ReplayMcapError;
///
/// let mut r = Replayer::new(Speed::Max).to("shmbus-mcap-doc-nothing");
/// let err = shmbus_mcap::replay(&mut r, "/nonexistent/r.mcap".as_ref()).unwrap_err();
/// assert!(matches!(err, ReplayMcapError::Open(_)));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayMcapError {
    /// The file could not be opened.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// A record could not be read (what came before it was replayed).
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The replay failed (a target, a publish).
    #[error(transparent)]
    Replay(#[from] shmbus::record::ReplayError),
}

/// Why [`export`](crate::export) failed.
///
/// # Examples
/// ```
/// use shmbus_mcap::{ExportError, McapOptions};
///
/// let err = shmbus_mcap::export("/nonexistent/r.rec".as_ref(), "/nonexistent/r.mcap".as_ref(), McapOptions::default()).unwrap_err();
/// assert!(matches!(err, ExportError::Open { .. }));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// The native recording could not be opened.
    #[error("{path}: {source}")]
    Open {
        /// Its first part.
        path: PathBuf,
        /// Why.
        source: shmbus::record::OpenRecordingError,
    },
    /// A record of the native recording could not be read.
    #[error("{path}: {source}")]
    Read {
        /// Its first part.
        path: PathBuf,
        /// Why.
        source: shmbus::record::ReadError,
    },
    /// The MCAP file could not be made.
    #[error(transparent)]
    Create(#[from] CreateError),
    /// A bus could not be declared in it.
    #[error("{path}: bus {name}: {source}")]
    AddBus {
        /// The MCAP file.
        path: PathBuf,
        /// The bus.
        name: String,
        /// Why.
        source: shmbus::record::AddBusError,
    },
    /// Writing it failed.
    #[error("{path}: {source}")]
    Write {
        /// The MCAP file.
        path: PathBuf,
        /// Why.
        source: shmbus::record::WriteError,
    },
}
