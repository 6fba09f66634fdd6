//! The table over any region: where an entry is, the hash that places a
//! key, a reader's bounded read of an entry and of a key, and the
//! writer's stores. The writer and reader files build their handles on
//! it; loom and Miri run it on the heap.

use super::entry::{self, Attempt, Holds, same_key};
use crate::mem::Region;
use crate::sync::{AtomicU32, AtomicU64, Ordering};
use crate::wire::blackboard::{control, entry as off, tag};
use crate::wire::{BlackboardGeometry, lock_byte};

/// The control words the hot paths reach unchecked (`VERSION`, `KEYS`,
/// the doorbell), checked once in [`Table::new`].
const HOT_CONTROL: usize = {
    let bell = (control::BELL + 4).next_multiple_of(8);
    if bell > control::KEYS + 8 {
        bell
    } else {
        control::KEYS + 8
    }
};

/// How many times a reader tries one entry while a write is under way or
/// its copy is torn before it gives up (`Busy`, or `Stuck` when the stamp
/// never moved and no writer lives): first spinning, then yielding the
/// CPU, so that a writer preempted mid-write on this CPU can finish.
/// Bounded, so a read is wait-free whatever the writer (or the file) does.
pub(crate) const SPINS: u32 = if cfg!(any(loom, miri)) { 2 } else { 256 };
/// The yields after the spins.
pub(crate) const YIELDS: u32 = if cfg!(any(loom, miri)) { 1 } else { 64 };

/// The slot a key's probe starts at, before masking: a multiply-xorshift
/// over the key's little-endian 8-byte words, the last zero-padded
/// (docs/LAYOUT.md §21.4 gives it to independent readers).
#[inline]
pub(crate) fn hash(key: &[u8]) -> u64 {
    let mut h: u64 = 0x243F_6A88_85A3_08D3;
    let mut words = key.chunks_exact(8);
    for w in &mut words {
        let w = u64::from_le_bytes(w.try_into().expect("8 bytes"));
        h = (h ^ w).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        h ^= h >> 32;
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut last = [0u8; 8];
        last[..rest.len()].copy_from_slice(rest);
        h = (h ^ u64::from_le_bytes(last)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        h ^= h >> 32;
    }
    h
}

/// Why a read of an entry gave up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NotRead {
    /// A write kept the entry odd or tore every copy: come back later.
    Busy { entry: u64 },
    /// The stamp stayed at one odd value and no writer holds the table:
    /// a writer died mid-write. The next writer to attach repairs it.
    Stuck { entry: u64, version: u64 },
    /// The tag is none of the three a writer stores: a corrupt file.
    BadTag { entry: u64, tag: u64 },
}

/// An entry read whole: its tag, version, and its bytes in the caller's
/// buffer (tag word, then key, then value).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Read {
    pub(crate) tag: u64,
    pub(crate) version: u64,
}

/// The table over a region: offsets from a validated header (or a
/// creator's own geometry).
pub(crate) struct Table<R> {
    pub(crate) region: R,
    pub(crate) geo: BlackboardGeometry,
    control: usize,
    data: usize,
    /// Words after the stamp a reader copies: tag, key, value.
    body_words: usize,
    /// `entries - 1`.
    mask: u64,
}

impl<R: Region> Table<R> {
    /// The table of a validated header's (or a creator's) geometry. Checks
    /// once that every entry and the control words the hot paths use lie
    /// in the region (what opening validated already): `slot`, `version`
    /// and `bell` then reach them without a check each.
    pub(crate) fn new(region: R, geo: BlackboardGeometry, control: usize, data: usize) -> Self {
        let body = geo.value_offset() - off::TAG + (geo.value_size as usize).div_ceil(8) * 8;
        assert!(
            geo.entry_size % 8 == 0 && body + off::TAG <= geo.entry_size as usize,
            "shmbus: a blackboard entry of {} bytes holds no {body}-byte body",
            geo.entry_size
        );
        let entries = usize::try_from(geo.entries)
            .ok()
            .and_then(|n| n.checked_mul(geo.entry_size as usize / 8))
            .expect("shmbus: the entries fit the address space");
        let _ = region.words(data, entries);
        let _ = region.words(control, HOT_CONTROL / 8);
        Table {
            region,
            geo,
            control,
            data,
            body_words: body / 8,
            mask: geo.entries - 1,
        }
    }

