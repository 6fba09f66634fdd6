//! What `shmbus top` shows, sampled: each bus's state from `shmbus::stat`,
//! rates from the difference with the previous sample, and each process's
//! CPU time and context switches from /proc.
//!
//! Everything comes from files other processes write, so nothing here
//! trusts it: a bus that cannot be read is a row saying why, a subscriber
//! whose counts went backwards between two samples is marked corrupt, and
//! a rate that would be negative is none.
//!
//! A pool bus also carries its pool: geometry and census per bus, and per
//! subscriber the blocks its registry entry holds. The census is one
//! lock-free pass (`shmbus::stat::PoolStat`), so it may mix moments; the
//! view shows it as read.
//!
//! A blackboard carries its table and hottest keys (`blackboard.rs`), a
//! service its servers, clients and calls (`service.rs`).
//!
//! A bus carries the bridges running on it, from their status files
//! (`crate::bridge_status`, read once per sample), with the rate each
//! bridge measured itself: its file changes once a second, so a rate taken
//! between two of top's samples would move by steps.

use std::collections::HashMap;
use std::path::PathBuf;

use shmbus::pool::Census;
use shmbus::stat::{BusStat, SubscriberStat};

use super::blackboard::{self, BlackboardRow, BoardPrev};
use super::service::{self, ServiceRow};
use crate::bridge_status::{self, Direction, Status};
use crate::cmd::inspect::holds;

/// One sample of every bus `top` watches.
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// `CLOCK_MONOTONIC_COARSE` when it was taken, ns.
    pub at_ns: u64,
    /// Seconds since the previous sample (`None` for the first).
    pub interval_s: Option<f64>,
    /// One entry per bus, sorted by name.
    pub buses: Vec<BusView>,
}

/// One bus: its state, or why there is none.
#[derive(Clone, Debug)]
pub struct BusView {
    /// The file name (what `ls` calls it).
    pub name: String,
    /// Its path.
    pub path: PathBuf,
    /// What was read, or one line saying why nothing could be (gone,
    /// corrupt, being created).
    pub state: Result<BusRow, String>,
}

/// A bus (or stream) that could be read.
#[derive(Clone, Debug)]
pub struct BusRow {
    /// What it is, as `shmbus::SegmentKind` names it.
    pub kind: String,
    /// Slots (a bus), bytes (a stream) or keys (a blackboard).
    pub capacity: u64,
    /// What `capacity` counts, as `--json` names it: `slots`, `bytes` or
    /// `max_keys`.
    pub unit: &'static str,
    /// Bytes per message (a bus); the largest record (a stream).
    pub msg_size: u32,
    /// Next sequence (a bus) or bytes written (a stream).
    pub head: u64,
    /// Messages (bytes, for a stream) published since creation.
    pub published: u64,
    /// Publisher generation (`None` for a stream or a blackboard).
    pub epoch: Option<u64>,
    /// The publisher's (producer's) pid and whether it holds its lock.
    pub publisher_pid: u32,
    pub publisher_alive: bool,
    /// A bus's limits on lossless subscribers (`None` for a stream or a
    /// blackboard).
    pub lossless: Option<shmbus::stat::Lossless>,
    /// Messages per second published since the previous sample.
    pub msgs_per_sec: Option<f64>,
    /// Bytes per second published since the previous sample; `None` on a
    /// pool bus, whose message sizes are not known (why: in `Sampler::row`).
    pub bytes_per_sec: Option<f64>,
    /// The journal's size and records, or why they could not be read.
    pub journal: Option<Result<JournalRow, String>>,
    /// Subscribers: live ones, then those gone, in registry order.
    pub subscribers: Vec<SubRow>,
    /// A stream's fill and consumer.
    pub stream: Option<StreamRow>,
    /// The publisher process's CPU and context switches.
    pub publisher_proc: Option<ProcRow>,
    /// A pool bus's blocks (`None` for any other bus).
    pub pool: Option<PoolRow>,
    /// A blackboard's table and hottest keys (`None` for any other kind).
    pub blackboard: Option<BlackboardRow>,
    /// A service's servers, clients and calls (`None` for any other
    /// kind).
    pub service: Option<ServiceRow>,
    /// The bridges running on it (`shmbus bridge out|in`, and `shmbus
    /// record`), by pid.
    pub bridges: Vec<Status>,
}

