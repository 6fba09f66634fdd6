//! What a caller asks for when it creates or opens a segment: the size of a
//! bus ([`BusOptions`], in slots) or a stream ([`StreamOptions`], in bytes),
//! how many publishers a bus takes ([`One`] or [`Many`], in the options'
//! type), the file's mode and memory, and how an opener waits and where a
//! subscriber starts ([`OpenOptions`]). Plain values; nothing here touches
//! a file.

use std::marker::PhantomData;
use std::time::Duration;

use crate::mem::HugePages;
use crate::wait::WaitStrategy;
use crate::wire::{Publishers, TypeFingerprint};

/// The unblock timeout of a many-publisher bus created without one.
pub(crate) const DEFAULT_UNBLOCK: Duration = Duration::from_secs(1);

/// The default eviction timeout of a lossless subscriber
/// ([`BusOptions::evict_after`]).
///
/// # Examples
/// ```
/// use std::time::Duration;
/// assert_eq!(shmbus::bus::DEFAULT_EVICT, Duration::from_secs(1));
/// ```
pub const DEFAULT_EVICT: Duration = Duration::from_secs(1);

/// The longest eviction timeout: a longer one is refused at create
/// ([`GeometryError::Timeout`](crate::error::GeometryError::Timeout)),
/// and a publisher reads any larger `evict_ns` (a file written by a
/// hostile peer) as this, so no value in shared memory blocks it longer.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use shmbus::{BusOptions, CreateError, Publisher, error::GeometryError};
/// # let name = format!("/dev/shm/shmbus-doc-maxevict-{}", std::process::id());
/// assert_eq!(shmbus::bus::MAX_EVICT, Duration::from_secs(60));
/// let an_hour = BusOptions::new(64).evict_after(Duration::from_secs(3600));
/// let err = Publisher::<u64>::create(&name, &an_hour).err();
/// assert!(matches!(err, Some(CreateError::InvalidGeometry(GeometryError::Timeout { .. }))));
/// ```
pub const MAX_EVICT: Duration = Duration::from_secs(60);

/// The shortest eviction timeout ([`BusOptions::evict_after`]) and
/// unblock timeout ([`BusOptions::unblock_timeout`],
/// [`BlackboardOptions::unblock_timeout`]) a segment is created with:
/// 1 ms. A shorter one, 0 included, is refused at create
/// ([`GeometryError::Timeout`](crate::error::GeometryError::Timeout)): 0
/// means neither "at once" nor "the default" anywhere (the C API's 0 in
/// a zeroed options struct is its field's default, as for every field
/// there).
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use shmbus::{BusOptions, CreateError, Publisher, error::GeometryError};
/// # let name = format!("/dev/shm/shmbus-doc-mintimeout-{}", std::process::id());
/// assert_eq!(shmbus::bus::MIN_TIMEOUT, Duration::from_millis(1));
/// let at_once = BusOptions::new(64).evict_after(Duration::ZERO);
/// let err = Publisher::<u64>::create(&name, &at_once).err();
/// assert!(matches!(err, Some(CreateError::InvalidGeometry(GeometryError::Timeout { .. }))));
/// ```
pub const MIN_TIMEOUT: Duration = Duration::from_millis(1);

/// The longest unblock timeout a segment is created with (as
/// [`MAX_EVICT`]: a minute); a longer one is refused at create.
///
/// # Examples
/// ```
/// assert_eq!(shmbus::bus::MAX_UNBLOCK, std::time::Duration::from_secs(60));
/// ```
pub const MAX_UNBLOCK: Duration = Duration::from_secs(60);

/// `found` within `MIN_TIMEOUT..=max`, else the error naming `option`.
pub(crate) fn check_timeout(
    option: &'static str,
    found: Duration,
    max: Duration,
) -> Result<(), crate::wire::GeometryError> {
    if (MIN_TIMEOUT..=max).contains(&found) {
        Ok(())
    } else {
        Err(crate::wire::GeometryError::Timeout {
            option,
            found,
            min: MIN_TIMEOUT,
            max,
        })
    }
}

/// The default number of lossless subscribers that may gate one bus
/// ([`BusOptions::lossless_subscribers`]): each adds a line load to every
/// rescan and may hold the publisher back, so a bus allows a few, not the
/// whole registry (256).
///
/// # Examples
/// ```
/// assert_eq!(shmbus::bus::DEFAULT_MAX_LOSSLESS, 8);
/// ```
pub const DEFAULT_MAX_LOSSLESS: u32 = 8;

/// What every new segment's file gets, whatever it carries.
#[derive(Clone, Debug)]
pub(crate) struct FileOptions {
    pub(crate) mode: u32,
    pub(crate) group: Option<u32>,
    pub(crate) prefault: bool,
    pub(crate) mlock: bool,
    pub(crate) huge: Option<HugePages>,
}

impl Default for FileOptions {
    fn default() -> Self {
        FileOptions {
            mode: 0o600,
            group: None,
            prefault: false,
            mlock: false,
            huge: None,
        }
    }
}

/// Marks options for a bus with one publisher: `BusOptions<One>` (the
/// default, what [`BusOptions::new`] gives) makes a bus for
/// [`Publisher::create`](crate::Publisher::create), `PoolOptions<One>` one
/// for `PoolPublisher::create`. Named as [`Publishers::One`] names the
/// bus it makes, so the type reads as what the bus will be; options for
/// one publisher have no unblock timeout to set.
///
/// # Examples
/// ```
/// use shmbus::{BusOptions, bus::One};
/// let opts: BusOptions<One> = BusOptions::new(64);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct One;

