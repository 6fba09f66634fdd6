//! [`Recorder`]: appends a recording's records to any `io::Write`.

use std::io::Write;

use super::error::{AddBusError, WriteError};
use super::format::{
    BUS_FIXED_V2, BUS_LOSSLESS, GAP_LEN, MAGIC, MAX_BUSES, MAX_MESSAGE, MAX_NAME, MAX_TYPE_NAME,
    MESSAGE_FIXED, TYPE_BUS, TYPE_GAP, TYPE_MESSAGE, frame, header,
};
use super::{BusSpec, RecordedKind};

/// Writes a recording (docs/RECORDING.md): the header, then one bus record
/// per [`add_bus`](Self::add_bus), then message and gap records, each
/// checked, in the order they are given.
///
/// Each record goes to the writer in one `write_all`; give it a
/// `BufWriter` for speed, and [`flush`](Self::flush) before the end. A
/// process killed mid-record leaves a recording whose last record is cut
/// short, which a [`Recording`](super::Recording) reads as its end.
///
/// # Examples
/// ```
/// use shmbus::record::{Record, RecordedKind, Recorder, Recording};
///
/// let mut recorder = Recorder::new(Vec::new())?;
/// let ticks = recorder.add_bus("ticks", RecordedKind::Bus, 8)?;
/// recorder.message(ticks, 0, 1_000, 1_700_000_000_000_000_000, &7u64.to_le_bytes())?;
/// recorder.gap(ticks, 1, 3)?;
/// let bytes = recorder.into_inner();
///
/// let records: Vec<Record> = Recording::new(&bytes[..])?.collect::<Result<_, _>>()?;
/// assert_eq!(records.len(), 3);
/// assert!(matches!(&records[2], Record::Gap(g) if g.first == 1 && g.count == 3));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Recorder<W: Write> {
    out: W,
    /// Each bus's message size and whether messages may be shorter, by id.
    sizes: Vec<(u32, bool)>,
    buf: Vec<u8>,
    /// Bytes written so far: the next record's offset.
    written: u64,
}

impl<W: Write> Recorder<W> {
    /// Writes the file's header to `out` and returns a recorder with no
    /// bus.
    ///
    /// # Examples
    /// ```
    /// let recorder = shmbus::record::Recorder::new(Vec::new())?;
    /// assert_eq!(recorder.into_inner().len(), 32); // the header
    /// # Ok::<(), shmbus::record::WriteError>(())
    /// ```
    ///
    /// # Errors
    /// [`WriteError::Io`] if the writer fails.
    pub fn new(out: W) -> Result<Self, WriteError> {
        Self::part(out, 0, new_recording_id())
    }

    /// A recorder writing part `part` of the recording `id` (rotation).
    pub(crate) fn part(mut out: W, part: u32, id: u64) -> Result<Self, WriteError> {
        let head = header(MAGIC, part, id);
        out.write_all(&head)?;
        Ok(Self {
            out,
            sizes: Vec::new(),
            buf: Vec::new(),
            written: head.len() as u64,
        })
    }

    /// The offset the next record will have in the file: the bytes written.
    ///
    /// # Examples
    /// ```
    /// let recorder = shmbus::record::Recorder::new(Vec::new())?;
    /// assert_eq!(recorder.offset(), 32);
    /// # Ok::<(), shmbus::record::WriteError>(())
    /// ```
    pub fn offset(&self) -> u64 {
        self.written
    }

    /// Declares a bus of `kind` carrying `msg_size`-byte messages under
    /// `name`, and returns its id (0, 1, 2, ... in the order added).
    ///
    /// # Examples
    /// ```
    /// use shmbus::record::{RecordedKind, Recorder};
    ///
    /// let mut recorder = Recorder::new(Vec::new())?;
    /// assert_eq!(recorder.add_bus("prices", RecordedKind::Bus, 64)?, 0);
    /// assert_eq!(recorder.add_bus("orders", RecordedKind::Bus, 32)?, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`AddBusError::NameTooLong`], [`AddBusError::MessageTooLarge`] and
    /// [`AddBusError::TooManyBuses`] past the format's bounds (nothing is
    /// written); [`AddBusError::Io`] if the writer fails.
    pub fn add_bus(
        &mut self,
        name: &str,
        kind: RecordedKind,
        msg_size: u32,
    ) -> Result<u32, AddBusError> {
        self.add_bus_spec(&BusSpec::new(name, kind, msg_size))
    }

