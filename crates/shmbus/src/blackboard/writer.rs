//! [`Writer`]: the one process (or thread) that inserts, updates and
//! removes keys. Exclusive, as a bus's publisher: it holds lock byte
//! `PUBLISHER` for as long as it lives, and a new writer attaches after
//! a dead one, repairing what it left mid-write.

use std::marker::PhantomData;

use super::Options;
use super::entry_writer::EntryWriter;
use super::error::{EntryError, PutError, RemoveError};
use super::field::Field;
use super::reader::Reader;
use super::table::Table;
use crate::error::CreateError;
use crate::mem::{DefaultRegion, HeapRegion, Region};
use crate::sync::Ordering;
use crate::wait::{self, WaitStrategy};
use crate::wire::blackboard::tag;
use crate::wire::{BlackboardGeometry, GeometryError, Header, TypeFingerprint};

/// The writer of a blackboard: `put` a key's latest value, `remove` a
/// key. One per table (creating one takes the writer's lock; another
/// process's [`Writer::attach`] is refused while it lives). Writes never
/// wait: a reader never holds the writer back.
///
/// `K` and `V` are [`Field`]s: a [`Message`](crate::Message) type, or
/// `[u8]` for raw bytes of the sizes the table was made with. The raw
/// calls ([`Writer::put_bytes`], [`Writer::remove_bytes`]) work on every
/// writer, typed or not (the bindings' entry points).
///
/// Many writers, each owning its own keys, are a table made for them and
/// [`ManyWriter`](super::ManyWriter) handles, not this one (whose plain
/// stores assume no other writer). A forked child
/// must not use a writer it inherited (the lock is the parent's).
///
/// # Examples
/// ```
/// use shmbus::blackboard::{self, Writer};
///
/// let mut writer = Writer::<u32, [f64; 2], _>::on_heap(&blackboard::Options::new(500))?;
/// let mut reader = writer.reader();
/// let v1 = writer.put(&7, &[101.5, 101.75])?; // instrument 7: bid, ask
/// let got = reader.get(&7)?.expect("just put");
/// assert_eq!((got.value, got.version), ([101.5, 101.75], v1));
/// writer.remove(&7)?;
/// assert!(reader.get(&7)?.is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Writer<K: ?Sized + Field, V: ?Sized + Field, R: Region = DefaultRegion> {
    table: Table<R>,
    /// The last version given (only we store the table's).
    version: u64,
    /// Live keys (only we store the table's word).
    keys: u64,
    /// Registered for the asymmetric barrier (`wait`): the bell costs a
    /// compiler fence.
    light: bool,
    /// How readers made by [`Writer::reader`] wait.
    strategy: WaitStrategy,
    /// Entries a dead writer left mid-write, removed when we attached.
    repaired: u64,
    _types: PhantomData<fn(&K, &V)>,
}

impl<K: ?Sized + Field, V: ?Sized + Field, R: Region> std::fmt::Debug for Writer<K, V, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("keys", &self.keys)
            .field("capacity", &self.table.geo.keys)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

/// The header of a new blackboard of `K` keys and `V` values.
pub(crate) fn header<K: ?Sized + Field, V: ?Sized + Field>(
    opts: &Options,
    page: u64,
) -> Result<(Header, BlackboardGeometry), GeometryError> {
    let raw = |e| match e {
        GeometryError::RawNeedsMsgSize => GeometryError::RawNeedsSizes,
        e => e,
    };
    let key: TypeFingerprint =
        K::fingerprint(opts.key_size, opts.key_type.as_ref()).map_err(raw)?;
    let value: TypeFingerprint =
        V::fingerprint(opts.value_size, opts.value_type.as_ref()).map_err(raw)?;
    let geo = BlackboardGeometry::new(opts.keys, key.size, value.size)?;
    Ok((Header::blackboard(&geo, key, value, page)?, geo))
}

impl<K: ?Sized + Field, V: ?Sized + Field, R: Region> Writer<K, V, R> {
    /// A writer of `table`, taking over from whoever wrote it before:
    /// entries left mid-write are removed (counted in
    /// [`Writer::repaired`]), the keys counted, and versions go on after
    /// the highest found.
    fn take_over(table: Table<R>, strategy: WaitStrategy) -> Self {
        let mut version = table.version().load(Ordering::Acquire);
        let mut torn = Vec::new();
        let mut keys = 0;
        for i in 0..table.geo.entries {
            let stamp = table.stamp(i).load(Ordering::Relaxed);
            version = version.max(super::entry::version_of(stamp));
            if super::entry::is_writing(stamp) {
                torn.push(i);
            } else if table.body(i)[0].load(Ordering::Relaxed) == tag::LIVE {
                keys += 1;
            }
        }
        let repaired = torn.len() as u64;
        for i in torn {
            version = version.wrapping_add(1);
            table.write(i, version, tag::REMOVED, None, None);
        }
        table.keys().store(keys, Ordering::Relaxed);
        Writer {
            table,
            version,
            keys,
            light: wait::light_publisher_barrier(),
            strategy,
            repaired,
            _types: PhantomData,
        }
    }

