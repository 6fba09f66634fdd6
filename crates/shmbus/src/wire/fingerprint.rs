//! A message type as the header records it (size, alignment, a schema
//! name and its hash), compared by every opener of a typed bus, and
//! [`Message`], the trait that gives a Rust type that name.
//!
//! The name is the type's identity across languages: a C or Python process
//! states the same name, size and alignment (docs/LAYOUT.md §4, "Type
//! fingerprint"). It is never derived from `core::any::type_name`, whose
//! output differs between compilers.

use std::fmt;

use bytemuck::Pod;

use super::GeometryError;

/// A message type a typed bus carries: plain old data with a schema name
/// that every language can state. The bus records the name (with the
/// type's size and alignment); an opener whose type differs in any of the
/// three is refused with [`OpenError::TypeMismatch`](crate::OpenError::TypeMismatch),
/// which names both.
///
/// Implement it by hand, with a name that stays the same when the type
/// moves or is renamed in Rust (1 to 64 bytes; a dotted name such as
/// `md.Tick.v1` reads well from C and Python). The primitive numbers are
/// implemented with their Rust names (`u64`, `f64`, ...).
///
/// # Examples
/// ```
/// use shmbus::{BusOptions, Message, OpenOptions, Publisher, Subscriber};
///
/// #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
/// #[repr(C)]
/// struct Tick { key: u64, val: u64 }
///
/// impl Message for Tick {
///     const NAME: &'static str = "md.Tick";
/// }
///
/// # let name = format!("/dev/shm/shmbus-doc-message-{}", std::process::id());
/// let publisher = Publisher::<Tick>::create(&name, &BusOptions::new(64))?;
/// // A raw-byte reader (as C and Python open it) states the same type:
/// let opts = OpenOptions::default().message_type("md.Tick", 16, 8);
/// let raw = Subscriber::<[u8]>::open(&name, &opts)?;
/// # shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Message: Pod {
    /// The schema name the bus records: 1 to 64 bytes of UTF-8.
    const NAME: &'static str;
}

macro_rules! primitive_messages {
    ($($t:ty),*) => {
        $(impl Message for $t {
            const NAME: &'static str = stringify!($t);
        })*
    };
}

primitive_messages!(u8, u16, u32, u64, u128, i8, i16, i32, i64, i128, f32, f64);

/// An array of messages is named `T[N]`: `u64[8]`, `md.Tick[4]`.
impl<T: Message, const N: usize> Message for [T; N]
where
    [T; N]: Pod,
{
    const NAME: &'static str = {
        let (bytes, len) = &array_name(T::NAME, N);
        match core::str::from_utf8(bytes.split_at(*len).0) {
            Ok(name) => name,
            Err(_) => panic!("a message name is UTF-8"),
        }
    };
}

/// `name[n]` in a 64-byte buffer (cut at 64 bytes, as the header keeps
/// it; a cut name then fails the create-time check, never silently).
const fn array_name(name: &str, n: usize) -> ([u8; 64], usize) {
    let mut out = [0u8; 64];
    let mut len = 0;
    let src = name.as_bytes();
    let mut i = 0;
    while i < src.len() && len < 64 {
        out[len] = src[i];
        len += 1;
        i += 1;
    }
    let mut digits = [0u8; 20];
    let mut d = 0;
    let mut rest = n;
    loop {
        digits[d] = b'0' + (rest % 10) as u8;
        d += 1;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    if len + d + 2 > 64 {
        // Too long to record: an empty name, which `checked` refuses.
        return (out, 0);
    }
    out[len] = b'[';
    len += 1;
    while d > 0 {
        d -= 1;
        out[len] = digits[d];
        len += 1;
    }
    out[len] = b']';
    len += 1;
    (out, len)
}

/// What a message type looks like on disk: compared on open. A typed
/// opener is refused with [`OpenError::TypeMismatch`](crate::OpenError::TypeMismatch)
/// unless size, alignment and name hash all agree (the name itself is
/// only shown).
///
/// # Examples
/// ```
/// use shmbus::{BusOptions, OpenError, OpenOptions, Publisher, Subscriber, TypeFingerprint};
/// # let name = format!("/dev/shm/shmbus-doc-fingerprint-{}", std::process::id());
/// let publisher = Publisher::<u64>::create(&name, &BusOptions::new(64))?;
/// match Subscriber::<u32>::open(&name, &OpenOptions::default()) {
///     Err(OpenError::TypeMismatch { found, expected }) => {
///         assert_eq!(found, TypeFingerprint::of::<u64>());
///         assert_eq!(expected, TypeFingerprint::of::<u32>());
///     }
///     Err(other) => panic!("unexpected error: {other}"),
///     Ok(_) => panic!("the bus carries u64"),
/// }
/// # shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeFingerprint {
    /// `size_of` the message.
    pub size: u32,
    /// `align_of` the message.
    pub align: u32,
    /// FNV-1a 64 of the type name.
    pub name_hash: u64,
    /// The type name (truncated to 64 bytes in the header).
    pub name: String,
}

