//! Appending to a journal file through a shared mapping, so that an append
//! is a few stores and no system call.
//!
//! The file lives in a [`GrowableRegion`]: it grows in chunks whose blocks
//! are allocated before they are mapped (a full disk is an error here,
//! never a `SIGBUS` on a later store), into one address range reserved up
//! front, so records already written stay where they are. The writer
//! reaches the bytes only through the region's [`Region`] capabilities: a
//! record is atomic words, stored Relaxed past the valid prefix, which it
//! alone writes, and its check word last with Release. The header and
//! reads of its own records use plain bytes.

use std::fs::File;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Arc;

use super::error::{AppendError, OpenError};
use super::format::{self, HEADER_LEN, JournalHeader};
use super::reader::{Reader, check_header_matches, open_journal, read_header};
use crate::mem::Region;
use crate::mem::growable::{GrowError, GrowableRegion};
use crate::sync::Ordering;

/// Address space reserved per journal file (not memory: `PROT_NONE`,
/// `MAP_NORESERVE`). A journal cannot grow beyond it.
const RESERVE: usize = 1 << 40;

/// Appends records to one journal file. One per file, in the publisher.
///
/// Its region is shared with the grower thread, which grows it ahead of
/// the writer so that the hot path does not pay for `fallocate`, the page
/// cache and the page faults: the writer asks for a chunk while less than
/// one is mapped ahead of it, so the grower has a whole chunk's worth of
/// appends to grow the next. The bytes past the valid prefix are written
/// by the writer alone; the prefix is never written again, except the
/// header's `sealed` flag by `seal` (plain bytes, the header being the
/// writer's), and other processes read the file only with `pread`.
pub(crate) struct Writer {
    map: Arc<GrowableRegion>,
    /// The writer's copy of `map.mapped()`.
    mapped: usize,
    /// Where the next record goes: the valid prefix's length.
    end: usize,
    /// `append` takes its slow path (`refresh`) from this offset on; every
    /// record that starts below it fits in `mapped`.
    refresh_at: usize,
    header: JournalHeader,
    rs: usize,
    /// Records in the valid prefix.
    count: u64,
}

/// How often, in bytes appended, a writer with less than a chunk mapped
/// ahead looks whether the grower has mapped more.
const RECHECK: usize = 4096;

impl AppendError {
    fn grow(path: &Path, e: GrowError) -> AppendError {
        match e {
            GrowError::Reserve { len } => AppendError::Full {
                path: path.to_owned(),
                len,
            },
            GrowError::Io { what, len, source } => {
                AppendError::from_io(path.to_owned(), what, len, source)
            }
        }
    }
}

/// Gives `file` the group `group` (when asked and not already its) and
/// then exactly `mode` (unless it has it already): the group first, so
/// the mode's group bits never let in the group the file had before.
fn set_mode(file: &File, path: &Path, mode: u32, group: Option<u32>) -> Result<(), OpenError> {
    let io = |e: rustix::io::Errno| OpenError::io(path, "chmod", e.into());
    let st = rustix::fs::fstat(file).map_err(io)?;
    if let Some(gid) = group.filter(|&g| g != st.st_gid) {
        rustix::fs::fchown(file, None, Some(rustix::process::Gid::from_raw(gid)))
            .map_err(|e| OpenError::io(path, "chgrp", e.into()))?;
    }
    let now = st.st_mode & 0o7777;
    if now != mode {
        rustix::fs::fchmod(file, rustix::fs::Mode::from_raw_mode(mode)).map_err(io)?;
    }
    Ok(())
}

/// Whom an existing journal must belong to before its records are taken
/// as a bus's history: a file anyone else could have written is another
/// user's words put in the bus's mouth.
#[derive(Clone, Debug)]
pub(crate) struct Trust {
    /// Owners accepted (the caller's effective uid, and for an attaching
    /// publisher the bus file's owner).
    pub(crate) owners: Vec<u32>,
    /// The bus's mode: the journal may let write only whom it lets write.
    pub(crate) mode: u32,
}

