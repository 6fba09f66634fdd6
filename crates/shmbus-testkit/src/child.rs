//! Child processes: a test binary runs itself again to play a role.
//!
//! The parent starts the binary with `--exact <entry> --nocapture
//! --test-threads=1`, so libtest runs just the test function `entry`, and
//! with [`ROLE_VAR`]`=<role>` and the parameters in the environment. The
//! entry is an ordinary `#[test]` whose whole body is one [`role`] call:
//!
//! ```
//! use shmbus_testkit::{param, print_result, role};
//!
//! // #[test] (here a doctest, which runs it as a normal test run would)
//! fn as_child_double_a_number() {
//!     role("double", || {
//!         let n: u64 = param("N");
//!         print_result(&[("double", (2 * n).to_string())]);
//!     });
//! }
//! # as_child_double_a_number();
//! ```
//!
//! In a normal test run the entry passes at once; in the child started by
//! `spawn_child("as_child_double_a_number", "double", &[("N", ..)])` it
//! plays the role. The child runs under the watchdog
//! ([`Watched`]) with [`CHILD_DEADLINE`] unless told otherwise, and says
//! what it saw in a RESULT line ([`print_result`](crate::print_result)).

use std::fmt::Debug;
use std::str::FromStr;
use std::time::{Duration, Instant};

use crate::deadline::CHILD_DEADLINE;
use crate::scale::scale_deadline;
use crate::watchdog::Watched;

/// The environment variable that tells a re-executed test binary which
/// role to play.
pub const ROLE_VAR: &str = "SHMBUS_CHILD_ROLE";

/// The body of a child role's entry: runs `body` if this process was
/// started ([`spawn_child`]) to play `name`, and does nothing in a normal
/// test run. A process started for another role fails here: its parent
/// named an entry that plays a different role than it asked for.
pub fn role(name: &str, body: impl FnOnce()) {
    let Ok(playing) = std::env::var(ROLE_VAR) else {
        return;
    };
    assert_eq!(
        playing, name,
        "started to play {playing:?}, but this entry plays {name:?}: \
         the parent named the wrong entry"
    );
    body();
}

/// A parameter the parent passed to this child, parsed. Fails the child if
/// it is missing or does not parse.
pub fn param<T: FromStr>(key: &str) -> T
where
    T::Err: Debug,
{
    let raw = std::env::var(key).unwrap_or_else(|_| panic!("child parameter {key} is not set"));
    raw.parse()
        .unwrap_or_else(|e| panic!("child parameter {key}={raw:?} does not parse: {e:?}"))
}

/// Starts this test binary again as a child playing `role`, entering at the
/// test function `entry`, with `params` in its environment, under the
/// watchdog with [`CHILD_DEADLINE`] (times `SHMBUS_TEST_SCALE` where that
/// is above 1: a child may run a scaled loop). Its stdin is /dev/null; its
/// stdout and stderr are captured.
pub fn spawn_child(entry: &str, role: &str, params: &[(&str, String)]) -> Watched {
    spawn_child_with_deadline(entry, role, params, scale_deadline(CHILD_DEADLINE))
}

/// As [`spawn_child`], killed `deadline` after its start.
pub fn spawn_child_with_deadline(
    entry: &str,
    role: &str,
    params: &[(&str, String)],
    deadline: Duration,
) -> Watched {
    let exe = std::env::current_exe().expect("current_exe");
    let mut cmd = crate::run::command(exe, &["--exact", entry, "--nocapture", "--test-threads=1"]);
    cmd.env(ROLE_VAR, role).env("RUST_BACKTRACE", "1");
    for (k, v) in params {
        cmd.env(k, v);
    }
    Watched::spawn(&format!("child {role} ({entry})"), cmd, deadline)
}

/// For a child that must stay alive until its parent kills it: sleeps, and
/// exits on its own if the parent is gone or after twice
/// [`CHILD_DEADLINE`], scaled as [`spawn_child`]'s (a safety net; the
/// parent's watchdog acts first).
pub fn idle_until_killed() -> ! {
    let parent = std::os::unix::process::parent_id();
    let start = Instant::now();
    let limit = scale_deadline(CHILD_DEADLINE * 2);
    while start.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(5));
        if std::os::unix::process::parent_id() != parent {
            std::process::exit(3);
        }
    }
    std::process::exit(4);
}
