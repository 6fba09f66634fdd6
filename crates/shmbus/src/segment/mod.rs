//! What a segment is, and where it is made and opened.
//!
//! A segment is one file: header page, control page, data pages. Its kind
//! ([`SegmentKind`]) is decoded here, once, from the header; the names a
//! header records ([`Kind`], [`Publishers`], a message type's
//! [`TypeFingerprint`] from its [`Message`] name) are here too.
//!
//! The rest of this layer is crate-private: it creates and opens a segment,
//! between a name and a validated, mapped, locked region; it knows no ring
//! (the bus and the stream build theirs on it).
//!
//! Create: `O_CREAT|O_EXCL|O_NOFOLLOW`, exact mode, publisher lock, write
//! `MAGIC_BUILDING`, reserve the pages, header, control fields, slot stamps,
//! then the magic (Release), then make the header page read-only, then (with
//! transparent huge pages) collapse the data pages. Any failure after the
//! file exists removes it again.
//!
//! Open: no symlinks; `fstat`; wait (up to `init_timeout`) while the file is
//! empty or still says `MAGIC_BUILDING`; map exactly the `fstat` length,
//! aligned to the header's page size (huge pages, see `mem::huge`);
//! validate the header against it; set page protections for the role:
//! publishers cannot write the header, subscribers can write only the
//! control page.

mod by_dir;
mod create;
mod kind;
mod open;
mod validate;

pub use crate::wire::{Kind, Message, Publishers, TypeFingerprint, fnv1a};
pub use by_dir::remove;
pub use kind::SegmentKind;

/// The segment layout version this build reads and writes (docs/LAYOUT.md
/// is its description); a segment of another version is refused with
/// [`OpenError::VersionMismatch`](crate::OpenError::VersionMismatch).
///
/// # Examples
/// ```
/// println!("segment layout {}", shmbus::segment::VERSION);
/// assert!(shmbus::segment::VERSION >= 1);
/// ```
pub const VERSION: u32 = crate::wire::VERSION;
pub(crate) use by_dir::{BusAt, open_bus_at};
pub(crate) use create::{create_region, layout_page};
pub(crate) use open::{open_checked, open_region, take_role};

/// What an opener is going to do with the segment.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Publisher,
    Subscriber,
    /// `stat`, `ls`: read-only, takes no lock.
    Inspect,
}
