//! Reading a journal file front to back in large chunks: the one reader
//! behind a joiner's bootstrap, the compactor's fold, recovery's count of
//! the valid prefix, and `stat`; and [`open_journal`], the one way an
//! existing journal file is opened.
//!
//! # Invariants
//! - The journal's path comes from a bus header, which whoever created the
//!   bus wrote: untrusted. Every open of an existing journal (join, `.prev`,
//!   `stat`, a publisher's recovery) goes through [`open_journal`], which
//!   never follows a symlink, never blocks, and hands out regular files
//!   only: a FIFO there would block a plain `open(2)` forever, a device
//!   would be read (or written) as if it were a journal, and a symlink
//!   would let the bus's creator point a reader at any file.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

use rustix::fs::{FileType, Mode, OFlags};

use super::error::OpenError;
use super::format::{self, HEADER_LEN, JournalHeader};

/// What a file of type `t` is called in an error; `None` for a regular file.
fn not_regular(t: FileType) -> Option<&'static str> {
    Some(match t {
        FileType::RegularFile => return None,
        FileType::Fifo => "a FIFO",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        FileType::Symlink => "a symlink",
        FileType::Directory => "a directory",
        FileType::Socket => "a socket",
        FileType::Unknown => "a file of unknown type",
    })
}

/// Opens the existing journal file at `path` (read-write if `write`),
/// refusing anything but a regular file with
/// [`OpenError::NotRegular`]. No step waits: `lstat` first, so that
/// a device is never opened at all (opening some has side effects); then
/// `O_NOFOLLOW | O_NONBLOCK`, and `fstat` of what was opened, in case the
/// path changed in between. `O_NONBLOCK` is left set: it changes nothing
/// for a regular file.
pub(crate) fn open_journal(path: &Path, write: bool) -> Result<File, OpenError> {
    let refuse = |found| OpenError::NotRegular {
        path: path.to_owned(),
        found,
    };
    let st = rustix::fs::lstat(path).map_err(|e| OpenError::io(path, "stat", e.into()))?;
    if let Some(found) = not_regular(FileType::from_raw_mode(st.st_mode)) {
        return Err(refuse(found));
    }
    let access = if write { OFlags::RDWR } else { OFlags::RDONLY };
    let flags = access | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = match rustix::fs::open(path, flags, Mode::empty()) {
        Ok(fd) => fd,
        // O_NOFOLLOW's answer for a symlink in the last component.
        Err(rustix::io::Errno::LOOP) => return Err(refuse("a symlink")),
        Err(e) => return Err(OpenError::io(path, "open", e.into())),
    };
    let st = rustix::fs::fstat(&fd).map_err(|e| OpenError::io(path, "stat", e.into()))?;
    if let Some(found) = not_regular(FileType::from_raw_mode(st.st_mode)) {
        return Err(refuse(found));
    }
    Ok(File::from(fd))
}

