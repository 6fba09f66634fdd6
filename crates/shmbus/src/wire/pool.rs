//! A pool bus's geometry: where its blocks' states and its blocks lie, and
//! what one descriptor in a slot says (docs/LAYOUT.md §19).

use super::{GeometryError, TypeFingerprint, round_up};

/// Largest block, in bytes (1 GiB).
pub const MAX_BLOCK_SIZE: u64 = 1 << 30;
/// Most blocks in one pool.
pub const MAX_BLOCKS: u64 = 1 << 20;
/// Bytes of one descriptor: u64 block index, then u64 length.
pub const DESCRIPTOR_BYTES: u32 = 16;

/// Every block starts at a multiple of this many bytes (the block size is
/// a multiple of it, and the blocks start on a page): the most a block's
/// message type may be aligned to.
pub const BLOCK_ALIGN: u64 = 64;

/// Whether a block of `block_size` bytes holds a `msg`: no larger than
/// the block, aligned to at most [`BLOCK_ALIGN`].
///
/// # Errors
/// [`GeometryError::PoolBlockType`] otherwise.
pub fn block_type_fits(msg: &TypeFingerprint, block_size: u64) -> Result<(), GeometryError> {
    if u64::from(msg.size) <= block_size && u64::from(msg.align) <= BLOCK_ALIGN {
        return Ok(());
    }
    Err(GeometryError::PoolBlockType {
        type_name: msg.name.clone(),
        size: msg.size,
        align: msg.align,
        block_size,
    })
}

/// The message type of a pool bus's slots: a descriptor.
pub fn descriptor() -> TypeFingerprint {
    TypeFingerprint::new("shmbus::pool::Descriptor", DESCRIPTOR_BYTES, 8)
}

/// Where a pool lies in its segment. All offsets are from byte 0 of the
/// file; `states` and `blocks` are page-aligned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolGeometry {
    /// Number of blocks.
    pub blocks: u64,
    /// Bytes per block, a multiple of 64.
    pub block_size: u64,
    /// Offset of the blocks' state words (u64 each), right after the
    /// slots, rounded up to a page.
    pub states: u64,
    /// Offset of block 0; block b is at `blocks_offset + b * block_size`.
    pub blocks_offset: u64,
    /// Where the pool ends: the segment's `total_len`.
    pub end: u64,
}

impl PoolGeometry {
    /// The pool of `blocks` blocks of `block_size` bytes after slots that
    /// end at `slots_end` (page-aligned).
    ///
    /// # Errors
    /// [`GeometryError::PoolBlockSize`], [`GeometryError::PoolBlocks`] for
    /// a size or count outside the limits, [`GeometryError::TooLarge`] if
    /// the segment would pass the address space.
    pub fn new(
        blocks: u64,
        block_size: u64,
        slots_end: u64,
        page_size: u64,
    ) -> Result<PoolGeometry, GeometryError> {
        if !(64..=MAX_BLOCK_SIZE).contains(&block_size) || block_size % 64 != 0 {
            return Err(GeometryError::PoolBlockSize {
                size: block_size,
                max: MAX_BLOCK_SIZE,
            });
        }
        if !(1..=MAX_BLOCKS).contains(&blocks) {
            return Err(GeometryError::PoolBlocks {
                blocks,
                max: MAX_BLOCKS,
            });
        }
        let too_large = GeometryError::TooLarge {
            capacity: blocks,
            slot_size: block_size,
        };
        // blocks <= 2^20: 8 * blocks cannot overflow.
        let states_len = round_up(8 * blocks, page_size).ok_or(too_large.clone())?;
        let blocks_offset = slots_end.checked_add(states_len).ok_or(too_large.clone())?;
        let end = blocks
            .checked_mul(block_size)
            .and_then(|b| round_up(b, page_size))
            .and_then(|b| b.checked_add(blocks_offset))
            .filter(|&e| e <= isize::MAX as u64)
            .ok_or(too_large)?;
        Ok(PoolGeometry {
            blocks,
            block_size,
            states: slots_end,
            blocks_offset,
            end,
        })
    }

    /// Offset of block `b`'s state word.
    #[inline]
    pub fn state(&self, b: u64) -> usize {
        (self.states + 8 * b) as usize
    }

    /// Offset of block `b`'s first byte.
    #[inline]
    pub fn block(&self, b: u64) -> usize {
        (self.blocks_offset + b * self.block_size) as usize
    }
}