/// A pool bus's blocks: its geometry and where each block is.
#[derive(Clone, Copy, Debug)]
pub struct PoolRow {
    /// Bytes per block: the largest message.
    pub block_size: u64,
    /// Blocks in the pool.
    pub blocks: u64,
    /// Where each block is: free, loaned, on the ring, held, reclaimable,
    /// corrupt. Its `held` counts only blocks off the ring; a subscriber's
    /// [`SubRow::held`] also counts those it holds still on the ring.
    pub census: Census,
}

impl PoolRow {
    /// Blocks the next loan cannot take: loaned, on the ring, held off the
    /// ring, or corrupt. Free and reclaimable blocks are what a publisher
    /// loans from; when none is left, its loan waits.
    pub fn in_use(&self) -> u64 {
        let c = &self.census;
        c.loaned
            .saturating_add(c.on_ring)
            .saturating_add(c.held)
            .saturating_add(c.corrupt)
    }

    /// [`in_use`](PoolRow::in_use) as a fraction of the blocks (0 for an
    /// empty pool, which no valid header has).
    pub fn occupancy(&self) -> f64 {
        if self.blocks == 0 {
            0.0
        } else {
            self.in_use() as f64 / self.blocks as f64
        }
    }
}

/// A journaled bus's journal file.
#[derive(Clone, Debug)]
pub struct JournalRow {
    pub path: PathBuf,
    pub file_bytes: u64,
    pub records: u64,
}

/// A stream's state beyond a bus's.
#[derive(Clone, Debug)]
pub struct StreamRow {
    /// Bytes waiting, and as a fraction of the capacity.
    pub fill: u64,
    pub fill_fraction: f64,
    /// Bytes written and released, ever.
    pub tail: u64,
    pub head: u64,
    pub consumer_pid: u32,
    pub consumer_alive: bool,
    /// The cursors are impossible: `fill` means nothing.
    pub corrupt: bool,
    pub consumer_proc: Option<ProcRow>,
    /// Each side: records moved since it attached, per second since the
    /// previous sample, and seconds since it was last active.
    pub producer: SideRow,
    pub consumer: SideRow,
}

/// One side of a stream, from its line.
#[derive(Clone, Copy, Debug, Default)]
pub struct SideRow {
    pub records: u64,
    pub records_per_sec: Option<f64>,
    pub idle_s: Option<f64>,
}

/// One subscriber.
#[derive(Clone, Debug)]
pub struct SubRow {
    /// What its line says (numbers are 0 when `corrupt`).
    pub line: SubscriberStat,
    /// Its process has gone: its registry lock was released.
    pub gone: bool,
    /// `lag / capacity`: at 1 or more its next receive reports a lag.
    pub lag_fraction: f64,
    /// Messages per second it received since the previous sample.
    pub msgs_per_sec: Option<f64>,
    /// Seconds since it was last seen active.
    pub idle_s: Option<f64>,
    /// Why its line cannot be believed: the line's own check, or counts
    /// that went backwards since the previous sample.
    pub corrupt: Option<String>,
    /// Its process's CPU and context switches (live subscribers).
    pub proc: Option<ProcRow>,
    /// On a pool bus, the blocks its registry entry holds for a live
    /// subscriber; `None` on any other bus.
    pub held: Option<usize>,
    /// On a pool bus, the blocks a gone subscriber left in its hold line:
    /// reclaimable (the next sweep clears them), not in use.
    pub reclaimable: Option<usize>,
    /// Its process is a bridge-out of this bus (the bus's
    /// [`BusRow::bridges`] say where to).
    pub bridge: bool,
    /// Its process is a `shmbus record` of this bus (the bus's
    /// [`BusRow::bridges`] name its file).
    pub recorder: bool,
}

impl SubRow {
    /// It is about to be lapped: more than 3/4 of the ring behind, not
    /// yet more than the ring.
    pub fn near_lap(&self) -> bool {
        !self.gone && self.corrupt.is_none() && self.lag_fraction >= 0.75 && !self.lapped()
    }

    /// It is lapped already: more than the ring behind, so its next
    /// receive reports a lag.
    pub fn lapped(&self) -> bool {
        !self.gone && self.corrupt.is_none() && self.lag_fraction > 1.0
    }
}

pub use super::proc_row::ProcRow;

/// Cumulative figures of one process from /proc.
#[derive(Clone, Copy, Debug)]
struct ProcTotals {
    /// utime + stime, in clock ticks.
    cpu_ticks: u64,
    voluntary: u64,
    involuntary: u64,
    /// The process's start time (field 22 of stat): tells a reused pid.
    started: u64,
}

