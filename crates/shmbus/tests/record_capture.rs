//! `shmbus::record::Capture`, the recorder handle, on buses in /dev/shm:
//! idle on several buses, it wakes for whichever gets a message (one sleep
//! over all of them); a lossy capture's lag is a gap of the exact
//! sequences missed; a message's time is the fine monotonic clock's when
//! it was taken; a stream's record leaves the stream only once it is in
//! the file; a bus is recorded once, whatever name it is given by.

mod common;

use std::time::{Duration, Instant};

use common::ShmDir;
use shmbus::record::{Capture, CaptureError, FileRecorder, Record, RecordingFiles, Rotation};
use shmbus::stream::{self, Producer};
use shmbus::{BusOptions, Publisher, Wait};

fn bus(dir: &ShmDir, label: &str, slots: u64) -> (String, Publisher<u64>) {
    let name = dir.path().join(label).to_str().unwrap().to_owned();
    let publisher = Publisher::<u64>::create(&name, &BusOptions::new(slots)).unwrap();
    (name, publisher)
}

#[test]
fn an_idle_capture_of_several_buses_wakes_for_a_message_on_any_of_them() {
    let dir = ShmDir::new("capture-wake");
    let (a, _pa) = bus(&dir, "a", 64);
    let (b, mut pb) = bus(&dir, "b", 64);
    let out = dir.path().join("r.rec");
    let mut capture = Capture::new(FileRecorder::create(&out, Rotation::default()).unwrap());
    capture.add(&a, false).unwrap();
    let id_b = capture.add(&b, false).unwrap();
    // Before the poll or during its sleep: either way this poll (which
    // would otherwise wait 60 s) returns with it, not after its wait.
    let started = Instant::now();
    let written = std::thread::scope(|s| {
        s.spawn(move || pb.publish(&42));
        capture.poll(Wait::For(Duration::from_secs(60))).unwrap()
    });
    assert_eq!(written, 1);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    capture.flush().unwrap();
    let records: Vec<Record> = RecordingFiles::open(&out)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(
        matches!(&records[2], Record::Message(m) if m.bus == id_b && m.payload == 42u64.to_le_bytes())
    );
    drop(capture);
    dir.finish();
}

#[test]
fn a_lossy_capture_lapped_by_its_bus_writes_the_sequences_it_missed_as_a_gap() {
    let dir = ShmDir::new("capture-gap");
    let (a, mut pa) = bus(&dir, "a", 8);
    let out = dir.path().join("r.rec");
    let mut capture = Capture::new(FileRecorder::create(&out, Rotation::default()).unwrap());
    capture.add(&a, false).unwrap();
    // Thirty messages through eight slots before the capture reads one.
    for i in 0..30u64 {
        pa.publish(&i);
    }
    while capture.poll(Wait::For(Duration::from_millis(50))).unwrap() > 0 {}
    capture.flush().unwrap();
    let stats = capture.stats();
    assert!(stats.lost > 0, "{stats:?}");
    assert_eq!(stats.lost + stats.messages, 30, "{stats:?}");
    let mut next = 0u64;
    for r in RecordingFiles::open(&out).unwrap() {
        match r.unwrap() {
            Record::Message(m) => {
                assert_eq!((m.seq, m.payload), (next, next.to_le_bytes().to_vec()));
                next += 1;
            }
            Record::Gap(g) => {
                assert_eq!(g.first, next);
                next += g.count;
            }
            _ => {}
        }
    }
    assert_eq!(next, 30);
    drop(capture);
    dir.finish();
}

/// CLOCK_MONOTONIC now, in ns.
fn mono_now() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

