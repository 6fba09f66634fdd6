//! A bus's waits other than its own: what a [`Subscriber`] gives a
//! [`Select`](crate::select::Select) and the [`aio`](crate::aio) futures
//! ([`Member`]), its `recv_async` beside `recv` (and, with the feature
//! `async-stream`, its [`Messages`]), and `publish_async` (`Publisher`,
//! `ManyPublisher`; a pool's `Loan` in `pool`), which awaits room where
//! `publish` would block the thread on a lossless subscriber.
//!
//! # Publishing: the lossless publisher's wait
//!
//! A blocked publisher sleeps on the bus's `ROOM` word, which every gating
//! subscriber rings after its position store once the publisher raised
//! the sleepers flag there (`bus::gate`, LAYOUT §13.1): the doorbell with
//! the roles swapped. The async publisher does the sleeper's half the same
//! way (raise the flag, heavy barrier, try again) and registers `ROOM`
//! with the waiter thread as a subscriber's future registers its bell,
//! with a nap of [`LIVENESS_EVERY`]: each try looks at the liveness of
//! the subscriber in the way (a dead one is cleared at once) and evicts
//! one that has held it for the eviction timeout, as the blocking wait
//! does between its naps.
//!
//! Each try is a `publish_within(.., Wait::Never)`: it publishes, or finds
//! no room and publishes nothing (a many-publisher bus claims only a
//! sequence it found room for). So a future publishes only in the poll
//! that returns `Ready`: a dropped future published nothing.

use std::time::Instant;

use super::gate::LIVENESS_EVERY;
use super::{
    Abandoned, ManyPublishError, ManyPublisher, Payload, PublishError, Publisher, Received,
    Subscriber, TryPublishError,
};
use crate::Message;
use crate::aio::{Doze, turn};
#[cfg(feature = "async-stream")]
use crate::aio::{Items, Next};
use crate::mem::Region;
use crate::member::Member;
use crate::sync::AtomicU32;
use crate::wait::{self, Wait};

impl<T: ?Sized + Payload, R: Region> Member for Subscriber<T, R> {
    fn ready(&self) -> bool {
        self.ring.has_news(self.position())
    }
    fn bell(&self) -> &AtomicU32 {
        self.ring.doorbell()
    }
    fn nap(&self) -> Option<std::time::Duration> {
        // A many-publisher bus: a quarter of its unblock timeout (a claim
        // whose publisher died rings no bell).
        self.ring.select_nap()
    }
}

impl<T: Message, R: Region> Subscriber<T, R> {
    /// The next message or lag report, waiting without a thread and
    /// without spinning (see [`aio`](crate::aio)). Cancel-safe: a dropped
    /// future has received nothing.
    ///
    /// # Examples
    /// ```
    /// # let rt = tokio::runtime::Builder::new_current_thread().enable_time().build()?;
    /// # rt.block_on(async {
    /// use std::time::Duration;
    /// use shmbus::{Publisher, Received, Start, WaitStrategy};
    ///
    /// let mut publisher = Publisher::<u64, _>::on_heap(8)?;
    /// let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default());
    /// // Nothing yet: the timeout drops the future, which took nothing.
    /// let early = tokio::time::timeout(Duration::from_millis(5), subscriber.recv_async()).await;
    /// assert!(early.is_err());
    /// publisher.publish(&3);
    /// assert_eq!(subscriber.recv_async().await, Received::Message(3));
    /// # Ok::<(), shmbus::CreateError>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn recv_async(&mut self) -> Received<T> {
        let mut missed = false;
        loop {
            if let Some(r) = self.recv(Wait::Never) {
                return r;
            }
            turn(&*self, &mut missed).await;
        }
    }
}

impl<R: Region> Subscriber<[u8], R> {
    /// The next message (borrowed, as from `recv`) or lag report, waiting
    /// as [`Subscriber::recv_async`] does. Cancel-safe.
    ///
    /// # Examples
    /// ```
    /// # let rt = tokio::runtime::Builder::new_current_thread().build()?;
    /// # rt.block_on(async {
    /// use shmbus::{Publisher, Received, Start, WaitStrategy};
    ///
    /// let mut publisher = Publisher::<[u8], _>::on_heap_bytes(2, 8)?;
    /// let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default());
    /// publisher.publish(b"hi")?;
    /// assert_eq!(subscriber.recv_async().await, Received::Message(&b"hi"[..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn recv_async(&mut self) -> Received<&[u8]> {
        let mut missed = false;
        loop {
            // The message is lent again through `message()` so that the
            // borrow of this look ends here (a loop may look again).
            match self.recv(Wait::Never) {
                Some(Received::Message(_)) => break,
                Some(Received::Lagged { skipped }) => return Received::Lagged { skipped },
                None => {}
            }
            turn(&*self, &mut missed).await;
        }
        Received::Message(self.message())
    }
}

