//! A running bridge's status file: what `shmbus bridge` (and `shmbus
//! record`, a bridge from a bus to a file: direction `record`) writes about
//! itself, and what `shmbus stat`, `top` and `clean` read, without Zenoh.
//! The writer ([`Writer`]) and the reader ([`read_live`], [`Status::parse`])
//! are side by side so that the format has one home (docs/STATUS-FILES.md).
//!
//! Where: one file per bridge process, `<pid>.json`, in
//! `$XDG_RUNTIME_DIR/shmbus/bridges/`, else `/tmp/shmbus-<uid>/bridges/`
//! (never /dev/shm, which holds only segments). The directories are made
//! 0700 and must be the user's own, not writable by anyone else.
//!
//! When: the bridge writes it at start, then from its stats callback,
//! about once a second and when its peer comes or goes (never per
//! message), each time whole into `.<pid>.json.tmp` then renamed over the
//! file, so that a reader sees one status or the next, never half. A clean
//! exit removes it; a killed bridge leaves it, and a reader tells that
//! from the pid and the process's start time (a reused pid has another):
//! such a file is stale, shown nowhere, and `shmbus clean` removes it.
//!
//! The rate is the bridge's own, over the ~1 s between two of its writes:
//! a one-shot `stat` has only one file to read, and a reader sampling
//! faster than the bridge writes would see the counts move by steps.
//!
//! A reader trusts nothing in a file: too long, not JSON, a field missing
//! or out of range, a pid other than its name's: the file is skipped.

use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

/// Names the file's shape; a reader skips any other.
pub const SCHEMA: &str = "shmbus-bridge-status/1";

/// The largest status file read (a real one is well under 4 KiB).
const MAX_FILE: u64 = 64 << 10;
/// The most endpoints of each kind, and the longest text field, read.
const MAX_ENDPOINTS: usize = 64;
const MAX_TEXT: usize = 4096;
/// The shortest window the bridge's rate is taken over: a status written
/// soon after the last (its peer came) keeps the last rate.
const RATE_WINDOW_NS: u64 = 500_000_000;

/// Which way a bridge carries its bus.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// `bridge out`: a subscriber of the bus, putting on Zenoh.
    Out,
    /// `bridge in`: the bus's publisher, from Zenoh.
    In,
    /// `shmbus record`: a subscriber of the bus, writing a recording (its
    /// file is the status's `key`).
    Record,
}

impl Direction {
    /// "out", "in" or "record", as in the file (and the command line).
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Out => "out",
            Direction::In => "in",
            Direction::Record => "record",
        }
    }
}

/// What a bridge is: fixed for its life.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    /// Which way.
    pub direction: Direction,
    /// The bus, as [`bus_path`] makes it absolute.
    pub bus: PathBuf,
    /// The Zenoh key expression.
    pub key: String,
    /// Zenoh endpoints it listens on.
    pub listen: Vec<String>,
    /// Zenoh endpoints it dials.
    pub connect: Vec<String>,
}

/// What a bridge has done so far. Out: `messages` put on Zenoh, `lost` to
/// laps of its bus (sent on as gaps). In: `messages` published into the
/// bus, `lost` upstream sequences given up (skipped), `repeats` and
/// `bad_frames` dropped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Forwarded (out) or published (in).
    pub messages: u64,
    /// Lost to laps (out) or skipped (in).
    pub lost: u64,
    /// In: frames whose sequence was already passed.
    pub repeats: u64,
    /// In: payloads that were not frames.
    pub bad_frames: u64,
    /// Record: payload bytes written (0 for a bridge).
    pub bytes: u64,
    /// Out: a remote subscriber matches the key. In: frames arrived since
    /// the previous status (about a second).
    pub peer: bool,
}

/// One bridge's status, as written and as read back.
#[derive(Clone, Debug, PartialEq)]
pub struct Status {
    /// The bridge's process.
    pub pid: u32,
    /// Its start time (clock ticks after boot, /proc/PID/stat field 22).
    pub started: u64,
    pub identity: Identity,
    pub counts: Counts,
    /// `messages` per second over the last ~1 s (`None` at first).
    pub msgs_per_sec: Option<f64>,
    /// When it was written, ns since the Unix epoch.
    pub updated_unix_ns: u64,
}

