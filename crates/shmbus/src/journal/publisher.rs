//! The journaled publisher: append to the file, then publish on the ring;
//! a flusher thread serves flush requests, a grower thread maps the file
//! ahead of the appends, a compactor thread rewrites the file as one record
//! per key.

use std::io;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;

use crate::wire::Message;

use super::compaction::{Compaction, Compactor, tmp_path};
use super::error::{AppendError, AttachError, CloseError, CreateError, OpenError, SnapshotError};
use super::flusher::flusher;
use super::format::JournalHeader;
use super::grower::grower;
use super::keyed::{Keyed, raw_key};
use super::options::{Options, check_snapshot};
use super::shared::{Shared, lock};
use super::writer::{Trust, Writer};
use crate::bus::BusOptions;
use crate::bus::Payload;
use crate::bus::gate::Gate;
use crate::bus::ring::Ring;

use crate::mem::{Region, ShmRegion};
use crate::options::OpenOptions;
use crate::segment::{self, Role};
use crate::sys::fork::Origin;
use crate::wait;
use crate::wire::TypeFingerprint;
use crate::wire::{Header, control, lock_byte};

/// The byte-level journaled publisher both typed and raw ones wrap.
struct Core {
    ring: Ring<Arc<ShmRegion>>,
    next: u64,
    /// Holds ring writes back for lossless subscribers (`bus::gate`); the
    /// journal itself never waits for them.
    gate: Gate,
    writer: Writer,
    shared: Arc<Shared>,
    flusher: Option<JoinHandle<()>>,
    grower: Option<JoinHandle<()>>,
    compactor: Option<Compactor>,
    key_of: fn(&[u8]) -> u64,
    compact_after: Option<u64>,
    msg_size: usize,
    path: PathBuf,
    mode: u32,
    /// The bus file's group: each compaction's file gets it.
    group: Option<u32>,
    chunk: usize,
    /// The process that started the threads: a forked child has none of
    /// them, and its copy must neither join them nor touch the files.
    origin: Origin,
}

fn absolute(path: &Path) -> io::Result<PathBuf> {
    let path = if path.is_absolute() {
        path.to_owned()
    } else {
        std::env::current_dir()?.join(path)
    };
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    match (parent, path.file_name()) {
        (Some(dir), Some(name)) => Ok(dir.canonicalize()?.join(name)),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "journal path names no file",
        )),
    }
}

impl Core {
    fn create(
        name: &str,
        msg: TypeFingerprint,
        opts: &BusOptions,
        jopts: &Options,
        key_of: fn(&[u8]) -> u64,
    ) -> Result<Core, CreateError> {
        let path = absolute(&jopts.path).map_err(|e| OpenError::io(&jopts.path, "resolve", e))?;
        let mode = opts.file.mode;
        let group = opts.file.group;
        jopts.check_sizes()?;
        opts.check_timeouts()
            .map_err(crate::error::CreateError::InvalidGeometry)?;
        check_snapshot(&jopts.snapshot, opts.first_seq, msg.size)?;
        let (writer, created) = match Writer::open(
            &path,
            msg.size,
            msg.name_hash,
            &Trust::own(mode),
            jopts.chunk,
            jopts.preallocate,
        ) {
            Ok(_) if !jopts.snapshot.is_empty() => {
                return Err(SnapshotError::Exists { path }.into());
            }
            // The creator decides the mode, for a journal it continues too.
            Ok(w) => {
                w.set_mode(mode, group)?;
                (w, false)
            }
            Err(OpenError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
                let h = JournalHeader {
                    msg_size: msg.size,
                    type_hash: msg.name_hash,
                    base: opts.first_seq,
                    snapshot: jopts.snapshot.len() as u64,
                    sealed: false,
                };
                let mut w = Writer::create(&path, h, mode, group, jopts.chunk, jopts.preallocate)?;
                for (seq, bytes) in &jopts.snapshot {
                    if let Err(e) = w.append(*seq, bytes) {
                        let _ = std::fs::remove_file(&path);
                        let e = io::Error::other(e.to_string());
                        return Err(OpenError::io(&path, "write the snapshot", e).into());
                    }
                }
                (w, true)
            }
            Err(e) => return Err(e.into()),
        };
        let first = writer.next_seq();
        let remove_new = |e: CreateError| {
            if created {
                let _ = std::fs::remove_file(&path);
            }
            e
        };
        let (page, huge) =
            segment::layout_page(name, &opts.file).map_err(|e| remove_new(e.into()))?;
        let mut header = Header::broadcast(opts.capacity, msg, page, first)
            .map_err(|e| remove_new(crate::error::CreateError::InvalidGeometry(e).into()))?;
        header.flags |= huge;
        let header = header.with_journal(path.clone()).map_err(|len| {
            remove_new(
                OpenError::PathTooLong {
                    len,
                    max: crate::wire::header::JOURNAL_PATH_MAX,
                }
                .into(),
            )
        })?;
        let region = segment::create_region(name, &header, &opts.file, |r| {
            crate::bus::gate::init_control(
                r,
                header.control_offset as usize,
                opts.max_lossless,
                opts.evict,
            );
            Ring::new(r, &header).init()
        })
        .map_err(|e| remove_new(e.into()))?;
        let ring = Ring::new(Arc::new(region), &header);
        let gate = Gate::new(&ring, first);
        let started = Core::start(
            ring,
            gate,
            first,
            writer,
            path.clone(),
            (mode, group),
            jopts.chunk,
            key_of,
        );
        started.map_err(|e| {
            // Nothing of the bus it made is left behind.
            let _ = segment::remove(name);
            remove_new(e.into())
        })
    }