    /// Declares a bus with its geometry and message type, and returns its
    /// id (0, 1, 2, ... in the order added).
    ///
    /// # Examples
    /// ```
    /// use shmbus::record::{BusSpec, RecordedKind, Recorder};
    ///
    /// let mut recorder = Recorder::new(Vec::new())?;
    /// let spec = BusSpec::new("ticks", RecordedKind::ManyPublisher, 8)
    ///     .slots(1024)
    ///     .msg_type(shmbus::TypeFingerprint::of::<u64>())
    ///     .lossless(true);
    /// assert_eq!(recorder.add_bus_spec(&spec)?, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`add_bus`](Self::add_bus), and [`AddBusError::TypeNameTooLong`]
    /// for a message type name longer than a recording holds.
    pub fn add_bus_spec(&mut self, spec: &BusSpec) -> Result<u32, AddBusError> {
        let (name, msg_size) = (spec.name.as_str(), spec.msg_size);
        if name.len() > MAX_NAME {
            return Err(AddBusError::NameTooLong {
                found: name.len(),
                max: MAX_NAME,
            });
        }
        if msg_size as usize > MAX_MESSAGE {
            return Err(AddBusError::MessageTooLarge {
                found: msg_size,
                max: MAX_MESSAGE,
            });
        }
        if self.sizes.len() >= MAX_BUSES {
            return Err(AddBusError::TooManyBuses {
                found: self.sizes.len(),
                max: MAX_BUSES,
            });
        }
        let type_name = spec.msg_type.as_ref().map_or("", |t| t.name.as_str());
        if type_name.len() > MAX_TYPE_NAME {
            return Err(AddBusError::TypeNameTooLong {
                found: type_name.len(),
                max: MAX_TYPE_NAME,
            });
        }
        let id = self.sizes.len() as u32;
        let mut body = Vec::with_capacity(BUS_FIXED_V2 + type_name.len() + name.len());
        body.extend_from_slice(&id.to_le_bytes());
        body.extend_from_slice(&spec.kind.code().to_le_bytes());
        body.extend_from_slice(&msg_size.to_le_bytes());
        let flags = if spec.lossless { BUS_LOSSLESS } else { 0 };
        body.extend_from_slice(&flags.to_le_bytes());
        body.extend_from_slice(&spec.slots.to_le_bytes());
        body.extend_from_slice(&spec.blocks.to_le_bytes());
        let (size, align, hash) = spec
            .msg_type
            .as_ref()
            .map_or((0, 0, 0), |t| (t.size, t.align, t.name_hash));
        body.extend_from_slice(&size.to_le_bytes());
        body.extend_from_slice(&align.to_le_bytes());
        body.extend_from_slice(&hash.to_le_bytes());
        body.extend_from_slice(&(type_name.len() as u32).to_le_bytes());
        body.extend_from_slice(&(name.len() as u32).to_le_bytes());
        body.extend_from_slice(type_name.as_bytes());
        body.extend_from_slice(name.as_bytes());
        self.write_record(TYPE_BUS, &body, &[])?;
        self.sizes.push((msg_size, spec.kind.variable_length()));
        Ok(id)
    }

    /// Appends a message of bus `bus`: its sequence, when it was received
    /// (CLOCK_MONOTONIC and wall-clock nanoseconds) and its payload.
    ///
    /// # Examples
    /// ```
    /// use shmbus::record::{Record, RecordedKind, Recorder, Recording};
    ///
    /// let mut recorder = Recorder::new(Vec::new())?;
    /// let bus = recorder.add_bus("ticks", RecordedKind::Bus, 2)?;
    /// recorder.message(bus, 41, 1_000, 2_000, b"hi")?;
    /// let bytes = recorder.into_inner();
    /// let last = Recording::new(&bytes[..])?.last().unwrap()?;
    /// assert!(matches!(last, Record::Message(m) if m.seq == 41 && m.payload == b"hi"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`WriteError::UnknownBus`] for an id not added,
    /// [`WriteError::PayloadSize`] for a payload not of the bus's message
    /// size (longer than it, for a pool or a stream; nothing is written);
    /// [`WriteError::Io`] if the writer fails.
    pub fn message(
        &mut self,
        bus: u32,
        seq: u64,
        mono_ns: u64,
        wall_ns: u64,
        payload: &[u8],
    ) -> Result<(), WriteError> {
        let (expected, variable) = self.size_of(bus)?;
        let fits = if variable {
            payload.len() <= expected as usize
        } else {
            payload.len() == expected as usize
        };
        if !fits {
            return Err(WriteError::PayloadSize {
                bus,
                found: payload.len(),
                expected,
            });
        }
        let mut fixed = [0u8; MESSAGE_FIXED];
        fixed[0..4].copy_from_slice(&bus.to_le_bytes());
        fixed[8..16].copy_from_slice(&seq.to_le_bytes());
        fixed[16..24].copy_from_slice(&mono_ns.to_le_bytes());
        fixed[24..32].copy_from_slice(&wall_ns.to_le_bytes());
        Ok(self.write_record(TYPE_MESSAGE, &fixed, payload)?)
    }