/// A bus subscriber's messages as a `futures_core::Stream` (feature
/// `async-stream`): each item is what `recv_async` would return; it never
/// ends. Cancel-safe as `recv_async`: dropping it between items loses
/// nothing.
///
/// # Examples
/// ```
/// # let rt = tokio::runtime::Builder::new_current_thread().build()?;
/// # rt.block_on(async {
/// use std::pin::Pin;
/// use futures_core::Stream;
/// use shmbus::{Publisher, Received, Start, WaitStrategy};
///
/// let mut publisher = Publisher::<u64, _>::on_heap(8)?;
/// let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default());
/// let mut messages = subscriber.messages();
/// publisher.publish(&4);
/// let next = std::future::poll_fn(|cx| Pin::new(&mut messages).poll_next(cx)).await;
/// assert_eq!(next, Some(Received::Message(4)));
/// # Ok::<(), shmbus::CreateError>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[cfg(feature = "async-stream")]
pub type Messages<'a, T, R> = Items<'a, Subscriber<T, R>>;

#[cfg(feature = "async-stream")]
impl<T: Message, R: Region> Subscriber<T, R> {
    /// This subscriber's messages as a `futures_core::Stream` (feature
    /// `async-stream`): see [`Messages`].
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Publisher, Start, WaitStrategy};
    /// let publisher = Publisher::<u64, _>::on_heap(8)?;
    /// let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default());
    /// let messages = subscriber.messages();
    /// # drop(messages);
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn messages(&mut self) -> Messages<'_, T, R> {
        Items::new(self)
    }
}

#[cfg(feature = "async-stream")]
impl<T: Message, R: Region> Next for Subscriber<T, R> {
    type Item = Received<T>;

    fn next(&mut self) -> Option<Received<T>> {
        self.recv(Wait::Never)
    }
}

/// A publisher that may find no room: its `ROOM` word.
pub(crate) trait RoomBell {
    fn room_bell(&self) -> &AtomicU32;
}

impl<T: ?Sized + Payload, R: Region> RoomBell for Publisher<T, R> {
    fn room_bell(&self) -> &AtomicU32 {
        self.ring.room_bell()
    }
}

impl<T: ?Sized + Payload, R: Region> RoomBell for ManyPublisher<T, R> {
    fn room_bell(&self) -> &AtomicU32 {
        self.w.ring.room_bell()
    }
}

/// sleeping on `ROOM` with the waiter in between: see the module docs.
pub(crate) async fn when_room<P: RoomBell + ?Sized, O>(
    p: &mut P,
    mut attempt: impl FnMut(&mut P) -> Result<O, TryPublishError>,
) -> Result<O, TryPublishError> {
    loop {
        match attempt(p) {
            Err(TryPublishError::Full { .. }) => {}
            done => return done,
        }
        let bell = p.room_bell();
        let seen = wait::raise_flag(bell);
        let mut nap = LIVENESS_EVERY;
        // Paired with the gating subscriber's fence in `wait::ring` (after
        // its position store): one that missed our flag stored its
        // position before, and the try below sees it.
        if !wait::heavy_barrier() {
            nap = nap.min(wait::UNSURE_SLEEP);
        }
        match attempt(p) {
            Err(TryPublishError::Full { .. }) => {}
            done => return done,
        }
        Doze::new(p.room_bell(), seen, Instant::now() + nap).await;
    }
}

impl<T: Message, R: Region> Publisher<T, R> {
    /// Publishes `msg` as [`Publisher::publish`] does, awaiting room for
    /// it instead of blocking the thread while a lossless subscriber has
    /// not read the message it would overwrite: until that one reads on,
    /// dies, or has held it for the eviction timeout (then it is
    /// evicted). Returns the sequence. Cancel-safe: a dropped future
    /// published nothing (the message goes out only in the poll that
    /// returns it).
    ///
    /// # Examples
    /// ```
    /// # let rt = tokio::runtime::Builder::new_current_thread().build()?;
    /// # rt.block_on(async {
    /// use shmbus::{Publisher, Received, Start, Wait, WaitStrategy};
    ///
    /// let mut publisher = Publisher::<u64, _>::on_heap(1)?;
    /// let mut lossless = publisher.subscribe_lossless(Start::Next, WaitStrategy::default())?;
    /// assert_eq!(publisher.publish_async(&1).await, 0);
    /// // The one slot is unread: a second publish waits for the read.
    /// assert_eq!(lossless.recv(Wait::Never), Some(Received::Message(1)));
    /// assert_eq!(publisher.publish_async(&2).await, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn publish_async(&mut self, msg: &T) -> u64 {
        match when_room(self, |p| p.publish_within(msg, Wait::Never)).await {
            Ok(seq) => seq,
            // A typed publish is never too long, and a single publisher
            // never abandons a claim.
            Err(e) => unreachable!("a typed single-publisher publish failed: {e}"),
        }
    }
}

