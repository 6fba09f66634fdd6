//! Handles in a forked child. `fork()` copies every handle into the child,
//! but what a handle's drop gives back (a held block, a loaned block, a
//! registry entry, a stream side's pid, the journal's threads) is still
//! the parent's: the child's copy must leave it alone. A handle records the
//! process that made it, and its drop does nothing in any other process.

/// The process a handle was made in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Origin(u32);

impl Origin {
    /// This process.
    pub(crate) fn here() -> Self {
        Origin(std::process::id())
    }

    /// Whether this is still the process that made the handle: false in a
    /// child forked since, whose copy of the handle owns nothing shared.
    pub(crate) fn is_current(self) -> bool {
        std::process::id() == self.0
    }

    /// Its pid.
    pub(crate) fn pid(self) -> u32 {
        self.0
    }
}