impl Trust {
    /// The caller's own journal, for a bus of `mode`.
    pub(crate) fn own(mode: u32) -> Trust {
        Trust {
            owners: vec![rustix::process::geteuid().as_raw()],
            mode,
        }
    }

    fn check(&self, file: &File, path: &Path) -> Result<(), OpenError> {
        let st = rustix::fs::fstat(file).map_err(|e| OpenError::io(path, "stat", e.into()))?;
        let mode = st.st_mode & 0o7777;
        // Write bits for group and others beyond the bus's own.
        let extra_write = mode & 0o022 & !self.mode;
        if self.owners.contains(&st.st_uid) && extra_write == 0 {
            return Ok(());
        }
        Err(OpenError::NotOwned {
            path: path.to_owned(),
            owner: st.st_uid,
            mode,
            trusted: self.owners.clone(),
            allowed: self.mode & 0o777,
        })
    }
}

impl Writer {
    /// Creates a new journal file at `path` (never replacing one) with
    /// `header`, mode exactly `mode`: the bus's, whatever the umask (which
    /// `open(2)` applies, so `fchmod` sets it again, as the bus's creator
    /// does), so that whoever may read the bus may read its journal; and
    /// with `group`, the bus's group (before the mode: the file is made
    /// owner-only until both are set).
    /// `ahead` bytes past the header are allocated and mapped at once
    /// (rounded up to a chunk; at least one chunk is).
    pub(crate) fn create(
        path: &Path,
        header: JournalHeader,
        mode: u32,
        group: Option<u32>,
        chunk: usize,
        ahead: usize,
    ) -> Result<Writer, OpenError> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(mode & 0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)
            .map_err(|e| OpenError::io(path, "create", e))?;
        if let Err(e) = set_mode(&file, path, mode, group) {
            let _ = std::fs::remove_file(path);
            return Err(e);
        }
        let mut w = Writer::map_file(file, path, header, chunk, ahead)?;
        w.write_header(&header.encode());
        Ok(w)
    }

    /// Opens an existing journal for appending: checks its header against
    /// the bus's message (`msg_size`, `type_hash`), cuts it to its valid
    /// prefix (zeroing whatever followed), and maps it, with `ahead` bytes
    /// past the records allocated and mapped at once (as in `create`).
    /// A file `trust` does not accept is refused before any of that.
    pub(crate) fn open(
        path: &Path,
        msg_size: u32,
        type_hash: u64,
        trust: &Trust,
        chunk: usize,
        ahead: usize,
    ) -> Result<Writer, OpenError> {
        let file = open_journal(path, true)?;
        trust.check(&file, path)?;
        let header = read_header(&file, path)?;
        check_header_matches(path, &header, msg_size, type_hash)?;
        if header.sealed {
            return Err(OpenError::Sealed {
                path: path.to_owned(),
            });
        }
        let read = |e| OpenError::io(path, "read", e);
        let count = Reader::new(file.try_clone().map_err(read)?, header)
            .count()
            .map_err(read)?;
        let end = HEADER_LEN as u64 + count * header.record_size() as u64;
        // Whatever follows the valid prefix (a torn record) goes, so that no
        // stale record can ever follow a new one.
        file.set_len(end)
            .map_err(|e| OpenError::io(path, "truncate", e))?;
        let mut w = Writer::map_file(file, path, header, chunk, ahead)?;
        w.count = count;
        w.end = end as usize;
        Ok(w)
    }

    /// Gives the file exactly `mode` (see [`Writer::create`]).
    pub(crate) fn set_mode(&self, mode: u32, group: Option<u32>) -> Result<(), OpenError> {
        set_mode(self.map.file(), self.map.path(), mode, group)
    }

    fn map_file(
        file: File,
        path: &Path,
        header: JournalHeader,
        chunk: usize,
        ahead: usize,
    ) -> Result<Writer, OpenError> {
        let len = file.metadata().map(|m| m.len()).unwrap_or(0) as usize;
        let initial = len.max(HEADER_LEN).saturating_add(ahead);
        let map = GrowableRegion::map(file, path, chunk, RESERVE, initial).map_err(|e| {
            match AppendError::grow(path, e) {
                AppendError::Full { path, len } => OpenError::Full { path, len },
                AppendError::Io { what, source, .. } => OpenError::io(path, what, source),
                AppendError::TooLong { .. } => unreachable!("growth appends nothing"),
            }
        })?;
        let map = Arc::new(map);
        let w = Writer {
            mapped: map.mapped(),
            map,
            end: HEADER_LEN,
            refresh_at: 0,
            header,
            rs: header.record_size(),
            count: 0,
        };
        Ok(w)
    }

    fn write_header(&mut self, bytes: &[u8; HEADER_LEN]) {
        // SAFETY: plain-bytes capability. The header lies in the first
        // mapped chunk; `&mut self` and the writer's sole ownership of its
        // file's bytes (see `Writer`) mean nothing in this process accesses
        // them meanwhile.
        unsafe { self.map.copy_in(0, bytes) };
    }

    /// Appends record `seq` with payload `msg` (at most the message size;
    /// the rest is zero-padded). The check word is stored last. True: the
    /// grower should be woken to grow the file ahead.
    #[inline]
    pub(crate) fn append(&mut self, seq: u64, msg: &[u8]) -> Result<bool, AppendError> {
        let at = self.end;
        let wake = at >= self.refresh_at && self.refresh(at)?;
        let rs = self.rs;
        // The record as atomic words: one bounds check for all of them, and
        // stores no wider than the plain ones would be (x86-64: `mov`).
        let rec = self.map.words(at, rs / 8);
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prefetch is only a hint; it never faults, even on an
        // address that is not mapped.
        unsafe {
            use std::arch::x86_64::{_MM_HINT_ET0, _mm_prefetch};
            _mm_prefetch::<_MM_HINT_ET0>(rec.as_ptr().cast::<u8>().wrapping_add(2048).cast());
        }
        let (check, body) = rec.split_last().expect("a record has a check word");
        let (first, payload) = body.split_first().expect("a record has a sequence");
        // Relaxed: these words are past the valid prefix, read by no one in
        // this process until `count` covers them; the check word's Release
        // below orders them for everyone else.
        first.store(seq.to_le(), Ordering::Relaxed);
        let mut h = format::check_start(seq);
        let (full, tail) = msg.split_at(msg.len() / 8 * 8);
        let (stored, padded) = payload.split_at(full.len() / 8);
        // Words are stored and folded into the check in one pass, with no
        // call to memcpy for these few bytes. msg.len() <= rs - 16 (callers
        // check), so there is a word for each.
        for (dst, src) in stored.iter().zip(full.chunks_exact(8)) {
            let w = u64::from_le_bytes(src.try_into().expect("8 bytes"));
            dst.store(w.to_le(), Ordering::Relaxed);
            h = format::check_step(h, w);
        }
        // The last bytes, little-endian, without a call to memcpy.
        let mut pad = 0u64;
        for (i, &b) in tail.iter().enumerate() {
            pad |= u64::from(b) << (8 * i);
        }
        for dst in padded {
            dst.store(pad.to_le(), Ordering::Relaxed);
            h = format::check_step(h, pad);
            pad = 0;
        }
        let c = format::check_finish(h);
        // Release: the record's other bytes are stored before its check
        // word, also as a `pread` of the page cache from another process
        // sees them. No load pairs with it directly: a joiner's Acquire
        // partner is the stamp of ring slot `seq`, stored after this (the
        // journal's invariants), and every reader of the file validates the
        // check instead of trusting an order.
        check.store(c.to_le(), Ordering::Release);
        self.count += 1;
        self.end = at + rs;
        Ok(wake)
    }

    /// The slow part of an append: the grower may have mapped more; if
    /// not, grow now (the writer's one wait for the kernel, when the grower
    /// fell a whole chunk behind); with less than a chunk mapped ahead, ask
    /// the grower to grow (true: wake it) and look again a page later.
    #[cold]
    fn refresh(&mut self, at: usize) -> Result<bool, AppendError> {
        self.mapped = self.map.mapped();
        let chunk = self.map.chunk();
        let need = at + self.rs;
        if need > self.mapped {
            self.map
                .ensure(need.div_ceil(chunk) * chunk)
                .map_err(|e| AppendError::grow(self.map.path(), e))?;
            self.mapped = self.map.mapped();
        }
        let ahead = self.mapped - need;
        if ahead >= chunk {
            self.refresh_at = self.mapped - self.rs - chunk + 1;
            return Ok(false);
        }
        self.refresh_at = (at + RECHECK).min(self.mapped - self.rs + 1);
        Ok(self.map.want_growth())
    }

    /// Bytes of record `index` (below the valid prefix's length).
    pub(crate) fn record(&self, index: u64) -> &[u8] {
        assert!(index < self.count, "record {index} not written yet");
        let at = HEADER_LEN + index as usize * self.rs;
        let p = self
            .map
            .raw(at, self.rs)
            .expect("a file mapping lends plain memory");
        // SAFETY: plain-bytes capability. Below `count`, so mapped, written
        // by this writer only (as atomic words, by `append` before it
        // counted them, on this thread or before `&mut self` passed here),
        // and never written again while `&self` lives (`append` and `seal`
        // take `&mut self`; `seal` writes only the header).
        unsafe { std::slice::from_raw_parts(p.as_ptr(), self.rs) }
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
        self.map.file()
    }

    /// The mapping, for the grower to grow ahead.
    pub(crate) fn mapping(&self) -> Arc<GrowableRegion> {
        Arc::clone(&self.map)
    }
}

