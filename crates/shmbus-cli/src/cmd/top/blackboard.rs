//! A blackboard in `top`: its table (keys used of the capacity, updates
//! and their rate, entries mid-write) and its hottest keys, the entries
//! whose versions moved most since the previous sample (`tui/board.rs`
//! writes them).
//!
//! Each sample `shmbus::stat` loads every entry's stamp once (one cache
//! line per entry: a table of a million entries costs a million lines and
//! about 24 MB for the versions kept per sample); the versions are
//! differenced with the previous sample's in one merge, and only the
//! [`HOTTEST`] entries' keys are read, each through its seqlock.
//!
//! The table is in a file other processes write: an entry whose version
//! went back, or is past the table's version, is counted as corrupt and
//! left out of the hottest keys, never given a rate; a table version that
//! went back has no rate. An entry whose key differs from the one read
//! there at the previous sample was removed and reinserted: it is marked
//! so, without a rate (its writes were to two keys). A key not read at
//! the previous sample (the entry was not among the hottest) cannot be
//! compared: its rate counts every write to the entry.

use std::collections::HashMap;

use shmbus::stat::{BlackboardStat, EntryKey, EntryVersion, KeyRead};

/// How many hottest keys a sample names.
pub const HOTTEST: usize = 5;

/// Hex digits of a key's bytes shown before it is cut with an ellipsis.
const KEY_HEX_BYTES: usize = 8;

/// A blackboard's table, sampled.
#[derive(Clone, Debug)]
pub struct BlackboardRow {
    /// Keys in the table (its writer's count) and the most it holds.
    pub keys: u64,
    pub capacity: u64,
    /// Entries in the table.
    pub entries: u64,
    /// The table's version: puts and removals since creation.
    pub updates: u64,
    /// Updates per second since the previous sample (`None` for the first,
    /// or a version that went back).
    pub updates_per_sec: Option<f64>,
    /// Entries whose stamp was odd: being written, or stuck if no writer
    /// lives.
    pub mid_write: u64,
    /// `mid_write` entries with no writer alive: left by a writer that died.
    pub stuck: bool,
    /// The entries written most since the previous sample, most first.
    pub hottest: Vec<HotKey>,
    /// Why some figures cannot be believed (versions that went back, or
    /// past the table's), if any.
    pub corrupt: Option<String>,
}

impl BlackboardRow {
    /// Keys used as a fraction of the capacity.
    pub fn used(&self) -> f64 {
        self.keys as f64 / self.capacity.max(1) as f64
    }
}

/// One of the hottest entries.
#[derive(Clone, Debug, PartialEq)]
pub struct HotKey {
    /// Its index in the table.
    pub entry: u64,
    /// The key, readable ([`key_text`]), if one could be read.
    pub key: Option<String>,
    /// Writes to the entry since the previous sample (its version moved
    /// by at least this much; an entry first written since counts its
    /// version's move from 0 as 1).
    pub updates: u64,
    /// Those writes per second; `None` when `note` says the rate would
    /// mix keys.
    pub per_sec: Option<f64>,
    /// What else is true of it: "key changed" (removed and another key
    /// inserted there since the previous sample: no rate), "removed",
    /// "busy", "stuck", "corrupt tag N".
    pub note: Option<String>,
}

/// What a blackboard's sample keeps for the next one.
#[derive(Debug, Default)]
pub struct BoardPrev {
    updates: u64,
    versions: Vec<EntryVersion>,
    /// The keys read at this sample, by entry.
    keys: HashMap<u64, Vec<u8>>,
}

