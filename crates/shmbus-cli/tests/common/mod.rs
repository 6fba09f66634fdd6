//! What the CLI's integration tests share: a private directory under
//! /dev/shm per test, removed on drop, and `shmbus` runs under a watchdog
//! (a run past [`DEADLINE`] is killed and fails the test; a `Proc` dropped
//! while running is killed), with stderr checked for "panicked".

#![allow(dead_code)]

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Longest any child process may run before the test is failed.
pub const DEADLINE: Duration = Duration::from_secs(20);

/// A private directory under /dev/shm, removed with its contents on drop.
pub struct ShmDir {
    path: PathBuf,
}

impl ShmDir {
    pub fn new(test: &str) -> ShmDir {
        let path = PathBuf::from(format!(
            "/dev/shm/shmbus-cli-test-{}-{test}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir(&path).expect("create test directory under /dev/shm");
        ShmDir { path }
    }

    /// The name (a path) of a bus in this directory.
    pub fn bus(&self, name: &str) -> String {
        self.file(name).to_str().expect("UTF-8 path").to_owned()
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn dir(&self) -> &str {
        self.path.to_str().expect("UTF-8 path")
    }
}

impl Drop for ShmDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// What a finished `shmbus` run left behind.
#[derive(Debug)]
pub struct Output {
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: String,
    pub took: Duration,
}

impl Output {
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:?}"))
    }

    pub fn assert_success(&self) -> &Self {
        assert_eq!(self.code, Some(0), "expected success: {self:?}");
        self
    }

    /// Exit `code` and exactly one stderr line, `shmbus: ...`, containing
    /// `needle`.
    pub fn assert_error(&self, code: i32, needle: &str) -> &Self {
        assert_eq!(self.code, Some(code), "exit code: {self:?}");
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

/// `shmbus ARGS`, stdin /dev/null, stdout and stderr piped.
pub fn shmbus(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_shmbus"));
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// The same with fd 1 closed (as `>&-` leaves it), not /dev/null.
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

/// A running `shmbus`, under the watchdog; killed if dropped running.
pub struct Proc {
    child: Child,
    started: Instant,
    pub stdin: Option<ChildStdin>,
    stdout: Option<JoinHandle<Vec<u8>>>,
    stderr: Option<JoinHandle<String>>,
}

impl Proc {
    pub fn spawn(mut cmd: Command) -> Proc {
        let mut child = cmd.spawn().expect("spawn shmbus");
        let stdout = child.stdout.take().map(|mut pipe| {
            thread::spawn(move || {
                let mut bytes = Vec::new();
                let _ = pipe.read_to_end(&mut bytes);
                bytes
            })
        });
        let stderr = child.stderr.take().map(|mut pipe| {
            thread::spawn(move || {
                let mut text = String::new();
                let _ = pipe.read_to_string(&mut text);
                text
            })
        });
        Proc {
            stdin: child.stdin.take(),
            child,
            started: Instant::now(),
            stdout,
            stderr,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn wait(mut self) -> Output {
        self.stdin = None;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                break status;
            }
            if self.started.elapsed() > DEADLINE {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("a shmbus child ran for more than {DEADLINE:?}; killed it");
            }
            thread::sleep(Duration::from_millis(2));
        };
        let took = self.started.elapsed();
        let stdout = self
            .stdout
            .take()
            .map_or_else(Vec::new, |t| t.join().expect("stdout reader"));
        let stderr = self
            .stderr
            .take()
            .map_or_else(String::new, |t| t.join().expect("stderr reader"));
        assert!(!stderr.contains("panicked"), "shmbus panicked: {stderr}");
        Output {
            code: status.code(),
            stdout,
            stderr,
            took,
        }
    }

    pub fn kill(mut self) -> Output {
        let _ = self.child.kill();
        self.wait()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

pub fn run(cmd: Command) -> Output {
    Proc::spawn(cmd).wait()
}

/// Runs `shmbus ARGS` with `input` on stdin.
pub fn run_stdin(args: &[&str], input: &[u8]) -> Output {
    run_with_input(shmbus(args), input)
}

/// Runs `cmd` (made by [`shmbus`], set up as the test needs) with `input`
/// on stdin.
pub fn run_with_input(mut cmd: Command, input: &[u8]) -> Output {
    cmd.stdin(Stdio::piped());
    let mut p = Proc::spawn(cmd);
    let mut pipe = p.stdin.take().expect("piped stdin");
    let input = input.to_vec();
    // The child may stop reading early: then the write fails, which is fine.
    let feeder = thread::spawn(move || {
        let _ = pipe.write_all(&input);
    });
    let out = p.wait();
    feeder.join().expect("stdin feeder");
    out
}
