//! How C says how to create and open: the flags and constants
//! (`SHMBUS_START_*`, `SHMBUS_WAIT_*`, `SHMBUS_PREFAULT`, ...), the
//! structs the kinds share ([`BusOpts`] for every bus, [`OpenOpts`] for
//! every opener) with their defaults, and their checked conversion to the
//! core's options; the checks of mode, flags and wait are a stream's too.
//! (A stream's own struct is `stream.rs`'s, a journal's `journal.rs`'s.)

use std::ffi::c_char;
use std::time::Duration;

use shmbus_core::{
    BusOptions, OpenOptions, Publishers, SegmentKind, Start, WaitStrategy,
    bus::{DEFAULT_EVICT, DEFAULT_MAX_LOSSLESS, MAX_EVICT, MAX_UNBLOCK, MIN_TIMEOUT, Many},
    mem::HugePages,
    pool,
};

use crate::args::{c_str, required};
use crate::entry::Failure;

/// Where a new subscriber starts: only messages published after it opened
/// (the default, 0).
pub const SHMBUS_START_NEXT: u32 = 0;
/// Where a new subscriber starts: the oldest message still in the ring.
pub const SHMBUS_START_OLDEST: u32 = 1;
/// Where a new subscriber starts: the newest message already published.
pub const SHMBUS_START_LATEST: u32 = 2;

/// How a call waits: spin for `spin_ns`, then sleep on a futex (the
/// default, 0).
pub const SHMBUS_WAIT_SPIN_FUTEX: u32 = 0;
/// How a call waits: spin for `spin_ns`, then spin with `sched_yield`.
pub const SHMBUS_WAIT_SPIN_YIELD: u32 = 1;
/// How a call waits: spin without pause (lowest latency, a core at 100%).
pub const SHMBUS_WAIT_BUSY_SPIN: u32 = 2;

/// Flag: touch every page now, so the first messages do not fault.
pub const SHMBUS_PREFAULT: u32 = 1;
/// Flag: `mlock` the segment (fails if `RLIMIT_MEMLOCK` is too low).
pub const SHMBUS_MLOCK: u32 = 2;
/// Open flag: a bus subscriber takes no entry in the bus's registry (not
/// shown by `shmbus stat`/`top`).
pub const SHMBUS_NO_REGISTER: u32 = 4;
/// Create flag: back a bus named by a bare name with transparent huge pages.
pub const SHMBUS_HUGE_PAGES_TRANSPARENT: u32 = 8;
/// Create flag: the bus is a path on a hugetlbfs mount.
pub const SHMBUS_HUGE_PAGES_HUGETLBFS: u32 = 16;
/// Open flag: a bus or pool subscriber is lossless: the publisher never
/// overwrites a message it has not read (it waits, or its
/// `shmbus_publisher_try_publish` says `SHMBUS_FULL`), until it dies or
/// holds the publisher back for the bus's eviction timeout, when it is
/// demoted to lossy and its next receive says `SHMBUS_LAGGED`. Takes a
/// registry entry (not with `SHMBUS_NO_REGISTER`). Refused
/// (`SHMBUS_E_LOSSLESS_REFUSED`) by a bus made with `SHMBUS_NO_LOSSLESS`,
/// or one with as many as it allows. Every broadcast kind takes one:
/// plain, many-publisher, pool, journaled.
pub const SHMBUS_LOSSLESS: u32 = 32;
/// Create flag: the bus refuses lossless subscribers (`SHMBUS_LOSSLESS`),
/// so its publisher never waits; `lossless_subscribers` must then be 0.
pub const SHMBUS_NO_LOSSLESS: u32 = 64;

