//! What a bridge puts on Zenoh: one frame per put, a message of the
//! upstream bus, a run of consecutive messages, or a run of sequences it
//! lost.
//!
//! # Layout (little-endian; docs/BRIDGE-WIRE.md)
//! ```text
//! 0   u32  magic "SBZ2" (0x325a4253)
//! 4   u8   kind: 1 message, 2 gap, 3 batch, 4 end of a replay
//! 5   u8[3] zero
//! 8   u64  instance: which creation of the upstream bus (`Upstream`)
//! 16  u64  seq: the (first) message's sequence, a gap's first lost one,
//!          or the sequence after a replay's last
//! 24  u64  message, batch: the upstream bus's message size; gap: how many;
//!          end: zero
//! 32  u64  first: that creation's first sequence (its `first_seq`)
//! 40  ...  message: its bytes (at most the message size); gap, end:
//!          nothing; batch: count * message size bytes, message
//!          `first + i` at `40 + i * msg_size`, count = payload length /
//!          msg_size
//! ```
//!
//! "SBZ1" frames (version 1: 32 bytes, the upstream's epoch at 8, no
//! `first`) did not say which creation of the upstream bus they came
//! from, so a re-created upstream, whose sequences start again, was taken
//! for repeats. A reader of this version refuses them (another magic).
//!
//! Live puts carry messages, batches and gaps; a replay (the answer to a
//! journal query, `replay`) carries messages and gaps and ends with one
//! end frame.
//!
//! A batch is fixed-stride, not length-prefixed: a bus's slots are all
//! `msg_size` bytes and a raw subscriber reads them whole (the bus keeps
//! no shorter length), so a prefix would cost 4+ bytes a message and say
//! nothing. Its count is implied by its length, so it cannot disagree
//! with it, and a reader checks one division instead of walking prefixes.
//!
//! Frames come from the network: anything else is a typed [`FrameError`],
//! never a panic.

use std::fmt;

/// "SBZ2" as a little-endian u32.
///
/// # Examples
/// ```
/// use shmbus_zenoh::frame::{Frame, MAGIC};
/// let bytes = Frame::End { upstream: Default::default(), next: 5 }.encode();
/// assert_eq!(bytes[..4], MAGIC.to_le_bytes());
/// ```
pub const MAGIC: u32 = u32::from_le_bytes(*b"SBZ2");
/// Bytes before a message's payload.
///
/// # Examples
/// ```
/// use shmbus_zenoh::frame::{Frame, HEADER};
/// let bytes = Frame::Gap { upstream: Default::default(), first: 5, count: 2 }.encode();
/// assert_eq!(bytes.len(), HEADER); // a gap is a header alone
/// ```
pub const HEADER: usize = 40;
const KIND_MESSAGE: u8 = 1;
const KIND_GAP: u8 = 2;
const KIND_BATCH: u8 = 3;
const KIND_END: u8 = 4;
/// The largest message a bus carries (16 MiB), so the largest frame body.
const MAX_MSG: u64 = 16 << 20;

/// Which creation of the upstream bus a frame comes from. A bus removed
/// and created again (a reboot of its host) starts its sequences again:
/// its frames must not be taken for repeats of the last one's.
///
/// # Examples
/// ```
/// use shmbus_zenoh::frame::Upstream;
/// let a = Upstream::from_header(1_700_000_000_000_000_000, 4242, 0);
/// let b = Upstream::from_header(1_700_000_000_000_000_001, 4242, 0);
/// assert_ne!(a.instance, b.instance); // created a nanosecond apart
/// assert_eq!(a.first, 0);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Upstream {
    /// The creation's identity: FNV-1a 64 of the upstream bus's header
    /// fields `created_ns` (u64) then `creator_pid` (u32), little-endian,
    /// 12 bytes (docs/LAYOUT.md §4, docs/BRIDGE-WIRE.md). Written once by the bus's
    /// creator, so the same for every bridge-out of that creation.
    pub instance: u64,
    /// The creation's first sequence (its header's `first_seq`): where its
    /// stream begins.
    pub first: u64,
}