    /// Sets `key` to `value`: an update if the key is there, else an
    /// insert. Returns the entry's new version (the table's, which every
    /// write moves up by one). Readers see the whole value or the one
    /// before, never a mix.
    ///
    /// # Errors
    /// [`PutError::Full`] for a new key when the table holds its
    /// capacity; [`PutError::KeySize`] / [`PutError::ValueSize`] for raw
    /// bytes of the wrong size.
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, Writer};
    /// let mut writer = Writer::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
    /// assert_eq!(writer.put(&1, &100)?, 1);
    /// assert_eq!(writer.put(&1, &101)?, 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn put(&mut self, key: &K, value: &V) -> Result<u64, PutError> {
        self.put_bytes(key.as_bytes(), value.as_bytes())
    }

    /// [`Writer::put`] with the key and value as bytes, whatever the
    /// writer's types: what the C and Python bindings call.
    ///
    /// # Errors
    /// As [`Writer::put`]; a size other than the table's is
    /// [`PutError::KeySize`] or [`PutError::ValueSize`].
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, PutError, Writer};
    /// let mut writer = Writer::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
    /// writer.put_bytes(&1u64.to_ne_bytes(), &5u64.to_ne_bytes())?;
    /// assert_eq!(
    ///     writer.put_bytes(&1u64.to_ne_bytes(), b"short"),
    ///     Err(PutError::ValueSize { found: 5, expected: 8 })
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn put_bytes(&mut self, key: &[u8], value: &[u8]) -> Result<u64, PutError> {
        let geo = &self.table.geo;
        if key.len() != geo.key_size as usize {
            return Err(PutError::KeySize {
                found: key.len(),
                expected: geo.key_size as usize,
            });
        }
        if value.len() != geo.value_size as usize {
            return Err(PutError::ValueSize {
                found: value.len(),
                expected: geo.value_size as usize,
            });
        }
        self.put_located(key, value).map(|(_, v)| v)
    }

    /// The by-key put of checked sizes: the entry written and its version.
    #[inline(always)]
    fn put_located(&mut self, key: &[u8], value: &[u8]) -> Result<(u64, u64), PutError> {
        let v = self.version.wrapping_add(1);
        // One call of `write` (an update leaves the key in place), so that
        // it inlines here.
        let (i, new_key) = match self.table.locate(key) {
            Ok(i) => (i, None),
            Err(Some(i)) if self.keys < self.table.geo.keys => (i, Some(key)),
            Err(_) => return Err(PutError::Full { keys: self.keys }),
        };
        self.table.write(i, v, tag::LIVE, new_key, Some(value));
        if new_key.is_some() {
            self.keys += 1;
            self.table.keys().store(self.keys, Ordering::Relaxed);
        }
        self.version = v;
        wait::ring(self.table.bell(), self.light);
        Ok((i, v))
    }

    /// A handle on `key` for [`Writer::put_entry`]: puts through it write
    /// where the key was last written, with no hash and no probe. The key
    /// need not be in the table yet.
    ///
    /// # Errors
    /// [`EntryError::KeySize`] for a raw key of the wrong size.
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, Writer};
    /// let mut writer = Writer::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
    /// let mut speed = writer.entry(&1)?;
    /// assert_eq!(writer.put_entry(&mut speed, &30)?, 1);
    /// assert_eq!(writer.put_entry(&mut speed, &31)?, 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn entry(&self, key: &K) -> Result<EntryWriter<K, V>, EntryError> {
        let key = key.as_bytes();
        let expected = self.table.geo.key_size as usize;
        if key.len() != expected {
            return Err(EntryError::KeySize {
                found: key.len(),
                expected,
            });
        }
        let hint = match self.table.locate(key) {
            Ok(i) | Err(Some(i)) => i,
            Err(None) => self.table.home(key),
        };
        Ok(EntryWriter::new(key, hint))
    }

    /// [`Writer::put`] through a handle: if the entry the handle last
    /// wrote still holds its key, the put is the entry's seqlock and a
    /// copy of the value there; else (the key removed, or never put) it
    /// is the by-key put, and the handle remembers where it wrote.
    /// Returns the entry's new version.
    ///
    /// # Errors
    /// As [`Writer::put`]: [`PutError::Full`] for a key not in the table
    /// when the table holds its capacity; [`PutError::KeySize`] for a
    /// handle made for a table of another key size;
    /// [`PutError::ValueSize`] for a raw value of the wrong size.
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, Writer};
    /// let mut writer = Writer::<u64, [u8; 4], _>::on_heap(&blackboard::Options::new(4))?;
    /// let mut reader = writer.reader();
    /// let mut state = writer.entry(&9)?;
    /// writer.put_entry(&mut state, b"idle")?;
    /// writer.remove(&9)?; // the handle survives its key's removal
    /// writer.put_entry(&mut state, b"busy")?;
    /// assert_eq!(reader.get(&9)?.map(|e| e.value), Some(*b"busy"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn put_entry(&mut self, entry: &mut EntryWriter<K, V>, value: &V) -> Result<u64, PutError> {
        self.put_entry_bytes(entry, value.as_bytes())
    }

    /// [`Writer::put_entry`] with the value as bytes, whatever the
    /// writer's types: what the C and Python bindings call.
    ///
    /// # Errors
    /// As [`Writer::put_entry`].
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, PutError, Writer};
    /// let mut writer = Writer::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
    /// let mut entry = writer.entry(&1)?;
    /// writer.put_entry_bytes(&mut entry, &5u64.to_ne_bytes())?;
    /// assert_eq!(
    ///     writer.put_entry_bytes(&mut entry, b"short"),
    ///     Err(PutError::ValueSize { found: 5, expected: 8 })
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn put_entry_bytes(
        &mut self,
        entry: &mut EntryWriter<K, V>,
        value: &[u8],
    ) -> Result<u64, PutError> {
        let geo = &self.table.geo;
        if value.len() != geo.value_size as usize {
            return Err(PutError::ValueSize {
                found: value.len(),
                expected: geo.value_size as usize,
            });
        }
        let key_len = geo.key_size as usize;
        if entry.key.len() != key_len {
            return Err(PutError::KeySize {
                found: entry.key.len(),
                expected: key_len,
            });
        }
        let i = entry.hint;
        // A typed key's size as a constant in its own call, so that the
        // compare unrolls there.
        let holds = match K::SIZE {
            Some(k) if k == key_len => self.table.holds_live(i, &entry.key[..k]),
            _ => self.table.holds_live(i, &entry.key),
        };
        if !holds {
            return self.put_entry_moved(entry, value);
        }
        let v = self.version.wrapping_add(1);
        self.table.write(i, v, tag::LIVE, None, Some(value));
        self.version = v;
        wait::ring(self.table.bell(), self.light);
        Ok(v)
    }

    /// A put through a handle whose entry no longer holds its key: the
    /// by-key put, remembered.
    #[cold]
    #[inline(never)]
    fn put_entry_moved(
        &mut self,
        entry: &mut EntryWriter<K, V>,
        value: &[u8],
    ) -> Result<u64, PutError> {
        let key = std::mem::take(&mut entry.key);
        let put = self.put_located(&key, value);
        entry.key = key;
        let (i, v) = put?;
        entry.hint = i;
        Ok(v)
    }

    /// [`Writer::remove`] through a handle: the handle stays, and a later
    /// [`Writer::put_entry`] puts the key back.
    ///
    /// # Errors
    /// [`RemoveError::KeySize`] for a handle made for a table of another
    /// key size.
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, Writer};
    /// let mut writer = Writer::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
    /// let mut entry = writer.entry(&1)?;
    /// writer.put_entry(&mut entry, &100)?;
    /// assert_eq!(writer.remove_entry(&mut entry)?, Some(2));
    /// assert_eq!(writer.remove_entry(&mut entry)?, None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remove_entry(
        &mut self,
        entry: &mut EntryWriter<K, V>,
    ) -> Result<Option<u64>, RemoveError> {
        self.remove_bytes(&entry.key)
    }

    /// Removes `key`: readers find it no more. Returns the version of the
    /// removal, or `None` (nothing written) if the key was not there.
    ///
    /// # Errors
    /// [`RemoveError::KeySize`] for a raw key of the wrong size.
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, Writer};
    /// let mut writer = Writer::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
    /// writer.put(&1, &100)?;
    /// assert_eq!(writer.remove(&1)?, Some(2));
    /// assert_eq!(writer.remove(&1)?, None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remove(&mut self, key: &K) -> Result<Option<u64>, RemoveError> {
        self.remove_bytes(key.as_bytes())
    }

    /// [`Writer::remove`] with the key as bytes, whatever the writer's
    /// key type.
    ///
    /// # Errors
    /// [`RemoveError::KeySize`] for a key of another size than the
    /// table's.
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, Writer};
    /// let mut writer = Writer::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
    /// assert_eq!(writer.remove_bytes(&9u64.to_ne_bytes())?, None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remove_bytes(&mut self, key: &[u8]) -> Result<Option<u64>, RemoveError> {
        if key.len() != self.table.geo.key_size as usize {
            return Err(RemoveError::KeySize {
                found: key.len(),
                expected: self.table.geo.key_size as usize,
            });
        }
        let Ok(i) = self.table.locate(key) else {
            return Ok(None);
        };
        let v = self.version.wrapping_add(1);
        self.table.write(i, v, tag::REMOVED, None, None);
        // Saturating: a table someone else wrote may hold more live tags
        // than we counted.
        self.keys = self.keys.saturating_sub(1);
        self.table.keys().store(self.keys, Ordering::Relaxed);
        self.version = v;
        wait::ring(self.table.bell(), self.light);
        Ok(Some(v))
    }

    /// Keys in the table now.
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, Writer};
    /// let mut writer = Writer::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
    /// writer.put(&1, &1)?;
    /// assert_eq!((writer.keys(), writer.capacity()), (1, 4));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn keys(&self) -> u64 {
        self.keys
    }

    /// Bytes per key (what a raw key must be).
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, Writer};
    /// let writer = Writer::<[u8], u64, _>::on_heap(&blackboard::Options::new(4).key_size(12))?;
    /// assert_eq!((writer.key_size(), writer.value_size()), (12, 8));
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
    /// assert_eq!(writer.value_size(), 8);
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
    /// assert_eq!(writer.capacity(), 4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn capacity(&self) -> u64 {
        self.table.geo.keys
    }

    /// The last version written (0 before the first write): every put and
    /// removal moves it up by one.
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, Writer};
    /// let mut writer = Writer::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
    /// writer.put(&1, &1)?;
    /// assert_eq!(writer.version(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn version(&self) -> u64 {
        self.version
    }

    /// How many entries a dead writer had left mid-write when this one
    /// attached: each was removed (its value was lost), so readers find
    /// the key absent, not stuck. Put them again.
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, Writer};
    /// let writer = Writer::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
    /// assert_eq!(writer.repaired(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn repaired(&self) -> u64 {
        self.repaired
    }

    /// Test hook: starts writing `key` = `value` as [`Writer::put_bytes`]
    /// does, and stops between the odd stamp and the commit, as a writer
    /// killed there would. The entry stays mid-write.
    #[cfg(feature = "test-hooks")]
    #[doc(hidden)]
    pub fn put_and_stop_mid_write(&mut self, key: &[u8], value: &[u8]) -> Result<u64, PutError> {
        let i = match self.table.locate(key) {
            Ok(i) => i,
            Err(Some(i)) => i,
            Err(None) => return Err(PutError::Full { keys: self.keys }),
        };
        let v = self.version.wrapping_add(1);
        let half = &value[..value.len() / 2];
        self.table.write_half(i, v, key, half);
        self.version = v;
        Ok(v)
    }
}

