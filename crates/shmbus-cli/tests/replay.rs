//! `shmbus replay` beyond phase 1: a record -> replay
//! -> record round trip that gives the same payloads and the same gaps; a
//! window (`--from`, `--until`), loops, a name map for several buses, the
//! target bus checked, and the pace error reported (`--json`). The
//! recordings other than the round trip's are written by
//! `shmbus::record::Recorder` with made-up times, so each test knows
//! exactly what the file says. Every child under the harness's watchdog;
//! files in a private directory under /dev/shm, checked gone at the end.

mod common;

use std::path::Path;

use common::{
    CliOutput, ShmDir, process_state, publish, run_shmbus, signal, start, wait_for,
    wait_until_waiting,
};
use rustix::process::Signal;
use shmbus::record::{Record, RecordedKind, Recorder, Recording};

fn records(path: &Path) -> Vec<Record> {
    let Ok(bytes) = std::fs::read(path) else {
        return Vec::new();
    };
    let Ok(recording) = Recording::new(&bytes[..]) else {
        return Vec::new();
    };
    recording.map_while(Result::ok).collect()
}

/// What a round trip must keep: each message's sequence and payload, each
/// gap (not the bus record's name, nor the times).
fn crossed(records: &[Record]) -> Vec<String> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::Message(m) => Some(format!("message {} {:?}", m.seq, m.payload)),
            Record::Gap(g) => Some(format!("gap {} {}", g.first, g.count)),
            _ => None,
        })
        .collect()
}

fn start_recorder(bus: &str, file: &Path) -> common::Watched {
    let rec = start(&["record", bus, "--out", file.to_str().unwrap()]);
    wait_for("the recorder to declare its bus", || {
        matches!(records(file).first(), Some(Record::Bus(_)))
    });
    rec
}

/// The 16-byte payload of message `i`: its number, zero-padded (what
/// `shmbus pub` makes of the line "i").
fn payload(i: u64) -> Vec<u8> {
    let mut p = format!("{i}").into_bytes();
    p.resize(16, 0);
    p
}

/// A recording of `buses`, each a plain bus of 16-byte messages; `each`
/// writes its records.
fn write_recording(path: &Path, buses: &[&str], each: impl FnOnce(&mut Recorder<Vec<u8>>)) {
    let mut rec = Recorder::new(Vec::new()).unwrap();
    for b in buses {
        rec.add_bus(b, RecordedKind::Bus, 16).unwrap();
    }
    each(&mut rec);
    std::fs::write(path, rec.into_inner()).unwrap();
}

/// Messages `range` of bus 0, one every `step_ns` from time 0, the message
/// `i` with sequence `i`.
fn messages(rec: &mut Recorder<Vec<u8>>, range: std::ops::Range<u64>, step_ns: u64) {
    for i in range {
        rec.message(0, i, i * step_ns, 0, &payload(i)).unwrap();
    }
}

/// Replays `args` (after FILE) into a bus read by `shmbus sub`, which
/// expects `count` messages; returns what it printed (stdout, stderr) and
/// the replay's JSON summary.
fn replay_into_sub(
    file: &Path,
    bus: &str,
    count: usize,
    args: &[&str],
) -> (String, String, serde_json::Value) {
    run_shmbus(&["create", bus, "--slots", "1024", "--msg-size", "16"]).assert_success();
    let n = count.to_string();
    let sub = start(&["sub", bus, "--count", &n, "--timeout", "10"]);
    wait_until_waiting(bus, &sub);
    let mut all = vec!["replay", file.to_str().unwrap(), "--json"];
    all.extend_from_slice(args);
    let out = run_shmbus(&all);
    out.assert_success();
    let summary = out.json();
    let got = sub.wait();
    (got.stdout(), got.stderr.clone(), summary)
}

