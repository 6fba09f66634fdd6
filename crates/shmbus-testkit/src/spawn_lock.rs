//! The window between `fork` and `exec`, closed on demand.
//!
//! Between the two, a new child shares the test process's open file
//! descriptions (and so its OFD locks) and has its mappings; `exec` closes
//! them (they are `O_CLOEXEC`), and `Command::spawn` returns only after the
//! exec. Every spawn in this crate holds [`SPAWNING`] for that window, so a
//! test that checks that something it dropped no longer holds a lock or a
//! mapping can first make sure no child being started by a test on another
//! thread holds a copy at that moment.

use std::sync::{Mutex, MutexGuard};

/// Held from fork to exec by every spawn in this crate.
static SPAWNING: Mutex<()> = Mutex::new(());

/// No other thread of this test binary is between fork and exec (through
/// this crate) while the guard lives.
pub fn no_spawn_in_flight() -> MutexGuard<'static, ()> {
    SPAWNING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
