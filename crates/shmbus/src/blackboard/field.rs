//! What a blackboard's keys and values are: a [`Message`] type (one `T`),
//! or raw bytes of a size fixed when the table is made.

use crate::bus::Payload;
use crate::wire::Message;

/// A blackboard's key or value: a [`Message`] `T` (read back as a `T`),
/// or `[u8]` (read back as a `Vec<u8>` of the table's size). Implemented
/// for those two only (it builds on the sealed [`Payload`]).
///
/// # Examples
/// ```
/// use shmbus::blackboard::Field;
///
/// assert_eq!(7u64.as_bytes(), &7u64.to_ne_bytes());
/// assert_eq!(<u64 as Field>::from_bytes(&9u64.to_ne_bytes()), 9);
/// assert_eq!(<[u8] as Field>::from_bytes(b"ab"), b"ab".to_vec());
/// ```
pub trait Field: Payload {
    /// What a read gives back: `T`, or `Vec<u8>`.
    type Owned;
    /// The bytes written to (or compared with) the table.
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::Field;
    /// assert_eq!(b"ab"[..].as_bytes(), b"ab");
    /// ```
    fn as_bytes(&self) -> &[u8];
    /// A value read from the table's bytes (exactly the table's size for
    /// this field; any bytes are a valid `T`, as `T` is plain data).
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::Field;
    /// assert_eq!(<u32 as Field>::from_bytes(&5u32.to_ne_bytes()), 5);
    /// ```
    fn from_bytes(bytes: &[u8]) -> Self::Owned;
    /// The size of a typed field, known at compile time (`None` for raw
    /// bytes): lets a typed reader's sizes fold into constants.
    #[doc(hidden)]
    const SIZE: Option<usize>;
}

impl<T: Message> Field for T {
    type Owned = T;
    const SIZE: Option<usize> = Some(size_of::<T>());
    #[inline]
    fn as_bytes(&self) -> &[u8] {
        bytemuck::bytes_of(self)
    }
    #[inline]
    fn from_bytes(bytes: &[u8]) -> T {
        bytemuck::pod_read_unaligned(bytes)
    }
}

impl Field for [u8] {
    type Owned = Vec<u8>;
    const SIZE: Option<usize> = None;
    #[inline]
    fn as_bytes(&self) -> &[u8] {
        self
    }
    fn from_bytes(bytes: &[u8]) -> Vec<u8> {
        bytes.to_vec()
    }
}
