//! One entry's seqlock: the writer's two stamp stores around its stores,
//! and a reader's attempt to copy the entry whole. The stamp sits in the
//! entry (stamp-in-slot, as the bus's slots), and every byte a reader may
//! copy while the writer stores it is an atomic word, copied with the
//! bus's racing copy (`bus::copy`), never a plain `memcpy`.
//!
//! Stamps: 0 for an entry never written; `2v - 1` while version `v` is
//! written; `2v` once it is. Versions come from the table's one counter,
//! so an entry's version says when, among all the table's writes, it was
//! last written.

use crate::bus::copy;
use crate::sync::{AtomicU64, Ordering, fence};
use crate::wire::blackboard::tag;

/// What one attempt to copy an entry found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Attempt {
    /// The copy is whole: version `v` of the entry (0: never written).
    Stable(u64),
    /// The stamp was odd: a write was under way (or its writer died in
    /// it); the stamp is given, to tell a stuck write from a busy one.
    Writing(u64),
    /// A write began or ended during the copy: throw it away.
    Torn,
}

/// Copies `words` (the entry's words after its stamp) into `dst` if the
/// stamp says no write is under way, and says whether the copy is whole.
/// Wait-free: one attempt, the caller retries (a bounded number of times).
/// Always inlined: the read's fast path is this and the caller's checks.
#[inline(always)]
pub(crate) fn try_read(stamp: &AtomicU64, words: &[AtomicU64], dst: &mut [u8]) -> Attempt {
    // Acquire, paired with the writer's Release store of `2v` in `commit`:
    // a reader that sees `2v` sees every word of version `v`.
    let before = stamp.load(Ordering::Acquire);
    if before & 1 == 1 {
        return Attempt::Writing(before);
    }
    copy::load(words, dst);
    // Acquire fence, paired with the writer's Release fence in `begin`: if
    // any word copied above came from a later write, the re-load below
    // sees that write's odd stamp (or a later one) and the copy is thrown
    // away.
    fence(Ordering::Acquire);
    if stamp.load(Ordering::Relaxed) == before {
        Attempt::Stable(before / 2)
    } else {
        Attempt::Torn
    }
}

/// What one look at an entry for a key found, once its copy was whole
/// (the stamp the same even value before and after).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Holds {
    /// The key, live: its value was copied.
    Key,
    /// Never written since the table was made: the key's probe ends.
    Empty,
    /// Another key, or a removed entry: the probe goes on.
    Other,
    /// A tag no writer stores (a corrupt file).
    BadTag(u64),
}

/// One attempt to read `words` (an entry's words after its stamp) as the
/// holder of `key`: the tag and the key compared in place, and only if
/// they are the key's, the value's words (from word `value_word` on) into
/// `value` (a whole number of words). The same seqlock as [`try_read`]:
/// every load between the Acquire stamp load and the Acquire fence is an
/// atomic one, and nothing is trusted unless the stamp re-loads the same
/// even value. The read path of `Reader::get`, which copies neither the
/// key nor the tag out, nor the value twice. Always inlined: with a typed
/// key and value the sizes are constants here.
#[inline(always)]
pub(crate) fn try_read_key(
    stamp: &AtomicU64,
    words: &[AtomicU64],
    key: &[u8],
    value_word: usize,
    value: &mut [u8],
) -> (Attempt, Holds) {
    try_read_key_with(stamp, words, key, value_word, |src| {
        copy::load_exact(src, value);
    })
}

/// Words of the largest value [`try_read_words`] loads.
pub(crate) const SMALL_WORDS: usize = 8;

/// [`try_read_key`] for a typed value of `n` words (at most
/// [`SMALL_WORDS`]), loaded into an array the compiler keeps in registers:
/// the version and the words if the entry holds `key` live and the copy
/// is whole, `None` for any other outcome (the caller's full path sorts
/// those out). Why not a buffer: a value stored into memory by the copy
/// and read out again by the compiler at other widths and offsets (into
/// the `Result` a get returns) stalls each load that spans two stores,
/// as store-to-load forwarding fails; that was most of a 64-byte get.
#[inline(always)]
pub(crate) fn try_read_words(
    stamp: &AtomicU64,
    words: &[AtomicU64],
    key: &[u8],
    value_word: usize,
    n: usize,
) -> Option<(u64, [u64; SMALL_WORDS])> {
    let mut got = [0u64; SMALL_WORDS];
    let load = |src: &[AtomicU64]| {
        for (o, w) in got[..n].iter_mut().zip(&src[..n]) {
            *o = w.load(Ordering::Relaxed);
        }
    };
    match try_read_key_with(stamp, words, key, value_word, load) {
        (Attempt::Stable(version), Holds::Key) => Some((version, got)),
        _ => None,
    }
}

