//! A recording on disk: [`FileRecorder`] writes it with its index and
//! rotation, [`RecordingFiles`] reads its parts back as one and seeks
//! through the index (docs/RECORDING.md "Index", "Rotation").

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Seek, SeekFrom, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::error::{AddBusError, OpenRecordingError, ReadError, WriteError};
use super::format::{INDEX_MAGIC, VERSION, header};
use super::index::{self, IndexWriter, Position};
use super::recorder::Recorder;
use super::recording::Recording;
use super::regular::open_regular;
use super::{BusRecord, BusSpec, Record};

/// The file of part `part` of the recording at `base`: `base` itself for
/// part 0, then `base.1`, `base.2`, ... Its index is the same path with
/// `.idx` appended.
///
/// # Examples
/// ```
/// use std::path::Path;
/// use shmbus::record::part_path;
/// assert_eq!(part_path(Path::new("/tmp/run.rec"), 0), Path::new("/tmp/run.rec"));
/// assert_eq!(part_path(Path::new("/tmp/run.rec"), 2), Path::new("/tmp/run.rec.2"));
/// ```
pub fn part_path(base: &Path, part: u32) -> PathBuf {
    if part == 0 {
        return base.to_path_buf();
    }
    let mut s = base.as_os_str().to_owned();
    s.push(format!(".{part}"));
    PathBuf::from(s)
}

pub(crate) fn index_path(part: &Path) -> PathBuf {
    let mut s = part.as_os_str().to_owned();
    s.push(".idx");
    PathBuf::from(s)
}

/// Who may read a recording: the permission bits and group that every
/// part and index a [`FileRecorder`] makes gets, exactly, whatever the
/// umask. By default the owner's only (0o600, the creator's group): a
/// recording holds every message of its buses, so it should let read no
/// one its buses do not.
///
/// # Examples
/// ```
/// let access = shmbus::record::FileAccess::default().mode(0o640).group(1000);
/// assert_eq!((access.mode, access.group), (0o640, Some(1000)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileAccess {
    /// Permission bits (at most 0o777).
    pub mode: u32,
    /// The files' group, if not the creator's (the creator must be a
    /// member, as for `chgrp`).
    pub group: Option<u32>,
}

impl Default for FileAccess {
    fn default() -> Self {
        Self {
            mode: 0o600,
            group: None,
        }
    }
}

impl FileAccess {
    /// With these permission bits (only 0o777 of them count).
    ///
    /// # Examples
    /// ```
    /// assert_eq!(shmbus::record::FileAccess::default().mode(0o4640).mode, 0o640);
    /// ```
    pub fn mode(mut self, mode: u32) -> Self {
        self.mode = mode & 0o777;
        self
    }

    /// With this group.
    ///
    /// # Examples
    /// ```
    /// assert_eq!(shmbus::record::FileAccess::default().group(5).group, Some(5));
    /// ```
    pub fn group(mut self, gid: u32) -> Self {
        self.group = Some(gid);
        self
    }

    /// Creates `path` for writing, never over a file already there (nor
    /// through a symlink), with exactly this access: made owner-only,
    /// given its group, then its mode (so its group bits never let in the
    /// group it was made with), as a journal is. Removed again if that
    /// fails. Every file of a recording, native or MCAP, is made so.
    ///
    /// # Examples
    /// ```
    /// use std::os::unix::fs::PermissionsExt;
    /// let dir = std::env::temp_dir().join(format!("shmbus-doc-access-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("out");
    /// let access = shmbus::record::FileAccess::default().mode(0o640);
    /// access.create_file(&path)?;
    /// assert_eq!(std::fs::metadata(&path)?.permissions().mode() & 0o777, 0o640);
    /// assert!(access.create_file(&path).is_err(), "never over a file already there");
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`WriteError::File`] naming the step that failed: `create` (one
    /// already there included), `stat`, `chgrp` or `chmod`.
    pub fn create_file(&self, path: &Path) -> Result<File, WriteError> {
        let access = *self;
        let failed = |what, source| WriteError::File {
            path: path.to_owned(),
            what,
            source,
        };
        let mode = access.mode & 0o777;
        // O_EXCL: never through a symlink either.
        let file = File::options()
            .write(true)
            .create_new(true)
            .mode(mode & 0o600)
            .open(path)
            .map_err(|e| failed("create", e))?;
        let set = || -> Result<(), WriteError> {
            let meta = file.metadata().map_err(|e| failed("stat", e))?;
            if let Some(gid) = access.group.filter(|&g| g != meta.gid()) {
                std::os::unix::fs::fchown(&file, None, Some(gid))
                    .map_err(|e| failed("chgrp", e))?;
            }
            if meta.permissions().mode() & 0o7777 != mode {
                file.set_permissions(std::fs::Permissions::from_mode(mode))
                    .map_err(|e| failed("chmod", e))?;
            }
            Ok(())
        };
        if let Err(e) = set() {
            let _ = std::fs::remove_file(path);
            return Err(e);
        }
        Ok(file)
    }
}

