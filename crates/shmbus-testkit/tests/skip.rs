//! `skip` as a test run meets it: a child test that skips for want of tmux,
//! run with the strictness variables as a developer, CI and a wrong setting
//! would have them.

use shmbus_testkit::{ALLOW_VAR, Finished, Need, STRICT_VAR, skip, spawn_child};

#[test]
fn as_child_skip_for_want_of_tmux() {
    shmbus_testkit::role("skip", || {
        skip(Need::Tmux, "no tmux on PATH");
        println!("went on past the skip");
    });
}

/// The child above with `CI`, `SHMBUS_STRICT_SKIPS` and
/// `SHMBUS_ALLOW_SKIPS` as given ("" for each one not given: the child
/// would otherwise inherit this run's own).
fn skipped_with(vars: &[(&str, &str)]) -> Finished {
    let mut params: Vec<(&str, String)> = ["CI", STRICT_VAR, ALLOW_VAR]
        .into_iter()
        .map(|k| (k, String::new()))
        .collect();
    for (k, v) in vars {
        params.retain(|(p, _)| p != k);
        params.push((k, v.to_string()));
    }
    spawn_child("as_child_skip_for_want_of_tmux", "skip", &params).wait()
}

#[test]
fn a_skip_passes_saying_why_where_nothing_asks_for_strict_skips() {
    for vars in [
        &[][..],
        &[("CI", "false")],
        &[(STRICT_VAR, "0"), ("CI", "true")],
    ] {
        let run = skipped_with(vars);
        run.assert_success();
        let out = run.output();
        assert!(
            out.contains("SKIPPED (tmux): no tmux on PATH"),
            "{vars:?}: {out}"
        );
        assert!(out.contains("went on past the skip"), "{vars:?}: {out}");
    }
}

#[test]
fn under_strict_skips_or_ci_a_skip_fails_the_test_naming_what_is_missing() {
    for vars in [&[(STRICT_VAR, "1")][..], &[("CI", "true")], &[("CI", "1")]] {
        let run = skipped_with(vars);
        assert_eq!(run.code(), Some(101), "{vars:?}: {run:?}");
        let out = run.output();
        assert!(
            out.contains("SKIPPED (tmux): no tmux on PATH; this run has strict skips"),
            "{vars:?}: {out}"
        );
        assert!(out.contains("SHMBUS_ALLOW_SKIPS"), "{vars:?}: {out}");
        assert!(!out.contains("went on past the skip"), "{vars:?}: {out}");
    }
}

#[test]
fn a_strict_run_may_skip_only_for_what_its_allow_list_names() {
    let run = skipped_with(&[(STRICT_VAR, "1"), (ALLOW_VAR, "tmux")]);
    run.assert_success();
    assert!(run.output().contains("went on past the skip"), "{run:?}");
    let run = skipped_with(&[(STRICT_VAR, "1"), (ALLOW_VAR, "root,hugetlbfs")]);
    assert_eq!(run.code(), Some(101), "{run:?}");
}

#[test]
fn a_strictness_or_allow_list_that_means_nothing_fails_naming_the_variable() {
    let run = skipped_with(&[(STRICT_VAR, "yes")]);
    assert_eq!(run.code(), Some(101), "{run:?}");
    assert!(
        run.output()
            .contains("SHMBUS_STRICT_SKIPS=\"yes\": expected 1 (skips fail) or 0 (skips pass)"),
        "{run:?}"
    );
    let run = skipped_with(&[(STRICT_VAR, "1"), (ALLOW_VAR, "tmux,hugepages")]);
    assert_eq!(run.code(), Some(101), "{run:?}");
    assert!(
        run.output()
            .contains("SHMBUS_ALLOW_SKIPS=\"tmux,hugepages\": \"hugepages\" is not a need"),
        "{run:?}"
    );
}
