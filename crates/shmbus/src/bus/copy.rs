//! The seqlock's racing copy: a message into a slot's payload words
//! ([`store`]) and out of them ([`load`]) while the other side may be
//! accessing the same words. The stamps around it (`ring.rs`) decide
//! whether a copy is kept; this file only has to make the copy itself
//! defined behaviour, and fast.
//!
//! # Two implementations
//! - **Portable** (Miri, loom, every target but x86_64): one Relaxed
//!   `AtomicU64` load or store per 8 bytes. Defined behaviour in the Rust
//!   model by construction, and what Miri and loom check. It cannot be
//!   vectorised: the compiler may not merge atomics.
//! - **x86_64**: the multiple-of-16 bulk of a message moves in an `asm!`
//!   block of SSE2 `movdqu` loads and stores (64 bytes per turn, then 16),
//!   the rest (under 16 bytes, and the zero padding's last word) through
//!   the portable words. An `asm!` block is opaque to the compiler, so it
//!   cannot be turned into a plain (racy, undefined) `memcpy`; what it does
//!   to the slot is what the hardware does: every byte is read, or
//!   written, whole by one access, i.e. the effect of a sequence of Relaxed
//!   per-byte atomic accesses. That is the reading of an atomic memcpy in
//!   RFC 3301, which the `atomic-memcpy` crate also implements. Bytes are
//!   enough: a copy that raced a writer is torn at any granularity anyway,
//!   and the stamp re-load throws it away. (Relaxed per-byte accesses
//!   racing the 8-byte atomic accesses of the tails are mixed-size, which
//!   the C++ model the Rust one follows does not describe; the hardware
//!   does, and the seqlock never keeps such a copy.) Stamps are never
//!   touched here: they stay Rust atomics.
//!
//! Ordering does not change. Neither `asm!` block is `nomem` or
//! `readonly`, so the compiler treats each as reading and writing any
//! memory, and moves no memory access or fence across it: the writer's
//! `writing` stamp and Release fence stay before its stores, its Release
//! `done` store after; the reader's Acquire stamp load before its loads,
//! its Acquire fence and stamp re-load after. On the hardware these are
//! plain (temporal) `movdqu` accesses, which x86's TSO keeps in program
//! order with the stamps' `mov`s (stores after stores, loads after
//! loads), which is all that the Release and Acquire fences ask of Relaxed
//! accesses there. No non-temporal stores: they are weakly ordered (they
//! would need an `sfence` before `done`) and they evict the line the
//! reader on the other core is about to read.
//!
//! # Cost
//! The portable loop is one load or store, a bounds check and a loop step
//! per 8 bytes on each side, never vectorised; the `asm!` turn moves 64
//! bytes. Under 64 bytes the portable words are used: there an `asm!`
//! block costs more instructions than it saves. `rep movsb` was the other
//! candidate: as short, but tens of cycles of start-up per call on each
//! side. AVX would halve the turns again but needs runtime feature
//! detection; at these sizes memory traffic, not the instruction count,
//! is the bound. Measured (callgrind): docs/GUIDE.md, Performance.

use crate::sync::{AtomicU64, Ordering};

/// The bytes of a `len`-byte message the x86_64 path copies in `asm!`: its
/// multiple-of-16 bulk, from 64 bytes up; shorter messages stay on the
/// portable words, which cost fewer instructions there (module docs).
#[cfg(all(target_arch = "x86_64", not(miri), not(loom)))]
#[inline]
fn bulk(len: usize) -> usize {
    if len >= 64 { len & !15 } else { 0 }
}

/// From how many words of zero padding the x86_64 path zeroes in `asm!`
/// (a short raw message in a large slot).
#[cfg(all(target_arch = "x86_64", not(miri), not(loom)))]
const PAD_MIN_WORDS: usize = 8;

