//! Looking at buses from outside: `stat`, `ls` and `clean`.
//!
//! Nothing here writes shared memory: segments are mapped read-only, and
//! liveness is probed with `F_OFD_GETLK` (see `lock`). Only `clean` takes
//! locks, to decide and remove each file atomically with respect to
//! processes that attach (see [`clean`]).

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::OpenError;
use crate::mem::Region;
use crate::pool::blocks::Blocks;
use crate::pool::Census;
use crate::segment::{open_bus_at, open_region, BusAt, Role};
use crate::sync::Ordering;
use crate::sys::dir::{self, DirError, FileId, UnlinkError};
use crate::sys::lock;
use crate::sys::resolve;
use crate::wire::{control, lock_byte, Header, Kind};

/// A bus's header and live state, as [`stat`] reads it.
///
/// # Examples
/// ```
/// use shmbus::{BusOptions, OpenOptions, Publisher, Subscriber};
/// # let name = format!("/dev/shm/shmbus-doc-busstat-{}", std::process::id());
/// let mut publisher = Publisher::<u64>::create(&name, &BusOptions::new(64))?;
/// let subscriber = Subscriber::<u64>::open(&name, &OpenOptions::default())?;
/// publisher.publish(&1);
/// publisher.publish(&2);
/// let stat = shmbus::stat::stat(&name)?;
/// assert_eq!((stat.head, stat.published, stat.epoch), (2, 2, 1));
/// assert_eq!(stat.header.capacity, 64);
/// assert_eq!(stat.publisher_pid, std::process::id());
/// assert!(stat.publisher_alive && stat.attached);
/// assert_eq!(stat.subscribers[0].pid, std::process::id());
/// assert!(stat.stream.is_none() && stat.pool.is_none());
/// # shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
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
    /// The live registered subscribers (a broadcast bus's), in registry
    /// order.
    pub subscribers: Vec<SubscriberStat>,
    /// Registry entries whose subscriber has gone (exited or died: its
    /// lock was released) and that no subscriber has taken since: their
    /// last numbers.
    pub gone: Vec<SubscriberStat>,
    /// Whether any shmbus process (publisher or subscriber) has it open.
    pub attached: bool,
    /// A stream's cursors and consumer (`None` for a broadcast bus).
    pub stream: Option<StreamStat>,
    /// A pool bus's blocks (`None` for any other bus, and a stream).
    pub pool: Option<PoolStat>,
}

/// A pool bus's blocks, as [`stat`] reads them: its geometry, where each
/// block is, and which registry entries hold blocks. Read without a lock
/// while publishers and subscribers work, so the figures are one pass that
/// may mix moments: they add up to `blocks`, but a block may be counted
/// where it was a moment before.
///
/// # Examples
/// ```
/// use shmbus::{BusOptions, OpenOptions, Received, Start, Wait, pool::{PoolPublisher, PoolSubscriber}};
/// # let name = format!("/dev/shm/shmbus-doc-poolstat-{}", std::process::id());
/// // 4 slots, 8 blocks of 256 bytes.
/// let mut publisher = PoolPublisher::create(&name, &BusOptions::new(4).pool(256, 8))?;
/// let mut subscriber = PoolSubscriber::open(&name, &OpenOptions::default().start(Start::Oldest))?;
/// for _ in 0..6 {
///     publisher.loan(3, Wait::Never)?.publish()?;
/// }
/// let loan = publisher.loan(3, Wait::Never)?; // being written
/// // Sequence 0 is lapped: the subscriber resyncs, then takes one in place.
/// assert!(matches!(subscriber.recv(Wait::Never)?, Some(Received::Lagged { .. })));
/// let Some(Received::Message(sample)) = subscriber.recv(Wait::Never)? else { panic!() };
///
/// let pool = shmbus::stat::stat(&name)?.pool.expect("a pool bus");
/// assert_eq!((pool.block_size, pool.blocks), (256, 8));
/// let c = pool.census;
/// assert_eq!((c.loaned, c.on_ring), (1, 4));
/// assert_eq!(c.free + c.held + c.reclaimable + c.corrupt, 3);
/// assert_eq!(pool.held_by(pool.holders[0].entry), 1);
/// assert_eq!(pool.holders[0].pid, std::process::id());
/// assert!(pool.holders[0].alive);
/// drop((sample, loan));
/// # shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolStat {
    /// Bytes per block: the largest message.
    pub block_size: u64,
    /// Blocks in the pool.
    pub blocks: u64,
    /// Where each block is: free, loaned, on the ring, held, reclaimable,
    /// corrupt.
    pub census: Census,
    /// Every registry entry marked as holding blocks (a live pool
    /// subscriber's, or a dead one's whose holds no publisher has swept
    /// yet), in registry order.
    pub holders: Vec<PoolHolder>,
}

