//! The joining subscriber: journal first, ring after, one ordered stream.
//! See the module docs of `journal` for the handshake and why the hand-over
//! is at the end of the file.

use crate::bus::activity::Activity;
use std::marker::PhantomData;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::wire::Message;

use super::error::{JoinError, OpenError, SeekError};
use super::format;
use super::options::JoinOptions;
use super::reader::{Reader, SnapshotFault};
use crate::bus::Cursor;
use crate::bus::ring::{Poll, Ring};
use crate::bus::{Payload, Received};
use crate::mem::{Region, ShmRegion};
use crate::segment::{self, Role};
use crate::sync::Ordering;
use crate::wait::{self, Wait};
use crate::wire::TypeFingerprint;
use crate::wire::{control, lock_byte};

/// One message of a journaled subscriber's stream, with its sequence.
///
/// # Examples
/// ```
/// use shmbus::{BusOptions, journal::{self, Entry, JoinOptions}};
/// use shmbus::{Received, Wait};
/// # let dir = std::env::temp_dir().join(format!("shmbus-doc-entry-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// # let name = format!("/dev/shm/shmbus-doc-entry-{}", std::process::id());
/// let mut publisher = journal::Publisher::<u64>::create(
///     &name,
///     &BusOptions::new(64),
///     &journal::Options::new(dir.join("ticks.journal")),
/// )?;
/// publisher.publish(&10)?;
/// publisher.publish(&11)?;
/// let mut late = journal::Subscriber::<u64>::join(&name, &JoinOptions::default())?;
/// assert_eq!(late.recv(Wait::Never), Some(Received::Message(Entry { seq: 0, msg: 10 })));
/// if let Some(Received::Message(Entry { seq, msg })) = late.recv(Wait::Never) {
///     assert_eq!((seq, msg), (1, 11));
/// }
/// # drop(late); publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry<T> {
    /// Its sequence number. From a compacted journal's snapshot, sequences
    /// increase but skip (each is the last update of its key); from the
    /// snapshot's end on, every sequence comes once, in order.
    pub seq: u64,
    /// The message.
    pub msg: T,
}

fn ahead(a: u64, b: u64) -> i64 {
    a.wrapping_sub(b) as i64
}

/// What one step found.
enum Step {
    Entry(u64),
    Lagged(u64),
    Empty,
}

/// Steps 2 and 3 of the handshake: raise a flush request and wait until
/// the publisher has served it.
fn flush_handshake(
    ring: &Ring<ShmRegion>,
    timeout: Duration,
    alive: impl Fn(&ShmRegion) -> bool,
    go_on: &mut dyn FnMut() -> bool,
) -> Result<(), JoinError> {
    let ctl = ring.control_field(0);
    let region = ring.region();
    let req = region.word32(ctl + control::FLUSH_REQUEST);
    let done = region.word32(ctl + control::FLUSH_DONE);
    // AcqRel, paired with the flusher's Acquire load of the request: the
    // request is a read-modify-write that no other joiner's can hide.
    let token = req.fetch_add(1, Ordering::AcqRel).wrapping_add(1);
    wait::futex_wake_all(req);
    let start = Instant::now();
    loop {
        // Acquire, paired with the flusher's Release store.
        let d = done.load(Ordering::Acquire);
        if (d.wrapping_sub(token) as i32) >= 0 {
            break;
        }
        if !alive(region) {
            let pid_at = ctl + control::PUBLISHER_PID;
            return Err(JoinError::PublisherGone {
                pid: region.word32(pid_at).load(Ordering::Relaxed),
            });
        }
        let waited = start.elapsed();
        if waited >= timeout {
            return Err(JoinError::FlushTimeout { waited });
        }
        // Asked between waits of at most 10 ms, so a caller that must answer
        // Ctrl-C (the Python binding) can end the join within its slice.
        if !go_on() {
            return Err(JoinError::Cancelled);
        }
        let left = timeout - waited;
        wait::futex_wait(done, d, Some(left.min(Duration::from_millis(10))));
    }
    let failed = region.word32(ctl + control::FLUSH_FAILED);
    if failed.load(Ordering::Relaxed) == token {
        return Err(JoinError::FlushFailed);
    }
    Ok(())
}