/// `e` naming the part `path` it is about.
fn io_in(path: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// When a [`FileRecorder`] starts a new part: after this many bytes,
/// after this long (by the recorded CLOCK_MONOTONIC times), or never.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// let rotation = shmbus::record::Rotation::default().bytes(64 << 20).every(Duration::from_secs(60));
/// assert_eq!(rotation.max_bytes, Some(64 << 20));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rotation {
    /// A part ends before the record that would start past this size.
    pub max_bytes: Option<u64>,
    /// A part ends before the first record received this long after the
    /// part's first.
    pub max_time: Option<Duration>,
}

impl Rotation {
    /// With a size limit.
    ///
    /// # Examples
    /// ```
    /// assert_eq!(shmbus::record::Rotation::default().bytes(10).max_bytes, Some(10));
    /// ```
    pub fn bytes(mut self, max: u64) -> Self {
        self.max_bytes = Some(max);
        self
    }

    /// With a time limit.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// let r = shmbus::record::Rotation::default().every(Duration::from_secs(5));
    /// assert_eq!(r.max_time, Some(Duration::from_secs(5)));
    /// ```
    pub fn every(mut self, time: Duration) -> Self {
        self.max_time = Some(time);
        self
    }
}

/// Writes a recording to files: `base` (and, rotated, `base.1`, ...), each
/// a whole recording (its header, its buses declared again), each with its
/// index `PART.idx`, each made new (never over a file already there) with
/// exactly its [`FileAccess`] (0o600 unless given). A part's header is in
/// its file as soon as the part is made; records go through a buffer, and
/// [`flush`](Self::flush) writes them, then the index entries that point
/// into what was written, so an index is never ahead of its file.
///
/// # Examples
/// ```
/// use shmbus::record::{BusSpec, FileRecorder, Record, RecordedKind, RecordingFiles, Rotation};
///
/// let dir = std::env::temp_dir().join(format!("shmbus-doc-filerec-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("run.rec");
/// let mut rec = FileRecorder::create(&path, Rotation::default().bytes(4096))?;
/// let bus = rec.add_bus(&BusSpec::new("ticks", RecordedKind::Bus, 8))?;
/// for i in 0..1000u64 {
///     rec.message(bus, i, i * 1000, 0, &i.to_le_bytes())?;
/// }
/// rec.flush()?;
/// assert!(rec.parts() > 1);
///
/// let mut files = RecordingFiles::open(&path)?;
/// files.seek_seq(bus, 700)?;
/// assert!(matches!(files.next(), Some(Ok(Record::Bus(_))))); // the buses first
/// assert!(matches!(files.next(), Some(Ok(Record::Message(m))) if m.seq == 700));
/// std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct FileRecorder {
    base: PathBuf,
    rotation: Rotation,
    rec: Recorder<BufWriter<File>>,
    index_file: File,
    index: IndexWriter,
    specs: Vec<BusSpec>,
    part: u32,
    id: u64,
    access: FileAccess,
    /// The receive time of this part's first message.
    part_start: Option<u64>,
}

/// An index position every this many bytes of recording.
const INDEX_EVERY: u64 = 64 << 10;