    fn attach(
        name: &str,
        msg: Option<&TypeFingerprint>,
        opts: &OpenOptions,
        key_of: fn(&[u8]) -> u64,
    ) -> Result<Core, AttachError> {
        let (region, header) = segment::open_checked(
            name,
            Role::Publisher,
            crate::wire::Kind::Broadcast,
            msg,
            opts,
        )
        .map_err(crate::error::AttachError::Open)?;
        let Some(path) = header.journal.clone() else {
            return Err(AttachError::NotJournaled {
                name: name.to_owned(),
            });
        };
        let pid_field = header.control_offset as usize + control::PUBLISHER_PID;
        segment::take_role(&region, lock_byte::PUBLISHER, pid_field).map_err(|pid| {
            crate::error::AttachError::RoleTaken {
                role: crate::error::Role::Publisher,
                pid,
            }
        })?;
        let (mode, bus_owner, bus_group) = region_owner(&region);
        let ring = Ring::new(Arc::new(region), &header);
        let ring_next = ring.resume();
        let chunk = 8 << 20;
        // Whoever made the bus chose its journal: their file is as trusted
        // as the bus itself.
        let mut trust = Trust::own(mode);
        trust.owners.extend(bus_owner);
        let writer = Writer::open(
            &path,
            header.msg.size,
            header.msg.name_hash,
            &trust,
            chunk,
            0,
        )?;
        let _ = std::fs::remove_file(tmp_path(&path));
        let journal_next = writer.next_seq();
        let mut gate = Gate::new(&ring, ring_next);
        let next = if journal_next == ring_next {
            ring_next
        } else if journal_next == ring_next.wrapping_add(1) && writer.count() > 0 {
            // Appended but never published: publish it now, under its number.
            publish_last_record(&ring, &mut gate, &writer, ring_next);
            journal_next
        } else {
            return Err(OpenError::Behind {
                path,
                journal_next,
                ring_next,
            }
            .into());
        };
        Ok(Core::start(
            ring,
            gate,
            next,
            writer,
            path,
            (mode, bus_group),
            chunk,
            key_of,
        )?)
    }

    /// Starts the publisher's threads. A failure (a descriptor or a thread
    /// the system would not give) is an error, never a panic, and leaves no
    /// thread running.
    #[allow(clippy::too_many_arguments)]
    fn start(
        mut ring: Ring<Arc<ShmRegion>>,
        gate: Gate,
        next: u64,
        writer: Writer,
        path: PathBuf,
        (mode, group): (u32, Option<u32>),
        chunk: usize,
        key_of: fn(&[u8]) -> u64,
    ) -> Result<Core, OpenError> {
        ring.set_light_barrier();
        let file = writer
            .file()
            .try_clone()
            .map_err(|e| OpenError::io(&path, "dup", e))?;
        let shared = Arc::new(Shared::new(file, writer.mapping(), writer.count()));
        let region = Arc::clone(ring.region());
        let ctl = ring.control_field(0);
        let spawn_error = |e| OpenError::io(&path, "spawn a thread", e);
        let s = Arc::clone(&shared);
        let flusher = std::thread::Builder::new()
            .name("shmbus-flusher".into())
            .spawn(move || flusher(&s, &region, ctl))
            .map_err(spawn_error)?;
        let s = Arc::clone(&shared);
        let grower = match std::thread::Builder::new()
            .name("shmbus-grower".into())
            .spawn(move || grower(&s))
        {
            Ok(g) => g,
            Err(e) => {
                shared.stop.store(true, Ordering::Release);
                wake_flusher(&ring);
                let _ = flusher.join();
                return Err(spawn_error(e));
            }
        };
        let msg_size = ring.geometry().msg_size();
        Ok(Core {
            ring,
            next,
            gate,
            writer,
            shared,
            flusher: Some(flusher),
            grower: Some(grower),
            compactor: None,
            key_of,
            compact_after: None,
            msg_size,
            path,
            mode,
            group,
            chunk,
            origin: Origin::here(),
        })
    }

