//! The C examples (examples/c, built with `make -C examples/c`) end to end,
//! on buses made by the `shmbus` tool (target/debug/shmbus, built here if
//! needed), with the tool as the Rust side where one is needed. Every
//! child process runs under a deadline and is killed past it.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc::{Receiver, channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::{Bus, TempDir};

/// How long any one child may run.
const LIMIT: Duration = Duration::from_secs(30);
/// How long a build may take.
const BUILD_LIMIT: Duration = Duration::from_secs(900);

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn example(name: &str) -> PathBuf {
    root().join("examples/c").join(name)
}

fn shmbus_tool() -> PathBuf {
    root().join("target/debug/shmbus")
}

/// Waits for `child` until `limit`; kills it past that and fails.
fn wait_bounded(child: &mut Child, limit: Duration, what: &str) -> ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} ran past {limit:?} and was killed");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn reader(pipe: impl Read + Send + 'static) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = BufReader::new(pipe).read_to_string(&mut s);
        s
    })
}

/// Runs `cmd` with `input` on stdin, bounded: (status, stdout, stderr).
fn run(cmd: &mut Command, input: &[u8], limit: Duration) -> (ExitStatus, String, String) {
    let what = format!("{cmd:?}");
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let out = reader(child.stdout.take().unwrap());
    let err = reader(child.stderr.take().unwrap());
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let status = wait_bounded(&mut child, limit, &what);
    writer.join().unwrap();
    (status, out.join().unwrap(), err.join().unwrap())
}

/// [`run`] for a command that must succeed: its stdout.
fn run_ok(cmd: &mut Command, input: &[u8], limit: Duration) -> String {
    let what = format!("{cmd:?}");
    let (st, out, err) = run(cmd, input, limit);
    assert!(st.success(), "{what}: {st}\n{out}{err}");
    out
}

/// Builds the tool and the examples once per test process.
fn built() {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        if !shmbus_tool().exists() {
            run_ok(
                Command::new(&cargo)
                    .args(["build", "-p", "shmbus-cli"])
                    .current_dir(root()),
                b"",
                BUILD_LIMIT,
            );
        }
        // As a user builds it: without the lints a test run under
        // clippy-driver passes on (its fingerprints would differ from the
        // next plain `make`'s, which would build the library again).
        run_ok(
            Command::new("make")
                .args(["-C", "examples/c"])
                .env("CARGO", &cargo)
                .env_remove("RUSTC_WORKSPACE_WRAPPER")
                .env_remove("CLIPPY_ARGS")
                .current_dir(root()),
            b"",
            BUILD_LIMIT,
        );
    });
}

/// Runs the `shmbus` tool, which must succeed: its stdout.
fn tool(args: &[&str]) -> String {
    run_ok(Command::new(shmbus_tool()).args(args), b"", LIMIT)
}

/// A new bus made by the tool (`shmbus create NAME ARGS...`), once the
/// tool and the examples are built.
fn created(what: &str, args: &[&str]) -> Bus {
    built();
    let bus = Bus::new(what);
    tool(&[&["create", bus.name.as_str()], args].concat());
    bus
}

/// A subscriber process that said `ready`.
struct Sub {
    child: Child,
    stdout: JoinHandle<String>,
    stderr: Receiver<String>,
}

/// Starts `program args` and waits (bounded) for its `ready` line.
fn start(program: &Path, args: &[&str]) -> Sub {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = reader(child.stdout.take().unwrap());
    let (tx, stderr) = channel();
    let pipe = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    match stderr.recv_timeout(LIMIT) {
        Ok(line) if line == "ready" => {}
        other => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{program:?} {args:?} did not say ready first: {other:?}");
        }
    }
    Sub {
        child,
        stdout,
        stderr,
    }
}

