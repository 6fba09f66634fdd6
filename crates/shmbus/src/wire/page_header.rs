//! The header page as a value: built for a new segment, written once by its
//! creator before the magic. Reading one back (and validating it) is
//! `segment`'s job.

use super::{GeometryError, Kind, PoolGeometry, TypeFingerprint, flags, header, max_record};
use super::{LINE, MAGIC, MAX_MSG_SIZE, MAX_STREAM, MIN_STREAM, STAMP_BYTES, VERSION};
use crate::mem::Region;
use crate::sync::Ordering;

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
    /// The block pool, for a pool bus (flag `POOL`).
    pub pool: Option<super::PoolGeometry>,
    /// The message type of a pool bus's blocks (its slots carry
    /// descriptors, `msg`); all zero for a pool bus made before the
    /// header recorded it.
    pub block_msg: Option<TypeFingerprint>,
    /// A blackboard's key type (its value type is `msg`); a service's
    /// response type (its request type is `msg`).
    pub key: Option<TypeFingerprint>,
    /// A service's slots per client and server entries.
    pub service: Option<ServiceShape>,
}

/// A request-response service's numbers beyond `capacity` (its client
/// entries): docs/LAYOUT.md §25.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServiceShape {
    /// Call slots per client.
    pub slots: u32,
    /// Server entries.
    pub servers: u32,
}

/// Writes a type name's field at `off`: its first 64 bytes, NUL-padded,
/// as eight u64 words (Relaxed, as every header field).
fn write_name<R: Region>(r: &R, off: usize, name: &str) {
    let mut field = [0u8; header::TYPE_NAME_LEN];
    let n = name.len().min(header::TYPE_NAME_LEN);
    field[..n].copy_from_slice(&name.as_bytes()[..n]);
    for (i, chunk) in field.chunks_exact(8).enumerate() {
        let word = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        r.word(off + 8 * i).store(word, Ordering::Relaxed);
    }
}

/// Reads a type name's field at `off` (eight u64 words, Relaxed) up to
/// its first NUL; bytes that are not UTF-8 are replaced, never trusted.
pub(crate) fn read_name<R: Region>(r: &R, off: usize) -> String {
    let mut field = [0u8; header::TYPE_NAME_LEN];
    for (i, chunk) in field.chunks_exact_mut(8).enumerate() {
        chunk.copy_from_slice(&r.word(off + 8 * i).load(Ordering::Relaxed).to_le_bytes());
    }
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    String::from_utf8_lossy(&field[..end]).into_owned()
}

pub(crate) fn round_up(n: u64, to: u64) -> Option<u64> {
    n.checked_add(to - 1).map(|v| v / to * to)
}

impl Header {
    /// How many publishers a bus is made for (flag `MULTI_PUBLISHER`; on
    /// a blackboard the same bit is `MULTI_WRITER`).
    pub fn publishers(&self) -> super::Publishers {
        if self.flags & flags::MULTI_PUBLISHER != 0 {
            super::Publishers::Many
        } else {
            super::Publishers::One
        }
    }

    /// Whether the segment is laid out in huge pages (flag `HUGE_PAGES`):
    /// `page_size` is then the huge page size.
    pub fn huge_pages(&self) -> bool {
        self.flags & flags::HUGE_PAGES != 0
    }

    /// Marks a new bus as made for `publishers`.
    pub fn set_publishers(&mut self, publishers: super::Publishers) {
        match publishers {
            super::Publishers::Many => self.flags |= flags::MULTI_PUBLISHER,
            super::Publishers::One => self.flags &= !flags::MULTI_PUBLISHER,
        }
    }

