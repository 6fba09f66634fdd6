//! Appending to a journal file through a shared mapping, so that an append
//! is a few stores and no system call.
//!
//! The file grows in chunks: `fallocate` reserves the blocks (a full disk is
//! then an error here, never a `SIGBUS` on a later store) and the chunk is
//! mapped with `MAP_FIXED` into one address range reserved up front, so the
//! mapping never moves and records already written stay where they are.
//! `MADV_POPULATE_WRITE` takes the page faults of a chunk in one call
//! instead of one per page on the hot path.

use std::fs::File;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rustix::mm::{MapFlags, ProtFlags};

use super::format::{self, JournalHeader, HEADER_LEN};
use super::reader::{check_header_matches, open_journal, read_header, Reader};
use super::{AppendError, JournalOpenError};

/// Address space reserved per journal file (not memory: `PROT_NONE`,
/// `MAP_NORESERVE`). A journal cannot grow beyond it.
const RESERVE: usize = 1 << 40;

/// A journal file's mapping: a reserved address range into which chunks
/// of the file are mapped as it grows. Shared by the writer and the
/// flusher thread, which grows it ahead of the writer so that the hot path
/// rarely pays for `fallocate` and the page faults.
pub(crate) struct Mapping {
    file: File,
    path: PathBuf,
    base: NonNull<u8>,
    /// Bytes of the file mapped (and allocated) from offset 0. Release by
    /// `ensure`, paired with the Acquire load in `Writer::append`.
    mapped: AtomicUsize,
    chunk: usize,
    /// The writer has passed half of the last chunk.
    wanted: AtomicBool,
    grow: Mutex<()>,
}

// SAFETY: `base` is a reservation owned by this mapping; growth is
// serialized by `grow`, and the bytes behind it are accessed only by the
// writer (see `Writer`).
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

/// Appends records to one journal file. One per file, in the publisher.
pub(crate) struct Writer {
    map: Arc<Mapping>,
    /// The writer's copy of `map.mapped`.
    mapped: usize,
    header: JournalHeader,
    rs: usize,
    /// Records in the valid prefix.
    count: u64,
}

impl Mapping {
    /// Allocates and maps the file up to `end` bytes (a multiple of chunk).
    /// From the writer, or ahead of it from the flusher.
    fn ensure(&self, end: usize) -> Result<(), AppendError> {
        let _g = self.grow.lock().unwrap_or_else(|e| e.into_inner());
        let from = self.mapped.load(Ordering::Relaxed);
        if end <= from {
            return Ok(());
        }
        if end > RESERVE {
            return Err(AppendError::Full {
                path: self.path.clone(),
                len: end as u64,
            });
        }
        let len = end - from;
        let io = |what: &'static str| {
            let path = self.path.clone();
            move |e: io::Error| AppendError::from_io(path, what, end as u64, e)
        };
        match rustix::fs::fallocate(
            self.file.as_fd(),
            rustix::fs::FallocateFlags::empty(),
            from as u64,
            len as u64,
        ) {
            Ok(()) => {}
            Err(rustix::io::Errno::OPNOTSUPP) => {
                // A file system without fallocate: write the zeros instead,
                // which allocates the blocks just as well.
                let zeros = vec![0u8; len];
                self.file
                    .write_all_at(&zeros, from as u64)
                    .map_err(io("allocate"))?;
            }
            Err(e) => return Err(io("allocate")(e.into())),
        }
        // SAFETY: [base + from, base + end) lies inside our reservation
        // (end <= RESERVE) and is not in use: MAP_FIXED replaces only our
        // own PROT_NONE pages. The file is at least `end` bytes long now.
        let addr = unsafe { self.base.as_ptr().add(from) };
        // SAFETY: as above.
        unsafe {
            rustix::mm::mmap(
                addr.cast(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED | MapFlags::FIXED,
                self.file.as_fd(),
                from as u64,
            )
        }
        .map_err(|e| io("mmap")(e.into()))?;
        // Best effort: take the write faults now, in one call. Kernels
        // before 5.14 lack it; the faults then happen on first write.
        // SAFETY: the range was just mapped read-write.
        let _ = unsafe {
            rustix::mm::madvise(addr.cast(), len, rustix::mm::Advice::LinuxPopulateWrite)
        };
        // Release, paired with the Acquire load in `Writer::append`.
        self.mapped.store(end, Ordering::Release);
        Ok(())
    }

    /// Grows by a chunk if the writer asked for it. The flusher's job;
    /// errors are left for the writer's own `ensure` to report.
    pub(crate) fn grow_if_wanted(&self) {
        if self.wanted.swap(false, Ordering::Relaxed) {
            let end = self.mapped.load(Ordering::Relaxed) + self.chunk;
            let _ = self.ensure(end);
        }
    }
}

