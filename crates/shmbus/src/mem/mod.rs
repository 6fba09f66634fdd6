//! Memory that rings live in: the [`Region`] trait and its backings
//! (`heap.rs`: the heap, for threads, loom and Miri; `shm.rs`: a file mapped
//! `MAP_SHARED`, between processes; `huge.rs`: huge pages for either;
//! `growable`: a file mapped as it grows, the journal's).
//!
//! # Two capabilities
//! The protocols touch a region's memory only through [`Region`], which
//! lends it in two ways, each for its own kind of access:
//! - **Atomic words**: [`Region::words`], [`Region::word`] and
//!   [`Region::word32`] hand out `AtomicU64`/`AtomicU32` at aligned
//!   offsets. They are for every byte that two parties may access at the
//!   same moment: the header, the control page (cursors, epoch, futex words,
//!   pids, registry, flush fields) and a broadcast bus's slots, whose
//!   seqlock stamps and payload words a reader loads while a writer may be
//!   storing them. That is what makes the seqlock sound in the Rust memory
//!   model: a racing plain read would be undefined behaviour even if its
//!   value were later thrown away.
//! - **Plain bytes handed over by a Release/Acquire pair**: [`Region::raw`]
//!   lends a raw pointer, and [`Region::copy_in`] / [`Region::copy_out`]
//!   `memcpy` through it. They are only for bytes that one party owns at a
//!   time, ownership passing from writer to reader by a Release store the
//!   reader loads with Acquire (and back by the reader's own Release
//!   store), so no access to them ever races. The stream (`crate::stream`)
//!   is their main user: its producer writes record headers and payloads
//!   outside `[HEAD, TAIL)` and publishes them with its Release store of
//!   `TAIL`; its consumer reads `[HEAD, TAIL)` after an Acquire load of
//!   `TAIL` and gives the bytes back with its Release store of `HEAD`. The
//!   broadcast bus never uses them (its slots are read while being
//!   written). The journal's writer does, on its own file's region
//!   (`growable`): the bytes past the file's valid prefix are its alone,
//!   written plainly, and each record's check word, an atomic word, is
//!   stored last.
//!
//! The two never meet on the same bytes at the same time (one exception,
//! [`ShmRegion::prefault`], says so). That is what lets the same protocol
//! code run
//! - on [`HeapRegion`], under loom and under Miri. loom needs its own
//!   atomic types, so the loom heap region is an array of loom atomics and
//!   lends no plain memory (`raw` is `None`): there `copy_in`/`copy_out`
//!   fall back to Relaxed atomic word accesses, still ordered by the same
//!   Release/Acquire pair, and the stream's in-place access is not built;
//! - on [`ShmRegion`], a `MAP_SHARED` mapping of a file, between processes.
//!
//! `ShmRegion` knows nothing of rings: it creates (`O_CREAT|O_EXCL|O_NOFOLLOW`,
//! exact mode via `fchmod` so the umask cannot widen or narrow it), opens
//! (`O_NOFOLLOW`), sizes with `fstat` *before* mapping so a short file is an
//! error and not a `SIGBUS`, maps, changes page protections, and unlinks.

#[cfg(not(loom))]
pub(crate) mod growable;
pub(crate) mod heap;
pub(crate) mod huge;
#[cfg(not(loom))]
pub(crate) mod shm;

pub use heap::HeapRegion;
pub use huge::HugePages;
#[cfg(not(loom))]
#[doc(hidden)] // reached through `internals`
pub use shm::Access;
#[cfg(not(loom))]
pub use shm::ShmRegion;

use crate::sync::{AtomicU32, AtomicU64};

/// The region a bus lives in unless said otherwise: /dev/shm (the heap
/// under loom, which cannot model a mapping). It is the default of every
/// handle's region parameter, so `Subscriber<u64>` means
/// `Subscriber<u64, DefaultRegion>`.
///
/// # Examples
/// ```
/// use shmbus::{BusOptions, Publisher, mem::DefaultRegion};
/// # let name = format!("/dev/shm/shmbus-doc-defaultregion-{}", std::process::id());
/// let publisher: Publisher<u64, DefaultRegion> = Publisher::create(&name, &BusOptions::new(64))?;
/// # shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[cfg(not(loom))]
pub type DefaultRegion = ShmRegion;
/// The region a bus lives in unless said otherwise (the heap under loom).
#[cfg(loom)]
pub type DefaultRegion = HeapRegion;

mod sealed {
    /// Only this crate's regions (and pointers to them) are regions.
    pub trait Sealed {}
    impl Sealed for super::HeapRegion {}
    #[cfg(not(loom))]
    impl Sealed for super::ShmRegion {}
    #[cfg(not(loom))]
    impl Sealed for super::growable::GrowableRegion {}
    impl<R: super::Region + ?Sized> Sealed for &R {}
    impl<R: super::Region + ?Sized> Sealed for std::sync::Arc<R> {}
}