    /// Appends `bytes` as the next sequence, without publishing it.
    #[inline]
    fn stage(&mut self, bytes: &[u8]) -> Result<u64, AppendError> {
        if bytes.len() > self.msg_size {
            return Err(AppendError::TooLong {
                len: bytes.len(),
                max: self.msg_size,
            });
        }
        if self.shared.ready.load(Ordering::Relaxed) {
            self.switch();
        }
        let seq = self.next;
        let grow_ahead = self.writer.append(seq, bytes)?;
        // Release, paired with the Acquire loads in `flusher` and `compact`.
        self.shared
            .committed
            .store(self.writer.count(), Ordering::Release);
        if grow_ahead {
            // Once per chunk: the grower maps the next chunk ahead.
            self.shared.ring_grower();
        }
        Ok(seq)
    }

    #[inline]
    fn publish(&mut self, bytes: &[u8]) -> Result<u64, AppendError> {
        let seq = self.stage(bytes)?;
        // Journaled first, then the ring: a publisher held back here by a
        // lossless subscriber (at most the eviction timeout) has the
        // message safe in the journal already, and the flusher, on its own
        // thread, takes no lock this wait holds.
        if !self.gate.open_for(seq) {
            self.gate.room(&self.ring, seq);
        }
        let generation = self.ring.write(seq, bytes);
        self.gate.after_write(seq, generation);
        self.next = seq.wrapping_add(1);
        if self.compaction_due() {
            self.start_compaction();
        }
        Ok(seq)
    }

    /// `compact_after` records since the last compaction: the records from
    /// the file's base on, which the file itself counts, so a publisher
    /// that attaches (say, one short `shmbus pub` after another) carries on
    /// the count of the one before.
    fn compaction_due(&self) -> bool {
        self.compact_after
            .is_some_and(|n| self.writer.count() - self.writer.header().snapshot >= n)
    }

    /// The last record staged goes on the ring.
    fn release_staged(&mut self) {
        let count = self.writer.count();
        if count == 0 || self.writer.next_seq() != self.next.wrapping_add(1) {
            return;
        }
        publish_last_record(&self.ring, &mut self.gate, &self.writer, self.next);
        self.next = self.next.wrapping_add(1);
    }

    /// Starts a background compaction; false if one is running.
    fn start_compaction(&mut self) -> bool {
        if let Some(c) = &self.compactor {
            if !c.thread.is_finished() {
                return false;
            }
            let _ = self.compactor.take().map(|c| c.thread.join());
        }
        let Ok(file) = self.writer.file().try_clone() else {
            return false;
        };
        let job = Compaction {
            file,
            header: self.writer.header(),
            cut: self.writer.count(),
            key_of: self.key_of,
            shared: Arc::clone(&self.shared),
            path: self.path.clone(),
            mode: self.mode,
            group: self.group,
            chunk: self.chunk,
        };
        let (tx, settled) = mpsc::channel();
        self.compactor = std::thread::Builder::new()
            .name("shmbus-compact".into())
            .spawn(move || job.run(tx))
            .ok()
            .map(|thread| Compactor { thread, settled });
        self.compactor.is_some()
    }

    /// Waits for the running compaction, if any, to be prepared or to fail,
    /// switches a prepared one in, and lets its thread end (it syncs the
    /// directory, so the rename is durable when this returns).
    fn settle_compaction(&mut self) {
        let Some(c) = self.compactor.take() else {
            return;
        };
        // Bounded by the compaction itself: it reads the records committed
        // so far, and no publish adds any while we wait here.
        let _ = c.settled.recv();
        // Acquire, paired with the compactor's Release store of `ready`.
        if self.shared.ready.load(Ordering::Acquire) {
            self.switch();
        }
        // After a switch the thread receives the old file and ends; after
        // a failure it has ended, or ends once `switch` drops its sender.
        let _ = c.thread.join();
    }