/// A blackboard's row, from its stat and the previous sample's `prev`
/// (`dt` seconds ago); `read_keys` reads the keys of the entries it is
/// given (`shmbus::stat::blackboard_keys`, or a test's table). Returns
/// what the next sample needs.
pub fn row(
    bb: BlackboardStat,
    writer_alive: bool,
    prev: Option<&BoardPrev>,
    dt: Option<f64>,
    read_keys: impl FnOnce(&[u64]) -> Vec<EntryKey>,
) -> (BlackboardRow, BoardPrev) {
    let mut problems = Vec::new();
    let updates_per_sec = match (prev, dt) {
        (Some(p), Some(dt)) if bb.updates >= p.updates => {
            Some((bb.updates - p.updates) as f64 / dt)
        }
        (Some(p), Some(_)) => {
            problems.push(format!(
                "the table's version went back from {} to {}",
                p.updates, bb.updates
            ));
            None
        }
        _ => None,
    };
    let (moved, bad) = moved(prev.map_or(&[][..], |p| &p.versions), &bb.versions, bb.updates);
    if let Some((entry, why)) = bad.first() {
        let more = match bad.len() {
            1 => String::new(),
            n => format!(" (and {} more)", n - 1),
        };
        problems.push(format!("entry {entry}: {why}{more}"));
    }
    let mut hot: Vec<(u64, u64)> = if prev.is_some() && dt.is_some() {
        moved
    } else {
        Vec::new()
    };
    // Most writes first; the lower entry first among equals, so a sample
    // reads the same way twice.
    hot.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    hot.truncate(HOTTEST);
    let entries: Vec<u64> = hot.iter().map(|h| h.0).collect();
    let reads = if entries.is_empty() {
        Vec::new()
    } else {
        read_keys(&entries)
    };
    let mut keys = HashMap::new();
    let hottest = hot
        .iter()
        .map(|&(entry, updates)| {
            let read = reads.iter().find(|r| r.entry == entry).map(|r| &r.read);
            let before = prev.and_then(|p| p.keys.get(&entry));
            let mut h = HotKey {
                entry,
                key: None,
                updates,
                per_sec: dt.map(|dt| updates as f64 / dt),
                note: None,
            };
            match read {
                Some(KeyRead::Live { key, .. }) => {
                    h.key = Some(key_text(key));
                    if before.is_some_and(|b| b != key) {
                        h.note = Some("key changed".into());
                        h.per_sec = None;
                    }
                    keys.insert(entry, key.clone());
                }
                Some(KeyRead::Removed { .. }) => {
                    h.key = before.map(|b| key_text(b));
                    h.note = Some("removed".into());
                }
                Some(KeyRead::Busy) => h.note = Some("busy".into()),
                Some(KeyRead::Stuck { .. }) => h.note = Some("stuck".into()),
                Some(KeyRead::Corrupt { tag }) => {
                    h.note = Some(format!("corrupt tag {tag}"));
                    h.per_sec = None;
                }
                _ => h.note = Some("no key".into()),
            }
            h
        })
        .collect();
    let row = BlackboardRow {
        keys: bb.keys,
        capacity: bb.capacity,
        entries: bb.entries,
        updates: bb.updates,
        updates_per_sec,
        mid_write: bb.mid_write,
        stuck: bb.mid_write > 0 && !writer_alive,
        hottest,
        corrupt: (!problems.is_empty()).then(|| problems.join("; ")),
    };
    let next = BoardPrev {
        updates: bb.updates,
        versions: bb.versions,
        keys,
    };
    (row, next)
}

/// Each entry's writes between two passes (both in table order, as
/// `stat` gives them): `(entry, writes)` for those that moved, and
/// `(entry, why)` for those that cannot be believed: a version that went
/// back, or one more than one past the table's `updates` (read after the
/// pass: an honest entry is at most the one write in flight ahead).
fn moved(
    before: &[EntryVersion],
    now: &[EntryVersion],
    updates: u64,
) -> (Vec<(u64, u64)>, Vec<(u64, String)>) {
    let (mut moved, mut bad) = (Vec::new(), Vec::new());
    let mut b = before.iter().peekable();
    for e in now {
        while b.next_if(|p| p.entry < e.entry).is_some() {}
        let was = b.next_if(|p| p.entry == e.entry).map(|p| p.version);
        if e.version > updates.saturating_add(1) {
            bad.push((
                e.entry,
                format!(
                    "version {} is past the table's {updates}",
                    e.version
                ),
            ));
            continue;
        }
        match was {
            Some(w) if e.version < w => bad.push((
                e.entry,
                format!("version went back from {w} to {}", e.version),
            )),
            Some(w) if e.version > w => moved.push((e.entry, e.version - w)),
            Some(_) => {}
            // First written since the previous pass: at least once.
            None => moved.push((e.entry, 1)),
        }
    }
    (moved, bad)
}

