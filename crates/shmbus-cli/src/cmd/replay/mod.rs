//! `shmbus replay FILE --to NAME | --map REC=BUS...`: a recording
//! (docs/RECORDING.md) published back into buses at the recorded pace,
//! each gap as `Publisher::skip` (one lag report of its length to a
//! subscriber that follows, as the recorder was told), within a window
//! (`--from`, `--until`), once or in a loop, and the pace error reported.
//!
//! Everything in the file is untrusted: the reader bounds every record,
//! times that run backwards publish at once (never a wait longer than the
//! recorded span divided by the speed), and a loop over a file with nothing
//! to replay stops after one pass rather than spinning.

mod pace;
mod window;

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use shmbus::record::{BusRecord, OpenRecordingError, Record, Recording};
use shmbus::wire::flags;
use shmbus::{BusOptions, CreateError, Kind, OpenOptions, Publisher};

use crate::cmd::signals;
use crate::error::CliError;
use crate::out;
use pace::PaceError;
use window::{Place, Point, Window};

/// Arguments of `shmbus replay`.
#[derive(clap::Args, Debug)]
pub struct ReplayArgs {
    /// The recording to replay.
    pub file: PathBuf,
    /// The bus to publish a one-bus recording into: created with the
    /// recorded message size, or attached to if it exists (a plain bus of
    /// the same message size).
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
    /// The slots of a bus the replay creates, a power of two.
    #[arg(long, value_name = "N", default_value_t = 4096)]
    pub slots: u64,
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

/// `--speed`.
#[derive(Clone, Copy, Debug)]
pub enum Speed {
    /// Each message at its recorded offset divided by this.
    Times(f64),
    /// No waiting.
    Max,
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

/// Below this much time to a message's due time the replay spins instead
/// of sleeping: a sleep overshoots by the timer slack (50 µs by default).
const SPIN_NS: u64 = 250_000;
/// The longest sleep without looking at the stop flag.
const NAP: Duration = Duration::from_millis(50);

/// A bus the replay publishes into.
struct Target {
    name: String,
    msg_size: u32,
    publisher: Publisher<[u8]>,
}

/// What a replay did, for its summary.
#[derive(Debug, Default)]
struct Totals {
    passes: u64,
    messages: u64,
    bytes: u64,
    gaps: u64,
    skipped: u64,
    pace: PaceError,
}

struct Replay<'a> {
    args: &'a ReplayArgs,
    window: Window,
    /// Recorded bus id to its target, as declared in this file.
    by_id: HashMap<u32, usize>,
    targets: Vec<Target>,
    /// The names of the recorded buses met so far.
    seen_names: Vec<String>,
    totals: Totals,
}

pub fn replay(args: &ReplayArgs) -> Result<(), CliError> {
    check_map(&args.map)?;
    signals::stop_on(&[libc::SIGINT, libc::SIGTERM]);
    let mut r = Replay {
        args,
        window: Window {
            from: args.from,
            until: args.until,
        },
        by_id: HashMap::new(),
        targets: Vec::new(),
        seen_names: Vec::new(),
        totals: Totals::default(),
    };
    let started = Instant::now();
    loop {
        let replayed = r.pass()?;
        r.totals.passes += 1;
        let more = match args.loops {
            None => false,
            Some(Loops::Times(n)) => r.totals.passes < n,
            Some(Loops::Forever) => true,
        };
        // A pass that published nothing would repeat forever doing nothing.
        if !more || replayed == 0 || signals::stopped() {
            break;
        }
    }
    if let Some((rec, _)) = args.map.iter().find(|(rec, _)| !r.seen_names.contains(rec)) {
        return Err(CliError::usage(format!(
            "{}: --map {rec}=...: the recording has no bus {rec}",
            args.file.display()
        )));
    }
    r.summary(started.elapsed())
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

impl Replay<'_> {
    fn path(&self) -> std::path::Display<'_> {
        self.args.file.display()
    }

