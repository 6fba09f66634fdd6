//! [`McapRecorder`]: a [`Sink`] writing MCAP files, chunked, indexed,
//! compressed by choice, rotated like a native recording.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use shmbus::record::{AddBusError, BusSpec, FileAccess, Rotation, Sink, WriteError, part_path};

use crate::encode::{Codec, McapFile};
use crate::error::CreateError;
use crate::map;

/// How chunks are compressed.
///
/// # Examples
/// ```
/// use shmbus_mcap::Compression;
/// assert_eq!("zstd".parse::<Compression>(), Ok(Compression::Zstd));
/// assert_eq!(Compression::Lz4.to_string(), "lz4");
/// assert!("gzip".parse::<Compression>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Compression {
    /// Chunks as they are (the default: the fastest to write).
    #[default]
    None,
    /// Zstandard.
    Zstd,
    /// LZ4 (frame format).
    Lz4,
}

impl std::fmt::Display for Compression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Compression::None => "none",
            Compression::Zstd => "zstd",
            Compression::Lz4 => "lz4",
        })
    }
}

/// A compression name that is not `none`, `zstd` or `lz4`.
///
/// # Examples
/// ```
/// let err = "gzip".parse::<shmbus_mcap::Compression>().unwrap_err();
/// assert_eq!(err.to_string(), "\"gzip\" is not a compression: expected none, zstd or lz4");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{found:?} is not a compression: expected none, zstd or lz4")]
pub struct CompressionError {
    /// The name given.
    pub found: String,
}

impl FromStr for Compression {
    type Err = CompressionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "none" => Ok(Compression::None),
            "zstd" => Ok(Compression::Zstd),
            "lz4" => Ok(Compression::Lz4),
            _ => Err(CompressionError {
                found: s.to_owned(),
            }),
        }
    }
}

/// How an [`McapRecorder`] writes: chunk compression, rotation, chunk
/// size, who may read the files.
///
/// # Examples
/// ```
/// use shmbus_mcap::{Compression, McapOptions};
/// let opts = McapOptions::default().compression(Compression::Lz4).chunk_size(256 << 10);
/// assert_eq!(opts.compression, Compression::Lz4);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct McapOptions {
    /// Chunk compression.
    pub compression: Compression,
    /// When a new file (`FILE.1`, `FILE.2`, ...) starts.
    pub rotation: Rotation,
    /// A chunk ends once it holds this many bytes (before compression),
    /// and at each flush; with a size rotation, at most a quarter of a
    /// part's size.
    pub chunk_size: u64,
    /// The files' permission bits and group.
    pub access: FileAccess,
}

impl Default for McapOptions {
    fn default() -> Self {
        Self {
            compression: Compression::None,
            rotation: Rotation::default(),
            chunk_size: 1 << 20,
            access: FileAccess::default(),
        }
    }
}

impl McapOptions {
    /// With this chunk compression.
    ///
    /// # Examples
    /// ```
    /// let o = shmbus_mcap::McapOptions::default().compression(shmbus_mcap::Compression::Zstd);
    /// assert_eq!(o.compression, shmbus_mcap::Compression::Zstd);
    /// ```
    pub fn compression(mut self, compression: Compression) -> Self {
        self.compression = compression;
        self
    }

    /// With this rotation.
    ///
    /// # Examples
    /// ```
    /// let r = shmbus::record::Rotation::default().bytes(1 << 20);
    /// assert_eq!(shmbus_mcap::McapOptions::default().rotation(r).rotation, r);
    /// ```
    pub fn rotation(mut self, rotation: Rotation) -> Self {
        self.rotation = rotation;
        self
    }

    /// With this chunk size (at least 1 KiB).
    ///
    /// # Examples
    /// ```
    /// assert_eq!(shmbus_mcap::McapOptions::default().chunk_size(10).chunk_size, 1024);
    /// ```
    pub fn chunk_size(mut self, bytes: u64) -> Self {
        self.chunk_size = bytes.max(1024);
        self
    }

    /// With this access to the files.
    ///
    /// # Examples
    /// ```
    /// let a = shmbus::record::FileAccess::default().mode(0o640);
    /// assert_eq!(shmbus_mcap::McapOptions::default().access(a).access.mode, 0o640);
    /// ```
    pub fn access(mut self, access: FileAccess) -> Self {
        self.access = access;
        self
    }
}

