//! The one error type every command returns, and how it maps to an exit code.
//!
//! The contract with the user: an error is one line on stderr, prefixed
//! `shmbus: `, and the exit code says whose fault it was: 2 for a usage
//! error or bad input (the same code clap uses for a bad flag), 1 for a
//! failure at run time; `shmbus call` says how a call ended without a
//! response with codes of its own (3 and up, see `cmd::service`). A stdout
//! whose reader went away is not a failure at
//! all: `shmbus sub | head -1` must end quietly, like any Unix filter. A
//! stdout that is closed or cannot be written is one (see `out`).

use std::io;
use std::process::ExitCode;

use shmbus::{AttachError, CreateError, OpenError, error::HugePageError};

/// Why a command stopped early.
#[derive(Debug)]
pub enum CliError {
    /// Bad arguments or bad input: exit 2.
    Usage(String),
    /// Something failed while running: exit 1.
    Runtime(String),
    /// A call ended without a response: its own exit code (3 and up).
    Outcome(u8, String),
    /// The reader of stdout went away (EPIPE): stop quietly with exit 0.
    StdoutClosed,
}

impl CliError {
    pub fn usage(msg: impl Into<String>) -> CliError {
        CliError::Usage(msg.into())
    }

    pub fn runtime(msg: impl Into<String>) -> CliError {
        CliError::Runtime(msg.into())
    }

    /// A failed write to stdout: EPIPE means "stop", anything else is real.
    pub fn stdout(err: io::Error) -> CliError {
        if err.kind() == io::ErrorKind::BrokenPipe {
            CliError::StdoutClosed
        } else {
            CliError::runtime(format!("writing to stdout: {err}"))
        }
    }

    /// Prints the error (if any) and gives the process's exit code.
    pub fn report(&self) -> ExitCode {
        let (code, msg) = match self {
            CliError::StdoutClosed => return ExitCode::SUCCESS,
            CliError::Usage(msg) => (2, msg),
            CliError::Runtime(msg) => (1, msg),
            CliError::Outcome(code, msg) => (*code, msg),
        };
        print_error(msg);
        ExitCode::from(code)
    }
}

/// The message alone, without the `shmbus: ` prefix `report` adds. clap
/// shows it this way when a value parser (such as `--timeout`'s) fails.
impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CliError::Usage(msg) | CliError::Runtime(msg) | CliError::Outcome(_, msg) => {
                f.write_str(msg)
            }
            CliError::StdoutClosed => f.write_str("the reader of standard output went away"),
        }
    }
}

impl std::error::Error for CliError {}

/// Writes `shmbus: MSG` to stderr as exactly one line. Uses `writeln!`
/// rather than `eprintln!`, which panics if stderr itself is closed.
pub fn print_error(msg: &str) {
    use io::Write;
    // A path may hold a newline; keep the promise of one line.
    let msg = msg.replace('\n', "\\n");
    let _ = writeln!(io::stderr().lock(), "shmbus: {msg}");
}

impl From<OpenError> for CliError {
    fn from(err: OpenError) -> CliError {
        match err {
            OpenError::Name(_) => CliError::usage(err.to_string()),
            // Everything else is about the file found, not the command line.
            _ => CliError::runtime(err.to_string()),
        }
    }
}

impl From<CreateError> for CliError {
    fn from(err: CreateError) -> CliError {
        match err {
            CreateError::Name(_)
            | CreateError::InvalidGeometry(_)
            // A group this user is not in: the flag's fault, not the run's.
            | CreateError::Group { .. }
            | CreateError::HugePages(
                HugePageError::NotTmpfs { .. } | HugePageError::NotHugetlbfs { .. },
            ) => CliError::usage(err.to_string()),
            _ => CliError::runtime(err.to_string()),
        }
    }
}

impl From<AttachError> for CliError {
    fn from(err: AttachError) -> CliError {
        match err {
            AttachError::Open(open) => open.into(),
            // A role taken, a journaled or other-kind bus, a pid namespace.
            _ => CliError::runtime(err.to_string()),
        }
    }
}