    /// The geometry of a new broadcast bus.
    pub fn broadcast(
        capacity: u64,
        msg: TypeFingerprint,
        page_size: u64,
        first_seq: u64,
    ) -> Result<Header, GeometryError> {
        if capacity == 0 || !capacity.is_power_of_two() {
            return Err(GeometryError::Capacity { capacity });
        }
        if msg.size == 0 || msg.size > MAX_MSG_SIZE {
            return Err(GeometryError::MsgSize {
                size: msg.size,
                max: MAX_MSG_SIZE,
            });
        }
        // msg.size <= MAX_MSG_SIZE (16 MiB): these cannot overflow.
        let payload = u64::from(msg.size).div_ceil(8) * 8;
        let slot_size = (STAMP_BYTES as u64 + payload).div_ceil(LINE as u64) * LINE as u64;
        let too_large = GeometryError::TooLarge {
            capacity,
            slot_size,
        };
        let data_offset = page_size + super::broadcast_control_len(page_size);
        let total_len = capacity
            .checked_mul(slot_size)
            .and_then(|data| round_up(data, page_size))
            .and_then(|data| data.checked_add(data_offset))
            .filter(|&t| t <= isize::MAX as u64)
            .ok_or(too_large)?;
        Ok(Header {
            kind: Kind::Broadcast,
            page_size,
            flags: 0,
            control_offset: page_size,
            data_offset,
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
            pool: None,
            block_msg: None,
            key: None,
            service: None,
        })
    }

    /// The same bus with a pool of `blocks` blocks of `block_size` bytes
    /// whose messages are `block_msg`: its control area grows by the hold
    /// lines, its data pages by the blocks' states and the blocks
    /// (docs/LAYOUT.md §19).
    ///
    /// # Errors
    /// As [`PoolGeometry::new`], [`GeometryError::PoolTooSmall`] for
    /// fewer blocks than `capacity + 1`, and
    /// [`GeometryError::PoolBlockType`] for a message type a block cannot
    /// hold.
    pub fn with_pool(
        mut self,
        blocks: u64,
        block_size: u64,
        block_msg: TypeFingerprint,
    ) -> Result<(Header, PoolGeometry), GeometryError> {
        let page = self.page_size;
        let extra = super::pool_control_len(page) - super::broadcast_control_len(page);
        let too_large = GeometryError::TooLarge {
            capacity: self.capacity,
            slot_size: u64::from(self.slot_size),
        };
        self.data_offset = self
            .data_offset
            .checked_add(extra)
            .ok_or(too_large.clone())?;
        let slots_end = self.total_len.checked_add(extra).ok_or(too_large)?;
        let pool = PoolGeometry::new(blocks, block_size, slots_end, page)?;
        if blocks <= self.capacity {
            return Err(GeometryError::PoolTooSmall {
                blocks,
                capacity: self.capacity,
            });
        }
        super::pool::block_type_fits(&block_msg, block_size)?;
        self.total_len = pool.end;
        self.flags |= flags::POOL;
        self.pool = Some(pool);
        self.block_msg = Some(block_msg);
        Ok((self, pool))
    }

    /// The same bus without the registry's lines: its data pages follow
    /// one control page and one page of lines for the few lossless
    /// subscribers a heap ring takes (`bus::gate`). For heap rings, which
    /// have no registry.
    pub(crate) fn with_heap_lines(mut self) -> Header {
        let cut = self.data_offset - 3 * self.page_size;
        self.data_offset -= cut;
        self.total_len -= cut;
        self
    }

