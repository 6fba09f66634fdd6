//! Recording and replay: what `shmbus record` and
//! `shmbus replay` sustain.
//!
//! - **Capture**: a publisher here and a recorder thread running what
//!   `shmbus record` runs (a `shmbus::record::Capture` of the bus into a
//!   `FileRecorder`, polled and flushed as the command does: one clock
//!   read a batch of up to 256 messages) into a file in the temporary
//!   directory (the page cache: written, never synced). Its capacity is measured with a
//!   lossless recorder (the publisher held to its pace, so nothing is
//!   lost): messages and bytes per second from the first publish to the
//!   last record flushed. Then a lossy recorder (the CLI's default) with
//!   the publisher paced at the target rate: what it lost (gap records).
//!   Both at 4 KiB and 64 B.
//! - **MCAP capture**: the same lossless capture into an MCAP file
//!   (`shmbus record --format mcap`: a `shmbus_mcap::McapRecorder`), with
//!   no chunk compression, zstd and lz4, beside a native one in paired
//!   rounds (each round runs all four, the order reversed every other
//!   round): each ratio is taken within its round, and the row gives the
//!   median; the file sizes (the native one's with its index).
//! - **Publish cost**: the time inside each `publish` of 64 B, one every
//!   [`COST_PACE`], without a subscriber, with a lossy recorder attached,
//!   and with a plain lossy subscriber (reading, recording nothing: what
//!   any subscriber on another core costs the publisher), in alternating
//!   rounds of the same run (p50 and p99, and their ratios).
//! - **Replay**: the `shmbus` binary (`$SHMBUS_BIN`, else beside this one)
//!   replays a recording of 64 B messages, one every 100 µs (10 k msgs/s),
//!   at `--speed 1`: its own pace error report (`--json`, p50/p99/max of
//!   |sent - due|); and a larger one at `--speed max`: messages per second.
//!   Without the binary these two are not run (said, and null in the JSON).
//!
//! Timing uses `Instant` (CLOCK_MONOTONIC through the vDSO): the cost
//! figures include one clock read (about 20 ns here) in both columns.

use std::fs::File;
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use shmbus::record::{self as rec, FileRecorder, RecordedKind, Recorder, Rotation, Sink};
use shmbus::{BusOptions, OpenOptions, Publisher, Received, Start, Subscriber, Wait};
use shmbus_mcap::{Compression, McapOptions, McapRecorder};

use crate::error::BenchError;

/// Target rates.
const TARGET_4K_BYTES_PER_S: f64 = 1e9;
const TARGET_64_MSGS_PER_S: f64 = 5e6;
const TARGET_COST_RATIO: f64 = 1.1;
const TARGET_PACE_P99_US: f64 = 50.0;
const TARGET_MAX_MSGS_PER_S: f64 = 10e6;
/// An MCAP recorder (no compression) against the native one's rate.
const TARGET_MCAP_RATIO: f64 = 0.8;

/// The gap between two timed publishes of the cost rows.
const COST_PACE: Duration = Duration::from_micros(2);

/// Slots of every bus here.
const SLOTS: u64 = 4096;

/// One capture row: a message size.
#[derive(Debug)]
pub struct Capture {
    pub msg_size: usize,
    /// Lossless recorder: messages recorded.
    pub messages: u64,
    /// Lossless recorder: seconds from the first publish to the flush.
    pub secs: f64,
    /// Lossy recorder, publisher paced at the target: the rate asked, the
    /// rate the publisher kept, and what the recorder lost.
    pub paced_target: f64,
    pub paced_kept: f64,
    pub paced_lost: u64,
    /// The lossless recorder's file and index, bytes.
    pub file_bytes: u64,
}

/// One MCAP capture row: a message size and a chunk compression, over
/// [`MCAP_ROUNDS`] paired rounds.
#[derive(Debug)]
pub struct McapCapture {
    pub msg_size: usize,
    pub compression: Compression,
    pub messages: u64,
    /// Each round's MCAP rate and the native rate of the same round,
    /// msgs/s.
    pub rounds: Vec<(f64, f64)>,
    /// The MCAP file's bytes (the last round's).
    pub file_bytes: u64,
    /// The native recording's bytes with its index (the last round's).
    pub native_file_bytes: u64,
}