    /// What a publisher that goes away cleanly owes the journal: the
    /// compaction it started, switched in, and the one due by
    /// `compact_after` (one could not start while another ran). Without
    /// this, a compaction prepared by a short-lived publisher would be
    /// thrown away, and a journal fed by short runs would grow without
    /// bound. No publish runs meanwhile, so the second compaction leaves
    /// nothing due. Runs once: `compact_after` is off afterwards.
    fn finish_compaction(&mut self) -> Result<(), CloseError> {
        self.settle_compaction();
        if self.compaction_due() && !self.start_compaction() {
            *lock(&self.shared.compaction_error) =
                Some("could not start the compaction thread".to_owned());
        }
        self.settle_compaction();
        self.compact_after = None;
        match lock(&self.shared.compaction_error).clone() {
            Some(reason) => Err(CloseError::Compaction {
                path: self.path.clone(),
                reason,
            }),
            None => Ok(()),
        }
    }

    /// Takes over a prepared compacted file: copies the records appended
    /// since the compactor's last copy, renames, seals the old file. The
    /// only pause compaction puts on the hot path.
    #[cold]
    fn switch(&mut self) {
        self.shared.ready.store(false, Ordering::Relaxed);
        let Some(mut p) = lock(&self.shared.prepared).take() else {
            return;
        };
        let mut cur = lock(&self.shared.current);
        let done = (|| -> io::Result<()> {
            for i in p.copied..self.writer.count() {
                let rec = self.writer.record(i);
                let seq = u64::from_le_bytes(rec[..8].try_into().expect("8 bytes"));
                p.writer
                    .append(seq, &rec[8..8 + self.msg_size])
                    .map_err(|e| io::Error::other(e.to_string()))?;
            }
            // A flush served for records that only this copy carries into
            // the new file: make them durable there before the rename.
            if cur.flushed > p.copied {
                p.writer.file().sync_data()?;
            }
            std::fs::rename(&p.tmp, &self.path)
        })();
        match done {
            Ok(()) => {
                self.writer.seal();
                let old = std::mem::replace(&mut self.writer, p.writer);
                if let Ok(f) = self.writer.file().try_clone() {
                    cur.file = f;
                }
                cur.map = self.writer.mapping();
                cur.flushed = 0;
                self.shared
                    .committed
                    .store(self.writer.count(), Ordering::Release);
                // An earlier failure is superseded: this one compacted.
                *lock(&self.shared.compaction_error) = None;
                // The compactor unmaps the old file, off the hot path.
                let _ = p.old.send(old);
                // The compactor's appends may have asked for growth of the
                // new file, which the grower did not grow while it was not
                // current.
                drop(cur);
                self.shared.ring_grower();
            }
            Err(e) => {
                let _ = std::fs::remove_file(&p.tmp);
                *lock(&self.shared.compaction_error) = Some(format!("compaction: {e}"));
            }
        }
    }

    fn flush(&self) -> io::Result<()> {
        self.shared.sync()
    }
}

impl Drop for Core {
    fn drop(&mut self) {
        if !self.origin.is_current() {
            // A forked child's copy: the threads are the parent's (joining
            // one that does not exist here panics), so are the journal and
            // a compaction's file. Let the handles go without a call.
            std::mem::forget(self.flusher.take());
            std::mem::forget(self.grower.take());
            std::mem::forget(self.compactor.take());
            return;
        }
        // Best effort; `close` is the way to hear of a failure. Nothing is
        // left running for `stop` below to give up on, unless a panic cut
        // the compaction short.
        let _ = self.finish_compaction();
        self.shared.stop.store(true, Ordering::Release);
        // The compactor sees `stop` and gives up (removing its file).
        if let Some(c) = self.compactor.take() {
            let _ = c.thread.join();
        }
        if let Some(p) = lock(&self.shared.prepared).take() {
            let _ = std::fs::remove_file(&p.tmp);
        }
        wake_flusher(&self.ring);
        self.shared.ring_grower();
        for h in [self.flusher.take(), self.grower.take()]
            .into_iter()
            .flatten()
        {
            let _ = h.join();
        }
    }
}

/// Wakes the flusher (on the joiners' request word, without writing it),
/// so it sees `stop`.
#[cold]
fn wake_flusher(ring: &Ring<Arc<ShmRegion>>) {
    let ctl = ring.control_field(control::FLUSH_REQUEST);
    wait::futex_wake_all(ring.region().word32(ctl));
}

/// Writes the journal's last record on the ring as sequence `seq` (it is
/// in the journal but not yet on the ring), through the gate as any write.
fn publish_last_record(ring: &Ring<Arc<ShmRegion>>, gate: &mut Gate, writer: &Writer, seq: u64) {
    let rec = writer.record(writer.count() - 1);
    let msg_size = writer.header().msg_size as usize;
    if !gate.open_for(seq) {
        gate.room(ring, seq);
    }
    let generation = ring.write(seq, &rec[8..8 + msg_size]);
    gate.after_write(seq, generation);
}

