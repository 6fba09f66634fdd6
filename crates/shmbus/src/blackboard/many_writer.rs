//! [`ManyWriter`]: many writers on one blackboard, each owning its keys.
//! A second mode, chosen at creation and recorded in the header
//! (`MULTI_WRITER`), as `bus/claim.rs` did for buses: single-writer
//! tables keep [`Writer`](super::Writer)'s plain stores, and only tables
//! made for many writers pay for a CAS per write. Readers are unchanged.
//!
//! # Invariants (extending the blackboard module's)
//! - **Claim.** A writer stores to an entry only after it has *claimed*
//!   it: a CAS of the entry's stamp from the even value it read to the
//!   next odd value (Acquire on success, paired with the Release commit of
//!   the write that stored that even stamp: the claimer sees that write's
//!   words). The CAS succeeds for one writer; the others re-probe. Only
//!   then does it take its version, `v = VERSION.fetch_add(1) + 1`
//!   (Relaxed: the RMW alone makes versions unique; entries carry their
//!   own stamps), and write as the single writer does (`entry::begin`'s
//!   `2v - 1` and Release fence, the words, `entry::commit`'s `2v`
//!   Release, paired with the reader's Acquire stamp load). A version is
//!   taken after the claim, and the claim reads the last commit, so an
//!   entry's stamps only grow.
//! - **Probe.** A writer reads each entry on the key's probe with the
//!   reader's seqlock attempt (tag and key words only): a stable live
//!   entry of the key is its entry (claim it from that stamp: success
//!   means it is unchanged since); a stable removed one is a free
//!   candidate (the first one kept); a stable empty one ends the probe
//!   (the free candidate, or this one). An entry mid-write is another
//!   writer's, skipped, unless its key words are this key's (then
//!   [`PutError::Busy`]) or it has stayed at one odd stamp longer than
//!   the unblock timeout (then taken over, below). Re-probes after lost
//!   claims are bounded by the table's entries, then `Busy`.
//! - **KEYS** counts live entries and entries mid-write. An insert adds
//!   one (`fetch_add`) before it claims, and undoes it on `Full` or a lost
//!   claim; a removal subtracts one (`fetch_sub`) after its commit. So an
//!   entry a writer died in is always counted once, whatever the write.
//! - **One writer per key (documented, not enforced).** Different keys
//!   from different writers are safe, including two inserts racing for
//!   the same empty entry (one claim wins, the other re-probes). Two
//!   writers inserting the *same* key at once may leave it in two
//!   entries: lookups then find the first on the probe, `entries()` lists
//!   both, and later puts of that key update the first.
//! - **Takeover.** An entry found at the same odd stamp for longer than
//!   the unblock timeout (`control::UNBLOCK_NS`, written by the creator
//!   before the magic) is taken over by the next writer whose probe meets
//!   it: a CAS from that odd stamp to the next odd one, then a whole
//!   write: its own key and value if the key words are its key's (a put;
//!   a removal writes `removed`), else `removed` (the dead write's value
//!   is lost, the count drops by one) before it probes again. Within the
//!   timeout a writer that needs the entry returns `Busy`: it never waits.
//!   Readers keep their bound (`Busy` while any writer holds the lock,
//!   `Stuck` when none does) on an entry that may hold their key, and
//!   pass one that cannot (the blackboard module's invariants; one writer
//!   per key makes that argument hold here).
//! - **Residual risk** (as `bus/claim.rs`): time alone says a writer is
//!   dead, so one stalled mid-write for longer than the timeout may, on
//!   waking, store the rest of its words over its successor's: choose the
//!   timeout far above any stall (default 1 s).
//! - `VERSION` is taken before the write, not stored after it, so a
//!   reader may see a version whose entry is still mid-write (it retries
//!   the entry, bounded, and may report `Busy`).
//! - Bounded everywhere: a probe reads at most the table's entries, a
//!   call probes at most the table's entries + 1 times; whatever the file
//!   holds, a writer returns.

use std::marker::PhantomData;
use std::time::{Duration, Instant};

