//! The per-process waiter thread: one `futex_waitv` on every registered
//! doorbell word and on [`CONTROL`], and the wakers to wake when a word
//! moves (or a nap elapses).
//!
//! The thread holds copies of addresses only, and never reads a
//! registered word itself: it hands the addresses to the kernel, and
//! `futex_waitv`'s answer (the index of the word rung) says whom to wake.
//! A future removes its registration (by id) in its `Drop`, but a future
//! can be leaked (`mem::forget` is safe) and its handle then dropped, its
//! region unmapped: the kernel reports such a word as `EFAULT`, never a
//! fault in this process. Where the answer names no word (a word already
//! moved, a signal, `EFAULT`, the fallback's nap), the waiter asks the
//! kernel about each word (a `FUTEX_WAIT` with a zero timeout) and wakes
//! and drops the registrations of those that moved or are gone.
//!
//! Each process has its own registry and thread (`PerProcess`, keyed
//! by pid): a forked child inherits neither thread nor registration, and
//! never locks the copy of its parent's registry.

use std::collections::HashMap;
use std::sync::MutexGuard;
use std::task::Waker;
use std::time::{Duration, Instant};

use super::per_process::PerProcess;
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
    /// Whether this process's waiter thread was started.
    waiter_started: bool,
}

/// This process's registry (see `PerProcess`: a forked child makes its
/// own and never touches its parent's).
static REGISTRY: PerProcess<Registry> = PerProcess::new();

fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock()
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
        if !reg.waiter_started {
            // First use in this process, a forked child included (threads
            // do not survive fork, and its registry is its own): start
            // this process's waiter.
            std::thread::Builder::new()
                .name("shmbus-aio".into())
                .spawn(run)
                .ok()?;
            reg.waiter_started = true;
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

/// Whether registration `id` still waits (not woken yet, not removed).
pub(super) fn is_registered(id: u64) -> bool {
    registry().regs.contains_key(&id)
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
/// the futures the sleep's answer names.
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
        // One entry per distinct word and value: the tasks waiting on one
        // bus share its bell, and `futex_waitv`'s 128 count words, not
        // tasks. (One word seen at two values has moved past one of them:
        // the sleep returns at once and each is asked about.)
        words.sort_unstable();
        words.dedup();
        let woke = sleep(control, &words, timeout);
        fire(woke, control);
    }
}

/// What a sleep says about the registered words.
#[derive(Clone, Copy, Debug)]
enum Woke {
    /// The word at this address was rung.
    Word(usize),
    /// Only CONTROL, or the timeout: nothing about the words.
    Nothing,
    /// Cannot tell which word (a word had moved before the sleep, a
    /// signal, an unmapped word, the 1 ms nap of the fallback): ask the
    /// kernel about each ([`probe_unchanged`]).
    Unknown,
}

/// One sleep: `futex_waitv` on CONTROL and every word (each distinct word
/// and value once); with more than it takes, or no `futex_waitv` on this
/// kernel, a nap of at most
/// [`POLL_NAP`] on CONTROL alone, after which the kernel is asked about
/// each word (the waiter never reads a registered word: see the module
/// docs).
fn sleep(control: u32, words: &[(usize, u32)], timeout: Option<Duration>) -> Woke {
    let all: Vec<(*const AtomicU32, u32)> =
        std::iter::once((&CONTROL as *const AtomicU32, control))
            .chain(words.iter().map(|&(w, seen)| (w as *const AtomicU32, seen)))
            .collect();
    if all.len() <= WAITV_MAX {
        match wait::futex_waitv_at(&all, timeout) {
            wait::Waitv::Woken(0) | wait::Waitv::TimedOut => return Woke::Nothing,
            wait::Waitv::Woken(i) => return Woke::Word(words[i - 1].0),
            wait::Waitv::Other => return Woke::Unknown,
            wait::Waitv::Missing => {}
        }
    }
    if words.is_empty() {
        wait::futex_wait(&CONTROL, control, timeout);
        return Woke::Nothing;
    }
    let nap = Some(timeout.map_or(POLL_NAP, |t| t.min(POLL_NAP)));
    wait::futex_wait(&CONTROL, control, nap);
    Woke::Unknown
}

/// Whether the word at `word` still holds `seen`, asked of the kernel (a
/// `FUTEX_WAIT` with a zero timeout: `ETIMEDOUT` if it does, `EAGAIN` if
/// not, `EFAULT` if it is no longer mapped), so that this process never
/// reads it. False unless the kernel said "unchanged".
fn probe_unchanged(word: usize, seen: u32) -> bool {
    let zero = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: the kernel reads `word` itself (a fault there is EFAULT, not
    // a signal here), and `zero` is a live timespec. No FUTEX_PRIVATE_FLAG:
    // the words are shared futexes.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word as *const u32,
            libc::FUTEX_WAIT,
            seen,
            &zero as *const libc::timespec,
        )
    };
    rc == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ETIMEDOUT)
}

/// Drops every registration the sleep's answer names, and every one whose
/// nap is over, and wakes their wakers (after the lock is released: a
/// waker may run code). Each woken future looks for itself, and registers
/// again if it still has nothing.
fn fire(woke: Woke, control: u32) {
    // A word that had moved before the sleep (EAGAIN) and a new
    // registration (CONTROL moved) look alike: take a new snapshot first;
    // if a word still differs, the next sleep says so again with CONTROL
    // unchanged.
    let woke = match woke {
        Woke::Unknown if CONTROL.load(Ordering::SeqCst) != control => Woke::Nothing,
        w => w,
    };
    let mut due: Vec<Waker> = Vec::new();
    // The kernel's answer per word and value: asked once however many
    // tasks share them.
    let mut asked: HashMap<(usize, u32), bool> = HashMap::new();
    {
        let mut reg = registry();
        let now = Instant::now();
        reg.regs.retain(|_, r| {
            let named = match woke {
                Woke::Word(w) => r.word == w,
                Woke::Nothing => false,
                Woke::Unknown => !*asked
                    .entry((r.word, r.seen))
                    .or_insert_with(|| probe_unchanged(r.word, r.seen)),
            };
            let napped = r.nap_until.is_some_and(|at| now >= at);
            if named || napped {
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
