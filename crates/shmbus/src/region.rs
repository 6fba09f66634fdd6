//! Memory that rings live in: a trait, a heap backing and a /dev/shm backing.
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
//!   is their one user: its producer writes record headers and payloads
//!   outside `[HEAD, TAIL)` and publishes them with its Release store of
//!   `TAIL`; its consumer reads `[HEAD, TAIL)` after an Acquire load of
//!   `TAIL` and gives the bytes back with its Release store of `HEAD`. The
//!   broadcast bus never uses them (its slots are read while being
//!   written), nor does the journal, which maps its file itself and puts
//!   records on the ring through the atomic slot protocol.
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
//!
//! # Huge pages
//!
//! [`HugePages`] (`CreateOptions::huge_pages`) backs a bus with 2 MiB pages
//! (the system's huge page size), so its slots cost one TLB entry per 2 MiB
//! instead of per 4 KiB. Either way the segment is laid out with the huge
//! page size as its page size (header `page_size`, so the header page, the
//! control page and the data pages each start on a huge page boundary; the
//! header and control pages cost 2 MiB each, which is the price), and the
//! header carries `flags::HUGE_PAGES`. Every mapping of such a segment
//! (creator and openers, who read the page size before mapping) is placed at
//! an address aligned to that page size, without which the kernel could not
//! map a huge page with one page-table entry.
//! - [`HugePages::Transparent`]: the file stays on tmpfs (/dev/shm). After
//!   the pages are reserved and initialised, the creator advises
//!   `MADV_HUGEPAGE` on the data pages and then `MADV_COLLAPSE` (Linux 6.1),
//!   which turns them into huge pages in the page cache *now*, whatever the
//!   tmpfs mount's `huge=` option says. `MADV_HUGEPAGE` alone is not enough
//!   on a default /dev/shm: its mount has `huge=never`, which wins over the
//!   advice (measured: 0 kB `ShmemHugePages` after faulting an advised
//!   range; 6 MiB after the collapse). Only
//!   /sys/kernel/mm/transparent_hugepage/shmem_enabled = `deny` forbids it;
//!   that, a kernel without transparent huge pages, and a failed collapse
//!   (no free 2 MiB block) are each a [`crate::error::HugePageError`].
//!   Openers need do nothing: the huge folios are in the page cache and
//!   their aligned mappings map them whole (`ShmemPmdMapped` in smaps).
//! - [`HugePages::Hugetlbfs`]: the bus is named by a path on a hugetlbfs
//!   mount (`/dev/hugepages/ticks`), whose pages are huge by construction and
//!   come from the pool reserved in /proc/sys/vm/nr_hugepages. The path's
//!   file system is checked before anything is created; `fallocate` then
//!   takes all the pages at once, so too few free pages is an error at
//!   create time, never a `SIGBUS` later.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::ptr::NonNull;

use rustix::fs::{Mode, OFlags};
use rustix::mm::{MapFlags, MprotectFlags, ProtFlags};

use crate::sync::{AtomicU32, AtomicU64};

