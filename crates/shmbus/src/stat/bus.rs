//! The stat of one bus ([`stat`]): its header, cursor and publisher,
//! each registered subscriber's line, a stream's cursors, a pool's
//! blocks; read-only, without a lock, every figure checked before it is
//! believed.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::bus::activity;
use crate::error::OpenError;
use crate::mem::Region;
use crate::pool::Census;
use crate::pool::blocks::Blocks;
use crate::segment::{Role, SegmentKind, open_region};
use crate::sync::Ordering;
use crate::sys::lock;
use crate::sys::resolve;
use crate::wire::{Header, Kind, TypeFingerprint, control, lock_byte};

use super::keys::EntryVersion;
use super::service::{self, ServiceStat};

/// A segment's kind, figures and live state, as [`stat`] reads it: what
/// every kind has here, what only some kinds have in [`Size`] and the
/// kind's own part (`stream`, `pool`, `blackboard`, `service`).
///
/// # Examples
/// ```
/// use shmbus::{BusOptions, OpenOptions, Publisher, SegmentKind, Subscriber, stat::Size};
/// # let name = format!("/dev/shm/shmbus-doc-busstat-{}", std::process::id());
/// let mut publisher = Publisher::<u64>::create(&name, &BusOptions::new(64))?;
/// let subscriber = Subscriber::<u64>::open(&name, &OpenOptions::default())?;
/// publisher.publish(&1);
/// publisher.publish(&2);
/// let stat = shmbus::stat::stat(&name)?;
/// assert_eq!(stat.kind, SegmentKind::Bus);
/// assert_eq!((stat.head, stat.published, stat.epoch), (2, 2, Some(1)));
/// assert_eq!(stat.size, Some(Size::Slots { slots: 64, slot_size: 64 }));
/// assert_eq!(stat.publisher_pid, std::process::id());
/// assert!(stat.publisher_alive && stat.attached);
/// assert_eq!(stat.subscribers[0].pid, std::process::id());
/// assert!(stat.stream.is_none() && stat.pool.is_none() && stat.service.is_none());
/// # shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct BusStat {
    /// Where the segment is.
    pub path: PathBuf,
    /// What it is, as `ls` and `top` name it.
    pub kind: SegmentKind,
    /// How big it is, in its kind's unit; `None` for a kind this build
    /// does not know.
    pub size: Option<Size>,
    /// The message type: a bus's message (a pool bus's: its slots'
    /// descriptors; the blocks' type is [`PoolStat::block_type`]), a
    /// stream's record (`stream` for a raw one; its size the largest
    /// record), a blackboard's value.
    pub msg: TypeFingerprint,
    /// The first sequence the bus used (0 for a stream or a blackboard).
    pub first_seq: u64,
    /// When it was created, ns since the Unix epoch.
    pub created_ns: u64,
    /// The pid of the process that created it.
    pub creator_pid: u32,
    /// A journaled bus's journal file (`None` for any other kind).
    pub journal: Option<PathBuf>,
    /// The huge page size it is laid out in, if it is laid out in huge
    /// pages.
    pub huge_page_size: Option<u64>,
    /// The next sequence the publisher will write (a stream: bytes the
    /// producer has committed; a blackboard: its version, as
    /// [`BlackboardStat::updates`]; a service: responses delivered, over
    /// all its server entries).
    pub head: u64,
    /// Messages published since creation (`head - first_seq`; a stream:
    /// bytes; a blackboard: updates; a service: responses delivered).
    pub published: u64,
    /// Publisher generation; `None` for a stream or a blackboard, which
    /// have none.
    pub epoch: Option<u64>,
    /// The current or last publisher's (producer's, writer's) pid; 0 for
    /// a service, whose servers are in [`ServiceStat::per_server`].
    pub publisher_pid: u32,
    /// Whether that publisher still holds the publisher lock (never, for
    /// a service).
    pub publisher_alive: bool,
    /// A bus's lossless subscribers' limits (`None` for a stream or a
    /// blackboard, which have no subscribers).
    pub lossless: Option<Lossless>,
    /// The live registered subscribers (a broadcast bus's), in registry
    /// order.
    pub subscribers: Vec<SubscriberStat>,
    /// Registry entries whose subscriber has gone (exited or died: its
    /// lock was released) and that no subscriber has taken since: their
    /// last numbers.
    pub gone: Vec<SubscriberStat>,
    /// Whether any shmbus process (publisher or subscriber) has it open.
    pub attached: bool,
    /// A stream's cursors and consumer (`None` for any other kind).
    pub stream: Option<StreamStat>,
    /// A pool bus's blocks (`None` for any other kind).
    pub pool: Option<PoolStat>,
    /// A blackboard's table (`None` for any other kind).
    pub blackboard: Option<BlackboardStat>,
    /// A service's servers, clients and calls (`None` for any other
    /// kind).
    pub service: Option<ServiceStat>,
    /// The validated header, for the tests and tools that need the
    /// layout's offsets.
    header: Header,
}

