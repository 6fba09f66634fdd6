//! What a segment is: its kind (header `kind`) and, for a bus, how many
//! publishers it is made for (header flag `MULTI_PUBLISHER`).

use std::fmt;

/// What protocol a segment carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Stamped-slot broadcast (this crate's `bus`).
    Broadcast,
    /// Byte stream (this crate's `stream`).
    Stream,
    /// A number this build does not know.
    Unknown(u32),
}

impl Kind {
    /// The header's encoding.
    pub fn code(self) -> u32 {
        match self {
            Kind::Broadcast => 1,
            Kind::Stream => 2,
            Kind::Unknown(n) => n,
        }
    }
    /// Decodes the header field.
    pub fn from_code(code: u32) -> Kind {
        match code {
            1 => Kind::Broadcast,
            2 => Kind::Stream,
            n => Kind::Unknown(n),
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kind::Broadcast => f.write_str("broadcast"),
            Kind::Stream => f.write_str("stream"),
            Kind::Unknown(n) => write!(f, "unknown ({n})"),
        }
    }
}

/// How many publishers a bus is made for (header flag `MULTI_PUBLISHER`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Publishers {
    /// One `Publisher` at a time.
    One,
    /// Any number of `MpPublisher`s.
    Many,
}

impl std::fmt::Display for Publishers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Publishers::One => "single-publisher",
            Publishers::Many => "multi-publisher",
        })
    }
}
