//! `shmbus record NAME... --out FILE`: what crossed buses, with its
//! timing, in a file (docs/RECORDING.md); `cmd::replay` puts it back onto
//! buses at the recorded pace.
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
//! While it runs, each bus's status file shows it in `shmbus stat` and
//! `top`, and a terminal gets a progress line (`record_status`).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use shmbus::record::{Capture, CaptureError, CaptureStats, FileRecorder, Rotation};
use shmbus::Wait;

use crate::bridge_status::Counts;
use crate::cmd::record_status::Progress;
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
    let mut ids = Vec::with_capacity(args.names.len());
    for name in &args.names {
        // Lossy unless asked, from the next message.
        match capture.add(name, args.lossless) {
            Ok(id) => ids.push(id),
            Err(e) => {
                drop(capture);
                remove_parts(&args.out);
                return Err(capture_failed(e, &failed));
            }
        }
    }
    // On disk before the first message: whoever waits for the file to
    // hold its buses knows the subscribers are open.
    capture.flush().map_err(|e| failed(&e))?;
    let mut progress = Progress::start(&args.names, &args.out);
    let counts = |s: CaptureStats| Counts {
        messages: s.messages,
        bytes: s.bytes,
        lost: s.lost,
        ..Counts::default()
    };
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
        progress.look(counts(capture.stats()), |i| {
            counts(capture.bus_stats(ids[i]).unwrap_or_default())
        });
    }
    capture.flush().map_err(|e| failed(&e))?;
    progress.finish();
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
        e @ CaptureError::SameBus { .. } => CliError::usage(e.to_string()),
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
