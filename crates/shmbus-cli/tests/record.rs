//! `shmbus record` and `shmbus replay` as a user meets them (issue 32,
//! phase 1): a bus fed by another process recorded until SIGINT, the
//! recording replayed into another bus that `shmbus sub` reads, a lag
//! recorded as a gap and replayed as one, and a damaged recording refused
//! in one line. Every child under the harness's watchdog; each test's
//! files in a private directory under /dev/shm, checked gone at the end.

mod common;

use std::path::Path;

use common::{
    numbered_lines, process_state, publish, run_shmbus, signal, start, wait_for,
    wait_until_waiting, CliOutput, ShmDir,
};
use rustix::process::Signal;
use shmbus::record::{Record, Recording};

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
            Record::Bus(b) => format!("bus {} {} {} {}", b.id, b.kind.code(), b.msg_size, b.name),
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
/// alone, reads `file` as the Rust reader does.
fn python_reads_the_same(file: &Path, records: &[Record]) {
    let tool = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools/read_recording.py");
    let cmd = shmbus_testkit::command("python3", &[tool.to_str().unwrap(), file.to_str().unwrap()]);
    let out = common::run(cmd);
    out.assert_success();
    assert_eq!(out.stdout(), as_lines(records));
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

    // Phase 1 records plain buses only: any other kind is one line.
    let s = dir.bus("s");
    run_shmbus(&["create", &s, "--kind", "stream", "--bytes", "4096"]).assert_success();
    run_shmbus(&["record", &s, "--out", dir.file("s.rec").to_str().unwrap()])
        .assert_error(2, "is a stream");
    dir.finish();
}

#[test]
fn a_recorder_killed_mid_stream_leaves_a_recording_that_reads_whole_with_no_sequence_unaccounted_for(
) {
    let dir = ShmDir::new("record-kill");
    let a = dir.bus("a");
    let file = dir.file("a.rec");
    run_shmbus(&["create", &a, "--slots", "256", "--msg-size", "16"]).assert_success();
    let rec = start_recorder(&a, &file);
    let mut feeder = common::start_with_stdin(&["pub", &a]);
    let lines = numbered_lines(1..=200_000);
    feeder.feed(lines.into_bytes());
    // Killed while its buffer has been written out at least once.
    wait_for("the recorder to write 1 MiB", || {
        std::fs::metadata(&file).is_ok_and(|m| m.len() > 1 << 20)
    });
    signal(&rec, Signal::KILL);
    rec.wait();
    feeder.wait().assert_success();

    let bytes = std::fs::read(&file).unwrap();
    let mut next = 0u64;
    let mut n = 0;
    for record in Recording::new(&bytes[..]).unwrap() {
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
    python_reads_the_same(&file, &records(&file));
    dir.finish();
}
