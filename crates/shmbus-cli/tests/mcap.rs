//! MCAP in the tool (feature `mcap`): `shmbus record --format mcap` of
//! buses of every kind until SIGTERM, with and without compression, read
//! back by the MCAP reader and replayed; `shmbus export --mcap` of a
//! native recording; a recorder killed mid-write leaving a readable file;
//! damaged MCAP files refused in one line. Every child under the
//! harness's watchdog; each test's files in a private directory under
//! /dev/shm, checked gone at the end.

mod common;

use std::path::Path;

use common::{
    CliOutput, ShmDir, numbered_lines, publish, run_shmbus, signal, start, wait_for,
    wait_until_waiting,
};
use rustix::process::Signal;
use shmbus::record::{Record, RecordingFiles};
use shmbus_mcap::McapRecording;

/// The records of the MCAP file at `path` as far as it reads (a file
/// still being written reads to its last whole chunk).
fn records(path: &Path) -> Vec<Record> {
    match McapRecording::open(path) {
        Ok(r) => r.map_while(Result::ok).collect(),
        Err(_) => Vec::new(),
    }
}

fn messages(records: &[Record]) -> usize {
    records
        .iter()
        .filter(|r| matches!(r, Record::Message(_)))
        .count()
}

fn buses(records: &[Record]) -> usize {
    records
        .iter()
        .filter(|r| matches!(r, Record::Bus(_)))
        .count()
}

