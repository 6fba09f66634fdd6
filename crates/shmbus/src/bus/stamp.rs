//! The stamp codec: what the first 8 bytes of a slot say about the sequence
//! in it. All arithmetic wraps mod 2^64 (invariants in the bus module).

/// The stamp of sequence `seq`, complete.
#[inline]
pub(crate) fn done(seq: u64) -> u64 {
    seq.wrapping_mul(2).wrapping_add(2)
}

/// The stamp of sequence `seq` while it is written (or claimed).
#[inline]
pub(crate) fn writing(seq: u64) -> u64 {
    seq.wrapping_mul(2).wrapping_add(1)
}

/// The top stamp bit: `done(s) ^ ABANDONED_BIT` says "sequence `s` was
/// claimed and never committed" (many-publisher buses, see `claim`).
const ABANDONED_BIT: u64 = 1 << 63;

#[inline]
pub(crate) fn abandoned(seq: u64) -> u64 {
    done(seq) ^ ABANDONED_BIT
}

/// `a - b` as a signed distance; sequences within 2^61 of each other (so
/// that a stamp's distance tells an abandoned one from the others).
#[inline]
pub(crate) fn ahead(a: u64, b: u64) -> i64 {
    a.wrapping_sub(b) as i64
}

/// A stamp read as the state of one sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stamp {
    /// `writing(t)`: claimed (multi) or being written (single).
    Writing(u64),
    /// `done(t)`: complete. A new bus's stamps read as `Done(first - 1)`.
    Done(u64),
    /// `abandoned(t)`: claimed, never committed, skipped by an unblocker.
    Abandoned(u64),
}

impl Stamp {
    pub(crate) fn seq(self) -> u64 {
        match self {
            Stamp::Writing(t) | Stamp::Done(t) | Stamp::Abandoned(t) => t,
        }
    }
}

/// Decodes `stamp` as the state of the sequence nearest `near` it can name.
/// Normal stamps of sequences within 2^61 of `near` lie within 2^62 of
/// `done(near)`; abandoned ones, with the top bit flipped, lie at least
/// 2^62 away, so the distance tells them apart.
#[inline]
pub(crate) fn decode(stamp: u64, near: u64) -> Stamp {
    let far = ahead(stamp, done(near)).unsigned_abs() >= 1 << 62;
    let st = if far { stamp ^ ABANDONED_BIT } else { stamp };
    let d = ahead(st, done(near));
    // writing(t) = done(near) + 2(t - near) - 1, done(t) = ... + 2(t - near).
    let t = near.wrapping_add(((d + 1) >> 1) as u64);
    if far {
        Stamp::Abandoned(t)
    } else if st & 1 == 1 {
        Stamp::Writing(t)
    } else {
        Stamp::Done(t)
    }
}