    /// The same table over another handle to its region (a reader's).
    pub(crate) fn same<S: Region>(&self, region: S) -> Table<S> {
        Table {
            region,
            geo: self.geo,
            control: self.control,
            data: self.data,
            body_words: self.body_words,
            mask: self.mask,
        }
    }

    /// Bytes a reader's buffer holds: the tag word, the padded key, the
    /// padded value.
    pub(crate) fn body_len(&self) -> usize {
        self.body_words * 8
    }

    /// Where the key's bytes start in a read buffer.
    pub(crate) fn key_at(&self) -> usize {
        off::KEY - off::TAG
    }

    /// Where the value's bytes start in a read buffer.
    pub(crate) fn value_at(&self) -> usize {
        self.geo.value_offset() - off::TAG
    }

    #[inline]
    fn entry(&self, i: u64) -> usize {
        // i < entries and the table fits in the region (validated).
        self.data + (i & self.mask) as usize * self.geo.entry_size as usize
    }

    /// Entry `i`'s stamp and the words after it, from one bounds check
    /// (the stamp is the entry's first word, its tag the second).
    #[inline(always)]
    pub(crate) fn slot(&self, i: u64) -> (&AtomicU64, &[AtomicU64]) {
        const { assert!(off::STAMP == 0 && off::TAG == 8) };
        // SAFETY: `entry(i)` masks `i` below `entries`, so the entry lies in
        // the ones `new` checked; its stamp and body fit its size (checked
        // there too); the data offset and entry size are multiples of 8.
        let words = unsafe {
            self.region
                .words_unchecked(self.entry(i), 1 + self.body_words)
        };
        match words {
            [stamp, body @ ..] => (stamp, body),
            [] => unreachable!("an entry has its stamp"),
        }
    }

    #[inline]
    pub(crate) fn stamp(&self, i: u64) -> &AtomicU64 {
        self.region.word(self.entry(i) + off::STAMP)
    }

    #[inline]
    pub(crate) fn body(&self, i: u64) -> &[AtomicU64] {
        self.region.words(self.entry(i) + off::TAG, self.body_words)
    }

    /// The table's version word.
    #[inline]
    pub(crate) fn version(&self) -> &AtomicU64 {
        // SAFETY: a control word `new` checked; the control offset is a
        // multiple of the page size.
        unsafe {
            &self
                .region
                .words_unchecked(self.control + control::VERSION, 1)[0]
        }
    }

    /// The live-keys word.
    #[inline]
    pub(crate) fn keys(&self) -> &AtomicU64 {
        self.region.word(self.control + control::KEYS)
    }

    /// The unblock timeout of a many-writer table (`many_writer`).
    #[inline]
    pub(crate) fn unblock(&self) -> &AtomicU64 {
        self.region.word(self.control + control::UNBLOCK_NS)
    }

    /// The readers' doorbell.
    #[inline]
    pub(crate) fn bell(&self) -> &AtomicU32 {
        // SAFETY: a control word `new` checked (4-aligned: the control
        // offset is a multiple of the page size, `BELL` of 4).
        unsafe {
            &self
                .region
                .word32s_unchecked(self.control + control::BELL, 1)[0]
        }
    }

    /// The first slot of `key`'s probe.
    #[inline]
    pub(crate) fn home(&self, key: &[u8]) -> u64 {
        hash(key) & self.mask
    }

