//! How long a test waits for anything, in one place. Each is a bound on a
//! hang, not a performance figure: generous for a debug build on a small,
//! loaded machine.

use std::time::Duration;

/// How long a child process ([`spawn_child`](crate::spawn_child)) may run
/// before the watchdog kills it and fails the test, at `SHMBUS_TEST_SCALE`
/// 1 or below ([`scale_deadline`](crate::scale_deadline) lengthens it above).
pub const CHILD_DEADLINE: Duration = Duration::from_secs(60);

/// How long a test waits for a condition a child should bring about
/// ([`wait_for`](crate::wait_for), [`Watched::wait_ready`](crate::Watched::wait_ready)).
pub const READY_DEADLINE: Duration = Duration::from_secs(30);

/// How long a run of a binary ([`run`](crate::run), [`spawn`](crate::spawn))
/// may take, and how long a test waits on one
/// ([`Watched::next_line`](crate::Watched::next_line)).
pub const RUN_DEADLINE: Duration = Duration::from_secs(20);
