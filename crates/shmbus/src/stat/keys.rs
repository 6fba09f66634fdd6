//! A blackboard's entries as `top` samples them: each written entry's
//! version, from `stat`'s one pass over the stamps
//! ([`BlackboardStat::versions`](super::BlackboardStat::versions)), and
//! the keys of a few chosen entries ([`blackboard_keys`]), each read
//! through the entry's seqlock (`blackboard::table`), never waited on, and
//! how often a few entries change over a short window
//! ([`blackboard_watch`]): versions alone say when an entry was last
//! written, not how often.

use std::time::{Duration, Instant};

use crate::blackboard::table::{NotRead, Table};
use crate::error::OpenError;
use crate::segment::{Role, open_region};
use crate::sync::Ordering;
use crate::sys::resolve;
use crate::wire::Kind;
use crate::wire::blackboard::tag;

/// One written entry of a blackboard's table, as `stat`'s pass over the
/// stamps read it (LAYOUT §21): the version its stamp names. The writer
/// gives each write the table's next version, so an entry's version only
/// grows (one that went back was not written by a writer) and is never
/// past the table's but for the one write in flight. A sampler that keeps
/// two passes tells which entries were written between them; not how
/// often (the version is the table's at the entry's last write): for that,
/// [`blackboard_watch`].
///
/// # Examples
/// ```
/// use shmbus::blackboard::{self, Writer};
/// use shmbus::stat::EntryVersion;
/// # let name = format!("/dev/shm/shmbus-doc-entryversion-{}", std::process::id());
/// let mut writer = Writer::<u64, u64>::create(&name, &blackboard::Options::new(100))?;
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
///
/// # Examples
/// ```
/// use shmbus::stat::KeyRead;
/// let read = KeyRead::Stuck { version: 17 };
/// assert!(matches!(read, KeyRead::Stuck { version: 17 }));
/// assert_ne!(read, KeyRead::Busy);
/// ```
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
/// use shmbus::blackboard::{self, Writer};
/// use shmbus::stat::KeyRead;
/// # let name = format!("/dev/shm/shmbus-doc-bbkeys-{}", std::process::id());
/// let mut writer = Writer::<u32, u64>::create(&name, &blackboard::Options::new(100))?;
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

/// The most entries one [`blackboard_watch`] polls; those after are not
/// watched.
///
/// # Examples
/// ```
/// assert_eq!(shmbus::stat::MAX_WATCHED, 1024);
/// ```
pub const MAX_WATCHED: usize = 1024;

/// The most passes one [`blackboard_watch`] makes over its entries,
/// however long its window.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use shmbus::blackboard::{self, Writer};
/// # let name = format!("/dev/shm/shmbus-doc-maxpasses-{}", std::process::id());
/// let _writer = Writer::<u32, u64>::create(&name, &blackboard::Options::new(4))?;
/// // A window of an hour, a look every nanosecond: still bounded.
/// let w = shmbus::stat::blackboard_watch(&name, &[0], Duration::from_secs(3600), Duration::from_nanos(1))?;
/// assert_eq!(w.passes, shmbus::stat::MAX_PASSES);
/// # shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const MAX_PASSES: u64 = 10_000;

/// What [`blackboard_watch`] saw of the entries it polled.
///
/// # Examples
/// ```
/// use shmbus::stat::Watch;
/// let w = Watch { changes: vec![(3, 10)], passes: 20, elapsed: std::time::Duration::from_millis(5) };
/// assert_eq!(w.rate(3), Some(2000.0));
/// assert_eq!(w.rate(4), None);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Watch {
    /// Each entry watched and the changes of version seen in it: writes,
    /// but writes closer than one pass count once, so a lower bound.
    pub changes: Vec<(u64, u64)>,
    /// Passes made over the entries.
    pub passes: u64,
    /// From the first pass to the last.
    pub elapsed: Duration,
}

impl Watch {
    /// Changes per second seen in `entry` (`None` if it was not watched, or
    /// no time passed).
    ///
    /// # Examples
    /// ```
    /// use shmbus::stat::Watch;
    /// let w = Watch { changes: vec![(1, 0)], passes: 1, elapsed: std::time::Duration::ZERO };
    /// assert_eq!(w.rate(1), None);
    /// ```
    pub fn rate(&self, entry: u64) -> Option<f64> {
        let secs = self.elapsed.as_secs_f64();
        let (_, n) = self.changes.iter().find(|c| c.0 == entry)?;
        (secs > 0.0).then(|| *n as f64 / secs)
    }
}

/// Polls the stamps of the blackboard named `name` in `entries` (at most
/// [`MAX_WATCHED`]) for `window`, a pass every `every` (sleeping between
/// passes, at most [`MAX_PASSES`]), and counts each entry's changes of
/// version: how a sampler tells a key written a thousand times a second
/// from one written once, which two versions far apart cannot (an entry's
/// version is the table's at its last write, not a count of its writes).
/// Stamps only, read-only, without a lock; an entry past the table's end
/// is left out, and a version that goes back is not counted.
///
/// # Errors
/// As [`blackboard_keys`].
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use shmbus::blackboard::{self, Writer};
/// # let name = format!("/dev/shm/shmbus-doc-bbwatch-{}", std::process::id());
/// let mut writer = Writer::<u32, u64>::create(&name, &blackboard::Options::new(100))?;
/// writer.put(&7, &70)?;
/// let at = shmbus::stat::stat(&name)?.blackboard.expect("a blackboard").versions[0].entry;
/// let watch = shmbus::stat::blackboard_watch(&name, &[at], Duration::from_millis(2), Duration::from_micros(100))?;
/// assert_eq!(watch.changes, [(at, 0)]); // nobody wrote while it watched
/// assert!(watch.passes >= 1);
/// # shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn blackboard_watch(
    name: &str,
    entries: &[u64],
    window: Duration,
    every: Duration,
) -> Result<Watch, OpenError> {
    let path = resolve(name)?;
    let (region, header) = open_region(&path, Role::Inspect, Duration::from_millis(100))?;
    header.validate_kind()?;
    if header.kind != Kind::Blackboard {
        return Err(OpenError::WrongKind {
            found: header.kind,
            expected: Kind::Blackboard,
        });
    }
    let geo = header
        .blackboard_geometry()
        .map_err(|e| OpenError::InvalidGeometry(e.to_string()))?;
    let table = Table::new(
        region,
        geo,
        header.control_offset as usize,
        header.data_offset as usize,
    );
    let watched: Vec<u64> = entries
        .iter()
        .copied()
        .filter(|&e| e < geo.entries)
        .take(MAX_WATCHED)
        .collect();
    // Relaxed: only the stamp's value is wanted, never the words it guards.
    let version =
        |e: u64| crate::blackboard::entry::version_of(table.stamp(e).load(Ordering::Relaxed));
    let mut last: Vec<u64> = watched.iter().map(|&e| version(e)).collect();
    let mut changes = vec![0u64; watched.len()];
    let start = Instant::now();
    let mut passes = 1;
    while passes < MAX_PASSES && start.elapsed() < window {
        std::thread::sleep(every);
        for (i, &e) in watched.iter().enumerate() {
            let v = version(e);
            if v > last[i] {
                changes[i] += 1;
            }
            last[i] = v;
        }
        passes += 1;
    }
    Ok(Watch {
        changes: watched.into_iter().zip(changes).collect(),
        passes,
        elapsed: start.elapsed(),
    })
}
