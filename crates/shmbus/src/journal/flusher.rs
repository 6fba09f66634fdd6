//! The flusher thread: answers the joiners' flush requests (`fdatasync`,
//! then `FLUSH_DONE`, see the journal module's handshake).

use std::time::Duration;

use super::shared::Shared;
use crate::mem::{Region, ShmRegion};
use crate::sync::Ordering;
use crate::wait;
use crate::wire::control;

/// Serves flush requests until told to stop.
pub(super) fn flusher(shared: &Shared, region: &ShmRegion, ctl: usize) {
    let req = region.word32(ctl + control::FLUSH_REQUEST);
    let done = region.word32(ctl + control::FLUSH_DONE);
    let failed = region.word32(ctl + control::FLUSH_FAILED);
    loop {
        // Acquire, paired with the joiner's AcqRel increment. What the
        // flush covers is this process's own appends up to `committed`.
        let r = req.load(Ordering::Acquire);
        if r != done.load(Ordering::Relaxed) {
            if shared.sync().is_err() {
                failed.store(r, Ordering::Relaxed);
            }
            // Release, paired with the joiner's Acquire load of FLUSH_DONE.
            done.store(r, Ordering::Release);
            wait::futex_wake_all(done);
        }
        if shared.stop.load(Ordering::Acquire) {
            return;
        }
        wait::futex_wait(req, r, Some(Duration::from_millis(100)));
    }
}