fn recorded(out: &std::path::Path) -> Vec<Record> {
    RecordingFiles::open(out)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn a_recorded_time_is_the_fine_monotonic_clock_read_once_the_message_is_in_hand() {
    let dir = ShmDir::new("capture-time");
    let (a, mut pa) = bus(&dir, "a", 64);
    let out = dir.path().join("r.rec");
    let mut capture = Capture::new(FileRecorder::create(&out, Rotation::default()).unwrap());
    capture.add(&a, false).unwrap();
    // Messages 2 ms and 150 us apart in turn, each taken at once: its
    // recorded time lies between the clock before it was published and
    // the clock after the capture wrote it (a time 4 ms coarse does not,
    // and gives two messages 150 us apart one time).
    let mut bounds = Vec::new();
    for i in 0..20u64 {
        let before = mono_now();
        pa.publish(&i);
        while capture.poll(Wait::Never).unwrap() == 0 {}
        let after = mono_now();
        bounds.push((before, after));
        let gap = if i % 2 == 0 { 2_000_000 } else { 150_000 };
        while mono_now() < after + gap {
            std::hint::spin_loop();
        }
    }
    // One published while the capture waits for it: its time is read
    // after the wait, not before.
    let (before, after) = std::thread::scope(|s| {
        let publisher = s.spawn(|| {
            std::thread::sleep(Duration::from_millis(20));
            let before = mono_now();
            pa.publish(&20);
            before
        });
        assert_eq!(capture.poll(Wait::For(Duration::from_secs(60))).unwrap(), 1);
        let after = mono_now();
        (publisher.join().unwrap(), after)
    });
    bounds.push((before, after));
    capture.flush().unwrap();
    let times: Vec<u64> = recorded(&out)
        .iter()
        .filter_map(|r| match r {
            Record::Message(m) => Some(m.mono_ns),
            _ => None,
        })
        .collect();
    assert_eq!(times.len(), bounds.len());
    for (i, (t, (before, after))) in times.iter().zip(&bounds).enumerate() {
        assert!(
            (before..=after).contains(&t),
            "message {i}: recorded at {t}, published at {before}, written by {after} ({} us early)",
            before.saturating_sub(*t) / 1000
        );
    }
    drop(capture);
    dir.finish();
}

#[test]
fn a_captured_stream_record_leaves_the_stream_only_once_it_is_in_the_file() {
    let dir = ShmDir::new("capture-stream");
    let name = dir.path().join("s").to_str().unwrap().to_owned();
    let mut producer = Producer::<[u8]>::create(&name, &stream::Options::new(1 << 16)).unwrap();
    let out = dir.path().join("r.rec");
    let mut capture = Capture::new(FileRecorder::create(&out, Rotation::default()).unwrap());
    capture.add(&name, false).unwrap();
    let head = || shmbus::stat::stat(&name).unwrap().stream.unwrap().head;
    let start = head();
    for i in 0..100u32 {
        producer
            .push(format!("{i}").as_bytes(), Wait::Never)
            .unwrap();
    }
    let mut taken = 0;
    while taken < 100 {
        taken += capture.poll(Wait::Never).unwrap();
    }
    // In the recorder's buffer, not in its file: still the stream's.
    assert_eq!(head(), start, "records given back before they were written");
    capture.flush().unwrap();
    let written = recorded(&out);
    assert_eq!(written.len(), 101);
    assert_eq!(
        head(),
        producer_tail(&name),
        "written records not given back"
    );

    // A ring too small for the buffer: records are given back once half
    // of it is held, so a capture that never waits still takes every
    // record of a producer that waits for room.
    let small = dir.path().join("small").to_str().unwrap().to_owned();
    let mut producer = Producer::<[u8]>::create(&small, &stream::Options::new(1024)).unwrap();
    capture.add(&small, false).unwrap();
    let n = 2000u32;
    let deadline = Instant::now() + Duration::from_secs(60);
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in 0..n {
                let record = format!("{i:040}");
                producer
                    .push(record.as_bytes(), Wait::For(Duration::from_secs(60)))
                    .unwrap();
            }
        });
        while capture.bus_stats(1).unwrap().messages < u64::from(n) {
            assert!(Instant::now() < deadline, "{:?}", capture.bus_stats(1));
            capture.poll(Wait::Never).unwrap();
        }
    });
    drop(capture);
    dir.finish();
}

/// The producer's `TAIL`: every record pushed.
fn producer_tail(name: &str) -> u64 {
    shmbus::stat::stat(name).unwrap().stream.unwrap().tail
}

#[test]
fn a_bus_added_twice_by_any_name_is_refused_naming_both() {
    let dir = ShmDir::new("capture-twice");
    let (a, _pa) = bus(&dir, "a", 8);
    let link = dir.path().join("b").to_str().unwrap().to_owned();
    std::fs::hard_link(&a, &link).unwrap();
    let out = dir.path().join("r.rec");
    let mut capture = Capture::new(FileRecorder::create(&out, Rotation::default()).unwrap());
    capture.add(&a, false).unwrap();
    for again in [&a, &link] {
        match capture.add(again, false) {
            Err(e @ CaptureError::SameBus { .. }) => assert_eq!(
                e.to_string(),
                format!("{again}: the same bus as {a}, already recorded")
            ),
            other => panic!("{again}: {other:?}"),
        }
    }
    drop(capture);
    std::fs::remove_file(&link).unwrap();
    dir.finish();
}
