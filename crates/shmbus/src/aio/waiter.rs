//! The per-process waiter thread: one `futex_waitv` on every registered
//! doorbell word and on [`CONTROL`], and the wakers to wake when a word
//! moves (or a nap elapses).
//!
//! The thread holds copies of addresses only. It dereferences a
//! registered word only while it holds the registry lock and the
//! registration is still there; a future removes its registration (by id,
//! under that lock) in its `Drop`, and it borrows its handle for its whole
//! life, so a registered word's region is mapped whenever the thread reads
//! it. The words of a sleep are handed to the kernel as addresses (no
//! reference is made to them outside the lock): a word unmapped while the
//! thread sleeps on it gives `EFAULT` (or a spurious return), never a
//! fault in this process, and the next snapshot no longer holds it.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::task::Waker;
use std::time::{Duration, Instant};

use crate::select::{POLL_NAP, WAITV_MAX};
use crate::sync::{AtomicU32, Ordering};
use crate::wait;

/// Bumped (and futex-woken, shared) whenever a registration is added, so
/// the waiter takes a new snapshot. Process-local, but woken as a shared
/// futex like every other word (`wait::futex_wake_all` never passes the
/// private flag).
static CONTROL: AtomicU32 = AtomicU32::new(0);

/// One future's wish to be woken.
#[derive(Debug)]
struct Registration {
    /// The address of the doorbell word (an `AtomicU32` in a mapped region).
    word: usize,
    /// The value seen after raising the sleepers flag.
    seen: u32,
    /// Wake at this instant even if the word did not move.
    nap_until: Option<Instant>,
    waker: Waker,
}

#[derive(Debug, Default)]
struct Registry {
    next_id: u64,
    regs: HashMap<u64, Registration>,
    /// The pid the waiter thread runs in (a forked child has none).
    waiter_pid: u32,
}

fn registry() -> MutexGuard<'static, Registry> {
    static REGISTRY: OnceLock<Mutex<Registry>> = OnceLock::new();
    // A panic while holding the lock leaves the map consistent (every
    // change is one insert or remove): carry on through a poisoning.
    REGISTRY
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// Registers `waker` to be woken when `word` no longer holds `seen`, or at
/// `nap_until`; starts the waiter thread in this process if needed.
/// Returns the registration's id, for [`refresh`] and [`remove`]; `None`
/// (nothing registered) if the waiter thread could not be started.
pub(super) fn register(
    word: &AtomicU32,
    seen: u32,
    nap_until: Option<Instant>,
    waker: &Waker,
) -> Option<u64> {
    let id = {
        let mut reg = registry();
        let pid = std::process::id();
        if reg.waiter_pid != pid {
            // First use here, or a forked child (threads do not survive
            // fork): start this process's waiter.
            std::thread::Builder::new()
                .name("shmbus-aio".into())
                .spawn(run)
                .ok()?;
            reg.waiter_pid = pid;
        }
        let id = reg.next_id;
        reg.next_id += 1;
        reg.regs.insert(
            id,
            Registration {
                word: word as *const AtomicU32 as usize,
                seen,
                nap_until,
                waker: waker.clone(),
            },
        );
        id
    };
    // After the insert: a waiter that loaded the old CONTROL before its
    // snapshot sleeps on that value, and the kernel returns at once; one
    // that loaded the new one takes its snapshot after the insert (the
    // registry lock orders the two).
    CONTROL.fetch_add(1, Ordering::SeqCst);
    wait::futex_wake_all(&CONTROL);
    Some(id)
}

/// True if registration `id` is still waiting (its waker is replaced by
/// `waker` when it would not wake the same task); false if the waiter
/// already woke and dropped it.
pub(super) fn refresh(id: u64, waker: &Waker) -> bool {
    let mut reg = registry();
    match reg.regs.get_mut(&id) {
        Some(r) => {
            if !r.waker.will_wake(waker) {
                r.waker = waker.clone();
            }
            true
        }
        None => false,
    }
}

/// Removes registration `id` if it is still there (a dropped future).
pub(super) fn remove(id: u64) {
    let _ = registry().regs.remove(&id);
}

/// How many registrations wait now: a test's check that dropped futures
/// and a shut-down runtime leave none behind.
pub(super) fn registered() -> usize {
    registry().regs.len()
}

/// The waiter thread's loop: snapshot, sleep on all words at once, wake
/// whose word moved or whose nap is over.
fn run() {
    let mut words: Vec<(usize, u32)> = Vec::new();
    loop {
        // Read before the snapshot: a registration made after it bumps
        // CONTROL, and the sleep below returns at once.
        let control = CONTROL.load(Ordering::SeqCst);
        let mut timeout: Option<Duration> = None;
        words.clear();
        {
            let reg = registry();
            let now = Instant::now();
            for r in reg.regs.values() {
                words.push((r.word, r.seen));
                if let Some(at) = r.nap_until {
                    let left = at.saturating_duration_since(now);
                    timeout = Some(timeout.map_or(left, |t| t.min(left)));
                }
            }
        }
        sleep(control, &words, timeout);
        fire();
    }
}

/// One sleep: `futex_waitv` on CONTROL and every word; with more words
/// than it takes, or no `futex_waitv` on this kernel, a nap of at most
/// [`POLL_NAP`] on CONTROL alone, after which [`fire`] looks at every
/// word (under the lock, so never at an unmapped one): wakes up to 1 ms
/// late then, as the select's rotation is.
fn sleep(control: u32, words: &[(usize, u32)], timeout: Option<Duration>) {
    let all: Vec<(*const AtomicU32, u32)> =
        std::iter::once((&CONTROL as *const AtomicU32, control))
            .chain(words.iter().map(|&(w, seen)| (w as *const AtomicU32, seen)))
            .collect();
    if all.len() <= WAITV_MAX && wait::futex_waitv_at(&all, timeout) {
        return;
    }
    let nap = if words.is_empty() {
        timeout
    } else {
        Some(timeout.map_or(POLL_NAP, |t| t.min(POLL_NAP)))
    };
    wait::futex_wait(&CONTROL, control, nap);
}

/// Drops every registration whose word moved or whose nap is over, and
/// wakes its waker (after the lock is released: a waker may run code).
fn fire() {
    let mut due: Vec<Waker> = Vec::new();
    {
        let mut reg = registry();
        let now = Instant::now();
        reg.regs.retain(|_, r| {
            // SAFETY: the registration is present and we hold the registry
            // lock, so its future is alive, still borrowing the handle
            // whose region holds this word (see the module docs).
            let word = unsafe { &*(r.word as *const AtomicU32) };
            // SeqCst, as the sleeper's own re-check after `futex_wait`.
            let moved = word.load(Ordering::SeqCst) != r.seen;
            let napped = r.nap_until.is_some_and(|at| now >= at);
            if moved || napped {
                due.push(r.waker.clone());
                false
            } else {
                true
            }
        });
    }
    for w in due {
        w.wake();
    }
}