#[test]
fn a_record_replay_record_round_trip_gives_the_same_payloads_and_the_same_gaps() {
    let dir = ShmDir::new("replay-B-trip");
    let a = dir.bus("a");
    let b = dir.bus("b");
    let first = dir.file("a.rec");
    let second = dir.file("b.rec");
    run_shmbus(&["create", &a, "--slots", "8", "--msg-size", "16"]).assert_success();
    let rec = start_recorder(&a, &first);
    wait_until_waiting(&a, &rec);
    // Lapped while stopped: a gap, then the rest; then more after it.
    signal(&rec, Signal::STOP);
    wait_for("the recorder to stop", || {
        process_state(rec.pid()) == Some('T')
    });
    publish(&a, &common::numbered_lines(1..=10));
    signal(&rec, Signal::CONT);
    let last_is =
        |n: u64| move |rs: &[Record]| matches!(rs.last(), Some(Record::Message(m)) if m.seq == n);
    wait_for("the recorder to write message 9", || {
        last_is(9)(&records(&first))
    });
    publish(&a, &common::numbered_lines(11..=15));
    wait_for("the recorder to write message 14", || {
        last_is(14)(&records(&first))
    });
    signal(&rec, Signal::INT);
    rec.wait().assert_success();
    let original = crossed(&records(&first));
    assert!(
        original[0].starts_with("gap 0 "),
        "the lap is the first record: {original:?}"
    );

    run_shmbus(&["create", &b, "--slots", "1024", "--msg-size", "16"]).assert_success();
    let rec = start_recorder(&b, &second);
    wait_until_waiting(&b, &rec);
    run_shmbus(&[
        "replay",
        first.to_str().unwrap(),
        "--to",
        &b,
        "--speed",
        "max",
    ])
    .assert_success();
    wait_for("the second recorder to write message 14", || {
        last_is(14)(&records(&second))
    });
    signal(&rec, Signal::INT);
    rec.wait().assert_success();
    // One gap record each: the replay's skip was one lag report, as the
    // first recorder's lap was (before, the second recorder wrote a gap
    // of 1 per skipped sequence).
    assert_eq!(crossed(&records(&second)), original);
    dir.finish();
}

#[test]
fn a_window_by_sequence_or_by_time_replays_only_what_lies_inside_it() {
    let dir = ShmDir::new("replay-B-window");
    let file = dir.file("w.rec");
    // 0..5, a gap of 3 (5, 6, 7), 8..12; one message a millisecond.
    write_recording(&file, &["w"], |r| {
        messages(r, 0..5, 1_000_000);
        r.gap(0, 5, 3).unwrap();
        messages(r, 8..12, 1_000_000);
    });
    let s = dir.bus("s");
    let by_seq = [
        "--speed", "max", "--from", "seq:3", "--until", "seq:10", "--to", &s,
    ];
    let (out, err, json) = replay_into_sub(&file, &s, 4, &by_seq);
    assert_eq!(out, "3\n4\n8\n9\n");
    assert_eq!(err, "lagged: skipped 3\n");
    assert_eq!(json["messages"], 4);
    assert_eq!(json["skipped"], 3);
    assert_eq!(json["pace_error_us"], serde_json::Value::Null);

    // From 2 ms (inclusive) until 4 ms (exclusive): messages 2 and 3.
    let t = dir.bus("t");
    let args = [
        "--speed", "max", "--from", "2ms", "--until", "4ms", "--to", &t,
    ];
    let (out, _, json) = replay_into_sub(&file, &t, 2, &args);
    assert_eq!(out, "2\n3\n");
    assert_eq!(json["messages"], 2);
    dir.finish();
}

#[test]
fn a_recording_of_two_buses_replays_each_into_the_bus_its_map_names() {
    let dir = ShmDir::new("replay-B-map");
    let file = dir.file("two.rec");
    write_recording(&file, &["x", "y"], |r| {
        for i in 0..6u64 {
            r.message((i % 2) as u32, i / 2, i, 0, &payload(i)).unwrap();
        }
    });
    let (bx, by) = (dir.bus("bx"), dir.bus("by"));
    run_shmbus(&["create", &by, "--slots", "64", "--msg-size", "16"]).assert_success();
    let sub_y = start(&["sub", &by, "--count", "3", "--timeout", "10"]);
    wait_until_waiting(&by, &sub_y);
    let mx = format!("x={bx}");
    let my = format!("y={by}");
    let f = file.to_str().unwrap();
    let (out, _, json) = replay_into_sub(
        &file,
        &bx,
        3,
        &["--speed", "max", "--map", &mx, "--map", &my],
    );
    assert_eq!(out, "0\n2\n4\n");
    assert_eq!(sub_y.wait().stdout(), "1\n3\n5\n");
    assert_eq!(json["messages"], 6);

    // One target for two buses, a bus left out, a name not recorded, two
    // buses into one --to: each one line, exit 2.
    run_shmbus(&["replay", f, "--to", &bx]).assert_error(2, "holds more than one bus");
    run_shmbus(&["replay", f, "--map", &mx]).assert_error(2, "bus 1 (y) has no --map y=BUS");
    let mz = format!("z={by}");
    run_shmbus(&["replay", f, "--map", &mx, "--map", &my, "--map", &mz])
        .assert_error(2, "a bus has one publisher");
    let mq = format!("q={}", dir.bus("bq"));
    run_shmbus(&[
        "replay", f, "--speed", "max", "--map", &mx, "--map", &my, "--map", &mq,
    ])
    .assert_error(2, "the recording has no bus q");
    run_shmbus(&["replay", f, "--map", "x"]).assert_error(2, "is not REC=BUS");
    dir.finish();
}