impl FileRecorder {
    /// Creates `path` and `path.idx` (neither may exist), owner-only
    /// (0o600, whatever the umask), and writes their headers.
    ///
    /// # Examples
    /// ```
    /// use shmbus::record::{BusSpec, FileRecorder, RecordedKind, RecordingFiles, Rotation};
    ///
    /// let dir = std::env::temp_dir().join(format!("shmbus-doc-frc-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("r.rec");
    /// let mut rec = FileRecorder::create(&path, Rotation::default())?;
    /// let bus = rec.add_bus(&BusSpec::new("ticks", RecordedKind::Bus, 8))?;
    /// assert_eq!(rec.parts(), 1);
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`WriteError::File`] naming the file that exists or cannot be made
    /// (none of the two is left then).
    pub fn create(path: &Path, rotation: Rotation) -> Result<Self, WriteError> {
        Self::create_with_access(path, rotation, FileAccess::default())
    }

    /// As [`create`](Self::create), every part and index with exactly
    /// `access`'s mode and group.
    ///
    /// # Examples
    /// ```
    /// use std::os::unix::fs::PermissionsExt;
    /// use shmbus::record::{FileAccess, FileRecorder, Rotation};
    ///
    /// let dir = std::env::temp_dir().join(format!("shmbus-doc-frx-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("r.rec");
    /// let access = FileAccess::default().mode(0o640);
    /// let rec = FileRecorder::create_with_access(&path, Rotation::default(), access)?;
    /// assert_eq!(std::fs::metadata(&path)?.permissions().mode() & 0o777, 0o640);
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`create`](Self::create), and [`WriteError::File`] if the group
    /// or the mode cannot be set (`chgrp` to a group the caller is not in).
    pub fn create_with_access(
        path: &Path,
        rotation: Rotation,
        access: FileAccess,
    ) -> Result<Self, WriteError> {
        Self::create_inner(path, rotation, access, INDEX_EVERY)
    }

    /// As [`create`](Self::create), an index position every `every` bytes
    /// (tests).
    #[doc(hidden)]
    pub fn create_with(path: &Path, rotation: Rotation, every: u64) -> Result<Self, WriteError> {
        Self::create_inner(path, rotation, FileAccess::default(), every)
    }

    fn create_inner(
        path: &Path,
        rotation: Rotation,
        access: FileAccess,
        every: u64,
    ) -> Result<Self, WriteError> {
        let id = super::recorder::new_recording_id();
        let (rec, index_file) = open_part(path, 0, id, access)?;
        Ok(Self {
            base: path.to_path_buf(),
            rotation,
            rec,
            index_file,
            index: IndexWriter::new(every),
            specs: Vec::new(),
            part: 0,
            id,
            access,
            part_start: None,
        })
    }

    /// Declares a bus (see [`Recorder::add_bus_spec`]); every later part
    /// declares it again with the same id.
    ///
    /// # Examples
    /// ```
    /// use shmbus::record::{BusSpec, FileRecorder, RecordedKind, RecordingFiles, Rotation};
    ///
    /// let dir = std::env::temp_dir().join(format!("shmbus-doc-fra-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("r.rec");
    /// let mut rec = FileRecorder::create(&path, Rotation::default())?;
    /// let bus = rec.add_bus(&BusSpec::new("ticks", RecordedKind::Bus, 8))?;
    /// assert_eq!(bus, 0);
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Recorder::add_bus_spec`].
    pub fn add_bus(&mut self, spec: &BusSpec) -> Result<u32, AddBusError> {
        let offset = self.rec.offset();
        let id = self.rec.add_bus_spec(spec)?;
        self.index.bus(id, offset);
        self.specs.push(spec.clone());
        Ok(id)
    }

    /// Appends a message (see [`Recorder::message`]), first starting a
    /// new part if the rotation says so.
    ///
    /// # Examples
    /// ```
    /// use shmbus::record::{BusSpec, FileRecorder, RecordedKind, RecordingFiles, Rotation};
    ///
    /// let dir = std::env::temp_dir().join(format!("shmbus-doc-frm-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("r.rec");
    /// let mut rec = FileRecorder::create(&path, Rotation::default())?;
    /// let bus = rec.add_bus(&BusSpec::new("ticks", RecordedKind::Bus, 8))?;
    /// rec.message(bus, 0, 1_000, 2_000, &7u64.to_le_bytes())?;
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Recorder::message`].
    pub fn message(
        &mut self,
        bus: u32,
        seq: u64,
        mono_ns: u64,
        wall_ns: u64,
        payload: &[u8],
    ) -> Result<(), WriteError> {
        self.rotate_if_due(Some(mono_ns))?;
        self.index.before_record(self.rec.offset());
        self.rec
            .message(bus, seq, mono_ns, wall_ns, payload)
            .map_err(|e| self.in_part(e))?;
        self.index.message(bus, seq, mono_ns);
        self.part_start.get_or_insert(mono_ns);
        Ok(())
    }

    /// Appends a gap (see [`Recorder::gap`]), first starting a new part if
    /// the size rotation says so.
    ///
    /// # Examples
    /// ```
    /// use shmbus::record::{BusSpec, FileRecorder, RecordedKind, RecordingFiles, Rotation};
    ///
    /// let dir = std::env::temp_dir().join(format!("shmbus-doc-frg-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("r.rec");
    /// let mut rec = FileRecorder::create(&path, Rotation::default())?;
    /// let bus = rec.add_bus(&BusSpec::new("ticks", RecordedKind::Bus, 8))?;
    /// rec.gap(bus, 0, 5)?;
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Recorder::gap`].
    pub fn gap(&mut self, bus: u32, first: u64, count: u64) -> Result<(), WriteError> {
        self.rotate_if_due(None)?;
        self.index.before_record(self.rec.offset());
        self.rec
            .gap(bus, first, count)
            .map_err(|e| self.in_part(e))?;
        self.index.gap(bus, first, count);
        Ok(())
    }

    /// Writes what is buffered to the recording, then the index entries.
    ///
    /// # Examples
    /// ```
    /// use shmbus::record::{BusSpec, FileRecorder, RecordedKind, RecordingFiles, Rotation};
    ///
    /// let dir = std::env::temp_dir().join(format!("shmbus-doc-frf-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("r.rec");
    /// let mut rec = FileRecorder::create(&path, Rotation::default())?;
    /// let bus = rec.add_bus(&BusSpec::new("ticks", RecordedKind::Bus, 8))?;
    /// rec.message(bus, 0, 1_000, 2_000, &7u64.to_le_bytes())?;
    /// rec.flush()?;
    /// assert!(std::fs::metadata(dir.join("r.rec.idx"))?.len() > 32); // the index too
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`WriteError::File`] naming the part or the index if a write fails.
    pub fn flush(&mut self) -> Result<(), WriteError> {
        self.rec.flush().map_err(|e| self.in_part(e))?;
        if !self.index.pending.is_empty() {
            self.index_file
                .write_all(&self.index.pending)
                .map_err(|source| WriteError::File {
                    path: index_path(&part_path(&self.base, self.part)),
                    what: "write",
                    source,
                })?;
            self.index.pending.clear();
        }
        Ok(())
    }

    /// A write error of the current part, naming it.
    fn in_part(&self, e: WriteError) -> WriteError {
        match e {
            WriteError::Io(source) => WriteError::File {
                path: part_path(&self.base, self.part),
                what: "write",
                source,
            },
            e => e,
        }
    }

    /// How many parts have been started (1 without rotation).
    ///
    /// # Examples
    /// ```
    /// use shmbus::record::{BusSpec, FileRecorder, RecordedKind, RecordingFiles, Rotation};
    ///
    /// let dir = std::env::temp_dir().join(format!("shmbus-doc-frp-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("r.rec");
    /// let mut rec = FileRecorder::create(&path, Rotation::default())?;
    /// let bus = rec.add_bus(&BusSpec::new("ticks", RecordedKind::Bus, 8))?;
    /// assert_eq!(rec.parts(), 1);
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn parts(&self) -> u32 {
        self.part + 1
    }

    /// The bytes of the current part so far.
    ///
    /// # Examples
    /// ```
    /// use shmbus::record::{BusSpec, FileRecorder, RecordedKind, RecordingFiles, Rotation};
    ///
    /// let dir = std::env::temp_dir().join(format!("shmbus-doc-frb-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("r.rec");
    /// let mut rec = FileRecorder::create(&path, Rotation::default())?;
    /// let bus = rec.add_bus(&BusSpec::new("ticks", RecordedKind::Bus, 8))?;
    /// assert_eq!(rec.part_bytes(), 32 + 80); // the header, the bus record
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn part_bytes(&self) -> u64 {
        self.rec.offset()
    }

    fn rotate_if_due(&mut self, mono_ns: Option<u64>) -> Result<(), WriteError> {
        let by_size = self
            .rotation
            .max_bytes
            .is_some_and(|max| self.rec.offset() >= max);
        let by_time = match (self.rotation.max_time, self.part_start, mono_ns) {
            (Some(max), Some(start), Some(now)) => {
                u128::from(now.saturating_sub(start)) >= max.as_nanos()
            }
            _ => false,
        };
        // A part holds at least one message, so a tiny limit still moves on.
        if !(by_size || by_time) || self.part_start.is_none() {
            return Ok(());
        }
        self.flush()?;
        let next = self.part.checked_add(1).ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "too many parts")
        })?;
        let (rec, index_file) =
            open_part(&part_path(&self.base, next), next, self.id, self.access)?;
        self.rec = rec;
        self.index_file = index_file;
        self.part = next;
        self.part_start = None;
        self.index.new_part();
        for spec in &self.specs {
            let offset = self.rec.offset();
            let id = self.rec.add_bus_spec(spec).map_err(|e| match e {
                AddBusError::Io(e) => e,
                // Took once, the same spec takes again.
                e => std::io::Error::other(e.to_string()),
            })?;
            self.index.bus(id, offset);
        }
        Ok(())
    }
}