impl Sub {
    /// Waits (bounded) for the exit: (status, stdout, the rest of stderr).
    fn finish(mut self) -> (ExitStatus, String, String) {
        let status = wait_bounded(&mut self.child, LIMIT, "the subscriber");
        let out = self.stdout.join().unwrap();
        let err: Vec<String> = self.stderr.iter().collect();
        (status, out, err.join("\n"))
    }

    /// Waits (bounded) for an exit 0: its stdout.
    fn finish_ok(self) -> String {
        let (st, out, err) = self.finish();
        assert_eq!(st.code(), Some(0), "{err}");
        out
    }
}

fn c_publish(kind: &str, bus: &Bus, input: &str) {
    run_ok(
        Command::new(example("publisher")).args(["--kind", kind, &bus.name]),
        input.as_bytes(),
        LIMIT,
    );
}

#[test]
fn the_c_subscriber_prints_each_line_the_rust_tool_publishes() {
    let bus = created("ex-bus", &["--msg-size", "32", "--capacity", "16"]);
    let sub = start(
        &example("subscriber"),
        &["--count", "3", "--timeout", "20", &bus.name],
    );
    run_ok(
        Command::new(shmbus_tool()).args(["pub", &bus.name]),
        b"alpha\nbeta\ngamma\n",
        LIMIT,
    );
    assert_eq!(sub.finish_ok(), "alpha\nbeta\ngamma\n");
}

#[test]
fn the_rust_tool_prints_each_line_the_c_publisher_publishes() {
    let bus = created("ex-rust-sub", &["--msg-size", "32", "--capacity", "16"]);
    // `shmbus sub` prints no ready line: it reads from the oldest message.
    c_publish("bus", &bus, "one\ntwo\n");
    let out = tool(&["sub", &bus.name, "--from", "oldest", "--count", "2"]);
    assert_eq!(out, "one\ntwo\n");
}

#[test]
fn the_c_examples_carry_lines_on_a_many_publisher_bus() {
    let bus = created(
        "ex-many",
        &[
            "--msg-size",
            "16",
            "--capacity",
            "16",
            "--publishers",
            "many",
        ],
    );
    let sub = start(
        &example("subscriber"),
        &["--count", "4", "--timeout", "20", &bus.name],
    );
    c_publish("many", &bus, "a1\na2\n");
    c_publish("many", &bus, "b1\nb2");
    assert_eq!(sub.finish_ok(), "a1\na2\nb1\nb2\n");
}

#[test]
fn a_late_c_journal_subscriber_gets_the_lines_published_before_it_joined() {
    let dir = TempDir::new("ex-journal");
    let journal = dir.0.join("ex.journal");
    let bus = created(
        "ex-journal",
        &[
            "--msg-size",
            "16",
            "--capacity",
            "4",
            "--journal",
            journal.to_str().unwrap(),
        ],
    );
    // Six lines into four slots: only the journal still has the first.
    c_publish("journal", &bus, "j1\nj2\nj3\nj4\nj5\nj6\n");
    let sub = start(
        &example("subscriber"),
        &[
            "--kind",
            "journal",
            "--count",
            "7",
            "--timeout",
            "20",
            &bus.name,
        ],
    );
    c_publish("journal", &bus, "j7\n");
    assert_eq!(sub.finish_ok(), "j1\nj2\nj3\nj4\nj5\nj6\nj7\n");
}

#[test]
fn the_c_examples_carry_lines_of_any_length_on_a_pool_bus() {
    let bus = created("ex-pool", &["--pool", "128:24", "--capacity", "16"]);
    let sub = start(
        &example("subscriber"),
        &[
            "--kind",
            "pool",
            "--count",
            "3",
            "--timeout",
            "20",
            &bus.name,
        ],
    );
    let long = "x".repeat(128);
    c_publish("pool", &bus, &format!("short\n\n{long}\n"));
    assert_eq!(sub.finish_ok(), format!("short\n\n{long}\n"));
    // One byte more than a block is an error.
    let (st, _, err) = run(
        Command::new(example("publisher")).args(["--kind", "pool", &bus.name]),
        format!("{long}y\n").as_bytes(),
        LIMIT,
    );
    assert_eq!(st.code(), Some(1));
    assert!(err.contains("line 1:") && err.contains("129"), "{err}");
}