/// Shared memory as the protocols see it: aligned atomic words at byte
/// offsets and, where the backing has plain memory, bytes lent for a
/// Release/Acquire hand-over (the two capabilities of the module docs).
/// Out-of-range or misaligned offsets panic; the protocols only use offsets
/// computed from a header that [`crate::layout::Header::read`] validated
/// (and [`crate::layout::Header::expect`] for the kind's own geometry) or
/// that their creator just built, so they never do.
pub trait Region {
    /// Length in bytes.
    fn len(&self) -> usize;
    /// Whether the region is zero bytes long.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// `count` consecutive 64-bit words starting at byte `offset` (8-aligned):
    /// the atomic-word capability.
    fn words(&self, offset: usize, count: usize) -> &[AtomicU64];
    /// The 32-bit word at byte `offset` (4-aligned): the atomic-word
    /// capability.
    fn word32(&self, offset: usize) -> &AtomicU32;
    /// The 64-bit word at byte `offset` (8-aligned): the atomic-word
    /// capability.
    #[inline]
    fn word(&self, offset: usize) -> &AtomicU64 {
        &self.words(offset, 1)[0]
    }
    /// Whether another process holds the liveness lock on `byte` of the
    /// backing file (see `layout::lock_byte`); `None` where there is no
    /// file (the heap), and so no way to tell.
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

#[inline]
#[track_caller]
fn check(offset: usize, bytes: usize, align: usize, len: usize) {
    assert!(
        offset % align == 0 && offset.checked_add(bytes).is_some_and(|end| end <= len),
        "shmbus: region access {offset}+{bytes} out of bounds {len} or misaligned"
    );
}

/// A region on the heap: for threads of one process, loom and Miri.
#[cfg(not(loom))]
pub struct HeapRegion {
    words: Box<[AtomicU64]>,
}

#[cfg(not(loom))]
impl HeapRegion {
    /// A zeroed region of at least `len` bytes (rounded up to 8).
    pub fn new(len: usize) -> Self {
        let words = (0..len.div_ceil(8)).map(|_| AtomicU64::new(0)).collect();
        HeapRegion { words }
    }
}

#[cfg(not(loom))]
impl Region for HeapRegion {
    #[inline]
    fn len(&self) -> usize {
        self.words.len() * 8
    }
    #[inline]
    fn words(&self, offset: usize, count: usize) -> &[AtomicU64] {
        check(offset, count * 8, 8, self.len());
        &self.words[offset / 8..offset / 8 + count]
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
        unsafe {
            &*self
                .words
                .as_ptr()
                .cast::<u8>()
                .add(offset)
                .cast::<AtomicU32>()
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
        let base = self.words.as_ptr().cast::<u8>().cast_mut();
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
        check(offset, count * 8, 8, self.len());
        &self.words[offset / 8..offset / 8 + count]
    }
    fn word32(&self, offset: usize) -> &AtomicU32 {
        check(offset, 4, 4, self.len());
        &self.halves[offset / 4]
    }
}

/// Where a bus name lives: a bare name goes under /dev/shm, anything with a
/// slash is a path used as given.
pub fn resolve(name: &str) -> Result<PathBuf, crate::error::NameError> {
    use crate::error::NameError;
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    if name.contains('\0') {
        return Err(NameError::Nul);
    }
    if name.contains('/') {
        return Ok(PathBuf::from(name));
    }
    if name == "." || name == ".." {
        return Err(NameError::Reserved(name.to_owned()));
    }
    if name.len() > 255 {
        return Err(NameError::TooLong(name.len()));
    }
    Ok(Path::new("/dev/shm").join(name))
}

/// Where a bus's huge pages come from (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HugePages {
    /// Transparent huge pages on a tmpfs file (a bare name, in /dev/shm).
    Transparent,
    /// A file on a hugetlbfs mount (name the bus by a path on it).
    Hugetlbfs,
}

#[cfg(not(loom))]
mod huge {
    use super::HugePages;
    use crate::error::{CreateError, HugePageError};
    use std::path::{Path, PathBuf};

    const THP: &str = "/sys/kernel/mm/transparent_hugepage";
    const TMPFS_MAGIC: u64 = 0x0102_1994;
    const HUGETLBFS_MAGIC: u64 = 0x9584_58f6;

    fn read_sys(path: &str) -> Result<String, HugePageError> {
        std::fs::read_to_string(path)
            .map(|s| s.trim().to_owned())
            .map_err(|source| HugePageError::NoTransparent {
                path: PathBuf::from(path),
                source,
            })
    }

    /// The selected word of a sysfs choice such as `always [never] deny`.
    pub(crate) fn selected(text: &str) -> &str {
        text.split_once('[')
            .and_then(|(_, rest)| rest.split_once(']'))
            .map_or(text, |(word, _)| word)
    }

    /// Whether `shmem_enabled` lets a collapse make tmpfs huge pages: every
    /// setting but `deny` does (`never` only stops the fault path).
    pub(crate) fn shmem_verdict(shmem_enabled: &str) -> Result<(), HugePageError> {
        match selected(shmem_enabled) {
            "deny" => Err(HugePageError::ShmemDenied {
                found: "deny".into(),
            }),
            _ => Ok(()),
        }
    }

    fn fs_name(magic: u64) -> String {
        match magic {
            TMPFS_MAGIC => "tmpfs".into(),
            HUGETLBFS_MAGIC => "hugetlbfs".into(),
            0xEF53 => "ext2/3/4".into(),
            0x5846_5342 => "xfs".into(),
            0x9123_683E => "btrfs".into(),
            0x794C_7630 => "overlayfs".into(),
            m => format!("{m:#x}"),
        }
    }

