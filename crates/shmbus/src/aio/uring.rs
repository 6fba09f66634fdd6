//! The io_uring wake (feature `io-uring`, Linux 6.7+, on a tokio runtime
//! with its I/O driver): a waiting future's futex sleep is an io_uring
//! `FUTEX_WAIT` whose completion makes the ring's fd readable in the
//! runtime's own reactor (epoll). No thread stands between the publisher's
//! `FUTEX_WAKE` and the runtime: the kernel completes the wait (task work
//! on the thread that submitted it, which is the runtime's when it polled
//! the future), epoll reports the ring, the ring's driver task wakes the
//! future's waker.
//!
//! # Invariants
//! - **One ring per thread and runtime**: a ring is made by the first wait
//!   polled on a thread inside a runtime, its fd registered with that
//!   runtime's reactor, its driver task spawned on it. A wait polled in
//!   another runtime, or in a forked child (`pid`), makes its own ring; a
//!   child never submits to, reaps or drops its parent's (leaked there).
//! - **Every registration is in [`TABLE`] until its waker is taken**: the
//!   entry is inserted before its `FUTEX_WAIT` is submitted, so a
//!   completion always finds it; the driver removes the entry of each
//!   completed wait and wakes it; a dropped future removes its entry and
//!   cancels its wait (a completion with no entry is ignored).
//! - **The kernel reads the word, never this process**: as with the
//!   waiter thread, a leaked future's word may be unmapped. A wait made
//!   on an unmapped word completes with `EFAULT` (the future is woken, and
//!   looks for itself); one made before stays queued in the kernel, keyed
//!   by the word's file and offset, until that word rings or the ring
//!   closes.
//! - **A ring whose runtime is gone wakes its waits**: the driver task is
//!   dropped with its runtime; its drop marks the ring dead and wakes
//!   every wait still on it, which then registers again (on a live ring
//!   or with the waiter thread).
//! - **Naps**: a wait with a nap has a linked timeout; its expiry cancels
//!   the `FUTEX_WAIT`, which completes (`ECANCELED`) and wakes the future.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Waker;
use std::time::Instant;

use io_uring::{IoUring, Probe, opcode, squeue, types};
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

use super::mechanism::WhyThread as Fallback;
use super::per_process::PerProcess;
use crate::sync::AtomicU32;

/// Set in every id this backend hands out (the waiter thread's never
/// reach it), so each call goes back to the backend that made the id.
pub(super) const ID_BIT: u64 = 1 << 63;

/// `user_data` of the completions that wake nobody: a linked timeout's and
/// a cancellation's (a registration's id always has [`ID_BIT`]).
const NOBODY: u64 = 0;

/// futex2's flag for a 32-bit word (`FUTEX2_SIZE_U32`), shared: never
/// `FUTEX2_PRIVATE` on a word other processes map.
const FUTEX2_SIZE_U32: u32 = 0x02;

/// Wake on any bitset (`FUTEX_BITSET_MATCH_ANY`): a plain `FUTEX_WAKE`,
/// as the publishers ring, wakes this wait.
const MATCH_ANY: u64 = 0xffff_ffff;

/// Submission entries per ring: each wait takes two (the wait and its
/// timeout) until `submit`, which follows at once.
const SQ_ENTRIES: u32 = 64;

/// Completion entries per ring: the driver reaps them all at each wake,
/// and the kernel keeps what does not fit (`IORING_FEAT_NODROP`) until the
/// next reap.
const CQ_ENTRIES: u32 = 4096;

/// What this process can do, found once: `Ok` if a ring with
/// `FUTEX_WAIT` can be made and the environment does not ask otherwise.
/// An atomic, not a `OnceLock`: a fork while another thread ran the first
/// call would copy a `OnceLock` mid-initialization into the child, whose
/// first call would then wait for ever. Two first calls both look.
pub(super) fn usable() -> Result<(), Fallback> {
    use std::sync::atomic::AtomicU64;
    // 0: not looked yet; else `encode`'s.
    static FOUND: AtomicU64 = AtomicU64::new(0);
    let known = FOUND.load(Ordering::Relaxed);
    if known != 0 {
        return decode(known);
    }
    let found = look();
    FOUND.store(encode(found), Ordering::Relaxed);
    found
}