/// Copies `dst.len()` bytes out of `words` (racing the writer: the caller
/// checks the stamp after).
///
/// # Panics
/// If `dst` is longer than `words`.
#[inline(always)]
pub(crate) fn load(words: &[AtomicU64], dst: &mut [u8]) {
    #[cfg(all(target_arch = "x86_64", not(miri), not(loom)))]
    {
        let bulk = bulk(dst.len());
        if bulk == 0 {
            return portable::load(words, dst);
        }
        assert!(dst.len() <= words.len() * 8, "shmbus: payload overrun");
        {
            // SAFETY: `bulk <= dst.len() <= 8 * words.len()`, so both
            // ranges are in bounds, and they cannot overlap (`dst` is an
            // exclusive borrow). The slot bytes are `AtomicU64`s, whose
            // memory may be accessed through a pointer from a shared
            // reference; racing stores to them are atomic (Rust atomics or
            // `x86::copy16`'s stores), and this read is per-byte atomic
            // (module docs), so no non-atomic race.
            unsafe { x86::copy16(words.as_ptr().cast(), dst.as_mut_ptr(), bulk / 16) };
        }
        portable::load(&words[bulk / 8..], &mut dst[bulk..]);
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri), not(loom))))]
    portable::load(words, dst);
}

/// Copies `src` into `words`, padded with zeros to the end of `words`.
/// Called by the publisher that moved the slot's stamp to `writing`; on a
/// many-publisher bus a stalled one may still be in here after an
/// unblocker took the slot from it (see the `SAFETY` comment inside).
///
/// # Panics
/// If `src` is longer than `words`.
#[inline]
pub(crate) fn store(words: &[AtomicU64], src: &[u8]) {
    #[cfg(all(target_arch = "x86_64", not(miri), not(loom)))]
    {
        let bulk = bulk(src.len());
        let tail_words = src.len().div_ceil(8);
        if bulk == 0 && words.len().saturating_sub(tail_words) < PAD_MIN_WORDS {
            return portable::store(words, src);
        }
        assert!(src.len() <= words.len() * 8, "shmbus: payload overrun");
        if bulk > 0 {
            // SAFETY: `bulk <= src.len() <= 8 * words.len()`, so both
            // ranges are in bounds, and they cannot overlap (`src` is
            // private and only read). The slot bytes are `AtomicU64`s and
            // this block writes them with per-byte atomic effect (module
            // docs), so every access that can race it is atomic too: a
            // reader's copy (`load`), and another writer's stores. The odd
            // stamp does not rule out another writer: on a many-publisher
            // bus a claimer stalled inside its copy past the unblock
            // timeout may still be storing into this slot after its next
            // lap was claimed (`claim.rs`, "Liveness: timeouts only").
            // Soundness rests on every access to the slot's words being
            // atomic, not on one writer; what such a race costs is a torn
            // message that the stamps do not catch, the risk `claim.rs`
            // states. Where the two writers split a message differently
            // (one's 8-byte tail words against the other's bulk) the racing
            // accesses differ in size: the module docs' mixed-size caveat,
            // as for a reader.
            unsafe {
                x86::copy16(
                    src.as_ptr(),
                    words.as_ptr().cast::<u8>().cast_mut(),
                    bulk / 16,
                )
            };
        }
        let words = &words[bulk / 8..];
        let src = &src[bulk..];
        // The tail of the message: at most two words.
        let tail = src.len().div_ceil(8);
        portable::store(&words[..tail], src);
        let pad = &words[tail..];
        if pad.len() >= PAD_MIN_WORDS {
            // SAFETY: in bounds of `pad` (`2 * blocks <= pad.len()`); a
            // per-byte atomic store of zeros, as above.
            unsafe { x86::zero16(pad.as_ptr().cast::<u8>().cast_mut(), pad.len() / 2) };
            if pad.len() % 2 == 1 {
                pad[pad.len() - 1].store(0, Ordering::Relaxed);
            }
        } else {
            portable::store(pad, &[]);
        }
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri), not(loom))))]
    portable::store(words, src);
}

/// [`store`] into exactly `src`'s words (`words.len()` is
/// `src.len().div_ceil(8)`: no padding): a length that is a multiple of
/// 16 from 64 bytes up is one `asm!` bulk copy and nothing else. Always
/// inlined, so that a length known at compile time (a typed value)
/// folds the choice away.
///
/// # Panics
/// If `words` is not `src`'s length in words.
#[inline(always)]
pub(crate) fn store_exact(words: &[AtomicU64], src: &[u8]) {
    assert_eq!(words.len(), src.len().div_ceil(8), "shmbus: payload size");
    if src.len() <= 64 {
        // One Relaxed store a word: the compiler schedules them with the
        // rest of the put, which an opaque `asm!` block (a barrier to it)
        // would not let it do; a 64-byte put took 8.5 ns through an `asm!`
        // copy and 2.4 through plain stores
        // (docs/bench-ab/blackboard-handles.md).
        return portable::store(words, src);
    }
    #[cfg(all(target_arch = "x86_64", not(miri), not(loom)))]
    if bulk(src.len()) == src.len() {
        // SAFETY: `words` holds exactly `src.len()` bytes (asserted), and
        // the two cannot overlap (`src` is private and only read); a
        // per-byte atomic store, as in `store`.
        unsafe {
            x86::copy16(
                src.as_ptr(),
                words.as_ptr().cast::<u8>().cast_mut(),
                src.len() / 16,
            )
        };
        return;
    }
    store(words, src);
}

