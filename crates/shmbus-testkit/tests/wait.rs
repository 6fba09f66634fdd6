//! Waiting for a condition with a deadline, watching the children it
//! depends on.

mod common;

use std::time::{Duration, Instant};

use common::failure_of;
use shmbus_testkit::{command, wait_for, wait_for_within, Watched};

#[test]
fn wait_for_returns_as_soon_as_the_condition_holds() {
    let start = Instant::now();
    let mut polls = 0;
    wait_for("three polls", &mut [], || {
        polls += 1;
        polls == 3
    });
    assert_eq!(polls, 3);
    assert!(start.elapsed() < Duration::from_secs(5));
}

#[test]
fn wait_for_fails_after_its_deadline_naming_what_it_waited_for() {
    let start = Instant::now();
    let msg =
        failure_of(|| wait_for_within("the moon", Duration::from_millis(50), &mut [], || false));
    assert!(start.elapsed() >= Duration::from_millis(50));
    assert!(msg.contains("the moon") && msg.contains("50ms"), "{msg}");
}

#[test]
fn wait_for_fails_at_once_when_a_child_it_watches_ends() {
    let mut child = Watched::spawn(
        "the leaver",
        command("sh", &["-c", "echo leaving"]),
        Duration::from_secs(20),
    );
    let start = Instant::now();
    let msg = failure_of(|| wait_for("a sign", &mut [&mut child], || false));
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    assert!(
        msg.contains("the leaver") && msg.contains("a sign"),
        "{msg}"
    );
    assert!(
        msg.contains("leaving"),
        "the failure shows the output: {msg}"
    );
}

#[test]
fn a_timed_out_wait_shows_what_the_children_printed_so_far() {
    let mut child = Watched::spawn(
        "the sleeper",
        command("sh", &["-c", "echo dozing; exec sleep 30"]),
        Duration::from_secs(60),
    );
    child.wait_until_printed("dozing", Duration::from_secs(20));
    let msg = failure_of(|| {
        wait_for_within(
            "a wake-up",
            Duration::from_millis(20),
            &mut [&mut child],
            || false,
        )
    });
    assert!(msg.contains("a wake-up") && msg.contains("dozing"), "{msg}");
}
