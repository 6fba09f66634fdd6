//! One sample as plain text, for `shmbus top --once`: per bus its name,
//! its figures, and a table of its subscribers (the figures are
//! `figures`', the same as the live view's).

use super::super::model::{BusView, Snapshot, SubRow};
use super::figures::{error_text, facts, sub_cells, sub_headings, sub_state};
use crate::cmd::inspect::escaped;

/// One sample as plain text: per bus, its name, its figures, and a table
/// of its subscribers (one row each); blocks apart by a blank line.
pub fn plain(snap: &Snapshot) -> String {
    if snap.buses.is_empty() {
        return "no shmbus buses".into();
    }
    let blocks: Vec<String> = snap.buses.iter().map(plain_bus).collect();
    blocks.join("\n\n")
}

fn plain_bus(b: &BusView) -> String {
    let name = escaped(&b.name);
    let r = match &b.state {
        Ok(r) => r,
        Err(e) => return format!("{name}: {}", error_text(b, e)),
    };
    let facts = facts(r);
    let key_width = facts.iter().map(|f| f.0.len()).max().unwrap_or(0) + 2;
    let mut lines = vec![name];
    for (key, value) in facts {
        lines.push(format!("  {:<key_width$}{value}", format!("{key}:")));
    }
    if let Some(b) = &r.blackboard {
        lines.extend(super::board::hot_lines(b).iter().map(|l| format!("  {l}")));
    } else if let Some(svc) = &r.service {
        lines.extend(
            super::calls::lines(svc)
                .iter()
                .map(|l| format!("  {}", l.1)),
        );
    } else if r.stream.is_none() && !r.subscribers.is_empty() {
        for row in subscriber_table(&r.subscribers, r.pool.is_some()).lines() {
            lines.push(format!("  {row}"));
        }
    }
    lines.join("\n")
}

/// The subscribers, in registry order, as columns like `ps`'s (and HELD
/// on a pool bus).
fn subscriber_table(subs: &[SubRow], pool: bool) -> String {
    let mut heading: Vec<&str> = sub_headings(pool).collect();
    heading.push("STATE");
    let rows = subs.iter().map(|s| {
        let mut row = sub_cells(s);
        row.push(sub_state(s));
        row
    });
    crate::cmd::inspect::plain_table(heading, rows)
}

#[cfg(test)]
mod tests {
    use super::super::super::model::PoolRow;
    use super::super::fixtures::{bus, sample, sub};
    use super::*;

    #[test]
    fn plain_text_has_a_block_per_bus_a_row_per_subscriber_and_no_control_characters() {
        let text = plain(&sample());
        assert!(!text.chars().any(|c| c.is_control() && c != '\n'), "{text}");
        let blocks: Vec<&str> = text.split("\n\n").collect();
        assert_eq!(blocks.len(), 2, "{text}");
        assert!(blocks[0].starts_with("alpha\n"), "{text}");
        assert!(
            blocks[0].contains("publisher:   pid 4242 (alive)"),
            "{text}"
        );
        assert!(blocks[0].contains("subscribers: 3 live, 1 gone"), "{text}");
        let row = |pid: &str| {
            blocks[0]
                .lines()
                .find(|l| l.trim_start().starts_with(pid))
                .unwrap_or_else(|| panic!("no row {pid}: {text}"))
        };
        assert!(row("102").contains("93.8%") && row("102").ends_with("near lap"));
        assert!(row("103").ends_with("gone"));
        assert!(row("104").ends_with("corrupt: skipped 9 is more than the 0 messages it moved"));
        assert_eq!(
            blocks[1], "bad\\x1b[2Jname: not a shmbus segment",
            "the error without its path"
        );
    }

    #[test]
    fn a_pool_bus_shows_its_census_and_a_held_column_and_no_byte_rate() {
        let mut holder = sub(0, 101, 0);
        holder.held = Some(2);
        let mut pool = bus("frames", vec![holder]);
        if let Ok(r) = &mut pool.state {
            r.journal = None;
            r.bytes_per_sec = None;
            r.pool = Some(PoolRow {
                block_size: 4096,
                blocks: 16,
                census: shmbus::pool::Census {
                    free: 13,
                    on_ring: 3,
                    ..Default::default()
                },
            });
        }
        let snap = Snapshot {
            at_ns: 1,
            interval_s: Some(0.5),
            buses: vec![pool],
        };
        let text = plain(&snap);
        assert!(
            text.contains("rate:        50.0 msgs/s, bytes/s n/a (pool bus)"),
            "{text}"
        );
        assert!(
            text.contains("pool:        16 × 4 KiB: 13 free · 3 on ring · 0 held ·"),
            "{text}"
        );
        assert!(
            text.contains("in use:      3 of 16 blocks (18.8%)\n"),
            "{text}"
        );
        let heading = text.lines().find(|l| l.contains("PID")).expect("a table");
        assert!(heading.trim_end().ends_with("HELD  STATE"), "{heading}");
        let row = text.lines().find(|l| l.contains(" 101 ")).expect("a row");
        assert!(row.trim_end().ends_with(" 2"), "{row}");
    }
}
