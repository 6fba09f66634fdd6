//! Request-response across processes: the C example `examples/c/reqrep`
//! as the client (and as a server), a Rust server in another process
//! (`cargo run -p shmbus --example reqrep_serve`) answering, hanging,
//! holding or refusing. Every outcome a C caller can meet there: the
//! response, the server killed after taking the request, no server alive,
//! a deadline passed (the late response never reaches the next call), a
//! full client, a refusal. Every child runs under a deadline and is killed
//! past it (and when its test ends).

mod common;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use common::Bus;

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

fn c_reqrep() -> PathBuf {
    root().join("examples/c/reqrep")
}

fn rust_server() -> PathBuf {
    root().join("target/debug/examples/reqrep_serve")
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

/// Runs `cmd` to its end, bounded: (status, stdout, stderr).
fn run(cmd: &mut Command) -> (ExitStatus, String, String) {
    let what = format!("{cmd:?}");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let read = |pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = BufReader::new(pipe).read_to_string(&mut s);
            s
        })
    };
    let out = read(Box::new(child.stdout.take().unwrap()));
    let err = read(Box::new(child.stderr.take().unwrap()));
    let status = wait_bounded(&mut child, LIMIT, &what);
    (status, out.join().unwrap(), err.join().unwrap())
}

/// Builds the Rust server and the C examples once per test process.
fn built() {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let build = |cmd: &mut Command| {
            let what = format!("{cmd:?}");
            let mut child = cmd.current_dir(root()).spawn().unwrap();
            let st = wait_bounded(&mut child, BUILD_LIMIT, &what);
            assert!(st.success(), "{what}: {st}");
        };
        build(Command::new(&cargo).args(["build", "-p", "shmbus", "--example", "reqrep_serve"]));
        // As a user builds it (see tests/examples.rs).
        build(
            Command::new("make")
                .args(["-C", "examples/c"])
                .env("CARGO", &cargo)
                .env_remove("RUSTC_WORKSPACE_WRAPPER")
                .env_remove("CLIPPY_ARGS"),
        );
    });
}

/// A server process that printed `ready`: its stdout lines as they come;
/// killed when dropped.
struct Server {
    child: Child,
    lines: Receiver<String>,
}