use super::Options;
use super::entry::same_key;
use super::entry::{self, Attempt};
use super::entry_writer::EntryWriter;
use super::error::{EntryError, PutError, RemoveError};
use super::field::Field;
use super::reader::Reader;
use super::table::Table;
use crate::error::CreateError;
use crate::mem::{DefaultRegion, HeapRegion, Region};
use crate::sync::Ordering;
use crate::wait::{self, WaitStrategy};
use crate::wire::Header;
use crate::wire::blackboard::{MULTI_WRITER, control, tag};

/// How many mid-write entries a handle remembers (entry, stamp, first
/// seen) to time them against the unblock timeout.
const REMEMBERED: usize = 16;

/// What a probe for a key found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Probe {
    /// The key's live entry, stable at this (even) stamp.
    Found { i: u64, stamp: u64 },
    /// The key is not there; the entry (and its stamp) an insert claims.
    Absent { free: Option<(u64, u64)> },
    /// The key's entry is mid-write, within the unblock timeout.
    Busy { i: u64 },
    /// An entry stayed at this odd stamp past the unblock timeout.
    Stuck { i: u64, stamp: u64 },
}

/// One of many writers of a blackboard made for them: `put` and
/// `remove` the keys it owns while other processes (or threads) write
/// theirs. Each key should have at most one writer (see the module docs
/// for what two writers of one key cause); readers are the usual
/// [`Reader`]s.
///
/// A write claims its entry with a CAS, so a writer killed mid-write
/// leaves only that entry busy, until another writer meets it after the
/// table's unblock timeout ([`Options::unblock_timeout`]) and
/// takes it over. Writes never wait: within the timeout they return
/// [`PutError::Busy`].
///
/// # Examples
/// ```
/// use shmbus::blackboard::{self, ManyWriter};
///
/// let mut a = ManyWriter::<u32, u64, _>::on_heap(&blackboard::Options::new(8))?;
/// let mut b = a.another(); // in real use: another process's `attach`
/// let mut reader = a.reader();
/// a.put(&1, &10)?;
/// b.put(&2, &20)?;
/// assert_eq!(reader.get(&2)?.map(|e| e.value), Some(20));
/// assert_eq!(a.keys(), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ManyWriter<K: ?Sized + Field, V: ?Sized + Field, R: Region = DefaultRegion> {
    table: Table<R>,
    unblock: Duration,
    /// Mid-write entries met: (entry, odd stamp, when first seen there).
    odd: Vec<(u64, u64, Instant)>,
    /// The tag and key words of a probe's read.
    buf: Vec<u8>,
    /// The last version this handle wrote.
    last: u64,
    /// Entries this handle took over from a writer that died (or stalled).
    taken_over: u64,
    light: bool,
    strategy: WaitStrategy,
    _types: PhantomData<fn(&K, &V)>,
}

impl<K: ?Sized + Field, V: ?Sized + Field, R: Region> std::fmt::Debug for ManyWriter<K, V, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManyWriter")
            .field("keys", &self.keys())
            .field("capacity", &self.table.geo.keys)
            .field("last", &self.last)
            .field("unblock", &self.unblock)
            .field("taken_over", &self.taken_over)
            .finish_non_exhaustive()
    }
}

/// Writes the many-writer control fields of a table being built (before
/// its magic): the unblock timeout.
fn init_control<R: Region>(region: &R, header: &Header, unblock: Duration) {
    let ns = u64::try_from(unblock.as_nanos()).unwrap_or(u64::MAX);
    region
        .word(header.control_offset as usize + control::UNBLOCK_NS)
        .store(ns, Ordering::Relaxed);
}

impl<K: ?Sized + Field, V: ?Sized + Field, R: Region> ManyWriter<K, V, R> {
    pub(crate) fn new(table: Table<R>, strategy: WaitStrategy) -> Self {
        // Untrusted: any value is a timeout (0: take over at once).
        let ns = table.unblock().load(Ordering::Relaxed);
        let words = 1 + (table.geo.key_size as usize).div_ceil(8);
        ManyWriter {
            table,
            unblock: Duration::from_nanos(ns),
            odd: Vec::new(),
            buf: vec![0; words * 8],
            last: 0,
            taken_over: 0,
            light: wait::light_publisher_barrier(),
            strategy,
            _types: PhantomData,
        }
    }