    /// The hugetlbfs mount points this process sees, as an error can name them.
    fn hugetlbfs_mounts() -> String {
        let mounts: Vec<String> = std::fs::read_to_string("/proc/self/mounts")
            .unwrap_or_default()
            .lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                let (_, dir, fs) = (f.next()?, f.next()?, f.next()?);
                (fs == "hugetlbfs").then(|| dir.to_owned())
            })
            .collect();
        if mounts.is_empty() {
            "a hugetlbfs mount (none is mounted: mount -t hugetlbfs none /dev/hugepages, as root)"
                .into()
        } else {
            mounts.join(" or ")
        }
    }

    impl HugePages {
        /// The huge page size a new segment at `path` gets, after checking
        /// that this system can give it; nothing is created yet.
        pub(crate) fn page_size(self, path: &Path) -> Result<u64, CreateError> {
            let dir = match path.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            let fs =
                rustix::fs::statfs(dir).map_err(|e| CreateError::from_create(path, 0, e.into()))?;
            let magic = fs.f_type as u64 & 0xffff_ffff;
            match self {
                HugePages::Transparent => {
                    if magic != TMPFS_MAGIC {
                        return Err(HugePageError::NotTmpfs {
                            path: path.to_owned(),
                            found: fs_name(magic),
                        }
                        .into());
                    }
                    shmem_verdict(&read_sys(&format!("{THP}/shmem_enabled"))?)?;
                    let size = read_sys(&format!("{THP}/hpage_pmd_size"))?;
                    size.parse().map_err(|_| {
                        HugePageError::NoTransparent {
                            path: PathBuf::from(format!("{THP}/hpage_pmd_size")),
                            source: std::io::Error::other(format!("{size:?} is not a size")),
                        }
                        .into()
                    })
                }
                HugePages::Hugetlbfs => {
                    if magic != HUGETLBFS_MAGIC {
                        return Err(HugePageError::NotHugetlbfs {
                            path: path.to_owned(),
                            found: fs_name(magic),
                            mounts: hugetlbfs_mounts(),
                        }
                        .into());
                    }
                    Ok(fs.f_bsize as u64)
                }
            }
        }
    }

    /// hugetlbfs had too few pages for `len` bytes: the pool's figures.
    pub(crate) fn none_free(path: &Path, len: u64, page: u64) -> HugePageError {
        let kib = page / 1024;
        let count = |file: &str| {
            std::fs::read_to_string(format!("/sys/kernel/mm/hugepages/hugepages-{kib}kB/{file}"))
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(0)
        };
        HugePageError::NoneFree {
            path: path.to_owned(),
            needed: len.div_ceil(page),
            page_kib: kib,
            free: count("free_hugepages"),
            total: count("nr_hugepages"),
        }
    }
}

#[cfg(not(loom))]
pub(crate) use huge::none_free;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::huge::{selected, shmem_verdict};

    #[test]
    fn shmem_enabled_deny_alone_refuses_a_collapse() {
        assert_eq!(
            selected("always within_size advise [never] deny force"),
            "never"
        );
        for ok in [
            "[always]",
            "advise [within_size]",
            "[advise]",
            "[never] deny",
            "[force]",
        ] {
            assert!(shmem_verdict(ok).is_ok(), "{ok}");
        }
        let err = shmem_verdict("always never [deny] force").unwrap_err();
        assert!(
            err.to_string()
                .contains("is [deny], expected anything but [deny]"),
            "{err}"
        );
    }
}

#[cfg(not(loom))]
/// Page protections for a part of a mapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Loads only; a store faults with `SIGSEGV`.
    ReadOnly,
    /// Loads and stores.
    ReadWrite,
}

#[cfg(not(loom))]
impl Access {
    fn prot(self) -> ProtFlags {
        match self {
            Access::ReadOnly => ProtFlags::READ,
            Access::ReadWrite => ProtFlags::READ | ProtFlags::WRITE,
        }
    }
}