/// Shared memory as the protocols see it: aligned atomic words at byte
/// offsets and, where the backing has plain memory, bytes lent for a
/// Release/Acquire hand-over (the two capabilities of the module docs).
/// Out-of-range or misaligned offsets panic; the protocols only use offsets
/// computed from a header that `Header::read` (in `segment`) validated
/// (and `Header::expect` for the kind's own geometry) or
/// that their creator just built, so they never do.
///
/// Users name it as a bound, to write code generic over where a bus lives
/// ([`ShmRegion`] or [`HeapRegion`]); its methods are the protocols' own
/// access to the memory. Sealed: the protocols' safety rests on what each
/// implementation promises (aligned words, lent bytes that stay mapped),
/// so the regions there are, are the crate's.
///
/// # Examples
/// ```
/// use std::sync::atomic::Ordering;
/// use shmbus::{Publisher, Received, Start, Subscriber, Wait, WaitStrategy, mem::{HeapRegion, Region}};
///
/// fn next<R: Region>(subscriber: &mut Subscriber<u64, R>) -> Option<u64> {
///     match subscriber.recv(Wait::Never)? {
///         Received::Message(m) => Some(m),
///         Received::Lagged { .. } => None,
///     }
/// }
/// let mut publisher = Publisher::<u64, _>::on_heap(8)?;
/// let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default());
/// publisher.publish(&3);
/// assert_eq!(next(&mut subscriber), Some(3));
///
/// // The memory itself, as the protocols see it:
/// let region = HeapRegion::new(64);
/// region.word(8).store(7, Ordering::Release);
/// assert_eq!(region.word(8).load(Ordering::Acquire), 7);
/// # Ok::<(), shmbus::CreateError>(())
/// ```
pub trait Region: sealed::Sealed {
    /// Length in bytes.
    ///
    /// # Examples
    /// ```
    /// use shmbus::mem::{HeapRegion, Region};
    /// assert_eq!(HeapRegion::new(64).len(), 64);
    /// ```
    fn len(&self) -> usize;
    /// Whether the region is zero bytes long.
    ///
    /// # Examples
    /// ```
    /// use shmbus::mem::{HeapRegion, Region};
    /// assert!(HeapRegion::new(0).is_empty());
    /// assert!(!HeapRegion::new(8).is_empty());
    /// ```
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// `count` consecutive 64-bit words starting at byte `offset` (8-aligned):
    /// the atomic-word capability.
    ///
    /// # Examples
    /// ```
    /// use std::sync::atomic::Ordering;
    /// use shmbus::mem::{HeapRegion, Region};
    /// let region = HeapRegion::new(64);
    /// let words = region.words(16, 2); // bytes 16..32
    /// words[1].store(5, Ordering::Relaxed);
    /// assert_eq!(region.word(24).load(Ordering::Relaxed), 5);
    /// ```
    ///
    /// # Panics
    /// If `offset` is not 8-aligned or the words do not fit in the region.
    fn words(&self, offset: usize, count: usize) -> &[AtomicU64];
    /// The 32-bit word at byte `offset` (4-aligned): the atomic-word
    /// capability.
    ///
    /// # Examples
    /// ```
    /// use std::sync::atomic::Ordering;
    /// use shmbus::mem::{HeapRegion, Region};
    /// let region = HeapRegion::new(64);
    /// region.word32(4).fetch_add(1, Ordering::Relaxed);
    /// assert_eq!(region.word32(4).load(Ordering::Relaxed), 1);
    /// ```
    ///
    /// # Panics
    /// If `offset` is not 4-aligned or the word does not fit in the region.
    fn word32(&self, offset: usize) -> &AtomicU32;
    /// `count` consecutive 32-bit words starting at byte `offset`
    /// (4-aligned): one bounds check for words used together (the
    /// publisher's `futex` and `gate_gen`, LAYOUT §13.1).
    ///
    /// # Examples
    /// ```
    /// use std::sync::atomic::Ordering;
    /// use shmbus::mem::{HeapRegion, Region};
    /// let region = HeapRegion::new(64);
    /// region.word32s(8, 2)[1].store(3, Ordering::Relaxed);
    /// assert_eq!(region.word32(12).load(Ordering::Relaxed), 3);
    /// ```
    ///
    /// # Panics
    /// If `offset` is not 4-aligned or the words do not fit in the region.
    fn word32s(&self, offset: usize, count: usize) -> &[AtomicU32];
    /// The 64-bit word at byte `offset` (8-aligned): the atomic-word
    /// capability.
    ///
    /// # Examples
    /// ```
    /// use std::sync::atomic::Ordering;
    /// use shmbus::mem::{HeapRegion, Region};
    /// let region = HeapRegion::new(64);
    /// assert_eq!(region.word(56).swap(9, Ordering::AcqRel), 0); // zeroed
    /// assert_eq!(region.word(56).load(Ordering::Acquire), 9);
    /// ```
    ///
    /// # Panics
    /// As [`Region::words`].
    #[inline]
    fn word(&self, offset: usize) -> &AtomicU64 {
        &self.words(offset, 1)[0]
    }
    /// [`Region::words`] for a caller that checked, once, a range this
    /// lies in: a ring checks its slots and hot control fields when it is
    /// made, and then reads them on every publish and receive without a
    /// check each (with its panic path, a tenth of each). The default
    /// checks anyway.
    ///
    /// # Safety
    /// `offset` is 8-aligned and `offset + 8 * count <= self.len()`: what
    /// [`Region::words`] would check.
    #[doc(hidden)]
    #[inline]
    unsafe fn words_unchecked(&self, offset: usize, count: usize) -> &[AtomicU64] {
        self.words(offset, count)
    }
    /// [`Region::word32s`] as [`Region::words_unchecked`] is `words`.
    ///
    /// # Safety
    /// `offset` is 4-aligned and `offset + 4 * count <= self.len()`.
    #[doc(hidden)]
    #[inline]
    unsafe fn word32s_unchecked(&self, offset: usize, count: usize) -> &[AtomicU32] {
        self.word32s(offset, count)
    }
    /// Whether another process holds the liveness lock on `byte` of the
    /// backing file (see `wire::lock_byte`); `None` where there is no
    /// file (the heap), and so no way to tell.
    ///
    /// # Examples
    /// ```
    /// use shmbus::mem::{HeapRegion, Region};
    /// assert_eq!(HeapRegion::new(64).lock_held(0), None);
    /// ```
    fn lock_held(&self, byte: u64) -> Option<bool> {
        let _ = byte;
        None
    }
    /// `len` bytes at `offset` as a raw pointer, where the region can lend
    /// plain memory (not under loom, whose atomics are model objects): the
    /// plain-bytes capability. Getting the pointer is safe; reading or
    /// writing through it is sound only for bytes the protocol has handed
    /// to the caller alone, by a Release store whose value the caller
    /// loaded with Acquire (or that the caller will publish with its own
    /// Release store), while no other party accesses them, atomically or
    /// not.
    ///
    /// # Examples
    /// ```
    /// use shmbus::mem::{HeapRegion, Region};
    /// let region = HeapRegion::new(64);
    /// let p = region.raw(8, 16).expect("the heap lends plain memory");
    /// // SAFETY: nothing else can reach this region: its bytes are ours alone.
    /// unsafe { p.as_ptr().write(1) };
    /// ```
    ///
    /// # Panics
    /// In the crate's regions, if `offset..offset + len` does not fit in
    /// the region.
    fn raw(&self, offset: usize, len: usize) -> Option<std::ptr::NonNull<u8>> {
        let _ = (offset, len);
        None
    }
    /// Copies `src` to byte `offset` (8-aligned), through the plain-bytes
    /// capability where the region has it, else (loom) with Relaxed atomic
    /// word accesses.
    ///
    /// # Safety
    /// Nothing else reads or writes these bytes until the caller publishes
    /// them with a Release store: the protocol gives it sole ownership.
    ///
    /// # Examples
    /// ```
    /// use shmbus::mem::{HeapRegion, Region};
    /// let region = HeapRegion::new(64);
    /// // SAFETY: no other party shares this region.
    /// unsafe { region.copy_in(8, b"hello") };
    /// let mut out = [0u8; 5];
    /// // SAFETY: as above.
    /// unsafe { region.copy_out(8, &mut out) };
    /// assert_eq!(&out, b"hello");
    /// ```
    ///
    /// # Panics
    /// If the bytes do not fit in the region (or, in a region that lends
    /// no plain memory, if `offset` is not 8-aligned).
    unsafe fn copy_in(&self, offset: usize, src: &[u8]) {
        if let Some(p) = self.raw(offset, src.len()) {
            // SAFETY: plain-bytes capability. `raw` checked the range, and by
            // this function's contract the caller alone owns these bytes
            // until its Release store, so this plain write races nothing.
            unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), p.as_ptr(), src.len()) };
            return;
        }
        let words = self.words(offset, src.len().div_ceil(8));
        for (w, chunk) in words.iter().zip(src.chunks(8)) {
            let mut b = w.load(crate::sync::Ordering::Relaxed).to_ne_bytes();
            b[..chunk.len()].copy_from_slice(chunk);
            w.store(u64::from_ne_bytes(b), crate::sync::Ordering::Relaxed);
        }
    }
    /// Copies bytes at `offset` (8-aligned) into `dst`, through the
    /// plain-bytes capability where the region has it, else (loom) with
    /// Relaxed atomic word accesses.
    ///
    /// # Safety
    /// Nothing writes these bytes during the copy: the writer published them
    /// with a Release store the caller loaded with Acquire, and will not
    /// reuse them before the caller's own Release store says so.
    ///
    /// # Examples
    /// ```
    /// use std::sync::atomic::Ordering;
    /// use shmbus::mem::{HeapRegion, Region};
    /// let region = HeapRegion::new(64);
    /// region.word(0).store(u64::from_le_bytes(*b"abcdefgh"), Ordering::Release);
    /// let mut out = [0u8; 3];
    /// // SAFETY: no other party shares this region, and the store above is
    /// // done.
    /// unsafe { region.copy_out(0, &mut out) };
    /// assert_eq!(&out, b"abc");
    /// ```
    ///
    /// # Panics
    /// As [`Region::copy_in`].
    unsafe fn copy_out(&self, offset: usize, dst: &mut [u8]) {
        if let Some(p) = self.raw(offset, dst.len()) {
            // SAFETY: plain-bytes capability. `raw` checked the range, and by
            // this function's contract the bytes were handed over by a
            // Release/Acquire pair and nobody writes them during this read.
            unsafe { std::ptr::copy_nonoverlapping(p.as_ptr(), dst.as_mut_ptr(), dst.len()) };
            return;
        }
        let words = self.words(offset, dst.len().div_ceil(8));
        for (w, chunk) in words.iter().zip(dst.chunks_mut(8)) {
            let b = w.load(crate::sync::Ordering::Relaxed).to_ne_bytes();
            chunk.copy_from_slice(&b[..chunk.len()]);
        }
    }
}