/// `fchmod`s `file` to exactly `mode` unless it has it already.
fn set_mode(file: &File, path: &Path, mode: u32) -> Result<(), JournalOpenError> {
    let io = |e: rustix::io::Errno| JournalOpenError::io(path, "chmod", e.into());
    let now = rustix::fs::fstat(file).map_err(io)?.st_mode & 0o7777;
    if now != mode {
        rustix::fs::fchmod(file, rustix::fs::Mode::from_raw_mode(mode)).map_err(io)?;
    }
    Ok(())
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the reservation is ours, and the last user has gone.
        let _ = unsafe { rustix::mm::munmap(self.base.as_ptr().cast(), RESERVE) };
    }
}

impl Writer {
    /// Creates a new journal file at `path` (never replacing one) with
    /// `header`, mode exactly `mode`: the bus's, whatever the umask (which
    /// `open(2)` applies, so `fchmod` sets it again, as the bus's creator
    /// does), so that whoever may read the bus may read its journal.
    pub(crate) fn create(
        path: &Path,
        header: JournalHeader,
        mode: u32,
        chunk: usize,
    ) -> Result<Writer, JournalOpenError> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(mode)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)
            .map_err(|e| JournalOpenError::io(path, "create", e))?;
        if let Err(e) = set_mode(&file, path, mode) {
            let _ = std::fs::remove_file(path);
            return Err(e);
        }
        let mut w = Writer::map_file(file, path, header, chunk)?;
        w.write_header(&header.encode());
        Ok(w)
    }

    /// Opens an existing journal for appending: checks its header against
    /// the bus's message (`msg_size`, `type_hash`), cuts it to its valid
    /// prefix (zeroing whatever followed), and maps it.
    pub(crate) fn open(
        path: &Path,
        msg_size: u32,
        type_hash: u64,
        chunk: usize,
    ) -> Result<Writer, JournalOpenError> {
        let file = open_journal(path, true)?;
        let header = read_header(&file, path)?;
        check_header_matches(path, &header, msg_size, type_hash)?;
        if header.sealed {
            return Err(JournalOpenError::Sealed {
                path: path.to_owned(),
            });
        }
        let read = |e| JournalOpenError::io(path, "read", e);
        let count = Reader::new(file.try_clone().map_err(read)?, header)
            .count()
            .map_err(read)?;
        let end = HEADER_LEN as u64 + count * header.record_size() as u64;
        // Whatever follows the valid prefix (a torn record) goes, so that no
        // stale record can ever follow a new one.
        file.set_len(end)
            .map_err(|e| JournalOpenError::io(path, "truncate", e))?;
        let mut w = Writer::map_file(file, path, header, chunk)?;
        w.count = count;
        Ok(w)
    }

    /// Gives the file exactly `mode` (see [`Writer::create`]).
    pub(crate) fn set_mode(&self, mode: u32) -> Result<(), JournalOpenError> {
        set_mode(&self.map.file, &self.map.path, mode)
    }

    fn map_file(
        file: File,
        path: &Path,
        header: JournalHeader,
        chunk: usize,
    ) -> Result<Writer, JournalOpenError> {
        let page = rustix::param::page_size();
        let chunk = chunk.max(page).div_ceil(page) * page;
        let base = crate::mem::shm::reserve_address_space(RESERVE)
            .map_err(|e| JournalOpenError::io(path, "reserve address space", e))?;
        let map = Arc::new(Mapping {
            file,
            path: path.to_owned(),
            base: NonNull::new(base.cast()).expect("mmap returns non-null"),
            mapped: AtomicUsize::new(0),
            chunk,
            wanted: AtomicBool::new(false),
            grow: Mutex::new(()),
        });
        let len = map.file.metadata().map(|m| m.len()).unwrap_or(0) as usize;
        let want = (len.max(HEADER_LEN)).div_ceil(chunk) * chunk;
        map.ensure(want).map_err(|e| match e {
            AppendError::Full { path, len } => JournalOpenError::Full { path, len },
            AppendError::Io { what, source, .. } => JournalOpenError::io(path, what, source),
            AppendError::TooLong { .. } => unreachable!("growth appends nothing"),
        })?;
        let w = Writer {
            mapped: map.mapped.load(Ordering::Acquire),
            map,
            header,
            rs: header.record_size(),
            count: 0,
        };
        Ok(w)
    }

    fn write_header(&mut self, bytes: &[u8; HEADER_LEN]) {
        // SAFETY: the header lies in the first mapped chunk; `&mut self`.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.map.base.as_ptr(), HEADER_LEN)
        };
    }

    /// Appends record `seq` with payload `msg` (at most the message size;
    /// the rest is zero-padded). The check word is stored last.
    #[inline]
    pub(crate) fn append(&mut self, seq: u64, msg: &[u8]) -> Result<bool, AppendError> {
        let at = HEADER_LEN + self.count as usize * self.rs;
        let mut wake = false;
        if at + self.rs + self.map.chunk / 2 > self.mapped {
            wake = self.refresh(at)?;
        }
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prefetch is only a hint; it never faults, even on an
        // address that is not mapped.
        unsafe {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_ET0};
            _mm_prefetch::<_MM_HINT_ET0>(self.map.base.as_ptr().wrapping_add(at + 2048).cast());
        }
        let rs = self.rs;
        let words = (rs - 16) / 8;
        let full = msg.len() / 8;
        // SAFETY: [at, at + rs) is mapped read-write (grown above) and past
        // the valid prefix, so nothing in this process reads it yet. Every
        // record offset is a multiple of 8 from a page-aligned base, so the
        // u64 pointers are aligned; msg.len() <= rs - 16 (callers check).
        let h = unsafe {
            let rec = self.map.base.as_ptr().add(at).cast::<u64>();
            rec.write(seq.to_le());
            let mut h = format::check_start(seq);
            // Words are stored and folded into the check in one pass, with
            // no call to memcpy for these few bytes.
            for i in 0..words {
                let w = if i < full {
                    u64::from_le_bytes(msg[i * 8..i * 8 + 8].try_into().expect("8 bytes"))
                } else {
                    let mut last = [0u8; 8];
                    let from = (i * 8).min(msg.len());
                    last[..msg.len() - from].copy_from_slice(&msg[from..]);
                    u64::from_le_bytes(last)
                };
                rec.add(1 + i).write(w.to_le());
                h = format::check_step(h, w);
            }
            h
        };
        let c = format::check_finish(h);
        // SAFETY: 8 aligned bytes inside the record: records start at 64 + a
        // multiple of rs (itself a multiple of 8) from a page-aligned base.
        let check_word = unsafe { &*(self.map.base.as_ptr().add(at + rs - 8) as *const AtomicU64) };
        // Release: the record's other bytes are stored before the check (see
        // the module invariants; a crash is what this orders against).
        check_word.store(c.to_le(), Ordering::Release);
        self.count += 1;
        Ok(wake)
    }

    /// The slow part of an append: the flusher may have mapped more; if
    /// not, grow now; ask the flusher to grow ahead (true: wake it).
    #[cold]
    fn refresh(&mut self, at: usize) -> Result<bool, AppendError> {
        // Acquire, paired with the Release store in `Mapping::ensure`.
        self.mapped = self.map.mapped.load(Ordering::Acquire);
        let chunk = self.map.chunk;
        if at + self.rs > self.mapped {
            self.map.ensure((at + self.rs).div_ceil(chunk) * chunk)?;
            self.mapped = self.map.mapped.load(Ordering::Acquire);
        }
        let short = at + self.rs + chunk / 2 > self.mapped;
        if short && !self.map.wanted.load(Ordering::Relaxed) {
            self.map.wanted.store(true, Ordering::Relaxed);
            return Ok(true);
        }
        Ok(false)
    }

    /// Bytes of record `index` (below the valid prefix's length).
    pub(crate) fn record(&self, index: u64) -> &[u8] {
        assert!(index < self.count, "record {index} not written yet");
        let at = HEADER_LEN + index as usize * self.rs;
        // SAFETY: below `count`, so mapped and never written again.
        unsafe { std::slice::from_raw_parts(self.map.base.as_ptr().add(at), self.rs) }
    }

    /// Marks the file as replaced by a newer one at the same path.
    pub(crate) fn seal(&mut self) {
        let h = JournalHeader {
            sealed: true,
            ..self.header
        };
        self.write_header(&h.encode());
    }

    /// Records in the valid prefix.
    pub(crate) fn count(&self) -> u64 {
        self.count
    }

    /// The header the file was written with.
    pub(crate) fn header(&self) -> JournalHeader {
        self.header
    }

    /// The sequence the next contiguous record carries.
    pub(crate) fn next_seq(&self) -> u64 {
        self.header
            .base
            .wrapping_add(self.count.saturating_sub(self.header.snapshot))
    }

    /// The file, for `fdatasync` from the flusher.
    pub(crate) fn file(&self) -> &File {
        &self.map.file
    }

    /// The mapping, for the flusher to grow ahead.
    pub(crate) fn mapping(&self) -> Arc<Mapping> {
        Arc::clone(&self.map)
    }
}