/// The bus file's mode, owner and group.
fn region_owner(region: &ShmRegion) -> (u32, Option<u32>, Option<u32>) {
    rustix::fs::fstat(region.file()).map_or((0o600, None, None), |st| {
        (st.st_mode & 0o777, Some(st.st_uid), Some(st.st_gid))
    })
}

fn key_of<T: Keyed>(bytes: &[u8]) -> u64 {
    bytemuck::pod_read_unaligned::<T>(&bytes[..std::mem::size_of::<T>()]).key()
}

fn no_key(_: &[u8]) -> u64 {
    0
}

/// A publisher that journals every message before it publishes it: the
/// bus's one publisher, typed (`T: Message`) or raw (`[u8]`, compacting by the
/// first 8 bytes of each message).
///
/// # Examples
/// ```
/// use shmbus::{BusOptions, journal};
/// # let dir = std::env::temp_dir().join(format!("shmbus-doc-jpub-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// # let name = format!("/dev/shm/shmbus-doc-jpub-{}", std::process::id());
/// let mut publisher = journal::Publisher::<u64>::create(
///     &name,
///     &BusOptions::new(1024),
///     &journal::Options::new(dir.join("ticks.journal")),
/// )?;
/// assert_eq!(publisher.publish(&42)?, 0);
/// publisher.close()?;
/// # shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Publisher<T: ?Sized + Payload> {
    core: Core,
    _type: PhantomData<fn(&T)>,
}

impl<T: ?Sized + Payload> std::fmt::Debug for Publisher<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JournalPublisher")
            .field("journal", &self.core.path)
            .field("next", &self.core.next)
            .field("msg_size", &self.core.msg_size)
            .field("compact_after", &self.core.compact_after)
            .finish_non_exhaustive()
    }
}

/// The compaction key of a payload until `compact` says otherwise: raw
/// messages by their first 8 bytes, typed ones by none (a typed bus
/// compacts only if its type is [`Keyed`]).
fn default_key<T: ?Sized + Payload>() -> fn(&[u8]) -> u64 {
    if T::is_raw() { raw_key } else { no_key }
}

