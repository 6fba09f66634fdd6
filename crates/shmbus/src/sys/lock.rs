//! Liveness and exclusivity through open-file-description (OFD) byte locks.
//!
//! The kernel drops these locks when the last descriptor of the open file
//! description closes, which includes the process dying by any signal, so a
//! dead process never holds one. OFD locks (`F_OFD_SETLK`) rather than classic
//! POSIX record locks because a POSIX lock is dropped when the process closes
//! *any* descriptor of the file: a publisher that also opened a subscriber on
//! its own bus, then dropped it, would silently lose its exclusivity.
//!
//! OFD locks do not report the holder's pid (`F_OFD_GETLK` gives -1), so the
//! holder writes its pid into the control page; the lock says whether that
//! pid is still the holder. Which byte means what is in `wire::lock_byte`.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

fn flock_for(kind: libc::c_short, byte: u64) -> libc::flock {
    // SAFETY: `flock` is a plain C struct for which all-zero is valid.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = kind;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    fl.l_start = byte as libc::off_t;
    fl.l_len = 1;
    fl
}

/// Tries to take a lock on one byte of the file without waiting. `Ok(false)`
/// means another open file description holds a conflicting lock.
pub(crate) fn try_lock(fd: BorrowedFd<'_>, byte: u64, exclusive: bool) -> io::Result<bool> {
    let kind = if exclusive {
        libc::F_WRLCK
    } else {
        libc::F_RDLCK
    };
    let fl = flock_for(kind as libc::c_short, byte);
    // SAFETY: `fl` is a valid flock that lives across the call; `fd` is open.
    let rc = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_OFD_SETLK, &fl) };
    if rc == 0 {
        return Ok(true);
    }
    let err = io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::EAGAIN) | Some(libc::EACCES) => Ok(false),
        _ => Err(err),
    }
}

/// Whether any *other* open file description holds any lock on `byte`.
pub(crate) fn is_held(fd: BorrowedFd<'_>, byte: u64) -> io::Result<bool> {
    let mut fl = flock_for(libc::F_WRLCK as libc::c_short, byte);
    // SAFETY: `fl` is a valid, writable flock; `fd` is open.
    let rc = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_OFD_GETLK, &mut fl) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fl.l_type != libc::F_UNLCK as libc::c_short)
}

/// Drops this open file description's lock on one byte.
pub(crate) fn unlock(fd: BorrowedFd<'_>, byte: u64) -> io::Result<()> {
    let fl = flock_for(libc::F_UNLCK as libc::c_short, byte);
    // SAFETY: `fl` is a valid flock that lives across the call; `fd` is open.
    let rc = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_OFD_SETLK, &fl) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The inode of this process's pid namespace (`/proc/self/ns/pid`), or 0
/// where /proc cannot say. Two processes see each other's pids only in the
/// same namespace, so a pid recorded by one is checked by the other
/// ([`pid_gone`]) only if these agree.
pub(crate) fn pid_namespace() -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self/ns/pid").map_or(0, |m| m.ino())
}

/// Whether no process with this pid exists (`kill(pid, 0)` says `ESRCH`).
/// A pid reused by a new process reads as alive.
pub(crate) fn pid_gone(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return true;
    };
    if pid <= 0 {
        return true;
    }
    // SAFETY: signal 0 sends nothing; it only checks that the pid exists.
    let rc = unsafe { libc::kill(pid, 0) };
    rc != 0 && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}