/// The byte-level joining subscriber both typed and raw ones wrap.
struct Core {
    ring: Ring<ShmRegion>,
    /// Its wait strategy and registry line; its `pos` is where the last
    /// ring step began and ended (set to `next` before each).
    cursor: Cursor,
    path: PathBuf,
    msg_size: u32,
    type_hash: u64,
    /// The next contiguous sequence to deliver.
    next: u64,
    reader: Option<Reader>,
    /// Reading the journal the first time: its snapshot is the state, not a
    /// lag.
    initial: bool,
    /// Snapshot records delivered during a repair that met a compaction.
    folded: u64,
    /// Where the last repair started; if the journal gave nothing from
    /// there, the ring's lag is reported as it is.
    repair_at: Option<u64>,
    buf: Vec<u8>,
}

impl Core {
    fn join(
        name: &str,
        msg: Option<&TypeFingerprint>,
        opts: &JoinOptions,
        go_on: &mut dyn FnMut() -> bool,
    ) -> Result<Core, JoinError> {
        let (region, header) = segment::open_checked(
            name,
            Role::Subscriber,
            crate::wire::Kind::Broadcast,
            msg,
            &opts.open,
        )?;
        let Some(path) = header.journal.clone() else {
            return Err(JoinError::NotJournaled {
                name: name.to_owned(),
            });
        };
        let ring = Ring::new(region, &header);
        let mut activity = if opts.open.register {
            crate::bus::segment::register(&ring, 0)
        } else {
            Activity::none()
        };
        // 1 needs no head of the ring: the hand-over is at the end of the
        // file (see the module docs).
        // 2 and 3. With no live publisher nothing is appending: the file's
        // valid prefix is the whole history, and no flush is needed.
        let alive = |region: &ShmRegion| {
            crate::sys::lock::is_held(region.file(), lock_byte::PUBLISHER).unwrap_or(true)
        };
        if alive(ring.region()) {
            flush_handshake(&ring, opts.flush_timeout, alive, go_on)?;
        }
        // 4. The journal, from its start.
        let reader = Reader::open(&path, header.msg.size, header.msg.name_hash)?;
        // Registered above, before the flush, at a position not yet known.
        activity.reset(ring.region(), reader.header.base);
        let mut cursor = Cursor::new(reader.header.base, opts.open.wait);
        cursor.activity = activity;
        Ok(Core {
            cursor,
            next: reader.header.base,
            msg_size: header.msg.size,
            type_hash: header.msg.name_hash,
            buf: vec![0; header.msg.size as usize],
            ring,
            path,
            reader: Some(reader),
            initial: true,
            folded: 0,
            repair_at: None,
        })
    }

    /// A reader of the journal positioned at `seq`: the current file, or,
    /// if the last compaction folded `seq` into its snapshot, the generation
    /// it replaced (`PATH.prev`, which ends sealed and leads back to the
    /// current file). Only a lag across two compactions finds neither.
    fn reader_at(&self, seq: u64) -> Result<Reader, OpenError> {
        let mut r = Reader::open(&self.path, self.msg_size, self.type_hash)?;
        if ahead(seq, r.header.base) < 0 {
            let prev = super::compaction::prev_path(&self.path);
            if let Ok(mut p) = Reader::open(&prev, self.msg_size, self.type_hash) {
                // Only if it has `seq`: a stale `.prev` (a failed link)
                // would end before it and lead back here.
                if ahead(seq, p.header.base) >= 0 {
                    p.seek(seq);
                    if p.has_next() {
                        return Ok(p);
                    }
                }
            }
        }
        r.seek(seq);
        Ok(r)
    }