/// Reserves `len` bytes of address space: inaccessible, backed by nothing
/// (`PROT_NONE`, `MAP_NORESERVE`), for file mappings to be placed into
/// with `MAP_FIXED`. The caller unmaps it.
#[cfg(not(loom))]
pub(crate) fn reserve_address_space(len: usize) -> io::Result<*mut std::ffi::c_void> {
    // SAFETY: a fresh inaccessible anonymous reservation chosen by the
    // kernel; it aliases no Rust object.
    let base = unsafe {
        rustix::mm::mmap_anonymous(
            std::ptr::null_mut(),
            len,
            ProtFlags::empty(),
            MapFlags::PRIVATE | MapFlags::NORESERVE,
        )?
    };
    Ok(base)
}

#[cfg(not(loom))]
/// A `MAP_SHARED` mapping of a whole file, and the file it maps.
pub struct ShmRegion {
    ptr: NonNull<u8>,
    len: usize,
    file: OwnedFd,
    path: PathBuf,
}

#[cfg(not(loom))]
// SAFETY: the mapping is plain shared memory, accessed only through the two
// capabilities of `Region`: atomic words wherever accesses may race, and
// plain bytes only where a Release/Acquire pair hands them from one party to
// another. Both are as sound between threads as between processes, so
// sending the handle to another thread adds nothing that other processes do
// not already do to it.
unsafe impl Send for ShmRegion {}
#[cfg(not(loom))]
// SAFETY: as for Send: shared access goes through atomic words, or through
// plain bytes whose Release/Acquire hand-over orders every access.
unsafe impl Sync for ShmRegion {}

