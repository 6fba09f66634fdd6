//! `shmbus bridge out|in` end to end, over Zenoh on loopback: real
//! processes, a free port each run. (Between two network namespaces joined
//! by a veth pair: not yet, see the issue note.)
//!
//! Nothing sleeps to widen a race: the bridge-in says `listening`, the
//! bridge-out says `matched` once Zenoh has a subscriber for its key (puts
//! before that go nowhere), the downstream subscriber is known to be
//! registered from `stat`, and a bridge-out held with SIGSTOP is lapped
//! deterministically.
//!
//! Each test gives its bridges and its `stat`s an `XDG_RUNTIME_DIR` of its
//! own ([`RuntimeDir`]), so the bridges' status files are the test's alone,
//! and checks the directory is empty once they stopped.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{
    BusName, CliOutput, Finished, ShmDir, Watched, publish, run, run_shmbus as shmbus, signal,
    spawn, wait_for, wait_until_waiting,
};
use rustix::process::Signal;
use serde_json::{Value, json};
use shmbus_zenoh::frame::{Frame, Upstream};
use zenoh::Wait as _;

/// A private `XDG_RUNTIME_DIR` (the testkit's): the commands run through
/// it find the bridges' status files in its `shmbus/bridges`.
struct RuntimeDir(shmbus_testkit::RuntimeDir);

impl RuntimeDir {
    fn new(label: &str) -> RuntimeDir {
        RuntimeDir(shmbus_testkit::RuntimeDir::new(label))
    }

    /// Where the bridges write their status.
    fn bridges(&self) -> PathBuf {
        self.0.shmbus("bridges")
    }