/// A bus as this recorder writes it.
#[derive(Debug)]
struct Bus {
    spec: BusSpec,
    /// Its channel in the current part.
    channel: u16,
    /// The sequence after its last message or gap in the current part, as
    /// a reader infers it (0 at a part's start).
    next: u64,
}

/// The current part's file and its control channels.
struct Part {
    file: McapFile,
    gap: u16,
    seq: u16,
    /// Its first message's CLOCK_MONOTONIC time.
    start: Option<u64>,
    /// The times of its latest message (a gap's, a mark's times).
    last: (u64, u64),
}

/// Writes buses' messages into MCAP files (docs/RECORDING.md, "MCAP"):
/// one channel per bus, its topic the bus's name, the gaps on channel
/// `shmbus.gap`; chunked and indexed, each chunk compressed as
/// [`McapOptions::compression`] says; a new complete file (`FILE.1`,
/// `FILE.2`, ...) where the rotation says. A [`Sink`], so a
/// [`Capture`](shmbus::record::Capture) records into it. Each chunk is
/// written whole, at once: a recorder killed mid-write leaves a file whose
/// every chunk written before the cut reads back
/// ([`McapRecording`](crate::McapRecording)). [`finish`](Self::finish)
/// (or dropping it) writes the summary and the footer.
///
/// # Examples
/// ```
/// use shmbus::record::{BusSpec, RecordedKind, Sink};
/// use shmbus_mcap::{McapOptions, McapRecorder, McapRecording};
///
/// let dir = std::env::temp_dir().join(format!("shmbus-mcap-doc-rec-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("r.mcap");
/// let mut rec = McapRecorder::create(&path, McapOptions::default())?;
/// let bus = rec.add_bus(&BusSpec::new("ticks", RecordedKind::Bus, 8))?;
/// rec.message(bus, (1 << 32) + 1, 10, 20, &7u64.to_le_bytes())?;
/// rec.gap(bus, (1 << 32) + 2, 3)?;
/// rec.finish()?;
/// let records: Vec<_> = McapRecording::open(&path)?.collect::<Result<_, _>>()?;
/// assert_eq!(records.len(), 3); // the bus, the message, the gap
/// std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct McapRecorder {
    base: PathBuf,
    options: McapOptions,
    part: u32,
    current: Option<Part>,
    buses: Vec<Bus>,
}

impl std::fmt::Debug for McapRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McapRecorder")
            .field("base", &self.base)
            .field("options", &self.options)
            .field("part", &self.part)
            .field("buses", &self.buses)
            .finish_non_exhaustive()
    }
}

/// The most buses a file holds: channels are 16-bit, two are shmbus's own.
const MAX_BUSES: usize = u16::MAX as usize - 2;

