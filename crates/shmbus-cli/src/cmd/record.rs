//! `shmbus record NAME... --out FILE` and `shmbus replay FILE --to NAME`:
//! what crossed buses, with its timing, in a file (docs/RECORDING.md),
//! and back onto a bus at the recorded pace.
//!
//! The recorder (`shmbus::record::Capture`) records buses of every kind
//! into one recording: plain, many-publisher, pool (the block's bytes),
//! journaled, and streams (it takes the stream's one consumer). It is a
//! lossy subscriber unless `--lossless`: it never slows the publisher, and
//! each lag it is told of becomes a gap record, so the file says exactly
//! what it missed. SIGINT or SIGTERM stops it with the file and its index
//! whole (the buffers flushed); it also flushes whenever its buses are
//! idle for a moment, and at least every second. `--rotate-size` and
//! `--rotate-secs` start a new part (`FILE.1`, `FILE.2`, ...).
//! A replay publishes each message at its recorded offset from the first
//! (divided by `--speed`, or at once with `max`), and each gap as
//! `Publisher::skip`, so its subscribers are told the same lags.

use std::fs::File;
use std::io::BufReader;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use shmbus::record::{
    Capture, CaptureError, FileRecorder, OpenRecordingError, Record, Recording, Rotation,
};
use shmbus::{BusOptions, CreateError, OpenOptions, Publisher, Wait};

use crate::cmd::signals;
use crate::error::CliError;

/// Arguments of `shmbus record`.
#[derive(clap::Args, Debug)]
pub struct RecordArgs {
    /// The buses to record, of any kind (a bare name lives in /dev/shm).
    #[arg(required = true, value_name = "NAME")]
    pub names: Vec<String>,
    /// The recording to write; it (and FILE.idx) must not exist.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Subscribe losslessly: the publishers wait for the recorder (up to
    /// each bus's eviction timeout) rather than overwrite what it has not
    /// written. Refused by a bus that takes no lossless subscriber.
    #[arg(long)]
    pub lossless: bool,
    /// Start a new part (FILE.1, FILE.2, ...) once a part holds this many
    /// bytes.
    #[arg(long, value_name = "BYTES", value_parser = parse_rotate_size)]
    pub rotate_size: Option<u64>,
    /// Start a new part once a part spans this many seconds of receive
    /// time.
    #[arg(long, value_name = "S", value_parser = parse_rotate_secs)]
    pub rotate_secs: Option<Duration>,
}

fn parse_rotate_size(s: &str) -> Result<u64, CliError> {
    match s.trim().parse::<u64>() {
        Ok(n) if n >= 4096 => Ok(n),
        _ => Err(CliError::usage(format!(
            "{s:?} is not a part size (a whole number of bytes, at least 4096)"
        ))),
    }
}

fn parse_rotate_secs(s: &str) -> Result<Duration, CliError> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 && x < 1e9 => Ok(Duration::from_secs_f64(x)),
        _ => Err(CliError::usage(format!(
            "{s:?} is not a part length (seconds above 0, like 0.5 or 60)"
        ))),
    }
}

/// Arguments of `shmbus replay`.
#[derive(clap::Args, Debug)]
pub struct ReplayArgs {
    /// The recording to replay.
    pub file: PathBuf,
    /// The bus to publish into: created with the recorded message size, or
    /// attached to if it exists (its message size must be the same).
    #[arg(long, value_name = "NAME")]
    pub to: String,
    /// The pace: 1 is as recorded, 2 twice as fast, 0.5 half; `max` as
    /// fast as it can.
    #[arg(long, value_name = "X|max", default_value = "1", value_parser = parse_speed)]
    pub speed: Speed,
    /// The slots of a bus the replay creates, a power of two.
    #[arg(long, value_name = "N", default_value_t = 4096)]
    pub slots: u64,
}

/// `--speed`.
#[derive(Clone, Copy, Debug)]
pub enum Speed {
    /// Each message at its recorded offset divided by this.
    Times(f64),
    /// No waiting.
    Max,
}

fn parse_speed(s: &str) -> Result<Speed, CliError> {
    if s == "max" {
        return Ok(Speed::Max);
    }
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(Speed::Times(x)),
        _ => Err(CliError::usage(format!(
            "{s:?} is not a speed (a number above 0, like 0.5 or 2, or max)"
        ))),
    }
}

