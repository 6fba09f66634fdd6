//! `shmbus stat`, `ls` and `top` judging live and odd buses as
//! docs/LAYOUT.md says (§5.1, §13, §20, §19.6): no healthy subscriber or
//! stream called corrupt while its processes run flat out, a subscriber
//! one past the cursor and a journal joiner taken at their word, a corrupt
//! stream without a fill beside it, an unknown kind shown as unknown, a
//! dead holder's blocks shown reclaimable, and every bus of a directory
//! listed past the descriptor limit.
//!
//! Same ground rules as cli.rs: every child under the watchdog, names
//! unique to the test and removed at the end, waits on conditions with a
//! deadline.

mod common;

use std::io::Write;
use std::os::unix::fs::FileExt;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::{BusName, CliOutput, ShmDir, Watched, process_state, run, spawn, wait_for};
use serde_json::Value;
use shmbus::{BusOptions, OpenOptions, Received, Wait, pool};
use shmbus_testkit::{idle_until_killed, param, print_ready, role, spawn_child};

fn stat_json(bus: &str) -> Value {
    let done = run(common::shmbus(&["stat", bus, "--json"]));
    done.assert_success();
    done.json()
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a u64: {v}"))
}

/// Writes lines into `stdin` as fast as the pipe takes them, until stopped.
struct FlatOut {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FlatOut {
    fn start(mut stdin: std::process::ChildStdin) -> FlatOut {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let chunk = "0123456\n".repeat(8192).into_bytes();
        let thread = std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                if stdin.write_all(&chunk).is_err() {
                    return;
                }
            }
        });
        FlatOut {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for FlatOut {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// `shmbus pub NAME`, fed flat out.
fn flat_out_publisher(name: &str) -> (Watched, FlatOut) {
    let mut cmd = common::shmbus(&["pub", name]);
    cmd.stdin(Stdio::piped());
    let mut publisher = spawn(cmd);
    let feed = FlatOut::start(publisher.take_stdin());
    (publisher, feed)
}

/// `shmbus sub NAME`, its output thrown away (it must never wait on a
/// pipe: it keeps up with the publisher as a healthy subscriber does).
fn silent_subscriber(name: &str, wait: &str) -> Watched {
    let mut cmd = common::shmbus(&["sub", name, "--wait", wait]);
    cmd.stdout(Stdio::null());
    spawn(cmd)
}

/// Runs `stat` (the library, and every `cli_every`th time the CLI's
/// `stat --json`) on `name` for `for_how_long` while it runs flat out, and
/// returns every reason for "corrupt" it was given, with how many reads.
fn corrupt_seen_under_load(name: &str, subs: &[u32], for_how_long: Duration) -> (Vec<String>, u64) {
    let (mut seen, mut reads) = (Vec::new(), 0u64);
    let end = Instant::now() + for_how_long;
    while Instant::now() < end {
        let s = shmbus::stat::stat(name).expect("stat");
        for l in s.subscribers.iter().filter(|l| subs.contains(&l.pid)) {
            if let Some(why) = &l.corrupt {
                seen.push(why.clone());
            }
        }
        reads += 1;
        if reads % 200 == 0 {
            let json = stat_json(name);
            for l in json["per_subscriber"].as_array().expect("per_subscriber") {
                if !l["corrupt"].is_null() {
                    seen.push(format!("stat --json: {}", l["corrupt"]));
                }
            }
        }
    }
    (seen, reads)
}

fn live_subscribers_are_never_corrupt_under_a_flat_out_publisher(extra: &[&str], label: &str) {
    let bus = BusName::new(label);
    let name = bus.name();
    let mut create = vec!["create", name, "--msg-size", "8", "--capacity", "4096"];
    create.extend_from_slice(extra);
    run(common::shmbus(&create)).assert_success();
    let subs: Vec<Watched> = (0..3)
        .map(|i| silent_subscriber(name, if i == 0 { "spin" } else { "futex" }))
        .collect();
    let pids: Vec<u32> = subs.iter().map(Watched::pid).collect();
    wait_for("the subscribers to register", || {
        shmbus::stat::stat(name).is_ok_and(|s| {
            pids.iter()
                .all(|p| s.subscribers.iter().any(|l| l.pid == *p))
        })
    });
    let (publisher, feed) = flat_out_publisher(name);
    wait_for("messages to flow", || {
        shmbus::stat::stat(name).is_ok_and(|s| s.published > 100_000)
    });
    let before = shmbus::stat::stat(name).expect("stat").published;
    let (corrupt, reads) = corrupt_seen_under_load(name, &pids, Duration::from_secs(4));
    let moved = shmbus::stat::stat(name).expect("stat").published - before;
    assert!(
        moved > 100_000,
        "the publisher ran flat out: {moved} messages"
    );
    assert!(
        corrupt.is_empty(),
        "{} of {reads} reads called a live subscriber corrupt, e.g. {:?}",
        corrupt.len(),
        &corrupt[..corrupt.len().min(3)]
    );
    drop(feed);
    publisher.kill();
    for s in subs {
        s.kill();
    }
    bus.finish();
}

#[test]
fn stat_never_calls_a_live_subscriber_corrupt_while_a_publisher_runs_flat_out() {
    live_subscribers_are_never_corrupt_under_a_flat_out_publisher(&[], "live-plain");
}

#[test]
fn stat_never_calls_a_live_subscriber_of_a_multi_publisher_bus_corrupt_under_load() {
    live_subscribers_are_never_corrupt_under_a_flat_out_publisher(
        &["--publishers", "many"],
        "live-many",
    );
}

#[test]
fn stat_never_calls_a_stream_corrupt_while_both_sides_run_flat_out() {
    let bus = BusName::new("live-stream");
    let name = bus.name();
    run(common::shmbus(&[
        "create",
        name,
        "--kind",
        "stream",
        "--capacity",
        "4096",
    ]))
    .assert_success();
    let consumer = silent_subscriber(name, "spin");
    let (producer, feed) = flat_out_publisher(name);
    wait_for("records to flow", || {
        shmbus::stat::stat(name).is_ok_and(|s| s.published > 1 << 20)
    });
    let end = Instant::now() + Duration::from_secs(3);
    let (mut corrupt, mut reads) = (0, 0);
    while Instant::now() < end {
        let s = shmbus::stat::stat(name).expect("stat");
        let st = s.stream.expect("a stream");
        if st.corrupt {
            corrupt += 1;
        }
        assert!(st.fill <= 4096, "a fill within the capacity: {st:?}");
        reads += 1;
    }
    assert_eq!(
        corrupt, 0,
        "{corrupt} of {reads} reads called a live stream corrupt"
    );
    drop(feed);
    producer.kill();
    consumer.kill();
    bus.finish();
}

#[test]
fn a_stream_with_impossible_cursors_is_corrupt_with_no_fill_beside_it() {
    let bus = BusName::new("corrupt-stream");
    let name = bus.name();
    run(common::shmbus(&[
        "create",
        name,
        "--kind",
        "stream",
        "--capacity",
        "4096",
    ]))
    .assert_success();
    // TAIL (control offset 0) a long way past HEAD + capacity.
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(bus.path())
        .expect("open the stream's file");
    let control = 4096;
    file.write_all_at(&(1u64 << 40).to_le_bytes(), control)
        .expect("write TAIL");
    let json = stat_json(name);
    assert_eq!(json["corrupt"], true, "{json}");
    assert!(json["fill"].is_null(), "no fill beside corrupt: {json}");
    let top = run(common::shmbus(&[
        "top",
        name,
        "--once",
        "--json",
        "--interval-ms",
        "10",
    ]));
    top.assert_success();
    let stream = &top.json()["buses"][0]["stream"];
    assert_eq!(stream["corrupt"], true, "{stream}");
    assert!(stream["fill"].is_null(), "no fill beside corrupt: {stream}");
    bus.finish();
}

#[test]
fn a_subscriber_one_past_the_cursor_is_honest_not_corrupt() {
    // What a publisher leaves that dies between stamping slot `head` done
    // and storing the cursor (LAYOUT §11, §13): the stamp, no cursor.
    let bus = BusName::new("one-past");
    let name = bus.name();
    run(common::shmbus(&[
        "create",
        name,
        "--msg-size",
        "8",
        "--capacity",
        "8",
    ]))
    .assert_success();
    let sub = silent_subscriber(name, "spin");
    let pid = sub.pid();
    wait_for("the subscriber to register", || {
        shmbus::stat::stat(name).is_ok_and(|s| s.subscribers.iter().any(|l| l.pid == pid))
    });
    let s = shmbus::stat::stat(name).expect("stat");
    let (head, h) = (s.head, s.raw_header());
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(bus.path())
        .expect("open the bus's file");
    let slot = h.data_offset + (head % h.capacity) * u64::from(h.slot_size);
    file.write_all_at(&(2 * head + 2).to_le_bytes(), slot)
        .expect("stamp the slot done");
    wait_for("the subscriber to read the slot", || {
        shmbus::stat::stat(name).is_ok_and(|s| {
            s.subscribers
                .iter()
                .any(|l| l.pid == pid && l.position == head + 1)
        })
    });
    let json = stat_json(name);
    let line = &json["per_subscriber"][0];
    assert!(
        line["corrupt"].is_null(),
        "one past the cursor is honest: {json}"
    );
    assert_eq!((u(&line["lag"]), u(&line["delivered"])), (0, 1), "{json}");
    sub.kill();
    bus.finish();
}

#[test]
fn a_journal_joiner_on_a_bus_that_continues_its_journal_is_not_corrupt() {
    let dir = ShmDir::new("joiner");
    let name = dir.bus("journaled");
    // In the test's directory: removed with it, whatever happens.
    let journal = dir.file("journal");
    let journal_arg = journal.to_str().expect("UTF-8");
    let create = || {
        run(common::shmbus(&[
            "create",
            &name,
            "--msg-size",
            "8",
            "--capacity",
            "64",
            "--journal",
            journal_arg,
        ]))
        .assert_success();
    };
    create();
    common::publish(&name, &common::numbered_lines(0..=20));
    run(common::shmbus(&["rm", &name])).assert_success();
    // The new bus continues the journal: its first sequence is 21.
    create();
    common::publish(&name, &common::numbered_lines(21..=23));
    let json = stat_json(&name);
    assert_eq!(u(&json["first_seq"]), 21, "{json}");
    let mut cmd = common::shmbus(&["sub", &name, "--bootstrap"]);
    cmd.stdout(Stdio::null());
    let sub = spawn(cmd);
    let pid = sub.pid();
    wait_for("the joiner to read all 24", || {
        shmbus::stat::stat(&name).is_ok_and(|s| {
            s.subscribers
                .iter()
                .any(|l| l.pid == pid && l.position == 24)
        })
    });
    let json = stat_json(&name);
    let line = &json["per_subscriber"][0];
    assert!(
        line["corrupt"].is_null(),
        "a joiner starts at the journal's base: {json}"
    );
    assert_eq!(
        (u(&line["delivered"]), u(&line["skipped"]), u(&line["lag"])),
        (24, 0, 0),
        "{json}"
    );
    // While it reads the older records it stands below first_seq: what
    // its line says then (the joiner waits for a message and leaves the
    // line alone). Line 0 is at control offset 4096, control at 4096.
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&name)
        .expect("open the bus's file");
    let line = 4096 + 4096;
    file.write_all_at(&5u64.to_le_bytes(), line)
        .expect("write the position");
    let json = stat_json(&name);
    let line = &json["per_subscriber"][0];
    assert!(
        line["corrupt"].is_null(),
        "reading the older records: {json}"
    );
    assert_eq!((u(&line["delivered"]), u(&line["lag"])), (5, 19), "{json}");
    sub.kill();
    dir.finish();
}

#[test]
fn a_segment_of_an_unknown_kind_is_shown_as_unknown_not_as_a_broadcast_bus() {
    let bus = BusName::new("unknown-kind");
    let name = bus.name();
    run(common::shmbus(&[
        "create",
        name,
        "--msg-size",
        "8",
        "--capacity",
        "8",
    ]))
    .assert_success();
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(bus.path())
        .expect("open the bus's file");
    file.write_all_at(&7u32.to_le_bytes(), 12)
        .expect("write kind");
    let json = stat_json(name);
    assert_eq!(json["kind"], "unknown (7)", "{json}");
    for key in ["published", "per_subscriber", "slots", "head"] {
        assert!(json.get(key).is_none(), "no broadcast figure {key}: {json}");
    }
    let text = run(common::shmbus(&["stat", name]));
    text.assert_success();
    let out = text.stdout();
    assert!(out.contains("unknown (7)"), "{out}");
    assert!(
        !out.contains("slots") && !out.contains("published"),
        "{out}"
    );
    bus.finish();
}

#[test]
fn as_child_pool_sample_holder() {
    role("pool-sample-holder", || {
        let name: String = param("BUS");
        let hold: usize = param("HOLD");
        let mut s = pool::Subscriber::<[u8]>::open(&name, &OpenOptions::default()).expect("open");
        print_ready();
        let mut held = Vec::new();
        while held.len() < hold {
            if let Ok(Some(Received::Message(m))) = s.recv(Wait::For(Duration::from_secs(5))) {
                held.push(m);
            }
        }
        println!("HELD");
        idle_until_killed();
    });
}

#[test]
fn a_killed_subscriber_s_pool_blocks_are_shown_reclaimable_not_held() {
    let bus = BusName::new("pool-dead-holder");
    let name = bus.name();
    // 8 slots, 16 blocks: the holder's 8 go off the ring as 8 more come.
    let mut p =
        shmbus::pool::Publisher::<[u8]>::create(name, &shmbus::pool::Options::new(8, 64, 16))
            .expect("create");
    let mut holder = spawn_child(
        "as_child_pool_sample_holder",
        "pool-sample-holder",
        &[("BUS", name.to_string()), ("HOLD", "8".into())],
    );
    holder.wait_ready();
    let publish = |p: &mut shmbus::pool::Publisher<[u8]>, n| {
        for _ in 0..n {
            p.loan(8, Wait::Never)
                .expect("a free block")
                .publish()
                .expect("published");
        }
    };
    publish(&mut p, 8);
    holder.wait_until_printed("HELD", Duration::from_secs(20));
    publish(&mut p, 8);
    let census = |json: &Value, key: &str| u(&json["pool"]["census"][key]);
    let json = stat_json(name);
    assert_eq!(
        (census(&json, "held"), census(&json, "reclaimable")),
        (8, 0),
        "{json}"
    );
    let f = holder.kill();
    assert_eq!(f.signal(), Some(libc::SIGKILL), "{}", f.output());
    let json = stat_json(name);
    assert_eq!(
        (census(&json, "held"), census(&json, "reclaimable")),
        (0, 8),
        "a dead subscriber's holds are reclaimable: {json}"
    );
    let line = &json["per_subscriber"][0];
    assert_eq!(line["alive"], false, "{json}");
    assert_eq!(
        (u(&line["held_blocks"]), u(&line["reclaimable_blocks"])),
        (0, 8),
        "{json}"
    );
    let top = run(common::shmbus(&[
        "top",
        name,
        "--once",
        "--json",
        "--interval-ms",
        "10",
    ]));
    top.assert_success();
    let pool = &top.json()["buses"][0]["pool"];
    assert_eq!(
        (u(&pool["census"]["held"]), u(&pool["in_use"])),
        (0, 8),
        "on ring only: {pool}"
    );
    let prom = run(common::shmbus(&[
        "top",
        name,
        "--prometheus",
        "--interval-ms",
        "10",
    ]));
    prom.assert_success();
    let held_line = prom
        .stdout()
        .lines()
        .find(|l| l.starts_with("shmbus_pool_blocks{") && l.contains("state=\"held\""))
        .map(str::to_owned)
        .unwrap_or_else(|| panic!("no held blocks sample: {}", prom.stdout()));
    assert!(held_line.ends_with(" 0"), "{held_line}");
    drop(p);
    bus.finish();
}

#[test]
fn ls_and_top_list_every_bus_of_a_directory_past_the_descriptor_limit() {
    let dir = ShmDir::new("many-buses");
    const BUSES: usize = 150;
    for i in 0..BUSES {
        drop(
            shmbus::Publisher::<u64>::create(&dir.bus(&format!("bus{i:03}")), &BusOptions::new(1))
                .expect("create"),
        );
    }
    let exe = env!("CARGO_BIN_EXE_shmbus");
    let limited = |args: &str| {
        let mut cmd = std::process::Command::new("bash");
        cmd.args(["-c", &format!("ulimit -n 64 && exec '{exe}' {args}")])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let done = run(cmd);
        done.assert_success();
        done
    };
    let d = dir.dir();
    let ls = limited(&format!("ls --dir '{d}' --json")).json();
    let listed = ls.as_array().expect("an array");
    assert_eq!(listed.len(), BUSES, "every bus listed");
    assert!(
        listed.iter().all(|b| b.get("error").is_none()),
        "none failed: {ls}"
    );
    let top = limited(&format!("top --once --json --interval-ms 10 --dir '{d}'")).json();
    let buses = top["buses"].as_array().expect("buses");
    assert_eq!(buses.len(), BUSES, "every bus in top --json");
    assert!(
        buses.iter().all(|b| b.get("error").is_none()),
        "none failed: {top}"
    );
    let prom = limited(&format!("top --prometheus --interval-ms 10 --dir '{d}'")).stdout();
    let up = prom.lines().filter(|l| l.starts_with("shmbus_up{")).count();
    assert_eq!(up, BUSES, "every bus scraped:\n{prom}");
    dir.finish();
}

#[test]
fn top_says_lapped_for_a_subscriber_a_ring_behind_and_fits_its_lag() {
    let bus = BusName::new("top-lapped");
    let name = bus.name();
    run(common::shmbus(&[
        "create",
        name,
        "--msg-size",
        "8",
        "--capacity",
        "8",
    ]))
    .assert_success();
    let sub = spawn(common::shmbus(&["sub", name, "--wait", "futex"]));
    let pid = sub.pid();
    wait_for("the subscriber to register", || {
        shmbus::stat::stat(name).is_ok_and(|s| s.subscribers.iter().any(|l| l.pid == pid))
    });
    wait_for("the subscriber to sleep", || {
        process_state(pid) == Some('S')
    });
    common::signal(&sub, rustix::process::Signal::STOP);
    wait_for("the subscriber to stop", || process_state(pid) == Some('T'));
    common::publish(name, &common::numbered_lines(1..=100));
    let top = run(common::shmbus(&[
        "top",
        name,
        "--once",
        "--json",
        "--interval-ms",
        "10",
    ]));
    top.assert_success();
    let line = &top.json()["buses"][0]["subscribers"][0];
    assert_eq!(
        (line["lapped"].clone(), line["near_lap"].clone()),
        (Value::Bool(true), Value::Bool(false)),
        "{line}"
    );
    let json = stat_json(name);
    assert_eq!(json["per_subscriber"][0]["lapped"], true, "{json}");
    let text = run(common::shmbus(&[
        "top",
        name,
        "--once",
        "--interval-ms",
        "10",
    ]));
    text.assert_success();
    let out = text.stdout();
    let row = out
        .lines()
        .find(|l| l.trim_start().starts_with(&pid.to_string()))
        .unwrap_or_else(|| panic!("no row for {pid}: {out}"));
    assert!(row.contains("lapped") && !row.contains("near lap"), "{row}");
    assert!(row.contains(">100%") && !row.contains("1250.0%"), "{row}");
    common::signal(&sub, rustix::process::Signal::CONT);
    sub.kill();
    bus.finish();
}

/// `stat --json` and `stat` say each subscriber's contract, and how often
/// the publisher evicted a lossless one; the bus says what it allows.
#[test]
fn stat_shows_each_subscribers_contract_and_evictions() {
    let bus = BusName::new("stat-contract");
    let evict = Duration::from_millis(20);
    let mut publisher = shmbus::Publisher::<u64>::create(
        bus.name(),
        &BusOptions::new(4)
            .lossless_subscribers(3)
            .evict_after(evict),
    )
    .expect("create");
    let _lossy = shmbus::Subscriber::<u64>::open(bus.name(), &OpenOptions::default()).unwrap();
    let lossless =
        shmbus::Subscriber::<u64>::open(bus.name(), &OpenOptions::default().lossless(true))
            .unwrap();
    let contracts = |v: &Value| -> Vec<(String, u64)> {
        v["per_subscriber"]
            .as_array()
            .expect("per_subscriber")
            .iter()
            .map(|l| {
                (
                    l["contract"].as_str().unwrap().to_owned(),
                    u(&l["evictions"]),
                )
            })
            .collect()
    };
    let v = stat_json(bus.name());
    assert_eq!(u(&v["lossless"]["max"]), 3);
    assert_eq!(u(&v["lossless"]["evict_ns"]), 20_000_000);
    assert_eq!(contracts(&v), [("lossy".into(), 0), ("lossless".into(), 0)]);
    // A ring and one more: the lossless one, reading nothing, is evicted.
    for i in 0..5 {
        publisher.publish(&i);
    }
    assert!(!lossless.is_lossless());
    let v = stat_json(bus.name());
    assert_eq!(contracts(&v), [("lossy".into(), 0), ("evicted".into(), 1)]);
    let blocked = u(&v["per_subscriber"][1]["publisher_blocked_ns"]);
    assert!(blocked >= 20_000_000, "blocked {blocked} ns");
    let text = run(common::shmbus(&["stat", bus.name()]));
    text.assert_success();
    assert!(
        text.stdout()
            .contains("lossless, evicted, evicted 1×, held the publisher back 0.0"),
        "{}",
        text.stdout()
    );
    assert!(
        text.stdout()
            .contains("lossless:       at most 3, evicted after 0.020 s"),
        "{}",
        text.stdout()
    );
    drop(publisher);
    bus.finish();
}

/// A lossless subscriber that has gone (its registry lock free) shows as
/// gone like any other dead entry, not as evicted: `stat --json` says the
/// contract it left with (`lossless`, no eviction), `stat` just "(gone)".
#[test]
fn a_lossless_subscriber_that_has_gone_shows_as_gone_not_evicted() {
    let bus = BusName::new("stat-lossless-gone");
    let mut publisher =
        shmbus::Publisher::<u64>::create(bus.name(), &BusOptions::new(8)).expect("create");
    let sub = common::spawn(common::shmbus(&[
        "sub",
        bus.name(),
        "--lossless",
        "--count",
        "1",
        "--timeout",
        "10",
    ]));
    common::wait_until_waiting(bus.name(), &sub);
    publisher.publish(&7);
    let pid = sub.pid();
    sub.wait_success();
    let v = stat_json(bus.name());
    let lines = v["per_subscriber"].as_array().expect("per_subscriber");
    assert_eq!(lines.len(), 1, "{v}");
    let line = &lines[0];
    assert_eq!(line["pid"], pid, "{v}");
    assert_eq!(line["alive"], false, "{v}");
    assert_eq!(line["contract"], "lossless", "{v}");
    assert_eq!(u(&line["evictions"]), 0, "{v}");
    let text = run(common::shmbus(&["stat", bus.name()]));
    text.assert_success();
    let row = text
        .stdout()
        .lines()
        .find(|l| l.contains(&format!("pid {pid} (gone)")))
        .map(str::to_owned)
        .unwrap_or_else(|| panic!("no gone row: {}", text.stdout()));
    assert!(
        !row.contains("evicted") && !row.contains("lossless"),
        "{row}"
    );
    drop(publisher);
    bus.finish();
}
