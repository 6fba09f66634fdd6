//! The terminal while the live view owns it: raw mode, the alternate
//! screen, no cursor; and the tty keys come from, polled to see a hangup.
//!
//! The terminal is put back (raw mode off, main screen, cursor shown)
//! however the view ends: on return or error by [`Screen`]'s drop; on a
//! panic by a panic hook, before the message is printed; on SIGTERM,
//! SIGINT or SIGHUP by a flag the loop looks at every 100 ms. (In raw mode
//! Ctrl-C is a key, not SIGINT.)
//!
//! A terminal that hangs up (its window closed, its tmux killed) ends the
//! view quietly. The loop polls the tty itself to see it ([`Tty::wait`]):
//! crossterm 0.29, reading a hung-up tty, spins in a loop that never
//! returns, whatever the timeout (crossterm-rs/crossterm#793), so it is
//! asked for keys only after a poll found the tty alive.

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crossterm::cursor::{Hide, Show};
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

use crate::cmd::signals;
use crate::error::CliError;

pub(super) type Term = Terminal<CrosstermBackend<crate::out::Stdout>>;

/// The terminal while the view owns it: raw mode, the alternate screen, no
/// cursor. Dropping it puts the terminal back.
pub(super) struct Screen {
    term: Option<Term>,
    tty: Tty,
}

/// Set while the terminal is in the view's modes, so that [`restore`] acts
/// once, whichever of `leave`, a drop or the panic hook comes first.
static ENTERED: AtomicBool = AtomicBool::new(false);

impl Screen {
    pub(super) fn enter() -> Result<Screen, CliError> {
        // SAFETY: isatty takes a descriptor number and no pointer; a
        // descriptor that is not open makes it return 0, nothing else.
        if unsafe { libc::isatty(libc::STDOUT_FILENO) } != 1 {
            return Err(CliError::usage(
                "standard output is not a terminal: for a file or a pipe, \
                 use `shmbus top --once`, `--json` or `--prometheus`",
            ));
        }
        let out = crate::out::stdout()?;
        let tty = Tty::open().map_err(|e| {
            CliError::runtime(format!("terminal: no terminal to read keys from: {e}"))
        })?;
        install_panic_hook();
        // SIGTERM, SIGINT and SIGHUP end the view through the loop, which
        // restores the terminal, instead of killing the process in raw mode.
        signals::stop_on(&[libc::SIGINT, libc::SIGTERM, libc::SIGHUP]);
        // Set before the first change, so that a failure halfway (raw mode
        // on, no alternate screen) is undone too.
        ENTERED.store(true, Ordering::SeqCst);
        match enter_modes(out) {
            Ok(term) => Ok(Screen {
                term: Some(term),
                tty,
            }),
            Err(e) => {
                let _ = restore();
                Err(terminal_error(e))
            }
        }
    }

    pub(super) fn parts(&mut self) -> Result<(&mut Term, &Tty), CliError> {
        match self.term.as_mut() {
            Some(term) => Ok((term, &self.tty)),
            None => Err(CliError::runtime("terminal: already restored")),
        }
    }

    /// Puts the terminal back, and says if that failed (a drop cannot).
    pub(super) fn leave(mut self) -> Result<(), CliError> {
        // Dropped first: it flushes what it holds, on the alternate screen.
        drop(self.term.take());
        restore().map_err(terminal_error)
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        if let Some(term) = self.term.take()
            && std::thread::panicking()
        {
            // A panic in the middle of a frame leaves part of it in the
            // writer's buffer: dropping the writer would flush it onto the
            // main screen, which the panic hook has restored.
            std::mem::forget(term);
        }
        let _ = restore();
    }
}

/// The terminal crossterm reads keys from (stdin, or /dev/tty when stdin
/// is not a terminal, as crossterm chooses), polled to see a hangup.
pub(super) struct Tty {
    fd: RawFd,
    /// /dev/tty, if opened: kept open while `fd` is used.
    _dev_tty: Option<std::fs::File>,
}

impl Tty {
    fn open() -> io::Result<Tty> {
        // SAFETY: isatty takes a descriptor number and no pointer.
        if unsafe { libc::isatty(libc::STDIN_FILENO) } == 1 {
            return Ok(Tty {
                fd: libc::STDIN_FILENO,
                _dev_tty: None,
            });
        }
        let file = std::fs::File::open("/dev/tty")?;
        Ok(Tty {
            fd: file.as_raw_fd(),
            _dev_tty: Some(file),
        })
    }

    /// Waits up to `timeout` for input (a signal ends the wait early);
    /// `false` if the terminal has hung up.
    pub(super) fn wait(&self, timeout: Duration) -> Result<bool, CliError> {
        let mut fd = libc::pollfd {
            fd: self.fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
        // SAFETY: `fd` is one valid pollfd, alive for the call; the count
        // says one.
        if unsafe { libc::poll(&mut fd, 1, ms) } < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::Interrupted => Ok(true),
                _ => Err(terminal_error(e)),
            };
        }
        Ok(fd.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) == 0)
    }
}

fn enter_modes(mut out: crate::out::Stdout) -> io::Result<Term> {
    enable_raw_mode()?;
    crossterm::execute!(out, EnterAlternateScreen, Hide)?;
    Terminal::new(CrosstermBackend::new(out))
}

/// Raw mode off, the main screen back, the cursor shown; each step is
/// tried even if one before it failed. Does nothing unless [`Screen::enter`]
/// changed the terminal and nothing has restored it since.
fn restore() -> io::Result<()> {
    if !ENTERED.swap(false, Ordering::SeqCst) {
        return Ok(());
    }
    let raw = disable_raw_mode();
    let screen = match crate::out::stdout() {
        Ok(mut out) => crossterm::execute!(out, LeaveAlternateScreen, Show),
        // fd 1 was closed at exec: `enter` refused to start.
        Err(_) => Ok(()),
    };
    raw.and(screen)
}

/// Restores the terminal before the panic message is printed, so that the
/// message is readable and the shell usable.
fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let _ = restore();
            previous(info);
        }));
    });
}

pub(super) fn terminal_error(e: io::Error) -> CliError {
    CliError::runtime(format!("terminal: {e}"))
}