    /// Appends a gap: `count` messages of bus `bus` from sequence `first`
    /// that the recorder missed.
    ///
    /// # Examples
    /// ```
    /// use shmbus::record::{RecordedKind, Recorder, WriteError};
    ///
    /// let mut recorder = Recorder::new(Vec::new())?;
    /// let bus = recorder.add_bus("ticks", RecordedKind::Bus, 8)?;
    /// recorder.gap(bus, 100, 7)?;
    /// assert!(matches!(recorder.gap(bus, 107, 0), Err(WriteError::EmptyGap { bus: 0 })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`WriteError::UnknownBus`] for an id not added,
    /// [`WriteError::EmptyGap`] for a count of 0 (nothing is written);
    /// [`WriteError::Io`] if the writer fails.
    pub fn gap(&mut self, bus: u32, first: u64, count: u64) -> Result<(), WriteError> {
        self.size_of(bus)?;
        if count == 0 {
            return Err(WriteError::EmptyGap { bus });
        }
        let mut body = [0u8; GAP_LEN];
        body[0..4].copy_from_slice(&bus.to_le_bytes());
        body[8..16].copy_from_slice(&first.to_le_bytes());
        body[16..24].copy_from_slice(&count.to_le_bytes());
        Ok(self.write_record(TYPE_GAP, &body, &[])?)
    }

    /// Flushes the writer.
    ///
    /// # Examples
    /// ```
    /// use std::io::BufWriter;
    ///
    /// let mut recorder = shmbus::record::Recorder::new(BufWriter::new(Vec::new()))?;
    /// recorder.flush()?;
    /// assert_eq!(recorder.into_inner().get_ref().len(), 32);
    /// # Ok::<(), shmbus::record::WriteError>(())
    /// ```
    ///
    /// # Errors
    /// [`WriteError::Io`] if the writer fails.
    pub fn flush(&mut self) -> Result<(), WriteError> {
        Ok(self.out.flush()?)
    }

    /// The writer, given back (not flushed).
    ///
    /// # Examples
    /// ```
    /// let recorder = shmbus::record::Recorder::new(Vec::new())?;
    /// assert!(recorder.into_inner().starts_with(b"SHMBREC\0"));
    /// # Ok::<(), shmbus::record::WriteError>(())
    /// ```
    pub fn into_inner(self) -> W {
        self.out
    }

    fn size_of(&self, bus: u32) -> Result<(u32, bool), WriteError> {
        self.sizes
            .get(bus as usize)
            .copied()
            .ok_or(WriteError::UnknownBus {
                found: bus,
                buses: self.sizes.len(),
            })
    }

    /// One record, `a` then `b` as its body, in one `write_all` so a
    /// record is cut only by a crash, never by an interleaving.
    fn write_record(&mut self, ty: u32, a: &[u8], b: &[u8]) -> std::io::Result<()> {
        self.buf.clear();
        frame(&mut self.buf, ty, a, b);
        self.out.write_all(&self.buf)?;
        self.written += self.buf.len() as u64;
        Ok(())
    }
}

/// An id that tells this recording's parts and index from another's: the
/// clocks and the pid mixed (unique enough for a stale-index check, which
/// also checks each record it is pointed at).
pub(crate) fn new_recording_id() -> u64 {
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut h = wall ^ crate::stat::monotonic_ns().rotate_left(32) ^ u64::from(std::process::id());
    // splitmix64's finaliser: nearby inputs give unrelated ids.
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d049bb133111eb);
    h ^ (h >> 31)
}
