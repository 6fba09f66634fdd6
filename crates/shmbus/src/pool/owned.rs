//! [`OwnedLoan`]: a loan that owns its publisher, made by
//! [`Publisher::into_loan`], and [`IntoLoanError`], which gives the
//! publisher back when no block could be loaned.
//!
//! A [`Loan`](super::Loan) borrows its publisher mutably, so a holder that
//! cannot keep a borrow (a binding's handle, a loan moved into another
//! thread) would have to keep the publisher and a loan of it side by side,
//! self-referentially. An owned loan holds both: the block's logic is
//! `LoanedBlock`'s, the same as `Loan`'s; only who holds the publisher
//! differs.

use super::error::LoanError;
use super::publisher::{LoanedBlock, Publisher};
use crate::bus::{Abandoned, Payload};
use crate::mem::{DefaultRegion, Region};
use crate::wait::Wait;
use crate::wire::Message;

impl<T: ?Sized + Payload, R: Region> Publisher<T, R> {
    /// A loan of `len` bytes that owns this publisher, or the publisher
    /// back with the error: what both `into_loan`s do.
    #[allow(clippy::result_large_err)] // as `into_loan`'s, below
    fn into_loan_of(
        mut self,
        len: usize,
        wait: Wait,
    ) -> Result<OwnedLoan<T, R>, IntoLoanError<T, R>> {
        match self.lend(len, wait) {
            Ok(block) => Ok(OwnedLoan::new(self, block)),
            Err(error) => Err(IntoLoanError::new(self, error)),
        }
    }
}

impl<T: Message, R: Region> Publisher<T, R> {
    /// Loans a block for one `T` as [`Publisher::loan`] does, into a
    /// loan that owns this publisher until the block is published or
    /// given back ([`OwnedLoan::publish`], [`OwnedLoan::cancel`]), for a
    /// holder that cannot keep a borrow: a binding, a loan moved to
    /// another thread.
    ///
    /// # Errors
    /// As [`Publisher::loan`], inside an [`IntoLoanError`] that gives
    /// the publisher back.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Wait, pool};
    ///
    /// let publisher = pool::Publisher::<u64, _>::on_heap(4, 64, 5)?;
    /// let mut loan = publisher.into_loan(Wait::Never)?;
    /// *loan = 3;
    /// let (publisher, published) = loan.publish();
    /// assert_eq!(published?, 0);
    /// assert_eq!(publisher.census().on_ring, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    // The `Ok` side holds the same publisher, so boxing the error would not
    // shrink the `Result`; it would only allocate on every failed try.
    #[allow(clippy::result_large_err)]
    pub fn into_loan(self, wait: Wait) -> Result<OwnedLoan<T, R>, IntoLoanError<T, R>> {
        self.into_loan_of(size_of::<T>(), wait)
    }
}

impl<R: Region> Publisher<[u8], R> {
    /// Loans a block of `len` bytes as [`Publisher::loan`] does, into
    /// a loan that owns this publisher until the block is published or
    /// given back ([`OwnedLoan::publish`], [`OwnedLoan::cancel`]), for a
    /// holder that cannot keep a borrow: a binding, a loan moved to
    /// another thread.
    ///
    /// # Errors
    /// As [`Publisher::loan`], inside an [`IntoLoanError`] that gives
    /// the publisher back.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Wait, pool};
    ///
    /// let publisher = pool::Publisher::<[u8], _>::on_heap(4, 64, 5)?;
    /// let mut loan = publisher.into_loan(3, Wait::Never)?;
    /// loan.copy_from_slice(&[1, 2, 3]);
    /// let (publisher, published) = loan.publish();
    /// assert_eq!(published?, 0);
    /// assert_eq!(publisher.census().on_ring, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[allow(clippy::result_large_err)]
    pub fn into_loan(
        self,
        len: usize,
        wait: Wait,
    ) -> Result<OwnedLoan<[u8], R>, IntoLoanError<[u8], R>> {
        self.into_loan_of(len, wait)
    }
}

