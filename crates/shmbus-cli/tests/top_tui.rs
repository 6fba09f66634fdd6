//! `shmbus top`'s live view in a real terminal: tmux runs it in a pane of
//! a private tmux server, and the test reads the pane's text and presses
//! keys.
//!
//! Ground rules, as in cli.rs:
//! - Every process the test starts itself (publishers, subscribers, tmux
//!   commands) runs under the testkit's watchdog. The view runs inside
//!   tmux, not as the test's child: `timeout` bounds it, and the [`Tmux`]
//!   guard kills the tmux server (and so the pane's processes) when the
//!   test ends, even if it fails.
//! - Bus names are unique to the test ([`BusName`]) and removed on drop;
//!   each test ends by checking that nothing of it is left in /dev/shm.
//! - Every wait polls a condition up to a deadline; none sleeps and hopes.
//!
//! The pane runs `top` between two `stty -g`, then prints `TTY-RESTORED`
//! if the terminal's mode is back as it was, and `TOP-EXITED status=N`.
//! Whether the alternate screen was left and the cursor is shown, tmux
//! itself says (`#{alternate_on}`, `#{cursor_flag}`).
//!
//! Without tmux, each tmux test skips (`common::skip`: it fails under
//! strict skips, as in CI, which installs tmux).

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{
    BusName, Finished, HotBoard, PoolScene, Watched, process_state, run, spawn, wait_for,
};

/// How long the test waits for the pane to show something.
const PANE_DEADLINE: Duration = Duration::from_secs(10);

/// How often it looks at the pane.
const PANE_POLL: Duration = Duration::from_millis(100);

/// Seconds `timeout` lets `top` run: a bound on a view nobody quits (or
/// that cannot see it should stop: SIGKILL follows SIGTERM by 5 s).
const TOP_DEADLINE_S: u32 = 60;

/// The footer of the view: on the pane while the view is up, gone after.
const FOOTER: &str = "q quit";

// ---------------------------------------------------------------------------
// tmux.

/// A tmux server of the test's own (its own socket), running `shmbus top`
/// in a 160x50 pane. Dropping it kills the server and the pane's
/// processes.
struct Tmux {
    socket: String,
    /// The socket's file, which tmux leaves behind: removed on drop.
    socket_path: Option<PathBuf>,
}

impl Tmux {
    /// Starts `shmbus top ARGS` in a pane, or `None` if there is no tmux.
    fn start_top(args: &[&str]) -> Option<Tmux> {
        Tmux::start_top_with(&[], args)
    }

    /// As [`start_top`](Tmux::start_top), `top` run with the variables
    /// `env` set (the pane's shell has the tmux server's environment).
    fn start_top_with(env: &[(&str, &str)], args: &[&str]) -> Option<Tmux> {
        let mut all = vec!["top"];
        all.extend_from_slice(args);
        Tmux::start_shmbus(env, &all)
    }

    /// `shmbus ARGS` (any command) in the pane, as `start_top_with` runs
    /// `top`: bounded by `timeout`, its exit status printed after it.
    fn start_shmbus(env: &[(&str, &str)], args: &[&str]) -> Option<Tmux> {
        if find_program("tmux").is_none() {
            common::skip(common::Need::Tmux, "no tmux on PATH");
            return None;
        }
        let mut tmux = Tmux {
            socket: format!("{}tmux", shmbus_testkit::unique_prefix()),
            socket_path: None,
        };
        let mut top = vec![env!("CARGO_BIN_EXE_shmbus")];
        top.extend_from_slice(args);
        let top: Vec<String> = top.into_iter().map(sh_quote).collect();
        let env: Vec<String> = env
            .iter()
            .map(|(k, v)| sh_quote(&format!("{k}={v}")))
            .collect();
        let env = if env.is_empty() {
            String::new()
        } else {
            format!("env {} ", env.join(" "))
        };
        let script = format!(
            "before=$(stty -g); {env}timeout --foreground -k 5 {TOP_DEADLINE_S} {}; status=$?; \
             after=$(stty -g); \
             if [ \"$before\" = \"$after\" ]; then echo TTY-RESTORED; else echo TTY-CHANGED; fi; \
             echo TOP-EXITED status=$status; sleep 30",
            top.join(" ")
        );
        let command = format!("sh -c {}", sh_quote(&script));
        tmux.run(&[
            "new-session",
            "-d",
            "-x",
            "160",
            "-y",
            "50",
            "-s",
            "top",
            &command,
        ])
        .assert_success();
        tmux.socket_path = Some(PathBuf::from(tmux.pane_says("#{socket_path}")));
        Some(tmux)
    }

