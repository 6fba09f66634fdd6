//! `shmbus record NAME --out FILE` and `shmbus replay FILE --to NAME`:
//! what crossed a bus, with its timing, in a file (docs/RECORDING.md),
//! and back onto a bus at the recorded pace. Phase 1: one plain bus.
//!
//! The recorder is a lossy subscriber: it never slows the publisher, and
//! each lag it is told of becomes a gap record, so the file says exactly
//! what it missed. SIGINT or SIGTERM stops it with the file whole (the
//! buffer flushed); it also flushes whenever the bus is idle for a moment.
//! A replay publishes each message at its recorded offset from the first
//! (divided by `--speed`, or at once with `max`), and each gap as
//! `Publisher::skip`, so its subscribers are told the same lags.

use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use shmbus::record::{OpenRecordingError, Record, RecordedKind, Recorder, Recording};
use shmbus::wire::flags;
use shmbus::{
    BusOptions, CreateError, Kind, OpenOptions, Publisher, Received, Start, Subscriber, Wait,
};

use crate::cmd::signals;
use crate::error::CliError;

/// Arguments of `shmbus record`.
#[derive(clap::Args, Debug)]
pub struct RecordArgs {
    /// The bus to record (a plain bus; a bare name lives in /dev/shm).
    pub name: String,
    /// The recording to write; it must not exist.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
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

/// The kind of a bus in words, for the refusal of phase 1.
fn kind_words(kind: Kind, flag_bits: u32) -> Option<&'static str> {
    match kind {
        Kind::Broadcast => {}
        Kind::Stream => return Some("a stream"),
        Kind::Blackboard => return Some("a blackboard"),
        _ => return Some("of a kind this build does not know"),
    }
    if flag_bits & flags::POOL != 0 {
        Some("a pool bus")
    } else if flag_bits & flags::JOURNALED != 0 {
        Some("a journaled bus")
    } else if flag_bits & flags::MULTI_PUBLISHER != 0 {
        Some("a many-publisher bus")
    } else {
        None
    }
}

fn wall_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Realtime);
    (t.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(t.tv_nsec as u64)
}

fn mono_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    (t.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(t.tv_nsec as u64)
}

pub fn record(args: &RecordArgs) -> Result<(), CliError> {
    let stat = shmbus::stat::stat(&args.name)?;
    if let Some(kind) = kind_words(stat.header.kind, stat.header.flags) {
        return Err(CliError::usage(format!(
            "{} is {kind}: `shmbus record` records plain buses only for now",
            args.name
        )));
    }
    // Lossy, from the next message: a recorder never slows a publisher.
    let opts = OpenOptions::default().start(Start::Next);
    let mut sub = Subscriber::<[u8]>::open(&args.name, &opts)?;
    let out = args.out.display();
    let file = File::options()
        .write(true)
        .create_new(true)
        .open(&args.out)
        .map_err(|e| CliError::runtime(format!("{out}: {e}")))?;
    let failed = |e: &dyn std::fmt::Display| CliError::runtime(format!("{out}: {e}"));
    let mut rec = Recorder::new(BufWriter::with_capacity(1 << 20, file)).map_err(|e| failed(&e))?;
    let msg_size = u32::try_from(sub.msg_size()).map_err(|e| failed(&e))?;
    let bus = rec
        .add_bus(&args.name, RecordedKind::Bus, msg_size)
        .map_err(|e| failed(&e))?;
    // On disk before the first message: whoever waits for the file to
    // hold its bus knows the subscriber is open.
    rec.flush().map_err(|e| failed(&e))?;
    signals::stop_on(&[libc::SIGINT, libc::SIGTERM]);
    while !signals::stopped() {
        let seq = sub.position();
        match sub.recv(Wait::For(Duration::from_millis(50))) {
            Some(Received::Message(msg)) => rec
                .message(bus, seq, mono_ns(), wall_ns(), msg)
                .map_err(|e| failed(&e))?,
            Some(Received::Lagged { skipped }) => {
                rec.gap(bus, seq, skipped).map_err(|e| failed(&e))?
            }
            // Idle: what is buffered goes to the file.
            None => rec.flush().map_err(|e| failed(&e))?,
        }
    }
    rec.flush().map_err(|e| failed(&e))?;
    Ok(())
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