/// Why a status could not be written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// This process's start time could not be read from /proc.
    #[error("reading /proc/self/stat: {0}")]
    Started(io::Error),
    /// The directory could not be made or looked at.
    #[error("bridge status directory {path}: {source}")]
    Dir {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The directory is not this user's own private one.
    #[error(
        "bridge status directory {path} is owned by uid {uid} with mode {mode:o}, \
         expected uid {expected_uid} and no write access for others"
    )]
    NotPrivate {
        /// The directory.
        path: PathBuf,
        /// Its owner.
        uid: u32,
        /// Its permission bits.
        mode: u32,
        /// This user.
        expected_uid: u32,
    },
    /// The file could not be written or renamed into place.
    #[error("bridge status {path}: {source}")]
    File {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
}

/// Why bytes are not a status.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ParseError {
    /// Not a JSON object.
    #[error("not a JSON object: {0}")]
    NotJson(String),
    /// Another schema, or none.
    #[error("schema {found:?}, expected {SCHEMA:?}")]
    Schema {
        /// What it held.
        found: String,
    },
    /// A field missing, of another type, or out of range.
    #[error("field {name}: expected {expected}")]
    Field {
        /// The field.
        name: &'static str,
        /// What it should hold.
        expected: &'static str,
    },
    /// The pid inside is not the one the file is named after.
    #[error("pid {inside} in a file named for pid {named}")]
    Pid {
        /// The file's pid.
        named: u32,
        /// The content's.
        inside: u32,
    },
}

// ---------------------------------------------------------------------------
// Where.

/// The directory of bridge statuses: `$XDG_RUNTIME_DIR/shmbus/bridges` if
/// that variable holds an absolute path, else `/tmp/shmbus-<uid>/bridges`.
/// With the directory above it that this user owns (made 0700).
fn dirs() -> (PathBuf, PathBuf) {
    let own = match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
        // The XDG spec: a relative path is to be ignored.
        Some(runtime) if runtime.is_absolute() => runtime.join("shmbus"),
        _ => PathBuf::from(format!(
            "/tmp/shmbus-{}",
            rustix::process::geteuid().as_raw()
        )),
    };
    let bridges = own.join("bridges");
    (own, bridges)
}

/// Makes `path` (0700) if it is not there, and checks it is a directory of
/// this user that nobody else may write to (it may be under /tmp).
fn private_dir(path: &Path) -> Result<(), WriteError> {
    match fs::DirBuilder::new().mode(0o700).create(path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(source) => {
            return Err(WriteError::Dir {
                path: path.to_owned(),
                source,
            });
        }
    }
    check_private(path)
}

/// `Ok` if `path` is a directory (not a symlink) of this user that nobody
/// else may write to.
fn check_private(path: &Path) -> Result<(), WriteError> {
    let meta = fs::symlink_metadata(path).map_err(|source| WriteError::Dir {
        path: path.to_owned(),
        source,
    })?;
    let uid = rustix::process::geteuid().as_raw();
    let mode = meta.mode() & 0o7777;
    if !meta.file_type().is_dir() || meta.uid() != uid || mode & 0o022 != 0 {
        return Err(WriteError::NotPrivate {
            path: path.to_owned(),
            uid: meta.uid(),
            mode,
            expected_uid: uid,
        });
    }
    Ok(())
}

/// The file a `bridge in` keeps its downstream bus's state in
/// (`InOptions::state`): `<dir>/bridge-in/<fnv1a 64 of the bus's
/// path, 16 hex digits>.state`, beside the bridges' statuses (not among
/// them: it outlives the process, as it must to be of use to the next),
/// the directories made 0700 and checked to be this user's, private.
///
/// # Errors
/// [`WriteError`]: a directory not made or not private.
pub fn in_state_path(bus: &str) -> Result<PathBuf, WriteError> {
    let (own, _) = dirs();
    let dir = own.join("bridge-in");
    private_dir(&own)?;
    private_dir(&dir)?;
    let path = bus_path(bus);
    let hash = shmbus::segment::fnv1a(path.as_os_str().as_encoded_bytes());
    Ok(dir.join(format!("{hash:016x}.state")))
}

/// The directory to read, if it is there and private (files in another's
/// directory are not this user's bridges).
fn readable_dir() -> Option<PathBuf> {
    let (own, bridges) = dirs();
    (check_private(&own).is_ok() && check_private(&bridges).is_ok()).then_some(bridges)
}

