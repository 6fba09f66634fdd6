//! Zero-copy pool buses: messages of any size up to a block live in a
//! shared pool of blocks; the ring's slots carry 16-byte descriptors.
//! A publisher loans a block, writes it in place and publishes its
//! descriptor; a subscriber reads the block in place and releases it.
//!
//! Each handle is generic over its payload as the bus's are: a
//! [`Message`](crate::Message) type `T` (a loan is one `T`, a sample a
//! `&T`) or `[u8]` (a loan is up to a block of bytes). The header records
//! the block type; typed openers check it, raw ones take any.
//!
//! Files: `state.rs` (a block's state word), `blocks.rs` (the protocol:
//! loan, reclaim, take, release, census), `sweep.rs` (what the dead left),
//! `heap.rs` (a pool bus on the heap), `block_type.rs` (the block type a
//! pool records and a typed opener checks), then the handles:
//! [`Publisher`] with its [`Loan`] (`publisher.rs`, which also holds
//! the block logic both kinds of loan share) and [`OwnedLoan`]
//! (`owned.rs`: a loan that owns its publisher, for holders that cannot
//! keep a borrow), [`Subscriber`] with its [`Sample`].
//!
//! # Invariants (docs/LAYOUT.md §19)
//! - The ring is the bus's (`bus::ring`), unchanged: its messages are
//!   descriptors (u64 block, u64 length), so lag, late join, sleeping and
//!   the registry work as on any bus.
//! - Block `b`'s state word (data pages, after the slots) is written only
//!   by publishers: `FREE` (0), `loaned(pid)` (set by CAS from `FREE` or
//!   from an overwritten `published`, so one publisher owns a loan),
//!   `published(s)` (stored by the loan's owner before the descriptor of
//!   `s`), back to `FREE` for a loan dropped unpublished or a dead
//!   publisher's. Subscribers map these pages read-only.
//! - A block is reused only when (a) its descriptor has left the ring: the
//!   cursor is more than `capacity` past its sequence, and (b) no active
//!   registry entry's hold line names it, checked after the reclaimer's
//!   CAS and a SeqCst fence. A subscriber stores its hold, fences (SeqCst),
//!   then checks the state still says `published(s)`; otherwise it lets
//!   go and counts the message as skipped. Whichever fence is later sees
//!   the other's store (Dekker): a block is never reused under a holder.
//! - Which reusable block a loan takes is the loaner's choice, never a
//!   condition of reuse: it tries first its warm block, the one whose
//!   descriptor its publish `CUSHION` (4) publishes back overwrote (a
//!   single publisher keeps the block of each sequence of its last lap,
//!   `Publisher::lap`; one of many reads the old descriptor in the slot
//!   its claim holds, after `begin`; either keeps the last four in
//!   `Publisher::left`), or the block of a loan it gave back unpublished;
//!   then the others from its hint, skipping the warm one, so one pass
//!   still tries each block once. Every candidate passes the same test
//!   (free, or overwritten, unheld and not needed), so the warm block may
//!   be stale or bogus. A steady stream then cycles through `capacity + 5`
//!   blocks, not the pool.
//! - A lossless subscriber's unread blocks are never reused: the ring's
//!   gate (`bus::gate`) keeps its unread descriptors on the ring, so (a)
//!   fails for them on a single-publisher pool; on a many-publisher pool,
//!   whose cursor counts claims that can wait at the gate a ring ahead, a
//!   loaner also skips a block a gating subscriber still needs
//!   (`Blocks::loan`'s `needed`). A subscriber's position moves past a
//!   message only after its take (`Ring::recv_unnoted`, then
//!   `note_delivered`): the position is what lets the gate pass, so the
//!   hold is stored before it, and a reclaimer the gate let by sees it.
//!   No more blocks are needed for it: it keeps at most a ring of
//!   descriptors, as the ring does anyway.
//! - Hold line `i` is written by the subscriber holding registry lock
//!   `64 + i` (and its samples, on any thread), or by whoever holds that
//!   lock after it (clearing a dead subscriber's holds). Its bit in
//!   `POOL_ACTIVE` is set before its first hold and cleared after its last.
//! - A loan names its publisher by pid, and a sweep frees the loans of
//!   pids that are gone, so every publisher of a many-publisher pool bus
//!   is in the creator's pid namespace (header `POOL_PID_NS`, checked by
//!   `attach_many`); a single-publisher bus frees all loans on attach.
//! - Everything read from the file is checked: a descriptor naming a block
//!   past the pool or a length past the block (or, to a typed subscriber,
//!   any length but its type's) is a lost message; a state word with no
//!   meaning is reclaimable; every search is one pass.
//! - A typed handle's `T` fits a block (its size at most the block size,
//!   its alignment at most 64, which every block start has), checked when
//!   the pool is made or opened, so a typed loan or sample is always
//!   exactly one aligned `T`.
//!
//! # Algorithm
//! The take/reclaim pair is Dekker's, with SeqCst fences as in the bus's
//! sleep protocol (`wait`); reclaiming through per-reader hold records
//! rather than reference counts is the hazard-pointer scheme (Michael,
//! "Hazard pointers", IEEE TPDS 2004), with the ring's overwrite as the
//! retire step. The hold records live in the registry so that a dead
//! reader's are found by its lock, as a dead publisher's loans by its pid.

#[cfg(not(loom))]
#[cfg(not(loom))]
mod aio;
mod block_type;
pub(crate) mod blocks;
#[cfg(not(loom))]
mod error;
#[cfg(not(loom))]
mod heap;
mod options;
#[cfg(not(loom))]
mod owned;
#[cfg(not(loom))]
mod publisher;
pub(crate) mod state;
#[cfg(not(loom))]
mod subscriber;
#[cfg(not(loom))]
mod sweep;
#[cfg(all(test, not(loom)))]
mod tests;

#[cfg(all(feature = "async-stream", not(loom)))]
pub use aio::Samples;
pub use blocks::Census;
#[cfg(not(loom))]
pub use error::{LoanError, RecvError};
pub use options::Options;
#[cfg(not(loom))]
pub use owned::{IntoLoanError, OwnedLoan};
#[cfg(not(loom))]
pub use publisher::{Loan, Publisher};
#[cfg(not(loom))]
pub use subscriber::{Sample, Subscriber};
