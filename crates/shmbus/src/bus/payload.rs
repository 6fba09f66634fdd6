//! What a bus carries: a plain-old-data type `T`, or raw bytes of a size
//! chosen when the bus is made. Every handle (`Publisher`, `MpPublisher`,
//! `Subscriber`) is one implementation generic over its payload; only the
//! few calls whose signatures differ (a `&T` or a `&[u8]`) are written
//! twice, each a line over the shared code.

use bytemuck::Pod;

use crate::wire::{GeometryError, TypeFingerprint};

mod sealed {
    pub trait Sealed {}
    impl<T: bytemuck::Pod> Sealed for T {}
    impl Sealed for [u8] {}
}

/// A bus's message: any [`Pod`] type `T` (the bus records its size,
/// alignment and type name, and a mismatched opener is refused), or `[u8]`
/// (raw bytes: a bus of any message type, read and written as bytes; a new
/// one takes its size from [`crate::BusOptions::msg_size`]).
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
    /// its options ask for (required for `[u8]`).
    #[doc(hidden)]
    fn fingerprint(msg_size: Option<u32>) -> Result<TypeFingerprint, GeometryError>;
    /// The fingerprint an opener insists on; `None` opens any bus.
    #[doc(hidden)]
    fn expected() -> Option<TypeFingerprint>;
}

impl<T: Pod> Payload for T {
    fn fingerprint(msg_size: Option<u32>) -> Result<TypeFingerprint, GeometryError> {
        let fp = TypeFingerprint::of::<T>();
        match msg_size {
            Some(n) if n != fp.size => Err(GeometryError::TypeSize {
                asked: n,
                size: fp.size,
                type_name: fp.name,
            }),
            _ => Ok(fp),
        }
    }
    fn expected() -> Option<TypeFingerprint> {
        Some(TypeFingerprint::of::<T>())
    }
}

impl Payload for [u8] {
    fn fingerprint(msg_size: Option<u32>) -> Result<TypeFingerprint, GeometryError> {
        msg_size
            .map(TypeFingerprint::bytes)
            .ok_or(GeometryError::RawNeedsMsgSize)
    }
    fn expected() -> Option<TypeFingerprint> {
        None
    }
}