pub fn record(args: &RecordArgs) -> Result<(), CliError> {
    let out = args.out.display();
    let failed = |e: &dyn std::fmt::Display| CliError::runtime(format!("{out}: {e}"));
    // Every bus first, so a name that cannot be opened creates no file.
    for name in &args.names {
        shmbus::stat::stat(name)?;
    }
    let rotation = Rotation {
        max_bytes: args.rotate_size,
        max_time: args.rotate_secs,
    };
    let recorder = FileRecorder::create(&args.out, rotation).map_err(|e| failed(&e))?;
    let mut capture = Capture::new(recorder);
    for name in &args.names {
        // Lossy unless asked, from the next message.
        if let Err(e) = capture.add(name, args.lossless) {
            drop(capture);
            remove_parts(&args.out);
            return Err(capture_failed(e, &failed));
        }
    }
    // On disk before the first message: whoever waits for the file to
    // hold its buses knows the subscribers are open.
    capture.flush().map_err(|e| failed(&e))?;
    signals::stop_on(&[libc::SIGINT, libc::SIGTERM]);
    let mut flushed = Instant::now();
    while !signals::stopped() {
        let written = capture
            .poll(Wait::For(Duration::from_millis(50)))
            .map_err(|e| capture_failed(e, &failed))?;
        // Idle, or busy for a second: what is buffered goes to the file,
        // then its index.
        if written == 0 || flushed.elapsed() >= Duration::from_secs(1) {
            capture.flush().map_err(|e| failed(&e))?;
            flushed = Instant::now();
        }
    }
    capture.flush().map_err(|e| failed(&e))?;
    Ok(())
}

fn capture_failed(
    e: CaptureError,
    failed: &dyn Fn(&dyn std::fmt::Display) -> CliError,
) -> CliError {
    match e {
        CaptureError::Open { source, .. } => source.into(),
        CaptureError::Attach { source, .. } => source.into(),
        CaptureError::Write(e) => failed(&e),
        e => CliError::runtime(e.to_string()),
    }
}

/// A recording that never started (a bus refused): its files go.
fn remove_parts(base: &std::path::Path) {
    let part = shmbus::record::part_path(base, 0);
    let mut idx = part.clone().into_os_string();
    idx.push(".idx");
    let _ = std::fs::remove_file(&part);
    let _ = std::fs::remove_file(idx);
}

pub fn replay(args: &ReplayArgs) -> Result<(), CliError> {
    let path = args.file.display();
    let file = File::open(&args.file).map_err(|e| CliError::runtime(format!("{path}: {e}")))?;
    let recording = Recording::new(BufReader::new(file)).map_err(|e| match e {
        OpenRecordingError::Io(e) => CliError::runtime(format!("{path}: {e}")),
        e => CliError::usage(format!("{path}: {e}")),
    })?;
    let mut publisher: Option<Publisher<[u8]>> = None;
    // The first message's recorded time and when it was replayed.
    let mut origin: Option<(u64, Instant)> = None;
    for record in recording {
        let record = record.map_err(|e| CliError::usage(format!("{path}: {e}")))?;
        match record {
            Record::Bus(bus) => {
                if publisher.is_some() {
                    return Err(CliError::usage(format!(
                        "{path}: holds more than one bus (bus {} is {}): `shmbus replay` \
                         replays one bus only for now",
                        bus.id, bus.name
                    )));
                }
                publisher = Some(open_target(args, bus.msg_size)?);
            }
            Record::Message(m) => {
                let publisher = publisher.as_mut().ok_or_else(|| no_bus(args))?;
                if let Speed::Times(x) = args.speed {
                    let (t0, s0) = *origin.get_or_insert((m.mono_ns, Instant::now()));
                    let offset = m.mono_ns.saturating_sub(t0) as f64 / x;
                    let due = s0 + Duration::from_nanos(offset.min(u64::MAX as f64) as u64);
                    let now = Instant::now();
                    if due > now {
                        std::thread::sleep(due - now);
                    }
                }
                publisher
                    .publish(&m.payload)
                    .map_err(|e| CliError::runtime(format!("{}: {e}", args.to)))?;
            }
            Record::Gap(g) => {
                let publisher = publisher.as_mut().ok_or_else(|| no_bus(args))?;
                publisher
                    .skip(g.count)
                    .map_err(|e| CliError::runtime(format!("{}: {e}", args.to)))?;
            }
            // Kinds of a later version: a version 1 file holds none.
            _ => {}
        }
    }
    Ok(())
}

/// Cannot happen in a file the reader accepted (a message's bus is
/// declared before it): an error, not a panic.
fn no_bus(args: &ReplayArgs) -> CliError {
    CliError::usage(format!("{}: a message before its bus", args.file.display()))
}

/// The bus to replay into: created, or attached to and its size checked.
fn open_target(args: &ReplayArgs, msg_size: u32) -> Result<Publisher<[u8]>, CliError> {
    let opts = BusOptions::new(args.slots).msg_size(msg_size);
    match Publisher::<[u8]>::create(&args.to, &opts) {
        Ok(p) => Ok(p),
        Err(CreateError::AlreadyExists { .. }) => {
            let p = Publisher::<[u8]>::attach(&args.to, &OpenOptions::default())?;
            if p.msg_size() != msg_size as usize {
                return Err(CliError::usage(format!(
                    "{}: carries {}-byte messages, the recording {msg_size}",
                    args.to,
                    p.msg_size()
                )));
            }
            Ok(p)
        }
        Err(e) => Err(e.into()),
    }
}