impl<T: ?Sized + Payload> Publisher<T> {
    /// Creates a journaled bus and its journal file (or continues the
    /// sequence of an existing journal at that path).
    ///
    /// # Errors
    /// [`CreateError::Create`] if the bus cannot be created, with
    /// the [`crate::CreateError`] of [`crate::Publisher::create`] (a name that is
    /// taken, an impossible geometry, ...); nothing is left behind, and a
    /// journal file made for it is removed again.
    /// [`CreateError::Journal`] if the journal cannot be made or
    /// continued: [`OpenError::Io`] (its directory does not exist, or
    /// another system error), [`OpenError::Full`],
    /// [`OpenError::NotRegular`], [`OpenError::PathTooLong`]
    /// for a path the bus header cannot hold, and for an existing journal
    /// [`OpenError::Header`], [`OpenError::TypeMismatch`]
    /// (another message type) or [`OpenError::Sealed`].
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, journal};
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-jcreate-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-jcreate-{}", std::process::id());
    /// let mut publisher = journal::Publisher::<u64>::create(
    ///     &name,
    ///     &BusOptions::new(64),
    ///     &journal::Options::new(dir.join("ticks.journal")),
    /// )?;
    /// assert_eq!(publisher.publish(&7)?, 0);
    /// assert!(dir.join("ticks.journal").exists());
    /// # publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create(name: &str, opts: &BusOptions, journal: &Options) -> Result<Self, CreateError> {
        let msg = T::fingerprint(opts.msg_size, opts.message.as_ref())
            .map_err(|e| CreateError::Create(crate::error::CreateError::InvalidGeometry(e)))?;
        let core = Core::create(name, msg, opts, journal, default_key::<T>())?;
        Ok(Publisher {
            core,
            _type: PhantomData,
        })
    }

    /// Becomes the publisher of an existing journaled bus: recovers the
    /// journal's valid prefix, re-publishes a record that made it into the
    /// journal but not onto the ring, and continues the sequence.
    ///
    /// # Errors
    /// [`AttachError::Attach`] with [`crate::AttachError::Open`] if the bus
    /// cannot be opened (missing, not a bus, another message type, ...) or
    /// [`crate::AttachError::RoleTaken`] if a live process publishes on it;
    /// [`AttachError::NotJournaled`] for a bus without a journal;
    /// [`AttachError::Journal`] if the journal cannot be opened
    /// ([`OpenError::Io`], [`OpenError::NotRegular`],
    /// [`OpenError::Header`], [`OpenError::TypeMismatch`],
    /// [`OpenError::Sealed`], [`OpenError::Full`]) or ends
    /// short of the bus's sequence ([`OpenError::Behind`]).
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, OpenOptions, journal};
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-jatt-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-jatt-{}", std::process::id());
    /// let journal = journal::Options::new(dir.join("j"));
    /// journal::Publisher::<u64>::create(&name, &BusOptions::new(64), &journal)?.close()?;
    /// let mut again = journal::Publisher::<u64>::attach(&name, &OpenOptions::default())?;
    /// # again.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn attach(name: &str, opts: &OpenOptions) -> Result<Self, AttachError> {
        let expected = T::expected(opts.message.as_ref());
        let core = Core::attach(name, expected.as_ref(), opts, default_key::<T>())?;
        Ok(Publisher {
            core,
            _type: PhantomData,
        })
    }

    /// `fdatasync`s the journal now.
    ///
    /// # Errors
    /// The system's error from `fdatasync`.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, journal};
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-jflush-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-jflush-{}", std::process::id());
    /// let mut publisher = journal::Publisher::<u64>::create(
    ///     &name,
    ///     &BusOptions::new(64),
    ///     &journal::Options::new(dir.join("ticks.journal")),
    /// )?;
    /// publisher.publish(&1)?;
    /// publisher.flush()?; // on disk now, not only in the page cache
    /// # publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn flush(&self) -> io::Result<()> {
        self.core.flush()
    }

    /// The sequence the next message will get.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, journal};
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-jnextseq-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-jnextseq-{}", std::process::id());
    /// let mut publisher = journal::Publisher::<u64>::create(
    ///     &name,
    ///     &BusOptions::new(64),
    ///     &journal::Options::new(dir.join("ticks.journal")),
    /// )?;
    /// assert_eq!(publisher.next_sequence(), 0);
    /// publisher.publish(&1)?;
    /// assert_eq!(publisher.next_sequence(), 1);
    /// # publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn next_sequence(&self) -> u64 {
        self.core.next
    }

    /// This publisher's generation on the bus: 1 for the creator, +1 per
    /// publisher that attaches after it.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, OpenOptions, journal};
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-jepoch-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-jepoch-{}", std::process::id());
    /// let mut publisher = journal::Publisher::<u64>::create(
    ///     &name,
    ///     &BusOptions::new(64),
    ///     &journal::Options::new(dir.join("ticks.journal")),
    /// )?;
    /// assert_eq!(publisher.epoch(), 1);
    /// publisher.close()?;
    /// let publisher = journal::Publisher::<u64>::attach(&name, &OpenOptions::default())?;
    /// assert_eq!(publisher.epoch(), 2);
    /// # publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn epoch(&self) -> u64 {
        self.core.ring.epoch()
    }

    /// The bus's message size.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, journal};
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-jmsgsize-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-jmsgsize-{}", std::process::id());
    /// let mut publisher = journal::Publisher::<u64>::create(
    ///     &name,
    ///     &BusOptions::new(64),
    ///     &journal::Options::new(dir.join("ticks.journal")),
    /// )?;
    /// assert_eq!(publisher.msg_size(), 8);
    /// # publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn msg_size(&self) -> usize {
        self.core.msg_size
    }

    /// The journal's path, made absolute (its directory canonicalized).
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, journal};
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-jpath-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-jpath-{}", std::process::id());
    /// let mut publisher = journal::Publisher::<u64>::create(
    ///     &name,
    ///     &BusOptions::new(64),
    ///     &journal::Options::new(dir.join("ticks.journal")),
    /// )?;
    /// assert_eq!(publisher.journal_path(), dir.canonicalize()?.join("ticks.journal"));
    /// # publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn journal_path(&self) -> &Path {
        &self.core.path
    }

    /// The last background compaction's failure, if any (the journal is
    /// then left as it was). A later compaction that succeeds clears it.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, journal};
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-jcompactionerror-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-jcompactionerror-{}", std::process::id());
    /// let mut publisher = journal::Publisher::<u64>::create(
    ///     &name,
    ///     &BusOptions::new(64),
    ///     &journal::Options::new(dir.join("ticks.journal")),
    /// )?;
    /// assert_eq!(publisher.compaction_error(), None);
    /// # publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn compaction_error(&self) -> Option<String> {
        lock(&self.core.shared.compaction_error).clone()
    }

    /// Whether a compaction is running or waiting to be switched in.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, journal};
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-jiscompacting-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-jiscompacting-{}", std::process::id());
    /// # #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    /// # #[repr(C)]
    /// # struct Tick { key: u64, val: u64 }
    /// # impl shmbus::Message for Tick { const NAME: &'static str = "example.Tick"; }
    /// # impl shmbus::journal::Keyed for Tick { fn key(&self) -> u64 { self.key } }
    /// let mut publisher = journal::Publisher::<Tick>::create(
    ///     &name,
    ///     &BusOptions::new(64),
    ///     &journal::Options::new(dir.join("ticks.journal")),
    /// )?;
    /// assert!(!publisher.is_compacting());
    /// publisher.publish(&Tick { key: 1, val: 1 })?;
    /// publisher.compact();
    /// publisher.close()?; // finishes the compaction first
    /// # shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_compacting(&self) -> bool {
        self.core
            .compactor
            .as_ref()
            .is_some_and(|c| !c.thread.is_finished())
            || self.core.shared.ready.load(Ordering::Relaxed)
    }

    /// Closes the publisher: finishes (switches in) a compaction it has
    /// running or prepared, and the one `compact_after` makes due, before
    /// it returns, so the journal stays one record per key plus fewer than
    /// `compact_after` records however short each publisher's life.
    /// Dropping does the same, without the error.
    ///
    /// # Errors
    /// [`CloseError::Compaction`] if that compaction failed (the journal is
    /// left as it was, whole).
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, OpenOptions, journal};
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-jclose-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-jclose-{}", std::process::id());
    /// let mut publisher = journal::Publisher::<u64>::create(
    ///     &name,
    ///     &BusOptions::new(64),
    ///     &journal::Options::new(dir.join("ticks.journal")),
    /// )?;
    /// publisher.publish(&1)?;
    /// publisher.close()?;
    /// // The next publisher carries on the sequence.
    /// let publisher = journal::Publisher::<u64>::attach(&name, &OpenOptions::default())?;
    /// assert_eq!(publisher.next_sequence(), 1);
    /// # publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn close(mut self) -> Result<(), CloseError> {
        self.core.finish_compaction()
    }
}

