//! How a reader that finds nothing waits: spin, spin then yield, or spin then
//! sleep on a futex in shared memory.
//!
//! The futex is always *shared* (never the private-futex flag): a private futex is
//! keyed by the waiter's address space, and another process's wake would
//! never find it.
//!
//! The sleep protocol (no lost wake-up) uses one futex word F on the control
//! page: bit 0 says "a subscriber may be asleep", the other bits count wakes.
//!
//! ```text
//! sleeper:   f = F.fetch_or(1) | 1 (SeqCst) ; fence(SeqCst) ; re-check ; futex_wait(F, f)
//! publisher: cursor (Release) ; fence(SeqCst) ; if F & 1 { F = (F & !1) + 2 ; futex_wake(F, all) }
//! ```
//!
//! The SeqCst fences order the sleeper's `fetch_or` against the publisher's
//! load of F (a Dekker pattern): either the publisher sees the bit and wakes,
//! or the sleeper's re-check sees the new cursor. A bump after the sleeper
//! read f makes `futex_wait` return at once (the kernel compares F with f).
//! A sleeper that set the bit after the bump read F through the publisher's
//! Release CAS, and so sees the cursor in its re-check.
//!
//! The publisher's fence is the one cost it pays per message for this, and
//! it is a full `mfence` that waits for every pending store. So where the
//! kernel offers it, the fence is made asymmetric (the technique of liburcu
//! and folly's `asymmetricLightBarrier`): a publisher process registers with
//! `membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED)` and then needs only
//! a compiler fence, while a sleeper, about to sleep anyway, calls
//! `membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED)`, which runs a full barrier
//! on every CPU running a registered process (a context switch is one for
//! those not running). Either the publisher's flag load comes after that
//! barrier and sees the flag, or its cursor store came before it and the
//! sleeper's re-check sees the cursor. A sleeper that cannot make the call
//! sleeps at most [`UNSURE_SLEEP`] at a time. loom and Miri check the
//! symmetric form (two SeqCst fences); the substitution is the standard one.
//!
//! Why a flag and not a count of sleepers: a subscriber killed in its sleep
//! would leave a count up for good, and the publisher would make a wake
//! system call on every message forever. A stale flag costs one wake: the
//! publisher clears it, and only live sleepers set it again. While no one
//! sleeps the publisher pays one fence and one load, and no system call.

use std::time::{Duration, Instant};

use crate::sync::AtomicU32;

/// How long a sleeper whose full barrier failed sleeps before re-checking:
/// without the barrier, a wake-up may be lost, and this bounds the delay.
pub const UNSURE_SLEEP: Duration = Duration::from_millis(1);

/// Registers this process for the asymmetric barrier (once); whether a
/// publisher here may use a compiler fence in place of `mfence`.
#[cfg(not(any(loom, miri)))]
pub(crate) fn light_publisher_barrier() -> bool {
    use rustix::thread::{MembarrierCommand, membarrier};
    use std::sync::atomic::{AtomicU8, Ordering};
    // 0: not asked yet, 1: refused, 2: registered. An atomic, not a
    // `OnceLock`: a fork while another thread runs the first call would
    // copy a `OnceLock` mid-initialization into the child, whose first
    // call would then wait for ever. Two first calls both register (the
    // kernel takes that twice).
    static REGISTERED: AtomicU8 = AtomicU8::new(0);
    match REGISTERED.load(Ordering::Relaxed) {
        0 => {
            let yes = membarrier(MembarrierCommand::RegisterGlobalExpedited).is_ok();
            REGISTERED.store(1 + u8::from(yes), Ordering::Relaxed);
            yes
        }
        known => known == 2,
    }
}

#[cfg(any(loom, miri))]
pub(crate) fn light_publisher_barrier() -> bool {
    false
}

/// The sleeper's side of the barrier pair: a SeqCst fence, and a
/// membarrier for publishers that use a compiler fence. False when that
/// call failed, so a light publisher may not be ordered against us.
pub(crate) fn heavy_barrier() -> bool {
    crate::sync::fence(crate::sync::Ordering::SeqCst);
    #[cfg(not(any(loom, miri)))]
    {
        use rustix::thread::{MembarrierCommand, membarrier};
        membarrier(MembarrierCommand::GlobalExpedited).is_ok()
    }
    #[cfg(any(loom, miri))]
    true
}

/// The light half of the asymmetric barrier pair (a waker's; the other
/// side makes [`heavy_barrier`]): a compiler fence where this process
/// registered for the asymmetric barrier (`light`), else a SeqCst fence.
#[inline(always)]
pub(crate) fn light_barrier(light: bool) {
    if light {
        std::sync::atomic::compiler_fence(crate::sync::Ordering::SeqCst);
    } else {
        crate::sync::fence(crate::sync::Ordering::SeqCst);
    }
}

/// Bit 0 of a doorbell word: somebody may be asleep on it.
const SLEEPERS: u32 = 1;

