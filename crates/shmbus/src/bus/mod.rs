//! The broadcast bus: one publisher (or many, see `claim.rs`), any number of
//! subscribers, stamped slots.
//!
//! Files: `stamp.rs` (the stamp codec), `copy.rs` (the racing payload
//! copy), `ring.rs` (the slot protocol over a
//! region: write, read, lap, sleep), `claim.rs` (its many-publisher steps),
//! `payload.rs` (typed or raw messages), then the handles users hold:
//! [`Publisher`], [`ManyPublisher`], [`Subscriber`], [`SubscriberGroup`].
//! `options.rs` holds [`BusOptions`], with [`One`] and [`Many`], which say
//! in `BusOptions<P>`'s type which of the two publishers a bus is made for;
//! `error.rs` the publish and skip errors.
//!
//! # Invariants
//! - Slot `i` (of `capacity`, a power of two) lives at
//!   `data_offset + i * slot_size` and carries sequence numbers `s` with
//!   `s & (capacity - 1) == i`. Its first 8 bytes are the stamp, then the
//!   payload, padded with zeros to a multiple of 8 bytes.
//! - Stamp encoding, all arithmetic wrapping mod 2^64: `2s + 1` while sequence
//!   `s` is being written, `2s + 2` once it is complete. A new bus whose first
//!   sequence is `f` starts every stamp at `2f`, "complete up to f - 1", so
//!   the encoding needs no special empty value and crosses u64::MAX like any
//!   other number. Readers compare stamps by their signed wrapping distance.
//!   `abandoned(s) = done(s) ^ 2^63` says "`s` is lost": a many-publisher
//!   bus's skipped claim (`claim.rs`), or a sequence a single publisher gave
//!   up with `Publisher::skip` (a bridge relaying another bus's losses).
//!   Readers report it as one skipped message, and the stamp carries no
//!   payload.
//! - Only the publisher (the holder of the publisher lock) writes stamps,
//!   payloads and the cursor. The cursor is the next sequence to be written;
//!   it is stored after the stamp, so `cursor > s` implies slot `s` was
//!   complete (and perhaps overwritten since).
//! - Subscribers never write the data pages (they map them read-only), keep
//!   their cursor in their own memory, and touch one slot line per message.
//!
//! # Algorithm
//! A seqlock per slot, after Boehm, "Can seqlocks get along with programming
//! language memory models?" (MSPC 2012), with the stamp in the slot as in
//! photon-ring and Disruptor-style broadcast rings. The payload is copied
//! by `copy.rs`: 64-bit Relaxed atomics ("atomic stripes") under Miri, loom
//! and off x86_64, an SSE2 `asm!` copy whose effect is Relaxed per-byte
//! atomic accesses on x86_64, so the racing copy a seqlock makes is defined
//! behaviour either way; a reader that raced a writer throws its copy away
//! and never returns it.
//!
//! A message whose slot spans several cache lines (64 bytes and up, with
//! the stamp) would cost one cross-core transfer per line, one after the
//! other: the reader learns from the stamp's line that the others are
//! ready. Two hints keep that to about one (`ring.rs`, `sync::prefetch*`):
//! a reader waiting on a stamp prefetches the slot's next lines (at most
//! four), and a publisher, having published, prefetches the next slot's
//! payload lines for writing (never its stamp's line, which the waiting
//! readers poll). Hints are not accesses: they change no ordering argument
//! above, and are no-ops under Miri and loom.
//!
//! # Lagging
//! A reader whose slot was overwritten (a confirmed lap, below) re-syncs
//! half a ring behind the head: `to = head - ceil(capacity / 2)`, never
//! before the oldest sequence the lapping stamp left in the ring, and
//! reports `Lagged { skipped: to - pos }`. Not at the oldest slot
//! (`head - capacity`): that is the next slot the publisher overwrites, so
//! a reader there at full speed is lapped again at once, and loses another
//! lap per lap. Half a ring gives it a half ring of slack to catch up and
//! still delivers half a ring of history. Counting stays exact: delivered
//! plus all `skipped` equal the messages published since the reader
//! started. One- and two-slot buses re-sync to the newest message.
//!
//! # Untrusted stamps
//! Any process that can open the file can store anything into a stamp or
//! the cursor. A reader keeps two promises whatever it finds: every step
//! makes progress or waits for the publisher (a waiting receive ends at its
//! deadline), and a lag it reports is at least 1 and at most what the
//! cursor says was published past its position. So:
//! - a lap is believed only if the stamp names a sequence of *this* slot,
//!   ahead of the reader and not past the cursor, and the cursor is
//!   confirmed by its slot (`slots_confirm`: a real cursor `h` finds `h - 1`,
//!   or one lap later, in slot `h - 1`);
//! - any other stamp the reader cannot read is a lost message (`Lagged(1)`)
//!   once a confirmed cursor is past it, and "not yet" before that; on a
//!   single-publisher bus a run of `abandoned(s)` stamps (`Publisher::skip`)
//!   is one lost run, `Lagged(run)`, the run counted only below that
//!   cursor and within one ring;
//! - a waiting reader checks every 64th empty poll whether a confirmed
//!   cursor is past its position while the stamp still says "not yet", and
//!   skips that one message if so (`check_stuck`).
//!
//! A peer can still forge a whole valid message (stamp, payload, cursor):
//! write access to the file is trust in the peer; these rules only keep
//! corruption from hanging readers or inventing lag.
//!
//! Many-publisher buses (header flag `MULTI_PUBLISHER`) share this slot
//! protocol; their claim, commit and unblock rules are in `claim.rs`,
//! whose invariants extend the ones above. The single-publisher paths here
//! test the mode only on their slow paths (a stamp other than the one
//! expected), so they cost what they did before.
//!
//! A publisher copies a message into its slot; it never lends `&mut` into the
//! slot, which other processes may be reading at the same moment.