impl<K: ?Sized + Field, V: ?Sized + Field, R: Region + Clone> Writer<K, V, R> {
    /// A reader of the same table (on the heap: the writer's own region).
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, Writer};
    /// let mut writer = Writer::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
    /// let mut reader = writer.reader();
    /// writer.put(&1, &10)?;
    /// assert_eq!(reader.get(&1)?.map(|e| e.value), Some(10));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reader(&self) -> Reader<K, V, R> {
        Reader::from_table(self.table.same(self.table.region.clone()), self.strategy)
    }
}

impl<K: ?Sized + Field, V: ?Sized + Field> Writer<K, V, std::sync::Arc<HeapRegion>> {
    /// A blackboard on the heap, for threads of one process (and loom and
    /// Miri): its readers come from [`Writer::reader`].
    ///
    /// # Errors
    /// [`CreateError::InvalidGeometry`] for an impossible shape (0 keys,
    /// raw sides without their sizes, ...).
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, Writer};
    /// let writer = Writer::<[u8], [u8], _>::on_heap(
    ///     &blackboard::Options::new(16).key_size(8).value_size(64),
    /// )?;
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn on_heap(opts: &Options) -> Result<Self, CreateError> {
        let page = crate::mem::heap::HEAP_PAGE;
        let (header, geo) = header::<K, V>(opts, page).map_err(CreateError::InvalidGeometry)?;
        let region = std::sync::Arc::new(HeapRegion::new(header.total_len as usize));
        header.write(&*region);
        Header::publish_magic(&*region);
        let table = Table::new(region, geo, page as usize, 2 * page as usize);
        Ok(Writer::take_over(table, opts.wait))
    }
}

