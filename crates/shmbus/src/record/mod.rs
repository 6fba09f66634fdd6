//! Record and replay: what crossed a bus, with its timing, in a file
//! (docs/RECORDING.md), phase 1: plain buses.
//!
//! A [`Recorder`] writes a recording to any `io::Write`: a header, one
//! bus record per bus, then message records (bus, sequence, receive time
//! on CLOCK_MONOTONIC and on the wall clock, payload) and gap records (the
//! messages a lossy recorder missed), each checked like the journal's
//! records, so a recorder killed mid-write leaves a valid prefix. A
//! [`Recording`] reads one back as an iterator of [`Record`]s. `shmbus
//! record` and `shmbus replay` are built on the two.

mod error;
#[doc(hidden)]
pub mod format;
mod recorder;
mod recording;

pub use error::{AddBusError, OpenRecordingError, ReadError, WriteError};
pub use recorder::Recorder;
pub use recording::Recording;

/// The kind of a recorded bus. Phase 1 records plain buses only; more
/// kinds will come: match with a `_` arm.
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
        }
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
pub struct BusRecord {
    /// The bus's id in this recording (0, 1, 2, ... in file order).
    pub id: u32,
    /// The name it was recorded from.
    pub name: String,
    /// Its kind.
    pub kind: RecordedKind,
    /// Its message size in bytes.
    pub msg_size: u32,
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
