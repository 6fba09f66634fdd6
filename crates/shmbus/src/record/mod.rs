//! Record and replay: what crossed a bus, with its timing, in a file
//! (docs/RECORDING.md, format version 2; version 1 files are still read).
//!
//! A [`Recorder`] writes a recording to any `io::Write`: a header, one
//! bus record per bus, then message records (bus, sequence, receive time
//! on CLOCK_MONOTONIC and on the wall clock, payload) and gap records (the
//! messages a lossy recorder missed), each checked like the journal's
//! records, so a recorder killed mid-write leaves a valid prefix. A
//! [`Recording`] reads one back as an iterator of [`Record`]s.
//!
//! On disk, a [`FileRecorder`] adds an index side file (`FILE.idx`) and
//! rotation (`FILE`, `FILE.1`, `FILE.2`, ...), and [`RecordingFiles`] reads
//! the parts back as one, seeking by time or sequence through the index
//! (a scan where the index is missing or stale). A [`Capture`] subscribes
//! to buses of any kind and feeds a [`FileRecorder`], or any other
//! [`Sink`] (the `shmbus-mcap` crate's MCAP writer); a [`Replayer`]
//! publishes a recording back into buses of the recorded kinds, paced,
//! within a [`Window`], from a native recording or from any source of
//! [`Record`]s ([`Replayer::run_records`]). `shmbus record` and `shmbus
//! replay` are built on these.

mod capture;
mod error;
mod files;
#[doc(hidden)]
pub mod format;
mod index;
mod pace;
mod recorder;
mod recording;
mod regular;
mod replay;
mod sink;
mod window;

pub use capture::{Capture, CaptureError, CaptureStats};
pub use error::{AddBusError, OpenRecordingError, ReadError, WriteError};
pub use files::{FileAccess, FileRecorder, RecordingFiles, Rotation, part_path};
pub use pace::PaceError;
pub use recorder::Recorder;
pub use recording::Recording;
pub use replay::{PublishFailure, ReplayError, ReplayStats, Replayer, Speed};
pub use sink::Sink;
pub use window::{Point, Window};

use crate::{SegmentKind, TypeFingerprint};

/// The kind of a recorded bus. More kinds may come: match with a `_` arm.
///
/// # Examples
/// ```
/// use shmbus::record::RecordedKind;
/// assert_eq!(RecordedKind::from_code(RecordedKind::Bus.code()), Some(RecordedKind::Bus));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RecordedKind {
    /// A plain (single-publisher, copying) bus: code 1 in the file.
    Bus,
    /// A many-publisher bus: code 2 (version 2).
    ManyPublisher,
    /// A pool bus, its blocks' bytes recorded: code 3 (version 2); each
    /// message at most the block size.
    Pool,
    /// A stream, its records of any length: code 4 (version 2); each at
    /// most the bus record's message size.
    Stream,
    /// A journaled bus: code 5 (version 2).
    Journaled,
}

impl RecordedKind {
    /// The kind's code in a bus record.
    ///
    /// # Examples
    /// ```
    /// assert_eq!(shmbus::record::RecordedKind::Bus.code(), 1);
    /// ```
    pub fn code(self) -> u32 {
        match self {
            RecordedKind::Bus => 1,
            RecordedKind::ManyPublisher => 2,
            RecordedKind::Pool => 3,
            RecordedKind::Stream => 4,
            RecordedKind::Journaled => 5,
        }
    }

    /// Whether its messages have lengths of their own (pool blocks, stream
    /// records: at most the bus record's message size) rather than exactly
    /// the message size.
    ///
    /// # Examples
    /// ```
    /// use shmbus::record::RecordedKind;
    /// assert!(RecordedKind::Pool.variable_length());
    /// assert!(!RecordedKind::Bus.variable_length());
    /// ```
    pub fn variable_length(self) -> bool {
        matches!(self, RecordedKind::Pool | RecordedKind::Stream)
    }

