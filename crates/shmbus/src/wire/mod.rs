//! The wire format: the bytes of a segment (header page, control page, data
//! pages), their offsets and encodings. Nothing here validates a file: a
//! header read from one is checked by `segment` before any use.
//!
//! docs/LAYOUT.md is this module in prose, to the byte. All integers are
//! little-endian (shmbus builds only for little-endian targets), every
//! field is naturally aligned, and every header and control field is read
//! or written through atomics.
//!
//! Invariants:
//! - The header (page 0) is written once, by the creator, before the magic;
//!   the magic is stored last with Release and read first with Acquire, so an
//!   opener that sees the magic sees the whole header. The creator then makes
//!   page 0 read-only in its own mapping; subscribers map it read-only.
//! - The control page (page 1) is mapped read-write by every attached
//!   process. Each field two parties write sits on its own 64-byte line
//!   (the registry aside: each entry is written once, by its subscriber).
//! - Data pages start at `data_offset`. A broadcast bus has `capacity`
//!   slots of `slot_size` bytes there, written by its publisher (by every
//!   publisher of a many-publisher bus, whose subscribers may also mark a
//!   stuck slot's stamp abandoned, see `bus::claim`); a stream has a ring of
//!   `capacity` bytes, written by its producer (see `stream`).
//! - Nothing trusts the file: `Header::read` (in `segment`) checks every field a
//!   later access depends on for any kind (page offsets, lengths and the
//!   journal path's length), with checked arithmetic, against the `fstat`
//!   length, and `Header::expect` the kind's own geometry once the kind
//!   is known, so a hostile file yields an `OpenError`, never a panic or
//!   a `SIGBUS`.

pub mod blackboard;
mod fingerprint;
mod geometry;
mod kind;
mod page_header;
mod pool;
pub mod service;

pub use blackboard::BlackboardGeometry;
pub use fingerprint::{Message, TypeFingerprint, fnv1a};
pub use geometry::GeometryError;
pub use kind::{Kind, Publishers};
pub use page_header::{Header, ServiceShape};
pub(crate) use page_header::{read_name, round_up};
pub use pool::{
    BLOCK_ALIGN, DESCRIPTOR_BYTES, MAX_BLOCK_SIZE, MAX_BLOCKS, PoolGeometry, block_type_fits,
    descriptor,
};
pub use service::ServiceGeometry;

#[cfg(not(target_endian = "little"))]
compile_error!("shmbus's segment layout is little-endian; big-endian targets are not supported");

/// "SHMBUS" then two zero bytes, read as a little-endian u64.
pub const MAGIC: u64 = u64::from_le_bytes(*b"SHMBUS\0\0");
/// What the creator stores at offset 0 while it builds the header: an opener
/// that finds it waits; `shmbus clean` knows the file for a half-built bus.
pub const MAGIC_BUILDING: u64 = u64::from_le_bytes(*b"SHMBUS~\0");
/// The layout version this build reads and writes.
pub const VERSION: u32 = 2;
/// Cache line size every shared field is padded to.
pub const LINE: usize = 64;
/// Slot header: the 64-bit stamp before the payload.
pub const STAMP_BYTES: usize = 8;
/// Largest message a bus carries (16 MiB).
pub const MAX_MSG_SIZE: u32 = 16 << 20;

