//! The journal file, to the byte (docs/LAYOUT.md §22), and its parser.
//!
//! ```text
//! 0    u64  magic "SHMJRNL\0"
//! 8    u32  version (1)
//! 12   u32  record size: 16 + message size rounded up to 8
//! 16   u32  message size
//! 20   u32  flags: bit 0 SEALED (a compaction replaced this file; the
//!           current one is at the same path)
//! 24   u64  message type hash (the bus's fingerprint)
//! 32   u64  base: sequence of the first record after the snapshot
//! 40   u64  snapshot: number of snapshot records at the start
//! 48   u64  header check: `check` of bytes 0..48 with the flags zeroed
//! 56   u64  zero
//! 64   records, `record size` bytes each:
//!      u64 sequence · payload (message size, zero-padded to 8) · u64 check
//! ```
//!
//! # Invariants
//! - One writer, the bus's publisher. Records are appended into space that
//!   was zero when allocated; a record is never changed once its check is
//!   stored, except that recovery cuts a torn record off the end.
//! - Records `0..snapshot` have strictly increasing sequences, all below
//!   `base`; record `snapshot + j` has sequence `base + j`. The file's valid
//!   prefix ends at the first record whose check or sequence is wrong, so a
//!   writer killed mid-record leaves a valid prefix and nothing else.
//! - The check is stored last (a Release store, but a crash, not another
//!   thread, is what it orders against: a kill stops the writer between two
//!   instructions, after which every earlier store is in the page cache).
//!   It is never zero, so zeroed space never parses as a record.

/// The journal's magic, "SHMJRNL\0" little-endian.
pub const MAGIC: u64 = u64::from_le_bytes(*b"SHMJRNL\0");
/// Version of the journal layout.
pub const VERSION: u32 = 1;
/// Bytes before the first record.
pub const HEADER_LEN: usize = 64;
/// Flag: a newer file replaced this one.
pub const SEALED: u32 = 1;

/// Field offsets in the journal header.
pub mod field {
    /// u64 magic.
    pub const MAGIC: usize = 0;
    /// u32 version.
    pub const VERSION: usize = 8;
    /// u32 record size.
    pub const RECORD_SIZE: usize = 12;
    /// u32 message size.
    pub const MSG_SIZE: usize = 16;
    /// u32 flags.
    pub const FLAGS: usize = 20;
    /// u64 message type hash.
    pub const TYPE_HASH: usize = 24;
    /// u64 first contiguous sequence.
    pub const BASE: usize = 32;
    /// u64 snapshot record count.
    pub const SNAPSHOT: usize = 40;
    /// u64 header check.
    pub const CHECK: usize = 48;
}

/// Bytes one record of a `msg_size`-byte message takes.
pub fn record_size(msg_size: u32) -> usize {
    16 + (msg_size as usize).div_ceil(8) * 8
}

/// The record and header checksum: each word multiplied by an odd constant
/// (a bijection, so any one changed word changes the sum) and folded in by
/// a rotate and xor, then one final mix. The multiplies are independent, so
/// the hot path pays about one multiply's latency, not one per word. Not
/// cryptographic; it tells a torn or zeroed record from a whole one. Never
/// zero, so zeroed space never checks.
#[inline]
pub fn check(seq: u64, words: impl IntoIterator<Item = u64>) -> u64 {
    let mut h = check_start(seq);
    for w in words {
        h = check_step(h, w);
    }
    check_finish(h)
}

/// [`check`] of the little-endian words of `bytes` (a tail shorter than
/// a word is not folded in), as one plain loop the compiler keeps tight:
/// what a reader of records pays per word.
#[inline(always)]
pub fn check_words(seed: u64, bytes: &[u8]) -> u64 {
    let mut h = check_start(seed);
    for c in bytes.chunks_exact(8) {
        h = check_step(
            h,
            u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]),
        );
    }
    check_finish(h)
}

const K: u64 = 0x9e37_79b9_7f4a_7c15;
const M: u64 = 0xbf58_476d_1ce4_e5b9;

