//! What every kind's options share: how an opener waits and where a
//! subscriber starts ([`OpenOptions`], [`Start`]), the file's mode and
//! memory (the setters every kind's create options have), and the bounds
//! of a timeout. Each kind's create options are in its module
//! ([`BusOptions`](crate::BusOptions), [`pool::Options`](crate::pool::Options),
//! [`stream::Options`](crate::stream::Options),
//! [`blackboard::Options`](crate::blackboard::Options)). Plain values; nothing here
//! touches a file.

use std::time::Duration;

use crate::mem::HugePages;
use crate::wait::WaitStrategy;
use crate::wire::TypeFingerprint;

/// The unblock timeout of a many-publisher bus created without one.
pub(crate) const DEFAULT_UNBLOCK: Duration = Duration::from_secs(1);

/// The shortest eviction timeout ([`BusOptions::evict_after`](crate::BusOptions::evict_after)) and
/// unblock timeout ([`BusOptions::unblock_timeout`](crate::BusOptions::unblock_timeout),
/// [`blackboard::Options::unblock_timeout`](crate::blackboard::Options::unblock_timeout)) a segment is created with:
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
/// [`MAX_EVICT`](crate::bus::MAX_EVICT): a minute); a longer one is refused at create.
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
            /// [`HugePages::Transparent`](crate::mem::HugePages::Transparent), a path on a hugetlbfs mount with
            /// [`HugePages::Hugetlbfs`](crate::mem::HugePages::Hugetlbfs). A system that cannot is a
            /// [`crate::CreateError::HugePages`] naming what it found.
            ///
            /// # Examples
            /// ```
            /// use shmbus::mem::HugePages;
            #[doc = concat!("let opts = shmbus::", $new, ".huge_pages(HugePages::Transparent);")]
            /// ```
            pub fn huge_pages(mut self, huge: $crate::mem::HugePages) -> Self {
                self.file.huge = Some(huge);
                self
            }
        }
    };
}
pub(crate) use file_setters;

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
    /// timeout ([`BusOptions::evict_after`](crate::BusOptions::evict_after)) is demoted to lossy, and
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
    /// does) and pool buses ([`pool::Subscriber::open`](crate::pool::Subscriber::open):
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
