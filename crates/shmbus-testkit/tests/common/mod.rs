//! What the testkit's own tests share: catching the failure a testkit call
//! is meant to raise.

use std::panic::{catch_unwind, AssertUnwindSafe};

/// The message `f` panics with; fails the test if it does not panic.
pub fn failure_of(f: impl FnOnce()) -> String {
    let payload = catch_unwind(AssertUnwindSafe(f)).expect_err("expected a failure, got none");
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}