/// Byte offsets in the header page.
pub mod header {
    /// u64: [`super::MAGIC`], stored last (Release).
    pub const MAGIC: usize = 0;
    /// u32: [`super::VERSION`].
    pub const VERSION: usize = 8;
    /// u32: [`super::Kind`].
    pub const KIND: usize = 12;
    /// u32: the creator's page size; control and data offsets are multiples.
    pub const PAGE_SIZE: usize = 16;
    /// u32: flags, see [`super::flags`].
    pub const FLAGS: usize = 20;
    /// u64: byte offset of the control page.
    pub const CONTROL_OFFSET: usize = 24;
    /// u64: byte offset of the data pages.
    pub const DATA_OFFSET: usize = 32;
    /// u64: the whole segment's length in bytes.
    pub const TOTAL_LEN: usize = 40;
    /// u64: number of slots, a power of two.
    pub const CAPACITY: usize = 48;
    /// u32: bytes per slot, a multiple of 64.
    pub const SLOT_SIZE: usize = 56;
    /// u32: bytes per message.
    pub const MSG_SIZE: usize = 60;
    /// u32: alignment of the message type.
    pub const MSG_ALIGN: usize = 64;
    /// u64: FNV-1a 64 of the message type name.
    pub const TYPE_HASH: usize = 72;
    /// u64: the first sequence number this bus used.
    pub const FIRST_SEQ: usize = 80;
    /// u32: pid of the creator.
    pub const CREATOR_PID: usize = 88;
    /// u64: creation time, ns since the Unix epoch.
    pub const CREATED_NS: usize = 96;
    /// [u8; 64]: the message type name, NUL-padded.
    pub const TYPE_NAME: usize = 104;
    /// Length of the type name field.
    pub const TYPE_NAME_LEN: usize = 64;
    /// Bytes of the header every segment has (openers read at least this).
    pub const END: usize = 168;
    /// u32: length of the journal path (journaled buses; else 0). Bytes
    /// 172..176 are padding.
    pub const JOURNAL_PATH_LEN: usize = 168;
    /// [u8; 256]: the journal's absolute path, NUL-padded.
    pub const JOURNAL_PATH: usize = 176;
    /// Room for the journal path.
    pub const JOURNAL_PATH_MAX: usize = 256;
    /// u64: pool buses (flag `POOL`): the number of blocks; else 0.
    pub const POOL_BLOCKS: usize = 432;
    /// u64: pool buses: bytes per block, a multiple of 64; else 0.
    pub const POOL_BLOCK_SIZE: usize = 440;
    /// u64: many-publisher pool buses: the inode of the creator's pid
    /// namespace, the only one whose publishers may attach (loans are
    /// recorded by pid); 0 if unknown, or any other bus.
    pub const POOL_PID_NS: usize = 448;
    /// u64: pool buses: FNV-1a 64 of the block message's schema name (the
    /// slots' own type fields hold the descriptor's); 0 on a pool bus made
    /// before this field (its block type unknown: raw openers only), and
    /// on any other bus.
    pub const POOL_TYPE_HASH: usize = 456;
    /// u32: pool buses: `size_of` the block message (a raw pool: its block
    /// size); else 0.
    pub const POOL_MSG_SIZE: usize = 464;
    /// u32: pool buses: the block message's alignment, at most 64; else 0.
    pub const POOL_MSG_ALIGN: usize = 468;
    /// [u8; 64]: pool buses: the block message's schema name, NUL-padded.
    pub const POOL_TYPE_NAME: usize = 472;
}

/// Bits of the header's `flags` word.
pub mod flags {
    /// The bus has a journal; its path is in the header.
    pub const JOURNALED: u32 = 1;
    /// Set at creation for a bus written by `ManyPublisher`s (claims with
    /// fetch_add, commits with CAS); clear for a single-publisher bus.
    pub const MULTI_PUBLISHER: u32 = 1 << 1;
    /// Set at creation for a segment backed by huge pages (transparent or
    /// hugetlbfs, see `mem::huge`): `page_size` is then the huge page size, so
    /// control and data pages start on huge page boundaries. Openers map
    /// such a segment at an address aligned to `page_size`.
    pub const HUGE_PAGES: u32 = 1 << 2;
    /// Set at creation for a bus whose messages live in a block pool (see
    /// `pool`): its slots carry 16-byte descriptors, its data pages go on
    /// with the blocks' states and the blocks, and its control area with
    /// one hold line per registry entry.
    pub const POOL: u32 = 1 << 3;
}