/// A key, readable: an unsigned little-endian integer when it is 1, 2, 4
/// or 8 bytes (the integer keys), else its bytes in hex, cut after
/// [`KEY_HEX_BYTES`] with an ellipsis.
pub fn key_text(key: &[u8]) -> String {
    if matches!(key.len(), 1 | 2 | 4 | 8) {
        let mut word = [0u8; 8];
        word[..key.len()].copy_from_slice(key);
        return u64::from_le_bytes(word).to_string();
    }
    let hex: String = key
        .iter()
        .take(KEY_HEX_BYTES)
        .map(|b| format!("{b:02x}"))
        .collect();
    if key.len() > KEY_HEX_BYTES {
        format!("0x{hex}…")
    } else {
        format!("0x{hex}")
    }
}

#[cfg(test)]
mod tests {
    use shmbus::TypeFingerprint;

    use super::*;

    fn v(entry: u64, version: u64) -> EntryVersion {
        EntryVersion {
            entry,
            version,
            writing: false,
        }
    }

    fn stat(updates: u64, versions: Vec<EntryVersion>) -> BlackboardStat {
        BlackboardStat {
            keys: versions.len() as u64,
            capacity: 100,
            entries: 256,
            updates,
            key_type: TypeFingerprint::of::<u32>(),
            mid_write: versions.iter().filter(|e| e.writing).count() as u64,
            versions,
        }
    }