    /// `tmux -L SOCKET ARGS` (no configuration file), under the watchdog.
    fn run(&self, args: &[&str]) -> Finished {
        let mut all = vec!["-L", &self.socket, "-f", "/dev/null"];
        all.extend_from_slice(args);
        let mut cmd = shmbus_testkit::command("tmux", &all);
        // A test run from inside tmux must not talk to that tmux.
        cmd.env_remove("TMUX");
        run(cmd)
    }

    /// The pane's text as shown now; with `escapes`, with its colours and
    /// attributes as SGR sequences.
    fn capture(&self, escapes: bool) -> String {
        let mut args = vec!["capture-pane", "-p", "-t", "top"];
        if escapes {
            args.push("-e");
        }
        let out = self.run(&args);
        out.assert_success();
        out.stdout()
    }

    /// Presses `key` (tmux's name for it: `q`, `Tab`, `C-c`).
    fn press(&self, key: &str) {
        self.run(&["send-keys", "-t", "top", key]).assert_success();
    }

    /// A tmux format about the pane, such as `#{alternate_on}`.
    fn pane_says(&self, format: &str) -> String {
        let out = self.run(&["display-message", "-p", "-t", "top", format]);
        out.assert_success();
        out.stdout().trim().to_string()
    }

    /// Polls the pane until `done` holds of its text; returns that text.
    /// Fails the test, showing the pane, after [`PANE_DEADLINE`].
    fn wait_for(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + PANE_DEADLINE;
        loop {
            let pane = self.capture(false);
            if done(&pane) {
                return pane;
            }
            assert!(
                Instant::now() < deadline,
                "gave up after {PANE_DEADLINE:?} waiting for {what}; the pane shows:\n{pane}"
            );
            std::thread::sleep(PANE_POLL);
        }
    }

    /// [`Tmux::wait_for`] a whole frame of the view that `done` accepts.
    /// A frame is written top to bottom, and a capture can catch the first
    /// one half written; its last line is the footer, so a pane showing
    /// the footer holds a whole frame.
    fn wait_for_view(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        self.wait_for(what, |p| p.contains(FOOTER) && done(p))
    }

    /// Waits for `top` to end, and checks that it exited with status 0 and
    /// left the terminal as it found it: mode, main screen, cursor.
    fn assert_top_ended_cleanly(&self) {
        let pane = self.wait_for("top to exit", |p| p.contains("TOP-EXITED"));
        assert!(pane.contains("TOP-EXITED status=0"), "exit status:\n{pane}");
        assert!(pane.contains("TTY-RESTORED"), "raw mode left on:\n{pane}");
        assert!(!pane.contains(FOOTER), "the view is still shown:\n{pane}");
        assert_eq!(self.pane_says("#{alternate_on}"), "0", "alternate screen");
        assert_eq!(self.pane_says("#{cursor_flag}"), "1", "cursor hidden");
    }
}

