//! `shmbus record` and `shmbus replay` as a user meets them:
//! a bus fed by another process recorded until SIGINT, the recording
//! replayed into another bus that `shmbus sub` reads, a lag recorded as a
//! gap and replayed as one, a damaged recording refused in one line, buses
//! of every kind in one file, rotation, and a recorder killed mid-write.
//! tools/read_recording.py reads each file as the Rust reader does. Every child under the harness's watchdog; each test's
//! files in a private directory under /dev/shm, checked gone at the end.

mod common;

use std::path::Path;

use common::{
    CliOutput, ShmDir, numbered_lines, process_state, publish, run_shmbus, signal, start, wait_for,
    wait_until_waiting,
};
use rustix::process::Signal;
use shmbus::record::{Record, Recording, RecordingFiles};

/// The records of the recording at `path` as far as it reads (a cut last
/// record ends it), or nothing if it is not there yet.
fn records(path: &Path) -> Vec<Record> {
    let Ok(bytes) = std::fs::read(path) else {
        return Vec::new();
    };
    let Ok(recording) = Recording::new(&bytes[..]) else {
        return Vec::new();
    };
    recording.map_while(Result::ok).collect()
}

/// The records as tools/read_recording.py prints them.
fn as_lines(records: &[Record]) -> String {
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    let lines: Vec<String> = records
        .iter()
        .map(|r| match r {
            Record::Bus(b) => {
                let ty = b.msg_type.as_ref().map_or("-".to_owned(), |t| {
                    format!("{}:{}:{:x}:{}", t.size, t.align, t.name_hash, t.name)
                });
                format!(
                    "bus {} {} {} {} {} {} {ty} {}",
                    b.id,
                    b.kind.code(),
                    b.msg_size,
                    b.slots,
                    b.blocks,
                    u8::from(b.lossless),
                    b.name
                )
            }
            Record::Message(m) => format!(
                "message {} {} {} {} {}",
                m.bus,
                m.seq,
                m.mono_ns,
                m.wall_ns,
                hex(&m.payload)
            ),
            Record::Gap(g) => format!("gap {} {} {}", g.bus, g.first, g.count),
            other => panic!("{other:?}"),
        })
        .collect();
    lines.join("\n") + "\n"
}

/// tools/read_recording.py, a reader written from docs/RECORDING.md
/// alone, reads `file` (and its parts) as the Rust reader does, and seeks
/// through the index to where the Rust reader does.
fn python_reads_the_same(file: &Path, records: &[Record]) {
    let python = |more: &[&str]| {
        let tool = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools/read_recording.py");
        let args = [&[tool.to_str().unwrap(), file.to_str().unwrap()][..], more].concat();
        let out = common::run(shmbus_testkit::command("python3", &args));
        out.assert_success();
        out.stdout()
    };
    let all: Vec<Record> = RecordingFiles::open(file)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(all, records, "the parts read as one, as the test read them");
    assert_eq!(python(&[]), as_lines(records));
    // Seeks to a few times and sequences: the first, the middle, the last
    // and past the end.
    let msgs: Vec<_> = records
        .iter()
        .filter_map(|r| match r {
            Record::Message(m) => Some(m.clone()),
            _ => None,
        })
        .collect();
    let mut picks = vec![
        0,
        msgs.len() / 3,
        msgs.len() / 2,
        msgs.len().saturating_sub(1),
    ];
    picks.dedup();
    for i in picks.into_iter().filter(|&i| i < msgs.len()) {
        let m = &msgs[i];
        let mut files = RecordingFiles::open(file).unwrap();
        files.seek_time(m.mono_ns).unwrap();
        let rust: Vec<Record> = files.collect::<Result<_, _>>().unwrap();
        assert_eq!(
            python(&["--seek-time", &m.mono_ns.to_string()]),
            as_lines(&rust)
        );
        let mut files = RecordingFiles::open(file).unwrap();
        files.seek_seq(m.bus, m.seq).unwrap();
        let rust: Vec<Record> = files.collect::<Result<_, _>>().unwrap();
        assert!(
            matches!(rust.iter().find(|r| !matches!(r, Record::Bus(_))), Some(Record::Message(x)) if x == m || x.seq >= m.seq)
        );
        let (bus, seq) = (m.bus.to_string(), m.seq.to_string());
        assert_eq!(python(&["--seek-seq", &bus, &seq]), as_lines(&rust));
    }
}

