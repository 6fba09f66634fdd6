//! A blackboard's entries as `top` samples them: each written entry's
//! version, from `stat`'s one pass over the stamps
//! ([`BlackboardStat::versions`](super::BlackboardStat::versions)), and
//! the keys of a few chosen entries ([`blackboard_keys`]), each read
//! through the entry's seqlock (`blackboard::table`), never waited on.

use std::time::Duration;

use crate::blackboard::table::{NotRead, Table};
use crate::error::OpenError;
use crate::segment::{open_region, Role};
use crate::sys::resolve;
use crate::wire::blackboard::tag;
use crate::wire::Kind;

/// One written entry of a blackboard's table, as `stat`'s pass over the
/// stamps read it (LAYOUT §25): the version its stamp names. A sampler
/// that keeps two passes tells the entries written most between them by
/// the difference of their versions; the table's writer gives each write
/// the table's next version, so an entry's version only grows (one that
/// went back was not written by a writer).
///
/// # Examples
/// ```
/// use shmbus::blackboard::{BlackboardOptions, Writer};
/// use shmbus::stat::EntryVersion;
/// # let name = format!("/dev/shm/shmbus-doc-entryversion-{}", std::process::id());
/// let mut writer = Writer::<u64, u64>::create(&name, &BlackboardOptions::new(100))?;
/// writer.put(&1, &10)?;
/// writer.put(&2, &20)?;
/// writer.put(&1, &11)?;
/// let bb = shmbus::stat::stat(&name)?.blackboard.expect("a blackboard");
/// let mut versions: Vec<u64> = bb.versions.iter().map(|e: &EntryVersion| e.version).collect();
/// versions.sort();
/// assert_eq!(versions, [2, 3]); // key 2 at version 2, key 1 at version 3
/// assert!(bb.versions.iter().all(|e| !e.writing && e.entry < bb.entries));
/// # shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryVersion {
    /// Its index in the table (below `entries`).
    pub entry: u64,
    /// The version its stamp names: the one written, or the one being
    /// written when `writing`.
    pub version: u64,
    /// Its stamp was odd: a write was under way, or its writer died in it.
    pub writing: bool,
}

/// What [`blackboard_keys`] found in one entry.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyRead {
    /// A live key: its bytes as the writer stored them, read whole.
    Live {
        /// The key's bytes (the table's key size).
        key: Vec<u8>,
        /// The entry's version when read.
        version: u64,
    },
    /// The entry's key was removed (its bytes are no longer a key's).
    Removed {
        /// The version of the removal.
        version: u64,
    },
    /// Never written.
    Empty,
    /// A write kept the entry busy through every bounded retry.
    Busy,
    /// Its stamp stayed odd and no writer holds the table: a writer died
    /// mid-write (the next writer to attach repairs it).
    Stuck {
        /// The version it was writing.
        version: u64,
    },
    /// A tag no writer stores: the file is corrupt.
    Corrupt {
        /// The tag found.
        tag: u64,
    },
    /// No such entry: the index is not below the table's entries.
    NoSuchEntry,
}

/// One entry's index and what [`blackboard_keys`] read there.
///
/// # Examples
/// ```
/// use shmbus::stat::{EntryKey, KeyRead};
/// let one = EntryKey { entry: 3, read: KeyRead::Empty };
/// assert_eq!(format!("{one:?}"), "EntryKey { entry: 3, read: Empty }");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryKey {
    /// The entry asked for.
    pub entry: u64,
    /// What it holds.
    pub read: KeyRead,
}

/// Reads the keys of the blackboard named `name` in the given `entries`
/// (indexes, as [`EntryVersion::entry`] gives them): read-only, without a
/// lock, each entry copied through its seqlock with the bounded retries
/// of a reader's get, so a busy or stuck entry is reported, never waited
/// for. Only the tag and key are copied, never the value. The cost is one
/// bounded read per entry asked for: ask for the few you show.
///
/// # Errors
/// Those of [`stat`](super::stat) for a file that cannot be opened or is
/// no valid segment, and [`OpenError::WrongKind`] for a segment that is
/// not a blackboard.
///
/// # Examples
/// ```
/// use shmbus::blackboard::{BlackboardOptions, Writer};
/// use shmbus::stat::KeyRead;
/// # let name = format!("/dev/shm/shmbus-doc-bbkeys-{}", std::process::id());
/// let mut writer = Writer::<u32, u64>::create(&name, &BlackboardOptions::new(100))?;
/// writer.put(&7, &70)?;
/// let bb = shmbus::stat::stat(&name)?.blackboard.expect("a blackboard");
/// let at = bb.versions[0].entry;
/// let keys = shmbus::stat::blackboard_keys(&name, &[at, 1 << 40])?;
/// assert_eq!(keys[0].read, KeyRead::Live { key: 7u32.to_le_bytes().to_vec(), version: 1 });
/// assert_eq!(keys[1].read, KeyRead::NoSuchEntry);
/// # shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn blackboard_keys(name: &str, entries: &[u64]) -> Result<Vec<EntryKey>, OpenError> {
    let path = resolve(name)?;
    let (region, header) = open_region(&path, Role::Inspect, Duration::from_millis(100))?;
    header.validate_kind()?;
    if header.kind != Kind::Blackboard {
        return Err(OpenError::WrongKind {
            found: header.kind,
            expected: Kind::Blackboard,
        });
    }
    // `validate_kind` has checked the table fits in the file.
    let geo = header
        .blackboard_geometry()
        .map_err(|e| OpenError::InvalidGeometry(e.to_string()))?;
    let table = Table::new(
        region,
        geo,
        header.control_offset as usize,
        header.data_offset as usize,
    );
    let mut buf = vec![0u8; table.key_words() * 8];
    let (at, size) = (table.key_at(), geo.key_size as usize);
    Ok(entries
        .iter()
        .map(|&entry| EntryKey {
            entry,
            read: if entry >= geo.entries {
                KeyRead::NoSuchEntry
            } else {
                match table.read_key(entry, &mut buf) {
                    Ok(r) => match r.tag {
                        tag::LIVE => KeyRead::Live {
                            key: buf[at..at + size].to_vec(),
                            version: r.version,
                        },
                        tag::REMOVED => KeyRead::Removed { version: r.version },
                        _ => KeyRead::Empty,
                    },
                    Err(NotRead::Busy { .. }) => KeyRead::Busy,
                    Err(NotRead::Stuck { version, .. }) => KeyRead::Stuck { version },
                    Err(NotRead::BadTag { tag, .. }) => KeyRead::Corrupt { tag },
                }
            },
        })
        .collect())
}
