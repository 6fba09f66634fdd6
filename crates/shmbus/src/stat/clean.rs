//! Removing abandoned buses ([`clean`], `shmbus clean`): each file decided
//! and removed under its own liveness locks, atomically with respect to
//! processes that attach.

use std::os::fd::{AsFd, BorrowedFd};
use std::path::{Path, PathBuf};

use super::proc::Mappers;
use super::scan::{Found, ScanError, Skip, locked, look_at, names, scan_error};
use crate::sys::dir::{self, UnlinkError};
use crate::sys::lock;
use crate::wire::lock_byte;

/// What [`clean`] did with one abandoned shmbus file.
///
/// # Examples
/// ```
/// use shmbus::{BusOptions, Publisher};
/// // A directory of our own, so that only our buses are in it.
/// let dir = std::path::PathBuf::from(format!("/dev/shm/shmbus-doc-cleaned-{}", std::process::id()));
/// std::fs::create_dir(&dir)?;
/// let bus = dir.join("ticks");
/// let name = bus.to_str().expect("a UTF-8 path");
/// drop(Publisher::<u64>::create(name, &BusOptions::new(64))?); // abandoned
/// let cleaned = shmbus::stat::clean(&dir, false)?;
/// assert_eq!(cleaned.len(), 1);
/// assert_eq!(cleaned[0].path, bus);
/// assert!(cleaned[0].result.is_ok());
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Cleaned {
    /// The file.
    pub path: PathBuf,
    /// `Ok` if it was removed (in a dry run: would be), or why not.
    pub result: Result<(), CleanError>,
}

/// How many files `clean` keeps locked at once while it reads
/// /proc/*/maps for them: one pass over /proc per batch, not per file.
const CLEAN_BATCH: usize = 64;

/// Removes (or with `dry_run`, only names) every shmbus file in `dir` that
/// no live process uses: no publisher, no attached process, no mapping.
///
/// Each file is decided and removed atomically with respect to processes
/// that attach: `clean` takes the file's publisher and attach locks
/// *exclusively*, checks /proc/*/maps while holding them, and unlinks the
/// file (by directory fd, after checking the name still names the same
/// inode) before letting go. An opener that gets its lock after that finds
/// the file unlinked and opens the name again (see `segment`). A dry run
/// only probes the locks.
///
/// Files in use are left out of the result. A file that could not be
/// removed (another user's in a sticky directory, say) is reported with
/// its error, and the rest are still cleaned. So is a file this user
/// could remove but may not open ([`CleanError::Unreadable`]): it is left
/// alone, as whether a process uses it cannot be told.
///
/// # Errors
/// [`ScanError`] if the directory itself cannot be opened (missing, a
/// symbolic link on the way, not a directory) or read. What fails for one
/// file is in its [`Cleaned::result`] instead.
///
/// # Examples
/// ```
/// use shmbus::{BusOptions, Publisher};
/// // A directory of our own, so that only our buses are in it.
/// let dir = std::path::PathBuf::from(format!("/dev/shm/shmbus-doc-clean-{}", std::process::id()));
/// std::fs::create_dir(&dir)?;
/// let bus = dir.join("ticks");
/// let name = bus.to_str().expect("a UTF-8 path");
/// let live = dir.join("live");
/// let _publisher = Publisher::<u64>::create(live.to_str().expect("UTF-8"), &BusOptions::new(64))?;
/// drop(Publisher::<u64>::create(name, &BusOptions::new(64))?); // abandoned
///
/// let would = shmbus::stat::clean(&dir, true)?; // a dry run removes nothing
/// assert_eq!(would.iter().map(|c| &c.path).collect::<Vec<_>>(), [&bus]);
/// assert!(bus.exists());
///
/// let removed = shmbus::stat::clean(&dir, false)?;
/// assert_eq!(removed.iter().map(|c| &c.path).collect::<Vec<_>>(), [&bus]);
/// assert!(!bus.exists() && live.exists()); // the live one is left alone
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn clean(dir: &Path, dry_run: bool) -> Result<Vec<Cleaned>, ScanError> {
    let dir_fd = dir::open_dir(dir).map_err(scan_error)?;
    let may_remove = removable_by_us(dir_fd.as_fd());
    let mut out = Vec::new();
    let mut batch = Vec::new();
    for name in names(dir_fd.as_fd(), dir)? {
        let mut found = match look_at(dir_fd.as_fd(), dir, &name) {
            Ok(f) => f,
            Err(Skip::NotABus) => continue,
            // A file this user could remove but may not open (a team
            // member's private bus in the team's directory): said, as it
            // may be an abandoned bus left behind. Elsewhere (another
            // user's file in a sticky /dev/shm) it is none of ours.
            Err(Skip::Denied { path, uid, source }) => {
                if may_remove(uid) {
                    out.push(Cleaned {
                        result: Err(CleanError::Unreadable {
                            path: path.clone(),
                            source,
                        }),
                        path,
                    });
                }
                continue;
            }
            Err(Skip::Failed(e)) => {
                out.push(Cleaned {
                    path: e.path.clone(),
                    result: Err(CleanError::Io {
                        path: e.path,
                        step: e.step,
                        source: e.source,
                    }),
                });
                continue;
            }
        };
        let free = if dry_run {
            !locked(found.file.as_fd())
        } else {
            // Write locks need a read-write descriptor: a bus this user may
            // read but not write cannot be locked, so cannot be removed
            // safely; said if it is dead, skipped if in use.
            match dir::open_at(dir_fd.as_fd(), &name, true, found.id) {
                Ok(rw) => {
                    found.file = rw;
                    lock_exclusively(found.file.as_fd())
                }
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => false,
                Err(source) => {
                    if !locked(found.file.as_fd()) {
                        out.push(Cleaned {
                            result: Err(CleanError::Io {
                                path: found.path.clone(),
                                step: "open it read-write to lock it",
                                source,
                            }),
                            path: found.path,
                        });
                    }
                    continue;
                }
            }
        };
        if free {
            batch.push(found);
        }
        if batch.len() == CLEAN_BATCH {
            remove_batch(dir_fd.as_fd(), &mut batch, dry_run, &mut out);
        }
    }
    remove_batch(dir_fd.as_fd(), &mut batch, dry_run, &mut out);
    Ok(out)
}

