//! Waiting on many handles at once: one sleep until any of a set of
//! receiving handles, of any kinds ([`Selectable`]), has something to
//! receive, and which one. This module names no kind: each kind says, in
//! its own module, what its handles give a select.
//!
//! [`Select::ready`] says *which* member is ready; the caller then
//! receives from it as it would alone (`recv(Wait::Never)`, `pop`, ...),
//! so every member's lag is reported exactly as that handle reports it,
//! and nothing is read twice or dropped by the select itself.
//!
//! # The sleep (the protocol of `wait`, over many words)
//! Each member has a doorbell word its writer rings after it stored what
//! the member waits for. To sleep, a select
//! 1. raises the sleepers flag on every member's word (`fetch_or`,
//!    SeqCst) and keeps the values it saw;
//! 2. makes one heavy barrier (a SeqCst fence and the membarrier the
//!    light publishers rely on), the sleeper's half of the Dekker pair
//!    each word's waker makes, exactly as a single sleeper does;
//! 3. looks at every member again, and sleeps only if none is ready, in
//!    one `futex_waitv` (Linux 5.16+) on all the words with the values
//!    from step 1: a ring after step 1 changed its word, and the kernel
//!    returns at once.
//!
//! A member whose waker died with the flag raised costs one spurious wake,
//! as for one sleeper. A member whose writer may die without ringing
//! (each kind says which of its handles) also says how long it may sleep
//! at most without looking, and the select naps no longer than the
//! shortest of them.
//!
//! # Where `futex_waitv` is not enough
//! It takes at most 128 words, and older kernels lack it (`ENOSYS`).
//! Beyond 128 members, or without it, the select sleeps on one member's
//! word at a time, rotating, for at most [`POLL_NAP`] (1 ms): a member
//! other than that one is then seen up to 1 ms late, at up to 1 000
//! wake-ups a second while idle. Said in docs/ARCHITECTURE.md.
//!
//! # Fairness
//! Each call starts its look at the member after the one it returned last,
//! so a member that is always ready does not starve the others.

use std::time::{Duration, Instant};

use crate::wait::{self, Wait, WaitStrategy};

pub use crate::member::Selectable;

/// How long a select without `futex_waitv` (or with more members than it
/// takes) sleeps on one member's word before it looks at all again.
///
/// # Examples
/// ```
/// assert_eq!(shmbus::select::POLL_NAP, std::time::Duration::from_millis(1));
/// ```
pub const POLL_NAP: Duration = Duration::from_millis(1);

/// The most words one `futex_waitv` takes (the kernel's `FUTEX_WAITV_MAX`).
///
/// # Examples
/// ```
/// assert_eq!(shmbus::select::WAITV_MAX, 128);
/// ```
pub const WAITV_MAX: usize = 128;

/// Waits on many handles at once and says which one has something.
///
/// Keeps only where its last answer was (for fairness) and a buffer, so
/// one `Select` serves any sets of members, call after call.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use shmbus::select::Select;
/// use shmbus::{Publisher, Received, Start, Wait, WaitStrategy};
///
/// let mut a = Publisher::<u64, _>::on_heap(8)?;
/// let b = Publisher::<u64, _>::on_heap(8)?;
/// let mut sub_a = a.subscribe(Start::Next, WaitStrategy::default());
/// let mut sub_b = b.subscribe(Start::Next, WaitStrategy::default());
/// let mut select = Select::new();
///
/// assert_eq!(select.ready(&[&sub_a, &sub_b], Wait::Never), None);
/// a.publish(&7);
/// assert_eq!(select.ready(&[&sub_a, &sub_b], Wait::For(Duration::from_secs(1))), Some(0));
/// assert_eq!(sub_a.recv(Wait::Never), Some(Received::Message(7)));
/// # drop(sub_b);
/// # Ok::<(), shmbus::CreateError>(())
/// ```
#[derive(Debug)]
pub struct Select {
    strategy: WaitStrategy,
    /// Where the next look starts.
    next: usize,
    /// The words and the values seen, reused between sleeps.
    seen: Vec<(usize, u32)>,
}

impl Default for Select {
    fn default() -> Self {
        Select::new()
    }
}

impl Select {
    /// A select that spins 50 µs before it sleeps, as a receiving handle
    /// does by default.
    ///
    /// # Examples
    /// ```
    /// let select = shmbus::select::Select::new();
    /// # drop(select);
    /// ```
    pub fn new() -> Select {
        Select::with_strategy(WaitStrategy::default())
    }

    /// A select that waits as `strategy` says: spin only, spin then yield,
    /// or spin then sleep on every member's doorbell at once.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{select::Select, WaitStrategy};
    /// let select = Select::with_strategy(WaitStrategy::BusySpin);
    /// # drop(select);
    /// ```
    pub fn with_strategy(strategy: WaitStrategy) -> Select {
        Select {
            strategy,
            next: 0,
            seen: Vec::new(),
        }
    }

