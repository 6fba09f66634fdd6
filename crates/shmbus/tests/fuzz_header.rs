//! Property-based fuzzing of everything an opener reads from a file: the
//! header and its geometry, the control page and the ring's own words
//! (stamps, cursors, record headers), and the file's length, shorter or
//! longer than the header says.
//!
//! Every input must end in a typed error or a valid open whose first
//! operations return normally: no panic, no hang, no SIGBUS (which would
//! kill this test binary). Inputs are real files under /dev/shm, opened by
//! every opener (subscriber, raw subscriber, publisher, stream consumer and
//! producer, `stat`).
//!
//! Two sources of input: the checked-in corpus (tests/corpus/segments, one
//! segment image per file, including the inputs that once found bugs), and
//! proptest's mutations of a valid bus and a valid stream (cases:
//! `PROPTEST_CASES`, or 2000 times `SHMBUS_TEST_SCALE`, about 2 s). cargo-fuzz would need
//! a nightly libFuzzer build in CI; proptest runs in the ordinary test run.
//! `SHMBUS_WRITE_CORPUS=1` rewrites the corpus's seed files.

mod common;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use common::BusName;
use proptest::prelude::*;
use shmbus::stat;
use shmbus::wire::{control, header, stream_control};
use shmbus::{AttachError, BusOptions, OpenError, OpenOptions, Publisher, Start, Subscriber};
use shmbus::{
    Wait,
    stream::{Consumer, Producer},
};

/// A valid broadcast bus of u64 (16 slots, 20 messages, so it has lapped)
/// and a valid stream (4 KiB, a few records), as file images.
fn images() -> &'static (Vec<u8>, Vec<u8>) {
    static IMAGES: OnceLock<(Vec<u8>, Vec<u8>)> = OnceLock::new();
    IMAGES.get_or_init(|| {
        let bus = BusName::new("fuzz-image-bus");
        let mut p = Publisher::<u64>::create(bus.name(), &BusOptions::new(16)).expect("create");
        for i in 0..20u64 {
            p.publish(&i);
        }
        drop(p);
        let bus_image = std::fs::read(bus.path()).expect("read bus");
        let stream = BusName::new("fuzz-image-stream");
        let mut p = Producer::<[u8]>::create(stream.name(), &shmbus::stream::Options::new(4096))
            .expect("create");
        for i in 0..40usize {
            p.push(&vec![i as u8; i * 7 % 200], Wait::Never)
                .expect("room");
        }
        drop(p);
        let stream_image = std::fs::read(stream.path()).expect("read stream");
        bus.finish();
        stream.finish();
        (bus_image, stream_image)
    })
}

/// Runs every opener on `name` and the first operations of each that
/// opens. Returns how many opened (for the figures).
fn exercise(name: &str) -> usize {
    let opts = OpenOptions::default()
        .init_timeout(Duration::ZERO)
        .start(Start::Oldest);
    let said = |e: &dyn std::fmt::Display| assert!(!e.to_string().is_empty());
    let mut opened = 0;
    match Subscriber::<u64>::open(name, &opts) {
        Ok(mut s) => {
            opened += 1;
            for _ in 0..40 {
                let _ = s.try_recv();
            }
            let _ = (s.latest(), s.pending(), s.epoch(), s.position());
        }
        Err(e) => said(&e),
    }
    match Subscriber::<[u8]>::open(name, &opts) {
        Ok(mut s) => {
            opened += 1;
            for _ in 0..40 {
                let _ = s.try_recv();
            }
            let _ = s.latest().map(<[u8]>::len);
        }
        Err(e) => said(&e),
    }
    match stat::stat(name) {
        Ok(st) => {
            opened += 1;
            let _ = (st.published, st.stream.map(|s| s.fill));
        }
        Err(e) => said(&e),
    }
    match Consumer::<[u8]>::attach(name, &opts) {
        Ok(mut c) => {
            opened += 1;
            let mut out = Vec::new();
            for _ in 0..40 {
                let _ = c.pop(&mut out, Wait::Never);
            }
            let _ = c.len();
        }
        Err(e) => said(&e),
    }
    // The writers last: they change the file.
    match Publisher::<[u8]>::attach(name, &opts) {
        Ok(mut p) => {
            opened += 1;
            let _ = p.publish(&[7; 5]);
        }
        Err(e) => said(&e),
    }
    match Producer::<[u8]>::attach(name, &opts) {
        Ok(mut p) => {
            opened += 1;
            let _ = p.push(b"fuzz", Wait::Never);
            let _ = p.len();
        }
        Err(e @ AttachError::Open(OpenError::Io { .. })) => panic!("{e}"),
        Err(e) => said(&e),
    }
    opened
}

