//! What a bridge puts on Zenoh: one frame per put, a message of the
//! upstream bus or a run of sequences it lost.
//!
//! # Layout (little-endian; docs/LAYOUT.md §24)
//! ```text
//! 0   u32  magic "SBZ1" (0x315a4253)
//! 4   u8   kind: 1 message, 2 gap, 4 end of a replay
//! 5   u8[3] zero
//! 8   u64  epoch of the upstream bus when the bridge read it
//! 16  u64  seq: the message's sequence, a gap's first lost sequence, or
//!          the sequence after a replay's last
//! 24  u64  message: the upstream bus's message size; gap: how many lost;
//!          end: zero
//! 32  ...  message: its bytes (at most the message size); else nothing
//! ```
//!
//! Live puts carry messages and gaps; a replay (the answer to a journal
//! query, `replay`) carries messages and gaps and ends with one end frame.
//!
//! Frames come from the network: anything else is a typed [`FrameError`],
//! never a panic.

use std::fmt;

/// "SBZ1" as a little-endian u32.
pub const MAGIC: u32 = u32::from_le_bytes(*b"SBZ1");
/// Bytes before a message's payload.
pub const HEADER: usize = 32;
const KIND_MESSAGE: u8 = 1;
const KIND_GAP: u8 = 2;
const KIND_END: u8 = 4;
/// The largest message a bus carries (16 MiB), so the largest frame body.
const MAX_MSG: u64 = 16 << 20;

/// One frame, borrowed from the bytes it was read from.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// Upstream sequence `seq`, from a bus of `msg_size`-byte messages.
    Message {
        /// The upstream bus's epoch.
        epoch: u64,
        /// Its sequence number upstream.
        seq: u64,
        /// The upstream bus's message size.
        msg_size: u64,
        /// The message (trailing zero padding may be cut).
        bytes: &'a [u8],
    },
    /// Upstream sequences `first .. first + count` were lost before the
    /// bridge read them.
    Gap {
        /// The upstream bus's epoch.
        epoch: u64,
        /// The first lost sequence.
        first: u64,
        /// How many.
        count: u64,
    },
    /// The last frame of a replay: the journal held nothing more below
    /// `next` (the replay's end, or the journal's when it was read).
    End {
        /// The upstream bus's epoch.
        epoch: u64,
        /// The sequence after the replay's last.
        next: u64,
    },
}

/// Why bytes are not a frame.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FrameError {
    /// Shorter than the 32-byte header.
    #[error("frame of {len} bytes is shorter than its {HEADER}-byte header")]
    Short {
        /// Its length.
        len: usize,
    },
    /// Another magic: not a shmbus bridge's frame.
    #[error("frame magic {found:#010x}, expected {MAGIC:#010x} (\"SBZ1\")")]
    Magic {
        /// What it held.
        found: u32,
    },
    /// A kind other than message (1), gap (2) or end (4).
    #[error("frame kind {found}, expected 1 (message), 2 (gap) or 4 (end)")]
    Kind {
        /// What it held.
        found: u8,
    },
    /// A message longer than its bus's message size, or a size no bus has.
    #[error("message of {len} bytes from a bus of {msg_size}-byte messages (at most {MAX_MSG})")]
    Length {
        /// The payload's length.
        len: usize,
        /// The message size the frame claims.
        msg_size: u64,
    },
    /// An end frame with a count or a body.
    #[error("end frame of {len} bytes with count {count}, expected {HEADER} bytes and 0")]
    End {
        /// The count it held.
        count: u64,
        /// Its length.
        len: usize,
    },
    /// A gap of no messages, or more than a bus can skip at once.
    #[error("gap of {count} messages, expected 1 to {}", shmbus::SkipError::MAX)]
    Gap {
        /// The count it held.
        count: u64,
    },
}

