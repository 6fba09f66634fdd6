//! Creating a segment: the file, its pages, the header, the kind's own
//! fields, then the magic.

use crate::error::{CreateError, HugePageError};
use crate::mem::{Access, Region, ShmRegion};
use crate::options::FileOptions;
use crate::sync::Ordering;
use crate::sys::{lock, resolve};
use crate::wire::{Header, MAGIC_BUILDING, control, flags, header, lock_byte};

/// The page size a new segment named `name` is laid out with, and the
/// header flags that go with it: the system's page, or (with huge pages,
/// once the system is known able to give them) the huge page size and
/// `HUGE_PAGES`.
pub(crate) fn layout_page(name: &str, file: &FileOptions) -> Result<(u64, u32), CreateError> {
    let Some(huge) = file.huge else {
        return Ok((rustix::param::page_size() as u64, 0));
    };
    let path = resolve(name)?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    let fs = rustix::fs::statfs(dir).map_err(|e| CreateError::from_create(&path, 0, e.into()))?;
    Ok((huge.page_size(&path, &fs)?, flags::HUGE_PAGES))
}

/// Creates the file and builds the segment: header, `init` for the kind's
/// own fields, then the magic. The creator holds the writer's lock (byte
/// `PUBLISHER`) from before the first byte is written, so a dead creator is
/// always recognisable. Removes the file again if any step fails.
pub(crate) fn create_region(
    name: &str,
    header: &Header,
    opts: &FileOptions,
    init: impl FnOnce(&ShmRegion),
) -> Result<ShmRegion, CreateError> {
    let path = resolve(name)?;
    let len = header.total_len;
    let huge = header.flags & flags::HUGE_PAGES != 0;
    if opts.huge.is_some() && !huge {
        // A caller that built its header without `layout_page`.
        return Err(HugePageError::Unsupported {
            what: if header.journal.is_some() {
                "a journaled bus"
            } else {
                "this kind of segment"
            },
        }
        .into());
    }
    // Locked and marked before its pages are reserved, so that a creator
    // killed at any later point leaves a file `clean` knows for a dead
    // shmbus creator's (found by tests/chaos.rs: a large segment's
    // reservation was a window in which a kill left an anonymous file).
    let marked = std::cell::Cell::new(false);
    let group_refused = std::cell::Cell::new(false);
    let claim = |file: std::os::fd::BorrowedFd<'_>| {
        // Before the mode's group bits are set (ShmRegion::create): no
        // member of the creator's own group can open it meanwhile.
        if let Some(gid) = opts.group {
            let gid = rustix::process::Gid::from_raw(gid);
            rustix::fs::fchown(file, None, Some(gid)).inspect_err(|_| group_refused.set(true))?;
        }
        if !lock::try_lock(file, lock_byte::PUBLISHER, true)?
            || !lock::try_lock(file, lock_byte::ATTACHED, false)?
        {
            return Err(std::io::Error::other("new file already locked"));
        }
        let mark = MAGIC_BUILDING.to_le_bytes();
        match rustix::io::pwrite(file, &mark, 0) {
            Ok(8) => {
                marked.set(true);
                Ok(())
            }
            // A file system without write(2) (hugetlbfs): the mark goes in
            // through the mapping below instead, a moment later.
            Err(rustix::io::Errno::INVAL) => Ok(()),
            Ok(_) => Err(std::io::Error::other("short write of the magic")),
            Err(e) => Err(e.into()),
        }
    };
    let region = ShmRegion::create(
        &path,
        len as usize,
        opts.mode,
        header.page_size as usize,
        claim,
    )
    .map_err(|e| match (opts.huge, e.raw_os_error()) {
        _ if group_refused.get() => CreateError::Group {
            path: path.clone(),
            gid: opts.group.unwrap_or_default(),
            source: e,
        },
        (Some(crate::mem::HugePages::Hugetlbfs), Some(libc::ENOSPC | libc::ENOMEM)) => {
            crate::mem::huge::none_free(&path, len, header.page_size).into()
        }
        _ => CreateError::from_create(&path, len, e),
    })?;
    let built = (|| {
        let io = |what| move |source| CreateError::Io { what, source };
        if !marked.get() {
            region
                .word(header::MAGIC)
                .store(MAGIC_BUILDING, Ordering::Relaxed);
        }
        header.write(&region);
        // The writer's pid sits at the same offset for every kind.
        let pid_field = header.control_offset as usize + control::PUBLISHER_PID;
        region
            .word32(pid_field)
            .store(std::process::id(), Ordering::Relaxed);
        init(&region);
        Header::publish_magic(&region);
        region
            .protect(0, header.page_size as usize, Access::ReadOnly)
            .map_err(io("mprotect"))?;
        if opts.huge == Some(crate::mem::HugePages::Transparent) {
            let data = header.data_offset as usize;
            region.collapse_huge(data, len as usize - data)?;
        }
        if opts.prefault {
            region.prefault();
        }
        if opts.mlock {
            region.lock_in_memory().map_err(CreateError::Mlock)?;
        }
        Ok(())
    })();
    match built {
        Ok(()) => Ok(region),
        Err(e) => {
            let _ = crate::mem::shm::unlink(&path);
            Err(e)
        }
    }
}
