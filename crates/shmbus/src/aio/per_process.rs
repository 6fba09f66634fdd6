//! A process-wide value that a forked child never shares with its parent.
//!
//! A child's copy of its parent's value may be locked (another thread of
//! the parent held the lock at the fork: a child that waits on it waits
//! for ever), and it names the parent's tasks and rings. So each process
//! makes its own at first use, keyed by pid, and leaves the copy of its
//! parent's untouched: leaked, never locked, read or dropped there.

use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Mutex, MutexGuard};

/// One process's value and the pid it belongs to.
#[derive(Debug)]
struct Owned<T> {
    pid: u32,
    value: Mutex<T>,
}

/// A `Mutex<T>` per process (see the module docs).
#[derive(Debug)]
pub(super) struct PerProcess<T> {
    /// This process's value (a leaked `Owned`), or, in a forked child
    /// until its first use, its parent's.
    current: AtomicPtr<Owned<T>>,
}

impl<T: Default> PerProcess<T> {
    pub(super) const fn new() -> Self {
        PerProcess {
            current: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// This process's value, locked. A panic while the lock was held
    /// poisons it; every user keeps the value consistent at each step
    /// (one insert or remove), so the guard is taken through the poison.
    pub(super) fn lock(&'static self) -> MutexGuard<'static, T> {
        let pid = crate::sys::fork::current();
        // Acquire, paired with the AcqRel CAS below: the `Owned` it points
        // to was written before it was published.
        let mut current = self.current.load(Ordering::Acquire);
        loop {
            // SAFETY: every pointer stored in `current` comes from
            // `Box::into_raw` and is never freed (a replaced one is
            // leaked), so a non-null one points to a live `Owned`. Only
            // its `pid` is read before it is known to be this process's.
            if let Some(mine) = unsafe { current.as_ref() }.filter(|p| p.pid == pid) {
                return mine.value.lock().unwrap_or_else(|e| e.into_inner());
            }
            let fresh = Box::into_raw(Box::new(Owned {
                pid,
                value: Mutex::default(),
            }));
            match self
                .current
                .compare_exchange(current, fresh, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => current = fresh,
                Err(now) => {
                    // Another thread of this process made one first.
                    // SAFETY: `fresh` came from `Box::into_raw` above and
                    // was never published.
                    drop(unsafe { Box::from_raw(fresh) });
                    current = now;
                }
            }
        }
    }
}
