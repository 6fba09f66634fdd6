//! The watchdog: deadlines, killing, reaping, and output as it comes.

mod common;

use std::io::Write;
use std::process::Stdio;
use std::time::Duration;

use common::{assert_says, failure_of, quick_failure_of, sh};
use shmbus_testkit::{Watched, command, no_spawn_in_flight, process_state, wait_for};

/// Whether a process with this pid still exists (a zombie counts).
fn exists(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// `script` under the watchdog as `label`, with a deadline of a minute.
fn watch(label: &str, script: &str) -> Watched {
    Watched::spawn(label, sh(script), Duration::from_secs(60))
}

/// `cat`, its stdin a pipe the test holds.
fn cat() -> Watched {
    let mut cmd = command("cat", &[]);
    cmd.stdin(Stdio::piped());
    Watched::spawn("cat", cmd, Duration::from_secs(20))
}

#[test]
fn a_process_past_its_deadline_is_killed_reaped_and_fails_the_test() {
    let w = Watched::spawn(
        "the sleeper",
        sh("echo zzz; exec sleep 30"),
        Duration::from_millis(300),
    );
    let pid = w.pid();
    let msg = quick_failure_of(|| {
        w.wait();
    });
    assert_says(&msg, &["watchdog: the sleeper", "300ms", "zzz"]);
    assert!(!exists(pid), "killed and reaped");
}

#[test]
fn dropping_a_running_process_kills_and_reaps_it() {
    let w = watch("the sleeper", "exec sleep 30");
    let pid = w.pid();
    assert!(exists(pid));
    drop(w);
    assert!(!exists(pid), "killed and reaped");
}

#[test]
fn a_process_that_ends_in_time_leaves_its_status_output_and_duration() {
    let f = watch("the talker", "echo out; echo err >&2; exit 7").wait();
    assert_eq!((f.code(), f.signal()), (Some(7), None));
    assert_eq!(
        (f.stdout.as_slice(), f.stderr.as_str()),
        (&b"out\n"[..], "err\n")
    );
    assert_eq!(f.label, "the talker");
    assert!(f.took < Duration::from_secs(60));
    let msg = failure_of(|| {
        f.assert_success();
    });
    assert_says(&msg, &["the talker", "out"]);
}

#[test]
fn waiting_for_a_line_fails_at_once_when_the_process_ends_first() {
    let mut w = watch("the quitter", "echo bye");
    let msg = quick_failure_of(|| w.wait_until_printed("never", Duration::from_secs(30)));
    assert_says(&msg, &["the quitter", "ended", "bye"]);
}

#[test]
fn the_test_sees_lines_as_the_process_prints_them() {
    let mut w = watch(
        "the printer",
        "echo one; sleep 0.1; echo two; exec sleep 30",
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
    wait_for("the pipe to close", &mut [], || w.stdout_closed());
    // A child another test is starting holds copies of this binary's
    // descriptors from fork to exec, the pipe's read end among them, and
    // then the write would not fail: let no other start be in flight.
    let no_fork = no_spawn_in_flight();
    w.stdin().write_all(b"go\n").expect("write to sh");
    let f = w.wait();
    drop(no_fork);
    assert_eq!(f.signal(), Some(libc::SIGPIPE), "{f:?}");
    assert_eq!(f.stdout, b"first\n");
}

#[test]
fn a_head_keeps_no_more_than_its_lines_of_what_came_in_one_write() {
    let cmd = sh("printf 'a\\nb\\nc\\n'");
    let f = Watched::spawn_head("printf", cmd, Duration::from_secs(20), 2).wait();
    // One write of three lines: the third is read, and dropped.
    assert_eq!(f.stdout, b"a\nb\n");
}

#[test]
fn input_fed_to_a_process_reaches_it_and_then_ends() {
    let mut w = cat();
    w.feed(b"a\nb".to_vec());
    assert_eq!(w.wait_success().stdout, b"a\nb");
}

#[test]
fn a_pipe_held_open_is_closed_by_wait() {
    let mut w = cat();
    w.stdin().write_all(b"held\n").expect("write to cat");
    assert_eq!(w.next_line(), b"held\n");
    assert!(!w.has_exited(), "cat waits for more");
    assert_eq!(w.wait_success().stdout, b"held\n");
}

#[test]
fn check_alive_fails_once_the_process_has_ended_showing_its_output() {
    let mut w = watch("the short one", "echo done; exit 2");
    wait_for("it to end", &mut [], || w.has_exited());
    let msg = failure_of(|| w.check_alive("its answer"));
    assert_says(&msg, &["the short one", "its answer", "done"]);
}

#[test]
fn a_process_that_may_not_panic_fails_the_test_when_it_does() {
    let w = watch(
        "the panicker",
        "echo \"thread 'main' panicked at x.rs\" >&2",
    );
    let w = w.forbid_panics();
    let msg = failure_of(|| {
        w.wait();
    });
    assert_says(&msg, &["the panicker", "panicked"]);
}

#[test]
fn process_state_says_asleep_stopped_and_gone() {
    let w = watch("the sleeper", "exec sleep 30");
    let pid = w.pid();
    wait_for("it to sleep", &mut [], || process_state(pid) == Some('S'));
    // SAFETY: kill(2) on a process this test started and has not reaped.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGSTOP) }, 0);
    wait_for("it to stop", &mut [], || process_state(pid) == Some('T'));
    drop(w);
    assert_eq!(process_state(pid), None);
}
