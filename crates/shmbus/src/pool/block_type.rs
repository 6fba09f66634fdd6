//! What a pool's blocks carry: the block message type a new pool records
//! for its payload `T` (a [`Message`](crate::Message) type, or `[u8]`
//! for raw bytes), and the check a typed opener makes of the one it finds
//! (docs/LAYOUT.md §4, §19.1).
//!
//! The slots of a pool bus carry descriptors, so the header's own type
//! fields hold the descriptor's fingerprint; the block's type has fields
//! of its own (`POOL_TYPE_HASH` and after). A typed handle needs every
//! message to be exactly one `T`, aligned for it: blocks start 64-byte
//! aligned and a block holds `block_size` bytes, so a `T` aligned to more
//! than 64 bytes or larger than a block is refused when the pool is made
//! or opened, never at a loan or a receive.

use crate::bus::Payload;
use crate::error::OpenError;
use crate::wire::{GeometryError, Header, TypeFingerprint, block_type_fits};

/// The block type a new pool of `block_size`-byte blocks records for
/// payload `T`: `T`'s fingerprint; for raw bytes the type its options
/// name (`named`: name, size, alignment), else `bytes` of the block size
/// (as a raw bus records `bytes` of its message size). Whether it fits a
/// block is `Header::with_pool`'s check.
///
/// # Errors
/// [`GeometryError::MessageType`] for a type whose name or alignment the
/// header cannot record.
pub(crate) fn block_type<T: ?Sized + Payload>(
    block_size: u64,
    named: Option<&(String, u32, u32)>,
) -> Result<TypeFingerprint, GeometryError> {
    if T::is_raw() {
        if let Some((name, size, align)) = named {
            return TypeFingerprint::checked(name, *size, *align);
        }
    }
    // A block size past u32 is refused by the pool's geometry check,
    // which comes first; saturate rather than wrap until then.
    let raw_size = T::is_raw().then(|| u32::try_from(block_size).unwrap_or(u32::MAX));
    T::fingerprint(raw_size, None)
}

/// What a handle of payload `T` needs of every message it reads: exactly
/// `size` bytes, aligned to `align` (`None` for raw bytes, which take any
/// length up to the block size).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Exact {
    pub(crate) size: usize,
    pub(crate) align: usize,
}

/// Checks the block type `header` records against the one payload `T`
/// expects (`named`: the type an [`OpenOptions`](crate::OpenOptions)
/// names, which only a raw opener takes; a typed one checks its own), and
/// that a typed `T` fits the pool's blocks. Returns what a typed reader
/// needs of each message.
///
/// # Errors
/// [`OpenError::TypeMismatch`] (found vs expected) unless size, alignment
/// and name hash all agree; a pool made before the header recorded its
/// block type has all three zero, so only raw openers open it.
/// [`OpenError::InvalidGeometry`] for a pool whose blocks cannot hold the
/// type it records (no creator makes one).
pub(crate) fn check_block_type<T: ?Sized + Payload>(
    header: &Header,
    named: Option<&TypeFingerprint>,
) -> Result<Option<Exact>, OpenError> {
    let Some(expected) = T::expected(named) else {
        return Ok(None);
    };
    // A pool header always has both (`Header::read` reads the block type
    // with the pool); a zero fingerprint stands in for neither.
    let found = header.block_msg.clone().unwrap_or_else(|| TypeFingerprint {
        size: 0,
        align: 0,
        name_hash: 0,
        name: String::new(),
    });
    if found.size != expected.size
        || found.align != expected.align
        || found.name_hash != expected.name_hash
    {
        return Err(OpenError::TypeMismatch { found, expected });
    }
    let exact = exact::<T>();
    if exact.is_some() {
        let block_size = header.pool.map_or(0, |p| p.block_size);
        block_type_fits(&expected, block_size)
            .map_err(|e| OpenError::InvalidGeometry(e.to_string()))?;
    }
    Ok(exact)
}

/// What a handle of payload `T` needs of every message: `None` for raw
/// bytes, else `T`'s size and alignment.
pub(crate) fn exact<T: ?Sized + Payload>() -> Option<Exact> {
    if T::is_raw() {
        return None;
    }
    T::expected(None).map(|fp| Exact {
        size: fp.size as usize,
        align: fp.align as usize,
    })
}
