//! The one knob for how long the long tests run: `SHMBUS_TEST_SCALE`.
//!
//! A long test's loop counts (messages, rounds, records, kills) are written
//! at their full size, and each goes through [`scale`] or [`scale_min`]:
//! `SHMBUS_TEST_SCALE=1` (the default) runs them whole, `.ci/run` runs
//! `0.5` (its time budget), `0.25` is `ci/quick.sh`'s inner loop, and `10`
//! is a soak. Sizes whose value is the
//! point of a test (a wrap at 2^32, a ring of 64 slots, a model's three
//! messages) are never scaled.
//!
//! The library's own unit tests (`crates/shmbus/src/**/tests.rs`, which
//! Miri and the sanitizers run) use this same function through their
//! dev-dependency on this crate, so there is one reading of the variable.

use std::time::Duration;

/// The variable read.
pub const SCALE_VAR: &str = "SHMBUS_TEST_SCALE";

/// The scale factor: `SHMBUS_TEST_SCALE` as a positive decimal, 1.0 when
/// unset or empty.
///
/// # Panics
///
/// When the variable is set to anything but a positive, finite decimal
/// (`0`, `-1`, `fast`): a test run at a scale nobody meant would pass or
/// fail for the wrong reason, so the message names the variable and what it
/// found.
pub fn test_scale() -> f64 {
    match std::env::var(SCALE_VAR) {
        Err(std::env::VarError::NotPresent) => 1.0,
        Err(std::env::VarError::NotUnicode(v)) => {
            panic!("{SCALE_VAR}={v:?}: expected a positive decimal such as 0.25, 1 or 10")
        }
        Ok(v) if v.trim().is_empty() => 1.0,
        Ok(v) => parse_scale(&v).unwrap_or_else(|| {
            panic!("{SCALE_VAR}={v:?}: expected a positive decimal such as 0.25, 1 or 10")
        }),
    }
}

/// `v` as a scale: a positive, finite decimal, or `None`.
fn parse_scale(v: &str) -> Option<f64> {
    v.trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0)
}

/// `n` times [`test_scale`], rounded, never below 1 (a loop still runs
/// once). For a count where fewer than some `floor` would test nothing, use
/// [`scale_min`].
pub fn scale(n: u64) -> u64 {
    scaled(n, test_scale())
}

/// [`scale`], but never below `floor`: the least count at which the test
/// still means something (many laps of a ring, a compaction in between,
/// more kills than one). `floor` above `n` is `n`: at 1.0 a test runs the
/// count it was written with.
pub fn scale_min(n: u64, floor: u64) -> u64 {
    scale(n).max(floor.min(n))
}

/// `d` times [`test_scale`] when that is above 1, else `d`: a deadline
/// for a process that runs a scaled loop. A bound on a hang, so a larger
/// scale lengthens it and a smaller one never shortens it.
pub fn scale_deadline(d: Duration) -> Duration {
    d.mul_f64(test_scale().max(1.0))
}

fn scaled(n: u64, scale: f64) -> u64 {
    // Rounded to the nearest, saturating at u64::MAX (an `as` cast does).
    ((n as f64 * scale).round() as u64).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scale_multiplies_and_rounds_but_never_reaches_zero() {
        assert_eq!(scaled(200_000, 1.0), 200_000);
        assert_eq!(scaled(200_000, 0.25), 50_000);
        assert_eq!(scaled(200_000, 10.0), 2_000_000);
        assert_eq!(scaled(3, 0.5), 2);
        assert_eq!(scaled(8, 0.01), 1);
        assert_eq!(scaled(u64::MAX, 10.0), u64::MAX);
    }

    #[test]
    fn only_positive_finite_decimals_are_scales() {
        assert_eq!(parse_scale("0.25"), Some(0.25));
        assert_eq!(parse_scale(" 10 "), Some(10.0));
        assert_eq!(parse_scale("1e1"), Some(10.0));
        for bad in ["0", "-1", "fast", "inf", "NaN", "1,5", ""] {
            assert_eq!(parse_scale(bad), None, "{bad:?}");
        }
    }
}
