//! FileRecorder and RecordingFiles: rotation, the index, seeks.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::*;

/// A directory removed when the test ends, pass or fail.
struct TempDir(PathBuf);

impl TempDir {
    fn new(test: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("shmbus-A-rec-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Bytes a part: Miri's 60 messages (about 3 KiB) still fill several.
const PART: u64 = if cfg!(miri) { 1 << 10 } else { 8 << 10 };

fn messages() -> u64 {
    if cfg!(miri) {
        60
    } else {
        shmbus_testkit::scale_min(2000, 300)
    }
}

/// Two buses, messages at times 1000, 2000, ... (bus 1 every third), a gap
/// on bus 0 every 50th; small index steps and parts of `PART` bytes.
fn write(path: &Path, rotation: Rotation) -> Vec<Record> {
    let mut rec = FileRecorder::create_with(path, rotation, 512).unwrap();
    let a = rec
        .add_bus(&BusSpec::new("a", RecordedKind::Bus, 8))
        .unwrap();
    let b = rec
        .add_bus(&BusSpec::new("b", RecordedKind::Stream, 64))
        .unwrap();
    let (mut seq_a, mut seq_b) = (0u64, 0u64);
    for i in 0..messages() {
        let t = (i + 1) * 1000;
        if i % 3 == 2 {
            rec.message(b, seq_b, t, t, &vec![b'x'; (i % 64) as usize])
                .unwrap();
            seq_b += 1;
        } else if i % 50 == 49 {
            rec.gap(a, seq_a, 3).unwrap();
            seq_a += 3;
        } else {
            rec.message(a, seq_a, t, t, &i.to_le_bytes()).unwrap();
            seq_a += 1;
        }
    }
    rec.flush().unwrap();
    RecordingFiles::open(path)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// What a seek to `target` should give: the first matching record of a
/// plain scan of everything.
fn scan_answer(all: &[Record], time: Option<u64>, seq: Option<(u32, u64)>) -> Option<Record> {
    all.iter()
        .find(|r| match (r, time, seq) {
            (Record::Message(m), Some(t), _) => m.mono_ns >= t,
            (Record::Message(m), _, Some((bus, s))) => m.bus == bus && m.seq >= s,
            (Record::Gap(g), None, Some((bus, s))) => g.bus == bus && g.first + g.count > s,
            _ => false,
        })
        .cloned()
}

fn first_after_seek(path: &Path, time: Option<u64>, seq: Option<(u32, u64)>) -> Option<Record> {
    let mut files = RecordingFiles::open(path).unwrap();
    match (time, seq) {
        (Some(t), _) => files.seek_time(t).unwrap(),
        (_, Some((bus, s))) => files.seek_seq(bus, s).unwrap(),
        _ => unreachable!(),
    }
    files
        .find(|r| !matches!(r, Ok(Record::Bus(_))))
        .map(Result::unwrap)
}

fn check_every_target(path: &Path, all: &[Record]) {
    let n = messages();
    // Each target opens the files again, about a CPU second under Miri:
    // there a stride of 29 (9.7 messages' time) still seeks before the
    // first message, into every part (Miri's parts hold some 20 messages)
    // and past each bus's last sequence (bus 1's end at 19, bus 0's at
    // 42); the native run seeks to every seventh.
    let step = if cfg!(miri) { 29 } else { 7 };
    for t in (0..(n + 2) * 1000).step_by(step * 1000 / 3) {
        assert_eq!(
            first_after_seek(path, Some(t), None),
            scan_answer(all, Some(t), None),
            "time {t}"
        );
    }
    for bus in 0..2 {
        for s in (0..n + 5).step_by(step) {
            assert_eq!(
                first_after_seek(path, None, Some((bus, s))),
                scan_answer(all, None, Some((bus, s))),
                "bus {bus} seq {s}"
            );
        }
    }
}

fn index_of(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".idx");
    s.into()
}

#[test]
fn a_rotated_recording_is_parts_named_predictably_each_whole_and_read_as_one() {
    let dir = TempDir::new("parts");
    let path = dir.0.join("r.rec");
    let all = write(&path, Rotation::default().bytes(PART));
    let one = TempDir::new("parts-one");
    let single = write(&one.0.join("r.rec"), Rotation::default());
    assert_eq!(all, single, "rotated and not, the same records");
    let files = RecordingFiles::open(&path).unwrap();
    let parts = files.parts().len() as u32;
    assert!(parts >= if cfg!(miri) { 1 } else { 4 }, "{parts} parts");
    for part in 0..parts {
        let p = part_path(&path, part);
        assert!(index_of(&p).exists(), "{}", p.display());
        // Each part alone: a recording that declares both buses first.
        let alone: Vec<Record> = Recording::new(std::fs::File::open(&p).unwrap())
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(
            matches!(&alone[..2], [Record::Bus(a), Record::Bus(b)] if a.name == "a" && b.name == "b")
        );
    }
    assert!(!part_path(&path, parts).exists());
    // A later part opened by its own name reads alone, seeks included.
    let second = part_path(&path, parts - 1);
    let alone: Vec<Record> = Recording::new(std::fs::File::open(&second).unwrap())
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let files: Vec<Record> = RecordingFiles::open(&second)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(files, alone);
    check_every_target(&second, &alone);
    let buses = all.iter().filter(|r| matches!(r, Record::Bus(_))).count();
    assert_eq!(buses, 2, "each bus once when read as one");
}

#[test]
fn a_part_of_another_recording_is_refused_naming_it() {
    let dir = TempDir::new("mismatch");
    let (x, y) = (dir.0.join("x.rec"), dir.0.join("y.rec"));
    write(&x, Rotation::default().bytes(PART));
    write(&y, Rotation::default().bytes(PART));
    std::fs::rename(part_path(&y, 1), part_path(&x, 1)).unwrap();
    match RecordingFiles::open(&x) {
        Err(OpenRecordingError::PartMismatch {
            found: 1,
            expected: 1,
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn rotation_by_time_starts_a_part_when_the_recorded_clock_says() {
    let dir = TempDir::new("time");
    let path = dir.0.join("r.rec");
    // Messages 1 µs apart: a part every 100 µs of them.
    let all = write(&path, Rotation::default().every(Duration::from_micros(100)));
    let parts = RecordingFiles::open(&path).unwrap().parts().len() as u64;
    assert_eq!(parts, messages().div_ceil(100));
    assert_eq!(all.len() as u64, 2 + messages());
}

#[test]
fn a_seek_by_time_or_sequence_finds_what_a_scan_finds() {
    let dir = TempDir::new("seek");
    let path = dir.0.join("r.rec");
    let all = write(&path, Rotation::default().bytes(PART));
    check_every_target(&path, &all);
}

#[test]
fn a_seek_uses_the_index_and_does_not_read_from_the_start() {
    let dir = TempDir::new("uses");
    let path = dir.0.join("r.rec");
    write(&path, Rotation::default());
    // Damage the first message record: a scan stops there, the index jumps
    // past it.
    let mut bytes = std::fs::read(&path).unwrap();
    let first_msg = 32 + 80 + 80; // header, two bus records
    bytes[first_msg + 20] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    let late = (messages() - 5) * 1000;
    let got = first_after_seek(&path, Some(late), None);
    assert!(matches!(got, Some(Record::Message(m)) if m.mono_ns == late));
    std::fs::remove_file(index_of(&path)).unwrap();
    let mut files = RecordingFiles::open(&path).unwrap();
    files.seek_time(late).unwrap();
    let err = files.find(|r| r.is_err());
    assert!(
        matches!(err, Some(Err(ReadError::Checksum { .. }))),
        "{err:?}"
    );
}

#[test]
fn a_missing_cut_damaged_or_stale_index_gives_the_same_answers() {
    let dir = TempDir::new("stale");
    let path = dir.0.join("r.rec");
    // Parts of 8 KiB even under Miri: `shifted` needs an index of some
    // entries in the first part.
    let all = write(&path, Rotation::default().bytes(8 << 10));
    let other = dir.0.join("other.rec");
    write(&other, Rotation::default().bytes(8 << 10));
    let idx = index_of(&path);
    let good = std::fs::read(&idx).unwrap();
    let mut s = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    // Under Miri one index cut short and one with a flipped bit: each kind
    // of bad index still meets every target (each variant costs Miri some
    // 17 CPU seconds); the native run tries twelve of each.
    let cuts = if cfg!(miri) { 1 } else { 12 };
    let mut variants: Vec<Vec<u8>> = (0..cuts)
        .map(|_| good[..(next() as usize) % good.len()].to_vec())
        .collect();
    for _ in 0..cuts {
        let mut b = good.clone();
        let i = 32 + (next() as usize) % (b.len() - 32);
        b[i] ^= 1 << (next() % 8);
        variants.push(b);
    }
    // Another recording's index (its id differs), and one whose header
    // is right but whose entries point elsewhere.
    variants.push(std::fs::read(index_of(&other)).unwrap());
    variants.push(shifted(&good));
    for v in variants {
        std::fs::write(&idx, &v).unwrap();
        check_every_target(&path, &all);
    }
    std::fs::remove_file(&idx).unwrap();
    check_every_target(&path, &all);
}

/// The index with every position pointing 8 bytes further (each entry
/// checked again): offsets that are no record's start, behind bus entries
/// that are right.
fn shifted(good: &[u8]) -> Vec<u8> {
    let mut entries = Recording::with_magic(good, format::INDEX_MAGIC).unwrap();
    let mut out = good[..format::HEADER_V2].to_vec();
    while let Ok(Some((ty, mut body))) = entries.next_raw() {
        if ty == format::INDEX_POSITION {
            let off = format::u64_at(&body, 0) + 8;
            body[0..8].copy_from_slice(&off.to_le_bytes());
        }
        format::frame(&mut out, ty, &body, &[]);
    }
    assert!(out.len() > 200, "entries were shifted");
    out
}

#[test]
fn a_recording_cut_by_a_crash_seeks_within_what_is_left() {
    let dir = TempDir::new("crash");
    let path = dir.0.join("r.rec");
    write(&path, Rotation::default());
    let len = std::fs::metadata(&path).unwrap().len();
    // The index points past the cut: a seek there finds nothing, never a
    // wrong record.
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(len / 2 + 3).unwrap();
    let all: Vec<Record> = RecordingFiles::open(&path)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    check_every_target(&path, &all);
}

#[test]
fn a_dropped_file_recorder_leaves_its_recording_and_index_whole() {
    let dir = TempDir::new("drop");
    let path = dir.0.join("r.rec");
    let mut rec = FileRecorder::create_with(&path, Rotation::default(), 64).unwrap();
    let bus = rec
        .add_bus(&BusSpec::new("a", RecordedKind::Bus, 8))
        .unwrap();
    for i in 0..100u64 {
        rec.message(bus, i, i, i, &i.to_le_bytes()).unwrap();
    }
    drop(rec);
    let all = RecordingFiles::open(&path).unwrap().count();
    assert_eq!(all, 101);
    let idx = index::read(
        &index_of(&path),
        0,
        Recording::new(std::fs::File::open(&path).unwrap())
            .unwrap()
            .part()
            .1,
    );
    let n = idx.map(|i| (i.buses.len(), i.positions.len()));
    assert!(
        n.is_some_and(|(_, p)| p > 10),
        "the index written on drop: {n:?}"
    );
}

#[test]
fn filters_by_bus_and_time_keep_only_those() {
    let dir = TempDir::new("filter");
    let path = dir.0.join("r.rec");
    write(&path, Rotation::default().bytes(PART));
    let got: Vec<Record> = RecordingFiles::open(&path)
        .unwrap()
        .only_bus(1)
        .between(Some(10_000), Some(40_000))
        .collect::<Result<_, _>>()
        .unwrap();
    let times: Vec<u64> = got
        .iter()
        .filter_map(|r| match r {
            Record::Message(m) => Some(m.mono_ns),
            _ => None,
        })
        .collect();
    let want: Vec<u64> = (0..messages())
        .filter(|i| i % 3 == 2)
        .map(|i| (i + 1) * 1000)
        .filter(|t| (10_000..=40_000).contains(t))
        .collect();
    assert_eq!(times, want);
    assert!(got.iter().all(|r| !matches!(r, Record::Gap(_))));
}

/// The sequences of the messages of `records`.
fn seqs(records: &[Record]) -> Vec<u64> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::Message(m) => Some(m.seq),
            _ => None,
        })
        .collect()
}

/// Messages into parts of 4 KiB until part `parts - 1` has been started
/// by its first message (still in the buffer), then the recorder dropped
/// as a SIGKILL drops it: nothing buffered written. The messages before
/// that last one.
fn killed_after_rotation(path: &Path, parts: u32) -> u64 {
    let mut rec = FileRecorder::create(path, Rotation::default().bytes(4096)).unwrap();
    let bus = rec
        .add_bus(&BusSpec::new("a", RecordedKind::Bus, 8))
        .unwrap();
    let mut i = 0;
    while rec.parts() < parts {
        rec.message(bus, i, i, i, &i.to_le_bytes()).unwrap();
        i += 1;
    }
    std::mem::forget(rec);
    i - 1
}

#[test]
// Leaks the recorder on purpose (a killed one flushes nothing), which
// Miri reports.
#[cfg_attr(miri, ignore)]
fn a_recorder_killed_just_after_a_rotation_leaves_a_recording_that_reads_whole() {
    let dir = TempDir::new("kill-rotate");
    let path = dir.0.join("r.rec");
    let before = killed_after_rotation(&path, 3);
    // The new part's header is in its file, whole, though nothing after
    // it was written.
    let last = part_path(&path, 2);
    assert_eq!(std::fs::metadata(&last).unwrap().len(), 32);
    let files = RecordingFiles::open(&path).unwrap();
    assert_eq!(files.parts().len(), 3);
    let all: Vec<Record> = files.collect::<Result<_, _>>().unwrap();
    assert_eq!(seqs(&all), (0..before).collect::<Vec<_>>());
}

#[test]
fn a_part_cut_inside_its_header_ends_the_recording_unless_a_part_follows_it() {
    let dir = TempDir::new("cut-header");
    let path = dir.0.join("r.rec");
    let all = write(&path, Rotation::default().bytes(PART));
    let parts = RecordingFiles::open(&path).unwrap().parts().len() as u32;
    assert!(parts >= 2, "{parts} parts");
    let last = part_path(&path, parts - 1);
    let last_bytes = std::fs::read(&last).unwrap();
    // Every part but the last, read whole.
    let cut = dir.0.join("cut.rec");
    for p in 0..parts - 1 {
        // Read and write, not fs::copy: Miri has no copy_file_range.
        std::fs::write(
            part_path(&cut, p),
            std::fs::read(part_path(&path, p)).unwrap(),
        )
        .unwrap();
    }
    let before: Vec<Record> = RecordingFiles::open(&cut)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(before.len() < all.len() && all.starts_with(&before));
    // The last part cut anywhere inside its header (a recorder killed as
    // it made it): the recording ends before it.
    let step = if cfg!(miri) { 7 } else { 1 };
    for len in (0..format::HEADER_V2).step_by(step) {
        std::fs::write(part_path(&cut, parts - 1), &last_bytes[..len]).unwrap();
        let got: Vec<Record> = RecordingFiles::open(&cut)
            .unwrap_or_else(|e| panic!("cut at {len}: {e}"))
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(got, before, "cut at {len}");
    }
    // A cut part with a part after it: one was lost; the error names it.
    if parts >= 3 {
        let middle = part_path(&path, 1);
        std::fs::write(&middle, &last_bytes[..20]).unwrap();
        match RecordingFiles::open(&path) {
            Err(e @ OpenRecordingError::InPart { .. }) => assert_eq!(
                e.to_string(),
                format!(
                    "{}: the file is 20 bytes, a recording's header is 32",
                    middle.display()
                )
            ),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn a_file_after_the_last_part_that_is_not_a_part_of_it_ends_the_recording() {
    let dir = TempDir::new("stray");
    let path = dir.0.join("r.rec");
    let all = write(&path, Rotation::default().bytes(PART));
    let parts = RecordingFiles::open(&path).unwrap().parts().len() as u32;
    let other = dir.0.join("other.rec");
    write(&other, Rotation::default().bytes(PART));
    let stray = part_path(&path, parts);
    let not_parts: Vec<Vec<u8>> = vec![
        std::fs::read(part_path(&other, parts.min(2) - 1)).unwrap(),
        std::fs::read(&path).unwrap(), // part 0 again
        b"not a recording at all, but long enough".to_vec(),
        Vec::new(),
    ];
    for bytes in not_parts {
        std::fs::write(&stray, &bytes).unwrap();
        let files = RecordingFiles::open(&path).unwrap();
        assert_eq!(files.parts().len() as u32, parts);
        let got: Vec<Record> = files.collect::<Result<_, _>>().unwrap();
        assert_eq!(got, all);
    }
    std::fs::remove_file(&stray).unwrap();
    std::fs::create_dir(&stray).unwrap();
    let got: Vec<Record> = RecordingFiles::open(&path)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(got, all, "a directory in a part's place");
}

#[test]
// Makes a FIFO, which Miri does not.
#[cfg_attr(miri, ignore)]
fn a_fifo_in_a_parts_or_an_indexs_place_is_no_part_and_never_hangs_the_reader() {
    let dir = TempDir::new("fifo");
    let path = dir.0.join("r.rec");
    let all = write(&path, Rotation::default().bytes(PART));
    let parts = RecordingFiles::open(&path).unwrap().parts().len() as u32;
    let fifo = |p: &Path| {
        let _ = std::fs::remove_file(p);
        rustix::fs::mkfifoat(rustix::fs::CWD, p, rustix::fs::Mode::from_raw_mode(0o600)).unwrap();
    };
    fifo(&part_path(&path, parts));
    fifo(&index_of(&part_path(&path, parts - 1)));
    let got: Vec<Record> = RecordingFiles::open(&path)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(got, all);
    check_every_target(&path, &all);
    fifo(&path);
    let err = RecordingFiles::open(&path).unwrap_err();
    assert_eq!(err.to_string(), "reading the recording: not a regular file");
}

#[test]
fn a_rotation_blocked_by_a_file_in_the_way_names_it_and_leaves_no_empty_part() {
    let dir = TempDir::new("planted");
    let path = dir.0.join("r.rec");
    for planted in [index_of(&part_path(&path, 1)), part_path(&path, 1)] {
        std::fs::write(&planted, b"planted").unwrap();
        let mut rec = FileRecorder::create(&path, Rotation::default().bytes(4096)).unwrap();
        let bus = rec
            .add_bus(&BusSpec::new("a", RecordedKind::Bus, 8))
            .unwrap();
        let mut i = 0;
        let err = loop {
            match rec.message(bus, i, i, i, &i.to_le_bytes()) {
                Ok(()) => i += 1,
                Err(e) => break e,
            }
        };
        match &err {
            WriteError::File {
                path: p,
                what,
                source,
            } => {
                assert_eq!((p, *what), (&planted, "create"), "{err}");
                assert_eq!(source.kind(), std::io::ErrorKind::AlreadyExists);
            }
            other => panic!("{other}"),
        }
        drop(rec);
        // Nothing of part 1 made, the planted file left, part 0 whole.
        assert_eq!(std::fs::read(&planted).unwrap(), b"planted");
        for made in [part_path(&path, 1), index_of(&part_path(&path, 1))] {
            assert!(made == planted || !made.exists(), "{}", made.display());
        }
        let got: Vec<Record> = RecordingFiles::open(&path)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(seqs(&got), (0..i).collect::<Vec<_>>());
        for f in [path.clone(), index_of(&path), planted] {
            std::fs::remove_file(f).unwrap();
        }
    }
    // The first part's index in the way: no part left either.
    std::fs::write(index_of(&path), b"planted").unwrap();
    let err = FileRecorder::create(&path, Rotation::default()).unwrap_err();
    assert!(
        matches!(&err, WriteError::File { path: p, .. } if *p == index_of(&path)),
        "{err}"
    );
    assert!(!path.exists());
}

#[test]
fn every_parts_index_has_positions_from_its_first_message() {
    let dir = TempDir::new("first-position");
    let path = dir.0.join("r.rec");
    // Parts of 4 KiB and the index's usual step (64 KiB): only the first
    // message of each part gets positions.
    let mut rec = FileRecorder::create(&path, Rotation::default().bytes(4096)).unwrap();
    let a = rec
        .add_bus(&BusSpec::new("a", RecordedKind::Bus, 8))
        .unwrap();
    let b = rec
        .add_bus(&BusSpec::new("b", RecordedKind::Bus, 8))
        .unwrap();
    for i in 0..200u64 {
        rec.message(a, i, i, i, &i.to_le_bytes()).unwrap();
    }
    rec.message(b, 0, 200, 200, &[0; 8]).unwrap();
    rec.flush().unwrap();
    let parts = rec.parts();
    drop(rec);
    assert!(parts >= 3, "{parts} parts");
    let header_and_buses = 32 + 2 * 80;
    for part in 0..parts {
        let p = part_path(&path, part);
        let (_, id) = Recording::new(std::fs::File::open(&p).unwrap())
            .unwrap()
            .part();
        let idx = index::read(&index_of(&p), part, id).unwrap();
        let first: Vec<(u64, u32, u64)> = idx
            .positions
            .iter()
            .map(|q| (q.offset, q.bus, q.seq_below))
            .collect();
        // One position per bus declared, at the part's first message;
        // bus b has had no record before it (its sequences are below 0).
        let a_below = if part == 0 { 0 } else { first[0].2 };
        assert_eq!(
            first,
            [(header_and_buses, 0, a_below), (header_and_buses, 1, 0)],
            "part {part}"
        );
    }
}

#[test]
// Sets modes with fchmod, which Miri does not.
#[cfg_attr(miri, ignore)]
fn every_file_of_a_recording_gets_exactly_its_mode_owner_only_by_default() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new("mode");
    // Under any umask but 077 the default was wider before (0644 under
    // 022); 0666 is wider than most umasks let through.
    for (label, access, want) in [
        ("default", None, 0o600),
        ("group", Some(FileAccess::default().mode(0o640)), 0o640),
        ("all", Some(FileAccess::default().mode(0o666)), 0o666),
    ] {
        let path = dir.0.join(format!("{label}.rec"));
        let rotation = Rotation::default().bytes(4096);
        let mut rec = match access {
            None => FileRecorder::create(&path, rotation),
            Some(a) => FileRecorder::create_with_access(&path, rotation, a),
        }
        .unwrap();
        let bus = rec
            .add_bus(&BusSpec::new("a", RecordedKind::Bus, 8))
            .unwrap();
        for i in 0..200u64 {
            rec.message(bus, i, i, i, &i.to_le_bytes()).unwrap();
        }
        rec.flush().unwrap();
        assert!(rec.parts() >= 2);
        for part in 0..rec.parts() {
            let p = part_path(&path, part);
            for f in [index_of(&p), p] {
                let mode = std::fs::metadata(&f).unwrap().permissions().mode() & 0o7777;
                assert_eq!(mode, want, "{label}: {} is {mode:o}", f.display());
            }
        }
    }
}