/// How long one input may take before it counts as a hang.
const HANG: Duration = Duration::from_secs(20);

/// Writes `bytes` as the bus file and exercises it, on a thread: one that
/// has not finished after `HANG` fails the test (and is left behind).
fn run_one(bus: &BusName, bytes: &[u8]) -> usize {
    std::fs::write(bus.path(), bytes).expect("write input");
    let (tx, rx) = std::sync::mpsc::channel();
    let name = bus.name().to_owned();
    std::thread::spawn(move || {
        let _ = tx.send(exercise(&name));
    });
    let opened = match rx.recv_timeout(HANG) {
        Ok(n) => n,
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("hang: an opener or its first operations took over {HANG:?}")
        }
        Err(e) => panic!("the exercise panicked: {e}"),
    };
    std::fs::remove_file(bus.path()).expect("remove input");
    opened
}

/// One change to an image: a little-endian word of `width` bytes at `at`.
#[derive(Clone, Debug)]
struct Patch {
    at: usize,
    width: usize,
    value: u64,
}

/// Offsets an opener or a ring reads, in a segment of page size `page`.
fn interesting_offsets(page: usize) -> Vec<(usize, usize)> {
    let mut v: Vec<(usize, usize)> = vec![
        (header::MAGIC, 8),
        (header::VERSION, 4),
        (header::KIND, 4),
        (header::PAGE_SIZE, 4),
        (header::FLAGS, 4),
        (header::CONTROL_OFFSET, 8),
        (header::DATA_OFFSET, 8),
        (header::TOTAL_LEN, 8),
        (header::CAPACITY, 8),
        (header::SLOT_SIZE, 4),
        (header::MSG_SIZE, 4),
        (header::MSG_ALIGN, 4),
        (header::TYPE_HASH, 8),
        (header::FIRST_SEQ, 8),
        (page + control::CURSOR, 8),
        (page + control::EPOCH, 8),
        (page + control::PUBLISHER_PID, 4),
        (page + control::FUTEX, 4),
        (page + stream_control::HEAD, 8),
        (page + stream_control::CONSUMER_PID, 4),
    ];
    // Slot stamps of a 16-slot bus of u64, and stream record headers.
    for i in 0..16 {
        v.push((2 * page + 64 * i, 8));
    }
    for i in 0..32 {
        v.push((2 * page + 8 * i, 8));
    }
    v
}

fn value() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        Just(1),
        Just(u64::MAX),
        Just(u64::MAX - 1),
        Just(i64::MAX as u64),
        Just(1 << 63),
        Just(4096),
        0u64..300,
        any::<u64>(),
    ]
}

fn patch(len: usize) -> impl Strategy<Value = Patch> {
    let page = 4096.min(len / 3).max(8);
    let fields = interesting_offsets(page);
    prop_oneof![
        (prop::sample::select(fields), value()).prop_map(|((at, width), value)| Patch {
            at,
            width,
            value
        }),
        (0..len / 8, value()).prop_map(|(w, value)| Patch {
            at: 8 * w,
            width: 8,
            value
        }),
    ]
}

