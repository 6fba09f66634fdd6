//! A process's figures from /proc, as `top` shows them: its own file so
//! that the sampler (`model`) and a service's rows (`service`) share the
//! type without importing each other.

/// A process's share of a CPU and its context switches, per second since
/// the previous sample (`None` for the first sample or an unreadable
/// /proc entry).
#[derive(Clone, Copy, Debug, Default)]
pub struct ProcRow {
    pub cpu_percent: Option<f64>,
    pub voluntary_per_sec: Option<f64>,
    pub involuntary_per_sec: Option<f64>,
}