impl PoolStat {
    /// How many blocks registry entry `entry` holds (0 for an entry not
    /// marked as holding any).
    ///
    /// # Examples
    /// ```
    /// use shmbus::stat::{PoolHolder, PoolStat};
    /// # let census = shmbus::pool::PoolPublisher::on_heap(4, 64, 5)?.census();
    /// let one = PoolHolder { entry: 3, pid: 42, alive: true, held: 2 };
    /// let pool = PoolStat { block_size: 64, blocks: 5, census, holders: vec![one] };
    /// assert_eq!((pool.held_by(3), pool.held_by(4)), (2, 0));
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn held_by(&self, entry: usize) -> usize {
        self.holders
            .iter()
            .find(|h| h.entry == entry)
            .map_or(0, |h| h.held)
    }
}

/// One registry entry of a pool bus marked as holding blocks: its hold
/// line, counted.
///
/// # Examples
/// ```
/// use shmbus::{BusOptions, OpenOptions, Received, Wait, pool::{PoolPublisher, PoolSubscriber}};
/// # let name = format!("/dev/shm/shmbus-doc-poolholder-{}", std::process::id());
/// let mut publisher = PoolPublisher::create(&name, &BusOptions::new(4).pool(64, 8))?;
/// let mut subscriber = PoolSubscriber::open(&name, &OpenOptions::default())?;
/// publisher.loan(1, Wait::Never)?.publish()?;
/// let Some(Received::Message(sample)) = subscriber.recv(Wait::Never)? else { panic!() };
/// let holder = &shmbus::stat::stat(&name)?.pool.expect("a pool bus").holders[0];
/// assert_eq!((holder.pid, holder.alive, holder.held), (std::process::id(), true, 1));
/// # drop(sample);
/// # shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolHolder {
    /// Its registry entry (0..256).
    pub entry: usize,
    /// The pid in the entry, as its subscriber wrote it.
    pub pid: u32,
    /// Whether that subscriber still holds its registry lock (a dead one's
    /// holds stay until a publisher in need of a block sweeps them).
    pub alive: bool,
    /// Blocks it holds now (at most `PoolSubscriber::MAX_HELD`).
    pub held: usize,
}

