//! Standard output, for every command that prints.
//!
//! std hides a closed stdout twice over: before `main`, its runtime reopens
//! a closed fd 1 on /dev/null (so that no later `open` takes fd 1), and its
//! `Stdout` reports EBADF as success. Either way `shmbus sub S >&-` would
//! release records that nobody received. So a constructor that runs before
//! std's runtime notes whether fd 1 was open at exec, [`stdout`] refuses to
//! hand out a writer if it was not, and the writer calls write(2) itself, so
//! every error (EBADF, EIO, ENOSPC; EPIPE, which `CliError::stdout` turns
//! into a quiet stop) reaches the command before it counts a line as done.

use std::io::{self, Write};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::CliError;

/// Whether fd 1 was closed when the process started.
static CLOSED_AT_EXEC: AtomicBool = AtomicBool::new(false);

/// Runs from `.init_array`, before std's runtime puts /dev/null on a
/// closed fd 1.
extern "C" fn note_stdout_at_exec() {
    // SAFETY: F_GETFD only reads the descriptor flags of fd 1 (failing with
    // EBADF if it is closed); it takes no pointer and changes nothing.
    let flags = unsafe { libc::fcntl(libc::STDOUT_FILENO, libc::F_GETFD) };
    // Relaxed: the only reader is `main`'s thread, which starts after every
    // constructor has returned.
    CLOSED_AT_EXEC.store(flags == -1, Ordering::Relaxed);
}

// The dynamic loader (or a static binary's libc start code) calls every
// function in `.init_array` before `main`, and so before std's own setup.
#[used]
// SAFETY: `.init_array` holds pointers to `extern "C" fn()`, which this
// static is; the function touches nothing std has not set up yet.
#[unsafe(link_section = ".init_array")]
static NOTE_STDOUT_AT_EXEC: extern "C" fn() = note_stdout_at_exec;

/// Standard output, buffered: call `flush` after each unit of output (a
/// line, a table), and only count it done once that succeeded.
pub type Stdout = io::BufWriter<Fd1>;

/// The writer for a command's output; an error if stdout was closed when
/// shmbus started (where std would have written to /dev/null).
pub fn stdout() -> Result<Stdout, CliError> {
    if CLOSED_AT_EXEC.load(Ordering::Relaxed) {
        return Err(CliError::runtime(
            "standard output is closed (fd 1 was not open when shmbus started), \
             so nothing would receive the output",
        ));
    }
    Ok(io::BufWriter::with_capacity(64 << 10, Fd1(io::stdout())))
}

/// fd 1, written with write(2): unlike `io::Stdout`, it reports EBADF.
/// (std's handle is kept only for its fd; its own buffer is never used.)
pub struct Fd1(io::Stdout);

impl Write for Fd1 {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // EINTR comes back as `Interrupted`, which `write_all` retries.
        Ok(rustix::io::write(self.0.as_fd(), buf)?)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