/// The first `n` words of `buf` (a value a look-up copied), as
/// [`try_read_words`] gives them.
#[inline(always)]
pub(crate) fn words_of(buf: &[u8], n: usize) -> [u64; SMALL_WORDS] {
    let mut words = [0u64; SMALL_WORDS];
    for (w, b) in words[..n].iter_mut().zip(buf.chunks_exact(8)) {
        *w = u64::from_ne_bytes(b.try_into().expect("8 bytes"));
    }
    words
}

/// [`try_read_key`] with the value's words (from `value_word` on) handed
/// to `copy`, which only loads them, atomically.
#[inline(always)]
fn try_read_key_with(
    stamp: &AtomicU64,
    words: &[AtomicU64],
    key: &[u8],
    value_word: usize,
    copy: impl FnOnce(&[AtomicU64]),
) -> (Attempt, Holds) {
    // Acquire, paired with the writer's Release store of `2v` in `commit`.
    let before = stamp.load(Ordering::Acquire);
    if before & 1 == 1 {
        return (Attempt::Writing(before), Holds::Other);
    }
    let t = words[0].load(Ordering::Relaxed);
    let holds = match t {
        tag::LIVE if same_key(&words[1..value_word], key) => {
            copy(&words[value_word..]);
            Holds::Key
        }
        tag::LIVE | tag::REMOVED => Holds::Other,
        tag::EMPTY => Holds::Empty,
        t => Holds::BadTag(t),
    };
    // Acquire fence, paired with the writer's Release fence in `begin`, as
    // in `try_read`: a load above that saw a later write's store makes the
    // re-load below see that write's odd stamp, or a later one.
    fence(Ordering::Acquire);
    if stamp.load(Ordering::Relaxed) == before {
        (Attempt::Stable(before / 2), holds)
    } else {
        (Attempt::Torn, holds)
    }
}

/// Whether `words` hold `key` as `bus::copy::store` wrote it (native byte
/// order, the last word zero-padded), compared a word at a time in place
/// with relaxed loads: the writer's probe, and a reader's inside its
/// seqlock (which throws the answer away unless the stamp held still).
#[inline]
pub(crate) fn same_key(words: &[AtomicU64], key: &[u8]) -> bool {
    let mut chunks = key.chunks_exact(8);
    for (w, c) in words.iter().zip(&mut chunks) {
        if w.load(Ordering::Relaxed) != u64::from_ne_bytes(c.try_into().expect("8 bytes")) {
            return false;
        }
    }
    let rest = chunks.remainder();
    if rest.is_empty() {
        return true;
    }
    let Some(last) = words.get(key.len() / 8) else {
        return false;
    };
    last.load(Ordering::Relaxed).to_ne_bytes()[..rest.len()] == *rest
}

/// Whether an entry seen mid-write (its stamp odd) may hold `key`, from
/// its tag and key words in `words` (an entry's words after its stamp),
/// loaded as they are (Relaxed, each word whole, no stamp re-load): not
/// if its tag is still empty (no write was ever committed there) or its
/// key words are not `key`'s. A probe goes on past an entry that may not:
/// the module docs of `blackboard` (Invariants) prove that sound.
#[inline]
pub(crate) fn may_hold(words: &[AtomicU64], key: &[u8]) -> bool {
    words[0].load(Ordering::Relaxed) != tag::EMPTY && same_key(&words[1..], key)
}

/// The writer's first step of version `v` (at least 1): the odd stamp,
/// then a Release fence, before any of its stores to the entry's words.
#[inline]
pub(crate) fn begin(stamp: &AtomicU64, v: u64) {
    stamp.store(v.wrapping_mul(2).wrapping_sub(1), Ordering::Relaxed);
    // Release fence, paired with the reader's Acquire fence in `try_read`:
    // a reader whose copy saw any store made after this fence re-loads at
    // least this odd stamp, and drops the copy.
    fence(Ordering::Release);
}

/// The writer's last step of version `v`: the even stamp, Release, paired
/// with the reader's Acquire first load in `try_read`.
#[inline]
pub(crate) fn commit(stamp: &AtomicU64, v: u64) {
    stamp.store(v.wrapping_mul(2), Ordering::Release);
}

/// Whether a stamp says a write is under way (or was, when its writer
/// died).
#[inline]
pub(crate) fn is_writing(stamp: u64) -> bool {
    stamp & 1 == 1
}

/// The version a stamp names: the one written, or the one being written.
#[inline]
pub(crate) fn version_of(stamp: u64) -> u64 {
    stamp.div_ceil(2)
}