/// Byte offsets in the control page, relative to `control_offset`.
pub mod control {
    /// u64: next sequence the publisher will write (Release by the
    /// publisher); on a many-publisher bus, the next sequence to claim.
    pub const CURSOR: usize = 0;
    /// u64: publisher generation, bumped by every publisher that attaches
    /// to a single-publisher bus (1 for a many-publisher bus's whole life).
    pub const EPOCH: usize = 64;
    /// u32: pid of the current (or last) publisher.
    pub const PUBLISHER_PID: usize = 128;
    /// u64: many-publisher buses only: the unblock timeout in ns, written
    /// once by the creator before the magic, read by every party. Unused on
    /// a single-publisher bus (where an old build kept a u32 count of
    /// sleepers).
    pub const UNBLOCK_NS: usize = 192;
    /// u64: the eviction timeout in ns: how long a lossless subscriber
    /// may hold the publisher back before it is demoted to lossy (see
    /// `bus::gate`). Written once by the creator before the magic.
    pub const EVICT_NS: usize = 200;
    /// u32: how many lossless subscribers may gate the publisher at once;
    /// 0 refuses them (and is what a file made before them holds).
    /// Written once by the creator before the magic.
    pub const MAX_GATING: usize = 208;
    /// u32: futex word. Bit 0: a subscriber may be asleep (set by sleepers,
    /// cleared by the publisher when it wakes them); bits 1..31: a wake
    /// counter the publisher bumps by 2 on every wake.
    pub const FUTEX: usize = 256;
    /// u32: the gate generation, on the futex word's line (which the
    /// publisher loads after every message anyway): bumped (SeqCst
    /// `fetch_add`) by a lossless subscriber that joins, rejoins after a
    /// lag, or leaves; the publisher rescans the gating set when it
    /// changes (`bus::gate`).
    pub const GATE_GEN: usize = 260;
    /// u32: the doorbell a publisher sleeps on while a lossless subscriber
    /// holds it back (same protocol as `FUTEX`, roles swapped).
    pub const ROOM: usize = 320;
    /// [u64; 4]: a bit per registry entry (entry i is bit `i % 64` of word
    /// `i / 64`) set while that entry's subscriber is lossless and gates
    /// the publisher. Set by the subscriber (SeqCst `fetch_or`) when it
    /// joins; cleared (SeqCst `fetch_and`) by it when it leaves, or by the
    /// publisher when it evicts it or finds its lock free.
    pub const GATING: usize = 480;
    /// u32: flush requests, incremented by joining subscribers (journal).
    pub const FLUSH_REQUEST: usize = 384;
    /// u32: the last flush request served, stored by the publisher (journal).
    pub const FLUSH_DONE: usize = 448;
    /// u32: the last flush request whose `fdatasync` failed.
    pub const FLUSH_FAILED: usize = 452;
    /// [u32; REGISTRY_SLOTS]: pids of registered subscribers.
    pub const REGISTRY: usize = 1024;
    /// Number of registry entries.
    pub const REGISTRY_SLOTS: usize = 256;
    /// [`super::subscriber_line`] x `REGISTRY_SLOTS`: the line of the
    /// subscriber in registry entry i is at `SUBSCRIBERS + LINE * i`. Past
    /// the first page: a broadcast bus's control area runs on to
    /// [`super::broadcast_control_len`].
    pub const SUBSCRIBERS: usize = 4096;
    /// [u64; 4]: pool buses only: a bit per registry entry (entry i is bit
    /// `i % 64` of word `i / 64`) set while that entry's hold line may
    /// name a block. Set by the subscriber (SeqCst `fetch_or`) before its
    /// first hold; cleared by it when it leaves, or by whoever clears a
    /// dead subscriber's holds.
    pub const POOL_ACTIVE: usize = 512;
    /// Pool buses only: [`super::hold_line`] x `REGISTRY_SLOTS`, after the
    /// subscriber lines: the hold line of registry entry i is at
    /// `POOL_HOLDS + LINE * i`.
    pub const POOL_HOLDS: usize = SUBSCRIBERS + super::LINE * REGISTRY_SLOTS;
}

/// Bytes of a broadcast bus's control area (from `control_offset` to
/// `data_offset`): the control page's fields, then one line per registry
/// entry, rounded up to whole pages (5 pages of 4 KiB; one huge page).
pub const fn broadcast_control_len(page_size: u64) -> u64 {
    let end = (control::SUBSCRIBERS + LINE * control::REGISTRY_SLOTS) as u64;
    end.div_ceil(page_size) * page_size
}

/// Bytes of a pool bus's control area: a broadcast bus's, with one hold
/// line per registry entry after the subscriber lines (9 pages of 4 KiB).
pub const fn pool_control_len(page_size: u64) -> u64 {
    let end = (control::POOL_HOLDS + LINE * control::REGISTRY_SLOTS) as u64;
    end.div_ceil(page_size) * page_size
}

/// A pool bus's hold line: [`hold_line::HOLDS`] words, each 0 (free) or
/// `block + 1` for a block the subscriber of that registry entry holds.
/// Written only by that subscriber, and by whoever clears it after the
/// subscriber's registry lock is found free; read by publishers.
pub mod hold_line {
    /// How many samples one subscriber may hold at once.
    pub const HOLDS: usize = 8;
}

