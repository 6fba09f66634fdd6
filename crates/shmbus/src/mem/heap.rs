//! A region on the heap: zeroed atomics owned by the process, for threads of
//! one process and for loom and Miri, which run the same protocol code as
//! the shared-memory backing.

use super::{Region, check, check_span};
use crate::sync::{AtomicU32, AtomicU64};

/// Page size of heap regions: the header fits, and so do the control fields
/// the protocols use (the subscriber registry exists only on /dev/shm).
pub(crate) const HEAP_PAGE: u64 = 512;

/// A region on the heap: for threads of one process, loom and Miri. The
/// heap handles (`Publisher::on_heap`, `ManyPublisher::on_heap`) build their
/// bus in one, shared by an `Arc`.
///
/// # Examples
/// ```
/// use std::sync::{atomic::Ordering, Arc};
/// use shmbus::{Publisher, mem::{HeapRegion, Region}};
///
/// let publisher: Publisher<u64, Arc<HeapRegion>> = Publisher::on_heap(8)?;
///
/// let region = HeapRegion::new(64);
/// region.word(0).store(1, Ordering::Relaxed);
/// assert_eq!(region.lock_held(0), None); // no file, no lock to ask
/// # Ok::<(), shmbus::CreateError>(())
/// ```
#[cfg(not(loom))]
pub struct HeapRegion {
    /// A `Vec`, not a `Box<[Block]>`: `Vec::as_ptr` yields the allocation's
    /// pointer without first making a reference to all of it, so reaching
    /// one word costs Miri one word's retag, not the whole region's.
    blocks: Vec<Block>,
    /// Words in the region (`len / 8`); the last block may have more.
    words: usize,
}

impl std::fmt::Debug for HeapRegion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeapRegion")
            .field("len", &Region::len(self))
            .finish_non_exhaustive()
    }
}

/// 128 bytes, aligned to 128: a region starts on a cache-line pair, as a
/// mapping starts on a page, so a bus's 64-byte slots and control lines
/// are whole lines here too. A `Box<[AtomicU64]>` is only 8-aligned: each
/// slot then straddled two lines, and the cursor's line could hold a
/// slot's tail (false sharing between the publisher and its readers).
#[cfg(not(loom))]
#[repr(C, align(128))]
struct Block([AtomicU64; 16]);

#[cfg(not(loom))]
impl HeapRegion {
    /// The first word. `Block` is `repr(C)`, an array of 16 `AtomicU64`
    /// with no padding (size 128 = 16 * 8, align 128), so the blocks are
    /// `16 * blocks.len()` contiguous, initialised `AtomicU64`s, and
    /// `self.words` is at most that many. The allocation's own pointer, so
    /// provenance covers all of it.
    #[inline]
    fn base(&self) -> *const AtomicU64 {
        self.blocks.as_ptr().cast::<AtomicU64>()
    }
}

#[cfg(not(loom))]
impl HeapRegion {
    /// A zeroed region of at least `len` bytes (rounded up to 8).
    ///
    /// # Examples
    /// ```
    /// use shmbus::mem::{HeapRegion, Region};
    /// assert_eq!(HeapRegion::new(13).len(), 16);
    /// ```
    pub fn new(len: usize) -> Self {
        let words = len.div_ceil(8);
        let blocks = (0..words.div_ceil(16))
            .map(|_| Block(std::array::from_fn(|_| AtomicU64::new(0))))
            .collect();
        HeapRegion { blocks, words }
    }
}