    /// Positions the stream at `seq`: what follows is exactly what a
    /// subscriber joined now would deliver from `seq` on (see
    /// [`Subscriber::seek`]). A direct offset in the contiguous part
    /// (records are fixed-size, record `snapshot + j` is `base + j`), a
    /// bisection in the snapshot: never a scan.
    fn seek(&mut self, seq: u64) -> Result<(), SeekError> {
        let head = self.ring.head();
        if ahead(seq, head) > 0 {
            return Err(SeekError::Ahead { seq, head });
        }
        let mut r = Reader::open(&self.path, self.msg_size, self.type_hash)?;
        let base = r.header.base;
        let read_error = |e| SeekError::Journal(OpenError::io(&self.path, "read", e));
        // A file always has room for its snapshot (a compaction writes it
        // first); a count past that is a damaged header, and would put the
        // contiguous part past any offset.
        let held = r.held().map_err(read_error)?;
        if r.header.snapshot > held {
            return Err(SeekError::Oversized {
                path: self.path.clone(),
                snapshot: r.header.snapshot,
                held,
            });
        }
        let next = if ahead(seq, base) >= 0 {
            r.seek(seq);
            seq
        } else {
            let index = r.snapshot_lower_bound(seq).map_err(|f| match f {
                SnapshotFault::Io(e) => read_error(e),
                SnapshotFault::Record { index, end } => SeekError::Corrupt {
                    path: self.path.clone(),
                    index,
                    found: match end {
                        format::End::Short => "cut short (the file ends inside it)".into(),
                        format::End::Check => "torn or zeroed (its check does not match)".into(),
                        format::End::Sequence { found, .. } => {
                            format!("a record of sequence {found}")
                        }
                    },
                    base,
                },
            })?;
            r.seek_index(index);
            // As at the join: the snapshot's records come as entries (the
            // state below base), the contiguous part from base.
            base
        };
        self.reader = Some(r);
        self.next = next;
        self.initial = true;
        self.folded = 0;
        self.repair_at = None;
        self.cursor.activity.reset(self.ring.region(), next);
        Ok(())
    }

    /// One step (see `next_step`), noted on this subscriber's line: its
    /// position is `next`, whether the step came from the journal or the
    /// ring.
    fn step(&mut self, block: bool, deadline: Option<Instant>) -> Step {
        let step = self.next_step(block, deadline);
        let region = self.ring.region();
        match step {
            Step::Entry(_) => self.cursor.activity.delivered(region, self.next),
            Step::Lagged(skipped) => self.cursor.activity.lagged(region, self.next, skipped),
            Step::Empty => self.cursor.activity.idle(region),
        }
        step
    }

    /// One step: from the journal while there is one to read, else from the
    /// ring; blocking on the ring until `deadline` if `block`.
    fn next_step(&mut self, block: bool, deadline: Option<Instant>) -> Step {
        loop {
            if self.reader.is_some() {
                match self.step_journal() {
                    Some(step) => return step,
                    None => continue,
                }
            }
            // From `next`, the stream's place: a lag found on the ring may
            // be repaired from the journal rather than taken.
            self.cursor.pos = self.next;
            let found = if block {
                self.ring
                    .poll_wait(&mut self.cursor, &mut self.buf, deadline)
            } else {
                self.ring.poll(&mut self.cursor, &mut self.buf)
            };
            let pos = self.cursor.pos;
            match found {
                Poll::Message => {
                    self.next = pos;
                    self.repair_at = None;
                    return Step::Entry(pos.wrapping_sub(1));
                }
                Poll::Empty => return Step::Empty,
                Poll::Lagged(skipped) | Poll::Lapped(skipped) => {
                    if self.repair_at == Some(self.next) {
                        // The journal had nothing more: a true loss.
                        self.next = pos;
                        self.repair_at = None;
                        return Step::Lagged(skipped);
                    }
                    self.repair_at = Some(self.next);
                    match self.reader_at(self.next) {
                        Ok(r) => {
                            self.reader = Some(r);
                            self.folded = 0;
                        }
                        Err(_) => {
                            self.next = pos;
                            return Step::Lagged(skipped);
                        }
                    }
                }
            }
        }
    }