    /// One pass over the file; returns how many messages and gaps it
    /// published.
    fn pass(&mut self) -> Result<u64, CliError> {
        let path = self.path();
        let file =
            File::open(&self.args.file).map_err(|e| CliError::runtime(format!("{path}: {e}")))?;
        let recording =
            Recording::new(BufReader::with_capacity(1 << 20, file)).map_err(|e| match e {
                OpenRecordingError::Io(e) => CliError::runtime(format!("{path}: {e}")),
                e => CliError::usage(format!("{path}: {e}")),
            })?;
        self.by_id.clear();
        // The recording's first message time (any bus): `--from`/`--until`
        // offsets count from it.
        let mut first_ns: Option<u64> = None;
        // The first replayed message's recorded time and when it went out.
        let mut origin: Option<(u64, Instant)> = None;
        let mut begun = false;
        let mut replayed = 0u64;
        for record in recording {
            if signals::stopped() {
                break;
            }
            let record = record.map_err(|e| CliError::usage(format!("{}: {e}", self.path())))?;
            match record {
                Record::Bus(bus) => self.declare(&bus)?,
                Record::Message(m) => {
                    let t = *self.by_id.get(&m.bus).ok_or_else(|| self.no_bus())?;
                    let offset = m.mono_ns.saturating_sub(*first_ns.get_or_insert(m.mono_ns));
                    match self.window.message(m.seq, offset) {
                        Place::Before => continue,
                        // Later records of a one-bus recording are later
                        // still; with several buses another may not be.
                        Place::After if self.by_id.len() == 1 => break,
                        Place::After => continue,
                        Place::Inside => {}
                    }
                    begun = true;
                    if let Speed::Times(x) = self.args.speed {
                        let (t0, s0) = *origin.get_or_insert((m.mono_ns, Instant::now()));
                        let late = m.mono_ns.saturating_sub(t0) as f64 / x;
                        let due = s0 + Duration::from_nanos(late.min(u64::MAX as f64) as u64);
                        if !wait_until(due) {
                            break;
                        }
                        let now = Instant::now();
                        let off =
                            now.saturating_duration_since(due) + due.saturating_duration_since(now);
                        self.totals
                            .pace
                            .add(u64::try_from(off.as_nanos()).unwrap_or(u64::MAX));
                    }
                    let target = &mut self.targets[t];
                    target
                        .publisher
                        .publish(&m.payload)
                        .map_err(|e| CliError::runtime(format!("{}: {e}", target.name)))?;
                    self.totals.messages += 1;
                    self.totals.bytes += m.payload.len() as u64;
                    replayed += 1;
                }
                Record::Gap(g) => {
                    let t = *self.by_id.get(&g.bus).ok_or_else(|| self.no_bus())?;
                    let n = self.window.gap(g.first, g.count, begun);
                    if n == 0 {
                        continue;
                    }
                    let target = &mut self.targets[t];
                    target
                        .publisher
                        .skip(n)
                        .map_err(|e| CliError::runtime(format!("{}: {e}", target.name)))?;
                    self.totals.gaps += 1;
                    self.totals.skipped += n;
                    replayed += 1;
                }
                // Kinds of a later version: a version 1 file holds none.
                _ => {}
            }
        }
        Ok(replayed)
    }

    /// A bus record: its target found (by `--to` or `--map`) and opened,
    /// once per target for the whole replay.
    fn declare(&mut self, bus: &BusRecord) -> Result<(), CliError> {
        let name = match &self.args.to {
            Some(to) => {
                if !self.by_id.is_empty() {
                    return Err(CliError::usage(format!(
                        "{}: holds more than one bus (bus {} is {}): give each its target \
                         with --map REC=BUS",
                        self.path(),
                        bus.id,
                        bus.name
                    )));
                }
                to.clone()
            }
            None => match self.args.map.iter().find(|(rec, _)| *rec == bus.name) {
                Some((_, to)) => to.clone(),
                None => {
                    return Err(CliError::usage(format!(
                        "{}: bus {} ({}) has no --map {}=BUS",
                        self.path(),
                        bus.id,
                        bus.name,
                        bus.name
                    )))
                }
            },
        };
        if !self.seen_names.contains(&bus.name) {
            self.seen_names.push(bus.name.clone());
        }
        let index = match self.targets.iter().position(|t| t.name == name) {
            Some(i) if self.targets[i].msg_size == bus.msg_size => i,
            Some(i) => {
                return Err(CliError::usage(format!(
                    "{}: bus {} ({}) has {}-byte messages, and {name} {}",
                    self.path(),
                    bus.id,
                    bus.name,
                    bus.msg_size,
                    self.targets[i].msg_size
                )))
            }
            None => {
                let publisher = open_target(&name, self.args.slots, bus.msg_size)?;
                self.targets.push(Target {
                    name,
                    msg_size: bus.msg_size,
                    publisher,
                });
                self.targets.len() - 1
            }
        };
        if self.by_id.values().any(|&i| i == index) {
            return Err(CliError::usage(format!(
                "{}: two recorded buses map to {}",
                self.path(),
                self.targets[index].name
            )));
        }
        self.by_id.insert(bus.id, index);
        Ok(())
    }

