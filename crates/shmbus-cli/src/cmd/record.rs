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
//! `--rotate-secs` start a new part (`FILE.1`, `FILE.2`, ...). Every file
//! lets read no one its buses do not (`--mode`, `--group` to widen it).
//! `--format mcap` writes MCAP instead (feature `mcap`, `cmd::mcap`):
//! the same capture, chunks compressed as `--compression` says, a
//! SIGINT or SIGTERM ending each file with its summary and footer.
//! While it runs, each bus's status file shows it in `shmbus stat` and
//! `top`, and a terminal gets a progress line (`record_status`).

use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use shmbus::Wait;
use shmbus::record::{
    Capture, CaptureError, CaptureStats, FileAccess, FileRecorder, Rotation, Sink, WriteError,
};

use crate::bridge_status::Counts;
use crate::cmd::mcap::Compression;
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
    /// Permission bits of every file of the recording, in octal (640 lets
    /// the group read it). Default: the owner's read and write, and read
    /// for the group and for others where every recorded bus lets them
    /// read (the group's only where the buses share one group, which the
    /// files then get): a recording lets read no one its buses do not.
    #[arg(long, value_name = "OCTAL", value_parser = crate::cmd::create::parse_mode)]
    pub mode: Option<u32>,
    /// The files' group, a name or a number (default: the buses' shared
    /// group where the mode lets the group in, else yours), so that with
    /// --mode 640 a team's users in that group may read it. You must be
    /// a member of the group.
    #[arg(long, value_name = "GROUP", value_parser = crate::cmd::create::parse_group)]
    pub group: Option<u32>,
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
    /// The file's format: shmbus's own (native), or MCAP (one channel per
    /// bus, for MCAP tools; a build with the `mcap` feature).
    #[arg(long, value_enum, value_name = "FORMAT", default_value = "native")]
    pub format: Format,
    /// How an MCAP file's chunks are compressed (--format mcap).
    #[arg(long, value_enum, value_name = "HOW")]
    pub compression: Option<Compression>,
}

/// `--format`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    /// shmbus's recording format, with its index (docs/RECORDING.md).
    #[default]
    Native,
    /// MCAP (docs/RECORDING.md, section MCAP).
    Mcap,
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
    // Before anything is opened: a build that cannot write it says so.
    #[cfg(not(feature = "mcap"))]
    if args.format == Format::Mcap {
        return Err(crate::cmd::mcap::not_built("record --format mcap"));
    }
    let out = args.out.display();
    let failed = |e: &WriteError| match e {
        // It names its file.
        WriteError::File { .. } => CliError::runtime(e.to_string()),
        e => CliError::runtime(format!("{out}: {e}")),
    };
    // Every bus first, so a name that cannot be opened creates no file.
    let mut files = Vec::with_capacity(args.names.len());
    for name in &args.names {
        let stat = shmbus::stat::stat(name)?;
        let meta = std::fs::symlink_metadata(&stat.path)
            .map_err(|e| CliError::runtime(format!("{}: {e}", stat.path.display())))?;
        files.push(meta);
    }
    let access = access(args, &files);
    let rotation = Rotation {
        max_bytes: args.rotate_size,
        max_time: args.rotate_secs,
    };
    match args.format {
        Format::Native => {
            if args.compression.is_some() {
                return Err(CliError::usage(
                    "--compression is for --format mcap (a native recording is not compressed)",
                ));
            }
            let recorder = FileRecorder::create_with_access(&args.out, rotation, access)
                .map_err(|e| failed(&e))?;
            capture(args, Capture::new(recorder), &failed)?;
            Ok(())
        }
        Format::Mcap => record_mcap(args, rotation, access, &failed),
    }
}

#[cfg(feature = "mcap")]
fn record_mcap(
    args: &RecordArgs,
    rotation: Rotation,
    access: FileAccess,
    failed: &dyn Fn(&WriteError) -> CliError,
) -> Result<(), CliError> {
    let options = crate::cmd::mcap::options(args.compression.unwrap_or_default(), rotation, access);
    let recorder = shmbus_mcap::McapRecorder::create(&args.out, options)
        .map_err(crate::cmd::mcap::create_failed)?;
    let capture = capture(args, Capture::new(recorder), failed)?;
    // The last chunk, the summary, the footer.
    capture.into_inner().finish().map_err(|e| failed(&e))
}

#[cfg(not(feature = "mcap"))]
fn record_mcap(
    _: &RecordArgs,
    _: Rotation,
    _: FileAccess,
    _: &dyn Fn(&WriteError) -> CliError,
) -> Result<(), CliError> {
    Err(crate::cmd::mcap::not_built("record --format mcap"))
}

/// Adds the buses to `capture` and records until SIGINT or SIGTERM; the
/// capture flushed, given back.
fn capture<S: Sink>(
    args: &RecordArgs,
    mut capture: Capture<S>,
    failed: &dyn Fn(&WriteError) -> CliError,
) -> Result<Capture<S>, CliError> {
    let mut ids = Vec::with_capacity(args.names.len());
    for name in &args.names {
        // Lossy unless asked, from the next message.
        match capture.add(name, args.lossless) {
            Ok(id) => ids.push(id),
            Err(e) => {
                drop(capture);
                remove_parts(&args.out);
                return Err(capture_failed(e, failed));
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
            .map_err(|e| capture_failed(e, failed))?;
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
    Ok(capture)
}

/// The recording's mode and group: as given, else the owner's read and
/// write and the read bits every bus gives the group (one they share) and
/// others. Never their write bits: a recording is the recorder's to write.
fn access(args: &RecordArgs, buses: &[std::fs::Metadata]) -> FileAccess {
    let shared = buses.iter().fold(0o044, |m, b| m & b.mode());
    let one_group = buses.iter().all(|b| b.gid() == buses[0].gid());
    let mut access = FileAccess::default();
    access = match (args.mode, one_group) {
        (Some(mode), _) => access.mode(mode),
        (None, true) => access.mode(0o600 | shared),
        (None, false) => access.mode(0o600 | (shared & 0o004)),
    };
    match (args.group, buses.first()) {
        (Some(gid), _) => access.group(gid),
        (None, Some(b)) if args.mode.is_none() && shared & 0o040 != 0 => {
            if may_chgrp(b.gid()) {
                access.group(b.gid())
            } else {
                // Another's group, which the files cannot get: not its.
                access.mode(access.mode & !0o040)
            }
        }
        _ => access,
    }
}

/// Whether this process may give its files group `gid`: its own, or root.
fn may_chgrp(gid: u32) -> bool {
    use rustix::process::{getegid, geteuid, getgroups};
    geteuid().is_root()
        || getegid().as_raw() == gid
        || getgroups().is_ok_and(|groups| groups.iter().any(|g| g.as_raw() == gid))
}

fn capture_failed(e: CaptureError, failed: &dyn Fn(&WriteError) -> CliError) -> CliError {
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