/// A region behind a pointer (`Arc<R>` for rings shared between threads,
/// `&R` while a creator initialises one) is that region.
macro_rules! delegate_region {
    ($($ptr:ty),*) => {$(
        impl<R: Region + ?Sized> Region for $ptr {
            #[inline]
            fn len(&self) -> usize {
                (**self).len()
            }
            #[inline]
            fn words(&self, offset: usize, count: usize) -> &[AtomicU64] {
                (**self).words(offset, count)
            }
            #[inline]
            fn word32(&self, offset: usize) -> &AtomicU32 {
                (**self).word32(offset)
            }
            #[inline]
            fn word32s(&self, offset: usize, count: usize) -> &[AtomicU32] {
                (**self).word32s(offset, count)
            }
            #[inline]
            unsafe fn words_unchecked(&self, offset: usize, count: usize) -> &[AtomicU64] {
                // SAFETY: the caller's contract, for the same region.
                unsafe { (**self).words_unchecked(offset, count) }
            }
            #[inline]
            unsafe fn word32s_unchecked(&self, offset: usize, count: usize) -> &[AtomicU32] {
                // SAFETY: the caller's contract, for the same region.
                unsafe { (**self).word32s_unchecked(offset, count) }
            }
            #[inline]
            fn raw(&self, offset: usize, len: usize) -> Option<std::ptr::NonNull<u8>> {
                (**self).raw(offset, len)
            }
            #[inline]
            fn lock_held(&self, byte: u64) -> Option<bool> {
                (**self).lock_held(byte)
            }
        }
    )*};
}

