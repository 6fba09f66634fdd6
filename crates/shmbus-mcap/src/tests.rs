//! Round trips through MCAP: every kind captured live, compared record by
//! record with a native recording of the same capture and replayed; long
//! sequences, rotation, cut and damaged files.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use shmbus::bus::ManyPublisher;
use shmbus::record::{
    AddBusError, BusSpec, Capture, FileRecorder, GapRecord, MessageRecord, Record, RecordedKind,
    RecordingFiles, Replayer, Rotation, Sink, Speed, WriteError,
};
use shmbus::{
    BusOptions, OpenOptions, Publisher, Received, Start, Subscriber, Wait, journal, pool, stream,
};

use crate::{
    Compression, McapOptions, McapRecorder, McapRecording, OpenError, ReadError, ReplayMcapError,
};

/// A temporary directory and bus names of one test, removed at the end.
struct Scratch {
    dir: PathBuf,
    test: String,
    names: Vec<String>,
}

impl Scratch {
    fn new(test: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("shmbus-mcap-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self {
            dir,
            test: test.to_owned(),
            names: Vec::new(),
        }
    }

    fn name(&mut self, what: &str) -> String {
        let name = format!("shmbus-mcap-t-{}-{what}-{}", self.test, std::process::id());
        let _ = shmbus::remove(&name);
        self.names.push(name.clone());
        name
    }