/// How to create a bus (`shmbus_publisher_create`,
/// `shmbus_many_publisher_create`, `shmbus_journal_publisher_create`,
/// `shmbus_pool_publisher_create`). Start from
/// `shmbus_bus_options_default()` (or zero it) and set `capacity` and
/// `msg_size` (or the pool's two fields).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct BusOpts {
    /// Slots in the ring: a power of two.
    pub capacity: u64,
    /// Many-publisher buses only (`shmbus_many_publisher_create`,
    /// `shmbus_pool_publisher_create_many`): nanoseconds a claimed slot may
    /// stay uncommitted (its publisher died or stalled) before subscribers
    /// skip it: 1 ms to 60 s, another is refused with
    /// `SHMBUS_E_INVALID_ARGUMENT` (0 = 1 s, the default, as for every
    /// field here). Must be 0 for a single-publisher bus, which has no
    /// unblock timeout: anything else is refused there with
    /// `SHMBUS_E_INVALID_ARGUMENT`.
    pub unblock_timeout_ns: u64,
    /// Pool buses only: bytes per block (a multiple of 64); 0 elsewhere.
    pub pool_block_size: u64,
    /// Pool buses only: blocks in the pool (more than `capacity`); 0
    /// elsewhere.
    pub pool_blocks: u64,
    /// The message type's name the bus records (NULL: raw bytes, recorded
    /// as "bytes" with alignment 1). Openers that name a type
    /// (`shmbus_open_options_t.type_name`) must name this one. On a pool
    /// bus it names the blocks' message type, with `msg_size` its size
    /// (at most `pool_block_size`) and `type_align` its alignment (up to
    /// 64); NULL: messages of any length up to a block.
    pub type_name: *const c_char,
    /// Bytes per message. On a pool bus, whose messages are any length up
    /// to a block, 0, or the size of the type `type_name` names.
    pub msg_size: u32,
    /// The message type's alignment, recorded with `type_name` (0 = 1);
    /// 0 without a `type_name`.
    pub type_align: u32,
    /// File mode bits within 0777 (0 = 0600, owner only; 0660 lets the
    /// group in); any other bit is refused.
    pub mode: u32,
    /// `SHMBUS_PREFAULT`, `SHMBUS_MLOCK`, `SHMBUS_HUGE_PAGES_*`,
    /// `SHMBUS_NO_LOSSLESS`.
    pub flags: u32,
    /// How many lossless subscribers may hold the publisher back at once
    /// (0 = 8). To refuse them all, set the flag `SHMBUS_NO_LOSSLESS` (and
    /// leave this 0).
    pub lossless_subscribers: u32,
    /// Nanoseconds one lossless subscriber may hold the publisher back
    /// before it is evicted (demoted to lossy) and the publisher goes on:
    /// 1 ms to 60 s, another is refused with `SHMBUS_E_INVALID_ARGUMENT`
    /// (0 = 1 s, the default, as for every field here; never "at once").
    pub evict_after_ns: u64,
}

/// How to open an existing bus or stream (subscribers, publishers and
/// producers that attach, consumers, journal joiners). NULL where a call
/// takes one means all defaults, as does `shmbus_open_options_default()`
/// or a zeroed struct.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct OpenOpts {
    /// How long the blocking calls of this handle spin before they yield or
    /// sleep (0 = 50 µs).
    pub spin_ns: u64,
    /// How long to wait for a bus that is being created (0 = 1 s).
    pub init_timeout_ns: u64,
    /// Journal joins: how long to wait for the publisher's flush (0 = 5 s).
    pub flush_timeout_ns: u64,
    /// A message type the bus must carry (NULL: any); on a pool bus, the
    /// type its blocks carry (`bytes` and the block size for a pool made
    /// from C, Python or the CLI; a Rust type for a typed Rust pool). A bus
    /// made with another name, size or alignment is refused with a message
    /// naming both.
    pub type_name: *const c_char,
    /// With `type_name`: the type's size in bytes; 0 without one.
    pub type_size: u32,
    /// With `type_name`: the type's alignment (0 = 1); 0 without one.
    pub type_align: u32,
    /// Bus subscribers: `SHMBUS_START_NEXT`, `_OLDEST` or `_LATEST`.
    pub start: u32,
    /// `SHMBUS_WAIT_SPIN_FUTEX`, `_SPIN_YIELD` or `_BUSY_SPIN`.
    pub wait: u32,
    /// `SHMBUS_PREFAULT`, `SHMBUS_MLOCK`, `SHMBUS_NO_REGISTER`;
    /// `SHMBUS_LOSSLESS` for a bus subscriber.
    pub flags: u32,
}

