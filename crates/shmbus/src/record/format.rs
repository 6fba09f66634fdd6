//! A recording's bytes (docs/RECORDING.md), shared by the writer and the
//! reader.
//!
//! ```text
//! file:   0 u64 magic "SHMBREC\0" · 8 u32 version (1 or 2) · 12 u32 part
//!         (v2; v1: zero) · v2 only: 16 u64 recording id · 24 u64 zero
//! record: 0 u32 type · 4 u32 body length L · 8 body (L bytes, zero-padded
//!         to a multiple of 8) · u64 check
//! ```
//!
//! The check is the journal's (`journal::format::check`) with the record's
//! first word (type | L << 32) as its seed and the padded body's words
//! folded in: never zero, so zeroed space never checks.

use crate::journal::format::{check, check_words, padded_words};

/// "SHMBREC\0" little-endian.
pub const MAGIC: u64 = u64::from_le_bytes(*b"SHMBREC\0");
/// The version this code writes (it reads 1 too).
pub const VERSION: u32 = 2;
/// The first version, still read.
pub const VERSION_1: u32 = 1;
/// Bytes before the first record of a version 1 file.
pub const HEADER_LEN: usize = 16;
/// Bytes before the first record of a version 2 file (and of an index).
pub const HEADER_V2: usize = 32;
/// "SHMBIDX\0" little-endian: an index side file.
pub const INDEX_MAGIC: u64 = u64::from_le_bytes(*b"SHMBIDX\0");
/// Index entry type: where a bus record is in the recording.
pub const INDEX_BUS: u32 = 1;
/// Index entry type: a position (a record boundary) and what came before.
pub const INDEX_POSITION: u32 = 2;
/// Bytes of an index bus entry's body.
pub const INDEX_BUS_LEN: usize = 16;
/// Bytes of an index position entry's body.
pub const INDEX_POSITION_LEN: usize = 32;
/// The most entries a reader takes from one index (32 MiB of them).
pub const MAX_INDEX_ENTRIES: usize = 1 << 20;
/// Bytes of a record's type and length.
pub const RECORD_HEAD: usize = 8;

/// Record type: a bus, once per bus, before its messages.
pub const TYPE_BUS: u32 = 1;
/// Record type: one message.
pub const TYPE_MESSAGE: u32 = 2;
/// Record type: messages the recorder missed.
pub const TYPE_GAP: u32 = 3;

/// Bytes of a version 1 bus record's body before the name.
pub const BUS_FIXED: usize = 16;
/// Bytes of a version 2 bus record's body before the type and bus names.
pub const BUS_FIXED_V2: usize = 56;
/// The longest message type name a version 2 bus record holds.
pub const MAX_TYPE_NAME: usize = 256;
/// Bus record flag: the recorder was a lossless subscriber.
pub const BUS_LOSSLESS: u32 = 1;
/// Bytes of a message record's body before the payload.
pub const MESSAGE_FIXED: usize = 32;
/// Bytes of a gap record's body.
pub const GAP_LEN: usize = 24;

/// The longest bus name a recording holds (a path's limit).
pub const MAX_NAME: usize = 4096;
/// The largest message a recording holds.
pub const MAX_MESSAGE: usize = 1 << 24;
/// The most buses one recording declares.
pub const MAX_BUSES: usize = 1 << 16;
/// The longest body of any record.
pub const MAX_BODY: usize = MESSAGE_FIXED + MAX_MESSAGE;

/// The body's length rounded up to 8.
pub fn padded(len: usize) -> usize {
    len.div_ceil(8) * 8
}

/// The check of a record of type `ty` and body `body`.
pub fn record_check(ty: u32, body: &[u8]) -> u64 {
    let head = u64::from(ty) | ((body.len() as u64) << 32);
    check(head, padded_words(body, padded(body.len())))
}

/// A version 2 file's (or index's, with [`INDEX_MAGIC`]) first 32 bytes.
pub fn header(magic: u64, part: u32, id: u64) -> [u8; HEADER_V2] {
    let mut h = [0u8; HEADER_V2];
    h[..8].copy_from_slice(&magic.to_le_bytes());
    h[8..12].copy_from_slice(&VERSION.to_le_bytes());
    h[12..16].copy_from_slice(&part.to_le_bytes());
    h[16..24].copy_from_slice(&id.to_le_bytes());
    h
}

/// One framed record (head, body zero-padded to 8, check) appended to `out`.
pub fn frame(out: &mut Vec<u8>, ty: u32, a: &[u8], b: &[u8]) {
    let len = a.len() + b.len();
    let start = out.len();
    out.extend_from_slice(&ty.to_le_bytes());
    out.extend_from_slice(&(len as u32).to_le_bytes());
    out.extend_from_slice(a);
    out.extend_from_slice(b);
    out.resize(start + 8 + padded(len), 0);
    // The body is zero-padded in place: its words straight from the slice
    // (the same check as `record_check`, without a copy per word).
    let head = u64::from(ty) | ((len as u64) << 32);
    let check = check_words(head, &out[start + 8..start + 8 + padded(len)]);
    out.extend_from_slice(&check.to_le_bytes());
}

/// A little-endian u32 at `off` of `b` (the caller checked the length).
pub fn u32_at(b: &[u8], off: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[off..off + 4]);
    u32::from_le_bytes(w)
}

/// A little-endian u64 at `off` of `b` (the caller checked the length).
pub fn u64_at(b: &[u8], off: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[off..off + 8]);
    u64::from_le_bytes(w)
}