    fn path(&self, file: &str) -> PathBuf {
        self.dir.join(file)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        for name in &self.names {
            let _ = shmbus::remove(name);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Writes everything into both sinks: a native recording and MCAP.
struct Tee(FileRecorder, McapRecorder);

impl Sink for Tee {
    fn add_bus(&mut self, spec: &BusSpec) -> Result<u32, AddBusError> {
        let a = self.0.add_bus(spec)?;
        let b = Sink::add_bus(&mut self.1, spec)?;
        assert_eq!(a, b);
        Ok(a)
    }

    fn message(
        &mut self,
        bus: u32,
        seq: u64,
        mono: u64,
        wall: u64,
        p: &[u8],
    ) -> Result<(), WriteError> {
        self.0.message(bus, seq, mono, wall, p)?;
        self.1.message(bus, seq, mono, wall, p)
    }

    fn gap(&mut self, bus: u32, first: u64, count: u64) -> Result<(), WriteError> {
        self.0.gap(bus, first, count)?;
        Sink::gap(&mut self.1, bus, first, count)
    }

    fn flush(&mut self) -> Result<(), WriteError> {
        self.0.flush()?;
        Sink::flush(&mut self.1)
    }
}

fn native(path: &Path) -> Vec<Record> {
    RecordingFiles::open(path)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn mcap(path: &Path) -> Vec<Record> {
    McapRecording::open(path)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// The records of each bus, in order (files may interleave buses
/// differently: the native one declares every bus first, like this).
fn by_bus(records: &[Record]) -> Vec<(String, Vec<Record>)> {
    let mut out: Vec<(String, Vec<Record>)> = Vec::new();
    for r in records {
        match r {
            Record::Bus(b) => {
                assert_eq!(b.id as usize, out.len(), "buses in id order");
                out.push((b.name.clone(), vec![r.clone()]));
            }
            Record::Message(m) => out[m.bus as usize].1.push(r.clone()),
            Record::Gap(g) => out[g.bus as usize].1.push(r.clone()),
            _ => unreachable!(),
        }
    }
    out
}

fn payload(kind: usize, i: u64) -> Vec<u8> {
    match kind {
        // Pools and streams: lengths of their own.
        2 | 3 => (0..(1 + i % 50)).map(|j| (i + j) as u8).collect(),
        _ => (i * 7 + kind as u64).to_le_bytes().to_vec(),
    }
}

/// Five buses, one of each kind: publishes `n` messages into each (the
/// plain one's ring of 8 slots overrun first, so the capture has a gap),
/// captured into `sink`; returns the bus names.
fn capture_every_kind<S: Sink>(s: &mut Scratch, sink: S, n: u64) -> (Vec<String>, S) {
    let names: Vec<String> = ["plain", "many", "pool", "stream", "journaled"]
        .iter()
        .map(|w| s.name(w))
        .collect();
    let mut plain = Publisher::<[u8]>::create(&names[0], &BusOptions::new(8).msg_size(8)).unwrap();
    let mut many =
        ManyPublisher::<[u8]>::create(&names[1], &BusOptions::new(256).msg_size(8).many()).unwrap();
    let mut pool =
        pool::Publisher::<[u8]>::create(&names[2], &pool::Options::new(256, 64, 600)).unwrap();
    let mut stream =
        stream::Producer::<[u8]>::create(&names[3], &stream::Options::new(1 << 16)).unwrap();
    let jfile = s.path("j.journal");
    let mut journaled = journal::Publisher::<[u8]>::create(
        &names[4],
        &BusOptions::new(256).msg_size(8),
        &journal::Options::new(jfile),
    )
    .unwrap();
    let mut capture = Capture::new(sink);
    for name in &names {
        capture.add(name, false).unwrap();
    }
    // The plain bus: twenty before the capture looks, over its 8 slots.
    for i in 0..20 {
        plain.publish(&payload(0, i)).unwrap();
    }
    for i in 0..n {
        many.publish(&payload(1, i)).unwrap();
        let p = payload(2, i);
        let mut loan = pool
            .loan(p.len(), Wait::For(Duration::from_secs(5)))
            .unwrap();
        loan.copy_from_slice(&p);
        loan.publish().unwrap();
        stream
            .push(&payload(3, i), Wait::For(Duration::from_secs(5)))
            .unwrap();
        journaled.publish(&payload(4, i)).unwrap();
        if i % 16 == 0 {
            capture.poll(Wait::Never).unwrap();
        }
    }
    for i in 20..n {
        plain.publish(&payload(0, i)).unwrap();
        if i % 4 == 0 {
            capture.poll(Wait::Never).unwrap();
        }
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    // Plain: n minus what it lost; the others: n each.
    while capture.stats().messages + capture.stats().lost < 5 * n {
        assert!(
            Instant::now() < deadline,
            "capture stalled: {:?}",
            capture.stats()
        );
        capture.poll(Wait::For(Duration::from_millis(20))).unwrap();
    }
    assert!(capture.stats().lost > 0, "the plain bus's overrun is a gap");
    capture.flush().unwrap();
    (names, capture.into_inner())
}

#[test]
fn every_kind_captured_into_mcap_reads_back_as_the_native_recording_of_the_same_capture() {
    for compression in [Compression::None, Compression::Zstd, Compression::Lz4] {
        let mut s = Scratch::new(&format!("every-kind-{compression}"));
        let (rec, mc) = (s.path("r.rec"), s.path("r.mcap"));
        let opts = McapOptions::default()
            .compression(compression)
            .chunk_size(4096);
        let tee = Tee(
            FileRecorder::create(&rec, Rotation::default()).unwrap(),
            McapRecorder::create(&mc, opts).unwrap(),
        );
        let (_, Tee(a, b)) = capture_every_kind(&mut s, tee, 300);
        drop(a);
        b.finish().unwrap();
        let (expected, found) = (native(&rec), mcap(&mc));
        assert!(found.len() > 1000, "{compression}: {} records", found.len());
        assert_eq!(by_bus(&found), by_bus(&expected), "{compression}");
        assert!(found.iter().any(|r| matches!(r, Record::Gap(_))));
    }
}

#[test]
fn every_kind_replayed_from_mcap_reaches_its_target_message_by_message() {
    let mut s = Scratch::new("replay-every-kind");
    let mc = s.path("r.mcap");
    let rec =
        McapRecorder::create(&mc, McapOptions::default().compression(Compression::Zstd)).unwrap();
    let (names, rec) = capture_every_kind(&mut s, rec, 100);
    rec.finish().unwrap();
    let records = mcap(&mc);
    let targets: Vec<String> = (0..names.len())
        .map(|i| s.name(&format!("copy{i}")))
        .collect();
    let mut r = Replayer::new(Speed::Max).journal_dir(&s.dir);
    for (n, t) in names.iter().zip(&targets) {
        r = r.map(n, t);
    }
    let replayed = crate::replay(&mut r, &mc).unwrap();
    let expected = by_bus(&records);
    assert_eq!(replayed as usize, records.len() - names.len());
    // Each broadcast target holds its messages in order, its gap a lag.
    for (i, t) in targets.iter().enumerate() {
        let want: Vec<Vec<u8>> = expected[i]
            .1
            .iter()
            .filter_map(|r| match r {
                Record::Message(m) => Some(m.payload.clone()),
                _ => None,
            })
            .collect();
        let mut got = Vec::new();
        if i == 3 {
            let mut c = stream::Consumer::<[u8]>::attach(t, &OpenOptions::default()).unwrap();
            let mut buf = Vec::new();
            while c.pop(&mut buf, Wait::Never).is_ok() {
                got.push(buf.clone());
            }
        } else if i == 2 {
            let mut sub =
                pool::Subscriber::<[u8]>::open(t, &OpenOptions::default().start(Start::Oldest))
                    .unwrap();
            while let Some(Received::Message(m)) = sub.recv(Wait::Never).unwrap() {
                got.push(m.to_vec());
            }
        } else {
            let mut sub =
                Subscriber::<[u8]>::open(t, &OpenOptions::default().start(Start::Oldest)).unwrap();
            loop {
                match sub.recv(Wait::Never) {
                    Some(Received::Message(m)) => got.push(m.to_vec()),
                    Some(Received::Lagged { .. }) => {}
                    None => break,
                }
            }
        }
        if i == 0 {
            // Made with the recorded 8 slots: the last 8 are still there.
            assert!(
                got.len() == 8 && want.ends_with(&got),
                "target {t}: {got:?}"
            );
        } else {
            assert_eq!(got, want, "target {t}");
        }
    }
    drop(r);
}

/// Messages of one bus at `seqs`, a gap after each.
fn write_seqs(path: &Path, opts: McapOptions, seqs: &[u64]) -> Vec<Record> {
    let mut rec = McapRecorder::create(path, opts).unwrap();
    let bus = rec
        .add_bus(&BusSpec::new("long", RecordedKind::Bus, 8).slots(64))
        .unwrap();
    let mut written = Vec::new();
    for (i, &seq) in seqs.iter().enumerate() {
        let p = seq.to_le_bytes();
        rec.message(bus, seq, 1_000 + i as u64, 2_000 + i as u64, &p)
            .unwrap();
        written.push(Record::Message(MessageRecord {
            bus,
            seq,
            mono_ns: 1_000 + i as u64,
            wall_ns: 2_000 + i as u64,
            payload: p.to_vec(),
        }));
        if i % 3 == 2 {
            let first = seq.wrapping_add(1);
            rec.gap(bus, first, 2).unwrap();
            written.push(Record::Gap(GapRecord {
                bus,
                first,
                count: 2,
            }));
        }
    }
    rec.finish().unwrap();
    written
}

#[test]
fn sequences_past_2_to_the_32_and_any_jump_read_back_exactly() {
    let s = Scratch::new("long-seqs");
    let seqs = [
        0,
        1,
        (1 << 32) - 1,
        1 << 32,
        (1 << 32) + 1,
        (1 << 32) + 5,
        3 << 32,
        (3 << 32) + 7,
        7,
        (1 << 40) + 3,
        u64::MAX - 1,
        u64::MAX,
        0,
    ];
    for compression in [Compression::None, Compression::Lz4] {
        let path = s.path(&format!("long-{compression}.mcap"));
        let written = write_seqs(
            &path,
            McapOptions::default().compression(compression),
            &seqs,
        );
        let found = mcap(&path);
        assert_eq!(&found[1..], &written[..], "{compression}");
    }
}

#[test]
fn a_rotated_recording_is_complete_mcap_files_read_back_as_one() {
    let s = Scratch::new("rotation");
    let path = s.path("r.mcap");
    let seqs: Vec<u64> = (0..2000).map(|i| (1 << 33) + i).collect();
    let opts = McapOptions::default()
        .chunk_size(1024)
        .rotation(Rotation::default().bytes(8192));
    let written = write_seqs(&path, opts, &seqs);
    let mut parts = 0;
    while shmbus::record::part_path(&path, parts).exists() {
        let bytes = std::fs::read(shmbus::record::part_path(&path, parts)).unwrap();
        assert!(bytes.starts_with(mcap::MAGIC) && bytes.ends_with(mcap::MAGIC));
        // Each part alone, by the mcap crate's own readers: linear, and
        // through its summary (statistics, chunk indexes, message indexes).
        let messages: Vec<_> = mcap::MessageStream::new(&bytes)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let n = messages.len();
        assert!(n > 0);
        let summary = mcap::Summary::read(&bytes).unwrap().expect("a summary");
        let stats = summary.stats.clone().expect("statistics");
        assert_eq!(stats.message_count, n as u64);
        // Each channel's count is its messages'.
        let mut by_channel = std::collections::BTreeMap::new();
        for m in &messages {
            *by_channel.entry(m.channel.id).or_insert(0u64) += 1;
        }
        assert_eq!(stats.channel_message_counts, by_channel);
        assert_eq!(stats.chunk_count as usize, summary.chunk_indexes.len());
        let mut indexed = 0;
        for chunk in &summary.chunk_indexes {
            let index = summary.read_message_indexes(&bytes, chunk).unwrap();
            for (_, entries) in index {
                for e in entries {
                    let m = summary.seek_message(&bytes, chunk, &e).unwrap();
                    assert_eq!(m.log_time, e.log_time);
                    indexed += 1;
                }
            }
        }
        assert_eq!(indexed, n);
        parts += 1;
    }
    assert!(parts > 3, "{parts} parts");
    let found = mcap(&path);
    assert_eq!(&found[1..], &written[..]);
}

#[test]
fn a_cut_file_reads_its_whole_chunks_and_says_it_was_cut_at_every_length() {
    let s = Scratch::new("cut");
    let path = s.path("r.mcap");
    let mut rec =
        McapRecorder::create(&path, McapOptions::default().compression(Compression::Zstd)).unwrap();
    let bus = rec
        .add_bus(&BusSpec::new("t", RecordedKind::Bus, 8))
        .unwrap();
    let mut flushed_at = Vec::new();
    for i in 0..40u64 {
        rec.message(bus, i << 30, i, i, &i.to_le_bytes()).unwrap();
        if i % 4 == 3 {
            rec.flush().unwrap();
            flushed_at.push((std::fs::metadata(&path).unwrap().len(), i + 1));
        }
    }
    rec.finish().unwrap();
    let whole = mcap(&path);
    let bytes = std::fs::read(&path).unwrap();
    let cut = s.path("cut.mcap");
    for len in 0..bytes.len() {
        std::fs::write(&cut, &bytes[..len]).unwrap();
        let reading = match McapRecording::open(&cut) {
            Ok(r) => r,
            Err(OpenError::NotMcap { .. }) if len < 8 => continue,
            Err(e) => panic!("{len}: {e}"),
        };
        let mut reading = reading;
        let got: Vec<Record> = reading
            .by_ref()
            .collect::<Result<_, _>>()
            .unwrap_or_else(|e| panic!("cut at {len}: {e}"));
        assert!(reading.cut(), "{len}");
        assert_eq!(&got[..], &whole[..got.len()], "a prefix at {len}");
        // Every chunk flushed whole before the cut is there.
        let messages = got
            .iter()
            .filter(|r| matches!(r, Record::Message(_)))
            .count() as u64;
        let kept = flushed_at
            .iter()
            .filter(|(end, _)| *end <= len as u64)
            .map(|(_, n)| *n)
            .max()
            .unwrap_or(0);
        assert!(messages >= kept, "cut at {len}: {messages} < {kept}");
    }
}

fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

#[test]
fn garbage_and_damage_are_errors_never_panics_or_hangs() {
    let s = Scratch::new("garbage");
    let path = s.path("r.mcap");
    let written = write_seqs(
        &path,
        McapOptions::default().chunk_size(1024),
        &(0..300).collect::<Vec<_>>(),
    );
    let good = std::fs::read(&path).unwrap();
    let bad = s.path("bad.mcap");
    // Not MCAP.
    std::fs::write(&bad, b"SHMBREC\0 and more").unwrap();
    assert!(matches!(
        McapRecording::open(&bad),
        Err(OpenError::NotMcap { .. })
    ));
    // A record of 2^62 bytes.
    let mut huge = mcap::MAGIC.to_vec();
    huge.push(0x01);
    huge.extend_from_slice(&(1u64 << 62).to_le_bytes());
    huge.extend_from_slice(&[0; 64]);
    std::fs::write(&bad, &huge).unwrap();
    let err = McapRecording::open(&bad).unwrap().find_map(Result::err);
    assert!(matches!(err, Some(ReadError::Mcap { .. })), "{err:?}");
    // A flipped byte in a chunk: its check fails.
    let mut flipped = good.clone();
    let mid = good.len() / 2;
    flipped[mid] ^= 0x40;
    std::fs::write(&bad, &flipped).unwrap();
    let got: Vec<_> = McapRecording::open(&bad).unwrap().collect();
    assert!(got.iter().any(Result::is_err) || got.len() < written.len() + 1);
    // Random damage, random garbage after the magic.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for round in 0..300 {
        let mut bytes = if round % 2 == 0 {
            good.clone()
        } else {
            let mut b = mcap::MAGIC.to_vec();
            b.extend((0..(xorshift(&mut state) % 4096)).map(|_| xorshift(&mut state) as u8));
            b
        };
        for _ in 0..(1 + xorshift(&mut state) % 8) {
            let at = (xorshift(&mut state) as usize) % bytes.len();
            bytes[at] = xorshift(&mut state) as u8;
        }
        std::fs::write(&bad, &bytes).unwrap();
        if let Ok(reading) = McapRecording::open(&bad) {
            let started = Instant::now();
            for r in reading.take(100_000) {
                let _ = r;
            }
            assert!(started.elapsed() < Duration::from_secs(10), "round {round}");
        }
    }
}

/// A foreign MCAP file: a channel of `bytes[4]`, and one of JSON.
fn foreign(path: &Path, json: bool) {
    let file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut w = mcap::Writer::new(file).unwrap();
    let schema = w.add_schema("bytes[4]", "", &[]).unwrap();
    let ch = w
        .add_channel(schema, "/raw", "", &Default::default())
        .unwrap();
    for i in 0..10u32 {
        let header = mcap::records::MessageHeader {
            channel_id: ch,
            sequence: i + 100,
            log_time: 5_000 + u64::from(i),
            publish_time: 6_000 + u64::from(i),
        };
        w.write_to_known_channel(&header, &i.to_le_bytes()).unwrap();
    }
    if json {
        let js = w.add_schema("Thing", "jsonschema", b"{}").unwrap();
        let ch = w
            .add_channel(js, "/json", "json", &Default::default())
            .unwrap();
        let header = mcap::records::MessageHeader {
            channel_id: ch,
            sequence: 0,
            log_time: 1,
            publish_time: 1,
        };
        w.write_to_known_channel(&header, b"{}").unwrap();
    }
    w.finish().unwrap();
}

#[test]
fn a_foreign_file_of_fixed_size_raw_bytes_replays_and_any_other_channel_is_refused() {
    let mut s = Scratch::new("foreign");
    let path = s.path("f.mcap");
    foreign(&path, false);
    let records = mcap(&path);
    assert!(
        matches!(&records[0], Record::Bus(b) if b.name == "/raw" && b.msg_size == 4 && b.kind == RecordedKind::Bus)
    );
    assert!(
        matches!(&records[1], Record::Message(m) if m.seq == 100 && m.wall_ns == 5_000 && m.mono_ns == 6_000)
    );
    let target = s.name("foreign");
    let mut r = Replayer::new(Speed::Max).to(&target);
    assert_eq!(crate::replay(&mut r, &path).unwrap(), 10);
    drop(r);

    foreign(&path, true);
    let target2 = s.name("foreign2");
    let mut r = Replayer::new(Speed::Max).map("/raw", &target2);
    let err = crate::replay(&mut r, &path).unwrap_err();
    assert!(
        matches!(&err, ReplayMcapError::Read(ReadError::Unsupported { topic, schema, .. }) if topic == "/json" && schema == "Thing"),
        "{err}"
    );
    assert!(err.to_string().contains("bytes[N]"), "{err}");
}

#[test]
fn export_converts_every_part_of_a_native_recording() {
    let s = Scratch::new("export");
    let rec = s.path("r.rec");
    let mut native_rec = FileRecorder::create(&rec, Rotation::default().bytes(4096)).unwrap();
    let a = native_rec
        .add_bus(&BusSpec::new("a", RecordedKind::Bus, 8).slots(64))
        .unwrap();
    let b = native_rec
        .add_bus(
            &BusSpec::new("b", RecordedKind::Stream, 100)
                .slots(4096)
                .lossless(true),
        )
        .unwrap();
    for i in 0..500u64 {
        native_rec
            .message(a, (5 << 32) + i, i, i + 1, &i.to_le_bytes())
            .unwrap();
        native_rec
            .message(b, i, i, i + 1, &vec![i as u8; (i % 100) as usize])
            .unwrap();
        if i % 50 == 0 {
            native_rec.gap(a, (6 << 32) + i, 3).unwrap();
        }
    }
    drop(native_rec);
    assert!(shmbus::record::part_path(&rec, 2).exists());
    let out = s.path("r.mcap");
    let stats = crate::export(
        &rec,
        &out,
        McapOptions::default().compression(Compression::Lz4),
    )
    .unwrap();
    assert_eq!((stats.buses, stats.messages, stats.gaps), (2, 1000, 10));
    assert_eq!(by_bus(&mcap(&out)), by_bus(&native(&rec)));
}