impl Tmux {
    /// Kills the server: the pane's terminal hangs up, and its processes
    /// get SIGHUP. Not `run`: called from `drop`, where a panic (while a
    /// failed test unwinds) would abort the whole test binary. Bounded all
    /// the same.
    fn kill_server(&self) {
        let spawned = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .env_remove("TMUX")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        if let Ok(mut child) = spawned {
            let deadline = Instant::now() + Duration::from_secs(10);
            while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.kill_server();
        if let Some(path) = &self.socket_path {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// `program` in $PATH, if it is there.
fn find_program(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

/// `s` as one word for sh.
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The index of the pane line that is `pid`'s subscriber row (the first
/// cell, after the border).
fn row_of(pane: &str, pid: u32) -> Option<usize> {
    let first_cell = format!("{pid} ");
    pane.lines().position(|l| {
        l.trim_start_matches(['│', ' '])
            .starts_with(first_cell.as_str())
    })
}

fn row(pane: &str, pid: u32) -> &str {
    row_of(pane, pid)
        .and_then(|i| pane.lines().nth(i))
        .unwrap_or_else(|| panic!("no row for pid {pid} in\n{pane}"))
}

/// The attributes in force where `needle` starts on the line that is
/// `pid`'s row of an escaped capture (`capture-pane -e`).
fn style_at(escaped: &str, pid: u32, needle: &str) -> Sgr {
    let plain_lines: Vec<String> = escaped.lines().map(strip_sgr).collect();
    let index = row_of(&plain_lines.join("\n"), pid)
        .unwrap_or_else(|| panic!("no row for pid {pid} in\n{}", plain_lines.join("\n")));
    let line = escaped.lines().nth(index).expect("same lines");
    let at = line
        .find(needle)
        .unwrap_or_else(|| panic!("no {needle:?} in {line:?}"));
    Sgr::after(&line[..at])
}

/// Bold, dim and red, as SGR sequences leave them.
#[derive(Clone, Copy, Debug, Default)]
struct Sgr {
    bold: bool,
    dim: bool,
    red: bool,
}

impl Sgr {
    /// The state after the SGR sequences in `text`, from none.
    fn after(text: &str) -> Sgr {
        let mut s = Sgr::default();
        for params in text.split("\x1b[").skip(1).filter_map(|p| {
            let end = p.find(|c: char| !(c.is_ascii_digit() || c == ';'))?;
            (p[end..].starts_with('m')).then(|| &p[..end])
        }) {
            let codes: Vec<&str> = params.split(';').collect();
            let mut i = 0;
            while i < codes.len() {
                match codes[i] {
                    "" | "0" => s = Sgr::default(),
                    "1" => s.bold = true,
                    "2" => s.dim = true,
                    "22" => (s.bold, s.dim) = (false, false),
                    "31" | "91" => s.red = true,
                    "39" => s.red = false,
                    "30" | "32" | "33" | "34" | "35" | "36" | "37" => s.red = false,
                    // 38;5;N (256 colours): red is 1 or 9.
                    "38" if codes.get(i + 1) == Some(&"5") => {
                        s.red = matches!(codes.get(i + 2), Some(&"1") | Some(&"9"));
                        i += 2;
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        s
    }
}

fn strip_sgr(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = rest.find("\x1b[") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let end = after
            .find(|c: char| !(c.is_ascii_digit() || c == ';'))
            .map_or(after.len(), |e| e + 1);
        rest = &after[end.min(after.len())..];
    }
    out.push_str(rest);
    out
}

// ---------------------------------------------------------------------------
// Buses and their processes.

fn create(bus: &BusName, msg_size: u32, capacity: u64) {
    run(common::shmbus(&[
        "create",
        bus.name(),
        "--msg-size",
        &msg_size.to_string(),
        "--capacity",
        &capacity.to_string(),
    ]))
    .assert_success();
}

fn stat(bus: &BusName) -> shmbus::stat::BusStat {
    shmbus::stat::stat(bus.name()).unwrap_or_else(|e| panic!("stat {}: {e}", bus.name()))
}

/// `shmbus pub BUS`, its stdin a pipe the test holds, once it holds the
/// publisher lock.
fn start_publisher(bus: &BusName) -> Watched {
    let mut cmd = common::shmbus(&["pub", bus.name()]);
    cmd.stdin(Stdio::piped());
    let publisher = spawn(cmd);
    let pid = publisher.pid();
    wait_for("the publisher to attach", || {
        shmbus::stat::stat(bus.name()).is_ok_and(|s| s.publisher_alive && s.publisher_pid == pid)
    });
    publisher
}

/// `shmbus sub BUS`, once it is registered and asleep on the futex (so
/// its start position is picked and its registry entry is known).
fn start_subscriber(bus: &BusName) -> Watched {
    start_subscriber_with(bus, &[])
}

/// `shmbus sub BUS EXTRA...`, registered and asleep.
fn start_subscriber_with(bus: &BusName, extra: &[&str]) -> Watched {
    let mut args = vec!["sub", bus.name()];
    args.extend_from_slice(extra);
    let sub = spawn(common::shmbus(&args));
    let pid = sub.pid();
    wait_for("the subscriber to register", || {
        shmbus::stat::stat(bus.name()).is_ok_and(|s| s.subscribers.iter().any(|l| l.pid == pid))
    });
    wait_for("the subscriber to sleep", || {
        process_state(pid) == Some('S')
    });
    sub
}

fn signal(pid: u32, sig: rustix::process::Signal) {
    let pid = rustix::process::Pid::from_raw(pid as i32).expect("nonzero pid");
    rustix::process::kill_process(pid, sig).expect("kill");
}

fn write_at(path: &Path, offset: u64, bytes: &[u8]) {
    use std::os::unix::fs::FileExt;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    file.write_all_at(bytes, offset)
        .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

/// The pid of the `shmbus top` process watching `bus` (inside tmux, so not
/// the test's child): found by its command line.
fn top_pid(bus: &BusName) -> u32 {
    let exe = env!("CARGO_BIN_EXE_shmbus");
    let mut found = None;
    wait_for("top to be running", || {
        found = std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .find(|pid| {
                let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
                    return false;
                };
                let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
                args.len() > 2
                    && args[0] == exe.as_bytes()
                    && args[1] == b"top"
                    && args.contains(&bus.name().as_bytes())
            });
        found.is_some()
    });
    found.expect("found")
}

// ---------------------------------------------------------------------------
// The view.

#[test]
fn top_shows_the_bus_and_its_subscribers_and_q_restores_the_terminal() {
    let busy = BusName::new("top-busy");
    let idle = BusName::new("top-idle");
    create(&busy, 16, 64);
    create(&idle, 8, 8);
    let mut publisher = start_publisher(&busy);
    let keeping_up = start_subscriber(&busy);
    let stopped = start_subscriber(&busy);
    // A subscriber that does not read, deterministically: 56 messages
    // behind in a ring of 64 is 87.5%, near a lap but not lapped.
    signal(stopped.pid(), rustix::process::Signal::STOP);
    wait_for("the subscriber to stop", || {
        process_state(stopped.pid()) == Some('T')
    });
    let lines: String = (1..=56).map(|i| format!("m{i}\n")).collect();
    let stdin = publisher.stdin();
    stdin
        .write_all(lines.as_bytes())
        .expect("feed the publisher");
    stdin.flush().expect("flush");
    wait_for("the keeping-up subscriber to read all", || {
        let s = stat(&busy);
        s.published == 56
            && s.subscribers
                .iter()
                .any(|l| l.pid == keeping_up.pid() && l.lag == 0)
    });

    let Some(tmux) = Tmux::start_top(&[busy.name(), idle.name(), "--interval-ms", "200"]) else {
        return;
    };
    let (fast, slow) = (keeping_up.pid(), stopped.pid());
    let publisher_text = format!("pid {} (alive)", publisher.pid());
    let pane = tmux.wait_for_view("both buses and both subscribers", |p| {
        p.contains(busy.name())
            && p.contains(idle.name())
            && p.contains(&publisher_text)
            && row_of(p, fast).is_some()
            && row_of(p, slow).is_some()
    });
    assert!(
        pane.contains(&format!(
            "subscribers of {}, in registry order",
            busy.name()
        )),
        "the first bus is selected:\n{pane}"
    );
    assert!(
        row_of(&pane, fast) < row_of(&pane, slow),
        "registry order:\n{pane}"
    );
    let slow_row = row(&pane, slow);
    assert!(
        slow_row.contains(" 56 ") && slow_row.contains("87.5%") && slow_row.contains("near lap"),
        "{slow_row}"
    );
    assert!(row(&pane, fast).contains("0.0%"), "{pane}");
    let style = style_at(&tmux.capture(true), slow, "87.5%");
    assert!(style.red && style.bold, "near lap highlighted: {style:?}");
    let style = style_at(&tmux.capture(true), fast, "0.0%");
    assert!(!style.red, "keeping up is not highlighted: {style:?}");

    tmux.press("s");
    tmux.wait_for_view("the subscribers sorted by lag", |p| {
        p.contains(&format!("subscribers of {}, by lag", busy.name()))
            && row_of(p, slow) < row_of(p, fast)
    });
    tmux.press("Tab");
    tmux.wait_for_view("the second bus selected", |p| {
        p.contains(&format!("subscribers of {}, by lag", idle.name()))
            && p.contains("no subscribers")
    });
    tmux.press("q");
    tmux.assert_top_ended_cleanly();

    drop(tmux);
    keeping_up.kill();
    stopped.kill();
    publisher.close_stdin();
    publisher.wait_success();
    busy.finish();
    idle.finish();
}

#[test]
fn a_corrupt_bus_and_a_corrupt_subscriber_line_are_shown_as_such_and_q_still_quits() {
    let bad_magic = BusName::new("top-bad-magic");
    let bad_line = BusName::new("top-bad-line");
    create(&bad_magic, 8, 8);
    create(&bad_line, 8, 8);
    let sub = start_subscriber(&bad_line);
    // Asleep, the subscriber writes nothing but its ACTIVE_NS until a
    // message comes, and none will: SKIPPED stays as patched.
    let s = stat(&bad_line);
    let entry = s
        .subscribers
        .iter()
        .find(|l| l.pid == sub.pid())
        .expect("registered")
        .entry;
    let skipped_at = s.raw_header().control_offset as usize
        + shmbus::internals::wire::control::SUBSCRIBERS
        + shmbus::internals::wire::LINE * entry
        + shmbus::internals::wire::subscriber_line::SKIPPED;
    write_at(
        bad_line.path(),
        skipped_at as u64,
        &0xdead_beef_u64.to_le_bytes(),
    );
    assert!(stat(&bad_line).subscribers[0].corrupt.is_some());
    write_at(bad_magic.path(), 0, b"GARBAGE!");
    assert!(shmbus::stat::stat(bad_magic.name()).is_err());

    let Some(tmux) = Tmux::start_top(&[bad_magic.name(), bad_line.name(), "--interval-ms", "200"])
    else {
        return;
    };
    let pane = tmux.wait_for_view("the corrupt bus as a line", |p| {
        p.lines()
            .any(|l| l.contains(bad_magic.name()) && l.contains("not a shmbus segment"))
            && p.contains(bad_line.name())
    });
    // The buses are listed by name; the first is selected.
    if bad_magic.name() < bad_line.name() {
        assert!(pane.contains("not a shmbus segment: magic is"), "{pane}");
        tmux.press("Tab");
    }
    let pane = tmux.wait_for_view("the corrupt subscriber line", |p| {
        p.contains(&format!("subscribers of {}", bad_line.name())) && row_of(p, sub.pid()).is_some()
    });
    let line = row(&pane, sub.pid());
    assert!(
        line.contains("corrupt: skipped 3735928559 is more than the 0 messages it moved"),
        "{line}"
    );
    // Sampling goes on: the second sample gives rates.
    tmux.wait_for_view("a second sample", |p| p.contains("rates over"));
    tmux.press("q");
    tmux.assert_top_ended_cleanly();

    drop(tmux);
    sub.kill();
    bad_magic.finish();
    bad_line.finish();
}

#[test]
fn a_subscriber_that_died_is_shown_dimmed_as_gone() {
    let bus = BusName::new("top-gone");
    create(&bus, 8, 8);
    // Both lossless: the live one says so, the dead one only "gone".
    let alive = start_subscriber_with(&bus, &["--lossless"]);
    let dead = start_subscriber_with(&bus, &["--lossless"]);
    let dead_pid = dead.pid();
    dead.kill();
    wait_for("the dead subscriber to be gone", || {
        stat(&bus).gone.iter().any(|l| l.pid == dead_pid)
    });

    let Some(tmux) = Tmux::start_top(&[bus.name(), "--interval-ms", "200"]) else {
        return;
    };
    let pane = tmux.wait_for_view("both subscribers", |p| {
        row_of(p, alive.pid()).is_some() && row_of(p, dead_pid).is_some()
    });
    assert!(
        row(&pane, dead_pid)
            .trim_end_matches(['│', ' '])
            .ends_with("gone")
    );
    assert!(!row(&pane, alive.pid()).contains("gone"));
    assert!(
        row(&pane, alive.pid())
            .trim_end_matches(['│', ' '])
            .ends_with("lossless")
    );
    assert!(pane.contains("1 live, 1 gone"), "{pane}");
    assert!(
        pane.contains("1 of at most 8, evicted after 1.000 s"),
        "{pane}"
    );
    let style = style_at(&tmux.capture(true), dead_pid, &dead_pid.to_string());
    assert!(style.dim, "gone is dimmed: {style:?}");
    tmux.press("Escape");
    tmux.assert_top_ended_cleanly();

    drop(tmux);
    alive.kill();
    bus.finish();
}

/// The cell of `pid`'s row under the column headed `heading` (a
/// right-aligned column: the cell ends where the heading does).
fn cell_under(pane: &str, pid: u32, heading: &str) -> String {
    let head = pane
        .lines()
        .find(|l| l.contains(" PID ") && l.contains(heading))
        .unwrap_or_else(|| panic!("no heading {heading:?} in\n{pane}"));
    let at = head.find(heading).expect("found");
    let start = head[..at].chars().count();
    let end = start + heading.chars().count();
    let row: Vec<char> = row(pane, pid).chars().collect();
    row.get(start..end)
        .unwrap_or_else(|| panic!("{pid}'s row is too short:\n{pane}"))
        .iter()
        .collect::<String>()
        .trim()
        .to_string()
}

#[test]
fn a_pool_bus_shows_its_census_a_gauge_and_the_blocks_each_subscriber_holds() {
    let scene = PoolScene::new("top-tui-pool");
    let me = std::process::id();
    let reader = scene.reader.pid();
    let Some(tmux) = Tmux::start_top(&["--dir", scene.dir.dir(), "--interval-ms", "200"]) else {
        scene.finish();
        return;
    };
    // "plain" sorts before "pool": the plain bus is selected first.
    let pane = tmux.wait_for_view("both buses, the plain one selected", |p| {
        p.contains("pool 5/8 blocks in use")
            && p.contains("subscribers of plain")
            && row_of(p, me).is_some()
    });
    let bus_line = pane
        .lines()
        .find(|l| l.contains("pool 5/8 blocks in use"))
        .expect("the pool bus's line");
    let cells: Vec<&str> = bus_line.split_whitespace().collect();
    assert_eq!(
        cells.get(1..3),
        Some(&["pool", "pool"][..]),
        "name, then KIND pool: {bus_line}"
    );
    assert!(
        cells.contains(&"n/a"),
        "no bytes/s for a pool bus: {bus_line}"
    );
    assert!(pane.contains("JOURNAL / STREAM / POOL"), "{pane}");
    // A plain bus has no pool figures and no HELD column.
    assert!(
        !pane.contains("pool:") && !pane.contains("in use:"),
        "{pane}"
    );
    assert!(!pane.contains(" HELD "), "{pane}");

    tmux.press("Tab");
    let pane = tmux.wait_for_view("the pool bus selected", |p| {
        p.contains("subscribers of pool") && row_of(p, reader).is_some()
    });
    assert!(
        pane.contains(
            "pool:        8 × 256 B: 3 free · 4 on ring · 1 held · 0 loaned · 0 reclaimable · 0 corrupt"
        ),
        "{pane}"
    );
    assert!(
        pane.contains(&format!(
            "in use:      5 of 8 blocks (62.5%)  [{}{}]",
            "█".repeat(13),
            "·".repeat(7)
        )),
        "{pane}"
    );
    assert!(
        pane.contains("kind:        pool bus, 4 slots (16-byte descriptors), messages up to 256 B"),
        "{pane}"
    );
    assert!(pane.contains("msgs/s, bytes/s n/a (pool bus)"), "{pane}");
    assert_eq!(cell_under(&pane, me, "HELD"), "2", "{pane}");
    assert_eq!(cell_under(&pane, reader, "HELD"), "0", "{pane}");
    tmux.press("q");
    tmux.assert_top_ended_cleanly();

    drop(tmux);
    scene.finish();
}

#[test]
fn a_blackboard_shows_its_keys_used_and_its_hottest_key() {
    let board = HotBoard::start("top-tui-bb-J");
    let Some(tmux) = Tmux::start_top(&[board.name(), "--interval-ms", "200"]) else {
        board.finish();
        return;
    };
    // The hottest key's row: the line after the heading, "7" first.
    let hot_row = |p: &str| {
        let mut lines = p.lines().skip_while(|l| !l.contains("HOTTEST KEY"));
        lines.next()?;
        let row = strip_sgr(lines.next()?);
        Some(row.trim_start_matches(['│', ' ']).to_string())
    };
    let pane = tmux.wait_for_view("the blackboard and its hottest key", |p| {
        p.contains("hottest keys") && hot_row(p).is_some_and(|r| r.starts_with("7 "))
    });
    let bus_line = pane
        .lines()
        .find(|l| l.contains("keys 4/100"))
        .unwrap_or_else(|| panic!("no blackboard line: {pane}"));
    assert!(bus_line.contains(" blackboard "), "KIND: {bus_line}");
    assert!(bus_line.contains("hottest 7"), "{bus_line}");
    let fact = |key: &str| {
        let line = pane.lines().find(|l| l.contains(&format!("│{key}:")));
        let line = line.unwrap_or_else(|| panic!("no {key}: {pane}"));
        line.split_once(':')
            .expect("a fact")
            .1
            .trim_matches(['│', ' '])
            .to_string()
    };
    assert_eq!(fact("keys"), "4 of 100 (4.0%, 256 entries)", "{pane}");
    // The writer puts flat out: the stamp pass may catch its one entry
    // mid-write, never a stuck one while it lives.
    let mid = fact("mid-write");
    assert!(mid == "0" || mid == "1 (being written)", "{pane}");
    let row = hot_row(&pane).expect("a hot row");
    let cells: Vec<&str> = row.split_whitespace().collect();
    // KEY, ENTRY, UPDATES, UPDATES/S: a rate, not "-".
    assert!(cells.len() >= 4 && cells[3] != "-", "{row}");
    tmux.press("q");
    tmux.assert_top_ended_cleanly();
    drop(tmux);
    board.finish();
}

// ---------------------------------------------------------------------------
// Ending the view.

/// Starts the view on a bus with a subscriber, ends it with `end` (given
/// the tmux and the view's pid), and checks that the terminal is back.
fn ended_by(label: &str, end: impl FnOnce(&Tmux, u32)) {
    let bus = BusName::new(label);
    create(&bus, 8, 8);
    let sub = start_subscriber(&bus);
    let Some(tmux) = Tmux::start_top(&[bus.name(), "--interval-ms", "200"]) else {
        return;
    };
    // Drawn means raw mode is on: a Ctrl-C from here on is a key, not a
    // SIGINT to the pane's shell.
    tmux.wait_for_view("the view", |p| row_of(p, sub.pid()).is_some());
    assert_eq!(tmux.pane_says("#{alternate_on}"), "1");
    assert_eq!(tmux.pane_says("#{cursor_flag}"), "0");
    end(&tmux, top_pid(&bus));
    tmux.assert_top_ended_cleanly();

    drop(tmux);
    sub.kill();
    bus.finish();
}

// The tool has `bridge` only when built with the feature (the README's
// test command builds it so).
#[cfg(feature = "bridge")]
#[test]
fn a_bridge_is_a_line_of_its_bus_s_view_and_its_subscriber_row_says_bridge_out() {
    let bus = BusName::new("top-bridge");
    create(&bus, 16, 64);
    // The bridge's status file goes to a runtime directory of the test's
    // own, which `top` is told of too.
    let runtime = std::env::temp_dir().join(format!(
        "{}top-bridge-runtime",
        shmbus_testkit::unique_prefix()
    ));
    let _ = std::fs::remove_dir_all(&runtime);
    std::fs::create_dir(&runtime).expect("a runtime directory");
    let runtime_text = runtime.to_str().expect("UTF-8").to_owned();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a loopback port")
        .port();
    let endpoint = format!("tcp/127.0.0.1:{port}");
    let key = format!("shmbus/test/top/{}", std::process::id());
    let mut cmd = common::shmbus(&[
        "bridge",
        "out",
        bus.name(),
        "--key",
        &key,
        "--listen",
        &endpoint,
    ]);
    cmd.env("XDG_RUNTIME_DIR", &runtime);
    let bridge = spawn(cmd);
    let pid = bridge.pid();
    let status = runtime.join(format!("shmbus/bridges/{pid}.json"));
    wait_for("the bridge to subscribe", || {
        stat(&bus).subscribers.iter().any(|l| l.pid == pid)
    });
    common::publish(bus.name(), &common::numbered_lines(1..=10));
    wait_for("the bridge's status to count 10", || {
        std::fs::read_to_string(&status).is_ok_and(|s| s.contains("\"messages\":10,"))
    });

    let Some(tmux) = Tmux::start_top_with(
        &[("XDG_RUNTIME_DIR", &runtime_text)],
        &[bus.name(), "--interval-ms", "200"],
    ) else {
        let _ = std::fs::remove_dir_all(&runtime);
        return;
    };
    let line = format!("bridge:      pid {pid}: out -> key {key}, listen {endpoint}, no peer, ");
    let pane = tmux.wait_for_view("the bridge's line and row", |p| {
        p.contains(&line) && p.contains("forwarded 10, lost 0") && row_of(p, pid).is_some()
    });
    assert!(row(&pane, pid).contains("bridge out"), "{pane}");
    tmux.press("q");
    tmux.assert_top_ended_cleanly();

    drop(tmux);
    signal(pid, rustix::process::Signal::TERM);
    bridge.wait_success();
    assert!(!status.exists(), "the bridge removed its status");
    let _ = std::fs::remove_dir_all(&runtime);
    bus.finish();
}

/// A private runtime directory for status files, removed on drop.
struct Runtime(PathBuf);

impl Runtime {
    fn new(label: &str) -> Runtime {
        let dir = std::env::temp_dir().join(format!(
            "{}{label}-runtime",
            shmbus_testkit::unique_prefix()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).expect("a runtime directory");
        Runtime(dir)
    }

    fn text(&self) -> &str {
        self.0.to_str().expect("UTF-8")
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn a_recorder_is_a_line_of_its_bus_s_view_and_its_subscriber_row_says_recorder() {
    let bus = BusName::new("top-B-recorder");
    create(&bus, 16, 64);
    let runtime = Runtime::new("top-B-recorder");
    let file = runtime.0.join("ticks.rec");
    let mut cmd = common::shmbus(&["record", bus.name(), "--out", file.to_str().unwrap()]);
    cmd.env("XDG_RUNTIME_DIR", &runtime.0);
    let recorder = spawn(cmd);
    let pid = recorder.pid();
    let status = runtime.0.join(format!("shmbus/bridges/{pid}.json"));
    wait_for("the recorder to subscribe", || {
        stat(&bus).subscribers.iter().any(|l| l.pid == pid)
    });
    common::publish(bus.name(), &common::numbered_lines(1..=10));
    wait_for("the recorder's status to count 10", || {
        std::fs::read_to_string(&status).is_ok_and(|s| s.contains("\"messages\":10,"))
    });

    let Some(tmux) = Tmux::start_top_with(
        &[("XDG_RUNTIME_DIR", runtime.text())],
        &[bus.name(), "--interval-ms", "200"],
    ) else {
        return;
    };
    let line = format!("bridge:      pid {pid}: record -> {}, ", file.display());
    let pane = tmux.wait_for_view("the recorder's line and row", |p| {
        p.contains(&line)
            && p.contains("recorded 10, 160 bytes, lost 0")
            && row_of(p, pid).is_some()
    });
    assert!(row(&pane, pid).contains("recorder"), "{pane}");
    tmux.press("q");
    tmux.assert_top_ended_cleanly();

    drop(tmux);
    signal(pid, rustix::process::Signal::INT);
    recorder.wait_success();
    assert!(!status.exists(), "the recorder removed its status");
    drop(runtime);
    bus.finish();
}

#[test]
fn a_recorder_on_a_terminal_shows_a_progress_line_of_messages_bytes_and_losses() {
    let bus = BusName::new("top-B-progress");
    create(&bus, 16, 64);
    let runtime = Runtime::new("top-B-progress");
    let file = runtime.0.join("p.rec");
    let Some(tmux) = Tmux::start_shmbus(
        &[("XDG_RUNTIME_DIR", runtime.text())],
        &["record", bus.name(), "--out", file.to_str().unwrap()],
    ) else {
        return;
    };
    wait_for("the recorder to subscribe", || {
        !stat(&bus).subscribers.is_empty()
    });
    let pid = stat(&bus).subscribers[0].pid;
    common::publish(bus.name(), &common::numbered_lines(1..=7));
    tmux.wait_for("the progress line", |p| {
        p.contains("recorded 7 messages, 112 bytes, lost 0")
    });
    // Not C-c: the terminal would send SIGINT to the pane's shell too.
    signal(pid, rustix::process::Signal::INT);
    let pane = tmux.wait_for("the recorder to exit", |p| p.contains("TOP-EXITED"));
    assert!(pane.contains("TOP-EXITED status=0"), "{pane}");
    // The line ended with a newline: the shell's next output is below it.
    let progress = pane.lines().position(|l| l.contains("recorded 7 messages"));
    let restored = pane.lines().position(|l| l.contains("TTY-RESTORED"));
    assert!(progress < restored, "{pane}");
    drop(tmux);
    drop(runtime);
    bus.finish();
}

#[test]
fn ctrl_c_quits_and_restores_the_terminal() {
    ended_by("top-ctrl-c", |tmux, _| tmux.press("C-c"));
}

#[test]
fn sigterm_ends_the_view_and_restores_the_terminal() {
    ended_by("top-sigterm", |_, pid| {
        signal(pid, rustix::process::Signal::TERM)
    });
}

#[test]
fn a_terminal_that_hangs_up_ends_the_view() {
    let bus = BusName::new("top-hangup");
    create(&bus, 8, 8);
    let Some(tmux) = Tmux::start_top(&[bus.name(), "--interval-ms", "200"]) else {
        return;
    };
    tmux.wait_for_view("the view", |p| p.contains(bus.name()));
    let pid = top_pid(&bus);
    // The pane's terminal goes away under the view, as a closed window's.
    tmux.kill_server();
    wait_for("top to end after the hangup", || {
        matches!(process_state(pid), None | Some('Z'))
    });

    drop(tmux);
    bus.finish();
}

// ---------------------------------------------------------------------------
// Without a terminal.

#[test]
fn top_once_prints_a_block_per_bus_and_a_row_per_subscriber_in_plain_text() {
    let bus = BusName::new("top-once");
    create(&bus, 8, 8);
    let mut publisher = start_publisher(&bus);
    let sub = start_subscriber(&bus);
    let out = run(common::shmbus(&[
        "top",
        bus.name(),
        "--once",
        "--interval-ms",
        "50",
    ]));
    out.assert_success();
    let text = out.stdout();
    assert!(!text.contains('\x1b'), "no colours: {text:?}");
    assert!(text.starts_with(&format!("{}\n", bus.name())), "{text}");
    assert!(
        text.contains(&format!("publisher:   pid {} (alive)", publisher.pid())),
        "{text}"
    );
    assert!(text.contains("subscribers: 1 live, 0 gone"), "{text}");
    let heading = text
        .lines()
        .find(|l| l.trim_start().starts_with("PID"))
        .unwrap_or_else(|| panic!("no table: {text}"));
    assert!(
        heading.contains("LAG%") && heading.contains("VCS/S"),
        "{heading}"
    );
    let row = text
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{} ", sub.pid())))
        .unwrap_or_else(|| panic!("no row for the subscriber: {text}"));
    assert!(row.contains("0.0%"), "{row}");

    sub.kill();
    publisher.close_stdin();
    publisher.wait_success();
    bus.finish();
}

#[test]
fn top_without_a_terminal_says_to_use_once() {
    let bus = BusName::new("top-pipe");
    create(&bus, 8, 8);
    let out = run(common::shmbus(&["top", bus.name()]));
    assert_eq!(out.code(), Some(2), "{out:?}");
    assert!(
        out.stderr
            .starts_with("shmbus: standard output is not a terminal")
            && out.stderr.contains("--once")
            && out.stderr.lines().count() == 1,
        "{out:?}"
    );
    assert!(out.stdout.is_empty(), "{out:?}");
    bus.finish();
}
