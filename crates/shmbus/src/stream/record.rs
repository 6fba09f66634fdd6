//! A stream's record type in its header: what a typed creator records and
//! what a typed opener checks (docs/LAYOUT.md §20).
//!
//! Invariants:
//! - A raw stream (`[u8]`) records the type `stream`, alignment 8, or the
//!   name and alignment its options give
//!   ([`Options::message_type`](crate::stream::Options::message_type));
//!   a typed one records its type's [`Message::NAME`](crate::Message::NAME),
//!   that name's hash and the type's alignment. Either way `msg_size` is
//!   the largest record (half the ring less 8), the geometry's rule, not
//!   the type's size: the header does not record `size_of::<T>()`.
//! - A typed opener checks its `T`; a raw one checks only the type its
//!   options name ([`OpenOptions::message_type`](crate::OpenOptions::message_type)),
//!   else opens a stream of any type.
//! - A typed stream's type is aligned to at most [`STREAM_RECORD_ALIGN`]
//!   and no larger than the largest record: refused at creation
//!   ([`GeometryError::RecordAlign`], [`GeometryError::RecordTooLarge`]),
//!   and, at open, refused as a [`OpenError::TypeMismatch`] (an opener
//!   validates `msg_align <= 8` for every stream first).
//! - So a typed handle may view a record's bytes as a `&T`: they start
//!   8-aligned in a page-aligned ring. A record of another length than
//!   `size_of::<T>()` (a raw producer wrote it) is refused when read,
//!   never viewed.

use crate::bus::Payload;
use crate::error::OpenError;
use crate::wire::{GeometryError, Header, STREAM_RECORD_ALIGN, TypeFingerprint, max_record};

/// The header of a new stream of `capacity` bytes carrying `T`, or, for
/// raw bytes, the type `named` (name and alignment; `stream` if none).
pub(crate) fn header<T: ?Sized + Payload>(
    capacity: u64,
    page_size: u64,
    named: Option<&(String, u32)>,
) -> Result<Header, GeometryError> {
    let mut header = Header::stream(capacity, page_size)?;
    // A named type for raw bytes has no size of its own: checked as a
    // type of size 0 (which every alignment divides).
    let named = named.map(|(name, align)| TypeFingerprint::new(name, 0, *align));
    let ty = if T::is_raw() {
        named
    } else {
        T::expected(None)
    };
    if let Some(ty) = ty {
        let ty = TypeFingerprint::checked(&ty.name, ty.size, ty.align)?;
        if ty.align > STREAM_RECORD_ALIGN {
            return Err(GeometryError::RecordAlign {
                type_name: ty.name,
                align: ty.align,
                max: STREAM_RECORD_ALIGN,
            });
        }
        let max = max_record(capacity);
        if u64::from(ty.size) > max {
            return Err(GeometryError::RecordTooLarge {
                type_name: ty.name,
                size: u64::from(ty.size),
                capacity,
                max,
            });
        }
        header.msg = TypeFingerprint {
            size: header.msg.size,
            ..ty
        };
    }
    Ok(header)
}

/// Refuses a stream whose record type is not `T` (a raw `[u8]` opener
/// takes any, unless its options name one: `named`): name hash and
/// alignment must agree, and the type must fit in the largest record
/// (which the header records where a bus records the size). `found` is
/// the header's fingerprint, its size the largest record.
pub(crate) fn check<T: ?Sized + Payload>(
    header: &Header,
    named: Option<&TypeFingerprint>,
) -> Result<(), OpenError> {
    let Some(expected) = T::expected(named) else {
        return Ok(());
    };
    let found = &header.msg;
    if found.name_hash != expected.name_hash
        || found.align != expected.align
        || expected.size > found.size
    {
        return Err(OpenError::TypeMismatch {
            found: found.clone(),
            expected,
        });
    }
    Ok(())
}
