//! SHMBUS_TEST_SCALE as a test run meets it: a child process started with
//! the variable set (or empty, or wrong) and what its counts come to.

mod common;

use common::assert_says;
use std::time::Duration;

use shmbus_testkit::{
    Finished, param, print_result, role, scale, scale_deadline, scale_min, spawn_child,
};

#[test]
fn as_child_scale_some_counts() {
    role("scale", || {
        let n: u64 = param("TESTKIT_N");
        print_result(&[
            ("scaled", scale(n).to_string()),
            ("floored", scale_min(n, n / 2).to_string()),
            (
                "deadline_ms",
                scale_deadline(Duration::from_secs(60))
                    .as_millis()
                    .to_string(),
            ),
        ]);
    });
}

/// The child above, with SHMBUS_TEST_SCALE set to `value` ("" stands for
/// unset: the child would otherwise inherit this run's own setting).
fn scaled_in_child(value: &str, n: u64) -> Finished {
    spawn_child(
        "as_child_scale_some_counts",
        "scale",
        &[
            ("SHMBUS_TEST_SCALE", value.to_owned()),
            ("TESTKIT_N", n.to_string()),
        ],
    )
    .wait()
}

/// (scale(n), scale_min(n, n / 2)) in a child run at `value`.
fn counts_at(value: &str, n: u64) -> (u64, u64) {
    let r = scaled_in_child(value, n).assert_success().result();
    (r.get("scaled"), r.get("floored"))
}

#[test]
fn an_unset_scale_runs_each_count_as_written_and_others_multiply_it() {
    assert_eq!(counts_at("", 200_000), (200_000, 200_000));
    assert_eq!(counts_at("1", 200_000), (200_000, 200_000));
    assert_eq!(counts_at("10", 200_000), (2_000_000, 2_000_000));
    assert_eq!(
        counts_at("0.25", 200_000),
        (50_000, 100_000),
        "the floor holds"
    );
    assert_eq!(counts_at("0.0001", 3), (1, 1), "a loop still runs once");
}

#[test]
fn a_childs_deadline_grows_with_a_scale_above_one_and_never_shrinks_below() {
    let deadline_at = |value: &str| -> u64 {
        scaled_in_child(value, 1)
            .assert_success()
            .result()
            .get("deadline_ms")
    };
    assert_eq!(deadline_at(""), 60_000);
    assert_eq!(deadline_at("0.25"), 60_000);
    assert_eq!(deadline_at("10"), 600_000);
}

#[test]
fn a_scale_that_is_not_a_positive_decimal_fails_naming_the_variable_and_the_value() {
    for bad in ["0", "-2", "fast"] {
        let f = scaled_in_child(bad, 10);
        assert!(!f.status.success(), "{bad}: {}", f.output());
        assert_says(
            &f.stderr,
            &[
                &format!("SHMBUS_TEST_SCALE=\"{bad}\""),
                "expected a positive decimal",
            ],
        );
    }
}