impl Upstream {
    /// The upstream of a bus whose header holds these fields.
    ///
    /// # Examples
    /// ```
    /// use shmbus_zenoh::frame::Upstream;
    /// let u = Upstream::from_header(5, 7, 100);
    /// let mut bytes = 5u64.to_le_bytes().to_vec();
    /// bytes.extend_from_slice(&7u32.to_le_bytes());
    /// assert_eq!(u, Upstream { instance: shmbus::wire::fnv1a(&bytes), first: 100 });
    /// ```
    pub fn from_header(created_ns: u64, creator_pid: u32, first_seq: u64) -> Upstream {
        let mut id = [0; 12];
        id[..8].copy_from_slice(&created_ns.to_le_bytes());
        id[8..].copy_from_slice(&creator_pid.to_le_bytes());
        Upstream {
            instance: shmbus::wire::fnv1a(&id),
            first: first_seq,
        }
    }
}

/// One frame, borrowed from the bytes it was read from.
///
/// # Examples
/// ```
/// use shmbus_zenoh::frame::Frame;
/// let put = Frame::Message { upstream: Default::default(), seq: 41, msg_size: 8, bytes: b"tick" }.encode();
/// match Frame::parse(&put)? {
///     Frame::Message { seq, bytes, .. } => assert_eq!((seq, bytes), (41, &b"tick"[..])),
///     other => panic!("not a message: {other}"),
/// }
/// # Ok::<(), shmbus_zenoh::frame::FrameError>(())
/// ```
#[derive(Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// Upstream sequence `seq`, from a bus of `msg_size`-byte messages.
    Message {
        /// The creation of the upstream bus it comes from.
        upstream: Upstream,
        /// Its sequence number upstream.
        seq: u64,
        /// The upstream bus's message size.
        msg_size: u64,
        /// The message (trailing zero padding may be cut).
        bytes: &'a [u8],
    },
    /// Upstream sequences `first ..` in order, `msg_size` bytes each.
    Batch {
        /// The creation of the upstream bus it comes from.
        upstream: Upstream,
        /// The first message's sequence upstream.
        first: u64,
        /// The upstream bus's message size: the stride.
        msg_size: u64,
        /// The messages back to back: a non-zero multiple of `msg_size`.
        bytes: &'a [u8],
    },
    /// Upstream sequences `first .. first + count` were lost before the
    /// bridge read them.
    Gap {
        /// The creation of the upstream bus it comes from.
        upstream: Upstream,
        /// The first lost sequence.
        first: u64,
        /// How many.
        count: u64,
    },
    /// The last frame of a replay: the journal held nothing more below
    /// `next` (the replay's end, or the journal's when it was read).
    End {
        /// The creation of the upstream bus it comes from.
        upstream: Upstream,
        /// The sequence after the replay's last.
        next: u64,
    },
}

