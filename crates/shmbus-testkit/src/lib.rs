//! The harness every shmbus test suite shares (a dev-dependency only).
//!
//! Its pieces, and what each guarantees:
//!
//! - **Watchdog** ([`Watched`], [`Finished`]): every process a test starts
//!   runs under a deadline. Past it, the process is killed and the test
//!   fails, naming the process and showing what it printed; a test never
//!   hangs on a child. A `Watched` dropped while its process runs (the test
//!   panicked) kills and reaps it, and every process also gets `SIGKILL` if
//!   the thread that started it dies (`PR_SET_PDEATHSIG`), so none outlives
//!   its test. Its stdout and stderr are collected as they come, so a chatty
//!   process never blocks on a full pipe and the test can watch for a line.
//! - **Spawn lock** ([`no_spawn_in_flight`]): every start goes through it,
//!   so while its guard lives no thread of this test binary is between
//!   `fork` and `exec` here, and no half-started child holds a copy of a
//!   lock, mapping or pipe end the test dropped.
//! - **Child processes** ([`role`], [`spawn_child`], [`param`]): a test
//!   binary runs itself again as a child that plays one role: its entry is
//!   an ordinary `#[test]` whose body is one [`role`] call, which does
//!   nothing in a normal test run. Parameters go through the environment.
//! - **Result and ready lines** ([`print_result`], [`Report`],
//!   [`print_ready`], [`Watched::wait_ready`]): a child tells its parent
//!   what it saw in one `RESULT key=value ...` line, and that it is set up
//!   in one READY line.
//! - **Running a binary** ([`command`], [`run`], [`run_with_input`],
//!   [`spawn`]): a program run to its end or started in the background,
//!   under the watchdog, its output captured, and the test failed if its
//!   stderr says "panicked".
//! - **Waiting** ([`wait_for`], [`wait_for_within`]): polls a condition up
//!   to a deadline, failing the test at once if a child it depends on ends.
//! - **Deadlines** ([`CHILD_DEADLINE`], [`READY_DEADLINE`], [`RUN_DEADLINE`]).
//! - **Scale** ([`scale`], [`scale_min`], [`scale_deadline`],
//!   [`test_scale`]): the long tests' loop counts times `SHMBUS_TEST_SCALE`
//!   (1.0, the full size, by default; 0.5 in `.ci/run`, 0.25 in `ci/quick.sh`; 10 for a soak),
//!   and a child's deadline lengthened to match above 1.
//! - **Blackboard keys** ([`blackboard_home`]): where a key's probe
//!   starts, from LAYOUT §21.4, to pick keys that share an entry.
//! - **Skips** ([`skip`], [`Need`]): the one way a test says it cannot
//!   check what it names here (no root, no tmux, no huge pages); it
//!   fails the test under strict skips (`SHMBUS_STRICT_SKIPS=1` or
//!   `CI=true`, as `.ci/run` runs) unless `SHMBUS_ALLOW_SKIPS` names
//!   what is missing.
//! - **Process state** ([`process_state`]): whether a process is asleep,
//!   stopped, and so on, as /proc says.
//! - **Unique names** ([`BusName`], [`ShmDir`], [`RuntimeDir`],
//!   [`unique_prefix`]): names no
//!   other test or test binary running at the same time shares (what an
//!   earlier run with the same pid left is removed first), each file or
//!   directory removed when its guard drops, even on panic.
//! - **Cleanup checks** ([`assert_nothing_left`], [`BusName::finish`],
//!   [`ShmDir::finish`]): a test can end by checking that nothing it made is
//!   left in /dev/shm.
//!
//! Everything here fails the test by panicking with a message that says
//! what was awaited and shows the output of the processes involved.

mod board;
mod bus_name;
mod child;
mod cleanup;
mod deadline;
mod names;
mod process;
mod ready;
mod report;
mod run;
mod runtime_dir;
mod scale;
mod shm_dir;
mod skip;
mod spawn_lock;
mod wait;
mod watchdog;

pub use board::blackboard_home;
pub use bus_name::BusName;
pub use child::{ROLE_VAR, idle_until_killed, param, role, spawn_child, spawn_child_with_deadline};
pub use cleanup::assert_nothing_left;
pub use deadline::{CHILD_DEADLINE, READY_DEADLINE, RUN_DEADLINE};
pub use names::{SHM_DIR, unique_prefix};
pub use process::process_state;
pub use ready::{READY, print_ready};
pub use report::{Report, print_result};
pub use run::{command, run, run_with_input, spawn, spawn_head, with_stdout_closed};
pub use runtime_dir::RuntimeDir;
pub use scale::{SCALE_VAR, scale, scale_deadline, scale_min, test_scale};
pub use shm_dir::ShmDir;
pub use skip::{ALLOW_VAR, Need, STRICT_VAR, skip, strict_skips};
pub use spawn_lock::no_spawn_in_flight;
pub use wait::{wait_for, wait_for_within};
pub use watchdog::{Finished, Watched};
