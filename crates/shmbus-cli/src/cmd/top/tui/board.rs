//! A blackboard's figures in the view and in `--once`: its table as
//! facts, a short figure for the bus list, and its hottest keys as a
//! table (the model is `top/blackboard.rs`).

use super::super::blackboard::{BlackboardRow, HotKey};
use super::rate::rate;
use crate::cmd::inspect::escaped;

/// The blackboard's facts for the bus's figures.
pub(super) fn facts(b: &BlackboardRow) -> Vec<(&'static str, String)> {
    let mut out = vec![
        (
            "keys",
            format!(
                "{} of {} ({:.1}%, {} entries)",
                b.keys,
                b.capacity,
                b.used() * 100.0,
                b.entries
            ),
        ),
        (
            "updates",
            format!("{}, {} updates/s", b.updates, rate(b.updates_per_sec)),
        ),
        ("mid-write", mid_write_text(b)),
    ];
    if let Some(why) = &b.corrupt {
        out.push(("corrupt", escaped(why)));
    }
    out
}

fn mid_write_text(b: &BlackboardRow) -> String {
    match (b.mid_write, b.stuck) {
        (0, _) => "0".into(),
        (n, false) => format!("{n} (being written)"),
        (n, true) => format!("{n} STUCK (its writer died mid-write)"),
    }
}

/// The bus list's short figure: "keys 3/100, 2 hot: 7".
pub(super) fn bus_extra(b: &BlackboardRow) -> String {
    let mut text = format!("keys {}/{}", b.keys, b.capacity);
    if let Some(h) = b.hottest.first() {
        text.push_str(&format!(", hottest {}", hot_name(h)));
    }
    if b.mid_write > 0 {
        text.push_str(&format!(", {}", mid_write_text(b)));
    }
    if b.corrupt.is_some() {
        text.push_str(", corrupt");
    }
    text
}

/// A hot key's name: its key, or its entry when none could be read.
fn hot_name(h: &HotKey) -> String {
    match &h.key {
        Some(k) => k.clone(),
        None => format!("entry {}", h.entry),
    }
}

/// The hottest keys' table: a heading, then one line each.
pub(super) fn hot_lines(b: &BlackboardRow) -> Vec<String> {
    if b.hottest.is_empty() {
        return vec!["no key written since the previous sample".into()];
    }
    let mut out = vec![format!(
        "{:<20}  {:>8}  {:>10}  {:>10}  NOTE",
        "HOTTEST KEY", "ENTRY", "UPDATES", "UPDATES/S"
    )];
    for h in &b.hottest {
        out.push(format!(
            "{:<20}  {:>8}  {:>10}  {:>10}  {}",
            hot_name(h),
            h.entry,
            h.updates,
            rate(h.per_sec),
            h.note.as_deref().unwrap_or("")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::super::blackboard::HotKey;
    use super::*;

    fn board(hottest: Vec<HotKey>) -> BlackboardRow {
        BlackboardRow {
            keys: 3,
            capacity: 100,
            entries: 256,
            updates: 120,
            updates_per_sec: Some(40.0),
            mid_write: 0,
            stuck: false,
            hottest,
            corrupt: None,
        }
    }

    #[test]
    fn a_board_reads_as_keys_used_updates_and_its_hottest_keys() {
        let hot = |entry, key: Option<&str>, note: Option<&str>| HotKey {
            entry,
            key: key.map(str::to_string),
            updates: 30,
            per_sec: note.is_none().then_some(15.0),
            note: note.map(str::to_string),
        };
        let mut b = board(vec![hot(9, Some("7"), None), hot(3, None, Some("busy"))]);
        let first = facts(&b);
        assert_eq!(first[0].1, "3 of 100 (3.0%, 256 entries)");
        assert_eq!(first[1].1, "120, 40.0 updates/s");
        assert_eq!(first[2].1, "0");
        assert_eq!(bus_extra(&b), "keys 3/100, hottest 7");
        let lines = hot_lines(&b);
        assert!(lines[0].starts_with("HOTTEST KEY"), "{lines:?}");
        assert_eq!(
            lines[1].split_whitespace().collect::<Vec<_>>(),
            ["7", "9", "30", "15.0"]
        );
        assert!(
            lines[2].starts_with("entry 3 ") && lines[2].ends_with("busy"),
            "{lines:?}"
        );
        b.mid_write = 2;
        b.stuck = true;
        b.corrupt = Some("entry 1: version went back\x1b".into());
        assert_eq!(
            bus_extra(&b),
            "keys 3/100, hottest 7, 2 STUCK (its writer died mid-write), corrupt"
        );
        assert!(facts(&b).iter().any(|f| f.0 == "corrupt"));
        assert_eq!(
            hot_lines(&board(vec![]))[0],
            "no key written since the previous sample"
        );
    }
}