    /// The kind of a code, if this version knows it.
    ///
    /// # Examples
    /// ```
    /// assert_eq!(shmbus::record::RecordedKind::from_code(7), None);
    /// ```
    pub fn from_code(code: u32) -> Option<Self> {
        match code {
            1 => Some(RecordedKind::Bus),
            2 => Some(RecordedKind::ManyPublisher),
            3 => Some(RecordedKind::Pool),
            4 => Some(RecordedKind::Stream),
            5 => Some(RecordedKind::Journaled),
            _ => None,
        }
    }

    /// The recorded kind of a segment of kind `kind`, if a recording can
    /// hold one (a blackboard, a request-response service, or a kind this
    /// build does not know, it cannot). Both pool buses record as
    /// [`RecordedKind::Pool`].
    ///
    /// # Examples
    /// ```
    /// use shmbus::{SegmentKind, record::RecordedKind};
    /// assert_eq!(RecordedKind::of(SegmentKind::ManyPublisherPool), Some(RecordedKind::Pool));
    /// assert_eq!(RecordedKind::of(SegmentKind::Blackboard), None);
    /// assert_eq!(RecordedKind::of(SegmentKind::Service), None);
    /// ```
    pub fn of(kind: SegmentKind) -> Option<Self> {
        match kind {
            SegmentKind::Bus => Some(RecordedKind::Bus),
            SegmentKind::ManyPublisherBus => Some(RecordedKind::ManyPublisher),
            SegmentKind::JournaledBus => Some(RecordedKind::Journaled),
            SegmentKind::Pool | SegmentKind::ManyPublisherPool => Some(RecordedKind::Pool),
            SegmentKind::Stream => Some(RecordedKind::Stream),
            _ => None,
        }
    }
}

/// One record of a recording.
///
/// # Examples
/// ```
/// use shmbus::record::{Record, RecordedKind, Recorder, Recording};
///
/// let mut recorder = Recorder::new(Vec::new())?;
/// let bus = recorder.add_bus("ticks", RecordedKind::Bus, 1)?;
/// recorder.message(bus, 0, 5, 6, b"x")?;
/// recorder.gap(bus, 1, 2)?;
/// let bytes = recorder.into_inner();
/// for record in Recording::new(&bytes[..])? {
///     match record? {
///         Record::Bus(b) => assert_eq!((b.id, b.name.as_str(), b.msg_size), (0, "ticks", 1)),
///         Record::Message(m) => assert_eq!((m.seq, m.mono_ns, m.wall_ns), (0, 5, 6)),
///         Record::Gap(g) => assert_eq!((g.first, g.count), (1, 2)),
///         _ => unreachable!("a version 1 file"),
///     }
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Record {
    /// A bus, declared once before its messages.
    Bus(BusRecord),
    /// One message.
    Message(MessageRecord),
    /// Messages the recorder missed.
    Gap(GapRecord),
}

/// A bus record: what a replay needs to make the bus again.
///
/// # Examples
/// ```
/// use shmbus::record::{Record, RecordedKind, Recorder, Recording};
///
/// let mut recorder = Recorder::new(Vec::new())?;
/// let bus = recorder.add_bus("ticks", RecordedKind::Bus, 1)?;
/// recorder.message(bus, 0, 5, 6, b"x")?;
/// recorder.gap(bus, 1, 2)?;
/// let bytes = recorder.into_inner();
/// for record in Recording::new(&bytes[..])? {
///     match record? {
///         Record::Bus(b) => assert_eq!((b.id, b.name.as_str(), b.msg_size), (0, "ticks", 1)),
///         Record::Message(m) => assert_eq!((m.seq, m.mono_ns, m.wall_ns), (0, 5, 6)),
///         Record::Gap(g) => assert_eq!((g.first, g.count), (1, 2)),
///         _ => unreachable!("a version 1 file"),
///     }
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BusRecord {
    /// The bus's id in this recording (0, 1, 2, ... in file order).
    pub id: u32,
    /// The name it was recorded from.
    pub name: String,
    /// Its kind.
    pub kind: RecordedKind,
    /// Its message size in bytes: exact for fixed-size kinds, the most a
    /// message holds for a pool (the block size) or a stream.
    pub msg_size: u32,
    /// Its slots (a stream: its ring's bytes); 0 where not known (version 1).
    pub slots: u64,
    /// A pool's blocks; 0 for other kinds.
    pub blocks: u64,
    /// Its message type as the bus header has it (a pool's: its blocks');
    /// `None` in a version 1 file.
    pub msg_type: Option<TypeFingerprint>,
    /// Whether the recorder was a lossless subscriber.
    pub lossless: bool,
}