/// The waker's half of the protocol above, after it stored what the sleeper
/// waits for (Release). `light` says this process registered for the
/// asymmetric barrier ([`light_publisher_barrier`]).
#[inline]
pub(crate) fn ring(bell: &AtomicU32, light: bool) {
    use crate::sync::{Ordering, fence};
    // Paired with the sleeper's barrier in `sleep` (Dekker): a sleeper's
    // flag is seen here, or its re-check sees what was just stored. With
    // the asymmetric barrier, the sleeper's membarrier does the hardware
    // half of this fence.
    if light {
        std::sync::atomic::compiler_fence(Ordering::SeqCst);
    } else {
        fence(Ordering::SeqCst);
    }
    if bell.load(Ordering::Relaxed) & SLEEPERS != 0 {
        wake(bell);
    }
}

#[cold]
fn wake(bell: &AtomicU32) {
    use crate::sync::Ordering;
    // Release, paired with the sleeper's SeqCst `fetch_or`, which reads this
    // value if it comes later, and so sees what the waker stored before.
    let _ = bell.fetch_update(Ordering::Release, Ordering::Relaxed, |f| {
        Some((f & !SLEEPERS).wrapping_add(2))
    });
    futex_wake_all(bell);
}

/// The sleeper's half: raises the flag, orders it against the waker, and
/// sleeps on `bell` for at most `timeout` if `still_nothing()` holds after
/// that. Returns on a wake, a timeout, a signal or spuriously: callers
/// re-check.
pub(crate) fn sleep(
    bell: &AtomicU32,
    timeout: Option<Duration>,
    still_nothing: impl FnOnce() -> bool,
) {
    let seen = raise_flag(bell);
    // Paired with the fence in `ring`: if the waker missed our flag, we see
    // what it stored before ringing.
    let timeout = if heavy_barrier() {
        timeout
    } else {
        Some(timeout.map_or(UNSURE_SLEEP, |t| t.min(UNSURE_SLEEP)))
    };
    if still_nothing() {
        futex_wait(bell, seen, timeout);
    }
}

/// The first step of a sleep: raises the sleepers flag on `bell` and
/// returns the value to sleep on.
pub(crate) fn raise_flag(bell: &AtomicU32) -> u32 {
    // SeqCst RMW: reads the waker's Release bump if that came first.
    bell.fetch_or(SLEEPERS, crate::sync::Ordering::SeqCst) | SLEEPERS
}

/// Sleeps while every `word == expected` of `words` (at most 128), for at
/// most `timeout`: one `futex_waitv`. False if this kernel lacks it (the
/// caller sleeps some other way); true when it returned for any reason (a
/// wake, a changed word, a signal, the timeout): callers re-check.
#[cfg(not(any(loom, miri)))]
pub(crate) fn futex_waitv(words: &[(&AtomicU32, u32)], timeout: Option<Duration>) -> bool {
    let words: Vec<(*const AtomicU32, u32)> = words
        .iter()
        .map(|&(w, v)| (w as *const AtomicU32, v))
        .collect();
    !matches!(futex_waitv_at(&words, timeout), Waitv::Missing)
}

/// Why a [`futex_waitv_at`] returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Waitv {
    /// This kernel lacks `futex_waitv` (`ENOSYS`; also under Miri and loom).
    Missing,
    /// A wake on the word at this index.
    Woken(usize),
    /// The timeout passed.
    TimedOut,
    /// Anything else: a word did not hold its value at the call
    /// (`EAGAIN`), a signal, an unmapped word (`EFAULT`).
    Other,
}

/// [`futex_waitv`] on addresses, saying why it returned: the kernel alone
/// reads them (an unmapped one is `EFAULT`, a return), so they may be
/// stale, as the `aio` waiter's may be.
#[cfg(not(any(loom, miri)))]
pub(crate) fn futex_waitv_at(
    words: &[(*const AtomicU32, u32)],
    timeout: Option<Duration>,
) -> Waitv {
    use rustix::thread::futex;
    use rustix::time::{ClockId, Timespec, clock_gettime};
    static MISSING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if MISSING.load(std::sync::atomic::Ordering::Relaxed) {
        return Waitv::Missing;
    }
    let waiters: Vec<futex::Wait> = words
        .iter()
        .map(|&(word, expected)| {
            let mut w = futex::Wait::new();
            w.val = u64::from(expected);
            // An AtomicU32 has u32's layout; only the kernel reads it.
            w.uaddr = futex::WaitPtr::new(word.cast_mut().cast());
            // No FUTEX2_PRIVATE: shared, keyed by the physical page.
            w.flags = futex::WaitFlags::SIZE_U32;
            w
        })
        .collect();
    // futex_waitv's timeout is absolute, on the clock named.
    let at = timeout.map(|d| {
        let now = clock_gettime(ClockId::Monotonic);
        let d = d.min(Duration::from_secs(1 << 32));
        let mut sec = now.tv_sec + d.as_secs() as i64;
        let mut nsec = now.tv_nsec + i64::from(d.subsec_nanos());
        if nsec >= 1_000_000_000 {
            sec += 1;
            nsec -= 1_000_000_000;
        }
        Timespec {
            tv_sec: sec,
            tv_nsec: nsec as _,
        }
    });
    match futex::waitv(
        &waiters,
        futex::WaitvFlags::empty(),
        at.as_ref(),
        ClockId::Monotonic,
    ) {
        Err(rustix::io::Errno::NOSYS) => {
            MISSING.store(true, std::sync::atomic::Ordering::Relaxed);
            Waitv::Missing
        }
        Ok(i) => Waitv::Woken(i),
        Err(rustix::io::Errno::TIMEDOUT) => Waitv::TimedOut,
        Err(_) => Waitv::Other,
    }
}

