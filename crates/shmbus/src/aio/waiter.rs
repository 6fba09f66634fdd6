//! The per-process waiter thread: one `futex_waitv` on every registered
//! doorbell word and on [`CONTROL`], and the wakers to wake when a word
//! moves (or a nap elapses).
//!
//! The thread holds copies of addresses only. It dereferences a
//! registered word only while it holds the registry lock and the
//! registration is still there; a future removes its registration (by id,
//! under that lock) in its `Drop`, and it borrows its handle for its whole
//! life, so a registered word's region is mapped whenever the thread reads
//! it. The kernel reads the words given to `futex_waitv` itself: a word
//! unmapped while the thread sleeps on it gives `EFAULT` (or a spurious
//! return), never a fault in this process, and the next snapshot no
//! longer holds it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32 as StdAtomicU32, Ordering as StdOrdering};
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
/// Returns the registration's id, for [`refresh`] and [`remove`].
pub(super) fn register(
    word: &AtomicU32,
    seen: u32,
    nap_until: Option<Instant>,
    waker: Waker,
) -> u64 {
    let id = {
        let mut reg = registry();
        let pid = std::process::id();
        if reg.waiter_pid != pid {
            // First use here, or a forked child (threads do not survive
            // fork): start this process's waiter.
            std::thread::Builder::new()
                .name("shmbus-aio".into())
                .spawn(run)
                .expect("spawn the shmbus-aio waiter thread");
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
                waker,
            },
        );
        id
    };
    // Release, paired with the waiter's SeqCst load of CONTROL before its
    // snapshot: a waiter that read the old value sleeps on it and the
    // kernel returns at once; one that read the new one saw the insert
    // (the registry lock orders it anyway).
    CONTROL.fetch_add(1, Ordering::SeqCst);
    wait::futex_wake_all(&CONTROL);
    id
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

/// Wakes in the waiter thread that found the registry empty or the words
/// unchanged: counts the loop's turns, for the idle test.
pub(super) static TURNS: StdAtomicU32 = StdAtomicU32::new(0);

/// The waiter thread's loop: snapshot, sleep on all words at once, wake
/// whose word moved or whose nap is over.
fn run() {
    let mut words: Vec<(usize, u32)> = Vec::new();
    let mut turn = 0usize;
    loop {
        TURNS.fetch_add(1, StdOrdering::Relaxed);
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
        sleep(control, &words, timeout, turn);
        turn = turn.wrapping_add(1);
        fire();
    }
}

/// One sleep: `futex_waitv` on CONTROL and every word, or (more than it
/// takes, or no `futex_waitv` on this kernel) one word at a time,
/// rotating, for at most [`POLL_NAP`] as the select does.
fn sleep(control: u32, words: &[(usize, u32)], timeout: Option<Duration>, turn: usize) {
    // SAFETY: the addresses are only handed to the kernel here (which
    // reads them itself and reports EFAULT for an unmapped one); the
    // references below are never dereferenced in this process.
    let all: Vec<(&AtomicU32, u32)> = std::iter::once((&CONTROL, control))
        .chain(
            words
                .iter()
                .map(|&(w, seen)| (unsafe { &*(w as *const AtomicU32) }, seen)),
        )
        .collect();
    if all.len() <= WAITV_MAX && wait::futex_waitv(&all, timeout) {
        return;
    }
    let nap = Some(timeout.map_or(POLL_NAP, |t| t.min(POLL_NAP)));
    let (word, seen) = if words.is_empty() {
        (&CONTROL, control)
    } else {
        all[turn % all.len()]
    };
    let nap = if words.is_empty() { timeout } else { nap };
    wait::futex_wait(word, seen, nap);
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