/// Samples the buses named (all of /dev/shm when none), keeping the
/// previous sample for rates.
pub struct Sampler {
    names: Vec<String>,
    dir: PathBuf,
    prev: Option<Snapshot>,
    prev_procs: HashMap<u32, ProcTotals>,
    /// Each blackboard's versions and hottest keys at the previous sample,
    /// by path (`blackboard::row` differences them).
    prev_boards: HashMap<PathBuf, BoardPrev>,
    /// How long a blackboard's written entries are watched for the
    /// hottest keys ([`blackboard::window`]).
    hot_window: std::time::Duration,
    ticks_per_sec: f64,
    /// Each journal's last count, and when it was taken: counting reads
    /// the whole file, so it is redone at most every [`JOURNAL_EVERY_NS`].
    journals: std::cell::RefCell<HashMap<PathBuf, JournalCount>>,
}

/// When a journal was counted (monotonic ns), and what was found.
type JournalCount = (u64, Result<JournalRow, String>);

/// How often a journal's records are counted again (each count reads the
/// file from its start).
const JOURNAL_EVERY_NS: u64 = 5_000_000_000;

impl Sampler {
    /// A sampler of the buses `names` (names or paths), or of every bus in
    /// `dir` if `names` is empty.
    pub fn new(names: Vec<String>, dir: PathBuf) -> Sampler {
        // SAFETY: sysconf has no preconditions; it only reads a constant.
        let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        Sampler {
            names,
            dir,
            prev: None,
            prev_procs: HashMap::new(),
            prev_boards: HashMap::new(),
            hot_window: blackboard::window(std::time::Duration::from_millis(500)),
            ticks_per_sec: if ticks > 0 { ticks as f64 } else { 100.0 },
            journals: Default::default(),
        }
    }

    /// Samples `interval` apart: a blackboard's written entries are
    /// watched for a tenth of it ([`blackboard::window`]).
    pub fn with_interval(mut self, interval: std::time::Duration) -> Sampler {
        self.hot_window = blackboard::window(interval);
        self
    }

    /// Reads every bus now. A listing of the directory that fails is one
    /// row saying so.
    pub fn sample(&mut self) -> Snapshot {
        let at_ns = shmbus::stat::monotonic_ns();
        let interval_s = self
            .prev
            .as_ref()
            .map(|p| at_ns.saturating_sub(p.at_ns) as f64 / 1e9)
            .filter(|&s| s > 0.0);
        let mut found: Vec<(String, PathBuf, Result<BusStat, String>)> = Vec::new();
        if self.names.is_empty() {
            match shmbus::stat::list(&self.dir) {
                Ok(listings) => {
                    for l in listings {
                        let name = file_name(&l.path);
                        found.push((name, l.path, l.state.map_err(|e| e.to_string())));
                    }
                }
                Err(e) => found.push((
                    self.dir.display().to_string(),
                    self.dir.clone(),
                    Err(e.to_string()),
                )),
            }
        } else {
            for name in &self.names {
                let state = shmbus::stat::stat(name);
                let path = state
                    .as_ref()
                    .map(|s| s.path.clone())
                    .unwrap_or_else(|_| PathBuf::from(name));
                found.push((file_name(&path), path, state.map_err(|e| e.to_string())));
            }
        }
        found.sort_by(|a, b| a.0.cmp(&b.0));
        let mut procs = HashMap::new();
        let mut boards = HashMap::new();
        let bridges = bridge_status::read_live();
        let buses = found
            .into_iter()
            .map(|(name, path, state)| {
                let state = state.map(|s| {
                    let on_bus = bridge_status::on_bus(&bridges, &s.path);
                    self.row(&name, s, &on_bus, interval_s, &mut procs, &mut boards)
                });
                BusView { name, path, state }
            })
            .collect();
        let snap = Snapshot {
            at_ns,
            interval_s,
            buses,
        };
        self.prev = Some(snap.clone());
        self.prev_procs = procs;
        self.prev_boards = boards;
        snap
    }

    /// The previous sample's row of bus `name`, if it was readable.
    fn prev_row(&self, name: &str) -> Option<&BusRow> {
        let prev = self.prev.as_ref()?;
        let view = prev.buses.iter().find(|b| b.name == name)?;
        view.state.as_ref().ok()
    }