fn check_flags(flags: u32, allowed: u32, what: &str) -> Result<(), Failure> {
    let unknown = flags & !allowed;
    if unknown != 0 {
        return Err(Failure::argument(format!(
            "{what}: unknown flag bits {unknown:#x} (allowed here: {allowed:#x})"
        )));
    }
    Ok(())
}

pub(crate) fn strategy(wait: u32, spin_ns: u64, what: &str) -> Result<WaitStrategy, Failure> {
    let spin = if spin_ns == 0 {
        Duration::from_micros(50)
    } else {
        Duration::from_nanos(spin_ns)
    };
    match wait {
        SHMBUS_WAIT_SPIN_FUTEX => Ok(WaitStrategy::SpinFutex { spin }),
        SHMBUS_WAIT_SPIN_YIELD => Ok(WaitStrategy::SpinYield { spin }),
        SHMBUS_WAIT_BUSY_SPIN => Ok(WaitStrategy::BusySpin),
        other => Err(Failure::argument(format!(
            "{what}: wait is {other}, expected SHMBUS_WAIT_SPIN_FUTEX (0), \
             SHMBUS_WAIT_SPIN_YIELD (1) or SHMBUS_WAIT_BUSY_SPIN (2)"
        ))),
    }
}

/// What creating a bus or a stream takes from its options' `mode` and
/// `flags`.
pub(crate) struct Creation {
    pub(crate) mode: u32,
    pub(crate) prefault: bool,
    pub(crate) mlock: bool,
    pub(crate) huge_pages: Option<HugePages>,
}

pub(crate) fn creation(mode: u32, flags: u32, what: &str) -> Result<Creation, Failure> {
    check_flags(
        flags,
        SHMBUS_PREFAULT
            | SHMBUS_MLOCK
            | SHMBUS_HUGE_PAGES_TRANSPARENT
            | SHMBUS_HUGE_PAGES_HUGETLBFS,
        what,
    )?;
    // A mode the file cannot take is refused, never cut to its low bits:
    // 0xffffffff would otherwise become 0777, open to every user.
    if mode & !0o777 != 0 {
        return Err(Failure::argument(format!(
            "{what}: mode is {mode:#o}, expected permission bits within 0777 (0 = 0600)"
        )));
    }
    Ok(Creation {
        mode: if mode == 0 { 0o600 } else { mode },
        prefault: flags & SHMBUS_PREFAULT != 0,
        mlock: flags & SHMBUS_MLOCK != 0,
        huge_pages: huge_pages(flags, what)?,
    })
}

fn huge_pages(flags: u32, what: &str) -> Result<Option<HugePages>, Failure> {
    match (
        flags & SHMBUS_HUGE_PAGES_TRANSPARENT != 0,
        flags & SHMBUS_HUGE_PAGES_HUGETLBFS != 0,
    ) {
        (false, false) => Ok(None),
        (true, false) => Ok(Some(HugePages::Transparent)),
        (false, true) => Ok(Some(HugePages::Hugetlbfs)),
        (true, true) => Err(Failure::argument(format!(
            "{what}: SHMBUS_HUGE_PAGES_TRANSPARENT and SHMBUS_HUGE_PAGES_HUGETLBFS together"
        ))),
    }
}