#[test]
fn a_loop_of_n_passes_replays_n_times_and_a_loop_over_nothing_ends_after_one() {
    let dir = ShmDir::new("replay-B-loop");
    let file = dir.file("l.rec");
    write_recording(&file, &["l"], |r| messages(r, 0..4, 1000));
    let l = dir.bus("l");
    let (out, _, json) = replay_into_sub(
        &file,
        &l,
        12,
        &["--speed", "max", "--loop", "3", "--to", &l],
    );
    assert_eq!(out, "0\n1\n2\n3\n".repeat(3));
    assert_eq!(json["passes"], 3);

    // Nothing but a bus record: --loop without a count must not spin.
    let empty = dir.file("empty.rec");
    write_recording(&empty, &["e"], |_| {});
    let out = run_shmbus(&[
        "replay",
        empty.to_str().unwrap(),
        "--loop",
        "--json",
        "--to",
        &l,
    ]);
    out.assert_success();
    assert_eq!(out.json()["passes"], 1);
    assert_eq!(out.json()["messages"], 0);
    run_shmbus(&["replay", empty.to_str().unwrap(), "--loop", "0", "--to", &l])
        .assert_error(2, "is not a number of passes");
    dir.finish();
}

#[test]
fn a_loop_without_a_count_runs_until_sigint_and_then_reports_its_pace_error() {
    let dir = ShmDir::new("replay-B-sigint");
    let file = dir.file("p.rec");
    // 20 messages 10 ms apart: 190 ms a pass.
    write_recording(&file, &["p"], |r| messages(r, 0..20, 10_000_000));
    let p = dir.bus("p");
    let f = file.to_str().unwrap();
    let replay = start(&["replay", f, "--loop", "--json", "--to", &p]);
    wait_for("two passes", || {
        shmbus::stat::stat(&p).is_ok_and(|s| s.published > 40)
    });
    signal(&replay, Signal::INT);
    let out = replay.wait();
    out.assert_success();
    let json = out.json();
    let passes = json["passes"].as_u64().unwrap();
    assert!(passes >= 3, "{json}");
    // Each whole pass took the recorded 190 ms (the last one SIGINT cut).
    let whole = passes - 1;
    assert!(json["messages"].as_u64().unwrap() >= 20 * whole, "{json}");
    let seconds = json["seconds"].as_f64().unwrap();
    assert!(seconds >= 0.19 * whole as f64, "{json}");
    // A pace error for what it paced, and of what pacing can give: most
    // messages well within half a spacing of their time (a message never
    // goes out early), none later than the whole run.
    let pace = &json["pace_error_us"];
    let (p50, p99, max) = (
        pace["p50"].as_f64().unwrap(),
        pace["p99"].as_f64().unwrap(),
        pace["max"].as_f64().unwrap(),
    );
    assert!(0.0 <= p50 && p50 <= p99 && p99 <= max, "{json}");
    assert!(p50 < 5_000.0, "{json}");
    assert!(max <= seconds * 1e6, "{json}");
    dir.finish();
}