/// [`check`] in parts, for writers that fold words in as they store them.
#[inline(always)]
pub fn check_start(seq: u64) -> u64 {
    (seq ^ 0x5348_4d4a_524e_4c31).wrapping_mul(K)
}

/// One word of [`check`].
#[inline(always)]
pub fn check_step(h: u64, w: u64) -> u64 {
    h.rotate_left(23) ^ w.wrapping_mul(M)
}

/// The end of [`check`].
#[inline(always)]
pub fn check_finish(h: u64) -> u64 {
    let h = (h ^ (h >> 31)).wrapping_mul(K);
    (h ^ (h >> 29)) | 1
}

/// The words of `msg` zero-padded to `len` bytes (a multiple of 8), as
/// they stand in a record's payload.
#[inline]
pub fn padded_words(msg: &[u8], len: usize) -> impl Iterator<Item = u64> + '_ {
    (0..len / 8).map(move |i| {
        let mut w = [0u8; 8];
        let from = (i * 8).min(msg.len());
        let to = (i * 8 + 8).min(msg.len());
        w[..to - from].copy_from_slice(&msg[from..to]);
        u64::from_le_bytes(w)
    })
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(b[off..off + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().expect("8 bytes"))
}

/// A journal file's header, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JournalHeader {
    /// Message size in bytes.
    pub msg_size: u32,
    /// Message type hash (the bus's).
    pub type_hash: u64,
    /// Sequence of the first record after the snapshot.
    pub base: u64,
    /// Snapshot records at the start.
    pub snapshot: u64,
    /// A compaction replaced this file.
    pub sealed: bool,
}

/// Why a journal file's header was refused.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HeaderError {
    /// Shorter than a header.
    #[error("journal file is {len} bytes, a header needs {HEADER_LEN}")]
    Short {
        /// Bytes read.
        len: usize,
    },
    /// Not a journal.
    #[error("not a shmbus journal: magic is {found:#018x}, expected {MAGIC:#018x}")]
    BadMagic {
        /// What the file holds.
        found: u64,
    },
    /// Another layout version.
    #[error("journal version {found}, expected {VERSION}")]
    Version {
        /// What the file holds.
        found: u32,
    },
    /// The record size does not match the message size.
    #[error("journal record size {found}, expected {expected} for {msg_size}-byte messages")]
    RecordSize {
        /// What the file holds.
        found: u32,
        /// What the message size implies.
        expected: u32,
        /// The file's message size.
        msg_size: u32,
    },
    /// The header's check does not match its bytes.
    #[error("journal header check is {found:#018x}, its bytes give {expected:#018x}")]
    Check {
        /// Stored.
        found: u64,
        /// Computed.
        expected: u64,
    },
}