    /// Whether entry `i`, found at odd `stamp`, has stayed there longer
    /// than the unblock timeout (as far as this handle has watched it).
    fn stuck(&mut self, i: u64, stamp: u64) -> bool {
        let now = Instant::now();
        if let Some(seen) = self.odd.iter_mut().find(|(e, _, _)| *e == i) {
            if seen.1 == stamp {
                return now.duration_since(seen.2) > self.unblock;
            }
            *seen = (i, stamp, now);
            return false;
        }
        if self.odd.len() == REMEMBERED {
            self.odd.remove(0);
        }
        self.odd.push((i, stamp, now));
        false
    }

    /// Reads the probe of `key` (module docs: Probe).
    fn probe(&mut self, key: &[u8]) -> Probe {
        let entries = self.table.geo.entries;
        let home = self.table.home(key);
        let words = 1 + key.len().div_ceil(8);
        let mut free = None;
        for n in 0..entries {
            let i = (home + n) & (entries - 1);
            let attempt = {
                let body = &self.table.body(i)[..words];
                entry::try_read(self.table.stamp(i), body, &mut self.buf)
            };
            match attempt {
                Attempt::Stable(version) => {
                    let stamp = version.wrapping_mul(2);
                    let t = u64::from_ne_bytes(self.buf[..8].try_into().expect("8 bytes"));
                    match t {
                        tag::EMPTY => {
                            return Probe::Absent {
                                free: free.or(Some((i, stamp))),
                            };
                        }
                        tag::LIVE if self.buf[8..8 + key.len()] == *key => {
                            return Probe::Found { i, stamp };
                        }
                        tag::LIVE => {}
                        // Removed, or a tag no writer stores: reusable.
                        _ => {
                            free.get_or_insert((i, stamp));
                        }
                    }
                }
                Attempt::Writing(stamp) => {
                    if self.stuck(i, stamp) {
                        return Probe::Stuck { i, stamp };
                    }
                    // Racy loads: a whole match is this key's entry (one
                    // writer per key: its writer died or stalled), a torn
                    // one is at worst a spurious `Busy`.
                    if same_key(&self.table.body(i)[1..words], key) {
                        return Probe::Busy { i };
                    }
                }
                // Claimed by another writer meanwhile: another key's.
                Attempt::Torn => {}
            }
        }
        Probe::Absent { free }
    }