    /// Reads entry `i` into `buf` (at least [`Table::body_len`] bytes),
    /// retrying a bounded number of times (module constants). The first
    /// try is inlined; a busy entry's retries are out of line, so an
    /// uncontended read pays for no loop.
    #[inline]
    pub(crate) fn read(&self, i: u64, buf: &mut [u8]) -> Result<Read, NotRead> {
        let i = i & self.mask;
        let buf = &mut buf[..self.body_words * 8];
        let (stamp, body) = (self.stamp(i), self.body(i));
        let version = match entry::try_read(stamp, body, buf) {
            Attempt::Stable(version) => version,
            first => self
                .retry(
                    i,
                    first,
                    &mut || entry::try_read(stamp, body, buf),
                    &mut || false,
                )?
                // Never `None`: a view passes no entry.
                .ok_or(NotRead::Busy { entry: i })?,
        };
        Self::checked(i, version, buf)
    }

    /// Reads entry `i` into `buf` as [`Table::read`] does, for a probe of
    /// `key` (the table's key size): `None` for an entry found mid-write
    /// whose tag and key words say it cannot hold `key`, which the probe
    /// goes on past as it does past another key's (`entry::may_hold`).
    /// What `Reader::wait_key` reads.
    pub(crate) fn read_on_probe(
        &self,
        i: u64,
        key: &[u8],
        buf: &mut [u8],
    ) -> Result<Option<Read>, NotRead> {
        let i = i & self.mask;
        let buf = &mut buf[..self.body_words * 8];
        let (stamp, body) = (self.stamp(i), self.body(i));
        let version = match entry::try_read(stamp, body, buf) {
            Attempt::Stable(version) => version,
            first => {
                let again = &mut || entry::try_read(stamp, body, buf);
                match self.retry(i, first, again, &mut || !entry::may_hold(body, key))? {
                    Some(version) => version,
                    None => return Ok(None),
                }
            }
        };
        Self::checked(i, version, buf).map(Some)
    }

    /// Words of an entry's tag and key: what [`Table::read_key`] copies.
    pub(crate) fn key_words(&self) -> usize {
        1 + (self.geo.key_size as usize).div_ceil(8)
    }

    /// Reads entry `i`'s tag and key into `buf` (at least
    /// [`Table::key_words`] words), not its value: the same seqlock and
    /// bounded retries as [`Table::read`], for `stat`'s hottest keys,
    /// which need no value (up to 1 MiB) copied.
    pub(crate) fn read_key(&self, i: u64, buf: &mut [u8]) -> Result<Read, NotRead> {
        let i = i & self.mask;
        let words = self
            .region
            .words(self.entry(i) + off::TAG, self.key_words());
        let buf = &mut buf[..words.len() * 8];
        let stamp = self.stamp(i);
        let version = match entry::try_read(stamp, words, buf) {
            Attempt::Stable(version) => version,
            first => self
                .retry(
                    i,
                    first,
                    &mut || entry::try_read(stamp, words, buf),
                    &mut || false,
                )?
                // Never `None`: `stat` passes no entry.
                .ok_or(NotRead::Busy { entry: i })?,
        };
        Self::checked(i, version, buf)
    }

    /// A whole copy's tag, checked.
    #[inline]
    fn checked(i: u64, version: u64, buf: &[u8]) -> Result<Read, NotRead> {
        let t = u64::from_ne_bytes(buf[..8].try_into().expect("8 bytes"));
        if t > tag::REMOVED {
            return Err(NotRead::BadTag { entry: i, tag: t });
        }
        Ok(Read { tag: t, version })
    }

