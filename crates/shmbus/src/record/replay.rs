//! [`Replayer`]: a recording published back into buses of the recorded
//! kinds, at the recorded pace or as fast as it goes, within a window.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::error::{OpenRecordingError, ReadError};
use super::files::RecordingFiles;
use super::pace::PaceError;
use super::window::{Place, Point, Window};
use super::{BusRecord, BusSpec, Record, RecordedKind};
use crate::bus::Many;
use crate::bus::{ManyPublishError, ManyPublisher, Payload, PublishError, SkipError};
use crate::journal::{self, AppendError};
use crate::pool::{self, LoanError};
use crate::stream::{self, Producer, PushError};
use crate::wire::{Header, TypeFingerprint};
use crate::{
    AttachError, BusOptions, CreateError, OpenError, OpenOptions, Publisher, SegmentKind, Wait,
};

/// Below this much time to a message's due time the replay spins instead
/// of sleeping: a sleep overshoots by the timer slack (50 µs by default).
const SPIN_NS: u64 = 250_000;
/// The longest sleep (and the longest wait for room) between looks at the
/// stop check.
const NAP: Duration = Duration::from_millis(50);
/// Slots of a created bus whose recording does not say (version 1).
const DEFAULT_SLOTS: u64 = 4096;
/// The mode of a bus a replay makes, unless [`Replayer::mode`] says.
const DEFAULT_MODE: u32 = 0o600;

/// How fast a [`Replayer`] publishes.
///
/// # Examples
/// ```
/// use shmbus::record::Speed;
/// let half = Speed::Times(0.5);
/// assert_ne!(half, Speed::Max);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Speed {
    /// Each message at its recorded offset (from the pass's first
    /// message) divided by this: 1 as recorded, 2 twice as fast.
    Times(f64),
    /// No waiting.
    Max,
}

/// Why a replay failed. Each names the target bus (or the recorded one)
/// and what it found against what it expected.
///
/// # Examples
/// ```
/// use shmbus::record::{ReplayError, Replayer, Speed};
/// let mut replay = Replayer::new(Speed::Max);
/// let err = replay.run(std::path::Path::new("/nonexistent/r.rec")).unwrap_err();
/// assert!(matches!(err, ReplayError::Open { .. }));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// The recording could not be opened (missing, not a recording, a
    /// part out of order).
    #[error("{path}: {source}")]
    Open {
        /// The first part.
        path: PathBuf,
        /// Why.
        source: OpenRecordingError,
    },
    /// A record could not be read (damaged mid-file, an I/O error).
    #[error("{path}: {source}")]
    Read {
        /// The first part.
        path: PathBuf,
        /// Why.
        source: ReadError,
    },
    /// A recorded bus has no target: neither [`Replayer::to`] (for a
    /// one-bus recording) nor a [`Replayer::map`] entry names one.
    #[error("bus {id} ({recorded}) has no target (map {recorded} to a bus)")]
    NoTarget {
        /// The recorded bus's id in the file.
        id: u32,
        /// The recorded bus's name.
        recorded: String,
    },
    /// [`Replayer::to`] was given and the recording holds more than one
    /// bus.
    #[error("the recording holds more than one bus ({recorded} too): map each to its target")]
    SeveralBuses {
        /// The second recorded bus's name.
        recorded: String,
    },
    /// A [`Replayer::map`] entry names a bus the recording does not hold.
    #[error("the recording has no bus {recorded}")]
    NotRecorded {
        /// The name mapped.
        recorded: String,
    },
    /// Two recorded buses map to one target, or one is mapped twice.
    #[error("{target}: two recorded buses map to it (a bus is replayed by one publisher)")]
    SharedTarget {
        /// The target.
        target: String,
    },
    /// The target exists and is of another kind.
    #[error("{target} is {found}: the recording holds {}'s messages", describe(*.expected))]
    WrongKind {
        /// The target.
        target: String,
        /// What it is ("a pool bus", "a stream", ...).
        found: &'static str,
        /// The recorded kind.
        expected: RecordedKind,
    },
    /// The target exists and its messages are of another size (a plain,
    /// many-publisher or journaled bus), or smaller than the recording's
    /// largest (a pool's block, a stream's ring).
    #[error("{target}: carries {found}-byte {what}, the recording needs {expected}")]
    WrongSize {
        /// The target.
        target: String,
        /// "messages", "blocks" or "ring".
        what: &'static str,
        /// The target's size.
        found: u64,
        /// The recording's.
        expected: u64,
    },
    /// The target could not be looked at.
    #[error("{target}: {source}")]
    Stat {
        /// The target.
        target: String,
        /// Why.
        source: OpenError,
    },
    /// The target could not be created.
    #[error("{target}: {source}")]
    Create {
        /// The target.
        target: String,
        /// Why.
        source: CreateError,
    },
    /// The targets to make would take more than their file system has
    /// free (a recording's geometry is untrusted: it may ask for
    /// anything). Nothing is made.
    #[error(
        "{target}: a bus of the recorded geometry takes {}{} and {dir} has {} free \
         (give fewer slots, or make the bus first)",
        bytes(*.needs), with_others(*.needs, *.total), bytes(*.free)
    )]
    NoSpace {
        /// The target that would not fit.
        target: String,
        /// The directory it would be made in.
        dir: PathBuf,
        /// The bytes it takes.
        needs: u64,
        /// With the replay's other new targets on that file system.
        total: u64,
        /// What the file system has free (`statvfs`).
        free: u64,
    },
    /// The existing target could not be published into: another user's,
    /// or granting more than [`Replayer::mode`]
    /// ([`OpenError::NotOwn`] inside: a replay adopts only a bus it could
    /// have made), another publisher holds it, and what else attaching
    /// reports.
    #[error("{target}: {source}")]
    Attach {
        /// The target.
        target: String,
        /// Why.
        source: AttachError,
    },
    /// A journaled target could not be created.
    #[error("{target}: {source}")]
    JournalCreate {
        /// The target.
        target: String,
        /// Why.
        source: journal::CreateError,
    },
    /// An existing journaled target could not be published into.
    #[error("{target}: {source}")]
    JournalAttach {
        /// The target.
        target: String,
        /// Why.
        source: journal::AttachError,
    },
    /// A journaled bus is to be created and no journal directory was
    /// given ([`Replayer::journal_dir`]).
    #[error("{target}: a journaled bus needs a journal file: give a journal directory")]
    NoJournalDir {
        /// The target.
        target: String,
    },
    /// Publishing failed.
    #[error("{target}: {source}")]
    Publish {
        /// The target.
        target: String,
        /// Why.
        source: PublishFailure,
    },
}

