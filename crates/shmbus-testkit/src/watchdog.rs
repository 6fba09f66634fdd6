//! The watchdog: a process a test started, which cannot outlive its
//! deadline or its test.
//!
//! - Past its deadline, [`Watched::wait`] kills the process and fails the
//!   test, naming it and showing what it printed.
//! - Dropped while the process runs (the test panicked), a [`Watched`]
//!   kills and reaps it; and the process gets `SIGKILL` if the thread that
//!   started it dies (`PR_SET_PDEATHSIG`), so a test binary that is itself
//!   killed leaves nothing behind. It writes no core file.
//! - Its stdout and stderr, where piped, are read by threads as they come
//!   (a chatty process never blocks on a full pipe), so the test can watch
//!   for a line while it runs ([`Watched::wait_until_printed`],
//!   [`Watched::next_line`]) and gets all of it in the end ([`Finished`]).
//! - Started through the spawn lock (see
//!   [`no_spawn_in_flight`](crate::no_spawn_in_flight)).

use std::fmt;
use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, ChildStdin, Command, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::spawn_lock::no_spawn_in_flight;

/// How often a wait of the watchdog looks again (whether the process has
/// ended, printed, ...).
const POLL: Duration = Duration::from_millis(2);

/// A process under the watchdog.
pub struct Watched {
    label: String,
    pid: u32,
    child: Option<Child>,
    started: Instant,
    deadline: Duration,
    stdin: Option<ChildStdin>,
    feeder: Option<JoinHandle<()>>,
    stdout: Capture,
    stderr: Capture,
    /// How many bytes of stdout [`Watched::next_line`] has handed out.
    taken: usize,
    forbid_panics: bool,
}

/// One output pipe of the process, copied into `text` as it comes.
struct Capture {
    text: Arc<Mutex<Vec<u8>>>,
    /// Set once the parent's end of the pipe is closed (end of file, or
    /// the line limit reached), or from the start if it was not piped.
    closed: Arc<AtomicBool>,
    reader: Option<JoinHandle<()>>,
}

impl Capture {
    /// Reads `pipe` in a thread until its end, or until `max_lines` lines,
    /// then closes it. `None`: a capture of nothing, closed.
    fn start(pipe: Option<impl Read + Send + 'static>, max_lines: Option<usize>) -> Capture {
        let text = Arc::new(Mutex::new(Vec::new()));
        let closed = Arc::new(AtomicBool::new(pipe.is_none()));
        let reader = pipe.map(|mut pipe| {
            let (text, closed) = (Arc::clone(&text), Arc::clone(&closed));
            std::thread::spawn(move || {
                let mut chunk = [0u8; 4096];
                let mut lines = 0;
                while let Ok(n @ 1..) = pipe.read(&mut chunk) {
                    // What to keep of this chunk: all of it, or up to the
                    // last line wanted (the rest is discarded, as a `head`
                    // that exits discards what it read past its lines).
                    let (mut keep, mut done) = (n, false);
                    if let Some(max) = max_lines {
                        for (i, &b) in chunk[..n].iter().enumerate() {
                            if b == b'\n' {
                                lines += 1;
                                if lines == max {
                                    (keep, done) = (i + 1, true);
                                    break;
                                }
                            }
                        }
                    }
                    lock(&text).extend_from_slice(&chunk[..keep]);
                    if done {
                        break;
                    }
                }
                drop(pipe);
                closed.store(true, Ordering::Release);
            })
        });
        Capture {
            text,
            closed,
            reader,
        }
    }

    fn so_far(&self) -> Vec<u8> {
        lock(&self.text).clone()
    }