/// Marks options for a bus with any number of publishers: `BusOptions<Many>`
/// (from [`BusOptions::many`]) makes a bus for
/// [`ManyPublisher::create`](crate::bus::ManyPublisher::create),
/// `PoolOptions<Many>` one for `PoolPublisher::create_many`. Named as
/// [`Publishers::Many`] and `shmbus create --publishers many` name that
/// bus; only these options have an unblock timeout
/// ([`BusOptions::unblock_timeout`]), so a timeout given to a bus that
/// would ignore it does not compile.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use shmbus::{BusOptions, bus::Many};
/// let opts: BusOptions<Many> = BusOptions::new(64).many().unblock_timeout(Duration::from_millis(100));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Many;

mod sealed {
    /// What only [`super::One`] and [`super::Many`] implement.
    pub trait Sealed {
        /// The bus these options make.
        const PUBLISHERS: crate::wire::Publishers;
    }
}

/// How many publishers a bus's options are for: [`One`] or [`Many`], and
/// nothing else (the trait is sealed), as a bus has one mode or the other
/// ([`Publishers`]).
///
/// # Examples
/// ```
/// use shmbus::{BusOptions, bus::PublisherCount};
/// // What a bus gets whichever publishers it takes.
/// fn shared<P: PublisherCount>(opts: BusOptions<P>) -> BusOptions<P> {
///     opts.mode(0o660).prefault(true)
/// }
/// let one = shared(BusOptions::new(64));
/// let many = shared(BusOptions::new(64).many());
/// ```
pub trait PublisherCount: sealed::Sealed + std::fmt::Debug + Clone + Copy {}

impl sealed::Sealed for One {
    const PUBLISHERS: Publishers = Publishers::One;
}
impl sealed::Sealed for Many {
    const PUBLISHERS: Publishers = Publishers::Many;
}
impl PublisherCount for One {}
impl PublisherCount for Many {}

/// The bus `P` makes ([`Publishers::One`] or [`Publishers::Many`]).
pub(crate) fn publishers<P: PublisherCount>() -> Publishers {
    <P as sealed::Sealed>::PUBLISHERS
}

macro_rules! file_setters {
    ([$($gen:tt)*] $ty:ty, $new:literal) => {
        impl<$($gen)*> $ty {
            /// File mode; 0o600 (owner only) unless asked, set exactly
            /// (`fchmod`, so the umask changes nothing). 0o660 lets the
            /// group in.
            ///
            /// # Examples
            /// ```
            #[doc = concat!("let opts = shmbus::", $new, ".mode(0o660);")]
            /// ```
            pub fn mode(mut self, mode: u32) -> Self {
                self.file.mode = mode & 0o777;
                self
            }
            /// The file's group (a gid); the creator's own (its effective
            /// gid) unless asked. With [`mode`](Self::mode) `0o660` a
            /// team's processes, of other users in this group, may open
            /// it. The group is set before the mode, so the file never
            /// grants anything to another group; a journal's file (and
            /// each compaction's) gets the same group. A user may give
            /// only a group it is a member of: creation then fails with
            /// [`CreateError::Group`](crate::CreateError::Group).
            ///
            /// # Examples
            /// ```
            /// let gid = rustix::process::getegid().as_raw();
            #[doc = concat!("let opts = shmbus::", $new, ".group(gid).mode(0o660);")]
            /// ```
            pub fn group(mut self, gid: u32) -> Self {
                self.file.group = Some(gid);
                self
            }
            /// Touches every page at creation, so the first messages do not
            /// fault.
            ///
            /// # Examples
            /// ```
            #[doc = concat!("let opts = shmbus::", $new, ".prefault(true);")]
            /// ```
            pub fn prefault(mut self, yes: bool) -> Self {
                self.file.prefault = yes;
                self
            }
            /// `mlock`s the segment so it is never paged out (creation then
            /// fails with an `Mlock` error if `RLIMIT_MEMLOCK` is too low).
            ///
            /// # Examples
            /// ```
            #[doc = concat!("let opts = shmbus::", $new, ".mlock(true);")]
            /// ```
            pub fn mlock(mut self, yes: bool) -> Self {
                self.file.mlock = yes;
                self
            }
            /// Backs the segment with huge pages: a bare name with
            /// [`HugePages::Transparent`], a path on a hugetlbfs mount with
            /// [`HugePages::Hugetlbfs`]. A system that cannot is a
            /// [`crate::CreateError::HugePages`] naming what it found.
            ///
            /// # Examples
            /// ```
            /// use shmbus::mem::HugePages;
            #[doc = concat!("let opts = shmbus::", $new, ".huge_pages(HugePages::Transparent);")]
            /// ```
            pub fn huge_pages(mut self, huge: HugePages) -> Self {
                self.file.huge = Some(huge);
                self
            }
        }
    };
}