    /// One record from the journal; `None` when the reader was replaced or
    /// dropped (the caller loops).
    fn step_journal(&mut self) -> Option<Step> {
        let r = self.reader.as_mut().expect("reading the journal");
        let base = r.header.base;
        match r.next() {
            Ok(Some((seq, snapshot, payload))) => {
                let msg = self.msg_size as usize;
                if snapshot {
                    // Snapshot record: the last update of its key below base.
                    if !self.initial && ahead(seq, self.next) < 0 {
                        return None;
                    }
                    self.buf.copy_from_slice(&payload[..msg]);
                    if !self.initial {
                        self.folded += 1;
                    }
                    self.repair_at = None;
                    return Some(Step::Entry(seq));
                }
                if ahead(seq, self.next) < 0 {
                    return None;
                }
                if seq != self.next {
                    // Past a compacted interval [next, seq): what the
                    // snapshot did not stand in for is reported as lost.
                    let skipped = seq.wrapping_sub(self.next).saturating_sub(self.folded);
                    self.next = seq;
                    self.folded = 0;
                    if !self.initial && skipped > 0 {
                        r.index -= 1;
                        return Some(Step::Lagged(skipped));
                    }
                }
                self.buf.copy_from_slice(&payload[..msg]);
                self.next = seq.wrapping_add(1);
                self.initial = false;
                self.folded = 0;
                self.repair_at = None;
                Some(Step::Entry(seq))
            }
            Ok(None) => {
                if r.sealed() {
                    // A compaction replaced the file: continue in the new one.
                    if let Ok(n) = self.reader_at(self.next) {
                        self.reader = Some(n);
                        return None;
                    }
                }
                self.reader = None;
                self.initial = false;
                if ahead(base, self.next) > 0 {
                    // The file ended inside a snapshot covering [next, base).
                    let skipped = base.wrapping_sub(self.next).saturating_sub(self.folded);
                    self.next = base;
                    self.folded = 0;
                    if skipped > 0 {
                        return Some(Step::Lagged(skipped));
                    }
                }
                None
            }
            Err(_) => {
                self.reader = None;
                self.initial = false;
                None
            }
        }
    }

    /// Delivers everything available now to `f`, in order; returns how
    /// many. The journal's contiguous records go straight from the read
    /// buffer (the bootstrap's fast path); everything else through `step`.
    fn drain_ready(&mut self, mut f: impl FnMut(Step, &[u8])) -> usize {
        let mut n = 0;
        // The ring part is bounded per call, so that a publisher faster
        // than `f` cannot keep the caller here forever.
        let mut from_ring = 0;
        let msg = self.msg_size as usize;
        loop {
            if let Some(r) = &mut self.reader {
                let rs = r.header.record_size();
                while r.index >= r.header.snapshot
                    && r.index >= r.buf_first
                    && r.index < r.buf_first + r.buf_records
                {
                    let at = (r.index - r.buf_first) as usize * rs;
                    let rec = &r.buf[at..at + rs];
                    let seq = u64::from_le_bytes(rec[..8].try_into().expect("8 bytes"));
                    let stored = u64::from_le_bytes(rec[rs - 8..].try_into().expect("8 bytes"));
                    if seq != self.next || stored != format::check_words(seq, &rec[8..rs - 8]) {
                        break; // `step` sorts it out (a gap, the end, a seal)
                    }
                    f(Step::Entry(seq), &rec[8..8 + msg]);
                    self.next = seq.wrapping_add(1);
                    r.index += 1;
                    n += 1;
                    self.initial = false;
                    self.folded = 0;
                    self.repair_at = None;
                }
            }
            if self.reader.is_none() {
                from_ring += 1;
                if from_ring > 4096 {
                    return n;
                }
            }
            match self.step(false, None) {
                Step::Empty => return n,
                step => {
                    f(step, &self.buf);
                    n += 1;
                }
            }
        }
    }

    fn received<T>(
        &mut self,
        step: Step,
        msg: impl FnOnce(&[u8]) -> T,
    ) -> Option<Received<Entry<T>>> {
        match step {
            Step::Entry(seq) => Some(Received::Message(Entry {
                seq,
                msg: msg(&self.buf),
            })),
            Step::Lagged(skipped) => Some(Received::Lagged { skipped }),
            Step::Empty => None,
        }
    }
}

impl Core {
    /// One step, waiting as `wait` says.
    fn wait_step(&mut self, wait: Wait) -> Step {
        let deadline = match wait {
            Wait::Never => return self.step(false, None),
            _ => wait.deadline(),
        };
        loop {
            match self.step(true, deadline) {
                Step::Empty if deadline.is_none() => continue,
                s => return s,
            }
        }
    }
}