/// `shmbus_bus_options_t`, checked for a segment of `kind` (a bus, a
/// many-publisher bus, or a pool bus of either; a journaled bus's options
/// are a bus's): the fields every kind shares, and that the other kinds'
/// are unset (an unblock timeout is a many-publisher bus's only).
///
/// # Safety
/// `opts` is NULL or points to a live `BusOpts`.
unsafe fn checked<'a>(
    opts: *const BusOpts,
    kind: SegmentKind,
) -> Result<(&'a BusOpts, Creation), Failure> {
    const WHAT: &str = "bus options";
    let publishers = kind.publishers().unwrap_or(Publishers::One);
    // SAFETY: NULL or live, by the contract.
    let o = unsafe { required(opts, "bus options (shmbus_bus_options_t*)") }?;
    if o.capacity == 0 {
        return Err(Failure::argument(format!(
            "{WHAT}: capacity is 0, expected a power of two (the number of slots)"
        )));
    }
    // SHMBUS_NO_LOSSLESS is a bus's flag, not a stream's: `creation`,
    // which streams share, does not know it.
    let c = creation(o.mode, o.flags & !SHMBUS_NO_LOSSLESS, WHAT)?;
    if publishers == Publishers::Many {
        timeout_ns(
            WHAT,
            "unblock_timeout_ns",
            o.unblock_timeout_ns,
            MAX_UNBLOCK,
        )?;
    }
    if publishers == Publishers::One && o.unblock_timeout_ns != 0 {
        let many = if kind.is_pool() {
            "shmbus_pool_publisher_create_many"
        } else {
            "shmbus_many_publisher_create"
        };
        return Err(Failure::argument(format!(
            "{WHAT}: unblock_timeout_ns is {}, but a single-publisher bus claims no slot \
             to unblock: expected 0 (a many-publisher bus, made by {many}, takes one)",
            o.unblock_timeout_ns
        )));
    }
    if kind.is_pool() {
        if o.pool_block_size == 0 || o.pool_blocks == 0 {
            return Err(Failure::argument(format!(
                "{WHAT}: a pool bus needs pool_block_size and pool_blocks (found {} and {})",
                o.pool_block_size, o.pool_blocks
            )));
        }
        if o.type_name.is_null() && (o.msg_size != 0 || o.type_align != 0) {
            return Err(Failure::argument(format!(
                "{WHAT}: msg_size {} and type_align {} without a type_name: a pool bus \
                 carries messages of any length up to a block; expected 0 and 0, or a \
                 type_name with its size and alignment (the blocks' message type)",
                o.msg_size, o.type_align
            )));
        }
        if !o.type_name.is_null() && o.msg_size == 0 {
            return Err(Failure::argument(format!(
                "{WHAT}: type_name names the blocks' message type but msg_size is 0, \
                 expected the type's size in bytes (at most pool_block_size)"
            )));
        }
    } else {
        if o.pool_block_size != 0 || o.pool_blocks != 0 {
            return Err(Failure::argument(format!(
                "{WHAT}: pool_block_size/pool_blocks are set: create a pool bus with \
                 shmbus_pool_publisher_create"
            )));
        }
        if o.msg_size == 0 {
            return Err(Failure::argument(format!(
                "{WHAT}: msg_size is 0, expected the bytes per message (1 to 16 MiB)"
            )));
        }
        if o.type_name.is_null() && o.type_align != 0 {
            return Err(Failure::argument(format!(
                "{WHAT}: type_align is {} without a type_name, expected 0 \
                 (an alignment is recorded only with the type's name)",
                o.type_align
            )));
        }
    }
    Ok((o, c))
}

/// `builder` (a `BusOptions`, `pool::Options` or `stream::Options`, whose
/// setters the core shares by a macro, not a trait) with what `creation`
/// read.
macro_rules! with_creation {
    ($builder:expr, $c:expr) => {{
        let c: &$crate::options::Creation = &$c;
        let b = $builder.mode(c.mode).prefault(c.prefault).mlock(c.mlock);
        match c.huge_pages {
            Some(huge) => b.huge_pages(huge),
            None => b,
        }
    }};
}
pub(crate) use with_creation;