#[cfg(not(loom))]
impl ShmRegion {
    /// Creates a new file of `len` bytes with exactly `mode`, reserving its
    /// pages (`fallocate`) so that a full tmpfs is an error now and never a
    /// `SIGBUS` later, and maps it read-write, aligned to `align` (a power
    /// of two; see [`ShmRegion::map_aligned`]). `claim` runs on the file
    /// while it is still empty, before the reservation (the slow part for a
    /// large segment): whatever it marks the file with, a creator killed
    /// later leaves a file that says whose it is.
    pub fn create(
        path: &Path,
        len: usize,
        mode: u32,
        align: usize,
        claim: impl FnOnce(BorrowedFd<'_>) -> io::Result<()>,
    ) -> io::Result<ShmRegion> {
        let file = rustix::fs::open(
            path,
            OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(mode),
        )?;
        let made = (|| -> io::Result<ShmRegion> {
            rustix::fs::fchmod(&file, Mode::from_raw_mode(mode))?;
            claim(file.as_fd())?;
            rustix::fs::fallocate(&file, rustix::fs::FallocateFlags::empty(), 0, len as u64)?;
            Self::map_aligned(file, path, len, Access::ReadWrite, align)
        })();
        if made.is_err() {
            let _ = rustix::fs::unlink(path);
        }
        made
    }

    /// Opens an existing file without following a symlink. Returns the file
    /// and its length from `fstat`.
    pub fn open_file(path: &Path, access: Access) -> io::Result<(OwnedFd, u64)> {
        let rw = match access {
            Access::ReadOnly => OFlags::RDONLY,
            Access::ReadWrite => OFlags::RDWR,
        };
        // NONBLOCK: opening a FIFO someone left here must not wait for a
        // writer; the regular-file check below then refuses it.
        let flags = rw | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
        let file = rustix::fs::open(path, flags, Mode::empty())?;
        let st = rustix::fs::fstat(&file)?;
        if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::RegularFile {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a regular file",
            ));
        }
        Ok((file, st.st_size as u64))
    }

    /// Maps the first `len` bytes of `file` with `access`. The caller has
    /// checked with `fstat` that the file is at least `len` bytes long.
    pub fn map(file: OwnedFd, path: &Path, len: usize, access: Access) -> io::Result<ShmRegion> {
        Self::map_aligned(file, path, len, access, 0)
    }

    /// As [`ShmRegion::map`], at an address that is a multiple of `align`
    /// (a power of two): a huge page is mapped whole only where the virtual
    /// address and the file offset agree modulo its size. An `align` no
    /// larger than the system page asks for nothing special.
    pub fn map_aligned(
        file: OwnedFd,
        path: &Path,
        len: usize,
        access: Access,
        align: usize,
    ) -> io::Result<ShmRegion> {
        if len == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "cannot map zero bytes",
            ));
        }
        let ptr = if align > rustix::param::page_size() {
            Self::mmap_aligned(&file, len, access, align)?
        } else {
            // SAFETY: a fresh mapping chosen by the kernel (null hint)
            // aliases no Rust object; MAP_SHARED of our own file descriptor.
            unsafe {
                rustix::mm::mmap(
                    std::ptr::null_mut(),
                    len,
                    access.prot(),
                    MapFlags::SHARED,
                    &file,
                    0,
                )?
            }
        };
        let ptr = NonNull::new(ptr.cast::<u8>()).expect("mmap returned null");
        Ok(ShmRegion {
            ptr,
            len,
            file,
            path: path.to_owned(),
        })
    }

    /// Reserves `len + align` bytes of address space, maps the file over
    /// the aligned part of it and gives the rest back.
    fn mmap_aligned(
        file: &OwnedFd,
        len: usize,
        access: Access,
        align: usize,
    ) -> io::Result<*mut std::ffi::c_void> {
        let span = len
            .checked_add(align)
            .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        let base = reserve_address_space(span)?;
        let head = (base as usize).next_multiple_of(align) - base as usize;
        // SAFETY: `head + len <= span`: the aligned start lies inside our
        // own reservation, which MAP_FIXED replaces and nothing else uses.
        let mapped = unsafe {
            rustix::mm::mmap(
                base.cast::<u8>().add(head).cast(),
                len,
                access.prot(),
                MapFlags::SHARED | MapFlags::FIXED,
                file,
                0,
            )
        };
        let ptr = match mapped {
            Ok(ptr) => ptr,
            Err(e) => {
                // SAFETY: the reservation is ours and nothing points into it.
                let _ = unsafe { rustix::mm::munmap(base, span) };
                return Err(e.into());
            }
        };
        // SAFETY: the slack before and after the file mapping is the rest of
        // our reservation, which nothing refers to.
        unsafe {
            if head > 0 {
                let _ = rustix::mm::munmap(base, head);
            }
            let tail = span - head - len;
            if tail > 0 {
                let _ = rustix::mm::munmap(base.cast::<u8>().add(head + len).cast(), tail);
            }
        }
        Ok(ptr)
    }

    /// Turns `[offset, offset+len)` (huge-page aligned, already reserved)
    /// into transparent huge pages now: `MADV_HUGEPAGE` so the kernel keeps
    /// them that way, then `MADV_COLLAPSE` (see the module docs).
    pub fn collapse_huge(
        &self,
        offset: usize,
        len: usize,
    ) -> Result<(), crate::error::HugePageError> {
        use crate::error::HugePageError;
        check(offset, len, rustix::param::page_size(), self.len);
        // SAFETY: inside our own mapping (checked); advice changes no
        // contents.
        let start = unsafe { self.ptr.as_ptr().add(offset) }.cast::<std::ffi::c_void>();
        // SAFETY: as above; MADV_HUGEPAGE only sets a flag on the mapping.
        unsafe { rustix::mm::madvise(start, len, rustix::mm::Advice::LinuxHugepage) }.map_err(
            |e| HugePageError::Collapse {
                what: "madvise(MADV_HUGEPAGE)",
                source: e.into(),
                hint: "the kernel was built without transparent huge pages",
            },
        )?;
        // Not in rustix; the value is the kernel's (uapi mman-common.h).
        const MADV_COLLAPSE: libc::c_int = 25;
        let mut tries = 0;
        loop {
            // SAFETY: as above; a collapse copies the pages' contents into a
            // huge page under the page cache's locks, so every mapping keeps
            // seeing the same bytes.
            if unsafe { libc::madvise(start, len, MADV_COLLAPSE) } == 0 {
                return Ok(());
            }
            let err = io::Error::last_os_error();
            tries += 1;
            // EAGAIN: transient contention on the pages' locks.
            if err.raw_os_error() == Some(libc::EAGAIN) && tries < 5 {
                std::thread::sleep(std::time::Duration::from_millis(1));
                continue;
            }
            let hint = match err.raw_os_error() {
                Some(libc::EINVAL) => {
                    "this kernel has no MADV_COLLAPSE (Linux 6.1 or later is needed)"
                }
                Some(libc::ENOMEM) | Some(libc::EAGAIN) => {
                    "no free 2 MiB block of memory could be found: memory is short or \
                     fragmented (echo 1 > /proc/sys/vm/compact_memory may help)"
                }
                _ => "the kernel refused huge pages for this file",
            };
            return Err(HugePageError::Collapse {
                what: "madvise(MADV_COLLAPSE)",
                source: err,
                hint,
            });
        }
    }

    /// Changes the protection of `[offset, offset+len)`; both page-aligned.
    pub fn protect(&self, offset: usize, len: usize, access: Access) -> io::Result<()> {
        check(offset, len, rustix::param::page_size(), self.len);
        // SAFETY: the range lies inside our own mapping (checked above), and
        // no Rust reference into it relies on it being writable: both
        // capabilities (atomic words, and plain bytes handed over by a
        // Release/Acquire pair) are used to store only where the protocol
        // says this process writes, which its role keeps writable; a stray
        // store faults (SIGSEGV) and corrupts nothing.
        unsafe {
            rustix::mm::mprotect(
                self.ptr.as_ptr().add(offset).cast(),
                len,
                MprotectFlags::from_bits_retain(access.prot().bits()),
            )?
        };
        Ok(())
    }

    /// Touches every page so the first messages do not pay for page faults.
    ///
    /// It loads the first word of each page as an atomic word, whatever
    /// that page holds. On a stream opened while its peer runs, such a load
    /// can land on ring bytes the producer is writing through the
    /// plain-bytes capability: the value is thrown away, but in the Rust
    /// memory model that pair is still a race, the one place the two
    /// capabilities meet.
    pub fn prefault(&self) {
        let page = rustix::param::page_size();
        let mut off = 0;
        while off < self.len {
            let _ = self.word(off).load(crate::sync::Ordering::Relaxed);
            off += page;
        }
    }

    /// Locks the mapping into RAM (`mlock`), so it is never paged out.
    pub fn lock_in_memory(&self) -> io::Result<()> {
        // SAFETY: the pointer and length describe exactly our own mapping.
        unsafe { rustix::mm::mlock(self.ptr.as_ptr().cast(), self.len)? };
        Ok(())
    }

    /// The mapped file.
    pub fn file(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }

    /// The path it was opened or created at.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The start of the mapping, for tests that must prove a store faults.
    #[doc(hidden)]
    pub fn base_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