fn messages(records: &[Record]) -> usize {
    records
        .iter()
        .filter(|r| matches!(r, Record::Message(_)))
        .count()
}

/// Starts `shmbus record BUS --out FILE` and waits until its file holds the
/// bus record, written after its subscriber opened.
fn start_recorder(bus: &str, file: &Path) -> common::Watched {
    let rec = start(&["record", bus, "--out", file.to_str().unwrap()]);
    wait_for("the recorder to declare its bus", || {
        matches!(records(file).first(), Some(Record::Bus(_)))
    });
    rec
}

#[test]
fn a_bus_recorded_until_sigint_replays_the_same_payloads_in_order_into_another_bus() {
    let dir = ShmDir::new("record");
    let a = dir.bus("a");
    let b = dir.bus("b");
    let file = dir.file("a.rec");
    run_shmbus(&["create", &a, "--slots", "64", "--msg-size", "16"]).assert_success();
    let rec = start_recorder(&a, &file);

    // Another process feeds the bus.
    publish(&a, &numbered_lines(1..=20));
    wait_for("the recorder to write all 20 messages", || {
        messages(&records(&file)) == 20
    });
    signal(&rec, Signal::INT);
    rec.wait().assert_success();
    let recorded = records(&file);
    assert_eq!(messages(&recorded), 20, "{recorded:?}");
    python_reads_the_same(&file, &recorded);
    for (i, r) in recorded[1..].iter().enumerate() {
        let Record::Message(m) = r else {
            panic!("{r:?}")
        };
        assert_eq!(m.seq, i as u64);
        assert!(m.payload.starts_with(format!("{}", i + 1).as_bytes()));
    }

    run_shmbus(&["create", &b, "--slots", "1024", "--msg-size", "16"]).assert_success();
    let sub = start(&["sub", &b, "--count", "20", "--timeout", "10"]);
    wait_until_waiting(&b, &sub);
    run_shmbus(&["replay", file.to_str().unwrap(), "--to", &b]).assert_success();
    let got = sub.wait();
    got.assert_success();
    assert_eq!(got.stdout(), numbered_lines(1..=20));
    dir.finish();
}

#[test]
fn a_lag_is_recorded_as_a_gap_and_replayed_as_lag_reports_of_the_same_count() {
    let dir = ShmDir::new("record-gap");
    let a = dir.bus("a");
    let b = dir.bus("b");
    let file = dir.file("a.rec");
    run_shmbus(&["create", &a, "--slots", "8", "--msg-size", "16"]).assert_success();
    let rec = start_recorder(&a, &file);
    wait_until_waiting(&a, &rec);
    signal(&rec, Signal::STOP);
    wait_for("the recorder to stop", || {
        process_state(rec.pid()) == Some('T')
    });
    // Ten messages through eight slots: the stopped recorder is lapped.
    publish(&a, &numbered_lines(1..=10));
    signal(&rec, Signal::CONT);
    // Lapped, it re-syncs half a ring behind the newest (sequence 9) and
    // reads on to it.
    let last_is_9 = |rs: &[Record]| matches!(rs.last(), Some(Record::Message(m)) if m.seq == 9);
    wait_for("the recorder to write the last message", || {
        last_is_9(&records(&file))
    });
    signal(&rec, Signal::INT);
    rec.wait().assert_success();
    let recorded = records(&file);
    let gaps: Vec<_> = recorded
        .iter()
        .filter_map(|r| match r {
            Record::Gap(g) => Some((g.first, g.count)),
            _ => None,
        })
        .collect();
    let [(0, skipped)] = gaps[..] else {
        panic!("one gap from sequence 0: {recorded:?}")
    };
    assert_eq!(skipped + messages(&recorded) as u64, 10, "{recorded:?}");
    python_reads_the_same(&file, &recorded);

    run_shmbus(&["create", &b, "--slots", "1024", "--msg-size", "16"]).assert_success();
    let count = (10 - skipped).to_string();
    let sub = start(&["sub", &b, "--count", &count, "--timeout", "10"]);
    wait_until_waiting(&b, &sub);
    run_shmbus(&[
        "replay",
        file.to_str().unwrap(),
        "--to",
        &b,
        "--speed",
        "max",
    ])
    .assert_success();
    let got = sub.wait();
    got.assert_success();
    assert_eq!(got.stdout(), numbered_lines(skipped + 1..=10));
    // The recorder was told one lag of `skipped`; so is the replay's
    // subscriber (`Publisher::skip`'s marked run is one report).
    assert_eq!(got.stderr, format!("lagged: skipped {skipped}\n"));
    dir.finish();
}

