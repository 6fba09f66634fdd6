//! How a reader that finds nothing waits: spin, spin then yield, or spin then
//! sleep on a futex in shared memory.
//!
//! The futex is always *shared* (no `FUTEX_PRIVATE_FLAG`): a private futex is
//! keyed by the waiter's address space, and another process's wake would
//! never find it.
//!
//! The sleep protocol (no lost wake-up), with W the waiter count and F the
//! futex word, both on the control page:
//!
//! ```text
//! sleeper:   W += 1 (SeqCst) ; f = F (Acquire) ; fence(SeqCst) ; check ; futex_wait(F, f) ; W -= 1
//! publisher: stamp (Release) ; fence(SeqCst)  ; if W > 0 { F += 1 (Release) ; futex_wake(F, all) }
//! ```
//!
//! The two SeqCst fences order the sleeper's `W += 1` against the publisher's
//! load of W (a Dekker pattern): either the publisher sees W > 0 and bumps F,
//! or the sleeper's check, after its fence, sees the new stamp. If F is
//! bumped after the sleeper read f, `futex_wait` returns at once (the kernel
//! compares F with f); if before, the sleeper's Acquire load of F saw the
//! bump, and through it the stamp. While W is 0 the publisher pays one fence
//! and one load of a line nobody writes, and makes no system call.

use std::time::{Duration, Instant};

use crate::sync::AtomicU32;

/// What a subscriber does while there is nothing to read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitStrategy {
    /// Poll without pause: lowest latency, one core at 100%.
    BusySpin,
    /// Poll for `spin`, then poll with `sched_yield` between tries.
    SpinYield {
        /// How long to poll before yielding.
        spin: Duration,
    },
    /// Poll for `spin`, then sleep on the shared futex (no CPU while idle).
    SpinFutex {
        /// How long to poll before sleeping.
        spin: Duration,
    },
}

impl Default for WaitStrategy {
    /// Spin for 50 µs, then sleep: fast when busy, free when idle.
    fn default() -> Self {
        WaitStrategy::SpinFutex {
            spin: Duration::from_micros(50),
        }
    }
}

/// Sleeps while `*word == expected`, for at most `timeout` (forever if None).
/// Returns early on a wake, a changed word, a signal, or a spurious wake-up;
/// callers re-check their condition.
#[cfg(not(loom))]
pub(crate) fn futex_wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) {
    use rustix::thread::futex;
    let ts = timeout.map(|d| futex::Timespec {
        tv_sec: d.as_secs().min(i64::MAX as u64) as i64,
        tv_nsec: i64::from(d.subsec_nanos()),
    });
    // Flags::empty(): a shared futex, keyed by the physical page.
    let _ = futex::wait(word, futex::Flags::empty(), expected, ts.as_ref());
}

/// Wakes every sleeper on `word`.
#[cfg(not(loom))]
pub(crate) fn futex_wake_all(word: &AtomicU32) {
    use rustix::thread::futex;
    let _ = futex::wake(word, futex::Flags::empty(), i32::MAX as u32);
}

// Loom cannot model a system call; its sleeper yields to the model instead,
// which still explores every interleaving of the counter protocol above.
#[cfg(loom)]
pub(crate) fn futex_wait(word: &AtomicU32, expected: u32, _timeout: Option<Duration>) {
    if word.load(crate::sync::Ordering::Relaxed) == expected {
        crate::sync::yield_now();
    }
}

#[cfg(loom)]
pub(crate) fn futex_wake_all(_word: &AtomicU32) {}

/// What a waiting reader does next, according to its strategy.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Poll again after a CPU pause hint.
    Spin,
    /// Poll again after `sched_yield`.
    Yield,
    /// Sleep on the futex for at most this long (forever if None).
    Sleep(Option<Duration>),
    /// The deadline has passed.
    TimedOut,
}

/// The schedule of a reader's wait: spin first, then yield or sleep, and
/// stop at the deadline. Reads the clock only every 64th step (~20 ns each).
pub(crate) struct Backoff {
    strategy: WaitStrategy,
    deadline: Option<Instant>,
    spin_until: Option<Instant>,
    past_spin: bool,
    steps: u32,
}

impl Backoff {
    pub(crate) fn new(strategy: WaitStrategy, deadline: Option<Instant>) -> Backoff {
        Backoff {
            strategy,
            deadline,
            spin_until: None,
            past_spin: false,
            steps: 0,
        }
    }

    pub(crate) fn next(&mut self) -> Step {
        if !self.past_spin {
            self.steps = self.steps.wrapping_add(1);
            if self.steps % 64 != 0 {
                return Step::Spin;
            }
        }
        let now = Instant::now();
        if self.deadline.is_some_and(|d| now >= d) {
            return Step::TimedOut;
        }
        let spin = match self.strategy {
            WaitStrategy::BusySpin => return Step::Spin,
            WaitStrategy::SpinYield { spin } | WaitStrategy::SpinFutex { spin } => spin,
        };
        if !self.past_spin {
            let spin_until = *self.spin_until.get_or_insert(now + spin);
            if now < spin_until {
                return Step::Spin;
            }
            self.past_spin = true;
        }
        match self.strategy {
            WaitStrategy::SpinFutex { .. } => {
                Step::Sleep(self.deadline.map(|d| d.saturating_duration_since(now)))
            }
            _ => Step::Yield,
        }
    }
}
