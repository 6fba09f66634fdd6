//! Reading a header back from a mapped file, and every check a later
//! access depends on: nothing in the file is trusted.

use crate::error::OpenError;
use crate::mem::Region;
use crate::sync::Ordering;
use crate::wire::{Header, Kind, TypeFingerprint, header, max_record, read_name};
use crate::wire::{
    LINE, MAGIC, MAX_MSG_SIZE, MAX_STREAM, MIN_STREAM, STAMP_BYTES, STREAM_RECORD_ALIGN, VERSION,
};

impl Header {
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
        let name = read_name(r, h::TYPE_NAME);
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
            pool: None,
            block_msg: None,
            key: None,
            service: None,
        };
        header.validate(file_len)?;
        if flags & crate::wire::flags::POOL != 0 {
            header.pool = Some(header.read_pool(r64(h::POOL_BLOCKS), r64(h::POOL_BLOCK_SIZE))?);
            // Shown, and compared by typed openers; never trusted to fit
            // a block (a typed opener checks its own type does).
            header.block_msg = Some(TypeFingerprint {
                size: r32(h::POOL_MSG_SIZE),
                align: r32(h::POOL_MSG_ALIGN),
                name_hash: r64(h::POOL_TYPE_HASH),
                name: read_name(r, h::POOL_TYPE_NAME),
            });
        }
        if header.kind == Kind::Service {
            use crate::wire::service::header as sv;
            header.service = Some(crate::wire::ServiceShape {
                slots: r32(sv::SLOTS),
                servers: r32(sv::SERVERS),
            });
        }
        if matches!(header.kind, Kind::Blackboard | Kind::Service) {
            use crate::wire::blackboard::header as b;
            header.key = Some(TypeFingerprint {
                size: r32(b::KEY_SIZE),
                align: r32(b::KEY_ALIGN),
                name_hash: r64(b::KEY_HASH),
                name: read_name(r, b::KEY_NAME),
            });
        }
        // Only now: the path lies beyond `END`, inside the header page that
        // `validate` has just shown the file to hold.
        header.journal = if flags & crate::wire::flags::JOURNALED != 0 {
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

    /// A pool bus's pool from its two header words (past `END`, inside the
    /// header page `validate` has shown the file to hold): it must lie
    /// after the slots and inside `total_len`.
    fn read_pool(
        &self,
        blocks: u64,
        block_size: u64,
    ) -> Result<crate::wire::PoolGeometry, OpenError> {
        let bad = |s: String| OpenError::InvalidGeometry(s);
        let slots_end = self
            .capacity
            .checked_mul(u64::from(self.slot_size))
            .and_then(|d| crate::wire::round_up(d, self.page_size))
            .and_then(|d| d.checked_add(self.data_offset))
            .ok_or_else(|| {
                bad(format!(
                    "{} slots of {} bytes overflow",
                    self.capacity, self.slot_size
                ))
            })?;
        if self.flags & crate::wire::flags::JOURNALED != 0 {
            return Err(bad(
                "a pool bus flagged as journaled: a pool has no journal".into(),
            ));
        }
        // As `PoolTooSmall` at creation: each descriptor on the ring keeps
        // its block, and a loan needs one more.
        if blocks <= self.capacity {
            return Err(bad(format!(
                "a pool of {blocks} blocks for a ring of {} slots: it needs more blocks than slots",
                self.capacity
            )));
        }
        let pool = crate::wire::PoolGeometry::new(blocks, block_size, slots_end, self.page_size)
            .map_err(|e| bad(e.to_string()))?;
        if pool.end > self.total_len {
            return Err(bad(format!(
                "a pool of {blocks} blocks of {block_size} bytes ends at {}, past the segment's {} bytes",
                pool.end, self.total_len
            )));
        }
        Ok(pool)
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
        // The kind fixes it exactly (`validate_kind`); any kind's data
        // pages start on a page past the control page.
        if self.data_offset < 2 * page || self.data_offset % page != 0 {
            return bad(format!(
                "data pages at {}, expected a multiple of {page} from {}",
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
        // An unknown kind is shown as it is (`stat`): no geometry to check.
        let control_len = match self.kind {
            Kind::Broadcast if self.pool.is_some() => {
                Some(crate::wire::pool_control_len(self.page_size))
            }
            Kind::Broadcast => Some(crate::wire::broadcast_control_len(self.page_size)),
            Kind::Stream | Kind::Blackboard => Some(self.page_size),
            Kind::Service => {
                let geo = self
                    .service_geometry()
                    .map_err(|e| OpenError::InvalidGeometry(e.to_string()))?;
                crate::wire::round_up(geo.control_bytes(), self.page_size)
            }
            Kind::Unknown(_) => None,
        };
        if let Some(len) = control_len {
            if self.data_offset != self.control_offset + len {
                return bad(format!(
                    "data pages at {}, expected {} for kind {}",
                    self.data_offset,
                    self.control_offset + len,
                    self.kind
                ));
            }
        }
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
            let need = STAMP_BYTES as u64
                + crate::wire::round_up(u64::from(self.msg.size), 8).unwrap_or(u64::MAX);
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
                    ));
                }
            }
        }
        if self.pool.is_some() && self.msg.size != crate::wire::DESCRIPTOR_BYTES {
            return bad(format!(
                "a pool bus's slots carry {}-byte descriptors, not {}-byte messages",
                crate::wire::DESCRIPTOR_BYTES,
                self.msg.size
            ));
        }
        if let Kind::Blackboard = self.kind {
            let geo = self
                .blackboard_geometry()
                .map_err(|e| OpenError::InvalidGeometry(e.to_string()))?;
            if u64::from(self.slot_size) != geo.entry_size {
                return bad(format!(
                    "entry size {} should be {} for {}-byte keys and {}-byte values",
                    self.slot_size, geo.entry_size, geo.key_size, geo.value_size
                ));
            }
            if self.flags & (crate::wire::flags::JOURNALED | crate::wire::flags::POOL) != 0 {
                return bad(format!(
                    "a blackboard flagged {:#x}: it has no journal and no pool",
                    self.flags
                ));
            }
            let end = geo
                .table_len()
                .and_then(|t| t.checked_add(self.data_offset));
            if end.is_none_or(|end| end > self.total_len) {
                return bad(format!(
                    "{} entries of {} bytes do not fit in {} bytes",
                    geo.entries, geo.entry_size, self.total_len
                ));
            }
        }
        if let Kind::Service = self.kind {
            let geo = self
                .service_geometry()
                .map_err(|e| OpenError::InvalidGeometry(e.to_string()))?;
            if u64::from(self.slot_size) != geo.slot_size() {
                return bad(format!(
                    "call slot size {} should be {} for {}-byte requests and {}-byte responses",
                    self.slot_size,
                    geo.slot_size(),
                    geo.request,
                    geo.response
                ));
            }
            if self.flags & !crate::wire::flags::HUGE_PAGES != 0 {
                return bad(format!(
                    "a service flagged {:#x}: it has no flag but huge pages",
                    self.flags
                ));
            }
            let end = geo
                .slot_count()
                .checked_mul(geo.slot_size())
                .and_then(|t| t.checked_add(self.data_offset));
            if end.is_none_or(|end| end > self.total_len) {
                return bad(format!(
                    "{} call slots of {} bytes do not fit in {} bytes",
                    geo.slot_count(),
                    geo.slot_size(),
                    self.total_len
                ));
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
            // A typed stream records its record type's alignment, which
            // its records' place in the ring must honour.
            let align = self.msg.align;
            if !align.is_power_of_two() || align > STREAM_RECORD_ALIGN {
                return bad(format!(
                    "record alignment {align} is not a power of two up to {STREAM_RECORD_ALIGN}"
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