/// [`load`] of exactly `dst.len()` bytes, with 64 bytes (a typed value of
/// one line) as one straight-line `asm!` copy. Always inlined, so that a
/// length known at compile time folds the choice away.
///
/// # Panics
/// If `dst` is longer than `words`.
#[inline(always)]
pub(crate) fn load_exact(words: &[AtomicU64], dst: &mut [u8]) {
    #[cfg(all(target_arch = "x86_64", not(miri), not(loom)))]
    if dst.len() == 64 {
        assert!(words.len() >= 8, "shmbus: payload overrun");
        // SAFETY: 64 bytes in bounds of both (asserted, and `dst`'s
        // length); no overlap (`dst` is an exclusive borrow); a per-byte
        // atomic read, as in `load`.
        unsafe { x86::copy64(words.as_ptr().cast(), dst.as_mut_ptr()) };
        return;
    }
    load(words, dst);
}

/// One Relaxed atomic access per 8 bytes: Miri, loom, other targets, and
/// the tails of the x86_64 path.
mod portable {
    use super::{AtomicU64, Ordering};

    #[inline]
    pub(super) fn load(words: &[AtomicU64], dst: &mut [u8]) {
        let mut chunks = dst.chunks_exact_mut(8);
        let mut i = 0;
        for chunk in &mut chunks {
            chunk.copy_from_slice(&words[i].load(Ordering::Relaxed).to_ne_bytes());
            i += 1;
        }
        let rest = chunks.into_remainder();
        if !rest.is_empty() {
            let last = words[i].load(Ordering::Relaxed).to_ne_bytes();
            rest.copy_from_slice(&last[..rest.len()]);
        }
    }

    #[inline]
    pub(super) fn store(words: &[AtomicU64], src: &[u8]) {
        let mut chunks = src.chunks_exact(8);
        let mut i = 0;
        for chunk in &mut chunks {
            let w = u64::from_ne_bytes(chunk.try_into().expect("8-byte chunk"));
            words[i].store(w, Ordering::Relaxed);
            i += 1;
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            words[i].store(u64::from_ne_bytes(last), Ordering::Relaxed);
            i += 1;
        }
        for w in &words[i..] {
            w.store(0, Ordering::Relaxed);
        }
    }
}

/// The x86_64 bulk copy (module docs: why it is sound, why SSE2).
#[cfg(all(target_arch = "x86_64", not(miri), not(loom)))]
mod x86 {
    use std::arch::asm;

    /// Copies `blocks * 16` bytes from `src` to `dst` with unaligned SSE2
    /// loads and stores, 64 bytes per turn.
    ///
    /// # Safety
    /// Both ranges are valid for the access and do not overlap; any access
    /// racing with this one is atomic (its own effect is per-byte atomic).
    #[inline]
    pub(super) unsafe fn copy16(src: *const u8, dst: *mut u8, blocks: usize) {
        // SAFETY: the caller's contract; the block touches only
        // `src[..16 * blocks]` and `dst[..16 * blocks]`, its loop runs
        // `blocks` turns, and it uses no stack.
        unsafe {
            asm!(
                "cmp {n}, 4",
                "jb 3f",
                "2:",
                "movdqu {a}, xmmword ptr [{src}]",
                "movdqu {b}, xmmword ptr [{src} + 16]",
                "movdqu {c}, xmmword ptr [{src} + 32]",
                "movdqu {d}, xmmword ptr [{src} + 48]",
                "movdqu xmmword ptr [{dst}], {a}",
                "movdqu xmmword ptr [{dst} + 16], {b}",
                "movdqu xmmword ptr [{dst} + 32], {c}",
                "movdqu xmmword ptr [{dst} + 48], {d}",
                "add {src}, 64",
                "add {dst}, 64",
                "sub {n}, 4",
                "cmp {n}, 4",
                "jae 2b",
                "3:",
                "test {n}, {n}",
                "jz 5f",
                "4:",
                "movdqu {a}, xmmword ptr [{src}]",
                "movdqu xmmword ptr [{dst}], {a}",
                "add {src}, 16",
                "add {dst}, 16",
                "dec {n}",
                "jnz 4b",
                "5:",
                src = inout(reg) src => _,
                dst = inout(reg) dst => _,
                n = inout(reg) blocks => _,
                a = out(xmm_reg) _,
                b = out(xmm_reg) _,
                c = out(xmm_reg) _,
                d = out(xmm_reg) _,
                options(nostack),
            );
        }
    }