/// How to create a bus: its number of slots, for a bus of raw bytes its
/// message size, and for how many publishers (`P`: [`One`], the default,
/// or [`Many`] from [`BusOptions::many`]).
///
/// [`Publisher::create`](crate::Publisher::create) takes
/// `&BusOptions` (`BusOptions<One>`) and
/// [`ManyPublisher::create`](crate::bus::ManyPublisher::create)
/// `&BusOptions<Many>`, so what only a many-publisher bus has (its unblock
/// timeout) cannot be given to a single-publisher bus, where it would be
/// ignored.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use shmbus::BusOptions;
///
/// let opts = BusOptions::new(4096).mode(0o660);
/// let raw = BusOptions::new(1024).msg_size(256);
/// let many = BusOptions::new(1024).many().unblock_timeout(Duration::from_millis(200));
/// ```
///
/// A single-publisher bus has no unblock timeout:
/// ```compile_fail,E0599
/// use std::time::Duration;
/// let _ = shmbus::BusOptions::new(64).unblock_timeout(Duration::from_millis(200));
/// ```
/// a many-publisher bus is not made from options for one publisher:
/// ```compile_fail,E0308
/// let _ = shmbus::bus::ManyPublisher::<u64>::create("x", &shmbus::BusOptions::new(64));
/// ```
/// nor a single-publisher bus from options for many:
/// ```compile_fail,E0308
/// let _ = shmbus::Publisher::<u64>::create("x", &shmbus::BusOptions::new(64).many());
/// ```
#[derive(Clone, Debug)]
pub struct BusOptions<P: PublisherCount = One> {
    pub(crate) capacity: u64,
    pub(crate) msg_size: Option<u32>,
    pub(crate) file: FileOptions,
    pub(crate) first_seq: u64,
    /// Read only where `P` is [`Many`].
    pub(crate) unblock: Duration,
    /// How many lossless subscribers may gate the bus (`bus::gate`).
    pub(crate) max_lossless: u32,
    /// The eviction timeout of a lossless subscriber.
    pub(crate) evict: Duration,
    /// (schema name, alignment) of a raw-byte bus's messages.
    pub(crate) message: Option<(String, u32)>,
    publishers: PhantomData<P>,
}

impl BusOptions {
    /// A bus of `slots` slots (a power of two), mode 0600, for one
    /// publisher ([`BusOptions::many`] makes it for many). (A bus's
    /// `capacity`, wherever the API says it, counts slots.)
    ///
    /// # Examples
    /// ```
    /// let opts = shmbus::BusOptions::new(4096);
    /// ```
    pub fn new(slots: u64) -> Self {
        BusOptions {
            capacity: slots,
            msg_size: None,
            file: FileOptions::default(),
            first_seq: 0,
            unblock: DEFAULT_UNBLOCK,
            max_lossless: DEFAULT_MAX_LOSSLESS,
            evict: DEFAULT_EVICT,
            message: None,
            publishers: PhantomData,
        }
    }
    /// The same options for a bus of many publishers
    /// ([`ManyPublisher::create`](crate::bus::ManyPublisher::create)),
    /// whose unblock timeout is 1 s unless
    /// [`BusOptions::unblock_timeout`] says otherwise.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, OpenOptions, bus::ManyPublisher};
    /// # let name = format!("/dev/shm/shmbus-doc-many-{}", std::process::id());
    /// let mut first = ManyPublisher::<u64>::create(&name, &BusOptions::new(64).many())?;
    /// let mut second = ManyPublisher::<u64>::attach(&name, &OpenOptions::default())?;
    /// assert_eq!(first.unblock_timeout(), std::time::Duration::from_secs(1));
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn many(self) -> BusOptions<Many> {
        BusOptions {
            capacity: self.capacity,
            msg_size: self.msg_size,
            file: self.file,
            first_seq: self.first_seq,
            unblock: self.unblock,
            max_lossless: self.max_lossless,
            evict: self.evict,
            message: self.message,
            publishers: PhantomData,
        }
    }
}

impl BusOptions<Many> {
    /// How long a claimed slot may stay uncommitted (its publisher died,
    /// or stalled) before it is skipped (default 1 s; 1 ms to 60 s,
    /// [`MIN_TIMEOUT`](crate::bus::MIN_TIMEOUT) to
    /// [`MAX_UNBLOCK`](crate::bus::MAX_UNBLOCK): another is refused at
    /// create). Only a many-publisher bus has one: a single publisher
    /// claims nothing.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// let opts = shmbus::BusOptions::new(1024).many().unblock_timeout(Duration::from_millis(100));
    /// ```
    pub fn unblock_timeout(mut self, timeout: Duration) -> Self {
        self.unblock = timeout;
        self
    }
}

impl<P: PublisherCount> BusOptions<P> {
    /// The eviction timeout, and a many-publisher bus's unblock timeout,
    /// each within its bounds (checked by every create before any file
    /// is made).
    pub(crate) fn check_timeouts(&self) -> Result<(), crate::wire::GeometryError> {
        check_timeout("eviction timeout", self.evict, MAX_EVICT)?;
        if publishers::<P>() == Publishers::Many {
            check_timeout("unblock timeout", self.unblock, MAX_UNBLOCK)?;
        }
        Ok(())
    }

    /// How many lossless subscribers
    /// ([`OpenOptions::lossless`]) may hold the publisher back at once
    /// (default [`DEFAULT_MAX_LOSSLESS`],
    /// 8: each adds a line to the publisher's rescans and may stall it
    /// up to the eviction timeout). 0 makes a bus that never waits:
    /// lossless subscribers are refused.
    ///
    /// # Examples
    /// ```
    /// let never_waits = shmbus::BusOptions::new(1024).lossless_subscribers(0);
    /// ```
    pub fn lossless_subscribers(mut self, max: u32) -> Self {
        self.max_lossless = max;
        self
    }

    /// How long one lossless subscriber may hold the publisher back
    /// before it is evicted (demoted to lossy) and the publisher goes on
    /// (default 1 s; 1 ms to 60 s, [`MIN_TIMEOUT`](crate::bus::MIN_TIMEOUT)
    /// to [`MAX_EVICT`](crate::bus::MAX_EVICT): another, 0 included, is
    /// refused at create).
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// let opts = shmbus::BusOptions::new(1024).evict_after(Duration::from_millis(100));
    /// ```
    pub fn evict_after(mut self, timeout: Duration) -> Self {
        self.evict = timeout;
        self
    }

