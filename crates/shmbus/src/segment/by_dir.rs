//! A shmbus file found by directory (for `remove`, `stat::list` and
//! `stat::clean`): opened relative to a directory fd, never through a
//! symlink, and removed only if it is still the file that was checked.

use std::os::fd::AsFd;
use std::path::PathBuf;

use crate::error::OpenError;
use crate::sys::{dir, resolve};
use crate::wire::{MAGIC, MAGIC_BUILDING};

/// Why `name` in a directory is not a shmbus file this process could open.
pub(crate) enum BusAt {
    /// A symbolic link (never followed).
    Symlink,
    /// A directory, FIFO, device or socket.
    NotRegular,
    /// A regular file without shmbus's magic (finished or half-built); 0 if
    /// it is shorter than 8 bytes.
    BadMagic(u64),
    /// A system call failed.
    Io {
        step: &'static str,
        source: std::io::Error,
    },
}

/// Opens the shmbus file `name` in `dir` (read-write if `write`) without
/// following a symlink or opening anything but a regular file, and checks
/// its magic. Returns the file and its identity, for a later
/// `dir::unlink_checked`. The one way `remove` and `stat::list`/`clean`
/// look at a file by directory.
pub(crate) fn open_bus_at(
    dir: std::os::fd::BorrowedFd<'_>,
    name: &std::ffi::OsStr,
    write: bool,
) -> Result<(dir::FileId, std::os::fd::OwnedFd), BusAt> {
    let io = |step| move |source| BusAt::Io { step, source };
    let st = dir::stat_at(dir, name).map_err(io("stat"))?;
    if rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Symlink {
        return Err(BusAt::Symlink);
    }
    if !dir::is_regular(&st) {
        return Err(BusAt::NotRegular);
    }
    let id = dir::FileId::of(&st);
    let file = dir::open_at(dir, name, write, id).map_err(io("open"))?;
    let mut buf = [0u8; 8];
    let magic = match rustix::io::pread(&file, &mut buf, 0) {
        Ok(8) => u64::from_le_bytes(buf),
        Ok(_) => 0,
        Err(e) => return Err(io("read")(e.into())),
    };
    if magic != MAGIC && magic != MAGIC_BUILDING {
        return Err(BusAt::BadMagic(magic));
    }
    Ok((id, file))
}

/// A directory on the way to a bus that could not be opened, as an
/// opener's error.
fn open_error(e: dir::DirError) -> OpenError {
    use dir::DirError;
    match e {
        DirError::Symlink { component } => OpenError::Symlink { path: component },
        DirError::NotADirectory { component } => OpenError::NotAFile { path: component },
        DirError::Io { component, source } => OpenError::from_open(&component, source),
    }
}

/// Removes a bus's name from the file system. Processes that have it mapped
/// keep working; nobody new can open it. Refuses a file that does not start
/// with shmbus's magic (finished or half-built), so it deletes only buses,
/// and removes the file it checked, never what a symlink or a renamed
/// directory puts in its place (see `dir`).
///
/// # Errors
/// [`OpenError::NotFound`] (also if the name was given to another file
/// between the check and the unlink: that file is left alone),
/// [`OpenError::Symlink`] (the bus's name, or a
/// directory on the way, is a symbolic link), [`OpenError::NotAFile`],
/// [`OpenError::BadMagic`], [`OpenError::PermissionDenied`], or
/// [`OpenError::Io`] for any other failure; [`OpenError::Name`] for a
/// name that is no bus name.
///
/// # Examples
/// ```
/// use shmbus::{BusOptions, OpenError, OpenOptions, Publisher, Subscriber};
/// # let name = format!("/dev/shm/shmbus-doc-remove-{}", std::process::id());
/// let mut publisher = Publisher::<u64>::create(&name, &BusOptions::new(64))?;
/// let removed = shmbus::remove(&name)?;
/// assert_eq!(removed, std::path::Path::new(&name));
/// publisher.publish(&1); // still mapped, still works
/// let err = Subscriber::<u64>::open(&name, &OpenOptions::default()).err();
/// assert!(matches!(err, Some(OpenError::NotFound { .. }))); // but gone by name
/// assert!(matches!(shmbus::remove(&name), Err(OpenError::NotFound { .. })));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn remove(name: &str) -> Result<PathBuf, OpenError> {
    let path = resolve(name)?;
    let Some((parent, file_name)) = dir::split(&path) else {
        return Err(OpenError::NotAFile { path });
    };
    let dir = dir::open_dir(parent).map_err(open_error)?;
    let (id, _file) = open_bus_at(dir.as_fd(), file_name, false).map_err(|e| match e {
        BusAt::Symlink => OpenError::Symlink { path: path.clone() },
        BusAt::NotRegular => OpenError::NotAFile { path: path.clone() },
        BusAt::BadMagic(found) => OpenError::BadMagic {
            path: path.clone(),
            found,
            expected: MAGIC,
        },
        BusAt::Io { source, .. } => OpenError::from_open(&path, source),
    })?;
    match dir::unlink_checked(dir.as_fd(), file_name, id) {
        Ok(()) => Ok(path),
        Err(dir::UnlinkError::Replaced) => Err(OpenError::NotFound { path }),
        Err(dir::UnlinkError::Io(e)) => Err(OpenError::from_open(&path, e)),
    }
}