    /// Claims entry `i` from `stamp` (even: a stable entry; odd: a stuck
    /// one taken over).
    #[inline]
    fn claim(&self, i: u64, stamp: u64) -> bool {
        let to = if stamp & 1 == 0 {
            stamp.wrapping_add(1)
        } else {
            stamp.wrapping_add(2)
        };
        // Acquire, paired with the Release commit (`entry::commit`) that
        // stored `stamp`: we see the words of the write we follow.
        self.table
            .stamp(i)
            .compare_exchange(stamp, to, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Writes claimed entry `i` at a new version.
    #[inline]
    fn write(&mut self, i: u64, t: u64, key: Option<&[u8]>, value: Option<&[u8]>) -> u64 {
        // Relaxed: the RMW alone makes versions unique (module docs).
        let v = self
            .table
            .version()
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_add(1);
        self.table.write_entry(i, v, t, key, value);
        self.last = v;
        v
    }

    /// Takes over stuck entry `i` (claimed from its odd stamp): true if
    /// it was `key`'s (the caller writes it), else it is written removed
    /// and false (probe again).
    fn take_over(&mut self, i: u64, key: &[u8]) -> bool {
        self.taken_over += 1;
        self.odd.retain(|(e, _, _)| *e != i);
        // Ours now: no other writer stores here until we commit.
        if same_key(&self.table.body(i)[1..], key) {
            return true;
        }
        self.write(i, tag::REMOVED, None, None);
        self.table.keys().fetch_sub(1, Ordering::Relaxed);
        false
    }

    /// The table (the loom model's reader attempts go at it directly).
    #[cfg(loom)]
    pub(crate) fn table_for_loom(&self) -> &Table<R> {
        &self.table
    }

    /// The put without the bell (what loom runs).
    pub(crate) fn put_quiet(&mut self, key: &[u8], value: &[u8]) -> Result<u64, PutError> {
        self.put_located(key, value).map(|(_, v)| v)
    }

    /// The put without the bell: the entry written and its version.
    fn put_located(&mut self, key: &[u8], value: &[u8]) -> Result<(u64, u64), PutError> {
        let entries = self.table.geo.entries;
        for _ in 0..=entries {
            match self.probe(key) {
                Probe::Found { i, stamp } => {
                    if self.claim(i, stamp) {
                        return Ok((i, self.write(i, tag::LIVE, None, Some(value))));
                    }
                }
                Probe::Absent { free: None } => return Err(PutError::Full { keys: self.keys() }),
                Probe::Absent {
                    free: Some((i, stamp)),
                } => {
                    let keys = self.table.keys();
                    let before = keys.fetch_add(1, Ordering::Relaxed);
                    if before >= self.table.geo.keys {
                        keys.fetch_sub(1, Ordering::Relaxed);
                        return Err(PutError::Full { keys: before });
                    }
                    if self.claim(i, stamp) {
                        return Ok((i, self.write(i, tag::LIVE, Some(key), Some(value))));
                    }
                    keys.fetch_sub(1, Ordering::Relaxed);
                }
                Probe::Busy { i } => return Err(PutError::Busy { entry: i }),
                Probe::Stuck { i, stamp } => {
                    if self.claim(i, stamp) && self.take_over(i, key) {
                        // Counted already (KEYS counts a stuck entry).
                        return Ok((i, self.write(i, tag::LIVE, Some(key), Some(value))));
                    }
                }
            }
        }
        Err(PutError::Busy {
            entry: self.table.home(key),
        })
    }

    /// The removal without the bell.
    fn remove_quiet(&mut self, key: &[u8]) -> Result<Option<u64>, RemoveError> {
        let entries = self.table.geo.entries;
        for _ in 0..=entries {
            let i = match self.probe(key) {
                Probe::Found { i, stamp } if self.claim(i, stamp) => i,
                Probe::Found { .. } => continue,
                Probe::Absent { .. } => return Ok(None),
                Probe::Busy { i } => return Err(RemoveError::Busy { entry: i }),
                Probe::Stuck { i, stamp } if self.claim(i, stamp) && self.take_over(i, key) => i,
                Probe::Stuck { .. } => continue,
            };
            let v = self.write(i, tag::REMOVED, None, None);
            // After the commit (module docs: KEYS).
            self.table.keys().fetch_sub(1, Ordering::Relaxed);
            return Ok(Some(v));
        }
        Err(RemoveError::Busy {
            entry: self.table.home(key),
        })
    }

    /// Sets `key` to `value`: an update if the key is there, else an
    /// insert. Returns the entry's new version (taken from the table's
    /// counter, which every writer's write moves up by one).
    ///
    /// # Errors
    /// [`PutError::Full`] for a new key when the table holds its
    /// capacity; [`PutError::Busy`] when the key's entry is mid-write by
    /// another handle (a dead one's is taken over once the unblock timeout
    /// has passed: call again); [`PutError::KeySize`] /
    /// [`PutError::ValueSize`] for raw bytes of the wrong size.
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, ManyWriter};
    /// let mut writer = ManyWriter::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
    /// assert_eq!(writer.put(&1, &100)?, 1);
    /// assert_eq!(writer.put(&1, &101)?, 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn put(&mut self, key: &K, value: &V) -> Result<u64, PutError> {
        self.put_bytes(key.as_bytes(), value.as_bytes())
    }