/// A block loaned by a publisher that this loan owns meanwhile: one
/// writable `T` in the pool (a typed publisher's), or `len` writable bytes
/// (a raw one's: a `[u8]` through `Deref`, so `len()` and the slice
/// methods), published by [`OwnedLoan::publish`] or given back
/// by [`OwnedLoan::cancel`], each of which returns the publisher. Dropped
/// unpublished, it frees the block (as a dropped [`Loan`](super::Loan)
/// does) and drops the publisher.
///
/// # Examples
/// ```
/// use shmbus::{Received, Start, Wait, WaitStrategy, pool};
///
/// let publisher = pool::Publisher::<[u8], _>::on_heap(4, 64, 5)?;
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
pub struct OwnedLoan<T: ?Sized + Payload, R: Region = DefaultRegion> {
    /// The publisher the block was loaned from: `Some` for as long as the
    /// loan lives (`publish` and `cancel` take it as they consume the
    /// loan), so it keeps the mapping of `block`'s bytes alive.
    publisher: Option<Publisher<T, R>>,
    /// A typed loan's is one `T`, as a [`Loan`](super::Loan)'s.
    block: LoanedBlock,
}

// SAFETY: an `OwnedLoan` is its publisher plus a `LoanedBlock`, whose only
// non-`Send` part is the pointer to the block's bytes. The block is loaned
// to this publisher alone (its state word says so, set by CAS in
// `Blocks::loan`: no reader takes it and no other publisher loans it until
// it is published or freed), and its bytes lie in the mapping that the
// owned publisher keeps alive wherever the loan goes; no other handle
// reaches them, so moving the loan to another thread moves all access.
unsafe impl<T: ?Sized + Payload, R: Region> Send for OwnedLoan<T, R> where Publisher<T, R>: Send {}
// SAFETY: as for `Send`; `&OwnedLoan` reads the bytes (`Deref`) and
// nothing else, and shared reads of plain bytes from several threads are
// as sound as those of a `&[u8]`.
unsafe impl<T: ?Sized + Payload, R: Region> Sync for OwnedLoan<T, R> where Publisher<T, R>: Sync {}

impl<T: ?Sized + Payload, R: Region> OwnedLoan<T, R> {
    pub(super) fn new(publisher: Publisher<T, R>, block: LoanedBlock) -> Self {
        OwnedLoan {
            publisher: Some(publisher),
            block,
        }
    }

    /// Takes the loan apart: the publisher and the block, which the caller
    /// then publishes or frees (`Drop` sees no publisher, and does
    /// nothing).
    fn take(mut self) -> (Publisher<T, R>, LoanedBlock) {
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
    /// use shmbus::{Wait, pool};
    ///
    /// let publisher = pool::Publisher::<[u8], _>::on_heap(4, 64, 5)?;
    /// let (publisher, first) = publisher.into_loan(1, Wait::Never)?.publish();
    /// let (_, second) = publisher.into_loan(1, Wait::Never)?.publish();
    /// assert_eq!((first?, second?), (0, 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn publish(self) -> (Publisher<T, R>, Result<u64, Abandoned>) {
        let (mut publisher, mut block) = self.take();
        let published = block.publish(&mut publisher);
        (publisher, published)
    }

    /// Gives the block back unpublished, and the publisher to the caller.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Wait, pool};
    ///
    /// let publisher = pool::Publisher::<u64, _>::on_heap(4, 64, 5)?;
    /// let loan = publisher.into_loan(Wait::Never)?;
    /// let publisher = loan.cancel();
    /// assert_eq!(publisher.census().free, 5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cancel(self) -> Publisher<T, R> {
        let (mut publisher, mut block) = self.take();
        block.free(&mut publisher);
        publisher
    }
}

impl<R: Region> OwnedLoan<[u8], R> {
    /// Shortens the message to its first `len` bytes, as
    /// [`Loan::truncate`](super::Loan::truncate).
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Wait, pool};
    ///
    /// let publisher = pool::Publisher::<[u8], _>::on_heap(4, 64, 5)?;
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