/// A bus name as an absolute path, the same whether the bus exists yet or
/// not: a bare name lives in /dev/shm, a name with a slash is a path (the
/// rule of `shmbus`'s names), then symlinks and `..` resolved, so that a
/// bridge and `stat` name one bus alike.
pub fn bus_path(name: &str) -> PathBuf {
    let path = if name.contains('/') {
        PathBuf::from(name)
    } else {
        Path::new("/dev/shm").join(name)
    };
    if let Ok(real) = fs::canonicalize(&path) {
        return real;
    }
    // Not there yet (a bridge-in makes its bus at the first frame): its
    // directory resolved.
    let parent = match path.parent() {
        Some(p) if p.as_os_str().is_empty() => Path::new("."),
        Some(p) => p,
        None => Path::new("/"),
    };
    match (fs::canonicalize(parent), path.file_name()) {
        (Ok(dir), Some(file)) => dir.join(file),
        _ => std::path::absolute(&path).unwrap_or(path),
    }
}

// ---------------------------------------------------------------------------
// The process.

/// Process `pid`'s start time (field 22 of /proc/PID/stat), or why not.
fn start_time(pid: &str) -> io::Result<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The command name (field 2) may hold spaces and parentheses: the
    // fields after it start after the last ')', at field 3.
    let rest = stat
        .rfind(')')
        .map(|at| &stat[at + 1..])
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no ')' in stat"))?;
    rest.split_whitespace()
        .nth(22 - 3)
        .and_then(|f| f.parse().ok())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no start time in stat"))
}

/// Whether process `pid` runs and started at `started` (not a later
/// process given the same pid).
fn is_running(pid: u32, started: u64) -> bool {
    start_time(&pid.to_string()).is_ok_and(|s| s == started)
}

fn now_unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

// ---------------------------------------------------------------------------
// The writer.

/// A bridge's status file, rewritten by [`update`](Writer::update) and
/// removed on drop.
#[derive(Debug)]
pub struct Writer {
    path: PathBuf,
    tmp: PathBuf,
    status: Status,
    /// The count and time the rate is taken from.
    rate_base: Option<(Instant, u64)>,
}

impl Writer {
    /// Makes the directory if needed and writes a first status (all counts
    /// zero) for this process.
    ///
    /// # Errors
    /// [`WriteError`]: /proc unreadable, the directory not made or not
    /// private, the file not written.
    pub fn create(identity: Identity) -> Result<Writer, WriteError> {
        let started = start_time("self").map_err(WriteError::Started)?;
        let (own, bridges) = dirs();
        private_dir(&own)?;
        private_dir(&bridges)?;
        let pid = std::process::id();
        let mut writer = Writer {
            path: bridges.join(format!("{pid}.json")),
            tmp: bridges.join(format!(".{pid}.json.tmp")),
            status: Status {
                pid,
                started,
                identity,
                counts: Counts::default(),
                msgs_per_sec: None,
                updated_unix_ns: 0,
            },
            rate_base: None,
        };
        writer.update(Counts::default())?;
        Ok(writer)
    }

    /// Writes `counts` as the status now, with the rate since the last
    /// update at least [`RATE_WINDOW_NS`] ago.
    ///
    /// # Errors
    /// [`WriteError::File`]: the file could not be written or renamed.
    pub fn update(&mut self, counts: Counts) -> Result<(), WriteError> {
        let now = Instant::now();
        match self.rate_base {
            None => self.rate_base = Some((now, counts.messages)),
            Some((at, base)) => {
                let dt = now.duration_since(at);
                if dt.as_nanos() >= u128::from(RATE_WINDOW_NS) {
                    let moved = counts.messages.saturating_sub(base);
                    self.status.msgs_per_sec = Some(moved as f64 / dt.as_secs_f64());
                    self.rate_base = Some((now, counts.messages));
                }
            }
        }
        self.status.counts = counts;
        self.status.updated_unix_ns = now_unix_ns();
        self.write().map_err(|source| WriteError::File {
            path: self.path.clone(),
            source,
        })
    }