/// A subscriber that joins late and misses nothing: the journal's state
/// first, then every message live, as one ordered stream. A lag on the ring
/// is repaired from the journal; [`Received::Lagged`] comes only for what
/// the journal no longer has (folded by a compaction, reported with the
/// folded records' last values, so a last-value-per-key state stays exact).
/// Typed (`T: Message`) or raw (`[u8]`), as a bus subscriber.
///
/// It has no lossless contract (`OpenOptions::lossless` is for a plain
/// [`Subscriber`](crate::Subscriber) of a journaled bus, which gates the
/// publisher's ring writes): it needs none, since what a lap costs it on
/// the ring it reads back from the journal, and it must not slow the
/// publisher to get it.
///
/// # Examples
/// ```
/// use shmbus::{BusOptions, Wait, journal::{self, JoinOptions}};
/// # let dir = std::env::temp_dir().join(format!("shmbus-doc-join-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// # let name = format!("/dev/shm/shmbus-doc-join-{}", std::process::id());
/// let mut publisher = journal::Publisher::<u64>::create(
///     &name,
///     &BusOptions::new(64),
///     &journal::Options::new(dir.join("ticks.journal")),
/// )?;
/// publisher.publish(&1)?;
/// publisher.publish(&2)?;
/// // Joins late, and still gets both, then whatever comes live.
/// let mut late = journal::Subscriber::<u64>::join(&name, &JoinOptions::default())?;
/// let first = late.recv(Wait::Forever);
/// # drop(late); publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Subscriber<T: ?Sized + Payload> {
    core: Core,
    _type: PhantomData<fn() -> Box<T>>,
}

impl<T: ?Sized + Payload> std::fmt::Debug for Subscriber<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JournalSubscriber")
            .field("journal", &self.core.path)
            .field("next", &self.core.next)
            .field("msg_size", &self.core.msg_size)
            .field("reading_journal", &self.core.reader.is_some())
            .finish_non_exhaustive()
    }
}