impl fmt::Display for TypeFingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` (size {}, align {}, name hash {:#018x})",
            self.name, self.size, self.align, self.name_hash
        )
    }
}

/// FNV-1a 64: a stable hash of a type name, the same in every build (a
/// [`TypeFingerprint`]'s `name_hash`).
///
/// # Examples
/// ```
/// use shmbus::{segment::fnv1a, TypeFingerprint};
/// assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
/// assert_eq!(fnv1a(b"u64"), TypeFingerprint::of::<u64>().name_hash);
/// ```
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
    ///
    /// # Examples
    /// ```
    /// use shmbus::TypeFingerprint;
    /// let fp = TypeFingerprint::new("Tick", 16, 8);
    /// assert_eq!((fp.size, fp.align, fp.name.as_str()), (16, 8, "Tick"));
    /// assert_ne!(fp.name_hash, TypeFingerprint::new("Tock", 16, 8).name_hash);
    /// ```
    pub fn new(name: &str, size: u32, align: u32) -> TypeFingerprint {
        TypeFingerprint {
            size,
            align,
            name_hash: fnv1a(name.as_bytes()),
            name: name.to_owned(),
        }
    }
    /// The fingerprint of `T`: its [`Message::NAME`], size and alignment.
    ///
    /// # Examples
    /// ```
    /// use shmbus::TypeFingerprint;
    /// let fp = TypeFingerprint::of::<u64>();
    /// assert_eq!((fp.size, fp.align, fp.name.as_str()), (8, 8, "u64"));
    /// ```
    pub fn of<T: Message>() -> TypeFingerprint {
        Self::new(T::NAME, size_of::<T>() as u32, align_of::<T>() as u32)
    }
    /// The fingerprint of a message type named at run time (from C,
    /// Python or the CLI), checked as a bus records it.
    ///
    /// # Errors
    /// [`GeometryError::MessageType`] unless the name is 1 to 64 bytes and
    /// `align` is a power of two up to 4096 that divides `size`.
    ///
    /// # Examples
    /// ```
    /// use shmbus::TypeFingerprint;
    /// assert!(TypeFingerprint::checked("md.Tick", 16, 8).is_ok());
    /// assert!(TypeFingerprint::checked("md.Tick", 12, 8).is_err());
    /// assert!(TypeFingerprint::checked("", 16, 8).is_err());
    /// ```
    pub fn checked(name: &str, size: u32, align: u32) -> Result<TypeFingerprint, GeometryError> {
        let fits = (1..=64).contains(&name.len())
            && align.is_power_of_two()
            && align <= 4096
            && size % align == 0;
        if !fits {
            return Err(GeometryError::MessageType {
                name: name.to_owned(),
                size,
                align,
            });
        }
        Ok(Self::new(name, size, align))
    }
    /// Raw byte messages of `size` bytes, as the CLI makes them (and as a
    /// `Publisher<[u8]>` records them): name `bytes`, alignment 1.
    ///
    /// # Examples
    /// ```
    /// use shmbus::TypeFingerprint;
    /// assert_eq!(TypeFingerprint::bytes(64), TypeFingerprint::new("bytes", 64, 1));
    /// ```
    pub fn bytes(size: u32) -> TypeFingerprint {
        Self::new("bytes", size, 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_pages_check_vector_holds() {
        assert_eq!(fnv1a(b"md.Tick"), 0x8ce6_546b_58cf_e65b);
        assert_eq!(fnv1a(b"bytes"), 0x2f2e_c047_4f1c_4fe4);
    }

    #[test]
    fn an_array_is_named_after_its_element_and_length() {
        assert_eq!(<[u64; 8] as Message>::NAME, "u64[8]");
        assert_eq!(<[[u8; 3]; 12] as Message>::NAME, "u8[3][12]");
        assert_eq!(<[f32; 1024] as Message>::NAME, "f32[1024]");
    }

    #[test]
    fn a_name_the_header_cannot_keep_whole_is_refused() {
        let long = "x".repeat(65);
        assert!(TypeFingerprint::checked(&long, 8, 8).is_err());
        assert!(TypeFingerprint::checked(&long[..64], 8, 8).is_ok());
        // An array whose name would pass 64 bytes gets the empty name.
        #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
        #[repr(C)]
        struct Long(u8);
        impl Message for Long {
            const NAME: &'static str =
                "a.sixty.two.byte.schema.name.that.fills.the.header.nearly.xyz";
        }
        assert_eq!(Long::NAME.len(), 61);
        assert_eq!(<[Long; 10] as Message>::NAME, "");
        assert!(TypeFingerprint::checked(<[Long; 10]>::NAME, 10, 1).is_err());
    }

    #[test]
    fn an_alignment_that_is_no_power_of_two_or_does_not_divide_the_size_is_refused() {
        assert!(TypeFingerprint::checked("t", 24, 8).is_ok());
        assert!(TypeFingerprint::checked("t", 24, 16).is_err());
        assert!(TypeFingerprint::checked("t", 24, 3).is_err());
        assert!(TypeFingerprint::checked("t", 24, 0).is_err());
    }
}
