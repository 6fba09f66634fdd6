//! A message type as the header records it (size, alignment, a name and
//! its hash), compared by every opener of a typed bus.

use std::fmt;

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
    /// The fingerprint of `T`, from `core::any::type_name` (so the name,
    /// and the hash, include the type's module path).
    ///
    /// # Examples
    /// ```
    /// use shmbus::TypeFingerprint;
    /// let fp = TypeFingerprint::of::<u64>();
    /// assert_eq!((fp.size, fp.align, fp.name.as_str()), (8, 8, "u64"));
    /// ```
    pub fn of<T>() -> TypeFingerprint {
        Self::new(
            core::any::type_name::<T>(),
            size_of::<T>() as u32,
            align_of::<T>() as u32,
        )
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