    /// [`ManyWriter::put`] with the key and value as bytes, whatever the
    /// writer's types.
    ///
    /// # Errors
    /// As [`ManyWriter::put`].
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, ManyWriter, PutError};
    /// let mut writer = ManyWriter::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
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
        let v = self.put_quiet(key, value)?;
        wait::ring(self.table.bell(), self.light);
        Ok(v)
    }

    /// A handle on `key` for [`ManyWriter::put_entry`]: puts through it
    /// claim and write the entry where the key was last written, with no
    /// hash and no probe. The key need not be in the table yet.
    ///
    /// # Errors
    /// [`EntryError::KeySize`] for a raw key of the wrong size.
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, ManyWriter};
    /// let mut writer = ManyWriter::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
    /// let mut speed = writer.entry(&1)?;
    /// assert_eq!(writer.put_entry(&mut speed, &30)?, 1);
    /// assert_eq!(writer.put_entry(&mut speed, &31)?, 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn entry(&mut self, key: &K) -> Result<EntryWriter<K, V>, EntryError> {
        let key = key.as_bytes();
        let expected = self.table.geo.key_size as usize;
        if key.len() != expected {
            return Err(EntryError::KeySize {
                found: key.len(),
                expected,
            });
        }
        let hint = match self.probe(key) {
            Probe::Found { i, .. } | Probe::Busy { i } | Probe::Stuck { i, .. } => i,
            Probe::Absent { free: Some((i, _)) } => i,
            Probe::Absent { free: None } => self.table.home(key),
        };
        Ok(EntryWriter::new(key, hint))
    }

    /// [`ManyWriter::put`] through a handle: if a whole read of the entry
    /// the handle last wrote finds its key there, live, the put claims
    /// that entry from the stamp it read and writes the value; else (the
    /// key moved, or the claim was lost to another writer) it is the
    /// by-key put, and the handle remembers where it wrote. Returns the
    /// entry's new version.
    ///
    /// # Errors
    /// As [`ManyWriter::put`]; [`PutError::KeySize`] for a handle made for
    /// a table of another key size.
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, ManyWriter};
    /// let mut a = ManyWriter::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
    /// let mut b = a.another();
    /// let mut reader = a.reader();
    /// let (mut left, mut right) = (a.entry(&1)?, b.entry(&2)?);
    /// a.put_entry(&mut left, &10)?;
    /// b.put_entry(&mut right, &20)?;
    /// assert_eq!(reader.get(&2)?.map(|e| e.value), Some(20));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn put_entry(&mut self, entry: &mut EntryWriter<K, V>, value: &V) -> Result<u64, PutError> {
        self.put_entry_bytes(entry, value.as_bytes())
    }

    /// [`ManyWriter::put_entry`] with the value as bytes.
    ///
    /// # Errors
    /// As [`ManyWriter::put_entry`].
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, ManyWriter};
    /// let mut writer = ManyWriter::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
    /// let mut entry = writer.entry(&1)?;
    /// assert_eq!(writer.put_entry_bytes(&mut entry, &5u64.to_ne_bytes())?, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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
        if entry.key.len() != geo.key_size as usize {
            return Err(PutError::KeySize {
                found: entry.key.len(),
                expected: geo.key_size as usize,
            });
        }
        let v = match self.hint_holds(entry.hint, &entry.key) {
            Some(stamp) if self.claim(entry.hint, stamp) => {
                self.write(entry.hint, tag::LIVE, None, Some(value))
            }
            _ => {
                let (i, v) = self.put_located(&entry.key, value)?;
                entry.hint = i;
                v
            }
        };
        wait::ring(self.table.bell(), self.light);
        Ok(v)
    }

    /// The stamp of entry `i` if a whole read of its tag and key words
    /// (the probe's attempt) finds `key` there, live: what a claim from
    /// it proves unchanged since.
    fn hint_holds(&mut self, i: u64, key: &[u8]) -> Option<u64> {
        let words = 1 + key.len().div_ceil(8);
        let body = &self.table.body(i)[..words];
        let Attempt::Stable(version) = entry::try_read(self.table.stamp(i), body, &mut self.buf)
        else {
            return None;
        };
        let t = u64::from_ne_bytes(self.buf[..8].try_into().expect("8 bytes"));
        (t == tag::LIVE && self.buf[8..8 + key.len()] == *key).then(|| version.wrapping_mul(2))
    }

    /// [`ManyWriter::remove`] through a handle: the handle stays, and a
    /// later [`ManyWriter::put_entry`] puts the key back.
    ///
    /// # Errors
    /// As [`ManyWriter::remove`]; [`RemoveError::KeySize`] for a handle
    /// made for a table of another key size.
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, ManyWriter};
    /// let mut writer = ManyWriter::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
    /// let mut entry = writer.entry(&1)?;
    /// writer.put_entry(&mut entry, &100)?;
    /// assert_eq!(writer.remove_entry(&mut entry)?, Some(2));
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
    /// [`RemoveError::Busy`] as [`PutError::Busy`];
    /// [`RemoveError::KeySize`] for a raw key of the wrong size.
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, ManyWriter};
    /// let mut writer = ManyWriter::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
    /// writer.put(&1, &100)?;
    /// assert_eq!(writer.remove(&1)?, Some(2));
    /// assert_eq!(writer.remove(&1)?, None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remove(&mut self, key: &K) -> Result<Option<u64>, RemoveError> {
        self.remove_bytes(key.as_bytes())
    }

    /// [`ManyWriter::remove`] with the key as bytes.
    ///
    /// # Errors
    /// As [`ManyWriter::remove`].
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, ManyWriter};
    /// let mut writer = ManyWriter::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
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
        let v = self.remove_quiet(key)?;
        if v.is_some() {
            wait::ring(self.table.bell(), self.light);
        }
        Ok(v)
    }

    /// Keys in the table now, by every writer (entries mid-write count).
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, ManyWriter};
    /// let mut writer = ManyWriter::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
    /// writer.put(&1, &1)?;
    /// assert_eq!((writer.keys(), writer.capacity()), (1, 4));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn keys(&self) -> u64 {
        self.table.keys().load(Ordering::Relaxed)
    }

    /// The most keys the table holds.
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, ManyWriter};
    /// let writer = ManyWriter::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
    /// assert_eq!(writer.capacity(), 4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn capacity(&self) -> u64 {
        self.table.geo.keys
    }

    /// Bytes per key (what a raw key must be).
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, ManyWriter};
    /// let w = ManyWriter::<[u8], u64, _>::on_heap(&blackboard::Options::new(4).key_size(12))?;
    /// assert_eq!((w.key_size(), w.value_size()), (12, 8));
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn key_size(&self) -> usize {
        self.table.geo.key_size as usize
    }

    /// Bytes per value (what a raw value must be).
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, ManyWriter};
    /// let w = ManyWriter::<u64, [u8], _>::on_heap(&blackboard::Options::new(4).value_size(24))?;
    /// assert_eq!(w.value_size(), 24);
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn value_size(&self) -> usize {
        self.table.geo.value_size as usize
    }

    /// The last version this handle wrote (0 before its first write).
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, ManyWriter};
    /// let mut a = ManyWriter::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
    /// let mut b = a.another();
    /// a.put(&1, &1)?;
    /// b.put(&2, &2)?;
    /// assert_eq!((a.last_version(), b.last_version()), (1, 2));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn last_version(&self) -> u64 {
        self.last
    }

    /// The table's unblock timeout: how long an entry may stay mid-write
    /// before a writer that needs it takes it over.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use shmbus::blackboard::{self, ManyWriter};
    /// let opts = blackboard::Options::new(4).unblock_timeout(Duration::from_millis(50));
    /// let writer = ManyWriter::<u64, u64, _>::on_heap(&opts)?;
    /// assert_eq!(writer.unblock_timeout(), Duration::from_millis(50));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn unblock_timeout(&self) -> Duration {
        self.unblock
    }

    /// Entries this handle took over from a writer that died (or stalled)
    /// mid-write: each was written whole again, with this handle's value
    /// where it was this handle's key, else removed (its value lost).
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, ManyWriter};
    /// let writer = ManyWriter::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
    /// assert_eq!(writer.taken_over(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn taken_over(&self) -> u64 {
        self.taken_over
    }

    /// Test hook: claims `key`'s entry as [`ManyWriter::put_bytes`] does,
    /// then stops between the odd stamp and the commit (half the value
    /// written), as a writer killed there would. The entry stays
    /// mid-write; an insert's key stays counted.
    #[cfg(feature = "test-hooks")]
    #[doc(hidden)]
    pub fn put_and_stop_mid_write(&mut self, key: &[u8], value: &[u8]) -> Result<u64, PutError> {
        let i = match self.probe(key) {
            Probe::Found { i, stamp } if self.claim(i, stamp) => i,
            Probe::Absent {
                free: Some((i, stamp)),
            } if self.claim(i, stamp) => {
                self.table.keys().fetch_add(1, Ordering::Relaxed);
                i
            }
            Probe::Absent { free: None } => return Err(PutError::Full { keys: self.keys() }),
            _ => return Err(PutError::Busy { entry: 0 }),
        };
        let v = self
            .table
            .version()
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_add(1);
        self.table.write_half(i, v, key, &value[..value.len() / 2]);
        Ok(v)
    }
}