/// How big a segment is, in its kind's unit (`shmbus stat` says it as
/// `slots`, `bytes` or `max_keys`).
///
/// # Examples
/// ```
/// use shmbus::{stat::Size, stream::{self, Producer}};
/// # let name = format!("/dev/shm/shmbus-doc-size-{}", std::process::id());
/// let producer = Producer::<[u8]>::create(&name, &stream::Options::new(4096))?;
/// assert_eq!(shmbus::stat::stat(&name)?.size, Some(Size::Bytes(4096)));
/// # shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Size {
    /// A bus's or a pool bus's ring: `slots` slots of `slot_size` bytes
    /// (the stamp and the message, or a pool's descriptor).
    Slots {
        /// Slots in the ring, a power of two.
        slots: u64,
        /// Bytes per slot, a multiple of 64.
        slot_size: u32,
    },
    /// A stream's ring, in bytes.
    Bytes(u64),
    /// A blackboard's table: the most keys it holds.
    Keys(u64),
    /// A service's call slots: `clients` client entries of `slots` each
    /// (the most requests one client may have outstanding).
    Calls {
        /// Client entries.
        clients: u64,
        /// Call slots per client.
        slots: u32,
    },
}

/// A bus's limits on lossless subscribers (`OpenOptions::lossless`).
///
/// # Examples
/// ```
/// use shmbus::{BusOptions, Publisher};
/// # let name = format!("/dev/shm/shmbus-doc-lossless-{}", std::process::id());
/// let publisher = Publisher::<u64>::create(&name, &BusOptions::new(64))?;
/// let lossless = shmbus::stat::stat(&name)?.lossless.expect("a bus");
/// assert!(lossless.max > 0 && lossless.evict_ns > 0);
/// # shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lossless {
    /// How many lossless subscribers may gate the bus (0: they are
    /// refused).
    pub max: u32,
    /// The eviction timeout of a lossless subscriber, ns.
    pub evict_ns: u64,
}

impl BusStat {
    /// The validated header: the layout's offsets, for tests and tools
    /// that craft or patch segment files. Not a stable interface.
    #[doc(hidden)]
    pub fn raw_header(&self) -> &Header {
        &self.header
    }
}

/// A blackboard's table, as [`stat`] reads it: its shape, the keys the
/// writer counted, its version (every put and removal moves it up by one:
/// the updates since creation), and one pass over the entries' stamps for
/// their versions and those left mid-write. Read without a lock while the
/// writer works.
///
/// # Examples
/// ```
/// use shmbus::blackboard::{self, Writer};
/// # let name = format!("/dev/shm/shmbus-doc-bbstat-{}", std::process::id());
/// let mut writer = Writer::<u64, u64>::create(&name, &blackboard::Options::new(100))?;
/// writer.put(&1, &10)?;
/// writer.put(&1, &11)?;
/// let bb = shmbus::stat::stat(&name)?.blackboard.expect("a blackboard");
/// assert_eq!((bb.keys, bb.capacity, bb.entries, bb.updates), (1, 100, 256, 2));
/// assert_eq!((bb.key_type.name.as_str(), bb.mid_write), ("u64", 0));
/// assert_eq!(bb.unblock, None); // one writer
/// # shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlackboardStat {
    /// Keys in the table, as its writer last counted them.
    pub keys: u64,
    /// The most keys it holds.
    pub capacity: u64,
    /// Entries in the table (a power of two, at least twice `capacity`).
    pub entries: u64,
    /// The table's version: puts and removals since creation.
    pub updates: u64,
    /// The key type (the value type is the header's `msg`).
    pub key_type: TypeFingerprint,
    /// Entries whose stamp was odd when read: being written, or left so by
    /// a writer that died (stuck if no writer lives).
    pub mid_write: u64,
    /// Every entry ever written (its stamp not 0), in table order, with
    /// the version its stamp names: a sampler that keeps two tells which
    /// entries were written in between
    /// ([`blackboard_watch`](super::blackboard_watch) then counts how
    /// often, [`blackboard_keys`](super::blackboard_keys) reads their
    /// keys). The pass loads one stamp per entry, so its cost is one cache
    /// line per entry (a million entries: a million lines), and 24 bytes
    /// per written entry here.
    pub versions: Vec<EntryVersion>,
    /// A table made for many writers (`blackboard::ManyWriter`): its
    /// unblock timeout; `None` for a single-writer table.
    pub unblock: Option<std::time::Duration>,
}

