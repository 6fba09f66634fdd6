//! The bytes of a segment: header page, control page, data pages.
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
//!   publisher of a multi-publisher bus, whose subscribers may also mark a
//!   stuck slot's stamp abandoned, see `mpmc`); a stream has a ring of
//!   `capacity` bytes, written by its producer (see `stream`).
//! - Nothing here trusts the file: [`Header::read`] checks every field a
//!   later access depends on for any kind (page offsets, lengths and the
//!   journal path's length), with checked arithmetic, against the `fstat`
//!   length, and [`Header::expect`] the kind's own geometry once the kind
//!   is known, so a hostile file yields an [`OpenError`], never a panic or
//!   a `SIGBUS`.

use std::fmt;

use crate::error::{OpenError, TypeFingerprint};
use crate::region::Region;
use crate::sync::Ordering;

#[cfg(not(target_endian = "little"))]
compile_error!("shmbus's segment layout is little-endian; big-endian targets are not supported");

/// "SHMBUS" then two zero bytes, read as a little-endian u64.
pub const MAGIC: u64 = u64::from_le_bytes(*b"SHMBUS\0\0");
/// What the creator stores at offset 0 while it builds the header: an opener
/// that finds it waits; `shmbus clean` knows the file for a half-built bus.
pub const MAGIC_BUILDING: u64 = u64::from_le_bytes(*b"SHMBUS~\0");
/// The layout version this build reads and writes.
pub const VERSION: u32 = 1;
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
}

/// Bits of the header's `flags` word.
pub mod flags {
    /// The bus has a journal; its path is in the header.
    pub const JOURNALED: u32 = 1;
    /// Set at creation for a bus written by `MpPublisher`s (claims with
    /// fetch_add, commits with CAS); clear for a single-publisher bus.
    pub const MULTI_PUBLISHER: u32 = 1 << 1;
    /// Set at creation for a segment backed by huge pages (transparent or
    /// hugetlbfs, see `region`): `page_size` is then the huge page size, so
    /// control and data pages start on huge page boundaries. Openers map
    /// such a segment at an address aligned to `page_size`.
    pub const HUGE_PAGES: u32 = 1 << 2;
}

/// Byte offsets in the control page, relative to `control_offset`.
pub mod control {
    /// u64: next sequence the publisher will write (Release by the
    /// publisher); on a multi-publisher bus, the next sequence to claim.
    pub const CURSOR: usize = 0;
    /// u64: publisher generation, bumped by every publisher that attaches
    /// to a single-publisher bus (1 for a multi-publisher bus's whole life).
    pub const EPOCH: usize = 64;
    /// u32: pid of the current (or last) publisher.
    pub const PUBLISHER_PID: usize = 128;
    /// u64: multi-publisher buses only: the unblock timeout in ns, written
    /// once by the creator before the magic, read by every party. Unused on
    /// a single-publisher bus (where an old build kept a u32 count of
    /// sleepers).
    pub const UNBLOCK_NS: usize = 192;
    /// u32: futex word. Bit 0: a subscriber may be asleep (set by sleepers,
    /// cleared by the publisher when it wakes them); bits 1..31: a wake
    /// counter the publisher bumps by 2 on every wake.
    pub const FUTEX: usize = 256;
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
}

/// What protocol a segment carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Stamped-slot broadcast (this crate's `broadcast`).
    Broadcast,
    /// Byte stream (this crate's `stream`).
    Stream,
    /// A number this build does not know.
    Unknown(u32),
}

impl Kind {
    /// The header's encoding.
    pub fn code(self) -> u32 {
        match self {
            Kind::Broadcast => 1,
            Kind::Stream => 2,
            Kind::Unknown(n) => n,
        }
    }
    /// Decodes the header field.
    pub fn from_code(code: u32) -> Kind {
        match code {
            1 => Kind::Broadcast,
            2 => Kind::Stream,
            n => Kind::Unknown(n),
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kind::Broadcast => f.write_str("broadcast"),
            Kind::Stream => f.write_str("stream"),
            Kind::Unknown(n) => write!(f, "unknown ({n})"),
        }
    }
}

/// FNV-1a 64: a stable hash of a type name, the same in every build.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

impl TypeFingerprint {
    /// The fingerprint of a named message type.
    pub fn new(name: &str, size: u32, align: u32) -> TypeFingerprint {
        TypeFingerprint {
            size,
            align,
            name_hash: fnv1a(name.as_bytes()),
            name: name.to_owned(),
        }
    }
    /// The fingerprint of `T`, from `core::any::type_name`.
    pub fn of<T>() -> TypeFingerprint {
        Self::new(
            core::any::type_name::<T>(),
            size_of::<T>() as u32,
            align_of::<T>() as u32,
        )
    }
    /// Raw byte messages of `size` bytes, as the CLI makes them.
    pub fn bytes(size: u32) -> TypeFingerprint {
        Self::new("bytes", size, 1)
    }
}