impl<T: ?Sized + Payload> Subscriber<T> {
    /// Joins the journaled bus `name`: the flush handshake, then the journal
    /// from its start. A typed subscriber checks the message type.
    ///
    /// # Errors
    /// [`JoinError::Open`] if the bus cannot be opened (missing, not a bus,
    /// another message type, ...), [`JoinError::NotJournaled`] if it has no
    /// journal; with a live publisher, [`JoinError::PublisherGone`] if it
    /// died while the joiner waited for its flush,
    /// [`JoinError::FlushTimeout`] if it did not serve the flush within
    /// [`JoinOptions::flush_timeout`], [`JoinError::FlushFailed`] if its
    /// `fdatasync` failed (with no live publisher there is no flush to wait
    /// for); [`JoinError::Journal`] if the journal cannot be opened or
    /// read, or holds another message type.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, journal::{self, JoinOptions}};
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-sjoin-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-sjoin-{}", std::process::id());
    /// let mut publisher = journal::Publisher::<u64>::create(
    ///     &name,
    ///     &BusOptions::new(64),
    ///     &journal::Options::new(dir.join("ticks.journal")),
    /// )?;
    /// publisher.publish(&1)?;
    /// let mut late = journal::Subscriber::<u64>::join(&name, &JoinOptions::default())?;
    /// assert_eq!(late.position(), 0); // at the start of the journal
    /// assert!(!late.is_live());
    /// # drop(late);
    /// # publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn join(name: &str, opts: &JoinOptions) -> Result<Self, JoinError> {
        Self::join_cancellable(name, opts, || true)
    }

    /// As [`join`](Self::join), asking `go_on` at least every 10 ms while
    /// it waits for the publisher's flush: `false` ends the join with
    /// [`JoinError::Cancelled`]. For a caller that must answer a signal or
    /// a shutdown sooner than [`JoinOptions::flush_timeout`].
    ///
    /// # Errors
    /// As [`join`](Self::join), and [`JoinError::Cancelled`].
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, journal::{self, JoinError, JoinOptions}};
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-cjoin-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-cjoin-{}", std::process::id());
    /// let mut publisher = journal::Publisher::<u64>::create(
    ///     &name,
    ///     &BusOptions::new(64),
    ///     &journal::Options::new(dir.join("ticks.journal")),
    /// )?;
    /// publisher.publish(&1)?;
    /// // A live publisher serves the flush at once: `go_on` is not needed.
    /// let late = journal::Subscriber::<u64>::join_cancellable(&name, &JoinOptions::default(), || true)?;
    /// assert_eq!(late.position(), 0);
    /// # drop(late);
    /// # publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn join_cancellable(
        name: &str,
        opts: &JoinOptions,
        mut go_on: impl FnMut() -> bool,
    ) -> Result<Self, JoinError> {
        let msg = T::expected(opts.open.message.as_ref());
        Ok(Subscriber {
            core: Core::join(name, msg.as_ref(), opts, &mut go_on)?,
            _type: PhantomData,
        })
    }

    /// The next sequence this subscriber will deliver from the contiguous
    /// part (or the ring).
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, journal::{self, JoinOptions}};
    /// use shmbus::{Received, Wait, journal::Entry};
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-sposition-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-sposition-{}", std::process::id());
    /// let mut publisher = journal::Publisher::<u64>::create(
    ///     &name,
    ///     &BusOptions::new(64),
    ///     &journal::Options::new(dir.join("ticks.journal")),
    /// )?;
    /// publisher.publish(&1)?;
    /// let mut late = journal::Subscriber::<u64>::join(&name, &JoinOptions::default())?;
    /// assert_eq!(late.position(), 0); // a new subscriber: the journal's first sequence
    /// late.recv(Wait::Never);
    /// assert_eq!(late.position(), 1);
    /// # drop(late);
    /// # publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn position(&self) -> u64 {
        self.core.next
    }

    /// The bus's ring (for a select's look and doorbell).
    pub(crate) fn ring(&self) -> &Ring<ShmRegion> {
        &self.core.ring
    }

    /// Whether it has read the journal to its end and now takes the ring.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, journal::{self, JoinOptions}};
    /// use shmbus::{Received, Wait, journal::Entry};
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-slive-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-slive-{}", std::process::id());
    /// let mut publisher = journal::Publisher::<u64>::create(
    ///     &name,
    ///     &BusOptions::new(64),
    ///     &journal::Options::new(dir.join("ticks.journal")),
    /// )?;
    /// publisher.publish(&1)?;
    /// let mut late = journal::Subscriber::<u64>::join(&name, &JoinOptions::default())?;
    /// assert_eq!(late.recv(Wait::Never), Some(Received::Message(Entry { seq: 0, msg: 1 })));
    /// assert!(!late.is_live()); // it has not seen the journal end yet
    /// assert_eq!(late.recv(Wait::Never), None);
    /// assert!(late.is_live());
    /// # drop(late);
    /// # publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_live(&self) -> bool {
        self.core.reader.is_none()
    }

    /// Moves to sequence `seq`: what it delivers next is exactly what a
    /// subscriber joined now would deliver from `seq` on, in time that does
    /// not grow with the journal: the records from `seq` in the contiguous
    /// part (a direct offset: records are fixed-size), or, for a `seq` a
    /// compaction folded into the snapshot, the snapshot's records from the
    /// first at or after `seq` (a bisection: the snapshot's sequences
    /// increase), then the contiguous part; then the ring. A `seq` before
    /// the journal's first record starts at its start. Needs no flush: the
    /// publisher's records are in the file's page cache before they are on
    /// the ring, so every sequence below [`head`](Self::head) is there.
    ///
    /// # Errors
    /// [`SeekError::Ahead`] for a `seq` past the head;
    /// [`SeekError::Journal`] if the journal cannot be opened or read;
    /// [`SeekError::Corrupt`] if a snapshot record the search meets is
    /// damaged. The subscriber then stays where it was.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, journal::{self, Entry, JoinOptions}};
    /// use shmbus::{Received, Wait};
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-sseek-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-sseek-{}", std::process::id());
    /// let mut publisher = journal::Publisher::<u64>::create(
    ///     &name,
    ///     &BusOptions::new(64),
    ///     &journal::Options::new(dir.join("ticks.journal")),
    /// )?;
    /// for i in 0..1000 {
    ///     publisher.publish(&(i * 10))?;
    /// }
    /// let mut late = journal::Subscriber::<u64>::join(&name, &JoinOptions::default())?;
    /// late.seek(990)?;
    /// assert_eq!(late.recv(Wait::Never), Some(Received::Message(Entry { seq: 990, msg: 9900 })));
    /// # drop(late); publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn seek(&mut self, seq: u64) -> Result<(), SeekError> {
        self.core.seek(seq)
    }

    /// The bus's head: the sequence the publisher writes next.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, journal::{self, JoinOptions}};
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-shead-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-shead-{}", std::process::id());
    /// let mut publisher = journal::Publisher::<u64>::create(
    ///     &name,
    ///     &BusOptions::new(64),
    ///     &journal::Options::new(dir.join("ticks.journal")),
    /// )?;
    /// let mut late = journal::Subscriber::<u64>::join(&name, &JoinOptions::default())?;
    /// publisher.publish(&1)?;
    /// publisher.publish(&2)?;
    /// assert_eq!(late.head(), 2);
    /// assert_eq!(late.position(), 0); // nothing read yet
    /// # drop(late);
    /// # publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn head(&self) -> u64 {
        self.core.ring.head()
    }

    /// The bus's message size.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, journal::{self, JoinOptions}};
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-smsgsize-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-smsgsize-{}", std::process::id());
    /// let mut publisher = journal::Publisher::<u64>::create(
    ///     &name,
    ///     &BusOptions::new(64),
    ///     &journal::Options::new(dir.join("ticks.journal")),
    /// )?;
    /// let mut late = journal::Subscriber::<u64>::join(&name, &JoinOptions::default())?;
    /// assert_eq!(late.msg_size(), 8);
    /// # drop(late);
    /// # publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn msg_size(&self) -> usize {
        self.core.msg_size as usize
    }

    /// The next entry as bytes (the bus's message size), typed or raw:
    /// what [`State`](super::State) folds from.
    pub(super) fn recv_bytes(&mut self, wait: Wait) -> Option<Received<Entry<&[u8]>>> {
        match self.core.wait_step(wait) {
            Step::Entry(seq) => Some(Received::Message(Entry {
                seq,
                msg: &self.core.buf[..],
            })),
            Step::Lagged(skipped) => Some(Received::Lagged { skipped }),
            Step::Empty => None,
        }
    }

    /// The bytes of the message `recv_bytes` returned last (a raw async
    /// receive lends them again once its borrow of the look ended).
    pub(crate) fn last_bytes(&self) -> &[u8] {
        &self.core.buf[..]
    }

    /// `drain_ready` with each message as bytes, typed or raw.
    pub(super) fn drain_bytes(&mut self, mut f: impl FnMut(Received<Entry<&[u8]>>)) -> usize {
        self.core.drain_ready(|step, bytes| match step {
            Step::Entry(seq) => f(Received::Message(Entry { seq, msg: bytes })),
            Step::Lagged(skipped) => f(Received::Lagged { skipped }),
            Step::Empty => {}
        })
    }
}