impl JournalHeader {
    /// The 64 header bytes.
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[field::MAGIC..][..8].copy_from_slice(&MAGIC.to_le_bytes());
        b[field::VERSION..][..4].copy_from_slice(&VERSION.to_le_bytes());
        let rs = record_size(self.msg_size) as u32;
        b[field::RECORD_SIZE..][..4].copy_from_slice(&rs.to_le_bytes());
        b[field::MSG_SIZE..][..4].copy_from_slice(&self.msg_size.to_le_bytes());
        b[field::TYPE_HASH..][..8].copy_from_slice(&self.type_hash.to_le_bytes());
        b[field::BASE..][..8].copy_from_slice(&self.base.to_le_bytes());
        b[field::SNAPSHOT..][..8].copy_from_slice(&self.snapshot.to_le_bytes());
        let c = check_words(MAGIC, &b[..field::CHECK]);
        b[field::CHECK..][..8].copy_from_slice(&c.to_le_bytes());
        if self.sealed {
            b[field::FLAGS..][..4].copy_from_slice(&SEALED.to_le_bytes());
        }
        b
    }

    /// Decodes and checks a header; `bytes` may be longer than one.
    pub fn decode(bytes: &[u8]) -> Result<JournalHeader, HeaderError> {
        if bytes.len() < HEADER_LEN {
            return Err(HeaderError::Short { len: bytes.len() });
        }
        let magic = u64_at(bytes, field::MAGIC);
        if magic != MAGIC {
            return Err(HeaderError::BadMagic { found: magic });
        }
        let version = u32_at(bytes, field::VERSION);
        if version != VERSION {
            return Err(HeaderError::Version { found: version });
        }
        // The flags change after the header is written (sealing); the check
        // covers the rest with the flags taken as zero.
        let mut fixed = [0u8; field::CHECK];
        fixed.copy_from_slice(&bytes[..field::CHECK]);
        fixed[field::FLAGS..field::FLAGS + 4].fill(0);
        let expected = check_words(MAGIC, &fixed);
        let found = u64_at(bytes, field::CHECK);
        if found != expected {
            return Err(HeaderError::Check { found, expected });
        }
        let msg_size = u32_at(bytes, field::MSG_SIZE);
        let rs = u32_at(bytes, field::RECORD_SIZE);
        let want = 16u64 + u64::from(msg_size).div_ceil(8) * 8;
        if u64::from(rs) != want || msg_size == 0 {
            return Err(HeaderError::RecordSize {
                found: rs,
                expected: want.min(u64::from(u32::MAX)) as u32,
                msg_size,
            });
        }
        Ok(JournalHeader {
            msg_size,
            type_hash: u64_at(bytes, field::TYPE_HASH),
            base: u64_at(bytes, field::BASE),
            snapshot: u64_at(bytes, field::SNAPSHOT),
            sealed: u32_at(bytes, field::FLAGS) & SEALED != 0,
        })
    }

    /// Bytes per record.
    pub fn record_size(&self) -> usize {
        record_size(self.msg_size)
    }

    /// The sequence record `index` must carry, if it is in the contiguous
    /// part (`None` for a snapshot record, whose sequence is only bounded).
    pub fn expected_seq(&self, index: u64) -> Option<u64> {
        index
            .checked_sub(self.snapshot)
            .map(|j| self.base.wrapping_add(j))
    }

    /// The index of the record with sequence `seq` in the contiguous part.
    pub fn index_of(&self, seq: u64) -> Option<u64> {
        let j = seq.wrapping_sub(self.base);
        // Within 2^62 ahead of base: the same distance rule as the ring.
        // The snapshot count is the file's (untrusted): no index past u64.
        ((j as i64) >= 0)
            .then(|| self.snapshot.checked_add(j))
            .flatten()
    }
}

/// A record that parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    /// Its sequence number.
    pub seq: u64,
    /// Its payload (the message size rounded up to 8 bytes).
    pub payload: &'a [u8],
}

/// Why the valid prefix ends at a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// Fewer bytes than a record: the end of the data read so far.
    Short,
    /// The check does not match (zeroed space, or a torn record).
    Check,
    /// A whole record with a sequence out of place.
    Sequence {
        /// What the record carries.
        found: u64,
        /// What its place asks for (for a snapshot record: above this).
        expected: u64,
    },
}

/// Parses record `index` of a file with header `h` from `bytes` (which
/// start at that record). `prev` is the sequence of record `index - 1`, if
/// it is a snapshot record. Pure: the fuzzer's and the reader's entry point.
pub fn parse_record<'a>(
    h: &JournalHeader,
    index: u64,
    prev: Option<u64>,
    bytes: &'a [u8],
) -> Result<Record<'a>, End> {
    let rs = h.record_size();
    if bytes.len() < rs {
        return Err(End::Short);
    }
    let rec = &bytes[..rs];
    let seq = u64_at(rec, 0);
    let payload = &rec[8..rs - 8];
    let stored = u64_at(rec, rs - 8);
    if stored != check_words(seq, payload) {
        return Err(End::Check);
    }
    match h.expected_seq(index) {
        Some(want) if seq != want => Err(End::Sequence {
            found: seq,
            expected: want,
        }),
        Some(_) => Ok(Record { seq, payload }),
        None => {
            // Snapshot: increasing, below base.
            let above = prev.is_none_or(|p| (seq.wrapping_sub(p) as i64) > 0);
            let below = (h.base.wrapping_sub(seq) as i64) > 0;
            if above && below {
                Ok(Record { seq, payload })
            } else {
                Err(End::Sequence {
                    found: seq,
                    expected: prev.map_or(h.base, |p| p.wrapping_add(1)),
                })
            }
        }
    }
}