    /// The geometry of a new byte stream of `capacity` bytes.
    pub fn stream(capacity: u64, page_size: u64) -> Result<Header, GeometryError> {
        if !(MIN_STREAM..=MAX_STREAM).contains(&capacity) || !capacity.is_power_of_two() {
            return Err(GeometryError::StreamCapacity {
                capacity,
                min: MIN_STREAM,
                max: MAX_STREAM,
            });
        }
        let data = round_up(capacity, page_size).ok_or(GeometryError::TooLarge {
            capacity,
            slot_size: 1,
        })?;
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
            pool: None,
            block_msg: None,
            key: None,
            service: None,
        })
    }

    /// The geometry of a new blackboard of `geo`'s shape whose keys are
    /// `key` and values `value` (docs/LAYOUT.md §21): one control page,
    /// then the table.
    pub fn blackboard(
        geo: &super::BlackboardGeometry,
        key: TypeFingerprint,
        value: TypeFingerprint,
        page_size: u64,
    ) -> Result<Header, GeometryError> {
        let too_large = GeometryError::TooLarge {
            capacity: geo.entries,
            slot_size: geo.entry_size,
        };
        let total_len = geo
            .table_len()
            .and_then(|t| round_up(t, page_size))
            .and_then(|t| t.checked_add(2 * page_size))
            .filter(|&t| t <= isize::MAX as u64)
            .ok_or(too_large)?;
        Ok(Header {
            kind: Kind::Blackboard,
            page_size,
            flags: 0,
            control_offset: page_size,
            data_offset: 2 * page_size,
            total_len,
            capacity: geo.keys,
            slot_size: geo.entry_size as u32,
            msg: value,
            first_seq: 0,
            creator_pid: std::process::id(),
            created_ns: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64),
            journal: None,
            pool: None,
            block_msg: None,
            key: Some(key),
            service: None,
        })
    }

    /// The header of a new service of `geo`'s shape whose requests are
    /// `request` and responses `response` (docs/LAYOUT.md §25): its
    /// control area (servers' and clients' lines) from page 1, then the
    /// call slots.
    pub fn service(
        geo: &super::ServiceGeometry,
        request: TypeFingerprint,
        response: TypeFingerprint,
        page_size: u64,
    ) -> Result<Header, GeometryError> {
        let slot_size = geo.slot_size();
        let too_large = GeometryError::TooLarge {
            capacity: geo.slot_count(),
            slot_size,
        };
        let control_len = round_up(geo.control_bytes(), page_size).ok_or(too_large.clone())?;
        let data_offset = page_size + control_len;
        let total_len = geo
            .slot_count()
            .checked_mul(slot_size)
            .and_then(|d| round_up(d, page_size))
            .and_then(|d| d.checked_add(data_offset))
            .filter(|&t| t <= isize::MAX as u64)
            .filter(|_| slot_size <= u64::from(u32::MAX))
            .ok_or(too_large)?;
        Ok(Header {
            kind: Kind::Service,
            page_size,
            flags: 0,
            control_offset: page_size,
            data_offset,
            total_len,
            capacity: u64::from(geo.clients),
            slot_size: slot_size as u32,
            msg: request,
            first_seq: 0,
            creator_pid: std::process::id(),
            created_ns: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64),
            journal: None,
            pool: None,
            block_msg: None,
            key: Some(response),
            service: Some(ServiceShape {
                slots: geo.slots,
                servers: geo.servers,
            }),
        })
    }

    /// A service's shape, from a header whose kind says it is one (sizes
    /// unchecked: `segment`'s validation checks them).
    pub fn service_geometry(&self) -> Result<super::ServiceGeometry, GeometryError> {
        let shape = self.service.unwrap_or(ServiceShape {
            slots: 0,
            servers: 0,
        });
        let response = self.key.as_ref().map_or(0, |k| k.size);
        let clients = u32::try_from(self.capacity).unwrap_or(u32::MAX);
        super::ServiceGeometry::new(clients, shape.slots, shape.servers, self.msg.size, response)
    }

    /// A blackboard's shape, from a header whose kind says it is one
    /// (sizes unchecked: `segment`'s validation checks them).
    pub fn blackboard_geometry(&self) -> Result<super::BlackboardGeometry, GeometryError> {
        let key = self.key.as_ref().map_or(0, |k| k.size);
        super::BlackboardGeometry::new(self.capacity, key, self.msg.size)
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
        write_name(r, h::TYPE_NAME, &self.msg.name);
        if let Some(pool) = &self.pool {
            w64(h::POOL_BLOCKS, pool.blocks);
            w64(h::POOL_BLOCK_SIZE, pool.block_size);
        }
        if let Some(block) = &self.block_msg {
            w64(h::POOL_TYPE_HASH, block.name_hash);
            w32(h::POOL_MSG_SIZE, block.size);
            w32(h::POOL_MSG_ALIGN, block.align);
            write_name(r, h::POOL_TYPE_NAME, &block.name);
        }
        if let Some(key) = &self.key {
            use super::blackboard::header as b;
            w64(b::KEY_HASH, key.name_hash);
            w32(b::KEY_SIZE, key.size);
            w32(b::KEY_ALIGN, key.align);
            write_name(r, b::KEY_NAME, &key.name);
        }
        if let Some(shape) = &self.service {
            use super::service::header as sv;
            w32(sv::SLOTS, shape.slots);
            w32(sv::SERVERS, shape.servers);
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
}
