//! A pool bus's blocks in `top`'s view and plain text: the census as one
//! line, how many blocks are in use (with a gauge in the view), a short
//! figure for the bus list, and the HELD column of the subscriber table.
//!
//! Only the figures of a pool bus live here; `tui` places them.

use ratatui::style::Stylize;
use ratatui::text::Span;

use super::model::{PoolRow, SubRow};

/// The subscriber table's column for a pool bus, after the others: blocks
/// the subscriber's entry holds.
pub(super) const HELD_COLUMN: (&str, usize) = ("HELD", 4);

/// The key of the in-use fact, which the view draws a gauge after.
pub(super) const IN_USE: &str = "in use";

/// Cells in the gauge.
const GAUGE_WIDTH: usize = 20;

/// The pool's facts for the bus's figures: its geometry and census, and
/// how many blocks the next loan cannot take.
pub(super) fn facts(p: &PoolRow) -> [(&'static str, String); 2] {
    let c = &p.census;
    [
        (
            "pool",
            format!(
                "{} × {}: {} free · {} on ring · {} held · {} loaned · {} reclaimable · {} corrupt",
                p.blocks,
                block_size(p.block_size),
                c.free,
                c.on_ring,
                c.held,
                c.loaned,
                c.reclaimable,
                c.corrupt
            ),
        ),
        (
            IN_USE,
            format!(
                "{} of {} blocks ({:.1}%)",
                p.in_use(),
                p.blocks,
                p.occupancy() * 100.0
            ),
        ),
    ]
}

/// The bus list's short figure: "pool 5/8 blocks in use".
pub(super) fn bus_extra(p: &PoolRow) -> String {
    format!("pool {}/{} blocks in use", p.in_use(), p.blocks)
}

/// The kind fact: the slots carry descriptors, the blocks the messages.
pub(super) fn kind(capacity: u64, descriptor: u32, p: &PoolRow) -> String {
    format!(
        "pool bus, {capacity} slots ({descriptor}-byte descriptors), messages up to {}",
        block_size(p.block_size)
    )
}

/// The gauge of [`PoolRow::occupancy`], drawn after the in-use fact: red
/// when no block is free or reclaimable, so the publisher's next loan
/// waits (or fails, with `Wait::Never`) until a subscriber drops one.
pub(super) fn gauge(p: &PoolRow) -> Span<'static> {
    let full = (p.occupancy().clamp(0.0, 1.0) * GAUGE_WIDTH as f64).round() as usize;
    let bar = format!("  [{}{}]", "█".repeat(full), "·".repeat(GAUGE_WIDTH - full));
    if p.census.free == 0 && p.census.reclaimable == 0 {
        Span::raw(format!("{bar} none left to loan")).red().bold()
    } else {
        Span::raw(bar)
    }
}

/// A subscriber's HELD cell, on a pool bus.
pub(super) fn held_cell(s: &SubRow) -> Option<String> {
    s.held.map(|h| h.to_string())
}

/// A block size in the largest binary unit that holds it exactly: "256 B",
/// "4 KiB", "1 MiB".
fn block_size(n: u64) -> String {
    let mut v = n;
    for unit in ["B", "KiB", "MiB"] {
        if v < 1024 || !v.is_multiple_of(1024) {
            return format!("{v} {unit}");
        }
        v /= 1024;
    }
    format!("{v} GiB")
}

#[cfg(test)]
mod tests {
    use shmbus::pool::Census;

    use super::*;

    fn pool(census: Census) -> PoolRow {
        PoolRow {
            block_size: 4096,
            blocks: census.free
                + census.loaned
                + census.on_ring
                + census.held
                + census.reclaimable
                + census.corrupt,
            census,
        }
    }

    #[test]
    fn the_census_reads_as_one_line_and_in_use_counts_what_no_loan_can_take() {
        let p = pool(Census {
            free: 10,
            loaned: 1,
            on_ring: 3,
            held: 1,
            reclaimable: 1,
            corrupt: 0,
        });
        let [(_, census), (key, in_use)] = facts(&p);
        assert_eq!(
            census,
            "16 × 4 KiB: 10 free · 3 on ring · 1 held · 1 loaned · 1 reclaimable · 0 corrupt"
        );
        assert_eq!((key, in_use.as_str()), (IN_USE, "5 of 16 blocks (31.2%)"));
        assert_eq!(bus_extra(&p), "pool 5/16 blocks in use");
        assert!(!gauge(&p).content.contains("none left"));
    }

    #[test]
    fn a_pool_with_nothing_to_loan_has_a_full_red_gauge() {
        let p = pool(Census {
            on_ring: 4,
            held: 4,
            ..Census::default()
        });
        let g = gauge(&p);
        assert_eq!(
            g.content,
            format!("  [{}] none left to loan", "█".repeat(20))
        );
        assert_eq!(g.style.fg, Some(ratatui::style::Color::Red));
    }

    #[test]
    fn block_sizes_are_exact() {
        assert_eq!(block_size(256), "256 B");
        assert_eq!(block_size(4096), "4 KiB");
        assert_eq!(block_size(1 << 20), "1 MiB");
        assert_eq!(block_size(1 << 30), "1 GiB");
        assert_eq!(block_size(1088), "1088 B");
    }
}
