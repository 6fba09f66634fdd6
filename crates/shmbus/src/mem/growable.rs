//! A file mapped `MAP_SHARED` as it grows: [`GrowableRegion`], the journal's
//! region.
//!
//! # Invariants
//! - One address range of `reserve` bytes is reserved up front
//!   (`PROT_NONE`, `MAP_NORESERVE`: address space, not memory). The file is
//!   mapped into it from offset 0 with `MAP_FIXED`, a chunk at a time, so
//!   the mapping never moves and a reference into it stays valid for the
//!   region's life.
//! - `mapped` (bytes mapped from offset 0, a multiple of the chunk) only
//!   grows, under the `grow` lock. Every byte below it has its file blocks
//!   allocated (`fallocate`, and zeros written past the file's old end,
//!   which allocate them where the file system lacks `fallocate`) *before*
//!   it is mapped: a full disk is an error from [`GrowableRegion::ensure`],
//!   never a `SIGBUS` on a later store. Zeros are never written below the
//!   file's length at `map` (the journal's records).
//! - `mapped` and `wanted` are this process's own (the region object is
//!   not in shared memory), so they are `std` atomics; the file's bytes are
//!   reached only through [`Region`]'s two capabilities like any other
//!   region: atomic words, and plain bytes owned by one party at a time.
//!   Other processes read the file with `pread`, never through a mapping of
//!   their own.
//!
//! Growth can happen on the writer's thread or ahead of it on another
//! (the journal's grower), which is why the writer only asks
//! ([`GrowableRegion::want_growth`]) and the other thread grows
//! ([`GrowableRegion::grow_if_wanted`]).

use std::fs::File;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use rustix::mm::{MapFlags, ProtFlags};

use super::{Region, check, check_span};
use crate::sync::{AtomicU32, AtomicU64};

/// The least address space [`GrowableRegion::map`] settles for when the
/// range asked for is refused.
const MIN_RESERVE: usize = 1 << 30;

/// Zeros written per call while growing.
const ZERO_BATCH: usize = 1 << 20;

/// Why a [`GrowableRegion`] could not grow.
#[derive(Debug)]
pub(crate) enum GrowError {
    /// Growing to `len` bytes would pass the reservation.
    Reserve { len: u64 },
    /// `what` failed (`allocate` or `mmap`) growing to `len` bytes.
    Io {
        what: &'static str,
        len: u64,
        source: io::Error,
    },
}

/// A file mapped `MAP_SHARED` into a fixed reservation, growing a chunk at a
/// time (see the module invariants). [`Region::len`] is the mapped length
/// at the moment of the call.
pub(crate) struct GrowableRegion {
    file: File,
    path: PathBuf,
    base: NonNull<u8>,
    reserve: usize,
    chunk: usize,
    /// Release by `ensure`, paired with the Acquire load in `mapped` (and
    /// so in `len`, which every access checks against).
    mapped: AtomicUsize,
    /// The writer asked for a chunk ahead; Relaxed, it carries no data.
    wanted: AtomicBool,
    /// Serializes growth.
    grow: Mutex<Grow>,
}

/// What growth keeps between calls.
struct Grow {
    /// The file's length as far as this region wrote it (its bytes past it
    /// are zeros written by `ensure`).
    filled: usize,
    /// The zeros `ensure` writes from, allocated once and never written:
    /// its pages stay the kernel's zero page, read without a fault after
    /// the first growth.
    zeros: Vec<u8>,
}

// SAFETY: `base` is a reservation owned by this region; growth is
// serialized by `grow`; its bytes are reached only through `Region`, whose
// capabilities say who may access which bytes when.
unsafe impl Send for GrowableRegion {}
// SAFETY: as above.
unsafe impl Sync for GrowableRegion {}