    /// The tries after a `first` that found entry `i` busy or torn, each
    /// `again`: the version of a whole copy, `None` as soon as an attempt
    /// finds the entry mid-write and `pass` says a probe goes on past it,
    /// or why there is neither.
    #[cold]
    #[inline(never)]
    fn retry(
        &self,
        i: u64,
        first: Attempt,
        again: &mut dyn FnMut() -> Attempt,
        pass: &mut dyn FnMut() -> bool,
    ) -> Result<Option<u64>, NotRead> {
        let mut first_odd = None;
        let mut moved = false;
        let mut attempt = first;
        for n in 0..SPINS + YIELDS {
            match attempt {
                Attempt::Stable(version) => return Ok(Some(version)),
                Attempt::Writing(_) if pass() => return Ok(None),
                Attempt::Writing(s) => match first_odd {
                    None => first_odd = Some(s),
                    Some(f) if f != s => moved = true,
                    Some(_) => {}
                },
                Attempt::Torn => moved = true,
            }
            if n < SPINS {
                crate::sync::spin_loop();
            } else {
                crate::sync::yield_now();
            }
            attempt = again();
        }
        match attempt {
            Attempt::Stable(version) => return Ok(Some(version)),
            Attempt::Writing(_) if pass() => return Ok(None),
            _ => {}
        }
        match first_odd {
            // Only a file can say no writer lives: the heap cannot.
            Some(s) if !moved && self.region.lock_held(lock_byte::PUBLISHER) == Some(false) => {
                Err(NotRead::Stuck {
                    entry: i,
                    version: entry::version_of(s),
                })
            }
            _ => Err(NotRead::Busy { entry: i }),
        }
    }

    /// Looks `key` up as `Reader::get` does: the version of its live entry
    /// and its value's words in `value` (the value's size rounded up to
    /// whole words), or `None`. Each entry on the probe is looked at in
    /// place (`entry::try_read_key`): only the key's own value is copied.
    /// One found mid-write is passed if it cannot hold the key
    /// (`entry::may_hold`), else retried. At most `entries` probes, each a
    /// bounded read. `key` is the table's key size (checked by the caller)
    /// and `value` its value's words, so with typed fields the sizes are
    /// constants here.
    #[inline(always)]
    pub(crate) fn find_value(&self, key: &[u8], value: &mut [u8]) -> Result<Option<u64>, NotRead> {
        Ok(self.find_entry(key, value)?.map(|(_, version)| version))
    }

    /// [`Table::find_value`], saying also which entry holds the key: the
    /// entry and its version. What an entry handle re-resolves with.
    #[inline(always)]
    pub(crate) fn find_entry(
        &self,
        key: &[u8],
        value: &mut [u8],
    ) -> Result<Option<(u64, u64)>, NotRead> {
        let home = self.home(key);
        let value_word = 1 + key.len().div_ceil(8);
        for n in 0..self.geo.entries {
            let i = (home + n) & self.mask;
            let (stamp, body) = self.slot(i);
            let (version, holds) = match entry::try_read_key(stamp, body, key, value_word, value) {
                (Attempt::Stable(version), holds) => (version, holds),
                (first, _) => self.retry_key(i, first, key, value_word, value)?,
            };
            match holds {
                Holds::Key => return Ok(Some((i, version))),
                Holds::Empty => return Ok(None),
                Holds::Other => {}
                Holds::BadTag(t) => return Err(NotRead::BadTag { entry: i, tag: t }),
            }
        }
        Ok(None)
    }

    /// [`Table::find_value`]'s tries of entry `i` after a `first` that
    /// found it busy or torn: `Holds::Other` for one mid-write that cannot
    /// hold the key. Out of line, so that the look-up's loop keeps what it
    /// found in registers.
    #[cold]
    #[inline(never)]
    fn retry_key(
        &self,
        i: u64,
        first: Attempt,
        key: &[u8],
        value_word: usize,
        value: &mut [u8],
    ) -> Result<(u64, Holds), NotRead> {
        let (stamp, body) = (self.stamp(i), self.body(i));
        let mut holds = Holds::Other;
        let again = &mut || {
            let (attempt, h) = entry::try_read_key(stamp, body, key, value_word, value);
            holds = h;
            attempt
        };
        match self.retry(i, first, again, &mut || !entry::may_hold(body, key))? {
            Some(version) => Ok((version, holds)),
            // Mid-write, and not the key's: on to the next entry.
            None => Ok((0, Holds::Other)),
        }
    }

