//! The demo's children under a watchdog: spawned as `demo-child`, their
//! stdout lines gathered into one channel, their stderr kept to say why one
//! failed, and every one killed when the parent stops early (an error, the
//! deadline, Ctrl-C).

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::error::CliError;

/// Set by SIGINT, SIGTERM or SIGHUP: the parent stops and cleans up.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::Relaxed);
}

pub(super) fn catch_interrupts() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        let handler: extern "C" fn(libc::c_int) = on_signal;
        // SAFETY: the handler only stores to an atomic, which is
        // async-signal-safe; no other code of ours installs one for these.
        unsafe { libc::signal(sig, handler as libc::sighandler_t) };
    }
}

/// One line from a child, or `None` when its stdout closed.
type Event = (usize, Option<String>);

pub(super) struct Kid {
    pub(super) label: String,
    child: Child,
    pub(super) stdin: Option<ChildStdin>,
    stderr: Option<JoinHandle<String>>,
    /// (digest, keys, last sequence) once it said `DONE`.
    pub(super) done: Option<(u64, u64, u64)>,
    killed: bool,
}

impl Kid {
    /// The last line it wrote to stderr, without our `shmbus: ` prefix.
    fn why(&mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let text = self
            .stderr
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        text.lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(|l| l.trim().trim_start_matches("shmbus: ").to_owned())
            .unwrap_or_else(|| "exited without a word".into())
    }
}

/// The children, under a watchdog: any still running when this is dropped
/// is killed.
pub(super) struct Kids {
    exe: PathBuf,
    pub(super) list: Vec<Kid>,
    tx: Sender<Event>,
    rx: Receiver<Event>,
}

impl Kids {
    pub(super) fn new() -> Result<Kids, CliError> {
        let exe = std::env::current_exe()
            .map_err(|e| CliError::runtime(format!("cannot find this executable: {e}")))?;
        let (tx, rx) = mpsc::channel();
        Ok(Kids {
            exe,
            list: Vec::new(),
            tx,
            rx,
        })
    }

    pub(super) fn spawn(&mut self, label: &str, args: &[String]) -> Result<usize, CliError> {
        let mut child = Command::new(&self.exe)
            .arg("demo-child")
            .args(["--label", label])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Ctrl-C goes to the parent alone, which cleans up.
            .process_group(0)
            .spawn()
            .map_err(|e| CliError::runtime(format!("{label}: cannot start: {e}")))?;
        let index = self.list.len();
        let out = child.stdout.take().expect("piped stdout");
        let tx = self.tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send((index, Some(line))).is_err() {
                    return;
                }
            }
            let _ = tx.send((index, None));
        });
        let mut err = child.stderr.take().expect("piped stderr");
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = err.read_to_string(&mut text);
            text
        });
        self.list.push(Kid {
            label: label.to_owned(),
            stdin: child.stdin.take(),
            child,
            stderr: Some(stderr),
            done: None,
            killed: false,
        });
        Ok(index)
    }

    /// The next event, or why the run must stop.
    pub(super) fn next(&mut self, deadline: Instant) -> Result<Event, CliError> {
        loop {
            if INTERRUPTED.load(Ordering::Relaxed) {
                return Err(CliError::runtime(
                    "interrupted; stopped the demo's processes and removed its files",
                ));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(CliError::runtime(
                    "the demo overran its deadline; killed its processes and removed its files",
                ));
            }
            match self.rx.recv_timeout(left.min(Duration::from_millis(50))) {
                Ok((i, None)) if self.list[i].done.is_none() && !self.list[i].killed => {
                    let kid = &mut self.list[i];
                    let why = kid.why();
                    return Err(CliError::runtime(format!("{} failed: {why}", kid.label)));
                }
                Ok(event) => return Ok(event),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => unreachable!("we hold a sender"),
            }
        }
    }

    /// Waits for `READY` (and what follows it on the line) from each of
    /// `kids`, while nothing else is expected.
    pub(super) fn ready(
        &mut self,
        kids: &[usize],
        deadline: Instant,
    ) -> Result<Vec<String>, CliError> {
        let mut said: Vec<Option<String>> = vec![None; kids.len()];
        while said.iter().any(Option::is_none) {
            let (j, line) = match self.next(deadline)? {
                (j, Some(line)) => (j, line),
                (_, None) => continue,
            };
            let Some(k) = kids.iter().position(|&i| i == j) else {
                continue;
            };
            let rest = line.strip_prefix("READY").ok_or_else(|| {
                CliError::runtime(format!("{} said {line:?}, not READY", self.list[j].label))
            })?;
            said[k] = Some(rest.trim().to_owned());
        }
        Ok(said.into_iter().flatten().collect())
    }

    pub(super) fn kill(&mut self, i: usize) -> Result<u32, CliError> {
        let kid = &mut self.list[i];
        kid.killed = true;
        let pid = kid.child.id();
        kid.child
            .kill()
            .map_err(|e| CliError::runtime(format!("{}: cannot kill: {e}", kid.label)))?;
        let _ = kid.child.wait();
        Ok(pid)
    }

    /// Closes every stdin and waits a little for each child to exit.
    pub(super) fn finish(&mut self) {
        for kid in &mut self.list {
            kid.stdin = None;
        }
        let until = Instant::now() + Duration::from_secs(5);
        for kid in &mut self.list {
            while Instant::now() < until {
                if let Ok(Some(_)) = kid.child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
}

impl Drop for Kids {
    fn drop(&mut self) {
        for kid in &mut self.list {
            if let Ok(None) = kid.child.try_wait() {
                let _ = kid.child.kill();
                let _ = kid.child.wait();
            }
        }
    }
}
