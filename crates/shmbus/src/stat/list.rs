//! Listing a directory's buses ([`list`], `shmbus ls`): each shmbus file
//! with its stat, its liveness locks and the processes that map it.

use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::bus::{BusStat, stat_path};
use super::proc::Mappers;
use super::scan::{ScanError, Skip, locked, look_at, names, scan_error};
use crate::error::OpenError;
use crate::sys::dir;

/// One shmbus file found by [`list`].
///
/// # Examples
/// ```
/// use shmbus::{BusOptions, Publisher};
/// // A directory of our own, so that only our buses are in it.
/// let dir = std::path::PathBuf::from(format!("/dev/shm/shmbus-doc-listing-{}", std::process::id()));
/// std::fs::create_dir(&dir)?;
/// let bus = dir.join("ticks");
/// let name = bus.to_str().expect("a UTF-8 path");
/// let publisher = Publisher::<u64>::create(name, &BusOptions::new(64))?;
/// let found = shmbus::stat::list(&dir)?;
/// assert_eq!(found.len(), 1);
/// let listing = &found[0];
/// assert_eq!(listing.path, bus);
/// assert_eq!(listing.state.as_ref().map(|s| s.published).ok(), Some(0));
/// assert!(listing.locked);
/// assert_eq!(listing.mapped_by, [std::process::id()]);
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Listing {
    /// The file.
    pub path: PathBuf,
    /// Its state, or why it could not be read (a half-built segment says
    /// [`OpenError::NotInitialized`]).
    pub state: Result<BusStat, OpenError>,
    /// Whether a process holds the publisher or attached lock (also true
    /// for a half-built segment whose creator is still at work).
    pub locked: bool,
    /// Pids that map the file (matched by device and inode in
    /// /proc/*/maps, so however the path is spelled; needs permission to
    /// read them: others' processes may be invisible to an unprivileged
    /// user).
    pub mapped_by: Vec<u32>,
}

impl Listing {
    /// Whether nothing alive uses this segment: `clean` may remove it.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, Publisher};
    /// // A directory of our own, so that only our buses are in it.
    /// let dir = std::path::PathBuf::from(format!("/dev/shm/shmbus-doc-isabandoned-{}", std::process::id()));
    /// std::fs::create_dir(&dir)?;
    /// let bus = dir.join("ticks");
    /// let name = bus.to_str().expect("a UTF-8 path");
    /// let publisher = Publisher::<u64>::create(name, &BusOptions::new(64))?;
    /// assert!(!shmbus::stat::list(&dir)?[0].is_abandoned());
    /// drop(publisher); // its process would have exited, or died
    /// assert!(shmbus::stat::list(&dir)?[0].is_abandoned());
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_abandoned(&self) -> bool {
        !self.locked && self.mapped_by.is_empty()
    }
}

/// Every file in `dir` (normally /dev/shm) that starts with shmbus's magic,
/// finished or half-built, sorted by name. Entries that are not buses, or
/// that this user may not read, are left out; a file that could not be
/// looked at (out of descriptors, out of memory, I/O) is listed with its
/// error as its `state`, never left out. Each file is open only while it
/// is read, so a directory of more buses than this process may open files
/// is listed whole.
///
/// # Errors
/// [`ScanError`] naming the directory and the step that failed: it cannot
/// be opened (missing, a symbolic link on the way, not a directory) or
/// read.
///
/// # Examples
/// ```
/// use shmbus::{BusOptions, Publisher, stream::{self, Producer}};
/// // A directory of our own, so that only our buses are in it.
/// let dir = std::path::PathBuf::from(format!("/dev/shm/shmbus-doc-list-{}", std::process::id()));
/// std::fs::create_dir(&dir)?;
/// let bus = dir.join("ticks");
/// let name = bus.to_str().expect("a UTF-8 path");
/// let publisher = Publisher::<u64>::create(name, &BusOptions::new(64))?;
/// let stream = dir.join("logs");
/// let producer = Producer::<[u8]>::create(stream.to_str().expect("UTF-8"), &stream::Options::new(4096))?;
/// std::fs::write(dir.join("notes.txt"), "not a bus")?; // left out
/// let paths: Vec<_> = shmbus::stat::list(&dir)?.into_iter().map(|l| l.path).collect();
/// assert_eq!(paths, [stream, bus]); // sorted by name
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn list(dir: &Path) -> Result<Vec<Listing>, ScanError> {
    let dir_fd = dir::open_dir(dir).map_err(scan_error)?;
    let names = names(dir_fd.as_fd(), dir)?;
    let maps = Mappers::scan();
    let mut out = Vec::new();
    // One bus at a time, each closed before the next is opened: a
    // directory of more buses than descriptors is listed whole.
    for name in names {
        let found = match look_at(dir_fd.as_fd(), dir, &name) {
            Ok(f) => f,
            Err(Skip::NotABus | Skip::Denied { .. }) => continue,
            // Out of descriptors or memory, I/O: said for this bus, and
            // the others are still listed. Counted in use: when in doubt,
            // `clean` must not think it abandoned.
            Err(Skip::Failed(e)) => {
                out.push(Listing {
                    path: e.path,
                    state: Err(OpenError::Io {
                        what: e.step,
                        source: e.source,
                    }),
                    locked: true,
                    mapped_by: Vec::new(),
                });
                continue;
            }
        };
        let locked = locked(found.file.as_fd());
        let mapped_by = maps.of(found.id);
        drop(found.file);
        out.push(Listing {
            state: stat_path(&found.path, Duration::ZERO),
            mapped_by,
            locked,
            path: found.path,
        });
    }
    Ok(out)
}
