//! `shmbus stat --json`, `shmbus top --once --json` and `--prometheus`
//! against real processes: a publisher fed at a steady rate, two
//! subscribers that keep up, one stopped (SIGSTOP: a subscriber that does
//! not read, deterministically) and one killed with SIGKILL.
//!
//! A pool bus is set up by `common::PoolScene`, its publisher and a
//! subscriber that holds samples in the test process itself, so that
//! every block is where the test put it.
//!
//! `top --listen` is scraped behind more idle connections than it serves
//! at once, and its pause between samples read from its own series.
//!
//! Same ground rules as cli.rs: every child under the watchdog, a bus name
//! unique to the test and removed on drop, waits on conditions with a
//! deadline, never sleeps that hope.

mod common;

use std::io::Write;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::{
    BusName, CliOutput, HotBoard, PoolScene, Watched, process_state, run, spawn, wait_for,
};
use serde_json::Value;

fn shmbus_json(args: &[&str]) -> Value {
    let done = run(common::shmbus(args));
    done.assert_success();
    done.json()
}

fn stat_json(bus: &str) -> Value {
    shmbus_json(&["stat", bus, "--json"])
}

/// The `per_subscriber` entry of `pid` in a `stat --json` object.
fn line_of(stat: &Value, pid: u32) -> Value {
    stat["per_subscriber"]
        .as_array()
        .expect("per_subscriber")
        .iter()
        .find(|l| l["pid"] == pid)
        .cloned()
        .unwrap_or_else(|| panic!("no line for pid {pid} in {stat}"))
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a u64: {v}"))
}

fn signal(proc: &Watched, sig: rustix::process::Signal) {
    let pid = rustix::process::Pid::from_raw(proc.pid() as i32).expect("nonzero pid");
    rustix::process::kill_process(pid, sig).expect("kill");
}

