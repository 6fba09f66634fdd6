//! Opening a segment: no symlinks, `fstat`, wait for its creator to finish,
//! map exactly what `fstat` said, validate the header, take the attach lock
//! (see `stat::clean`), set page protections for the role.

use std::path::Path;
use std::time::{Duration, Instant};

use super::Role;
use crate::error::OpenError;
use crate::mem::{Access, Region, ShmRegion};
use crate::options::OpenOptions;
use crate::sync::Ordering;
use crate::sys::{lock, resolve};
use crate::wire::{Header, Kind, MAGIC, MAGIC_BUILDING, TypeFingerprint, header, lock_byte};

fn read_magic(file: &std::os::fd::OwnedFd) -> u64 {
    let mut buf = [0u8; 8];
    match rustix::io::pread(file, &mut buf, 0) {
        Ok(8) => u64::from_le_bytes(buf),
        _ => 0,
    }
}

/// The creator's page size, read before mapping so that a huge-page bus is
/// mapped aligned to its pages. Only a hint: `Header::read` validates the
/// field once mapped; a value no sane creator writes asks for no alignment.
fn read_page_size(file: &std::os::fd::OwnedFd) -> usize {
    let mut buf = [0u8; 4];
    match rustix::io::pread(file, &mut buf, header::PAGE_SIZE as u64) {
        Ok(4) => {
            let page = u32::from_le_bytes(buf) as usize;
            if page.is_power_of_two() && page <= 1 << 30 {
                page
            } else {
                0
            }
        }
        _ => 0,
    }
}

/// Opens, waits for initialization, maps and validates a segment. A file
/// that `clean` unlinked while we opened it is let go and the name opened
/// again (a few times: each retry needs another create and clean).
pub(crate) fn open_region(
    path: &Path,
    role: Role,
    init_timeout: Duration,
) -> Result<(ShmRegion, Header), OpenError> {
    for _ in 0..3 {
        if let Some(opened) = open_region_once(path, role, init_timeout)? {
            return Ok(opened);
        }
    }
    Err(OpenError::NotFound {
        path: path.to_owned(),
    })
}

