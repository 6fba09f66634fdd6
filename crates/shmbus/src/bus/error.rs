//! The bus's errors, one enum per operation: publishing ([`PublishError`],
//! [`TryPublishError`], [`ManyPublishError`], [`Abandoned`]) and skipping
//! ([`SkipError`]). A lossless subscriber refused is an
//! [`OpenError`](crate::OpenError) ([`LosslessRefused`](crate::error::LosslessRefused), with
//! the errors every kind shares).

use std::time::Duration;

use crate::error::ErrorKind;

/// Why a raw message could not be published.
///
/// # Examples
/// ```
/// use shmbus::{Publisher, bus::PublishError};
///
/// let mut publisher = Publisher::<[u8], _>::on_heap_bytes(4, 8)?;
/// match publisher.publish(b"too long") {
///     Err(PublishError::TooLong { len, max }) => assert_eq!((len, max), (8, 4)),
///     Err(other) => panic!("{other}"), // more reasons may come
///     Ok(_) => panic!("8 bytes do not fit in 4"),
/// }
/// assert_eq!(publisher.next_sequence(), 0); // nothing was published
/// # Ok::<(), shmbus::CreateError>(())
/// ```
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum PublishError {
    /// Longer than the bus's message size.
    #[error("message is {len} bytes, the bus carries at most {max}")]
    TooLong {
        /// The message's length.
        len: usize,
        /// The bus's message size.
        max: usize,
    },
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

/// Why [`Publisher::skip`](super::Publisher::skip) refused.
///
/// # Examples
/// ```
/// use shmbus::{Publisher, bus::SkipError};
///
/// let mut publisher = Publisher::<u64, _>::on_heap(8)?;
/// assert_eq!(
///     publisher.skip(u64::MAX),
///     Err(SkipError::TooFar { n: u64::MAX, max: SkipError::MAX })
/// );
/// # Ok::<(), shmbus::CreateError>(())
/// ```
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum SkipError {
    /// More sequence numbers than readers can tell apart from a lap.
    #[error("cannot skip {n} messages at once, at most {max}")]
    TooFar {
        /// The count asked for.
        n: u64,
        /// [`SkipError::MAX`].
        max: u64,
    },
}

impl SkipError {
    /// The most messages one [`Publisher::skip`](super::Publisher::skip) may skip: 2^60.
    pub const MAX: u64 = 1 << 60;
}

/// Why [`Publisher::try_publish`](super::Publisher::try_publish) published nothing.
///
/// # Examples
/// ```
/// use shmbus::{Publisher, Start, WaitStrategy, bus::TryPublishError};
///
/// let mut publisher = Publisher::<u64, _>::on_heap(2)?;
/// let lossless = publisher.subscribe_lossless(Start::Next, WaitStrategy::default())?;
/// publisher.try_publish(&1)?;
/// publisher.try_publish(&2)?;
/// // Two unread messages on two slots: a third would overwrite one.
/// match publisher.try_publish(&3) {
///     Err(TryPublishError::Full { entry, .. }) => assert_eq!(entry, 0),
///     other => panic!("expected Full, got {other:?}"),
/// }
/// # drop(lossless);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum TryPublishError {
    /// The oldest slot holds a message a lossless subscriber has not read.
    #[error("no room: lossless subscriber in registry entry {entry}{} has not read the message in the oldest slot, expected a free slot", pid.map(|p| format!(" (pid {p})")).unwrap_or_default())]
    Full {
        /// Its registry entry.
        entry: usize,
        /// Its pid, where the bus has a registry (not on the heap).
        pid: Option<u32>,
    },
    /// Longer than the bus's message size (raw buses).
    #[error("message is {len} bytes, the bus carries at most {max}")]
    TooLong {
        /// The message's length.
        len: usize,
        /// The bus's message size.
        max: usize,
    },
    /// Many-publisher buses: the claim was skipped before the commit
    /// (see [`Abandoned`](super::Abandoned)).
    #[error(transparent)]
    Abandoned(#[from] Abandoned),
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

/// A claim that was declared abandoned before its publisher committed it:
/// the message was not published. It happens only to a publisher that
/// stalled (descheduled, stopped) between claiming its slot and committing
/// it for longer than the bus's unblock timeout, after which subscribers
/// or other publishers skip the slot.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use shmbus::bus::{Abandoned, ManyPublisher};
///
/// let mut publisher = ManyPublisher::<u64, _>::on_heap(8, Duration::from_secs(1))?;
/// match publisher.publish(&7) {
///     Ok(seq) => assert_eq!(seq, 0),
///     // Nothing was published under `seq`: publish again if it matters.
///     Err(Abandoned { seq, unblock }) => eprintln!("{seq} skipped after {unblock:?}"),
/// }
/// # Ok::<(), shmbus::CreateError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "sequence {seq} was skipped as abandoned before this publisher committed it \
     (claim older than the {unblock:?} unblock timeout); the message was not published"
)]
pub struct Abandoned {
    /// The sequence this publisher had claimed.
    pub seq: u64,
    /// The bus's unblock timeout.
    pub unblock: Duration,
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

/// Why a raw message could not be published on a many-publisher bus.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use shmbus::bus::{ManyPublishError, ManyPublisher};
///
/// let mut publisher = ManyPublisher::<[u8], _>::on_heap_bytes(4, 8, Duration::from_secs(1))?;
/// assert_eq!(
///     publisher.publish(b"too long"),
///     Err(ManyPublishError::TooLong { len: 8, max: 4 })
/// );
/// # Ok::<(), shmbus::CreateError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ManyPublishError {
    /// Longer than the bus's message size.
    #[error("message is {len} bytes, the bus carries at most {max}")]
    TooLong {
        /// The message's length.
        len: usize,
        /// The bus's message size.
        max: usize,
    },
    /// The claim was skipped before the commit.
    #[error(transparent)]
    Abandoned(#[from] Abandoned),
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
