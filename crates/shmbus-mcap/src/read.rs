//! [`McapRecording`]: an MCAP file (and the parts after it) read back as
//! shmbus [`Record`]s.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use mcap::records::Record as McapRecord;
use mcap::sans_io::{LinearReadEvent, LinearReader, LinearReaderOptions};
use shmbus::record::{
    BusRecord, BusSpec, GapRecord, MessageRecord, Record, RecordedKind, part_path,
};

use crate::error::{OpenError, ReadError};
use crate::map;

/// The largest message a shmbus recording holds (16 MiB).
const MAX_MESSAGE: usize = 1 << 24;
/// The longest record (a chunk included) a reader takes: a hostile length
/// is refused, not allocated.
const RECORD_LIMIT: usize = 4 * MAX_MESSAGE;
/// The most bytes read from the file at once.
const READ_SIZE: usize = 1 << 20;

/// Whether the file at `path` starts with the MCAP magic.
///
/// # Examples
/// ```
/// let dir = std::env::temp_dir().join(format!("shmbus-mcap-doc-is-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// std::fs::write(dir.join("a"), b"\x89MCAP0\r\n...")?;
/// std::fs::write(dir.join("b"), b"SHMBREC\0...")?;
/// assert!(shmbus_mcap::is_mcap(&dir.join("a"))?);
/// assert!(!shmbus_mcap::is_mcap(&dir.join("b"))?);
/// std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// The I/O error if the file cannot be opened or read.
pub fn is_mcap(path: &Path) -> io::Result<bool> {
    let mut head = Vec::with_capacity(8);
    File::open(path)?.take(8).read_to_end(&mut head)?;
    Ok(head == mcap::MAGIC)
}

/// A bus as read: its id in the records given out and its spec.
#[derive(Debug)]
struct Bus {
    id: u32,
    spec: BusSpec,
    /// A foreign channel: raw messages of exactly this size.
    foreign: bool,
}

/// What a channel of the current part is.
#[derive(Debug, Clone, Copy)]
enum Channel {
    /// Bus (index in `buses`).
    Bus(usize),
    Gap,
    Seq,
}

/// One file being read.
struct Part {
    path: PathBuf,
    file: File,
    reader: LinearReader,
    schemas: BTreeMap<u16, String>,
    channels: BTreeMap<u16, Channel>,
    /// A bus's id in this part's gap and mark payloads (its metadata's
    /// `shmbus.bus_id`) to its index in `buses`.
    ids: BTreeMap<u32, usize>,
    /// Each bus's next sequence as inferred in this part (by index).
    next: BTreeMap<usize, u64>,
}

/// An MCAP file read as a recording (docs/RECORDING.md, "MCAP"): its
/// buses (channels, as they are declared), messages with their 64-bit
/// sequences and both receive times, and gaps; then the parts after it
/// (`FILE.1`, `FILE.2`, ...) where there are. Reads files shmbus wrote and
/// foreign ones whose channels have a schema `bytes[N]` (raw messages of
/// N bytes, each replayed as a plain bus's message; their sequence is the
/// MCAP one, their CLOCK_MONOTONIC time the publish time). Reading is
/// linear, chunk by chunk, each chunk's check verified before any of its
/// messages is given out. A file cut short (a recorder killed) ends where
/// its last whole chunk ends: [`cut`](Self::cut) then says so. A damaged
/// file yields a [`ReadError`] and ends.
///
/// # Examples
/// ```
/// use shmbus::record::{BusSpec, Record, RecordedKind, Sink};
/// use shmbus_mcap::{McapOptions, McapRecorder, McapRecording};
///
/// let dir = std::env::temp_dir().join(format!("shmbus-mcap-doc-reading-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("r.mcap");
/// let mut rec = McapRecorder::create(&path, McapOptions::default())?;
/// let bus = rec.add_bus(&BusSpec::new("ticks", RecordedKind::Bus, 8))?;
/// rec.message(bus, 5_000_000_000, 10, 20, &7u64.to_le_bytes())?;
/// rec.finish()?;
/// let mut reading = McapRecording::open(&path)?;
/// assert!(matches!(reading.next(), Some(Ok(Record::Bus(b))) if b.name == "ticks"));
/// assert!(matches!(reading.next(), Some(Ok(Record::Message(m))) if m.seq == 5_000_000_000 && m.mono_ns == 10));
/// assert!(reading.next().is_none());
/// assert!(!reading.cut());
/// std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct McapRecording {
    base: PathBuf,
    part_no: u32,
    part: Option<Part>,
    buses: Vec<Bus>,
    cut: bool,
    done: bool,
}

