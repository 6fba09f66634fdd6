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

/// CPU time this process has used, every thread, user and system, in ns
/// (`getrusage(RUSAGE_SELF)`: what an async receiver's waiter thread and
/// runtime thread cost together).
pub fn process_cpu_ns() -> u64 {
    // SAFETY: all-zero is a valid rusage; getrusage fills it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage for the call.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    ns(ru.ru_utime) + ns(ru.ru_stime)
}