/// What `usable` finds.
fn look() -> Result<(), Fallback> {
    if std::env::var_os("SHMBUS_AIO_WAKE").is_some_and(|v| v == "thread") {
        return Err(Fallback::Forced);
    }
    if cfg!(any(miri, loom)) {
        // Neither runs io_uring's system calls.
        return Err(Fallback::NoRing(libc::ENOSYS));
    }
    let ring = IoUring::new(2).map_err(|e| Fallback::NoRing(e.raw_os_error().unwrap_or(0)))?;
    let mut probe = Probe::new();
    ring.submitter()
        .register_probe(&mut probe)
        .map_err(|_| Fallback::NoFutexWait)?;
    if probe.is_supported(opcode::FutexWait::CODE) {
        Ok(())
    } else {
        Err(Fallback::NoFutexWait)
    }
}

/// `usable`'s answer as a nonzero word: a tag in the low byte, an errno
/// above it.
fn encode(found: Result<(), Fallback>) -> u64 {
    match found {
        Ok(()) => 1,
        Err(Fallback::Forced) => 2,
        Err(Fallback::NoFutexWait) => 3,
        Err(Fallback::NoRing(errno)) => 4 | (u64::from(errno as u32) << 8),
        // Not found by `look`; kept apart all the same.
        Err(_) => 5,
    }
}

fn decode(word: u64) -> Result<(), Fallback> {
    match word & 0xff {
        1 => Ok(()),
        2 => Err(Fallback::Forced),
        3 => Err(Fallback::NoFutexWait),
        4 => Err(Fallback::NoRing((word >> 8) as u32 as i32)),
        _ => Err(Fallback::NoRuntime),
    }
}

/// Whether a wait polled on this thread now would use a ring (a runtime
/// without an I/O driver is known only after its first wait).
pub(super) fn applies() -> Result<(), Fallback> {
    usable()?;
    let handle = tokio::runtime::Handle::try_current().map_err(|_| Fallback::NoRuntime)?;
    if no_io().contains(&handle.id()) {
        return Err(Fallback::NoIoDriver);
    }
    Ok(())
}

/// The runtimes found without an I/O driver: one id each, never asked
/// again. Per process, as the registrations are: a child never waits on
/// a copy of this lock that another thread of its parent held.
fn no_io() -> MutexGuard<'static, Vec<tokio::runtime::Id>> {
    static NO_IO: PerProcess<Vec<tokio::runtime::Id>> = PerProcess::new();
    NO_IO.lock()
}

/// One ring: its fd in a runtime's reactor, its driver task on that
/// runtime.
struct Ring {
    /// Declared before `uring`: dropped (deregistered from the reactor)
    /// before the ring's fd is closed.
    fd: AsyncFd<RawFd>,
    uring: Mutex<IoUring>,
    pid: u32,
    runtime: tokio::runtime::Id,
    /// False once the driver task is gone (its runtime shut down).
    alive: AtomicBool,
}

impl Ring {
    fn uring(&self) -> MutexGuard<'_, IoUring> {
        // Each use pushes and submits, or reaps, whole: consistent at any
        // panic.
        self.uring.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Pushes `entries` and submits them. False if the ring refused.
    fn submit(&self, entries: &[squeue::Entry]) -> bool {
        let mut uring = self.uring();
        // SAFETY: `push_multiple` requires each entry's buffers to live
        // until the kernel has read them: the only pointers are the
        // futex word (the kernel reads it, and faults there are EFAULT,
        // see the module docs) and a linked timeout's timespec, which the
        // kernel copies when the entry is submitted, below, before the
        // caller's timespec goes.
        if unsafe { uring.submission().push_multiple(entries) }.is_err() {
            return false;
        }
        uring.submit().is_ok()
    }

    /// Takes every completion, and wakes the waits they name.
    fn reap(&self) {
        let mut done = Vec::new();
        {
            let mut uring = self.uring();
            // Bounded: each round empties the queue, and the kernel's
            // overflow list (flushed by the submit) holds at most the
            // waits submitted before.
            for _ in 0..4 {
                done.extend(
                    uring
                        .completion()
                        .map(|c| c.user_data())
                        .filter(|&d| d != NOBODY),
                );
                if !uring.submission().cq_overflow() {
                    break;
                }
                let _ = uring.submit();
            }
        }
        wake_ids(&done);
    }
}

