//! A pool's waits other than its own: what a [`Subscriber`] gives a
//! [`Select`](crate::select::Select) and the [`aio`](crate::aio) futures
//! ([`Member`]), its `recv_async` beside `recv` (and, with the feature
//! `async-stream`, its [`Samples`]), and a [`Loan`]'s `publish_async`,
//! which awaits room on a lossless subscriber as the bus's publishers do
//! (`bus::aio`); a dropped future gives its block back. Not async yet:
//! waiting for a free block (`pool::Publisher::loan` with a wait) and an
//! `OwnedLoan`'s publish.

use super::{Loan, RecvError, Sample, Subscriber};
use crate::aio::turn;
#[cfg(feature = "async-stream")]
use crate::aio::{Items, Next};
use crate::bus::aio::{RoomBell, when_room};
use crate::bus::{Abandoned, Payload, Received, TryPublishError};
use crate::mem::Region;
use crate::member::Member;
use crate::sync::AtomicU32;
use crate::wait::Wait;

impl<T: ?Sized + Payload, R: Region> Member for Subscriber<T, R> {
    fn ready(&self) -> bool {
        self.ring().has_news(self.position())
    }
    fn bell(&self) -> &AtomicU32 {
        self.ring().doorbell()
    }
    fn nap(&self) -> Option<std::time::Duration> {
        self.ring().select_nap()
    }
}

impl<T: ?Sized + Payload, R: Region> Subscriber<T, R> {
    /// The next sample or lag report, waiting as
    /// [`Subscriber::recv_async`](crate::Subscriber::recv_async) does. Cancel-safe.
    ///
    /// # Errors
    /// As [`Subscriber::recv`]: [`RecvError`].
    ///
    /// # Examples
    /// ```
    /// # let rt = tokio::runtime::Builder::new_current_thread().build()?;
    /// # rt.block_on(async {
    /// use shmbus::{Received, Start, Wait, WaitStrategy, pool};
    ///
    /// let mut publisher = pool::Publisher::<[u8], _>::on_heap(4, 64, 8)?;
    /// let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default())?;
    /// let mut loan = publisher.loan(2, Wait::Never)?;
    /// loan.copy_from_slice(b"hi");
    /// loan.publish()?;
    /// let Received::Message(sample) = subscriber.recv_async().await? else { panic!() };
    /// assert_eq!(&*sample, b"hi");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn recv_async(&mut self) -> Result<Received<Sample<T, R>>, RecvError> {
        let mut missed = false;
        loop {
            if let Some(r) = self.recv(Wait::Never)? {
                return Ok(r);
            }
            turn(&*self, &mut missed).await;
        }
    }
}

#[cfg(feature = "async-stream")]
/// A pool subscriber's samples and lag reports as a
/// `futures_core::Stream` (feature `async-stream`): each item is what
/// [`Subscriber::recv_async`] would return; it never ends. A
/// [`Sample`] does not borrow its subscriber (it keeps the mapping
/// alive itself), so items may be held across later ones, up to
/// [`Subscriber::MAX_HELD`] at once (then the item is
/// [`RecvError::TooManySamples`], and nothing is lost).
/// Cancel-safe as `recv_async`.
///
/// # Examples
/// ```
/// # let rt = tokio::runtime::Builder::new_current_thread().build()?;
/// # rt.block_on(async {
/// use std::pin::Pin;
/// use futures_core::Stream;
/// use shmbus::{Received, Start, Wait, WaitStrategy, pool};
///
/// let mut publisher = pool::Publisher::<[u8], _>::on_heap(4, 64, 8)?;
/// let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default())?;
/// let mut loan = publisher.loan(2, Wait::Never)?;
/// loan.copy_from_slice(b"hi");
/// loan.publish()?;
/// let mut samples = subscriber.samples();
/// let next = std::future::poll_fn(|cx| Pin::new(&mut samples).poll_next(cx)).await;
/// let Some(Ok(Received::Message(sample))) = next else { panic!() };
/// assert_eq!(&*sample, b"hi");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub type Samples<'a, T, R> = Items<'a, Subscriber<T, R>>;

#[cfg(feature = "async-stream")]
impl<T: ?Sized + Payload, R: Region> Subscriber<T, R> {
    /// This subscriber's samples as a `futures_core::Stream` (feature
    /// `async-stream`): see [`Samples`].
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Start, WaitStrategy, pool};
    /// let publisher = pool::Publisher::<[u8], _>::on_heap(4, 64, 8)?;
    /// let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default())?;
    /// let samples = subscriber.samples();
    /// # drop(samples);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn samples(&mut self) -> Samples<'_, T, R> {
        Items::new(self)
    }
}

#[cfg(feature = "async-stream")]
impl<T: ?Sized + Payload, R: Region> Next for Subscriber<T, R> {
    type Item = Result<Received<Sample<T, R>>, RecvError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.recv(Wait::Never).transpose()
    }
}

impl<T: ?Sized + Payload, R: Region> RoomBell for Loan<'_, T, R> {
    fn room_bell(&self) -> &AtomicU32 {
        Loan::room_bell(self)
    }
}

impl<T: ?Sized + Payload, R: Region> Loan<'_, T, R> {
    /// Publishes the block as [`Loan::publish`] does, awaiting room for
    /// its descriptor as [`Publisher::publish_async`](crate::Publisher::publish_async) does instead of
    /// blocking the thread while a lossless subscriber holds the bus
    /// back. Cancel-safe: a dropped future published nothing, and the
    /// loan it owned gives its block back to the pool (a many-publisher
    /// bus claims a sequence only once it found room for it).
    ///
    /// # Errors
    /// [`Abandoned`] as [`Loan::publish`].
    ///
    /// # Examples
    /// ```
    /// # let rt = tokio::runtime::Builder::new_current_thread().build()?;
    /// # rt.block_on(async {
    /// use shmbus::{OpenOptions, Received, Start, Wait};
    /// use shmbus::pool;
    /// # let name = format!("/dev/shm/shmbus-doc-loan-async-{}", std::process::id());
    /// let mut publisher = pool::Publisher::<u32>::create(&name, &pool::Options::new(1, 64, 4))?;
    /// let lossless = OpenOptions::default().start(Start::Next).lossless(true);
    /// let mut subscriber = pool::Subscriber::<u32>::open(&name, &lossless)?;
    /// let mut loan = publisher.loan(Wait::Never)?;
    /// *loan = 1;
    /// assert_eq!(loan.publish_async().await?, 0);
    /// // The one slot is unread: the next publish waits for the read.
    /// assert!(matches!(subscriber.recv(Wait::Never)?, Some(Received::Message(_))));
    /// let mut loan = publisher.loan(Wait::Never)?;
    /// *loan = 2;
    /// assert_eq!(loan.publish_async().await?, 1);
    /// # drop((subscriber, publisher)); shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn publish_async(mut self) -> Result<u64, Abandoned> {
        match when_room(&mut self, Loan::try_publish_now).await {
            Ok(seq) => Ok(seq),
            Err(TryPublishError::Abandoned(a)) => Err(a),
            Err(e) => unreachable!("a pool publish failed: {e}"),
        }
    }
}