impl std::fmt::Debug for McapRecording {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McapRecording")
            .field("base", &self.base)
            .field("part", &self.part_no)
            .field("buses", &self.buses)
            .field("cut", &self.cut)
            .finish_non_exhaustive()
    }
}

/// Opens part `path`, its magic checked.
fn open_part(path: &Path) -> Result<Part, OpenError> {
    let io = |source| OpenError::Io {
        path: path.to_owned(),
        source,
    };
    let mut file = File::open(path).map_err(io)?;
    let mut head = Vec::with_capacity(8);
    (&mut file).take(8).read_to_end(&mut head).map_err(io)?;
    if head != mcap::MAGIC {
        return Err(OpenError::NotMcap {
            path: path.to_owned(),
            found: head,
            expected: mcap::MAGIC,
        });
    }
    let reader = LinearReader::new_with_options(
        LinearReaderOptions::default()
            .with_skip_start_magic(true)
            .with_prevalidate_chunk_crcs(true)
            .with_record_length_limit(RECORD_LIMIT),
    );
    Ok(Part {
        path: path.to_owned(),
        file,
        reader,
        schemas: BTreeMap::new(),
        channels: BTreeMap::new(),
        ids: BTreeMap::new(),
        next: BTreeMap::new(),
    })
}

impl McapRecording {
    /// Opens the MCAP file `path` (its first part).
    ///
    /// # Examples
    /// ```
    /// use shmbus_mcap::{McapRecording, OpenError};
    ///
    /// let dir = std::env::temp_dir().join(format!("shmbus-mcap-doc-open-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// std::fs::write(dir.join("r.rec"), b"SHMBREC\0 a native recording")?;
    /// let err = McapRecording::open(&dir.join("r.rec")).unwrap_err();
    /// assert!(matches!(err, OpenError::NotMcap { .. }));
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`OpenError::Io`] if it cannot be opened or read,
    /// [`OpenError::NotMcap`] if it does not start with the MCAP magic.
    pub fn open(path: &Path) -> Result<Self, OpenError> {
        let part = open_part(path)?;
        Ok(Self {
            base: path.to_owned(),
            part_no: 0,
            part: Some(part),
            buses: Vec::new(),
            cut: false,
            done: false,
        })
    }

    /// Whether a part read so far ended before its footer (a recorder
    /// killed mid-file): what came before its last whole chunk was read.
    ///
    /// # Examples
    /// ```
    /// use shmbus::record::{BusSpec, RecordedKind, Sink};
    /// use shmbus_mcap::{McapOptions, McapRecorder, McapRecording};
    ///
    /// let dir = std::env::temp_dir().join(format!("shmbus-mcap-doc-cut-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("r.mcap");
    /// let mut rec = McapRecorder::create(&path, McapOptions::default())?;
    /// let bus = rec.add_bus(&BusSpec::new("ticks", RecordedKind::Bus, 8))?;
    /// rec.message(bus, 0, 10, 20, &7u64.to_le_bytes())?;
    /// rec.flush()?; // a chunk, whole in the file
    /// let whole = std::fs::metadata(&path)?.len() as usize;
    /// rec.message(bus, 1, 11, 21, &8u64.to_le_bytes())?;
    /// rec.finish()?;
    /// let bytes = std::fs::read(&path)?;
    /// std::fs::write(&path, &bytes[..whole + 40])?; // cut inside the second chunk
    /// let mut reading = McapRecording::open(&path)?;
    /// let messages = reading.by_ref().filter(|r| matches!(r, Ok(shmbus::record::Record::Message(_)))).count();
    /// assert_eq!((messages, reading.cut()), (1, true));
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cut(&self) -> bool {
        self.cut
    }

    /// The buses declared so far, each with its id in the records given
    /// out.
    ///
    /// # Examples
    /// ```
    /// use shmbus::record::{BusSpec, RecordedKind, Sink};
    /// use shmbus_mcap::{McapOptions, McapRecorder, McapRecording};
    ///
    /// let dir = std::env::temp_dir().join(format!("shmbus-mcap-doc-buses-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("r.mcap");
    /// let mut rec = McapRecorder::create(&path, McapOptions::default())?;
    /// rec.add_bus(&BusSpec::new("ticks", RecordedKind::Bus, 8))?;
    /// rec.finish()?;
    /// let mut reading = McapRecording::open(&path)?;
    /// reading.by_ref().for_each(drop);
    /// assert_eq!(reading.buses().next().map(|(id, b)| (id, b.name.as_str())), Some((0, "ticks")));
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn buses(&self) -> impl Iterator<Item = (u32, &BusSpec)> {
        self.buses.iter().map(|b| (b.id, &b.spec))
    }

    /// The next record of the current part: `Ok(None)` at its end.
    fn next_in_part(&mut self) -> Result<Option<Record>, ReadError> {
        loop {
            let Some(part) = self.part.as_mut() else {
                return Ok(None);
            };
            let path = part.path.clone();
            let event = match part.reader.next_event() {
                None => return Ok(None),
                Some(Err(source)) => return Err(ReadError::Mcap { path, source }),
                Some(Ok(e)) => e,
            };
            let (opcode, data) = match event {
                LinearReadEvent::ReadRequest(n) => {
                    let want = n.clamp(1, READ_SIZE);
                    let buf = part.reader.insert(want);
                    let got = read_some(&mut part.file, buf)
                        .map_err(|source| ReadError::Io { path, source })?;
                    if got == 0 {
                        // The file ends before its footer: cut short.
                        self.cut = true;
                        return Ok(None);
                    }
                    part.reader.notify_read(got);
                    continue;
                }
                LinearReadEvent::Record { opcode, data } => (opcode, data),
            };
            let record = mcap::parse_record(opcode, data)
                .map_err(|source| ReadError::Mcap {
                    path: path.clone(),
                    source,
                })?
                .into_owned();
            if let Some(r) = self.take(record)? {
                return Ok(Some(r));
            }
        }
    }

    /// What an MCAP record gives: a bus (a channel's first declaration),
    /// a message, a gap, or nothing.
    fn take(&mut self, record: McapRecord<'static>) -> Result<Option<Record>, ReadError> {
        let part = self.part.as_mut().expect("reading a part");
        let path = part.path.clone();
        match record {
            McapRecord::Schema { header, .. } => {
                part.schemas.insert(header.id, header.name);
                Ok(None)
            }
            McapRecord::Channel(c) => {
                if part.channels.contains_key(&c.id) {
                    // Repeated in the summary.
                    return Ok(None);
                }
                if c.topic == map::GAP_TOPIC || c.topic == map::SEQ_TOPIC {
                    let what = if c.topic == map::GAP_TOPIC {
                        Channel::Gap
                    } else {
                        Channel::Seq
                    };
                    part.channels.insert(c.id, what);
                    return Ok(None);
                }
                let schema = part.schemas.get(&c.schema_id).cloned().unwrap_or_default();
                let (spec, foreign, file_id) = match map::spec_of(&c.topic, &c.metadata).map_err(
                    |map::BadKey(key, found)| ReadError::Metadata {
                        path: path.clone(),
                        topic: c.topic.clone(),
                        key,
                        found,
                        expected: "what shmbus writes (docs/RECORDING.md, MCAP)",
                    },
                )? {
                    Some(spec) => {
                        let id = c.metadata.get(map::key::BUS_ID).map_or("", String::as_str);
                        let id = id.parse::<u32>().map_err(|_| ReadError::Metadata {
                            path: path.clone(),
                            topic: c.topic.clone(),
                            key: map::key::BUS_ID,
                            found: id.to_owned(),
                            expected: "a bus id",
                        })?;
                        if spec.msg_size as usize > MAX_MESSAGE {
                            return Err(ReadError::Metadata {
                                path,
                                topic: c.topic.clone(),
                                key: map::key::MSG_SIZE,
                                found: spec.msg_size.to_string(),
                                expected: "at most 16 MiB",
                            });
                        }
                        (spec, false, Some(id))
                    }
                    None => match map::raw_schema_size(&schema) {
                        Some(n) if n as usize <= MAX_MESSAGE => {
                            (BusSpec::new(&c.topic, RecordedKind::Bus, n), true, None)
                        }
                        _ => {
                            return Err(ReadError::Unsupported {
                                path,
                                topic: c.topic,
                                schema,
                                encoding: c.message_encoding,
                            });
                        }
                    },
                };
                // A bus declared by an earlier part (or twice in this one)
                // is the same bus, declared the same way.
                let found = self.buses.iter().position(|b| b.spec.name == c.topic);
                let index = match found {
                    Some(i) if self.buses[i].spec == spec => i,
                    Some(_) => {
                        return Err(ReadError::Redeclared {
                            path,
                            topic: c.topic,
                        });
                    }
                    None => {
                        self.buses.push(Bus {
                            id: self.buses.len() as u32,
                            spec,
                            foreign,
                        });
                        self.buses.len() - 1
                    }
                };
                if part
                    .channels
                    .values()
                    .any(|ch| matches!(ch, Channel::Bus(i) if *i == index))
                {
                    return Err(ReadError::Redeclared {
                        path,
                        topic: c.topic,
                    });
                }
                part.channels.insert(c.id, Channel::Bus(index));
                if let Some(id) = file_id {
                    part.ids.insert(id, index);
                }
                if found.is_some() {
                    return Ok(None);
                }
                let b = &self.buses[index];
                Ok(Some(Record::Bus(bus_record(b.id, &b.spec))))
            }
            McapRecord::Message { header, data } => {
                let Some(&channel) = part.channels.get(&header.channel_id) else {
                    return Err(ReadError::Unknown {
                        path,
                        what: "channel",
                        found: u32::from(header.channel_id),
                    });
                };
                let bus_of = |part: &Part, id: u32| {
                    part.ids.get(&id).copied().ok_or(ReadError::Unknown {
                        path: path.clone(),
                        what: "bus",
                        found: id,
                    })
                };
                match channel {
                    Channel::Gap => {
                        let (id, first, count) =
                            map::decode_gap(&data).ok_or(ReadError::Control {
                                path: path.clone(),
                                topic: map::GAP_TOPIC,
                                found: data.len(),
                                expected: 20,
                            })?;
                        let index = bus_of(part, id)?;
                        if count == 0 {
                            return Ok(None);
                        }
                        let next = part.next.entry(index).or_insert(0);
                        *next = (*next).max(first.saturating_add(count));
                        Ok(Some(Record::Gap(GapRecord {
                            bus: self.buses[index].id,
                            first,
                            count,
                        })))
                    }
                    Channel::Seq => {
                        let (id, seq) = map::decode_seq(&data).ok_or(ReadError::Control {
                            path: path.clone(),
                            topic: map::SEQ_TOPIC,
                            found: data.len(),
                            expected: 12,
                        })?;
                        let index = bus_of(part, id)?;
                        part.next.insert(index, seq);
                        Ok(None)
                    }
                    Channel::Bus(index) => {
                        let bus = &self.buses[index];
                        let size = bus.spec.msg_size;
                        let fits = if bus.spec.kind.variable_length() {
                            data.len() <= size as usize
                        } else {
                            data.len() == size as usize
                        };
                        if !fits {
                            return Err(ReadError::MessageSize {
                                path,
                                topic: bus.spec.name.clone(),
                                found: data.len(),
                                expected: size,
                            });
                        }
                        let seq = if bus.foreign {
                            u64::from(header.sequence)
                        } else {
                            let next = part.next.entry(index).or_insert(0);
                            let seq = map::infer_seq(*next, header.sequence).ok_or_else(|| {
                                ReadError::SequenceOverflow {
                                    path: path.clone(),
                                    topic: bus.spec.name.clone(),
                                }
                            })?;
                            *next = seq.saturating_add(1);
                            seq
                        };
                        Ok(Some(Record::Message(MessageRecord {
                            bus: bus.id,
                            seq,
                            mono_ns: header.publish_time,
                            wall_ns: header.log_time,
                            payload: data.into_owned(),
                        })))
                    }
                }
            }
            _ => Ok(None),
        }
    }
}

/// Reads into `buf`, retrying an interrupted read.
fn read_some(file: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match file.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}

fn bus_record(id: u32, spec: &BusSpec) -> BusRecord {
    BusRecord::from_spec(id, spec)
}

impl Iterator for McapRecording {
    type Item = Result<Record, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        loop {
            match self.next_in_part() {
                Ok(Some(r)) => return Some(Ok(r)),
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
                Ok(None) => {}
            }
            // The part ended: the next one, if there is one.
            let next = part_path(&self.base, self.part_no + 1);
            if !next.exists() {
                self.part = None;
                self.done = true;
                return None;
            }
            match open_part(&next) {
                Ok(p) => {
                    self.part_no += 1;
                    self.part = Some(p);
                }
                Err(e) => {
                    self.done = true;
                    let (path, source) = match e {
                        OpenError::Io { path, source } => (path, source),
                        OpenError::NotMcap { path, .. } => {
                            (path, io::Error::other("not an MCAP file"))
                        }
                    };
                    return Some(Err(ReadError::Io { path, source }));
                }
            }
        }
    }
}
