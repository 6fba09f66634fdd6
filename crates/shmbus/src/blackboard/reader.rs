//! [`Reader`]: any number, in any process; each read is wait-free (a
//! bounded number of tries per entry) and never returns a torn value.

use std::marker::PhantomData;
use std::sync::Arc;

use super::entry;
use super::error::GetError;
use super::field::Field;
use super::table::Table;
use crate::mem::{DefaultRegion, Region};
use crate::sync::Ordering;
use crate::wait::{self, Backoff, Step, Wait, WaitStrategy};
use crate::wire::blackboard::tag;

/// A key's latest value and its version (the table's version when it was
/// written: a later write of any key has a higher one).
///
/// # Examples
/// ```
/// use shmbus::blackboard::{self, Versioned, Writer};
/// let mut writer = Writer::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
/// writer.put(&1, &10)?;
/// let got: Versioned<u64> = writer.reader().get(&1)?.unwrap();
/// assert_eq!((got.value, got.version), (10, 1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Versioned<T> {
    /// The value.
    pub value: T,
    /// Its version.
    pub version: u64,
}

/// A small typed value's words (`entry::try_read_words`, or
/// `entry::words_of` after a look-up) as a get returns it.
#[inline(always)]
pub(super) fn from_words<V: ?Sized + Field>(
    version: u64,
    words: &[u64; entry::SMALL_WORDS],
    size: usize,
) -> Versioned<V::Owned> {
    Versioned {
        value: V::from_bytes(&bytemuck::bytes_of(words)[..size]),
        version,
    }
}

/// One entry of a view of the table ([`Reader::entries`],
/// [`Reader::changed_since`]): its key, its value (`None`: removed at
/// `version`) and its version. Each is consistent (read whole); the view
/// as a whole is not a snapshot of one instant.
///
/// # Examples
/// ```
/// use shmbus::blackboard::{self, Writer};
/// let mut writer = Writer::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
/// writer.put(&1, &10)?;
/// let mut reader = writer.reader();
/// let all: Vec<_> = reader.entries().collect::<Result<_, _>>()?;
/// assert_eq!((all[0].key, all[0].value, all[0].version), (1, Some(10), 1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item<K, V> {
    /// The key.
    pub key: K,
    /// Its value; `None` for a key removed at `version`.
    pub value: Option<V>,
    /// The version of the entry's last write.
    pub version: u64,
}

/// A reader of a blackboard: `get` a key's latest value, view every key,
/// what changed since a version, or wait for a change. Takes no lock and
/// writes nothing but the doorbell's sleeper flag (its waits).
///
/// # Examples
/// ```
/// use shmbus::blackboard::{self, Writer};
/// let mut writer = Writer::<u64, [u8; 8], _>::on_heap(&blackboard::Options::new(16))?;
/// let mut reader = writer.reader();
/// writer.put(&3, b"pose 3.1")?;
/// assert_eq!(reader.get(&3)?.map(|e| e.value), Some(*b"pose 3.1"));
/// assert_eq!(reader.get(&4)?, None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Reader<K: ?Sized + Field, V: ?Sized + Field, R: Region = DefaultRegion> {
    /// Shared with the reader's entry handles.
    table: Arc<Table<R>>,
    /// An entry's tag, key and value, copied.
    buf: Vec<u8>,
    strategy: WaitStrategy,
    /// The version a select looks past
    /// ([`Reader::mark_seen`]).
    seen: u64,
    _types: PhantomData<fn(&K, &V)>,
}

impl<K: ?Sized + Field, V: ?Sized + Field, R: Region> std::fmt::Debug for Reader<K, V, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader")
            .field("capacity", &self.table.geo.keys)
            .field("wait", &self.strategy)
            .field("seen", &self.seen)
            .finish_non_exhaustive()
    }
}

/// Refuses a table whose key type is not `K` (a raw key side takes any).
pub(crate) fn check_key<K: ?Sized + Field>(
    header: &crate::wire::Header,
) -> Result<(), crate::error::OpenError> {
    let (Some(expected), Some(found)) = (K::expected(None), header.key.as_ref()) else {
        return Ok(());
    };
    if found.size != expected.size
        || found.align != expected.align
        || found.name_hash != expected.name_hash
    {
        return Err(crate::error::OpenError::TypeMismatch {
            found: found.clone(),
            expected,
        });
    }
    Ok(())
}