/// A pool bus's blocks, as [`stat`] reads them: its geometry, where each
/// block is, and which registry entries hold blocks. Read without a lock
/// while publishers and subscribers work, so the figures are one pass that
/// may mix moments: they add up to `blocks`, but a block may be counted
/// where it was a moment before.
///
/// # Examples
/// ```
/// use shmbus::{OpenOptions, Received, Start, Wait, TypeFingerprint, pool};
/// # let name = format!("/dev/shm/shmbus-doc-poolstat-{}", std::process::id());
/// // 4 slots, 8 blocks of 256 bytes.
/// let mut publisher = pool::Publisher::<[u8]>::create(&name, &shmbus::pool::Options::new(4, 256, 8))?;
/// let mut subscriber = pool::Subscriber::<[u8]>::open(&name, &OpenOptions::default().start(Start::Oldest))?;
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
/// assert_eq!(pool.block_type, TypeFingerprint::bytes(256)); // a raw pool
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
    /// The message type its blocks carry, as its creator recorded it
    /// (`bytes` of the block size for a raw pool; size, alignment and
    /// hash 0 for a pool made before the header recorded it).
    pub block_type: TypeFingerprint,
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
    /// # let census = shmbus::pool::Publisher::<[u8], _>::on_heap(4, 64, 5)?.census();
    /// let one = PoolHolder { entry: 3, pid: 42, alive: true, held: 2 };
    /// let block_type = shmbus::TypeFingerprint::of::<u64>();
    /// let pool = PoolStat { block_size: 64, blocks: 5, block_type, census, holders: vec![one] };
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
/// use shmbus::{BusOptions, OpenOptions, Received, Wait, pool};
/// # let name = format!("/dev/shm/shmbus-doc-poolholder-{}", std::process::id());
/// let mut publisher = pool::Publisher::<[u8]>::create(&name, &shmbus::pool::Options::new(4, 64, 8))?;
/// let mut subscriber = pool::Subscriber::<[u8]>::open(&name, &OpenOptions::default())?;
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
    /// Blocks it holds now (at most `pool::Subscriber::MAX_HELD`).
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
    /// The contract it opened with, and whether it still holds (of a gone
    /// entry: the one it left with).
    pub contract: Contract,
    /// How many times the publisher evicted it (demoted it to lossy).
    pub evictions: u32,
    /// ns the publisher spent blocked waiting for it to read.
    pub blocked_ns: u64,
}

/// A subscriber's contract, as its line and the gating set say it
/// (`OpenOptions::lossless`).
///
/// # Examples
/// ```
/// use shmbus::stat::Contract;
/// assert_eq!(Contract::Evicted.to_string(), "lossless, evicted");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Contract {
    /// Lapped when it falls a ring behind.
    Lossy,
    /// The publisher waits for it.
    Lossless,
    /// Opened lossless, evicted since: lossy now. (Also a live line that
    /// asks lossless without its gating bit: one still joining, or a
    /// line that cannot be believed.)
    Evicted,
}

