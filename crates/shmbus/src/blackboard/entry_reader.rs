//! [`EntryReader`]: a reader's handle on one key, resolved once. A get
//! through it is the entry's seqlock and a copy of the value: no hash, no
//! probe, while the key stays in the entry it was found in.
//!
//! # Invariants (extending the blackboard module's)
//! - The handle keeps the key and a *hint*: the entry it last found the
//!   key in (or the key's home before it was ever found). The hint is
//!   only a place to look first; the key is the truth. A read at the hint
//!   is kept only if the seqlock says it is whole *and* the tag and key
//!   words read inside it are the key's, live (`entry::try_read_key`, the
//!   same attempt `Reader::get` makes at each entry of a probe, or its
//!   register form `entry::try_read_words` for a small typed value, which
//!   keeps the same checks). So a hint
//!   left stale by a removal, by another key inserted there, or by the
//!   key re-inserted elsewhere, can never yield another key's value: any
//!   other outcome at the hint falls back to the full look-up
//!   (`Table::find_entry`, bounded as `get` is), which moves the hint to
//!   where it found the key. loom: `loom/blackboard.rs`, the handle model.
//! - Only loads: any number of handles, on any threads, beside any
//!   number of readers; each holds the table's mapping alive.

use std::marker::PhantomData;
use std::sync::Arc;

use super::entry::{self, Attempt, Holds};
use super::error::{EntryError, GetError};
use super::field::Field;
use super::reader::{Reader, Versioned, from_words};
use super::table::{NotRead, Table};
use crate::mem::{DefaultRegion, Region};

/// A handle on one key of a blackboard, made by
/// [`Reader::entry`](super::Reader::entry): its `get` reads the key's
/// latest value where the key was last found, with no hash and no probe,
/// and looks the key up again only when it has moved (removed, put
/// again, or never there). What a loop that reads the same keys over and
/// over holds, one per key.
///
/// It keeps the table mapped, and may be sent to another thread; every
/// read is wait-free and never torn, as [`Reader::get`](super::Reader::get)'s.
///
/// # Examples
/// ```
/// use shmbus::blackboard::{self, Writer};
///
/// let mut writer = Writer::<u32, [f64; 3], _>::on_heap(&blackboard::Options::new(64))?;
/// let mut pose = writer.reader().entry(&7)?; // resolved once
/// assert_eq!(pose.get()?, None); // not put yet
/// writer.put(&7, &[1.0, 2.0, 0.5])?;
/// assert_eq!(pose.get()?.map(|p| p.value), Some([1.0, 2.0, 0.5]));
/// writer.remove(&7)?;
/// writer.put(&7, &[1.5, 2.0, 0.5])?; // removed and put again: still found
/// assert_eq!(pose.get()?.map(|p| p.value), Some([1.5, 2.0, 0.5]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct EntryReader<K: ?Sized + Field, V: ?Sized + Field, R: Region = DefaultRegion> {
    table: Arc<Table<R>>,
    key: Box<[u8]>,
    /// The entry the key was last found in: tried first.
    hint: u64,
    /// The value's words, copied (the value's size rounded up to words).
    buf: Vec<u8>,
    _types: PhantomData<fn(&K, &V)>,
}

impl<K: ?Sized + Field, V: ?Sized + Field, R: Region> std::fmt::Debug for EntryReader<K, V, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EntryReader")
            .field("key", &self.key)
            .field("hint", &self.hint)
            .finish_non_exhaustive()
    }
}

impl<K: ?Sized + Field, V: ?Sized + Field, R: Region> EntryReader<K, V, R> {
    /// A handle on `key` (the table's key size, checked by the caller),
    /// its hint where a look-up finds it now, else its home.
    pub(crate) fn new(table: Arc<Table<R>>, key: &[u8]) -> Self {
        let mut buf = vec![0; (table.geo.value_size as usize).div_ceil(8) * 8];
        let hint = match table.find_entry(key, &mut buf) {
            Ok(Some((i, _))) => i,
            _ => table.home(key),
        };
        EntryReader {
            table,
            key: key.into(),
            hint,
            buf,
            _types: PhantomData,
        }
    }