impl<T: Message> Publisher<T> {
    /// Appends `msg` to the journal, then publishes it. Returns its
    /// sequence. No system call unless the file grows (once per chunk) or a
    /// subscriber sleeps.
    ///
    /// # Errors
    /// [`AppendError::Full`] if the journal cannot grow (no room on its
    /// file system, or `RLIMIT_FSIZE`), [`AppendError::Io`] if growing or
    /// mapping it failed otherwise; the message is then neither journaled
    /// nor published.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, journal};
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-jpublish-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-jpublish-{}", std::process::id());
    /// let mut publisher = journal::Publisher::<u64>::create(
    ///     &name,
    ///     &BusOptions::new(64),
    ///     &journal::Options::new(dir.join("ticks.journal")),
    /// )?;
    /// assert_eq!(publisher.publish(&42)?, 0);
    /// assert_eq!(publisher.publish(&43)?, 1);
    /// # publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn publish(&mut self, msg: &T) -> Result<u64, AppendError> {
        self.core.publish(bytemuck::bytes_of(msg))
    }

    /// The journal half of [`Publisher::publish`] alone: the message
    /// is in the journal, not yet on the ring. For tests of that window.
    #[doc(hidden)]
    pub fn stage(&mut self, msg: &T) -> Result<u64, AppendError> {
        self.core.stage(bytemuck::bytes_of(msg))
    }

    /// The ring half of a [`Publisher::stage`].
    #[doc(hidden)]
    pub fn release_staged(&mut self) {
        self.core.release_staged();
    }
}