impl<T: Message> Subscriber<T> {
    /// The next entry or lag report, or `None` if the wait ran out.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use shmbus::{BusOptions, journal::{self, JoinOptions}};
    /// use shmbus::{Received, Wait, journal::Entry};
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-srecv-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-srecv-{}", std::process::id());
    /// let mut publisher = journal::Publisher::<u64>::create(
    ///     &name,
    ///     &BusOptions::new(64),
    ///     &journal::Options::new(dir.join("ticks.journal")),
    /// )?;
    /// publisher.publish(&1)?;
    /// let mut late = journal::Subscriber::<u64>::join(&name, &JoinOptions::default())?;
    /// assert_eq!(late.recv(Wait::Never), Some(Received::Message(Entry { seq: 0, msg: 1 })));
    /// publisher.publish(&2)?; // live, on the ring
    /// let next = late.recv(Wait::For(Duration::from_secs(1)));
    /// assert_eq!(next, Some(Received::Message(Entry { seq: 1, msg: 2 })));
    /// # drop(late);
    /// # publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn recv(&mut self, wait: Wait) -> Option<Received<Entry<T>>> {
        let step = self.core.wait_step(wait);
        self.core.received(step, bytemuck::pod_read_unaligned)
    }

    /// `recv(Wait::Never)`.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, journal::{self, JoinOptions}};
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-stryrecv-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-stryrecv-{}", std::process::id());
    /// let mut publisher = journal::Publisher::<u64>::create(
    ///     &name,
    ///     &BusOptions::new(64),
    ///     &journal::Options::new(dir.join("ticks.journal")),
    /// )?;
    /// let mut late = journal::Subscriber::<u64>::join(&name, &JoinOptions::default())?;
    /// assert_eq!(late.try_recv(), None); // an empty journal, nothing on the ring
    /// # drop(late);
    /// # publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_recv(&mut self) -> Option<Received<Entry<T>>> {
        self.recv(Wait::Never)
    }

    /// Hands everything available now to `f`, in order, without waiting;
    /// returns how many. The fast way to read a large journal.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, Received, journal::{self, JoinOptions}};
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-sdrain-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-sdrain-{}", std::process::id());
    /// let mut publisher = journal::Publisher::<u64>::create(
    ///     &name,
    ///     &BusOptions::new(64),
    ///     &journal::Options::new(dir.join("ticks.journal")),
    /// )?;
    /// for i in 0..100 {
    ///     publisher.publish(&i)?;
    /// }
    /// let mut late = journal::Subscriber::<u64>::join(&name, &JoinOptions::default())?;
    /// let mut sum = 0;
    /// let n = late.drain_ready(|r| {
    ///     if let Received::Message(entry) = r {
    ///         sum += entry.msg;
    ///     }
    /// });
    /// assert_eq!((n, sum), (100, 4950));
    /// # drop(late);
    /// # publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn drain_ready(&mut self, mut f: impl FnMut(Received<Entry<T>>)) -> usize {
        self.core.drain_ready(|step, bytes| match step {
            Step::Entry(seq) => f(Received::Message(Entry {
                seq,
                msg: bytemuck::pod_read_unaligned(bytes),
            })),
            Step::Lagged(skipped) => f(Received::Lagged { skipped }),
            Step::Empty => {}
        })
    }
}