#[test]
fn the_target_bus_must_be_a_plain_bus_of_the_recorded_size_and_a_hostile_file_is_refused() {
    let dir = ShmDir::new("replay-B-check");
    let file = dir.file("c.rec");
    // Times that run backwards (and one far in the future, after them):
    // published at once, not waited on.
    write_recording(&file, &["c"], |r| {
        r.message(0, 0, 5_000_000_000, 0, &payload(0)).unwrap();
        r.message(0, 1, 0, 0, &payload(1)).unwrap();
        r.message(0, 2, 1, 0, &payload(2)).unwrap();
    });
    let f = file.to_str().unwrap();
    let s = dir.bus("s");
    run_shmbus(&["create", &s, "--kind", "stream", "--bytes", "4096"]).assert_success();
    run_shmbus(&["replay", f, "--to", &s]).assert_error(2, "is a stream");
    let small = dir.bus("small");
    run_shmbus(&["create", &small, "--slots", "8", "--msg-size", "8"]).assert_success();
    run_shmbus(&["replay", f, "--to", &small]).assert_error(2, "carries 8-byte messages");
    let ok = dir.bus("ok");
    let started = std::time::Instant::now();
    let out = run_shmbus(&["replay", f, "--json", "--to", &ok]);
    out.assert_success();
    assert_eq!(out.json()["messages"], 3);
    assert!(started.elapsed() < std::time::Duration::from_secs(4));

    // A record cut in its middle ends the file; a changed byte is an
    // error naming its offset, whatever was replayed before it.
    let mut bytes = std::fs::read(&file).unwrap();
    let n = bytes.len();
    bytes[n - 20] ^= 1;
    std::fs::write(&file, &bytes).unwrap();
    run_shmbus(&["replay", f, "--to", &ok, "--loop"]).assert_error(2, "check");
    run_shmbus(&["replay", f, "--to", &ok, "--from", "soon"]).assert_error(2, "is not a point");
    dir.finish();
}

#[test]
fn a_running_recorder_is_shown_by_stat_like_a_bridge_and_prints_no_progress_off_a_terminal() {
    let dir = ShmDir::new("replay-B-stat");
    let a = dir.bus("a");
    let file = dir.file("a.rec");
    let runtime = dir.file("runtime");
    std::fs::create_dir(&runtime).unwrap();
    run_shmbus(&["create", &a, "--slots", "64", "--msg-size", "16"]).assert_success();
    let mut cmd = common::shmbus(&["record", &a, "--out", file.to_str().unwrap()]);
    cmd.env("XDG_RUNTIME_DIR", &runtime);
    let rec = common::spawn(cmd);
    let pid = rec.pid();
    wait_until_waiting(&a, &rec);
    publish(&a, &common::numbered_lines(1..=10));
    let stat = |json: bool| {
        let mut args = vec!["stat", a.as_str()];
        if json {
            args.push("--json");
        }
        let mut cmd = common::shmbus(&args);
        cmd.env("XDG_RUNTIME_DIR", &runtime);
        let out = common::run(cmd);
        out.assert_success();
        out
    };
    // The status is rewritten once a second.
    wait_for("stat to show the recorder's 10 messages", || {
        stat(true).json()["bridges"][0]["messages"] == 10
    });
    let json = stat(true).json();
    let b = &json["bridges"][0];
    assert_eq!(b["direction"], "record", "{json}");
    assert_eq!(b["pid"], pid, "{json}");
    assert_eq!(b["key"], file.to_str().unwrap(), "{json}");
    assert_eq!(b["bytes"], 160, "{json}");
    assert_eq!(b["lost"], 0, "{json}");
    let text = stat(false).stdout();
    let line = format!("pid {pid}: record -> {}, ", file.display());
    assert!(text.contains(&line), "{text}");
    assert!(text.contains("recorded 10, 160 bytes, lost 0"), "{text}");

    signal(&rec, Signal::INT);
    let out = rec.wait();
    out.assert_success();
    assert_eq!(
        out.stderr, "",
        "no progress line when stderr is not a terminal"
    );
    assert_eq!(stat(true).json()["bridges"], serde_json::json!([]));
    std::fs::remove_dir_all(&runtime).unwrap();
    dir.finish();
}