/// Encodes a record into `out` (exactly one record size long).
pub fn encode_record(seq: u64, msg: &[u8], out: &mut [u8]) {
    let rs = out.len();
    out[..8].copy_from_slice(&seq.to_le_bytes());
    out[8..8 + msg.len()].copy_from_slice(msg);
    out[8 + msg.len()..rs - 8].fill(0);
    let c = check_words(seq, &out[8..rs - 8]);
    out[rs - 8..].copy_from_slice(&c.to_le_bytes());
}

/// The length of the valid prefix of a whole file image, in records, and
/// why it ends there. For recovery, `stat` and the fuzzer.
pub fn valid_prefix(h: &JournalHeader, records: &[u8]) -> (u64, End) {
    let rs = h.record_size();
    let mut prev = None;
    let mut index = 0u64;
    let mut at = 0usize;
    loop {
        match parse_record(h, index, prev, &records[at.min(records.len())..]) {
            Ok(r) => {
                prev = (index < h.snapshot).then_some(r.seq);
                index += 1;
                at += rs;
            }
            Err(end) => return (index, end),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> JournalHeader {
        JournalHeader {
            msg_size: 12,
            type_hash: 7,
            base: 10,
            snapshot: 2,
            sealed: false,
        }
    }

    #[test]
    fn zeroed_space_never_parses_as_a_record() {
        let h = header();
        let zeros = vec![0u8; h.record_size() * 3];
        assert_eq!(valid_prefix(&h, &zeros), (0, End::Check));
        assert_ne!(check(0, [0u64; 2]), 0);
    }

    #[test]
    fn a_header_round_trips_and_a_flipped_bit_is_refused() {
        let h = header();
        let bytes = h.encode();
        assert_eq!(JournalHeader::decode(&bytes), Ok(h));
        let sealed = JournalHeader { sealed: true, ..h };
        assert_eq!(JournalHeader::decode(&sealed.encode()), Ok(sealed));
        for bit in 0..48 * 8 {
            if (field::FLAGS * 8..field::FLAGS * 8 + 32).contains(&bit) {
                continue;
            }
            let mut b = bytes;
            b[bit / 8] ^= 1 << (bit % 8);
            assert!(JournalHeader::decode(&b).is_err(), "bit {bit}");
        }
        assert_eq!(
            JournalHeader::decode(&bytes[..10]),
            Err(HeaderError::Short { len: 10 })
        );
    }

    #[test]
    fn the_valid_prefix_stops_at_a_torn_record_and_at_a_sequence_out_of_place() {
        let h = header();
        let rs = h.record_size();
        let seqs = [3u64, 7, 10, 11, 12];
        let mut file = vec![0u8; rs * seqs.len()];
        for (i, s) in seqs.iter().enumerate() {
            encode_record(*s, &[*s as u8; 12], &mut file[i * rs..(i + 1) * rs]);
        }
        assert_eq!(valid_prefix(&h, &file), (5, End::Short));
        let mut torn = file.clone();
        torn[3 * rs + 9] ^= 1;
        assert_eq!(valid_prefix(&h, &torn), (3, End::Check));
        let mut cut = file.clone();
        cut.truncate(4 * rs + 5);
        assert_eq!(valid_prefix(&h, &cut), (4, End::Short));
        let mut wrong = file.clone();
        encode_record(13, &[0; 12], &mut wrong[3 * rs..4 * rs]);
        assert_eq!(
            valid_prefix(&h, &wrong),
            (
                3,
                End::Sequence {
                    found: 13,
                    expected: 11
                }
            )
        );
        let mut unordered = file;
        encode_record(2, &[0; 12], &mut unordered[rs..2 * rs]);
        assert_eq!(valid_prefix(&h, &unordered).0, 1);
    }
}