#[cfg(not(loom))]
impl Region for HeapRegion {
    #[inline]
    fn len(&self) -> usize {
        self.words * 8
    }
    #[inline]
    fn words(&self, offset: usize, count: usize) -> &[AtomicU64] {
        check_span(offset, count, 8, self.len());
        // SAFETY: `offset / 8 + count <= self.words` (checked above), so the
        // slice is in bounds of the initialised atomics `base` points to,
        // owned by `self` for the borrow's lifetime.
        unsafe { std::slice::from_raw_parts(self.base().add(offset / 8), count) }
    }
    #[inline]
    unsafe fn words_unchecked(&self, offset: usize, count: usize) -> &[AtomicU64] {
        #[cfg(debug_assertions)]
        check_span(offset, count, 8, self.len());
        // SAFETY: as in `words`, the bounds and alignment being the
        // caller's contract.
        unsafe { std::slice::from_raw_parts(self.base().add(offset / 8), count) }
    }
    #[inline]
    unsafe fn word32s_unchecked(&self, offset: usize, count: usize) -> &[AtomicU32] {
        #[cfg(debug_assertions)]
        check_span(offset, count, 4, self.len());
        // SAFETY: as in `word32s`, the bounds and alignment being the
        // caller's contract.
        unsafe {
            std::slice::from_raw_parts(
                self.base().cast::<u8>().add(offset).cast::<AtomicU32>(),
                count,
            )
        }
    }
    #[inline]
    fn word32(&self, offset: usize) -> &AtomicU32 {
        check(offset, 4, 4, self.len());
        // SAFETY: atomic-word capability. In bounds and 4-aligned (checked);
        // the memory is atomics owned by `self`. Every access that may race
        // with this one is atomic too: the plain-bytes capability (`raw`)
        // reaches only bytes handed over by a Release/Acquire pair, which no
        // one else accesses meanwhile, and the protocols never use a 32-bit
        // and a 64-bit word on the same bytes. So viewing half of an
        // AtomicU64 as an AtomicU32 creates no non-atomic race. Derived from
        // the allocation's pointer, so strict provenance holds.
        unsafe { &*self.base().cast::<u8>().add(offset).cast::<AtomicU32>() }
    }
    #[inline]
    fn word32s(&self, offset: usize, count: usize) -> &[AtomicU32] {
        check_span(offset, count, 4, self.len());
        // SAFETY: as `word32`, for `count` words: in bounds and 4-aligned
        // (checked), atomics owned by `self`, derived from the allocation.
        unsafe {
            std::slice::from_raw_parts(
                self.base().cast::<u8>().add(offset).cast::<AtomicU32>(),
                count,
            )
        }
    }
    #[inline]
    fn raw(&self, offset: usize, len: usize) -> Option<std::ptr::NonNull<u8>> {
        check(offset, len, 1, self.len());
        // Plain-bytes capability. The atomics' memory may be written through
        // a raw pointer: they are UnsafeCells, and callers do so only for
        // bytes handed over by a Release/Acquire pair, while no access to
        // them, atomic or plain, can race (`Region::raw`'s contract). Derived
        // from the allocation, so strict provenance holds.
        let base = self.base().cast::<u8>().cast_mut();
        // SAFETY: in bounds (checked above); creating the pointer accesses
        // nothing.
        std::ptr::NonNull::new(unsafe { base.add(offset) })
    }
}

/// Under loom, atomics are model objects that cannot be overlaid on bytes:
/// the region keeps one loom atomic per 64-bit word and one per 32-bit word.
/// The layouts never use the same offset both ways, so they cannot diverge.
#[cfg(loom)]
pub struct HeapRegion {
    words: Box<[AtomicU64]>,
    halves: Box<[AtomicU32]>,
}

#[cfg(loom)]
impl HeapRegion {
    /// A zeroed region of at least `len` bytes (rounded up to 8).
    pub fn new(len: usize) -> Self {
        let n = len.div_ceil(8);
        HeapRegion {
            words: (0..n).map(|_| AtomicU64::new(0)).collect(),
            halves: (0..2 * n).map(|_| AtomicU32::new(0)).collect(),
        }
    }
}

#[cfg(loom)]
impl Region for HeapRegion {
    fn len(&self) -> usize {
        self.words.len() * 8
    }
    fn words(&self, offset: usize, count: usize) -> &[AtomicU64] {
        check_span(offset, count, 8, self.len());
        &self.words[offset / 8..offset / 8 + count]
    }
    fn word32(&self, offset: usize) -> &AtomicU32 {
        check(offset, 4, 4, self.len());
        &self.halves[offset / 4]
    }
    fn word32s(&self, offset: usize, count: usize) -> &[AtomicU32] {
        check_span(offset, count, 4, self.len());
        &self.halves[offset / 4..offset / 4 + count]
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_heap_region_starts_on_a_cache_line_pair_and_has_the_length_asked() {
        for len in [0, 8, 13, 128, 129, 4096 + 8] {
            let r = HeapRegion::new(len);
            assert_eq!(r.len(), len.div_ceil(8) * 8);
            if len > 0 {
                assert_eq!(r.words(0, 1).as_ptr() as usize % 128, 0);
                r.word(r.len() - 8)
                    .store(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }

    #[test]
    #[should_panic(expected = "out of bounds")]
    fn a_word_count_whose_bytes_wrap_is_out_of_bounds_not_a_short_slice() {
        // 2^61 + 1 words are 8 bytes once multiplied in wrapping arithmetic.
        let r = HeapRegion::new(64);
        let _ = r.words(0, (usize::MAX >> 3) + 2);
    }

    #[test]
    #[should_panic(expected = "out of bounds")]
    fn a_u32_count_whose_bytes_wrap_is_out_of_bounds_not_a_short_slice() {
        let r = HeapRegion::new(64);
        let _ = r.word32s(0, (usize::MAX >> 2) + 2);
    }
}
