//! What a handle gives a wait that is not its own (a
//! [`Select`](crate::select::Select), an async future): its doorbell word,
//! whether it has something now, and how long it may sleep at most. Each
//! kind implements [`Member`](sealed::Member) for its receiving handles in
//! its own folder, reading shared memory the way the handle's own wait
//! reads it (the same loads, the same orderings), so "ready" there is "its
//! own receive would not wait".

use std::time::Duration;

use crate::sync::AtomicU32;

/// A handle a [`Select`](crate::select::Select) (or an
/// [`aio`](crate::aio) future) can wait on: each kind's receiving handle,
/// typed or raw (a blackboard reader is ready once the table's version
/// passes what it has seen). Sealed: the select relies on each one's sleep
/// protocol.
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

pub(crate) use sealed::Member;
