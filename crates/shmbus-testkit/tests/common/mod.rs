//! What the testkit's own tests share: catching the failure a testkit call
//! is meant to raise, and checking what it says.

#![allow(dead_code)]

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::Command;
use std::time::{Duration, Instant};

/// The message `f` panics with; fails the test if it does not panic.
pub fn failure_of(f: impl FnOnce()) -> String {
    let payload = catch_unwind(AssertUnwindSafe(f)).expect_err("expected a failure, got none");
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

/// As [`failure_of`], and the failure comes at once: well before any
/// deadline of 20 s or more the call was given.
pub fn quick_failure_of(f: impl FnOnce()) -> String {
    let start = Instant::now();
    let msg = failure_of(f);
    let took = start.elapsed();
    assert!(
        took < Duration::from_secs(10),
        "failed after {took:?}: {msg}"
    );
    msg
}

/// Fails the test unless `msg` contains each of `words`.
pub fn assert_says(msg: &str, words: &[&str]) {
    for w in words {
        assert!(msg.contains(w), "{w:?} is not in: {msg}");
    }
}

/// `sh -c SCRIPT`, stdin /dev/null, stdout and stderr piped.
pub fn sh(script: &str) -> Command {
    shmbus_testkit::command("sh", &["-c", script])
}
