//! The walk over a directory that [`list`](fn@super::list) and
//! [`clean`](fn@super::clean) share: its names, each shmbus file among them
//! opened by directory fd, the liveness-lock probe, and [`ScanError`].

use std::ffi::OsStr;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::segment::{BusAt, open_bus_at};
use crate::sys::dir::{DirError, FileId};
use crate::sys::lock;
use crate::wire::lock_byte;

/// A shmbus file found in a directory, open.
pub(super) struct Found {
    pub(super) path: PathBuf,
    pub(super) name: std::ffi::OsString,
    pub(super) id: FileId,
    pub(super) file: OwnedFd,
}

/// Why one directory entry is not a [`Found`].
pub(super) enum Skip {
    /// Not a shmbus file, gone, or not this user's to read: not listed.
    NotABus,
    /// A regular file this user may not open (`EACCES`, `EPERM`): whether
    /// it is a bus cannot be told. Not listed; `clean` may say so.
    Denied {
        path: PathBuf,
        /// Its owner's uid (from its `stat`, which needs no permission on
        /// the file).
        uid: u32,
        source: std::io::Error,
    },
    /// A real failure (`EMFILE`, `ENOMEM`, `EIO`...): said as such.
    Failed(ScanError),
}

/// Looks at `name` in `dir` (read-only): a shmbus file, not a bus, or a
/// real failure.
pub(super) fn look_at(dir: BorrowedFd<'_>, dir_path: &Path, name: &OsStr) -> Result<Found, Skip> {
    let path = dir_path.join(name);
    match open_bus_at(dir, name, false) {
        Ok((id, file)) => Ok(Found {
            path,
            name: name.to_owned(),
            id,
            file,
        }),
        Err(BusAt::Io { step, source }) if !not_ours(&source) => {
            Err(Skip::Failed(ScanError { path, step, source }))
        }
        // Only a regular file (stat it was) gets as far as the open.
        Err(BusAt::Io {
            step: "open",
            source,
        }) if matches!(source.raw_os_error(), Some(libc::EACCES | libc::EPERM)) => {
            match crate::sys::dir::stat_at(dir, name) {
                Ok(st) => Err(Skip::Denied {
                    path,
                    uid: st.st_uid,
                    source,
                }),
                Err(_) => Err(Skip::NotABus),
            }
        }
        Err(_) => Err(Skip::NotABus),
    }
}

/// Errors that say "not this user's bus to see" (gone meanwhile, not
/// readable, replaced by a symlink or a FIFO), as opposed to a failure
/// such as `EMFILE`, `ENOMEM` or `EIO`.
fn not_ours(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOENT | libc::EACCES | libc::EPERM | libc::ELOOP | libc::ENXIO)
    )
}

/// The names in `dir`, sorted.
pub(super) fn names(
    dir: BorrowedFd<'_>,
    dir_path: &Path,
) -> Result<Vec<std::ffi::OsString>, ScanError> {
    let failed = |source: rustix::io::Errno| ScanError {
        path: dir_path.to_owned(),
        step: "read the directory",
        source: source.into(),
    };
    let mut entries = rustix::fs::Dir::read_from(dir).map_err(failed)?;
    let mut names = Vec::new();
    while let Some(entry) = entries.read() {
        let entry = entry.map_err(failed)?;
        let name = entry.file_name().to_bytes();
        if name != b"." && name != b".." {
            names.push(OsStr::from_bytes(name).to_owned());
        }
    }
    names.sort();
    Ok(names)
}

/// Whether another process holds the publisher or attached lock; an error
/// from the probe counts as held (when in doubt, in use).
pub(super) fn locked(file: BorrowedFd<'_>) -> bool {
    let held = |byte| lock::is_held(file, byte).unwrap_or(true);
    held(lock_byte::PUBLISHER) || held(lock_byte::ATTACHED)
}

/// A directory that could not be opened, as a listing's error.
pub(super) fn scan_error(e: DirError) -> ScanError {
    let step = "open the directory";
    let (path, source) = match e {
        DirError::Symlink { component } => (
            component,
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "it is a symbolic link, expected a directory (never followed)",
            ),
        ),
        DirError::NotADirectory { component } => {
            (component, std::io::Error::from_raw_os_error(libc::ENOTDIR))
        }
        DirError::Io { component, source } => (component, source),
    };
    ScanError { path, step, source }
}

/// Why `stat::list` or `stat::clean` could not look at a directory or a file
/// in it: the step, the path, and the system's answer. Files that are not
/// buses, or that this user may not read, are no error: they are skipped.
///
/// # Examples
/// ```
/// let missing = format!("/dev/shm/shmbus-doc-scanerror-{}/nowhere", std::process::id());
/// let err = shmbus::stat::list(std::path::Path::new(&missing)).unwrap_err();
/// assert_eq!(err.step, "open the directory");
/// assert_eq!(err.source.kind(), std::io::ErrorKind::NotFound);
/// ```
#[derive(Debug, thiserror::Error)]
#[error("{path}: cannot {step}: {source}")]
pub struct ScanError {
    /// The directory or file.
    pub path: PathBuf,
    /// What was being done (`open`, `read the directory`, ...).
    pub step: &'static str,
    /// The system's answer (`EMFILE`, `ENOMEM`, `EIO`, ...).
    pub source: std::io::Error,
}
