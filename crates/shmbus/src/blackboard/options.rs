//! How to create a blackboard ([`Options`]): its keys and the
//! sizes and types of its keys and values.

use std::time::Duration;

use crate::options::{DEFAULT_UNBLOCK, FileOptions, file_setters};
use crate::wait::WaitStrategy;

/// How to create a blackboard: how many keys it holds, and for a raw
/// side (`[u8]` keys or values) the size of its keys or values and,
/// optionally, the schema name it records for them.
///
/// # Examples
/// ```
/// use shmbus::blackboard;
/// // 500 keys; raw 16-byte keys, typed values (the value type gives its size).
/// let opts = blackboard::Options::new(500).key_size(16).mode(0o660);
/// ```
#[derive(Clone, Debug)]
pub struct Options {
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

impl Options {
    /// A blackboard of at most `keys` keys (1 to 2^24), mode 0600. Its
    /// table has the smallest power of two of entries at least twice
    /// `keys`, so a lookup meets an empty entry soon (docs/LAYOUT.md §21).
    ///
    /// # Examples
    /// ```
    /// let opts = shmbus::blackboard::Options::new(1000);
    /// ```
    pub fn new(keys: u64) -> Self {
        Options {
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
    /// let opts = shmbus::blackboard::Options::new(8)
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
    /// let opts = shmbus::blackboard::Options::new(8).key_size(32);
    /// ```
    pub fn key_size(mut self, bytes: u32) -> Self {
        self.key_size = Some(bytes);
        self
    }
    /// Bytes per value, for raw values (`[u8]`); as [`Self::key_size`].
    ///
    /// # Examples
    /// ```
    /// let opts = shmbus::blackboard::Options::new(8).value_size(64);
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
    /// let opts = shmbus::blackboard::Options::new(8).key_size(8).key_type("u64", 8);
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
    /// let opts = shmbus::blackboard::Options::new(8).value_size(8).value_type("u64", 8);
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
    /// use shmbus::{WaitStrategy, blackboard};
    /// let opts = blackboard::Options::new(8).wait_strategy(WaitStrategy::BusySpin);
    /// ```
    pub fn wait_strategy(mut self, wait: WaitStrategy) -> Self {
        self.wait = wait;
        self
    }
}

file_setters!([] Options, "blackboard::Options::new(8)");