/// What a reader of `bus` (of recorded kind `kind`, its publisher gone)
/// gets from its oldest message on: each payload, or `lag N`.
fn read_back(bus: &str, kind: RecordedKind) -> Vec<Vec<u8>> {
    use shmbus::pool;
    use shmbus::stream::Consumer;
    use shmbus::{OpenOptions, Received, Start, Subscriber, Wait};
    let opts = OpenOptions::default().start(Start::Oldest);
    let mut got = Vec::new();
    let lag = |n: u64| format!("lag {n}").into_bytes();
    match kind {
        RecordedKind::Pool => {
            let mut sub = pool::Subscriber::<[u8]>::open(bus, &opts).unwrap();
            while let Some(r) = sub.recv(Wait::Never).unwrap() {
                got.push(match r {
                    Received::Message(m) => m.to_vec(),
                    Received::Lagged { skipped } => lag(skipped),
                });
            }
        }
        RecordedKind::Stream => {
            let mut c = Consumer::<[u8]>::attach(bus, &OpenOptions::default()).unwrap();
            let mut out = Vec::new();
            while c.pop(&mut out, Wait::Never).is_ok() {
                got.push(std::mem::take(&mut out));
            }
        }
        _ => {
            let mut sub = Subscriber::<[u8]>::open(bus, &opts).unwrap();
            while let Some(r) = sub.recv(Wait::Never) {
                got.push(match r {
                    Received::Message(m) => m.to_vec(),
                    Received::Lagged { skipped } => lag(skipped),
                });
            }
        }
    }
    got
}