impl Server {
    /// Starts `program args`, and waits (bounded) for `ready` on the
    /// stream `ready_on` ("stdout" or "stderr").
    fn start(program: &Path, args: &[&str], ready_on: &str) -> Server {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, lines) = channel();
        for (name, pipe) in [
            (
                "stdout",
                Box::new(child.stdout.take().unwrap()) as Box<dyn Read + Send>,
            ),
            ("stderr", Box::new(child.stderr.take().unwrap())),
        ] {
            let tx = tx.clone();
            let keep = name == ready_on || name == "stdout";
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines() {
                    let Ok(line) = line else { break };
                    if keep && tx.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        let mut server = Server { child, lines };
        server.expect("ready");
        server
    }

    /// A Rust server: `reqrep_serve NAME ARGS...`.
    fn rust(bus: &Bus, args: &[&str]) -> Server {
        built();
        Server::start(
            &rust_server(),
            &[&[bus.name.as_str()], args].concat(),
            "stdout",
        )
    }

    /// Waits (bounded) for the line `want`.
    fn expect(&mut self, want: &str) {
        let deadline = Instant::now() + LIMIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line == want => return,
                Ok(_) => {}
                Err(e) => {
                    let _ = self.child.kill();
                    panic!("the server never said {want:?} ({e})");
                }
            }
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `reqrep call NAME ARGS...` (the C client), which must exit 0: its lines.
fn c_call(bus: &Bus, args: &[&str]) -> Vec<String> {
    built();
    let (st, out, err) = run(Command::new(c_reqrep())
        .args(["call", bus.name.as_str()])
        .args(args));
    assert!(st.success(), "reqrep call: {st}\n{out}{err}");
    out.lines().map(str::to_owned).collect()
}

#[test]
fn a_c_client_gets_the_responses_of_a_rust_server_in_another_process() {
    let bus = Bus::new("rr-echo");
    let _server = Server::rust(&bus, &["--create"]);
    assert_eq!(
        c_call(&bus, &["--timeout-ms", "10000", "hello", "world"]),
        ["hello -> hello", "world -> world"]
    );
}

#[test]
fn a_c_client_gets_the_responses_of_a_c_server_in_another_process() {
    let bus = Bus::new("rr-c-server");
    built();
    let mut server = Server::start(
        &c_reqrep(),
        &["serve", bus.name.as_str(), "--create", "--count", "2"],
        "stderr",
    );
    assert_eq!(
        c_call(&bus, &["--timeout-ms", "10000", "ping", "pong"]),
        ["ping -> PING", "pong -> PONG"]
    );
    let st = wait_bounded(&mut server.child, LIMIT, "reqrep serve");
    assert!(st.success(), "{st}");
}

#[test]
fn a_c_call_whose_rust_server_is_killed_after_taking_it_ends_peer_gone() {
    let bus = Bus::new("rr-killed");
    let mut server = Server::rust(&bus, &["--create", "--mode", "hang"]);
    built();
    let mut client = Command::new(c_reqrep())
        .args(["call", bus.name.as_str(), "--timeout-ms", "20000", "doomed"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    server.expect("taken");
    let killed = Command::new("kill")
        .args(["-KILL", &server.pid().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let st = wait_bounded(&mut client, LIMIT, "reqrep call");
    let mut out = String::new();
    client
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert!(st.success(), "{st}");
    assert_eq!(out.trim(), "doomed: SHMBUS_PEER_GONE SHMBUS_E_PEER_GONE");
}

#[test]
fn a_c_call_with_no_rust_server_alive_ends_no_server() {
    let bus = Bus::new("rr-none");
    let mut server = Server::rust(&bus, &["--create", "--count", "0"]);
    let st = wait_bounded(&mut server.child, LIMIT, "reqrep_serve --count 0");
    assert!(st.success(), "{st}");
    assert_eq!(
        c_call(&bus, &["--timeout-ms", "10000", "anyone"]),
        ["anyone: SHMBUS_NO_SERVER SHMBUS_E_PEER_GONE"]
    );
}

#[test]
fn a_c_call_past_its_deadline_times_out_and_its_late_response_never_reaches_the_next_call() {
    let bus = Bus::new("rr-late");
    let mut server = Server::rust(&bus, &["--create", "--mode", "hold:300"]);
    assert_eq!(
        c_call(
            &bus,
            &[
                "--timeout-ms",
                "50",
                "first",
                "--timeout-ms",
                "10000",
                "second"
            ]
        ),
        [
            "first: SHMBUS_TIMED_OUT SHMBUS_E_TIMED_OUT",
            "second -> second"
        ]
    );
    // The server's answer to the first came after its caller gave up.
    server.expect("late");
}

#[test]
fn a_c_client_with_every_call_slot_outstanding_is_full_when_it_does_not_wait() {
    let bus = Bus::new("rr-full");
    let _server = Server::rust(&bus, &["--create", "--slots", "2", "--mode", "hold:1000"]);
    built();
    let (st, out, err) = run(Command::new(c_reqrep()).args(["send", bus.name.as_str(), "3"]));
    assert!(st.success(), "{st}: {err}");
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        ["sent", "sent", "SHMBUS_FULL SHMBUS_E_FULL"]
    );
}

#[test]
fn a_c_call_its_rust_server_drops_unanswered_is_refused() {
    let bus = Bus::new("rr-refused");
    let _server = Server::rust(&bus, &["--create", "--mode", "refuse"]);
    assert_eq!(
        c_call(&bus, &["--timeout-ms", "10000", "please"]),
        ["please: SHMBUS_REFUSED SHMBUS_E_PEER_GONE"]
    );
}
