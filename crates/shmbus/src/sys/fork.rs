//! Handles in a forked child. `fork()` copies every handle into the child,
//! but what a handle's drop gives back (a held block, a loaned block, a
//! registry entry, a stream side's pid, the journal's threads) is still
//! the parent's: the child's copy must leave it alone. A handle records the
//! process that made it, and its drop does nothing in any other process.
//!
//! A sample's drop is on the receive path, so "which process is this" is
//! no system call: the pid is cached, and a `pthread_atfork` child handler
//! (registered before the cache is first filled) clears the cache in every
//! child made by `fork(3)`, so the child asks the kernel once. A child made
//! by a raw `clone` system call without `fork(3)`'s handlers is not seen;
//! it must not drop handles it inherited.

use std::sync::atomic::{AtomicU32, Ordering};

/// This process's pid, or 0 before it was asked (and in a fresh child).
/// Relaxed: it is one word read and written by this process's threads
/// alone; a racing reader at worst asks the kernel itself.
static PID: AtomicU32 = AtomicU32::new(0);

#[cfg(not(miri))]
extern "C" fn forget_in_child() {
    PID.store(0, Ordering::Relaxed);
}

/// This process's pid, without a system call after the first (and the
/// first in each child `fork(3)` made).
pub(crate) fn current() -> u32 {
    let cached = PID.load(Ordering::Relaxed);
    if cached != 0 {
        return cached;
    }
    // Whether the child handler is in place; without it a cached pid
    // could outlive a fork, so nothing is cached.
    static HANDLER: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    #[cfg(not(miri))]
    let registered = *HANDLER.get_or_init(|| {
        // SAFETY: registers a handler that only stores to an atomic, which
        // is async-signal-safe as a fork child handler must be.
        unsafe { libc::pthread_atfork(None, None, Some(forget_in_child)) == 0 }
    });
    // Miri has no pthread_atfork: ask every time there.
    #[cfg(miri)]
    let registered = HANDLER.get().is_some();
    let pid = std::process::id();
    if registered {
        PID.store(pid, Ordering::Relaxed);
    }
    pid
}

/// The process a handle was made in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Origin(u32);

impl Origin {
    /// This process.
    pub(crate) fn here() -> Self {
        Origin(current())
    }

    /// Whether this is still the process that made the handle: false in a
    /// child forked since, whose copy of the handle owns nothing shared.
    pub(crate) fn is_current(self) -> bool {
        current() == self.0
    }

    /// Its pid.
    pub(crate) fn pid(self) -> u32 {
        self.0
    }
}
