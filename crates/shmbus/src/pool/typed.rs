//! Typed messages on a pool bus: a loan of exactly one `T`, written in
//! place as `&mut T`, and a sample read in place as `&T`.
//!
//! The pool records no message type (its slots carry descriptors), so the
//! reader checks what it can: a sample is a `T` only if its length is
//! `size_of::<T>()` and its bytes are aligned for `T`; anything else is
//! `None`, never a misread. Blocks start 64-byte aligned, so every `T` of
//! alignment up to 64 fits.
//!
//! A loan is `&mut T` rather than `&mut MaybeUninit<T>`: a block's bytes
//! are always initialised (zero at creation, then whole messages), so the
//! old message is a valid `T` to overwrite field by field, no
//! `assume_init` is needed, and safe code cannot publish uninitialised
//! bytes for a subscriber to read.

use std::marker::PhantomData;

use bytemuck::Pod;

use super::publisher::{Loan, LoanError, PoolPublisher};
use super::subscriber::Sample;
use crate::bus::Abandoned;
use crate::mem::{DefaultRegion, Region};
use crate::wait::Wait;

/// A block loaned for one `T`: dereferences to the `T` in the pool (the
/// bytes of the block's last message, or zeros), published by
/// [`TypedLoan::publish`], given back unpublished when dropped.
///
/// # Examples
/// ```
/// use shmbus::{Received, Start, Wait, WaitStrategy, pool::PoolPublisher};
///
/// #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
/// #[repr(C)]
/// struct Frame { id: u64, pixels: [u8; 4096] }
///
/// let mut publisher = PoolPublisher::on_heap(4, 4160, 6)?;
/// let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default())?;
/// let mut frame = publisher.loan_as::<Frame>(Wait::Never)?;
/// frame.id = 7;
/// frame.pixels.fill(255);
/// frame.publish()?;
///
/// let Some(Received::Message(sample)) = subscriber.recv(Wait::Never)? else { panic!() };
/// let frame: &Frame = sample.as_pod().expect("a Frame");
/// assert_eq!((frame.id, frame.pixels[4095]), (7, 255));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct TypedLoan<'a, T: Pod, R: Region = DefaultRegion> {
    /// Exactly `size_of::<T>()` bytes, aligned for `T` (checked in
    /// `loan_as`).
    loan: Loan<'a, R>,
    _t: PhantomData<T>,
}

impl<R: Region> PoolPublisher<R> {
    /// Loans a block for one `T`, waiting as [`PoolPublisher::loan`] does.
    ///
    /// # Errors
    /// [`LoanError::TooLong`] if a `T` is larger than a block,
    /// [`LoanError::Misaligned`] if `T` needs an alignment the block does
    /// not have (over 64), [`LoanError::Exhausted`] as for `loan`.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Wait, pool::PoolPublisher};
    ///
    /// let mut publisher = PoolPublisher::on_heap(4, 64, 5)?;
    /// let mut loan = publisher.loan_as::<[u64; 8]>(Wait::Never)?;
    /// *loan = [1; 8];
    /// assert_eq!(loan.publish()?, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn loan_as<T: Pod>(&mut self, wait: Wait) -> Result<TypedLoan<'_, T, R>, LoanError> {
        let loan = self.loan(std::mem::size_of::<T>(), wait)?;
        if bytemuck::try_from_bytes::<T>(&loan).is_err() {
            // Dropping the loan gives the block back.
            return Err(LoanError::Misaligned {
                align: std::mem::align_of::<T>(),
            });
        }
        Ok(TypedLoan {
            loan,
            _t: PhantomData,
        })
    }
}

impl<T: Pod, R: Region> TypedLoan<'_, T, R> {
    /// Publishes the `T`: as [`Loan::publish`].
    ///
    /// # Errors
    /// [`Abandoned`] as for [`Loan::publish`] (a many-publisher bus only).
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Wait, pool::PoolPublisher};
    ///
    /// let mut publisher = PoolPublisher::on_heap(4, 64, 5)?;
    /// let mut loan = publisher.loan_as::<u32>(Wait::Never)?;
    /// *loan = 42;
    /// assert_eq!(loan.publish()?, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn publish(self) -> Result<u64, Abandoned> {
        self.loan.publish()
    }
}

impl<T: Pod, R: Region> std::ops::Deref for TypedLoan<'_, T, R> {
    type Target = T;
    fn deref(&self) -> &T {
        // Size and alignment were checked in `loan_as` and a loan's bytes
        // do not move.
        bytemuck::from_bytes(&self.loan)
    }
}

impl<T: Pod, R: Region> std::ops::DerefMut for TypedLoan<'_, T, R> {
    fn deref_mut(&mut self) -> &mut T {
        bytemuck::from_bytes_mut(&mut self.loan)
    }
}

impl<T: Pod, R: Region> std::fmt::Debug for TypedLoan<'_, T, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TypedLoan")
            .field("type", &std::any::type_name::<T>())
            .field("loan", &self.loan)
            .finish()
    }
}

impl<R: Region> Sample<R> {
    /// The message as a `T`, read in place: `None` if its length is not
    /// `size_of::<T>()` or its bytes are not aligned for `T` (the pool
    /// records no type, so this is all a reader can check).
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Received, Start, Wait, WaitStrategy, pool::PoolPublisher};
    ///
    /// let mut publisher = PoolPublisher::on_heap(4, 64, 5)?;
    /// let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default())?;
    /// let mut loan = publisher.loan_as::<u64>(Wait::Never)?;
    /// *loan = 10;
    /// loan.publish()?;
    ///
    /// let Some(Received::Message(sample)) = subscriber.recv(Wait::Never)? else { panic!() };
    /// assert_eq!(sample.as_pod::<u64>(), Some(&10));
    /// assert_eq!(sample.as_pod::<u32>(), None); // 8 bytes are not a u32
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn as_pod<T: Pod>(&self) -> Option<&T> {
        bytemuck::try_from_bytes(self).ok()
    }
}