impl Subscriber<[u8]> {
    /// As the typed `recv`; the message borrows an internal buffer (the
    /// bus's message size, zero-padded as published).
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, journal::{self, JoinOptions}};
    /// use shmbus::{Received, Wait, journal::Entry};
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-srecvraw-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-srecvraw-{}", std::process::id());
    /// let mut publisher = journal::Publisher::<[u8]>::create(
    ///     &name,
    ///     &BusOptions::new(64).msg_size(16),
    ///     &journal::Options::new(dir.join("raw.journal")),
    /// )?;
    /// publisher.publish(b"hello")?;
    /// let mut late = journal::Subscriber::<[u8]>::join(&name, &JoinOptions::default())?;
    /// match late.recv(Wait::Never) {
    ///     Some(Received::Message(Entry { seq, msg })) => {
    ///         assert_eq!(seq, 0);
    ///         assert_eq!(&msg[..5], b"hello");
    ///         assert_eq!(msg.len(), 16);
    ///     }
    ///     other => panic!("expected the message, got {other:?}"),
    /// }
    /// # drop(late);
    /// # publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn recv(&mut self, wait: Wait) -> Option<Received<Entry<&[u8]>>> {
        self.recv_bytes(wait)
    }

    /// [`Subscriber::recv`] without waiting.
    ///
    /// # Examples
    /// ```
    /// use shmbus::journal::{self, JoinOptions};
    /// use shmbus::BusOptions;
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-rtryrecv-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-rtryrecv-{}", std::process::id());
    /// let mut publisher = journal::Publisher::<[u8]>::create(
    ///     &name,
    ///     &BusOptions::new(64).msg_size(16),
    ///     &journal::Options::new(dir.join("raw.journal")),
    /// )?;
    /// let mut late = journal::Subscriber::<[u8]>::join(&name, &JoinOptions::default())?;
    /// assert!(late.try_recv().is_none()); // an empty journal, nothing on the ring
    /// publisher.publish(b"hello")?;
    /// assert!(late.try_recv().is_some());
    /// # drop(late);
    /// # publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_recv(&mut self) -> Option<Received<Entry<&[u8]>>> {
        self.recv(Wait::Never)
    }
}