/// Miri and loom model no `futex_waitv`: the caller's fallback runs.
#[cfg(any(loom, miri))]
pub(crate) fn futex_waitv(_words: &[(&AtomicU32, u32)], _timeout: Option<Duration>) -> bool {
    false
}

#[cfg(any(loom, miri))]
pub(crate) fn futex_waitv_at(
    _words: &[(*const AtomicU32, u32)],
    _timeout: Option<Duration>,
) -> Waitv {
    Waitv::Missing
}

/// What a subscriber does while there is nothing to read (and a stream's
/// producer while there is no room, its consumer while there is nothing):
/// set by [`OpenOptions::wait_strategy`](crate::OpenOptions::wait_strategy),
/// [`stream::Options::wait_strategy`](crate::stream::Options::wait_strategy), or given to a heap
/// bus's `subscribe`. Every strategy still stops at the call's [`Wait`].
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use shmbus::{OpenOptions, Publisher, Received, Start, Wait, WaitStrategy};
///
/// // The default: spin 50 µs, then sleep on the futex.
/// assert_eq!(
///     WaitStrategy::default(),
///     WaitStrategy::SpinFutex { spin: Duration::from_micros(50) }
/// );
/// let opts = OpenOptions::default().wait_strategy(WaitStrategy::SpinYield { spin: Duration::ZERO });
///
/// let mut publisher = Publisher::<u64, _>::on_heap(8)?;
/// let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::BusySpin);
/// publisher.publish(&1);
/// assert_eq!(subscriber.recv(Wait::For(Duration::from_millis(10))), Some(Received::Message(1)));
/// # Ok::<(), shmbus::CreateError>(())
/// ```
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
#[cfg(not(any(loom, miri)))]
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
#[cfg(not(any(loom, miri)))]
pub(crate) fn futex_wake_all(word: &AtomicU32) {
    use rustix::thread::futex;
    let _ = futex::wake(word, futex::Flags::empty(), i32::MAX as u32);
}

// Miri models the futex system call through libc, but not rustix's raw
// system calls (nor its libc backend's pointer casts under strict provenance).
#[cfg(all(miri, not(loom)))]
pub(crate) fn futex_wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) {
    let ts = timeout.map(|d| libc::timespec {
        tv_sec: d.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: libc::c_long::from(d.subsec_nanos() as i32),
    });
    let ts_ptr = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `word` is a live AtomicU32 and `ts_ptr` null or a live timespec.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            ts_ptr,
        )
    };
}

#[cfg(all(miri, not(loom)))]
pub(crate) fn futex_wake_all(word: &AtomicU32) {
    // SAFETY: `word` is a live AtomicU32.
    unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, i32::MAX) };
}

// Loom cannot model a system call. Its futex blocks until the word changes
// and never wakes spuriously: a lost wake-up then loops forever, which loom
// reports, so the model checks the counter protocol above.
#[cfg(loom)]
pub(crate) fn futex_wait(word: &AtomicU32, expected: u32, _timeout: Option<Duration>) {
    while word.load(crate::sync::Ordering::SeqCst) == expected {
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

/// How long a blocking call may wait: every receive, push and pop of every
/// kind takes one.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use shmbus::{Publisher, Start, Wait, WaitStrategy};
///
/// let publisher = Publisher::<u64, _>::on_heap(8)?;
/// let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default());
/// assert_eq!(subscriber.recv(Wait::Never), None);
/// assert_eq!(subscriber.recv(Wait::For(Duration::from_millis(1))), None);
/// # Ok::<(), shmbus::CreateError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Do not wait: report "nothing now" at once.
    Never,
    /// Wait up to this long.
    For(Duration),
    /// Wait as long as it takes (a stream's side still stops when its peer
    /// is gone).
    Forever,
}

impl Wait {
    /// The deadline this wait ends at, from now: `None` for `Forever`.
    pub(crate) fn deadline(self) -> Option<Instant> {
        match self {
            Wait::Never => Some(Instant::now()),
            Wait::For(d) => Some(Instant::now() + d),
            Wait::Forever => None,
        }
    }
}