/// One live registered subscriber, from its line in the control area.
/// Every number is what the subscriber wrote, checked against the bus
/// (LAYOUT §5.1, the cursor loaded after the line): a line that breaks
/// `first_seq <= position <= head + 1`, `start <= position` (and
/// `first_seq <= start`, except on a journaled bus, whose joiners start at
/// the journal's base) or `skipped <= position - start` is `corrupt`, and
/// its derived numbers are 0.
///
/// # Examples
/// ```
/// use shmbus::{BusOptions, OpenOptions, Publisher, Received, Start, Subscriber, Wait};
/// # let name = format!("/dev/shm/shmbus-doc-substat-{}", std::process::id());
/// let mut publisher = Publisher::<u64>::create(&name, &BusOptions::new(4))?;
/// let mut subscriber =
///     Subscriber::<u64>::open(&name, &OpenOptions::default().start(Start::Oldest))?;
/// for i in 0..6 {
///     publisher.publish(&i);
/// }
/// assert_eq!(subscriber.recv(Wait::Never), Some(Received::Lagged { skipped: 4 }));
/// assert_eq!(subscriber.recv(Wait::Never), Some(Received::Message(4)));
/// let stat = shmbus::stat::stat(&name)?;
/// let me = &stat.subscribers[0];
/// assert_eq!((me.position, me.lag, me.delivered, me.skipped), (5, 1, 1, 4));
/// assert!(me.corrupt.is_none());
/// # shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubscriberStat {
    /// Its registry entry (0..256); a later subscriber may reuse it.
    pub entry: usize,
    /// Its pid, as it wrote it.
    pub pid: u32,
    /// The next sequence it reads.
    pub position: u64,
    /// Messages published that it has not read: `head - position` (0 one
    /// past the cursor, §13). More than the capacity means its next
    /// receive reports a lag.
    pub lag: u64,
    /// Messages it received since it registered.
    pub delivered: u64,
    /// The sum of the `skipped` counts of the lags it was told of.
    pub skipped: u64,
    /// When it was last seen active, ns of `CLOCK_MONOTONIC_COARSE`
    /// (compare with [`monotonic_ns`]): it notes the time when it sleeps,
    /// lags, and every 1024 messages or empty polls.
    pub active_ns: u64,
    /// Why the line cannot be believed, if it cannot.
    pub corrupt: Option<String>,
}

/// `CLOCK_MONOTONIC_COARSE` now, in ns: the clock of
/// [`SubscriberStat::active_ns`].
///
/// # Examples
/// ```
/// let a = shmbus::stat::monotonic_ns();
/// assert!(shmbus::stat::monotonic_ns() >= a);
/// ```
pub fn monotonic_ns() -> u64 {
    crate::sys::clock::monotonic_ns()
}

/// Reads registry entry `entry`'s line and checks it against the cursor,
/// loaded *after* the line (LAYOUT §5.1): the subscriber moves on while it
/// is read, and a cursor loaded before could be passed by a live, healthy
/// subscriber. A line that keeps changing under the reader (its sequence
/// lock never settles) is reported as corrupt. `journaled`: the bus has a
/// journal, whose joiners start at the journal's base, which may come
/// before the bus's first sequence (a journal continued by a new bus).
fn read_line(
    region: &impl Region,
    c: usize,
    entry: usize,
    first: u64,
    journaled: bool,
) -> SubscriberStat {
    use crate::wire::subscriber_line as sl;
    let at = c + control::SUBSCRIBERS + crate::wire::LINE * entry;
    let pid = region
        .word32(c + control::REGISTRY + 4 * entry)
        .load(Ordering::Relaxed);
    let mut out = SubscriberStat {
        entry,
        pid,
        position: 0,
        lag: 0,
        delivered: 0,
        skipped: 0,
        active_ns: region.word(at + sl::ACTIVE_NS).load(Ordering::Relaxed),
        corrupt: Some("its line kept changing while read".into()),
    };
    // A bounded seqlock read: a live writer holds the lock for a few
    // stores, so 1000 tries fail only on a line that is written without end.
    for _ in 0..1000 {
        // Acquire, paired with the Release store of the even value in
        // `Activity::update`.
        let s1 = region.word32(at + sl::SEQ).load(Ordering::Acquire);
        if s1 % 2 == 1 {
            std::hint::spin_loop();
            continue;
        }
        let start = region.word(at + sl::START).load(Ordering::Relaxed);
        let skipped = region.word(at + sl::SKIPPED).load(Ordering::Relaxed);
        let position = region.word(at + sl::POSITION).load(Ordering::Relaxed);
        // Acquire fence, paired with the Release fence after the odd store
        // in `Activity::update`: if a load above saw a store made under the
        // lock, the second load of SEQ sees the odd value or later.
        crate::sync::fence(Ordering::Acquire);
        if region.word32(at + sl::SEQ).load(Ordering::Relaxed) != s1 {
            continue;
        }
        // The cursor after the line (the Acquire fence above keeps this
        // load after the line's): the cursor only grows, so it is at least
        // what it was when the position was stored, and a position past it
        // is the subscriber's doing, not the reader's timing.
        let head = region.word(c + control::CURSOR).load(Ordering::Acquire);
        out.position = position;
        match check_line(first, journaled, head, start, position, skipped) {
            Ok(lag) => {
                out.corrupt = None;
                out.lag = lag;
                out.skipped = skipped;
                out.delivered = position.wrapping_sub(start) - skipped;
            }
            Err(why) => out.corrupt = Some(why),
        }
        break;
    }
    out
}

