//! Waiting for a condition, with a deadline, while watching the processes
//! that should bring it about.

use std::time::{Duration, Instant};

use crate::deadline::READY_DEADLINE;
use crate::watchdog::Watched;

/// How often the condition is polled.
const POLL: Duration = Duration::from_millis(1);

/// Polls `done` until it holds. Fails the test if any of `children` ends
/// first, or after [`READY_DEADLINE`].
pub fn wait_for(what: &str, children: &mut [&mut Watched], done: impl FnMut() -> bool) {
    wait_for_within(what, READY_DEADLINE, children, done);
}

/// As [`wait_for`], failing after `within` instead: for a suite or a wait
/// with a deadline of its own.
///
/// `done` is polled first, so a condition that already holds returns at
/// once, and one that holds when a child has just ended still counts. On
/// failure the message shows what each child has printed so far.
pub fn wait_for_within(
    what: &str,
    within: Duration,
    children: &mut [&mut Watched],
    mut done: impl FnMut() -> bool,
) {
    let deadline = Instant::now() + within;
    loop {
        if done() {
            return;
        }
        for c in children.iter_mut() {
            c.check_alive(what);
        }
        if Instant::now() >= deadline {
            let outputs: Vec<String> = children
                .iter()
                .map(|c| c.output_and_errors_so_far())
                .collect();
            panic!(
                "gave up after {within:?} waiting for {what}\n{}",
                outputs.join("\n")
            );
        }
        std::thread::sleep(POLL);
    }
}
