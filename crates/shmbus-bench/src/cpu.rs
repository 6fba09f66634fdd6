//! Pinning to CPUs: the sender to the first of `--cpus`, receivers to the
//! others, so every block runs on the same cores.

use crate::error::BenchError;

/// Pins the calling thread to `cpu`.
pub fn pin(cpu: usize) -> Result<(), BenchError> {
    let mut set = rustix::thread::CpuSet::new();
    set.set(cpu);
    rustix::thread::sched_setaffinity(None, &set).map_err(|source| BenchError::Pin { cpu, source })
}

/// The CPUs this process may run on.
pub fn allowed_cpus() -> Vec<usize> {
    match rustix::thread::sched_getaffinity(None) {
        Ok(set) => (0..rustix::thread::CpuSet::MAX_CPU)
            .filter(|&c| set.is_set(c))
            .collect(),
        Err(_) => vec![0],
    }
}