#[test]
fn the_c_consumer_reads_in_place_every_record_the_rust_tool_pushes_into_a_stream() {
    let bus = created("ex-stream", &["--kind", "stream", "--bytes", "256"]);
    // Records across several laps of the 256-byte ring; the subscriber
    // also checks that a second peek before the release is refused.
    let lines: String = (0..60)
        .map(|i| format!("record {i} {}\n", "y".repeat(i % 50)))
        .collect();
    let sub = start(
        &example("subscriber"),
        &[
            "--kind",
            "stream",
            "--count",
            "60",
            "--timeout",
            "20",
            &bus.name,
        ],
    );
    run_ok(
        Command::new(shmbus_tool()).args(["pub", &bus.name]),
        lines.as_bytes(),
        LIMIT,
    );
    assert_eq!(sub.finish_ok(), lines);
}

#[test]
fn a_late_c_state_prints_the_last_value_of_each_key_the_rust_tool_published_and_compacted() {
    let dir = TempDir::new("ex-state");
    let journal = dir.0.join("ex.journal");
    let bus = created(
        "ex-state",
        &[
            "--msg-size",
            "32",
            "--slots",
            "4",
            "--journal",
            journal.to_str().unwrap(),
        ],
    );
    // The key is the first 8 bytes: "sensor0N". Nine updates into four
    // slots, compacted every 4 records: the state comes from the
    // journal's snapshot and tail.
    let updates = "sensor01=20\nsensor02=30\nsensor01=21\nsensor03=40\nsensor02=31\n\
                   sensor01=22\nsensor03=41\nsensor03=42\nsensor02=32\n";
    run_ok(
        Command::new(shmbus_tool()).args(["pub", &bus.name, "--compact-after", "4"]),
        updates.as_bytes(),
        LIMIT,
    );
    let (st, out, err) = run(
        Command::new(example("state")).args(["--until", "8", "--timeout", "20", &bus.name]),
        b"",
        LIMIT,
    );
    assert_eq!(st.code(), Some(0), "{err}");
    assert_eq!(out, "sensor01=22\nsensor02=32\nsensor03=42\n");
    assert_eq!(err, "keys 3 last 8 rejoins 0\n");
    // A sequence never published: exit 2 once the wait runs out.
    let (st, _, err) = run(
        Command::new(example("state")).args(["--until", "9", "--timeout", "0.1", &bus.name]),
        b"",
        LIMIT,
    );
    assert_eq!(st.code(), Some(2), "{err}");
    // A bus without a journal: exit 1, the code named.
    let plain = created("ex-state-plain", &["--msg-size", "32", "--slots", "4"]);
    let (st, _, err) = run(Command::new(example("state")).arg(&plain.name), b"", LIMIT);
    assert_eq!(st.code(), Some(1));
    assert!(err.contains("SHMBUS_E_NOT_JOURNALED"), "{err}");
}

/// Whether process `pid` is stopped (`T` in /proc/PID/stat).
fn stopped(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rsplit_once(')')
        .is_some_and(|(_, rest)| rest.trim_start().starts_with('T'))
}

fn signal(sig: &str, pid: u32) {
    run_ok(
        Command::new("kill").args([sig, &pid.to_string()]),
        b"",
        LIMIT,
    );
}