impl<K: ?Sized + Field, V: ?Sized + Field, R: Region + Clone> ManyWriter<K, V, R> {
    /// A reader of the same table (on the heap: the writer's own region).
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, ManyWriter};
    /// let mut writer = ManyWriter::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
    /// let mut reader = writer.reader();
    /// writer.put(&1, &10)?;
    /// assert_eq!(reader.get(&1)?.map(|e| e.value), Some(10));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reader(&self) -> Reader<K, V, R> {
        Reader::from_table(self.table.same(self.table.region.clone()), self.strategy)
    }

    /// Another writer of the same table, sharing this one's region (on
    /// the heap: a second writer for another thread). Between processes,
    /// each attaches its own ([`ManyWriter::attach`]).
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, ManyWriter};
    /// let mut a = ManyWriter::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
    /// let mut b = a.another();
    /// std::thread::spawn(move || b.put(&2, &20)).join().unwrap()?;
    /// a.put(&1, &10)?;
    /// assert_eq!(a.keys(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn another(&self) -> Self {
        ManyWriter::new(self.table.same(self.table.region.clone()), self.strategy)
    }
}

impl<K: ?Sized + Field, V: ?Sized + Field> ManyWriter<K, V, std::sync::Arc<HeapRegion>> {
    /// A table for many writers on the heap, for threads of one process
    /// (and loom and Miri): more writers come from
    /// [`ManyWriter::another`], readers from [`ManyWriter::reader`].
    ///
    /// # Errors
    /// [`CreateError::InvalidGeometry`] for an impossible shape.
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, ManyWriter};
    /// let writer = ManyWriter::<[u8], [u8], _>::on_heap(
    ///     &blackboard::Options::new(16).key_size(8).value_size(64),
    /// )?;
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn on_heap(opts: &Options) -> Result<Self, CreateError> {
        let page = crate::mem::heap::HEAP_PAGE;
        let (mut header, geo) =
            super::writer::header::<K, V>(opts, page).map_err(CreateError::InvalidGeometry)?;
        header.flags |= MULTI_WRITER;
        let region = std::sync::Arc::new(HeapRegion::new(header.total_len as usize));
        header.write(&*region);
        init_control(&*region, &header, opts.unblock);
        Header::publish_magic(&*region);
        let table = Table::new(region, geo, page as usize, 2 * page as usize);
        Ok(ManyWriter::new(table, opts.wait))
    }
}

