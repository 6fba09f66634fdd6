//! The journal: late join without a gap and without a duplicate.
//!
//! A journaled bus is a broadcast bus whose publisher appends every message
//! to a flat file (`format`) before it publishes it on the ring, and
//! whose header names that file. A subscriber that starts late
//! ([`Subscriber::join`]) reads the file first and the ring after.
//!
//! [`Keyed`] shows the whole round: publish, compact, join, fold.
//!
//! # The handshake
//! 1. The joiner opens the bus as a subscriber. It notes no head: see the
//!    hand-over below.
//! 2. It raises a flush request: `FLUSH_REQUEST` += 1 (AcqRel), token `r`.
//! 3. The publisher's flusher thread sees `r`, `fdatasync`s the journal, and
//!    stores `FLUSH_DONE = r` (Release); the joiner waits for it (futex, with
//!    a timeout, and `PublisherGone` if the publisher dies meanwhile). With
//!    no live publisher at all, steps 2 and 3 are skipped: nothing is
//!    appending, so the file's valid prefix is the whole history; the joiner
//!    reads it and then waits on the ring for the next publisher.
//! 4. The joiner reads the journal from its start, then continues on the
//!    ring from the sequence after the last record it read.
//!
//! The usual form of this handshake has the joiner note the ring's head `H`
//! in step 1 and hand over from file to ring at `H`: replay records below
//! `H`, take the ring from `H`. We hand over at the *end of the file*
//! instead, which is at least `H` (every message is in the file before it
//! is on the ring, and the flush makes the file's pages visible). This is
//! exact too (each sequence comes from exactly one of the two), and it
//! removes two holes a hand-over at `H` leaves: the ring may lap the joiner
//! while it reads a large file (then the messages between `H` and the lap
//! would be gone), and a compaction may fold records at or above `H` into
//! the snapshot. The
//! same rule repairs a lag later: a journaled subscriber that the ring laps
//! re-reads the lost range from the file, so it loses nothing while the
//! file has it.
//!
//! # Compaction
//! For keyed messages ([`Keyed`]), the journal is rewritten as one record
//! per key (the snapshot, the last value of each key below a cut) followed
//! by every record from the cut on. A background thread folds the file,
//! writes `PATH.compacting`, copies the records appended meanwhile and
//! `fdatasync`s it; the publisher then copies the few records appended since
//! that copy, renames the new file over the old one, and marks the old one
//! SEALED (readers that still hold it open move on to the new file). The
//! hot path pauses for the last copy and the rename only.
//!
//! Before handing over, the compactor hard-links the file being replaced
//! as `PATH.prev`. A subscriber that the ring laps while a compaction
//! folds its position into the snapshot reads the range back from there
//! (it ends sealed and leads back to `PATH`), so a lag is repaired in full
//! unless it spans two compactions; then the snapshot's last values come
//! first and a `Lagged` for the rest. Tracking every reader's position
//! instead would make compaction wait for the slowest reader; one old
//! generation on disk costs at most the file's size once more. The compactor
//! chases the publisher for at most four passes, so a publisher faster than
//! the copy makes the last copy longer (a memcpy from its own mapping),
//! never the compaction endless.
//!
//! A publisher that closes (`close`, or drop) first finishes what
//! compaction it owes: it waits for a running one and switches it in, then
//! runs the one `compact_after` makes due. `compact_after` counts the
//! records from the file's base on, which the file itself holds, so the
//! count carries over from one publisher to the next; with both, a journal
//! fed by any number of short-lived publishers stays at one record per key
//! plus fewer than `compact_after` records. A publisher that is killed
//! leaves at worst a `PATH.compacting`, which the next one removes.
//!
//! # Cost of a journaled publish
//! An append is a few stores into the file's page cache through the shared
//! mapping, and no system call: the grower thread grows the file ahead of
//! the writer (`fallocate`, zeros written, mapped, write faults taken), a
//! whole chunk ahead, and the writer waits for the kernel only when the
//! grower falls that far behind.
//!
//! The publishing thread does more than a plain publisher (the record's
//! stores, into a fresh cache line every other record, its check word and
//! the bookkeeping), and the mean depends on growth keeping up: a
//! publisher at full speed can outrun the grower, which waits for the
//! kernel to supply new page-cache pages. With the run's file
//! preallocated (`journal::Options::preallocate_bytes`, paid at start) that
//! wait moves to the start. Sustained journaling is in any case bounded
//! by page-cache allocation and, in the end, by the disk. Measured:
//! docs/GUIDE.md, "The journal's cost".
//!
//! # Invariants
//! - Journal record `seq` is written (check word last) before ring slot
//!   `seq`; a publisher that re-attaches re-publishes a record that made it
//!   into the file but not onto the ring, so file and ring never disagree.
//! - Control page: `FLUSH_REQUEST` (u32) is incremented by joiners only;
//!   `FLUSH_DONE` and `FLUSH_FAILED` (u32) are stored by the publisher's
//!   flusher only. Counters wrap; they are compared by signed distance.
//! - The journal's path is read from a bus header: untrusted. An existing
//!   journal file (`PATH`, `PATH.prev`) is opened only as a regular file,
//!   without following a symlink and without blocking
//!   ([`OpenError::NotRegular`] otherwise); every wait of a joiner
//!   is bounded by its [`JoinOptions`] (`init_timeout`, `flush_timeout`).
//! - Every journal file the library creates (`PATH`, `PATH.compacting`,
//!   which becomes `PATH`) has exactly the bus's mode, whatever the umask
//!   (`fchmod` after the create); `PATH.prev` is a hard link, so it has the
//!   mode of the file it was. `create` over an existing journal gives it the
//!   bus's mode too.

mod aio;
mod board;
mod compaction;
mod error;
mod flusher;
#[doc(hidden)] // for the tool and the tests: no stable interface
pub mod format;
mod grower;
mod keyed;
mod options;
mod publisher;
mod reader;
mod shared;
mod stat;
mod state;
mod subscriber;
mod writer;

#[cfg(feature = "async-stream")]
pub use aio::Entries;
#[doc(hidden)] // for the tool and the tests: no stable interface
pub use board::BoardFeed;
pub use compaction::side_files;
pub use error::{
    AppendError, AttachError, CloseError, CreateError, FeedError, JoinError, OpenError, SeekError,
    SnapshotError,
};
#[doc(hidden)] // for the tool and the tests: no stable interface
pub use keyed::raw_key;
pub use keyed::{Keyed, KeyedPayload};
pub use options::{JoinOptions, Options};
pub use publisher::Publisher;
#[doc(hidden)] // for the tool and the tests: no stable interface
pub use stat::{Stat, stat};
pub use state::{KeyedState, State};
pub use subscriber::{Entry, Subscriber};