/// Why one publish of a replay failed, by the target's kind.
///
/// # Examples
/// ```
/// use shmbus::record::PublishFailure;
/// let e = PublishFailure::Abandoned;
/// assert!(e.to_string().contains("abandoned"));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PublishFailure {
    /// A plain bus refused the message.
    #[error(transparent)]
    Bus(#[from] PublishError),
    /// A plain bus refused a gap.
    #[error(transparent)]
    Skip(#[from] SkipError),
    /// A many-publisher bus refused the message.
    #[error(transparent)]
    Many(#[from] ManyPublishError),
    /// A pool had no free block of the length within the wait.
    #[error(transparent)]
    Loan(#[from] LoanError),
    /// A many-publisher pool skipped the claim (the publisher stalled past
    /// the unblock timeout).
    #[error("the claim was abandoned: the publisher stalled past the unblock timeout")]
    Abandoned,
    /// A stream had no room within the wait, or refused the record.
    #[error(transparent)]
    Push(#[from] PushError),
    /// A journaled bus refused the append.
    #[error(transparent)]
    Append(#[from] AppendError),
}

/// What a [`Replayer`] has done over all its passes.
///
/// # Examples
/// ```
/// let stats = shmbus::record::ReplayStats::default();
/// assert_eq!((stats.messages, stats.gaps, stats.pace.count()), (0, 0, 0));
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ReplayStats {
    /// Passes run.
    pub passes: u64,
    /// Messages published.
    pub messages: u64,
    /// Their payload bytes.
    pub bytes: u64,
    /// Gaps replayed (as `Publisher::skip` on a plain bus).
    pub gaps: u64,
    /// The messages those gaps skipped.
    pub skipped: u64,
    /// Gaps not replayed, on kinds that have no skip (many-publisher,
    /// pool, journaled buses): their messages are simply absent.
    pub gaps_dropped: u64,
    /// The pace error of each paced message (none at [`Speed::Max`]).
    pub pace: PaceError,
}

/// A publisher of the recorded kind.
#[derive(Debug)]
enum Sink {
    Bus(Publisher<[u8]>),
    Many(ManyPublisher<[u8]>),
    Pool(pool::Publisher<[u8]>),
    Stream(Producer<[u8]>),
    Journaled(journal::Publisher<[u8]>),
}

#[derive(Debug)]
struct Target {
    name: String,
    recorded: String,
    sink: Sink,
}

/// Publishes a recording (all its parts, [`RecordingFiles`]) back into
/// buses: each recorded bus into a target of its kind, created with the
/// recorded geometry and message type (mode [`mode`](Self::mode)), or
/// attached to if it exists (its kind and size checked; only the caller's
/// own, granting nothing beyond that mode: a bus another user made first
/// is refused, never published into). The buses a recording declares
/// before its first message (every one, in a recording `shmbus record`
/// made) are checked together (the mapping, existing targets, the free
/// space of the new ones' file system) before any is made, so a replay
/// refused for one of them leaves no bus behind. A plain bus gets each
/// message with `Publisher::publish` and each gap as `Publisher::skip`
/// (its whole count, across the sequence wrap too), so a subscriber sees
/// the lag reports the recorder saw. A many-publisher, pool or journaled
/// bus has no skip (a many-publisher bus shares its sequence among
/// publishers, and a skipped claim would stall the others until their
/// unblock timeout; a journal keeps what was published): its gaps are
/// counted in [`ReplayStats::gaps_dropped`] and not replayed. A pool gets
/// each message in a loaned block of its recorded length; a stream each
/// record pushed (a stream has no gaps: its recorder is lossless).
///
/// Targets stay open across passes ([`run`](Self::run) again for a loop).
/// Everything in the file is untrusted: times that run backwards publish at
/// once, a wait for room (a full stream, a pool with no free block)
/// gives up after [`stall_timeout`](Self::stall_timeout), and the buses
/// it makes must fit in what their file system has free.
///
/// # Examples
/// ```
/// use shmbus::record::{BusSpec, FileRecorder, RecordedKind, Replayer, Rotation, Speed};
/// use shmbus::{OpenOptions, Received, Start, Subscriber, Wait};
///
/// let dir = std::env::temp_dir().join(format!("shmbus-doc-replay-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("r.rec");
/// let mut rec = FileRecorder::create(&path, Rotation::default())?;
/// let bus = rec.add_bus(&BusSpec::new("ticks", RecordedKind::Bus, 8).slots(64))?;
/// rec.message(bus, 0, 1_000, 0, &7u64.to_le_bytes())?;
/// rec.gap(bus, 1, 2)?;
/// rec.message(bus, 3, 2_000, 0, &8u64.to_le_bytes())?;
/// rec.flush()?;
///
/// let target = format!("shmbus-doc-replay-{}", std::process::id());
/// let mut replay = Replayer::new(Speed::Max).to(&target);
/// replay.run(&path)?;
/// assert_eq!((replay.stats().messages, replay.stats().skipped), (2, 2));
/// let mut sub = Subscriber::<[u8]>::open(&target, &OpenOptions::default().start(Start::Oldest))?;
/// assert!(matches!(sub.recv(Wait::Never), Some(Received::Message(m)) if m == 7u64.to_le_bytes()));
/// assert!(matches!(sub.recv(Wait::Never), Some(Received::Lagged { skipped: 2 })));
/// drop(replay);
/// shmbus::remove(&target)?;
/// std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Replayer {
    speed: Speed,
    window: Window,
    to: Option<String>,
    map: Vec<(String, String)>,
    slots: Option<u64>,
    journal_dir: Option<PathBuf>,
    mode: u32,
    stall: Duration,
    stop: Option<fn() -> bool>,
    targets: Vec<Target>,
    /// Names of the recorded buses met so far (or found ahead, for a map
    /// entry the recording's first buses do not name).
    seen: Vec<String>,
    /// This run has read the whole recording for its bus names.
    looked_ahead: bool,
    stats: ReplayStats,
}

impl Replayer {
    /// A replayer at `speed`, over the whole recording, with no target
    /// yet.
    ///
    /// # Examples
    /// ```
    /// let replay = shmbus::record::Replayer::new(shmbus::record::Speed::Times(1.0));
    /// assert_eq!(replay.stats().passes, 0);
    /// ```
    pub fn new(speed: Speed) -> Self {
        Self {
            speed,
            window: Window::default(),
            to: None,
            map: Vec::new(),
            slots: None,
            journal_dir: None,
            mode: DEFAULT_MODE,
            stall: Duration::from_secs(10),
            stop: None,
            targets: Vec::new(),
            seen: Vec::new(),
            looked_ahead: false,
            stats: ReplayStats::default(),
        }
    }

    /// Replays a one-bus recording into `target`.
    ///
    /// # Examples
    /// ```
    /// let replay = shmbus::record::Replayer::new(shmbus::record::Speed::Max).to("ticks-copy");
    /// ```
    pub fn to(mut self, target: &str) -> Self {
        self.to = Some(target.to_owned());
        self
    }

    /// Replays the recorded bus `recorded` into `target` (once per
    /// recorded bus; each target once).
    ///
    /// # Examples
    /// ```
    /// use shmbus::record::{Replayer, Speed};
    /// let replay = Replayer::new(Speed::Max).map("ticks", "ticks-copy").map("frames", "frames-copy");
    /// ```
    pub fn map(mut self, recorded: &str, target: &str) -> Self {
        self.map.push((recorded.to_owned(), target.to_owned()));
        self
    }

    /// Replays only the records inside `window`. A start is sought through
    /// the index where it can be: a time always, a sequence with
    /// [`to`](Self::to) (one bus).
    ///
    /// # Examples
    /// ```
    /// use shmbus::record::{Point, Replayer, Speed, Window};
    /// let w = Window { from: Some(Point::Offset(2_000_000_000)), until: None };
    /// let replay = Replayer::new(Speed::Max).window(w);
    /// ```
    pub fn window(mut self, window: Window) -> Self {
        self.window = window;
        self
    }

    /// The slots of each bus it creates (a stream: its ring's bytes),
    /// instead of the recorded ones.
    ///
    /// # Examples
    /// ```
    /// let replay = shmbus::record::Replayer::new(shmbus::record::Speed::Max).slots(1024);
    /// ```
    pub fn slots(mut self, slots: u64) -> Self {
        self.slots = Some(slots);
        self
    }

    /// Where a journaled bus it creates keeps its journal:
    /// `DIR/TARGET.journal` (a leading `/` of the target's name dropped,
    /// each other `/` as `_`).
    ///
    /// # Examples
    /// ```
    /// let replay = shmbus::record::Replayer::new(shmbus::record::Speed::Max)
    ///     .journal_dir(std::env::temp_dir());
    /// ```
    pub fn journal_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.journal_dir = Some(dir.into());
        self
    }

    /// The permission bits of each bus it makes (0o600, owner only, by
    /// default; 0o660 lets the group in), and the most an existing target
    /// may grant: one granting more, or another user's, is refused
    /// ([`ReplayError::Attach`] with [`OpenError::NotOwn`]), as it could
    /// have been made, and be read, by someone else.
    ///
    /// # Examples
    /// ```
    /// let replay = shmbus::record::Replayer::new(shmbus::record::Speed::Max).mode(0o660);
    /// ```
    pub fn mode(mut self, mode: u32) -> Self {
        self.mode = mode & 0o777;
        self
    }

    /// How long a publish waits for room (a full stream, a pool with no
    /// free block) before it fails; 10 s by default. A stream's
    /// [`PushError::TimedOut`] then says the whole time waited.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// let replay = shmbus::record::Replayer::new(shmbus::record::Speed::Max)
    ///     .stall_timeout(Duration::from_secs(1));
    /// ```
    pub fn stall_timeout(mut self, timeout: Duration) -> Self {
        self.stall = timeout;
        self
    }

    /// A check made between messages and during each wait (at least every
    /// 50 ms): when it returns true the pass ends where it is.
    ///
    /// # Examples
    /// ```
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// static STOP: AtomicBool = AtomicBool::new(false);
    /// let replay = shmbus::record::Replayer::new(shmbus::record::Speed::Max)
    ///     .stop_when(|| STOP.load(Ordering::Relaxed));
    /// ```
    pub fn stop_when(mut self, stop: fn() -> bool) -> Self {
        self.stop = Some(stop);
        self
    }

    /// What it has done so far.
    ///
    /// # Examples
    /// ```
    /// let replay = shmbus::record::Replayer::new(shmbus::record::Speed::Max);
    /// assert_eq!(replay.stats().messages, 0);
    /// ```
    pub fn stats(&self) -> &ReplayStats {
        &self.stats
    }

    fn stopped(&self) -> bool {
        self.stop.is_some_and(|f| f())
    }

    /// One pass over the recording at `path` (its first part; the rest
    /// follow): publishes each message and gap inside the window, paced
    /// from the pass's first message. Returns how many messages and gaps
    /// it published (0: nothing to replay, a loop should stop). At the end
    /// of a pass every [`map`](Self::map) entry must have met its bus.
    ///
    /// # Examples
    /// ```
    /// use shmbus::record::{BusSpec, FileRecorder, RecordedKind, Replayer, Rotation, Speed};
    ///
    /// let dir = std::env::temp_dir().join(format!("shmbus-doc-replay-run-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("s.rec");
    /// let mut rec = FileRecorder::create(&path, Rotation::default())?;
    /// let bus = rec.add_bus(&BusSpec::new("s", RecordedKind::Stream, 4096).slots(4096))?;
    /// rec.message(bus, 0, 1_000, 0, b"a record")?;
    /// rec.flush()?;
    /// let target = format!("shmbus-doc-replay-run-{}", std::process::id());
    /// let mut replay = Replayer::new(Speed::Times(1.0)).map("s", &target);
    /// assert_eq!(replay.run(&path)?, 1); // into a stream it made
    /// assert_eq!(replay.stats().pace.count(), 1);
    /// drop(replay);
    /// shmbus::remove(&target)?;
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`ReplayError::Open`] and [`ReplayError::Read`] for the file;
    /// [`ReplayError::NoTarget`], [`ReplayError::SeveralBuses`],
    /// [`ReplayError::NotRecorded`], [`ReplayError::SharedTarget`] for the
    /// mapping; [`ReplayError::WrongKind`], [`ReplayError::WrongSize`],
    /// [`ReplayError::Stat`], [`ReplayError::Create`],
    /// [`ReplayError::NoSpace`], [`ReplayError::Attach`] (another user's
    /// bus among them), [`ReplayError::JournalCreate`],
    /// [`ReplayError::JournalAttach`], [`ReplayError::NoJournalDir`] for a
    /// target; [`ReplayError::Publish`] when a publish fails.
    pub fn run(&mut self, path: &Path) -> Result<u64, ReplayError> {
        self.check_map()?;
        let open = |source| ReplayError::Open {
            path: path.to_owned(),
            source,
        };
        let read = |source| ReplayError::Read {
            path: path.to_owned(),
            source,
        };
        // The recording's first message time: time windows count from it,
        // wherever the pass starts.
        let first_ns = match (self.window.from, self.window.until) {
            (Some(Point::Offset(_)), _) | (_, Some(Point::Offset(_))) => first_message_ns(path)
                .map_err(|e| match e {
                    Ok(e) => open(e),
                    Err(e) => read(e),
                })?,
            _ => None,
        };
        let mut files = RecordingFiles::open(path).map_err(open)?;
        match self.window.from {
            Some(Point::Offset(t)) => {
                if let Some(f) = first_ns {
                    files.seek_time(f.saturating_add(t)).map_err(read)?;
                }
            }
            Some(Point::Seq(n)) if self.to.is_some() => files.seek_seq(0, n).map_err(read)?,
            _ => {}
        }
        self.looked_ahead = false;
        let mut source = Native {
            files,
            path: path.to_owned(),
        };
        self.pass(Some(path), &mut source, first_ns)
    }

    /// One pass over records from another source than a native file (an
    /// MCAP file, read by the `shmbus-mcap` crate): `buses` are declared
    /// first, bus `i` with id `i`, then each of `records` is replayed as
    /// [`run`](Self::run) replays a file's, with its pace, window, targets
    /// and stats (a time window counts from the first message; nothing is
    /// sought, records before the window are read past). More bus records
    /// among `records` are declared where they come. A source that fails
    /// ends its iterator and reports its own error after this returns.
    ///
    /// # Examples
    /// ```
    /// use shmbus::record::{BusSpec, GapRecord, MessageRecord, Record, RecordedKind, Replayer, Speed};
    /// use shmbus::{OpenOptions, Received, Start, Subscriber, Wait};
    ///
    /// let target = format!("shmbus-doc-replay-records-{}", std::process::id());
    /// let buses = [BusSpec::new("ticks", RecordedKind::Bus, 8).slots(64)];
    /// let records = vec![
    ///     Record::Message(MessageRecord { bus: 0, seq: 0, mono_ns: 1_000, wall_ns: 0, payload: 7u64.to_le_bytes().to_vec() }),
    ///     Record::Gap(GapRecord { bus: 0, first: 1, count: 2 }),
    /// ];
    /// let mut replay = Replayer::new(Speed::Max).to(&target);
    /// assert_eq!(replay.run_records(&buses, records)?, 2);
    /// let mut sub = Subscriber::<[u8]>::open(&target, &OpenOptions::default().start(Start::Oldest))?;
    /// assert!(matches!(sub.recv(Wait::Never), Some(Received::Message(m)) if m == 7u64.to_le_bytes()));
    /// assert!(matches!(sub.recv(Wait::Never), Some(Received::Lagged { skipped: 2 })));
    /// drop(replay);
    /// shmbus::remove(&target)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`run`](Self::run), less the file's own ([`ReplayError::Open`],
    /// [`ReplayError::Read`]).
    pub fn run_records<I>(&mut self, buses: &[BusSpec], records: I) -> Result<u64, ReplayError>
    where
        I: IntoIterator<Item = Record>,
    {
        self.check_map()?;
        for bus in buses {
            if !self.seen.contains(&bus.name) {
                self.seen.push(bus.name.clone());
            }
        }
        // Every bus is known: nothing to look ahead for.
        self.looked_ahead = true;
        let mut rest = records.into_iter();
        let mut head: Vec<Record> = Vec::new();
        let mut first_ns = None;
        if matches!(
            (self.window.from, self.window.until),
            (Some(Point::Offset(_)), _) | (_, Some(Point::Offset(_)))
        ) {
            // Time windows count from the first message.
            for record in rest.by_ref() {
                let first = match &record {
                    Record::Message(m) => Some(m.mono_ns),
                    _ => None,
                };
                head.push(record);
                if first.is_some() {
                    first_ns = first;
                    break;
                }
            }
        }
        let declared = buses.iter().enumerate().map(|(id, spec)| {
            Record::Bus(BusRecord::from_spec(
                u32::try_from(id).unwrap_or(u32::MAX),
                spec,
            ))
        });
        let mut source = Given(declared.chain(head).chain(rest));
        self.pass(None, &mut source, first_ns)
    }

    /// Two map entries for one recorded bus or one target.
    fn check_map(&self) -> Result<(), ReplayError> {
        for (i, (rec, to)) in self.map.iter().enumerate() {
            if let Some((_, to2)) = self.map[..i].iter().find(|(r, t)| r == rec || t == to) {
                return Err(ReplayError::SharedTarget {
                    target: to2.clone(),
                });
            }
        }
        Ok(())
    }

    /// One pass over `files` (from the file at `path`, if any): generic,
    /// so the loop calls its source's `next_record` directly, once a
    /// record.
    fn pass<R: Records>(
        &mut self,
        path: Option<&Path>,
        files: &mut R,
        first_ns: Option<u64>,
    ) -> Result<u64, ReplayError> {
        // Recorded bus id to target, as this recording declares them.
        let mut by_id: Vec<Option<usize>> = Vec::new();
        // Bus records whose targets are not open yet: all those before the
        // next message or gap are checked together before any is made.
        let mut declared: Vec<BusRecord> = Vec::new();
        let mut origin: Option<(u64, Instant)> = None;
        let mut begun = false;
        let mut replayed = 0u64;
        while let Some(record) = files.next_record() {
            if self.stopped() {
                break;
            }
            let record = record?;
            if let Record::Bus(bus) = record {
                declared.push(bus);
                continue;
            }
            if !declared.is_empty() {
                self.declare(path, std::mem::take(&mut declared), &mut by_id)?;
            }
            match record {
                Record::Bus(_) => {}
                Record::Message(m) => {
                    // The reader yields a bus's record before its messages.
                    let Some(&Some(t)) = by_id.get(m.bus as usize) else {
                        continue;
                    };
                    let offset = first_ns.map_or(0, |f| m.mono_ns.saturating_sub(f));
                    match self.window.message(m.seq, offset) {
                        Place::Before => continue,
                        // Later records of a one-bus recording are later
                        // still; with several buses another may not be.
                        Place::After if by_id.len() == 1 => break,
                        Place::After => continue,
                        Place::Inside => {}
                    }
                    begun = true;
                    if let Speed::Times(x) = self.speed {
                        let (t0, s0) = *origin.get_or_insert((m.mono_ns, Instant::now()));
                        let late = m.mono_ns.saturating_sub(t0) as f64 / x;
                        let due = s0 + Duration::from_nanos(late.min(u64::MAX as f64) as u64);
                        if !self.wait_until(due) {
                            break;
                        }
                        let now = Instant::now();
                        let off =
                            now.saturating_duration_since(due) + due.saturating_duration_since(now);
                        self.stats
                            .pace
                            .add(u64::try_from(off.as_nanos()).unwrap_or(u64::MAX));
                    }
                    if !self.publish(t, &m.payload)? {
                        break;
                    }
                    self.stats.messages += 1;
                    self.stats.bytes += m.payload.len() as u64;
                    replayed += 1;
                    files.recycle(m.payload);
                }
                Record::Gap(g) => {
                    let Some(&Some(t)) = by_id.get(g.bus as usize) else {
                        continue;
                    };
                    let n = self.window.gap(g.first, g.count, begun);
                    if n == 0 {
                        continue;
                    }
                    let target = &mut self.targets[t];
                    if let Sink::Bus(p) = &mut target.sink {
                        p.skip(n).map_err(|e| ReplayError::Publish {
                            target: target.name.clone(),
                            source: e.into(),
                        })?;
                        self.stats.gaps += 1;
                        self.stats.skipped += n;
                        replayed += 1;
                    } else {
                        self.stats.gaps_dropped += 1;
                    }
                }
            }
        }
        // A recording of bus records alone still gets its targets.
        if !declared.is_empty() && !self.stopped() {
            self.declare(path, declared, &mut by_id)?;
        }
        self.stats.passes += 1;
        if let Some((rec, _)) = self.map.iter().find(|(rec, _)| !self.seen.contains(rec)) {
            return Err(ReplayError::NotRecorded {
                recorded: rec.clone(),
            });
        }
        Ok(replayed)
    }

    /// Bus records met together (a recording's first ones: every bus
    /// declared before its first message) given their targets, once for
    /// all passes. Everything that can refuse the replay is looked at
    /// first without changing anything: the mapping, each existing target's
    /// kind and size, the new ones' free space. Then each target is
    /// attached to or made, and if one still fails (taken meanwhile,
    /// another user's) the ones made here are removed again.
    fn declare(
        &mut self,
        path: Option<&Path>,
        buses: Vec<BusRecord>,
        by_id: &mut Vec<Option<usize>>,
    ) -> Result<(), ReplayError> {
        let before = by_id.iter().flatten().count();
        let mut named: Vec<(String, BusRecord)> = Vec::with_capacity(buses.len());
        for bus in buses {
            let name = self.target_name(&bus, before + named.len())?;
            if named.iter().any(|(n, _)| *n == name) {
                return Err(ReplayError::SharedTarget { target: name });
            }
            named.push((name, bus));
        }
        for (_, bus) in &named {
            if !self.seen.contains(&bus.name) {
                self.seen.push(bus.name.clone());
            }
        }
        self.look_ahead(path)?;
        if self.stopped() {
            return Ok(());
        }

        let mut plan: Vec<Found> = Vec::with_capacity(named.len());
        for (name, bus) in &named {
            if let Some(i) = self.targets.iter().position(|t| t.name == *name) {
                if self.targets[i].recorded != bus.name || by_id.contains(&Some(i)) {
                    return Err(ReplayError::SharedTarget {
                        target: name.clone(),
                    });
                }
                plan.push(Found::Open(i));
                continue;
            }
            crate::sys::resolve(name).map_err(|e| ReplayError::Create {
                target: name.clone(),
                source: e.into(),
            })?;
            plan.push(match crate::stat::stat(name) {
                Ok(stat) => {
                    check_existing(name, bus, stat.kind, stat.raw_header())?;
                    Found::Exists
                }
                Err(OpenError::NotFound { .. }) => Found::Missing(self.options(name, bus)?),
                Err(source) => {
                    return Err(ReplayError::Stat {
                        target: name.clone(),
                        source,
                    });
                }
            });
        }
        check_space(
            named
                .iter()
                .zip(&plan)
                .filter_map(|((name, _), found)| match found {
                    Found::Missing(made) => Some((name.as_str(), made)),
                    _ => None,
                }),
        )?;

        let mut new: Vec<Target> = Vec::new();
        let mut made: Vec<String> = Vec::new();
        let mut ids: Vec<(u32, usize)> = Vec::with_capacity(named.len());
        for ((name, bus), found) in named.into_iter().zip(plan) {
            let sink = match found {
                Found::Open(t) => {
                    ids.push((bus.id, t));
                    continue;
                }
                Found::Exists => attach_target(&name, &bus, self.mode),
                Found::Missing(options) => match options.create(&name) {
                    Ok(sink) => {
                        made.push(name.clone());
                        Ok(sink)
                    }
                    // Made by someone else since it was looked at.
                    Err(
                        ReplayError::Create {
                            source: CreateError::AlreadyExists { .. },
                            ..
                        }
                        | ReplayError::JournalCreate {
                            source: journal::CreateError::Create(CreateError::AlreadyExists { .. }),
                            ..
                        },
                    ) => attach_target(&name, &bus, self.mode),
                    Err(e) => Err(e),
                },
            };
            match sink {
                Ok(sink) => {
                    ids.push((bus.id, self.targets.len() + new.len()));
                    new.push(Target {
                        name,
                        recorded: bus.name,
                        sink,
                    });
                }
                Err(e) => {
                    drop(new);
                    for name in &made {
                        // Made by this call a moment ago; a journal it
                        // began stays (it may be one it continued).
                        let _ = crate::remove(name);
                    }
                    return Err(e);
                }
            }
        }
        self.targets.extend(new);
        for (id, t) in ids {
            let id = id as usize;
            if by_id.len() <= id {
                by_id.resize(id + 1, None);
            }
            by_id[id] = Some(t);
        }
        Ok(())
    }

    /// The target of recorded bus `bus`, the `declared`th this pass.
    fn target_name(&self, bus: &BusRecord, declared: usize) -> Result<String, ReplayError> {
        match &self.to {
            Some(_) if declared > 0 => Err(ReplayError::SeveralBuses {
                recorded: bus.name.clone(),
            }),
            Some(to) => Ok(to.clone()),
            None => match self.map.iter().find(|(rec, _)| *rec == bus.name) {
                Some((_, to)) => Ok(to.clone()),
                None => Err(ReplayError::NoTarget {
                    id: bus.id,
                    recorded: bus.name.clone(),
                }),
            },
        }
    }

    /// Makes sure, before anything is made, that every map entry names a
    /// recorded bus: an entry the buses met so far do not name is looked
    /// for in the rest of the recording (read through once a run, and only
    /// then: a recording declares its buses first).
    fn look_ahead(&mut self, path: Option<&Path>) -> Result<(), ReplayError> {
        let Some(path) = path else {
            return Ok(());
        };
        if self.looked_ahead || self.map.iter().all(|(rec, _)| self.seen.contains(rec)) {
            return Ok(());
        }
        self.looked_ahead = true;
        let files = RecordingFiles::open(path).map_err(|source| ReplayError::Open {
            path: path.to_owned(),
            source,
        })?;
        for record in files {
            if self.stopped() {
                return Ok(());
            }
            let record = record.map_err(|source| ReplayError::Read {
                path: path.to_owned(),
                source,
            })?;
            if let Record::Bus(bus) = record {
                if !self.seen.contains(&bus.name) {
                    self.seen.push(bus.name);
                }
            }
        }
        match self.map.iter().find(|(rec, _)| !self.seen.contains(rec)) {
            Some((rec, _)) => Err(ReplayError::NotRecorded {
                recorded: rec.clone(),
            }),
            None => Ok(()),
        }
    }

    /// How a missing target of recorded bus `bus` is to be made: the
    /// recorded geometry and message type, this replay's slots and mode.
    fn options(&self, name: &str, bus: &BusRecord) -> Result<Made, ReplayError> {
        let slots = self.slots.unwrap_or(if bus.slots == 0 {
            DEFAULT_SLOTS
        } else {
            bus.slots
        });
        // The recorded type, where it is a named one (a raw bus records
        // `bytes`, a raw stream `stream`: those are the default).
        let named = bus
            .msg_type
            .as_ref()
            .filter(|t| t.name != "bytes" && t.name != "stream" && !t.name.is_empty());
        let mut opts = BusOptions::new(slots)
            .msg_size(bus.msg_size)
            .mode(self.mode);
        if let Some(t) = named {
            opts = opts.message_type(&t.name, t.align);
        }
        Ok(match bus.kind {
            RecordedKind::Bus => Made::Bus(opts),
            RecordedKind::ManyPublisher => Made::Many(opts.many()),
            RecordedKind::Pool => {
                let blocks = if bus.blocks == 0 {
                    slots.saturating_mul(2).saturating_add(1)
                } else {
                    bus.blocks
                };
                let mut p =
                    pool::Options::new(slots, u64::from(bus.msg_size), blocks).mode(self.mode);
                if let Some(t) = named {
                    p = p.message_type(&t.name, t.size, t.align);
                }
                Made::Pool(p)
            }
            RecordedKind::Stream => {
                let bytes = self.slots.unwrap_or(if bus.slots == 0 {
                    u64::from(bus.msg_size).next_power_of_two().max(4096)
                } else {
                    bus.slots
                });
                let mut s = stream::Options::new(bytes).mode(self.mode);
                if let Some(t) = named {
                    s = s.message_type(&t.name, t.align);
                }
                Made::Stream(s)
            }
            RecordedKind::Journaled => {
                let Some(dir) = &self.journal_dir else {
                    return Err(ReplayError::NoJournalDir {
                        target: name.to_owned(),
                    });
                };
                let file = dir.join(format!(
                    "{}.journal",
                    name.trim_start_matches('/').replace('/', "_")
                ));
                Made::Journaled(opts, journal::Options::new(file))
            }
        })
    }

    /// Waits until `due`: sleeps while it is far, spins the last
    /// [`SPIN_NS`]. `false` if the stop check said stop first.
    fn wait_until(&self, due: Instant) -> bool {
        loop {
            if self.stopped() {
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

    /// Publishes `payload` into target `t`; `false` if the stop check
    /// said stop while it waited for room.
    fn publish(&mut self, t: usize, payload: &[u8]) -> Result<bool, ReplayError> {
        let (stall, stop) = (self.stall, self.stop);
        let stopped = || stop.is_some_and(|f| f());
        // The clock is read only by a publish that must wait: one that
        // goes straight through reads none.
        let started = std::cell::OnceCell::new();
        let elapsed = || started.get_or_init(Instant::now).elapsed();
        // Waits for room in slices of NAP, looking at the stop check
        // between them, until the stall timeout.
        let more = || !stopped() && elapsed() < stall;
        let slice = || Wait::For(NAP.min(stall.saturating_sub(elapsed())));
        let target = &mut self.targets[t];
        let result: Result<(), PublishFailure> = match &mut target.sink {
            Sink::Bus(p) => p.publish(payload).map(drop).map_err(Into::into),
            Sink::Many(p) => p.publish(payload).map(drop).map_err(Into::into),
            Sink::Pool(p) => {
                // A first try without waiting; slices of NAP after it.
                let mut wait = Wait::Never;
                loop {
                    match p.loan(payload.len(), wait) {
                        Ok(mut loan) => {
                            loan.copy_from_slice(payload);
                            break loan
                                .publish()
                                .map(drop)
                                .map_err(|_| PublishFailure::Abandoned);
                        }
                        Err(LoanError::Exhausted { .. }) if more() => wait = slice(),
                        Err(e) => break Err(e.into()),
                    }
                }
            }
            Sink::Stream(p) => {
                let mut wait = Wait::Never;
                loop {
                    match p.push(payload, wait) {
                        Err(PushError::TimedOut(_) | PushError::Full) if more() => {
                            wait = slice();
                        }
                        // The last slice's time is not what was waited.
                        Err(PushError::TimedOut(_) | PushError::Full) => {
                            break Err(PushError::TimedOut(elapsed()).into());
                        }
                        r => break r.map_err(Into::into),
                    }
                }
            }
            Sink::Journaled(p) => p.publish(payload).map(drop).map_err(Into::into),
        };
        match result {
            Ok(()) => Ok(true),
            Err(_) if stopped() => Ok(false),
            Err(source) => Err(ReplayError::Publish {
                target: target.name.clone(),
                source,
            }),
        }
    }
}

/// What an existing bus is, as a recorded kind, or its description.
fn kind_of(kind: SegmentKind) -> Result<RecordedKind, &'static str> {
    RecordedKind::of(kind).ok_or(match kind {
        SegmentKind::Blackboard | SegmentKind::ManyWriterBlackboard => "a blackboard",
        _ => "of a kind this build does not know",
    })
}

fn describe(kind: RecordedKind) -> &'static str {
    match kind {
        RecordedKind::Bus => "a plain bus",
        RecordedKind::ManyPublisher => "a many-publisher bus",
        RecordedKind::Pool => "a pool bus",
        RecordedKind::Stream => "a stream",
        RecordedKind::Journaled => "a journaled bus",
    }
}

/// Checks the existing bus `name` (its header `h`) against recorded bus
/// `bus`: the recorded kind, and room for its messages.
fn check_existing(
    name: &str,
    bus: &BusRecord,
    kind: SegmentKind,
    h: &Header,
) -> Result<(), ReplayError> {
    let found = kind_of(kind).map_err(|found| ReplayError::WrongKind {
        target: name.to_owned(),
        found,
        expected: bus.kind,
    })?;
    if found != bus.kind {
        return Err(ReplayError::WrongKind {
            target: name.to_owned(),
            found: describe(found),
            expected: bus.kind,
        });
    }
    let want = u64::from(bus.msg_size);
    let (what, size, fits) = match found {
        RecordedKind::Pool => {
            let block = h.pool.as_ref().map_or(0, |p| p.block_size);
            ("blocks", block, block >= want)
        }
        RecordedKind::Stream => ("ring", h.capacity, h.capacity >= want),
        _ => (
            "messages",
            u64::from(h.msg.size),
            u64::from(h.msg.size) == want,
        ),
    };
    if !fits {
        return Err(ReplayError::WrongSize {
            target: name.to_owned(),
            what,
            found: size,
            expected: want,
        });
    }
    Ok(())
}

/// The existing bus `name`, checked against the record and attached to:
/// only if it is this user's own and grants nothing beyond `max_mode`
/// (what the replay would have made; anyone else's could be read, or
/// have been made, by someone else).
fn attach_target(name: &str, bus: &BusRecord, max_mode: u32) -> Result<Sink, ReplayError> {
    let stat = crate::stat::stat(name).map_err(|source| ReplayError::Stat {
        target: name.to_owned(),
        source,
    })?;
    let h = stat.raw_header();
    check_existing(name, bus, stat.kind, h)?;
    let attach = |source| ReplayError::Attach {
        target: name.to_owned(),
        source,
    };
    let opts = OpenOptions::default().only_own(max_mode);
    Ok(match bus.kind {
        RecordedKind::Bus => Sink::Bus(Publisher::<[u8]>::attach(name, &opts).map_err(attach)?),
        RecordedKind::ManyPublisher => {
            Sink::Many(ManyPublisher::<[u8]>::attach(name, &opts).map_err(attach)?)
        }
        RecordedKind::Pool if stat.kind == SegmentKind::ManyPublisherPool => {
            Sink::Pool(pool::Publisher::<[u8]>::attach_many(name, &opts).map_err(attach)?)
        }
        RecordedKind::Pool => {
            Sink::Pool(pool::Publisher::<[u8]>::attach(name, &opts).map_err(attach)?)
        }
        RecordedKind::Stream => {
            Sink::Stream(Producer::<[u8]>::attach(name, &opts).map_err(attach)?)
        }
        RecordedKind::Journaled => Sink::Journaled(
            journal::Publisher::<[u8]>::attach(name, &opts).map_err(|source| {
                ReplayError::JournalAttach {
                    target: name.to_owned(),
                    source,
                }
            })?,
        ),
    })
}

/// The records of one pass, and where a payload done with goes.
trait Records {
    fn next_record(&mut self) -> Option<Result<Record, ReplayError>>;
    fn recycle(&mut self, _payload: Vec<u8>) {}
}

/// A native recording's records.
struct Native {
    files: RecordingFiles,
    path: PathBuf,
}

impl Records for Native {
    fn next_record(&mut self) -> Option<Result<Record, ReplayError>> {
        let path = &self.path;
        self.files.next().map(|r| {
            r.map_err(|source| ReplayError::Read {
                path: path.clone(),
                source,
            })
        })
    }

    fn recycle(&mut self, payload: Vec<u8>) {
        self.files.recycle(payload);
    }
}

/// Records from elsewhere ([`Replayer::run_records`]).
struct Given<I>(I);

impl<I: Iterator<Item = Record>> Records for Given<I> {
    fn next_record(&mut self) -> Option<Result<Record, ReplayError>> {
        self.0.next().map(Ok)
    }
}

/// Where a declared bus's target is.
enum Found {
    /// Open since an earlier pass: this index of the targets.
    Open(usize),
    /// An existing bus, checked, to attach to.
    Exists,
    /// None: to make with these options.
    Missing(Made),
}

/// How a missing target is made, by kind.
enum Made {
    Bus(BusOptions),
    Many(BusOptions<Many>),
    Pool(pool::Options),
    Stream(stream::Options),
    Journaled(BusOptions, journal::Options),
}

impl Made {
    fn create(self, name: &str) -> Result<Sink, ReplayError> {
        let create = |source| ReplayError::Create {
            target: name.to_owned(),
            source,
        };
        Ok(match self {
            Made::Bus(o) => Sink::Bus(Publisher::<[u8]>::create(name, &o).map_err(create)?),
            Made::Many(o) => Sink::Many(ManyPublisher::<[u8]>::create(name, &o).map_err(create)?),
            Made::Pool(o) => Sink::Pool(pool::Publisher::<[u8]>::create(name, &o).map_err(create)?),
            Made::Stream(o) => Sink::Stream(Producer::<[u8]>::create(name, &o).map_err(create)?),
            Made::Journaled(o, j) => {
                Sink::Journaled(journal::Publisher::<[u8]>::create(name, &o, &j).map_err(
                    |source| ReplayError::JournalCreate {
                        target: name.to_owned(),
                        source,
                    },
                )?)
            }
        })
    }

    /// The bytes its segment takes, laid out as its kind's create lays it
    /// out (pages of `page` bytes), or `None` for a geometry the create
    /// will refuse itself. A journal's file grows where it lives, as it is
    /// appended to.
    fn len(&self, page: u64) -> Option<u64> {
        fn broadcast<P: crate::bus::PublisherCount>(o: &BusOptions<P>, page: u64) -> Option<u64> {
            let msg = <[u8] as Payload>::fingerprint(o.msg_size, o.message.as_ref()).ok()?;
            Some(Header::broadcast(o.capacity, msg, page, 0).ok()?.total_len)
        }
        match self {
            Made::Bus(o) | Made::Journaled(o, _) => broadcast(o, page),
            Made::Many(o) => broadcast(o, page),
            Made::Pool(o) => {
                let (block_size, blocks) = o.pool();
                let bus = o.bus();
                let block = TypeFingerprint::bytes(u32::try_from(block_size).ok()?);
                let ring = Header::broadcast(bus.capacity, crate::wire::descriptor(), page, 0);
                Some(
                    ring.ok()?
                        .with_pool(blocks, block_size, block)
                        .ok()?
                        .0
                        .total_len,
                )
            }
            Made::Stream(o) => Some(Header::stream(o.bytes, page).ok()?.total_len),
        }
    }
}

/// Refuses the new targets `made` if together they would take more than
/// their file system has free, before any is made: a crafted recording
/// can ask for any geometry. One the look cannot judge (its directory
/// missing, a geometry its create refuses) is left to its create.
fn check_space<'a>(made: impl Iterator<Item = (&'a str, &'a Made)>) -> Result<(), ReplayError> {
    let page = rustix::param::page_size() as u64;
    let mut looked = Vec::new();
    for (name, made) in made {
        let (Some(needs), Ok(path)) = (made.len(page), crate::sys::resolve(name)) else {
            continue;
        };
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
            _ => PathBuf::from("."),
        };
        let Ok(fs) = rustix::fs::statvfs(&dir) else {
            continue;
        };
        let free = fs.f_bavail.saturating_mul(fs.f_frsize);
        looked.push(Space {
            target: name,
            dir,
            needs,
            fs: fs.f_fsid,
            free,
        });
    }
    over_free(looked)
}

/// A new target's bytes beside its file system's free space.
struct Space<'a> {
    target: &'a str,
    dir: PathBuf,
    needs: u64,
    /// The file system (`f_fsid`).
    fs: u64,
    free: u64,
}