#[test]
fn a_recording_of_every_kind_replays_into_fresh_buses_of_its_kinds_with_byte_identical_payloads() {
    let dir = ShmDir::new("replay-G-kinds");
    let names = ["plain", "many", "pool", "stream", "journaled"].map(|k| dir.bus(k));
    let journal = dir.file("j.journal");
    let creates: [&[&str]; 5] = [
        &["create", &names[0], "--slots", "64", "--msg-size", "16"],
        &[
            "create",
            &names[1],
            "--capacity",
            "64",
            "--msg-size",
            "16",
            "--publishers",
            "many",
        ],
        &["create", &names[2], "--capacity", "16", "--pool", "64:32"],
        &["create", &names[3], "--kind", "stream", "--bytes", "4096"],
        &[
            "create",
            &names[4],
            "--capacity",
            "64",
            "--msg-size",
            "16",
            "--journal",
            journal.to_str().unwrap(),
        ],
    ];
    for c in creates {
        run_shmbus(c).assert_success();
    }
    let file = dir.file("all.rec");
    let mut args = vec!["record"];
    args.extend(names.iter().map(|n| n.as_str()));
    args.extend(["--out", file.to_str().unwrap()]);
    let rec = start(&args);
    wait_for("the recorder to declare its 5 buses", || {
        records(&file)
            .iter()
            .filter(|r| matches!(r, Record::Bus(_)))
            .count()
            == 5
    });
    for (i, name) in names.iter().enumerate() {
        publish(name, &format!("{i}-first\n{i}-second, long\n{i}-third\n"));
    }
    wait_for("the recorder to write 15 messages", || {
        records(&file)
            .iter()
            .filter(|r| matches!(r, Record::Message(_)))
            .count()
            == 15
    });
    signal(&rec, Signal::TERM);
    rec.wait().assert_success();
    let recorded = records(&file);

    // Each recorded bus into a fresh bus the replay creates.
    let targets =
        ["plain", "many", "pool", "stream", "journaled"].map(|k| dir.bus(&format!("r-{k}")));
    let maps: Vec<String> = names
        .iter()
        .zip(&targets)
        .map(|(n, t)| format!("{n}={t}"))
        .collect();
    let jdir = dir.file("journals");
    std::fs::create_dir(&jdir).unwrap();
    let mut args = vec![
        "replay",
        file.to_str().unwrap(),
        "--speed",
        "max",
        "--json",
        "--journal-dir",
        jdir.to_str().unwrap(),
    ];
    for m in &maps {
        args.extend(["--map", m.as_str()]);
    }
    let out = run_shmbus(&args);
    out.assert_success();
    assert_eq!(out.json()["messages"], 15);
    let kinds = [
        RecordedKind::Bus,
        RecordedKind::ManyPublisher,
        RecordedKind::Pool,
        RecordedKind::Stream,
        RecordedKind::Journaled,
    ];
    for (i, (target, kind)) in targets.iter().zip(kinds).enumerate() {
        let want: Vec<Vec<u8>> = recorded
            .iter()
            .filter_map(|r| match r {
                Record::Message(m) if m.bus == i as u32 => Some(m.payload.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(want.len(), 3, "bus {i}");
        assert_eq!(read_back(target, kind), want, "{target}");
        let stat = shmbus::stat::stat(target).unwrap();
        use shmbus::SegmentKind as K;
        let want = [
            K::Bus,
            K::ManyPublisherBus,
            K::Pool,
            K::Stream,
            K::JournaledBus,
        ];
        assert_eq!(stat.kind, want[i], "{target}");
        assert_eq!(
            stat.raw_header().capacity,
            [64, 64, 16, 4096, 64][i],
            "{target}"
        );
    }

    // A target of another kind, or too small, is refused in one line; the
    // other buses go to fresh targets.
    let f = file.to_str().unwrap();
    let refused = |i: usize, target: &str, expect: &str| {
        let maps: Vec<String> = names
            .iter()
            .enumerate()
            .map(|(j, n)| {
                let t = if j == i {
                    target.to_owned()
                } else {
                    dir.bus(&format!("x-{j}"))
                };
                format!("{n}={t}")
            })
            .collect();
        let mut args = vec![
            "replay",
            f,
            "--speed",
            "max",
            "--journal-dir",
            jdir.to_str().unwrap(),
        ];
        for m in &maps {
            args.extend(["--map", m.as_str()]);
        }
        run_shmbus(&args).assert_error(2, expect);
    };
    refused(
        2,
        &targets[0],
        "is a plain bus: the recording holds a pool bus's messages",
    );
    refused(
        0,
        &targets[1],
        "is a many-publisher bus: the recording holds a plain bus's messages",
    );
    let tiny = dir.bus("tiny-stream");
    run_shmbus(&["create", &tiny, "--kind", "stream", "--bytes", "64"]).assert_success();
    refused(3, &tiny, "carries 64-byte ring, the recording needs 4096");
    let narrow = dir.bus("narrow");
    run_shmbus(&[
        "create",
        &narrow,
        "--slots",
        "64",
        "--msg-size",
        "8",
        "--publishers",
        "many",
    ])
    .assert_success();
    refused(
        1,
        &narrow,
        "carries 8-byte messages, the recording needs 16",
    );
    let mut args = vec!["replay", f, "--speed", "max"];
    let fresh: Vec<String> = names
        .iter()
        .enumerate()
        .map(|(j, n)| format!("{n}={}", dir.bus(&format!("y-{j}"))))
        .collect();
    for m in &fresh {
        args.extend(["--map", m.as_str()]);
    }
    run_shmbus(&args).assert_error(2, "a journaled bus needs a journal file");
    dir.finish();
}

#[test]
fn a_rotated_recording_replays_from_its_first_part_and_from_a_sequence_sought_in_its_index() {
    use shmbus::record::{BusSpec, FileRecorder, Rotation};
    let dir = ShmDir::new("replay-G-rotated");
    let file = dir.file("r.rec");
    let mut rec = FileRecorder::create_with(&file, Rotation::default().bytes(4096), 16).unwrap();
    let bus = rec
        .add_bus(&BusSpec::new("r", RecordedKind::Bus, 16).slots(1024))
        .unwrap();
    for i in 0..500u64 {
        rec.message(bus, i, i * 1000, 0, &payload(i)).unwrap();
    }
    rec.flush().unwrap();
    assert!(rec.parts() > 3, "{} parts", rec.parts());
    drop(rec);
    let f = file.to_str().unwrap();
    let all = dir.bus("all");
    let out = run_shmbus(&["replay", f, "--speed", "max", "--json", "--to", &all]);
    out.assert_success();
    assert_eq!(out.json()["messages"], 500);
    let want: Vec<Vec<u8>> = (0..500).map(payload).collect();
    assert_eq!(read_back(&all, RecordedKind::Bus), want);
    let tail = dir.bus("tail");
    let out = run_shmbus(&[
        "replay", f, "--speed", "max", "--json", "--from", "seq:420", "--to", &tail,
    ]);
    out.assert_success();
    assert_eq!(out.json()["messages"], 80);
    assert_eq!(read_back(&tail, RecordedKind::Bus), want[420..].to_vec());
    let late = dir.bus("late");
    let out = run_shmbus(&[
        "replay", f, "--speed", "max", "--json", "--from", "300us", "--until", "310us", "--to",
        &late,
    ]);
    out.assert_success();
    assert_eq!(read_back(&late, RecordedKind::Bus), want[300..310].to_vec());
    dir.finish();
}

#[test]
fn a_recorded_gap_across_the_sequence_wrap_replays_as_one_lag_report_of_all_it_lost() {
    let dir = ShmDir::new("replay-wrap");
    let file = dir.file("wrap.rec");
    // 2^64 - 2, then 2^64 - 1, 0, 1, 2, 3 lost, then 4.
    write_recording(&file, &["w"], |r| {
        r.message(0, u64::MAX - 1, 0, 0, &payload(1)).unwrap();
        r.gap(0, u64::MAX, 5).unwrap();
        r.message(0, 4, 1_000, 0, &payload(2)).unwrap();
    });
    let w = dir.bus("w");
    let (out, err, json) = replay_into_sub(&file, &w, 2, &["--speed", "max", "--to", &w]);
    assert_eq!(out, "1\n2\n");
    assert_eq!(err, "lagged: skipped 5\n");
    assert_eq!(
        (json["gaps"].as_u64(), json["skipped"].as_u64()),
        (Some(1), Some(5)),
        "{json}"
    );
    dir.finish();
}

/// The buses under `dir`'s directory, by name.
fn buses_in(dir: &ShmDir) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".rec") && !n.ends_with(".idx"))
        .collect();
    names.sort();
    names
}