    /// The index in `members` of one that has something to receive now (a
    /// message, a lag report, or an end its own receive reports, such as a
    /// peer gone), waiting up to `wait` for one; `None` if none had
    /// anything by then, or `members` is empty.
    ///
    /// Receive from the member it names with `Wait::Never` (a member
    /// named for its peer's end reports it from a receive with a wait:
    /// see its kind's docs). Rarely a receive finds nothing (a claim not
    /// committed yet, a corrupt stamp that the member's own waiting
    /// receive skips): the
    /// next call then names it again, so a loop over `ready` spins on it
    /// until its own receive makes progress; receive with a short wait
    /// where that matters.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use shmbus::select::Select;
    /// use shmbus::bus::ManyPublisher;
    /// use shmbus::{Publisher, Received, Start, Wait, WaitStrategy};
    ///
    /// let mut one = Publisher::<u64, _>::on_heap(8)?;
    /// let mut many = ManyPublisher::<u64, _>::on_heap(8, Duration::from_secs(1))?;
    /// let mut on_one = one.subscribe(Start::Next, WaitStrategy::default());
    /// let mut on_many = many.subscribe(Start::Next, WaitStrategy::default());
    /// let mut select = Select::new();
    ///
    /// many.publish(&7)?;
    /// match select.ready(&[&on_one, &on_many], Wait::For(Duration::from_secs(1))) {
    ///     Some(1) => assert_eq!(on_many.recv(Wait::Never), Some(Received::Message(7))),
    ///     other => panic!("expected the second, got {other:?}"),
    /// }
    /// # drop(on_one);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn ready(&mut self, members: &[&dyn Selectable], wait: Wait) -> Option<usize> {
        let n = members.len();
        if n == 0 {
            return None;
        }
        if let Some(i) = self.look(members) {
            return Some(i);
        }
        let deadline = match wait {
            Wait::Never => return None,
            Wait::For(d) => Some(Instant::now() + d),
            Wait::Forever => None,
        };
        let mut backoff = wait::Backoff::new(self.strategy, deadline);
        // Spin 0: straight to the sleep. (The backoff polls 63 times before
        // it reads the clock, which for a select is 63 looks at every
        // member: measurable over many members, examples/select_wake.)
        let straight = matches!(self.strategy, WaitStrategy::SpinFutex { spin } if spin.is_zero());
        let mut turn = 0usize;
        loop {
            let step = if straight {
                match deadline.map(|d| d.checked_duration_since(Instant::now())) {
                    Some(None) => wait::Step::TimedOut,
                    Some(left) => wait::Step::Sleep(left),
                    None => wait::Step::Sleep(None),
                }
            } else {
                backoff.next()
            };
            match step {
                wait::Step::Spin => crate::sync::spin_loop(),
                wait::Step::Yield => crate::sync::yield_now(),
                wait::Step::Sleep(left) => {
                    self.sleep(members, left, turn);
                    turn = turn.wrapping_add(1);
                }
                wait::Step::TimedOut => return None,
            }
            if let Some(i) = self.look(members) {
                return Some(i);
            }
        }
    }

    /// One look at every member, from where the last answer left off.
    fn look(&mut self, members: &[&dyn Selectable]) -> Option<usize> {
        let n = members.len();
        let start = self.next % n;
        let found = (0..n)
            .map(|k| (start + k) % n)
            .find(|&i| members[i].ready())?;
        self.next = found + 1;
        Some(found)
    }

    /// Raises every member's flag, looks again, and sleeps on all the
    /// words at once (see the module docs) for at most `left`.
    fn sleep(&mut self, members: &[&dyn Selectable], left: Option<Duration>, turn: usize) {
        let mut timeout = left;
        self.seen.clear();
        for (i, m) in members.iter().enumerate() {
            self.seen.push((i, wait::raise_flag(m.bell())));
            if let Some(nap) = m.nap() {
                timeout = Some(timeout.map_or(nap, |t| t.min(nap)));
            }
        }
        // Paired with each waker's fence in `wait::ring`: a waker that
        // missed our flag stored what we look for before it, and the look
        // below sees it.
        if !wait::heavy_barrier() {
            timeout = Some(timeout.map_or(wait::UNSURE_SLEEP, |t| t.min(wait::UNSURE_SLEEP)));
        }
        if members.iter().any(|m| m.ready()) {
            return;
        }
        let words: Vec<(&crate::sync::AtomicU32, u32)> = self
            .seen
            .iter()
            .map(|&(i, seen)| (members[i].bell(), seen))
            .collect();
        if words.len() <= WAITV_MAX && wait::futex_waitv(&words, timeout) {
            return;
        }
        // No futex_waitv here, or too many words: one word at a time,
        // rotating, at most POLL_NAP.
        let (word, seen) = words[turn % words.len()];
        let nap = Some(timeout.map_or(POLL_NAP, |t| t.min(POLL_NAP)));
        wait::futex_wait(word, seen, nap);
    }
}
