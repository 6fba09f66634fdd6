//! How to create a stream ([`Options`]): its size in bytes.

use crate::options::{FileOptions, file_setters};
use crate::wait::WaitStrategy;

/// How to create a stream: its size in bytes.
///
/// # Examples
/// ```
/// let opts = shmbus::stream::Options::new(1 << 20).mode(0o660);
/// ```
#[derive(Clone, Debug)]
pub struct Options {
    pub(crate) bytes: u64,
    pub(crate) file: FileOptions,
    pub(crate) wait: WaitStrategy,
    /// The record type a raw creator records: name and alignment.
    pub(crate) message: Option<(String, u32)>,
}

impl Options {
    /// A stream ring of `bytes` bytes (a power of two, 64 B to 4 GiB),
    /// mode 0600.
    ///
    /// # Examples
    /// ```
    /// let opts = shmbus::stream::Options::new(65536);
    /// ```
    pub fn new(bytes: u64) -> Self {
        Options {
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
    /// use shmbus::{WaitStrategy, stream};
    /// let opts = stream::Options::new(4096).wait_strategy(WaitStrategy::BusySpin);
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
    /// use shmbus::{OpenOptions, Wait, stream::{self, Consumer, Producer}};
    /// # let name = format!("/dev/shm/shmbus-doc-streamtype-{}", std::process::id());
    /// let opts = stream::Options::new(4096).message_type("u64", 8);
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

file_setters!([] Options, "stream::Options::new(64)");