#[test]
fn a_damaged_recording_is_refused_in_one_line_with_exit_code_2() {
    let dir = ShmDir::new("record-bad");
    let a = dir.bus("a");
    let file = dir.file("a.rec");
    run_shmbus(&["create", &a, "--slots", "64", "--msg-size", "16"]).assert_success();
    let rec = start_recorder(&a, &file);
    publish(&a, &numbered_lines(1..=3));
    wait_for("the recorder to write 3 messages", || {
        messages(&records(&file)) == 3
    });
    signal(&rec, Signal::INT);
    rec.wait().assert_success();

    // A payload byte of the second message changed.
    let mut bytes = std::fs::read(&file).unwrap();
    let second = bytes.len() - 64;
    bytes[second - 64 + 8 + 32] ^= 0x40;
    let bad = dir.file("bad.rec");
    std::fs::write(&bad, &bytes).unwrap();
    let offset = second - 64;
    run_shmbus(&["replay", bad.to_str().unwrap(), "--to", &dir.bus("c")])
        .assert_error(2, &format!("record at offset {offset}: check"));

    std::fs::write(&bad, b"not a recording at all").unwrap();
    run_shmbus(&["replay", bad.to_str().unwrap(), "--to", &dir.bus("c")])
        .assert_error(2, "not a shmbus recording");

    // A bus that is not there: one line, and no file left behind.
    let out = dir.file("none.rec");
    run_shmbus(&[
        "record",
        &a,
        &dir.bus("none"),
        "--out",
        out.to_str().unwrap(),
    ])
    .assert_error(1, "none");
    assert!(!out.exists());
    dir.finish();
}