/// Why bytes are not a frame.
///
/// # Examples
/// ```
/// use shmbus_zenoh::frame::{Frame, FrameError};
/// assert_eq!(Frame::parse(b"SBZ1"), Err(FrameError::Short { len: 4 }));
/// let mut bytes = Frame::End { upstream: Default::default(), next: 5 }.encode();
/// bytes[4] = 9;
/// assert_eq!(Frame::parse(&bytes), Err(FrameError::Kind { found: 9 }));
/// ```
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum FrameError {
    /// Shorter than the 40-byte header.
    #[error("frame of {len} bytes is shorter than its {HEADER}-byte header")]
    Short {
        /// Its length.
        len: usize,
    },
    /// Another magic: not a shmbus bridge's frame.
    #[error("frame magic {found:#010x}, expected {MAGIC:#010x} (\"SBZ2\")")]
    Magic {
        /// What it held.
        found: u32,
    },
    /// A kind other than message (1), gap (2), batch (3) or end (4).
    #[error("frame kind {found}, expected 1 (message), 2 (gap), 3 (batch) or 4 (end)")]
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
    /// A batch whose payload is not a whole, non-zero number of messages.
    #[error(
        "batch of {len} bytes from a bus of {msg_size}-byte messages: expected a non-zero multiple (each at most {MAX_MSG})"
    )]
    Batch {
        /// The payload's length.
        len: usize,
        /// The message size the frame claims.
        msg_size: u64,
    },
    /// A gap of no messages, or more than a bus can skip at once.
    #[error(
        "gap of {count} messages, expected 1 to {}",
        shmbus::bus::SkipError::MAX
    )]
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
    ///
    /// # Examples
    /// ```
    /// use shmbus_zenoh::frame::Frame;
    /// let gap = Frame::Gap { upstream: Default::default(), first: 10, count: 3 };
    /// assert_eq!(Frame::parse(&gap.encode()), Ok(gap));
    /// ```
    pub fn parse(b: &[u8]) -> Result<Frame<'_>, FrameError> {
        if b.len() < HEADER {
            return Err(FrameError::Short { len: b.len() });
        }
        let word = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or_default());
        let magic = u32::from_le_bytes(b[..4].try_into().unwrap_or_default());
        if magic != MAGIC {
            return Err(FrameError::Magic { found: magic });
        }
        let (seq, n) = (word(16), word(24));
        let upstream = Upstream {
            instance: word(8),
            first: word(32),
        };
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
                    upstream,
                    seq,
                    msg_size: n,
                    bytes,
                })
            }
            KIND_BATCH => {
                let bytes = &b[HEADER..];
                if n == 0 || n > MAX_MSG || bytes.is_empty() || bytes.len() as u64 % n != 0 {
                    return Err(FrameError::Batch {
                        len: bytes.len(),
                        msg_size: n,
                    });
                }
                Ok(Frame::Batch {
                    upstream,
                    first: seq,
                    msg_size: n,
                    bytes,
                })
            }
            KIND_GAP => {
                if n == 0 || n > shmbus::bus::SkipError::MAX || b.len() != HEADER {
                    return Err(FrameError::Gap { count: n });
                }
                Ok(Frame::Gap {
                    upstream,
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
                Ok(Frame::End {
                    upstream,
                    next: seq,
                })
            }
            found => Err(FrameError::Kind { found }),
        }
    }

    /// The frame's bytes.
    ///
    /// # Examples
    /// ```
    /// use shmbus_zenoh::frame::{Frame, HEADER};
    /// let bytes = Frame::Message { upstream: Default::default(), seq: 0, msg_size: 8, bytes: b"abc" }.encode();
    /// assert_eq!(bytes.len(), HEADER + 3);
    /// ```
    pub fn encode(&self) -> Vec<u8> {
        let (kind, upstream, seq, n, bytes) = match *self {
            Frame::Message {
                upstream,
                seq,
                msg_size,
                bytes,
            } => (KIND_MESSAGE, upstream, seq, msg_size, bytes),
            Frame::Batch {
                upstream,
                first,
                msg_size,
                bytes,
            } => (KIND_BATCH, upstream, first, msg_size, bytes),
            Frame::Gap {
                upstream,
                first,
                count,
            } => (KIND_GAP, upstream, first, count, &[][..]),
            Frame::End { upstream, next } => (KIND_END, upstream, next, 0, &[][..]),
        };
        let mut out = Vec::with_capacity(HEADER + bytes.len());
        header(&mut out, kind, upstream, seq, n);
        out.extend_from_slice(bytes);
        out
    }

    /// The messages a frame carries, in order, each as a message frame: a
    /// batch's one by one, a message itself, a gap or an end none.
    ///
    /// # Examples
    /// ```
    /// use shmbus_zenoh::frame::Frame;
    /// let batch = Frame::Batch { upstream: Default::default(), first: 7, msg_size: 2, bytes: b"aabbcc" };
    /// let seqs: Vec<u64> = batch
    ///     .messages()
    ///     .map(|m| match m { Frame::Message { seq, .. } => seq, _ => unreachable!() })
    ///     .collect();
    /// assert_eq!(seqs, [7, 8, 9]);
    /// ```
    pub fn messages(&self) -> Messages<'_> {
        let (upstream, next, msg_size, bytes) = match *self {
            Frame::Message {
                upstream,
                seq,
                msg_size,
                bytes,
            } => {
                return Messages {
                    upstream,
                    next: seq,
                    msg_size,
                    stride: bytes.len(),
                    left: 1,
                    rest: bytes,
                };
            }
            Frame::Batch {
                upstream,
                first,
                msg_size,
                bytes,
            } => (upstream, first, msg_size, bytes),
            Frame::Gap { upstream, .. } | Frame::End { upstream, .. } => (upstream, 0, 1, &[][..]),
        };
        // A parsed batch's msg_size is 1 to 16 MiB and divides its length.
        let stride = usize::try_from(msg_size).unwrap_or(usize::MAX).max(1);
        Messages {
            upstream,
            next,
            msg_size,
            stride,
            left: (bytes.len() / stride) as u64,
            rest: bytes,
        }
    }
}