#[cfg(not(loom))]
mod shm {
    use super::*;
    use crate::error::{AttachError, OpenError};
    use crate::mem::ShmRegion;
    use crate::options::OpenOptions;
    use crate::segment::{Role, create_region, layout_page, open_checked, take_role};
    use crate::wire::{Kind, blackboard::control, lock_byte};

    impl<K: ?Sized + Field, V: ?Sized + Field> Writer<K, V, ShmRegion> {
        /// Creates a blackboard named `name` (a bare name lives in
        /// /dev/shm) and becomes its writer.
        ///
        /// # Errors
        /// As a bus's create ([`CreateError`]: the name taken, the
        /// directory, ...), and [`CreateError::InvalidGeometry`] for an
        /// impossible shape.
        ///
        /// # Examples
        /// ```
        /// use shmbus::{OpenOptions, blackboard::{self, Reader, Writer}};
        /// # let name = format!("/dev/shm/shmbus-doc-bbcreate-{}", std::process::id());
        /// let mut writer = Writer::<u64, u64>::create(&name, &blackboard::Options::new(100))?;
        /// writer.put(&1, &42)?;
        /// // Any process:
        /// let mut reader = Reader::<u64, u64>::open(&name, &OpenOptions::default())?;
        /// assert_eq!(reader.get(&1)?.map(|e| e.value), Some(42));
        /// # shmbus::remove(&name)?;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn create(name: &str, opts: &Options) -> Result<Self, CreateError> {
            let (page, huge) = layout_page(name, &opts.file)?;
            let (mut header, geo) =
                header::<K, V>(opts, page).map_err(CreateError::InvalidGeometry)?;
            header.flags |= huge;
            let region = create_region(name, &header, &opts.file, |_| {})?;
            let table = Table::new(
                region,
                geo,
                header.control_offset as usize,
                header.data_offset as usize,
            );
            Ok(Writer::take_over(table, opts.wait))
        }

