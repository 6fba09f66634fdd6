//! A blackboard's bytes (docs/LAYOUT.md §21): its header fields past the
//! pool's, its control page, and the entries of its table.

use super::{GeometryError, LINE};

/// Byte offsets of a blackboard's own header fields (flag-free: its kind
/// says they are there). The value type is the header's message type
/// (`msg_size`, `msg_align`, `type_hash`, `type_name`), the key type is
/// here.
pub mod header {
    /// u64: FNV-1a 64 of the key type's schema name.
    pub const KEY_HASH: usize = 536;
    /// u32: bytes per key.
    pub const KEY_SIZE: usize = 544;
    /// u32: the key type's alignment.
    pub const KEY_ALIGN: usize = 548;
    /// [u8; 64]: the key type's schema name, NUL-padded.
    pub const KEY_NAME: usize = 552;
    /// The end of the blackboard's header fields.
    pub const END: usize = 616;
}

/// Byte offsets in a blackboard's control page, relative to
/// `control_offset`.
pub mod control {
    /// u64: the table's version: the last version the writer gave an
    /// entry (Release by the writer after each commit; 0 for a new table).
    pub const VERSION: usize = 0;
    /// u64: keys live in the table (Relaxed, by the writer).
    pub const KEYS: usize = 8;
    /// u32: pid of the current (or last) writer (where a bus keeps its
    /// publisher's).
    pub const WRITER_PID: usize = super::super::control::PUBLISHER_PID;
    /// u32: the doorbell readers sleep on (the bus's futex protocol,
    /// `wait`): bit 0 "a reader may sleep", bits 1.. a wake count.
    pub const BELL: usize = super::super::control::FUTEX;
    /// u64: many-writer tables only: how long an entry may stay at one odd
    /// stamp before another writer takes it over, in ns (where a
    /// many-publisher bus keeps its unblock timeout). Written once by the
    /// creator before the magic; 0 on a single-writer table.
    pub const UNBLOCK_NS: usize = super::super::control::UNBLOCK_NS;
}

/// The header flag of a blackboard made for many writers
/// (`blackboard::ManyWriter`): the bus's `MULTI_PUBLISHER` bit, which a
/// blackboard uses for nothing else.
pub const MULTI_WRITER: u32 = super::flags::MULTI_PUBLISHER;

/// Byte offsets in an entry, relative to the entry.
pub mod entry {
    /// u64: the entry's seqlock stamp: `2v` once version `v` is written
    /// (0: never written), `2v - 1` while version `v` is being written.
    pub const STAMP: usize = 0;
    /// u64: what the entry holds, see [`super::tag`] (under the stamp).
    pub const TAG: usize = 8;
    /// The key's bytes, zero-padded to a multiple of 8 (under the stamp).
    pub const KEY: usize = 16;
}

/// The values of an entry's `TAG`.
pub mod tag {
    /// Never used: a probe for a key stops here.
    pub const EMPTY: u64 = 0;
    /// Holds a key and its value.
    pub const LIVE: u64 = 1;
    /// Held a key that was removed: a probe goes on past it; an insert
    /// may reuse it.
    pub const REMOVED: u64 = 2;
}

/// The most keys a blackboard holds.
pub const MAX_KEYS: u64 = 1 << 24;
/// The largest key, in bytes.
pub const MAX_KEY_SIZE: u32 = 1024;
/// The largest value, in bytes.
pub const MAX_VALUE_SIZE: u32 = 1 << 20;

/// The numbers a blackboard's offsets come from: what its creator asks
/// for, or what a validated header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlackboardGeometry {
    /// Keys it holds at most (the header's `capacity`).
    pub keys: u64,
    /// Entries in the table: the smallest power of two at least twice
    /// `keys`, so that a probe meets an empty entry soon.
    pub entries: u64,
    /// Bytes per key.
    pub key_size: u32,
    /// Bytes per value.
    pub value_size: u32,
    /// Bytes per entry: stamp, tag, key and value each padded to 8, the
    /// whole padded to 64 (the header's `slot_size`).
    pub entry_size: u64,
}

impl BlackboardGeometry {
    /// The geometry of `keys` keys of `key_size` bytes, values of
    /// `value_size` bytes.
    ///
    /// # Errors
    /// [`GeometryError::BlackboardKeys`] for 0 keys or more than
    /// [`MAX_KEYS`]; [`GeometryError::EntrySize`] for a key or value of 0
    /// bytes or over [`MAX_KEY_SIZE`] / [`MAX_VALUE_SIZE`].
    pub fn new(keys: u64, key_size: u32, value_size: u32) -> Result<Self, GeometryError> {
        if keys == 0 || keys > MAX_KEYS {
            return Err(GeometryError::BlackboardKeys {
                keys,
                max: MAX_KEYS,
            });
        }
        if !(1..=MAX_KEY_SIZE).contains(&key_size) || !(1..=MAX_VALUE_SIZE).contains(&value_size) {
            return Err(GeometryError::EntrySize {
                key_size,
                value_size,
                max_key: MAX_KEY_SIZE,
                max_value: MAX_VALUE_SIZE,
            });
        }
        // Bounded above: none of these overflow.
        let key = u64::from(key_size).div_ceil(8) * 8;
        let value = u64::from(value_size).div_ceil(8) * 8;
        let entry_size = (entry::KEY as u64 + key + value).div_ceil(LINE as u64) * LINE as u64;
        Ok(BlackboardGeometry {
            keys,
            entries: (2 * keys).next_power_of_two(),
            key_size,
            value_size,
            entry_size,
        })
    }

    /// The offset of an entry's value, relative to the entry.
    pub fn value_offset(&self) -> usize {
        entry::KEY + (self.key_size as usize).div_ceil(8) * 8
    }

    /// Bytes of the table.
    pub fn table_len(&self) -> Option<u64> {
        self.entries.checked_mul(self.entry_size)
    }
}