    /// The message size of a bus of raw bytes (`Publisher<[u8]>`), which
    /// has no type to take it from. A typed bus takes `size_of::<T>()`; a
    /// different size given here is an `InvalidGeometry` error.
    ///
    /// # Examples
    /// ```
    /// let opts = shmbus::BusOptions::new(1024).msg_size(256);
    /// ```
    pub fn msg_size(mut self, bytes: u32) -> Self {
        self.msg_size = Some(bytes);
        self
    }
    /// The message type a bus of raw bytes records, as C, Python or any
    /// other language names it: a schema name (1 to 64 bytes) and an
    /// alignment (a power of two up to 4096 dividing the message size),
    /// with the size from [`BusOptions::msg_size`]. Without it a raw bus
    /// records the type `bytes` (alignment 1). A typed bus
    /// (`Publisher<T>`) records `T`'s [`Message`](crate::Message) name and
    /// ignores this. A bad name or alignment is an `InvalidGeometry` error
    /// at create.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, OpenOptions, Publisher, Subscriber};
    /// # let name = format!("/dev/shm/shmbus-doc-msgtype-{}", std::process::id());
    /// let opts = BusOptions::new(64).msg_size(16).message_type("md.Tick", 8);
    /// let publisher = Publisher::<[u8]>::create(&name, &opts)?;
    /// let wrong = OpenOptions::default().message_type("md.Quote", 16, 8);
    /// assert!(Subscriber::<[u8]>::open(&name, &wrong).is_err());
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn message_type(mut self, name: &str, align: u32) -> Self {
        self.message = Some((name.to_owned(), align));
        self
    }
    /// Starts the sequence at `first` instead of 0: a mirror of another
    /// bus (a bridge's downstream) numbers each message as its upstream
    /// did. Subscribers count from their join, so none sees a loss for the
    /// sequences below `first`. A journaled bus whose journal exists
    /// continues the journal's sequence instead.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, Publisher};
    /// # let name = format!("/dev/shm/shmbus-doc-firstseq-{}", std::process::id());
    /// let mut publisher = Publisher::<u64>::create(&name, &BusOptions::new(64).first_sequence(1000))?;
    /// assert_eq!(publisher.publish(&7), 1000);
    /// # drop(publisher); shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn first_sequence(mut self, first: u64) -> Self {
        self.first_seq = first;
        self
    }
}

file_setters!([P: PublisherCount] BusOptions<P>, "BusOptions::new(64)");

/// How to create a pool bus (`PoolPublisher`): its slots, the pool of
/// blocks its messages live in, and for how many publishers (`P`: [`One`],
/// the default, or [`Many`] from [`PoolOptions::many`]).
///
/// Messages of up to `block_size` bytes (a multiple of 64) live in a pool
/// of `blocks` blocks, and the ring's slots carry only their descriptors.
/// `blocks` must exceed the slots: each descriptor on the ring keeps its
/// block until the ring overwrites it, so a publisher finds a free block
/// only among the rest. Give room for what subscribers hold too (up to
/// `PoolSubscriber::MAX_HELD` each) and for each publisher's loans.
///
/// Its own type, not a [`BusOptions`] flag, so that what only a copying
/// bus has (a message size or type, a first sequence) cannot be given to
/// a pool bus, nor a pool to a copying bus: such a mix does not compile.
/// `PoolPublisher::create` takes `&PoolOptions` (`PoolOptions<One>`) and
/// `PoolPublisher::create_many` `&PoolOptions<Many>`, as for
/// [`BusOptions`].
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use shmbus::pool::PoolOptions;
/// // 64 slots, 96 blocks of 1 MiB.
/// let opts = PoolOptions::new(64, 1 << 20, 96).mode(0o660);
/// let many = PoolOptions::new(64, 1 << 20, 96).many().unblock_timeout(Duration::from_millis(200));
/// ```
///
/// A copying bus's options do not make a pool bus:
/// ```compile_fail,E0308
/// let _ = shmbus::pool::PoolPublisher::<[u8]>::create("x", &shmbus::BusOptions::new(4));
/// ```
/// nor does a pool take a message size:
/// ```compile_fail,E0599
/// let _ = shmbus::pool::PoolOptions::new(4, 64, 5).msg_size(8);
/// ```
/// A pool bus for one publisher has no unblock timeout:
/// ```compile_fail,E0599
/// use std::time::Duration;
/// let _ = shmbus::pool::PoolOptions::new(4, 64, 5).unblock_timeout(Duration::from_millis(5));
/// ```
/// and one for many is not made from options for one:
/// ```compile_fail,E0308
/// let _ = shmbus::pool::PoolPublisher::<[u8]>::create_many("x", &shmbus::pool::PoolOptions::new(4, 64, 5));
/// ```
#[derive(Clone, Debug)]
pub struct PoolOptions<P: PublisherCount = One> {
    slots: u64,
    block_size: u64,
    blocks: u64,
    /// Read only where `P` is [`Many`].
    unblock: Duration,
    /// As [`BusOptions::lossless_subscribers`] and
    /// [`BusOptions::evict_after`], for the pool's ring.
    max_lossless: u32,
    evict: Duration,
    /// The block type a raw creator records: name, size, alignment.
    message: Option<(String, u32, u32)>,
    pub(crate) file: FileOptions,
    publishers: PhantomData<P>,
}