/// A recorder (`shmbus record` with `record`'s flags) of the bus made by
/// `create` (16-byte lines) killed mid-write, once its parts hold `bytes`,
/// leaves a recording that reads whole, all its parts: each sequence a
/// message or inside a gap. Its file.
fn killed_recorder_leaves_a_readable_prefix(
    dir: &ShmDir,
    create: &[&str],
    record: &[&str],
    bytes: u64,
) -> std::path::PathBuf {
    let a = dir.bus("a");
    let file = dir.file("a.rec");
    run_shmbus(&[&["create", &a][..], create].concat()).assert_success();
    let rec = start(&[&["record", &a, "--out", file.to_str().unwrap()][..], record].concat());
    wait_for("the recorder to declare its bus", || {
        matches!(records(&file).first(), Some(Record::Bus(_)))
    });
    let mut feeder = common::start_with_stdin(&["pub", &a]);
    // Lines until the recorder is killed (at most 4 M): a lossy recorder
    // starved of CPU (CI's other lane) records few of any fixed number.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut stdin = feeder.take_stdin();
    let lines = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            use std::io::Write;
            let mut first = 1;
            while first < 4_000_000 && !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let chunk = numbered_lines(first..=first + 9_999);
                if stdin.write_all(chunk.as_bytes()).is_err() {
                    break;
                }
                first += 10_000;
            }
        })
    };
    // Killed once it has written `bytes` (its buffer written out at least
    // once, or many parts made).
    wait_for("the recorder to write its bytes", || {
        let mut total = 0;
        for k in 0.. {
            match std::fs::metadata(shmbus::record::part_path(&file, k)) {
                Ok(m) => total += m.len(),
                Err(_) => break,
            }
        }
        total > bytes
    });
    signal(&rec, Signal::KILL);
    rec.wait();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    lines.join().expect("the line writer");
    feeder.wait().assert_success();

    let mut next = 0u64;
    let mut n = 0;
    let recording = RecordingFiles::open(&file)
        .unwrap_or_else(|e| panic!("a killed recorder left a recording no one reads: {e}"));
    for record in recording {
        match record.unwrap_or_else(|e| panic!("a killed recorder left a damaged file: {e}")) {
            Record::Bus(_) => {}
            Record::Message(m) => {
                assert_eq!(m.seq, next, "a sequence neither recorded nor a gap");
                assert!(m.payload.starts_with(format!("{}", m.seq + 1).as_bytes()));
                next += 1;
                n += 1;
            }
            Record::Gap(g) => {
                assert_eq!(g.first, next, "a gap not where the last record ended");
                next += g.count;
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(n > 0, "no message recorded");
    python_reads_the_same(&file, &all_records(&file));
    file
}

#[test]
fn a_recorder_killed_mid_stream_leaves_a_recording_that_reads_whole_with_no_sequence_unaccounted_for()
 {
    let dir = ShmDir::new("record-kill");
    let plain = ["--slots", "256", "--msg-size", "16"];
    killed_recorder_leaves_a_readable_prefix(&dir, &plain, &[], 1 << 20);
    dir.finish();
}

#[test]
fn a_recorder_of_a_pool_bus_killed_mid_write_leaves_a_readable_prefix() {
    let dir = ShmDir::new("record-kill-pool");
    let pool = ["--capacity", "256", "--pool", "64:512"];
    killed_recorder_leaves_a_readable_prefix(&dir, &pool, &[], 1 << 20);
    dir.finish();
}

#[test]
fn a_recorder_of_a_many_publisher_bus_killed_mid_write_leaves_a_readable_prefix() {
    let dir = ShmDir::new("record-kill-many");
    let many = [
        "--capacity",
        "256",
        "--msg-size",
        "16",
        "--publishers",
        "many",
    ];
    killed_recorder_leaves_a_readable_prefix(&dir, &many, &[], 1 << 20);
    dir.finish();
}

#[test]
fn a_recorder_killed_among_rotations_leaves_parts_that_every_reader_reads_whole() {
    let dir = ShmDir::new("record-kill-rotate");
    let file = killed_recorder_leaves_a_readable_prefix(
        &dir,
        &["--slots", "256", "--msg-size", "16"],
        &["--rotate-size", "4096"],
        256 << 10,
    );
    let whole = all_records(&file);
    let parts = RecordingFiles::open(&file).unwrap().parts().len() as u32;
    assert!(parts > 1, "{parts} parts");
    let part = |k| shmbus::record::part_path(&file, k);
    // The next part cut inside its header (a recorder killed as it made
    // it), and a file after it that is no part of it (the first part,
    // named as the part after): the recording ends before them, for
    // every reader.
    let first = std::fs::read(&file).unwrap();
    std::fs::write(part(parts), &first[..20]).unwrap();
    std::fs::write(part(parts + 1), &first).unwrap();
    assert_eq!(all_records(&file), whole);
    python_reads_the_same(&file, &whole);
    // A part after the cut one: a part was lost, and the error names it.
    let mut next = std::fs::read(part(parts - 1)).unwrap();
    next[12..16].copy_from_slice(&(parts + 1).to_le_bytes());
    std::fs::write(part(parts + 1), &next).unwrap();
    let cut = part(parts).display().to_string();
    let c = dir.bus("c");
    run_shmbus(&["replay", file.to_str().unwrap(), "--to", &c]).assert_error(
        2,
        &format!("{cut}: the file is 20 bytes, a recording's header is 32"),
    );
    let tool = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools/read_recording.py");
    let out = common::run(shmbus_testkit::command(
        "python3",
        &[tool.to_str().unwrap(), file.to_str().unwrap()],
    ));
    assert_eq!(out.code(), Some(2), "{out:?}");
    assert!(out.stderr.starts_with(&cut), "{out:?}");
    dir.finish();
}

#[test]
fn a_part_the_recorder_cannot_make_stops_it_in_one_line_naming_that_file() {
    let dir = ShmDir::new("record-planted");
    let a = dir.bus("a");
    let file = dir.file("a.rec");
    run_shmbus(&["create", &a, "--slots", "1024", "--msg-size", "16"]).assert_success();
    let planted = dir.file("a.rec.1.idx");
    std::fs::write(&planted, b"planted").unwrap();
    let rec = start(&[
        "record",
        &a,
        "--rotate-size",
        "4096",
        "--out",
        file.to_str().unwrap(),
    ]);
    wait_for("the recorder to declare its bus", || {
        matches!(records(&file).first(), Some(Record::Bus(_)))
    });
    publish(&a, &numbered_lines(1..=500));
    rec.wait()
        .assert_error(1, &format!("{}: create: File exists", planted.display()));
    assert!(!dir.file("a.rec.1").exists(), "an empty part left");
    assert_eq!(std::fs::read(&planted).unwrap(), b"planted");
    let recorded = all_records(&file);
    assert!(messages(&recorded) > 0);
    python_reads_the_same(&file, &recorded);
    dir.finish();
}

/// The records of the recording at `path`, all its parts, as far as they
/// read.
fn all_records(path: &Path) -> Vec<Record> {
    RecordingFiles::open(path).map_or(Vec::new(), |f| f.map_while(Result::ok).collect())
}

#[test]
fn a_stream_recorder_killed_leaves_each_record_in_the_file_or_in_the_stream() {
    use shmbus::stream::Consumer;
    use shmbus::{OpenOptions, Wait};
    let dir = ShmDir::new("record-kill-stream");
    let s = dir.bus("s");
    let file = dir.file("s.rec");
    // 1 MiB of ring: the records (16 bytes each on the ring) all fit, and
    // the recorder gives back what it wrote once it holds half of it.
    run_shmbus(&["create", &s, "--kind", "stream", "--bytes", "1048576"]).assert_success();
    let rec = start_recorder(&s, &file);
    wait_until_recorder_sleeps(&rec);
    signal(&rec, Signal::STOP);
    wait_for("the recorder to stop", || {
        process_state(rec.pid()) == Some('T')
    });
    let n = 60_000u64;
    publish(&s, &numbered_lines(1..=n));
    let head = || shmbus::stat::stat(&s).unwrap().stream.unwrap().head;
    let before = head();
    signal(&rec, Signal::CONT);
    // Killed as soon as it has given records back: it holds more, taken
    // but not written.
    wait_for("the recorder to give records back", || head() != before);
    signal(&rec, Signal::KILL);
    rec.wait();
    let recorded = all_records(&file);
    let in_file: Vec<u64> = recorded
        .iter()
        .filter_map(|r| match r {
            Record::Message(m) => Some(std::str::from_utf8(&m.payload).unwrap().parse().unwrap()),
            _ => None,
        })
        .collect();
    let mut consumer = Consumer::<[u8]>::attach(&s, &OpenOptions::default()).unwrap();
    let mut in_stream = Vec::new();
    let mut buf = Vec::new();
    while consumer.pop(&mut buf, Wait::Never).is_ok() {
        in_stream.push(std::str::from_utf8(&buf).unwrap().parse::<u64>().unwrap());
    }
    drop(consumer);
    assert_eq!(in_file, (1..=in_file.len() as u64).collect::<Vec<_>>());
    let first = in_stream.first().copied().unwrap_or(n + 1);
    assert!(
        first <= in_file.len() as u64 + 1,
        "records {} to {} are neither in the file nor in the stream",
        in_file.len() + 1,
        first - 1
    );
    assert_eq!(in_stream, (first..=n).collect::<Vec<_>>());
    python_reads_the_same(&file, &recorded);
    dir.finish();
}

/// Waits until the recorder sleeps (between its polls).
fn wait_until_recorder_sleeps(rec: &common::Watched) {
    wait_for("the recorder to sleep", || {
        process_state(rec.pid()) == Some('S')
    });
}

/// `shmbus ARGS` started with `umask`.
fn start_with_umask(args: &[&str], umask: libc::mode_t) -> common::Watched {
    use std::os::unix::process::CommandExt;
    let mut cmd = common::shmbus(args);
    // SAFETY: runs in the forked child before exec; umask(2) is
    // async-signal-safe and changes only that child.
    unsafe {
        cmd.pre_exec(move || {
            libc::umask(umask);
            Ok(())
        });
    }
    common::spawn(cmd)
}

#[test]
fn a_recording_lets_read_no_one_its_buses_do_not_whatever_the_umask() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let dir = ShmDir::new("record-mode");
    let (private, group, world) = (dir.bus("private"), dir.bus("group"), dir.bus("world"));
    // 256 slots: 200 messages never lap the recorder.
    run_shmbus(&["create", &private, "--slots", "256", "--msg-size", "16"]).assert_success();
    for (bus, mode) in [(&group, "640"), (&world, "644")] {
        run_shmbus(&[
            "create",
            bus,
            "--slots",
            "256",
            "--msg-size",
            "16",
            "--mode",
            mode,
        ])
        .assert_success();
    }
    let egid = rustix::process::getegid().as_raw().to_string();
    let cases: [(&str, Vec<&str>, &[&str], u32); 5] = [
        ("private", vec![&private], &["--rotate-size", "4096"], 0o600),
        ("group", vec![&group, &world], &[], 0o640),
        ("world", vec![&world], &[], 0o644),
        ("mixed", vec![&world, &private], &[], 0o600),
        (
            "asked",
            vec![&private],
            &["--mode", "640", "--group", &egid],
            0o640,
        ),
    ];
    for (label, buses, extra, want) in cases {
        let file = dir.file(&format!("{label}.rec"));
        let mut args = vec!["record"];
        args.extend(buses.iter().copied());
        args.extend(["--out", file.to_str().unwrap()]);
        args.extend(extra);
        // Under umask 000 every file was 0666 before.
        let rec = start_with_umask(&args, 0);
        wait_for("the recorder to declare its buses", || {
            records(&file).len() == buses.len()
        });
        publish(buses[0], &numbered_lines(1..=200));
        wait_for("the recorder to write 200 messages", || {
            messages(&all_records(&file)) == 200
        });
        signal(&rec, Signal::INT);
        rec.wait().assert_success();
        let parts = RecordingFiles::open(&file).unwrap().parts().to_vec();
        assert!(label != "private" || parts.len() > 1, "{parts:?}");
        for part in parts {
            let mut idx = part.clone().into_os_string();
            idx.push(".idx");
            for f in [part, idx.into()] {
                let meta = std::fs::metadata(&f).unwrap();
                let mode = meta.permissions().mode() & 0o7777;
                assert_eq!(mode, want, "{label}: {} is {mode:o}", f.display());
                assert_eq!(meta.gid().to_string(), egid, "{label}: {}", f.display());
            }
        }
    }
    run_shmbus(&[
        "record",
        &private,
        "--out",
        dir.file("x.rec").to_str().unwrap(),
        "--mode",
        "9",
    ])
    .assert_error(2, "not an octal permission mode");
    dir.finish();
}

#[test]
fn recording_one_bus_twice_by_any_name_is_refused_in_one_line_leaving_no_file() {
    let dir = ShmDir::new("record-twice");
    let a = dir.bus("a");
    run_shmbus(&["create", &a, "--slots", "8", "--msg-size", "16"]).assert_success();
    let link = dir.bus("b");
    std::fs::hard_link(&a, &link).unwrap();
    let out = dir.file("a.rec");
    for again in [&a, &link] {
        run_shmbus(&["record", &a, again, "--out", out.to_str().unwrap()]).assert_error(
            2,
            &format!("{again}: the same bus as {a}, already recorded"),
        );
        assert!(!out.exists());
    }
    dir.finish();
}

#[test]
fn buses_of_every_kind_record_into_one_file_each_with_its_kind_geometry_and_exact_payloads() {
    let dir = ShmDir::new("record-kinds");
    let [plain, many, pool, stream, journaled] = common::every_recordable_kind(&dir);
    let file = dir.file("all.rec");
    let names = [&plain, &many, &pool, &stream, &journaled];
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
        publish(name, &format!("{i}-first\n{i}-second, long\n"));
    }
    wait_for("the recorder to write 10 messages", || {
        messages(&records(&file)) == 10
    });
    signal(&rec, Signal::TERM);
    rec.wait().assert_success();
    let recorded = records(&file);
    let kinds: Vec<(u32, u32, u64, u64, String)> = recorded
        .iter()
        .filter_map(|r| match r {
            Record::Bus(b) => Some((b.kind.code(), b.msg_size, b.slots, b.blocks, b.name.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        kinds,
        vec![
            (1, 16, 64, 0, plain.clone()),
            (2, 16, 64, 0, many.clone()),
            (3, 64, 16, 32, pool.clone()),
            (4, 4096, 4096, 0, stream.clone()),
            (5, 16, 64, 0, journaled.clone()),
        ]
    );
    for (i, _) in names.iter().enumerate() {
        let got: Vec<Vec<u8>> = recorded
            .iter()
            .filter_map(|r| match r {
                Record::Message(m) if m.bus == i as u32 => Some(m.payload.clone()),
                _ => None,
            })
            .collect();
        let want = [format!("{i}-first"), format!("{i}-second, long")];
        for (g, w) in got.iter().zip(&want) {
            if i == 2 || i == 3 {
                // A pool block's and a stream record's exact bytes.
                assert_eq!(g, w.as_bytes(), "bus {i}");
            } else {
                assert_eq!(g.len(), 16, "bus {i}");
                assert!(
                    g.starts_with(&w.as_bytes()[..w.len().min(16)]),
                    "bus {i}: {g:?}"
                );
            }
        }
        assert_eq!(got.len(), 2, "bus {i}");
    }
    python_reads_the_same(&file, &recorded);
    dir.finish();
}

#[test]
fn a_lossless_recorder_is_marked_so_and_misses_nothing_of_a_small_ring() {
    let dir = ShmDir::new("record-lossless");
    let a = dir.bus("a");
    let file = dir.file("a.rec");
    run_shmbus(&[
        "create",
        &a,
        "--slots",
        "8",
        "--msg-size",
        "16",
        "--evict-ms",
        "60000",
    ])
    .assert_success();
    let rec = start(&["record", &a, "--lossless", "--out", file.to_str().unwrap()]);
    wait_for(
        "the recorder to declare its bus",
        || matches!(records(&file).first(), Some(Record::Bus(b)) if b.lossless),
    );
    let n = shmbus_testkit::scale_min(20_000, 2_000);
    publish(&a, &numbered_lines(1..=n));
    wait_for("the recorder to write every message", || {
        messages(&records(&file)) == n as usize
    });
    signal(&rec, Signal::INT);
    rec.wait().assert_success();
    let recorded = records(&file);
    assert!(!recorded.iter().any(|r| matches!(r, Record::Gap(_))));
    // A bus that takes no lossless subscriber refuses it: one line.
    let b = dir.bus("b");
    run_shmbus(&[
        "create",
        &b,
        "--slots",
        "8",
        "--msg-size",
        "16",
        "--lossless-subscribers",
        "0",
    ])
    .assert_success();
    let out = dir.file("b.rec");
    let refused = run_shmbus(&["record", &b, "--lossless", "--out", out.to_str().unwrap()]);
    assert_ne!(refused.code(), Some(0), "{refused:?}");
    assert_eq!(refused.stderr.lines().count(), 1, "{refused:?}");
    assert!(!out.exists());
    dir.finish();
}

#[test]
fn a_rotated_recording_splits_into_parts_that_read_as_one_and_seek_through_their_indexes() {
    let dir = ShmDir::new("record-rotate");
    let a = dir.bus("a");
    let file = dir.file("a.rec");
    run_shmbus(&["create", &a, "--slots", "4096", "--msg-size", "16"]).assert_success();
    let rec = start(&[
        "record",
        &a,
        "--lossless",
        "--rotate-size",
        "65536",
        "--out",
        file.to_str().unwrap(),
    ]);
    wait_for("the recorder to declare its bus", || {
        matches!(records(&file).first(), Some(Record::Bus(_)))
    });
    let n = 10_000u64;
    publish(&a, &numbered_lines(1..=n));
    let count = || {
        RecordingFiles::open(&file).map_or(0, |f| {
            f.map_while(Result::ok)
                .filter(|r| matches!(r, Record::Message(_)))
                .count()
        })
    };
    wait_for("the recorder to write every message", || {
        count() == n as usize
    });
    signal(&rec, Signal::INT);
    rec.wait().assert_success();
    let files = RecordingFiles::open(&file).unwrap();
    // 10 000 records of 64 bytes: 640 000 bytes, parts of 64 KiB.
    assert!(files.parts().len() >= 9, "{:?}", files.parts());
    let all: Vec<Record> = files.collect::<Result<_, _>>().unwrap();
    let seqs: Vec<u64> = all
        .iter()
        .filter_map(|r| match r {
            Record::Message(m) => Some(m.seq),
            _ => None,
        })
        .collect();
    assert_eq!(seqs, (0..n).collect::<Vec<_>>());
    python_reads_the_same(&file, &all);
    run_shmbus(&[
        "record",
        &a,
        "--rotate-size",
        "12",
        "--out",
        dir.file("x.rec").to_str().unwrap(),
    ])
    .assert_error(2, "is not a part size");
    dir.finish();
}

#[test]
fn a_version_1_recording_reads_the_same_in_python_and_rust() {
    use shmbus::record::format::{MAGIC, MESSAGE_FIXED, TYPE_BUS, TYPE_GAP, TYPE_MESSAGE, frame};
    let dir = ShmDir::new("record-v1");
    // Made by hand from the page: a 16-byte header, a 16-byte bus body.
    let mut b = Vec::new();
    b.extend_from_slice(&MAGIC.to_le_bytes());
    b.extend_from_slice(&1u64.to_le_bytes());
    let mut bus = Vec::new();
    for w in [0u32, 1, 3, 0] {
        bus.extend_from_slice(&w.to_le_bytes());
    }
    frame(&mut b, TYPE_BUS, &bus, b"old");
    let mut msg = vec![0u8; MESSAGE_FIXED];
    msg[8..16].copy_from_slice(&7u64.to_le_bytes());
    frame(&mut b, TYPE_MESSAGE, &msg, b"abc");
    let mut gap = vec![0u8; 24];
    gap[8..16].copy_from_slice(&8u64.to_le_bytes());
    gap[16..24].copy_from_slice(&2u64.to_le_bytes());
    frame(&mut b, TYPE_GAP, &gap, &[]);
    let file = dir.file("v1.rec");
    std::fs::write(&file, &b).unwrap();
    let recorded = records(&file);
    assert_eq!(recorded.len(), 3, "{recorded:?}");
    python_reads_the_same(&file, &recorded);
    dir.finish();
}