#[cfg(not(loom))]
mod shm {
    use super::*;
    use crate::error::{AttachError, OpenError};
    use crate::mem::ShmRegion;
    use crate::options::OpenOptions;
    use crate::segment::{Role, create_region, layout_page, open_checked};
    use crate::sys::lock;
    use crate::wire::{Kind, Publishers, lock_byte};

    /// Turns this handle's lock on the writer's byte into a shared one
    /// (every many-writer shares it, so `stat`, `clean` and readers still
    /// see "a writer is alive"); `Err` with the pid of whoever holds it
    /// exclusively (a creator still building).
    fn share_writer_lock(region: &ShmRegion, control: usize) -> Result<(), AttachError> {
        let shared =
            lock::try_lock(region.file(), lock_byte::PUBLISHER, false).map_err(|source| {
                OpenError::Io {
                    what: "lock",
                    source,
                }
            })?;
        let pid = region.word32(control + control::WRITER_PID);
        if !shared {
            return Err(AttachError::RoleTaken {
                role: crate::error::Role::Writer,
                pid: pid.load(Ordering::Relaxed),
            });
        }
        pid.store(std::process::id(), Ordering::Relaxed);
        Ok(())
    }

    impl<K: ?Sized + Field, V: ?Sized + Field> ManyWriter<K, V, ShmRegion> {
        /// Creates a blackboard for many writers named `name` (a bare name
        /// lives in /dev/shm), with the header flag `MULTI_WRITER` and
        /// the options' unblock timeout, and becomes one of its writers.
        ///
        /// # Errors
        /// As [`Writer::create`](super::super::Writer::create).
        ///
        /// # Examples
        /// ```
        /// use shmbus::{OpenOptions, blackboard::{self, ManyWriter}};
        /// # let name = format!("/dev/shm/shmbus-doc-bbmany-{}", std::process::id());
        /// let mut a = ManyWriter::<u64, u64>::create(&name, &blackboard::Options::new(100))?;
        /// // Another process (here, the same one):
        /// let mut b = ManyWriter::<u64, u64>::attach(&name, &OpenOptions::default())?;
        /// a.put(&1, &10)?;
        /// b.put(&2, &20)?;
        /// assert_eq!(b.keys(), 2);
        /// # shmbus::remove(&name)?;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn create(name: &str, opts: &Options) -> Result<Self, CreateError> {
            crate::options::check_timeout(
                "unblock timeout",
                opts.unblock,
                crate::options::MAX_UNBLOCK,
            )?;
            let (page, huge) = layout_page(name, &opts.file)?;
            let (mut header, geo) = super::super::writer::header::<K, V>(opts, page)
                .map_err(CreateError::InvalidGeometry)?;
            header.flags |= huge | MULTI_WRITER;
            let region = create_region(name, &header, &opts.file, |r| {
                init_control(r, &header, opts.unblock);
            })?;
            // Built holding the writer's byte exclusively, as every
            // creator; shared from now on (the same open file description
            // converts its lock in place).
            if let Err(e) = share_writer_lock(&region, header.control_offset as usize) {
                let _ = crate::mem::shm::unlink(region.path());
                return Err(CreateError::Io {
                    what: "lock",
                    source: std::io::Error::other(e.to_string()),
                });
            }
            let table = Table::new(
                region,
                geo,
                header.control_offset as usize,
                header.data_offset as usize,
            );
            Ok(ManyWriter::new(table, opts.wait))
        }