    /// The latest value of the handle's key and its version, or `None`
    /// if the key is not in the table now. Where the key was last found,
    /// this is one seqlock read and a copy of the value; a key that moved
    /// is looked up again as [`Reader::get`](super::Reader::get) does.
    ///
    /// # Errors
    /// As [`Reader::get`](super::Reader::get): [`GetError::Busy`],
    /// [`GetError::Stuck`], [`GetError::Corrupt`].
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, Writer};
    /// let mut writer = Writer::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
    /// writer.put(&1, &10)?;
    /// let mut entry = writer.reader().entry(&1)?;
    /// let got = entry.get()?.expect("put");
    /// assert_eq!((got.value, got.version), (10, 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn get(&mut self) -> Result<Option<Versioned<V::Owned>>, GetError> {
        // Typed sizes are the table's (the open checked the file's types,
        // `Reader::entry` the key's size), so a value of up to 64 bytes
        // takes this path alone: read into registers at the hint, or
        // looked up into `buf` and loaded from there, both joining in
        // registers rather than through memory.
        if let (Some(k), Some(v)) = (K::SIZE, V::SIZE)
            && v <= entry::SMALL_WORDS * 8
        {
            debug_assert_eq!((k, v), (self.key.len(), self.table.geo.value_size as usize));
            let n = v.div_ceil(8);
            let (stamp, body) = self.table.slot(self.hint);
            let (version, words) =
                match entry::try_read_words(stamp, body, &self.key[..k], 1 + k.div_ceil(8), n) {
                    Some(hit) => hit,
                    None => match self.look_up()? {
                        Some(version) => (version, entry::words_of(&self.buf, n)),
                        None => return Ok(None),
                    },
                };
            return Ok(Some(from_words::<V>(version, &words, v)));
        }
        self.get_slow()
    }

    /// The full look-up into `buf`, out of line: a small typed get's miss
    /// at its hint (which it does not try again).
    #[inline(never)]
    fn look_up(&mut self) -> Result<Option<u64>, GetError> {
        let size = self.table.geo.value_size as usize;
        let value = &mut self.buf[..size.div_ceil(8) * 8];
        Ok(resolve(&self.table, &self.key, value, &mut self.hint)?)
    }

    /// The rest of [`EntryReader::get`]: a value too large for registers,
    /// or raw bytes. Out of line, so that a small typed get is short
    /// enough to inline into its caller's loop.
    #[inline(never)]
    fn get_slow(&mut self) -> Result<Option<Versioned<V::Owned>>, GetError> {
        let size = self.table.geo.value_size as usize;
        let key_len = self.key.len();
        // Typed sizes as constants (the open checked they are the table's;
        // a table that says otherwise is read at its own sizes).
        let found = match (K::SIZE, V::SIZE) {
            (Some(k), Some(v)) if k == key_len && v == size => self.read(k, v)?,
            _ => self.read(key_len, size)?,
        };
        Ok(found.map(|version| Versioned {
            value: V::from_bytes(&self.buf[..size]),
            version,
        }))
    }

    /// [`EntryReader::get`] with the value as bytes, borrowed until the
    /// next read, whatever the handle's types: what the C and Python
    /// bindings call.
    ///
    /// # Errors
    /// As [`EntryReader::get`].
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, Writer};
    /// let mut writer = Writer::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
    /// writer.put(&1, &10)?;
    /// let mut entry = writer.reader().entry(&1)?;
    /// let (bytes, version) = entry.get_bytes()?.expect("put");
    /// assert_eq!((bytes, version), (&10u64.to_ne_bytes()[..], 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_bytes(&mut self) -> Result<Option<(&[u8], u64)>, GetError> {
        let size = self.table.geo.value_size as usize;
        let found = self.read(self.key.len(), size)?;
        Ok(found.map(|version| (&self.buf[..size], version)))
    }

    /// The handle's key, as the table's bytes.
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, Writer};
    /// let writer = Writer::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
    /// assert_eq!(writer.reader().entry(&3)?.key(), 3u64.to_ne_bytes());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// The version of the key's live entry, its value's words at the
    /// start of `buf`: one attempt at the hint, then the look-up.
    /// Inlined, so that typed sizes are constants.
    #[inline(always)]
    fn read(&mut self, key_len: usize, size: usize) -> Result<Option<u64>, GetError> {
        let Self {
            table,
            key,
            hint,
            buf,
            ..
        } = self;
        let key = &key[..key_len];
        let value = &mut buf[..size.div_ceil(8) * 8];
        let value_word = 1 + key_len.div_ceil(8);
        let (stamp, body) = table.slot(*hint);
        if let (Attempt::Stable(version), Holds::Key) =
            entry::try_read_key(stamp, body, key, value_word, value)
        {
            return Ok(Some(version));
        }
        Ok(resolve(table, key, value, hint)?)
    }
}

/// The look-up behind a hint that did not hold the key (busy, torn, or
/// another entry's): where it finds the key becomes the hint. Out of
/// line: the hit path stays short.
#[cold]
#[inline(never)]
fn resolve<R: Region>(
    table: &Table<R>,
    key: &[u8],
    value: &mut [u8],
    hint: &mut u64,
) -> Result<Option<u64>, NotRead> {
    Ok(table.find_entry(key, value)?.map(|(i, version)| {
        *hint = i;
        version
    }))
}

impl<K: ?Sized + Field, V: ?Sized + Field, R: Region> Reader<K, V, R> {
    /// A handle on `key`: its [`EntryReader::get`] reads the key where it
    /// was last found, with no hash and no probe, and finds it again when
    /// it moves (removed and put again, or not yet put). Make one per key
    /// a loop reads over and over; [`Reader::get`] is for one-off reads.
    ///
    /// # Errors
    /// [`EntryError::KeySize`] for a raw key of the wrong size.
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, Writer};
    /// let mut writer = Writer::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
    /// let reader = writer.reader();
    /// let mut speed = reader.entry(&1)?;
    /// writer.put(&1, &30)?;
    /// assert_eq!(speed.get()?.map(|e| e.value), Some(30));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn entry(&self, key: &K) -> Result<EntryReader<K, V, R>, EntryError> {
        let key = key.as_bytes();
        let expected = self.shared_table().geo.key_size as usize;
        if key.len() != expected {
            return Err(EntryError::KeySize {
                found: key.len(),
                expected,
            });
        }
        Ok(EntryReader::new(Arc::clone(self.shared_table()), key))
    }
}
