//! The pool's errors, one enum per operation: loaning a block
//! ([`LoanError`]) and receiving a sample ([`RecvError`]).

use super::blocks::Census;
use crate::error::ErrorKind;

/// Why no block could be loaned.
///
/// # Examples
/// ```
/// use shmbus::{Wait, pool::{self, LoanError}};
///
/// let mut publisher = pool::Publisher::<[u8], _>::on_heap(2, 64, 3)?;
/// match publisher.loan(100, Wait::Never) {
///     Err(LoanError::TooLong { len, max }) => assert_eq!((len, max), (100, 64)),
///     _ => panic!("100 bytes do not fit in a 64-byte block"),
/// }
/// # Ok::<(), shmbus::CreateError>(())
/// ```
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum LoanError {
    /// Longer than the pool's blocks.
    #[error("a loan of {len} bytes asked of a pool of {max}-byte blocks")]
    TooLong {
        /// The length asked for.
        len: usize,
        /// The pool's block size.
        max: usize,
    },
    /// Every block was on the ring, loaned or held until the wait ended.
    #[error(
        "pool exhausted: of {} blocks, {} on the ring, {} held by subscribers, {} loaned, \
         {} corrupt, {} reclaimable, {} free when the wait ended",
        census.free + census.loaned + census.on_ring + census.held + census.reclaimable + census.corrupt,
        census.on_ring, census.held, census.loaned, census.corrupt, census.reclaimable, census.free
    )]
    Exhausted {
        /// Where the blocks were when the publisher gave up.
        census: Census,
    },
}

/// Why a pool receive failed.
///
/// # Examples
/// ```
/// use shmbus::{Start, Wait, WaitStrategy, pool};
///
/// let mut publisher = pool::Publisher::<[u8], _>::on_heap(16, 64, 32)?;
/// let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default())?;
/// let mut held = Vec::new();
/// for _ in 0..=pool::Subscriber::<[u8], shmbus::mem::HeapRegion>::MAX_HELD {
///     publisher.loan(1, Wait::Never)?.publish()?;
/// }
/// while let Ok(Some(shmbus::Received::Message(s))) = subscriber.recv(Wait::Never) {
///     held.push(s);
/// }
/// assert_eq!(
///     subscriber.recv(Wait::Never).err(),
///     Some(pool::RecvError::TooManySamples { max: 8 })
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecvError {
    /// The subscriber already holds as many samples as it may: drop one.
    /// Nothing was received; the next message waits.
    #[error("this subscriber holds {max} samples, the most it may: drop one before receiving")]
    TooManySamples {
        /// [`Subscriber::MAX_HELD`](super::Subscriber::MAX_HELD).
        max: usize,
    },
}

#[cfg(not(loom))]
impl LoanError {
    /// What kind of failure this is: [`ErrorKind::PoolExhausted`] or
    /// [`ErrorKind::TooLong`].
    ///
    /// # Examples
    /// ```
    /// use shmbus::{ErrorKind, Wait, pool};
    ///
    /// let mut publisher = pool::Publisher::<[u8], _>::on_heap(2, 64, 3)?;
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
impl RecvError {
    /// [`ErrorKind::TooManySamples`].
    ///
    /// # Examples
    /// ```
    /// use shmbus::{ErrorKind, pool};
    ///
    /// let e = pool::RecvError::TooManySamples { max: 8 };
    /// assert_eq!(e.kind(), ErrorKind::TooManySamples);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            RecvError::TooManySamples { .. } => ErrorKind::TooManySamples,
        }
    }
}
