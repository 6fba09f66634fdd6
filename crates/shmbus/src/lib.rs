//! shmbus: messages between processes on one Linux machine through shared
//! memory, with no system call and no kernel copy on the hot path.
//!
//! Five kinds, each a module holding its handles, its options and its
//! errors:
//!
//! - [`bus`]: the **broadcast bus** ([`Publisher`], [`Subscriber`]):
//!   fixed-size messages written once into seqlock-stamped slots, read by
//!   any number of subscriber processes, each at its own cursor. Typed
//!   (`Publisher<T>` for a [`Message`] `T`: plain old data with a schema
//!   name that C and Python state too) or raw bytes (`Publisher<[u8]>`),
//!   one implementation either way ([`bus::Payload`]).
//! - [`pool`]: the **pool bus** ([`pool::Publisher`],
//!   [`pool::Subscriber`]): zero-copy blocks of any size, made from
//!   [`pool::Options`]; the publisher writes a loaned block in place
//!   ([`pool::Loan`]) and each subscriber reads it in place
//!   ([`pool::Sample`]), with lag counted as on a bus. Typed (one `T` per
//!   block, the pool recording its type) or raw bytes, as the bus.
//! - [`stream`]: the **stream** ([`stream::Producer`],
//!   [`stream::Consumer`]): a lossless ring of records with
//!   backpressure, bytes of any length (`Producer<[u8]>`) or one
//!   [`Message`] each (`Producer<T>`).
//! - [`journal`]: the **journaled bus** ([`journal::Publisher`],
//!   [`journal::Subscriber`], [`journal::State`]): a bus whose
//!   every message is also appended to a file, so a subscriber that
//!   starts late gets everything, with no gap and no duplicate.
//!
//! - [`blackboard`]: the **blackboard**
//!   ([`blackboard::Writer`], [`blackboard::Reader`]): the latest value
//!   of each key in a fixed table of seqlocked entries, read by any
//!   process in O(1), never torn.
//!
//! Beside them: [`segment`] (what a segment is: [`SegmentKind`], one
//! name for each kind above, and the message type a header records),
//! [`error`] (the errors every kind shares; [`ErrorKind`] classifies
//! them all), [`mem`] (the memory a ring lives in: a file, the heap,
//! huge pages), [`stat`] (what `shmbus stat` and `shmbus top` read) and
//! [`record`] (recordings of what crossed a bus, read back).
//! The root re-exports what nearly every user names: the bus's handles,
//! the options, [`Wait`], the common errors.
//!
//! ```
//! use shmbus::{BusOptions, OpenOptions, Publisher, Received, Start, Subscriber, Wait};
//!
//! #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
//! #[repr(C)]
//! struct Tick { key: u64, val: u64 }
//!
//! // The type's name on the bus, the same from C and Python.
//! impl shmbus::Message for Tick { const NAME: &'static str = "md.Tick"; }
//!
//! # let name = format!("/dev/shm/shmbus-doc-lib-{}", std::process::id());
//! // Process A (a bare name such as "ticks" lives in /dev/shm)
//! let mut publisher = Publisher::<Tick>::create(&name, &BusOptions::new(4096))?;
//! // Process B, any number of them
//! let mut subscriber =
//!     Subscriber::<Tick>::open(&name, &OpenOptions::default().start(Start::Oldest))?;
//! publisher.publish(&Tick { key: 1, val: 42 });
//! match subscriber.recv(Wait::Forever) {
//!     Some(Received::Message(tick)) => assert_eq!(tick.val, 42),
//!     Some(Received::Lagged { skipped }) => eprintln!("missed {skipped}"),
//!     None => unreachable!("Wait::Forever"),
//! }
//! shmbus::remove(&name)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Lagging
//! A publisher never waits for a subscriber. A subscriber that falls a
//! whole ring behind is lapped: its next receive returns
//! [`Received::Lagged`] with the exact number of messages it lost and goes
//! on half a ring behind the newest (so it can catch up). Delivered plus all `skipped`
//! equals published, for every subscriber, always; a lag is a value, not
//! an error. (A stream never loses a record: its producer waits instead.)
//!
//! # Publisher death and restart
//! Every role holds an OFD lock on a byte of the file, which the kernel
//! drops when the process dies by any signal. A new process takes over
//! with [`Publisher::attach`] (or [`Producer::attach`](stream::Producer::attach)): it carries on the
//! sequence where the dead one stopped and bumps the bus's epoch, so
//! subscribers keep reading without a gap in numbering. A publisher killed
//! mid-write leaves one slot torn; readers never return it. `shmbus clean`
//! ([`stat::clean`]) removes buses nobody holds any more.
//!
//! # Late join
//! A journaled bus ([`journal::Publisher::create`](journal::Publisher::create)) appends every message to
//! a file before it goes on the ring. [`journal::Subscriber::join`](journal::Subscriber::join) reads the
//! journal and then the ring, and hands over between the two with a flush
//! handshake, so it gets every sequence exactly once; [`State`](journal::State) folds
//! keyed messages into last-value-per-key.
//!
//! # Many publishers
//! A bus made by [`ManyPublisher::create`](bus::ManyPublisher::create) takes any number of publisher
//! processes in one total order. A publisher killed between claiming a
//! slot and committing it costs each subscriber one reported skipped
//! message after the bus's unblock timeout, never a stall. The options
//! say which bus they make in their type ([`BusOptions::many`] gives
//! `BusOptions<`[`Many`](bus::Many)`>`), so a timeout given to a
//! single-publisher bus does not compile.
//! [`SubscriberGroup`](bus::SubscriberGroup) reads each slot once for N logical consumers.
//!
//! # Trust and permissions
//! A bus is a file (mode 0600 unless [`BusOptions::mode`] says otherwise),
//! created with `O_EXCL|O_NOFOLLOW` and never through a symlink.
//! Subscribers of a single-publisher bus map its data read-only. Anything
//! a file holds is untrusted: a process with write access can make readers
//! see wrong messages, but never hang them, crash them or make them
//! report a lag that is not there; every such finding is a typed error
//! ([`OpenError`], [`PopError::CorruptCursors`](stream::PopError::CorruptCursors), ...). Write access to a
//! bus is trust in whoever has it.
//!
//! # Waiting
//! Every call that can wait takes a [`Wait`]: `Never`, `For(duration)` or
//! `Forever`. How it waits (spin, yield, futex sleep) is the
//! [`WaitStrategy`] of [`OpenOptions::wait_strategy`].
//!
//! The layers, the path of a message and where each invariant is written:
//! docs/ARCHITECTURE.md in the repository; the bytes of a segment:
//! docs/LAYOUT.md.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]
#![deny(missing_debug_implementations)]
// Under loom only the protocols are built; the file-system half is not.
#![cfg_attr(loom, allow(dead_code, unused_imports))]

