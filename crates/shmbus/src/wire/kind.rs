//! What a segment is: its kind (header `kind`) and, for a bus, how many
//! publishers it is made for (header flag `MULTI_PUBLISHER`).

use std::fmt;

/// What protocol a segment carries (the header's `kind`): what
/// [`OpenError::WrongKind`](crate::OpenError::WrongKind) names when a
/// segment is opened as the wrong one.
///
/// # Examples
/// ```
/// use shmbus::{Kind, OpenError, OpenOptions, Subscriber, stream::{self, Producer}};
/// # let name = format!("/dev/shm/shmbus-doc-kind-{}", std::process::id());
/// let producer = Producer::<[u8]>::create(&name, &stream::Options::new(4096))?;
/// // A stream opened as a bus:
/// match Subscriber::<u64>::open(&name, &OpenOptions::default()) {
///     Err(OpenError::WrongKind { found, expected }) => {
///         assert_eq!((found, expected), (Kind::Stream, Kind::Broadcast));
///         assert_eq!(found.to_string(), "stream");
///     }
///     Err(other) => panic!("unexpected error: {other}"),
///     Ok(_) => panic!("a stream is not a bus"),
/// }
/// # shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Stamped-slot broadcast (this crate's `bus`).
    Broadcast,
    /// Byte stream (this crate's `stream`).
    Stream,
    /// The latest value of each key (this crate's `blackboard`).
    Blackboard,
    /// Request-response (this crate's `reqrep`).
    Service,
    /// A number this build does not know.
    Unknown(u32),
}

impl Kind {
    /// The header's encoding.
    #[doc(hidden)]
    pub fn code(self) -> u32 {
        match self {
            Kind::Broadcast => 1,
            Kind::Stream => 2,
            Kind::Blackboard => 3,
            Kind::Service => 4,
            Kind::Unknown(n) => n,
        }
    }
    /// Decodes the header field.
    #[doc(hidden)]
    pub fn from_code(code: u32) -> Kind {
        match code {
            1 => Kind::Broadcast,
            2 => Kind::Stream,
            3 => Kind::Blackboard,
            4 => Kind::Service,
            n => Kind::Unknown(n),
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kind::Broadcast => f.write_str("broadcast"),
            Kind::Stream => f.write_str("stream"),
            Kind::Blackboard => f.write_str("blackboard"),
            Kind::Service => f.write_str("service"),
            Kind::Unknown(n) => write!(f, "unknown ({n})"),
        }
    }
}

/// How many publishers a bus is made for (header flag `MULTI_PUBLISHER`):
/// what [`AttachError::WrongMode`](crate::AttachError::WrongMode)
/// names when a publisher of the other mode tries to attach.
///
/// # Examples
/// ```
/// use shmbus::{AttachError, BusOptions, OpenOptions, Publisher, Publishers, bus::ManyPublisher};
/// # let name = format!("/dev/shm/shmbus-doc-publishers-{}", std::process::id());
/// let many = ManyPublisher::<u64>::create(&name, &BusOptions::new(64).many())?;
/// // A single-publisher handle on a many-publisher bus:
/// match Publisher::<u64>::attach(&name, &OpenOptions::default()) {
///     Err(AttachError::WrongMode { found, expected, .. }) => {
///         assert_eq!((found, expected), (Publishers::Many, Publishers::One));
///         assert_eq!(found.to_string(), "many-publisher");
///     }
///     Err(other) => panic!("unexpected error: {other}"),
///     Ok(_) => panic!("a many-publisher bus takes ManyPublishers only"),
/// }
/// # shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Publishers {
    /// One `Publisher` at a time.
    One,
    /// Any number of `ManyPublisher`s.
    Many,
}

impl std::fmt::Display for Publishers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Publishers::One => "single-publisher",
            Publishers::Many => "many-publisher",
        })
    }
}