impl Frame<'_> {
    /// Reads a frame.
    ///
    /// # Errors
    /// A [`FrameError`] naming what is wrong.
    pub fn parse(b: &[u8]) -> Result<Frame<'_>, FrameError> {
        if b.len() < HEADER {
            return Err(FrameError::Short { len: b.len() });
        }
        let word = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or_default());
        let magic = u32::from_le_bytes(b[..4].try_into().unwrap_or_default());
        if magic != MAGIC {
            return Err(FrameError::Magic { found: magic });
        }
        let (epoch, seq, n) = (word(8), word(16), word(24));
        match b[4] {
            KIND_MESSAGE => {
                let bytes = &b[HEADER..];
                if n == 0 || n > MAX_MSG || bytes.len() as u64 > n {
                    return Err(FrameError::Length {
                        len: bytes.len(),
                        msg_size: n,
                    });
                }
                Ok(Frame::Message {
                    epoch,
                    seq,
                    msg_size: n,
                    bytes,
                })
            }
            KIND_GAP => {
                if n == 0 || n > shmbus::SkipError::MAX || b.len() != HEADER {
                    return Err(FrameError::Gap { count: n });
                }
                Ok(Frame::Gap {
                    epoch,
                    first: seq,
                    count: n,
                })
            }
            KIND_END => {
                if n != 0 || b.len() != HEADER {
                    return Err(FrameError::End {
                        count: n,
                        len: b.len(),
                    });
                }
                Ok(Frame::End { epoch, next: seq })
            }
            found => Err(FrameError::Kind { found }),
        }
    }

    /// The frame's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let (kind, epoch, seq, n, bytes) = match *self {
            Frame::Message {
                epoch,
                seq,
                msg_size,
                bytes,
            } => (KIND_MESSAGE, epoch, seq, msg_size, bytes),
            Frame::Gap {
                epoch,
                first,
                count,
            } => (KIND_GAP, epoch, first, count, &[][..]),
            Frame::End { epoch, next } => (KIND_END, epoch, next, 0, &[][..]),
        };
        let mut out = Vec::with_capacity(HEADER + bytes.len());
        out.extend_from_slice(&MAGIC.to_le_bytes());
        out.extend_from_slice(&[kind, 0, 0, 0]);
        for w in [epoch, seq, n] {
            out.extend_from_slice(&w.to_le_bytes());
        }
        out.extend_from_slice(bytes);
        out
    }
}

impl fmt::Display for Frame<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Frame::Message { seq, bytes, .. } => write!(f, "message {seq} ({} bytes)", bytes.len()),
            Frame::Gap { first, count, .. } => write!(f, "gap of {count} from {first}"),
            Frame::End { next, .. } => write!(f, "end of replay before {next}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_reads_back_as_it_was_written() {
        let m = Frame::Message {
            epoch: 3,
            seq: 41,
            msg_size: 16,
            bytes: b"hello",
        };
        assert_eq!(Frame::parse(&m.encode()), Ok(m));
        let g = Frame::Gap {
            epoch: 3,
            first: 42,
            count: 7,
        };
        assert_eq!(Frame::parse(&g.encode()), Ok(g));
        let e = Frame::End { epoch: 3, next: 49 };
        assert_eq!(Frame::parse(&e.encode()), Ok(e));
    }

    #[test]
    fn any_bytes_are_a_frame_or_a_typed_error_never_a_panic() {
        let good = Frame::Message {
            epoch: 1,
            seq: 2,
            msg_size: 8,
            bytes: b"12345678",
        }
        .encode();
        for len in 0..good.len() {
            let _ = Frame::parse(&good[..len]);
        }
        for i in 0..good.len() {
            for bit in 0..8 {
                let mut b = good.clone();
                b[i] ^= 1 << bit;
                let _ = Frame::parse(&b);
            }
        }
        assert_eq!(Frame::parse(&[0; 3]), Err(FrameError::Short { len: 3 }));
        let mut long = good.clone();
        long.push(0);
        assert!(matches!(
            Frame::parse(&long),
            Err(FrameError::Length { .. })
        ));
        let mut kind = good;
        kind[4] = 9;
        assert_eq!(Frame::parse(&kind), Err(FrameError::Kind { found: 9 }));
    }
}
