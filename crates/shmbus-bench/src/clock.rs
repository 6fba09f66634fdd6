//! One clock for every process of a run.
//!
//! One-way latency subtracts a timestamp taken in one process from one taken
//! in another, so both must read the same counter. Where the CPU says its TSC
//! is constant and does not stop (`constant_tsc` and `nonstop_tsc`), the raw
//! TSC is that counter and costs ~10 ns to read; else CLOCK_MONOTONIC, which
//! is the same in every process too. Samples are kept in ticks; only the
//! parent converts them to nanoseconds, with one calibration for the run, so
//! no process ever uses a clock calibrated on its own.

use std::time::{Duration, Instant};

/// Which counter `now()` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// `rdtsc`.
    Tsc,
    /// `clock_gettime(CLOCK_MONOTONIC)` in ns.
    Monotonic,
}

impl Source {
    /// The best counter this machine offers for cross-process timing.
    pub fn detect() -> Source {
        let flags = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let has = |f: &str| {
            flags
                .lines()
                .any(|l| l.starts_with("flags") && l.split_whitespace().any(|w| w == f))
        };
        if cfg!(target_arch = "x86_64") && has("constant_tsc") && has("nonstop_tsc") {
            Source::Tsc
        } else {
            Source::Monotonic
        }
    }

    /// The name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Source::Tsc => "tsc",
            Source::Monotonic => "monotonic",
        }
    }

    /// Parses [`Source::name`].
    pub fn parse(s: &str) -> Option<Source> {
        match s {
            "tsc" => Some(Source::Tsc),
            "monotonic" => Some(Source::Monotonic),
            _ => None,
        }
    }

    /// The counter now, in ticks.
    #[inline(always)]
    pub fn now(self) -> u64 {
        match self {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: rdtsc has no preconditions; `detect` chose it only on
            // x86_64 CPUs that report a constant, non-stop TSC.
            Source::Tsc => unsafe { core::arch::x86_64::_rdtsc() },
            _ => monotonic_ns(),
        }
    }

    /// The counter now, in ticks, read after every earlier instruction
    /// has completed and before any later one starts (`lfence` on both
    /// sides of `rdtsc`): for timing a short stretch of code, whose loads
    /// a bare `rdtsc` may overtake.
    #[inline(always)]
    pub fn now_fenced(self) -> u64 {
        match self {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: lfence and rdtsc have no preconditions (see `now`).
            Source::Tsc => unsafe {
                core::arch::x86_64::_mm_lfence();
                let t = core::arch::x86_64::_rdtsc();
                core::arch::x86_64::_mm_lfence();
                t
            },
            _ => monotonic_ns(),
        }
    }

    /// The least ticks between two [`Source::now_fenced`] with nothing
    /// between them, over `n` tries: what a timed stretch's figure holds
    /// beside the stretch itself.
    pub fn fenced_overhead(self, n: u32) -> u64 {
        (0..n)
            .map(|_| {
                let a = self.now_fenced();
                self.now_fenced().wrapping_sub(a)
            })
            .min()
            .unwrap_or(0)
    }

    /// Ticks per nanosecond, measured against CLOCK_MONOTONIC over `span`.
    pub fn calibrate(self, span: Duration) -> f64 {
        if self == Source::Monotonic {
            return 1.0;
        }
        let (t0, c0) = (Instant::now(), self.now());
        std::thread::sleep(span);
        let (t1, c1) = (Instant::now(), self.now());
        (c1 - c0) as f64 / (t1 - t0).as_nanos() as f64
    }
}

fn monotonic_ns() -> u64 {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