delegate_region!(std::sync::Arc<R>, &R);

/// Panics unless `offset..offset + bytes` lies in a region of `len`
/// bytes, `offset` a multiple of `align`. On every region access, so the
/// panic's formatting is kept out of line: inlined, its arguments were
/// spilled to the stack before the compare on every access of the
/// publish and receive paths (three stores each).
#[inline(always)]
#[track_caller]
pub(crate) fn check(offset: usize, bytes: usize, align: usize, len: usize) {
    if !(offset % align == 0 && offset.checked_add(bytes).is_some_and(|end| end <= len)) {
        out_of_bounds(offset, bytes, len);
    }
}

/// [`check`] of `count` words of `width` bytes from `offset`, aligned to
/// `width`: a count whose bytes overflow `usize` is out of bounds too,
/// never a wrapped length.
#[inline(always)]
#[track_caller]
pub(crate) fn check_span(offset: usize, count: usize, width: usize, len: usize) {
    match count.checked_mul(width) {
        Some(bytes) => check(offset, bytes, width, len),
        None => out_of_bounds(offset, usize::MAX, len),
    }
}

#[cold]
#[inline(never)]
#[track_caller]
fn out_of_bounds(offset: usize, bytes: usize, len: usize) -> ! {
    panic!("shmbus: region access {offset}+{bytes} out of bounds {len} or misaligned")
}