#[cfg(not(loom))]
impl Region for ShmRegion {
    #[inline]
    fn len(&self) -> usize {
        self.len
    }
    #[inline]
    fn words(&self, offset: usize, count: usize) -> &[AtomicU64] {
        check(offset, count * 8, 8, self.len);
        // SAFETY: atomic-word capability. In bounds and 8-aligned (checked;
        // the mapping is page aligned); the memory lives as long as `self`.
        // Every access that may race with this one, from any process that
        // follows the protocol, is atomic too: plain access (`raw`) is only
        // to bytes handed over by a Release/Acquire pair, never meanwhile
        // (`prefault`'s loads are the one exception, documented there).
        unsafe {
            std::slice::from_raw_parts(self.ptr.as_ptr().add(offset).cast::<AtomicU64>(), count)
        }
    }
    #[inline]
    fn word32(&self, offset: usize) -> &AtomicU32 {
        check(offset, 4, 4, self.len);
        // SAFETY: atomic-word capability, as in `words` (4-aligned).
        unsafe { &*self.ptr.as_ptr().add(offset).cast::<AtomicU32>() }
    }
    #[inline]
    fn lock_held(&self, byte: u64) -> Option<bool> {
        crate::lock::is_held(self.file(), byte).ok()
    }
    #[inline]
    fn raw(&self, offset: usize, len: usize) -> Option<NonNull<u8>> {
        check(offset, len, 1, self.len);
        // SAFETY: in bounds (checked); the mapping lives as long as `self`.
        // Creating the pointer accesses nothing; what a caller may do with
        // it is the plain-bytes capability's contract (`Region::raw`).
        NonNull::new(unsafe { self.ptr.as_ptr().add(offset) })
    }
}

#[cfg(not(loom))]
impl Drop for ShmRegion {
    fn drop(&mut self) {
        // SAFETY: we own this mapping. No reference into it outlives `self`:
        // every atomic word borrows `self`, and the plain-byte pointers `raw`
        // lends are kept only by values that borrow the region's owner (the
        // stream's chunks borrow their producer or consumer).
        let _ = unsafe { rustix::mm::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

#[cfg(not(loom))]
/// Removes a segment's name. Mappings that exist stay valid.
pub fn unlink(path: &Path) -> io::Result<()> {
    rustix::fs::unlink(path)?;
    Ok(())
}
