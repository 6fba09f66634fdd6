//! Where in a recording a replay starts and stops: a time offset from the
//! recording's first message or a sequence of the recorded bus.

/// One end of a replayed window.
///
/// # Examples
/// ```
/// use shmbus::record::{Point, Window};
/// let w = Window { from: Some(Point::Offset(1_000_000)), until: Some(Point::Seq(50)) };
/// assert_eq!(w.from, Some(Point::Offset(1_000_000)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Point {
    /// Nanoseconds after the recording's first message (CLOCK_MONOTONIC).
    Offset(u64),
    /// A sequence of the recorded bus (each bus's own).
    Seq(u64),
}

/// The window a replay keeps: `from` inclusive, `until` exclusive; `None`
/// is the recording's start or end.
///
/// # Examples
/// ```
/// use shmbus::record::{Point, Window};
/// let all = Window::default();
/// assert_eq!((all.from, all.until), (None, None));
/// let _tail = Window { from: Some(Point::Seq(1000)), until: None };
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Window {
    /// Where it starts (inclusive).
    pub from: Option<Point>,
    /// Where it stops (exclusive).
    pub until: Option<Point>,
}

/// Where a record stands against the window.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Place {
    Before,
    Inside,
    /// Past `until`: the pass ends.
    After,
}

impl Window {
    /// Where a message of sequence `seq`, `offset_ns` after the
    /// recording's first message, stands.
    pub(crate) fn message(&self, seq: u64, offset_ns: u64) -> Place {
        let at = |p: Point| match p {
            Point::Offset(t) => offset_ns >= t,
            Point::Seq(n) => seq >= n,
        };
        if self.until.is_some_and(at) {
            Place::After
        } else if self.from.is_none_or(at) {
            Place::Inside
        } else {
            Place::Before
        }
    }

    /// The part of a gap of `count` from `first` to replay: clipped to a
    /// sequence window; with a time window (gaps carry no time) the whole
    /// gap once the window has begun (`begun`), none before. Sequences
    /// wrap at 2^64: a gap from `u64::MAX` covers it and 0, 1, ... after.
    pub(crate) fn gap(&self, first: u64, count: u64, begun: bool) -> u64 {
        if matches!(self.from, Some(Point::Offset(_))) && !begun {
            return 0;
        }
        let end = u128::from(first) + u128::from(count);
        let wrap = 1u128 << 64;
        // Below the wrap, and the part past it counted from 0.
        let n = self.clipped(u128::from(first), end.min(wrap))
            + self.clipped(0, end.saturating_sub(wrap));
        // Disjoint pieces of the gap: n <= count, a u64.
        n as u64
    }

    /// How many sequences of `lo..hi` (as plain numbers, `hi` up to 2^64)
    /// a sequence window keeps.
    fn clipped(&self, lo: u128, hi: u128) -> u128 {
        let lo = match self.from {
            Some(Point::Seq(n)) => lo.max(u128::from(n)),
            _ => lo,
        };
        let hi = match self.until {
            Some(Point::Seq(n)) => hi.min(u128::from(n)),
            _ => hi,
        };
        hi.saturating_sub(lo)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sequence_window_clips_gaps_and_keeps_from_inclusive_and_until_exclusive() {
        let w = Window {
            from: Some(Point::Seq(10)),
            until: Some(Point::Seq(20)),
        };
        assert_eq!(w.message(9, 0), Place::Before);
        assert_eq!(w.message(10, 0), Place::Inside);
        assert_eq!(w.message(19, 0), Place::Inside);
        assert_eq!(w.message(20, 0), Place::After);
        assert_eq!(w.gap(5, 10, false), 5);
        assert_eq!(w.gap(12, 100, true), 8);
        assert_eq!(w.gap(0, 5, false), 0);
        // Wrapped: u64::MAX - 1, u64::MAX, then 0.. of which 10..20.
        assert_eq!(w.gap(u64::MAX - 1, u64::MAX, true), 10);
    }

    #[test]
    fn a_gap_across_the_sequence_wrap_counts_every_sequence_it_covers() {
        let all = Window::default();
        // u64::MAX, then 0..4 after the wrap.
        assert_eq!(all.gap(u64::MAX, 5, false), 5);
        assert_eq!(all.gap(u64::MAX - 1, 2, false), 2);
        assert_eq!(all.gap(u64::MAX, u64::MAX, false), u64::MAX);
        // A sequence window keeps the part after the wrap that lies in it.
        let low = Window {
            from: Some(Point::Seq(2)),
            until: Some(Point::Seq(10)),
        };
        assert_eq!(low.gap(u64::MAX - 1, 6, true), 2);
        let high = Window {
            from: Some(Point::Seq(u64::MAX)),
            until: None,
        };
        assert_eq!(high.gap(u64::MAX - 3, 10, true), 1);
        // A time window: the whole gap once begun.
        let timed = Window {
            from: Some(Point::Offset(5)),
            until: None,
        };
        assert_eq!(timed.gap(u64::MAX, 5, false), 0);
        assert_eq!(timed.gap(u64::MAX, 5, true), 5);
    }
}