impl BusRecord {
    /// The bus record of bus `id` declared as `spec` (for a reader of
    /// another format that gives out [`Record`]s).
    ///
    /// # Examples
    /// ```
    /// use shmbus::record::{BusRecord, BusSpec, RecordedKind};
    /// let spec = BusSpec::new("frames", RecordedKind::Pool, 4096).blocks(8).lossless(true);
    /// let record = BusRecord::from_spec(3, &spec);
    /// assert_eq!((record.id, record.name.as_str(), record.blocks, record.lossless), (3, "frames", 8, true));
    /// ```
    pub fn from_spec(id: u32, spec: &BusSpec) -> Self {
        Self {
            id,
            name: spec.name.clone(),
            kind: spec.kind,
            msg_size: spec.msg_size,
            slots: spec.slots,
            blocks: spec.blocks,
            msg_type: spec.msg_type.clone(),
            lossless: spec.lossless,
        }
    }
}

/// What [`Recorder::add_bus_spec`] declares: a bus's kind, geometry and
/// message type.
///
/// # Examples
/// ```
/// use shmbus::record::{BusSpec, Record, RecordedKind, Recorder, Recording};
///
/// let mut recorder = Recorder::new(Vec::new())?;
/// let spec = BusSpec::new("frames", RecordedKind::Pool, 4096).slots(64).blocks(128);
/// let bus = recorder.add_bus_spec(&spec)?;
/// recorder.message(bus, 0, 1, 2, b"a short block")?; // pools: any length up to 4096
/// let bytes = recorder.into_inner();
/// let first = Recording::new(&bytes[..])?.next().unwrap()?;
/// assert!(matches!(first, Record::Bus(b) if b.blocks == 128 && b.kind == RecordedKind::Pool));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BusSpec {
    /// The bus's name.
    pub name: String,
    /// Its kind.
    pub kind: RecordedKind,
    /// Its message size (the most, for a pool or a stream).
    pub msg_size: u32,
    /// Its slots (a stream: ring bytes).
    pub slots: u64,
    /// A pool's blocks.
    pub blocks: u64,
    /// Its message type, if known.
    pub msg_type: Option<TypeFingerprint>,
    /// Whether the recorder subscribes losslessly.
    pub lossless: bool,
}

impl BusSpec {
    /// A bus of `kind` and `msg_size` under `name`, geometry unknown (0),
    /// no type, lossy.
    ///
    /// # Examples
    /// ```
    /// let spec = shmbus::record::BusSpec::new("ticks", shmbus::record::RecordedKind::Bus, 8);
    /// assert_eq!((spec.slots, spec.lossless), (0, false));
    /// ```
    pub fn new(name: &str, kind: RecordedKind, msg_size: u32) -> Self {
        Self {
            name: name.to_owned(),
            kind,
            msg_size,
            slots: 0,
            blocks: 0,
            msg_type: None,
            lossless: false,
        }
    }

    /// With its slots.
    ///
    /// # Examples
    /// ```
    /// let spec = shmbus::record::BusSpec::new("t", shmbus::record::RecordedKind::Bus, 8).slots(64);
    /// assert_eq!(spec.slots, 64);
    /// ```
    pub fn slots(mut self, slots: u64) -> Self {
        self.slots = slots;
        self
    }

