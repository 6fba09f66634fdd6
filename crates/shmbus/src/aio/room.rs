//! Async publishing on a bus with lossless subscribers: `publish_async`
//! (`Publisher`, `ManyPublisher`, a pool's `Loan`) awaits room where
//! `publish` would block the thread.
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

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use super::waiter;
use crate::bus::gate::LIVENESS_EVERY;
use crate::bus::{
    Abandoned, ManyPublishError, ManyPublisher, PublishError, Publisher, TryPublishError,
};
use crate::mem::Region;
use crate::pool::Loan;
use crate::sync::AtomicU32;
use crate::wait::{self, Wait};
use crate::Message;

/// A publisher that may find no room: its `ROOM` word.
trait RoomBell {
    fn room_bell(&self) -> &AtomicU32;
}

impl<T: ?Sized + crate::bus::Payload, R: Region> RoomBell for Publisher<T, R> {
    fn room_bell(&self) -> &AtomicU32 {
        self.ring.room_bell()
    }
}

impl<T: ?Sized + crate::bus::Payload, R: Region> RoomBell for ManyPublisher<T, R> {
    fn room_bell(&self) -> &AtomicU32 {
        self.w.ring.room_bell()
    }
}

impl<T: ?Sized + crate::bus::Payload, R: Region> RoomBell for Loan<'_, T, R> {
    fn room_bell(&self) -> &AtomicU32 {
        Loan::room_bell(self)
    }
}

/// Tries `attempt` (one publish that never waits) until it finds room,
/// sleeping on `ROOM` with the waiter in between: see the module docs.
async fn when_room<P: RoomBell + ?Sized, O>(
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
        Doze {
            bell: p.room_bell(),
            seen,
            until: Instant::now() + nap,
            reg: None,
            polled: false,
        }
        .await;
    }
}

/// Sleeps (with the waiter) until `bell` moves from `seen` or `until`.
struct Doze<'a> {
    bell: &'a AtomicU32,
    seen: u32,
    until: Instant,
    reg: Option<u64>,
    polled: bool,
}

impl Future for Doze<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if let Some(id) = this.reg {
            if waiter::refresh(id, cx.waker()) {
                return Poll::Pending;
            }
            this.reg = None;
            return Poll::Ready(());
        }
        if this.polled {
            // Polled again without a registration (no waiter thread, see
            // below): try the publish again.
            return Poll::Ready(());
        }
        this.polled = true;
        match waiter::register(this.bell, this.seen, Some(this.until), cx.waker()) {
            Some(id) => this.reg = Some(id),
            // No waiter thread (the system refused one): poll again rather
            // than never wake.
            None => cx.waker().wake_by_ref(),
        }
        Poll::Pending
    }
}

impl Drop for Doze<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.reg.take() {
            waiter::remove(id);
        }
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

impl<T: ?Sized + crate::bus::Payload, R: Region> Loan<'_, T, R> {
    /// Publishes the block as [`Loan::publish`] does, awaiting room for
    /// its descriptor as [`Publisher::publish_async`] does instead of
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
    /// use shmbus::pool::{PoolOptions, PoolPublisher, PoolSubscriber};
    /// # let name = format!("/dev/shm/shmbus-doc-loan-async-{}", std::process::id());
    /// let mut publisher = PoolPublisher::<u32>::create(&name, &PoolOptions::new(1, 64, 4))?;
    /// let lossless = OpenOptions::default().start(Start::Next).lossless(true);
    /// let mut subscriber = PoolSubscriber::<u32>::open(&name, &lossless)?;
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
