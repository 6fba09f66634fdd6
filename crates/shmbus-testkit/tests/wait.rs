//! Waiting for a condition with a deadline, watching the children it
//! depends on.

mod common;

use std::time::{Duration, Instant};

use common::{assert_says, quick_failure_of, sh};
use shmbus_testkit::{Watched, wait_for, wait_for_within};

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
    let within = Duration::from_millis(50);
    let msg = quick_failure_of(|| wait_for_within("the moon", within, &mut [], || false));
    assert!(start.elapsed() >= within);
    assert_says(&msg, &["the moon", "50ms"]);
}

#[test]
fn wait_for_fails_at_once_when_a_child_it_watches_ends() {
    let mut child = Watched::spawn("the leaver", sh("echo leaving"), Duration::from_secs(20));
    let msg = quick_failure_of(|| wait_for("a sign", &mut [&mut child], || false));
    assert_says(&msg, &["the leaver", "a sign", "leaving"]);
}

#[test]
fn a_timed_out_wait_shows_what_the_children_printed_so_far() {
    let script = "echo dozing; exec sleep 30";
    let mut child = Watched::spawn("the sleeper", sh(script), Duration::from_secs(60));
    child.wait_until_printed("dozing", Duration::from_secs(20));
    let within = Duration::from_millis(20);
    let msg =
        quick_failure_of(|| wait_for_within("a wake-up", within, &mut [&mut child], || false));
    assert_says(&msg, &["a wake-up", "dozing", "the sleeper"]);
}