    /// Waits for the reader to reach the end and takes all it read.
    fn finish(&mut self) -> Vec<u8> {
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
        std::mem::take(&mut *lock(&self.text))
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What a process left when it ended.
pub struct Finished {
    /// Who it was (the label it was started with).
    pub label: String,
    /// Its pid.
    pub pid: u32,
    /// How it ended.
    pub status: ExitStatus,
    /// Everything it wrote to stdout (empty if stdout was not piped).
    pub stdout: Vec<u8>,
    /// Everything it wrote to stderr (empty if stderr was not piped).
    pub stderr: String,
    /// From its start to its end.
    pub took: Duration,
}

impl Watched {
    /// Starts `cmd` as it is set up (stdin, stdout and stderr as the
    /// command says; those that are piped are captured or handed to the
    /// test), to be killed `deadline` after its start. `label` names it in
    /// failure messages.
    pub fn spawn(label: &str, cmd: Command, deadline: Duration) -> Watched {
        Watched::start(label, cmd, deadline, None)
    }

    /// As [`spawn`](Watched::spawn), but the test reads only the first
    /// `lines` lines of stdout and then closes its end of the pipe, as
    /// `| head -n lines` does: the process's next write gets `EPIPE`.
    pub fn spawn_head(label: &str, cmd: Command, deadline: Duration, lines: usize) -> Watched {
        assert!(lines > 0, "head of 0 lines");
        Watched::start(label, cmd, deadline, Some(lines))
    }

    fn start(label: &str, mut cmd: Command, deadline: Duration, lines: Option<usize>) -> Watched {
        // SAFETY: the closure runs in the forked child before exec and only
        // makes two async-signal-safe system calls (prctl, setrlimit).
        unsafe {
            cmd.pre_exec(|| {
                // Die with the thread that spawned us, so a parent that is
                // itself killed leaves no child behind.
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                // Children that are meant to die of SIGSEGV write no core file.
                let none = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                libc::setrlimit(libc::RLIMIT_CORE, &none);
                Ok(())
            });
        }
        // Before the spawn: a child may run, and even reach its own
        // deadline, before `spawn` returns to a descheduled parent, and no
        // child ends a timeout before it was started.
        let started = Instant::now();
        let mut child = {
            let _no_other_spawn = no_spawn_in_flight();
            cmd.spawn().unwrap_or_else(|e| panic!("spawn {label}: {e}"))
        };
        // The command may hold the parent's copy of a pipe end it was given
        // (say, the write end of the test's own pipe): close it now.
        drop(cmd);
        Watched {
            label: label.to_owned(),
            pid: child.id(),
            stdin: child.stdin.take(),
            stdout: Capture::start(child.stdout.take(), lines),
            stderr: Capture::start(child.stderr.take(), None),
            child: Some(child),
            started,
            deadline,
            feeder: None,
            taken: 0,
            forbid_panics: false,
        }
    }

    /// From now on, [`wait`](Watched::wait) and [`kill`](Watched::kill)
    /// also fail the test if the process's stderr says "panicked": for a
    /// binary that must never panic, whatever its exit status.
    pub fn forbid_panics(mut self) -> Watched {
        self.forbid_panics = true;
        self
    }

    /// The process's pid.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The process's stdin, a pipe the test holds open. Fails the test if
    /// stdin was not piped or is already closed or being fed.
    pub fn stdin(&mut self) -> &mut ChildStdin {
        let label = &self.label;
        self.stdin
            .as_mut()
            .unwrap_or_else(|| panic!("{label}: stdin is not an open pipe"))
    }

    /// Takes the process's stdin pipe from the watchdog, for the test to
    /// write to and close itself.
    pub fn take_stdin(&mut self) -> ChildStdin {
        let label = &self.label;
        self.stdin
            .take()
            .unwrap_or_else(|| panic!("{label}: stdin is not an open pipe"))
    }

    /// Closes the process's stdin (end of file for it), if open.
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Writes `input` to the process's stdin from a thread, then closes
    /// it. The process may stop reading early: then the write fails, which
    /// is fine.
    pub fn feed(&mut self, input: Vec<u8>) {
        let mut pipe = self.take_stdin();
        self.feeder = Some(std::thread::spawn(move || {
            let _ = pipe.write_all(&input);
        }));
    }

    /// Whether the process has ended (it is not reaped, and its output is
    /// kept for [`wait`](Watched::wait)).
    pub fn has_exited(&mut self) -> bool {
        match self.child.as_mut() {
            Some(c) => c.try_wait().expect("try_wait").is_some(),
            None => true,
        }
    }

    /// Fails the test, with the process's output, if it has already ended:
    /// for loops that wait on something the process should do.
    pub fn check_alive(&mut self, waiting_for: &str) {
        if self.has_exited() {
            let status = self.child.as_mut().expect("child").wait().expect("wait");
            let f = self.collect(status);
            panic!(
                "{} (pid {}) ended ({:?}) while the test waited for {waiting_for}\n{}",
                f.label,
                f.pid,
                f.status,
                f.output()
            );
        }
    }

    /// What the process has written to stdout so far.
    pub fn output_so_far(&self) -> String {
        String::from_utf8_lossy(&self.stdout.so_far()).into_owned()
    }

    /// What the process has written to stdout and stderr so far, for
    /// failure messages.
    pub fn output_and_errors_so_far(&self) -> String {
        format!(
            "--- stdout of {} (pid {}) so far ---\n{}\n--- stderr ---\n{}",
            self.label,
            self.pid,
            String::from_utf8_lossy(&self.stdout.so_far()).trim_end(),
            String::from_utf8_lossy(&self.stderr.so_far()).trim_end()
        )
    }

    /// Waits until the process has written `needle` to stdout. Fails the
    /// test, with its output, if it ends first or after `within`.
    pub fn wait_until_printed(&mut self, needle: &str, within: Duration) {
        let text = Arc::clone(&self.stdout.text);
        let needle = needle.as_bytes();
        let what = format!(
            "{} to print {:?}",
            self.label,
            String::from_utf8_lossy(needle)
        );
        let deadline = Instant::now() + within;
        while !lock(&text).windows(needle.len()).any(|w| w == needle) {
            self.check_alive(&what);
            if Instant::now() >= deadline {
                panic!(
                    "gave up after {within:?} waiting for {what}\n{}",
                    self.output_and_errors_so_far()
                );
            }
            std::thread::sleep(POLL);
        }
    }

    /// Whether the test's end of the process's stdout is closed: it ended
    /// it, or the [`spawn_head`](Watched::spawn_head) limit was reached.
    pub fn stdout_closed(&self) -> bool {
        self.stdout.closed.load(Ordering::Acquire)
    }

    /// The next line of stdout (with its newline) that this has not handed
    /// out yet, waiting for it until the watchdog's deadline. Fails the
    /// test if stdout closes first.
    pub fn next_line(&mut self) -> Vec<u8> {
        let (text, closed) = (Arc::clone(&self.stdout.text), &self.stdout.closed);
        let from = self.taken;
        let line_end = || lock(&text)[from..].iter().position(|&b| b == b'\n');
        let left = self.deadline.saturating_sub(self.started.elapsed());
        let deadline = Instant::now() + left;
        while line_end().is_none() && !closed.load(Ordering::Acquire) {
            if Instant::now() >= deadline {
                panic!(
                    "gave up after {left:?} waiting for a line from {}",
                    self.label
                );
            }
            std::thread::sleep(POLL);
        }
        let Some(end) = line_end() else {
            panic!(
                "{} (pid {}) closed stdout before a whole line\n{}",
                self.label,
                self.pid,
                self.output_and_errors_so_far()
            );
        };
        self.taken = from + end + 1;
        lock(&text)[from..self.taken].to_vec()
    }

    /// Waits for the process to end by itself (after closing its stdin, if
    /// the test held it open). Past the deadline the process is killed and
    /// the test fails, naming it and showing its output.
    pub fn wait(mut self) -> Finished {
        self.stdin = None;
        loop {
            let child = self.child.as_mut().expect("child not yet reaped");
            if let Some(status) = child.try_wait().expect("try_wait") {
                return self.collect(status);
            }
            if self.started.elapsed() >= self.deadline {
                let _ = child.kill();
                let status = child.wait().expect("wait after kill");
                let deadline = self.deadline;
                let f = self.collect(status);
                panic!(
                    "watchdog: {} (pid {}) still ran at its deadline ({deadline:?}) and was \
                     killed (a hang?)\n{}",
                    f.label,
                    f.pid,
                    f.output()
                );
            }
            std::thread::sleep(POLL);
        }
    }

    /// Waits, and fails the test unless the process exited with status 0.
    pub fn wait_success(self) -> Finished {
        let f = self.wait();
        f.assert_success();
        f
    }

    /// Kills the process with SIGKILL and reaps it.
    pub fn kill(mut self) -> Finished {
        // SIGKILL before stdin closes: a child that reads stdin would
        // otherwise see EOF first and could exit cleanly, not be killed.
        let child = self.child.as_mut().expect("child not yet reaped");
        let _ = child.kill();
        self.stdin = None;
        let status = child.wait().expect("wait after kill");
        self.collect(status)
    }

    /// The ended process's output, once its pipes are drained.
    fn collect(&mut self, status: ExitStatus) -> Finished {
        let took = self.started.elapsed();
        self.child = None;
        self.stdin = None;
        if let Some(feeder) = self.feeder.take() {
            feeder.join().expect("stdin feeder");
        }
        let f = Finished {
            label: self.label.clone(),
            pid: self.pid,
            status,
            stdout: self.stdout.finish(),
            stderr: String::from_utf8_lossy(&self.stderr.finish()).into_owned(),
            took,
        };
        assert!(
            !(self.forbid_panics && f.stderr.contains("panicked")),
            "{} (pid {}) panicked\n{}",
            f.label,
            f.pid,
            f.output()
        );
        f
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Finished {
    /// The exit code; `None` if a signal ended the process.
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    /// The signal that ended the process, if one did.
    pub fn signal(&self) -> Option<i32> {
        self.status.signal()
    }

    /// Its stdout as text (invalid UTF-8 replaced).
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// stdout and stderr, for failure messages.
    pub fn output(&self) -> String {
        format!(
            "--- stdout ---\n{}\n--- stderr ---\n{}",
            self.stdout().trim_end(),
            self.stderr.trim_end()
        )
    }

    /// Fails the test, with the output, unless the process exited with
    /// status 0.
    pub fn assert_success(&self) -> &Self {
        assert!(
            self.status.success(),
            "{} (pid {}) failed: {:?}\n{}",
            self.label,
            self.pid,
            self.status,
            self.output()
        );
        self
    }
}

impl fmt::Debug for Finished {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Finished")
            .field("label", &self.label)
            .field("pid", &self.pid)
            .field("code", &self.code())
            .field("signal", &self.signal())
            .field("stdout", &String::from_utf8_lossy(&self.stdout))
            .field("stderr", &self.stderr)
            .field("took", &self.took)
            .finish()
    }
}