    /// Writer only: where `key` is (`Ok`) or would go (`Err`, `None` if no
    /// entry is free on its probe). The writer is the only one that stores
    /// to the table, so its own loads race nothing it cares about; a
    /// hostile process writing too makes it see wrong bytes, never loop.
    pub(crate) fn locate(&self, key: &[u8]) -> Result<u64, Option<u64>> {
        let home = self.home(key);
        let key_words = key.len().div_ceil(8);
        let mut free = None;
        for n in 0..self.geo.entries {
            let i = (home + n) & self.mask;
            let body = self.body(i);
            let t = body[0].load(Ordering::Relaxed);
            match t {
                tag::EMPTY => return Err(free.or(Some(i))),
                tag::LIVE => {
                    if same_key(&body[1..1 + key_words], key) {
                        return Ok(i);
                    }
                }
                // Removed, or a tag no writer stores: reusable.
                _ => {
                    free.get_or_insert(i);
                }
            }
        }
        Err(free)
    }

    /// Writer only: whether entry `i` holds `key`, live. The writer is the
    /// only one that stores to the table, so its own loads see its last
    /// write: what an entry handle's put checks its entry with.
    #[inline(always)]
    pub(crate) fn holds_live(&self, i: u64, key: &[u8]) -> bool {
        let (_, body) = self.slot(i);
        body[0].load(Ordering::Relaxed) == tag::LIVE
            && same_key(&body[1..1 + key.len().div_ceil(8)], key)
    }

    /// Writer only: writes version `v` of entry `i`: `tag`, and the key
    /// and value where given (an update leaves the key as it is, a removal
    /// both). Always inlined: a put is mostly this.
    #[inline(always)]
    pub(crate) fn write(&self, i: u64, v: u64, t: u64, key: Option<&[u8]>, value: Option<&[u8]>) {
        // `write_entry`'s steps written out again, not called: calling it
        // (inlined all the same) cost the single writer's put 8 more
        // instructions (callgrind, examples/blackboard_callgrind.rs).
        let (stamp, body) = self.slot(i);
        entry::begin(stamp, v);
        if body[0].load(Ordering::Relaxed) != t {
            body[0].store(t, Ordering::Relaxed);
        }
        let vw = self.value_at() / 8;
        if let Some(key) = key {
            crate::bus::copy::store(&body[1..vw], key);
        }
        if let Some(value) = value {
            // The value's own words (it is the table's size: checked by
            // every caller), so that a typed value's copy is sized at
            // compile time.
            let words = &body[vw..vw + value.len().div_ceil(8)];
            crate::bus::copy::store_exact(words, value);
        }
        entry::commit(stamp, v);
        // Release, paired with the Acquire loads of the version in
        // `Reader::changed_since` and the waits: who sees `v` there sees
        // the entry's version `v` committed.
        self.version().store(v, Ordering::Release);
    }

    /// The entry half of [`Table::write`] (the same steps): the odd
    /// stamp, the words, the even stamp; the version word is the caller's
    /// (a many-writer table takes versions with `fetch_add`,
    /// `many_writer`).
    #[inline(always)]
    pub(crate) fn write_entry(
        &self,
        i: u64,
        v: u64,
        t: u64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
    ) {
        let (stamp, body) = self.slot(i);
        entry::begin(stamp, v);
        if body[0].load(Ordering::Relaxed) != t {
            body[0].store(t, Ordering::Relaxed);
        }
        let vw = self.value_at() / 8;
        if let Some(key) = key {
            crate::bus::copy::store(&body[1..vw], key);
        }
        if let Some(value) = value {
            crate::bus::copy::store_exact(&body[vw..vw + value.len().div_ceil(8)], value);
        }
        entry::commit(stamp, v);
    }

    /// Test hook: the first half of a write of version `v` (the odd stamp,
    /// the tag, the key, `half` of the value), never committed.
    #[cfg(feature = "test-hooks")]
    pub(crate) fn write_half(&self, i: u64, v: u64, key: &[u8], half: &[u8]) {
        let body = self.body(i);
        entry::begin(self.stamp(i), v);
        body[0].store(tag::LIVE, Ordering::Relaxed);
        let vw = self.value_at() / 8;
        crate::bus::copy::store(&body[1..vw], key);
        let words = half.len().div_ceil(8).min(body.len() - vw);
        crate::bus::copy::store(&body[vw..vw + words], half);
    }
}