/// LAYOUT §5.1's checks of one subscriber line, as wrapping distances
/// from an origin: the bus's `first_seq`, or on a journaled bus the line's
/// own `start` (a journal joiner starts at the journal's base, which on a
/// bus continuing an older journal is below `first_seq`, and stands there
/// while it reads the journal, §21.3), which must then not be past the
/// cursor. `first_seq <= start`, `start <= position <= head + 1` (one past:
/// a single publisher stamps a slot `done` before it stores the cursor,
/// and a subscriber may read the slot in between, or the publisher may die
/// there, §13), `skipped <= position - start`. `Ok(lag)`, or which failed.
fn check_line(
    first: u64,
    journaled: bool,
    head: u64,
    start: u64,
    position: u64,
    skipped: u64,
) -> Result<u64, String> {
    let origin = if journaled { start } else { first };
    let (s, p, h) = (
        start.wrapping_sub(origin),
        position.wrapping_sub(origin),
        head.wrapping_sub(origin),
    );
    if journaled && h >= 1 << 63 {
        return Err(format!("start {start} is past the cursor {head}"));
    }
    if p > h.saturating_add(1) {
        return Err(format!(
            "position {position} is more than one past the cursor {head}"
        ));
    }
    if s > p {
        let from = if journaled {
            String::new()
        } else {
            format!("the first sequence {first} and ")
        };
        return Err(format!(
            "start {start} is not between {from}position {position}"
        ));
    }
    if skipped > p - s {
        return Err(format!(
            "skipped {skipped} is more than the {} messages it moved",
            p - s
        ));
    }
    // One past the cursor: nothing unread.
    Ok(h.saturating_sub(p))
}

/// A stream's `TAIL` and `HEAD` as one moment (LAYOUT §20, "Inspecting a
/// live stream"): `HEAD`, then `TAIL`, then `HEAD` again, retried until
/// both `HEAD` loads agree, so that `HEAD` had that value when `TAIL` was
/// loaded, and `HEAD <= TAIL <= HEAD + capacity` must hold. Both only grow:
/// loading `TAIL` first would let a busy consumer pass it, and a single
/// `HEAD` first would let a busy producer run a capacity ahead of it.
/// Returns (tail, head, corrupt). A pair that never settles (both sides
/// flat out for 1000 tries) is judged with the slack of what `HEAD` moved,
/// never called corrupt for being busy.
fn stream_cursors(region: &impl Region, c: usize, capacity: u64) -> (u64, u64, bool) {
    use crate::wire::stream_control as sc;
    // Acquire loads, partners of the producer's Release store of `TAIL`
    // and the consumer's of `HEAD`; Acquire also keeps the three in order.
    let load = |at| region.word(c + at).load(Ordering::Acquire);
    let (mut head, mut tail, mut again) = (0, 0, 0);
    for _ in 0..1000 {
        head = load(sc::HEAD);
        tail = load(sc::TAIL);
        again = load(sc::HEAD);
        if again == head {
            let bad = tail.wrapping_sub(head) > capacity;
            return (tail, head, bad);
        }
        std::hint::spin_loop();
    }
    // `HEAD` was in [head, again] when `TAIL` was loaded: `TAIL` may be
    // up to what `HEAD` moved more than a capacity past `head`.
    let moved = again.wrapping_sub(head);
    let bad = tail.wrapping_sub(head) > moved.saturating_add(capacity) || moved >= 1 << 63;
    (tail, head.max(tail.saturating_sub(capacity)), bad)
}