/// Byte offsets in a subscriber's line, relative to the line. The line of
/// registry entry i is written only by the subscriber holding lock byte
/// `lock_byte::REGISTRY + i`, and read by `stat`; see `bus::activity`.
pub mod subscriber_line {
    /// u64: the next sequence this subscriber reads. Relaxed store after
    /// every receive that moved it.
    pub const POSITION: usize = 0;
    /// u64: the sum of the `skipped` counts of its lag reports.
    pub const SKIPPED: usize = 8;
    /// u64: its position when it registered: delivered messages are
    /// `POSITION - START - SKIPPED`.
    pub const START: usize = 16;
    /// u64: when it was last seen active, ns of `CLOCK_MONOTONIC`.
    pub const ACTIVE_NS: usize = 24;
    /// u32: a sequence lock over `SKIPPED` and `POSITION` when a lag (or
    /// registering) changes both: odd while they change.
    pub const SEQ: usize = 32;
    /// u32: the contract it asked for: 0 lossy, 1 lossless (whether it
    /// gates now is its bit in `control::GATING`). Written by it when it
    /// registers.
    pub const CONTRACT: usize = 36;
    /// u32: how many times the publisher evicted it (demoted it to lossy).
    /// Written by the publisher (Relaxed read-modify-write).
    pub const EVICTIONS: usize = 40;
    /// u64: ns the publisher spent blocked on it, waiting for room.
    /// Written by the publisher (Relaxed read-modify-write).
    pub const BLOCKED_NS: usize = 48;
}

/// The values of `subscriber_line::CONTRACT`.
pub mod contract {
    /// Lossy: lapped when it falls a ring behind (the default).
    pub const LOSSY: u32 = 0;
    /// Lossless: the publisher waits for it (until evicted).
    pub const LOSSLESS: u32 = 1;
}

/// Smallest stream ring, in bytes.
pub const MIN_STREAM: u64 = 64;
/// Largest stream ring, in bytes (records lengths fit in 32 bits).
pub const MAX_STREAM: u64 = 1 << 32;

/// The largest record a stream of `capacity` bytes carries: half the ring
/// less a record header, so that a record always fits after a wrap marker.
pub fn max_record(capacity: u64) -> u64 {
    capacity / 2 - 8
}

/// The alignment of every stream record's bytes: each starts after an
/// 8-byte header at a multiple of 8. A typed stream's record type may be
/// aligned to at most this; a raw stream records it as its `msg_align`.
pub const STREAM_RECORD_ALIGN: u32 = 8;

/// Byte offsets in a stream's control page, relative to `control_offset`.
pub mod stream_control {
    /// u64: bytes the producer has committed, ever (Release by the producer).
    pub const TAIL: usize = 0;
    /// u64: bytes the consumer has released, ever (Release by the consumer).
    pub const HEAD: usize = 64;
    /// u32: pid of the current (or last) producer; 0 before the first.
    pub const PRODUCER_PID: usize = 128;
    /// u32: pid of the current (or last) consumer; 0 before the first.
    pub const CONSUMER_PID: usize = 192;
    /// u32: doorbell the consumer sleeps on (see `wait`): data arrived.
    pub const DATA_BELL: usize = 256;
    /// u32: doorbell the producer sleeps on: space was freed.
    pub const SPACE_BELL: usize = 320;
    /// The producer's line ([`super::side_line`]), written only by it.
    pub const PRODUCER_LINE: usize = 384;
    /// The consumer's line ([`super::side_line`]), written only by it.
    pub const CONSUMER_LINE: usize = 448;
}

/// Byte offsets in a stream side's line, relative to the line: what the
/// current producer (consumer) did since it attached, for `stat` and `top`.
pub mod side_line {
    /// u64: records it committed (released) since it attached. Relaxed
    /// store after each.
    pub const RECORDS: usize = 0;
    /// u64: when it was last active, ns of `CLOCK_MONOTONIC_COARSE`.
    pub const ACTIVE_NS: usize = 8;
}

/// Which byte of the file each liveness lock covers (OFD locks, see `lock`).
pub mod lock_byte {
    /// Exclusive: held by the publisher (a stream's producer) while it lives.
    pub const PUBLISHER: u64 = 0;
    /// Shared: held by every process that has the segment mapped.
    pub const ATTACHED: u64 = 1;
    /// Exclusive: held by a stream's consumer for as long as it lives.
    pub const CONSUMER: u64 = 2;
    /// Exclusive: `REGISTRY + i` is held by the subscriber in registry slot i.
    pub const REGISTRY: u64 = 64;
    /// Exclusive, on a request-response service: `SERVER + s` is held by
    /// the server in entry s (s < 64) while it serves.
    pub const SERVER: u64 = 64;
    /// Exclusive, on a request-response service: `CLIENT + c` is held by
    /// the client in entry c (c < 256) while it calls.
    pub const CLIENT: u64 = 128;
}