/// Reads up to `buf.len()` bytes at `offset`, short only at end of file.
pub(crate) fn read_full(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read_at(&mut buf[n..], offset + n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// The decoded, checked header of the journal file `file` at `path`.
pub(crate) fn read_header(file: &File, path: &Path) -> Result<JournalHeader, OpenError> {
    let mut head = [0u8; HEADER_LEN];
    let n = read_full(file, &mut head, 0).map_err(|e| OpenError::io(path, "read", e))?;
    JournalHeader::decode(&head[..n]).map_err(|source| OpenError::Header {
        path: path.to_owned(),
        source,
    })
}

/// The journal's message must be the bus's.
pub(crate) fn check_header_matches(
    path: &Path,
    h: &JournalHeader,
    msg_size: u32,
    type_hash: u64,
) -> Result<(), OpenError> {
    if h.msg_size != msg_size || h.type_hash != type_hash {
        return Err(OpenError::TypeMismatch {
            path: path.to_owned(),
            found: (h.msg_size, h.type_hash),
            expected: (msg_size, type_hash),
        });
    }
    Ok(())
}

/// The byte offset of record `index`, if it is a representable one.
fn record_offset(index: u64, rs: usize) -> Option<u64> {
    index
        .checked_mul(rs as u64)
        .and_then(|b| b.checked_add(HEADER_LEN as u64))
}

/// Why [`Reader::snapshot_lower_bound`] found no answer.
#[derive(Debug)]
pub(crate) enum SnapshotFault {
    /// The file could not be read.
    Io(io::Error),
    /// Snapshot record `index` is not a whole record in order.
    Record { index: u64, end: format::End },
}

/// A journal file's records, read in 1 MiB chunks.
pub(crate) struct Reader {
    file: File,
    pub(crate) header: JournalHeader,
    /// Next record to return.
    pub(crate) index: u64,
    /// Sequence of the previous snapshot record (its order is checked).
    prev: Option<u64>,
    pub(crate) buf: Vec<u8>,
    /// Record index of `buf[0]`, and whole records in `buf`.
    pub(crate) buf_first: u64,
    pub(crate) buf_records: u64,
}

impl Reader {
    /// A reader of `file`, whose header is `header`, at record 0.
    pub(crate) fn new(file: File, header: JournalHeader) -> Reader {
        let rs = header.record_size();
        Reader {
            file,
            header,
            index: 0,
            prev: None,
            buf: vec![0u8; ((1 << 20) / rs).max(1) * rs],
            buf_first: 0,
            buf_records: 0,
        }
    }

    /// Opens the journal at `path` for a bus of this message.
    pub(crate) fn open(path: &Path, msg_size: u32, type_hash: u64) -> Result<Reader, OpenError> {
        let file = open_journal(path, false)?;
        let header = read_header(&file, path)?;
        check_header_matches(path, &header, msg_size, type_hash)?;
        Ok(Reader::new(file, header))
    }

    /// Positions at record `index`.
    pub(crate) fn seek_index(&mut self, index: u64) {
        self.index = index;
        self.prev = None;
    }

    /// Positions at the record of sequence `seq`, or at the start when
    /// `seq` is below the contiguous part (folded into the snapshot).
    pub(crate) fn seek(&mut self, seq: u64) {
        let contiguous = (seq.wrapping_sub(self.header.base) as i64) >= 0;
        let index = match self.header.index_of(seq) {
            Some(i) if contiguous => i,
            _ => 0,
        };
        self.seek_index(index);
    }

    /// The next record of the valid prefix as (sequence, in the snapshot,
    /// payload), or `None` at its end for now.
    pub(crate) fn next(&mut self) -> io::Result<Option<(u64, bool, &[u8])>> {
        let rs = self.header.record_size();
        if self.index < self.buf_first || self.index >= self.buf_first + self.buf_records {
            // An index from an untrusted header (a huge snapshot count) may
            // lie past any file: no record there.
            let Some(off) = record_offset(self.index, rs) else {
                return Ok(None);
            };
            let n = read_full(&self.file, &mut self.buf, off)?;
            self.buf_first = self.index;
            self.buf_records = (n / rs) as u64;
            if self.buf_records == 0 {
                return Ok(None);
            }
        }
        let at = (self.index - self.buf_first) as usize * rs;
        // A snapshot record's order is checked against the previous one;
        // after a seek into the snapshot we have none, which only loosens
        // the check, never the checksum.
        match format::parse_record(&self.header, self.index, self.prev, &self.buf[at..]) {
            Ok(r) => {
                let snapshot = self.index < self.header.snapshot;
                self.prev = snapshot.then_some(r.seq);
                self.index += 1;
                Ok(Some((r.seq, snapshot, r.payload)))
            }
            Err(_) => {
                // Not (yet) a whole record: read again next time.
                self.buf_records = 0;
                Ok(None)
            }
        }
    }

    /// How many records the file's length has room for (written or not).
    pub(crate) fn held(&self) -> io::Result<u64> {
        let len = self.file.metadata()?.len();
        Ok(len.saturating_sub(HEADER_LEN as u64) / self.header.record_size() as u64)
    }

    /// The index of the first snapshot record whose sequence is at or after
    /// `seq` (the snapshot's sequences increase), or the snapshot's end, by
    /// bisection: at most 64 reads of one record each. The snapshot count is
    /// the header's, untrusted: the search is bounded by the records the
    /// file can hold, and a probe that does not parse is an error, never a
    /// guess (the order bisection relies on is only known for whole
    /// records).
    pub(crate) fn snapshot_lower_bound(&self, seq: u64) -> Result<u64, SnapshotFault> {
        let rs = self.header.record_size();
        let held = self.held().map_err(SnapshotFault::Io)?;
        let (mut lo, mut hi) = (0u64, self.header.snapshot.min(held));
        let mut rec = vec![0u8; rs];
        // Each pass halves hi - lo < 2^64: at most 64 passes.
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let off = record_offset(mid, rs).ok_or(SnapshotFault::Record {
                index: mid,
                end: format::End::Short,
            })?;
            let n = read_full(&self.file, &mut rec, off).map_err(SnapshotFault::Io)?;
            let r = format::parse_record(&self.header, mid, None, &rec[..n])
                .map_err(|end| SnapshotFault::Record { index: mid, end })?;
            if (r.seq.wrapping_sub(seq) as i64) >= 0 {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        Ok(lo)
    }

    /// Whether the record at the current position is there and valid
    /// (without moving past it).
    pub(crate) fn has_next(&mut self) -> bool {
        let (index, prev) = (self.index, self.prev);
        let there = matches!(self.next(), Ok(Some(_)));
        (self.index, self.prev) = (index, prev);
        there
    }

    /// Reads to the end of the valid prefix; returns its length in records.
    pub(crate) fn count(mut self) -> io::Result<u64> {
        while self.next()?.is_some() {}
        Ok(self.index)
    }

    /// Whether a compaction has replaced this file since it was opened.
    pub(crate) fn sealed(&self) -> bool {
        let mut head = [0u8; HEADER_LEN];
        matches!(read_full(&self.file, &mut head, 0), Ok(HEADER_LEN))
            && JournalHeader::decode(&head).is_ok_and(|h| h.sealed)
    }
}