impl<R: Region> std::ops::Deref for OwnedLoan<[u8], R> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.block.bytes()
    }
}

impl<R: Region> std::ops::DerefMut for OwnedLoan<[u8], R> {
    fn deref_mut(&mut self) -> &mut [u8] {
        self.block.bytes_mut()
    }
}

impl<T: Message, R: Region> std::ops::Deref for OwnedLoan<T, R> {
    type Target = T;
    fn deref(&self) -> &T {
        self.block.value()
    }
}

impl<T: Message, R: Region> std::ops::DerefMut for OwnedLoan<T, R> {
    fn deref_mut(&mut self) -> &mut T {
        self.block.value_mut()
    }
}

impl<T: ?Sized + Payload, R: Region> Drop for OwnedLoan<T, R> {
    fn drop(&mut self) {
        if let Some(publisher) = self.publisher.as_mut() {
            self.block.free(publisher);
        }
    }
}

impl<T: ?Sized + Payload, R: Region> std::fmt::Debug for OwnedLoan<T, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.block.fmt_as("OwnedLoan", f)
    }
}

/// Why [`Publisher::into_loan`] loaned no block, with the publisher it
/// was given, so that a failed loan never loses it (as std's
/// `IntoInnerError` gives back its writer).
///
/// # Examples
/// ```
/// use shmbus::{Wait, pool::{self, LoanError}};
///
/// let publisher = pool::Publisher::<[u8], _>::on_heap(4, 64, 5)?;
/// let failed = publisher.into_loan(100, Wait::Never).unwrap_err();
/// assert_eq!(failed.error(), &LoanError::TooLong { len: 100, max: 64 });
/// let (publisher, _error) = failed.into_parts();
/// assert!(publisher.into_loan(64, Wait::Never).is_ok());
/// # Ok::<(), shmbus::CreateError>(())
/// ```
pub struct IntoLoanError<T: ?Sized + Payload, R: Region = DefaultRegion> {
    publisher: Publisher<T, R>,
    error: LoanError,
}

impl<T: ?Sized + Payload, R: Region> IntoLoanError<T, R> {
    pub(super) fn new(publisher: Publisher<T, R>, error: LoanError) -> Self {
        IntoLoanError { publisher, error }
    }

    /// Why no block was loaned.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Wait, pool::{self, LoanError}};
    ///
    /// let publisher = pool::Publisher::<[u8], _>::on_heap(2, 64, 3)?;
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
    /// use shmbus::{Wait, pool};
    ///
    /// let publisher = pool::Publisher::<[u8], _>::on_heap(2, 64, 3)?;
    /// let (publisher, error) = publisher.into_loan(65, Wait::Never).unwrap_err().into_parts();
    /// assert_eq!(publisher.block_size(), 64);
    /// assert!(error.to_string().contains("65 bytes"));
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn into_parts(self) -> (Publisher<T, R>, LoanError) {
        (self.publisher, self.error)
    }

    /// The publisher, given back (the error dropped).
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Wait, pool};
    ///
    /// let publisher = pool::Publisher::<[u8], _>::on_heap(2, 64, 3)?;
    /// let publisher = match publisher.into_loan(65, Wait::Never) {
    ///     Ok(loan) => loan.cancel(),
    ///     Err(failed) => failed.into_publisher(),
    /// };
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn into_publisher(self) -> Publisher<T, R> {
        self.publisher
    }
}

impl<T: ?Sized + Payload, R: Region> std::fmt::Debug for IntoLoanError<T, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IntoLoanError")
            .field("error", &self.error)
            .field("publisher", &self.publisher)
            .finish()
    }
}

impl<T: ?Sized + Payload, R: Region> std::fmt::Display for IntoLoanError<T, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "no block loaned (the publisher is given back): {}",
            self.error
        )
    }
}

impl<T: ?Sized + Payload, R: Region> std::error::Error for IntoLoanError<T, R> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}