pub(crate) mod activity;
// The waiter thread and its futex_waitv are system calls loom cannot model.
#[cfg(not(loom))]
pub(crate) mod aio;
pub(crate) mod claim;
pub(crate) mod copy;
mod error;
pub(crate) mod gate;
mod group;
mod heap;
mod many_publisher;
pub(crate) mod options;
mod payload;
mod publisher;
pub(crate) mod ring;
#[cfg(not(loom))]
pub(crate) mod segment;
pub(crate) mod stamp;
mod subscriber;
#[cfg(all(test, not(loom)))]
mod tests;

pub use crate::error::LosslessRefused;
pub use crate::options::{MAX_UNBLOCK, MIN_TIMEOUT};
#[cfg(all(feature = "async-stream", not(loom)))]
pub use aio::Messages;
pub use error::{Abandoned, ManyPublishError, PublishError, SkipError, TryPublishError};
pub use group::SubscriberGroup;
#[cfg(feature = "test-hooks")]
#[doc(hidden)] // reached through `internals`
pub use many_publisher::HookPoint;
pub use many_publisher::ManyPublisher;
pub use options::{
    BusOptions, DEFAULT_EVICT, DEFAULT_MAX_LOSSLESS, MAX_EVICT, Many, One, PublisherCount,
};
pub use payload::Payload;
pub use publisher::Publisher;
/// Every reader's state in one value (`ring.rs`).
pub(crate) use ring::Cursor;
pub use subscriber::Subscriber;

/// What a receive found.
///
/// # Examples
/// ```
/// use shmbus::{Publisher, Received, Start, Wait, WaitStrategy};
///
/// let mut publisher = Publisher::<u64, _>::on_heap(4)?;
/// let mut subscriber = publisher.subscribe(Start::Oldest, WaitStrategy::default());
/// for i in 0..6 {
///     publisher.publish(&i);
/// }
/// // Six published into four slots: the first two are gone; a lapped
/// // subscriber re-syncs half a ring behind the newest, and says so.
/// assert_eq!(subscriber.recv(Wait::Never), Some(Received::Lagged { skipped: 4 }));
/// assert_eq!(subscriber.recv(Wait::Never), Some(Received::Message(4)));
/// # Ok::<(), shmbus::CreateError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Received<T> {
    /// The next message.
    Message(T),
    /// The publisher overwrote messages before this subscriber read them;
    /// it skipped `skipped` messages and re-synced half a ring behind the
    /// newest (the bus module's "Lagging" rule), so at full speed it is
    /// not lapped again at once.
    /// Over a subscriber's life, messages delivered plus all `skipped` equal
    /// the messages published since it started, exactly.
    Lagged {
        /// How many messages were lost.
        skipped: u64,
    },
}
