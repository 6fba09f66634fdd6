//! The stream's ring over a region: the cursors and their checks, records
//! and wrap markers, the doorbells, and whether the peer is still alive.
//! The invariants are the stream module's.

use super::side::SideLine;
use std::time::{Duration, Instant};

use super::PEER_CHECK;
use crate::mem::Region;
use crate::sync::{AtomicU64, Ordering};
use crate::wait::{self, Wait, WaitStrategy};
use crate::wire::{Header, max_record};

#[inline]
pub(crate) fn padded(len: u64) -> u64 {
    8 + len.div_ceil(8) * 8
}

/// The ring protocol over any region; `Producer` and `Consumer` hold one.
pub(crate) struct StreamRing<R> {
    pub(crate) region: R,
    pub(crate) capacity: u64,
    pub(crate) max: u64,
    pub(crate) data: usize,
    pub(crate) control: usize,
    /// This process registered for the asymmetric barrier (see `wait`).
    pub(crate) light: bool,
}

impl<R: Region> StreamRing<R> {
    pub(crate) fn new(region: R, h: &Header) -> StreamRing<R> {
        StreamRing {
            region,
            capacity: h.capacity,
            max: max_record(h.capacity),
            data: h.data_offset as usize,
            control: h.control_offset as usize,
            light: wait::light_publisher_barrier(),
        }
    }

    #[inline]
    pub(crate) fn cursor(&self, field: usize) -> &AtomicU64 {
        self.region.word(self.control + field)
    }

    #[inline]
    pub(crate) fn bell(&self, field: usize) -> &crate::sync::AtomicU32 {
        self.region.word32(self.control + field)
    }

    /// Writes a record header at stream position `pos`, the same way as
    /// the payload (plain memory where there is some): Miri rejects mixing
    /// atomic and plain accesses of different sizes on the same bytes.
    #[inline]
    pub(crate) fn put_header(&self, pos: u64, header: u64) {
        // SAFETY: only the producer calls this, on bytes `claim` gave it,
        // before the Release store of TAIL that hands them over.
        unsafe { self.region.copy_in(self.at(pos), &header.to_le_bytes()) };
    }

    /// Reads the record header at stream position `pos`.
    #[inline]
    pub(crate) fn get_header(&self, pos: u64) -> u64 {
        let mut b = [0u8; 8];
        // SAFETY: only the consumer calls this, on bytes in [HEAD, TAIL),
        // which the producer does not write until HEAD passes them.
        unsafe { self.region.copy_out(self.at(pos), &mut b) };
        u64::from_le_bytes(b)
    }

    #[inline]
    pub(crate) fn at(&self, pos: u64) -> usize {
        self.data + (pos & (self.capacity - 1)) as usize
    }

    /// The pid in `pid_field` if that peer attached once and its lock is
    /// free now. Never on the heap, where there is no lock to ask.
    pub(crate) fn peer_gone(&self, lock: u64, pid_field: usize) -> Option<u32> {
        let pid_word = self.region.word32(self.control + pid_field);
        let pid = pid_word.load(Ordering::Relaxed);
        if pid == 0 || self.region.lock_held(lock) != Some(false) {
            return None;
        }
        // A peer that left cleanly cleared its pid before its lock went: if
        // the pid is still there now that the lock is free, it died.
        (pid_word.load(Ordering::Relaxed) == pid).then_some(pid)
    }

    /// Runs the wait loop: `ready` until it says yes, spinning, yielding or
    /// sleeping on `bell` as `strategy` says, giving up at the deadline,
    /// when the peer is gone, or at once when `ready` finds a corrupt cursor.
    pub(crate) fn wait_for(
        &self,
        wait: Wait,
        strategy: WaitStrategy,
        bell: usize,
        peer: Peer,
        line: &SideLine,
        mut ready: impl FnMut() -> Look,
    ) -> Result<(), Stop> {
        match ready() {
            Look::Ready => return Ok(()),
            Look::Corrupt => return Err(Stop::Corrupt),
            Look::NotYet => {}
        }
        let deadline = match wait {
            Wait::Never => return Err(Stop::NotNow),
            Wait::For(d) => Some((Instant::now() + d, d)),
            Wait::Forever => None,
        };
        // The backoff sleeps at most PEER_CHECK at a time, so the peer and
        // the deadline are checked at least that often.
        let mut backoff = wait::Backoff::new(strategy, None);
        let mut next_check = Instant::now() + PEER_CHECK;
        let mut spins = 0u32;
        loop {
            match ready() {
                Look::Ready => return Ok(()),
                Look::Corrupt => return Err(Stop::Corrupt),
                Look::NotYet => {}
            }
            spins = spins.wrapping_add(1);
            if spins % 1024 == 0 {
                line.touch(&self.region);
                let now = Instant::now();
                if let Some((at, d)) = deadline {
                    if now >= at {
                        return Err(Stop::TimedOut(d));
                    }
                }
                if now >= next_check {
                    let gone = self.peer_gone(peer.lock, peer.pid_field);
                    if let Some(pid) = gone.filter(|&pid| pid != peer.known_dead) {
                        // One last look: the peer may have finished first.
                        return match ready() {
                            Look::Ready => Ok(()),
                            Look::Corrupt => Err(Stop::Corrupt),
                            Look::NotYet => Err(Stop::PeerGone(pid)),
                        };
                    }
                    next_check = now + PEER_CHECK;
                }
            }
            match backoff.next() {
                wait::Step::Spin => crate::sync::spin_loop(),
                wait::Step::Yield => {
                    crate::sync::yield_now();
                    // A yield can give the CPU away for a whole slice: check
                    // the clock and the peer after each one.
                    spins = 1023;
                }
                wait::Step::Sleep(_) | wait::Step::TimedOut => {
                    let left = deadline.map_or(PEER_CHECK, |(at, _)| {
                        at.saturating_duration_since(Instant::now()).min(PEER_CHECK)
                    });
                    line.touch(&self.region);
                    wait::sleep(self.bell(bell), Some(left), || ready() == Look::NotYet);
                    // Re-check the clock and the peer after every sleep.
                    spins = 1023;
                }
            }
        }
    }
}

/// How a wait ended without its condition.
pub(crate) enum Stop {
    NotNow,
    TimedOut(Duration),
    PeerGone(u32),
    /// The peer's cursor failed its check (the waiter has the details).
    Corrupt,
}

/// What one look at the peer's cursor found.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Look {
    Ready,
    NotYet,
    Corrupt,
}

/// Whose death ends a wait.
#[derive(Clone, Copy)]
pub(crate) struct Peer {
    /// The peer's lock byte.
    pub(crate) lock: u64,
    /// Its pid's offset in the control page.
    pub(crate) pid_field: usize,
    /// A pid whose death is old news (0: none).
    pub(crate) known_dead: u32,
}
