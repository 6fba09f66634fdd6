//! [`Capture`]: the recorder handle: subscribes to buses of any kind and
//! writes what crosses them to a [`FileRecorder`] or another [`Sink`].

use std::os::unix::fs::MetadataExt;
use std::time::Duration;

use super::error::{AddBusError, WriteError};
use super::files::FileRecorder;
use super::format::MAX_MESSAGE;
use super::sink::Sink;
use super::{BusSpec, RecordedKind};
use crate::error::ErrorKind;
use crate::pool;
use crate::select::{Select, Selectable};
use crate::stream::{Consumer, PopError};
use crate::{AttachError, OpenError, OpenOptions, Received, SegmentKind, Start, Subscriber, Wait};

/// Why a [`Capture`] failed.
///
/// # Examples
/// ```
/// use shmbus::record::{Capture, CaptureError, FileRecorder, Rotation};
///
/// let dir = std::env::temp_dir().join(format!("shmbus-doc-capture-err-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let out = FileRecorder::create(&dir.join("r.rec"), Rotation::default())?;
/// let mut capture = Capture::new(out);
/// let err = capture.add("shmbus-doc-no-such-bus", false).unwrap_err();
/// assert!(matches!(err, CaptureError::Open { .. }));
/// std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CaptureError {
    /// The bus could not be opened (or subscribed to).
    #[error("{name}: {source}")]
    Open {
        /// The bus.
        name: String,
        /// Why.
        source: OpenError,
    },
    /// The stream's consumer could not be taken (another holds it, and
    /// what else attaching reports).
    #[error("{name}: {source}")]
    Attach {
        /// The stream.
        name: String,
        /// Why.
        source: AttachError,
    },
    /// The bus is one already added, under another name or the same (the
    /// same file: device and inode).
    #[error("{name}: the same bus as {first}, already recorded")]
    SameBus {
        /// The name given.
        name: String,
        /// The name it was added under first.
        first: String,
    },
    /// The bus record could not be written.
    #[error("{name}: {source}")]
    AddBus {
        /// The bus.
        name: String,
        /// Why.
        source: AddBusError,
    },
    /// Writing the recording failed.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// A pool bus refused a receive.
    #[error("{name}: {source}")]
    Pool {
        /// The bus.
        name: String,
        /// Why.
        source: pool::RecvError,
    },
    /// A stream failed (its cursors corrupt, and what else it reports).
    #[error("{name}: {source}")]
    Stream {
        /// The stream.
        name: String,
        /// Why.
        source: PopError,
    },
}

impl CaptureError {
    /// The kind of the error it wraps ([`ErrorKind::InvalidArgument`] for
    /// a bus added twice).
    ///
    /// # Examples
    /// ```
    /// use shmbus::{ErrorKind, record::{CaptureError, WriteError}};
    ///
    /// let e = CaptureError::Write(WriteError::EmptyGap { bus: 0 });
    /// assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            CaptureError::Open { source, .. } => source.kind(),
            CaptureError::SameBus { .. } => ErrorKind::InvalidArgument,
            CaptureError::Attach { source, .. } => source.kind(),
            CaptureError::AddBus { source, .. } => source.kind(),
            CaptureError::Write(e) => e.kind(),
            CaptureError::Pool { source, .. } => source.kind(),
            CaptureError::Stream { source, .. } => source.kind(),
        }
    }
}

/// What a [`Capture`] has written so far.
///
/// # Examples
/// ```
/// assert_eq!(shmbus::record::CaptureStats::default().messages, 0);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CaptureStats {
    /// Messages recorded.
    pub messages: u64,
    /// Their payload bytes.
    pub bytes: u64,
    /// Messages missed (the gap records' counts added).
    pub lost: u64,
}

#[derive(Debug)]
enum Source {
    Bus(Subscriber<[u8]>),
    Pool(pool::Subscriber<[u8]>),
    /// A stream, and the records taken from it so far (its sequence).
    Stream(Consumer<[u8]>, u64),
}

