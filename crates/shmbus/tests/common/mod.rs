//! Helpers shared by the multi-process integration tests.
//!
//! - Child processes: a test binary re-executes itself with
//!   `--exact <child test fn> --nocapture --test-threads=1` and
//!   `SHMBUS_CHILD_ROLE=<role>` plus parameters in the environment. The child
//!   entry is an ordinary `#[test]` that returns at once when the role is not
//!   its own, and prints one `RESULT key=value ...` line for the parent.
//! - Every child runs under a watchdog ([`Watched`]): the parent polls
//!   `try_wait` until a deadline, kills an overrunning child, and fails the
//!   test with the child's output. A `Watched` dropped while its child still
//!   runs (the parent test panicked) kills and reaps it, and children also
//!   get `SIGKILL` if the thread that spawned them dies
//!   (`PR_SET_PDEATHSIG`), so no child outlives its test.
//! - Names: [`BusName`] makes `shmbus-test-<pid>-<counter>-<label>` and
//!   removes the file on drop, even on panic; [`BusName::finish`] also checks
//!   that nothing under its prefix is left in /dev/shm.

#![allow(dead_code)]

use std::collections::HashMap;
use std::fmt::Debug;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::str::FromStr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The environment variable that tells a re-executed test binary which
/// child role to play.
pub const ROLE_VAR: &str = "SHMBUS_CHILD_ROLE";

/// How long a child may run before the watchdog kills it.
pub const CHILD_DEADLINE: Duration = Duration::from_secs(60);

/// How long a parent waits for a condition a child should bring about.
pub const READY_DEADLINE: Duration = Duration::from_secs(30);

/// Whether this process was started as a child to play `role`.
pub fn is_child(role: &str) -> bool {
    std::env::var(ROLE_VAR).is_ok_and(|r| r == role)
}

/// A parameter the parent passed to this child, parsed.
pub fn param<T: FromStr>(key: &str) -> T
where
    T::Err: Debug,
{
    let raw = std::env::var(key).unwrap_or_else(|_| panic!("child parameter {key} is not set"));
    raw.parse()
        .unwrap_or_else(|e| panic!("child parameter {key}={raw:?} does not parse: {e:?}"))
}

/// Prints the one line the parent parses. The leading newline keeps it off
/// the line libtest starts with `test <name> ... `.
pub fn print_result(fields: &[(&str, String)]) {
    use std::io::Write;
    let mut line = String::from("\nRESULT");
    for (k, v) in fields {
        assert!(
            !v.contains(char::is_whitespace),
            "RESULT value for {k} has whitespace: {v:?}"
        );
        line.push_str(&format!(" {k}={v}"));
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}").expect("write RESULT");
    out.flush().expect("flush RESULT");
}

