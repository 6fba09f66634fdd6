//! The READY line: a child says it is set up, and its parent waits for it.
//!
//! The line names the child's pid, so a parent never mistakes another
//! child's line (or the same text in other output) for its child's.

use crate::deadline::READY_DEADLINE;
use crate::watchdog::Watched;

/// What a child prints once it is set up (see [`print_ready`]).
pub const READY: &str = "SHMBUS-READY";

/// Tells the parent, which waits in [`Watched::wait_ready`], that this child
/// is set up (say, its subscriber is open and positioned). The leading
/// newline keeps the line off the one libtest starts with `test <name> ...`.
pub fn print_ready() {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    writeln!(out, "\n{READY} pid={}", std::process::id()).expect("write READY");
    out.flush().expect("flush READY");
}

impl Watched {
    /// Waits until the child has printed [`print_ready`]'s line. Fails the
    /// test, with the child's output, if it ends first or after
    /// [`READY_DEADLINE`].
    pub fn wait_ready(&mut self) {
        let needle = format!("{READY} pid={}", self.pid());
        self.wait_until_printed(&needle, READY_DEADLINE);
    }
}