    /// The status, whole, into the tmp file, then renamed over the file.
    fn write(&self) -> io::Result<()> {
        // A tmp file left by a killed process of the same pid.
        let _ = fs::remove_file(&self.tmp);
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&self.tmp)?;
        let mut text = self.status.to_json().to_string();
        text.push('\n');
        file.write_all(text.as_bytes())?;
        drop(file);
        fs::rename(&self.tmp, &self.path)
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
        let _ = fs::remove_file(&self.tmp);
    }
}

// ---------------------------------------------------------------------------
// The format.

impl Status {
    /// The status as the file holds it; `stat --json` and `top --json`
    /// show the same object, with `age_s` added.
    pub fn to_json(&self) -> Value {
        let id = &self.identity;
        let c = &self.counts;
        json!({
            "schema": SCHEMA,
            "pid": self.pid,
            "started": self.started,
            "direction": id.direction.as_str(),
            "bus": id.bus.display().to_string(),
            "key": id.key,
            "listen": id.listen,
            "connect": id.connect,
            "peer": c.peer,
            "messages": c.messages,
            "lost": c.lost,
            "repeats": c.repeats,
            "bad_frames": c.bad_frames,
            "bytes": c.bytes,
            "msgs_per_sec": self.msgs_per_sec,
            "updated_unix_ns": self.updated_unix_ns,
        })
    }

    /// Reads a status file's bytes, named for pid `named`.
    ///
    /// # Errors
    /// [`ParseError`] naming the first thing wrong.
    pub fn parse(bytes: &[u8], named: u32) -> Result<Status, ParseError> {
        let v: Value =
            serde_json::from_slice(bytes).map_err(|e| ParseError::NotJson(e.to_string()))?;
        if !v.is_object() {
            return Err(ParseError::NotJson("not an object".into()));
        }
        if v["schema"] != SCHEMA {
            return Err(ParseError::Schema {
                found: v["schema"].to_string(),
            });
        }
        let field =
            |name: &'static str, expected: &'static str| ParseError::Field { name, expected };
        let u64_of =
            |name: &'static str| v[name].as_u64().ok_or(field(name, "an unsigned integer"));
        let text = |name: &'static str| {
            v[name]
                .as_str()
                .filter(|s| !s.is_empty() && s.len() <= MAX_TEXT)
                .map(str::to_owned)
                .ok_or(field(name, "a string of 1 to 4096 bytes"))
        };
        let list = |name: &'static str| {
            let items = v[name]
                .as_array()
                .filter(|a| a.len() <= MAX_ENDPOINTS)
                .ok_or(field(name, "an array of at most 64 strings"))?;
            items
                .iter()
                .map(|s| {
                    s.as_str()
                        .filter(|s| s.len() <= MAX_TEXT)
                        .map(str::to_owned)
                        .ok_or(field(name, "an array of strings of at most 4096 bytes"))
                })
                .collect::<Result<Vec<_>, _>>()
        };
        let pid = u32::try_from(u64_of("pid")?)
            .ok()
            .filter(|&p| p > 0)
            .ok_or(field("pid", "a pid, 1 to 2^32-1"))?;
        if pid != named {
            return Err(ParseError::Pid { named, inside: pid });
        }
        let direction = match v["direction"].as_str() {
            Some("out") => Direction::Out,
            Some("in") => Direction::In,
            Some("record") => Direction::Record,
            _ => return Err(field("direction", "\"out\", \"in\" or \"record\"")),
        };
        let bus = PathBuf::from(text("bus")?);
        if !bus.is_absolute() {
            return Err(field("bus", "an absolute path"));
        }
        let msgs_per_sec = match &v["msgs_per_sec"] {
            Value::Null => None,
            r => Some(
                r.as_f64()
                    .filter(|r| r.is_finite() && *r >= 0.0)
                    .ok_or(field("msgs_per_sec", "null or a rate of 0 or more"))?,
            ),
        };
        Ok(Status {
            pid,
            started: u64_of("started")?,
            identity: Identity {
                direction,
                bus,
                key: text("key")?,
                listen: list("listen")?,
                connect: list("connect")?,
            },
            counts: Counts {
                messages: u64_of("messages")?,
                lost: u64_of("lost")?,
                repeats: u64_of("repeats")?,
                bad_frames: u64_of("bad_frames")?,
                // Added with `record`: a bridge's file from before has none.
                bytes: match &v["bytes"] {
                    Value::Null => 0,
                    b => b.as_u64().ok_or(field("bytes", "an unsigned integer"))?,
                },
                peer: v["peer"].as_bool().ok_or(field("peer", "true or false"))?,
            },
            msgs_per_sec,
            updated_unix_ns: u64_of("updated_unix_ns")?,
        })
    }

    /// Seconds since it was written (0 if the clock says the future).
    pub fn age_s(&self) -> f64 {
        now_unix_ns().saturating_sub(self.updated_unix_ns) as f64 / 1e9
    }

    /// As [`to_json`](Status::to_json), with `age_s`: what `stat --json`
    /// and `top --json` print.
    pub fn report_json(&self) -> Value {
        let mut v = self.to_json();
        v["age_s"] = json!(self.age_s());
        v
    }

    /// One line: "out -> key K, connect tcp/..., peer matched, 1.2k
    /// msgs/s, forwarded 100, lost 0" (raw: the caller escapes it, the
    /// key and endpoints come from a file).
    pub fn summary(&self) -> String {
        let id = &self.identity;
        let c = &self.counts;
        let mut parts = vec![match id.direction {
            Direction::Out => format!("out -> key {}", id.key),
            Direction::In => format!("in <- key {}", id.key),
            Direction::Record => format!("record -> {}", id.key),
        }];
        for (what, endpoints) in [("listen", &id.listen), ("connect", &id.connect)] {
            if !endpoints.is_empty() {
                parts.push(format!("{what} {}", endpoints.join(" ")));
            }
        }
        match (id.direction, c.peer) {
            (Direction::Out, true) => parts.push("peer matched".into()),
            (Direction::Out, false) => parts.push("no peer".into()),
            (Direction::In, true) => parts.push("receiving".into()),
            (Direction::In, false) => parts.push("nothing received".into()),
            (Direction::Record, _) => {}
        }
        parts.push(format!("{} msgs/s", per_sec(self.msgs_per_sec)));
        match id.direction {
            Direction::Out => {
                parts.push(format!("forwarded {}", c.messages));
                parts.push(format!("lost {}", c.lost));
            }
            Direction::Record => {
                parts.push(format!("recorded {}", c.messages));
                parts.push(format!("{} bytes", c.bytes));
                parts.push(format!("lost {}", c.lost));
            }
            Direction::In => {
                parts.push(format!("published {}", c.messages));
                parts.push(format!("skipped {}", c.lost));
                parts.push(format!("repeats {}", c.repeats));
                parts.push(format!("bad frames {}", c.bad_frames));
            }
        }
        let age = self.age_s();
        if age >= STALE_AFTER_S {
            // Alive but not writing: stopped, or stuck in a put.
            parts.push(format!("status {age:.0} s old"));
        }
        parts.join(", ")
    }
}