impl McapRecorder {
    /// Creates the file `path` (it must not exist), its header and the
    /// control channels written.
    ///
    /// # Examples
    /// ```
    /// use shmbus_mcap::{McapOptions, McapRecorder};
    ///
    /// let dir = std::env::temp_dir().join(format!("shmbus-mcap-doc-create-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let rec = McapRecorder::create(&dir.join("r.mcap"), McapOptions::default())?;
    /// assert_eq!(rec.parts(), 1);
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`CreateError::File`] if the file cannot be made (one is there) or
    /// given its group and mode, [`CreateError::Write`] if its header cannot
    /// be written.
    pub fn create(path: &Path, options: McapOptions) -> Result<Self, CreateError> {
        let current = Some(start_part(path, &options, &mut [], (0, 0))?);
        Ok(Self {
            base: path.to_owned(),
            options,
            part: 0,
            current,
            buses: Vec::new(),
        })
    }

    /// How many files it has started (1 until it rotates).
    ///
    /// # Examples
    /// ```
    /// use shmbus_mcap::{McapOptions, McapRecorder};
    ///
    /// let dir = std::env::temp_dir().join(format!("shmbus-mcap-doc-parts-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let rec = McapRecorder::create(&dir.join("r.mcap"), McapOptions::default())?;
    /// assert_eq!(rec.parts(), 1);
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn parts(&self) -> u32 {
        self.part + 1
    }

    /// Ends the current file: its last chunk, the summary (schemas,
    /// channels, statistics, chunk indexes) and the footer. Nothing is
    /// written after it.
    ///
    /// # Examples
    /// ```
    /// use shmbus_mcap::{McapOptions, McapRecorder};
    ///
    /// let dir = std::env::temp_dir().join(format!("shmbus-mcap-doc-finish-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// McapRecorder::create(&dir.join("r.mcap"), McapOptions::default())?.finish()?;
    /// assert!(std::fs::read(dir.join("r.mcap"))?.ends_with(b"\x89MCAP0\r\n"));
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`WriteError::File`] naming the file if a write fails.
    pub fn finish(mut self) -> Result<(), WriteError> {
        self.end_part()
    }

    fn path(&self) -> PathBuf {
        part_path(&self.base, self.part)
    }

    fn failed(&self, source: io::Error) -> WriteError {
        WriteError::File {
            path: self.path(),
            what: "write",
            source,
        }
    }

    /// Ends the current part, if any: the summary, the footer, the file
    /// flushed.
    fn end_part(&mut self) -> Result<(), WriteError> {
        let Some(part) = self.current.take() else {
            return Ok(());
        };
        part.file.finish().map_err(|e| self.failed(e))
    }

    /// The current part, a new one first if the rotation says so (a time
    /// rotation looks at `mono_ns`, a message's receive time).
    fn part_for(&mut self, mono_ns: Option<u64>) -> Result<&mut Part, WriteError> {
        let due = match &self.current {
            None => true,
            Some(p) => {
                let size = self
                    .options
                    .rotation
                    .max_bytes
                    .is_some_and(|max| p.writer_end() >= max);
                let time = match (self.options.rotation.max_time, p.start, mono_ns) {
                    (Some(max), Some(start), Some(t)) => {
                        u128::from(t.saturating_sub(start)) >= max.as_nanos()
                    }
                    _ => false,
                };
                size || time
            }
        };
        if due {
            let last = self.current.as_ref().map_or((0, 0), |p| p.last);
            self.end_part()?;
            self.part += 1;
            let path = self.path();
            let part =
                start_part(&path, &self.options, &mut self.buses, last).map_err(|e| match e {
                    CreateError::File {
                        path, what, source, ..
                    } => WriteError::File { path, what, source },
                    CreateError::Write { path, source } => WriteError::File {
                        path,
                        what: "write",
                        source,
                    },
                })?;
            self.current = Some(part);
        }
        Ok(self.current.as_mut().expect("a part was just started"))
    }

    fn bus(&self, bus: u32) -> Result<&Bus, WriteError> {
        self.buses.get(bus as usize).ok_or(WriteError::UnknownBus {
            found: bus,
            buses: self.buses.len(),
        })
    }
}

impl Part {
    /// The bytes written to the file so far (a chunk in progress not
    /// counted).
    fn writer_end(&self) -> u64 {
        self.file.bytes()
    }
}

impl Drop for McapRecorder {
    fn drop(&mut self) {
        let _ = self.end_part();
    }
}

/// Creates part file `path` with `options.access`, writes its header, the
/// control channels and a channel for each of `buses` (each bus's channel
/// and sequence state set for the new part).
fn start_part(
    path: &Path,
    options: &McapOptions,
    buses: &mut [Bus],
    last: (u64, u64),
) -> Result<Part, CreateError> {
    let file = create_file(path, options.access)?;
    let failed = |source| CreateError::Write {
        path: path.to_owned(),
        source,
    };
    let codec = match options.compression {
        Compression::None => Codec::None,
        Compression::Zstd => Codec::Zstd,
        Compression::Lz4 => Codec::Lz4,
    };
    let mut file = McapFile::create(
        file,
        map::PROFILE,
        concat!("shmbus-mcap/", env!("CARGO_PKG_VERSION")),
        codec,
        chunk_size(options),
    )
    .map_err(failed)?;
    let control = file
        .add_schema(map::CONTROL_ENCODING, map::CONTROL_ENCODING, &[])
        .map_err(failed)?;
    let none = Default::default();
    let gap = file
        .add_channel(control, map::GAP_TOPIC, map::CONTROL_ENCODING, &none)
        .map_err(failed)?;
    let seq = file
        .add_channel(control, map::SEQ_TOPIC, map::CONTROL_ENCODING, &none)
        .map_err(failed)?;
    for (id, bus) in buses.iter_mut().enumerate() {
        bus.channel = add_channel(&mut file, id as u32, &bus.spec).map_err(failed)?;
        bus.next = 0;
    }
    Ok(Part {
        file,
        gap,
        seq,
        start: None,
        last,
    })
}