/// For children that must stay alive until the parent kills them: sleeps,
/// and exits on its own if the parent is gone or after `CHILD_DEADLINE`
/// (a safety net; the parent's watchdog normally acts first).
pub fn idle_until_killed() -> ! {
    let parent = std::os::unix::process::parent_id();
    let start = Instant::now();
    while start.elapsed() < CHILD_DEADLINE * 2 {
        std::thread::sleep(Duration::from_millis(5));
        if std::os::unix::process::parent_id() != parent {
            std::process::exit(3);
        }
    }
    std::process::exit(4);
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// Held by [`spawn_child`] from fork to exec. Between the two, the new child
/// shares this process's open file descriptions (and so its OFD locks) and
/// has its mappings; `exec` closes them (they are `O_CLOEXEC`), and
/// `Command::spawn` returns only after the exec. A test that checks that
/// something it dropped no longer holds a lock or a mapping holds this, so
/// that a child being spawned by a test on another thread cannot be holding
/// a copy at that moment.
static SPAWNING: Mutex<()> = Mutex::new(());

/// No other thread of this test binary is between fork and exec while the
/// guard lives. See [`SPAWNING`].
pub fn no_spawn_in_flight() -> MutexGuard<'static, ()> {
    SPAWNING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A unique bus name for one test; the file is removed when this drops.
pub struct BusName {
    name: String,
    path: PathBuf,
    /// For names under /dev/shm: the unique prefix `finish` scans for.
    prefix: Option<String>,
}

impl BusName {
    /// `shmbus-test-<pid>-<counter>-<label>` under /dev/shm.
    pub fn new(label: &str) -> BusName {
        let prefix = format!(
            "shmbus-test-{}-{}-",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let name = format!("{prefix}{label}");
        BusName {
            path: Path::new("/dev/shm").join(&name),
            name,
            prefix: Some(prefix),
        }
    }

    /// A bus at `dir/<label>`, named by its full path (a name with a slash).
    pub fn in_dir(dir: &Path, label: &str) -> BusName {
        let path = dir.join(label);
        BusName {
            name: path.to_str().expect("utf-8 path").to_owned(),
            path,
            prefix: None,
        }
    }

    /// What to pass to `create`, `open`, `stat`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the file (it may already be gone) and checks that nothing
    /// this test made under /dev/shm is left behind.
    pub fn finish(self) {
        let _ = std::fs::remove_file(&self.path);
        assert!(
            std::fs::symlink_metadata(&self.path).is_err(),
            "{} is still there",
            self.path.display()
        );
        let Some(prefix) = &self.prefix else { return };
        let left: Vec<String> = std::fs::read_dir("/dev/shm")
            .expect("read /dev/shm")
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| n.starts_with(prefix.as_str()))
            .collect();
        assert!(left.is_empty(), "left behind in /dev/shm: {left:?}");
    }
}

impl Drop for BusName {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A directory under /dev/shm for one test, removed (with its contents)
/// when this drops.
pub struct TestDir {
    path: PathBuf,
}

impl TestDir {
    /// `/dev/shm/shmbus-test-<pid>-<counter>-<label>`, created empty.
    pub fn new(label: &str) -> TestDir {
        let path = Path::new("/dev/shm").join(format!(
            "shmbus-test-{}-{}-{label}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir(&path).unwrap_or_else(|e| panic!("create {}: {e}", path.display()));
        TestDir { path }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the directory and checks it is gone.
    pub fn finish(self) {
        let _ = std::fs::remove_dir_all(&self.path);
        assert!(
            std::fs::symlink_metadata(&self.path).is_err(),
            "{} is still there",
            self.path.display()
        );
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Starts this test binary again as a child playing `role`, entering at the
/// test function `entry`, with `params` in its environment.
pub fn spawn_child(entry: &str, role: &str, params: &[(&str, String)]) -> Watched {
    spawn_child_with_deadline(entry, role, params, CHILD_DEADLINE)
}

/// As [`spawn_child`], with a watchdog deadline of `deadline`.
pub fn spawn_child_with_deadline(
    entry: &str,
    role: &str,
    params: &[(&str, String)],
    deadline: Duration,
) -> Watched {
    let exe = std::env::current_exe().expect("current_exe");
    let mut cmd = Command::new(exe);
    cmd.args(["--exact", entry, "--nocapture", "--test-threads=1"])
        .env(ROLE_VAR, role)
        .env("RUST_BACKTRACE", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in params {
        cmd.env(k, v);
    }
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
    let mut child = {
        let _no_other_spawn = no_spawn_in_flight();
        cmd.spawn()
            .unwrap_or_else(|e| panic!("spawn child {role}: {e}"))
    };
    let (stdout, stderr) = Default::default();
    let readers = vec![
        drain(
            child.stdout.take().expect("piped stdout"),
            Arc::clone(&stdout),
        ),
        drain(
            child.stderr.take().expect("piped stderr"),
            Arc::clone(&stderr),
        ),
    ];
    Watched {
        label: format!("{role} ({entry})"),
        pid: child.id(),
        child: Some(child),
        deadline: Instant::now() + deadline,
        stdout,
        stderr,
        readers,
    }
}

/// Copies a child's pipe into `buf` as it comes, so the parent can watch
/// for a line while the child runs.
fn drain(mut pipe: impl Read + Send + 'static, buf: Arc<Mutex<String>>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut chunk = [0u8; 4096];
        while let Ok(n @ 1..) = pipe.read(&mut chunk) {
            let text = String::from_utf8_lossy(&chunk[..n]);
            buf.lock()
                .unwrap_or_else(|p| p.into_inner())
                .push_str(&text);
        }
    })
}

/// What a child prints once it is set up (see [`print_ready`]).
pub const READY: &str = "SHMBUS-READY";

/// Tells the parent, which waits in [`Watched::wait_ready`], that this child
/// is set up (say, its subscriber is open and positioned).
pub fn print_ready() {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    writeln!(out, "\n{READY} pid={}", std::process::id()).expect("write READY");
    out.flush().expect("flush READY");
}

/// A child process under a watchdog.
pub struct Watched {
    label: String,
    pid: u32,
    child: Option<Child>,
    deadline: Instant,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
    readers: Vec<JoinHandle<()>>,
}

/// What a child left when it ended.
pub struct Finished {
    /// Who it was.
    pub label: String,
    /// Its pid.
    pub pid: u32,
    /// How it ended.
    pub status: ExitStatus,
    /// Everything it printed on stdout.
    pub stdout: String,
    /// Everything it printed on stderr.
    pub stderr: String,
}

impl Watched {
    /// The child's pid.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Whether the child has ended (without reaping its output).
    pub fn has_exited(&mut self) -> bool {
        match self.child.as_mut() {
            Some(c) => c.try_wait().expect("try_wait").is_some(),
            None => true,
        }
    }

    fn collect(&mut self, status: ExitStatus) -> Finished {
        self.child = None;
        for r in self.readers.drain(..) {
            let _ = r.join();
        }
        let take = |b: &Arc<Mutex<String>>| {
            std::mem::take(&mut *b.lock().unwrap_or_else(|p| p.into_inner()))
        };
        Finished {
            label: self.label.clone(),
            pid: self.pid,
            status,
            stdout: take(&self.stdout),
            stderr: take(&self.stderr),
        }
    }

    /// Waits until the child has printed [`print_ready`]'s line. Fails the
    /// test, with the child's output, if it ends first or after
    /// [`READY_DEADLINE`].
    pub fn wait_ready(&mut self) {
        let deadline = Instant::now() + READY_DEADLINE;
        let needle = format!("{READY} pid={}", self.pid);
        loop {
            if self
                .stdout
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains(&needle)
            {
                return;
            }
            self.check_alive("it to be ready");
            if Instant::now() >= deadline {
                let out = self
                    .stdout
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone();
                let err = self
                    .stderr
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone();
                panic!(
                    "child {} (pid {}) not ready after {READY_DEADLINE:?}\n--- stdout ---\n{out}\n--- stderr ---\n{err}",
                    self.label, self.pid
                );
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Waits for the child to end by itself. Past the deadline the child is
    /// killed and the test fails, naming it and showing its output.
    pub fn wait(mut self) -> Finished {
        loop {
            let child = self.child.as_mut().expect("child not yet reaped");
            if let Some(status) = child.try_wait().expect("try_wait") {
                return self.collect(status);
            }
            if Instant::now() >= self.deadline {
                let _ = child.kill();
                let status = child.wait().expect("wait after kill");
                let f = self.collect(status);
                panic!(
                    "watchdog: child {} (pid {}) was still running at its deadline and was \
                     killed (a hang: a lost wake-up or a subscriber that never reached the \
                     end?)\n{}",
                    f.label,
                    f.pid,
                    f.output()
                );
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Waits, and fails the test unless the child exited with status 0.
    pub fn wait_success(self) -> Finished {
        let f = self.wait();
        assert!(
            f.status.success(),
            "child {} (pid {}) failed: {:?}\n{}",
            f.label,
            f.pid,
            f.status,
            f.output()
        );
        f
    }

    /// Kills the child with SIGKILL and reaps it.
    pub fn kill(mut self) -> Finished {
        let child = self.child.as_mut().expect("child not yet reaped");
        let _ = child.kill();
        let status = child.wait().expect("wait after kill");
        self.collect(status)
    }

    /// What the child has printed on stdout so far.
    pub fn output_so_far(&self) -> String {
        self.stdout
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Fails the test, with the child's output, if it has already ended:
    /// for loops that wait on something the child should do.
    pub fn check_alive(&mut self, waiting_for: &str) {
        if self.has_exited() {
            let child = self.child.as_mut().expect("child");
            let status = child.wait().expect("wait");
            let f = self.collect(status);
            panic!(
                "child {} (pid {}) ended ({:?}) while the parent waited for {waiting_for}\n{}",
                f.label,
                f.pid,
                f.status,
                f.output()
            );
        }
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
    /// stdout and stderr, for failure messages.
    pub fn output(&self) -> String {
        format!(
            "--- stdout ---\n{}\n--- stderr ---\n{}",
            self.stdout.trim_end(),
            self.stderr.trim_end()
        )
    }

    /// The signal that ended the child, if one did.
    pub fn signal(&self) -> Option<i32> {
        self.status.signal()
    }

    /// The child's `RESULT` line as key/value pairs; fails if there is none.
    pub fn result(&self) -> Report {
        let line = self
            .stdout
            .lines()
            .rev()
            .find_map(|l| l.find("RESULT ").map(|i| &l[i + "RESULT ".len()..]))
            .unwrap_or_else(|| {
                panic!(
                    "child {} (pid {}) printed no RESULT line ({:?})\n{}",
                    self.label,
                    self.pid,
                    self.status,
                    self.output()
                )
            });
        let fields = line
            .split_whitespace()
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        Report {
            who: format!("{} (pid {})", self.label, self.pid),
            fields,
        }
    }
}

/// A parsed `RESULT` line.
pub struct Report {
    who: String,
    fields: HashMap<String, String>,
}

impl Report {
    /// The value of `key`, parsed; fails naming the child if absent.
    pub fn get<T: FromStr>(&self, key: &str) -> T
    where
        T::Err: Debug,
    {
        let raw = self
            .fields
            .get(key)
            .unwrap_or_else(|| panic!("{}: RESULT has no {key}: {:?}", self.who, self.fields));
        raw.parse()
            .unwrap_or_else(|e| panic!("{}: RESULT {key}={raw:?}: {e:?}", self.who))
    }

    /// The raw value of `key`, if present.
    pub fn raw(&self, key: &str) -> Option<&str> {
        self.fields.get(key).map(String::as_str)
    }
}

/// Polls `done` every millisecond until it holds. Fails the test if any of
/// `children` ends first, or after [`READY_DEADLINE`].
pub fn wait_for(what: &str, children: &mut [&mut Watched], mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + READY_DEADLINE;
    loop {
        if done() {
            return;
        }
        for c in children.iter_mut() {
            c.check_alive(what);
        }
        assert!(
            Instant::now() < deadline,
            "gave up after {READY_DEADLINE:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Reads a little-endian u32 from the file at `off`.
pub fn read_u32_at(path: &Path, off: u64) -> u32 {
    let f = std::fs::File::open(path).unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    let mut b = [0u8; 4];
    f.read_exact_at(&mut b, off)
        .unwrap_or_else(|e| panic!("read {}@{off}: {e}", path.display()));
    u32::from_le_bytes(b)
}

/// Reads a little-endian u64 from the file at `off`.
pub fn read_u64_at(path: &Path, off: u64) -> u64 {
    let f = std::fs::File::open(path).unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    let mut b = [0u8; 8];
    f.read_exact_at(&mut b, off)
        .unwrap_or_else(|e| panic!("read {}@{off}: {e}", path.display()));
    u64::from_le_bytes(b)
}

/// Writes `bytes` into the file at `off` (the file keeps its length).
pub fn write_at(path: &Path, off: u64, bytes: &[u8]) {
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap_or_else(|e| panic!("open {} for writing: {e}", path.display()));
    f.write_all_at(bytes, off)
        .unwrap_or_else(|e| panic!("write {}@{off}: {e}", path.display()));
}

/// Writes a little-endian u32 at `off`.
pub fn patch_u32(path: &Path, off: u64, v: u32) {
    write_at(path, off, &v.to_le_bytes());
}

/// Writes a little-endian u64 at `off`.
pub fn patch_u64(path: &Path, off: u64, v: u64) {
    write_at(path, off, &v.to_le_bytes());
}

/// SplitMix64: a cheap, well-mixed function of a 64-bit number.
pub fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A 32-bit word of a bus file, read through the file (not a mapping):
/// for watching a control field such as the futex waiter count from outside.
pub struct FileWord32 {
    file: std::fs::File,
    off: u64,
}

impl FileWord32 {
    /// The u32 at byte `off` of the file at `path`.
    pub fn new(path: &Path, off: u64) -> FileWord32 {
        let file =
            std::fs::File::open(path).unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
        FileWord32 { file, off }
    }

    /// Its current value.
    pub fn get(&self) -> u32 {
        let mut b = [0u8; 4];
        self.file
            .read_exact_at(&mut b, self.off)
            .unwrap_or_else(|e| panic!("read @{}: {e}", self.off));
        u32::from_le_bytes(b)
    }
}

/// Whether a thread of process `pid` is blocked in a `futex` system call on
/// a word inside that process's mapping of `path`: read from
/// /proc/<pid>/maps and /proc/<pid>/task/*/syscall. `None` if /proc does
/// not let this process see that (another user's process, say).
pub fn asleep_on_futex_in(pid: u32, path: &Path) -> Option<bool> {
    let want = path.to_str()?;
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
    let ranges: Vec<(u64, u64)> = maps
        .lines()
        .filter(|l| l.split_whitespace().nth(5) == Some(want))
        .filter_map(|l| {
            let (a, b) = l.split_whitespace().next()?.split_once('-')?;
            Some((
                u64::from_str_radix(a, 16).ok()?,
                u64::from_str_radix(b, 16).ok()?,
            ))
        })
        .collect();
    let mut asleep = false;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
    {
        let Ok(syscall) = std::fs::read_to_string(task.path().join("syscall")) else {
            continue;
        };
        let mut f = syscall.split_whitespace();
        let nr = f.next().and_then(|n| n.parse::<i64>().ok());
        let addr = f
            .next()
            .and_then(|a| u64::from_str_radix(a.trim_start_matches("0x"), 16).ok());
        if let (Some(nr), Some(addr)) = (nr, addr) {
            if nr == libc::SYS_futex && ranges.iter().any(|&(a, b)| (a..b).contains(&addr)) {
                asleep = true;
            }
        }
    }
    Some(asleep)
}