/// A status older than this is said to be old: its bridge writes every
/// second while it runs its loop.
const STALE_AFTER_S: f64 = 5.0;

/// A rate with about three significant digits, "-" before there is one.
fn per_sec(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(v) if v < 100.0 => format!("{v:.1}"),
        Some(v) if v < 1e4 => format!("{v:.0}"),
        Some(v) if v < 1e6 => format!("{:.1}k", v / 1e3),
        Some(v) => format!("{:.1}M", v / 1e6),
    }
}

// ---------------------------------------------------------------------------
// The reader.

/// A file of the directory, by its name: a status `<pid>.json` or a
/// writer's tmp `.<pid>.json.tmp`; anything else is not ours.
fn classify(name: &str) -> Option<(u32, bool)> {
    let (digits, tmp) = match name.strip_prefix('.') {
        Some(rest) => (rest.strip_suffix(".json.tmp")?, true),
        None => (name.strip_suffix(".json")?, false),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((digits.parse().ok().filter(|&p| p > 0)?, tmp))
}

/// Reads one file, at most [`MAX_FILE`] bytes, never following a symlink
/// nor waiting on a FIFO.
fn read_bounded(path: &Path) -> io::Result<Vec<u8>> {
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a file"));
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "too long"));
    }
    Ok(bytes)
}

/// The files of the directory that are ours, by pid, and whether each is
/// a tmp file. Every entry is looked at (however many other names the
/// directory holds, one of ours is never left unseen); what is kept is
/// bounded by the pid space, two names a pid, and each is read later at
/// most [`MAX_FILE`] bytes.
fn entries(dir: &Path) -> Vec<(PathBuf, u32, bool)> {
    let Ok(list) = fs::read_dir(dir) else {
        return Vec::new();
    };
    list.filter_map(Result::ok)
        .filter_map(|e| {
            let (pid, tmp) = classify(e.file_name().to_str()?)?;
            Some((e.path(), pid, tmp))
        })
        .collect()
}