// The waiter thread and its futex_waitv are system calls loom cannot model.
#[cfg(not(loom))]
pub mod aio;
pub mod blackboard;
pub mod bus;
pub mod error;
#[cfg(not(loom))]
pub mod journal;
#[cfg(all(test, loom))]
mod loom;
pub mod mem;
#[cfg(not(loom))]
mod member;
mod options;
pub mod pool;
#[cfg(not(loom))]
pub mod record;
pub mod reqrep;
#[cfg(not(loom))]
pub mod segment;
#[cfg(not(loom))]
pub mod select;
#[cfg(not(loom))]
pub mod stat;
pub mod stream;
mod sync;
mod sys;
#[cfg(all(test, not(loom)))]
mod tests_error_kinds;
mod wait;
#[doc(hidden)]
pub mod wire;

// The root holds what nearly every user names; each kind's module holds the
// rest of that kind.
pub use bus::BusOptions;
pub use bus::{Publisher, Received, Subscriber};
pub use error::ErrorKind;
pub use error::{AttachError, CreateError, OpenError};
pub use options::{OpenOptions, Start};
#[cfg(not(loom))]
pub use segment::{Kind, Message, Publishers, SegmentKind, TypeFingerprint, remove};
pub use wait::{Wait, WaitStrategy};
// Under loom `segment` is not built; the names come from where it has them.
#[cfg(loom)]
pub use wire::{Kind, Message, Publishers, TypeFingerprint};

/// What the `shmbus` tool, the benchmark and the test suites need beyond
/// the API: the wire format, heap streams, the journal's file format, test
/// hooks. Not a stable interface.
#[doc(hidden)]
pub mod internals {
    #[cfg(feature = "test-hooks")]
    pub use crate::bus::HookPoint;
    #[cfg(not(loom))]
    pub use crate::mem::Access;
    pub use crate::reqrep::{HeapService, on_heap as service_on_heap};
    pub use crate::stream::{HeapStream, PEER_CHECK, WRAP, on_heap as stream_on_heap};
    /// A hook `stat::clean` and `remove` call just before they unlink.
    #[cfg(all(feature = "test-hooks", not(loom)))]
    pub use crate::sys::dir::hook as unlink_hook;
    pub use crate::wire;
}