/// `shmbus_bus_options_t` of a single-publisher bus of fixed-size
/// messages (a plain or journaled bus) as `BusOptions`.
///
/// # Safety
/// `opts` is NULL or points to a live `BusOpts` whose `type_name` is NULL
/// or a NUL-terminated string.
pub(crate) unsafe fn bus_options(opts: *const BusOpts) -> Result<BusOptions, Failure> {
    // SAFETY: as this function's contract says.
    let (o, c) = unsafe { checked(opts, SegmentKind::Bus) }?;
    // SAFETY: as this function's contract says.
    unsafe { plain_options(o, c) }
}

/// `shmbus_bus_options_t` of a many-publisher bus of fixed-size messages
/// as `BusOptions<Many>`.
///
/// # Safety
/// As [`bus_options`].
unsafe fn many_bus_options(opts: *const BusOpts) -> Result<BusOptions<Many>, Failure> {
    // SAFETY: as this function's contract says.
    let (o, c) = unsafe { checked(opts, SegmentKind::ManyPublisherBus) }?;
    // SAFETY: as this function's contract says.
    let b = unsafe { plain_options(o, c) }?.many();
    Ok(match o.unblock_timeout_ns {
        0 => b,
        ns => b.unblock_timeout(Duration::from_nanos(ns)),
    })
}

/// What a bus of fixed-size messages takes from `o`, checked, whatever
/// its publishers.
///
/// # Safety
/// `o.type_name` is NULL or a NUL-terminated string.
unsafe fn plain_options(o: &BusOpts, c: Creation) -> Result<BusOptions, Failure> {
    let mut b = with_creation!(BusOptions::new(o.capacity).msg_size(o.msg_size), c);
    let (max, evict) = gate(o)?;
    b = b.lossless_subscribers(max).evict_after(evict);
    if !o.type_name.is_null() {
        // SAFETY: not NULL, NUL-terminated by the contract.
        let name = unsafe { c_str(o.type_name, "type_name") }?;
        let align = if o.type_align == 0 { 1 } else { o.type_align };
        // A bad name or alignment is refused by the create.
        b = b.message_type(name, align);
    }
    Ok(b)
}

/// The lossless limit and eviction timeout of `o` (any broadcast kind),
/// checked: a zeroed struct gives the defaults (8 and 1 s),
/// `SHMBUS_NO_LOSSLESS` a bus that refuses them.
fn gate(o: &BusOpts) -> Result<(u32, Duration), Failure> {
    const WHAT: &str = "bus options";
    let refuse = o.flags & SHMBUS_NO_LOSSLESS != 0;
    if refuse && o.lossless_subscribers != 0 {
        return Err(Failure::argument(format!(
            "{WHAT}: SHMBUS_NO_LOSSLESS with lossless_subscribers {}, expected 0 \
             (the flag refuses them all)",
            o.lossless_subscribers
        )));
    }
    timeout_ns(WHAT, "evict_after_ns", o.evict_after_ns, MAX_EVICT)?;
    let max = match (refuse, o.lossless_subscribers) {
        (true, _) => 0,
        (false, 0) => DEFAULT_MAX_LOSSLESS,
        (false, n) => n,
    };
    let evict = match o.evict_after_ns {
        0 => DEFAULT_EVICT,
        ns => Duration::from_nanos(ns),
    };
    Ok((max, evict))
}

/// A timeout field of `ns` nanoseconds: 0 (the default) or within
/// `MIN_TIMEOUT..=max`, as the library's create checks it; refused here
/// first, naming the field.
fn timeout_ns(what: &str, field: &str, ns: u64, max: Duration) -> Result<(), Failure> {
    let as_ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    let (min_ns, max_ns) = (as_ns(MIN_TIMEOUT), as_ns(max));
    if ns == 0 || (min_ns..=max_ns).contains(&ns) {
        return Ok(());
    }
    Err(Failure::argument(format!(
        "{what}: {field} is {ns}, expected {min_ns} to {max_ns} ns (1 ms to {} s), \
         or 0 for the default (1 s)",
        max.as_secs()
    )))
}