/// The status of every running bridge of this user, sorted by bus, then
/// pid. Stale files (the process gone, or its pid reused) and files that
/// are not a status are skipped.
pub fn read_live() -> Vec<Status> {
    let Some(dir) = readable_dir() else {
        return Vec::new();
    };
    let mut out: Vec<Status> = entries(&dir)
        .into_iter()
        .filter(|(_, _, tmp)| !tmp)
        .filter_map(|(path, pid, _)| Status::parse(&read_bounded(&path).ok()?, pid).ok())
        .filter(|s| is_running(s.pid, s.started))
        .collect();
    out.sort_by(|a, b| (&a.identity.bus, a.pid).cmp(&(&b.identity.bus, b.pid)));
    out
}

/// The statuses in `all` of bridges on the bus at `path` (a path as
/// `shmbus::stat` gives it).
pub fn on_bus<'a>(all: &'a [Status], path: &Path) -> Vec<&'a Status> {
    if all.is_empty() {
        return Vec::new();
    }
    let bus = path.to_str().map_or_else(|| path.to_owned(), bus_path);
    all.iter().filter(|s| s.identity.bus == bus).collect()
}

/// A stale file `shmbus clean` found: removed (or would be), or why not.
pub struct Cleaned {
    /// The file.
    pub path: PathBuf,
    /// Whether it was removed.
    pub result: io::Result<()>,
}