/// A stream's live state. For a stream, [`BusStat::head`] and
/// `published` are bytes written, and the publisher is the producer.
///
/// # Examples
/// ```
/// use shmbus::{Wait, stream::{Producer, StreamOptions}};
/// # let name = format!("/dev/shm/shmbus-doc-streamstat-{}", std::process::id());
/// let mut producer = Producer::create(&name, &StreamOptions::new(4096))?;
/// producer.push(b"abc", Wait::Never)?;
/// let stat = shmbus::stat::stat(&name)?;
/// let stream = stat.stream.expect("a stream");
/// assert_eq!((stream.tail, stream.head, stream.fill), (16, 0, 16));
/// assert!(!stream.corrupt);
/// assert_eq!(stream.consumer_pid, 0); // no consumer yet
/// assert!(!stream.consumer_alive);
/// assert_eq!(stream.producer_records, 1);
/// # shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct StreamStat {
    /// Bytes the producer has committed, ever.
    pub tail: u64,
    /// Bytes the consumer has released, ever.
    pub head: u64,
    /// Bytes waiting: `tail - head`, from one moment (LAYOUT §20); 0 when
    /// `corrupt`.
    pub fill: u64,
    /// The cursors break `HEAD <= TAIL <= HEAD + capacity`: the file is
    /// corrupt, and `fill` means nothing.
    pub corrupt: bool,
    /// The current (or last) consumer's pid; 0 if none ever, or it left.
    pub consumer_pid: u32,
    /// Whether that consumer still holds its lock.
    pub consumer_alive: bool,
    /// Records the current (or last) producer committed since it attached.
    pub producer_records: u64,
    /// Records the current (or last) consumer released since it opened.
    pub consumer_records: u64,
    /// When the producer was last seen active, ns of
    /// `CLOCK_MONOTONIC_COARSE` ([`monotonic_ns`]): it notes the time when
    /// it attaches, waits for room, and every 1024 records. 0: never.
    pub producer_active_ns: u64,
    /// The same for the consumer (when it waits for data).
    pub consumer_active_ns: u64,
}