    /// A fake table: entry `i` holds key `i * 10` (4 bytes), unless
    /// `table` says otherwise.
    fn table(over: &[(u64, KeyRead)]) -> impl Fn(&[u64]) -> Vec<EntryKey> + '_ {
        move |entries| {
            entries
                .iter()
                .map(|&entry| EntryKey {
                    entry,
                    read: over
                        .iter()
                        .find(|o| o.0 == entry)
                        .map(|o| o.1.clone())
                        .unwrap_or(KeyRead::Live {
                            key: ((entry * 10) as u32).to_le_bytes().to_vec(),
                            version: 1,
                        }),
                })
                .collect()
        }
    }

    #[test]
    fn the_entry_written_most_between_two_samples_is_the_hottest_with_its_rate() {
        let (_, prev) = row(stat(3, vec![v(1, 1), v(5, 2), v(9, 3)]), true, None, None, table(&[]));
        let now = stat(113, vec![v(1, 11), v(5, 113), v(9, 3), v(12, 40)]);
        let (r, _) = row(now, true, Some(&prev), Some(2.0), table(&[]));
        assert_eq!(r.updates_per_sec, Some(55.0));
        assert!(r.corrupt.is_none(), "{:?}", r.corrupt);
        let names: Vec<(Option<&str>, u64)> =
            r.hottest.iter().map(|h| (h.key.as_deref(), h.updates)).collect();
        // Entry 9 did not move: not hot. Entry 12 is new: at least once.
        assert_eq!(names, [(Some("50"), 111), (Some("10"), 10), (Some("120"), 1)]);
        assert_eq!(r.hottest[0].per_sec, Some(55.5));
    }

    #[test]
    fn the_first_sample_has_no_hottest_keys_and_no_rate() {
        let mut read = false;
        let (r, _) = row(stat(3, vec![v(1, 3)]), true, None, None, |_: &[u64]| {
            read = true;
            Vec::new()
        });
        assert!(r.hottest.is_empty() && r.updates_per_sec.is_none() && !read);
    }

    #[test]
    fn at_most_five_keys_are_named_and_only_theirs_are_read() {
        let before: Vec<_> = (0..20).map(|i| v(i, 1)).collect();
        let (_, prev) = row(stat(20, before), true, None, None, table(&[]));
        let now: Vec<_> = (0..20).map(|i| v(i, 1 + i)).collect();
        let mut asked = Vec::new();
        let (r, _) = row(stat(20, now), true, Some(&prev), Some(1.0), |e: &[u64]| {
            asked = e.to_vec();
            table(&[])(e)
        });
        assert_eq!(asked, [19, 18, 17, 16, 15]);
        assert_eq!(r.hottest.len(), HOTTEST);
    }

    #[test]
    fn a_key_removed_and_reinserted_elsewhere_is_marked_without_a_rate() {
        let (_, p1) = row(stat(1, vec![v(4, 1)]), true, None, None, table(&[]));
        // Entry 4 is hot: its key (40) is read and kept.
        let (r, p2) = row(stat(9, vec![v(4, 9)]), true, Some(&p1), Some(1.0), table(&[]));
        assert_eq!(r.hottest[0].key.as_deref(), Some("40"));
        let other = KeyRead::Live {
            key: 77u32.to_le_bytes().to_vec(),
            version: 20,
        };
        let (r, _) = row(
            stat(20, vec![v(4, 20)]),
            true,
            Some(&p2),
            Some(1.0),
            table(&[(4, other)]),
        );
        let h = &r.hottest[0];
        assert_eq!((h.key.as_deref(), h.note.as_deref()), (Some("77"), Some("key changed")));
        assert_eq!(h.per_sec, None);
    }

    #[test]
    fn a_version_that_went_back_or_past_the_table_is_corrupt_never_a_rate() {
        let (_, prev) = row(stat(50, vec![v(1, 40), v(2, 50)]), true, None, None, table(&[]));
        // Entry 1 went back; entry 2 holds a garbage stamp; the table's
        // version went back too.
        let garbage = u64::MAX.div_ceil(2);
        let now = stat(45, vec![v(1, 30), v(2, garbage), v(3, 45)]);
        let (r, _) = row(now, false, Some(&prev), Some(1.0), table(&[]));
        let why = r.corrupt.as_deref().expect("corrupt");
        assert!(why.contains("went back from 50 to 45"), "{why}");
        assert!(why.contains("entry 1: version went back from 40 to 30 (and 1 more)"), "{why}");
        assert_eq!(r.updates_per_sec, None);
        let entries: Vec<u64> = r.hottest.iter().map(|h| h.entry).collect();
        assert_eq!(entries, [3]);
        assert!(r.hottest.iter().all(|h| h.per_sec.is_none_or(|p| p >= 0.0)));
    }

    #[test]
    fn an_entry_the_table_cannot_give_is_named_by_its_entry_and_why() {
        let (_, prev) = row(stat(2, vec![v(1, 1), v(2, 2)]), true, None, None, table(&[]));
        let reads = [(1, KeyRead::Busy), (2, KeyRead::Corrupt { tag: 9 })];
        let (r, _) = row(
            stat(6, vec![v(1, 5), v(2, 6)]),
            true,
            Some(&prev),
            Some(1.0),
            table(&reads),
        );
        let notes: Vec<_> = r.hottest.iter().map(|h| h.note.as_deref()).collect();
        assert_eq!(notes, [Some("busy"), Some("corrupt tag 9")]);
        assert_eq!(r.hottest[0].key, None);
    }

    #[test]
    fn integer_keys_read_as_numbers_and_others_as_short_hex() {
        assert_eq!(key_text(&[7]), "7");
        assert_eq!(key_text(&300u16.to_le_bytes()), "300");
        assert_eq!(key_text(&u64::MAX.to_le_bytes()), u64::MAX.to_string());
        assert_eq!(key_text(&[0xab, 0xcd, 0xef]), "0xabcdef");
        assert_eq!(key_text(&[1; 16]), "0x0101010101010101…");
    }

    #[test]
    fn a_table_left_mid_write_by_a_dead_writer_is_stuck() {
        let mut st = stat(2, vec![v(1, 2)]);
        st.versions[0].writing = true;
        st.mid_write = 1;
        let (r, _) = row(st, false, None, None, table(&[]));
        assert!(r.stuck);
    }
}