/// An input: which image, its patches, and the file's length.
fn input() -> impl Strategy<Value = Vec<u8>> {
    let (bus, stream) = images();
    let (bus, stream) = (bus.clone(), stream.clone());
    (
        any::<bool>(),
        prop::collection::vec(patch(bus.len().min(stream.len())), 0..6),
        prop_oneof![
            4 => Just(None),
            1 => (0usize..20_000).prop_map(Some),
        ],
    )
        .prop_map(move |(is_bus, patches, len)| {
            let mut bytes = if is_bus { bus.clone() } else { stream.clone() };
            for p in patches {
                if p.at + p.width <= bytes.len() {
                    bytes[p.at..p.at + p.width].copy_from_slice(&p.value.to_le_bytes()[..p.width]);
                }
            }
            if let Some(len) = len {
                bytes.resize(len, 0);
            }
            bytes
        })
}

proptest! {
    #![proptest_config(ProptestConfig {
        // PROPTEST_CASES, or 2000 under SHMBUS_TEST_SCALE (at least 100).
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok())
            .unwrap_or_else(|| u32::try_from(common::scale_min(2000, 100)).unwrap_or(u32::MAX)),
        failure_persistence: None,
        .. ProptestConfig::default()
    })]

    #[test]
    #[cfg_attr(miri, ignore)]
    fn any_mutation_of_a_segment_is_a_typed_error_or_a_valid_open(bytes in input()) {
        let bus = BusName::new("fuzz");
        run_one(&bus, &bytes);
        bus.finish();
    }
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/segments")
}

/// Seeds for the corpus: the valid images and the inputs that once found
/// bugs (see the names), written with SHMBUS_WRITE_CORPUS=1.
fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let (bus, stream) = images();
    let page = 4096;
    let with = |base: &Vec<u8>, patches: &[(usize, u64)]| {
        let mut b = base.clone();
        for &(at, v) in patches {
            b[at..at + 8].copy_from_slice(&v.to_le_bytes());
        }
        b
    };
    let slot0 = 2 * page;
    vec![
        ("valid-bus", bus.clone()),
        ("valid-stream", stream.clone()),
        ("bus-cut-to-one-page", bus[..page].to_vec()),
        ("stream-cut-in-the-ring", stream[..2 * page + 100].to_vec()),
        // A stamp i64::MAX ahead of the reader's: the lap arithmetic
        // overflowed (a panic in a debug build).
        (
            "bus-stamp-far-ahead",
            with(bus, &[(slot0 + 64 * 4, 2 * 4 + 2 + i64::MAX as u64)]),
        ),
        // TAIL behind HEAD, and a record that runs past the ring's end.
        (
            "stream-tail-behind-head",
            with(stream, &[(page + stream_control::TAIL, 8)]),
        ),
        (
            "stream-record-past-the-end",
            with(
                stream,
                &[
                    (page + stream_control::HEAD, 4096 - 8),
                    (page + stream_control::TAIL, 4096 + 2040),
                    (2 * page + 4096 - 8, 2032),
                ],
            ),
        ),
    ]
}

#[test]
#[cfg_attr(miri, ignore)]
fn every_segment_in_the_corpus_is_a_typed_error_or_a_valid_open() {
    let dir = corpus_dir();
    if std::env::var("SHMBUS_WRITE_CORPUS").is_ok_and(|v| v == "1") {
        std::fs::create_dir_all(&dir).expect("corpus dir");
        for (name, bytes) in seeds() {
            std::fs::write(dir.join(format!("{name}.bin")), bytes).expect("write seed");
        }
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/corpus/segments")
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    assert!(files.len() >= 7, "corpus has {} files", files.len());
    for file in files {
        let bytes = std::fs::read(&file).expect("read corpus file");
        let bus = BusName::new("corpus");
        let opened = run_one(&bus, &bytes);
        println!("{}: {opened} openers opened it", file.display());
        if file.ends_with("valid-bus.bin") || file.ends_with("valid-stream.bin") {
            assert!(opened >= 3, "a valid segment opens");
        }
        bus.finish();
    }
}
