//! A `MAP_SHARED` mapping of a file: [`ShmRegion`].
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

use super::{Region, check, check_span};
use crate::sync::{AtomicU32, AtomicU64};

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
/// A `MAP_SHARED` mapping of a whole file, and the file it maps: the
/// region every bus and stream created or opened by name lives in (it is
/// [`DefaultRegion`](crate::mem::DefaultRegion), so `Publisher<T>` is
/// `Publisher<T, ShmRegion>`). Handles create and map it themselves; it
/// appears in user code only as that type parameter.
///
/// # Examples
/// ```
/// use shmbus::{BusOptions, OpenOptions, Publisher, Received, Start, Subscriber, Wait, mem::Region};
///
/// // Generic over where the bus lives: /dev/shm or the heap.
/// fn drain<R: Region>(subscriber: &mut Subscriber<u64, R>) -> Vec<u64> {
///     let mut got = Vec::new();
///     while let Some(Received::Message(m)) = subscriber.recv(Wait::Never) {
///         got.push(m);
///     }
///     got
/// }
///
/// # let name = format!("/dev/shm/shmbus-doc-shmregion-{}", std::process::id());
/// let mut publisher: Publisher<u64, shmbus::mem::ShmRegion> =
///     Publisher::create(&name, &BusOptions::new(64))?;
/// let mut subscriber = Subscriber::<u64>::open(&name, &OpenOptions::default().start(Start::Oldest))?;
/// publisher.publish(&1);
/// publisher.publish(&2);
/// assert_eq!(drain(&mut subscriber), [1, 2]);
/// # shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ShmRegion {
    ptr: NonNull<u8>,
    len: usize,
    file: OwnedFd,
    path: PathBuf,
}

impl std::fmt::Debug for ShmRegion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShmRegion")
            .field("path", &self.path)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
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

// Every method here is `#[doc(hidden)]`: the crate's own machinery, which
// the workspace's tests, benchmark and tools also call, not the user API (a
// user holds a `ShmRegion` only inside a handle that made it).
#[cfg(not(loom))]
impl ShmRegion {
    /// Creates a new file of `len` bytes with exactly `mode`, reserving its
    /// pages (`fallocate`) so that a full tmpfs is an error now and never a
    /// `SIGBUS` later, and maps it read-write, aligned to `align` (a power
    /// of two; see [`ShmRegion::map_aligned`]). `claim` runs on the file
    /// while it is still empty, before the reservation (the slow part for a
    /// large segment): whatever it marks the file with, a creator killed
    /// later leaves a file that says whose it is. Until `claim` returns the
    /// file is owner-only (`mode & 0o600`), so that `claim` may give it a
    /// group before the group bits of `mode` let that group in.
    #[doc(hidden)]
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
            // Owner only until `claim` (which may give the file its group)
            // has run: no other user opens it before its group is final.
            Mode::from_raw_mode(mode & 0o600),
        )?;
        let made = (|| -> io::Result<ShmRegion> {
            claim(file.as_fd())?;
            rustix::fs::fchmod(&file, Mode::from_raw_mode(mode))?;
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
    #[doc(hidden)]
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
    #[doc(hidden)]
    pub fn map(file: OwnedFd, path: &Path, len: usize, access: Access) -> io::Result<ShmRegion> {
        Self::map_aligned(file, path, len, access, 0)
    }

    /// As [`ShmRegion::map`], at an address that is a multiple of `align`
    /// (a power of two): a huge page is mapped whole only where the virtual
    /// address and the file offset agree modulo its size. An `align` no
    /// larger than the system page asks for nothing special.
    #[doc(hidden)]
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
    #[doc(hidden)]
    pub fn collapse_huge(
        &self,
        offset: usize,
        len: usize,
    ) -> Result<(), super::huge::HugePageError> {
        use super::huge::HugePageError;
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
    #[doc(hidden)]
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
    #[doc(hidden)]
    pub fn prefault(&self) {
        let page = rustix::param::page_size();
        let mut off = 0;
        while off < self.len {
            let _ = self.word(off).load(crate::sync::Ordering::Relaxed);
            off += page;
        }
    }

    /// Locks the mapping into RAM (`mlock`), so it is never paged out.
    #[doc(hidden)]
    pub fn lock_in_memory(&self) -> io::Result<()> {
        // SAFETY: the pointer and length describe exactly our own mapping.
        unsafe { rustix::mm::mlock(self.ptr.as_ptr().cast(), self.len)? };
        Ok(())
    }

    /// The mapped file.
    #[doc(hidden)]
    pub fn file(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }

    /// The path it was opened or created at.
    #[doc(hidden)]
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
        check_span(offset, count, 8, self.len);
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
    unsafe fn words_unchecked(&self, offset: usize, count: usize) -> &[AtomicU64] {
        #[cfg(debug_assertions)]
        check_span(offset, count, 8, self.len);
        // SAFETY: as in `words`, the bounds and alignment being the
        // caller's contract.
        unsafe {
            std::slice::from_raw_parts(self.ptr.as_ptr().add(offset).cast::<AtomicU64>(), count)
        }
    }
    #[inline]
    unsafe fn word32s_unchecked(&self, offset: usize, count: usize) -> &[AtomicU32] {
        #[cfg(debug_assertions)]
        check_span(offset, count, 4, self.len);
        // SAFETY: as in `word32s`, the bounds and alignment being the
        // caller's contract.
        unsafe {
            std::slice::from_raw_parts(self.ptr.as_ptr().add(offset).cast::<AtomicU32>(), count)
        }
    }
    #[inline]
    fn word32(&self, offset: usize) -> &AtomicU32 {
        check(offset, 4, 4, self.len);
        // SAFETY: atomic-word capability, as in `words` (4-aligned).
        unsafe { &*self.ptr.as_ptr().add(offset).cast::<AtomicU32>() }
    }
    #[inline]
    fn word32s(&self, offset: usize, count: usize) -> &[AtomicU32] {
        check_span(offset, count, 4, self.len);
        // SAFETY: atomic-word capability, as in `words` (4-aligned).
        unsafe {
            std::slice::from_raw_parts(self.ptr.as_ptr().add(offset).cast::<AtomicU32>(), count)
        }
    }
    #[inline]
    fn lock_held(&self, byte: u64) -> Option<bool> {
        crate::sys::lock::is_held(self.file(), byte).ok()
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