/// `shmbus_bus_options_t` of a pool bus for `publishers` as
/// `pool::Options` (which [`pool::Options::many`] turns into a many-publisher
/// pool's), and its `unblock_timeout_ns`. A `type_name` names the blocks'
/// message type, `msg_size` and `type_align` its size and alignment.
///
/// # Safety
/// `opts` is NULL or points to a live `BusOpts` whose `type_name` is NULL
/// or a NUL-terminated string.
unsafe fn pool_options(
    opts: *const BusOpts,
    publishers: Publishers,
) -> Result<(pool::Options, u64), Failure> {
    let kind = match publishers {
        Publishers::One => SegmentKind::Pool,
        Publishers::Many => SegmentKind::ManyPublisherPool,
    };
    // SAFETY: as this function's contract says.
    let (o, c) = unsafe { checked(opts, kind) }?;
    let mut p = with_creation!(
        pool::Options::new(o.capacity, o.pool_block_size, o.pool_blocks),
        c
    );
    if !o.type_name.is_null() {
        // SAFETY: not NULL, NUL-terminated by the contract.
        let name = unsafe { c_str(o.type_name, "type_name") }?;
        let align = if o.type_align == 0 { 1 } else { o.type_align };
        // A bad name, size or alignment is refused by the create.
        p = p.message_type(name, o.msg_size, align);
    }
    let (max, evict) = gate(o)?;
    p = p.lossless_subscribers(max).evict_after(evict);
    Ok((p, o.unblock_timeout_ns))
}

/// The options a creating call reads from `shmbus_bus_options_t`: a
/// copying bus's or a pool bus's, for one publisher or many (whose type
/// says whether an unblock timeout is taken or refused).
pub(crate) trait CreateOptions: Sized {
    /// Reads and checks `opts`.
    ///
    /// # Safety
    /// As [`bus_options`].
    unsafe fn from_c(opts: *const BusOpts) -> Result<Self, Failure>;
}

impl CreateOptions for BusOptions {
    unsafe fn from_c(opts: *const BusOpts) -> Result<Self, Failure> {
        // SAFETY: as the trait's contract says.
        unsafe { bus_options(opts) }
    }
}

impl CreateOptions for BusOptions<Many> {
    unsafe fn from_c(opts: *const BusOpts) -> Result<Self, Failure> {
        // SAFETY: as the trait's contract says.
        unsafe { many_bus_options(opts) }
    }
}

impl CreateOptions for pool::Options {
    unsafe fn from_c(opts: *const BusOpts) -> Result<Self, Failure> {
        // SAFETY: as the trait's contract says.
        unsafe { pool_options(opts, Publishers::One) }.map(|(p, _)| p)
    }
}

impl CreateOptions for pool::Options<Many> {
    unsafe fn from_c(opts: *const BusOpts) -> Result<Self, Failure> {
        // SAFETY: as the trait's contract says.
        let (p, unblock_ns) = unsafe { pool_options(opts, Publishers::Many) }?;
        Ok(match unblock_ns {
            0 => p.many(),
            ns => p.many().unblock_timeout(Duration::from_nanos(ns)),
        })
    }
}

/// The parts of `shmbus_open_options_t` the journal's join also takes.
pub(crate) struct Opened {
    pub(crate) open: OpenOptions,
    pub(crate) wait: WaitStrategy,
    pub(crate) init_timeout: Duration,
    pub(crate) flush_timeout: Option<Duration>,
    /// (name, size, align) of the message type asked for.
    pub(crate) message_type: Option<(String, u32, u32)>,
}

