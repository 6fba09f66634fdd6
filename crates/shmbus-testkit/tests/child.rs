//! Child roles: a test binary re-executed to play one, its parameters, its
//! READY and RESULT lines.

mod common;

use common::{assert_says, failure_of};
use shmbus_testkit::{
    Finished, ROLE_VAR, Watched, idle_until_killed, param, print_ready, print_result, role,
    spawn_child,
};

#[test]
fn as_child_double_a_number() {
    role("double", || {
        let n: u64 = param("TESTKIT_N");
        print_result(&[("double", (2 * n).to_string()), ("word", "x=y".into())]);
    });
}

#[test]
fn as_child_say_ready_then_idle() {
    role("idle", || {
        print_ready();
        idle_until_killed();
    });
}

/// The doubling child, started for `role` with `params`, to its end.
fn doubler(role: &str, params: &[(&str, String)]) -> Finished {
    spawn_child("as_child_double_a_number", role, params).wait()
}

#[test]
fn a_role_does_nothing_in_a_normal_test_run() {
    assert!(std::env::var(ROLE_VAR).is_err(), "a normal run has no role");
    role("double", || panic!("a normal run played a role"));
}

#[test]
fn a_child_plays_its_role_and_its_result_line_reaches_the_parent() {
    let f = doubler("double", &[("TESTKIT_N", "21".to_owned())]);
    let r = f.assert_success().result();
    assert_eq!(r.get::<u64>("double"), 42);
    assert_eq!(r.raw("word"), Some("x=y"), "a value may hold '='");
    assert_eq!(r.raw("absent"), None);
    let msg = failure_of(|| {
        r.get::<u64>("triple");
    });
    assert_says(&msg, &["RESULT has no triple", "child double"]);
}

#[test]
fn a_child_started_for_another_role_fails_naming_both() {
    let f = doubler("triple", &[("TESTKIT_N", "1".to_owned())]);
    assert!(!f.status.success(), "{}", f.output());
    assert_says(
        &f.stderr,
        &[r#"started to play "triple", but this entry plays "double""#],
    );
}

#[test]
fn a_missing_parameter_fails_the_child_naming_it() {
    let f = doubler("double", &[]);
    assert!(!f.status.success(), "{}", f.output());
    assert_says(&f.stderr, &["child parameter TESTKIT_N is not set"]);
}

#[test]
fn a_parent_waits_until_its_child_is_ready_and_a_killed_child_died_of_sigkill() {
    let mut child: Watched = spawn_child("as_child_say_ready_then_idle", "idle", &[]);
    child.wait_ready();
    child.check_alive("nothing: it idles");
    let f = child.kill();
    assert_eq!(f.signal(), Some(libc::SIGKILL));
    let msg = failure_of(|| {
        f.result();
    });
    assert_says(&msg, &["printed no RESULT line"]);
}
