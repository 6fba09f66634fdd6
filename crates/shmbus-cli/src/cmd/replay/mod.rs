//! `shmbus replay FILE --to NAME | --map REC=BUS...`: a recording
//! (docs/RECORDING.md, every part of a rotated one) published back into
//! buses of the recorded kinds by `shmbus::record::Replayer`, at the
//! recorded pace, within a window (`--from`, `--until`), once or in a
//! loop, and the pace error reported. An MCAP file (known by its magic)
//! is replayed the same way through `shmbus-mcap` (feature `mcap`). This
//! file is the flags, the loop and the summary; the replay itself is the
//! library's.

mod window;

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use shmbus::record::{OpenRecordingError, Point, ReadError, ReplayError, Replayer, Speed, Window};

use crate::cmd::signals;
use crate::error::CliError;
use crate::out;

/// Arguments of `shmbus replay`.
#[derive(clap::Args, Debug)]
pub struct ReplayArgs {
    /// The recording to replay: shmbus's own, or an MCAP file (known by
    /// its first bytes; a build with the `mcap` feature) that shmbus wrote
    /// or whose channels carry raw bytes of a fixed size (schema
    /// `bytes[N]`).
    pub file: PathBuf,
    /// The bus to publish a one-bus recording into: created as the
    /// recorded kind with its geometry, or attached to if it exists (of
    /// that kind and message size, yours, granting no more than --mode).
    #[arg(
        long,
        value_name = "NAME",
        required_unless_present = "map",
        conflicts_with = "map"
    )]
    pub to: Option<String>,
    /// A recorded bus and the bus to publish it into, once per recorded
    /// bus (each must be named; each target once).
    #[arg(long = "map", value_name = "REC=BUS", value_parser = parse_map)]
    pub map: Vec<(String, String)>,
    /// The pace: 1 is as recorded, 2 twice as fast, 0.5 half; `max` as
    /// fast as it can.
    #[arg(long, value_name = "X|max", default_value = "1", value_parser = parse_speed)]
    pub speed: Speed,
    /// The slots of each bus the replay creates (a stream: its ring's
    /// bytes), a power of two; by default the recorded ones.
    #[arg(long, value_name = "N")]
    pub slots: Option<u64>,
    /// Permission bits of each bus the replay creates, in octal (660 lets
    /// the group in); an existing target is published into only if it is
    /// yours and grants no more than this (another user's is refused).
    #[arg(long, value_name = "OCTAL", default_value = "600", value_parser = crate::cmd::create::parse_mode)]
    pub mode: u32,
    /// Where a journaled bus the replay creates keeps its journal
    /// (DIR/NAME.journal); needed only to create one.
    #[arg(long, value_name = "DIR")]
    pub journal_dir: Option<PathBuf>,
    /// Start at this point (inclusive): a time offset from the recording's
    /// first message (1.5s, 200ms, 30us, 10ns) or a sequence (seq:N).
    #[arg(long, value_name = "TIME|seq:N", value_parser = window::parse_point)]
    pub from: Option<Point>,
    /// Stop before this point (exclusive), as `--from`.
    #[arg(long, value_name = "TIME|seq:N", value_parser = window::parse_point)]
    pub until: Option<Point>,
    /// Replay it again and again: N times in all, or without N until
    /// SIGINT or SIGTERM. Each pass is paced from its own start.
    #[arg(long = "loop", value_name = "N", num_args = 0..=1,
          default_missing_value = "forever", value_parser = parse_loops)]
    pub loops: Option<Loops>,
    /// Print the summary (counts, pace error) as one JSON line on stdout
    /// instead of a line on stderr.
    #[arg(long)]
    pub json: bool,
}

/// `--loop`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loops {
    Times(u64),
    Forever,
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

fn parse_loops(s: &str) -> Result<Loops, CliError> {
    if s == "forever" {
        return Ok(Loops::Forever);
    }
    match s.parse::<u64>() {
        Ok(n) if n > 0 => Ok(Loops::Times(n)),
        _ => Err(CliError::usage(format!(
            "{s:?} is not a number of passes (1 or more; --loop alone loops until SIGINT)"
        ))),
    }
}

fn parse_map(s: &str) -> Result<(String, String), CliError> {
    match s.split_once('=') {
        Some((rec, bus)) if !rec.is_empty() && !bus.is_empty() => {
            Ok((rec.to_string(), bus.to_string()))
        }
        _ => Err(CliError::usage(format!(
            "{s:?} is not REC=BUS (a recorded bus's name, =, the bus to publish it into)"
        ))),
    }
}

pub fn replay(args: &ReplayArgs) -> Result<(), CliError> {
    check_map(&args.map)?;
    signals::stop_on(&[libc::SIGINT, libc::SIGTERM]);
    let mut r = Replayer::new(args.speed)
        .window(Window {
            from: args.from,
            until: args.until,
        })
        .mode(args.mode)
        .stop_when(signals::stopped);
    if let Some(to) = &args.to {
        r = r.to(to);
    }
    for (rec, bus) in &args.map {
        r = r.map(rec, bus);
    }
    if let Some(slots) = args.slots {
        r = r.slots(slots);
    }
    if let Some(dir) = &args.journal_dir {
        r = r.journal_dir(dir);
    }
    let mcap = crate::cmd::mcap::is_mcap(&args.file);
    let started = Instant::now();
    loop {
        let replayed = if mcap {
            replay_mcap(args, &mut r)?
        } else {
            r.run(&args.file).map_err(|e| cli_error(args, e))?
        };
        let more = match args.loops {
            None => false,
            Some(Loops::Times(n)) => r.stats().passes < n,
            Some(Loops::Forever) => true,
        };
        // A pass that published nothing would repeat forever doing nothing.
        if !more || replayed == 0 || signals::stopped() {
            break;
        }
    }
    summary(args, &r, started.elapsed())
}