/// The first target that, with those before it on its file system, takes
/// more than that file system has free.
fn over_free(targets: Vec<Space<'_>>) -> Result<(), ReplayError> {
    let mut taken: Vec<(u64, u64)> = Vec::new();
    for t in targets {
        let total = match taken.iter_mut().find(|(fs, _)| *fs == t.fs) {
            Some((_, sum)) => {
                *sum = sum.saturating_add(t.needs);
                *sum
            }
            None => {
                taken.push((t.fs, t.needs));
                t.needs
            }
        };
        if total > t.free {
            return Err(ReplayError::NoSpace {
                target: t.target.to_owned(),
                dir: t.dir,
                needs: t.needs,
                total,
                free: t.free,
            });
        }
    }
    Ok(())
}

/// `n` bytes for a reader: `4.0 GiB`, `512 KiB`, `100 bytes`.
fn bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} bytes")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// What the other new targets add to `needs`, where it shows.
fn with_others(needs: u64, total: u64) -> String {
    let (one, all) = (bytes(needs), bytes(total));
    if one == all {
        String::new()
    } else {
        format!(" ({all} with the replay's other new buses there)")
    }
}

/// The receive time of the recording's first message, if it has one.
fn first_message_ns(path: &Path) -> Result<Option<u64>, Result<OpenRecordingError, ReadError>> {
    for record in RecordingFiles::open(path).map_err(Ok)? {
        if let Record::Message(m) = record.map_err(Err)? {
            return Ok(Some(m.mono_ns));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_targets_that_fit_one_by_one_but_not_together_are_refused_naming_the_sum() {
        let space = |target, needs, fs| Space {
            target,
            dir: PathBuf::from("/dev/shm"),
            needs,
            fs,
            free: 100 << 20,
        };
        // 60 MiB each: either fits in 100 MiB, both do not.
        let err = over_free(vec![space("a", 60 << 20, 1), space("b", 60 << 20, 1)]).unwrap_err();
        assert!(
            matches!(
                &err,
                ReplayError::NoSpace { target, needs, total, free, .. }
                    if target == "b" && *needs == 60 << 20 && *total == 120 << 20 && *free == 100 << 20
            ),
            "{err}"
        );
        assert_eq!(
            err.to_string(),
            "b: a bus of the recorded geometry takes 60.0 MiB (120.0 MiB with the replay's \
             other new buses there) and /dev/shm has 100.0 MiB free (give fewer slots, or \
             make the bus first)"
        );
        // On two file systems, each counts its own.
        over_free(vec![space("a", 60 << 20, 1), space("b", 60 << 20, 2)]).unwrap();
        // Exactly what is free fits.
        over_free(vec![space("a", 100 << 20, 1)]).unwrap();
        assert_eq!(bytes(100), "100 bytes");
        assert_eq!(bytes(4 << 30), "4.0 GiB");
        assert_eq!(bytes(u64::MAX), "16384.0 PiB");
    }
}
