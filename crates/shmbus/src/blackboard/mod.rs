//! The **blackboard**: the latest value of each key, shared by every
//! process, read in O(1). A fixed table of keyed entries, made with a
//! capacity of keys; one [`Writer`] puts and removes keys, any number of
//! [`Reader`]s get a key's latest value and its version, view every key,
//! ask what changed since a version, or wait for a change. Keys and
//! values are [`Message`](crate::Message) types (schema names recorded as
//! a bus records its message type) or raw bytes of sizes fixed at
//! creation ([`Field`]); every handle also takes bytes
//! ([`Writer::put_bytes`], [`Reader::get_bytes`]), whatever its types.
//!
//! ```
//! use shmbus::{OpenOptions, blackboard::{self, Reader, Writer}};
//!
//! #[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
//! #[repr(C)]
//! struct Quote { bid: f64, ask: f64 }
//! impl shmbus::Message for Quote { const NAME: &'static str = "md.Quote"; }
//!
//! # let name = format!("/dev/shm/shmbus-doc-blackboard-{}", std::process::id());
//! // Process A: 500 instruments.
//! let mut writer = Writer::<u32, Quote>::create(&name, &blackboard::Options::new(500))?;
//! writer.put(&7, &Quote { bid: 101.5, ask: 101.75 })?;
//! // Any process, any time: the latest quote of instrument 7.
//! let mut reader = Reader::<u32, Quote>::open(&name, &OpenOptions::default())?;
//! let quote = reader.get(&7)?.expect("instrument 7 is quoted");
//! assert_eq!(quote.value.ask, 101.75);
//! # shmbus::remove(&name)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Files: `entry.rs` (one entry's seqlock), `table.rs` (the hash, the
//! probe, a reader's bounded read, the writer's stores), `writer.rs`,
//! `many_writer.rs` (a table made for many writers: claims, takeover),
//! `reader.rs`, `entry_reader.rs` and `entry_writer.rs` (handles on one
//! key, resolved once), `field.rs` (what keys and values are),
//! `error.rs`.
//!
//! A loop that reads or writes the same keys over and over holds an
//! entry handle per key ([`Reader::entry`], [`Writer::entry`],
//! [`ManyWriter::entry`]): a get or put through one is the entry's
//! seqlock and a copy of the value, with no hash and no probe while the
//! key stays where it was found. `get(&key)` and `put(&key, v)` look the
//! key up every time, for one-off access.
//! Bytes: docs/LAYOUT.md §21.
//!
//! # Invariants
//! - Only the writer stores to the table (its entries, `VERSION`,
//!   `KEYS`); readers store only the doorbell's sleeper flag. A table
//!   made for many writers (header flag `MULTI_WRITER`, [`ManyWriter`])
//!   has any number, each claiming an entry by CAS before it stores
//!   there (`many_writer.rs` gives that protocol's invariants).
//! - Each entry is a seqlock with its stamp in the entry: `2v - 1` while
//!   version `v` is written, `2v` once written. The writer stores the odd
//!   stamp, a Release fence, the words, then the even stamp (Release); a
//!   reader loads the stamp (Acquire), loads the words it needs (a view
//!   copies the entry with the bus's racing copy; `get` compares the tag
//!   and key in place and copies only the value: every byte an atomic
//!   access either way), an Acquire fence, and keeps what it read only if
//!   the stamp is the same even value. So a value read is one the writer
//!   wrote whole, never a mix (loom: `loom/blackboard.rs`, both reads).
//! - Versions come from one counter per table: each put or removal takes
//!   the next. An entry's version is the table's at its last write, so
//!   `changed_since(v)` is every entry whose version is past `v`.
//! - A key stays in its entry from insert to removal (no entry moves): a
//!   key's probe starts at its hash and walks over other keys and removed
//!   entries to an empty one. An insert takes the first removed entry on
//!   the probe, or the empty one that ends it.
//! - A write stores an entry's key words only when it inserts a key there
//!   (an update and a removal leave them, and so does a many-writer
//!   takeover unless it writes the same key): while key `k` is live in an
//!   entry, until its removal commits, the entry's key words are `k`'s.
//! - A look-up (`get`, `wait_key`) passes an entry mid-write that cannot
//!   hold its key `k`: at an odd stamp it loads the tag and key words
//!   (Relaxed, each word whole, racing the write) and goes on, as past
//!   another key's entry, if the tag is still empty (no write ever
//!   committed there) or the key words are not `k`'s
//!   (`entry::may_hold`); else it retries the entry (below). Sound:
//!   - A reader ordered after `k`'s insert (it read `k` whole before, or
//!     its loads happen after the insert's commit) never passes `k`'s own
//!     entry: by coherence it loads `k`'s key words and a tag that is not
//!     empty, or a later insert's words, stored only after `k`'s removal
//!     from there committed. A reader not so ordered may load the words
//!     from before the insert: its "not found" is the table as its own
//!     loads saw it, before the insert.
//!   - So the write under way in a passed entry is another key's (an
//!     update, removal or insert of a key not `k`: the entry holds no `k`
//!     before or after it, and the probe goes on as past a whole copy; an
//!     insert into an empty entry, which would have ended the probe, only
//!     makes it look further, where `k` is not unless put there since, a
//!     value then current), or `k`'s own insert, not committed. A writer
//!     (one per key, with many) inserts `k` only where its probe did not
//!     find it, so until that commit `k` is in no entry: "not found" is
//!     the table's answer before that write, and the read is ordered
//!     before it, as one that had loaded the entry's previous even stamp
//!     would be. An uncommitted insert of `k` whose key words are all
//!     stored is not passed (it cannot be told from an update of `k`): it
//!     is retried, as before.
//!   - The read path pays nothing for it: `try_read_key` returns at an
//!     odd stamp as before; the test runs in the out-of-line retries.
//! - Bounded everywhere: a read tries an entry at most
//!   `SPINS + YIELDS` times, a probe visits at most the table's entries,
//!   whatever the file holds. A reader never waits for the writer: on an
//!   entry that may hold its key (a view: any entry) it gives up with
//!   [`GetError::Busy`] (the writer is live) or [`GetError::Stuck`] (a
//!   stamp stayed odd and no process holds the writer's lock: a writer
//!   died mid-write). The next writer removes such entries when it
//!   attaches ([`Writer::repaired`]).
//! - Untrusted bytes: a process with write access can make readers see
//!   wrong values, or [`GetError::Corrupt`] for a tag no writer stores,
//!   never hang or crash them.

#[cfg(not(loom))]
mod aio;
pub(crate) mod entry;
mod entry_reader;
mod entry_writer;
mod error;
mod field;
mod many_writer;
mod options;
mod reader;
pub(crate) mod table;
#[cfg(all(test, not(loom)))]
mod tests;
#[cfg(all(test, not(loom)))]
mod tests_entry;
mod writer;

pub use entry_reader::EntryReader;
pub use entry_writer::EntryWriter;
pub use error::{EntryError, GetError, PutError, RemoveError};
pub use field::Field;
pub use many_writer::ManyWriter;
pub use options::Options;
pub use reader::{Entries, Item, Reader, Versioned};
pub use writer::Writer;
