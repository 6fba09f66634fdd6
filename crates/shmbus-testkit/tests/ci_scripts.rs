//! The CI scripts' own checks on the runs they make: `ran_some`
//! (ci/ran.sh) fails a filtered test step that ran no test, and `skip`
//! (ci/tool.sh) fails a script's skip under strict skips, as the tests'
//! `skip` does. Each is run by bash over a stand-in command, as the
//! scripts run it over cargo.

use std::path::PathBuf;

use shmbus_testkit::{Finished, command, run};

/// The repository's `ci/` directory.
fn ci() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../ci")
}

/// `bash -c SCRIPT` under `set -euo pipefail` with ci/FILE sourced, and
/// the strictness variables as given (each other one removed).
fn bash(file: &str, script: &str, vars: &[(&str, &str)]) -> Finished {
    let lib = ci().join(file);
    let full = format!(
        "set -euo pipefail; . {}; {script}",
        lib.to_str().expect("a UTF-8 path")
    );
    let mut cmd = command("bash", &["-c", &full]);
    for k in ["CI", "SHMBUS_STRICT_SKIPS", "SHMBUS_ALLOW_SKIPS"] {
        cmd.env_remove(k);
    }
    for (k, v) in vars {
        cmd.env(k, v);
    }
    run(cmd)
}

/// A stand-in for `cargo test` that prints `lines` and exits `code`.
fn cargo_saying(lines: &[&str], code: i32) -> String {
    let mut s = String::from("ran_some sh -c '");
    for l in lines {
        s.push_str(&format!("echo \"{l}\"; "));
    }
    s.push_str(&format!("exit {code}'; echo AFTER"));
    s
}

#[test]
fn a_filtered_step_that_ran_no_test_fails_and_one_that_ran_some_passes() {
    let none = bash(
        "ran.sh",
        &cargo_saying(
            &[
                "running 0 tests",
                "test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 40 filtered out; finished in 0.00s",
            ],
            0,
        ),
        &[],
    );
    assert_eq!(none.code(), Some(1), "{none:?}");
    assert!(none.output().contains("no test ran (0 passed"), "{none:?}");
    assert!(!none.stdout().contains("AFTER"), "{none:?}");
    // Two test binaries (a --lib and a --test run): their counts add up.
    let some = bash(
        "ran.sh",
        &cargo_saying(
            &[
                "test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 9 filtered out",
                "test result: ok. 3 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out",
            ],
            0,
        ),
        &[],
    );
    some.assert_success();
    assert!(some.stdout().contains("3 passed: sh -c"), "{some:?}");
    assert!(some.stdout().contains("AFTER"), "{some:?}");
    // A failing run fails the step with its own status, whatever it said.
    let failed = bash(
        "ran.sh",
        &cargo_saying(&["test result: FAILED. 5 passed; 1 failed;"], 101),
        &[],
    );
    assert_eq!(failed.code(), Some(101), "{failed:?}");
    assert!(!failed.stdout().contains("AFTER"), "{failed:?}");
}

#[test]
fn a_ci_script_s_skip_passes_saying_why_unless_strict_skips_and_the_allow_list_say_otherwise() {
    let script = "skip root 'making users needs root'; echo AFTER";
    let relaxed = bash("tool.sh", script, &[]);
    relaxed.assert_success();
    assert!(
        relaxed
            .stdout()
            .contains("SKIPPED (root): making users needs root")
    );
    assert!(
        !relaxed.stdout().contains("AFTER"),
        "a skip ends the script"
    );
    for strict in [&[("SHMBUS_STRICT_SKIPS", "1")][..], &[("CI", "true")]] {
        let run = bash("tool.sh", script, strict);
        assert_eq!(run.code(), Some(1), "{strict:?}: {run:?}");
        assert!(
            run.output().contains("this run has strict skips"),
            "{strict:?}: {run:?}"
        );
    }
    let allowed = bash(
        "tool.sh",
        script,
        &[
            ("SHMBUS_STRICT_SKIPS", "1"),
            ("SHMBUS_ALLOW_SKIPS", "tmux, root"),
        ],
    );
    allowed.assert_success();
    let wrong = bash("tool.sh", script, &[("SHMBUS_STRICT_SKIPS", "yes")]);
    assert_eq!(wrong.code(), Some(1), "{wrong:?}");
    assert!(
        wrong
            .output()
            .contains("SHMBUS_STRICT_SKIPS=\"yes\": expected 1"),
        "{wrong:?}"
    );
}