impl McapCapture {
    /// The median round's MCAP rate.
    pub fn msgs_per_s(&self) -> f64 {
        median(self.rounds.iter().map(|r| r.0))
    }

    /// The median round's native rate.
    pub fn native_msgs_per_s(&self) -> f64 {
        median(self.rounds.iter().map(|r| r.1))
    }

    /// The median of the rounds' ratios (each MCAP / native of its round).
    pub fn ratio(&self) -> f64 {
        median(self.rounds.iter().map(|r| r.0 / r.1))
    }
}

/// The median of `v` (the upper one of an even count).
fn median(v: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = v.collect();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

impl Capture {
    pub fn msgs_per_s(&self) -> f64 {
        self.messages as f64 / self.secs
    }

    pub fn bytes_per_s(&self) -> f64 {
        self.msgs_per_s() * self.msg_size as f64
    }
}

/// The publish cost rows.
#[derive(Debug)]
pub struct Cost {
    pub without: [f64; 2],
    pub with: [f64; 2],
    /// With a plain lossy subscriber instead (reads, records nothing): the
    /// part of the cost any subscriber on another core brings.
    pub plain: [f64; 2],
    /// What the lossy recorder lost over the "with" rounds.
    pub lost: u64,
}

/// The whole table.
#[derive(Debug)]
pub struct Table {
    pub capture: Vec<Capture>,
    pub mcap: Vec<McapCapture>,
    pub cost: Cost,
    /// `--speed 1` at 10 k msgs/s: the replay's pace error, µs.
    pub pace: Option<[f64; 3]>,
    /// `--speed max`: messages per second, and how many.
    pub max: Option<(f64, u64)>,
    /// Why the replay rows did not run.
    pub replay_skipped: Option<String>,
    pub quick: bool,
}

fn fail(stage: &'static str, e: impl std::fmt::Display) -> BenchError {
    BenchError::Mechanism {
        mechanism: "record",
        stage,
        source: io::Error::other(e.to_string()),
    }
}

/// A scratch directory of this run, removed with its files on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Result<Scratch, BenchError> {
        let dir = std::env::temp_dir().join(format!("shmbus-bench-record-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).map_err(|e| fail("scratch directory", e))?;
        Ok(Scratch(dir))
    }

    fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A bus removed when dropped.
struct Bus(String);

impl Bus {
    fn new(what: &str) -> Bus {
        Bus(format!("shmbus-bench-record-{}-{what}", std::process::id()))
    }
}

impl Drop for Bus {
    fn drop(&mut self) {
        let _ = shmbus::remove(&self.0);
    }
}

/// A reading thread: what it read (messages) and lost, when joined.
type Reader = std::thread::JoinHandle<Result<(u64, u64), BenchError>>;

/// The recorder thread: what `shmbus record` runs (a `Capture` of `bus`
/// into a `FileRecorder`, polled as the command polls it, flushed when
/// idle or after a second) until it has seen sequence `last` (a message
/// or a gap past it); returns (messages, lost).
fn recorder(bus: &str, out: &Path, lossless: bool, last: u64) -> Result<Reader, BenchError> {
    let file =
        FileRecorder::create(out, Rotation::default()).map_err(|e| fail("recording file", e))?;
    run_recorder(bus, file, lossless, last, |_| Ok(()))
}

/// The recorder thread of `shmbus record --format mcap`: as [`recorder`],
/// into an MCAP file with chunks compressed as `compression` says, ended
/// (summary, footer) once it has seen `last`.
fn mcap_recorder(
    bus: &str,
    out: &Path,
    compression: Compression,
    last: u64,
) -> Result<Reader, BenchError> {
    let file = McapRecorder::create(out, McapOptions::default().compression(compression))
        .map_err(|e| fail("mcap file", e))?;
    run_recorder(bus, file, true, last, |r: McapRecorder| {
        r.finish().map_err(|e| fail("mcap finish", e))
    })
}

/// A recorder thread writing into `sink`, `finish` run on it at the end.
fn run_recorder<S: Sink + Send + 'static>(
    bus: &str,
    sink: S,
    lossless: bool,
    last: u64,
    finish: fn(S) -> Result<(), BenchError>,
) -> Result<Reader, BenchError> {
    let mut capture = rec::Capture::new(sink);
    capture
        .add(bus, lossless)
        .map_err(|e| fail("recorder open", e))?;
    capture.flush().map_err(|e| fail("recorder", e))?;
    Ok(std::thread::spawn(move || {
        let mut idle = 0u32;
        let mut flushed = Instant::now();
        loop {
            let s = capture.stats();
            if s.messages + s.lost > last {
                break;
            }
            let written = capture
                .poll(Wait::For(Duration::from_millis(100)))
                .map_err(|e| fail("record", e))?;
            if written == 0 || flushed.elapsed() >= Duration::from_secs(1) {
                capture.flush().map_err(|e| fail("record flush", e))?;
                flushed = Instant::now();
            }
            if written == 0 {
                // The publisher is done or gone: 5 s of nothing ends it.
                idle += 1;
                if idle > 50 {
                    return Err(fail("record", "the publisher stopped early"));
                }
            }
        }
        capture.flush().map_err(|e| fail("record flush", e))?;
        let s = capture.stats();
        finish(capture.into_inner())?;
        Ok((s.messages, s.lost))
    }))
}

fn message(size: usize, i: u64) -> Vec<u8> {
    let mut m = vec![0u8; size];
    m[..8].copy_from_slice(&i.to_le_bytes());
    m
}

fn publisher(bus: &Bus, size: usize) -> Result<Publisher<[u8]>, BenchError> {
    let _ = shmbus::remove(&bus.0);
    let opts = BusOptions::new(SLOTS).msg_size(size as u32);
    Publisher::<[u8]>::create(&bus.0, &opts).map_err(|e| fail("create", e))
}

/// Busy-waits until `due` (the publisher's pace).
fn until(due: Instant) {
    while Instant::now() < due {
        std::hint::spin_loop();
    }
}

fn capture(scratch: &Scratch, size: usize, n: u64, target: f64) -> Result<Capture, BenchError> {
    let bus = Bus::new(&format!("cap{size}"));
    let file = scratch.file(&format!("cap{size}.rec"));
    // Capacity: a lossless recorder.
    let (rate, file_bytes) = lossless(scratch, size, n, Arm::Native)?;
    let msg = message(size, 0);
    // Lossy at the target pace.
    let mut p = publisher(&bus, size)?;
    let rec = recorder(&bus.0, &file, false, n - 1)?;
    let gap = Duration::from_secs_f64(1.0 / target);
    let start = Instant::now();
    for i in 0..n {
        until(start + gap.mul_f64(i as f64));
        p.publish(&msg).map_err(|e| fail("publish", e))?;
    }
    let kept = n as f64 / start.elapsed().as_secs_f64();
    let (_, paced_lost) = rec.join().map_err(|_| fail("recorder", "panicked"))??;
    remove_recording(&file);
    Ok(Capture {
        msg_size: size,
        messages: n,
        secs: n as f64 / rate,
        paced_target: target,
        paced_kept: kept,
        paced_lost,
        file_bytes,
    })
}

/// The paired rounds of the MCAP rows: the VM switches speed by itself,
/// so each ratio is taken within one round.
const MCAP_ROUNDS: usize = 3;

/// What a round's arm records into.
#[derive(Debug, Clone, Copy)]
enum Arm {
    Native,
    Mcap(Compression),
}

/// One lossless capture of `n` messages of `size` into `arm`'s format:
/// its rate (msgs/s) and its file's bytes (an index's included).
fn lossless(scratch: &Scratch, size: usize, n: u64, arm: Arm) -> Result<(f64, u64), BenchError> {
    let bus = Bus::new(&format!("pair{size}"));
    let mut p = publisher(&bus, size)?;
    let (file, rec) = match arm {
        Arm::Native => {
            let file = scratch.file(&format!("pair{size}.rec"));
            let rec = recorder(&bus.0, &file, true, n - 1)?;
            (file, rec)
        }
        Arm::Mcap(c) => {
            let file = scratch.file(&format!("pair{size}.mcap"));
            let rec = mcap_recorder(&bus.0, &file, c, n - 1)?;
            (file, rec)
        }
    };
    let msg = message(size, 0);
    let start = Instant::now();
    for _ in 0..n {
        p.publish(&msg).map_err(|e| fail("publish", e))?;
    }
    let (messages, lost) = rec.join().map_err(|_| fail("recorder", "panicked"))??;
    let secs = start.elapsed().as_secs_f64();
    if lost != 0 || messages != n {
        return Err(fail(
            "paired capture",
            format!("a lossless recorder ({arm:?}) wrote {messages} of {n}, lost {lost}"),
        ));
    }
    drop(p);
    let bytes = recording_bytes(&file);
    remove_recording(&file);
    Ok((n as f64 / secs, bytes))
}

/// The lossless capture into MCAP with each chunk compression beside the
/// native one: `rounds` rounds, each running every arm once (the order
/// reversed every other round, so neither format always meets the page
/// cache the other just left), each ratio within its round.
fn mcap_capture(
    scratch: &Scratch,
    size: usize,
    n: u64,
    rounds: usize,
) -> Result<Vec<McapCapture>, BenchError> {
    let kinds = [Compression::None, Compression::Zstd, Compression::Lz4];
    let mut rows: Vec<McapCapture> = kinds
        .iter()
        .map(|&compression| McapCapture {
            msg_size: size,
            compression,
            messages: n,
            rounds: Vec::new(),
            file_bytes: 0,
            native_file_bytes: 0,
        })
        .collect();
    for round in 0..rounds {
        let mut arms = vec![Arm::Native];
        arms.extend(kinds.iter().map(|&c| Arm::Mcap(c)));
        if round % 2 == 1 {
            arms.reverse();
        }
        let mut native = (f64::NAN, 0);
        let mut mcap = [(f64::NAN, 0); 3];
        for arm in arms {
            let got = lossless(scratch, size, n, arm)?;
            match arm {
                Arm::Native => native = got,
                Arm::Mcap(c) => mcap[kinds.iter().position(|&k| k == c).unwrap_or(0)] = got,
            }
        }
        for (row, (rate, bytes)) in rows.iter_mut().zip(mcap) {
            row.rounds.push((rate, native.0));
            row.file_bytes = bytes;
            row.native_file_bytes = native.1;
        }
    }
    Ok(rows)
}

/// A one-part recording's bytes, its index's included.
fn recording_bytes(file: &Path) -> u64 {
    let mut idx = file.as_os_str().to_owned();
    idx.push(".idx");
    [file.as_os_str(), &idx]
        .iter()
        .map(|f| std::fs::metadata(f).map_or(0, |m| m.len()))
        .sum()
}

/// A one-part recording and its index side file, removed.
fn remove_recording(file: &Path) {
    let _ = std::fs::remove_file(file);
    let mut idx = file.as_os_str().to_owned();
    idx.push(".idx");
    let _ = std::fs::remove_file(idx);
}

/// p50 and p99 of `v` (sorted here).
fn p50_p99(v: &mut [u64]) -> [f64; 2] {
    v.sort_unstable();
    let at = |q: f64| v[((v.len() as f64 * q) as usize).min(v.len() - 1)] as f64;
    [at(0.5), at(0.99)]
}

/// A lossy subscriber thread that reads `bus` up to sequence `last` and
/// does nothing with it.
fn plain_subscriber(bus: &str, last: u64) -> Result<Reader, BenchError> {
    let opts = OpenOptions::default().start(Start::Next);
    let mut sub = Subscriber::<[u8]>::open(bus, &opts).map_err(|e| fail("subscriber open", e))?;
    Ok(std::thread::spawn(move || {
        let (mut got, mut lost, mut idle) = (0u64, 0u64, 0u32);
        while sub.position() <= last {
            match sub.recv(Wait::For(Duration::from_millis(100))) {
                Some(Received::Message(m)) => {
                    std::hint::black_box(m);
                    got += 1;
                }
                Some(Received::Lagged { skipped }) => lost += skipped,
                None => {
                    idle += 1;
                    if idle > 50 {
                        return Err(fail("subscribe", "the publisher stopped early"));
                    }
                }
            }
        }
        Ok((got, lost))
    }))
}

fn cost(scratch: &Scratch, n: u64, rounds: u32) -> Result<Cost, BenchError> {
    let bus = Bus::new("cost");
    let file = scratch.file("cost.rec");
    let (mut without, mut with, mut plain, mut lost) = (Vec::new(), Vec::new(), Vec::new(), 0);
    let msg = message(64, 0);
    for _ in 0..rounds {
        for arm in 0..3 {
            let mut p = publisher(&bus, 64)?;
            let rec = match arm {
                0 => None,
                1 => Some(recorder(&bus.0, &file, false, n - 1)?),
                _ => Some(plain_subscriber(&bus.0, n - 1)?),
            };
            let out = match arm {
                0 => &mut without,
                1 => &mut with,
                _ => &mut plain,
            };
            let start = Instant::now();
            for i in 0..n {
                until(start + COST_PACE.mul_f64(i as f64));
                let t0 = Instant::now();
                p.publish(&msg).map_err(|e| fail("publish", e))?;
                out.push(t0.elapsed().as_nanos() as u64);
            }
            if let Some(rec) = rec {
                let l = rec.join().map_err(|_| fail("recorder", "panicked"))??.1;
                if arm == 1 {
                    lost += l;
                }
            }
            remove_recording(&file);
        }
    }
    Ok(Cost {
        without: p50_p99(&mut without),
        with: p50_p99(&mut with),
        plain: p50_p99(&mut plain),
        lost,
    })
}

/// The `shmbus` binary: `$SHMBUS_BIN`, else beside this one.
fn shmbus_bin() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("SHMBUS_BIN") {
        return Some(PathBuf::from(p));
    }
    let here = std::env::current_exe().ok()?;
    let bin = here.parent()?.join("shmbus");
    bin.is_file().then_some(bin)
}