#[test]
fn a_stopped_c_subscriber_reports_its_lag_and_every_message_is_delivered_or_skipped() {
    let bus = created("ex-lag", &["--msg-size", "8", "--capacity", "4"]);
    let sub = start(&example("subscriber"), &["--timeout", "3", &bus.name]);
    let pid = sub.child.id();
    signal("-STOP", pid);
    let deadline = Instant::now() + LIMIT;
    while !stopped(pid) {
        assert!(Instant::now() < deadline, "the subscriber never stopped");
        std::thread::sleep(Duration::from_millis(1));
    }
    let lines: String = (0..10).map(|i| format!("m{i}\n")).collect();
    c_publish("bus", &bus, &lines);
    signal("-CONT", pid);
    let (st, out, err) = sub.finish();
    assert_eq!(st.code(), Some(2), "silence ends it: {err}");
    let skipped: u64 = err
        .lines()
        .filter_map(|l| l.strip_prefix("lagged: skipped "))
        .map(|n| n.parse::<u64>().unwrap())
        .sum();
    assert!(skipped > 0, "a 4-slot ring lapped by 10 messages: {err}");
    let delivered: Vec<&str> = out.lines().collect();
    assert_eq!(delivered.len() as u64 + skipped, 10, "{out}{err}");
    // What is delivered is the newest, in order.
    let want: Vec<String> = (10 - delivered.len()..10)
        .map(|i| format!("m{i}"))
        .collect();
    assert_eq!(delivered, want);
}

#[test]
fn a_line_longer_than_a_message_fails_the_c_publisher_with_one_line_and_exit_1() {
    let bus = created("ex-long", &["--msg-size", "4", "--capacity", "8"]);
    let (st, _, err) = run(
        Command::new(example("publisher")).arg(&bus.name),
        b"ok\ntoo long\nnever\n",
        LIMIT,
    );
    assert_eq!(st.code(), Some(1));
    assert_eq!(
        err,
        "publisher: line 2: message is 8 bytes, the bus carries at most 4\n"
    );
}

#[test]
fn a_silent_bus_ends_the_c_subscriber_with_exit_2_and_a_missing_one_with_exit_1() {
    let bus = created("ex-silent", &["--msg-size", "8", "--capacity", "8"]);
    let sub = start(&example("subscriber"), &["--timeout", "0.2", &bus.name]);
    let (st, out, err) = sub.finish();
    assert_eq!(st.code(), Some(2));
    assert_eq!(out, "");
    assert!(err.contains("no message for 0.2 seconds"), "{err}");

    let missing = Bus::new("ex-missing");
    let (st, _, err) = run(
        Command::new(example("subscriber")).arg(&missing.name),
        b"",
        LIMIT,
    );
    assert_eq!(st.code(), Some(1));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(&missing.name), "{err}");
}

#[test]
fn the_c_pingpong_measures_round_trips_and_stops_its_server() {
    let rings = ["--msg-size", "64", "--capacity", "64"];
    let ping = created("ex-ping", &rings);
    let pong = created("ex-pong", &rings);
    let mut server = Command::new(example("pingpong"))
        .args(["serve", &ping.name, &pong.name])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let server_err = reader(server.stderr.take().unwrap());
    let (st, out, err) = run(
        Command::new(example("pingpong")).args(["client", &ping.name, &pong.name, "2000"]),
        b"",
        LIMIT,
    );
    let server_status = wait_bounded(&mut server, LIMIT, "pingpong serve");
    assert!(st.success(), "client: {err}");
    assert!(
        server_status.success(),
        "server: {}",
        server_err.join().unwrap()
    );
    let fields: Vec<&str> = out.split_whitespace().collect();
    assert_eq!(fields.first(), Some(&"c"), "{out}");
    assert_eq!(fields.get(1), Some(&"rounds=2000"), "{out}");
    let value = |key: &str| -> u64 {
        fields
            .iter()
            .find_map(|f| f.strip_prefix(key))
            .unwrap_or_else(|| panic!("{key} in {out}"))
            .parse()
            .unwrap()
    };
    let (p50, p99, p999, max) = (
        value("p50_ns="),
        value("p99_ns="),
        value("p999_ns="),
        value("max_ns="),
    );
    assert!(0 < p50 && p50 <= p99 && p99 <= p999 && p999 <= max, "{out}");
}