/// `shmbus_open_options_t` (NULL: defaults) as `OpenOptions`.
///
/// # Safety
/// `opts` is NULL or points to a live `OpenOpts` whose `type_name` is NULL
/// or a NUL-terminated string.
pub(crate) unsafe fn open_options(opts: *const OpenOpts) -> Result<Opened, Failure> {
    const WHAT: &str = "open options";
    let default = open_defaults();
    // SAFETY: NULL or live, by the contract.
    let o = unsafe { opts.as_ref() }.unwrap_or(&default);
    check_flags(
        o.flags,
        SHMBUS_PREFAULT | SHMBUS_MLOCK | SHMBUS_NO_REGISTER | SHMBUS_LOSSLESS,
        WHAT,
    )?;
    let start = match o.start {
        SHMBUS_START_NEXT => Start::Next,
        SHMBUS_START_OLDEST => Start::Oldest,
        SHMBUS_START_LATEST => Start::Latest,
        other => {
            return Err(Failure::argument(format!(
                "{WHAT}: start is {other}, expected SHMBUS_START_NEXT (0), \
                 SHMBUS_START_OLDEST (1) or SHMBUS_START_LATEST (2)"
            )));
        }
    };
    let wait = strategy(o.wait, o.spin_ns, WHAT)?;
    let init_timeout = if o.init_timeout_ns == 0 {
        Duration::from_secs(1)
    } else {
        Duration::from_nanos(o.init_timeout_ns)
    };
    let mut open = OpenOptions::default()
        .start(start)
        .wait_strategy(wait)
        .init_timeout(init_timeout)
        .prefault(o.flags & SHMBUS_PREFAULT != 0)
        .mlock(o.flags & SHMBUS_MLOCK != 0)
        .register(o.flags & SHMBUS_NO_REGISTER == 0)
        .lossless(o.flags & SHMBUS_LOSSLESS != 0);
    if o.type_name.is_null() && (o.type_size != 0 || o.type_align != 0) {
        return Err(Failure::argument(format!(
            "{WHAT}: type_size {} and type_align {} without a type_name, expected 0 \
             (a type is checked only by its name)",
            o.type_size, o.type_align
        )));
    }
    let message_type = if o.type_name.is_null() {
        None
    } else {
        // SAFETY: not NULL, NUL-terminated by the contract.
        let name = unsafe { c_str(o.type_name, "type_name") }?;
        if o.type_size == 0 {
            return Err(Failure::argument(format!(
                "{WHAT}: type_name {name:?} with type_size 0, expected the type's size"
            )));
        }
        let align = if o.type_align == 0 { 1 } else { o.type_align };
        open = open.message_type(name, o.type_size, align);
        Some((name.to_owned(), o.type_size, align))
    };
    Ok(Opened {
        open,
        wait,
        init_timeout,
        flush_timeout: (o.flush_timeout_ns != 0).then(|| Duration::from_nanos(o.flush_timeout_ns)),
        message_type,
    })
}

fn open_defaults() -> OpenOpts {
    OpenOpts {
        spin_ns: 0,
        init_timeout_ns: 0,
        flush_timeout_ns: 0,
        type_name: std::ptr::null(),
        type_size: 0,
        type_align: 0,
        start: SHMBUS_START_NEXT,
        wait: SHMBUS_WAIT_SPIN_FUTEX,
        flags: 0,
    }
}

/// Bus options with every default: capacity and msg_size still to set.
#[unsafe(no_mangle)]
pub extern "C" fn shmbus_bus_options_default() -> BusOpts {
    BusOpts {
        capacity: 0,
        unblock_timeout_ns: 0,
        pool_block_size: 0,
        pool_blocks: 0,
        type_name: std::ptr::null(),
        msg_size: 0,
        type_align: 0,
        mode: 0o600,
        flags: 0,
        lossless_subscribers: 0,
        evict_after_ns: 0,
    }
}

/// Open options with every default: start at the next message, spin
/// 50 µs then sleep on the futex, any message type.
#[unsafe(no_mangle)]
pub extern "C" fn shmbus_open_options_default() -> OpenOpts {
    open_defaults()
}
