//! [`SubscriberGroup`]: N logical consumers in one process that always
//! stand at the same sequence, so one slot read (one seqlock pass) serves
//! all N and advances N cursors: each consumer costs a store, not a read.

use std::marker::PhantomData;

use crate::wire::Message;

use super::Cursor;
use super::Received;
use super::ring::{Poll, Ring};
use crate::mem::{DefaultRegion, Region};
use crate::options::Start;
use crate::wait::{Wait, WaitStrategy};

/// `N` logical subscribers in one process that read each slot once: every
/// receive makes one seqlock read and advances all `N` cursors, and every
/// consumer sees exactly what `N` independent subscribers started at the
/// same place would see. Works on single- and many-publisher buses.
///
/// # Examples
/// ```
/// use shmbus::{Publisher, Received, Start, Wait, WaitStrategy};
///
/// let mut publisher = Publisher::<u64, _>::on_heap(8)?;
/// let mut group = publisher.subscribe_group::<3>(Start::Next, WaitStrategy::default());
/// publisher.publish(&7);
/// assert_eq!(group.recv(Wait::Never), Some(Received::Message(7)));
/// assert_eq!(group.positions(), &[1, 1, 1]);
/// # Ok::<(), shmbus::CreateError>(())
/// ```
pub struct SubscriberGroup<T: Message, const N: usize, R: Region = DefaultRegion> {
    pub(crate) ring: Ring<R>,
    /// The one position all members share, its wait strategy and registry
    /// line.
    cursor: Cursor,
    cursors: [u64; N],
    _type: PhantomData<fn() -> T>,
}

impl<T: Message, const N: usize, R: Region> std::fmt::Debug for SubscriberGroup<T, N, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubscriberGroup")
            .field("type", &T::NAME)
            .field("members", &N)
            .field("pos", &self.cursor.pos)
            .field("cursors", &self.cursors)
            .field("capacity", &self.ring.capacity())
            .finish_non_exhaustive()
    }
}

impl<T: Message, const N: usize, R: Region> SubscriberGroup<T, N, R> {
    pub(crate) fn from_parts(ring: Ring<R>, start: Start, wait: WaitStrategy) -> Self {
        let pos = ring.start_at(start);
        SubscriberGroup {
            ring,
            cursor: Cursor::new(pos, wait),
            cursors: [pos; N],
            _type: PhantomData,
        }
    }

    /// What every consumer of the group receives next, or `None` if the
    /// wait ran out with nothing new.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Publisher, Start, Wait, WaitStrategy};
    /// let publisher = Publisher::<u64, _>::on_heap(8)?;
    /// let mut group = publisher.subscribe_group::<2>(Start::Next, WaitStrategy::default());
    /// assert_eq!(group.recv(Wait::Never), None);
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    #[inline]
    pub fn recv(&mut self, wait: Wait) -> Option<Received<T>> {
        let mut msg = T::zeroed();
        let dst = bytemuck::bytes_of_mut(&mut msg);
        let poll = self.ring.recv(&mut self.cursor, dst, wait);
        let got = match poll {
            Poll::Message => Received::Message(msg),
            Poll::Lagged(skipped) | Poll::Lapped(skipped) => Received::Lagged { skipped },
            Poll::Empty => return None,
        };
        for c in &mut self.cursors {
            *c = self.cursor.pos;
        }
        Some(got)
    }

    /// `recv(Wait::Never)`.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Publisher, Start, WaitStrategy};
    /// let publisher = Publisher::<u64, _>::on_heap(8)?;
    /// let mut group = publisher.subscribe_group::<2>(Start::Next, WaitStrategy::default());
    /// assert_eq!(group.try_recv(), None);
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    #[inline]
    pub fn try_recv(&mut self) -> Option<Received<T>> {
        self.recv(Wait::Never)
    }

    /// The sequence each consumer reads next.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Publisher, Start, WaitStrategy};
    /// let publisher = Publisher::<u64, _>::on_heap(8)?;
    /// let group = publisher.subscribe_group::<2>(Start::Next, WaitStrategy::default());
    /// assert_eq!(group.positions(), &[0, 0]);
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn positions(&self) -> &[u64; N] {
        &self.cursors
    }

    /// Number of logical consumers.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Publisher, Start, WaitStrategy};
    /// let publisher = Publisher::<u64, _>::on_heap(8)?;
    /// assert_eq!(publisher.subscribe_group::<5>(Start::Next, WaitStrategy::default()).len(), 5);
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn len(&self) -> usize {
        N
    }

    /// Whether the group has no consumers.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Publisher, Start, WaitStrategy};
    /// let publisher = Publisher::<u64, _>::on_heap(8)?;
    /// assert!(publisher.subscribe_group::<0>(Start::Next, WaitStrategy::default()).is_empty());
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        N == 0
    }
}

#[cfg(not(loom))]
mod shm {
    use super::*;
    use crate::bus::Payload;
    use crate::error::OpenError;
    use crate::mem::ShmRegion;
    use crate::options::OpenOptions;
    use crate::segment::Role;

    impl<T: Message, const N: usize> SubscriberGroup<T, N, ShmRegion> {
        /// Opens the bus named `name` for a group of `N` consumers, starting
        /// where `opts` says.
        ///
        /// # Errors
        /// As [`crate::Subscriber::open`].
        ///
        /// # Examples
        /// ```
        /// use shmbus::{BusOptions, OpenOptions, Publisher, bus::SubscriberGroup};
        /// # let name = format!("/dev/shm/shmbus-doc-group-{}", std::process::id());
        /// let publisher = Publisher::<u64>::create(&name, &BusOptions::new(64))?;
        /// let group = SubscriberGroup::<u64, 4>::open(&name, &OpenOptions::default())?;
        /// # shmbus::remove(&name)?;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn open(name: &str, opts: &OpenOptions) -> Result<Self, OpenError> {
            let msg = <T as Payload>::expected(opts.message.as_ref());
            let ring = crate::bus::segment::open(name, Role::Subscriber, msg.as_ref(), opts)?;
            let mut group = Self::from_parts(ring, opts.start, opts.wait);
            if opts.register {
                group.cursor.activity =
                    crate::bus::segment::register(&group.ring, group.cursor.pos);
            }
            Ok(group)
        }
    }
}
