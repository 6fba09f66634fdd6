//! A stream's waits other than its own: what a [`Consumer`] gives a
//! [`Select`](crate::select::Select) and the [`aio`](crate::aio) futures
//! ([`Member`]: ready also once its producer died, which it looks at every
//! [`PEER_CHECK`](super::PEER_CHECK), since a dead producer rings no
//! bell), and its `pop_async` beside `pop` (and, with the feature
//! `async-stream`, its [`Records`]).

use super::{Consumer, PopError};
use crate::Message;
use crate::aio::turn;
#[cfg(feature = "async-stream")]
use crate::aio::{Items, Next};
use crate::bus::Payload;
use crate::mem::Region;
use crate::member::Member;
use crate::sync::AtomicU32;
use crate::wait::Wait;

impl<T: ?Sized + Payload, R: Region> Member for Consumer<T, R> {
    fn ready(&self) -> bool {
        self.has_news()
    }
    fn bell(&self) -> &AtomicU32 {
        self.data_bell()
    }
    fn nap(&self) -> Option<std::time::Duration> {
        Some(super::PEER_CHECK)
    }
}

impl<T: ?Sized + Payload, R: Region> Consumer<T, R> {
    /// Waits until a pop would not wait, or the producer died with the
    /// ring empty (its pid).
    async fn pop_ready(
        &mut self,
        mut pop: impl FnMut(&mut Self) -> Result<(), PopError>,
    ) -> Result<(), PopError> {
        let mut missed = false;
        loop {
            match pop(self) {
                Err(PopError::Empty) => {}
                other => return other,
            }
            if let Some(pid) = self.producer_gone() {
                // One last look: the producer may have pushed, then died.
                return match pop(self) {
                    Err(PopError::Empty) => Err(PopError::PeerGone { pid }),
                    other => other,
                };
            }
            turn(&*self, &mut missed).await;
        }
    }
}

impl<R: Region> Consumer<[u8], R> {
    /// Pops the next record into `out` (replacing its contents), waiting
    /// without a thread and without spinning (see [`aio`](crate::aio)).
    /// Cancel-safe: a dropped future popped nothing.
    ///
    /// # Errors
    /// [`PopError::PeerGone`] if the producer died (after this consumer
    /// opened) and the ring is empty, within about
    /// [`PEER_CHECK`](crate::stream::PEER_CHECK); the corruption errors
    /// of [`Consumer::pop`].
    ///
    /// # Examples
    /// ```
    /// # let rt = tokio::runtime::Builder::new_current_thread().build()?;
    /// # rt.block_on(async {
    /// use shmbus::{OpenOptions, Wait, stream::{self, Consumer, Producer}};
    /// # let name = format!("/dev/shm/shmbus-doc-pop-async-{}", std::process::id());
    /// let mut producer = Producer::<[u8]>::create(&name, &stream::Options::new(4096))?;
    /// let mut consumer = Consumer::<[u8]>::attach(&name, &OpenOptions::default())?;
    /// producer.push(b"rec", Wait::Never)?;
    /// let mut out = Vec::new();
    /// consumer.pop_async(&mut out).await?;
    /// assert_eq!(out, b"rec");
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn pop_async(&mut self, out: &mut Vec<u8>) -> Result<(), PopError> {
        self.pop_ready(|c| c.pop(out, Wait::Never)).await
    }
}

impl<T: Message, R: Region> Consumer<T, R> {
    /// Pops the next record, one `T`, waiting as the raw
    /// [`Consumer::pop_async`] does. Cancel-safe.
    ///
    /// # Errors
    /// As the raw `pop_async`, and [`Consumer::pop`]'s typed errors.
    ///
    /// # Examples
    /// ```
    /// # let rt = tokio::runtime::Builder::new_current_thread().build()?;
    /// # rt.block_on(async {
    /// use shmbus::{OpenOptions, Wait, stream::{self, Consumer, Producer}};
    /// # let name = format!("/dev/shm/shmbus-doc-pop-async-t-{}", std::process::id());
    /// let mut producer = Producer::<u32>::create(&name, &stream::Options::new(4096))?;
    /// let mut consumer = Consumer::<u32>::attach(&name, &OpenOptions::default())?;
    /// producer.push(&7, Wait::Never)?;
    /// assert_eq!(consumer.pop_async().await, Ok(7));
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn pop_async(&mut self) -> Result<T, PopError> {
        let mut got = None;
        self.pop_ready(|c| {
            got = Some(c.pop(Wait::Never)?);
            Ok(())
        })
        .await?;
        got.ok_or(PopError::Empty)
    }
}

#[cfg(feature = "async-stream")]
/// A typed stream consumer's records as a `futures_core::Stream`
/// (feature `async-stream`): each item is what
/// [`Consumer::pop_async`] would return. After
/// [`PopError::PeerGone`] (the producer died and the ring is empty)
/// it ends. Cancel-safe as `pop_async`: dropping it between items
/// loses nothing.
///
/// # Examples
/// ```
/// # let rt = tokio::runtime::Builder::new_current_thread().build()?;
/// # rt.block_on(async {
/// use std::pin::Pin;
/// use futures_core::Stream;
/// use shmbus::{OpenOptions, Wait, stream::{self, Consumer, Producer}};
/// # let name = format!("/dev/shm/shmbus-doc-records-{}", std::process::id());
/// let mut producer = Producer::<u32>::create(&name, &stream::Options::new(4096))?;
/// let mut consumer = Consumer::<u32>::attach(&name, &OpenOptions::default())?;
/// producer.push(&7, Wait::Never)?;
/// let mut records = consumer.records();
/// let next = std::future::poll_fn(|cx| Pin::new(&mut records).poll_next(cx)).await;
/// assert_eq!(next, Some(Ok(7)));
/// # shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub type Records<'a, T, R> = Items<'a, Consumer<T, R>>;

#[cfg(feature = "async-stream")]
impl<T: Message, R: Region> Consumer<T, R> {
    /// This consumer's records as a `futures_core::Stream` (feature
    /// `async-stream`): see [`Records`].
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, stream::{self, Consumer, Producer}};
    /// # let name = format!("/dev/shm/shmbus-doc-records-fn-{}", std::process::id());
    /// let _producer = Producer::<u32>::create(&name, &stream::Options::new(4096))?;
    /// let mut consumer = Consumer::<u32>::attach(&name, &OpenOptions::default())?;
    /// let records = consumer.records();
    /// # drop(records);
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn records(&mut self) -> Records<'_, T, R> {
        Items::new(self)
    }
}

#[cfg(feature = "async-stream")]
impl<T: Message, R: Region> Next for Consumer<T, R> {
    type Item = Result<T, PopError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.pop(Wait::Never) {
            Err(PopError::Empty) => {}
            other => return Some(other),
        }
        let pid = self.producer_gone()?;
        // One last look: the producer may have pushed, then died.
        Some(match self.pop(Wait::Never) {
            Err(PopError::Empty) => Err(PopError::PeerGone { pid }),
            other => other,
        })
    }

    fn is_last(item: &Self::Item) -> bool {
        matches!(item, Err(PopError::PeerGone { .. }))
    }
}
