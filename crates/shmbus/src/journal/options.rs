//! The journal's options: how a journal is created ([`Options`],
//! with the check of its starting snapshot) and how a subscriber joins one
//! ([`JoinOptions`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::error::{CreateError, SnapshotError};
use crate::options::OpenOptions;
use crate::wait::WaitStrategy;

/// How a journal is created: where its file is, and how it grows.
///
/// # Examples
/// ```
/// use shmbus::{BusOptions, journal};
/// # let dir = std::env::temp_dir().join(format!("shmbus-doc-journaloptions-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// # let name = format!("/dev/shm/shmbus-doc-journaloptions-{}", std::process::id());
/// let journal = journal::Options::new(dir.join("ticks.journal")).chunk_bytes(1 << 20);
/// let publisher = journal::Publisher::<u64>::create(&name, &BusOptions::new(64), &journal)?;
/// assert_eq!(publisher.journal_path(), dir.canonicalize()?.join("ticks.journal"));
/// # publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Options {
    pub(super) path: PathBuf,
    pub(super) chunk: usize,
    pub(super) preallocate: usize,
    pub(super) snapshot: Vec<(u64, Vec<u8>)>,
}

impl Options {
    /// The largest [`Self::chunk_bytes`]: 1 GiB, the least address space a
    /// journal settles for.
    pub const MAX_CHUNK_BYTES: usize = 1 << 30;
    /// The largest [`Self::preallocate_bytes`]: half the address space
    /// reserved for a journal (512 GiB).
    pub const MAX_PREALLOCATE_BYTES: usize = 1 << 39;

    /// A journal at `path` (a relative path is made absolute, from the
    /// current directory when the bus is created; its directory must
    /// exist). An existing journal there is reopened and the new bus
    /// continues its sequence, if it is the caller's own and lets write no
    /// one the bus's mode does not
    /// ([`OpenError::NotOwned`](super::OpenError::NotOwned) otherwise).
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, journal};
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-journaloptions-new-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-journaloptions-new-{}", std::process::id());
    /// let journal = journal::Options::new(dir.join("ticks.journal"));
    /// let mut first = journal::Publisher::<u64>::create(&name, &BusOptions::new(64), &journal)?;
    /// first.publish(&1)?;
    /// first.close()?;
    /// shmbus::remove(&name)?;
    /// // A new bus on the same journal carries on its sequence:
    /// let second = journal::Publisher::<u64>::create(&name, &BusOptions::new(64), &journal)?;
    /// assert_eq!(second.next_sequence(), 1);
    /// # second.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(path: impl AsRef<Path>) -> Self {
        Options {
            path: path.as_ref().to_owned(),
            chunk: 8 << 20,
            preallocate: 0,
            snapshot: Vec::new(),
        }
    }

    pub(super) fn check_sizes(&self) -> Result<(), CreateError> {
        let too_large = |option, value, max| CreateError::TooLarge { option, value, max };
        if self.chunk > Self::MAX_CHUNK_BYTES {
            return Err(too_large("chunk_bytes", self.chunk, Self::MAX_CHUNK_BYTES));
        }
        if self.preallocate > Self::MAX_PREALLOCATE_BYTES {
            return Err(too_large(
                "preallocate_bytes",
                self.preallocate,
                Self::MAX_PREALLOCATE_BYTES,
            ));
        }
        Ok(())
    }
    /// How much the file grows by at a time (default 8 MiB; rounded up to
    /// whole pages). The publisher's grower thread grows the file by a
    /// chunk whenever less than one is left ahead of the records, so the
    /// publisher itself waits for the kernel only if it outruns that thread
    /// by a whole chunk.
    /// Only the creating publisher uses it: one that attaches later grows
    /// the file by the default.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, journal};
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-chunkbytes-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-chunkbytes-{}", std::process::id());
    /// let path = dir.join("ticks.journal");
    /// let journal = journal::Options::new(&path).chunk_bytes(64 << 10);
    /// let publisher = journal::Publisher::<u64>::create(&name, &BusOptions::new(64), &journal)?;
    /// assert_eq!(std::fs::metadata(&path)?.len(), 64 << 10); // one chunk, reserved
    /// # publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// None here. The publisher's creation fails with
    /// [`CreateError::TooLarge`] past [`Self::MAX_CHUNK_BYTES`].
    pub fn chunk_bytes(mut self, bytes: usize) -> Self {
        self.chunk = bytes;
        self
    }

    /// How much file to allocate, fill with zeros and map ahead of the
    /// records when the publisher starts (default 0: one chunk; rounded up
    /// to whole chunks), so that a burst of up to this many bytes of
    /// records never waits for the kernel. Growth ahead of a burst is
    /// bounded by how fast the kernel hands out new page-cache pages: on a
    /// VM whose host backs guest memory on first touch that can be a few
    /// hundred MB/s, while a publisher at full speed appends GB/s (see the
    /// journal module's cost section). The start pays for it instead: 1.6
    /// to 25 ms per 8 MiB. Only the creating publisher uses it.
    ///
    /// # Errors
    /// None here. The publisher's creation fails with
    /// [`CreateError::TooLarge`] past
    /// [`Self::MAX_PREALLOCATE_BYTES`], and with
    /// [`OpenError::Full`](super::OpenError::Full) or [`OpenError::Io`](super::OpenError::Io) (`allocate`)
    /// when the file system cannot hold that much.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, journal};
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-preallocate-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-preallocate-{}", std::process::id());
    /// let path = dir.join("ticks.journal");
    /// let journal = journal::Options::new(&path)
    ///     .chunk_bytes(64 << 10)
    ///     .preallocate_bytes(1 << 20);
    /// let publisher = journal::Publisher::<u64>::create(&name, &BusOptions::new(64), &journal)?;
    /// // The header's chunk and the megabyte after it, reserved.
    /// assert_eq!(std::fs::metadata(&path)?.len(), (1 << 20) + (64 << 10));
    /// # publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn preallocate_bytes(mut self, bytes: usize) -> Self {
        self.preallocate = bytes;
        self
    }

    /// A new journal that starts with these records as its snapshot
    /// (sequence, message; sequences strictly increasing, all below the
    /// bus's first sequence, `BusOptions::first_sequence`), as if a
    /// compaction had folded them: a mirror of another bus (a bridge's
    /// downstream) starts this way from the upstream's compacted journal.
    /// Checked when the bus is created; an existing journal is refused.
    ///
    /// # Errors
    /// None here. The creation fails with [`CreateError::Snapshot`].
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, journal::{self, JoinOptions}};
    /// use shmbus::{Received, Wait, journal::Entry};
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-snapshot-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-snapshot-{}", std::process::id());
    /// let journal = journal::Options::new(dir.join("mirror.journal"))
    ///     .snapshot(vec![(3, 30u64.to_le_bytes().to_vec()), (7, 70u64.to_le_bytes().to_vec())]);
    /// let mut mirror =
    ///     journal::Publisher::<u64>::create(&name, &BusOptions::new(64).first_sequence(10), &journal)?;
    /// assert_eq!(mirror.publish(&100)?, 10);
    /// let mut late = journal::Subscriber::<u64>::join(&name, &JoinOptions::default())?;
    /// let mut got = Vec::new();
    /// late.drain_ready(|r| if let Received::Message(Entry { seq, msg }) = r { got.push((seq, msg)) });
    /// assert_eq!(got, [(3, 30), (7, 70), (10, 100)]);
    /// # drop(late); mirror.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn snapshot(mut self, records: Vec<(u64, Vec<u8>)>) -> Self {
        self.snapshot = records;
        self
    }
}