/// Reads the header and live state of the bus (or stream) named `name`,
/// read-only and without taking any lock. A segment still being created
/// is waited for 100 ms at most.
///
/// # Errors
/// [`OpenError::Name`] for an impossible name; [`OpenError::NotFound`],
/// [`OpenError::PermissionDenied`], [`OpenError::Symlink`] or
/// [`OpenError::NotAFile`] for what is (not) at its path;
/// [`OpenError::NotInitialized`] if its creator has not finished within
/// 100 ms; [`OpenError::BadMagic`], [`OpenError::VersionMismatch`],
/// [`OpenError::Truncated`] or [`OpenError::InvalidGeometry`] for a file
/// that is no valid segment; [`OpenError::Io`] if a system call failed.
///
/// # Examples
/// ```
/// use shmbus::{BusOptions, OpenError, Publisher};
/// # let name = format!("/dev/shm/shmbus-doc-stat-{}", std::process::id());
/// let mut publisher = Publisher::<u64>::create(&name, &BusOptions::new(64))?;
/// publisher.publish(&7);
/// let stat = shmbus::stat::stat(&name)?;
/// assert_eq!(stat.published, 1);
/// assert_eq!(stat.header.msg.name, "u64");
/// shmbus::remove(&name)?;
/// assert!(matches!(shmbus::stat::stat(&name), Err(OpenError::NotFound { .. })));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
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
    let (mut subscribers, mut gone) = (Vec::new(), Vec::new());
    let journaled = header.flags & crate::wire::flags::JOURNALED != 0;
    if header.kind == Kind::Broadcast {
        for i in 0..control::REGISTRY_SLOTS {
            if lock::is_held(fd, lock_byte::REGISTRY + i as u64).map_err(io)? {
                subscribers.push(read_line(&region, c, i, header.first_seq, journaled));
            } else if region
                .word32(c + control::REGISTRY + 4 * i)
                .load(Ordering::Relaxed)
                != 0
            {
                gone.push(read_line(&region, c, i, header.first_seq, journaled));
            }
        }
    }
    let stream = match header.kind {
        Kind::Stream => {
            use crate::wire::{side_line, stream_control as sc};
            let (tail, head, corrupt) = stream_cursors(&region, c, header.capacity);
            let fill = if corrupt { 0 } else { tail.wrapping_sub(head) };
            Some(StreamStat {
                tail,
                head,
                fill,
                corrupt,
                consumer_pid: region.word32(c + sc::CONSUMER_PID).load(Ordering::Relaxed),
                consumer_alive: lock::is_held(fd, lock_byte::CONSUMER).map_err(io)?,
                producer_records: region
                    .word(c + sc::PRODUCER_LINE + side_line::RECORDS)
                    .load(Ordering::Relaxed),
                consumer_records: region
                    .word(c + sc::CONSUMER_LINE + side_line::RECORDS)
                    .load(Ordering::Relaxed),
                producer_active_ns: region
                    .word(c + sc::PRODUCER_LINE + side_line::ACTIVE_NS)
                    .load(Ordering::Relaxed),
                consumer_active_ns: region
                    .word(c + sc::CONSUMER_LINE + side_line::ACTIVE_NS)
                    .load(Ordering::Relaxed),
            })
        }
        _ => None,
    };
    let pool = match (header.kind, header.pool) {
        (Kind::Broadcast, Some(geo)) => {
            // `validate_kind` has checked that the control area holds the
            // hold lines and the file the pool; `Blocks` only loads.
            let blocks = Blocks::new(geo, c, header.capacity);
            let mut holders = Vec::new();
            for entry in blocks.active_entries(&region) {
                holders.push(PoolHolder {
                    entry,
                    pid: region
                        .word32(c + control::REGISTRY + 4 * entry)
                        .load(Ordering::Relaxed),
                    // The registry lock, as a publisher's sweep judges it
                    // (`pool::sweep`): free means its subscriber is gone.
                    alive: lock::is_held(fd, lock_byte::REGISTRY + entry as u64).map_err(io)?,
                    held: blocks.held_by(&region, entry),
                });
            }
            // A gone subscriber's holds are the next sweep's to clear: its
            // blocks off the ring are reclaimable, not held (§19.5). An
            // entry that became active after the pass above is counted as
            // live (when in doubt, in use).
            let census = blocks.census_of(&region, head, |entry| {
                holders
                    .iter()
                    .find(|h| h.entry == entry)
                    .is_none_or(|h| h.alive)
            });
            Some(PoolStat {
                block_size: geo.block_size,
                blocks: geo.blocks,
                census,
                holders,
            })
        }
        _ => None,
    };
    let is_stream = stream.is_some();
    Ok(BusStat {
        stream,
        pool,
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
        gone,
        header,
    })
}

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
/// assert_eq!(listing.state.as_ref().map(|s| s.header.capacity).ok(), Some(64));
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

/// A shmbus file found in a directory, open.
struct Found {
    path: PathBuf,
    name: std::ffi::OsString,
    id: FileId,
    file: OwnedFd,
}

/// Why one directory entry is not a [`Found`].
enum Skip {
    /// Not a shmbus file, gone, or not this user's to read: not listed.
    NotABus,
    /// A real failure (`EMFILE`, `ENOMEM`, `EIO`...): said as such.
    Failed(ScanError),
}

