//! Looking at buses from outside: `stat`, `ls` and `clean`.
//!
//! Nothing here writes shared memory or takes a lock: segments are mapped
//! read-only, and liveness is probed with `F_OFD_GETLK` (see `lock`).

use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::OpenError;
use crate::layout::{control, lock_byte, Header, MAGIC, MAGIC_BUILDING};
use crate::lock;
use crate::region::{resolve, Region, ShmRegion};
use crate::segment::{open_region, Role};
use crate::sync::Ordering;

/// A bus's header and live state.
#[derive(Clone, Debug)]
pub struct BusStat {
    /// Where the segment is.
    pub path: PathBuf,
    /// The validated header.
    pub header: Header,
    /// The next sequence the publisher will write.
    pub head: u64,
    /// Messages published since creation (`head - first_seq`).
    pub published: u64,
    /// Publisher generation (0 for a stream).
    pub epoch: u64,
    /// The current or last publisher's pid.
    pub publisher_pid: u32,
    /// Whether that publisher still holds the publisher lock.
    pub publisher_alive: bool,
    /// Pids of live registered subscribers.
    pub subscribers: Vec<u32>,
    /// Whether any shmbus process (publisher or subscriber) has it open.
    pub attached: bool,
    /// A stream's cursors and consumer (`None` for a broadcast bus).
    pub stream: Option<StreamStat>,
}

/// A stream's live state. For a stream, [`BusStat::head`] and
/// `published` are bytes written, and the publisher is the producer.
#[derive(Clone, Debug)]
pub struct StreamStat {
    /// Bytes the producer has committed, ever.
    pub tail: u64,
    /// Bytes the consumer has released, ever.
    pub head: u64,
    /// Bytes waiting: `tail - head`.
    pub fill: u64,
    /// The cursors break `HEAD <= TAIL <= HEAD + capacity`: the file is
    /// corrupt, and `fill` means nothing.
    pub corrupt: bool,
    /// The current (or last) consumer's pid; 0 if none ever, or it left.
    pub consumer_pid: u32,
    /// Whether that consumer still holds its lock.
    pub consumer_alive: bool,
}

/// Reads the header and live state of the bus named `name`.
pub fn stat(name: &str) -> Result<BusStat, OpenError> {
    let path = resolve(name)?;
    stat_path(&path, Duration::from_millis(100))
}

fn stat_path(path: &Path, init_timeout: Duration) -> Result<BusStat, OpenError> {
    let (region, header) = open_region(path, Role::Inspect, init_timeout)?;
    // Another kind's geometry is not checked here: `stat` shows it as is.
    header.validate_kind()?;
    let io = |source| OpenError::Io {
        what: "fcntl",
        source,
    };
    let c = header.control_offset as usize;
    let head = region.word(c + control::CURSOR).load(Ordering::Acquire);
    let fd = region.file();
    let mut subscribers = Vec::new();
    for i in 0..control::REGISTRY_SLOTS {
        if lock::is_held(fd, lock_byte::REGISTRY + i as u64).map_err(io)? {
            subscribers.push(
                region
                    .word32(c + control::REGISTRY + 4 * i)
                    .load(Ordering::Relaxed),
            );
        }
    }
    let stream = match header.kind {
        crate::layout::Kind::Stream => {
            use crate::layout::stream_control as sc;
            // HEAD first: both only grow, and HEAD never passes TAIL, so
            // reading TAIL second can only overstate the fill, never wrap.
            let head = region.word(c + sc::HEAD).load(Ordering::Acquire);
            let tail = region.word(c + sc::TAIL).load(Ordering::Acquire);
            // The overstatement is at most what HEAD moved meanwhile (TAIL
            // was within the capacity of a HEAD no later than this second
            // load): only a fill beyond that is corrupt, not a busy stream.
            let moved = region
                .word(c + sc::HEAD)
                .load(Ordering::Acquire)
                .wrapping_sub(head);
            let fill = tail.wrapping_sub(head);
            Some(StreamStat {
                tail,
                head,
                fill,
                corrupt: fill > moved.saturating_add(header.capacity),
                consumer_pid: region.word32(c + sc::CONSUMER_PID).load(Ordering::Relaxed),
                consumer_alive: lock::is_held(fd, lock_byte::CONSUMER).map_err(io)?,
            })
        }
        _ => None,
    };
    let is_stream = stream.is_some();
    Ok(BusStat {
        stream,
        path: path.to_owned(),
        head,
        published: head.wrapping_sub(header.first_seq),
        // A stream has no epoch; its HEAD is where a bus's epoch is.
        epoch: if is_stream {
            0
        } else {
            region.word(c + control::EPOCH).load(Ordering::Acquire)
        },
        publisher_pid: region
            .word32(c + control::PUBLISHER_PID)
            .load(Ordering::Relaxed),
        publisher_alive: lock::is_held(fd, lock_byte::PUBLISHER).map_err(io)?,
        attached: lock::is_held(fd, lock_byte::ATTACHED).map_err(io)?,
        subscribers,
        header,
    })
}

/// One shmbus file found by [`list`].
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
    /// Pids that map the file, from /proc/*/maps (needs permission to read
    /// them; others' processes may be invisible to an unprivileged user).
    pub mapped_by: Vec<u32>,
}

impl Listing {
    /// Whether nothing alive uses this segment: `clean` may remove it.
    pub fn is_abandoned(&self) -> bool {
        !self.locked && self.mapped_by.is_empty()
    }
}

/// Every file in `dir` (normally /dev/shm) that starts with shmbus's magic,
/// finished or half-built, sorted by name.
pub fn list(dir: &Path) -> std::io::Result<Vec<Listing>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let Ok(entry) = entry else { continue };
        let path = entry.path();
        let Ok((file, _)) = ShmRegion::open_file(&path, crate::region::Access::ReadOnly) else {
            continue;
        };
        let mut buf = [0u8; 8];
        if rustix::io::pread(&file, &mut buf, 0).ok() != Some(8) {
            continue;
        }
        let magic = u64::from_le_bytes(buf);
        if magic != MAGIC && magic != MAGIC_BUILDING {
            continue;
        }
        let held = |byte| lock::is_held(file.as_fd(), byte).unwrap_or(true);
        let locked = held(lock_byte::PUBLISHER) || held(lock_byte::ATTACHED);
        found.push(Listing {
            state: stat_path(&path, Duration::ZERO),
            mapped_by: mapped_by(&path),
            locked,
            path,
        });
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(found)
}

/// Pids whose memory maps include `path`, read from /proc/*/maps.
pub fn mapped_by(path: &Path) -> Vec<u32> {
    let Some(target) = path.to_str() else {
        return Vec::new();
    };
    let mut pids = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return pids;
    };
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(maps) = std::fs::read_to_string(p.path().join("maps")) else {
            continue;
        };
        // The path is the last field; a name that is a prefix of another
        // must not match it, so compare whole fields.
        if maps.lines().any(|l| {
            l.split_once('/')
                .is_some_and(|(_, rest)| format!("/{rest}") == target)
        }) {
            pids.push(pid);
        }
    }
    pids
}

/// Removes (or with `dry_run`, only names) every shmbus file in `dir` that
/// no live process uses: no publisher, no attached process, no mapping.
pub fn clean(dir: &Path, dry_run: bool) -> std::io::Result<Vec<PathBuf>> {
    let mut removed = Vec::new();
    for listing in list(dir)? {
        if !listing.is_abandoned() {
            continue;
        }
        if !dry_run {
            match std::fs::remove_file(&listing.path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            }
        }
        removed.push(listing.path);
    }
    Ok(removed)
}
