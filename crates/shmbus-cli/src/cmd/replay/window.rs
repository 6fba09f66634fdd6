//! `--from` and `--until`: where in a recording a replay starts and stops,
//! as a time offset from the recording's first message (`1.5s`, `200ms`,
//! `30us`, `10ns`) or a sequence of the recorded bus (`seq:N`).

use crate::error::CliError;

/// One end of the replayed window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Point {
    /// Nanoseconds after the recording's first message (CLOCK_MONOTONIC).
    Offset(u64),
    /// A sequence of the recorded bus (each bus's own).
    Seq(u64),
}

pub fn parse_point(s: &str) -> Result<Point, CliError> {
    let bad = || {
        CliError::usage(format!(
            "{s:?} is not a point of a recording (a time offset like 1.5s, 200ms, 30us \
             or 10ns, or a sequence like seq:1000)"
        ))
    };
    if let Some(n) = s.strip_prefix("seq:") {
        return n.parse::<u64>().map(Point::Seq).map_err(|_| bad());
    }
    let (num, unit) = if let Some(n) = s.strip_suffix("ms") {
        (n, 1e6)
    } else if let Some(n) = s.strip_suffix("us") {
        (n, 1e3)
    } else if let Some(n) = s.strip_suffix("ns") {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1e9)
    } else {
        return Err(bad());
    };
    match num.parse::<f64>() {
        // Below 2^63 ns (292 years): anything larger is a typo.
        Ok(x) if x.is_finite() && x >= 0.0 && x * unit < 9.2e18 => {
            Ok(Point::Offset((x * unit).round() as u64))
        }
        _ => Err(bad()),
    }
}

/// The window a replay keeps: `from` inclusive, `until` exclusive.
#[derive(Clone, Copy, Debug, Default)]
pub struct Window {
    pub from: Option<Point>,
    pub until: Option<Point>,
}

/// Where a record stands against the window.
#[derive(Debug, PartialEq, Eq)]
pub enum Place {
    Before,
    Inside,
    /// Past `until`: the replay (this pass) ends.
    After,
}

impl Window {
    /// Where a message of sequence `seq`, `offset_ns` after the
    /// recording's first message, stands.
    pub fn message(&self, seq: u64, offset_ns: u64) -> Place {
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
    pub fn gap(&self, first: u64, count: u64, begun: bool) -> u64 {
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
    fn points_parse_from_times_and_sequences_and_refuse_the_rest() {
        assert_eq!(parse_point("1.5s").unwrap(), Point::Offset(1_500_000_000));
        assert_eq!(parse_point("200ms").unwrap(), Point::Offset(200_000_000));
        assert_eq!(parse_point("30us").unwrap(), Point::Offset(30_000));
        assert_eq!(parse_point("10ns").unwrap(), Point::Offset(10));
        assert_eq!(parse_point("seq:42").unwrap(), Point::Seq(42));
        for bad in [
            "", "1.5", "-1s", "seq:", "seq:-1", "nans", "infs", "1e30s", "s",
        ] {
            assert!(parse_point(bad).is_err(), "{bad:?}");
        }
    }

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