// Real files and mappings, which Miri does not model.
#[cfg(all(test, not(miri)))]
mod tests {
    use super::*;

    fn temp(name: &str) -> std::path::PathBuf {
        let path =
            std::env::temp_dir().join(format!("shmbus-writer-{name}-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        path
    }

    fn header() -> JournalHeader {
        JournalHeader {
            msg_size: 16,
            type_hash: 7,
            base: 0,
            snapshot: 0,
            sealed: false,
        }
    }

    #[test]
    fn a_writer_asks_once_for_growth_while_less_than_a_chunk_is_mapped_ahead_and_grows_itself_at_the_end()
     {
        let path = temp("ahead");
        let page = rustix::param::page_size();
        let mut w = Writer::create(&path, header(), 0o600, None, page, 0).unwrap();
        let map = w.mapping();
        let per_chunk = page / w.rs;
        // One chunk mapped, none ahead: the first append asks, the rest of
        // the chunk does not ask again while the request is pending.
        assert!(w.append(0, &[1; 16]).unwrap(), "the first append asks");
        let mut seq = 1;
        while HEADER_LEN + (seq as usize + 1) * w.rs <= page {
            assert!(
                !w.append(seq, &[1; 16]).unwrap(),
                "a pending request is not new"
            );
            seq += 1;
        }
        // Nobody served it: the writer grows the file itself, in place.
        assert!(!w.append(seq, &[2; 16]).unwrap());
        seq += 1;
        assert_eq!(map.mapped(), 2 * page);
        // Served now: two chunks ahead until the writer is in the last one.
        map.grow_if_wanted();
        assert_eq!(map.mapped(), 3 * page);
        let mut asked = 0;
        for _ in 0..per_chunk {
            // A short message: its last word is zero-padded.
            asked += usize::from(w.append(seq, &[3; 11]).unwrap());
            seq += 1;
        }
        assert_eq!(asked, 1, "one request as the writer enters its last chunk");
        assert_eq!(w.count(), seq);
        for i in 0..seq {
            let rec = w.record(i);
            let payload: Vec<u64> = rec[8..w.rs - 8]
                .chunks_exact(8)
                .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
                .collect();
            let check = u64::from_le_bytes(rec[w.rs - 8..].try_into().unwrap());
            assert_eq!(u64::from_le_bytes(rec[..8].try_into().unwrap()), i);
            if i + per_chunk as u64 >= seq {
                assert_eq!(&rec[8..19], &[3; 11]);
                assert_eq!(&rec[19..24], &[0; 5], "zero-padded");
            }
            assert_eq!(check, format::check(i, payload), "record {i}");
        }
        std::fs::remove_file(&path).unwrap();
    }
}
