//! Freeing what dead processes left in a pool on /dev/shm: the holds of a
//! subscriber whose registry lock is free, and the loans of a publisher
//! whose pid is gone. Off the hot path: a publisher sweeps when it finds
//! no free block, before it waits.

use super::blocks::Blocks;
use crate::mem::ShmRegion;
use crate::sys::lock;
use crate::wire::lock_byte;

/// Clears the holds of every active entry whose subscriber is dead, and
/// frees every loan of a dead publisher. Returns (entries, loans) freed.
///
/// An entry is cleared only while this process holds its registry lock,
/// so a subscriber cannot register there meanwhile and have its fresh
/// holds wiped; the lock is dropped again at once.
pub(crate) fn dead(region: &ShmRegion, blocks: &Blocks) -> (u64, u64) {
    let mut entries = 0;
    for entry in blocks.active_entries(region) {
        let byte = lock_byte::REGISTRY + entry as u64;
        if let Ok(true) = lock::try_lock(region.file(), byte, true) {
            blocks.leave(region, entry);
            let _ = lock::unlock(region.file(), byte);
            entries += 1;
        }
    }
    let me = std::process::id();
    let loans = blocks.free_loans(region, |pid| pid != me && lock::pid_gone(pid));
    (entries, loans)
}
