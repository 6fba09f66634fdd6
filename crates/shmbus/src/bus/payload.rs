//! What a bus carries: a plain-old-data type `T`, or raw bytes of a size
//! chosen when the bus is made. Every handle (`Publisher`, `ManyPublisher`,
//! `Subscriber`) is one implementation generic over its payload; only the
//! few calls whose signatures differ (a `&T` or a `&[u8]`) are written
//! twice, each a line over the shared code.

use crate::wire::{GeometryError, Message, TypeFingerprint};

mod sealed {
    pub trait Sealed {}
    impl<T: crate::wire::Message> Sealed for T {}
    impl Sealed for [u8] {}
}

/// A bus's message: any [`Message`] type `T` (the bus records its size,
/// alignment and schema name, and a mismatched opener is refused), or
/// `[u8]` (raw bytes: a bus of any message type, read and written as bytes;
/// a new one takes its size from [`crate::BusOptions::msg_size`], and its
/// type from [`crate::BusOptions::message_type`] if given; an opener
/// checks the type only if [`crate::OpenOptions::message_type`] names one).
///
/// Sealed: these two are the payloads there are.
///
/// # Examples
/// ```
/// use shmbus::{BusOptions, Publisher, Start, Subscriber, Wait, WaitStrategy};
///
/// // Typed: the message is a `u64`.
/// let mut typed = Publisher::<u64, _>::on_heap(8)?;
/// typed.publish(&7);
///
/// // Raw: 16-byte messages, written as bytes.
/// let mut raw = Publisher::<[u8], _>::on_heap_bytes(16, 8)?;
/// raw.publish(b"hello")?; // zero-padded to 16 bytes
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Payload: sealed::Sealed {
    /// The fingerprint a new bus of this payload records, given the size
    /// (required for `[u8]`) and the named type (`[u8]` only) its options
    /// ask for.
    #[doc(hidden)]
    fn fingerprint(
        msg_size: Option<u32>,
        named: Option<&(String, u32)>,
    ) -> Result<TypeFingerprint, GeometryError>;
    /// The fingerprint an opener insists on, given the one its options
    /// name (which only a `[u8]` opener takes; a typed one checks its own
    /// type); `None` opens any bus.
    #[doc(hidden)]
    fn expected(named: Option<&TypeFingerprint>) -> Option<TypeFingerprint>;
    /// Raw bytes: the payload has no type of its own.
    #[doc(hidden)]
    fn is_raw() -> bool;
}

impl<T: Message> Payload for T {
    fn fingerprint(
        msg_size: Option<u32>,
        _named: Option<&(String, u32)>,
    ) -> Result<TypeFingerprint, GeometryError> {
        let fp = TypeFingerprint::checked(T::NAME, size_of::<T>() as u32, align_of::<T>() as u32)?;
        match msg_size {
            Some(n) if n != fp.size => Err(GeometryError::TypeSize {
                asked: n,
                size: fp.size,
                type_name: fp.name,
            }),
            _ => Ok(fp),
        }
    }
    fn expected(_named: Option<&TypeFingerprint>) -> Option<TypeFingerprint> {
        Some(TypeFingerprint::of::<T>())
    }
    fn is_raw() -> bool {
        false
    }
}

impl Payload for [u8] {
    fn fingerprint(
        msg_size: Option<u32>,
        named: Option<&(String, u32)>,
    ) -> Result<TypeFingerprint, GeometryError> {
        let size = msg_size.ok_or(GeometryError::RawNeedsMsgSize)?;
        match named {
            Some((name, align)) => TypeFingerprint::checked(name, size, *align),
            None => Ok(TypeFingerprint::bytes(size)),
        }
    }
    fn expected(named: Option<&TypeFingerprint>) -> Option<TypeFingerprint> {
        named.cloned()
    }
    fn is_raw() -> bool {
        true
    }
}