/// Feeds the publisher `per_tick` lines every 10 ms, on absolute deadlines
/// (a late tick catches up), until stopped.
struct Pacer {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Pacer {
    fn start(mut stdin: std::process::ChildStdin, per_tick: usize) -> Pacer {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let tick = Duration::from_millis(10);
            let mut next = Instant::now();
            let mut i = 0u64;
            while !flag.load(Ordering::Relaxed) {
                let mut chunk = String::new();
                for _ in 0..per_tick {
                    chunk.push_str(&format!("{i}\n"));
                    i += 1;
                }
                if stdin.write_all(chunk.as_bytes()).is_err() {
                    return;
                }
                next += tick;
                if let Some(left) = next.checked_duration_since(Instant::now()) {
                    std::thread::sleep(left);
                }
            }
        });
        Pacer {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Pacer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Starts `shmbus sub BUS` and waits until it is registered and asleep on
/// the futex, so it sees everything published from then on.
fn subscriber(bus: &str) -> Watched {
    let sub = spawn(common::shmbus(&["sub", bus, "--wait", "futex"]));
    let pid = sub.pid();
    wait_for("the subscriber to register", || {
        shmbus::stat::stat(bus).is_ok_and(|s| s.subscribers.iter().any(|l| l.pid == pid))
    });
    wait_for("the subscriber to sleep", || {
        process_state(pid) == Some('S')
    });
    sub
}

/// The sum of the `lagged: skipped N` lines a subscriber printed.
fn lag_reported(sub: &Watched) -> u64 {
    sub.output_and_errors_so_far()
        .lines()
        .filter_map(|l| l.strip_prefix("lagged: skipped "))
        .map(|n| n.trim().parse::<u64>().expect("a count"))
        .sum()
}

#[test]
fn stat_and_top_follow_each_subscriber_its_lag_its_losses_and_its_death() {
    let bus = BusName::new("top-procs");
    let name = bus.name();
    run(common::shmbus(&[
        "create",
        name,
        "--msg-size",
        "16",
        "--capacity",
        "1024",
    ]))
    .assert_success();
    let fast = [subscriber(name), subscriber(name)];
    let slow = subscriber(name);
    let doomed = subscriber(name);
    let mut cmd = common::shmbus(&["pub", name]);
    cmd.stdin(Stdio::piped());
    let mut publisher = spawn(cmd);
    // 200 lines per 10 ms: 20 000 messages a second.
    let pacer = Pacer::start(publisher.take_stdin(), 200);

    // The killed subscriber is gone: its line stays, marked not alive.
    doomed.kill();
    let published = |s: &Value| u(&s["published"]);
    let start = published(&stat_json(name));
    wait_for("messages to flow", || {
        published(&stat_json(name)) > start + 500
    });

    // The stopped one falls behind, more with every sample.
    signal(&slow, rustix::process::Signal::STOP);
    let before = stat_json(name);
    wait_for("the stopped subscriber to fall a whole ring behind", || {
        let s = stat_json(name);
        u(&line_of(&s, slow.pid())["lag"]) > 2 * 1024
    });
    let after = stat_json(name);
    let (lag0, lag1) = (
        u(&line_of(&before, slow.pid())["lag"]),
        u(&line_of(&after, slow.pid())["lag"]),
    );
    assert!(
        lag1 > lag0,
        "the stopped subscriber's lag grew: {lag0} -> {lag1}"
    );
    for f in &fast {
        let line = line_of(&after, f.pid());
        assert!(u(&line["lag"]) < 512, "a live subscriber keeps up: {line}");
        assert_eq!(line["alive"], true);
        assert_eq!(line["corrupt"], Value::Null);
    }
    let dead: Vec<&Value> = after["per_subscriber"]
        .as_array()
        .expect("array")
        .iter()
        .filter(|l| l["alive"] == false)
        .collect();
    assert_eq!(dead.len(), 1, "exactly the killed one is gone: {after}");
    assert_eq!(u(&after["subscribers"]), 3);

    // top over one second, beside what the publisher did meanwhile.
    let (t0, p0) = (Instant::now(), published(&stat_json(name)));
    let top = shmbus_json(&["top", name, "--once", "--json", "--interval-ms", "1000"]);
    let (t1, p1) = (Instant::now(), published(&stat_json(name)));
    let done_rate = (p1 - p0) as f64 / (t1 - t0).as_secs_f64();
    assert_eq!(top["schema"], "shmbus-top/2");
    let b = &top["buses"][0];
    assert_eq!(b["name"], name);
    let rate = b["msgs_per_sec"].as_f64().expect("a rate");
    assert!(
        (rate / done_rate - 1.0).abs() < 0.10,
        "top's rate {rate:.0}/s is within 10% of the publisher's {done_rate:.0}/s"
    );
    let subs = b["subscribers"].as_array().expect("subscribers");
    for f in &fast {
        let s = subs.iter().find(|s| s["pid"] == f.pid()).expect("listed");
        let r = s["msgs_per_sec"].as_f64().expect("a rate");
        assert!(
            (r / rate - 1.0).abs() < 0.10,
            "a live subscriber's rate {r:.0} vs {rate:.0}"
        );
        assert!(s["proc"]["cpu_percent"].is_number(), "{s}");
    }
    let s = subs
        .iter()
        .find(|s| s["pid"] == slow.pid())
        .expect("listed");
    // Two rings behind: lapped already, not "near lap".
    assert_eq!(
        (&s["lapped"], &s["near_lap"]),
        (&Value::Bool(true), &Value::Bool(false)),
        "{s}"
    );
    assert_eq!(s["msgs_per_sec"].as_f64(), Some(0.0), "{s}");

    // Prometheus: the same figures, one series per subscriber.
    let prom = run(common::shmbus(&[
        "top",
        name,
        "--prometheus",
        "--interval-ms",
        "50",
    ]));
    prom.assert_success();
    let text = prom.stdout();
    assert!(
        text.contains(&format!("shmbus_published_total{{bus=\"{name}\"}}")),
        "{text}"
    );
    for pid in [fast[0].pid(), fast[1].pid(), slow.pid()] {
        assert!(
            text.contains(&format!(
                "shmbus_subscriber_lag{{bus=\"{name}\",pid=\"{pid}\""
            )),
            "{text}"
        );
    }

    // Let the stopped one go: it is lapped, told how much it lost, and
    // its line's skipped count is exactly the sum of what it was told.
    signal(&slow, rustix::process::Signal::CONT);
    drop(pacer);
    publisher.close_stdin();
    publisher.wait_success();
    wait_for("the slow subscriber to catch up", || {
        u(&line_of(&stat_json(name), slow.pid())["lag"]) == 0
    });
    let line = line_of(&stat_json(name), slow.pid());
    let skipped = u(&line["skipped"]);
    assert!(skipped > 0, "it was lapped: {line}");
    wait_for("its lag reports to reach stderr", || {
        lag_reported(&slow) == skipped
    });
    // All three registered before the first message: every message
    // published is delivered or skipped, exactly.
    let end = stat_json(name);
    for s in [&fast[0], &fast[1], &slow] {
        let l = line_of(&end, s.pid());
        assert_eq!(u(&l["lag"]), 0, "{l}");
        assert_eq!(
            u(&l["delivered"]) + u(&l["skipped"]),
            published(&end),
            "{l}"
        );
    }
    for s in fast {
        s.kill();
    }
    slow.kill();
    bus.finish();
}

#[test]
fn top_once_shows_a_corrupt_bus_as_a_line_and_goes_on() {
    let good = BusName::new("top-good");
    let bad = BusName::new("top-bad");
    for b in [&good, &bad] {
        run(common::shmbus(&[
            "create",
            b.name(),
            "--msg-size",
            "8",
            "--capacity",
            "8",
        ]))
        .assert_success();
    }
    // A layout version no build wrote.
    std::fs::OpenOptions::new()
        .write(true)
        .open(bad.path())
        .and_then(|f| std::os::unix::fs::FileExt::write_at(&f, &99u32.to_le_bytes(), 8))
        .expect("patch the version");
    let top = shmbus_json(&[
        "top",
        good.name(),
        bad.name(),
        "--once",
        "--json",
        "--interval-ms",
        "10",
    ]);
    let buses = top["buses"].as_array().expect("buses");
    assert_eq!(buses.len(), 2);
    let row = |n: &str| {
        buses
            .iter()
            .find(|b| b["name"] == n)
            .expect("listed")
            .clone()
    };
    assert!(
        row(bad.name())["error"]
            .as_str()
            .is_some_and(|e| e.contains("version 99"))
    );
    assert_eq!(row(good.name())["slots"], 8);
    good.finish();
    bad.finish();
}

#[test]
fn top_json_and_prometheus_show_a_pool_bus_s_census_and_the_blocks_each_subscriber_holds() {
    let scene = PoolScene::new("top-pool");
    let me = std::process::id();
    let top = shmbus_json(&[
        "top",
        "--dir",
        scene.dir.dir(),
        "--once",
        "--json",
        "--interval-ms",
        "50",
    ]);
    assert_eq!(top["schema"], "shmbus-top/2");
    let bus = |n: &str| {
        top["buses"]
            .as_array()
            .expect("buses")
            .iter()
            .find(|b| b["name"] == n)
            .unwrap_or_else(|| panic!("no bus {n} in {top}"))
            .clone()
    };
    let pool = bus("pool");
    assert_eq!(
        pool["pool"],
        serde_json::json!({
            "block_size": 256,
            "blocks": 8,
            "census": {
                "free": 3, "loaned": 0, "on_ring": 4, "held": 1, "reclaimable": 0, "corrupt": 0,
            },
            "in_use": 5,
            "occupancy": 0.625,
        }),
        "{pool}"
    );
    // Its slots carry 16-byte descriptors, not the messages: no byte rate.
    assert_eq!(pool["bytes_per_sec"], Value::Null, "{pool}");
    assert_eq!(pool["msgs_per_sec"].as_f64(), Some(0.0), "{pool}");
    let subs = pool["subscribers"].as_array().expect("subscribers");
    assert_eq!(subs.len(), 2, "{pool}");
    let holder = subs.iter().find(|s| s["pid"] == me).expect("the holder");
    assert_eq!(holder["entry"], scene.entry);
    assert_eq!(holder["held_blocks"], 2, "{holder}");
    let reader = subs
        .iter()
        .find(|s| s["pid"] == scene.reader.pid())
        .expect("the reader");
    assert_eq!(reader["held_blocks"], 0, "{reader}");
    assert_eq!(reader["delivered"], 5, "{reader}");

    let plain = bus("plain");
    assert_eq!(plain["pool"], Value::Null, "{plain}");
    assert_eq!(plain["bytes_per_sec"].as_f64(), Some(0.0), "{plain}");
    let plain_sub = &plain["subscribers"][0];
    assert_eq!(plain_sub["pid"], me, "{plain}");
    assert!(plain_sub.get("held_blocks").is_none(), "{plain_sub}");

    let prom = run(common::shmbus(&[
        "top",
        "--dir",
        scene.dir.dir(),
        "--prometheus",
        "--interval-ms",
        "50",
    ]));
    prom.assert_success();
    let text = prom.stdout();
    let series: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    for expected in [
        "shmbus_pool_block_size_bytes{bus=\"pool\"} 256".to_string(),
        "shmbus_pool_blocks{bus=\"pool\",state=\"free\"} 3".into(),
        "shmbus_pool_blocks{bus=\"pool\",state=\"loaned\"} 0".into(),
        "shmbus_pool_blocks{bus=\"pool\",state=\"on_ring\"} 4".into(),
        "shmbus_pool_blocks{bus=\"pool\",state=\"held\"} 1".into(),
        "shmbus_pool_blocks{bus=\"pool\",state=\"reclaimable\"} 0".into(),
        "shmbus_pool_blocks{bus=\"pool\",state=\"corrupt\"} 0".into(),
        format!(
            "shmbus_subscriber_held_blocks{{bus=\"pool\",pid=\"{me}\",entry=\"{}\"}} 2",
            scene.entry
        ),
    ] {
        assert!(
            series.contains(&expected.as_str()),
            "no {expected}:\n{text}"
        );
    }
    let reader_held = format!(
        "shmbus_subscriber_held_blocks{{bus=\"pool\",pid=\"{}\",",
        scene.reader.pid()
    );
    assert!(
        series
            .iter()
            .any(|l| l.starts_with(&reader_held) && l.ends_with("} 0")),
        "{text}"
    );
    // The plain bus has no pool series at all.
    assert!(
        !series.iter().any(|l| (l.starts_with("shmbus_pool_")
            || l.starts_with("shmbus_subscriber_held_blocks"))
            && l.contains("bus=\"plain\"")),
        "{text}"
    );
    assert!(
        series.contains(&"shmbus_published_total{bus=\"plain\"} 0"),
        "{text}"
    );
    scene.finish();
}

/// `top --json`, `--prometheus` and `--once` show each subscriber's
/// contract, its evictions and the publisher's time blocked on it, and
/// the bus's lossless limit and eviction timeout.
#[test]
fn top_shows_each_subscribers_contract_evictions_and_the_publishers_blocked_time() {
    use shmbus::{BusOptions, OpenOptions, Publisher, Subscriber};
    let bus = BusName::new("top-contract");
    let name = bus.name();
    let mut publisher = Publisher::<u64>::create(
        name,
        &BusOptions::new(4)
            .lossless_subscribers(3)
            .evict_after(Duration::from_millis(20)),
    )
    .expect("create");
    let _lossy = Subscriber::<u64>::open(name, &OpenOptions::default()).unwrap();
    let evicted = Subscriber::<u64>::open(name, &OpenOptions::default().lossless(true)).unwrap();
    // A ring and one more: the lossless one, reading nothing, is evicted.
    for i in 0..5 {
        publisher.publish(&i);
    }
    assert!(!evicted.is_lossless());
    let _lossless = Subscriber::<u64>::open(name, &OpenOptions::default().lossless(true)).unwrap();

    let top = shmbus_json(&["top", name, "--once", "--json", "--interval-ms", "10"]);
    let b = &top["buses"][0];
    assert_eq!(
        (u(&b["lossless"]["max"]), u(&b["lossless"]["evict_ns"])),
        (3, 20_000_000)
    );
    let subs: Vec<(String, u64, u64)> = b["subscribers"]
        .as_array()
        .expect("subscribers")
        .iter()
        .map(|s| {
            let c = s["contract"].as_str().expect("a contract").to_owned();
            (c, u(&s["evictions"]), u(&s["publisher_blocked_ns"]))
        })
        .collect();
    assert_eq!(subs.len(), 3, "{b}");
    assert_eq!((subs[0].0.as_str(), subs[0].1, subs[0].2), ("lossy", 0, 0));
    assert_eq!((subs[1].0.as_str(), subs[1].1), ("evicted", 1));
    assert!(subs[1].2 >= 20_000_000, "blocked {} ns", subs[1].2);
    assert_eq!(
        (subs[2].0.as_str(), subs[2].1, subs[2].2),
        ("lossless", 0, 0)
    );

    let prom = run(common::shmbus(&[
        "top",
        name,
        "--prometheus",
        "--interval-ms",
        "10",
    ]));
    prom.assert_success();
    let text = prom.stdout();
    let value = |series: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
            .unwrap_or_else(|| panic!("no {series} in {text}"))
            .parse()
            .expect("a number")
    };
    let pid = std::process::id();
    let sub = |metric: &str, entry: usize, extra: &str| {
        format!("{metric}{{bus=\"{name}\",pid=\"{pid}\",entry=\"{entry}\"{extra}}}")
    };
    assert_eq!(
        value(&format!("shmbus_lossless_max{{bus=\"{name}\"}}")),
        3.0
    );
    assert_eq!(
        value(&format!("shmbus_evict_timeout_seconds{{bus=\"{name}\"}}")),
        0.02
    );
    for (entry, has) in [(0, "lossy"), (1, "evicted"), (2, "lossless")] {
        for c in ["lossy", "lossless", "evicted"] {
            let series = sub(
                "shmbus_subscriber_contract",
                entry,
                &format!(",contract=\"{c}\""),
            );
            assert_eq!(value(&series), f64::from(u8::from(c == has)), "{series}");
        }
    }
    assert_eq!(value(&sub("shmbus_subscriber_evictions_total", 1, "")), 1.0);
    assert_eq!(value(&sub("shmbus_subscriber_evictions_total", 2, "")), 0.0);
    let blocked = value(&sub(
        "shmbus_subscriber_publisher_blocked_seconds_total",
        1,
        "",
    ));
    assert!(blocked >= 0.02, "blocked {blocked} s");
    assert!(text.contains("# TYPE shmbus_subscriber_publisher_blocked_seconds_total counter"));

    let plain = run(common::shmbus(&[
        "top",
        name,
        "--once",
        "--interval-ms",
        "10",
    ]));
    plain.assert_success();
    let out = plain.stdout();
    assert!(
        out.contains("lossless:    1 of at most 3, evicted after 0.020 s"),
        "{out}"
    );
    let rows: Vec<&str> = out
        .lines()
        .filter(|l| l.trim_start().starts_with(&format!("{pid} ")))
        .collect();
    assert_eq!(rows.len(), 3, "{out}");
    assert!(
        !rows[0].contains("loss") && !rows[0].contains("evicted"),
        "{out}"
    );
    assert!(rows[1].contains("evicted 1× (held pub 0.0"), "{out}");
    assert!(rows[2].trim_end().ends_with("lossless"), "{out}");
    drop(publisher);
    bus.finish();
}

/// The `blackboard` object of bus `name` in a `top --json` sample.
fn board_json(top: &Value, name: &str) -> Value {
    top["buses"]
        .as_array()
        .expect("buses")
        .iter()
        .find(|b| b["name"] == name)
        .unwrap_or_else(|| panic!("{name} not in {top}"))["blackboard"]
        .clone()
}

#[test]
fn top_names_the_key_a_writer_updates_most_as_a_blackboard_s_hottest() {
    let board = HotBoard::start("top-bb-hot-J");
    let top = shmbus_json(&[
        "top",
        board.name(),
        "--once",
        "--json",
        "--interval-ms",
        "500",
    ]);
    let prom = run(common::shmbus(&[
        "top",
        board.name(),
        "--prometheus",
        "--interval-ms",
        "10",
    ]));
    let bb = board_json(&top, board.name());
    assert_eq!((u(&bb["keys"]), u(&bb["max_keys"])), (4, 100), "{bb}");
    assert_eq!(bb["corrupt"], Value::Null, "{bb}");
    assert!(
        bb["updates_per_sec"].as_f64().is_some_and(|r| r > 0.0),
        "{bb}"
    );
    let hottest = bb["hottest"].as_array().expect("hottest");
    assert_eq!(hottest[0]["key"], "7", "{bb}");
    assert!(
        hottest[0]["updates_per_sec"]
            .as_f64()
            .is_some_and(|r| r > 0.0)
    );
    // Keys 2 and 3 were not written: never named.
    assert!(
        hottest.iter().all(|h| h["key"] == "7" || h["key"] == "1"),
        "{bb}"
    );
    if let Some(second) = hottest.get(1) {
        assert!(u(&second["updates"]) < u(&hottest[0]["updates"]), "{bb}");
    }
    prom.assert_success();
    let text = prom.stdout();
    let series = format!("shmbus_blackboard_keys{{bus=\"{}\"}} 4", board.name());
    assert!(text.contains(&series), "{text}");
    assert!(text.contains("shmbus_blackboard_updates_total{"), "{text}");
    board.finish();
}

#[test]
fn top_shows_a_blackboard_entry_with_a_garbage_stamp_as_corrupt_and_goes_on() {
    use shmbus::blackboard::{self, Writer};
    let bus = BusName::new("top-bb-bad-J");
    let mut writer = Writer::<u32, u64>::create(bus.name(), &blackboard::Options::new(100))
        .expect("create the blackboard");
    for k in [1, 2, 3, 7] {
        writer.put(&k, &0).expect("put");
    }
    drop(writer);
    let st = shmbus::stat::stat(bus.name()).expect("stat");
    let bb = st.blackboard.clone().expect("a blackboard");
    let entry = bb.versions[0].entry;
    // An even stamp (no write under way) naming a version far past the
    // table's: no writer stores it.
    let at = st.raw_header().data_offset + entry * u64::from(st.raw_header().slot_size);
    std::fs::OpenOptions::new()
        .write(true)
        .open(bus.path())
        .and_then(|f| std::os::unix::fs::FileExt::write_at(&f, &(u64::MAX - 1).to_le_bytes(), at))
        .expect("patch a stamp");
    let top = shmbus_json(&["top", bus.name(), "--once", "--json", "--interval-ms", "10"]);
    let bb = board_json(&top, bus.name());
    let why = bb["corrupt"]
        .as_str()
        .unwrap_or_else(|| panic!("not corrupt: {bb}"));
    assert!(
        why.contains(&format!(
            "entry {entry}: version {} is past the table's 4",
            u64::MAX / 2
        )),
        "{why}"
    );
    assert!(
        bb["hottest"]
            .as_array()
            .expect("hottest")
            .iter()
            .all(|h| h["entry"] != entry),
        "{bb}"
    );
    let plain = run(common::shmbus(&[
        "top",
        bus.name(),
        "--once",
        "--interval-ms",
        "10",
    ]));
    plain.assert_success();
    assert!(plain.stdout().contains("corrupt:"), "{}", plain.stdout());
    bus.finish();
}

// ---------------------------------------------------------------------------
// `top --listen`: the HTTP endpoint under hostile clients.

/// Starts `shmbus top --listen 127.0.0.1:0 EXTRA...`: the process and the
/// address it serves on.
fn listening(extra: &[&str]) -> (Watched, std::net::SocketAddr) {
    let mut args = vec!["top", "--listen", "127.0.0.1:0"];
    args.extend_from_slice(extra);
    let mut top = common::start(&args);
    let line = String::from_utf8(top.next_line()).expect("UTF-8");
    let addr = line
        .trim()
        .strip_prefix("serving http://")
        .and_then(|rest| rest.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("not the serving line: {line:?}"));
    (top, addr.parse().expect("an address"))
}

/// One scrape of `/metrics`: the whole response, or why not.
fn scrape(addr: std::net::SocketAddr) -> std::io::Result<String> {
    use std::io::Read;
    let mut s = std::net::TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")?;
    let mut got = String::new();
    s.read_to_string(&mut got)?;
    Ok(got)
}

#[test]
fn a_scrape_is_answered_at_once_while_more_idle_connections_than_the_limit_are_held_open() {
    use std::io::Read;
    let dir = common::ShmDir::new("listen-idle");
    let (top, addr) = listening(&["--dir", dir.dir()]);
    // More than the 64 connections served at once, each connected and
    // silent, held open by this test for the whole exchange.
    let mut idle: Vec<std::net::TcpStream> = (0..70)
        .map(|_| std::net::TcpStream::connect(addr).expect("connect"))
        .collect();
    let start = Instant::now();
    let got = scrape(addr);
    let took = start.elapsed();
    let got = got.unwrap_or_else(|e| panic!("the scrape behind 70 idle connections: {e}"));
    assert!(
        got.starts_with("HTTP/1.1 200 OK\r\n"),
        "the scrape behind 70 idle connections got {got:?} in {took:?}"
    );
    // Before the idle connections' own 2 s deadline: served because the
    // oldest idle one made room, not because one timed out.
    assert!(took < Duration::from_millis(1500), "answered in {took:?}");
    // The oldest was shut down to make room: its read ends at once.
    idle[0]
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut buf = [0u8; 16];
    let evicted = Instant::now();
    assert!(
        matches!(idle[0].read(&mut buf), Ok(0) | Err(_)),
        "the oldest idle connection got an answer"
    );
    assert!(
        evicted.elapsed() < Duration::from_millis(1500),
        "the oldest idle connection was closed at its deadline, not evicted"
    );
    drop(idle);
    drop(top);
    dir.finish();
}

/// A served text's value of the unlabelled series `name`.
fn figure(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .map(|v| v.parse().expect("a number"))
}

#[test]
fn top_listen_stretches_its_pause_to_four_times_a_long_sample_and_says_so() {
    use shmbus::blackboard::{self, Writer};
    let board = BusName::new("listen-pace");
    let mut writer =
        Writer::<u32, u64>::create(board.name(), &blackboard::Options::new(16)).expect("create");
    writer.put(&1, &0).expect("put");
    let stop = Arc::new(AtomicBool::new(false));
    let writing = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                writer.put(&1, &i).expect("put");
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    // Every 10 ms asked: each sample watches the entry written since the
    // one before for the shortest window, 5 ms, so it takes 5 ms or more
    // and the pause after it is 20 ms or more.
    let (top, addr) = listening(&[board.name(), "--interval-ms", "10"]);
    let mut stretched = None;
    common::wait_for("a sample's pause stretched past --interval-ms", || {
        let text = scrape(addr).expect("scrape");
        let took = figure(&text, "shmbus_top_sample_seconds")
            .unwrap_or_else(|| panic!("no shmbus_top_sample_seconds in {text}"));
        let pause = figure(&text, "shmbus_top_interval_seconds")
            .unwrap_or_else(|| panic!("no shmbus_top_interval_seconds in {text}"));
        assert!(
            (pause - f64::max(0.010, 4.0 * took)).abs() < 1e-8,
            "a sample of {took} s paused {pause} s, expected the longer of 10 ms and 4 times it"
        );
        // A sample with no entry written since the one before watches
        // nothing: under load it may still pass 2.5 ms and stretch the
        // pause, but it is not the watched sample this waits for.
        if took >= 0.005 {
            stretched = Some((took, pause));
        }
        stretched.is_some()
    });
    let (took, pause) = stretched.expect("stretched");
    assert!(took >= 0.005 && pause >= 0.020, "{took} s, {pause} s");
    drop(top);
    stop.store(true, Ordering::Relaxed);
    writing.join().expect("the writer");
    board.finish();
}
