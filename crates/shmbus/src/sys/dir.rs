//! Removing a file by the identity that was checked, not by its name.
//!
//! `clean` and `remove` (as root, perhaps) decide that a file is a bus and
//! then unlink it. Between the two, anyone who can write the directory, or
//! any directory above it, could put a symlink or another file in its place.
//! So:
//! - the directory is opened one component at a time from `/` (or the
//!   current directory), each with `O_DIRECTORY | O_NOFOLLOW`: a symlink
//!   anywhere on the way is refused, and a rename of a parent after the
//!   walk cannot redirect us, because we hold the directory itself;
//! - the file is looked at and opened relative to that directory fd, never
//!   following a symlink;
//! - just before `unlinkat`, the name is `fstatat`ed again and must still be
//!   the inode (device, inode number) that was checked.
//!
//! The last step leaves a window of two system calls in which a writer of
//! the directory could swap the name again; it can swap in only a file it
//! could have removed itself (a sticky directory lets it rename only its own
//! entries), so the window gives it nothing.

use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat};

/// A file's identity: (device, inode number).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct FileId {
    pub(crate) dev: u64,
    pub(crate) ino: u64,
}

impl FileId {
    pub(crate) fn of(st: &Stat) -> FileId {
        FileId {
            dev: st.st_dev,
            ino: st.st_ino,
        }
    }

    /// Major and minor device numbers, as /proc/PID/maps prints them.
    pub(crate) fn major_minor(self) -> (u32, u32) {
        (
            rustix::fs::major(self.dev as _),
            rustix::fs::minor(self.dev as _),
        )
    }
}

/// Why a directory could not be opened without following a symlink.
#[derive(Debug)]
pub(crate) enum DirError {
    /// `component` (a prefix of the path) is a symbolic link.
    Symlink { component: PathBuf },
    /// `component` is not a directory.
    NotADirectory { component: PathBuf },
    /// Any other failure, at `component`.
    Io {
        component: PathBuf,
        source: io::Error,
    },
}

/// Opens `path` as a directory, one component at a time, following no
/// symlink (see the module docs).
pub(crate) fn open_dir(path: &Path) -> Result<OwnedFd, DirError> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let start = if path.is_absolute() { "/" } else { "." };
    let mut walked = PathBuf::from(start);
    let open = |at: Option<BorrowedFd<'_>>, name: &OsStr, walked: &Path| {
        let res = match at {
            Some(dir) => rustix::fs::openat(dir, name, flags, Mode::empty()),
            None => rustix::fs::open(name, flags, Mode::empty()),
        };
        res.map_err(|e| match e {
            rustix::io::Errno::LOOP => DirError::Symlink {
                component: walked.to_owned(),
            },
            rustix::io::Errno::NOTDIR => DirError::NotADirectory {
                component: walked.to_owned(),
            },
            e => DirError::Io {
                component: walked.to_owned(),
                source: e.into(),
            },
        })
    };
    let mut fd = open(None, OsStr::new(start), &walked)?;
    for c in path.components() {
        let name = match c {
            Component::RootDir | Component::CurDir | Component::Prefix(_) => continue,
            Component::ParentDir => OsStr::new(".."),
            Component::Normal(name) => name,
        };
        walked.push(name);
        fd = open(Some(fd.as_fd()), name, &walked)?;
    }
    Ok(fd)
}

/// A path's directory and final name; `None` for a path that names no file
/// (`/`, `..`, empty).
pub(crate) fn split(path: &Path) -> Option<(&Path, &OsStr)> {
    let name = path.file_name()?;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    Some((parent, name))
}

/// `fstatat` without following a symlink.
pub(crate) fn stat_at(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<Stat> {
    Ok(rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?)
}

/// Whether `st` describes a regular file.
pub(crate) fn is_regular(st: &Stat) -> bool {
    FileType::from_raw_mode(st.st_mode) == FileType::RegularFile
}

/// Opens the regular file `name` in `dir` (read-write or read-only) without
/// following a symlink or waiting on a FIFO, and checks that it is `expect`,
/// the file an earlier `stat_at` saw.
pub(crate) fn open_at(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    write: bool,
    expect: FileId,
) -> io::Result<OwnedFd> {
    let rw = if write { OFlags::RDWR } else { OFlags::RDONLY };
    let flags = rw | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(dir, name, flags, Mode::empty())?;
    let st = rustix::fs::fstat(&fd)?;
    if !is_regular(&st) || FileId::of(&st) != expect {
        // Replaced since it was looked at: as if it had gone.
        return Err(io::Error::from_raw_os_error(libc::ENOENT));
    }
    Ok(fd)
}

/// Why [`unlink_checked`] removed nothing.
#[derive(Debug)]
pub(crate) enum UnlinkError {
    /// The name now names another file (or nothing).
    Replaced,
    /// `unlinkat` failed.
    Io(io::Error),
}

/// Removes `name` from `dir` if it still names `id`.
pub(crate) fn unlink_checked(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    id: FileId,
) -> Result<(), UnlinkError> {
    #[cfg(feature = "test-hooks")]
    hook::before_unlink(name);
    match stat_at(dir, name) {
        Ok(st) if FileId::of(&st) == id => {}
        Ok(_) => return Err(UnlinkError::Replaced),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Err(UnlinkError::Replaced),
        Err(e) => return Err(UnlinkError::Io(e)),
    }
    rustix::fs::unlinkat(dir, name, AtFlags::empty()).map_err(|e| UnlinkError::Io(e.into()))
}

/// Test only: a function `clean` and `remove` call just before they re-check
/// and unlink a file, holding whatever locks they hold, so a test can act
/// in that window deterministically.
#[cfg(feature = "test-hooks")]
pub mod hook {
    use std::ffi::OsStr;
    use std::sync::Mutex;

    static BEFORE_UNLINK: Mutex<Option<fn(&OsStr)>> = Mutex::new(None);

    /// Sets (or with `None`, clears) the hook.
    pub fn set_before_unlink(hook: Option<fn(&OsStr)>) {
        *BEFORE_UNLINK.lock().unwrap_or_else(|e| e.into_inner()) = hook;
    }

    pub(crate) fn before_unlink(name: &OsStr) {
        let hook = *BEFORE_UNLINK.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(hook) = hook {
            hook(name);
        }
    }
}