impl<K: ?Sized + Field, V: ?Sized + Field, R: Region> Reader<K, V, R> {
    pub(crate) fn from_table(table: Table<R>, strategy: WaitStrategy) -> Self {
        let buf = vec![0; table.body_len()];
        Reader {
            table: Arc::new(table),
            buf,
            strategy,
            seen: 0,
            _types: PhantomData,
        }
    }

    /// The table, shared with the reader's entry handles.
    pub(super) fn shared_table(&self) -> &Arc<Table<R>> {
        &self.table
    }

    /// The readers' doorbell (the word a select sleeps on).
    pub(crate) fn bell(&self) -> &crate::sync::AtomicU32 {
        self.table.bell()
    }

    /// The version a [`Select`](crate::select::Select) looks past: the
    /// reader is ready once the table's version passes it. 0 when opened,
    /// so a table written before is ready at once; only
    /// [`Reader::mark_seen`] moves it.
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, Writer};
    /// let mut writer = Writer::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
    /// let mut reader = writer.reader();
    /// writer.put(&1, &10)?;
    /// assert_eq!(reader.seen(), 0);
    /// reader.mark_seen(reader.version());
    /// assert_eq!(reader.seen(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// Sets the version a select looks past: pass the
    /// [`Reader::version`] read before a [`Reader::changed_since`] pass,
    /// so that the next wait ends on the first write after it.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use shmbus::{Wait, blackboard::{self, Writer}, select::Select};
    /// let mut writer = Writer::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
    /// let mut reader = writer.reader();
    /// writer.put(&1, &10)?;
    /// let mut select = Select::new();
    /// assert_eq!(select.ready(&[&reader], Wait::Never), Some(0));
    /// reader.mark_seen(reader.version());
    /// assert_eq!(select.ready(&[&reader], Wait::For(Duration::from_millis(1))), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn mark_seen(&mut self, version: u64) {
        self.seen = version;
    }

    /// The region (unit tests poke its words).
    #[cfg(test)]
    pub(crate) fn table_region(&self) -> R
    where
        R: Clone,
    {
        self.table.region.clone()
    }

    /// The latest value of `key` and its version, or `None` if the key is
    /// not in the table. O(1): the key's hash places it, and a probe walks
    /// on to the next entry only past other keys (at most the table's
    /// length, whatever its bytes), including entries mid-write whose key
    /// is another's. Never torn, and wait-free: each entry is tried a
    /// bounded number of times.
    ///
    /// # Errors
    /// [`GetError::Busy`] if a write kept an entry that may hold the key
    /// busy through every try;
    /// [`GetError::Stuck`] if a writer died writing it (no writer lives);
    /// [`GetError::Corrupt`] for an entry no writer wrote;
    /// [`GetError::KeySize`] for a raw key of the wrong size.
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, Writer};
    /// let mut writer = Writer::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
    /// writer.put(&1, &10)?;
    /// assert_eq!(writer.reader().get(&1)?.map(|e| e.value), Some(10));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn get(&mut self, key: &K) -> Result<Option<Versioned<V::Owned>>, GetError> {
        let key = key.as_bytes();
        // Typed sizes are the table's (the open checked the file's types),
        // so a value of up to 64 bytes takes this path alone: read into
        // registers at the key's home (where a key most often is), or
        // probed for into `buf` and loaded from there, both joining in
        // registers rather than through memory.
        if let (Some(_), Some(v)) = (K::SIZE, V::SIZE)
            && v <= entry::SMALL_WORDS * 8
        {
            let n = v.div_ceil(8);
            let (stamp, body) = self.table.slot(self.table.home(key));
            let value_word = 1 + key.len().div_ceil(8);
            let (version, words) = match entry::try_read_words(stamp, body, key, value_word, n) {
                Some(hit) => hit,
                None => match self.probe(key)? {
                    Some(version) => (version, entry::words_of(&self.buf, n)),
                    None => return Ok(None),
                },
            };
            return Ok(Some(from_words::<V>(version, &words, v)));
        }
        self.get_probe(key)
    }

    /// [`Reader::find`] at the table's value size, out of line: a small
    /// typed get's probe when its key is not at home.
    #[inline(never)]
    fn probe(&mut self, key: &[u8]) -> Result<Option<u64>, GetError> {
        let size = self.table.geo.value_size as usize;
        self.find(key, size)
    }

    /// The rest of [`Reader::get`]: a value too large for registers, or
    /// raw bytes. Out of line, so that a small typed get is short enough
    /// to inline into its caller's loop.
    #[inline(never)]
    fn get_probe(&mut self, key: &[u8]) -> Result<Option<Versioned<V::Owned>>, GetError> {
        let size = self.table.geo.value_size as usize;
        // A typed value's size as a constant (the open checked it is the
        // table's; a table that says otherwise is read at its own size).
        let found = match V::SIZE {
            Some(typed) if typed == size => self.find(key, typed)?,
            _ => self.find(key, size)?,
        };
        Ok(found.map(|version| Versioned {
            value: V::from_bytes(&self.buf[..size]),
            version,
        }))
    }

    /// [`Reader::get`] with the key as bytes and the value as bytes,
    /// borrowed until the next read, whatever the reader's types: what the
    /// C and Python bindings call.
    ///
    /// # Errors
    /// As [`Reader::get`].
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, Writer};
    /// let mut writer = Writer::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
    /// writer.put(&1, &10)?;
    /// let mut reader = writer.reader();
    /// let (bytes, version) = reader.get_bytes(&1u64.to_ne_bytes())?.unwrap();
    /// assert_eq!((bytes, version), (&10u64.to_ne_bytes()[..], 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_bytes(&mut self, key: &[u8]) -> Result<Option<(&[u8], u64)>, GetError> {
        let size = self.table.geo.value_size as usize;
        Ok(self
            .find(key, size)?
            .map(|version| (&self.buf[..size], version)))
    }

    /// The version of `key`'s live entry, its value (`size` bytes, the
    /// table's) at the start of `buf`. Inlined, so that a typed reader's
    /// key and value sizes are constants in the probe.
    #[inline(always)]
    fn find(&mut self, key: &[u8], size: usize) -> Result<Option<u64>, GetError> {
        if key.len() != self.table.geo.key_size as usize {
            return Err(GetError::KeySize {
                found: key.len(),
                expected: self.table.geo.key_size as usize,
            });
        }
        // `buf` holds a whole entry's body, longer than its value's words.
        let value = &mut self.buf[..size.div_ceil(8) * 8];
        Ok(self.table.find_value(key, value)?)
    }

    /// The table's version: the last version written (0 before the first
    /// write). Acquire, paired with the writer's Release store after each
    /// commit: every entry written at or before it is visible.
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, Writer};
    /// let mut writer = Writer::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
    /// let reader = writer.reader();
    /// writer.put(&1, &10)?;
    /// assert_eq!(reader.version(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn version(&self) -> u64 {
        self.table.version().load(Ordering::Acquire)
    }

    /// Keys in the table, as the writer last counted them.
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, Writer};
    /// let mut writer = Writer::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
    /// writer.put(&1, &10)?;
    /// assert_eq!((writer.reader().keys(), writer.reader().capacity()), (1, 4));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn keys(&self) -> u64 {
        self.table.keys().load(Ordering::Relaxed)
    }

    /// Bytes per key (what a raw key must be).
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, Writer};
    /// let writer = Writer::<[u8], u64, _>::on_heap(&blackboard::Options::new(4).key_size(12))?;
    /// assert_eq!((writer.reader().key_size(), writer.reader().value_size()), (12, 8));
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn key_size(&self) -> usize {
        self.table.geo.key_size as usize
    }

    /// Bytes per value (what a raw value must be).
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, Writer};
    /// let writer = Writer::<[u8], u64, _>::on_heap(&blackboard::Options::new(4).key_size(12))?;
    /// assert_eq!(writer.reader().value_size(), 8);
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn value_size(&self) -> usize {
        self.table.geo.value_size as usize
    }

    /// The most keys the table holds.
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, Writer};
    /// let writer = Writer::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
    /// assert_eq!(writer.reader().capacity(), 4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn capacity(&self) -> u64 {
        self.table.geo.keys
    }

    /// Every key in the table with its value, each read whole (the view as
    /// a whole is not one instant's: keys written while it runs may or may
    /// not be in it). One pass over the table's entries.
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, Writer};
    /// let mut writer = Writer::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
    /// writer.put(&1, &10)?;
    /// writer.put(&2, &20)?;
    /// let mut sum = 0;
    /// for item in writer.reader().entries() {
    ///     sum += item?.value.unwrap();
    /// }
    /// assert_eq!(sum, 30);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn entries(&mut self) -> Entries<'_, K, V, R> {
        Entries {
            reader: self,
            next: 0,
            since: None,
        }
    }

    /// The entries written after version `since`: updated keys with their
    /// value, removed ones with `None`. Nothing at all (no pass over the
    /// table) if the table's version is not past `since`. Pass the
    /// [`Reader::version`] read before the previous call to see each
    /// change at least once.
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, Writer};
    /// let mut writer = Writer::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
    /// writer.put(&1, &10)?;
    /// let mut reader = writer.reader();
    /// let seen = reader.version();
    /// writer.put(&2, &20)?;
    /// writer.remove(&1)?;
    /// let changed: Vec<_> = reader.changed_since(seen).collect::<Result<_, _>>()?;
    /// assert_eq!(changed.len(), 2);
    /// assert!(changed.iter().any(|i| i.key == 1 && i.value.is_none()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn changed_since(&mut self, since: u64) -> Entries<'_, K, V, R> {
        let next = if self.version() > since {
            0
        } else {
            self.table.geo.entries
        };
        Entries {
            reader: self,
            next,
            since: Some(since),
        }
    }

    /// Waits until the table's version passes `since` (any key written or
    /// removed): the new version, or `None` when `wait` ran out. Sleeps on
    /// the table's shared futex doorbell (after spinning, as the
    /// [`WaitStrategy`] of its options says).
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use shmbus::{Wait, blackboard::{self, Writer}};
    /// let mut writer = Writer::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
    /// let mut reader = writer.reader();
    /// assert_eq!(reader.wait_changed(0, Wait::For(Duration::from_millis(1))), None);
    /// writer.put(&1, &10)?;
    /// assert_eq!(reader.wait_changed(0, Wait::Never), Some(1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_changed(&mut self, since: u64, wait: Wait) -> Option<u64> {
        let mut backoff = Backoff::new(self.strategy, wait.deadline());
        loop {
            let v = self.version();
            if v > since {
                return Some(v);
            }
            match backoff.next() {
                Step::Spin => crate::sync::spin_loop(),
                Step::Yield => crate::sync::yield_now(),
                Step::Sleep(timeout) => {
                    let version = self.table.version();
                    wait::sleep(self.table.bell(), timeout, || {
                        version.load(Ordering::Acquire) <= since
                    })
                }
                Step::TimedOut => return None,
            }
        }
    }

    /// Waits until `key`'s entry has a version past `since` (written, or
    /// removed: then `Some` with no value), or `wait` runs out (`None`).
    ///
    /// # Errors
    /// As [`Reader::get`].
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Wait, blackboard::{self, Writer}};
    /// let mut writer = Writer::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
    /// let mut reader = writer.reader();
    /// writer.put(&1, &10)?;
    /// let got = reader.wait_key(&1, 0, Wait::Never)?.unwrap();
    /// assert_eq!((got.value, got.version), (Some(10), 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_key(
        &mut self,
        key: &K,
        since: u64,
        wait: Wait,
    ) -> Result<Option<Versioned<Option<V::Owned>>>, GetError> {
        let deadline = wait.deadline();
        loop {
            let table_version = self.version();
            if table_version > since {
                // The key's entry, live or removed: a removal is a change.
                if let Some(found) = self.key_since(key.as_bytes(), since)? {
                    return Ok(Some(found));
                }
            }
            let left = match deadline {
                None => Wait::Forever,
                Some(d) => Wait::For(d.saturating_duration_since(std::time::Instant::now())),
            };
            if self.wait_changed(table_version, left).is_none() {
                return Ok(None);
            }
        }
    }

    /// `key`'s entry if its version is past `since`, live (with its value)
    /// or removed (without).
    pub(crate) fn key_since(
        &mut self,
        key: &[u8],
        since: u64,
    ) -> Result<Option<Versioned<Option<V::Owned>>>, GetError> {
        if key.len() != self.table.geo.key_size as usize {
            return Err(GetError::KeySize {
                found: key.len(),
                expected: self.table.geo.key_size as usize,
            });
        }
        let (at, size) = (self.table.value_at(), self.table.geo.value_size as usize);
        let key_at = self.table.key_at();
        let home = self.table.home(key);
        for n in 0..self.table.geo.entries {
            // An entry mid-write that cannot hold the key is passed, as
            // another key's is (`Table::read_on_probe`).
            let Some(read) = self.table.read_on_probe(home + n, key, &mut self.buf)? else {
                continue;
            };
            if read.tag == tag::EMPTY {
                return Ok(None);
            }
            if &self.buf[key_at..key_at + key.len()] != key {
                continue;
            }
            if read.version <= since {
                // This entry's key, unchanged; a live one ends the probe.
                if read.tag == tag::LIVE {
                    return Ok(None);
                }
                continue;
            }
            let value = (read.tag == tag::LIVE).then(|| V::from_bytes(&self.buf[at..at + size]));
            return Ok(Some(Versioned {
                value,
                version: read.version,
            }));
        }
        Ok(None)
    }
}