impl PoolOptions {
    /// A pool bus of `slots` slots (a power of two) and `blocks` blocks of
    /// `block_size` bytes, mode 0600, for one publisher
    /// ([`PoolOptions::many`] makes it for many).
    ///
    /// # Examples
    /// ```
    /// let opts = shmbus::pool::PoolOptions::new(16, 4096, 24);
    /// ```
    pub fn new(slots: u64, block_size: u64, blocks: u64) -> Self {
        PoolOptions {
            slots,
            block_size,
            blocks,
            unblock: DEFAULT_UNBLOCK,
            max_lossless: DEFAULT_MAX_LOSSLESS,
            evict: DEFAULT_EVICT,
            message: None,
            file: FileOptions::default(),
            publishers: PhantomData,
        }
    }
    /// The same options for a pool bus of many publishers
    /// (`PoolPublisher::create_many`), whose unblock timeout is 1 s unless
    /// [`PoolOptions::unblock_timeout`] says otherwise.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, pool::{PoolOptions, PoolPublisher}};
    /// # let name = format!("/dev/shm/shmbus-doc-poolmanyopts-{}", std::process::id());
    /// let first = PoolPublisher::<[u8]>::create_many(&name, &PoolOptions::new(16, 4096, 24).many())?;
    /// let second = PoolPublisher::<[u8]>::attach_many(&name, &OpenOptions::default())?;
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn many(self) -> PoolOptions<Many> {
        PoolOptions {
            slots: self.slots,
            block_size: self.block_size,
            blocks: self.blocks,
            unblock: self.unblock,
            max_lossless: self.max_lossless,
            evict: self.evict,
            message: self.message,
            file: self.file,
            publishers: PhantomData,
        }
    }
}

impl PoolOptions<Many> {
    /// How long a claimed slot may stay uncommitted before it is skipped
    /// (default 1 s; 1 ms to 60 s), as [`BusOptions::unblock_timeout`].
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// let opts = shmbus::pool::PoolOptions::new(16, 4096, 24)
    ///     .many()
    ///     .unblock_timeout(Duration::from_millis(100));
    /// ```
    pub fn unblock_timeout(mut self, timeout: Duration) -> Self {
        self.unblock = timeout;
        self
    }
}

impl<P: PublisherCount> PoolOptions<P> {
    /// How many lossless subscribers may hold the pool's publishers back
    /// at once, as [`BusOptions::lossless_subscribers`] (default 8; 0
    /// refuses them). A lossless subscriber's unread descriptors stay on
    /// the ring, so their blocks are never reclaimed: a pool sized by its
    /// rule (at least `slots` blocks on the ring, plus the loans and held
    /// samples) needs no more for it; its cost is the publishers' wait at
    /// the ring, as on any bus.
    ///
    /// # Examples
    /// ```
    /// let never_waits = shmbus::pool::PoolOptions::new(16, 4096, 24).lossless_subscribers(0);
    /// ```
    pub fn lossless_subscribers(mut self, max: u32) -> Self {
        self.max_lossless = max;
        self
    }

    /// How long one lossless subscriber may hold the pool's publishers
    /// back before it is evicted, as [`BusOptions::evict_after`] (default
    /// 1 s; 1 ms to 60 s).
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// let opts = shmbus::pool::PoolOptions::new(16, 4096, 24).evict_after(Duration::from_millis(100));
    /// ```
    pub fn evict_after(mut self, timeout: Duration) -> Self {
        self.evict = timeout;
        self
    }

    /// The block type a raw pool (`PoolPublisher::<[u8]>::create`)
    /// records, as C or the tool name it: a schema name (1 to 64 bytes),
    /// the type's size in bytes (at most the block size) and its
    /// alignment (a power of two up to 64: blocks start 64-aligned).
    /// Typed openers of that type (`PoolSubscriber<T>` with `T::NAME ==
    /// name`, that size and alignment) then open it, others are refused.
    /// Without it a raw pool records `bytes` of the block size. A typed
    /// pool (`PoolPublisher<T>`) records `T`'s [`Message`](crate::Message)
    /// type and ignores this. A bad name, size or alignment is an
    /// `InvalidGeometry` error at create.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, Received, Wait, pool::{PoolOptions, PoolPublisher, PoolSubscriber}};
    /// # let name = format!("/dev/shm/shmbus-doc-pooltype-{}", std::process::id());
    /// let opts = PoolOptions::new(4, 64, 8).message_type("u64", 8, 8);
    /// let mut raw = PoolPublisher::<[u8]>::create(&name, &opts)?;
    /// let mut typed = PoolSubscriber::<u64>::open(&name, &OpenOptions::default())?;
    /// let mut loan = raw.loan(8, Wait::Never)?;
    /// loan.copy_from_slice(&7u64.to_ne_bytes());
    /// loan.publish()?;
    /// match typed.recv(Wait::Never)? {
    ///     Some(Received::Message(sample)) => assert_eq!(*sample, 7),
    ///     other => panic!("{other:?}"),
    /// }
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn message_type(mut self, name: &str, size: u32, align: u32) -> Self {
        self.message = Some((name.to_owned(), size, align));
        self
    }

    /// The named block type, if any (see [`PoolOptions::message_type`]).
    pub(crate) fn named(&self) -> Option<&(String, u32, u32)> {
        self.message.as_ref()
    }

    /// The ring's options, as a copying bus's code takes them.
    pub(crate) fn bus(&self) -> BusOptions<P> {
        BusOptions {
            capacity: self.slots,
            msg_size: None,
            file: self.file.clone(),
            first_seq: 0,
            unblock: self.unblock,
            max_lossless: self.max_lossless,
            evict: self.evict,
            message: None,
            publishers: PhantomData,
        }
    }
    /// (block size, blocks).
    pub(crate) fn pool(&self) -> (u64, u64) {
        (self.block_size, self.blocks)
    }
}

file_setters!([P: PublisherCount] PoolOptions<P>, "pool::PoolOptions::new(4, 64, 5)");