/// Dropped, it flushes what it can (the recording, then the index), as a
/// `BufWriter` would; call [`FileRecorder::flush`] to see an error.
impl Drop for FileRecorder {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// Makes part `part` at `path` and its index, each with its header
/// written: a recorder killed from here on leaves a part whose header is
/// whole. Neither file is left if either cannot be made.
fn open_part(
    path: &Path,
    part: u32,
    id: u64,
    access: FileAccess,
) -> Result<(Recorder<BufWriter<File>>, File), WriteError> {
    let idx = index_path(path);
    let file = access.create_file(path)?;
    let index_file = match access.create_file(&idx) {
        Ok(f) => f,
        Err(e) => {
            let _ = std::fs::remove_file(path);
            return Err(e);
        }
    };
    write_headers(file, index_file, path, &idx, part, id).inspect_err(|_| {
        let _ = std::fs::remove_file(path);
        let _ = std::fs::remove_file(&idx);
    })
}

fn write_headers(
    file: File,
    mut index_file: File,
    path: &Path,
    idx: &Path,
    part: u32,
    id: u64,
) -> Result<(Recorder<BufWriter<File>>, File), WriteError> {
    let failed = |p: &Path, source| WriteError::File {
        path: p.to_owned(),
        what: "write",
        source,
    };
    index_file
        .write_all(&header(INDEX_MAGIC, part, id))
        .map_err(|e| failed(idx, e))?;
    // The part's header goes to its file now, not only to the buffer.
    let rec = Recorder::part(BufWriter::with_capacity(1 << 20, file), part, id)
        .and_then(|mut rec| rec.flush().map(|()| rec))
        .map_err(|e| match e {
            WriteError::Io(e) => failed(path, e),
            e => e,
        })?;
    Ok((rec, index_file))
}

/// Whether `path` is part `part` of the recording `id`: `Err(None)` if
/// there is no such file, `Err(Some(why))` if it is not that part.
fn own_part(path: &Path, part: u32, id: u64) -> Result<(), Option<OpenRecordingError>> {
    let file = match open_regular(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(None),
        Err(e) => return Err(Some(OpenRecordingError::Io(io_in(path, e)))),
    };
    let named = path.display().to_string();
    match Recording::new(BufReader::new(file)) {
        Ok(rec) if rec.version() == VERSION && rec.part() == (part, id) => Ok(()),
        Ok(rec) => Err(Some(OpenRecordingError::PartMismatch {
            path: named,
            found: rec.part().0,
            id: rec.part().1,
            expected: part,
            expected_id: id,
        })),
        Err(OpenRecordingError::Io(e)) => Err(Some(OpenRecordingError::Io(io_in(path, e)))),
        Err(e) => Err(Some(OpenRecordingError::InPart {
            path: named,
            source: Box::new(e),
        })),
    }
}

/// Where a seek puts the reader: records are passed over until the first
/// that matches.
#[derive(Debug, Clone, Copy)]
enum Target {
    None,
    /// The first message received at or after this time.
    Time(u64),
    /// The first message or gap of this bus at or past this sequence.
    Seq(u32, u64),
}

/// The read buffer of a part read through: one `read` a few thousand
/// records, not one every 8 KiB.
const READ_BUFFER: usize = 256 << 10;

/// A recording on disk read back as one: `base` and its rotated parts
/// (`base.1`, `base.2`, ... while they exist), each part's buses declared
/// again and checked to be the first part's. An iterator of [`Record`]s:
/// each bus once, then messages and gaps, filtered by
/// [`only_bus`](Self::only_bus) and [`between`](Self::between);
/// [`seek_time`](Self::seek_time) and [`seek_seq`](Self::seek_seq) jump
/// through the index (or scan, where it is missing or stale: never a
/// different answer). A version 1 file reads as one part without index.
///
/// # Examples
/// ```
/// use shmbus::record::{BusSpec, FileRecorder, Record, RecordedKind, RecordingFiles, Rotation};
///
/// let dir = std::env::temp_dir().join(format!("shmbus-doc-rf-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("r.rec");
/// let mut rec = FileRecorder::create(&path, Rotation::default().bytes(4096))?;
/// let a = rec.add_bus(&BusSpec::new("a", RecordedKind::Bus, 8))?;
/// let b = rec.add_bus(&BusSpec::new("b", RecordedKind::Stream, 64))?;
/// for i in 0..200u64 {
///     rec.message(a, i, i * 1_000, 0, &i.to_le_bytes())?;
///     rec.message(b, i, i * 1_000 + 1, 0, b"any length")?;
/// }
/// rec.flush()?;
/// // Bus b's messages received from 150 µs on, across the parts.
/// let late: Vec<Record> = RecordingFiles::open(&path)?
///     .only_bus(b)
///     .between(Some(150_000), None)
///     .collect::<Result<_, _>>()?;
/// assert_eq!(late.len(), 2 + 50); // the two bus records, 50 messages
/// std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct RecordingFiles {
    paths: Vec<PathBuf>,
    /// (part, id) of each part's header.
    headers: Vec<(u32, u32, u64)>,
    current: Option<Recording<BufReader<File>>>,
    part: usize,
    buses: Vec<BusRecord>,
    /// Ids of buses whose record this iteration has yielded.
    yielded: usize,
    only_bus: Option<u32>,
    from: Option<u64>,
    to: Option<u64>,
    /// Inside the time window (a message in it has been seen).
    inside: bool,
    target: Target,
    /// The record a seek read to check the index, not yet yielded.
    pending: Option<Record>,
    done: bool,
}

