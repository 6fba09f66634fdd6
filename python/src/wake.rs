//! What wakes an asyncio receive, with no GIL and no Python: an event
//! loop's bell ([`BellInner`]: an eventfd and the tokens rung), the
//! `Waker` that rings one token on it ([`LoopWaker`]), and the wake-ups
//! armed on one handle ([`Waiting`], which its `close()` wakes). Used by
//! `aio.rs` (the Python side) and `handle.rs` (`close()`).

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::Wake;

/// An event loop's doorbell: an eventfd the loop watches, and the tokens
/// rung since its reader last looked.
pub(crate) struct BellInner {
    pub(crate) fd: OwnedFd,
    pub(crate) rung: Mutex<Vec<u64>>,
}

impl BellInner {
    /// Files `token` as rung, then makes the eventfd readable (in this
    /// order: see `Bell::take` in aio.rs). Any thread, no GIL.
    fn ring(&self, token: u64) {
        self.rung
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(token);
        let one: u64 = 1;
        // SAFETY: `fd` is our open eventfd and `one` a live 8-byte value.
        // A full counter (EAGAIN, 2^64 - 2 rings unread) is already
        // readable: nothing is lost.
        let _ = unsafe { libc::write(self.fd.as_raw_fd(), std::ptr::from_ref(&one).cast(), 8) };
    }
}

/// Rings one token on one loop's bell, once, from any thread.
pub(crate) struct LoopWaker {
    pub(crate) bell: Arc<BellInner>,
    pub(crate) token: u64,
    pub(crate) rung: AtomicBool,
}

impl LoopWaker {
    /// Rings the bell with the token (once; later calls do nothing).
    pub(crate) fn wake_now(&self) {
        if !self.rung.swap(true, Ordering::Relaxed) {
            self.bell.ring(self.token);
        }
    }
}

impl Wake for LoopWaker {
    fn wake(self: Arc<Self>) {
        self.wake_now();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.wake_now();
    }
}

/// The wake-ups armed on one handle (its `Handle`'s), so that `close()`
/// ends the receives that wait on it (they then raise `ClosedError`;
/// `async for` ends).
#[derive(Default)]
pub(crate) struct Waiting {
    wakers: Mutex<Vec<Weak<LoopWaker>>>,
}

impl Waiting {
    pub(crate) fn add(&self, waker: &Arc<LoopWaker>) {
        let mut w = self.wakers.lock().unwrap_or_else(|p| p.into_inner());
        // Those disarmed since are gone: the list stays as long as the
        // receives waiting now.
        w.retain(|w| w.strong_count() > 0);
        w.push(Arc::downgrade(waker));
    }

    /// Wakes every receive waiting on the handle (its `close()`).
    pub(crate) fn wake_all(&self) {
        let wakers = std::mem::take(&mut *self.wakers.lock().unwrap_or_else(|p| p.into_inner()));
        for w in wakers.iter().filter_map(Weak::upgrade) {
            w.wake_now();
        }
    }
}
