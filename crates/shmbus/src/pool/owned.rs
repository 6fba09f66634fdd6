//! [`OwnedLoan`]: a loan that owns its publisher, made by
//! [`PoolPublisher::into_loan`], and [`IntoLoanError`], which gives the
//! publisher back when no block could be loaned.
//!
//! A [`Loan`](super::Loan) borrows its publisher mutably, so a holder that
//! cannot keep a borrow (a binding's handle, a loan moved into another
//! thread) would have to keep the publisher and a loan of it side by side,
//! self-referentially. An owned loan holds both: the block's logic is
//! `LoanedBlock`'s, the same as `Loan`'s; only who holds the publisher
//! differs.

use super::publisher::{LoanError, LoanedBlock, PoolPublisher};
use crate::bus::Abandoned;
use crate::mem::{DefaultRegion, Region};
use crate::wait::Wait;

impl<R: Region> PoolPublisher<R> {
    /// Loans a block as [`PoolPublisher::loan`] does, into a loan that
    /// owns this publisher until the block is published or given back
    /// ([`OwnedLoan::publish`], [`OwnedLoan::cancel`]), for a holder that
    /// cannot keep a borrow: a binding, a loan moved to another thread.
    ///
    /// # Errors
    /// As [`PoolPublisher::loan`], inside an [`IntoLoanError`] that gives
    /// the publisher back.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Wait, pool::PoolPublisher};
    ///
    /// let publisher = PoolPublisher::on_heap(4, 64, 5)?;
    /// let mut loan = publisher.into_loan(3, Wait::Never)?;
    /// loan.copy_from_slice(&[1, 2, 3]);
    /// let (publisher, published) = loan.publish();
    /// assert_eq!(published?, 0);
    /// assert_eq!(publisher.census().on_ring, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    // The `Ok` side holds the same publisher, so boxing the error would not
    // shrink the `Result`; it would only allocate on every failed try.
    #[allow(clippy::result_large_err)]
    pub fn into_loan(mut self, len: usize, wait: Wait) -> Result<OwnedLoan<R>, IntoLoanError<R>> {
        match self.lend(len, wait) {
            Ok(block) => Ok(OwnedLoan::new(self, block)),
            Err(error) => Err(IntoLoanError::new(self, error)),
        }
    }
}

/// A block loaned by a publisher that this loan owns meanwhile: `len`
/// writable bytes in the pool (a `[u8]` through `Deref`, so `len()` and
/// the slice methods), published by [`OwnedLoan::publish`] or given back
/// by [`OwnedLoan::cancel`], each of which returns the publisher. Dropped
/// unpublished, it frees the block (as a dropped [`Loan`](super::Loan)
/// does) and drops the publisher.
///
/// # Examples
/// ```
/// use shmbus::{Received, Start, Wait, WaitStrategy, pool::PoolPublisher};
///
/// let publisher = PoolPublisher::on_heap(4, 64, 5)?;
/// let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default())?;
/// let mut loan = publisher.into_loan(5, Wait::Never)?;
/// // The loan may go to another thread to be written.
/// let loan = std::thread::spawn(move || {
///     loan.copy_from_slice(b"hello");
///     loan
/// })
/// .join()
/// .expect("the writer");
/// assert_eq!(loan.len(), 5);
/// let (publisher, published) = loan.publish();
/// assert_eq!(published?, 0);
/// match subscriber.recv(Wait::Never)? {
///     Some(Received::Message(sample)) => assert_eq!(&sample[..], b"hello"),
///     other => panic!("expected the message, got {other:?}"),
/// }
/// assert_eq!(publisher.census().loaned, 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct OwnedLoan<R: Region = DefaultRegion> {
    /// The publisher the block was loaned from: `Some` for as long as the
    /// loan lives (`publish` and `cancel` take it as they consume the
    /// loan), so it keeps the mapping of `block`'s bytes alive.
    publisher: Option<PoolPublisher<R>>,
    block: LoanedBlock,
}

// SAFETY: an `OwnedLoan` is its publisher plus a `LoanedBlock`, whose only
// non-`Send` part is the pointer to the block's bytes. The block is loaned
// to this publisher alone (its state word says so, set by CAS in
// `Blocks::loan`: no reader takes it and no other publisher loans it until
// it is published or freed), and its bytes lie in the mapping that the
// owned publisher keeps alive wherever the loan goes; no other handle
// reaches them, so moving the loan to another thread moves all access.
unsafe impl<R: Region> Send for OwnedLoan<R> where PoolPublisher<R>: Send {}
// SAFETY: as for `Send`; `&OwnedLoan` reads the bytes (`Deref`) and
// nothing else, and shared reads of plain bytes from several threads are
// as sound as those of a `&[u8]`.
unsafe impl<R: Region> Sync for OwnedLoan<R> where PoolPublisher<R>: Sync {}

impl<R: Region> OwnedLoan<R> {
    pub(super) fn new(publisher: PoolPublisher<R>, block: LoanedBlock) -> Self {
        OwnedLoan {
            publisher: Some(publisher),
            block,
        }
    }

    /// Takes the loan apart: the publisher and the block, which the caller
    /// then publishes or frees (`Drop` sees no publisher, and does
    /// nothing).
    fn take(mut self) -> (PoolPublisher<R>, LoanedBlock) {
        let block = self.block.take();
        match self.publisher.take() {
            Some(publisher) => (publisher, block),
            // `publish` and `cancel` consume the loan, so nothing took the
            // publisher before: this arm is never reached.
            None => unreachable!("an owned loan without its publisher"),
        }
    }