impl RecordingFiles {
    /// Opens `base` and every part after it, checking each part's header
    /// follows the one before. A later part (`base.2`) given as `base` is
    /// read alone, as the recording it is on its own.
    ///
    /// # Examples
    /// ```
    /// use shmbus::record::{BusSpec, FileRecorder, RecordedKind, RecordingFiles, Rotation};
    ///
    /// let dir = std::env::temp_dir().join(format!("shmbus-doc-rfo-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("r.rec");
    /// let mut rec = FileRecorder::create(&path, Rotation::default())?;
    /// let bus = rec.add_bus(&BusSpec::new("ticks", RecordedKind::Bus, 8))?;
    /// for i in 0..3u64 {
    ///     rec.message(bus, i, 1_000 * (i + 1), 0, &i.to_le_bytes())?;
    /// }
    /// rec.flush()?;
    /// assert_eq!(RecordingFiles::open(&path)?.count(), 4); // the bus, 3 messages
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// A file named as the next part that is not one (cut inside its
    /// header, not a recording, another recording's or another number)
    /// ends the recording, unless the file after it is a part.
    ///
    /// # Errors
    /// As [`Recording::new`] for `base` (a cut or damaged header; one that
    /// is not a regular file is [`OpenRecordingError::Io`]);
    /// [`OpenRecordingError::PartMismatch`] for a part of another
    /// recording or number, and [`OpenRecordingError::InPart`] for a file
    /// that is no part, each followed by a part (a part lost or replaced);
    /// [`OpenRecordingError::Io`] naming the part if one cannot be read.
    pub fn open(base: &Path) -> Result<Self, OpenRecordingError> {
        let first = Recording::new(BufReader::with_capacity(READ_BUFFER, open_regular(base)?))?;
        let (found, id) = first.part();
        let mut headers = vec![(first.version(), found, id)];
        let mut paths = vec![base.to_path_buf()];
        // A later part opened by its own name is read alone (its followers
        // would be named after the first part), and so is a version 1 file.
        let mut part = 1;
        while found == 0 && first.version() == VERSION {
            let path = part_path(base, part);
            match own_part(&path, part, id) {
                Ok(()) => {
                    headers.push((VERSION, part, id));
                    paths.push(path);
                    part += 1;
                }
                Err(None) => break,
                // Not a part of this recording (cut inside its header by a
                // recorder killed as it made it, or a file of any other
                // kind): the recording ends before it, unless the part
                // after it is one (then this one was lost or replaced).
                Err(Some(e)) => {
                    let next = part_path(base, part + 1);
                    if part < u32::MAX && own_part(&next, part + 1, id).is_ok() {
                        return Err(e);
                    }
                    break;
                }
            }
        }
        Ok(Self {
            paths,
            headers,
            current: Some(first),
            part: 0,
            buses: Vec::new(),
            yielded: 0,
            only_bus: None,
            from: None,
            to: None,
            inside: true,
            target: Target::None,
            pending: None,
            done: false,
        })
    }