    fn row(
        &self,
        name: &str,
        mut s: BusStat,
        bridges: &[&Status],
        dt: Option<f64>,
        procs: &mut HashMap<u32, ProcTotals>,
        boards: &mut HashMap<PathBuf, BoardPrev>,
    ) -> BusRow {
        // Its versions move into what the next sample keeps: not cloned.
        let blackboard = s.blackboard.take().map(|bb| {
            let path = s.path.clone();
            let mut live = blackboard::Live {
                name: path.to_string_lossy().into_owned(),
                window: self.hot_window,
                every: blackboard::WATCH_EVERY,
            };
            let prev = self.prev_boards.get(&path);
            let (row, next) = blackboard::row(bb, s.publisher_alive, prev, dt, &mut live);
            boards.insert(path, next);
            row
        });
        let s = &s;
        let prev = self.prev_row(name);
        let is_stream = s.stream.is_some();
        let msgs_per_sec = match (prev, dt) {
            (Some(p), Some(dt)) if p.epoch == s.epoch || is_stream => {
                let moved = s.published.wrapping_sub(p.published) as i64;
                (moved >= 0).then(|| moved as f64 / dt)
            }
            _ => None,
        };
        // A pool bus's slots carry 16-byte descriptors, and its messages
        // are any length up to a block: `msg.size` times the rate would
        // count descriptors, not messages. The lengths are in the
        // descriptors, but those overwritten between two samples are lost,
        // so no true byte rate can be had: none is given.
        // A service's messages are calls of any length up to its largest:
        // no byte rate either.
        let unit = match (&s.pool, is_stream) {
            (Some(_), _) => None,
            _ if s.service.is_some() => None,
            (None, true) => Some(1.0),
            (None, false) => Some(f64::from(s.msg.size)),
        };
        let capacity = crate::cmd::inspect::size_of(s).max(1);
        let now = shmbus::stat::monotonic_ns();
        let mut subscribers = Vec::new();
        for (line, gone) in s
            .subscribers
            .iter()
            .map(|l| (l, false))
            .chain(s.gone.iter().map(|l| (l, true)))
        {
            let before = prev.and_then(|p| {
                p.subscribers
                    .iter()
                    .find(|r| r.line.entry == line.entry && r.line.pid == line.pid && !r.gone)
            });
            let mut corrupt = line.corrupt.clone();
            let mut rate = None;
            if let (Some(b), None) = (before, &corrupt) {
                if b.corrupt.is_none() && line.delivered < b.line.delivered {
                    corrupt = Some(format!(
                        "delivered went back from {} to {}",
                        b.line.delivered, line.delivered
                    ));
                } else if b.corrupt.is_none() && line.skipped < b.line.skipped {
                    corrupt = Some(format!(
                        "skipped went back from {} to {}",
                        b.line.skipped, line.skipped
                    ));
                } else if let Some(dt) = dt {
                    rate = Some(line.delivered.saturating_sub(b.line.delivered) as f64 / dt);
                }
            }
            let idle_s = (line.active_ns != 0 && line.active_ns <= now)
                .then(|| (now - line.active_ns) as f64 / 1e9);
            subscribers.push(SubRow {
                lag_fraction: line.lag as f64 / capacity as f64,
                msgs_per_sec: if gone { None } else { rate },
                idle_s,
                corrupt,
                proc: (!gone)
                    .then(|| self.proc_row(line.pid, dt, procs))
                    .flatten(),
                gone,
                held: s.pool.as_ref().map(|p| holds(p, line.entry).0),
                reclaimable: s.pool.as_ref().map(|p| holds(p, line.entry).1),
                bridge: !gone
                    && bridges
                        .iter()
                        .any(|b| b.pid == line.pid && b.identity.direction == Direction::Out),
                recorder: !gone
                    && bridges
                        .iter()
                        .any(|b| b.pid == line.pid && b.identity.direction == Direction::Record),
                line: line.clone(),
            });
        }
        let prev_stream = prev.and_then(|p| p.stream.as_ref());
        let side = |records: u64, before: Option<u64>, active_ns: u64| SideRow {
            records,
            // A new owner starts its count over: no rate across it.
            records_per_sec: before
                .filter(|&b| b <= records)
                .zip(dt)
                .map(|(b, dt)| (records - b) as f64 / dt),
            idle_s: (active_ns != 0 && active_ns <= now).then(|| (now - active_ns) as f64 / 1e9),
        };
        let stream = s.stream.as_ref().map(|st| StreamRow {
            producer: side(
                st.producer_records,
                prev_stream.map(|p| p.producer.records),
                st.producer_active_ns,
            ),
            consumer: side(
                st.consumer_records,
                prev_stream.map(|p| p.consumer.records),
                st.consumer_active_ns,
            ),
            fill: st.fill,
            fill_fraction: st.fill as f64 / capacity as f64,
            tail: st.tail,
            head: st.head,
            consumer_pid: st.consumer_pid,
            consumer_alive: st.consumer_alive,
            corrupt: st.corrupt,
            consumer_proc: st
                .consumer_alive
                .then(|| self.proc_row(st.consumer_pid, dt, procs))
                .flatten(),
        });
        BusRow {
            kind: s.kind.to_string(),
            capacity: crate::cmd::inspect::size_of(s),
            unit: crate::cmd::inspect::size_unit(s),
            msg_size: s.msg.size,
            head: s.head,
            published: s.published,
            epoch: s.epoch,
            publisher_pid: s.publisher_pid,
            publisher_alive: s.publisher_alive,
            lossless: s.lossless,
            msgs_per_sec,
            bytes_per_sec: msgs_per_sec.zip(unit).map(|(r, unit)| r * unit),
            journal: s.journal.as_ref().map(|path| self.journal(path)),
            subscribers,
            stream,
            publisher_proc: s
                .publisher_alive
                .then(|| self.proc_row(s.publisher_pid, dt, procs))
                .flatten(),
            pool: s.pool.as_ref().map(|p| PoolRow {
                block_size: p.block_size,
                blocks: p.blocks,
                census: p.census,
            }),
            blackboard,
            service: s.service.as_ref().map(|svc| {
                let before = prev.and_then(|p| p.service.as_ref());
                service::row(svc, before, dt, |pid| self.proc_row(pid, dt, procs))
            }),
            bridges: bridges.iter().map(|&b| b.clone()).collect(),
        }
    }