impl std::fmt::Display for Contract {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Contract::Lossy => "lossy",
            Contract::Lossless => "lossless",
            Contract::Evicted => "lossless, evicted",
        })
    }
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
/// lock, read by `bus::activity::read_fields`, never settles) is reported
/// as corrupt. `journaled`: the bus has a
/// journal, whose joiners start at the journal's base, which may come
/// before the bus's first sequence (a journal continued by a new bus).
/// `alive`: its registry lock is held (a gone entry's contract is the one
/// it left with, see [`contract_of`]).
fn read_line(
    region: &impl Region,
    c: usize,
    entry: usize,
    first: u64,
    journaled: bool,
    alive: bool,
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
        contract: contract_of(region, c, at, entry, alive),
        evictions: region.word32(at + sl::EVICTIONS).load(Ordering::Relaxed),
        blocked_ns: region.word(at + sl::BLOCKED_NS).load(Ordering::Relaxed),
    };
    let Some(activity::Fields {
        start,
        skipped,
        position,
    }) = activity::read_fields(region, at)
    else {
        return out;
    };
    // The cursor after the line (the Acquire fence in `read_fields` keeps
    // this load after the line's): the cursor only grows, so it is at
    // least what it was when the position was stored, and a position past
    // it is the subscriber's doing, not the reader's timing.
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
    out
}

/// The line's `CONTRACT` and the entry's bit in `GATING` (a value other
/// than the two defined reads as lossy: untrusted, and it gates nothing
/// unless its bit is set, which then says lossless). A gone entry's bit
/// says nothing (a dead one's stays set until a publisher finds its lock
/// free, and one that left cleared its own): it left lossless unless its
/// line counts an eviction (an evicted subscriber stays lossy).
fn contract_of(region: &impl Region, c: usize, at: usize, entry: usize, alive: bool) -> Contract {
    use crate::wire::{contract, subscriber_line as sl};
    let asked = region.word32(at + sl::CONTRACT).load(Ordering::Relaxed) == contract::LOSSLESS;
    if !alive {
        let evicted = region.word32(at + sl::EVICTIONS).load(Ordering::Relaxed) != 0;
        return match (asked, evicted) {
            (false, _) => Contract::Lossy,
            (true, false) => Contract::Lossless,
            (true, true) => Contract::Evicted,
        };
    }
    let gating = region
        .word(c + control::GATING + 8 * (entry / 64))
        .load(Ordering::Acquire)
        & (1 << (entry % 64))
        != 0;
    match (gating, asked) {
        (true, _) => Contract::Lossless,
        (false, true) => Contract::Evicted,
        (false, false) => Contract::Lossy,
    }
}

/// LAYOUT §5.1's checks of one subscriber line, as wrapping distances
/// from an origin: the bus's `first_seq`, or on a journaled bus the line's
/// own `start` (a journal joiner starts at the journal's base, which on a
/// bus continuing an older journal is below `first_seq`, and stands there
/// while it reads the journal, §22.3), which must then not be past the
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
/// use shmbus::{Wait, stream::{self, Producer}};
/// # let name = format!("/dev/shm/shmbus-doc-streamstat-{}", std::process::id());
/// let mut producer = Producer::<[u8]>::create(&name, &stream::Options::new(4096))?;
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
/// assert_eq!(stat.msg.name, "u64");
/// shmbus::remove(&name)?;
/// assert!(matches!(shmbus::stat::stat(&name), Err(OpenError::NotFound { .. })));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn stat(name: &str) -> Result<BusStat, OpenError> {
    let path = resolve(name)?;
    stat_path(&path, Duration::from_millis(100))
}

