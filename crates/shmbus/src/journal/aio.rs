//! A journaled bus's waits other than its own: what a
//! [`Subscriber`] gives a [`Select`](crate::select::Select) and the
//! [`aio`](crate::aio) futures ([`Member`]: always ready while it reads
//! the file, which never waits), and its `recv_async` beside `recv` (and,
//! with the feature `async-stream`, its [`Entries`]).

use super::{Entry, Subscriber};
use crate::Message;
use crate::aio::turn;
#[cfg(feature = "async-stream")]
use crate::aio::{Items, Next};
use crate::bus::{Payload, Received};
use crate::member::Member;
use crate::sync::AtomicU32;
use crate::wait::Wait;

impl<T: ?Sized + Payload> Member for Subscriber<T> {
    fn ready(&self) -> bool {
        // Reading the file: never waits.
        !self.is_live() || self.ring().has_news(self.position())
    }
    fn bell(&self) -> &AtomicU32 {
        self.ring().doorbell()
    }
    fn nap(&self) -> Option<std::time::Duration> {
        self.ring().select_nap()
    }
}

impl<T: Message> Subscriber<T> {
    /// The next entry (from the file, then the ring) or lag report,
    /// waiting as [`Subscriber::recv_async`](crate::Subscriber::recv_async) does. Cancel-safe.
    ///
    /// # Examples
    /// ```
    /// # let rt = tokio::runtime::Builder::new_current_thread().build()?;
    /// # rt.block_on(async {
    /// use shmbus::{BusOptions, Received};
    /// use shmbus::journal::{self, Entry, JoinOptions};
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-jasync-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-jasync-{}", std::process::id());
    /// let mut publisher = journal::Publisher::<u64>::create(
    ///     &name,
    ///     &BusOptions::new(64),
    ///     &journal::Options::new(dir.join("ticks.journal")),
    /// )?;
    /// publisher.publish(&1)?;
    /// let mut late = journal::Subscriber::<u64>::join(&name, &JoinOptions::default())?;
    /// assert_eq!(late.recv_async().await, Received::Message(Entry { seq: 0, msg: 1 }));
    /// publisher.publish(&2)?;
    /// assert_eq!(late.recv_async().await, Received::Message(Entry { seq: 1, msg: 2 }));
    /// # drop(late);
    /// # publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn recv_async(&mut self) -> Received<Entry<T>> {
        let mut missed = false;
        loop {
            if let Some(r) = self.recv(Wait::Never) {
                return r;
            }
            // (The receive that finds the file's end moves to the ring and
            // may deliver nothing: a miss, then a wait on the ring.)
            turn(&*self, &mut missed).await;
        }
    }
}

impl Subscriber<[u8]> {
    /// The next entry (borrowed, as from `recv`: the bus's message size,
    /// zero-padded as published) or lag report, waiting as
    /// [`Subscriber::recv_async`](crate::Subscriber::recv_async) does. Cancel-safe.
    ///
    /// # Examples
    /// ```
    /// # let rt = tokio::runtime::Builder::new_current_thread().build()?;
    /// # rt.block_on(async {
    /// use shmbus::{BusOptions, Received};
    /// use shmbus::journal::{self, Entry, JoinOptions};
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-jrawasync-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-jrawasync-{}", std::process::id());
    /// let mut publisher = journal::Publisher::<[u8]>::create(
    ///     &name,
    ///     &BusOptions::new(64).msg_size(8),
    ///     &journal::Options::new(dir.join("raw.journal")),
    /// )?;
    /// publisher.publish(b"hello")?;
    /// let mut late = journal::Subscriber::<[u8]>::join(&name, &JoinOptions::default())?;
    /// let Received::Message(Entry { seq, msg }) = late.recv_async().await else { panic!() };
    /// assert_eq!((seq, msg), (0, &b"hello\0\0\0"[..]));
    /// # drop(late);
    /// # publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn recv_async(&mut self) -> Received<Entry<&[u8]>> {
        let mut missed = false;
        let seq = loop {
            // The message is lent again through `last_bytes()` so that the
            // borrow of this look ends here (a loop may look again).
            match self.recv(Wait::Never) {
                Some(Received::Message(entry)) => break entry.seq,
                Some(Received::Lagged { skipped }) => return Received::Lagged { skipped },
                None => {}
            }
            turn(&*self, &mut missed).await;
        };
        Received::Message(Entry {
            seq,
            msg: self.last_bytes(),
        })
    }
}

#[cfg(feature = "async-stream")]
/// A typed journal subscriber's entries (from the file, then the
/// ring) and lag reports as a `futures_core::Stream` (feature
/// `async-stream`): each item is what
/// [`Subscriber::recv_async`] would return; it never ends.
/// Cancel-safe as `recv_async`.
///
/// # Examples
/// ```
/// # let rt = tokio::runtime::Builder::new_current_thread().build()?;
/// # rt.block_on(async {
/// use std::pin::Pin;
/// use futures_core::Stream;
/// use shmbus::{BusOptions, Received};
/// use shmbus::journal::{self, Entry, JoinOptions};
/// # let dir = std::env::temp_dir().join(format!("shmbus-doc-jentries-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// # let name = format!("/dev/shm/shmbus-doc-jentries-{}", std::process::id());
/// let mut publisher = journal::Publisher::<u64>::create(
///     &name,
///     &BusOptions::new(64),
///     &journal::Options::new(dir.join("ticks.journal")),
/// )?;
/// publisher.publish(&1)?;
/// let mut late = journal::Subscriber::<u64>::join(&name, &JoinOptions::default())?;
/// let mut entries = late.entries();
/// let next = std::future::poll_fn(|cx| Pin::new(&mut entries).poll_next(cx)).await;
/// assert_eq!(next, Some(Received::Message(Entry { seq: 0, msg: 1 })));
/// # drop(entries); drop(late);
/// # publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub type Entries<'a, T> = Items<'a, Subscriber<T>>;

#[cfg(feature = "async-stream")]
impl<T: Message> Subscriber<T> {
    /// This subscriber's entries as a `futures_core::Stream` (feature
    /// `async-stream`): see [`Entries`].
    ///
    /// # Examples
    /// ```
    /// use shmbus::BusOptions;
    /// use shmbus::journal::{self, JoinOptions};
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-jentries-fn-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-jentries-fn-{}", std::process::id());
    /// let publisher = journal::Publisher::<u64>::create(
    ///     &name,
    ///     &BusOptions::new(64),
    ///     &journal::Options::new(dir.join("ticks.journal")),
    /// )?;
    /// let mut late = journal::Subscriber::<u64>::join(&name, &JoinOptions::default())?;
    /// let entries = late.entries();
    /// # drop(entries); drop(late);
    /// # publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn entries(&mut self) -> Entries<'_, T> {
        Items::new(self)
    }
}

#[cfg(feature = "async-stream")]
impl<T: Message> Next for Subscriber<T> {
    type Item = Received<Entry<T>>;

    fn next(&mut self) -> Option<Self::Item> {
        self.recv(Wait::Never)
    }
}
