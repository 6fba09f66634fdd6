//! A background compaction: copies the journal to one record per key into
//! `PATH.compacting`, prepares it, and leaves the switch (a rename, on the
//! publisher's thread) to `publish`. Also the names of the files a journal
//! leaves beside it.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;
use std::time::Duration;

use super::format::JournalHeader;
use super::reader::Reader;
use super::shared::{Prepared, Shared, lock};
use super::writer::Writer;

/// A running background compaction.
pub(super) struct Compactor {
    pub(super) thread: JoinHandle<()>,
    /// A message once the compacted file is prepared; disconnected if the
    /// thread ends without one (it failed, or gave up).
    pub(super) settled: mpsc::Receiver<()>,
}

const COMPACTING: &str = ".compacting";
pub(super) const PREV: &str = ".prev";
pub(super) const PREV_LINKING: &str = ".prev-linking";

pub(super) fn suffixed(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

pub(crate) fn tmp_path(path: &Path) -> PathBuf {
    suffixed(path, COMPACTING)
}

/// Where the generation a compaction replaces stays readable.
pub(crate) fn prev_path(path: &Path) -> PathBuf {
    suffixed(path, PREV)
}

/// The files a journal at `path` may leave beside it (a compaction's new
/// file, the replaced generation, the link on its way there): whoever
/// removes the journal removes these too.
///
/// # Examples
/// ```
/// use std::path::Path;
///
/// let sides = shmbus::journal::side_files(Path::new("/var/lib/app/ticks.journal"));
/// assert!(sides.iter().all(|p| p.starts_with("/var/lib/app")));
/// assert!(sides.iter().all(|p| p != Path::new("/var/lib/app/ticks.journal")));
/// ```
pub fn side_files(path: &Path) -> [PathBuf; 3] {
    [COMPACTING, PREV, PREV_LINKING].map(|s| suffixed(path, s))
}

/// Hard-links the current file (the generation the coming switch replaces)
/// as `PATH.prev`, atomically replacing the one before. Best effort: without
/// it a subscriber lapped across the switch reports the folded range as lost.
pub(super) fn keep_as_prev(path: &Path) {
    let prev = prev_path(path);
    let link = suffixed(path, PREV_LINKING);
    let _ = std::fs::remove_file(&link);
    if std::fs::hard_link(path, &link).is_ok() && std::fs::rename(&link, &prev).is_err() {
        let _ = std::fs::remove_file(&link);
    }
}

/// One background compaction.
pub(super) struct Compaction {
    pub(super) file: File,
    pub(super) header: JournalHeader,
    pub(super) cut: u64,
    pub(super) key_of: fn(&[u8]) -> u64,
    pub(super) shared: Arc<Shared>,
    pub(super) path: PathBuf,
    pub(super) mode: u32,
    /// The bus file's group, which the compacted file gets too.
    pub(super) group: Option<u32>,
    pub(super) chunk: usize,
}

impl Compaction {
    /// Prepares the compacted file, says so on `settled` (dropped unsent if
    /// it fails), then waits for the switch to hand back the old file.
    pub(super) fn run(self, settled: mpsc::Sender<()>) {
        let tmp = tmp_path(&self.path);
        let (tx, rx) = mpsc::channel();
        match self.prepare(&tmp, tx) {
            Ok(Some(p)) => {
                *lock(&self.shared.prepared) = Some(p);
                // Release, paired with the publisher's loads in `stage` and
                // `settle_compaction` (its mutex then hands over the
                // prepared file itself).
                self.shared.ready.store(true, Ordering::Release);
                let _ = settled.send(());
                drop(settled);
                loop {
                    match rx.recv_timeout(Duration::from_millis(20)) {
                        Ok(old) => {
                            drop(old);
                            if let Some(dir) = self.path.parent() {
                                let _ = File::open(dir).and_then(|d| d.sync_all());
                            }
                            break;
                        }
                        Err(mpsc::RecvTimeoutError::Disconnected) => break,
                        Err(mpsc::RecvTimeoutError::Timeout) if self.stopped() => {
                            if let Some(p) = lock(&self.shared.prepared).take() {
                                let _ = std::fs::remove_file(&p.tmp);
                            }
                            break;
                        }
                        Err(mpsc::RecvTimeoutError::Timeout) => {}
                    }
                }
            }
            Ok(None) => {
                let _ = std::fs::remove_file(&tmp);
            }
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                *lock(&self.shared.compaction_error) = Some(format!("compaction: {e}"));
            }
        }
    }

    pub(super) fn stopped(&self) -> bool {
        self.shared.stop.load(Ordering::Acquire)
    }

    /// Reads records `from..to` of the old file, calling `each(seq, payload)`.
    pub(super) fn read(
        &self,
        from: u64,
        to: u64,
        mut each: impl FnMut(u64, &[u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        let mut r = Reader::new(self.file.try_clone()?, self.header);
        r.seek_index(from);
        while r.index < to {
            let i = r.index;
            match r.next()? {
                Some((seq, _, payload)) => each(seq, payload)?,
                None => {
                    return Err(io::Error::other(format!(
                        "record {i} unreadable, below the {to} committed"
                    )));
                }
            }
            if i % 32_768 == 0 && self.stopped() {
                return Err(io::Error::other("publisher closed"));
            }
        }
        Ok(())
    }

    pub(super) fn prepare(
        &self,
        tmp: &Path,
        old: mpsc::Sender<Writer>,
    ) -> io::Result<Option<Prepared>> {
        let msg = self.header.msg_size as usize;
        let mut slot_of: HashMap<u64, usize> = HashMap::new();
        let mut entries: Vec<(u64, Vec<u8>)> = Vec::new();
        self.read(0, self.cut, |seq, payload| {
            let key = (self.key_of)(&payload[..msg]);
            match slot_of.get(&key) {
                Some(&i) => {
                    entries[i].0 = seq;
                    entries[i].1.copy_from_slice(payload);
                }
                None => {
                    slot_of.insert(key, entries.len());
                    entries.push((seq, payload.to_vec()));
                }
            }
            Ok(())
        })?;
        entries.sort_unstable_by_key(|e| e.0);
        let base = self
            .header
            .expected_seq(self.cut)
            .ok_or_else(|| io::Error::other("cut inside the snapshot"))?;
        let _ = std::fs::remove_file(tmp);
        let header = JournalHeader {
            msg_size: self.header.msg_size,
            type_hash: self.header.type_hash,
            base,
            snapshot: entries.len() as u64,
            sealed: false,
        };
        let mut w = Writer::create(tmp, header, self.mode, self.group, self.chunk, 0)
            .map_err(|e| io::Error::other(e.to_string()))?;
        let append = |w: &mut Writer, seq: u64, payload: &[u8]| {
            w.append(seq, &payload[..msg])
                .map(|_| ())
                .map_err(|e| io::Error::other(e.to_string()))
        };
        for (seq, payload) in &entries {
            append(&mut w, *seq, payload)?;
        }
        drop(entries);
        // Copy what was appended meanwhile, until the rest is small. A
        // publisher faster than this copy would never let it catch up, so
        // after a few passes the rest is left to the switch, which copies
        // it from memory at memcpy speed.
        let mut copied = self.cut;
        for _ in 0..4 {
            // Acquire, paired with the Release store in `stage`.
            let now = self.shared.committed.load(Ordering::Acquire);
            self.read(copied, now, |seq, payload| append(&mut w, seq, payload))?;
            let caught_up = now - copied < 4096;
            copied = now;
            if caught_up {
                break;
            }
        }
        w.file().sync_data()?;
        if self.stopped() {
            return Ok(None);
        }
        // Here, off the hot path: `PATH` is still the generation that the
        // switch will replace (one compaction at a time, and only the switch
        // renames).
        keep_as_prev(&self.path);
        Ok(Some(Prepared {
            writer: w,
            copied,
            tmp: tmp.to_owned(),
            old,
        }))
    }
}