/// Records buses of any kind into a [`FileRecorder`] (or any other
/// [`Sink`]: `S`, a native recording by default): each added bus is
/// subscribed to from its next message (a stream: its consumer is taken,
/// from where the last consumer stopped), and each [`poll`](Self::poll)
/// writes what arrived, with its receive time (CLOCK_MONOTONIC and the
/// wall clock, read once per batch taken, after any wait), and each lag
/// report as a gap. Lossy by default, so it never slows a publisher;
/// lossless by choice where the bus takes lossless subscribers. A stream
/// is always lossless: its one consumer is the recorder, which gives a
/// record's bytes back to the stream only once the record is in the file
/// ([`flush`](Self::flush), and before it waits or holds half the ring),
/// so a recorder that dies leaves what it had not written to the next
/// consumer.
///
/// # Examples
/// ```
/// use shmbus::record::{Capture, FileRecorder, Record, RecordingFiles, Rotation};
/// use shmbus::{BusOptions, Publisher, Wait};
/// use std::time::Duration;
///
/// let name = format!("shmbus-doc-capture-{}", std::process::id());
/// let mut publisher = Publisher::<u64>::create(&name, &BusOptions::new(64))?;
/// let dir = std::env::temp_dir().join(&name);
/// std::fs::create_dir_all(&dir)?;
/// let mut capture = Capture::new(FileRecorder::create(&dir.join("r.rec"), Rotation::default())?);
/// capture.add(&name, false)?;
/// publisher.publish(&7);
/// while capture.stats().messages < 1 {
///     capture.poll(Wait::For(Duration::from_millis(50)))?;
/// }
/// capture.flush()?;
/// let records: Vec<Record> = RecordingFiles::open(&dir.join("r.rec"))?.collect::<Result<_, _>>()?;
/// assert!(matches!(&records[1], Record::Message(m) if m.payload == 7u64.to_le_bytes()));
/// shmbus::remove(&name)?;
/// std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Capture<S: Sink = FileRecorder> {
    out: S,
    /// Each source, its bus id and name.
    sources: Vec<(Source, u32, String)>,
    stats: CaptureStats,
    /// What each source has written, in the order of `sources`.
    per_bus: Vec<CaptureStats>,
    /// Each source's file (device, inode): a bus is added once.
    files: Vec<(u64, u64)>,
    /// The one sleep over every source while all are idle.
    select: Select,
}

impl<S: Sink> Capture<S> {
    /// A capture writing to `out`, with no bus yet.
    ///
    /// # Examples
    /// ```
    /// use shmbus::record::{Capture, FileRecorder, Rotation};
    ///
    /// let dir = std::env::temp_dir().join(format!("shmbus-doc-cpn-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let capture = Capture::new(FileRecorder::create(&dir.join("r.rec"), Rotation::default())?);
    /// assert_eq!(capture.stats().messages, 0);
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(out: S) -> Self {
        Self {
            out,
            sources: Vec::new(),
            stats: CaptureStats::default(),
            per_bus: Vec::new(),
            files: Vec::new(),
            select: Select::new(),
        }
    }