fn header(out: &mut Vec<u8>, kind: u8, upstream: Upstream, seq: u64, n: u64) {
    out.extend_from_slice(&MAGIC.to_le_bytes());
    out.extend_from_slice(&[kind, 0, 0, 0]);
    for w in [upstream.instance, seq, n, upstream.first] {
        out.extend_from_slice(&w.to_le_bytes());
    }
}

/// The message frames in a frame ([`Frame::messages`]): at most one per
/// `msg_size` bytes of its payload (one for a lone message), so bounded
/// by what arrived.
///
/// # Examples
/// ```
/// use shmbus_zenoh::frame::Frame;
/// let gap = Frame::Gap { upstream: Default::default(), first: 3, count: 9 };
/// assert_eq!(gap.messages().count(), 0); // a gap carries none
/// ```
#[derive(Debug)]
pub struct Messages<'a> {
    upstream: Upstream,
    next: u64,
    msg_size: u64,
    stride: usize,
    left: u64,
    rest: &'a [u8],
}

impl<'a> Iterator for Messages<'a> {
    type Item = Frame<'a>;

    fn next(&mut self) -> Option<Frame<'a>> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let (bytes, rest) = self.rest.split_at(self.stride.min(self.rest.len()));
        self.rest = rest;
        let seq = self.next;
        self.next = seq.wrapping_add(1);
        Some(Frame::Message {
            upstream: self.upstream,
            seq,
            msg_size: self.msg_size,
            bytes,
        })
    }
}

/// The most message bytes one put carries: well under Zenoh's 65535-byte
/// transport batch (with its headers and the key), so a batch is never
/// fragmented. With 64-byte messages 32 KiB and 60 KiB measured alike
/// over a veth pair (4.1–6.0 M and 3.3–5.1 M msg/s, two rounds each: the
/// noise is larger than any difference; docs/bridge/batch-budget.txt).
///
/// # Examples
/// ```
/// // 512 messages of 64 bytes in one put.
/// assert_eq!(shmbus_zenoh::BATCH_BYTES / 64, 512);
/// ```
pub const BATCH_BYTES: usize = 32 << 10;

/// Builds one put's worth of consecutive messages: a message frame if it
/// ends with one, a batch frame if with more.
///
/// # Examples
/// ```
/// use shmbus_zenoh::frame::{BatchWriter, Frame};
/// // Upstream sequences 40, 41, 42 of a bus of 4-byte messages.
/// let mut w = BatchWriter::new(Default::default(), 40, 4, 1 << 15, b"aaaa");
/// for m in [b"bbbb", b"cccc"] {
///     assert!(w.has_room());
///     w.push(m);
/// }
/// assert_eq!(w.count(), 3);
/// let put = w.finish();
/// assert!(matches!(Frame::parse(&put), Ok(Frame::Batch { first: 40, .. })));
/// ```
#[derive(Debug)]
pub struct BatchWriter {
    out: Vec<u8>,
    msg_size: usize,
    limit: usize,
    count: u64,
}

impl BatchWriter {
    /// A frame of upstream sequences from `first`, starting with message
    /// `bytes`, from a bus of `msg_size`-byte messages: later pushes fit in
    /// `budget` bytes of messages (the first always goes).
    ///
    /// # Examples
    /// ```
    /// use shmbus_zenoh::frame::{BatchWriter, Frame};
    /// let lone = BatchWriter::new(Default::default(), 5, 8, 1 << 15, b"tick").finish();
    /// assert!(matches!(Frame::parse(&lone), Ok(Frame::Message { seq: 5, .. })));
    /// ```
    pub fn new(
        upstream: Upstream,
        first: u64,
        msg_size: usize,
        budget: usize,
        bytes: &[u8],
    ) -> BatchWriter {
        let limit = HEADER + budget.max(msg_size);
        let mut out = Vec::with_capacity(limit);
        header(&mut out, KIND_BATCH, upstream, first, msg_size as u64);
        let mut w = BatchWriter {
            out,
            msg_size,
            limit,
            count: 0,
        };
        w.push(bytes);
        w
    }