/// The entries of a view of the table ([`Reader::entries`],
/// [`Reader::changed_since`]), in table order: an `Err` for an entry that
/// could not be read (the view goes on past it).
///
/// # Examples
/// ```
/// use shmbus::blackboard::{self, Writer};
/// let mut writer = Writer::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
/// writer.put(&1, &10)?;
/// assert_eq!(writer.reader().entries().count(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Entries<'a, K: ?Sized + Field, V: ?Sized + Field, R: Region> {
    reader: &'a mut Reader<K, V, R>,
    next: u64,
    since: Option<u64>,
}

impl<K: ?Sized + Field, V: ?Sized + Field, R: Region> std::fmt::Debug for Entries<'_, K, V, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entries")
            .field("next", &self.next)
            .field("since", &self.since)
            .finish_non_exhaustive()
    }
}

impl<K: ?Sized + Field, V: ?Sized + Field, R: Region> Iterator for Entries<'_, K, V, R> {
    type Item = Result<Item<K::Owned, V::Owned>, GetError>;

    fn next(&mut self) -> Option<Self::Item> {
        let table = &self.reader.table;
        let (key_at, key_size) = (table.key_at(), table.geo.key_size as usize);
        let (at, size) = (table.value_at(), table.geo.value_size as usize);
        while self.next < table.geo.entries {
            let i = self.next;
            self.next += 1;
            if let Some(since) = self.since {
                // An even stamp at or before `since`: unchanged since, no
                // copy needed. Relaxed: only a hint; the read checks.
                let stamp = table.stamp(i).load(Ordering::Relaxed);
                if stamp & 1 == 0 && stamp / 2 <= since {
                    continue;
                }
            }
            let read = match table.read(i, &mut self.reader.buf) {
                Ok(read) => read,
                Err(e) => return Some(Err(e.into())),
            };
            let buf = &self.reader.buf;
            let value = match (read.tag, self.since) {
                (tag::LIVE, _) => Some(V::from_bytes(&buf[at..at + size])),
                (tag::REMOVED, Some(since)) if read.version > since => None,
                _ => continue,
            };
            if self.since.is_some_and(|since| read.version <= since) {
                continue;
            }
            return Some(Ok(Item {
                key: K::from_bytes(&buf[key_at..key_at + key_size]),
                value,
                version: read.version,
            }));
        }
        None
    }
}