#[test]
fn a_refused_replay_leaves_no_bus_behind() {
    use shmbus::record::BusSpec;
    let dir = ShmDir::new("replay-refused");
    let two = dir.file("two.rec");
    write_recording(&two, &["x", "y"], |r| {
        for i in 0..4u64 {
            r.message((i % 2) as u32, i / 2, i, 0, &payload(i)).unwrap();
        }
    });
    let f = two.to_str().unwrap();
    let (bx, by, bq) = (dir.bus("bx"), dir.bus("by"), dir.bus("bq"));
    let (mx, my, mq) = (format!("x={bx}"), format!("y={by}"), format!("q={bq}"));
    // Two buses into one --to: refused before the first is made.
    run_shmbus(&["replay", f, "--to", &bx]).assert_error(2, "holds more than one bus");
    assert_eq!(buses_in(&dir), [] as [&str; 0]);
    // A map entry the recording does not hold: found out before anything
    // is made or published.
    run_shmbus(&[
        "replay", f, "--speed", "max", "--map", &mx, "--map", &my, "--map", &mq,
    ])
    .assert_error(2, "the recording has no bus q");
    assert_eq!(buses_in(&dir), [] as [&str; 0]);
    // The second bus's target is of another kind: the first one's is not
    // made either.
    let stream = dir.bus("s");
    run_shmbus(&["create", &stream, "--kind", "stream", "--bytes", "4096"]).assert_success();
    let ms = format!("y={stream}");
    run_shmbus(&["replay", f, "--speed", "max", "--map", &mx, "--map", &ms])
        .assert_error(2, "is a stream");
    assert_eq!(buses_in(&dir), ["s"]);
    assert_eq!(shmbus::stat::stat(&stream).unwrap().published, 0);

    // A crafted geometry no file system has room for (2^40 slots: over
    // 64 TiB), beside a small bus: one line saying what it would take and
    // what is free, and neither is made.
    let huge = dir.file("huge.rec");
    let mut rec = Recorder::new(Vec::new()).unwrap();
    rec.add_bus("small", RecordedKind::Bus, 16).unwrap();
    rec.add_bus_spec(&BusSpec::new("huge", RecordedKind::Bus, 64).slots(1 << 40))
        .unwrap();
    rec.message(1, 0, 0, 0, &[0; 64]).unwrap();
    std::fs::write(&huge, rec.into_inner()).unwrap();
    let (small, big) = (dir.bus("small"), dir.bus("big"));
    let out = run_shmbus(&[
        "replay",
        huge.to_str().unwrap(),
        "--speed",
        "max",
        "--map",
        &format!("small={small}"),
        "--map",
        &format!("huge={big}"),
    ]);
    out.assert_error(1, " TiB and ");
    assert!(
        out.stderr
            .contains(&format!("{big}: a bus of the recorded geometry takes "))
            && out.stderr.contains(&format!("and {} has ", dir.dir()))
            && out
                .stderr
                .contains(" free (give fewer slots, or make the bus first)"),
        "{}",
        out.stderr
    );
    assert_eq!(buses_in(&dir), ["s"]);
    dir.finish();
}
