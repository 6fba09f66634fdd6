//! [`EntryWriter`]: a writer's handle on one key, resolved once. A put
//! through it ([`Writer::put_entry`](super::Writer::put_entry),
//! [`ManyWriter::put_entry`](super::ManyWriter::put_entry)) checks the
//! entry it last wrote the key in and writes there: no hash, no probe.
//!
//! # Invariants (extending the blackboard module's)
//! - The handle holds the key and a *hint*, the entry the key was last
//!   found or written in. It is a token, not a borrow: the put goes
//!   through the writer (`&mut`), so the one-writer rules hold as for
//!   `put(&key, v)`, and a handle may outlive removals of its key.
//! - The key is the truth, the hint only where to look first. A single
//!   writer writes at the hint only if the entry there holds the key,
//!   live (its own loads: nobody else stores to the table); a many-writer
//!   handle only after a whole seqlock read there saw the key live and a
//!   claim from that stamp succeeded (`many_writer.rs`: the claim). Else
//!   the put is the by-key put, and the hint moves to where it wrote.
//!   So a stale hint (the key removed, put again elsewhere, another key
//!   in its entry, or a handle from another table of the same key size)
//!   costs a look-up, never a write to another key's entry.

use std::marker::PhantomData;

use super::field::Field;

/// A writer's handle on one key, made by
/// [`Writer::entry`](super::Writer::entry) or
/// [`ManyWriter::entry`](super::ManyWriter::entry) and passed to the
/// writer's `put_entry`: the put writes where the key was last written,
/// with no hash and no probe, and looks the key up again only when it
/// has moved (removed, or put by another handle elsewhere). A loop that
/// writes the same keys over and over holds one per key.
///
/// A handle is a resolved key, not a borrow of its writer: it may be
/// kept beside the writer, and outlives removals of its key.
///
/// # Examples
/// ```
/// use shmbus::blackboard::{self, Writer};
///
/// let mut writer = Writer::<u32, [f64; 3], _>::on_heap(&blackboard::Options::new(64))?;
/// let mut reader = writer.reader();
/// let mut pose = writer.entry(&7)?;
/// for step in 0..3 {
///     writer.put_entry(&mut pose, &[step as f64, 0.0, 0.5])?;
/// }
/// assert_eq!(reader.get(&7)?.map(|p| p.value), Some([2.0, 0.0, 0.5]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct EntryWriter<K: ?Sized + Field, V: ?Sized + Field> {
    pub(super) key: Box<[u8]>,
    /// The entry the key was last found or written in: tried first.
    pub(super) hint: u64,
    _types: PhantomData<fn(&K, &V)>,
}

impl<K: ?Sized + Field, V: ?Sized + Field> std::fmt::Debug for EntryWriter<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EntryWriter")
            .field("key", &self.key)
            .field("hint", &self.hint)
            .finish_non_exhaustive()
    }
}

impl<K: ?Sized + Field, V: ?Sized + Field> EntryWriter<K, V> {
    /// A handle on `key` (the table's key size, checked by the caller),
    /// first trying entry `hint`.
    pub(super) fn new(key: &[u8], hint: u64) -> Self {
        EntryWriter {
            key: key.into(),
            hint,
            _types: PhantomData,
        }
    }

    /// The handle's key, as the table's bytes.
    ///
    /// # Examples
    /// ```
    /// use shmbus::blackboard::{self, Writer};
    /// let writer = Writer::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
    /// assert_eq!(writer.entry(&3)?.key(), 3u64.to_ne_bytes());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn key(&self) -> &[u8] {
        &self.key
    }
}