impl<T: Keyed> Publisher<T> {
    /// Starts a background compaction to one record per key (false if one
    /// is already running). Publishing goes on meanwhile.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, journal::{self, JoinOptions, State}};
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-jcompact-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-jcompact-{}", std::process::id());
    /// # #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    /// # #[repr(C)]
    /// # struct Tick { key: u64, val: u64 }
    /// # impl shmbus::Message for Tick { const NAME: &'static str = "example.Tick"; }
    /// # impl shmbus::journal::Keyed for Tick { fn key(&self) -> u64 { self.key } }
    /// let mut publisher = journal::Publisher::<Tick>::create(
    ///     &name,
    ///     &BusOptions::new(64),
    ///     &journal::Options::new(dir.join("ticks.journal")),
    /// )?;
    /// publisher.publish(&Tick { key: 1, val: 1 })?;
    /// publisher.publish(&Tick { key: 1, val: 2 })?;
    /// assert!(publisher.compact());
    /// publisher.close()?; // switches the compaction in before it returns
    /// // The journal now holds one record for key 1: its last value.
    /// let mut state = State::<Tick>::join(&name, &JoinOptions::default())?;
    /// assert_eq!(state.poll()?, 1);
    /// assert_eq!(state.state().get(1).map(|t| t.val), Some(2));
    /// # shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn compact(&mut self) -> bool {
        self.core.key_of = key_of::<T>;
        self.core.start_compaction()
    }

    /// Compacts by itself whenever `records` have been appended since the
    /// last compaction (`None`: never; `Some(0)` counts as 1).
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, journal::{self, JoinOptions, State}};
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-jcompactafter-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-jcompactafter-{}", std::process::id());
    /// # #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    /// # #[repr(C)]
    /// # struct Tick { key: u64, val: u64 }
    /// # impl shmbus::Message for Tick { const NAME: &'static str = "example.Tick"; }
    /// # impl shmbus::journal::Keyed for Tick { fn key(&self) -> u64 { self.key } }
    /// let mut publisher = journal::Publisher::<Tick>::create(
    ///     &name,
    ///     &BusOptions::new(64),
    ///     &journal::Options::new(dir.join("ticks.journal")),
    /// )?;
    /// publisher.compact_after(Some(2));
    /// for val in 0..3 {
    ///     publisher.publish(&Tick { key: 1, val })?;
    /// }
    /// publisher.close()?;
    /// // One record for the key, plus fewer than 2 since the last compaction:
    /// let mut state = State::<Tick>::join(&name, &JoinOptions::default())?;
    /// assert!(state.poll()? <= 2);
    /// assert_eq!(state.state().get(1).map(|t| t.val), Some(2));
    /// # shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn compact_after(&mut self, records: Option<u64>) {
        self.core.key_of = key_of::<T>;
        self.core.compact_after = records.map(|n| n.max(1));
    }
}

impl Publisher<[u8]> {
    /// Appends, then publishes `bytes` (zero-padded to the message size).
    ///
    /// # Errors
    /// As the typed `publish`: [`AppendError::Full`], [`AppendError::Io`];
    /// and [`AppendError::TooLong`] for more bytes than the message size.
    /// The message is then neither journaled nor published.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, journal};
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-jpublishraw-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-jpublishraw-{}", std::process::id());
    /// let mut publisher = journal::Publisher::<[u8]>::create(
    ///     &name,
    ///     &BusOptions::new(64).msg_size(16),
    ///     &journal::Options::new(dir.join("raw.journal")),
    /// )?;
    /// assert_eq!(publisher.publish(b"abc")?, 0);
    /// assert!(publisher.publish(&[0; 17]).is_err());
    /// # publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn publish(&mut self, bytes: &[u8]) -> Result<u64, AppendError> {
        self.core.publish(bytes)
    }

    /// Starts a background compaction by the first 8 bytes of each
    /// message (false if one is already running).
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, journal::{self, JoinOptions}};
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-jcompactraw-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-jcompactraw-{}", std::process::id());
    /// let mut publisher = journal::Publisher::<[u8]>::create(
    ///     &name,
    ///     &BusOptions::new(64).msg_size(16),
    ///     &journal::Options::new(dir.join("raw.journal")),
    /// )?;
    /// publisher.publish(b"key00001 first")?;
    /// publisher.publish(b"key00002 other")?;
    /// publisher.publish(b"key00001 second")?;
    /// assert!(publisher.compact());
    /// publisher.close()?;
    /// let mut late = journal::Subscriber::<[u8]>::join(&name, &JoinOptions::default())?;
    /// let mut count = 0;
    /// while let Some(_) = late.recv(shmbus::Wait::Never) {
    ///     count += 1;
    /// }
    /// assert_eq!(count, 2); // one record per key
    /// # drop(late);
    /// # shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn compact(&mut self) -> bool {
        self.core.start_compaction()
    }

    /// Compacts by itself every `records` appends (`None`: never; `Some(0)`
    /// counts as 1), by the first 8 bytes of each message.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, journal};
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-jcompactafterraw-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-jcompactafterraw-{}", std::process::id());
    /// let mut publisher = journal::Publisher::<[u8]>::create(
    ///     &name,
    ///     &BusOptions::new(64).msg_size(16),
    ///     &journal::Options::new(dir.join("raw.journal")),
    /// )?;
    /// publisher.compact_after(Some(1000));
    /// publisher.publish(b"key00001 value")?;
    /// # publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn compact_after(&mut self, records: Option<u64>) {
        self.core.compact_after = records.map(|n| n.max(1));
    }
}