    /// Publishes the block: its descriptor goes on the ring. Returns the
    /// publisher, ready for the next loan, with the message's sequence
    /// number.
    ///
    /// # Errors
    /// [`Abandoned`] (beside the publisher) as for
    /// [`Loan::publish`](super::Loan::publish): on a many-publisher bus
    /// whose claim was skipped, nothing was published and the block is
    /// free again.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Wait, pool::PoolPublisher};
    ///
    /// let publisher = PoolPublisher::on_heap(4, 64, 5)?;
    /// let (publisher, first) = publisher.into_loan(1, Wait::Never)?.publish();
    /// let (_, second) = publisher.into_loan(1, Wait::Never)?.publish();
    /// assert_eq!((first?, second?), (0, 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn publish(self) -> (PoolPublisher<R>, Result<u64, Abandoned>) {
        let (mut publisher, mut block) = self.take();
        let published = block.publish(&mut publisher);
        (publisher, published)
    }

    /// Gives the block back unpublished, and the publisher to the caller.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Wait, pool::PoolPublisher};
    ///
    /// let publisher = PoolPublisher::on_heap(4, 64, 5)?;
    /// let loan = publisher.into_loan(8, Wait::Never)?;
    /// let publisher = loan.cancel();
    /// assert_eq!(publisher.census().free, 5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cancel(self) -> PoolPublisher<R> {
        let (publisher, mut block) = self.take();
        block.free(&publisher);
        publisher
    }

    /// Shortens the message to its first `len` bytes, as
    /// [`Loan::truncate`](super::Loan::truncate).
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Wait, pool::PoolPublisher};
    ///
    /// let publisher = PoolPublisher::on_heap(4, 64, 5)?;
    /// let mut loan = publisher.into_loan(64, Wait::Never)?;
    /// loan[..2].copy_from_slice(b"hi");
    /// loan.truncate(2);
    /// assert_eq!(&loan[..], b"hi");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn truncate(&mut self, len: usize) {
        self.block.truncate(len);
    }
}

impl<R: Region> std::ops::Deref for OwnedLoan<R> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.block.bytes()
    }
}

impl<R: Region> std::ops::DerefMut for OwnedLoan<R> {
    fn deref_mut(&mut self) -> &mut [u8] {
        self.block.bytes_mut()
    }
}

impl<R: Region> Drop for OwnedLoan<R> {
    fn drop(&mut self) {
        if let Some(publisher) = self.publisher.as_ref() {
            self.block.free(publisher);
        }
    }
}

impl<R: Region> std::fmt::Debug for OwnedLoan<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.block.fmt_as("OwnedLoan", f)
    }
}

/// Why [`PoolPublisher::into_loan`] loaned no block, with the publisher it
/// was given, so that a failed loan never loses it (as std's
/// `IntoInnerError` gives back its writer).
///
/// # Examples
/// ```
/// use shmbus::{Wait, pool::{LoanError, PoolPublisher}};
///
/// let publisher = PoolPublisher::on_heap(4, 64, 5)?;
/// let failed = publisher.into_loan(100, Wait::Never).unwrap_err();
/// assert_eq!(failed.error(), &LoanError::TooLong { len: 100, max: 64 });
/// let (publisher, _error) = failed.into_parts();
/// assert!(publisher.into_loan(64, Wait::Never).is_ok());
/// # Ok::<(), shmbus::CreateError>(())
/// ```
pub struct IntoLoanError<R: Region = DefaultRegion> {
    publisher: PoolPublisher<R>,
    error: LoanError,
}

impl<R: Region> IntoLoanError<R> {
    pub(super) fn new(publisher: PoolPublisher<R>, error: LoanError) -> Self {
        IntoLoanError { publisher, error }
    }

    /// Why no block was loaned.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Wait, pool::{LoanError, PoolPublisher}};
    ///
    /// let publisher = PoolPublisher::on_heap(2, 64, 3)?;
    /// let failed = publisher.into_loan(65, Wait::Never).unwrap_err();
    /// assert!(matches!(failed.error(), LoanError::TooLong { len: 65, .. }));
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn error(&self) -> &LoanError {
        &self.error
    }

    /// The publisher, given back, and the error.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Wait, pool::PoolPublisher};
    ///
    /// let publisher = PoolPublisher::on_heap(2, 64, 3)?;
    /// let (publisher, error) = publisher.into_loan(65, Wait::Never).unwrap_err().into_parts();
    /// assert_eq!(publisher.block_size(), 64);
    /// assert!(error.to_string().contains("65 bytes"));
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn into_parts(self) -> (PoolPublisher<R>, LoanError) {
        (self.publisher, self.error)
    }

    /// The publisher, given back (the error dropped).
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Wait, pool::PoolPublisher};
    ///
    /// let publisher = PoolPublisher::on_heap(2, 64, 3)?;
    /// let publisher = match publisher.into_loan(65, Wait::Never) {
    ///     Ok(loan) => loan.cancel(),
    ///     Err(failed) => failed.into_publisher(),
    /// };
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn into_publisher(self) -> PoolPublisher<R> {
        self.publisher
    }
}

impl<R: Region> std::fmt::Debug for IntoLoanError<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IntoLoanError")
            .field("error", &self.error)
            .field("publisher", &self.publisher)
            .finish()
    }
}

impl<R: Region> std::fmt::Display for IntoLoanError<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "no block loaned (the publisher is given back): {}",
            self.error
        )
    }
}

impl<R: Region> std::error::Error for IntoLoanError<R> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}
