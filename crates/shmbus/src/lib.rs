//! shmbus: messages between processes on one Linux machine through shared
//! memory, with no system call and no kernel copy on the hot path.
//!
//! - [`Publisher`] / [`Subscriber`]: a broadcast bus of fixed-size
//!   plain-old-data messages in seqlock-stamped slots. A slow subscriber is
//!   lapped, never waited for, and told exactly how many messages it missed
//!   ([`Received::Lagged`]).
//!
//! ```no_run
//! use shmbus::{CreateOptions, OpenOptions, Publisher, Received, Start, Subscriber};
//!
//! #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
//! #[repr(C)]
//! struct Tick { key: u64, val: u64 }
//!
//! let mut publisher = Publisher::<Tick>::create("ticks", &CreateOptions::new(4096))?;
//! let mut subscriber = Subscriber::<Tick>::open("ticks", &OpenOptions::default().start(Start::Oldest))?;
//! publisher.publish(&Tick { key: 1, val: 42 });
//! match subscriber.recv() {
//!     Received::Message(tick) => assert_eq!(tick.val, 42),
//!     Received::Lagged { skipped } => eprintln!("missed {skipped}"),
//! }
//! shmbus::remove("ticks")?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The architecture, in brief: a bus is one file (on tmpfs, /dev/shm, unless
//! named by another path), mapped by every process that uses it. A header
//! page written once by its creator says what the bus is; a control page
//! holds cursors, futex words and pids; the data pages hold stamped slots
//! ([`broadcast`], [`mpmc`]) or a byte ring ([`stream`]). Processes
//! coordinate only through that mapping (atomics, bytes handed over by
//! Release/Acquire pairs, shared futexes to sleep; see [`region`]) and
//! learn who is alive from OFD locks on bytes of the file; no message goes
//! through the kernel. A journaled bus also appends every
//! message to a file ([`journal`]), so that a late subscriber can start
//! from the beginning. docs/LAYOUT.md gives the bytes of a segment; modules
//! that share memory open with their invariants.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]

pub mod broadcast;
#[cfg(not(loom))]
mod dir;
pub mod error;
#[cfg(not(loom))]
pub mod journal;
pub mod layout;
#[cfg(not(loom))]
mod lock;
#[cfg(all(test, loom))]
mod loom_mpmc;
#[cfg(all(test, loom))]
mod loom_stream;
#[cfg(all(test, loom))]
mod loom_tests;
pub mod mpmc;
pub mod region;
#[cfg(not(loom))]
pub(crate) mod segment;
#[cfg(not(loom))]
pub mod stat;
pub mod stream;
mod sync;
pub mod wait;

pub use broadcast::{
    PublishError, Publisher, RawPublisher, RawSubscriber, Received, Start, Subscriber,
};
pub use error::{AttachError, CreateError, HugePageError, NameError, OpenError, TypeFingerprint};
#[cfg(not(loom))]
pub use journal::{
    Entry, JoinOptions, JournalOptions, JournalPublisher, JournalSubscriber, Keyed, KeyedState,
    State,
};
pub use layout::Kind;
pub use mpmc::{
    Abandoned, MpPublishError, MpPublisher, Publishers, RawMpPublisher, SubscriberGroup,
};
#[cfg(not(loom))]
pub use region::ShmRegion;
pub use region::{HeapRegion, HugePages, Region};
#[cfg(not(loom))]
pub use segment::{remove, CreateOptions, OpenOptions};
pub use wait::WaitStrategy;

/// Test only: a hook `stat::clean` and [`remove`] call just before they
/// unlink a file.
#[cfg(all(feature = "test-hooks", not(loom)))]
#[doc(hidden)]
pub use dir::hook as unlink_hook;

/// The region a bus lives in unless said otherwise: /dev/shm (the heap
/// under loom, which cannot model a mapping).
#[cfg(not(loom))]
pub type DefaultRegion = ShmRegion;
#[cfg(loom)]
pub type DefaultRegion = HeapRegion;