/// How to create a stream: its size in bytes.
///
/// # Examples
/// ```
/// let opts = shmbus::stream::StreamOptions::new(1 << 20).mode(0o660);
/// ```
#[derive(Clone, Debug)]
pub struct StreamOptions {
    pub(crate) bytes: u64,
    pub(crate) file: FileOptions,
    pub(crate) wait: WaitStrategy,
    /// The record type a raw creator records: name and alignment.
    pub(crate) message: Option<(String, u32)>,
}

impl StreamOptions {
    /// A stream ring of `bytes` bytes (a power of two, 64 B to 4 GiB),
    /// mode 0600.
    ///
    /// # Examples
    /// ```
    /// let opts = shmbus::stream::StreamOptions::new(65536);
    /// ```
    pub fn new(bytes: u64) -> Self {
        StreamOptions {
            bytes,
            file: FileOptions::default(),
            wait: WaitStrategy::default(),
            message: None,
        }
    }
    /// How the creating producer waits for room (default: spin, then
    /// futex).
    ///
    /// # Examples
    /// ```
    /// use shmbus::{WaitStrategy, stream::StreamOptions};
    /// let opts = StreamOptions::new(4096).wait_strategy(WaitStrategy::BusySpin);
    /// ```
    pub fn wait_strategy(mut self, wait: WaitStrategy) -> Self {
        self.wait = wait;
        self
    }
    /// The record type a raw stream (`Producer<[u8]>::create`) records,
    /// as C, Python or the tool name it: a schema name (1 to 64 bytes) and
    /// an alignment (a power of two up to 8: records start 8-aligned).
    /// Typed openers of that type (`Consumer<T>` with `T::NAME == name`
    /// and that alignment) then open it, others are refused. Without it a
    /// raw stream records the type `stream`. A typed stream
    /// (`Producer<T>`) records `T`'s [`Message`](crate::Message) name and
    /// ignores this. A bad name or alignment is an `InvalidGeometry` error
    /// at create.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, Wait, stream::{Consumer, Producer, StreamOptions}};
    /// # let name = format!("/dev/shm/shmbus-doc-streamtype-{}", std::process::id());
    /// let opts = StreamOptions::new(4096).message_type("u64", 8);
    /// let mut raw = Producer::<[u8]>::create(&name, &opts)?;
    /// raw.push(&7u64.to_ne_bytes(), Wait::Never)?;
    /// let mut typed = Consumer::<u64>::attach(&name, &OpenOptions::default())?;
    /// assert_eq!(typed.pop(Wait::Never)?, 7);
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn message_type(mut self, name: &str, align: u32) -> Self {
        self.message = Some((name.to_owned(), align));
        self
    }
}

file_setters!([] StreamOptions, "stream::StreamOptions::new(64)");

/// How to create a blackboard: how many keys it holds, and for a raw
/// side (`[u8]` keys or values) the size of its keys or values and,
/// optionally, the schema name it records for them.
///
/// # Examples
/// ```
/// use shmbus::blackboard::BlackboardOptions;
/// // 500 keys; raw 16-byte keys, typed values (the value type gives its size).
/// let opts = BlackboardOptions::new(500).key_size(16).mode(0o660);
/// ```
#[derive(Clone, Debug)]
pub struct BlackboardOptions {
    pub(crate) keys: u64,
    pub(crate) key_size: Option<u32>,
    pub(crate) value_size: Option<u32>,
    /// Schema name and alignment a raw key side records.
    pub(crate) key_type: Option<(String, u32)>,
    /// Schema name and alignment a raw value side records.
    pub(crate) value_type: Option<(String, u32)>,
    pub(crate) file: FileOptions,
    pub(crate) wait: WaitStrategy,
    /// Read only by `ManyWriter::create`.
    pub(crate) unblock: Duration,
}

