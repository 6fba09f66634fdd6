//! What the publisher and its background threads (the flusher, the grower
//! and a compaction) share: the record count, the current file and its
//! mapping, a prepared compacted file, the grower's bell and the stop flag.

use std::fs::File;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, mpsc};

use super::writer::Writer;
use crate::mem::growable::GrowableRegion;

/// Publisher-side state the flusher and compactor threads share.
pub(super) struct Shared {
    /// Records in the current file; Release per append, paired with the
    /// Acquire loads in the flusher and the compactor.
    pub(super) committed: AtomicU64,
    pub(super) current: Mutex<Current>,
    pub(super) prepared: Mutex<Option<Prepared>>,
    /// A compacted file is prepared (the hot path's one extra load).
    pub(super) ready: AtomicBool,
    pub(super) stop: AtomicBool,
    /// Rung (incremented, then woken) when the writer asks for growth, at
    /// a switch of files and at stop; the grower sleeps on it (`grower`).
    pub(super) grow_bell: AtomicU32,
    pub(super) compaction_error: Mutex<Option<String>>,
}

pub(super) struct Current {
    pub(super) file: File,
    /// The current file's mapping, which the grower grows ahead.
    pub(super) map: Arc<GrowableRegion>,
    /// Records known to be on disk.
    pub(super) flushed: u64,
}

/// A compacted file, ready to take over.
pub(super) struct Prepared {
    pub(super) writer: Writer,
    /// Records of the old file already copied into `writer`.
    pub(super) copied: u64,
    pub(super) tmp: PathBuf,
    pub(super) old: mpsc::Sender<Writer>,
}

impl Shared {
    /// The state of a publisher whose current file is `file`, mapped as
    /// `map`, holding `committed` records.
    pub(super) fn new(file: File, map: Arc<GrowableRegion>, committed: u64) -> Shared {
        Shared {
            committed: AtomicU64::new(committed),
            current: Mutex::new(Current {
                file,
                map,
                flushed: 0,
            }),
            prepared: Mutex::new(None),
            ready: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            grow_bell: AtomicU32::new(0),
            compaction_error: Mutex::new(None),
        }
    }

    /// Wakes the grower; whatever it was doing, it looks again.
    pub(super) fn ring_grower(&self) {
        // Release, paired with the Acquire load in `grower`.
        self.grow_bell.fetch_add(1, Ordering::Release);
        crate::wait::futex_wake_all(&self.grow_bell);
    }

    /// `fdatasync`s the current file, and notes what it made durable.
    pub(super) fn sync(&self) -> io::Result<()> {
        let mut cur = lock(&self.current);
        // Acquire, paired with the Release store in `stage`.
        let n = self.committed.load(Ordering::Acquire);
        cur.file.sync_data()?;
        cur.flushed = n;
        Ok(())
    }
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