impl<R: Region> Publisher<[u8], R> {
    /// As the typed [`Publisher::publish_async`], for raw bytes.
    /// Cancel-safe the same way.
    ///
    /// # Errors
    /// [`PublishError::TooLong`] if `bytes` is longer than the message
    /// size; nothing is published.
    ///
    /// # Examples
    /// ```
    /// # let rt = tokio::runtime::Builder::new_current_thread().build()?;
    /// # rt.block_on(async {
    /// let mut publisher = shmbus::Publisher::<[u8], _>::on_heap_bytes(8, 4)?;
    /// assert_eq!(publisher.publish_async(b"hi").await?, 0);
    /// assert!(publisher.publish_async(b"far too long").await.is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn publish_async(&mut self, bytes: &[u8]) -> Result<u64, PublishError> {
        match when_room(self, |p| p.publish_within(bytes, Wait::Never)).await {
            Ok(seq) => Ok(seq),
            Err(TryPublishError::TooLong { len, max }) => Err(PublishError::TooLong { len, max }),
            Err(e) => unreachable!("a single-publisher publish failed: {e}"),
        }
    }
}

impl<T: Message, R: Region> ManyPublisher<T, R> {
    /// Publishes `msg` as [`ManyPublisher::publish`] does, awaiting room
    /// for it as [`Publisher::publish_async`] does; a sequence is claimed
    /// only once there is room for it. Cancel-safe: a dropped future
    /// claimed and published nothing. (A lossless subscriber that joins
    /// between the look and the claim may still hold the claim back, the
    /// thread with it, for at most the eviction timeout, as in
    /// [`ManyPublisher::publish_within`].)
    ///
    /// # Errors
    /// [`Abandoned`] as [`ManyPublisher::publish`].
    ///
    /// # Examples
    /// ```
    /// # let rt = tokio::runtime::Builder::new_current_thread().build()?;
    /// # rt.block_on(async {
    /// use std::time::Duration;
    /// let mut p = shmbus::bus::ManyPublisher::<u64, _>::on_heap(8, Duration::from_secs(1))?;
    /// assert_eq!(p.publish_async(&5).await?, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn publish_async(&mut self, msg: &T) -> Result<u64, Abandoned> {
        match when_room(self, |p| p.publish_within(msg, Wait::Never)).await {
            Ok(seq) => Ok(seq),
            Err(TryPublishError::Abandoned(a)) => Err(a),
            Err(e) => unreachable!("a typed publish failed: {e}"),
        }
    }
}

impl<R: Region> ManyPublisher<[u8], R> {
    /// As the typed [`ManyPublisher::publish_async`], for raw bytes.
    ///
    /// # Errors
    /// [`ManyPublishError::TooLong`] for more bytes than the message size
    /// (nothing claimed), [`ManyPublishError::Abandoned`] as for a typed
    /// publish.
    ///
    /// # Examples
    /// ```
    /// # let rt = tokio::runtime::Builder::new_current_thread().build()?;
    /// # rt.block_on(async {
    /// use std::time::Duration;
    /// let mut p = shmbus::bus::ManyPublisher::<[u8], _>::on_heap_bytes(4, 8, Duration::from_secs(1))?;
    /// assert_eq!(p.publish_async(b"abc").await?, 0);
    /// assert!(p.publish_async(b"abcde").await.is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn publish_async(&mut self, bytes: &[u8]) -> Result<u64, ManyPublishError> {
        match when_room(self, |p| p.publish_within(bytes, Wait::Never)).await {
            Ok(seq) => Ok(seq),
            Err(TryPublishError::TooLong { len, max }) => {
                Err(ManyPublishError::TooLong { len, max })
            }
            Err(TryPublishError::Abandoned(a)) => Err(ManyPublishError::Abandoned(a)),
            Err(e) => unreachable!("a publish failed: {e}"),
        }
    }
}