impl GrowableRegion {
    /// Reserves `reserve` bytes of address space for `file` (halving it,
    /// down to 1 GiB, while the kernel refuses) and maps its first
    /// `initial` bytes (rounded up to a chunk, itself rounded up to a
    /// page), allocating them in the file first.
    pub(crate) fn map(
        file: File,
        path: &Path,
        chunk: usize,
        reserve: usize,
        initial: usize,
    ) -> Result<GrowableRegion, GrowError> {
        let len = file
            .metadata()
            .map_err(|source| GrowError::Io {
                what: "stat",
                len: 0,
                source,
            })?
            .len() as usize;
        let page = rustix::param::page_size();
        // Sizes a caller gave: no chunk or start past the reservation.
        let past = |len: usize| GrowError::Reserve { len: len as u64 };
        let chunk = chunk
            .max(page)
            .div_ceil(page)
            .checked_mul(page)
            .filter(|&c| c <= reserve)
            .ok_or(past(chunk))?;
        let first = initial
            .max(1)
            .div_ceil(chunk)
            .checked_mul(chunk)
            .filter(|&f| f <= reserve)
            .ok_or(past(initial))?;
        // A smaller range where the full one is refused (`ulimit -v`,
        // valgrind): the file then reaches its limit sooner, as `Reserve`.
        let mut reserve = reserve;
        let base = loop {
            match super::shm::reserve_address_space(reserve) {
                Ok(base) => break base,
                Err(_) if reserve / 2 >= MIN_RESERVE.max(initial) => reserve /= 2,
                Err(source) => {
                    return Err(GrowError::Io {
                        what: "reserve address space",
                        len: reserve as u64,
                        source,
                    });
                }
            }
        };
        let region = GrowableRegion {
            file,
            path: path.to_owned(),
            // mmap never returns null: MAP_FIXED is not asked for, and the
            // kernel does not hand out page 0.
            base: NonNull::new(base.cast()).ok_or_else(|| GrowError::Io {
                what: "reserve address space",
                len: reserve as u64,
                source: io::ErrorKind::AddrNotAvailable.into(),
            })?,
            reserve,
            chunk,
            mapped: AtomicUsize::new(0),
            wanted: AtomicBool::new(false),
            grow: Mutex::new(Grow {
                filled: len,
                zeros: Vec::new(),
            }),
        };
        region.ensure(first)?;
        Ok(region)
    }

    /// Allocates and maps the file up to `end` bytes (a multiple of the
    /// chunk), if it is not already.
    pub(crate) fn ensure(&self, end: usize) -> Result<(), GrowError> {
        let mut grow = self.grow.lock().unwrap_or_else(|e| e.into_inner());
        let from = self.mapped.load(Ordering::Relaxed);
        if end <= from {
            return Ok(());
        }
        if end > self.reserve {
            return Err(GrowError::Reserve { len: end as u64 });
        }
        let len = end - from;
        let io = |what: &'static str| {
            move |source: io::Error| GrowError::Io {
                what,
                len: end as u64,
                source,
            }
        };
        match rustix::fs::fallocate(
            self.file.as_fd(),
            rustix::fs::FallocateFlags::empty(),
            from as u64,
            len as u64,
        ) {
            // A file system without fallocate: the zeros written below
            // allocate the blocks just as well.
            Ok(()) | Err(rustix::io::Errno::OPNOTSUPP) => {}
            Err(e) => return Err(io("allocate")(e.into())),
        }
        // Zeros written into the page cache, past the file's old end only
        // (below it are the file's own bytes). Bulk writes fill a chunk's
        // pages several times faster than the write faults of the populate
        // below would on fallocated (unwritten) blocks, one file-system
        // transaction per page; a grower that keeps up is what keeps growth
        // off the writer's path. The zeros reach the disk once, ahead of
        // the records that overwrite them.
        let Grow { filled, zeros } = &mut *grow;
        let mut at = (*filled).max(from);
        if at < end {
            if zeros.is_empty() {
                *zeros = vec![0u8; ZERO_BATCH];
            }
            while at < end {
                let n = (end - at).min(zeros.len());
                self.file
                    .write_all_at(&zeros[..n], at as u64)
                    .map_err(io("allocate"))?;
                at += n;
            }
            *filled = end;
        }
        // SAFETY: [base + from, base + end) lies inside our reservation
        // (end <= reserve) and is not in use: MAP_FIXED replaces only our
        // own PROT_NONE pages. The file is at least `end` bytes long now.
        let addr = unsafe { self.base.as_ptr().add(from) };
        // SAFETY: as above.
        unsafe {
            rustix::mm::mmap(
                addr.cast(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED | MapFlags::FIXED,
                self.file.as_fd(),
                from as u64,
            )
        }
        .map_err(|e| io("mmap")(e.into()))?;
        // Best effort: take the write faults now, in one call (cheap: the
        // pages are in the page cache, written). Kernels before 5.14 lack
        // it; the faults then happen on first write.
        // SAFETY: the range was just mapped read-write; advice changes no
        // byte of it.
        let _ = unsafe {
            rustix::mm::madvise(addr.cast(), len, rustix::mm::Advice::LinuxPopulateWrite)
        };
        // Release, paired with the Acquire load in `mapped`.
        self.mapped.store(end, Ordering::Release);
        Ok(())
    }