#[test]
fn every_kind_recorded_as_mcap_until_sigterm_reads_back_and_replays_in_order() {
    for compression in [None, Some("zstd"), Some("lz4")] {
        let dir = ShmDir::new(&format!("mcap-{}", compression.unwrap_or("none")));
        let [plain, many, pool, stream, journaled] = common::every_recordable_kind(&dir);
        let file = dir.file("all.mcap");
        let names = [&plain, &many, &pool, &stream, &journaled];
        let mut args = vec!["record"];
        args.extend(names.iter().map(|n| n.as_str()));
        args.extend(["--out", file.to_str().unwrap(), "--format", "mcap"]);
        if let Some(c) = compression {
            args.extend(["--compression", c]);
        }
        let rec = start(&args);
        wait_for("the recorder to declare its 5 buses", || {
            buses(&records(&file)) == 5
        });
        for (i, name) in names.iter().enumerate() {
            publish(name, &format!("{i}-first\n{i}-second, long\n"));
        }
        wait_for("the recorder to write 10 messages", || {
            messages(&records(&file)) == 10
        });
        signal(&rec, Signal::TERM);
        rec.wait().assert_success();
        // Finished: whole, with its footer, every record read.
        let mut reading = McapRecording::open(&file).unwrap();
        let recorded: Vec<Record> = reading.by_ref().collect::<Result<_, _>>().unwrap();
        assert!(
            !reading.cut(),
            "a recorder stopped by SIGTERM ends its file"
        );
        let bytes = std::fs::read(&file).unwrap();
        assert!(bytes.ends_with(b"\x89MCAP0\r\n"));
        let kinds: Vec<(u32, u32, u64, u64, String)> = recorded
            .iter()
            .filter_map(|r| match r {
                Record::Bus(b) => {
                    Some((b.kind.code(), b.msg_size, b.slots, b.blocks, b.name.clone()))
                }
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
        for i in 0..names.len() {
            let got: Vec<(u64, Vec<u8>)> = recorded
                .iter()
                .filter_map(|r| match r {
                    Record::Message(m) if m.bus == i as u32 => Some((m.seq, m.payload.clone())),
                    _ => None,
                })
                .collect();
            assert_eq!(got.len(), 2, "bus {i}: {got:?}");
            assert!(got[0].1.starts_with(format!("{i}-first").as_bytes()));
            assert!(got[1].1.starts_with(format!("{i}-second, long").as_bytes()));
            assert_eq!(got[1].0, got[0].0 + 1);
        }

        // The plain bus's part replayed into another bus, read by `sub`.
        let copy = dir.bus("copy");
        run_shmbus(&["create", &copy, "--slots", "64", "--msg-size", "16"]).assert_success();
        let sub = start(&["sub", &copy, "--count", "2", "--timeout", "10"]);
        wait_until_waiting(&copy, &sub);
        let mut args = vec!["replay", file.to_str().unwrap(), "--speed", "max"];
        let maps: Vec<String> = names[1..]
            .iter()
            .enumerate()
            .map(|(i, n)| format!("{n}={}", dir.bus(&format!("copy{i}"))))
            .collect();
        let plain_map = format!("{plain}={copy}");
        args.extend(["--map", &plain_map]);
        for m in &maps {
            args.extend(["--map", m]);
        }
        args.extend(["--journal-dir", dir.dir()]);
        run_shmbus(&args).assert_success();
        let got = sub.wait();
        got.assert_success();
        assert_eq!(got.stdout(), "0-first\n0-second, long\n");
        dir.finish();
    }
}

#[test]
fn a_native_recording_exported_to_mcap_holds_every_record_of_every_part() {
    let dir = ShmDir::new("mcap-export");
    let a = dir.bus("a");
    let file = dir.file("a.rec");
    run_shmbus(&["create", &a, "--slots", "1024", "--msg-size", "16"]).assert_success();
    let rec = start(&[
        "record",
        &a,
        "--out",
        file.to_str().unwrap(),
        "--rotate-size",
        "4096",
    ]);
    wait_for("the recorder to declare its bus", || {
        RecordingFiles::open(&file).is_ok_and(|mut f| matches!(f.next(), Some(Ok(Record::Bus(_)))))
    });
    publish(&a, &numbered_lines(1..=400));
    let native = || -> Vec<Record> {
        RecordingFiles::open(&file)
            .map(|f| f.map_while(Result::ok).collect())
            .unwrap_or_default()
    };
    wait_for("the recorder to write 400 messages", || {
        messages(&native()) == 400
    });
    signal(&rec, Signal::INT);
    rec.wait().assert_success();
    assert!(shmbus::record::part_path(&file, 1).exists(), "rotated");
    let out = dir.file("a.mcap");
    let done = run_shmbus(&[
        "export",
        file.to_str().unwrap(),
        "--mcap",
        out.to_str().unwrap(),
        "--compression",
        "zstd",
    ]);
    done.assert_success();
    assert!(done.stderr.contains("400 messages"), "{}", done.stderr);
    assert_eq!(records(&out), native());
    // Not over a file already there.
    run_shmbus(&[
        "export",
        file.to_str().unwrap(),
        "--mcap",
        out.to_str().unwrap(),
    ])
    .assert_error(2, "a.mcap");
    dir.finish();
}

/// `shmbus record BUS --format mcap --out FILE`, once it has declared its
/// bus in the file.
fn mcap_recorder(bus: &str, file: &Path) -> common::Watched {
    let rec = start(&[
        "record",
        bus,
        "--out",
        file.to_str().unwrap(),
        "--format",
        "mcap",
    ]);
    wait_for("the recorder to declare its bus", || {
        buses(&records(file)) == 1
    });
    rec
}

#[test]
fn a_killed_mcap_recorder_leaves_a_file_that_reads_and_replays_to_its_last_whole_chunk() {
    let dir = ShmDir::new("mcap-killed");
    let a = dir.bus("a");
    let file = dir.file("a.mcap");
    run_shmbus(&["create", &a, "--slots", "1024", "--msg-size", "16"]).assert_success();
    let rec = mcap_recorder(&a, &file);
    publish(&a, &numbered_lines(1..=300));
    wait_for("the recorder to write 300 messages", || {
        messages(&records(&file)) == 300
    });
    signal(&rec, Signal::KILL);
    rec.wait();
    let mut reading = McapRecording::open(&file).unwrap();
    let recorded: Vec<Record> = reading.by_ref().collect::<Result<_, _>>().unwrap();
    assert!(reading.cut(), "no footer");
    assert_eq!(messages(&recorded), 300);
    // Cut again, halfway: what is before the cut chunk still reads.
    let bytes = std::fs::read(&file).unwrap();
    let cut = dir.file("cut.mcap");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let prefix = records(&cut);
    assert!(prefix.len() < recorded.len());
    assert_eq!(&recorded[..prefix.len()], &prefix[..]);

    let b = dir.bus("b");
    run_shmbus(&["create", &b, "--slots", "1024", "--msg-size", "16"]).assert_success();
    let sub = start(&["sub", &b, "--count", "300", "--timeout", "10"]);
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
    assert_eq!(got.stdout(), numbered_lines(1..=300));
    dir.finish();
}

#[test]
fn damaged_or_foreign_mcap_files_are_refused_in_one_line() {
    let dir = ShmDir::new("mcap-bad");
    let a = dir.bus("a");
    let file = dir.file("a.mcap");
    run_shmbus(&["create", &a, "--slots", "1024", "--msg-size", "16"]).assert_success();
    let rec = mcap_recorder(&a, &file);
    publish(&a, &numbered_lines(1..=3));
    wait_for("3 messages", || messages(&records(&file)) == 3);
    signal(&rec, Signal::INT);
    rec.wait().assert_success();
    let good = std::fs::read(&file).unwrap();

    // A record claiming 2^62 bytes right after the magic.
    let bad = dir.file("bad.mcap");
    let mut huge = good[..8].to_vec();
    huge.push(0x01);
    huge.extend_from_slice(&(1u64 << 62).to_le_bytes());
    huge.extend_from_slice(&[0; 32]);
    std::fs::write(&bad, &huge).unwrap();
    run_shmbus(&["replay", bad.to_str().unwrap(), "--to", &dir.bus("c")])
        .assert_error(2, "damaged MCAP file");

    // The MCAP magic, then garbage.
    let mut garbage = good[..8].to_vec();
    garbage.extend((0..2000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8));
    std::fs::write(&bad, &garbage).unwrap();
    let out = run_shmbus(&["replay", bad.to_str().unwrap(), "--to", &dir.bus("c")]);
    assert!(out.code() == Some(2) || out.code() == Some(0), "{out:?}");
    assert!(!out.stderr.contains("panicked"), "{out:?}");

    // A flipped byte in the middle of the data: a check fails, or a
    // record is refused; never a panic.
    let mut flipped = good.clone();
    let mid = good.len() / 3;
    flipped[mid] ^= 0x55;
    std::fs::write(&bad, &flipped).unwrap();
    let out = run_shmbus(&["replay", bad.to_str().unwrap(), "--to", &dir.bus("d")]);
    assert!(!out.stderr.contains("panicked"), "{out:?}");
    let _ = shmbus::remove(&dir.bus("c"));
    let _ = shmbus::remove(&dir.bus("d"));
    dir.finish();
}
