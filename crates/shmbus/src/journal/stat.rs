//! What a journal file holds, read from outside ([`stat`]): its header
//! and its count of valid records.

use std::path::{Path, PathBuf};

use super::error::OpenError;
use super::reader;

/// What `stat` shows of a journal file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stat {
    /// The file.
    pub path: PathBuf,
    /// Its size on disk (allocated ahead of the records).
    pub file_bytes: u64,
    /// Records in the valid prefix.
    pub records: u64,
    /// Of which snapshot records.
    pub snapshot: u64,
    /// Sequence of the first record after the snapshot.
    pub base: u64,
    /// The sequence after the last record.
    pub next: u64,
}

/// Reads a journal file's header and counts its valid records.
pub fn stat(path: &Path) -> Result<Stat, OpenError> {
    let file = reader::open_journal(path, false)?;
    let h = reader::read_header(&file, path)?;
    let read = |e| OpenError::io(path, "read", e);
    let records = reader::Reader::new(file.try_clone().map_err(read)?, h)
        .count()
        .map_err(read)?;
    let file_bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
    Ok(Stat {
        path: path.to_owned(),
        file_bytes,
        records,
        snapshot: h.snapshot.min(records),
        base: h.base,
        next: h.base.wrapping_add(records.saturating_sub(h.snapshot)),
    })
}