    /// The names of the files there (none if it is not there yet).
    fn files(&self) -> Vec<String> {
        let Ok(dir) = std::fs::read_dir(self.bridges()) else {
            return Vec::new();
        };
        let mut names: Vec<String> = dir
            .map(|e| {
                e.expect("an entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        names.sort();
        names
    }

    /// Bridge `pid`'s status file, as JSON, if it is there and whole.
    fn status(&self, pid: u32) -> Option<Value> {
        let bytes = std::fs::read(self.bridges().join(format!("{pid}.json"))).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// `shmbus ARGS` with this runtime directory.
    fn shmbus(&self, args: &[&str]) -> Command {
        let mut cmd = common::shmbus(args);
        self.0.apply(&mut cmd);
        cmd
    }

    fn start(&self, args: &[&str]) -> Watched {
        spawn(self.shmbus(args))
    }

    fn run(&self, args: &[&str]) -> Finished {
        run(self.shmbus(args))
    }

    /// `shmbus stat BUS --json`, run to its end.
    fn stat_json(&self, bus: &str) -> Value {
        let out = self.run(&["stat", bus, "--json"]);
        out.assert_success();
        out.json()
    }

    /// `shmbus clean --dir DIR`: its dead buses, and the stale statuses of
    /// bridges of buses in it, are removed. Its stdout.
    fn clean(&self, dir: &ShmDir) -> String {
        let out = self.run(&["clean", "--dir", dir.dir()]);
        out.assert_success();
        out.stdout()
    }
}

/// A port nobody listens on now (the kernel's pick; freed at once).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a loopback port")
        .port()
}

struct Bridges {
    inbound: Watched,
    outbound: Watched,
}

/// `bridge in KEY DOWN --create 256` listening on loopback, and `bridge out
/// UP` dialing it, matched; and the endpoint.
fn bridges(rt: &RuntimeDir, up: &str, down: &str, key: &str) -> (Bridges, String) {
    let endpoint = format!("tcp/127.0.0.1:{}", free_port());
    let mut inbound = rt.start(&[
        "bridge", "in", key, down, "--create", "256", "--listen", &endpoint,
    ]);
    inbound.wait_until_printed("listening", Duration::from_secs(30));
    let mut outbound = rt.start(&["bridge", "out", up, "--key", key, "--connect", &endpoint]);
    outbound.wait_until_printed("matched", Duration::from_secs(30));
    (Bridges { inbound, outbound }, endpoint)
}

impl Bridges {
    /// SIGTERM both: each ends with success.
    fn stop(self) {
        for b in [self.outbound, self.inbound] {
            signal(&b, Signal::TERM);
            b.wait().assert_success();
        }
    }
}

fn create(bus: &str, capacity: &str) {
    shmbus(&["create", bus, "--msg-size", "32", "--capacity", capacity]).assert_success();
}

#[test]
fn every_message_crosses_in_order_at_its_upstream_sequence() {
    let (up, down) = (BusName::new("bridge-up"), BusName::new("bridge-down"));
    create(up.name(), "256");
    let key = format!("shmbus/test/{}", std::process::id());
    let rt = RuntimeDir::new("bridge-order");
    let (b, _) = bridges(&rt, up.name(), down.name(), &key);
    publish(up.name(), &common::numbered_lines(1..=100));
    wait_for("the downstream bus to hold 100 messages", || {
        shmbus::stat::stat(down.name()).is_ok_and(|s| s.published == 100)
    });
    let out = shmbus(&[
        "sub",
        down.name(),
        "--from",
        "oldest",
        "--count",
        "100",
        "--timeout",
        "10",
    ]);
    out.assert_success();
    assert_eq!(out.stdout(), common::numbered_lines(1..=100));
    let (u, d) = (
        shmbus::stat::stat(up.name()).expect("stat up"),
        shmbus::stat::stat(down.name()).expect("stat down"),
    );
    assert_eq!(
        (d.head, d.first_seq),
        (u.head, 0),
        "the same sequence numbers"
    );
    b.stop();
    assert_eq!(rt.files(), Vec::<String>::new(), "status files left");
}

#[test]
fn a_lapped_bridge_out_costs_downstream_subscribers_exactly_what_it_missed() {
    let (up, down) = (
        BusName::new("bridge-lap-up"),
        BusName::new("bridge-lap-down"),
    );
    create(up.name(), "8");
    let key = format!("shmbus/test/lap/{}", std::process::id());
    let rt = RuntimeDir::new("bridge-lap");
    let (b, _) = bridges(&rt, up.name(), down.name(), &key);
    // The first message makes the downstream bus.
    publish(up.name(), "first\n");
    wait_for("the downstream bus", || {
        shmbus::stat::stat(down.name()).is_ok_and(|s| s.published == 1)
    });
    let sub = common::start(&["sub", down.name(), "--from", "next", "--timeout", "3"]);
    wait_until_waiting(down.name(), &sub);
    // The bridge-out held still while 100 messages go through 8 slots.
    signal(&b.outbound, Signal::STOP);
    publish(up.name(), &common::numbered_lines(1..=100));
    signal(&b.outbound, Signal::CONT);
    let out = sub.wait();
    out.assert_success();
    let got: Vec<String> = out.stdout().lines().map(str::to_owned).collect();
    let skipped: u64 = out
        .stderr
        .lines()
        .filter_map(|l| l.strip_prefix("lagged: skipped "))
        .map(|n| n.parse::<u64>().expect("a count"))
        .sum();
    assert!(
        skipped > 0,
        "100 messages through 8 slots lapped the bridge-out"
    );
    assert_eq!(
        got.len() as u64 + skipped,
        100,
        "{got:?}, skipped {skipped}"
    );
    let want: Vec<String> = (101 - got.len() as u64..=100)
        .map(|i| i.to_string())
        .collect();
    assert_eq!(got, want, "what arrived is the newest, in order");
    // The bridges count it too: the bridge-out what it was lapped by, the
    // bridge-in what it skipped (once each has written its status since).
    let (out_pid, in_pid) = (b.outbound.pid(), b.inbound.pid());
    wait_for("the bridges' statuses to count the lap", || {
        let lost = |pid| rt.status(pid).and_then(|s| s["lost"].as_u64());
        let messages = |pid| rt.status(pid).and_then(|s| s["messages"].as_u64());
        lost(out_pid) == Some(skipped)
            && lost(in_pid) == Some(skipped)
            && messages(in_pid) == Some(1 + got.len() as u64)
    });
    b.stop();
    assert_eq!(rt.files(), Vec::<String>::new(), "status files left");
}

/// The restart scenario: the bridges up and "first" across, a subscriber
/// of the downstream bus waiting (`--timeout 3`); then the bridge-in
/// SIGKILLed, 1..=50 published while none listens, the bridge-in started
/// again and 51..=60 published. The subscriber's run, the killed bridge-in's
/// pid, and the running bridges.
fn restart_scenario(
    rt: &RuntimeDir,
    up: &str,
    down: &str,
    label: &str,
) -> (Finished, u32, Bridges) {
    let key = format!("shmbus/test/{label}/{}", std::process::id());
    let endpoint = format!("tcp/127.0.0.1:{}", free_port());
    let in_args = [
        "bridge", "in", &key, down, "--create", "256", "--listen", &endpoint,
    ];
    let mut inbound = rt.start(&in_args);
    inbound.wait_until_printed("listening", Duration::from_secs(30));
    let mut outbound = rt.start(&["bridge", "out", up, "--key", &key, "--connect", &endpoint]);
    outbound.wait_until_printed("matched", Duration::from_secs(30));
    publish(up, "first\n");
    wait_for("the downstream bus", || {
        shmbus::stat::stat(down).is_ok_and(|s| s.published == 1)
    });
    let sub = common::start(&["sub", down, "--from", "next", "--timeout", "3"]);
    wait_until_waiting(down, &sub);

    let killed = inbound.pid();
    inbound.kill();
    outbound.wait_until_printed("unmatched", Duration::from_secs(60));
    // Nobody listens: these reach no one live (a journal has them).
    publish(up, &common::numbered_lines(1..=50));
    let mut inbound = rt.start(&in_args);
    inbound.wait_until_printed("listening", Duration::from_secs(30));
    outbound.wait_until_printed("unmatched\nmatched", Duration::from_secs(60));
    publish(up, &common::numbered_lines(51..=60));
    (sub.wait(), killed, Bridges { inbound, outbound })
}

#[test]
fn a_bridge_in_killed_and_restarted_carries_on_and_what_passed_meanwhile_is_counted() {
    let dir = ShmDir::new("bridge-kill");
    let (up, down) = (dir.bus("up"), dir.bus("down"));
    create(&up, "256");
    let rt = RuntimeDir::new("bridge-kill");
    let (out, killed, bridges) = restart_scenario(&rt, &up, &down, "kill");
    out.assert_success();
    let skipped: u64 = out
        .stderr
        .lines()
        .filter_map(|l| l.strip_prefix("lagged: skipped "))
        .map(|n| n.parse::<u64>().expect("a count"))
        .sum();
    assert_eq!(out.stdout(), common::numbered_lines(51..=60));
    assert_eq!(skipped, 50, "the 50 published while no bridge-in listened");
    bridges.stop();
    // SIGKILL left the first bridge-in's status: stale, and `clean`'s.
    let stale = format!("{killed}.json");
    assert_eq!(rt.files(), vec![stale.clone()]);
    let cleaned = rt.clean(&dir);
    assert!(
        cleaned.contains(&format!(
            "removed stale bridge status {}",
            rt.bridges().join(&stale).display()
        )),
        "{cleaned}"
    );
    assert_eq!(rt.files(), Vec::<String>::new(), "status files left");
    dir.finish();
}

/// The bridge-out's status once it wrote one: `bridge out BUS` listening
/// on loopback, with no peer.
fn lone_bridge_out(rt: &RuntimeDir, bus: &str, key: &str) -> Watched {
    let endpoint = format!("tcp/127.0.0.1:{}", free_port());
    let mut out = rt.start(&["bridge", "out", bus, "--key", key, "--listen", &endpoint]);
    let pid = out.pid();
    shmbus_testkit::wait_for("the bridge-out's status", &mut [&mut out], || {
        rt.status(pid).is_some()
    });
    out
}

/// This process's start time, as the bridge writes its own.
fn own_start_time() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    let rest = &stat[stat.rfind(')').expect("a command name") + 1..];
    rest.split_whitespace()
        .nth(22 - 3)
        .and_then(|f| f.parse().ok())
        .expect("field 22")
}

fn write(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

#[test]
fn stat_top_and_prometheus_show_each_bridge_with_its_direction_key_and_counts_and_sigterm_leaves_no_status()
 {
    let (up, down) = (
        BusName::new("bridge-stat-up"),
        BusName::new("bridge-stat-down"),
    );
    create(up.name(), "256");
    let key = format!("shmbus/test/stat/{}", std::process::id());
    let rt = RuntimeDir::new("bridge-stat");
    let (b, endpoint) = bridges(&rt, up.name(), down.name(), &key);
    let (out_pid, in_pid) = (b.outbound.pid(), b.inbound.pid());
    publish(up.name(), &common::numbered_lines(1..=100));
    wait_for("both statuses to count 100", || {
        [out_pid, in_pid]
            .iter()
            .all(|&pid| rt.status(pid).is_some_and(|s| s["messages"] == 100))
    });

    let up_stat = rt.stat_json(up.name());
    let found = up_stat["bridges"].as_array().expect("bridges");
    assert_eq!(found.len(), 1, "{up_stat}");
    let o = &found[0];
    let canonical = |p: &Path| {
        std::fs::canonicalize(p)
            .expect("the bus")
            .display()
            .to_string()
    };
    assert_eq!(o["pid"], out_pid, "{o}");
    assert_eq!(o["direction"], "out", "{o}");
    assert_eq!(o["key"], key.as_str(), "{o}");
    assert_eq!(o["bus"], canonical(up.path()), "{o}");
    assert_eq!(o["connect"], json!([endpoint]), "{o}");
    assert_eq!(o["listen"], json!([]), "{o}");
    assert_eq!(o["peer"], true, "matched: {o}");
    assert_eq!(
        (&o["messages"], &o["lost"]),
        (&json!(100), &json!(0)),
        "{o}"
    );
    assert!(
        up_stat["per_subscriber"]
            .as_array()
            .expect("per_subscriber")
            .iter()
            .any(|l| l["pid"] == out_pid),
        "the bridge-out is a subscriber of its bus: {up_stat}"
    );

    let down_stat = rt.stat_json(down.name());
    let found = down_stat["bridges"].as_array().expect("bridges");
    assert_eq!(found.len(), 1, "{down_stat}");
    let i = &found[0];
    assert_eq!(i["pid"], in_pid, "{i}");
    assert_eq!(
        down_stat["publisher_pid"], in_pid,
        "the bridge-in publishes"
    );
    assert_eq!(i["direction"], "in", "{i}");
    assert_eq!(i["key"], key.as_str(), "{i}");
    assert_eq!(i["bus"], canonical(down.path()), "{i}");
    assert_eq!(i["listen"], json!([endpoint]), "{i}");
    for (count, want) in [
        ("messages", 100),
        ("lost", 0),
        ("repeats", 0),
        ("bad_frames", 0),
    ] {
        assert_eq!(i[count], want, "{count}: {i}");
    }

    let text = rt.run(&["stat", up.name()]);
    let text = text.assert_success().stdout();
    let line = format!("pid {out_pid}: out -> key {key}, connect {endpoint}, peer matched, ");
    assert!(text.contains("bridges:        1\n"), "{text}");
    assert!(text.contains(&line), "{text}");
    assert!(text.contains("forwarded 100, lost 0"), "{text}");
    let text = rt.run(&["stat", down.name()]);
    let text = text.assert_success().stdout();
    let line = format!("pid {in_pid}: in <- key {key}, listen {endpoint}, ");
    assert!(text.contains(&line), "{text}");
    assert!(
        text.contains("published 100, skipped 0, repeats 0, bad frames 0"),
        "{text}"
    );

    let top = rt.run(&[
        "top",
        up.name(),
        down.name(),
        "--json",
        "--interval-ms",
        "100",
    ]);
    let top = top.assert_success().json();
    let bus = |name: &str| {
        top["buses"]
            .as_array()
            .expect("buses")
            .iter()
            .find(|b| b["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no {name} in {top}"))
    };
    let (top_up, top_down) = (bus(up.name()), bus(down.name()));
    assert_eq!(top_up["bridges"][0]["direction"], "out", "{top_up}");
    assert_eq!(top_up["bridges"][0]["messages"], 100, "{top_up}");
    assert_eq!(top_down["bridges"][0]["direction"], "in", "{top_down}");
    let sub = top_up["subscribers"]
        .as_array()
        .expect("subscribers")
        .iter()
        .find(|s| s["pid"] == out_pid)
        .cloned()
        .unwrap_or_else(|| panic!("no subscriber {out_pid}: {top_up}"));
    assert_eq!(sub["bridge"], true, "{sub}");

    let prom = rt.run(&["top", up.name(), "--prometheus", "--interval-ms", "100"]);
    let prom = prom.assert_success().stdout();
    let series = format!(
        "shmbus_bridge_messages_total{{bus=\"{}\",direction=\"out\",key=\"{key}\",pid=\"{out_pid}\"}} 100\n",
        up.name()
    );
    assert!(prom.contains(&series), "{prom}");
    assert!(prom.contains("shmbus_bridge_lost_total{"), "{prom}");

    b.stop();
    assert_eq!(rt.files(), Vec::<String>::new(), "status files left");
    let up_stat = rt.stat_json(up.name());
    assert_eq!(up_stat["bridges"], json!([]), "{up_stat}");
    up.finish();
    down.finish();
}

#[test]
fn a_status_left_by_a_dead_process_or_a_reused_pid_is_not_shown_and_clean_removes_it() {
    let dir = ShmDir::new("bridge-stale");
    let bus = dir.bus("bus");
    create(&bus, "16");
    let rt = RuntimeDir::new("bridge-stale");
    let key = format!("shmbus/test/stale/{}", std::process::id());
    let live = lone_bridge_out(&rt, &bus, &key);
    let status = rt.status(live.pid()).expect("the live status");
    // A process that has ended (and been reaped): its pid names nobody.
    let ended = spawn(shmbus_testkit::command("true", &[]));
    let dead = ended.pid();
    ended.wait().assert_success();
    let mut stale = status.clone();
    stale["pid"] = json!(dead);
    write(
        &rt.bridges().join(format!("{dead}.json")),
        stale.to_string().as_bytes(),
    );
    // This test's pid runs, but started at another time than the file says:
    // a pid reused since.
    let me = std::process::id();
    let mut reused = status;
    reused["pid"] = json!(me);
    reused["started"] = json!(own_start_time() + 1);
    write(
        &rt.bridges().join(format!("{me}.json")),
        reused.to_string().as_bytes(),
    );
    // The same file with the right start time is shown: only the start
    // time told them apart.
    let mut right = reused.clone();
    right["started"] = json!(own_start_time());
    let shown_right = {
        write(
            &rt.bridges().join(format!("{me}.json")),
            right.to_string().as_bytes(),
        );
        rt.stat_json(&bus)["bridges"].as_array().map(Vec::len)
    };
    assert_eq!(shown_right, Some(2), "the live bridge and this process");
    write(
        &rt.bridges().join(format!("{me}.json")),
        reused.to_string().as_bytes(),
    );

    let stat = rt.stat_json(&bus);
    let pids: Vec<&Value> = stat["bridges"]
        .as_array()
        .expect("bridges")
        .iter()
        .map(|b| &b["pid"])
        .collect();
    assert_eq!(pids, vec![&json!(live.pid())], "{stat}");
    let text = rt.run(&["stat", &bus]);
    let text = text.assert_success().stdout();
    assert!(text.contains("bridges:        1\n"), "{text}");
    assert!(!text.contains(&format!("pid {dead}:")), "{text}");

    let cleaned = rt.clean(&dir);
    for pid in [dead, me] {
        let path = rt.bridges().join(format!("{pid}.json"));
        assert!(
            cleaned.contains(&format!("removed stale bridge status {}", path.display())),
            "{cleaned}"
        );
        assert!(!path.exists(), "{}", path.display());
    }
    assert_eq!(
        rt.files(),
        vec![format!("{}.json", live.pid())],
        "the live one kept"
    );
    signal(&live, Signal::TERM);
    live.wait().assert_success();
    assert_eq!(rt.files(), Vec::<String>::new(), "status files left");
    dir.finish();
}

#[test]
fn a_garbled_status_file_is_skipped_and_never_breaks_stat_top_or_clean() {
    let shm = ShmDir::new("bridge-garbled");
    let bus = shm.bus("bus");
    create(&bus, "16");
    let rt = RuntimeDir::new("bridge-garbled");
    let key = format!("shmbus/test/garbled/{}", std::process::id());
    let live = lone_bridge_out(&rt, &bus, &key);
    let status = rt.status(live.pid()).expect("the live status");
    let dir = rt.bridges();
    let me = std::process::id();
    // A status of this running process, right but for being too long.
    let mut mine = status.clone();
    mine["pid"] = json!(me);
    mine["started"] = json!(own_start_time());
    let mut long = mine.to_string().into_bytes();
    long.extend(std::iter::repeat_n(b' ', 100 << 10));
    write(&dir.join(format!("{me}.json")), &long);
    // Named for pid 1, which runs: a FIFO nobody writes (a reader that
    // opened it blocking would wait for ever).
    let fifo = dir.join("1.json");
    run(shmbus_testkit::command(
        "mkfifo",
        &[fifo.to_str().expect("UTF-8")],
    ))
    .assert_success();
    let mut wrong_type = status.clone();
    wrong_type["messages"] = json!("many");
    let mut wrong_pid = status.clone();
    wrong_pid["pid"] = json!(5);
    for (name, bytes) in [
        ("2.json", b"{\"schema\": \"shmbus-bridge-sta".to_vec()),
        ("3.json", vec![0xff; 64]),
        ("4.json", wrong_type.to_string().into_bytes()),
        ("6.json", wrong_pid.to_string().into_bytes()),
        ("7.json", "[".repeat(200_000).into_bytes()),
        ("8.json", Vec::new()),
    ] {
        write(&dir.join(name), &bytes);
    }
    std::os::unix::fs::symlink("/dev/zero", dir.join("9.json")).expect("a symlink");

    let stat = rt.stat_json(&bus);
    let found = stat["bridges"].as_array().expect("bridges");
    assert_eq!(found.len(), 1, "only the live bridge: {stat}");
    assert_eq!(found[0]["pid"], live.pid(), "{stat}");
    rt.run(&["stat", &bus]).assert_success();
    let top = rt.run(&["top", &bus, "--json", "--interval-ms", "50"]);
    let top = top.assert_success().json();
    assert_eq!(
        top["buses"][0]["bridges"].as_array().map(Vec::len),
        Some(1),
        "{top}"
    );
    rt.run(&["top", &bus, "--prometheus", "--interval-ms", "50"])
        .assert_success();
    rt.run(&["top", &bus, "--once", "--interval-ms", "50"])
        .assert_success();
    rt.run(&["ls", "--json"]).assert_success();
    // `clean` looks at every one of them and neither hangs nor fails; the
    // FIFO of a running pid and this process's own file stay.
    rt.clean(&shm);
    assert!(fifo.exists() && dir.join(format!("{me}.json")).exists());

    let live_file = format!("{}.json", live.pid());
    signal(&live, Signal::TERM);
    live.wait().assert_success();
    assert!(!rt.files().contains(&live_file), "{:?}", rt.files());
    shm.finish();
}

/// The lines of `shmbus sub BUS --bootstrap` up to now: "SEQ\tLINE" each.
fn bootstrap_lines(bus: &str) -> Vec<String> {
    let out = shmbus(&["sub", bus, "--bootstrap", "--timeout", "1"]);
    out.assert_success();
    out.stdout().lines().map(str::to_owned).collect()
}

fn create_journaled(bus: &str, journal: &std::path::Path, extra: &[&str]) {
    let mut args = vec![
        "create",
        bus,
        "--msg-size",
        "32",
        "--capacity",
        "256",
        "--journal",
        journal.to_str().expect("UTF-8 path"),
    ];
    args.extend_from_slice(extra);
    shmbus(&args).assert_success();
}

#[test]
fn with_a_journaled_upstream_a_restarted_bridge_in_repairs_what_passed_meanwhile() {
    let dir = ShmDir::new("bridge-repair");
    let (up, down) = (dir.bus("up"), dir.bus("down"));
    create_journaled(&up, &dir.file("up.journal"), &[]);
    let rt = RuntimeDir::new("bridge-repair");
    let (out, _, bridges) = restart_scenario(&rt, &up, &down, "repair");
    out.assert_success();
    assert!(!out.stderr.contains("lagged"), "{}", out.stderr);
    assert_eq!(
        out.stdout(),
        common::numbered_lines(1..=60),
        "every message once, in order"
    );
    bridges.stop();
    rt.clean(&dir); // the SIGKILLed bridge-in's status
    assert_eq!(rt.files(), Vec::<String>::new(), "status files left");
    dir.finish();
}

#[test]
fn a_journaled_downstream_bootstrapped_from_a_compacted_upstream_holds_its_exact_history() {
    let dir = ShmDir::new("bridge-boot");
    let (up, down) = (
        BusName::new("bridge-boot-up"),
        BusName::new("bridge-boot-down"),
    );
    create_journaled(
        up.name(),
        &dir.file("up.journal"),
        &["--type", "test.Line:8"],
    );
    // Keyed updates (the key is a line's first 8 bytes), compacted: the
    // journal then starts with one record per key, sequences skipping.
    let updates = |range: std::ops::RangeInclusive<u64>| -> String {
        range.map(|i| format!("key{:05}={i}\n", i % 7)).collect()
    };
    let run = common::run_stdin(
        &["pub", up.name(), "--compact-after", "40"],
        updates(1..=100).as_bytes(),
    );
    run.assert_success();
    let rt = RuntimeDir::new("bridge-boot");
    let key = format!("shmbus/test/boot/{}", std::process::id());
    let endpoint = format!("tcp/127.0.0.1:{}", free_port());
    let down_journal = dir.file("down.journal");
    let mut inbound = rt.start(&[
        "bridge",
        "in",
        &key,
        down.name(),
        "--create",
        "256",
        "--journal",
        down_journal.to_str().expect("UTF-8 path"),
        "--type",
        "test.Line:8",
        "--listen",
        &endpoint,
    ]);
    inbound.wait_until_printed("listening", Duration::from_secs(30));
    let mut outbound = rt.start(&[
        "bridge",
        "out",
        up.name(),
        "--key",
        &key,
        "--connect",
        &endpoint,
    ]);
    outbound.wait_until_printed("matched", Duration::from_secs(30));
    wait_for("the bootstrap", || down_journal.exists());
    publish(up.name(), &updates(101..=120));
    wait_for("the live updates", || {
        shmbus::stat::stat(down.name()).is_ok_and(|s| s.head == 120)
    });
    let (want, got) = (bootstrap_lines(up.name()), bootstrap_lines(down.name()));
    assert!(
        want.len() < 120,
        "the upstream journal was compacted: {want:?}"
    );
    assert_eq!(got, want, "the same records at the same sequences");
    let type_name = |bus: &str| rt.stat_json(bus)["type_name"].clone();
    assert_eq!(type_name(down.name()), json!("test.Line"));
    Bridges { inbound, outbound }.stop();
    assert_eq!(rt.files(), Vec::<String>::new(), "status files left");
    dir.finish();
}

/// The creation of bus `name` its frames name (`frame::Upstream`), read
/// from its header as a bridge-out reads it.
fn upstream_of(name: &str) -> Upstream {
    let h = shmbus::stat::stat(name).expect("stat").raw_header().clone();
    Upstream::from_header(h.created_ns, h.creator_pid, h.first_seq)
}

/// A Zenoh peer of the test's own on KEY, dialing `endpoint`: what a
/// broken or hostile bridge-out could put there. Matched (Zenoh sends a
/// put only to a matching subscriber) when made.
struct RawPeer {
    publisher: zenoh::pubsub::Publisher<'static>,
    _session: zenoh::Session,
}

impl RawPeer {
    fn new(endpoint: &str, key: &str) -> RawPeer {
        let session = shmbus_zenoh::session(&shmbus_zenoh::Endpoints {
            connect: vec![endpoint.to_owned()],
            ..Default::default()
        })
        .expect("a zenoh session");
        let publisher = session
            .declare_publisher(key.to_owned())
            .congestion_control(zenoh::qos::CongestionControl::Block)
            .wait()
            .expect("a zenoh publisher");
        wait_for("the raw peer to match the bridge-in", || {
            publisher
                .matching_status()
                .wait()
                .is_ok_and(|m| m.matching())
        });
        RawPeer {
            publisher,
            _session: session,
        }
    }

    fn put(&self, frame: &Frame<'_>) {
        self.publisher
            .put(frame.encode())
            .wait()
            .expect("a zenoh put");
    }
}

/// The bridges up, "first" across; then `hostile` put on the key by
/// another peer, then "second" published upstream. The bridge-in must
/// count the frame as bad and go on: "second" crosses at sequence 1, and
/// a downstream subscriber gets both, with no lag report.
fn a_hostile_frame_is_counted_and_the_bridge_in_goes_on(
    label: &str,
    hostile: impl FnOnce(Upstream) -> Frame<'static>,
) {
    let (up, down) = (
        BusName::new(&format!("bridge-{label}-up")),
        BusName::new(&format!("bridge-{label}-down")),
    );
    create(up.name(), "256");
    let key = format!("shmbus/test/{label}/{}", std::process::id());
    let rt = RuntimeDir::new(&format!("bridge-{label}"));
    let (mut b, endpoint) = bridges(&rt, up.name(), down.name(), &key);
    publish(up.name(), "first\n");
    wait_for("the downstream bus", || {
        shmbus::stat::stat(down.name()).is_ok_and(|s| s.published == 1)
    });
    let peer = RawPeer::new(&endpoint, &key);
    peer.put(&hostile(upstream_of(up.name())));
    let in_pid = b.inbound.pid();
    shmbus_testkit::wait_for(
        "the bridge-in to count the frame as bad",
        &mut [&mut b.inbound],
        || rt.status(in_pid).is_some_and(|s| s["bad_frames"] == 1),
    );
    publish(up.name(), "second\n");
    shmbus_testkit::wait_for(
        "the downstream bus to hold 2 messages",
        &mut [&mut b.inbound],
        || shmbus::stat::stat(down.name()).is_ok_and(|s| s.head == 2),
    );
    let out = shmbus(&[
        "sub",
        down.name(),
        "--from",
        "oldest",
        "--count",
        "2",
        "--timeout",
        "10",
    ]);
    out.assert_success();
    assert_eq!(out.stdout(), "first\nsecond\n");
    assert_eq!(out.stderr, "", "no lag report");
    wait_for("the bridge-in's status to count 2 messages", || {
        rt.status(in_pid).is_some_and(|s| {
            (&s["messages"], &s["lost"], &s["repeats"], &s["bad_frames"])
                == (&json!(2), &json!(0), &json!(0), &json!(1))
        })
    });
    drop(peer);
    b.stop();
    assert_eq!(rt.files(), Vec::<String>::new(), "status files left");
}

#[test]
fn a_frame_declaring_a_larger_message_size_is_dropped_and_counted() {
    // The next sequence, from a bus of 64-byte messages: the downstream's
    // are 32.
    a_hostile_frame_is_counted_and_the_bridge_in_goes_on("bigger", |upstream| Frame::Message {
        upstream,
        seq: 1,
        msg_size: 64,
        bytes: b"hostile",
    });
}

#[test]
fn a_frame_further_ahead_than_any_bus_can_skip_is_refused_whole() {
    // 2^60 + 1 ahead of the next sequence (1): no bus publishes that many,
    // so it is no loss to skip; taken for one, the mirror would skip 2^60
    // and drop every genuine frame after it as a repeat.
    a_hostile_frame_is_counted_and_the_bridge_in_goes_on("far", |upstream| Frame::Message {
        upstream,
        seq: 1 + shmbus::bus::SkipError::MAX + 1,
        msg_size: 32,
        bytes: b"far",
    });
}

#[test]
fn a_recreated_upstream_is_mirrored_again_continuing_the_downstream_sequence() {
    let (up, down) = (
        BusName::new("bridge-recreate-up"),
        BusName::new("bridge-recreate-down"),
    );
    create(up.name(), "256");
    let key = format!("shmbus/test/recreate/{}", std::process::id());
    let rt = RuntimeDir::new("bridge-recreate");
    let (b, endpoint) = bridges(&rt, up.name(), down.name(), &key);
    publish(up.name(), &common::numbered_lines(1..=100));
    wait_for("the downstream bus to hold 100 messages", || {
        shmbus::stat::stat(down.name()).is_ok_and(|s| s.published == 100)
    });
    // A subscriber downstream from the start, through what follows.
    let sub = common::start(&[
        "sub",
        down.name(),
        "--from",
        "oldest",
        "--count",
        "150",
        "--timeout",
        "10",
    ]);
    wait_until_waiting(down.name(), &sub);
    let before = upstream_of(up.name());
    // What a reboot of the upstream's host does: the bridge-out ends, the
    // bus is made again (its sequences start at 0 again), a bridge-out
    // starts on it.
    let Bridges {
        inbound,
        outbound: old,
    } = b;
    signal(&old, Signal::TERM);
    old.wait().assert_success();
    shmbus(&["rm", up.name()]).assert_success();
    create(up.name(), "256");
    assert_ne!(upstream_of(up.name()).instance, before.instance);
    let mut outbound = rt.start(&[
        "bridge",
        "out",
        up.name(),
        "--key",
        &key,
        "--connect",
        &endpoint,
    ]);
    outbound.wait_until_printed("matched", Duration::from_secs(30));
    publish(up.name(), &common::numbered_lines(101..=150));
    let out = sub.wait();
    out.assert_success();
    assert_eq!(
        out.stdout(),
        common::numbered_lines(1..=150),
        "the new creation's 50 follow the first 100"
    );
    assert_eq!(out.stderr, "", "no lag report: nothing was lost");
    let d = shmbus::stat::stat(down.name()).expect("stat down");
    assert_eq!(
        (d.first_seq, d.head),
        (0, 150),
        "the downstream sequence goes on: the new creation's 0..50 are 100..150"
    );
    let in_pid = inbound.pid();
    wait_for("the bridge-in's status to count 150 messages", || {
        rt.status(in_pid).is_some_and(|s| {
            (&s["messages"], &s["lost"], &s["repeats"], &s["bad_frames"])
                == (&json!(150), &json!(0), &json!(0), &json!(0))
        })
    });
    Bridges { inbound, outbound }.stop();
    assert_eq!(rt.files(), Vec::<String>::new(), "status files left");
}

#[test]
fn a_bridge_in_restarted_after_the_upstream_was_made_again_carries_on_its_sequence() {
    let (up, down) = (
        BusName::new("bridge-restart-recreate-up"),
        BusName::new("bridge-restart-recreate-down"),
    );
    create(up.name(), "256");
    let key = format!("shmbus/test/restart-recreate/{}", std::process::id());
    let rt = RuntimeDir::new("bridge-restart-recreate");
    let (b, endpoint) = bridges(&rt, up.name(), down.name(), &key);
    publish(up.name(), &common::numbered_lines(1..=100));
    wait_for("the downstream bus to hold 100 messages", || {
        shmbus::stat::stat(down.name()).is_ok_and(|s| s.published == 100)
    });
    let sub = common::start(&[
        "sub",
        down.name(),
        "--from",
        "oldest",
        "--count",
        "150",
        "--timeout",
        "15",
    ]);
    wait_until_waiting(down.name(), &sub);
    let before = upstream_of(up.name());
    // Both bridges end (the bridge-in hard: nothing of it runs at exit),
    // the upstream is made again (its sequences start at 0 again), and
    // both start afresh.
    let Bridges { inbound, outbound } = b;
    inbound.kill();
    signal(&outbound, Signal::TERM);
    outbound.wait().assert_success();
    shmbus(&["rm", up.name()]).assert_success();
    create(up.name(), "256");
    assert_ne!(upstream_of(up.name()).instance, before.instance);
    let mut inbound = rt.start(&[
        "bridge",
        "in",
        &key,
        down.name(),
        "--create",
        "256",
        "--listen",
        &endpoint,
    ]);
    inbound.wait_until_printed("listening", Duration::from_secs(30));
    let mut outbound = rt.start(&[
        "bridge",
        "out",
        up.name(),
        "--key",
        &key,
        "--connect",
        &endpoint,
    ]);
    outbound.wait_until_printed("matched", Duration::from_secs(30));
    let b = Bridges { inbound, outbound };
    publish(up.name(), &common::numbered_lines(101..=150));
    let out = sub.wait();
    out.assert_success();
    assert_eq!(
        out.stdout(),
        common::numbered_lines(1..=150),
        "the new creation's 50 follow the first 100"
    );
    assert_eq!(out.stderr, "", "no lag report: nothing was lost");
    let d = shmbus::stat::stat(down.name()).expect("stat down");
    assert_eq!((d.first_seq, d.head), (0, 150));
    let in_pid = b.inbound.pid();
    wait_for(
        "the restarted bridge-in's status to count 50 messages",
        || {
            rt.status(in_pid).is_some_and(|s| {
                (&s["messages"], &s["lost"], &s["repeats"], &s["bad_frames"])
                    == (&json!(50), &json!(0), &json!(0), &json!(0))
            })
        },
    );
    b.stop();
    // The state outlives the bridge-in (that is its use); one file, the
    // downstream bus's, private.
    let states: Vec<_> = std::fs::read_dir(rt.0.shmbus("bridge-in"))
        .expect("the state directory")
        .map(|e| e.expect("an entry").path())
        .collect();
    assert_eq!(states.len(), 1, "{states:?}");
    let meta = std::fs::metadata(&states[0]).expect("the state file");
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
}

#[test]
fn a_garbled_state_file_is_said_once_and_ignored_and_the_bridge_in_goes_on() {
    let (up, down) = (
        BusName::new("bridge-state-garbled-up"),
        BusName::new("bridge-state-garbled-down"),
    );
    create(up.name(), "256");
    let key = format!("shmbus/test/state-garbled/{}", std::process::id());
    let rt = RuntimeDir::new("bridge-state-garbled");
    let (b, endpoint) = bridges(&rt, up.name(), down.name(), &key);
    publish(up.name(), &common::numbered_lines(1..=10));
    wait_for("the downstream bus to hold 10 messages", || {
        shmbus::stat::stat(down.name()).is_ok_and(|s| s.published == 10)
    });
    b.stop();
    let dir = rt.0.shmbus("bridge-in");
    let states: Vec<_> = std::fs::read_dir(&dir)
        .expect("the state directory")
        .map(|e| e.expect("an entry").path())
        .collect();
    assert_eq!(states.len(), 1, "{states:?}");
    // What another process might leave there: not a state.
    std::fs::write(&states[0], b"shmbus-bridge-in-state 1\ndownstream x\n").expect("write");
    let mut inbound = rt.start(&[
        "bridge",
        "in",
        &key,
        down.name(),
        "--create",
        "256",
        "--listen",
        &endpoint,
    ]);
    inbound.wait_until_printed("listening", Duration::from_secs(30));
    let mut outbound = rt.start(&[
        "bridge",
        "out",
        up.name(),
        "--key",
        &key,
        "--connect",
        &endpoint,
    ]);
    outbound.wait_until_printed("matched", Duration::from_secs(30));
    publish(up.name(), &common::numbered_lines(11..=20));
    wait_for("the downstream bus to hold 20 messages", || {
        shmbus::stat::stat(down.name()).is_ok_and(|s| s.published == 20)
    });
    signal(&outbound, Signal::TERM);
    outbound.wait().assert_success();
    signal(&inbound, Signal::TERM);
    let out = inbound.wait();
    out.assert_success();
    let said: Vec<_> = out
        .stderr
        .lines()
        .filter(|l| l.contains("state file"))
        .collect();
    assert_eq!(said.len(), 1, "said once: {}", out.stderr);
    assert!(
        said[0].contains("line 2: expected downstream") && said[0].contains("ignored"),
        "{}",
        said[0]
    );
}

#[test]
fn bridge_in_refuses_options_create_refuses_before_it_listens() {
    let down = BusName::new("bridge-cap-down");
    let rt = RuntimeDir::new("bridge-cap");
    for capacity in ["3", "0"] {
        let create = shmbus(&[
            "create",
            down.name(),
            "--capacity",
            capacity,
            "--msg-size",
            "32",
        ]);
        let message = create.stderr.trim_end().to_owned();
        assert_ne!(
            create.code(),
            Some(0),
            "create --capacity {capacity}: {create:?}"
        );
        let endpoint = format!("tcp/127.0.0.1:{}", free_port());
        let out = rt.run(&[
            "bridge",
            "in",
            "shmbus/test/cap",
            down.name(),
            "--create",
            capacity,
            "--listen",
            &endpoint,
        ]);
        assert_eq!(out.stdout(), "", "it never says listening");
        assert_eq!(out.code(), create.code(), "{out:?}");
        let reason = message.rsplit(": ").next().expect("a reason");
        out.assert_error(create.code().expect("a code"), reason);
        assert!(std::fs::metadata(down.path()).is_err(), "no bus made");
    }
    // A journal in a directory that is not there.
    let endpoint = format!("tcp/127.0.0.1:{}", free_port());
    let journal = "/nonexistent-shmbus-dir/down.journal";
    let out = rt.run(&[
        "bridge",
        "in",
        "shmbus/test/cap",
        down.name(),
        "--create",
        "8",
        "--journal",
        journal,
        "--listen",
        &endpoint,
    ]);
    assert_eq!(out.stdout(), "", "it never says listening");
    out.assert_error(1, &format!("{journal}: resolve: No such file or directory"));
    assert!(std::fs::metadata(down.path()).is_err(), "no bus made");
    assert_eq!(rt.files(), Vec::<String>::new(), "status files left");
}

#[test]
fn a_bridge_ended_by_sighup_leaves_no_status() {
    let bus = BusName::new("bridge-hup");
    create(bus.name(), "8");
    let rt = RuntimeDir::new("bridge-hup");
    let key = format!("shmbus/test/hup/{}", std::process::id());
    let out = lone_bridge_out(&rt, bus.name(), &key);
    signal(&out, Signal::HUP);
    out.wait().assert_success();
    assert_eq!(rt.files(), Vec::<String>::new(), "status files left");
}

#[test]
fn a_bridge_is_shown_however_many_other_names_its_status_directory_holds() {
    let bus = BusName::new("bridge-many");
    create(bus.name(), "8");
    let rt = RuntimeDir::new("bridge-many");
    let key = format!("shmbus/test/many/{}", std::process::id());
    // Other names (none a status) until the bridge's file lies past the
    // first 4096 entries in the directory's own order, which a reader
    // once stopped at. The bridge holds still meanwhile, so that its
    // status is not written anew (a rename may move it in that order).
    // That order is the file system's: ext4 lists by a hash of the name,
    // so a name hashing low stays among the first entries however many
    // others come; a bridge whose status does is ended and another (a
    // new pid, so a new name) started in the same directory.
    let mut others = 0;
    let position = |status: &str| {
        std::fs::read_dir(rt.bridges())
            .expect("the status directory")
            .position(|e| e.expect("an entry").file_name().to_str() == Some(status))
            .expect("the bridge's status")
    };
    let mut tries = 0;
    let out = loop {
        let out = lone_bridge_out(&rt, bus.name(), &key);
        signal(&out, Signal::STOP);
        let status = format!("{}.json", out.pid());
        while position(&status) < 5000 && others < 40_000 {
            for i in others..others + 1000 {
                write(&rt.bridges().join(format!("other-{i}")), b"");
            }
            others += 1000;
        }
        if position(&status) >= 5000 {
            break out;
        }
        tries += 1;
        assert!(
            tries < 10,
            "{tries} bridges' statuses all stayed among the first entries"
        );
        signal(&out, Signal::CONT);
        signal(&out, Signal::TERM);
        out.wait().assert_success();
    };
    let stat = rt.stat_json(bus.name());
    assert_eq!(
        stat["bridges"].as_array().map(Vec::len),
        Some(1),
        "the bridge-out past {others} other names: {stat}"
    );
    signal(&out, Signal::CONT);
    signal(&out, Signal::TERM);
    out.wait().assert_success();
    for i in 0..others {
        let _ = std::fs::remove_file(rt.bridges().join(format!("other-{i}")));
    }
    assert_eq!(rt.files(), Vec::<String>::new(), "status files left");
}

/// `bridge out --lossless`: a bridge-out that cannot keep up
/// (held with SIGSTOP, as a network slower than the bus holds it in a
/// blocking put) holds the bus's publisher back instead of losing: let go
/// within the eviction timeout, every message crosses in order. Held past
/// it, the bus evicts it, it says `evicted`, and what it then misses is
/// counted and reaches the downstream subscribers as a lag, as a lossy
/// bridge's.
#[test]
fn a_lossless_bridge_out_holds_the_publisher_back_instead_of_losing_until_it_is_evicted() {
    let (up, down) = (
        BusName::new("bridge-lossless-up"),
        BusName::new("bridge-lossless-down"),
    );
    shmbus(&[
        "create",
        up.name(),
        "--msg-size",
        "32",
        "--slots",
        "8",
        "--evict-ms",
        "2000",
    ])
    .assert_success();
    let key = format!("shmbus/test/lossless/{}", std::process::id());
    let rt = RuntimeDir::new("bridge-lossless");
    let endpoint = format!("tcp/127.0.0.1:{}", free_port());
    let mut inbound = rt.start(&[
        "bridge",
        "in",
        &key,
        down.name(),
        "--create",
        "256",
        "--listen",
        &endpoint,
    ]);
    inbound.wait_until_printed("listening", Duration::from_secs(30));
    let mut outbound = rt.start(&[
        "bridge",
        "out",
        up.name(),
        "--key",
        &key,
        "--connect",
        &endpoint,
        "--lossless",
    ]);
    outbound.wait_until_printed("matched", Duration::from_secs(30));
    let published = |bus: &str| shmbus::stat::stat(bus).map_or(0, |s| s.published);
    publish(up.name(), "first\n");
    wait_for("the downstream bus", || published(down.name()) == 1);
    let contract = shmbus::stat::stat(up.name()).expect("stat").subscribers[0].contract;
    assert_eq!(contract, shmbus::stat::Contract::Lossless);

    // Held still, let go before the timeout: nothing lost.
    let sub = common::start(&["sub", down.name(), "--count", "100", "--timeout", "10"]);
    wait_until_waiting(down.name(), &sub);
    signal(&outbound, Signal::STOP);
    let mut publisher = common::start_with_stdin(&["pub", up.name()]);
    publisher.feed(common::numbered_lines(1..=100).into_bytes());
    // The bridge stands at 1 on a ring of 8: the publisher stops at 9.
    wait_for("the publisher to be held back", || {
        published(up.name()) == 9
    });
    let held = std::time::Instant::now();
    while held.elapsed() < Duration::from_millis(300) {
        assert_eq!(
            published(up.name()),
            9,
            "the publisher passed a stopped lossless bridge"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    signal(&outbound, Signal::CONT);
    publisher.wait_success();
    let out = sub.wait_success();
    assert_eq!(out.stdout(), common::numbered_lines(1..=100));
    assert!(!out.stderr.contains("lagged"), "{out:?}");

    // Held past the timeout: evicted, says so, its losses counted.
    let sub = common::start(&["sub", down.name(), "--timeout", "5"]);
    wait_until_waiting(down.name(), &sub);
    signal(&outbound, Signal::STOP);
    let started = std::time::Instant::now();
    publish(up.name(), &common::numbered_lines(1..=50));
    assert!(started.elapsed() >= Duration::from_secs(2), "evicted early");
    signal(&outbound, Signal::CONT);
    outbound.wait_until_printed("evicted", Duration::from_secs(30));
    let out = sub.wait_success();
    let got = out.stdout().lines().count() as u64;
    let skipped: u64 = out
        .stderr
        .lines()
        .filter_map(|l| l.strip_prefix("lagged: skipped "))
        .map(|n| n.parse::<u64>().expect("a count"))
        .sum();
    assert!(
        skipped > 0,
        "50 messages through 8 slots past an evicted bridge: {out:?}"
    );
    assert_eq!(got + skipped, 50, "{out:?}");
    let out_pid = outbound.pid();
    wait_for("the bridge-out's status to count the loss", || {
        rt.status(out_pid).and_then(|s| s["lost"].as_u64()) == Some(skipped)
    });
    Bridges { inbound, outbound }.stop();
    assert_eq!(rt.files(), Vec::<String>::new(), "status files left");
}
