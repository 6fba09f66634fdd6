//! How to create a bus ([`BusOptions`]): its slots, its message size,
//! its lossless subscribers, and how many publishers it takes ([`One`] or
//! [`Many`], in the options' type).

use std::marker::PhantomData;
use std::time::Duration;

use crate::options::{DEFAULT_UNBLOCK, FileOptions, MAX_UNBLOCK, check_timeout, file_setters};
use crate::wire::Publishers;

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

/// Marks options for a bus with one publisher: `BusOptions<One>` (the
/// default, what [`BusOptions::new`] gives) makes a bus for
/// [`Publisher::create`](crate::Publisher::create), `pool::Options<One>` one
/// for `pool::Publisher::create`. Named as [`Publishers::One`] names the
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
/// `pool::Options<Many>` one for `pool::Publisher::create_many`. Named as
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
    pub(crate) publishers: PhantomData<P>,
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
    /// ([`OpenOptions::lossless`](crate::OpenOptions::lossless)) may hold the publisher back at once
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