/// Looks at `name` in `dir` (read-only): a shmbus file, not a bus, or a
/// real failure.
fn look_at(dir: BorrowedFd<'_>, dir_path: &Path, name: &OsStr) -> Result<Found, Skip> {
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
fn names(dir: BorrowedFd<'_>, dir_path: &Path) -> Result<Vec<std::ffi::OsString>, ScanError> {
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
fn locked(file: BorrowedFd<'_>) -> bool {
    let held = |byte| lock::is_held(file, byte).unwrap_or(true);
    held(lock_byte::PUBLISHER) || held(lock_byte::ATTACHED)
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
/// use shmbus::{BusOptions, Publisher, stream::{Producer, StreamOptions}};
/// // A directory of our own, so that only our buses are in it.
/// let dir = std::path::PathBuf::from(format!("/dev/shm/shmbus-doc-list-{}", std::process::id()));
/// std::fs::create_dir(&dir)?;
/// let bus = dir.join("ticks");
/// let name = bus.to_str().expect("a UTF-8 path");
/// let publisher = Publisher::<u64>::create(name, &BusOptions::new(64))?;
/// let stream = dir.join("logs");
/// let producer = Producer::create(stream.to_str().expect("UTF-8"), &StreamOptions::new(4096))?;
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
            Err(Skip::NotABus) => continue,
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

/// A directory that could not be opened, as a listing's error.
fn scan_error(e: DirError) -> ScanError {
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

/// Which processes map which files, from one pass over /proc/*/maps.
struct Mappers(HashMap<(u32, u32, u64), Vec<u32>>);

impl Mappers {
    fn scan() -> Mappers {
        let mut map: HashMap<(u32, u32, u64), Vec<u32>> = HashMap::new();
        let Ok(procs) = std::fs::read_dir("/proc") else {
            return Mappers(map);
        };
        for p in procs.flatten() {
            let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            // A process that exits meanwhile, or is not ours to read, maps
            // nothing we can know of.
            let Ok(maps) = std::fs::read_to_string(p.path().join("maps")) else {
                continue;
            };
            for key in maps.lines().filter_map(maps_file) {
                let pids = map.entry(key).or_default();
                if pids.last() != Some(&pid) {
                    pids.push(pid);
                }
            }
        }
        Mappers(map)
    }

    fn of(&self, id: FileId) -> Vec<u32> {
        let (major, minor) = id.major_minor();
        self.0
            .get(&(major, minor, id.ino))
            .cloned()
            .unwrap_or_default()
    }
}

/// The (major, minor, inode) of a /proc/PID/maps line that maps a file:
/// `address perms offset MAJOR:MINOR INODE path` (hex device, decimal inode,
/// 0 for anonymous memory). Compared by identity, not by the path text,
/// which differs with every spelling of the directory.
fn maps_file(line: &str) -> Option<(u32, u32, u64)> {
    let mut f = line.split_ascii_whitespace();
    let dev = f.nth(3)?;
    let ino: u64 = f.next()?.parse().ok()?;
    let (major, minor) = dev.split_once(':')?;
    let major = u32::from_str_radix(major, 16).ok()?;
    let minor = u32::from_str_radix(minor, 16).ok()?;
    (ino != 0).then_some((major, minor, ino))
}

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
/// its error, and the rest are still cleaned.
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
    let mut out = Vec::new();
    let mut batch = Vec::new();
    for name in names(dir_fd.as_fd(), dir)? {
        let mut found = match look_at(dir_fd.as_fd(), dir, &name) {
            Ok(f) => f,
            Err(Skip::NotABus) => continue,
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
    #[error("{path}: replaced by another file while being checked, expected the bus that was checked; not removed")]
    Replaced {
        /// The name.
        path: PathBuf,
    },
}
