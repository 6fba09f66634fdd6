//! The watchdog: deadlines, killing, reaping, and output as it comes.

mod common;

use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::failure_of;
use shmbus_testkit::{command, Watched};

/// Whether a process with this pid still exists (a zombie counts).
fn exists(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

fn sh(script: &str) -> std::process::Command {
    command("sh", &["-c", script])
}

#[test]
fn a_process_past_its_deadline_is_killed_reaped_and_fails_the_test() {
    let w = Watched::spawn(
        "the sleeper",
        sh("echo zzz; exec sleep 30"),
        Duration::from_millis(300),
    );
    let pid = w.pid();
    let start = Instant::now();
    let msg = failure_of(|| {
        w.wait();
    });
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    assert!(msg.contains("watchdog: the sleeper"), "{msg}");
    assert!(msg.contains("zzz"), "the failure shows the output: {msg}");
    assert!(!exists(pid), "killed and reaped");
}

#[test]
fn dropping_a_running_process_kills_and_reaps_it() {
    let w = Watched::spawn("the sleeper", sh("exec sleep 30"), Duration::from_secs(60));
    let pid = w.pid();
    assert!(exists(pid));
    drop(w);
    assert!(!exists(pid), "killed and reaped");
}

#[test]
fn a_process_that_ends_in_time_leaves_its_status_output_and_duration() {
    let f = Watched::spawn(
        "the talker",
        sh("echo out; echo err >&2; exit 7"),
        Duration::from_secs(20),
    )
    .wait();
    assert_eq!(f.code(), Some(7));
    assert_eq!(f.signal(), None);
    assert_eq!(f.stdout, b"out\n");
    assert_eq!(f.stderr, "err\n");
    assert_eq!(f.label, "the talker");
    assert!(f.took < Duration::from_secs(20));
    let msg = failure_of(|| {
        f.assert_success();
    });
    assert!(msg.contains("the talker") && msg.contains("out"), "{msg}");
}

#[test]
fn waiting_for_a_line_fails_at_once_when_the_process_ends_first() {
    let mut w = Watched::spawn("the quitter", sh("echo bye"), Duration::from_secs(60));
    let start = Instant::now();
    let msg = failure_of(|| w.wait_until_printed("never", Duration::from_secs(30)));
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    assert!(
        msg.contains("the quitter") && msg.contains("ended"),
        "{msg}"
    );
    assert!(msg.contains("bye"), "the failure shows the output: {msg}");
}

#[test]
fn the_test_sees_lines_as_the_process_prints_them() {
    let mut w = Watched::spawn(
        "the printer",
        sh("echo one; sleep 0.1; echo two; exec sleep 30"),
        Duration::from_secs(60),
    );
    assert_eq!(w.next_line(), b"one\n");
    assert_eq!(w.next_line(), b"two\n");
    w.wait_until_printed("two", Duration::from_secs(1));
    assert_eq!(w.output_so_far(), "one\ntwo\n");
    let f = w.kill();
    assert_eq!(
        f.stdout, b"one\ntwo\n",
        "all it printed, lines taken or not"
    );
}

#[test]
fn a_head_of_one_line_closes_the_pipe_so_the_next_write_fails() {
    let mut cmd = sh("echo first; read go; echo second");
    cmd.stdin(Stdio::piped());
    let mut w = Watched::spawn_head("the writer", cmd, Duration::from_secs(60), 1);
    assert_eq!(w.next_line(), b"first\n");
    shmbus_testkit::wait_for("the pipe to close", &mut [], || w.stdout_closed());
    w.stdin().write_all(b"go\n").expect("write to sh");
    let f = w.wait();
    assert_eq!(f.signal(), Some(libc::SIGPIPE), "{f:?}");
    assert_eq!(f.stdout, b"first\n");
}

#[test]
fn a_head_keeps_no_more_than_its_lines_of_what_came_in_one_write() {
    let f = Watched::spawn_head(
        "printf",
        sh("printf 'a\\nb\\nc\\n'"),
        Duration::from_secs(20),
        2,
    )
    .wait();
    // One write of three lines: the third is read, and dropped.
    assert_eq!(f.stdout, b"a\nb\n");
}

#[test]
fn input_fed_to_a_process_reaches_it_and_then_ends() {
    let mut cmd = command("cat", &[]);
    cmd.stdin(Stdio::piped());
    let mut w = Watched::spawn("cat", cmd, Duration::from_secs(20));
    w.feed(b"a\nb".to_vec());
    let f = w.wait_success();
    assert_eq!(f.stdout, b"a\nb");
}

#[test]
fn a_pipe_held_open_is_closed_by_wait() {
    let mut cmd = command("cat", &[]);
    cmd.stdin(Stdio::piped());
    let mut w = Watched::spawn("cat", cmd, Duration::from_secs(20));
    w.stdin().write_all(b"held\n").expect("write to cat");
    assert_eq!(w.next_line(), b"held\n");
    assert!(!w.has_exited(), "cat waits for more");
    assert_eq!(w.wait_success().stdout, b"held\n");
}

#[test]
fn check_alive_fails_once_the_process_has_ended_showing_its_output() {
    let mut w = Watched::spawn(
        "the short one",
        sh("echo done; exit 2"),
        Duration::from_secs(20),
    );
    shmbus_testkit::wait_for("it to end", &mut [], || w.has_exited());
    let msg = failure_of(|| w.check_alive("its answer"));
    assert!(
        msg.contains("the short one") && msg.contains("its answer"),
        "{msg}"
    );
    assert!(msg.contains("done"), "{msg}");
}

#[test]
fn a_process_that_may_not_panic_fails_the_test_when_it_does() {
    let w = Watched::spawn(
        "the panicker",
        sh("echo \"thread 'main' panicked at src/main.rs\" >&2"),
        Duration::from_secs(20),
    )
    .forbid_panics();
    let msg = failure_of(|| {
        w.wait();
    });
    assert!(
        msg.contains("the panicker") && msg.contains("panicked"),
        "{msg}"
    );
}