    /// Cannot happen in a file the reader accepted (a message's bus is
    /// declared before it): an error, not a panic.
    fn no_bus(&self) -> CliError {
        CliError::usage(format!("{}: a record before its bus", self.path()))
    }

    fn summary(&self, took: Duration) -> Result<(), CliError> {
        let t = &self.totals;
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
        if self.args.json {
            let speed = match self.args.speed {
                Speed::Times(x) => format!("{x}"),
                Speed::Max => "\"max\"".to_string(),
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
                 \"seconds\":{secs:.6},\"msgs_per_s\":{rate:.1},\"speed\":{speed},\
                 \"pace_error_us\":{pace}}}",
                t.passes, t.messages, t.bytes, t.gaps, t.skipped
            )
            .and_then(|()| o.flush())
            .map_err(CliError::stdout)?;
        } else {
            let pace = if t.pace.count() == 0 {
                "not paced (--speed max)".to_string()
            } else {
                format!("pace error p50 {p50:.1} µs, p99 {p99:.1} µs, max {max:.1} µs")
            };
            eprintln!(
                "replayed {} messages and {} gaps ({} skipped) in {} pass{} and {secs:.3} s; {pace}",
                t.messages,
                t.gaps,
                t.skipped,
                t.passes,
                if t.passes == 1 { "" } else { "es" }
            );
        }
        Ok(())
    }
}

/// Waits until `due`: sleeps while it is far, spins the last
/// [`SPIN_NS`]. `false` if a stop signal came first.
fn wait_until(due: Instant) -> bool {
    loop {
        if signals::stopped() {
            return false;
        }
        let now = Instant::now();
        if now >= due {
            return true;
        }
        let left = due - now;
        if left > Duration::from_nanos(SPIN_NS) {
            std::thread::sleep((left - Duration::from_nanos(SPIN_NS)).min(NAP));
        } else {
            std::hint::spin_loop();
        }
    }
}

/// The bus `name` to replay into: created as a plain bus of `msg_size`,
/// or attached to if it exists, as long as it is a plain bus of that size.
fn open_target(name: &str, slots: u64, msg_size: u32) -> Result<Publisher<[u8]>, CliError> {
    let opts = BusOptions::new(slots).msg_size(msg_size);
    match Publisher::<[u8]>::create(name, &opts) {
        Ok(p) => Ok(p),
        Err(CreateError::AlreadyExists { .. }) => {
            let stat = shmbus::stat::stat(name)?;
            let other = match stat.header.kind {
                Kind::Broadcast if stat.header.flags & flags::POOL != 0 => Some("a pool bus"),
                Kind::Broadcast if stat.header.flags & flags::JOURNALED != 0 => {
                    Some("a journaled bus")
                }
                Kind::Broadcast if stat.header.flags & flags::MULTI_PUBLISHER != 0 => {
                    Some("a many-publisher bus")
                }
                Kind::Broadcast => None,
                Kind::Stream => Some("a stream"),
                _ => Some("of a kind this build does not know"),
            };
            if let Some(other) = other {
                return Err(CliError::usage(format!(
                    "{name} is {other}: the recording holds a plain bus's messages"
                )));
            }
            let p = Publisher::<[u8]>::attach(name, &OpenOptions::default())?;
            if p.msg_size() != msg_size as usize {
                return Err(CliError::usage(format!(
                    "{name}: carries {}-byte messages, the recording {msg_size}",
                    p.msg_size()
                )));
            }
            Ok(p)
        }
        Err(e) => Err(e.into()),
    }
}
