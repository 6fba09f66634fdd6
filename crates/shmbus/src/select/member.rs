//! What a handle gives a select: its doorbell word, whether it has
//! something now, and how long it may sleep at most. Each answer is read
//! from shared memory the way the handle's own wait reads it (the same
//! loads, the same orderings), so "ready" here is "its own receive would
//! not wait".

use std::time::Duration;

use crate::blackboard::{Field, Reader};
use crate::bus::{Payload, Subscriber};
use crate::journal::JournalSubscriber;
use crate::mem::Region;
use crate::pool::PoolSubscriber;
use crate::stream::Consumer;
use crate::sync::AtomicU32;

/// A handle a [`Select`](super::Select) can wait on: a bus
/// [`Subscriber`], a [`PoolSubscriber`], a stream [`Consumer`], a
/// [`JournalSubscriber`], typed or raw, or a blackboard [`Reader`]
/// (ready once the table's version passes [`Reader::seen`]). Sealed: the select relies on each
/// one's sleep protocol.
///
/// # Examples
/// ```
/// use shmbus::select::Selectable;
/// use shmbus::{Publisher, Start, WaitStrategy};
///
/// let publisher = Publisher::<u64, _>::on_heap(8)?;
/// let subscriber = publisher.subscribe(Start::Next, WaitStrategy::default());
/// let members: [&dyn Selectable; 1] = [&subscriber];
/// # drop(members);
/// # Ok::<(), shmbus::CreateError>(())
/// ```
pub trait Selectable: sealed::Member {}

impl<M: sealed::Member> Selectable for M {}

pub(crate) mod sealed {
    use super::*;

    /// The select's view of one handle.
    pub trait Member {
        /// Its own receive would find something now (or an end to report).
        fn ready(&self) -> bool;
        /// The word its waker rings.
        fn bell(&self) -> &AtomicU32;
        /// The longest it may sleep without looking (a waker that dies
        /// rings nothing), if any.
        fn nap(&self) -> Option<Duration>;
    }
}

impl<T: ?Sized + Payload, R: Region> sealed::Member for Subscriber<T, R> {
    fn ready(&self) -> bool {
        self.ring.has_news(self.position())
    }
    fn bell(&self) -> &AtomicU32 {
        self.ring.doorbell()
    }
    fn nap(&self) -> Option<Duration> {
        self.ring.select_nap()
    }
}

impl<T: ?Sized + Payload, R: Region> sealed::Member for PoolSubscriber<T, R> {
    fn ready(&self) -> bool {
        self.ring().has_news(self.position())
    }
    fn bell(&self) -> &AtomicU32 {
        self.ring().doorbell()
    }
    fn nap(&self) -> Option<Duration> {
        self.ring().select_nap()
    }
}

impl<T: ?Sized + Payload> sealed::Member for JournalSubscriber<T> {
    fn ready(&self) -> bool {
        // Reading the file: never waits.
        !self.is_live() || self.ring().has_news(self.position())
    }
    fn bell(&self) -> &AtomicU32 {
        self.ring().doorbell()
    }
    fn nap(&self) -> Option<Duration> {
        self.ring().select_nap()
    }
}

impl<T: ?Sized + Payload, R: Region> sealed::Member for Consumer<T, R> {
    fn ready(&self) -> bool {
        self.has_news()
    }
    fn bell(&self) -> &AtomicU32 {
        self.data_bell()
    }
    fn nap(&self) -> Option<Duration> {
        Some(crate::stream::PEER_CHECK)
    }
}

impl<K: ?Sized + Field, V: ?Sized + Field, R: Region> sealed::Member for Reader<K, V, R> {
    fn ready(&self) -> bool {
        // The same Acquire load as `Reader::wait_changed`'s.
        self.version() > self.seen()
    }
    fn bell(&self) -> &AtomicU32 {
        Reader::bell(self)
    }
    fn nap(&self) -> Option<Duration> {
        // One writer, which rings after every write; a dead one writes
        // nothing more to wait for.
        None
    }
}