impl BlackboardOptions {
    /// A blackboard of at most `keys` keys (1 to 2^24), mode 0600. Its
    /// table has the smallest power of two of entries at least twice
    /// `keys`, so a lookup meets an empty entry soon (docs/LAYOUT.md §21).
    ///
    /// # Examples
    /// ```
    /// let opts = shmbus::blackboard::BlackboardOptions::new(1000);
    /// ```
    pub fn new(keys: u64) -> Self {
        BlackboardOptions {
            keys,
            key_size: None,
            value_size: None,
            key_type: None,
            value_type: None,
            file: FileOptions::default(),
            wait: WaitStrategy::default(),
            unblock: DEFAULT_UNBLOCK,
        }
    }
    /// How long an entry may stay mid-write (at one odd stamp) before
    /// another writer takes it over, on a table made for many writers
    /// ([`ManyWriter::create`](crate::blackboard::ManyWriter::create);
    /// default 1 s; 1 ms to 60 s, [`MIN_TIMEOUT`](crate::bus::MIN_TIMEOUT)
    /// to [`MAX_UNBLOCK`](crate::bus::MAX_UNBLOCK): another is refused
    /// there). A single writer ignores it. Choose it far above any
    /// scheduling stall: a writer stalled mid-write for longer loses its
    /// entry, and may tear the value its successor wrote.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// let opts = shmbus::blackboard::BlackboardOptions::new(8)
    ///     .unblock_timeout(Duration::from_millis(200));
    /// ```
    pub fn unblock_timeout(mut self, timeout: Duration) -> Self {
        self.unblock = timeout;
        self
    }
    /// Bytes per key, for raw keys (`[u8]`); a typed key takes its
    /// type's size, and a different size here is an error at create.
    ///
    /// # Examples
    /// ```
    /// let opts = shmbus::blackboard::BlackboardOptions::new(8).key_size(32);
    /// ```
    pub fn key_size(mut self, bytes: u32) -> Self {
        self.key_size = Some(bytes);
        self
    }
    /// Bytes per value, for raw values (`[u8]`); as [`Self::key_size`].
    ///
    /// # Examples
    /// ```
    /// let opts = shmbus::blackboard::BlackboardOptions::new(8).value_size(64);
    /// ```
    pub fn value_size(mut self, bytes: u32) -> Self {
        self.value_size = Some(bytes);
        self
    }
    /// The schema name and alignment raw keys record (as C, Python or the
    /// tool name a type), so typed openers of that type open it; without
    /// it raw keys record `bytes`.
    ///
    /// # Examples
    /// ```
    /// let opts = shmbus::blackboard::BlackboardOptions::new(8).key_size(8).key_type("u64", 8);
    /// ```
    pub fn key_type(mut self, name: &str, align: u32) -> Self {
        self.key_type = Some((name.to_owned(), align));
        self
    }
    /// The schema name and alignment raw values record; as
    /// [`Self::key_type`].
    ///
    /// # Examples
    /// ```
    /// let opts = shmbus::blackboard::BlackboardOptions::new(8).value_size(8).value_type("u64", 8);
    /// ```
    pub fn value_type(mut self, name: &str, align: u32) -> Self {
        self.value_type = Some((name.to_owned(), align));
        self
    }
    /// How readers made by [`Writer::reader`](crate::blackboard::Writer::reader)
    /// wait in the `wait_*` calls (default: spin, then futex).
    ///
    /// # Examples
    /// ```
    /// use shmbus::{WaitStrategy, blackboard::BlackboardOptions};
    /// let opts = BlackboardOptions::new(8).wait_strategy(WaitStrategy::BusySpin);
    /// ```
    pub fn wait_strategy(mut self, wait: WaitStrategy) -> Self {
        self.wait = wait;
        self
    }
}

file_setters!([] BlackboardOptions, "blackboard::BlackboardOptions::new(8)");

/// Where a new bus subscriber starts.
///
/// # Examples
/// ```
/// use shmbus::{OpenOptions, Start};
/// let opts = OpenOptions::default().start(Start::Oldest);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Start {
    /// The newest message already published, then everything after it.
    Latest,
    /// The oldest message still in the ring.
    Oldest,
    /// Only messages published after it joined.
    #[default]
    Next,
}

/// How to open an existing segment: as a subscriber, a publisher or
/// producer attaching, or a stream's consumer.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use shmbus::{OpenOptions, Start, WaitStrategy};
///
/// let opts = OpenOptions::default()
///     .start(Start::Oldest)
///     .wait_strategy(WaitStrategy::BusySpin)
///     .init_timeout(Duration::from_millis(200));
/// ```
#[derive(Clone, Debug)]
pub struct OpenOptions {
    pub(crate) start: Start,
    pub(crate) wait: WaitStrategy,
    pub(crate) init_timeout: Duration,
    pub(crate) prefault: bool,
    pub(crate) mlock: bool,
    pub(crate) register: bool,
    /// A lossless bus subscriber (`bus::gate`).
    pub(crate) lossless: bool,
    /// The message type a raw-byte opener insists on.
    pub(crate) message: Option<TypeFingerprint>,
    /// With `only_own`: the most the file may grant.
    pub(crate) only_own: Option<u32>,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            start: Start::Next,
            wait: WaitStrategy::default(),
            init_timeout: Duration::from_secs(1),
            prefault: false,
            mlock: false,
            register: true,
            lossless: false,
            message: None,
            only_own: None,
        }
    }
}

impl OpenOptions {
    /// The message type a raw-byte opener (`Subscriber<[u8]>`,
    /// `Publisher<[u8]>::attach`, `ManyPublisher<[u8]>::attach`, a journal's)
    /// insists on: the bus must record this schema name, size and
    /// alignment, or the open fails with
    /// [`OpenError::TypeMismatch`](crate::OpenError::TypeMismatch) naming
    /// both. Without it a raw opener takes a bus of any type. A typed
    /// opener always checks its own type and ignores this. A raw stream
    /// opener (`Consumer<[u8]>`, `Producer<[u8]>::attach`) checks it as a
    /// typed one checks its `T`: name hash and alignment equal, `size` at
    /// most the stream's largest record.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, OpenError, OpenOptions, Publisher, Subscriber};
    /// # let name = format!("/dev/shm/shmbus-doc-openmsgtype-{}", std::process::id());
    /// let publisher = Publisher::<u64>::create(&name, &BusOptions::new(64))?;
    /// let same = OpenOptions::default().message_type("u64", 8, 8);
    /// let reader = Subscriber::<[u8]>::open(&name, &same)?;
    /// let other = OpenOptions::default().message_type("f64", 8, 8);
    /// match Subscriber::<[u8]>::open(&name, &other) {
    ///     Err(OpenError::TypeMismatch { found, expected }) => {
    ///         assert_eq!((found.name.as_str(), expected.name.as_str()), ("u64", "f64"));
    ///     }
    ///     _ => panic!("the bus carries u64"),
    /// }
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn message_type(mut self, name: &str, size: u32, align: u32) -> Self {
        self.message = Some(TypeFingerprint::new(name, size, align));
        self
    }
    /// Opens only a segment this process's effective user owns, whose
    /// permission bits grant nothing beyond `max_mode`: what a program that
    /// would have created the segment itself (with `max_mode`) needs
    /// before it adopts one it finds. Without it any segment the file's
    /// mode lets this user open is opened, whoever made it. A segment that
    /// fails the check is not written to.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, OpenError, OpenOptions, Publisher};
    /// # let name = format!("/dev/shm/shmbus-doc-onlyown-{}", std::process::id());
    /// drop(Publisher::<u64>::create(&name, &BusOptions::new(64).mode(0o666))?);
    /// // Ours, but readable and writable by every user: not adopted.
    /// match Publisher::<u64>::attach(&name, &OpenOptions::default().only_own(0o600)) {
    ///     Err(shmbus::AttachError::Open(OpenError::NotOwn { mode, .. })) => {
    ///         assert_eq!(mode, 0o666)
    ///     }
    ///     _ => panic!("a world-writable bus is not adopted"),
    /// }
    /// assert!(Publisher::<u64>::attach(&name, &OpenOptions::default().only_own(0o666)).is_ok());
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn only_own(mut self, max_mode: u32) -> Self {
        self.only_own = Some(max_mode & 0o7777);
        self
    }