    /// The parts' files, in order.
    ///
    /// # Examples
    /// ```
    /// use shmbus::record::{BusSpec, FileRecorder, RecordedKind, RecordingFiles, Rotation};
    ///
    /// let dir = std::env::temp_dir().join(format!("shmbus-doc-rfp-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("r.rec");
    /// let mut rec = FileRecorder::create(&path, Rotation::default())?;
    /// let bus = rec.add_bus(&BusSpec::new("ticks", RecordedKind::Bus, 8))?;
    /// for i in 0..3u64 {
    ///     rec.message(bus, i, 1_000 * (i + 1), 0, &i.to_le_bytes())?;
    /// }
    /// rec.flush()?;
    /// assert_eq!(RecordingFiles::open(&path)?.parts(), [path.clone()]);
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn parts(&self) -> &[PathBuf] {
        &self.paths
    }

    /// Yields only the messages and gaps of bus `bus` (its bus record and
    /// the others' still come, once each).
    ///
    /// # Examples
    /// ```
    /// use shmbus::record::{BusSpec, FileRecorder, RecordedKind, RecordingFiles, Rotation};
    ///
    /// let dir = std::env::temp_dir().join(format!("shmbus-doc-rfb-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("r.rec");
    /// let mut rec = FileRecorder::create(&path, Rotation::default())?;
    /// let bus = rec.add_bus(&BusSpec::new("ticks", RecordedKind::Bus, 8))?;
    /// for i in 0..3u64 {
    ///     rec.message(bus, i, 1_000 * (i + 1), 0, &i.to_le_bytes())?;
    /// }
    /// rec.flush()?;
    /// assert_eq!(RecordingFiles::open(&path)?.only_bus(1).count(), 1); // bus 0's record only
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn only_bus(mut self, bus: u32) -> Self {
        self.only_bus = Some(bus);
        self
    }

    /// Yields only messages received (CLOCK_MONOTONIC) from `from` to `to`
    /// inclusive, and the gaps among them.
    ///
    /// # Examples
    /// ```
    /// use shmbus::record::{BusSpec, FileRecorder, RecordedKind, RecordingFiles, Rotation};
    ///
    /// let dir = std::env::temp_dir().join(format!("shmbus-doc-rfw-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("r.rec");
    /// let mut rec = FileRecorder::create(&path, Rotation::default())?;
    /// let bus = rec.add_bus(&BusSpec::new("ticks", RecordedKind::Bus, 8))?;
    /// for i in 0..3u64 {
    ///     rec.message(bus, i, 1_000 * (i + 1), 0, &i.to_le_bytes())?;
    /// }
    /// rec.flush()?;
    /// let n = RecordingFiles::open(&path)?.between(Some(2_000), Some(3_000)).count();
    /// assert_eq!(n, 3); // the bus record, messages 1 and 2
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn between(mut self, from: Option<u64>, to: Option<u64>) -> Self {
        self.from = from;
        self.to = to;
        self.inside = from.is_none();
        self
    }