    /// Whether another message fits the budget.
    ///
    /// # Examples
    /// ```
    /// // A budget of two 4-byte messages: the first is in, one more fits.
    /// let mut w = shmbus_zenoh::frame::BatchWriter::new(Default::default(), 0, 4, 8, b"aaaa");
    /// assert!(w.has_room());
    /// w.push(b"bbbb");
    /// assert!(!w.has_room());
    /// ```
    pub fn has_room(&self) -> bool {
        self.out.len() + self.msg_size <= self.limit
    }

    /// Appends the next message: `bytes` is the whole slot (`msg_size`
    /// bytes; shorter is zero-padded, longer cut), so strides stay exact.
    ///
    /// # Examples
    /// ```
    /// use shmbus_zenoh::frame::{BatchWriter, Frame, HEADER};
    /// let mut w = BatchWriter::new(Default::default(), 0, 4, 64, b"aaaa");
    /// w.push(b"b"); // padded to the stride
    /// assert_eq!(w.finish().len(), HEADER + 8);
    /// ```
    pub fn push(&mut self, bytes: &[u8]) {
        let take = bytes.len().min(self.msg_size);
        self.out.extend_from_slice(&bytes[..take]);
        self.out.resize(self.out.len() + (self.msg_size - take), 0);
        self.count += 1;
    }

    /// Messages pushed so far (at least one).
    ///
    /// # Examples
    /// ```
    /// let w = shmbus_zenoh::frame::BatchWriter::new(Default::default(), 0, 4, 64, b"aaaa");
    /// assert_eq!(w.count(), 1);
    /// ```
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The frame's bytes: kind 1 for a lone message (so a single message
    /// costs what it did before batching), kind 3 for more.
    ///
    /// # Examples
    /// ```
    /// use shmbus_zenoh::frame::{BatchWriter, Frame};
    /// let mut w = BatchWriter::new(Default::default(), 9, 4, 64, b"aaaa");
    /// w.push(b"bbbb");
    /// let put = w.finish();
    /// assert_eq!(Frame::parse(&put)?.messages().count(), 2);
    /// # Ok::<(), shmbus_zenoh::frame::FrameError>(())
    /// ```
    pub fn finish(mut self) -> Vec<u8> {
        if self.count == 1 {
            self.out[4] = KIND_MESSAGE;
        }
        self.out
    }
}

