//! Running a binary under the watchdog, as a test of that binary does.
//!
//! [`command`] sets a run up (stdin /dev/null, stdout and stderr piped),
//! the test adjusts it as it needs (current directory, a file or pipe for
//! stdin or stdout, [`with_stdout_closed`]), then [`run`] runs it to its
//! end or [`spawn`] starts it in the background. Every run is killed after
//! [`RUN_DEADLINE`], and fails the test if its stderr says "panicked".

use std::ffi::OsStr;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::deadline::RUN_DEADLINE;
use crate::watchdog::{Finished, Watched};

/// `program ARGS`, with stdin /dev/null and stdout and stderr piped.
pub fn command(program: impl AsRef<OsStr>, args: &[&str]) -> Command {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// The same command with fd 1 closed (as `>&-` leaves it), not /dev/null.
pub fn with_stdout_closed(mut cmd: Command) -> Command {
    cmd.stdout(Stdio::null());
    // SAFETY: runs in the forked child before exec, and makes one
    // async-signal-safe system call.
    unsafe {
        cmd.pre_exec(|| {
            libc::close(1);
            Ok(())
        });
    }
    cmd
}

/// Starts `cmd` in the background under the watchdog ([`RUN_DEADLINE`];
/// "panicked" on stderr fails the test).
pub fn spawn(cmd: Command) -> Watched {
    Watched::spawn(&describe(&cmd), cmd, RUN_DEADLINE).forbid_panics()
}

/// As [`spawn`], the test reading only the first `lines` lines of stdout
/// (see [`Watched::spawn_head`]).
pub fn spawn_head(cmd: Command, lines: usize) -> Watched {
    Watched::spawn_head(&describe(&cmd), cmd, RUN_DEADLINE, lines).forbid_panics()
}

/// Runs `cmd` to its end under the watchdog.
pub fn run(cmd: Command) -> Finished {
    spawn(cmd).wait()
}

/// Runs `cmd` to its end with `input` on stdin (fed from a thread: the
/// program may read slowly, or stop early).
pub fn run_with_input(mut cmd: Command, input: &[u8]) -> Finished {
    cmd.stdin(Stdio::piped());
    let mut p = spawn(cmd);
    p.feed(input.to_vec());
    p.wait()
}

/// "`program arg ...`", naming a run in failure messages.
fn describe(cmd: &Command) -> String {
    let program = Path::new(cmd.get_program());
    let mut words = vec![
        program
            .file_name()
            .unwrap_or(program.as_os_str())
            .to_string_lossy(),
    ];
    words.extend(cmd.get_args().map(OsStr::to_string_lossy));
    format!("`{}`", words.join(" "))
}