        /// Becomes one more writer of a blackboard made for many writers,
        /// however many write it now. A typed writer checks the table's
        /// key and value types; a raw side takes any.
        ///
        /// # Errors
        /// [`AttachError::Open`] if it cannot be opened (another kind,
        /// other types); [`AttachError::WrongMode`] for a table made
        /// for one writer; [`AttachError::RoleTaken`] while its creator
        /// is still building it.
        ///
        /// # Examples
        /// ```
        /// use shmbus::{AttachError, OpenOptions, blackboard::{self, ManyWriter, Writer}};
        /// # let name = format!("/dev/shm/shmbus-doc-bbmanyattach-{}", std::process::id());
        /// let single = Writer::<u64, u64>::create(&name, &blackboard::Options::new(8))?;
        /// assert!(matches!(
        ///     ManyWriter::<u64, u64>::attach(&name, &OpenOptions::default()),
        ///     Err(AttachError::WrongMode { .. })
        /// ));
        /// # drop(single);
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
            if header.flags & MULTI_WRITER == 0 {
                return Err(AttachError::WrongMode {
                    role: crate::error::Role::Writer,
                    found: Publishers::One,
                    expected: Publishers::Many,
                });
            }
            let geo = header
                .blackboard_geometry()
                .map_err(|e| OpenError::InvalidGeometry(e.to_string()))?;
            share_writer_lock(&region, header.control_offset as usize)?;
            let table = Table::new(
                region,
                geo,
                header.control_offset as usize,
                header.data_offset as usize,
            );
            Ok(ManyWriter::new(table, opts.wait))
        }
    }
}

#[cfg(all(test, not(loom)))]
#[path = "tests_many_writer.rs"]
mod tests;
