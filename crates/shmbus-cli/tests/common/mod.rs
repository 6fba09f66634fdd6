//! What the CLI's integration tests share: the harness of `shmbus-testkit`
//! (see its crate docs: every run under a watchdog of [`RUN_DEADLINE`],
//! stderr checked for "panicked", private directories under /dev/shm
//! removed on drop), the `shmbus` binary as a command, the suite's
//! [`wait_for`], and the checks of a run that are about the CLI: its one
//! error line and its JSON.

#![allow(dead_code, unused_imports)]

use std::process::Command;

use serde_json::Value;
pub use shmbus_testkit::{
    process_state, run, run_with_input, spawn, spawn_head, with_stdout_closed, BusName, Finished,
    ShmDir, Watched, RUN_DEADLINE,
};

/// `shmbus ARGS`, stdin /dev/null, stdout and stderr piped.
pub fn shmbus(args: &[&str]) -> Command {
    shmbus_testkit::command(env!("CARGO_BIN_EXE_shmbus"), args)
}

/// Runs `shmbus ARGS` with `input` on stdin to the end.
pub fn run_stdin(args: &[&str], input: &[u8]) -> Finished {
    run_with_input(shmbus(args), input)
}

/// Polls `done` until it holds; fails the test after [`RUN_DEADLINE`].
pub fn wait_for(what: &str, done: impl FnMut() -> bool) {
    shmbus_testkit::wait_for_within(what, RUN_DEADLINE, &mut [], done);
}

/// What a finished `shmbus` run is checked for, beyond its exit status.
pub trait CliOutput {
    /// stdout, parsed as JSON; fails the test if it is not.
    fn json(&self) -> Value;

    /// Exit `code` and exactly one stderr line, `shmbus: ...`, containing
    /// `needle`.
    fn assert_error(&self, code: i32, needle: &str) -> &Self;
}

impl CliOutput for Finished {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:?}"))
    }

    fn assert_error(&self, code: i32, needle: &str) -> &Self {
        assert_eq!(self.code(), Some(code), "exit code: {self:?}");
        assert!(
            self.stderr.starts_with("shmbus: ") && self.stderr.ends_with('\n'),
            "stderr is not a `shmbus: ` line: {self:?}"
        );
        assert_eq!(self.stderr.lines().count(), 1, "one line: {self:?}");
        assert!(
            self.stderr.contains(needle),
            "stderr lacks {needle:?}: {self:?}"
        );
        self
    }
}