    /// Bytes mapped now. Acquire, paired with the Release store in
    /// `ensure`: every byte below it is mapped in this thread's view too.
    #[inline]
    pub(crate) fn mapped(&self) -> usize {
        self.mapped.load(Ordering::Acquire)
    }

    /// The growth step, in bytes (a multiple of the page size).
    #[inline]
    pub(crate) fn chunk(&self) -> usize {
        self.chunk
    }

    /// Asks for a chunk ahead. True if this is a new request (the grower
    /// should be woken), false if one is pending.
    pub(crate) fn want_growth(&self) -> bool {
        // A load first: a writer asks again and again while it waits, and a
        // pending request costs it no read-modify-write.
        !self.wanted.load(Ordering::Relaxed) && !self.wanted.swap(true, Ordering::Relaxed)
    }

    /// Grows by a chunk if asked to. The grower's job; an error is left for
    /// the writer's own `ensure` to meet and report.
    pub(crate) fn grow_if_wanted(&self) {
        if self.wanted.swap(false, Ordering::Relaxed) {
            let _ = self.ensure(self.mapped() + self.chunk);
        }
    }

    /// Holds growth off until the guard drops: a test's way to catch the
    /// grower inside `ensure`.
    #[cfg(test)]
    pub(crate) fn hold_growth(&self) -> impl Drop + '_ {
        self.grow.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// True while a request for growth is pending.
    #[cfg(test)]
    pub(crate) fn growth_wanted(&self) -> bool {
        self.wanted.load(Ordering::Relaxed)
    }

    /// The file mapped.
    pub(crate) fn file(&self) -> &File {
        &self.file
    }

    /// The file's path, for errors.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Region for GrowableRegion {
    #[inline]
    fn len(&self) -> usize {
        self.mapped()
    }
    #[inline]
    fn words(&self, offset: usize, count: usize) -> &[AtomicU64] {
        check_span(offset, count, 8, self.len());
        // SAFETY: atomic-word capability. In bounds of the mapped prefix and
        // 8-aligned (checked; the base is page aligned); the prefix stays
        // mapped at this address for the region's life (module invariants).
        // Plain access through `raw` reaches only bytes one party owns, never
        // these words meanwhile.
        unsafe {
            std::slice::from_raw_parts(self.base.as_ptr().add(offset).cast::<AtomicU64>(), count)
        }
    }
    #[inline]
    fn word32(&self, offset: usize) -> &AtomicU32 {
        check(offset, 4, 4, self.len());
        // SAFETY: atomic-word capability, as in `words` (4-aligned).
        unsafe { &*self.base.as_ptr().add(offset).cast::<AtomicU32>() }
    }
    #[inline]
    fn word32s(&self, offset: usize, count: usize) -> &[AtomicU32] {
        check_span(offset, count, 4, self.len());
        // SAFETY: atomic-word capability, as in `words` (4-aligned).
        unsafe {
            std::slice::from_raw_parts(self.base.as_ptr().add(offset).cast::<AtomicU32>(), count)
        }
    }
    #[inline]
    fn raw(&self, offset: usize, len: usize) -> Option<NonNull<u8>> {
        check(offset, len, 1, self.len());
        // SAFETY: in bounds of the mapped prefix (checked), which stays
        // mapped for the region's life. Creating the pointer accesses
        // nothing; what a caller may do with it is `Region::raw`'s contract.
        NonNull::new(unsafe { self.base.as_ptr().add(offset) })
    }
}