    /// Moves to the first message received at or after `mono_ns`
    /// (CLOCK_MONOTONIC): the next record yielded is that message (bus
    /// records not yet yielded come first). The index finds where to start
    /// reading; without a usable index this reads from the first part.
    ///
    /// # Examples
    /// ```
    /// use shmbus::record::{BusSpec, FileRecorder, RecordedKind, RecordingFiles, Rotation};
    ///
    /// let dir = std::env::temp_dir().join(format!("shmbus-doc-rft-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("r.rec");
    /// let mut rec = FileRecorder::create(&path, Rotation::default())?;
    /// let bus = rec.add_bus(&BusSpec::new("ticks", RecordedKind::Bus, 8))?;
    /// for i in 0..3u64 {
    ///     rec.message(bus, i, 1_000 * (i + 1), 0, &i.to_le_bytes())?;
    /// }
    /// rec.flush()?;
    /// let mut files = RecordingFiles::open(&path)?;
    /// files.seek_time(1_500)?;
    /// let next: Vec<_> = files.collect::<Result<_, _>>()?;
    /// assert!(matches!(&next[1], shmbus::record::Record::Message(m) if m.seq == 1));
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`ReadError::Io`] if a part cannot be read again.
    pub fn seek_time(&mut self, mono_ns: u64) -> Result<(), ReadError> {
        self.seek(Target::Time(mono_ns), |p| p.mono_below <= mono_ns)
    }

    /// Moves to the first message or gap of bus `bus` at or past sequence
    /// `seq` (a gap that covers it included), as
    /// [`seek_time`](Self::seek_time) does.
    ///
    /// # Examples
    /// ```
    /// use shmbus::record::{BusSpec, FileRecorder, RecordedKind, RecordingFiles, Rotation};
    ///
    /// let dir = std::env::temp_dir().join(format!("shmbus-doc-rfs-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("r.rec");
    /// let mut rec = FileRecorder::create(&path, Rotation::default())?;
    /// let bus = rec.add_bus(&BusSpec::new("ticks", RecordedKind::Bus, 8))?;
    /// for i in 0..3u64 {
    ///     rec.message(bus, i, 1_000 * (i + 1), 0, &i.to_le_bytes())?;
    /// }
    /// rec.flush()?;
    /// let mut files = RecordingFiles::open(&path)?;
    /// files.seek_seq(bus, 2)?;
    /// let next: Vec<_> = files.collect::<Result<_, _>>()?;
    /// assert!(matches!(&next[1], shmbus::record::Record::Message(m) if m.seq == 2));
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`ReadError::Io`] if a part cannot be read again.
    pub fn seek_seq(&mut self, bus: u32, seq: u64) -> Result<(), ReadError> {
        self.seek(Target::Seq(bus, seq), |p| {
            p.bus == bus && p.seq_below <= seq
        })
    }

    fn seek(
        &mut self,
        target: Target,
        before: impl Fn(&Position) -> bool,
    ) -> Result<(), ReadError> {
        self.target = target;
        self.pending = None;
        self.done = false;
        for part in (0..self.paths.len()).rev() {
            if let Some(()) = self.try_index(part, &before)? {
                return Ok(());
            }
        }
        self.start_part(0)
    }

    /// Starts reading part `part` at its index's last position that
    /// `before` allows, if its index is there, its own, and each record it
    /// points at checks.
    fn try_index(
        &mut self,
        part: usize,
        before: &impl Fn(&Position) -> bool,
    ) -> Result<Option<()>, ReadError> {
        let (version, number, id) = self.headers[part];
        if version == 1 {
            return Ok(None);
        }
        let Some(idx) = index::read(&index_path(&self.paths[part]), number, id) else {
            return Ok(None);
        };
        let Some(pos) = idx.positions.iter().rev().find(|p| before(p)).copied() else {
            return Ok(None);
        };
        // The buses declared before the position, each read where the
        // index says and checked.
        let mut buses: Vec<BusRecord> = Vec::new();
        let file = open_regular(&self.paths[part]).map_err(|e| self.in_part(part, e.into()))?;
        let mut file = BufReader::new(file);
        for &(bus, offset) in idx.buses.iter().filter(|b| b.1 < pos.offset) {
            if bus as usize != buses.len() {
                return Ok(None);
            }
            file.seek(SeekFrom::Start(offset))?;
            let mut one = Recording::resume(file, self.headers[part], offset, &buses);
            match one.next() {
                Some(Ok(Record::Bus(b))) if b.id == bus => buses.push(b),
                _ => return Ok(None),
            }
            file = one.into_input();
        }
        if !self.same_buses(&buses) {
            return Ok(None);
        }
        file.seek(SeekFrom::Start(pos.offset))?;
        let mut rec = Recording::resume(file, self.headers[part], pos.offset, &buses);
        // The record there must be whole and check, or the index is not
        // this file's.
        match rec.next() {
            Some(Ok(first)) if !matches!(first, Record::Bus(_)) => self.pending = Some(first),
            _ => return Ok(None),
        }
        for b in buses {
            if b.id as usize >= self.buses.len() {
                self.buses.push(b);
            }
        }
        self.current = Some(rec);
        self.part = part;
        Ok(Some(()))
    }

    /// Whether `buses` agree with those known so far.
    fn same_buses(&self, buses: &[BusRecord]) -> bool {
        buses.iter().zip(&self.buses).all(|(a, b)| a == b)
    }

    fn start_part(&mut self, part: usize) -> Result<(), ReadError> {
        let path = &self.paths[part];
        let file = open_regular(path).map_err(|e| self.in_part(part, e.into()))?;
        let rec = Recording::new(BufReader::with_capacity(READ_BUFFER, file)).map_err(|e| {
            self.in_part(
                part,
                match e {
                    OpenRecordingError::Io(e) => ReadError::Io(e),
                    e => ReadError::Io(io::Error::new(io::ErrorKind::InvalidData, e.to_string())),
                },
            )
        })?;
        self.current = Some(rec);
        self.part = part;
        Ok(())
    }

    /// `e`, met in part `part`, naming the part's file if it is not the
    /// first (whose name the caller gave).
    fn in_part(&self, part: usize, e: ReadError) -> ReadError {
        let path = &self.paths[part];
        match e {
            _ if part == 0 => e,
            ReadError::Io(e) => ReadError::Io(io_in(path, e)),
            e => ReadError::InPart {
                path: path.display().to_string(),
                source: Box::new(e),
            },
        }
    }

    /// A message record's payload back from a consumer done with it: the
    /// next message read reuses its allocation.
    pub(crate) fn recycle(&mut self, payload: Vec<u8>) {
        if let Some(rec) = self.current.as_mut() {
            rec.recycle(payload);
        }
    }

    fn next_raw(&mut self) -> Option<Result<Record, ReadError>> {
        if let Some(r) = self.pending.take() {
            return Some(Ok(r));
        }
        loop {
            let rec = self.current.as_mut()?;
            match rec.next() {
                Some(Ok(Record::Bus(b))) => {
                    let offset = rec.offset();
                    match self.buses.get(b.id as usize) {
                        Some(known) if *known == b => continue,
                        Some(_) => {
                            let e = ReadError::PartBus {
                                part: self.part as u32,
                                offset,
                                bus: b.id,
                            };
                            return Some(Err(self.in_part(self.part, e)));
                        }
                        None => {
                            self.buses.push(b.clone());
                            return Some(Ok(Record::Bus(b)));
                        }
                    }
                }
                Some(Ok(other)) => return Some(Ok(other)),
                Some(Err(e)) => return Some(Err(self.in_part(self.part, e))),
                None => {
                    if self.part + 1 >= self.paths.len() {
                        return None;
                    }
                    if let Err(e) = self.start_part(self.part + 1) {
                        return Some(Err(e));
                    }
                }
            }
        }
    }

    /// Whether `record` passes the seek target (which is then cleared) and
    /// the filters.
    fn passes(&mut self, record: &Record) -> bool {
        match (self.target, record) {
            (Target::None, _) => {}
            (Target::Time(t), Record::Message(m)) if m.mono_ns >= t => self.target = Target::None,
            (Target::Seq(bus, s), Record::Message(m)) if m.bus == bus && m.seq >= s => {
                self.target = Target::None
            }
            (Target::Seq(bus, s), Record::Gap(g))
                if g.bus == bus && g.first.saturating_add(g.count) > s =>
            {
                self.target = Target::None
            }
            _ => return false,
        }
        let bus = match record {
            Record::Message(m) => {
                let after = self.from.is_none_or(|f| m.mono_ns >= f);
                let before = self.to.is_none_or(|t| m.mono_ns <= t);
                self.inside = after && before;
                m.bus
            }
            Record::Gap(g) => g.bus,
            _ => return true,
        };
        self.inside && self.only_bus.is_none_or(|b| b == bus)
    }
}

impl Iterator for RecordingFiles {
    type Item = Result<Record, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        // Bus records a seek passed over (or read from the index) come
        // first, once each.
        if self.yielded < self.buses.len() {
            self.yielded += 1;
            return Some(Ok(Record::Bus(self.buses[self.yielded - 1].clone())));
        }
        loop {
            match self.next_raw() {
                None => {
                    self.done = true;
                    return None;
                }
                Some(Err(e)) => {
                    self.done = true;
                    return Some(Err(e));
                }
                Some(Ok(Record::Bus(b))) => {
                    self.yielded = self.buses.len();
                    return Some(Ok(Record::Bus(b)));
                }
                Some(Ok(record)) => {
                    if self.passes(&record) {
                        return Some(Ok(record));
                    }
                }
            }
        }
    }
}
