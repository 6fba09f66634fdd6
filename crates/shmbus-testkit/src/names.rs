//! Names unique to one test: `shmbus-test-<pid>-<n>-<label>`.
//!
//! The pid keeps test binaries that run at the same time apart, the counter
//! keeps the tests of one binary apart, and the label says which test made
//! it. The prefix (all but the label) is what a cleanup check scans for.

use std::sync::atomic::{AtomicU32, Ordering};

/// Where shared-memory files live.
pub const SHM_DIR: &str = "/dev/shm";

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// `shmbus-test-<pid>-<n>-`, a prefix no other call in any live process
/// returns.
pub fn unique_prefix() -> String {
    format!(
        "shmbus-test-{}-{}-",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}