/// A recording of `n` 64 B messages, one every `step_ns`.
fn write_recording(path: &Path, n: u64, step_ns: u64) -> Result<(), BenchError> {
    let file = File::create(path).map_err(|e| fail("replay file", e))?;
    let mut rec = Recorder::new(BufWriter::with_capacity(1 << 20, file))
        .map_err(|e| fail("replay file", e))?;
    let id = rec
        .add_bus("bench", RecordedKind::Bus, 64)
        .map_err(|e| fail("replay file", e))?;
    for i in 0..n {
        rec.message(id, i, i * step_ns, 0, &message(64, i))
            .map_err(|e| fail("replay file", e))?;
    }
    rec.flush().map_err(|e| fail("replay file", e))
}

/// `shmbus replay FILE --to BUS --json ARGS`: its summary.
fn replay(bin: &Path, file: &Path, args: &[&str]) -> Result<Value, BenchError> {
    let bus = Bus::new("replay");
    let _ = shmbus::remove(&bus.0);
    let out = Command::new(bin)
        .arg("replay")
        .arg(file)
        .args(["--to", &bus.0, "--json", "--slots", "4096"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|source| BenchError::Spawn {
            what: "shmbus replay".into(),
            source,
        })?;
    if !out.status.success() {
        return Err(fail(
            "replay",
            format!(
                "{}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        ));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| fail("replay summary", e))
}

pub fn run(quick: bool) -> Result<Table, BenchError> {
    let scratch = Scratch::new()?;
    let scale = if quick { 10 } else { 1 };
    // Each size's native rows, then its MCAP rows in paired rounds.
    let mut capture = Vec::new();
    let mut mcap = Vec::new();
    for (size, n, target) in [
        (4096, 400_000 / scale, TARGET_4K_BYTES_PER_S / 4096.0),
        (64, 20_000_000 / scale, TARGET_64_MSGS_PER_S),
    ] {
        capture.push(self::capture(&scratch, size, n, target)?);
        let rounds = if quick { 2 } else { MCAP_ROUNDS };
        mcap.extend(mcap_capture(&scratch, size, n, rounds)?);
    }
    let cost = cost(&scratch, 200_000 / scale, if quick { 1 } else { 3 })?;
    let (mut pace, mut max, mut replay_skipped) = (None, None, None);
    match shmbus_bin() {
        None => {
            replay_skipped = Some("no shmbus binary (set SHMBUS_BIN)".to_string());
        }
        Some(bin) => {
            let file = scratch.file("paced.rec");
            write_recording(&file, 20_000 / scale, 100_000)?;
            let s = replay(&bin, &file, &["--speed", "1"])?;
            let us = |k: &str| s["pace_error_us"][k].as_f64().unwrap_or(f64::NAN);
            pace = Some([us("p50"), us("p99"), us("max")]);
            remove_recording(&file);
            let n = 4_000_000 / scale;
            let file = scratch.file("max.rec");
            write_recording(&file, n, 100)?;
            let s = replay(&bin, &file, &["--speed", "max"])?;
            max = Some((s["msgs_per_s"].as_f64().unwrap_or(f64::NAN), n));
        }
    }
    Ok(Table {
        capture,
        mcap,
        cost,
        pace,
        max,
        replay_skipped,
        quick,
    })
}

pub fn print(t: &Table) {
    println!("\nrecording (a recorder thread into the page cache) and replay (`shmbus replay`):");
    for c in &t.capture {
        println!(
            "  capture {:>4} B: lossless recorder {:.2} M msgs/s, {:.2} GB/s over {} msgs; \
             lossy at {:.2} M msgs/s (kept {:.2} M): lost {}",
            c.msg_size,
            c.msgs_per_s() / 1e6,
            c.bytes_per_s() / 1e9,
            c.messages,
            c.paced_target / 1e6,
            c.paced_kept / 1e6,
            c.paced_lost
        );
    }
    for m in &t.mcap {
        println!(
            "  capture {:>4} B into MCAP ({}): {:.2} M msgs/s, x{:.2} the native recorder's \
             (median of {} paired rounds: {}); {:.1} MB (native {:.1} MB)",
            m.msg_size,
            m.compression,
            m.msgs_per_s() / 1e6,
            m.ratio(),
            m.rounds.len(),
            m.rounds
                .iter()
                .map(|r| format!("x{:.2}", r.0 / r.1))
                .collect::<Vec<_>>()
                .join(" "),
            m.file_bytes as f64 / 1e6,
            m.native_file_bytes as f64 / 1e6
        );
    }
    let c = &t.cost;
    println!(
        "  publish 64 B: p50 {:.0} ns / p99 {:.0} ns without a recorder, {:.0} / {:.0} ns with \
         (x{:.2}, recorder lost {}), {:.0} / {:.0} ns with a plain lossy subscriber (x{:.2})",
        c.without[0],
        c.without[1],
        c.with[0],
        c.with[1],
        c.with[0] / c.without[0],
        c.lost,
        c.plain[0],
        c.plain[1],
        c.plain[0] / c.without[0]
    );
    if let Some([p50, p99, max]) = t.pace {
        println!(
            "  replay --speed 1, 10 k msgs/s: pace error p50 {p50:.1} µs, p99 {p99:.1} µs, max {max:.1} µs"
        );
    }
    if let Some((rate, n)) = t.max {
        println!(
            "  replay --speed max, 64 B: {:.2} M msgs/s over {n}",
            rate / 1e6
        );
    }
    if let Some(why) = &t.replay_skipped {
        println!("  replay rows not run: {why}");
    }
}

fn round(v: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (v * f).round() / f
}

fn target(name: &str, wanted: &str, found: Option<f64>, met: bool) -> Option<Value> {
    let found = found?;
    Some(json!({"target": name, "wanted": wanted, "found": round(found, 3), "met": met}))
}

/// The targets against this table.
pub fn targets(t: &Table) -> Vec<Value> {
    let by = |s: usize| t.capture.iter().find(|c| c.msg_size == s);
    let mut out = Vec::new();
    if let Some(c) = by(4096) {
        out.extend(target(
            "recording 4 KiB messages into the page cache, GB/s (lossless recorder; a lossy one at 1 GB/s loses 0)",
            ">= 1",
            Some(c.bytes_per_s() / 1e9),
            c.bytes_per_s() >= TARGET_4K_BYTES_PER_S && c.paced_lost == 0,
        ));
    }
    if let Some(c) = by(64) {
        out.extend(target(
            "recording 64 B messages into the page cache, M msgs/s (lossless recorder; a lossy one at 5 M msgs/s loses 0)",
            ">= 5",
            Some(c.msgs_per_s() / 1e6),
            c.msgs_per_s() >= TARGET_64_MSGS_PER_S && c.paced_lost == 0,
        ));
    }
    for m in t.mcap.iter().filter(|m| m.compression == Compression::None) {
        out.extend(target(
            &format!(
                "recording {} into MCAP (no compression) / natively, capture rate (lossless recorders, median of paired rounds)",
                if m.msg_size == 4096 { "4 KiB".to_string() } else { format!("{} B", m.msg_size) }
            ),
            ">= 0.8",
            Some(m.ratio()),
            m.ratio() >= TARGET_MCAP_RATIO,
        ));
    }
    let ratio = t.cost.with[0] / t.cost.without[0];
    out.extend(target(
        "publish cost with a lossy recorder attached / without (p50)",
        "<= 1.1",
        Some(ratio),
        ratio <= TARGET_COST_RATIO,
    ));
    if let Some([_, p99, _]) = t.pace {
        out.extend(target(
            "replay --speed 1 at 10 k msgs/s: pace error p99, µs",
            "<= 50",
            Some(p99),
            p99 <= TARGET_PACE_P99_US,
        ));
    }
    if let Some((rate, _)) = t.max {
        out.extend(target(
            "replay --speed max, 64 B, M msgs/s",
            ">= 10",
            Some(rate / 1e6),
            rate >= TARGET_MAX_MSGS_PER_S,
        ));
    }
    out
}

/// The table as `--json` writes it under `record`.
pub fn json(t: &Table) -> Value {
    let capture: Vec<Value> = t
        .capture
        .iter()
        .map(|c| {
            json!({
                "msg_size": c.msg_size,
                "messages": c.messages,
                "seconds": round(c.secs, 6),
                "msgs_per_sec": round(c.msgs_per_s(), 1),
                "bytes_per_sec": round(c.bytes_per_s(), 1),
                "lossy_paced_msgs_per_sec": round(c.paced_target, 1),
                "lossy_kept_msgs_per_sec": round(c.paced_kept, 1),
                "lossy_lost": c.paced_lost,
                "file_bytes": c.file_bytes,
            })
        })
        .collect();
    let mcap: Vec<Value> = t
        .mcap
        .iter()
        .map(|m| {
            json!({
                "msg_size": m.msg_size,
                "compression": m.compression.to_string(),
                "messages": m.messages,
                "msgs_per_sec": round(m.msgs_per_s(), 1),
                "rounds": m.rounds.iter().map(|r| json!({
                    "msgs_per_sec": round(r.0, 1),
                    "native_msgs_per_sec": round(r.1, 1),
                    "ratio": round(r.0 / r.1, 3),
                })).collect::<Vec<_>>(),
                "file_bytes": m.file_bytes,
                "native_msgs_per_sec": round(m.native_msgs_per_s(), 1),
                "native_file_bytes": m.native_file_bytes,
                "ratio": round(m.ratio(), 3),
            })
        })
        .collect();
    let c = &t.cost;
    json!({
        "quick": t.quick,
        "capture": capture,
        "mcap_capture": mcap,
        "publish_cost_ns": {
            "pace_ns": COST_PACE.as_nanos() as u64,
            "without": {"p50": c.without[0], "p99": c.without[1]},
            "with_lossy_recorder": {"p50": c.with[0], "p99": c.with[1]},
            "with_plain_lossy_subscriber": {"p50": c.plain[0], "p99": c.plain[1]},
            "plain_ratio_p50": round(c.plain[0] / c.without[0], 3),
            "ratio_p50": round(c.with[0] / c.without[0], 3),
            "recorder_lost": c.lost,
        },
        "replay_pace_error_us": t.pace.map(|[p50, p99, max]| json!({"rate": 10_000, "p50": p50, "p99": p99, "max": max})),
        "replay_max": t.max.map(|(rate, n)| json!({"msg_size": 64, "messages": n, "msgs_per_sec": round(rate, 1)})),
        "replay_skipped": t.replay_skipped,
        "targets": targets(t),
    })
}

/// Writes the `--record` run's JSON document to `path`.
pub fn write(path: &Path, t: &Table) -> Result<(), BenchError> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_owned())
        .unwrap_or_else(|| "unknown".into());
    let uname = rustix::system::uname();
    let doc = json!({
        "schema": "shmbus-bench/1",
        "machine": {
            "cpu": model,
            // SAFETY: sysconf has no preconditions.
            "cores": unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) },
            "kernel": format!("{} {}", uname.sysname().to_string_lossy(), uname.release().to_string_lossy()),
            "arch": std::env::consts::ARCH,
            "temp_dir": std::env::temp_dir().display().to_string(),
        },
        "record": json(t),
    });
    let text = serde_json::to_string_pretty(&doc).map_err(|source| BenchError::Encode {
        what: "the results",
        source,
    })?;
    std::fs::write(path, text).map_err(|source| BenchError::WriteFile {
        path: path.to_owned(),
        source,
    })
}