/// The chunk size: as asked, and at most a quarter of a size rotation's
/// part (a part ends only between chunks, so it ends near its size).
fn chunk_size(options: &McapOptions) -> u64 {
    match options.rotation.max_bytes {
        Some(max) => options.chunk_size.min(max / 4).max(1024),
        None => options.chunk_size,
    }
}

/// Declares bus `id` in `file`: its schema and channel.
fn add_channel(file: &mut McapFile, id: u32, spec: &BusSpec) -> io::Result<u16> {
    let schema = file.add_schema(&map::schema_name(spec), map::RAW_ENCODING, &[])?;
    file.add_channel(
        schema,
        &spec.name,
        map::RAW_ENCODING,
        &map::metadata(id, spec),
    )
}

/// Creates `path` as every recording file is made
/// ([`FileAccess::create_file`]).
fn create_file(path: &Path, access: FileAccess) -> Result<File, CreateError> {
    access.create_file(path).map_err(|e| match e {
        WriteError::File { path, what, source } => CreateError::File { path, what, source },
        other => CreateError::File {
            path: path.to_owned(),
            what: "create",
            source: std::io::Error::other(other.to_string()),
        },
    })
}

impl Sink for McapRecorder {
    fn add_bus(&mut self, spec: &BusSpec) -> Result<u32, AddBusError> {
        if self.buses.len() >= MAX_BUSES {
            return Err(AddBusError::TooManyBuses {
                found: self.buses.len(),
                max: MAX_BUSES,
            });
        }
        let id = self.buses.len() as u32;
        let part = self
            .part_for(None)
            .map_err(|e| AddBusError::Io(io::Error::other(e)))?;
        let channel = add_channel(&mut part.file, id, spec).map_err(AddBusError::Io)?;
        self.buses.push(Bus {
            spec: spec.clone(),
            channel,
            next: 0,
        });
        Ok(id)
    }

    fn message(
        &mut self,
        bus: u32,
        seq: u64,
        mono_ns: u64,
        wall_ns: u64,
        payload: &[u8],
    ) -> Result<(), WriteError> {
        let b = self.bus(bus)?;
        let size = b.spec.msg_size;
        let fits = if b.spec.kind.variable_length() {
            payload.len() <= size as usize
        } else {
            payload.len() == size as usize
        };
        if !fits {
            return Err(WriteError::PayloadSize {
                bus,
                found: payload.len(),
                expected: size,
            });
        }
        self.part_for(Some(mono_ns))?;
        let b = &mut self.buses[bus as usize];
        let part = self.current.as_mut().expect("part_for made one");
        let low = seq as u32;
        let result = (|| {
            if map::infer_seq(b.next, low) != Some(seq) {
                // A reader would not infer this sequence from its low 32
                // bits: a mark says it first.
                part.file
                    .message(part.seq, 0, wall_ns, mono_ns, &map::encode_seq(bus, seq))?;
            }
            part.file.message(b.channel, low, wall_ns, mono_ns, payload)
        })();
        b.next = seq.saturating_add(1);
        part.start.get_or_insert(mono_ns);
        part.last = (mono_ns, wall_ns);
        result.map_err(|e| self.failed(e))
    }

    fn gap(&mut self, bus: u32, first: u64, count: u64) -> Result<(), WriteError> {
        self.bus(bus)?;
        if count == 0 {
            return Err(WriteError::EmptyGap { bus });
        }
        self.part_for(None)?;
        let part = self.current.as_mut().expect("part_for made one");
        let (mono, wall) = part.last;
        let result =
            part.file
                .message(part.gap, 0, wall, mono, &map::encode_gap(bus, first, count));
        let b = &mut self.buses[bus as usize];
        b.next = b.next.max(first.saturating_add(count));
        result.map_err(|e| self.failed(e))
    }

    fn flush(&mut self) -> Result<(), WriteError> {
        let Some(part) = self.current.as_mut() else {
            return Ok(());
        };
        part.file.flush().map_err(|e| self.failed(e))
    }
}