/// Whether this process may remove a file of owner `uid` from `dir`: it
/// may write and search the directory, and the directory is not sticky or
/// is its own, or the file is.
fn removable_by_us(dir: BorrowedFd<'_>) -> impl Fn(u32) -> bool + use<> {
    use rustix::fs::{Access, AtFlags};
    let euid = rustix::process::geteuid().as_raw();
    let writable = rustix::fs::accessat(
        dir,
        ".",
        Access::WRITE_OK | Access::EXEC_OK,
        AtFlags::EACCESS,
    )
    .is_ok();
    let (sticky, owner) = rustix::fs::fstat(dir).map_or((true, u32::MAX), |st| {
        (st.st_mode & libc::S_ISVTX != 0, st.st_uid)
    });
    move |uid| writable && (!sticky || owner == euid || uid == euid)
}

/// Takes both liveness locks exclusively: only a file nobody has attached
/// to (and nobody is creating) can be had this way.
fn lock_exclusively(file: BorrowedFd<'_>) -> bool {
    let take = |byte| lock::try_lock(file, byte, true).unwrap_or(false);
    take(lock_byte::PUBLISHER) && take(lock_byte::ATTACHED)
}

/// Checks the batch's mappings (one pass over /proc) and removes the files
/// nobody maps, still holding their locks; drops the batch, which releases
/// them.
fn remove_batch(
    dir: BorrowedFd<'_>,
    batch: &mut Vec<Found>,
    dry_run: bool,
    out: &mut Vec<Cleaned>,
) {
    if batch.is_empty() {
        return;
    }
    let maps = Mappers::scan();
    for f in batch.drain(..) {
        if !maps.of(f.id).is_empty() {
            continue;
        }
        let result = if dry_run {
            Ok(())
        } else {
            dir::unlink_checked(dir, &f.name, f.id).map_err(|e| match e {
                UnlinkError::Replaced => CleanError::Replaced {
                    path: f.path.clone(),
                },
                UnlinkError::Io(source) => CleanError::Io {
                    path: f.path.clone(),
                    step: "unlink",
                    source,
                },
            })
        };
        out.push(Cleaned {
            path: f.path,
            result,
        });
    }
}

/// Why `stat::clean` did not remove one abandoned bus.
///
/// # Examples
/// ```
/// use shmbus::stat::CleanError;
/// use shmbus::{BusOptions, Publisher};
/// // A directory of our own, so that only our buses are in it.
/// let dir = std::path::PathBuf::from(format!("/dev/shm/shmbus-doc-cleanerror-{}", std::process::id()));
/// std::fs::create_dir(&dir)?;
/// let bus = dir.join("ticks");
/// let name = bus.to_str().expect("a UTF-8 path");
/// drop(Publisher::<u64>::create(name, &BusOptions::new(64))?); // abandoned
/// for cleaned in shmbus::stat::clean(&dir, false)? {
///     match cleaned.result {
///         Ok(()) => assert_eq!(cleaned.path, bus),
///         Err(CleanError::Replaced { path }) => eprintln!("{}: replaced, left alone", path.display()),
///         Err(CleanError::Io { path, step, source }) => {
///             eprintln!("{}: cannot {step}: {source}", path.display())
///         }
///         Err(other) => eprintln!("{other}"), // more reasons may come
///     }
/// }
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CleanError {
    /// A system call failed (`unlink` refused by a sticky directory,
    /// `open` for the lock refused by the file's mode, `EMFILE`, ...).
    #[error("{path}: cannot {step}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The step that failed.
        step: &'static str,
        /// The system's answer.
        source: std::io::Error,
    },
    /// The name was given to another file between the check and the
    /// removal; the new file is left alone.
    #[error(
        "{path}: replaced by another file while being checked, expected the bus that was checked; not removed"
    )]
    Replaced {
        /// The name.
        path: PathBuf,
    },
    /// A file this user could remove from the directory but may not open
    /// (a team member's bus of mode 0600 in the team's directory), so
    /// whether it is an abandoned bus cannot be told; left alone. Only
    /// where the directory would let this user remove it: another user's
    /// file in a sticky directory (as /dev/shm is) is not said.
    #[error("{path}: cannot open it to tell whether it is an abandoned bus ({source}); left alone")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// The system's answer (`EACCES`, `EPERM`).
        source: std::io::Error,
    },
}