/// One pass over an MCAP file.
#[cfg(feature = "mcap")]
fn replay_mcap(args: &ReplayArgs, r: &mut Replayer) -> Result<u64, CliError> {
    use shmbus_mcap::{OpenError, ReadError as McapReadError, ReplayMcapError};
    shmbus_mcap::replay(r, &args.file).map_err(|e| match e {
        ReplayMcapError::Replay(e) => cli_error(args, e),
        e @ (ReplayMcapError::Open(OpenError::Io { .. })
        | ReplayMcapError::Read(McapReadError::Io { .. })) => CliError::runtime(e.to_string()),
        // The file's fault.
        e => CliError::usage(e.to_string()),
    })
}

#[cfg(not(feature = "mcap"))]
fn replay_mcap(args: &ReplayArgs, _: &mut Replayer) -> Result<u64, CliError> {
    Err(crate::cmd::mcap::not_built(&format!(
        "{}: an MCAP file",
        args.file.display()
    )))
}

/// The replay's error as one line: the file's or the command line's fault
/// (a target of the wrong kind or size included) exits 2, the system's 1.
fn cli_error(args: &ReplayArgs, e: ReplayError) -> CliError {
    let line = e.to_string();
    match e {
        ReplayError::NoTarget { id, recorded, .. } => CliError::usage(format!(
            "{}: bus {id} ({recorded}) has no --map {recorded}=BUS",
            args.file.display()
        )),
        ReplayError::Open {
            source: OpenRecordingError::Io(_),
            ..
        }
        | ReplayError::Read {
            source: ReadError::Io(_),
            ..
        }
        | ReplayError::Stat { .. }
        | ReplayError::NoSpace { .. }
        | ReplayError::Attach { .. }
        | ReplayError::JournalAttach { .. }
        | ReplayError::Publish { .. } => CliError::runtime(line),
        ReplayError::Create { source, .. } => match CliError::from(source) {
            CliError::Usage(_) => CliError::usage(line),
            _ => CliError::runtime(line),
        },
        ReplayError::JournalCreate { .. } => CliError::runtime(line),
        _ => CliError::usage(line),
    }
}

fn check_map(map: &[(String, String)]) -> Result<(), CliError> {
    for (i, (rec, bus)) in map.iter().enumerate() {
        for (rec2, bus2) in &map[..i] {
            if rec == rec2 {
                return Err(CliError::usage(format!("--map {rec}=...: given twice")));
            }
            if bus == bus2 {
                return Err(CliError::usage(format!(
                    "--map {rec2}={bus} and {rec}={bus}: a bus has one publisher; \
                     give each recorded bus its own"
                )));
            }
        }
    }
    Ok(())
}

fn summary(args: &ReplayArgs, r: &Replayer, took: Duration) -> Result<(), CliError> {
    let t = r.stats();
    let us = |ns: u64| ns as f64 / 1e3;
    let (p50, p99, max) = (
        us(t.pace.quantile_ns(0.5)),
        us(t.pace.quantile_ns(0.99)),
        us(t.pace.max_ns()),
    );
    let secs = took.as_secs_f64();
    let rate = if secs > 0.0 {
        t.messages as f64 / secs
    } else {
        0.0
    };
    if args.json {
        let speed = match args.speed {
            Speed::Times(x) => format!("{x}"),
            _ => "\"max\"".to_string(),
        };
        let pace = if t.pace.count() == 0 {
            "null".to_string()
        } else {
            format!("{{\"p50\":{p50:.3},\"p99\":{p99:.3},\"max\":{max:.3}}}")
        };
        let mut o = out::stdout()?;
        writeln!(
            o,
            "{{\"passes\":{},\"messages\":{},\"bytes\":{},\"gaps\":{},\"skipped\":{},\
             \"gaps_dropped\":{},\"seconds\":{secs:.6},\"msgs_per_s\":{rate:.1},\
             \"speed\":{speed},\"pace_error_us\":{pace}}}",
            t.passes, t.messages, t.bytes, t.gaps, t.skipped, t.gaps_dropped
        )
        .and_then(|()| o.flush())
        .map_err(CliError::stdout)?;
    } else {
        let pace = if t.pace.count() == 0 {
            "not paced (--speed max)".to_string()
        } else {
            format!("pace error p50 {p50:.1} µs, p99 {p99:.1} µs, max {max:.1} µs")
        };
        let dropped = if t.gaps_dropped == 0 {
            String::new()
        } else {
            format!(
                ", {} gaps not replayed (the target's kind has no skip)",
                t.gaps_dropped
            )
        };
        eprintln!(
            "replayed {} messages and {} gaps ({} skipped{dropped}) in {} pass{} and {secs:.3} s; {pace}",
            t.messages,
            t.gaps,
            t.skipped,
            t.passes,
            if t.passes == 1 { "" } else { "es" }
        );
    }
    Ok(())
}
