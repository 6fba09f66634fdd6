//! A blackboard in `top`: its table (keys used of the capacity, updates
//! and their rate, entries mid-write) and its hottest keys
//! (`tui/board.rs` writes them).
//!
//! An entry's version is the table's at its last write: two samples tell
//! which entries were written in between, not how often. So each sample
//! takes every entry's version (`shmbus::stat`: one stamp load per entry,
//! one cache line; a table of a million entries costs a million lines,
//! 13 to 26 ms measured in a release build, and 24 bytes per written entry
//! kept, docs/TOP.md), merges them with the previous
//! sample's, and the entries written since (at most
//! `shmbus::stat::MAX_WATCHED`, the latest first) are watched for a short
//! window (`shmbus::stat::blackboard_watch`, [`Live`]): the changes seen
//! there rank them, and the [`HOTTEST`] have their keys read, each through
//! its seqlock. A change seen is at least one write: a key written more
//! often than once per pass reads as one per pass, so the rates are lower
//! bounds, good to rank keys and tell fast from slow, not to count.
//!
//! The table is in a file other processes write: an entry whose version
//! went back, or is past the table's version, is counted as corrupt and
//! left out of the hottest keys, never given a rate; a table version that
//! went back has no rate. An entry whose key differs from the one read
//! there at the previous sample was removed and reinserted: it is marked
//! so, without a rate (its writes were to two keys). A key not read at
//! the previous sample (the entry was not among the hottest) cannot be
//! compared.

use std::collections::HashMap;

use std::time::Duration;

use shmbus::stat::{BlackboardStat, EntryKey, EntryVersion, KeyRead, MAX_WATCHED, Watch};

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
    /// Changes of its version seen in the watch window (each at least
    /// one write).
    pub updates: u64,
    /// Those changes per second: a lower bound of its write rate; `None`
    /// when none was seen in the window (it was written since the previous
    /// sample, more slowly than the window sees) or `note` says the rate
    /// would mix keys.
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

/// The table of a blackboard, as a sample reads more of it than its stat:
/// how often some entries change, and their keys. [`Live`] reads the file;
/// a test gives a fake table.
pub trait Board {
    /// Watches `entries` for a short window: the changes seen in each.
    fn watch(&mut self, entries: &[u64]) -> Option<Watch>;
    /// Reads the keys of `entries`.
    fn keys(&mut self, entries: &[u64]) -> Vec<EntryKey>;
}

/// The blackboard at `name`, read through `shmbus::stat`.
#[derive(Debug)]
pub struct Live {
    pub name: String,
    /// How long [`Board::watch`] watches, and how often it looks.
    pub window: Duration,
    pub every: Duration,
}

impl Board for Live {
    fn watch(&mut self, entries: &[u64]) -> Option<Watch> {
        // Gone since the stat: no rates.
        shmbus::stat::blackboard_watch(&self.name, entries, self.window, self.every).ok()
    }

    fn keys(&mut self, entries: &[u64]) -> Vec<EntryKey> {
        // Gone since the stat: no keys, each hot entry says so.
        shmbus::stat::blackboard_keys(&self.name, entries).unwrap_or_default()
    }
}

/// The watch window for samples `interval` apart: a tenth of it, from 5 to
/// 50 ms.
pub fn window(interval: Duration) -> Duration {
    (interval / 10).clamp(Duration::from_millis(5), Duration::from_millis(50))
}

/// How often the watch looks at its entries: at most this many changes a
/// second are seen of one entry (about 4,000 with the sleep's overhead).
pub const WATCH_EVERY: Duration = Duration::from_micros(200);

