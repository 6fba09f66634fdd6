//! `--from` and `--until` parsed: where in a recording a replay starts and stops,
//! as a time offset from the recording's first message (`1.5s`, `200ms`,
//! `30us`, `10ns`) or a sequence of the recorded bus (`seq:N`).

use shmbus::record::Point;

use crate::error::CliError;

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
}