    /// Copies 64 bytes from `src` to `dst` with four unaligned SSE2 loads
    /// and four stores, no loop: a one-line value whose size is known.
    ///
    /// # Safety
    /// As [`copy16`], for 64 bytes.
    #[inline(always)]
    pub(super) unsafe fn copy64(src: *const u8, dst: *mut u8) {
        // SAFETY: the caller's contract; the block touches only
        // `src[..64]` and `dst[..64]`, and uses no stack.
        unsafe {
            asm!(
                "movdqu {a}, xmmword ptr [{src}]",
                "movdqu {b}, xmmword ptr [{src} + 16]",
                "movdqu {c}, xmmword ptr [{src} + 32]",
                "movdqu {d}, xmmword ptr [{src} + 48]",
                "movdqu xmmword ptr [{dst}], {a}",
                "movdqu xmmword ptr [{dst} + 16], {b}",
                "movdqu xmmword ptr [{dst} + 32], {c}",
                "movdqu xmmword ptr [{dst} + 48], {d}",
                src = in(reg) src,
                dst = in(reg) dst,
                a = out(xmm_reg) _,
                b = out(xmm_reg) _,
                c = out(xmm_reg) _,
                d = out(xmm_reg) _,
                options(nostack),
            );
        }
    }

    /// Stores `blocks * 16` zero bytes at `dst`.
    ///
    /// # Safety
    /// As [`copy16`], for `dst` alone.
    #[inline]
    pub(super) unsafe fn zero16(dst: *mut u8, blocks: usize) {
        // SAFETY: the caller's contract; the block touches only
        // `dst[..16 * blocks]` and runs `blocks` turns.
        unsafe {
            asm!(
                "pxor {z}, {z}",
                "test {n}, {n}",
                "jz 3f",
                "2:",
                "movdqu xmmword ptr [{dst}], {z}",
                "add {dst}, 16",
                "dec {n}",
                "jnz 2b",
                "3:",
                dst = inout(reg) dst => _,
                n = inout(reg) blocks => _,
                z = out(xmm_reg) _,
                options(nostack),
            );
        }
    }
}

#[cfg(all(test, target_arch = "x86_64", not(miri), not(loom)))]
mod tests {
    use super::*;

    fn words(n: usize, fill: u64) -> Vec<AtomicU64> {
        (0..n).map(|_| AtomicU64::new(fill)).collect()
    }

    fn bytes(w: &[AtomicU64]) -> Vec<u8> {
        w.iter()
            .flat_map(|w| w.load(Ordering::Relaxed).to_ne_bytes())
            .collect()
    }

    #[test]
    fn the_x86_copy_stores_and_loads_exactly_what_the_portable_one_does() {
        for n in [0usize, 1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 33, 130] {
            for len in (0..=8 * n).step_by(if n > 20 { 7 } else { 1 }) {
                let src: Vec<u8> = (0..len).map(|i| (i * 7 + 1) as u8).collect();
                let (fast, slow) = (words(n, u64::MAX), words(n, u64::MAX));
                store(&fast, &src);
                portable::store(&slow, &src);
                assert_eq!(bytes(&fast), bytes(&slow), "store {len} into {n} words");
                let (mut a, mut b) = (vec![0xAA; len], vec![0x55; len]);
                load(&fast, &mut a);
                portable::load(&slow, &mut b);
                assert_eq!(a, b, "load {len} from {n} words");
                assert_eq!(a, src);
            }
        }
    }
}
