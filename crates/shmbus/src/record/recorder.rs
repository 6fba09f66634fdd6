//! [`Recorder`]: appends a recording's records to any `io::Write`.

use std::io::Write;

use super::error::{AddBusError, WriteError};
use super::format::{
    header, padded, record_check, BUS_FIXED, GAP_LEN, MAX_BUSES, MAX_MESSAGE, MAX_NAME,
    MESSAGE_FIXED, TYPE_BUS, TYPE_GAP, TYPE_MESSAGE,
};
use super::RecordedKind;

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
    /// Each bus's message size, by id.
    sizes: Vec<u32>,
    buf: Vec<u8>,
}

impl<W: Write> Recorder<W> {
    /// Writes the file's header to `out` and returns a recorder with no
    /// bus.
    ///
    /// # Examples
    /// ```
    /// let recorder = shmbus::record::Recorder::new(Vec::new())?;
    /// assert_eq!(recorder.into_inner().len(), 16); // the header
    /// # Ok::<(), shmbus::record::WriteError>(())
    /// ```
    ///
    /// # Errors
    /// [`WriteError::Io`] if the writer fails.
    pub fn new(mut out: W) -> Result<Self, WriteError> {
        out.write_all(&header())?;
        Ok(Self {
            out,
            sizes: Vec::new(),
            buf: Vec::new(),
        })
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
        let id = self.sizes.len() as u32;
        let mut body = Vec::with_capacity(BUS_FIXED + name.len());
        body.extend_from_slice(&id.to_le_bytes());
        body.extend_from_slice(&kind.code().to_le_bytes());
        body.extend_from_slice(&msg_size.to_le_bytes());
        body.extend_from_slice(&0u32.to_le_bytes());
        body.extend_from_slice(name.as_bytes());
        self.write_record(TYPE_BUS, &body, &[])?;
        self.sizes.push(msg_size);
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
    /// size (nothing is written); [`WriteError::Io`] if the writer fails.
    pub fn message(
        &mut self,
        bus: u32,
        seq: u64,
        mono_ns: u64,
        wall_ns: u64,
        payload: &[u8],
    ) -> Result<(), WriteError> {
        let expected = self.size_of(bus)?;
        if payload.len() != expected as usize {
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
    /// assert_eq!(recorder.into_inner().get_ref().len(), 16);
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

    fn size_of(&self, bus: u32) -> Result<u32, WriteError> {
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
        let len = a.len() + b.len();
        self.buf.clear();
        self.buf.extend_from_slice(&ty.to_le_bytes());
        self.buf.extend_from_slice(&(len as u32).to_le_bytes());
        self.buf.extend_from_slice(a);
        self.buf.extend_from_slice(b);
        self.buf.resize(8 + padded(len), 0);
        let check = record_check(ty, &self.buf[8..8 + len]);
        self.buf.extend_from_slice(&check.to_le_bytes());
        self.out.write_all(&self.buf)
    }
}
