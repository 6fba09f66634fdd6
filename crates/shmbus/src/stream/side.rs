//! A stream side's line in the control page (docs/LAYOUT.md §20): the
//! records the current producer (consumer) moved since it attached, and
//! when it was last active, for `stat` and `shmbus top`.
//!
//! Invariants:
//! - The producer's line (`PRODUCER_LINE`) is written only by the producer
//!   that holds lock byte 0, the consumer's (`CONSUMER_LINE`) only by the
//!   consumer holding lock byte 2; nobody else writes them and the other
//!   side never reads them, so they cost it nothing.
//! - `RECORDS` is stored (Relaxed) after every record committed (released):
//!   one store to a line only this side writes. It restarts at 0 when a
//!   side attaches.
//! - `ACTIVE_NS` is stored at attaching, when a push (pop) has to wait, and
//!   every [`EVERY`]th record.
//! - Readers trust none of it: `top` derives no rate across a count that
//!   went backwards (as a new owner's does).
//!
//! Heap streams (threads, loom, Miri) have no line: every method is then a
//! no-op.

use crate::mem::Region;
use crate::sync::Ordering;
use crate::sys::clock::monotonic_ns;
use crate::wire::side_line;

/// Records between two `ACTIVE_NS` stores: a power of two.
const EVERY: u64 = 1024;

/// One side's line, if it has one.
#[derive(Debug, Default)]
pub(crate) struct SideLine {
    /// Byte offset of the line in the region.
    at: Option<usize>,
    /// Records moved since it attached.
    records: u64,
}

impl SideLine {
    /// The line at `offset`, which the caller's lock makes its own: starts
    /// it over.
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn claim(region: &impl Region, offset: usize) -> SideLine {
        let line = SideLine {
            at: Some(offset),
            records: 0,
        };
        region
            .word(offset + side_line::RECORDS)
            .store(0, Ordering::Relaxed);
        line.touch(region);
        line
    }

    /// After a record was committed (released).
    #[inline(always)]
    pub(crate) fn moved(&mut self, region: &impl Region) {
        if let Some(at) = self.at {
            self.records += 1;
            region
                .word(at + side_line::RECORDS)
                .store(self.records, Ordering::Relaxed);
            if self.records % EVERY == 0 {
                self.touch(region);
            }
        }
    }

    /// Notes the time now (before a wait, which costs far more).
    pub(crate) fn touch(&self, region: &impl Region) {
        if let Some(at) = self.at {
            region
                .word(at + side_line::ACTIVE_NS)
                .store(monotonic_ns(), Ordering::Relaxed);
        }
    }
}