fn open_region_once(
    path: &Path,
    role: Role,
    init_timeout: Duration,
) -> Result<Option<(ShmRegion, Header)>, OpenError> {
    let access = if role == Role::Inspect {
        Access::ReadOnly
    } else {
        Access::ReadWrite
    };
    let start = Instant::now();
    let (file, len) = loop {
        let (file, len) =
            ShmRegion::open_file(path, access).map_err(|e| OpenError::from_open(path, e))?;
        // `create` first writes the 8 bytes of `MAGIC_BUILDING` (one
        // `pwrite`), then reserves the whole length, so a file of 1 to 7
        // bytes is no bus being built: it is cut short.
        if (1..8).contains(&len) {
            return Err(OpenError::Truncated {
                path: path.to_owned(),
                len,
                expected: header::END as u64,
            });
        }
        let magic = if len >= 8 { read_magic(&file) } else { 0 };
        if magic == MAGIC {
            break (file, len);
        }
        if magic != 0 && magic != MAGIC_BUILDING {
            return Err(OpenError::BadMagic {
                path: path.to_owned(),
                found: magic,
                expected: MAGIC,
            });
        }
        if start.elapsed() >= init_timeout {
            return Err(OpenError::NotInitialized {
                path: path.to_owned(),
                waited: start.elapsed(),
            });
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    if len < header::END as u64 {
        return Err(OpenError::Truncated {
            path: path.to_owned(),
            len,
            expected: header::END as u64,
        });
    }
    let io = |what| move |source| OpenError::Io { what, source };
    let map_access = if role == Role::Publisher {
        Access::ReadWrite
    } else {
        Access::ReadOnly
    };
    let align = read_page_size(&file);
    let region =
        ShmRegion::map_aligned(file, path, len as usize, map_access, align).map_err(io("mmap"))?;
    let header = Header::read(&region, len).map_err(|e| e.at(path))?;
    let page = header.page_size as usize;
    match role {
        Role::Publisher => region
            .protect(0, page, Access::ReadOnly)
            .map_err(io("mprotect"))?,
        Role::Subscriber => {
            let control = header.control_offset as usize;
            let len = header.data_offset as usize - control;
            region
                .protect(control, len, Access::ReadWrite)
                .map_err(io("mprotect"))?
        }
        Role::Inspect => {}
    }
    if role != Role::Inspect {
        match attach_lock(&region, path, start, init_timeout)? {
            Linked::Yes => {}
            // `clean` removed it while we opened it: the name may already
            // be a new bus, or nothing (then `NotFound`).
            Linked::No => return Ok(None),
        }
    }
    Ok(Some((region, header)))
}

/// Whether the file an opener locked still has its name.
enum Linked {
    Yes,
    No,
}

/// Takes the shared attach lock, then checks that the file is still linked.
/// `clean` holds the lock exclusively from its decision until after its
/// unlink, so once we hold it shared, the file can no longer be removed by
/// `clean`, and `st_nlink == 0` says it already was: we must not publish
/// into (or wait on) an orphan nobody else can find. The lock is retried
/// until `init_timeout`; `clean` holds it for a moment only.
fn attach_lock(
    region: &ShmRegion,
    path: &Path,
    start: Instant,
    init_timeout: Duration,
) -> Result<Linked, OpenError> {
    let io = |what| move |source| OpenError::Io { what, source };
    while !lock::try_lock(region.file(), lock_byte::ATTACHED, false).map_err(io("lock"))? {
        if start.elapsed() >= init_timeout {
            return Err(OpenError::Locked {
                path: path.to_owned(),
                waited: start.elapsed(),
            });
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let st = rustix::fs::fstat(region.file()).map_err(|e| io("fstat")(e.into()))?;
    Ok(if st.st_nlink == 0 {
        Linked::No
    } else {
        Linked::Yes
    })
}

fn finish_open(region: &ShmRegion, opts: &OpenOptions) -> Result<(), OpenError> {
    if opts.prefault {
        region.prefault();
    }
    if opts.mlock {
        region.lock_in_memory().map_err(OpenError::Mlock)?;
    }
    Ok(())
}

/// Refuses a file another user owns, or one granting more than `max_mode`
/// (`OpenOptions::only_own`). `fstat` of the mapped descriptor: what is
/// judged is what we mapped, whatever the name points at now.
fn check_own(region: &ShmRegion, path: &Path, max_mode: u32) -> Result<(), OpenError> {
    let st = rustix::fs::fstat(region.file()).map_err(|e| OpenError::Io {
        what: "fstat",
        source: e.into(),
    })?;
    let uid = rustix::process::geteuid().as_raw();
    let mode = st.st_mode & 0o7777;
    if st.st_uid == uid && mode & !max_mode == 0 {
        return Ok(());
    }
    Err(OpenError::NotOwn {
        path: path.to_owned(),
        owner: st.st_uid,
        mode,
        uid,
        max_mode,
    })
}

/// Opens a segment of `kind` (and message type `msg`, if given) for `role`.
pub(crate) fn open_checked(
    name: &str,
    role: Role,
    kind: Kind,
    msg: Option<&TypeFingerprint>,
    opts: &OpenOptions,
) -> Result<(ShmRegion, Header), OpenError> {
    let path = resolve(name)?;
    let (region, header) = open_region(&path, role, opts.init_timeout)?;
    if let Some(max_mode) = opts.only_own {
        check_own(&region, &path, max_mode)?;
    }
    header.expect(kind, msg)?;
    finish_open(&region, opts)?;
    Ok((region, header))
}

/// Takes the exclusive lock `byte` and writes our pid at `pid_field`; if a
/// live process holds it, returns that process's pid (from `pid_field`).
pub(crate) fn take_role(region: &ShmRegion, byte: u64, pid_field: usize) -> Result<(), u32> {
    let locked = lock::try_lock(region.file(), byte, true).unwrap_or(false);
    if !locked {
        return Err(region.word32(pid_field).load(Ordering::Relaxed));
    }
    region
        .word32(pid_field)
        .store(std::process::id(), Ordering::Relaxed);
    Ok(())
}
