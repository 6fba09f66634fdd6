//! Running a binary to its end, or in the background, under the watchdog.

mod common;

use common::{assert_says, failure_of, sh};
use shmbus_testkit::{command, run, run_with_input, spawn, with_stdout_closed};

#[test]
fn a_run_leaves_its_exit_code_stdout_and_stderr() {
    let f = run(sh("echo out; echo err >&2; exit 3"));
    assert_eq!(f.code(), Some(3));
    assert_eq!(f.stdout(), "out\n");
    assert_eq!(f.stderr, "err\n");
}

#[test]
fn a_run_whose_stderr_says_panicked_fails_the_test_naming_the_command() {
    let msg = failure_of(|| {
        run(sh("echo 'it panicked' >&2"));
    });
    assert_says(&msg, &["`sh -c echo 'it panicked' >&2`", "panicked"]);
}

#[test]
fn input_given_to_a_run_arrives_on_its_stdin() {
    let f = run_with_input(command("cat", &[]), b"a\nb\n");
    assert_eq!(f.assert_success().stdout(), "a\nb\n");
}

#[test]
fn a_run_that_never_reads_its_input_still_ends() {
    let f = run_with_input(command("true", &[]), &vec![b'x'; 1 << 20]);
    f.assert_success();
}

#[test]
fn a_command_has_stdin_at_end_of_file_by_default() {
    assert_eq!(run(command("cat", &[])).assert_success().stdout(), "");
}

#[test]
fn with_stdout_closed_leaves_fd_1_closed_rather_than_dev_null() {
    let script = "if [ -e /proc/self/fd/1 ]; then echo open >&2; else echo closed >&2; fi";
    let f = run(with_stdout_closed(sh(script)));
    assert_eq!(f.stderr, "closed\n");
}

#[test]
fn a_spawned_run_goes_on_in_the_background_until_waited_for() {
    let mut p = spawn(sh("echo started; exec sleep 30"));
    assert_eq!(p.next_line(), b"started\n");
    p.check_alive("it to sleep");
    let f = p.kill();
    assert_eq!(f.signal(), Some(libc::SIGKILL));
}