impl Drop for GrowableRegion {
    fn drop(&mut self) {
        // SAFETY: the reservation is ours, and no reference into it outlives
        // `self`: words and pointers are lent by `&self`.
        let _ = unsafe { rustix::mm::munmap(self.base.as_ptr().cast(), self.reserve) };
    }
}

// Real files and mappings, which Miri does not model.
#[cfg(all(test, not(miri)))]
pub(crate) mod tests {
    use super::*;

    /// A new file in the temp dir, named for `name` and this process.
    pub(crate) fn temp(name: &str) -> (File, PathBuf) {
        let dir = std::env::temp_dir();
        let path = dir.join(format!("shmbus-growable-{name}-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .unwrap();
        (file, path)
    }

    #[test]
    fn a_growable_region_keeps_its_bytes_in_place_and_in_the_file_as_it_grows() {
        let (file, path) = temp("grow");
        let page = rustix::param::page_size();
        let region = GrowableRegion::map(file, &path, page, 64 * page, 1).unwrap();
        assert_eq!(region.len(), page);
        region.word(8).store(42, Ordering::Release);
        let first = region.raw(0, 8).unwrap();
        assert!(region.want_growth());
        assert!(!region.want_growth(), "a pending request is not new");
        region.grow_if_wanted();
        assert_eq!(region.len(), 2 * page);
        region.word(page + 8).store(7, Ordering::Release);
        assert_eq!(region.raw(0, 8).unwrap(), first, "the mapping did not move");
        assert_eq!(region.word(8).load(Ordering::Acquire), 42);
        let mut b = [0u8; 8];
        region
            .file()
            .read_exact_at(&mut b, page as u64 + 8)
            .unwrap();
        assert_eq!(u64::from_ne_bytes(b), 7, "stores reach the file");
        assert_eq!(region.file().metadata().unwrap().len(), 2 * page as u64);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_growable_region_over_a_file_keeps_the_files_bytes_and_zero_fills_only_past_them() {
        let (file, path) = temp("keep");
        let page = rustix::param::page_size();
        file.write_all_at(&[0xab; 100], 0).unwrap();
        let region = GrowableRegion::map(file, &path, page, 4 * page, 100).unwrap();
        region.ensure(2 * page).unwrap();
        let mut b = vec![0u8; 2 * page];
        region.file().read_exact_at(&mut b, 0).unwrap();
        assert!(b[..100].iter().all(|&x| x == 0xab), "the file's bytes stay");
        assert!(b[100..].iter().all(|&x| x == 0), "zeros past them");
        assert_eq!(region.file().metadata().unwrap().len(), 2 * page as u64);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_growable_region_refuses_to_grow_past_its_reservation() {
        let (file, path) = temp("reserve");
        let page = rustix::param::page_size();
        let region = GrowableRegion::map(file, &path, page, 2 * page, page).unwrap();
        region.ensure(2 * page).unwrap();
        assert!(matches!(
            region.ensure(3 * page),
            Err(GrowError::Reserve { len }) if len == 3 * page as u64
        ));
        assert_eq!(region.len(), 2 * page);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    #[should_panic(expected = "out of bounds")]
    fn a_growable_region_refuses_a_word_past_what_is_mapped() {
        let (file, path) = temp("bounds");
        let page = rustix::param::page_size();
        let region = GrowableRegion::map(file, &path, page, 4 * page, 1).unwrap();
        let _ = std::fs::remove_file(&path);
        region.word(page);
    }
}
