//! Memory that rings live in: a trait, a heap backing and a /dev/shm backing.
//!
//! The ring protocols never touch memory except through [`Region::words`] and
//! [`Region::word32`], which hand out atomics. That is what lets the same
//! protocol code run
//! - on [`HeapRegion`], under loom (which needs its own atomic types, so the
//!   loom heap region is an array of loom atomics) and under Miri;
//! - on [`ShmRegion`], a `MAP_SHARED` mapping of a file, between processes.
//!
//! Accessing another process's memory only through atomics is also what makes
//! the seqlock sound in the Rust memory model: a racing plain read would be
//! undefined behaviour even if the value were later thrown away.
//!
//! `ShmRegion` knows nothing of rings: it creates (`O_CREAT|O_EXCL|O_NOFOLLOW`,
//! exact mode via `fchmod` so the umask cannot widen or narrow it), opens
//! (`O_NOFOLLOW`), sizes with `fstat` *before* mapping so a short file is an
//! error and not a `SIGBUS`, maps, changes page protections, and unlinks.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::ptr::NonNull;

use rustix::fs::{Mode, OFlags};
use rustix::mm::{MapFlags, MprotectFlags, ProtFlags};

use crate::sync::{AtomicU32, AtomicU64};

/// Shared memory as the ring code sees it: aligned atomic words at byte
/// offsets. Out-of-range or misaligned offsets panic; the ring code only
/// uses offsets from a validated [`crate::layout::Geometry`], so they never do.
pub trait Region {
    /// Length in bytes.
    fn len(&self) -> usize;
    /// Whether the region is zero bytes long.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// `count` consecutive 64-bit words starting at byte `offset` (8-aligned).
    fn words(&self, offset: usize, count: usize) -> &[AtomicU64];
    /// The 32-bit word at byte `offset` (4-aligned).
    fn word32(&self, offset: usize) -> &AtomicU32;
    /// The 64-bit word at byte `offset` (8-aligned).
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
    /// plain memory (not under loom, whose atomics are model objects).
    fn raw(&self, offset: usize, len: usize) -> Option<std::ptr::NonNull<u8>> {
        let _ = (offset, len);
        None
    }
    /// Copies `src` to byte `offset` (8-aligned).
    ///
    /// # Safety
    /// Nothing else reads or writes these bytes until the caller publishes
    /// them with a Release store: the protocol gives it sole ownership.
    unsafe fn copy_in(&self, offset: usize, src: &[u8]) {
        if let Some(p) = self.raw(offset, src.len()) {
            // SAFETY: `raw` checked the range; the caller owns the bytes.
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
    /// Copies bytes at `offset` (8-aligned) into `dst`.
    ///
    /// # Safety
    /// Nothing writes these bytes during the copy: the writer published them
    /// with a Release store the caller loaded with Acquire, and will not
    /// reuse them before the caller's own Release store says so.
    unsafe fn copy_out(&self, offset: usize, dst: &mut [u8]) {
        if let Some(p) = self.raw(offset, dst.len()) {
            // SAFETY: `raw` checked the range; nobody writes it now.
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
        // SAFETY: in bounds and 4-aligned (checked); the memory is atomics
        // owned by `self`, and every access to it is atomic, so viewing half
        // of an AtomicU64 as an AtomicU32 creates no non-atomic race. Derived
        // from the allocation's pointer, so strict provenance holds.
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
        // The atomics' memory may be written through a raw pointer: they are
        // UnsafeCells, and callers do so only while no atomic access to those
        // bytes can race (see `copy_in`). Derived from the allocation, so
        // strict provenance holds.
        let base = self.words.as_ptr().cast::<u8>().cast_mut();
        // SAFETY: in bounds (checked above).
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

#[cfg(not(loom))]
/// A `MAP_SHARED` mapping of a whole file, and the file it maps.
pub struct ShmRegion {
    ptr: NonNull<u8>,
    len: usize,
    file: OwnedFd,
    path: PathBuf,
}

#[cfg(not(loom))]
// SAFETY: the mapping is plain shared memory that is only ever accessed
// through atomics (see `Region`), so sharing or sending the handle between
// threads adds nothing that other processes do not already do to it.
unsafe impl Send for ShmRegion {}
#[cfg(not(loom))]
// SAFETY: as for Send: all access goes through atomics.
unsafe impl Sync for ShmRegion {}

#[cfg(not(loom))]
impl ShmRegion {
    /// Creates a new file of `len` bytes with exactly `mode`, reserving its
    /// pages (`fallocate`) so that a full tmpfs is an error now and never a
    /// `SIGBUS` later, and maps it read-write. `claim` runs on the file
    /// while it is still empty, before the reservation (the slow part for a
    /// large segment): whatever it marks the file with, a creator killed
    /// later leaves a file that says whose it is.
    pub fn create(
        path: &Path,
        len: usize,
        mode: u32,
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
            Self::map(file, path, len, Access::ReadWrite)
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
        if len == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "cannot map zero bytes",
            ));
        }
        // SAFETY: a fresh mapping chosen by the kernel (null hint) aliases no
        // Rust object; MAP_SHARED of our own file descriptor.
        let ptr = unsafe {
            rustix::mm::mmap(
                std::ptr::null_mut(),
                len,
                access.prot(),
                MapFlags::SHARED,
                &file,
                0,
            )?
        };
        let ptr = NonNull::new(ptr.cast::<u8>()).expect("mmap returned null");
        Ok(ShmRegion {
            ptr,
            len,
            file,
            path: path.to_owned(),
        })
    }

    /// Changes the protection of `[offset, offset+len)`; both page-aligned.
    pub fn protect(&self, offset: usize, len: usize, access: Access) -> io::Result<()> {
        check(offset, len, rustix::param::page_size(), self.len);
        // SAFETY: the range lies inside our own mapping (checked above), and
        // no Rust reference into it relies on it being writable: all access
        // is through atomics, and stores only happen where the protocol says
        // this process is the writer.
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
        // SAFETY: in bounds and 8-aligned (checked; the mapping is page
        // aligned); the memory lives as long as `self`, and all access to it,
        // from any process, is atomic.
        unsafe {
            std::slice::from_raw_parts(self.ptr.as_ptr().add(offset).cast::<AtomicU64>(), count)
        }
    }
    #[inline]
    fn word32(&self, offset: usize) -> &AtomicU32 {
        check(offset, 4, 4, self.len);
        // SAFETY: as in `words`.
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
        NonNull::new(unsafe { self.ptr.as_ptr().add(offset) })
    }
}

#[cfg(not(loom))]
impl Drop for ShmRegion {
    fn drop(&mut self) {
        // SAFETY: we own this mapping; no reference into it outlives `self`
        // because every accessor borrows `self`.
        let _ = unsafe { rustix::mm::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

#[cfg(not(loom))]
/// Removes a segment's name. Mappings that exist stay valid.
pub fn unlink(path: &Path) -> io::Result<()> {
    rustix::fs::unlink(path)?;
    Ok(())
}
