//! How to create a pool bus ([`Options`]): its slots, its blocks and
//! how many publishers it takes.

use std::marker::PhantomData;
use std::time::Duration;

use crate::bus::{BusOptions, DEFAULT_EVICT, DEFAULT_MAX_LOSSLESS, Many, One, PublisherCount};
use crate::options::{DEFAULT_UNBLOCK, FileOptions, file_setters};

/// How to create a pool bus (`pool::Publisher`): its slots, the pool of
/// blocks its messages live in, and for how many publishers (`P`: [`One`],
/// the default, or [`Many`] from [`Options::many`]).
///
/// Messages of up to `block_size` bytes (a multiple of 64) live in a pool
/// of `blocks` blocks, and the ring's slots carry only their descriptors.
/// `blocks` must exceed the slots: each descriptor on the ring keeps its
/// block until the ring overwrites it, so a publisher finds a free block
/// only among the rest. Give room for what subscribers hold too (up to
/// `pool::Subscriber::MAX_HELD` each) and for each publisher's loans.
///
/// Its own type, not a [`BusOptions`] flag, so that what only a copying
/// bus has (a message size or type, a first sequence) cannot be given to
/// a pool bus, nor a pool to a copying bus: such a mix does not compile.
/// `pool::Publisher::create` takes `&pool::Options` (`pool::Options<One>`) and
/// `pool::Publisher::create_many` `&pool::Options<Many>`, as for
/// [`BusOptions`].
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use shmbus::pool;
/// // 64 slots, 96 blocks of 1 MiB.
/// let opts = pool::Options::new(64, 1 << 20, 96).mode(0o660);
/// let many = pool::Options::new(64, 1 << 20, 96).many().unblock_timeout(Duration::from_millis(200));
/// ```
///
/// A copying bus's options do not make a pool bus:
/// ```compile_fail,E0308
/// let _ = shmbus::pool::Publisher::<[u8]>::create("x", &shmbus::BusOptions::new(4));
/// ```
/// nor does a pool take a message size:
/// ```compile_fail,E0599
/// let _ = shmbus::pool::Options::new(4, 64, 5).msg_size(8);
/// ```
/// A pool bus for one publisher has no unblock timeout:
/// ```compile_fail,E0599
/// use std::time::Duration;
/// let _ = shmbus::pool::Options::new(4, 64, 5).unblock_timeout(Duration::from_millis(5));
/// ```
/// and one for many is not made from options for one:
/// ```compile_fail,E0308
/// let _ = shmbus::pool::Publisher::<[u8]>::create_many("x", &shmbus::pool::Options::new(4, 64, 5));
/// ```
#[derive(Clone, Debug)]
pub struct Options<P: PublisherCount = One> {
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

impl Options {
    /// A pool bus of `slots` slots (a power of two) and `blocks` blocks of
    /// `block_size` bytes, mode 0600, for one publisher
    /// ([`Options::many`] makes it for many).
    ///
    /// # Examples
    /// ```
    /// let opts = shmbus::pool::Options::new(16, 4096, 24);
    /// ```
    pub fn new(slots: u64, block_size: u64, blocks: u64) -> Self {
        Options {
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
    /// (`pool::Publisher::create_many`), whose unblock timeout is 1 s unless
    /// [`Options::unblock_timeout`] says otherwise.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, pool};
    /// # let name = format!("/dev/shm/shmbus-doc-poolmanyopts-{}", std::process::id());
    /// let first = pool::Publisher::<[u8]>::create_many(&name, &pool::Options::new(16, 4096, 24).many())?;
    /// let second = pool::Publisher::<[u8]>::attach_many(&name, &OpenOptions::default())?;
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn many(self) -> Options<Many> {
        Options {
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

impl Options<Many> {
    /// How long a claimed slot may stay uncommitted before it is skipped
    /// (default 1 s; 1 ms to 60 s), as [`BusOptions::unblock_timeout`].
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// let opts = shmbus::pool::Options::new(16, 4096, 24)
    ///     .many()
    ///     .unblock_timeout(Duration::from_millis(100));
    /// ```
    pub fn unblock_timeout(mut self, timeout: Duration) -> Self {
        self.unblock = timeout;
        self
    }
}

impl<P: PublisherCount> Options<P> {
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
    /// let never_waits = shmbus::pool::Options::new(16, 4096, 24).lossless_subscribers(0);
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
    /// let opts = shmbus::pool::Options::new(16, 4096, 24).evict_after(Duration::from_millis(100));
    /// ```
    pub fn evict_after(mut self, timeout: Duration) -> Self {
        self.evict = timeout;
        self
    }

    /// The block type a raw pool (`pool::Publisher::<[u8]>::create`)
    /// records, as C or the tool name it: a schema name (1 to 64 bytes),
    /// the type's size in bytes (at most the block size) and its
    /// alignment (a power of two up to 64: blocks start 64-aligned).
    /// Typed openers of that type (`pool::Subscriber<T>` with `T::NAME ==
    /// name`, that size and alignment) then open it, others are refused.
    /// Without it a raw pool records `bytes` of the block size. A typed
    /// pool (`pool::Publisher<T>`) records `T`'s [`Message`](crate::Message)
    /// type and ignores this. A bad name, size or alignment is an
    /// `InvalidGeometry` error at create.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, Received, Wait, pool};
    /// # let name = format!("/dev/shm/shmbus-doc-pooltype-{}", std::process::id());
    /// let opts = pool::Options::new(4, 64, 8).message_type("u64", 8, 8);
    /// let mut raw = pool::Publisher::<[u8]>::create(&name, &opts)?;
    /// let mut typed = pool::Subscriber::<u64>::open(&name, &OpenOptions::default())?;
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

    /// The named block type, if any (see [`Options::message_type`]).
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

file_setters!([P: PublisherCount] Options<P>, "pool::Options::new(4, 64, 5)");