pub(super) fn stat_path(path: &Path, init_timeout: Duration) -> Result<BusStat, OpenError> {
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
    let kind = SegmentKind::of(&header);
    let journaled = kind == SegmentKind::JournaledBus;
    if header.kind == Kind::Broadcast {
        for i in 0..control::REGISTRY_SLOTS {
            if lock::is_held(fd, lock_byte::REGISTRY + i as u64).map_err(io)? {
                subscribers.push(read_line(&region, c, i, header.first_seq, journaled, true));
            } else if region
                .word32(c + control::REGISTRY + 4 * i)
                .load(Ordering::Relaxed)
                != 0
            {
                gone.push(read_line(&region, c, i, header.first_seq, journaled, false));
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
                // `Header::read` reads it with the pool.
                block_type: header
                    .block_msg
                    .clone()
                    .unwrap_or_else(|| TypeFingerprint::new("", 0, 0)),
                census,
                holders,
            })
        }
        _ => None,
    };
    let blackboard = match header.kind {
        Kind::Blackboard => {
            use crate::wire::blackboard::{control as bc, entry};
            // `validate_kind` has checked the table fits in the file.
            let geo = header
                .blackboard_geometry()
                .map_err(|e| OpenError::InvalidGeometry(e.to_string()))?;
            let data = header.data_offset as usize;
            // One load per entry, bounded by the validated `entries`: a
            // stamp only, never the entry's words.
            let mut versions = Vec::new();
            for i in 0..geo.entries {
                let at = data + (i * geo.entry_size) as usize + entry::STAMP;
                let stamp = region.word(at).load(Ordering::Relaxed);
                if stamp != 0 {
                    versions.push(EntryVersion {
                        entry: i,
                        version: stamp.div_ceil(2),
                        writing: stamp & 1 == 1,
                    });
                }
            }
            let mid_write = versions.iter().filter(|e| e.writing).count() as u64;
            Some(BlackboardStat {
                keys: region.word(c + bc::KEYS).load(Ordering::Relaxed),
                capacity: geo.keys,
                entries: geo.entries,
                updates: region.word(c + bc::VERSION).load(Ordering::Acquire),
                key_type: header
                    .key
                    .clone()
                    .unwrap_or_else(|| TypeFingerprint::new("", 0, 0)),
                mid_write,
                versions,
                unblock: (kind == SegmentKind::ManyWriterBlackboard).then(|| {
                    let ns = region.word(c + bc::UNBLOCK_NS).load(Ordering::Relaxed);
                    std::time::Duration::from_nanos(ns)
                }),
            })
        }
        _ => None,
    };
    let service = match header.kind {
        // `validate_kind` has checked the control area and the call slots
        // fit in the file; `service::read` checks every load again.
        Kind::Service => Some(service::read(&region, &header, service::probe(fd))?),
        _ => None,
    };
    // A service's control area has no cursor and no publisher: its figures
    // from its servers' lines.
    let (head, publisher_pid, publisher_alive) = match &service {
        Some(svc) => (
            svc.per_server
                .iter()
                .fold(0u64, |sum, s| sum.wrapping_add(s.answered)),
            0,
            false,
        ),
        None => (
            head,
            region
                .word32(c + control::PUBLISHER_PID)
                .load(Ordering::Relaxed),
            lock::is_held(fd, lock_byte::PUBLISHER).map_err(io)?,
        ),
    };
    // Neither a stream nor a blackboard has a bus's gate or epoch.
    let bus = header.kind == Kind::Broadcast;
    let lossless = bus.then(|| Lossless {
        max: region
            .word32(c + control::MAX_GATING)
            .load(Ordering::Relaxed),
        evict_ns: region.word(c + control::EVICT_NS).load(Ordering::Relaxed),
    });
    let size = match header.kind {
        Kind::Broadcast => Some(Size::Slots {
            slots: header.capacity,
            slot_size: header.slot_size,
        }),
        Kind::Stream => Some(Size::Bytes(header.capacity)),
        Kind::Blackboard => blackboard.as_ref().map(|bb| Size::Keys(bb.capacity)),
        Kind::Service => header.service.map(|shape| Size::Calls {
            clients: header.capacity,
            slots: shape.slots,
        }),
        Kind::Unknown(_) => None,
    };
    Ok(BusStat {
        kind,
        size,
        msg: header.msg.clone(),
        first_seq: header.first_seq,
        created_ns: header.created_ns,
        creator_pid: header.creator_pid,
        journal: header.journal.clone(),
        huge_page_size: header.huge_pages().then_some(header.page_size),
        lossless,
        stream,
        pool,
        blackboard,
        service,
        path: path.to_owned(),
        head,
        published: head.wrapping_sub(header.first_seq),
        // A stream's HEAD is where a bus's epoch is.
        epoch: bus.then(|| region.word(c + control::EPOCH).load(Ordering::Acquire)),
        publisher_pid,
        publisher_alive,
        attached: lock::is_held(fd, lock_byte::ATTACHED).map_err(io)?,
        subscribers,
        gone,
        header,
    })
}