    /// With a pool's blocks.
    ///
    /// # Examples
    /// ```
    /// let spec = shmbus::record::BusSpec::new("p", shmbus::record::RecordedKind::Pool, 64).blocks(8);
    /// assert_eq!(spec.blocks, 8);
    /// ```
    pub fn blocks(mut self, blocks: u64) -> Self {
        self.blocks = blocks;
        self
    }

    /// With its message type.
    ///
    /// # Examples
    /// ```
    /// use shmbus::record::{BusSpec, RecordedKind};
    /// let fp = shmbus::TypeFingerprint::of::<u64>();
    /// let spec = BusSpec::new("t", RecordedKind::Bus, 8).msg_type(fp.clone());
    /// assert_eq!(spec.msg_type, Some(fp));
    /// ```
    pub fn msg_type(mut self, fingerprint: TypeFingerprint) -> Self {
        self.msg_type = Some(fingerprint);
        self
    }

    /// Marked as recorded by a lossless subscriber.
    ///
    /// # Examples
    /// ```
    /// let spec = shmbus::record::BusSpec::new("t", shmbus::record::RecordedKind::Bus, 8).lossless(true);
    /// assert!(spec.lossless);
    /// ```
    pub fn lossless(mut self, lossless: bool) -> Self {
        self.lossless = lossless;
        self
    }
}

/// A message record.
///
/// # Examples
/// ```
/// use shmbus::record::{Record, RecordedKind, Recorder, Recording};
///
/// let mut recorder = Recorder::new(Vec::new())?;
/// let bus = recorder.add_bus("ticks", RecordedKind::Bus, 1)?;
/// recorder.message(bus, 0, 5, 6, b"x")?;
/// recorder.gap(bus, 1, 2)?;
/// let bytes = recorder.into_inner();
/// for record in Recording::new(&bytes[..])? {
///     match record? {
///         Record::Bus(b) => assert_eq!((b.id, b.name.as_str(), b.msg_size), (0, "ticks", 1)),
///         Record::Message(m) => assert_eq!((m.seq, m.mono_ns, m.wall_ns), (0, 5, 6)),
///         Record::Gap(g) => assert_eq!((g.first, g.count), (1, 2)),
///         _ => unreachable!("a version 1 file"),
///     }
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageRecord {
    /// The bus's id.
    pub bus: u32,
    /// The message's sequence on its bus.
    pub seq: u64,
    /// When the recorder received it: CLOCK_MONOTONIC, nanoseconds.
    pub mono_ns: u64,
    /// When the recorder received it: wall clock, nanoseconds since the
    /// Unix epoch.
    pub wall_ns: u64,
    /// The message's bytes (the bus's message size).
    pub payload: Vec<u8>,
}

/// A gap record: `count` messages from sequence `first` that the recorder
/// missed (a lag report).
///
/// # Examples
/// ```
/// use shmbus::record::{Record, RecordedKind, Recorder, Recording};
///
/// let mut recorder = Recorder::new(Vec::new())?;
/// let bus = recorder.add_bus("ticks", RecordedKind::Bus, 1)?;
/// recorder.message(bus, 0, 5, 6, b"x")?;
/// recorder.gap(bus, 1, 2)?;
/// let bytes = recorder.into_inner();
/// for record in Recording::new(&bytes[..])? {
///     match record? {
///         Record::Bus(b) => assert_eq!((b.id, b.name.as_str(), b.msg_size), (0, "ticks", 1)),
///         Record::Message(m) => assert_eq!((m.seq, m.mono_ns, m.wall_ns), (0, 5, 6)),
///         Record::Gap(g) => assert_eq!((g.first, g.count), (1, 2)),
///         _ => unreachable!("a version 1 file"),
///     }
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GapRecord {
    /// The bus's id.
    pub bus: u32,
    /// The first missed sequence.
    pub first: u64,
    /// How many were missed (at least 1).
    pub count: u64,
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod tests_files;

#[cfg(test)]
mod tests_replay;
