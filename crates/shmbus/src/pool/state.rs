//! The block state codec: what a block's state word says (docs/LAYOUT.md
//! §19). Sequences are kept to their low 62 bits; the ring keeps live
//! sequences within 2^61 of each other, so that loses nothing.

/// A block nobody uses: no descriptor names it, no loan, no hold. Zero, so
/// a new file's pool is all free.
pub(crate) const FREE: u64 = 0;

/// Loaned to the publisher process `pid`, which writes it.
#[inline]
pub(crate) fn loaned(pid: u32) -> u64 {
    (u64::from(pid) << 2) | 1
}

/// Holds the message of sequence `seq`, whose descriptor names it.
#[inline]
pub(crate) fn published(seq: u64) -> u64 {
    (seq << 2) | 2
}

/// A state word read as what it says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum State {
    Free,
    Loaned(u32),
    /// The low 62 bits of the sequence, shifted left by 2 (the word less
    /// its tag): compare with [`published`], or measure with [`age`].
    Published,
    /// No encoding: a hostile or broken writer.
    Corrupt,
}

#[inline]
pub(crate) fn decode(word: u64) -> State {
    match word & 3 {
        0 if word == FREE => State::Free,
        1 if word >> 2 <= u64::from(u32::MAX) => State::Loaned((word >> 2) as u32),
        2 => State::Published,
        _ => State::Corrupt,
    }
}

/// How many sequences before `head` the published `word` lies, mod 2^62:
/// 0 for the sequence `head` itself (a single publisher stores its block's
/// state before the cursor), more than the capacity once the ring has
/// overwritten its descriptor, and near 2^62 for a sequence at or past the
/// cursor a publisher loaded (another publisher may have claimed and
/// published it since: see [`overwritten`]).
#[inline]
pub(crate) fn age(word: u64, head: u64) -> u64 {
    ((head << 2).wrapping_sub(word & !3)) >> 2
}

/// Whether the descriptor of the published `word` has left a ring of
/// `capacity` slots whose cursor is `head`: its sequence is more than
/// `capacity` behind. A sequence at or past `head` (age near 2^62) is not:
/// on a many-publisher bus another publisher may have claimed and
/// published it after this reader loaded `head`. So a corrupt word naming
/// a far sequence keeps its block out of the pool: a hostile writer can
/// exhaust the pool (a typed error), never give one block two writers.
#[inline]
pub(crate) fn overwritten(word: u64, head: u64, capacity: u64) -> bool {
    let a = age(word, head);
    a > capacity && a < 1 << 61
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_state_decodes_to_itself() {
        assert_eq!(decode(FREE), State::Free);
        assert_eq!(decode(loaned(4242)), State::Loaned(4242));
        assert_eq!(decode(loaned(u32::MAX)), State::Loaned(u32::MAX));
        assert_eq!(decode(published(0)), State::Published);
        assert_eq!(decode(published(u64::MAX)), State::Published);
        assert_eq!(decode(3), State::Corrupt);
        assert_eq!(decode(4), State::Corrupt);
        assert_eq!(decode((1 << 40) | 1), State::Corrupt);
    }

    #[test]
    fn age_counts_back_from_the_head_across_the_wrap() {
        assert_eq!(age(published(10), 10), 0);
        assert_eq!(age(published(10), 15), 5);
        assert_eq!(age(published(u64::MAX), 3), 4);
        // Ahead of the head: close to 2^62, so "overwritten" by any capacity.
        assert_eq!(age(published(16), 15), (1 << 62) - 1);
    }

    #[test]
    fn a_sequence_past_the_head_is_not_overwritten() {
        assert!(overwritten(published(3), 12, 8));
        assert!(!overwritten(published(4), 12, 8));
        assert!(
            !overwritten(published(13), 12, 8),
            "claimed after head was read"
        );
    }
}