/// The validated geometry of a segment: every offset the protocol computes
/// from these stays inside the mapping.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Segment kind.
    pub kind: Kind,
    /// Page size of the creator.
    pub page_size: u64,
    /// Flags word.
    pub flags: u32,
    /// Offset of the control page.
    pub control_offset: u64,
    /// Offset of the data pages.
    pub data_offset: u64,
    /// Total length.
    pub total_len: u64,
    /// Slots (broadcast).
    pub capacity: u64,
    /// Bytes per slot.
    pub slot_size: u32,
    /// The message type.
    pub msg: TypeFingerprint,
    /// First sequence number.
    pub first_seq: u64,
    /// Creator's pid.
    pub creator_pid: u32,
    /// Creation time, ns since the Unix epoch.
    pub created_ns: u64,
    /// The journal's path, for a journaled bus.
    pub journal: Option<std::path::PathBuf>,
}

fn round_up(n: u64, to: u64) -> Option<u64> {
    n.checked_add(to - 1).map(|v| v / to * to)
}

impl Header {
    /// The geometry of a new broadcast bus. Errors are the reason, in words.
    pub fn broadcast(
        capacity: u64,
        msg: TypeFingerprint,
        page_size: u64,
        first_seq: u64,
    ) -> Result<Header, String> {
        if capacity == 0 || !capacity.is_power_of_two() {
            return Err(format!(
                "capacity {capacity} is not a power of two (1, 2, 4, ...)"
            ));
        }
        if msg.size == 0 || msg.size > MAX_MSG_SIZE {
            return Err(format!(
                "message size {} is outside 1..={MAX_MSG_SIZE}",
                msg.size
            ));
        }
        let payload = round_up(u64::from(msg.size), 8).ok_or("message size overflows")?;
        let slot_size =
            round_up(STAMP_BYTES as u64 + payload, LINE as u64).ok_or("slot size overflows")?;
        let data = capacity
            .checked_mul(slot_size)
            .ok_or_else(|| format!("capacity {capacity} x slot {slot_size} bytes overflows"))?;
        let data = round_up(data, page_size).ok_or("data size overflows")?;
        let total_len = data
            .checked_add(2 * page_size)
            .filter(|&t| t <= isize::MAX as u64)
            .ok_or_else(|| format!("capacity {capacity} x slot {slot_size} bytes is too large"))?;
        Ok(Header {
            kind: Kind::Broadcast,
            page_size,
            flags: 0,
            control_offset: page_size,
            data_offset: 2 * page_size,
            total_len,
            capacity,
            slot_size: slot_size as u32,
            msg,
            first_seq,
            creator_pid: std::process::id(),
            created_ns: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64),
            journal: None,
        })
    }

    /// The geometry of a new byte stream of `capacity` bytes.
    pub fn stream(capacity: u64, page_size: u64) -> Result<Header, String> {
        if !(MIN_STREAM..=MAX_STREAM).contains(&capacity) || !capacity.is_power_of_two() {
            return Err(format!(
                "stream capacity {capacity} is not a power of two in {MIN_STREAM}..={MAX_STREAM} bytes"
            ));
        }
        let data = round_up(capacity, page_size).ok_or("stream size overflows")?;
        Ok(Header {
            kind: Kind::Stream,
            page_size,
            flags: 0,
            control_offset: page_size,
            data_offset: 2 * page_size,
            total_len: data + 2 * page_size,
            capacity,
            slot_size: 0,
            msg: TypeFingerprint::new("stream", max_record(capacity) as u32, 8),
            first_seq: 0,
            creator_pid: std::process::id(),
            created_ns: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64),
            journal: None,
        })
    }

    /// The same bus with a journal at `path` (absolute, at most
    /// [`header::JOURNAL_PATH_MAX`] bytes).
    pub fn with_journal(mut self, path: std::path::PathBuf) -> Result<Header, usize> {
        use std::os::unix::ffi::OsStrExt;
        let len = path.as_os_str().as_bytes().len();
        if len == 0 || len > header::JOURNAL_PATH_MAX {
            return Err(len);
        }
        self.flags |= flags::JOURNALED;
        self.journal = Some(path);
        Ok(self)
    }

    /// Writes every field except the magic (Relaxed: the magic's Release
    /// store, done by the caller afterwards, publishes them).
    pub fn write<R: Region>(&self, r: &R) {
        use header as h;
        let w64 = |off, v| r.word(off).store(v, Ordering::Relaxed);
        let w32 = |off, v| r.word32(off).store(v, Ordering::Relaxed);
        w32(h::VERSION, VERSION);
        w32(h::KIND, self.kind.code());
        w32(h::PAGE_SIZE, self.page_size as u32);
        w32(h::FLAGS, self.flags);
        w64(h::CONTROL_OFFSET, self.control_offset);
        w64(h::DATA_OFFSET, self.data_offset);
        w64(h::TOTAL_LEN, self.total_len);
        w64(h::CAPACITY, self.capacity);
        w32(h::SLOT_SIZE, self.slot_size);
        w32(h::MSG_SIZE, self.msg.size);
        w32(h::MSG_ALIGN, self.msg.align);
        w64(h::TYPE_HASH, self.msg.name_hash);
        w64(h::FIRST_SEQ, self.first_seq);
        w32(h::CREATOR_PID, self.creator_pid);
        w64(h::CREATED_NS, self.created_ns);
        let mut name = [0u8; h::TYPE_NAME_LEN];
        let n = self.msg.name.len().min(h::TYPE_NAME_LEN);
        name[..n].copy_from_slice(&self.msg.name.as_bytes()[..n]);
        for (i, chunk) in name.chunks_exact(8).enumerate() {
            w64(
                h::TYPE_NAME + 8 * i,
                u64::from_le_bytes(chunk.try_into().expect("8 bytes")),
            );
        }
        if let Some(path) = &self.journal {
            use std::os::unix::ffi::OsStrExt;
            let bytes = path.as_os_str().as_bytes();
            let mut field = [0u8; h::JOURNAL_PATH_MAX];
            field[..bytes.len()].copy_from_slice(bytes);
            w32(h::JOURNAL_PATH_LEN, bytes.len() as u32);
            for (i, chunk) in field.chunks_exact(8).enumerate() {
                w64(
                    h::JOURNAL_PATH + 8 * i,
                    u64::from_le_bytes(chunk.try_into().expect("8 bytes")),
                );
            }
        }
    }

    /// Stores the magic. Release: pairs with the Acquire load in
    /// [`Header::read_magic`], which makes every header field visible.
    pub fn publish_magic<R: Region>(r: &R) {
        r.word(header::MAGIC).store(MAGIC, Ordering::Release);
    }

    /// Loads the magic. Acquire: pairs with [`Header::publish_magic`].
    pub fn read_magic<R: Region>(r: &R) -> u64 {
        r.word(header::MAGIC).load(Ordering::Acquire)
    }

    /// Reads and validates the header of a region whose magic has been seen,
    /// `file_len` being the length `fstat` reported before mapping.
    pub fn read<R: Region>(r: &R, file_len: u64) -> Result<Header, OpenError> {
        use header as h;
        let r64 = |off| r.word(off).load(Ordering::Relaxed);
        let r32 = |off| r.word32(off).load(Ordering::Relaxed);
        let magic = Self::read_magic(r);
        if magic != MAGIC {
            return Err(OpenError::BadMagic {
                path: std::path::PathBuf::new(),
                found: magic,
                expected: MAGIC,
            });
        }
        let version = r32(h::VERSION);
        if version != VERSION {
            return Err(OpenError::VersionMismatch {
                found: version,
                expected: VERSION,
            });
        }
        let mut raw_name = [0u8; h::TYPE_NAME_LEN];
        for (i, chunk) in raw_name.chunks_exact_mut(8).enumerate() {
            chunk.copy_from_slice(&r64(h::TYPE_NAME + 8 * i).to_le_bytes());
        }
        let end = raw_name
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(raw_name.len());
        let name = String::from_utf8_lossy(&raw_name[..end]).into_owned();
        let flags = r32(h::FLAGS);
        let mut header = Header {
            kind: Kind::from_code(r32(h::KIND)),
            page_size: u64::from(r32(h::PAGE_SIZE)),
            flags,
            control_offset: r64(h::CONTROL_OFFSET),
            data_offset: r64(h::DATA_OFFSET),
            total_len: r64(h::TOTAL_LEN),
            capacity: r64(h::CAPACITY),
            slot_size: r32(h::SLOT_SIZE),
            msg: TypeFingerprint {
                size: r32(h::MSG_SIZE),
                align: r32(h::MSG_ALIGN),
                name_hash: r64(h::TYPE_HASH),
                name,
            },
            first_seq: r64(h::FIRST_SEQ),
            creator_pid: r32(h::CREATOR_PID),
            created_ns: r64(h::CREATED_NS),
            journal: None,
        };
        header.validate(file_len)?;
        // Only now: the path lies beyond `END`, inside the header page that
        // `validate` has just shown the file to hold.
        header.journal = if flags & self::flags::JOURNALED != 0 {
            use std::os::unix::ffi::OsStrExt;
            let len = r32(h::JOURNAL_PATH_LEN) as usize;
            if len == 0 || len > h::JOURNAL_PATH_MAX {
                return Err(OpenError::InvalidGeometry(format!(
                    "journal path length {len} is outside 1..={}",
                    h::JOURNAL_PATH_MAX
                )));
            }
            let mut raw = [0u8; h::JOURNAL_PATH_MAX];
            for (i, chunk) in raw.chunks_exact_mut(8).enumerate() {
                chunk.copy_from_slice(&r64(h::JOURNAL_PATH + 8 * i).to_le_bytes());
            }
            Some(std::path::PathBuf::from(std::ffi::OsStr::from_bytes(
                &raw[..len],
            )))
        } else {
            None
        };

        Ok(header)
    }

    /// Every check an access later depends on, with checked arithmetic.
    fn validate(&self, file_len: u64) -> Result<(), OpenError> {
        let bad = |s: String| Err(OpenError::InvalidGeometry(s));
        let page = self.page_size;
        let local_page = rustix::param::page_size() as u64;
        if page == 0 || !page.is_power_of_two() || page % local_page != 0 {
            return bad(format!(
                "page size {page} is not a multiple of this system's {local_page}"
            ));
        }
        if self.control_offset != page {
            return bad(format!(
                "control page at {}, expected {page}",
                self.control_offset
            ));
        }
        if self.data_offset != 2 * page {
            return bad(format!(
                "data pages at {}, expected {}",
                self.data_offset,
                2 * page
            ));
        }
        // Every kind has its header and control page inside the file: `stat`
        // reads the control page before anyone checks the kind.
        if self.total_len < self.data_offset {
            return bad(format!(
                "total length {} does not reach the data pages at {}",
                self.total_len, self.data_offset
            ));
        }
        if self.total_len > isize::MAX as u64 {
            return bad(format!("total length {} is too large", self.total_len));
        }
        if file_len < self.total_len {
            return Err(OpenError::Truncated {
                path: std::path::PathBuf::new(),
                len: file_len,
                expected: self.total_len,
            });
        }
        Ok(())
    }

    /// The checks of the kind's own geometry, made once the kind is known to
    /// be the one asked for (so that a segment of another kind is reported
    /// as such, not as a broken one of this kind).
    pub(crate) fn validate_kind(&self) -> Result<(), OpenError> {
        let bad = |s: String| Err(OpenError::InvalidGeometry(s));
        if let Kind::Broadcast = self.kind {
            if self.capacity == 0 || !self.capacity.is_power_of_two() {
                return bad(format!("capacity {} is not a power of two", self.capacity));
            }
            if self.msg.size == 0 || self.msg.size > MAX_MSG_SIZE {
                return bad(format!(
                    "message size {} outside 1..={MAX_MSG_SIZE}",
                    self.msg.size
                ));
            }
            let need =
                STAMP_BYTES as u64 + round_up(u64::from(self.msg.size), 8).unwrap_or(u64::MAX);
            if u64::from(self.slot_size) < need || self.slot_size as usize % LINE != 0 {
                return bad(format!(
                    "slot size {} cannot hold a {}-byte message in 64-byte lines",
                    self.slot_size, self.msg.size
                ));
            }
            let data = self.capacity.checked_mul(u64::from(self.slot_size));
            let end = data.and_then(|d| d.checked_add(self.data_offset));
            match end {
                Some(end) if end <= self.total_len => {}
                _ => {
                    return bad(format!(
                        "{} slots of {} bytes do not fit in {} bytes",
                        self.capacity, self.slot_size, self.total_len
                    ))
                }
            }
        }
        if let Kind::Stream = self.kind {
            let cap = self.capacity;
            if !(MIN_STREAM..=MAX_STREAM).contains(&cap) || !cap.is_power_of_two() {
                return bad(format!(
                    "stream capacity {cap} is not a power of two in {MIN_STREAM}..={MAX_STREAM}"
                ));
            }
            if u64::from(self.msg.size) != max_record(cap) {
                return bad(format!(
                    "largest record {} should be {} for a {cap}-byte stream",
                    self.msg.size,
                    max_record(cap)
                ));
            }
            if self
                .data_offset
                .checked_add(cap)
                .is_none_or(|end| end > self.total_len)
            {
                return bad(format!(
                    "{cap} bytes of ring do not fit in {} bytes",
                    self.total_len
                ));
            }
        }
        Ok(())
    }

    /// Checks kind and message type against what the caller expects.
    pub fn expect(&self, kind: Kind, msg: Option<&TypeFingerprint>) -> Result<(), OpenError> {
        if self.kind != kind {
            return Err(OpenError::WrongKind {
                found: self.kind,
                expected: kind,
            });
        }
        self.validate_kind()?;
        if let Some(expected) = msg {
            let found = &self.msg;
            if found.size != expected.size
                || found.align != expected.align
                || found.name_hash != expected.name_hash
            {
                return Err(OpenError::TypeMismatch {
                    found: found.clone(),
                    expected: expected.clone(),
                });
            }
        }
        Ok(())
    }
}