/// A blackboard's row, from its stat and the previous sample's `prev`
/// (`dt` seconds ago), reading more of the table through `board`.
/// Returns what the next sample needs.
pub fn row(
    bb: BlackboardStat,
    writer_alive: bool,
    prev: Option<&BoardPrev>,
    dt: Option<f64>,
    board: &mut impl Board,
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
    let (mut written, bad) = written(
        prev.map_or(&[][..], |p| &p.versions),
        &bb.versions,
        bb.updates,
    );
    if let Some((entry, why)) = bad.first() {
        let more = match bad.len() {
            1 => String::new(),
            n => format!(" (and {} more)", n - 1),
        };
        problems.push(format!("entry {entry}: {why}{more}"));
    }
    if prev.is_none() || dt.is_none() {
        written.clear();
    }
    // The latest written first: those the watch keeps when there are more.
    written.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    written.truncate(MAX_WATCHED);
    let watch = if written.is_empty() {
        None
    } else {
        let entries: Vec<u64> = written.iter().map(|w| w.0).collect();
        board.watch(&entries)
    };
    let seen = |entry: u64| {
        watch
            .as_ref()
            .and_then(|w| w.changes.iter().find(|c| c.0 == entry))
            .map_or(0, |c| c.1)
    };
    // Most changes seen first; among equals, the latest written.
    let mut hot: Vec<(u64, u64, u64)> = written.iter().map(|&(e, v)| (e, seen(e), v)).collect();
    hot.sort_by(|a, b| b.1.cmp(&a.1).then(b.2.cmp(&a.2)).then(a.0.cmp(&b.0)));
    hot.truncate(HOTTEST);
    let entries: Vec<u64> = hot.iter().map(|h| h.0).collect();
    let reads = if entries.is_empty() {
        Vec::new()
    } else {
        board.keys(&entries)
    };
    let mut keys = HashMap::new();
    let hottest = hot
        .iter()
        .map(|&(entry, updates, _)| {
            let read = reads.iter().find(|r| r.entry == entry).map(|r| &r.read);
            let before = prev.and_then(|p| p.keys.get(&entry));
            let mut h = HotKey {
                entry,
                key: None,
                updates,
                per_sec: watch
                    .as_ref()
                    .filter(|_| updates > 0)
                    .and_then(|w| w.rate(entry)),
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

/// An entry whose version cannot be believed, and why.
type Unbelieved = (u64, String);

/// The entries written between two passes (both in table order, as
/// `stat` gives them), with their version now; and `(entry, why)` for
/// those that cannot be believed: a version that went back, or one more
/// than one past the table's `updates` (read after the pass: an honest
/// entry is at most the one write in flight ahead).
fn written(
    before: &[EntryVersion],
    now: &[EntryVersion],
    updates: u64,
) -> (Vec<(u64, u64)>, Vec<Unbelieved>) {
    let (mut written, mut bad) = (Vec::new(), Vec::new());
    let mut b = before.iter().peekable();
    for e in now {
        while b.next_if(|p| p.entry < e.entry).is_some() {}
        let was = b.next_if(|p| p.entry == e.entry).map(|p| p.version);
        if e.version > updates.saturating_add(1) {
            bad.push((
                e.entry,
                format!("version {} is past the table's {updates}", e.version),
            ));
            continue;
        }
        match was {
            Some(w) if e.version < w => bad.push((
                e.entry,
                format!("version went back from {w} to {}", e.version),
            )),
            Some(w) if e.version == w => {}
            // Written since the previous pass (or first written since).
            _ => written.push((e.entry, e.version)),
        }
    }
    (written, bad)
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
            unblock: None,
        }
    }

    /// A fake table: entry `i` holds key `i * 10` (4 bytes) unless `reads`
    /// says otherwise, and changes `changes` times in a watch of 1 s.
    #[derive(Default)]
    struct Fake {
        changes: Vec<(u64, u64)>,
        reads: Vec<(u64, KeyRead)>,
        watched: Vec<u64>,
        keyed: Vec<u64>,
    }

    impl Board for Fake {
        fn watch(&mut self, entries: &[u64]) -> Option<Watch> {
            self.watched = entries.to_vec();
            let changes = entries
                .iter()
                .map(|&e| (e, self.changes.iter().find(|c| c.0 == e).map_or(0, |c| c.1)))
                .collect();
            Some(Watch {
                changes,
                passes: 5000,
                elapsed: Duration::from_secs(1),
            })
        }

        fn keys(&mut self, entries: &[u64]) -> Vec<EntryKey> {
            self.keyed = entries.to_vec();
            entries
                .iter()
                .map(|&entry| EntryKey {
                    entry,
                    read: self
                        .reads
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

    fn first(versions: Vec<EntryVersion>, updates: u64) -> BoardPrev {
        row(
            stat(updates, versions),
            true,
            None,
            None,
            &mut Fake::default(),
        )
        .1
    }

    #[test]
    fn the_entry_seen_changing_most_is_the_hottest_whatever_its_version() {
        let prev = first(vec![v(1, 1), v(5, 2), v(9, 3)], 3);
        // Entry 1 was written last (the highest version) but changes least
        // often; entry 9 was not written at all.
        let now = stat(113, vec![v(1, 113), v(5, 112), v(9, 3), v(12, 40)]);
        let mut fake = Fake {
            changes: vec![(1, 2), (5, 900), (12, 30)],
            ..Fake::default()
        };
        let (r, _) = row(now, true, Some(&prev), Some(2.0), &mut fake);
        assert_eq!(r.updates_per_sec, Some(55.0));
        assert!(r.corrupt.is_none(), "{:?}", r.corrupt);
        assert_eq!(fake.watched, [1, 5, 12], "the written ones, latest first");
        let names: Vec<(Option<&str>, u64, Option<f64>)> = r
            .hottest
            .iter()
            .map(|h| (h.key.as_deref(), h.updates, h.per_sec))
            .collect();
        assert_eq!(
            names,
            [
                (Some("50"), 900, Some(900.0)),
                (Some("120"), 30, Some(30.0)),
                (Some("10"), 2, Some(2.0))
            ]
        );
    }

    #[test]
    fn an_entry_written_but_not_seen_changing_has_no_rate_and_comes_last() {
        let prev = first(vec![v(1, 1), v(2, 2)], 2);
        let mut fake = Fake {
            changes: vec![(1, 3)],
            ..Fake::default()
        };
        let (r, _) = row(
            stat(4, vec![v(1, 3), v(2, 4)]),
            true,
            Some(&prev),
            Some(1.0),
            &mut fake,
        );
        let got: Vec<(u64, Option<f64>)> = r.hottest.iter().map(|h| (h.entry, h.per_sec)).collect();
        assert_eq!(got, [(1, Some(3.0)), (2, None)]);
    }

    #[test]
    fn the_first_sample_has_no_hottest_keys_and_reads_nothing_more() {
        let mut fake = Fake::default();
        let (r, _) = row(stat(3, vec![v(1, 3)]), true, None, None, &mut fake);
        assert!(r.hottest.is_empty() && r.updates_per_sec.is_none());
        assert!(fake.watched.is_empty() && fake.keyed.is_empty());
    }

    #[test]
    fn at_most_five_keys_are_named_and_only_theirs_are_read() {
        let prev = first((0..20).map(|i| v(i, 1)).collect(), 20);
        let mut fake = Fake {
            changes: (0..20).map(|i| (i, i)).collect(),
            ..Fake::default()
        };
        let now = (0..20).map(|i| v(i, 2 + i)).collect();
        let (r, _) = row(stat(21, now), true, Some(&prev), Some(1.0), &mut fake);
        assert_eq!(fake.keyed, [19, 18, 17, 16, 15]);
        assert_eq!(r.hottest.len(), HOTTEST);
    }

    #[test]
    fn a_key_removed_and_reinserted_is_marked_without_a_rate() {
        let p1 = first(vec![v(4, 1)], 1);
        let mut fake = Fake {
            changes: vec![(4, 8)],
            ..Fake::default()
        };
        // Entry 4 is hot: its key (40) is read and kept.
        let (r, p2) = row(
            stat(9, vec![v(4, 9)]),
            true,
            Some(&p1),
            Some(1.0),
            &mut fake,
        );
        assert_eq!(r.hottest[0].key.as_deref(), Some("40"));
        fake.reads = vec![(
            4,
            KeyRead::Live {
                key: 77u32.to_le_bytes().to_vec(),
                version: 20,
            },
        )];
        let (r, _) = row(
            stat(20, vec![v(4, 20)]),
            true,
            Some(&p2),
            Some(1.0),
            &mut fake,
        );
        let h = &r.hottest[0];
        assert_eq!(
            (h.key.as_deref(), h.note.as_deref()),
            (Some("77"), Some("key changed"))
        );
        assert_eq!(h.per_sec, None);
    }

    #[test]
    fn a_version_that_went_back_or_past_the_table_is_corrupt_never_a_rate() {
        let prev = first(vec![v(1, 40), v(2, 50)], 50);
        // Entry 1 went back; entry 2 holds a garbage stamp; the table's
        // version went back too.
        let garbage = u64::MAX.div_ceil(2);
        let now = stat(45, vec![v(1, 30), v(2, garbage), v(3, 45)]);
        let mut fake = Fake {
            changes: vec![(1, 5), (2, 5), (3, 1)],
            ..Fake::default()
        };
        let (r, _) = row(now, false, Some(&prev), Some(1.0), &mut fake);
        let why = r.corrupt.as_deref().expect("corrupt");
        assert!(why.contains("went back from 50 to 45"), "{why}");
        assert!(
            why.contains("entry 1: version went back from 40 to 30 (and 1 more)"),
            "{why}"
        );
        assert_eq!(r.updates_per_sec, None);
        assert_eq!(fake.watched, [3]);
        let entries: Vec<u64> = r.hottest.iter().map(|h| h.entry).collect();
        assert_eq!(entries, [3]);
    }

    #[test]
    fn an_entry_the_table_cannot_give_is_named_by_why() {
        let prev = first(vec![v(1, 1), v(2, 2)], 2);
        let mut fake = Fake {
            changes: vec![(1, 9), (2, 3)],
            reads: vec![(1, KeyRead::Busy), (2, KeyRead::Corrupt { tag: 9 })],
            ..Fake::default()
        };
        let (r, _) = row(
            stat(6, vec![v(1, 5), v(2, 6)]),
            true,
            Some(&prev),
            Some(1.0),
            &mut fake,
        );
        let notes: Vec<_> = r.hottest.iter().map(|h| h.note.as_deref()).collect();
        assert_eq!(notes, [Some("busy"), Some("corrupt tag 9")]);
        assert_eq!(
            (r.hottest[0].key.clone(), r.hottest[1].per_sec),
            (None, None)
        );
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
        let (r, _) = row(st, false, None, None, &mut Fake::default());
        assert!(r.stuck);
    }

    #[test]
    fn the_watch_window_is_a_tenth_of_the_interval_within_bounds() {
        assert_eq!(
            window(Duration::from_millis(500)),
            Duration::from_millis(50)
        );
        assert_eq!(
            window(Duration::from_millis(100)),
            Duration::from_millis(10)
        );
        assert_eq!(window(Duration::from_millis(10)), Duration::from_millis(5));
        assert_eq!(window(Duration::from_secs(60)), Duration::from_millis(50));
    }
}