impl fmt::Display for Frame<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Frame::Message { seq, bytes, .. } => write!(f, "message {seq} ({} bytes)", bytes.len()),
            Frame::Batch {
                first,
                msg_size,
                bytes,
                ..
            } => {
                let count = bytes.len() as u64 / (*msg_size).max(1);
                write!(f, "batch of {count} from {first}")
            }
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
        let upstream = Upstream {
            instance: 0x0123_4567_89ab_cdef,
            first: 40,
        };
        let m = Frame::Message {
            upstream,
            seq: 41,
            msg_size: 16,
            bytes: b"hello",
        };
        let bytes = m.encode();
        assert_eq!(Frame::parse(&bytes), Ok(m));
        let g = Frame::Gap {
            upstream: Default::default(),
            first: 42,
            count: 7,
        };
        assert_eq!(Frame::parse(&g.encode()), Ok(g));
        let e = Frame::End {
            upstream: Default::default(),
            next: 49,
        };
        assert_eq!(Frame::parse(&e.encode()), Ok(e));
        // The upstream's identity and first sequence at 8 and 32.
        assert_eq!(bytes[8..16], upstream.instance.to_le_bytes());
        assert_eq!(bytes[32..40], upstream.first.to_le_bytes());
        assert_eq!(bytes.len(), HEADER + 5);
        // A version-1 frame (no upstream identity) is refused.
        let mut v1 = bytes;
        v1[..4].copy_from_slice(b"SBZ1");
        assert_eq!(
            Frame::parse(&v1),
            Err(FrameError::Magic {
                found: u32::from_le_bytes(*b"SBZ1")
            })
        );
    }

    #[test]
    fn a_batch_carries_consecutive_sequences_and_a_lone_message_goes_as_kind_1() {
        let mut w = BatchWriter::new(Default::default(), 10, 4, 12, b"ab");
        assert!(w.has_room());
        w.push(b"cdef");
        w.push(b"ghijk"); // longer than a slot: cut to its stride
        assert!(!w.has_room(), "12 bytes of 4-byte messages: 3");
        assert_eq!(w.count(), 3);
        let bytes = w.finish();
        let frame = Frame::parse(&bytes).expect("a batch");
        assert_eq!(
            frame,
            Frame::Batch {
                upstream: Default::default(),
                first: 10,
                msg_size: 4,
                bytes: b"ab\0\0cdefghij",
            }
        );
        assert_eq!(frame.to_string(), "batch of 3 from 10");
        let got: Vec<(u64, Vec<u8>)> = frame
            .messages()
            .map(|m| match m {
                Frame::Message { seq, bytes, .. } => (seq, bytes.to_vec()),
                other => panic!("{other}"),
            })
            .collect();
        assert_eq!(
            got,
            [
                (10, b"ab\0\0".to_vec()),
                (11, b"cdef".to_vec()),
                (12, b"ghij".to_vec())
            ]
        );
        let lone = BatchWriter::new(Default::default(), 7, 4, 1 << 15, b"xy").finish();
        let lone = Frame::parse(&lone).expect("a message");
        assert_eq!(
            lone,
            Frame::Message {
                upstream: Default::default(),
                seq: 7,
                msg_size: 4,
                bytes: b"xy\0\0",
            }
        );
        assert_eq!(lone.messages().count(), 1);
        let empty = Frame::Message {
            upstream: Default::default(),
            seq: 7,
            msg_size: 4,
            bytes: b"",
        };
        assert_eq!(empty.messages().count(), 1, "an empty message is one");
        let gap = Frame::Gap {
            upstream: Default::default(),
            first: 2,
            count: 3,
        };
        assert_eq!(gap.messages().count(), 0);
    }

    #[test]
    fn any_bytes_are_a_frame_or_a_typed_error_never_a_panic() {
        let good = Frame::Message {
            upstream: Default::default(),
            seq: 2,
            msg_size: 8,
            bytes: b"12345678",
        }
        .encode();
        let mut w = BatchWriter::new(Default::default(), u64::MAX - 1, 3, 64, b"abc");
        for m in [b"def", b"ghi", b"jkl"] {
            w.push(m);
        }
        let batch = w.finish();
        for good in [good.clone(), batch.clone()] {
            let mut inputs = Vec::new();
            for len in 0..good.len() {
                inputs.push(good[..len].to_vec());
            }
            for i in 0..good.len() {
                for bit in 0..8 {
                    let mut b = good.clone();
                    b[i] ^= 1 << bit;
                    inputs.push(b);
                }
            }
            for b in &inputs {
                // Every frame read yields at most one message per payload
                // byte (or one), each within the payload.
                if let Ok(frame) = Frame::parse(b) {
                    let n = frame.messages().count();
                    assert!(n <= (b.len() - HEADER).max(1), "{frame}: {n} messages");
                    let total: usize = frame
                        .messages()
                        .map(|m| match m {
                            Frame::Message { bytes, .. } => bytes.len(),
                            _ => 0,
                        })
                        .sum();
                    assert!(total <= b.len() - HEADER);
                }
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
        // A batch that is not a whole number of messages, or none, or of
        // messages no bus has.
        let mut ragged = batch.clone();
        ragged.pop();
        assert_eq!(
            Frame::parse(&ragged),
            Err(FrameError::Batch {
                len: 11,
                msg_size: 3
            })
        );
        assert_eq!(
            Frame::parse(&batch[..HEADER]),
            Err(FrameError::Batch {
                len: 0,
                msg_size: 3
            })
        );
        for n in [0, MAX_MSG + 1, u64::MAX] {
            let mut b = batch.clone();
            b[24..32].copy_from_slice(&n.to_le_bytes());
            assert_eq!(
                Frame::parse(&b),
                Err(FrameError::Batch {
                    len: 12,
                    msg_size: n
                })
            );
        }
        // Sequences wrap like the bus's.
        let seqs: Vec<u64> = Frame::parse(&batch)
            .expect("a batch")
            .messages()
            .map(|m| match m {
                Frame::Message { seq, .. } => seq,
                _ => 0,
            })
            .collect();
        assert_eq!(seqs, [u64::MAX - 1, u64::MAX, 0, 1]);
    }
}