#[cfg(not(loom))]
mod shm {
    use super::*;
    use crate::error::OpenError;
    use crate::mem::ShmRegion;
    use crate::options::OpenOptions;
    use crate::segment::{Role, open_checked};
    use crate::wire::Kind;

    impl<K: ?Sized + Field, V: ?Sized + Field> Reader<K, V, ShmRegion> {
        /// Opens the blackboard `name` to read it. A typed reader checks
        /// the table's key and value types; a raw side takes any. Readers
        /// map the table read-only (the control page read-write, for the
        /// doorbell).
        ///
        /// # Errors
        /// As a bus subscriber's open ([`OpenError`]): not found, another
        /// kind ([`OpenError::WrongKind`]), other types
        /// ([`OpenError::TypeMismatch`]), a header that cannot be right.
        ///
        /// # Examples
        /// ```
        /// use shmbus::{OpenOptions, blackboard::{self, Reader, Writer}};
        /// # let name = format!("/dev/shm/shmbus-doc-bbopen-{}", std::process::id());
        /// let mut writer = Writer::<u64, u64>::create(&name, &blackboard::Options::new(8))?;
        /// writer.put(&1, &2)?;
        /// let mut raw = Reader::<[u8], [u8]>::open(&name, &OpenOptions::default())?;
        /// assert_eq!(raw.get(&1u64.to_ne_bytes())?.unwrap().value, 2u64.to_ne_bytes());
        /// # shmbus::remove(&name)?;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn open(name: &str, opts: &OpenOptions) -> Result<Self, OpenError> {
            let (region, header) = open_checked(
                name,
                Role::Subscriber,
                Kind::Blackboard,
                V::expected(None).as_ref(),
                opts,
            )?;
            check_key::<K>(&header)?;
            let geo = header
                .blackboard_geometry()
                .map_err(|e| OpenError::InvalidGeometry(e.to_string()))?;
            let table = Table::new(
                region,
                geo,
                header.control_offset as usize,
                header.data_offset as usize,
            );
            Ok(Reader::from_table(table, opts.wait))
        }
    }
}