/// Removes (unless `dry_run`) the files of bridges that no longer run and
/// whose bus is in `dir` (the directory `clean` cleans: a status naming a
/// bus elsewhere is left to the clean of that bus's directory): a status
/// whose pid is gone or belongs to a later process, a tmp file of a pid
/// that is gone. A file that names no bus (not a status, or a tmp file
/// left half-written) belongs to no directory: it is removed only if its
/// pid is gone. Files not named like a status are left alone.
pub fn remove_stale(dir: &Path, dry_run: bool) -> Vec<Cleaned> {
    let Some(statuses) = readable_dir() else {
        return Vec::new();
    };
    let cleaned = dir_id(dir);
    let mut out = Vec::new();
    for (path, pid, tmp) in entries(&statuses) {
        let status = read_bounded(&path)
            .ok()
            .and_then(|b| Status::parse(&b, pid).ok());
        let stale = match start_time(&pid.to_string()) {
            Err(_) => true,
            Ok(_) if tmp => false,
            Ok(started) => status.as_ref().is_some_and(|s| s.started != started),
        };
        let in_dir = status.as_ref().is_none_or(|s| {
            let bus_dir = s.identity.bus.parent().and_then(dir_id);
            cleaned.is_some() && bus_dir == cleaned
        });
        if stale && in_dir {
            let result = if dry_run {
                Ok(())
            } else {
                fs::remove_file(&path)
            };
            out.push(Cleaned { path, result });
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// A directory's identity (device and inode), however its path is spelled.
fn dir_id(dir: &Path) -> Option<(u64, u64)> {
    fs::metadata(dir).ok().map(|m| (m.dev(), m.ino()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Status {
        Status {
            pid: 42,
            started: 1234,
            identity: Identity {
                direction: Direction::In,
                bus: PathBuf::from("/dev/shm/ticks"),
                key: "shmbus/ticks".into(),
                listen: vec!["tcp/10.0.0.2:7447".into()],
                connect: vec![],
            },
            counts: Counts {
                messages: 100,
                lost: 3,
                repeats: 1,
                bad_frames: 2,
                bytes: 0,
                peer: true,
            },
            msgs_per_sec: Some(12_345.0),
            updated_unix_ns: 1,
        }
    }

    #[test]
    fn a_status_reads_back_as_it_was_written() {
        let s = sample();
        let bytes = s.to_json().to_string();
        assert_eq!(Status::parse(bytes.as_bytes(), 42), Ok(s));
    }

    #[test]
    fn a_status_under_another_pid_s_name_is_refused() {
        let bytes = sample().to_json().to_string();
        assert_eq!(
            Status::parse(bytes.as_bytes(), 43),
            Err(ParseError::Pid {
                named: 43,
                inside: 42
            })
        );
    }

    #[test]
    fn any_bytes_are_a_status_or_a_typed_error_never_a_panic() {
        let good = sample().to_json().to_string().into_bytes();
        for len in 0..good.len() {
            assert!(Status::parse(&good[..len], 42).is_err());
        }
        for i in 0..good.len() {
            for bit in 0..8 {
                let mut b = good.clone();
                b[i] ^= 1 << bit;
                let _ = Status::parse(&b, 42);
            }
        }
        let mut v = sample().to_json();
        for (key, bad) in [
            ("pid", json!(-1)),
            ("direction", json!("sideways")),
            ("bus", json!("relative/path")),
            ("messages", json!(1.5)),
            ("msgs_per_sec", json!(-3.0)),
            ("listen", json!(vec!["x"; 65])),
            ("key", json!("k".repeat(5000))),
            ("peer", json!("yes")),
        ] {
            let keep = v[key].clone();
            v[key] = bad;
            assert!(
                matches!(
                    Status::parse(v.to_string().as_bytes(), 42),
                    Err(ParseError::Field { name, .. }) if name == key
                ),
                "{key}"
            );
            v[key] = keep;
        }
        v["schema"] = json!("shmbus-bridge-status/9");
        assert!(matches!(
            Status::parse(v.to_string().as_bytes(), 42),
            Err(ParseError::Schema { .. })
        ));
        assert!(matches!(
            Status::parse(b"[1,2]", 42),
            Err(ParseError::NotJson(_))
        ));
        let deep = "[".repeat(100_000);
        assert!(Status::parse(deep.as_bytes(), 42).is_err());
    }

    #[test]
    fn only_status_and_tmp_names_are_ours() {
        assert_eq!(classify("123.json"), Some((123, false)));
        assert_eq!(classify(".123.json.tmp"), Some((123, true)));
        for other in [
            "0.json",
            "x.json",
            "123.json~",
            "+1.json",
            ".json",
            "99999999999.json",
        ] {
            assert_eq!(classify(other), None, "{other}");
        }
    }

    #[test]
    fn this_process_runs_and_a_wrong_start_time_is_another() {
        let started = start_time("self").expect("own start time");
        assert!(is_running(std::process::id(), started));
        assert!(!is_running(std::process::id(), started + 1));
    }

    #[test]
    fn a_bus_is_named_alike_before_and_after_it_exists() {
        let shm = fs::canonicalize("/dev/shm").expect("/dev/shm");
        assert_eq!(bus_path("no-such-bus-xyz"), shm.join("no-such-bus-xyz"));
        assert_eq!(
            bus_path("/dev/shm/../shm/no-such-bus-xyz"),
            shm.join("no-such-bus-xyz")
        );
        assert!(bus_path("relative/no-such-bus").is_absolute());
    }

    #[test]
    fn the_summary_names_direction_key_peer_rate_and_losses() {
        let mut s = sample();
        s.updated_unix_ns = now_unix_ns();
        assert_eq!(
            s.summary(),
            "in <- key shmbus/ticks, listen tcp/10.0.0.2:7447, receiving, 12.3k msgs/s, \
             published 100, skipped 3, repeats 1, bad frames 2"
        );
    }

    #[test]
    fn a_recorder_s_status_reads_back_and_names_its_file_rate_bytes_and_losses() {
        let mut s = sample();
        s.identity.direction = Direction::Record;
        s.identity.key = "/data/ticks.rec".into();
        s.identity.listen.clear();
        s.counts = Counts {
            messages: 100,
            lost: 3,
            bytes: 6400,
            ..Counts::default()
        };
        let bytes = s.to_json().to_string();
        assert_eq!(Status::parse(bytes.as_bytes(), 42), Ok(s.clone()));
        s.updated_unix_ns = now_unix_ns();
        assert_eq!(
            s.summary(),
            "record -> /data/ticks.rec, 12.3k msgs/s, recorded 100, 6400 bytes, lost 3"
        );
        // A bridge's file written before `bytes` existed still reads.
        let mut old = sample().to_json();
        old.as_object_mut().unwrap().remove("bytes");
        assert_eq!(Status::parse(old.to_string().as_bytes(), 42), Ok(sample()));
    }
}