    /// Whether a bus subscriber takes an entry in the bus's registry
    /// (default `true`): a registered subscriber is named by `stat` and
    /// `shmbus top` and keeps its position, delivered and skipped counts
    /// and last-active time on a line of its own in the control area (one
    /// store per receive). `false` leaves it out of both, for a monitor
    /// that should not show up as a subscriber, or to measure that store.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, OpenOptions, Publisher, Subscriber};
    /// # let name = format!("/dev/shm/shmbus-doc-register-{}", std::process::id());
    /// let publisher = Publisher::<u64>::create(&name, &BusOptions::new(8))?;
    /// let quiet = Subscriber::<u64>::open(&name, &OpenOptions::default().register(false))?;
    /// assert!(shmbus::stat::stat(&name)?.subscribers.is_empty());
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn register(mut self, register: bool) -> Self {
        self.register = register;
        self
    }

    /// Whether a bus subscriber is lossless (default `false`: lossy). The
    /// publisher of a lossless subscriber never overwrites a message it
    /// has not read: it waits (`publish`) or says
    /// [`TryPublishError::Full`](crate::bus::TryPublishError::Full)
    /// (`try_publish`), while lossy subscribers beside it are lapped as
    /// ever. A lossless subscriber that dies stops holding the publisher
    /// back at once; one that holds it back for the bus's eviction
    /// timeout ([`BusOptions::evict_after`]) is demoted to lossy, and
    /// told what it missed by [`Received::Lagged`](crate::Received::Lagged).
    /// Nothing is lost from its join point on: its start position, unless
    /// that is already a whole ring behind the publisher (then the first
    /// receive says `Lagged`, exactly, and it joins where it resyncs).
    /// A lossless subscriber always takes a registry entry (`register`
    /// is ignored).
    ///
    /// # Errors (at open)
    /// [`OpenError::Lossless`](crate::OpenError::Lossless): the bus
    /// refuses them (created with `lossless_subscribers(0)` or by an
    /// older build), as many as it allows already gate it, the registry
    /// is full. Every kind of broadcast bus takes them: single- and
    /// many-publisher, journaled (the ring writes wait; the journal never
    /// does) and pool buses ([`PoolSubscriber::open`](crate::pool::PoolSubscriber::open):
    /// its unread blocks are never reclaimed).
    ///
    /// # Examples
    /// ```
    /// use shmbus::{BusOptions, OpenOptions, Publisher, Start, Subscriber};
    /// # let name = format!("/dev/shm/shmbus-doc-lossless-{}", std::process::id());
    /// let mut publisher = Publisher::<u64>::create(&name, &BusOptions::new(2))?;
    /// let recorder = Subscriber::<u64>::open(&name, &OpenOptions::default().lossless(true))?;
    /// publisher.try_publish(&1)?;
    /// publisher.try_publish(&2)?;
    /// assert!(publisher.try_publish(&3).is_err()); // the recorder has read nothing
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn lossless(mut self, lossless: bool) -> Self {
        self.lossless = lossless;
        self
    }

    /// Where a bus subscriber starts (default [`Start::Next`]); publishers
    /// and streams ignore it.
    ///
    /// # Examples
    /// ```
    /// let opts = shmbus::OpenOptions::default().start(shmbus::Start::Latest);
    /// ```
    pub fn start(mut self, start: Start) -> Self {
        self.start = start;
        self
    }
    /// How a blocking call sleeps while it waits (default spin 50 µs, then
    /// futex).
    ///
    /// # Examples
    /// ```
    /// let opts = shmbus::OpenOptions::default().wait_strategy(shmbus::WaitStrategy::BusySpin);
    /// ```
    pub fn wait_strategy(mut self, wait: WaitStrategy) -> Self {
        self.wait = wait;
        self
    }
    /// How long to wait for a segment being created to finish (default
    /// 1 s); then the open fails with `NotInitialized`.
    ///
    /// # Examples
    /// ```
    /// let opts = shmbus::OpenOptions::default().init_timeout(std::time::Duration::from_secs(5));
    /// ```
    pub fn init_timeout(mut self, timeout: Duration) -> Self {
        self.init_timeout = timeout;
        self
    }
    /// Touches every page on open.
    ///
    /// # Examples
    /// ```
    /// let opts = shmbus::OpenOptions::default().prefault(true);
    /// ```
    pub fn prefault(mut self, yes: bool) -> Self {
        self.prefault = yes;
        self
    }
    /// `mlock`s the mapping.
    ///
    /// # Examples
    /// ```
    /// let opts = shmbus::OpenOptions::default().mlock(true);
    /// ```
    pub fn mlock(mut self, yes: bool) -> Self {
        self.mlock = yes;
        self
    }
}
