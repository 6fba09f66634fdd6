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
    /// gap once the window has begun (`begun`), none before.
    pub(crate) fn gap(&self, first: u64, count: u64, begun: bool) -> u64 {
        let end = first.saturating_add(count);
        let lo = match self.from {
            Some(Point::Seq(n)) => first.max(n),
            Some(Point::Offset(_)) if !begun => return 0,
            _ => first,
        };
        let hi = match self.until {
            Some(Point::Seq(n)) => end.min(n),
            _ => end,
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
        assert_eq!(w.gap(u64::MAX - 1, u64::MAX, true), 0);
    }
}
