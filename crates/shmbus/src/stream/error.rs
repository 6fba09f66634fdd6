//! The stream's errors, one enum per operation: pushing a record
//! ([`PushError`]) and popping one ([`PopError`]).

use std::time::Duration;

use crate::error::ErrorKind;

/// Why a record was not pushed.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use shmbus::{Wait, stream::{self, Producer, PushError}};
/// # let name = format!("/dev/shm/shmbus-doc-pusherror-{}", std::process::id());
/// let mut producer = Producer::<[u8]>::create(&name, &stream::Options::new(64))?;
/// assert_eq!(producer.max_record(), 24);
/// assert_eq!(producer.push(&[0; 25], Wait::Never), Err(PushError::TooLong { len: 25, max: 24 }));
/// producer.push(&[1; 24], Wait::Never)?; // 32 bytes of the ring, with its header
/// producer.push(&[2; 24], Wait::Never)?; // the other 32: full, and no consumer
/// assert_eq!(producer.push(b"x", Wait::Never), Err(PushError::Full));
/// let wait = Duration::from_millis(1);
/// assert_eq!(producer.push(b"x", Wait::For(wait)), Err(PushError::TimedOut(wait)));
/// # shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PushError {
    /// Longer than the stream's largest record.
    #[error("record is {len} bytes, the stream carries at most {max}")]
    TooLong {
        /// The record's length.
        len: usize,
        /// The stream's largest record (half the ring less 8 bytes).
        max: usize,
    },
    /// No room, and `Wait::Never`.
    #[error("stream is full")]
    Full,
    /// No room before the timeout.
    #[error("stream stayed full for {0:?}")]
    TimedOut(Duration),
    /// The consumer died (its lock is free) while the ring is full.
    #[error("the consumer (pid {pid}) is gone and the stream is full")]
    PeerGone {
        /// The consumer's last pid.
        pid: u32,
    },
    /// The consumer's `HEAD` cannot be right: behind the last one seen,
    /// past `TAIL`, or more than the capacity behind it (only a corrupt
    /// file or a writer that ignores the protocol can cause this).
    #[error(
        "corrupt stream cursors: HEAD is {head} with TAIL at {tail}, expected HEAD in \
         {min_head}..={tail} (it never moves back, nor more than the capacity, {capacity} \
         bytes, behind TAIL)"
    )]
    CorruptCursors {
        /// The `HEAD` found.
        head: u64,
        /// This producer's `TAIL`.
        tail: u64,
        /// The ring's size in bytes.
        capacity: u64,
        /// The least `HEAD` that could be right.
        min_head: u64,
    },
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

/// Why no record was popped.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use shmbus::{OpenOptions, Wait, stream::{self, Consumer, PopError, Producer}};
/// # let name = format!("/dev/shm/shmbus-doc-poperror-{}", std::process::id());
/// let producer = Producer::<[u8]>::create(&name, &stream::Options::new(4096))?;
/// let mut consumer = Consumer::<[u8]>::attach(&name, &OpenOptions::default())?;
/// let mut record = Vec::new();
/// assert_eq!(consumer.pop(&mut record, Wait::Never), Err(PopError::Empty));
/// let wait = Duration::from_millis(1);
/// assert_eq!(consumer.pop(&mut record, Wait::For(wait)), Err(PopError::TimedOut(wait)));
/// # shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PopError {
    /// Nothing there, and `Wait::Never`.
    #[error("stream is empty")]
    Empty,
    /// Nothing before the timeout.
    #[error("stream stayed empty for {0:?}")]
    TimedOut(Duration),
    /// The producer died (its lock is free) and the ring is empty. Not for
    /// a producer that was already dead when this consumer opened: that
    /// one is waited on like one that left cleanly.
    #[error("the producer (pid {pid}) is gone and the stream is empty")]
    PeerGone {
        /// The producer's last pid.
        pid: u32,
    },
    /// The producer's `TAIL` cannot be right: behind `HEAD`, or more than
    /// the capacity ahead of it (only a corrupt file or a writer that
    /// ignores the protocol can cause this).
    #[error(
        "corrupt stream cursors: TAIL is {tail} with HEAD at {head}, expected TAIL in \
         {head}..={} (never behind HEAD, nor more than the capacity, {capacity} bytes, \
         ahead of it)",
        head.wrapping_add(*capacity)
    )]
    CorruptCursors {
        /// This consumer's `HEAD`.
        head: u64,
        /// The `TAIL` found.
        tail: u64,
        /// The ring's size in bytes.
        capacity: u64,
    },
    /// The ring holds a record header that cannot be right (only a writer
    /// that ignores the protocol can cause this).
    #[error("corrupt record header {header:#x} at byte {at} of the stream")]
    Corrupt {
        /// Stream position (bytes ever consumed) of the header.
        at: u64,
        /// The header found.
        header: u64,
    },
    /// A typed consumer (`Consumer<T>`) met a record that is not one `T`
    /// long: a raw producer (or one that ignores the stream's type) wrote
    /// it. Nothing is consumed: the record stays the next one, and every
    /// typed read returns this error again until a raw consumer
    /// (`Consumer<[u8]>`, attached once this one is dropped) pops it.
    #[error(
        "record at byte {at} of the stream is {len} bytes, expected {expected} (one `{type_name}`)"
    )]
    RecordLength {
        /// Stream position (bytes ever consumed) of its header.
        at: u64,
        /// The record's length.
        len: usize,
        /// `size_of` the consumer's record type.
        expected: usize,
        /// The record type's name.
        type_name: &'static str,
    },
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