    /// Subscribes to the bus `name`, of whatever kind it is, and declares
    /// it (kind, geometry, message type, `lossless`) in the recording;
    /// its id.
    ///
    /// # Examples
    /// ```
    /// use shmbus::record::{Capture, FileRecorder, Rotation};
    /// use shmbus::{BusOptions, Publisher, Wait};
    ///
    /// let name = format!("shmbus-doc-cpa-{}", std::process::id());
    /// let mut publisher = Publisher::<u64>::create(&name, &BusOptions::new(64))?;
    /// let dir = std::env::temp_dir().join(&name);
    /// std::fs::create_dir_all(&dir)?;
    /// let mut capture = Capture::new(FileRecorder::create(&dir.join("r.rec"), Rotation::default())?);
    /// assert_eq!(capture.add(&name, false)?, 0);
    /// shmbus::remove(&name)?;
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`CaptureError::Open`] if the bus cannot be opened or subscribed to
    /// (a lossless subscriber refused included), [`CaptureError::SameBus`]
    /// if it is a bus already added (by any name), [`CaptureError::AddBus`]
    /// if its bus record cannot be written.
    pub fn add(&mut self, name: &str, lossless: bool) -> Result<u32, CaptureError> {
        let open = |source| CaptureError::Open {
            name: name.to_owned(),
            source,
        };
        let stat = crate::stat::stat(name).map_err(open)?;
        let file = std::fs::symlink_metadata(&stat.path)
            .map(|m| (m.dev(), m.ino()))
            .map_err(|source| {
                open(OpenError::Io {
                    what: "stat",
                    source,
                })
            })?;
        if let Some(i) = self.files.iter().position(|&f| f == file) {
            return Err(CaptureError::SameBus {
                name: name.to_owned(),
                first: self.sources[i].2.clone(),
            });
        }
        let h = stat.raw_header();
        let opts = OpenOptions::default().start(Start::Next).lossless(lossless);
        let cap = |n: u64| u32::try_from(n.min(MAX_MESSAGE as u64)).unwrap_or(u32::MAX);
        let (source, spec) = if stat.kind == SegmentKind::Stream {
            let consumer =
                Consumer::<[u8]>::attach(name, &OpenOptions::default()).map_err(|source| {
                    CaptureError::Attach {
                        name: name.to_owned(),
                        source,
                    }
                })?;
            let spec = BusSpec::new(name, RecordedKind::Stream, cap(h.capacity))
                .slots(h.capacity)
                .msg_type(h.msg.clone())
                .lossless(true);
            (Source::Stream(consumer, 0), spec)
        } else if stat.kind.is_pool() {
            let sub = pool::Subscriber::<[u8]>::open(name, &opts).map_err(open)?;
            let (blocks, block) = h.pool.as_ref().map_or((0, 0), |p| (p.blocks, p.block_size));
            let spec = BusSpec::new(name, RecordedKind::Pool, cap(block))
                .slots(h.capacity)
                .blocks(blocks)
                .msg_type(h.block_msg.clone().unwrap_or_else(|| h.msg.clone()))
                .lossless(lossless);
            (Source::Pool(sub), spec)
        } else {
            // Another kind (a blackboard) is refused by the open below.
            let kind = RecordedKind::of(stat.kind).unwrap_or(RecordedKind::Bus);
            let sub = Subscriber::<[u8]>::open(name, &opts).map_err(open)?;
            let size = u32::try_from(sub.msg_size()).unwrap_or(u32::MAX);
            let spec = BusSpec::new(name, kind, size)
                .slots(h.capacity)
                .msg_type(h.msg.clone())
                .lossless(lossless);
            (Source::Bus(sub), spec)
        };
        let id = self
            .out
            .add_bus(&spec)
            .map_err(|source| CaptureError::AddBus {
                name: name.to_owned(),
                source,
            })?;
        self.sources.push((source, id, name.to_owned()));
        self.per_bus.push(CaptureStats::default());
        self.files.push(file);
        Ok(id)
    }

    /// Writes what has arrived on each bus: with one bus, waits up to
    /// `wait` for its next message; with several, takes what each has now
    /// and, if none had anything, sleeps up to `wait` until any has
    /// something (one `futex_waitv` over all, `shmbus::select`) and takes
    /// that. Returns the records written (0: idle).
    ///
    /// # Examples
    /// ```
    /// use shmbus::record::{Capture, FileRecorder, Rotation};
    /// use shmbus::{BusOptions, Publisher, Wait};
    ///
    /// let name = format!("shmbus-doc-cpp-{}", std::process::id());
    /// let mut publisher = Publisher::<u64>::create(&name, &BusOptions::new(64))?;
    /// let dir = std::env::temp_dir().join(&name);
    /// std::fs::create_dir_all(&dir)?;
    /// let mut capture = Capture::new(FileRecorder::create(&dir.join("r.rec"), Rotation::default())?);
    /// capture.add(&name, false)?;
    /// publisher.publish(&7);
    /// while capture.poll(Wait::For(std::time::Duration::from_millis(50)))? == 0 {}
    /// assert_eq!(capture.stats().messages, 1);
    /// shmbus::remove(&name)?;
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`CaptureError::Write`] if the recording cannot be written, and the
    /// pool's and stream's receive errors.
    pub fn poll(&mut self, wait: Wait) -> Result<usize, CaptureError> {
        let mut written = 0;
        let several = self.sources.len() > 1;
        for i in 0..self.sources.len() {
            let w = if several { Wait::Never } else { wait };
            written += self.take(i, w)?;
        }
        if written == 0 && several {
            // A stream's producer may be waiting for the bytes held.
            self.give_back()?;
            let ready = {
                let members: Vec<&dyn Selectable> = self
                    .sources
                    .iter()
                    .map(|(source, ..)| match source {
                        Source::Bus(s) => s as &dyn Selectable,
                        Source::Pool(s) => s as &dyn Selectable,
                        Source::Stream(c, _) => c as &dyn Selectable,
                    })
                    .collect();
                self.select.ready(&members, wait)
            };
            if let Some(i) = ready {
                written += self.take(i, Wait::Never)?;
            }
        }
        Ok(written)
    }

    /// Up to 256 records of source `i`, the first waited for up to `wait`.
    fn take(&mut self, i: usize, mut wait: Wait) -> Result<usize, CaptureError> {
        let mut n = 0;
        // When this batch was received: read once its first message is in
        // hand (after any wait); the rest were on the ring by then, or came
        // while the batch was written.
        let mut stamp = None;
        while n < 256 {
            let (source, bus, name) = &mut self.sources[i];
            let bus = *bus;
            let got = match source {
                Source::Bus(sub) => {
                    let seq = sub.position();
                    match sub.recv(wait) {
                        Some(Received::Message(msg)) => {
                            let (mono, wall) = *stamp.get_or_insert_with(now);
                            self.out.message(bus, seq, mono, wall, msg)?;
                            Some(Ok(msg.len()))
                        }
                        Some(Received::Lagged { skipped }) => Some(Err((seq, skipped))),
                        None => None,
                    }
                }
                Source::Pool(sub) => {
                    let seq = sub.position();
                    let got = sub.recv(wait).map_err(|source| CaptureError::Pool {
                        name: name.clone(),
                        source,
                    })?;
                    match got {
                        Some(Received::Message(sample)) => {
                            let (mono, wall) = *stamp.get_or_insert_with(now);
                            self.out.message(bus, seq, mono, wall, &sample)?;
                            Some(Ok(sample.len()))
                        }
                        Some(Received::Lagged { skipped }) => Some(Err((seq, skipped))),
                        None => None,
                    }
                }
                Source::Stream(consumer, seq) => {
                    // The bytes held go back once in the file: before a
                    // wait for more (the producer may be waiting for
                    // them) and before they fill half the ring; not before
                    // each batch, which would be a write per batch.
                    let held = consumer.held_bytes();
                    let waits = !matches!(wait, Wait::Never) && consumer.is_empty();
                    if held > 0 && (waits || held >= consumer.ring_bytes() / 2) {
                        self.out.flush()?;
                        consumer.give_back();
                    }
                    match consumer.peek(wait) {
                        Ok(record) => {
                            let (mono, wall) = *stamp.get_or_insert_with(now);
                            // Written (to the buffer) before it is taken: a
                            // failed write leaves it the next record.
                            self.out.message(bus, *seq, mono, wall, &record)?;
                            let len = record.len();
                            record.take();
                            *seq += 1;
                            Some(Ok(len))
                        }
                        Err(PopError::Empty | PopError::TimedOut(_)) => None,
                        // No producer now: idle until one comes back, without
                        // spinning on the answer.
                        Err(PopError::PeerGone { .. }) => {
                            if let Wait::For(d) = wait {
                                std::thread::sleep(d.min(Duration::from_millis(10)));
                            }
                            None
                        }
                        Err(source) => {
                            return Err(CaptureError::Stream {
                                name: name.clone(),
                                source,
                            });
                        }
                    }
                }
            };
            match got {
                None => break,
                Some(Ok(len)) => {
                    for s in [&mut self.stats, &mut self.per_bus[i]] {
                        s.messages += 1;
                        s.bytes += len as u64;
                    }
                }
                Some(Err((first, skipped))) => {
                    self.out.gap(bus, first, skipped)?;
                    for s in [&mut self.stats, &mut self.per_bus[i]] {
                        s.lost = s.lost.saturating_add(skipped);
                    }
                }
            }
            n += 1;
            wait = Wait::Never;
        }
        Ok(n)
    }

    /// Flushes the recording, then gives each stream back the bytes of
    /// the records now in the file.
    fn give_back(&mut self) -> Result<(), WriteError> {
        let held = |(source, ..): &(Source, u32, String)| match source {
            Source::Stream(consumer, _) => consumer.held_bytes() > 0,
            _ => false,
        };
        if !self.sources.iter().any(held) {
            return Ok(());
        }
        self.flush()
    }

    /// What has been written so far.
    ///
    /// # Examples
    /// ```
    /// use shmbus::record::{Capture, FileRecorder, Rotation};
    /// use shmbus::{BusOptions, Publisher, Wait};
    ///
    /// let name = format!("shmbus-doc-cps-{}", std::process::id());
    /// let mut publisher = Publisher::<u64>::create(&name, &BusOptions::new(64))?;
    /// let dir = std::env::temp_dir().join(&name);
    /// std::fs::create_dir_all(&dir)?;
    /// let mut capture = Capture::new(FileRecorder::create(&dir.join("r.rec"), Rotation::default())?);
    /// capture.add(&name, false)?;
    /// publisher.publish(&7);
    /// while capture.poll(Wait::For(std::time::Duration::from_millis(50)))? == 0 {}
    /// assert_eq!((capture.stats().messages, capture.stats().bytes), (1, 8));
    /// shmbus::remove(&name)?;
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stats(&self) -> CaptureStats {
        self.stats
    }

    /// What has been written of the bus `id` (as [`add`](Self::add)
    /// returned it), or `None` for an id this capture never gave.
    ///
    /// # Examples
    /// ```
    /// use shmbus::record::{Capture, FileRecorder, Rotation};
    /// use shmbus::{BusOptions, Publisher, Wait};
    ///
    /// let name = format!("shmbus-doc-cpb-{}", std::process::id());
    /// let mut publisher = Publisher::<u64>::create(&name, &BusOptions::new(64))?;
    /// let dir = std::env::temp_dir().join(&name);
    /// std::fs::create_dir_all(&dir)?;
    /// let mut capture = Capture::new(FileRecorder::create(&dir.join("r.rec"), Rotation::default())?);
    /// let id = capture.add(&name, false)?;
    /// publisher.publish(&7);
    /// while capture.poll(Wait::For(std::time::Duration::from_millis(50)))? == 0 {}
    /// assert_eq!(capture.bus_stats(id).map(|s| s.messages), Some(1));
    /// assert_eq!(capture.bus_stats(id + 1), None);
    /// shmbus::remove(&name)?;
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn bus_stats(&self, id: u32) -> Option<CaptureStats> {
        let i = self.sources.iter().position(|(_, bus, _)| *bus == id)?;
        Some(self.per_bus[i])
    }

    /// Flushes the recording and its index (see [`FileRecorder::flush`];
    /// another sink: its [`Sink::flush`]),
    /// then gives each stream back the bytes of the records written: until
    /// then they stay in the stream, and a consumer after this one (a
    /// recorder killed before its flush) reads them again.
    ///
    /// # Examples
    /// ```
    /// use shmbus::record::{Capture, FileRecorder, Rotation};
    /// use shmbus::{BusOptions, Publisher, Wait};
    ///
    /// let name = format!("shmbus-doc-cpf-{}", std::process::id());
    /// let mut publisher = Publisher::<u64>::create(&name, &BusOptions::new(64))?;
    /// let dir = std::env::temp_dir().join(&name);
    /// std::fs::create_dir_all(&dir)?;
    /// let mut capture = Capture::new(FileRecorder::create(&dir.join("r.rec"), Rotation::default())?);
    /// capture.add(&name, false)?;
    /// publisher.publish(&7);
    /// while capture.poll(Wait::For(std::time::Duration::from_millis(50)))? == 0 {}
    /// capture.flush()?;
    /// assert_eq!(capture.into_inner().parts(), 1);
    /// shmbus::remove(&name)?;
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`WriteError::File`] naming the file if a write fails.
    pub fn flush(&mut self) -> Result<(), WriteError> {
        self.out.flush()?;
        for (source, ..) in &mut self.sources {
            if let Source::Stream(consumer, _) = source {
                consumer.give_back();
            }
        }
        Ok(())
    }

    /// The recorder, given back (a stream's records written since the last
    /// [`flush`](Self::flush) stay in the stream: flush first).
    ///
    /// # Examples
    /// ```
    /// use shmbus::record::{Capture, FileRecorder, Rotation};
    /// use shmbus::{BusOptions, Publisher, Wait};
    ///
    /// let name = format!("shmbus-doc-cpi-{}", std::process::id());
    /// let mut publisher = Publisher::<u64>::create(&name, &BusOptions::new(64))?;
    /// let dir = std::env::temp_dir().join(&name);
    /// std::fs::create_dir_all(&dir)?;
    /// let mut capture = Capture::new(FileRecorder::create(&dir.join("r.rec"), Rotation::default())?);
    /// let recorder: FileRecorder = capture.into_inner();
    /// assert_eq!(recorder.parts(), 1);
    /// shmbus::remove(&name)?;
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn into_inner(self) -> S {
        self.out
    }
}

/// Now, as a message's receive time: CLOCK_MONOTONIC (the fine one, not
/// the coarse clock of "last active" times) and the wall clock, in ns.
fn now() -> (u64, u64) {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    let mono = (t.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(t.tv_nsec as u64);
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    (mono, wall)
}