    /// A journal's size and records, counted again only if the last count
    /// is older than [`JOURNAL_EVERY_NS`].
    fn journal(&self, path: &std::path::Path) -> Result<JournalRow, String> {
        let now = shmbus::stat::monotonic_ns();
        let mut cache = self.journals.borrow_mut();
        if let Some((at, row)) = cache.get(path)
            && now.saturating_sub(*at) < JOURNAL_EVERY_NS
        {
            return row.clone();
        }
        let row = shmbus::journal::stat(path)
            .map(|j| JournalRow {
                path: j.path,
                file_bytes: j.file_bytes,
                records: j.records,
            })
            .map_err(|e| e.to_string());
        cache.insert(path.to_owned(), (now, row.clone()));
        row
    }

    /// Process `pid`'s figures since the previous sample; records its
    /// totals in `procs` for the next one.
    fn proc_row(
        &self,
        pid: u32,
        dt: Option<f64>,
        procs: &mut HashMap<u32, ProcTotals>,
    ) -> Option<ProcRow> {
        if pid == 0 {
            return None;
        }
        let now = match procs.get(&pid) {
            Some(t) => *t,
            None => {
                let t = proc_totals(pid)?;
                procs.insert(pid, t);
                t
            }
        };
        let Some((before, dt)) = self.prev_procs.get(&pid).zip(dt) else {
            return Some(ProcRow::default());
        };
        if before.started != now.started {
            // Another process with the same pid.
            return Some(ProcRow::default());
        }
        let per_sec = |a: u64, b: u64| a.checked_sub(b).map(|d| d as f64 / dt);
        Some(ProcRow {
            cpu_percent: per_sec(now.cpu_ticks, before.cpu_ticks)
                .map(|t| t * 100.0 / self.ticks_per_sec),
            voluntary_per_sec: per_sec(now.voluntary, before.voluntary),
            involuntary_per_sec: per_sec(now.involuntary, before.involuntary),
        })
    }
}

/// A process's cumulative CPU ticks and context switches from /proc, or
/// `None` if it is gone or not ours to read.
fn proc_totals(pid: u32) -> Option<ProcTotals> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces or
    // parentheses: the fields that follow start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state): field n is fields[n - 3].
    let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
    let cpu_ticks = field(14)?.checked_add(field(15)?)?;
    let started = field(22)?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let count = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    Some(ProcTotals {
        cpu_ticks,
        voluntary: count("voluntary_ctxt_switches:")?,
        involuntary: count("nonvoluntary_ctxt_switches:")?,
        started,
    })
}

/// The file name of a path, as `ls` shows it.
fn file_name(path: &std::path::Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}
