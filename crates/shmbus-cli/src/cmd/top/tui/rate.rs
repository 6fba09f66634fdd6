//! How a rate (and a figure to one decimal) is written: its own file so
//! that the blackboard's figures (`board.rs`), a service's (`calls.rs`)
//! and the bus's (`figures.rs`, which includes them) share it without
//! importing each other.

/// A rate: "-" before there is one (the first sample), else about three
/// significant digits.
pub(super) fn rate(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(v) if v < 100.0 => format!("{v:.1}"),
        Some(v) if v < 1e4 => format!("{v:.0}"),
        Some(v) if v < 1e6 => format!("{:.1}k", v / 1e3),
        Some(v) if v < 1e9 => format!("{:.1}M", v / 1e6),
        Some(v) => format!("{:.1}G", v / 1e9),
    }
}

/// A figure to one decimal, "-" when there is none.
pub(super) fn one_decimal(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.1}"))
}