/// Checks a starting snapshot against the bus: sequences ascending and
/// below its first sequence, records no longer than its messages.
pub(super) fn check_snapshot(
    records: &[(u64, Vec<u8>)],
    first: u64,
    msg_size: u32,
) -> Result<(), SnapshotError> {
    let mut after = None;
    for (index, (seq, msg)) in records.iter().enumerate() {
        // Signed distances, as the ring compares sequences.
        let above = after.is_none_or(|a: u64| (seq.wrapping_sub(a) as i64) > 0);
        if !above || (first.wrapping_sub(*seq) as i64) <= 0 {
            return Err(SnapshotError::Order {
                index,
                seq: *seq,
                after,
                first,
            });
        }
        if msg.len() > msg_size as usize {
            return Err(SnapshotError::TooLong {
                index,
                len: msg.len(),
                msg_size,
            });
        }
        after = Some(*seq);
    }
    Ok(())
}

/// How to join a journaled bus ([`Subscriber::join`](super::Subscriber::join),
/// [`State::join`](crate::journal::State::join)): how long to wait for the bus and
/// for the publisher's flush, and how to wait on the ring after.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use shmbus::{WaitStrategy, journal::JoinOptions};
///
/// let opts = JoinOptions::default()
///     .flush_timeout(Duration::from_secs(1))
///     .init_timeout(Duration::from_millis(200))
///     .wait_strategy(WaitStrategy::BusySpin);
/// ```
#[derive(Clone, Debug)]
pub struct JoinOptions {
    pub(super) open: OpenOptions,
    pub(super) flush_timeout: Duration,
}

impl Default for JoinOptions {
    fn default() -> Self {
        JoinOptions {
            open: OpenOptions::default(),
            flush_timeout: Duration::from_secs(5),
        }
    }
}

impl JoinOptions {
    /// The message type a raw-byte joiner insists on (as
    /// [`OpenOptions::message_type`]).
    ///
    /// # Examples
    /// ```
    /// let opts = shmbus::journal::JoinOptions::default().message_type("md.Tick", 16, 8);
    /// ```
    pub fn message_type(mut self, name: &str, size: u32, align: u32) -> Self {
        self.open = self.open.message_type(name, size, align);
        self
    }
    /// How the subscriber waits on the ring (as [`OpenOptions::wait_strategy`]).
    ///
    /// # Examples
    /// ```
    /// let opts = shmbus::journal::JoinOptions::default().wait_strategy(shmbus::WaitStrategy::BusySpin);
    /// ```
    pub fn wait_strategy(mut self, wait: WaitStrategy) -> Self {
        self.open = self.open.wait_strategy(wait);
        self
    }
    /// How long to wait for a live publisher to serve the flush (default
    /// 5 s); then the join fails with [`JoinError::FlushTimeout`](super::JoinError::FlushTimeout).
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// let opts = shmbus::journal::JoinOptions::default().flush_timeout(Duration::from_millis(500));
    /// ```
    pub fn flush_timeout(mut self, timeout: Duration) -> Self {
        self.flush_timeout = timeout;
        self
    }
    /// How long to wait for a bus being created (as [`OpenOptions::init_timeout`]).
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// let opts = shmbus::journal::JoinOptions::default().init_timeout(Duration::from_secs(2));
    /// ```
    pub fn init_timeout(mut self, timeout: Duration) -> Self {
        self.open = self.open.init_timeout(timeout);
        self
    }
}
