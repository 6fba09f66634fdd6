//! The clock shared memory's "last active" times are in.

/// `CLOCK_MONOTONIC_COARSE` in ns: a vDSO read of a few ns, as fine as the
/// scheduler tick, which is all a "last active" time needs. The same clock
/// in every process of the machine.
pub(crate) fn monotonic_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::MonotonicCoarse);
    (t.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(t.tv_nsec as u64)
}