        /// Becomes the writer of an existing blackboard, after a writer
        /// that ended or died: entries it left mid-write are removed
        /// ([`Writer::repaired`] counts them) and versions go on after
        /// the highest in the table. A typed writer checks the table's key
        /// and value types; a raw side takes any.
        ///
        /// # Errors
        /// [`AttachError::Open`] if it cannot be opened (another kind,
        /// other types: [`OpenError::WrongKind`], [`OpenError::TypeMismatch`]);
        /// [`AttachError::RoleTaken`] while a live process writes it;
        /// [`AttachError::WrongMode`] for a table made for many writers
        /// (attach a [`ManyWriter`](super::super::ManyWriter)).
        ///
        /// # Examples
        /// ```
        /// use shmbus::{OpenOptions, blackboard::{self, Writer}};
        /// # let name = format!("/dev/shm/shmbus-doc-bbattach-{}", std::process::id());
        /// drop(Writer::<u64, u64>::create(&name, &blackboard::Options::new(100))?);
        /// let writer = Writer::<u64, u64>::attach(&name, &OpenOptions::default())?;
        /// assert_eq!(writer.repaired(), 0);
        /// # shmbus::remove(&name)?;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn attach(name: &str, opts: &OpenOptions) -> Result<Self, AttachError> {
            let (region, header) = open_checked(
                name,
                Role::Publisher,
                Kind::Blackboard,
                V::expected(None).as_ref(),
                opts,
            )?;
            super::super::reader::check_key::<K>(&header)?;
            if header.flags & crate::wire::blackboard::MULTI_WRITER != 0 {
                return Err(AttachError::WrongMode {
                    role: crate::error::Role::Writer,
                    found: crate::wire::Publishers::Many,
                    expected: crate::wire::Publishers::One,
                });
            }
            let geo = header
                .blackboard_geometry()
                .map_err(|e| OpenError::InvalidGeometry(e.to_string()))?;
            let pid_field = header.control_offset as usize + control::WRITER_PID;
            take_role(&region, lock_byte::PUBLISHER, pid_field).map_err(|pid| {
                AttachError::RoleTaken {
                    role: crate::error::Role::Writer,
                    pid,
                }
            })?;
            let table = Table::new(
                region,
                geo,
                header.control_offset as usize,
                header.data_offset as usize,
            );
            Ok(Writer::take_over(table, opts.wait))
        }
    }
}