impl fmt::Debug for Ring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ring")
            .field("fd", &self.fd.as_raw_fd())
            .field("pid", &self.pid)
            .field("alive", &self.alive.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// A registration: the ring its wait is on, the waker to wake.
#[derive(Debug)]
struct Entry {
    ring: Arc<Ring>,
    waker: Waker,
}

#[derive(Debug, Default)]
struct Table {
    next: u64,
    entries: HashMap<u64, Entry>,
}

/// This process's registrations.
static TABLE: PerProcess<Table> = PerProcess::new();

thread_local! {
    /// This thread's ring, for the runtime it last waited in.
    static RING: RefCell<Option<Arc<Ring>>> = const { RefCell::new(None) };
}

/// Removes the entries `ids` names and wakes them (outside the lock: a
/// waker may run code).
fn wake_ids(ids: &[u64]) {
    if ids.is_empty() {
        return;
    }
    let due: Vec<Waker> = {
        let mut table = TABLE.lock();
        ids.iter()
            .filter_map(|id| table.entries.remove(id))
            .map(|e| e.waker)
            .collect()
    };
    for w in due {
        w.wake();
    }
}

/// This thread's ring for the current runtime, made (and its driver
/// spawned) if there is none.
fn ring() -> Result<Arc<Ring>, Fallback> {
    usable()?;
    let handle = tokio::runtime::Handle::try_current().map_err(|_| Fallback::NoRuntime)?;
    let pid = crate::sys::fork::current();
    RING.with(|cell| {
        let mut cell = cell.borrow_mut();
        if let Some(r) = cell.as_ref() {
            if r.pid != pid {
                // A forked child's copy of its parent's: never used,
                // never dropped here (its drop would deregister and close
                // what the parent's runtime holds).
                std::mem::forget(cell.take());
            } else if r.runtime == handle.id() && r.alive.load(Ordering::Acquire) {
                return Ok(r.clone());
            }
        }
        // A runtime found without an I/O driver takes the thread at once,
        // before a ring is made for nothing.
        if no_io().contains(&handle.id()) {
            return Err(Fallback::NoIoDriver);
        }
        let uring = IoUring::builder()
            .setup_cqsize(CQ_ENTRIES)
            .build(SQ_ENTRIES)
            .map_err(|e| Fallback::NoRing(e.raw_os_error().unwrap_or(0)))?;
        let fd = in_reactor(&handle, uring.as_raw_fd())?;
        let ring = Arc::new(Ring {
            fd,
            uring: Mutex::new(uring),
            pid,
            runtime: handle.id(),
            alive: AtomicBool::new(true),
        });
        handle.spawn(drive(Driver(ring.clone())));
        *cell = Some(ring.clone());
        Ok(ring)
    })
}

/// `fd` registered with the current runtime's reactor. tokio panics where
/// the runtime has no I/O driver, and has no call that asks first: the
/// panic is caught (its message kept from this thread's stderr; another
/// thread's panic meanwhile is reported as ever) and the runtime noted,
/// so that its later waits use the waiter thread without asking again.
fn in_reactor(handle: &tokio::runtime::Handle, fd: RawFd) -> Result<AsyncFd<RawFd>, Fallback> {
    let mut no_io = no_io();
    if no_io.contains(&handle.id()) {
        return Err(Fallback::NoIoDriver);
    }
    let me = std::thread::current().id();
    let prev: Arc<dyn Fn(&std::panic::PanicHookInfo<'_>) + Send + Sync> =
        Arc::from(std::panic::take_hook());
    let others = prev.clone();
    std::panic::set_hook(Box::new(move |info| {
        if std::thread::current().id() != me {
            others(info);
        }
    }));
    let registered = std::panic::catch_unwind(|| {
        // SAFETY: `fd` is the ring's, open until the ring is dropped, and
        // the `AsyncFd` is dropped first (`Ring`'s field order).
        unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }
    });
    drop(std::panic::take_hook());
    std::panic::set_hook(Box::new(move |info| prev(info)));
    match registered {
        Ok(Ok(fd)) => Ok(fd),
        Ok(Err(e)) => Err(Fallback::NoRing(
            e.into_parts().1.raw_os_error().unwrap_or(0),
        )),
        Err(_) => {
            no_io.push(handle.id());
            Err(Fallback::NoIoDriver)
        }
    }
}

/// The driver task's hold on its ring: dropped with the task (its runtime
/// shut down), it marks the ring dead and wakes every wait on it.
struct Driver(Arc<Ring>);

impl Drop for Driver {
    fn drop(&mut self) {
        // Release, paired with the Acquire in `ring`: a thread that sees
        // the ring alive made its entry while the driver still ran, and
        // is woken below; one that sees it dead makes another ring.
        self.0.alive.store(false, Ordering::Release);
        let mine: Vec<u64> = TABLE
            .lock()
            .entries
            .iter()
            .filter(|(_, e)| Arc::ptr_eq(&e.ring, &self.0))
            .map(|(&id, _)| id)
            .collect();
        wake_ids(&mine);
    }
}

/// Reaps the ring whenever the reactor says its fd is readable.
async fn drive(driver: Driver) {
    let ring = &driver.0;
    loop {
        let Ok(mut ready) = ring.fd.readable().await else {
            return;
        };
        ring.reap();
        // A completion after the reap makes the fd readable again (epoll
        // reports it as a new edge), so clearing here loses none.
        ready.clear_ready();
    }
}

/// Registers `waker` to be woken when `word` no longer holds `seen`, or at
/// `nap_until`, through this thread's ring. `Err`: nothing registered, use
/// the waiter thread.
pub(super) fn register(
    word: &AtomicU32,
    seen: u32,
    nap_until: Option<Instant>,
    waker: &Waker,
) -> Result<u64, Fallback> {
    let ring = ring()?;
    let id = {
        let mut table = TABLE.lock();
        let id = table.next | ID_BIT;
        table.next = (table.next + 1) & !ID_BIT;
        table.entries.insert(
            id,
            Entry {
                ring: ring.clone(),
                waker: waker.clone(),
            },
        );
        id
    };
    let wait = opcode::FutexWait::new(
        word.as_ptr().cast_const(),
        u64::from(seen),
        MATCH_ANY,
        FUTEX2_SIZE_U32,
    )
    .build()
    .user_data(id);
    let submitted = match nap_until {
        None => ring.submit(&[wait]),
        Some(at) => {
            let left = at.saturating_duration_since(Instant::now());
            let timespec = types::Timespec::from(left);
            let timeout = opcode::LinkTimeout::new(&timespec)
                .build()
                .user_data(NOBODY);
            ring.submit(&[wait.flags(squeue::Flags::IO_LINK), timeout])
        }
    };
    if submitted {
        Ok(id)
    } else {
        let _ = TABLE.lock().entries.remove(&id);
        Err(Fallback::NoRing(libc::EBUSY))
    }
}

/// True if registration `id` still waits (its waker replaced by `waker`
/// when that would not wake the same task).
pub(super) fn refresh(id: u64, waker: &Waker) -> bool {
    match TABLE.lock().entries.get_mut(&id) {
        Some(e) => {
            if !e.waker.will_wake(waker) {
                e.waker = waker.clone();
            }
            true
        }
        None => false,
    }
}

/// Whether registration `id` still waits.
pub(super) fn is_registered(id: u64) -> bool {
    TABLE.lock().entries.contains_key(&id)
}

/// Removes registration `id` if it still waits, and cancels its wait.
pub(super) fn remove(id: u64) {
    let Some(entry) = TABLE.lock().entries.remove(&id) else {
        return;
    };
    // A ring of this process (entries are per process); its wait's
    // completion, and the cancel's, find no entry.
    let cancel = opcode::AsyncCancel::new(id).build().user_data(NOBODY);
    let _ = entry.ring.submit(&[cancel]);
}

/// How many registrations wait now.
pub(super) fn registered() -> usize {
    TABLE.lock().entries.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_answer_of_the_look_survives_its_encoding() {
        for found in [
            Ok(()),
            Err(Fallback::Forced),
            Err(Fallback::NoFutexWait),
            Err(Fallback::NoRing(libc::EPERM)),
            Err(Fallback::NoRing(libc::ENOSYS)),
        ] {
            let word = encode(found);
            assert_ne!(word, 0, "0 means not looked yet");
            assert_eq!(decode(word), found);
        }
    }
}
