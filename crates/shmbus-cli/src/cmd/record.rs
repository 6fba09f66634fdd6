//! `shmbus record NAME --out FILE`: what crossed a bus, with its timing,
//! in a file (docs/RECORDING.md); `cmd::replay` puts it back onto a bus
//! at the recorded pace. Phase 1: one plain bus.
//!
//! The recorder is a lossy subscriber: it never slows the publisher, and
//! each lag it is told of becomes a gap record, so the file says exactly
//! what it missed. SIGINT or SIGTERM stops it with the file whole (the
//! buffer flushed); it also flushes whenever the bus is idle for a moment.
//! A replay publishes each message at its recorded offset from the first
//! (divided by `--speed`, or at once with `max`), and each gap as
//! `Publisher::skip`, so its subscribers are told the same lags.

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::time::Duration;

use shmbus::record::{RecordedKind, Recorder};
use shmbus::wire::flags;
use shmbus::{Kind, OpenOptions, Received, Start, Subscriber, Wait};

use crate::cmd::record_status::Progress;
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

/// The kind of a bus in words, for the refusal of phase 1.
fn kind_words(kind: Kind, flag_bits: u32) -> Option<&'static str> {
    match kind {
        Kind::Broadcast => {}
        Kind::Stream => return Some("a stream"),
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
    let mut progress = Progress::start(&args.name, &args.out);
    signals::stop_on(&[libc::SIGINT, libc::SIGTERM]);
    while !signals::stopped() {
        let seq = sub.position();
        match sub.recv(Wait::For(Duration::from_millis(50))) {
            Some(Received::Message(msg)) => {
                let now = mono_ns();
                rec.message(bus, seq, now, wall_ns(), msg)
                    .map_err(|e| failed(&e))?;
                progress.message(msg.len(), now);
            }
            Some(Received::Lagged { skipped }) => {
                rec.gap(bus, seq, skipped).map_err(|e| failed(&e))?;
                progress.lost(skipped);
            }
            // Idle: what is buffered goes to the file.
            None => {
                rec.flush().map_err(|e| failed(&e))?;
                progress.look();
            }
        }
    }
    rec.flush().map_err(|e| failed(&e))?;
    progress.finish();
    Ok(())
}
