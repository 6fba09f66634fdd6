//! A blackboard [`Reader`]'s waits other than its own: what it gives a
//! [`Select`](crate::select::Select) ([`Member`]: ready once the table's
//! version passes [`Reader::seen`]), and its async waits: until the
//! table's version passes a version, or until one key's entry does. The
//! same wait as [`readable`] (the doorbell's sleeper half, then a
//! registration with the waiter thread), over a view of the reader whose
//! "ready" is "the version passed `since`" rather than [`Reader::seen`],
//! so the reader's own `seen` (what a `Select` compares with) is left as
//! the program set it.

use super::{Field, GetError, Reader, Versioned};
use crate::aio::readable;
use crate::mem::Region;
use crate::member::Member;
use crate::sync::AtomicU32;

impl<K: ?Sized + Field, V: ?Sized + Field, R: Region> Member for Reader<K, V, R> {
    fn ready(&self) -> bool {
        // The same Acquire load as `Reader::wait_changed`'s.
        self.version() > self.seen()
    }
    fn bell(&self) -> &AtomicU32 {
        Reader::bell(self)
    }
    fn nap(&self) -> Option<std::time::Duration> {
        // One writer, which rings after every write; a dead one writes
        // nothing more to wait for.
        None
    }
}

/// A reader waiting for its table's version to pass `since`.
struct Since<'a, K: ?Sized + Field, V: ?Sized + Field, R: Region> {
    reader: &'a Reader<K, V, R>,
    since: u64,
}

impl<K: ?Sized + Field, V: ?Sized + Field, R: Region> Member for Since<'_, K, V, R> {
    fn ready(&self) -> bool {
        // The Acquire load of the table's version, paired with the
        // writer's Release store after each write (as `wait_changed`).
        self.reader.version() > self.since
    }
    fn bell(&self) -> &AtomicU32 {
        self.reader.bell()
    }
    fn nap(&self) -> Option<std::time::Duration> {
        // The writer rings after every write; a dead one writes nothing
        // more, so there is nothing to look at on a timer.
        None
    }
}

impl<K: ?Sized + Field, V: ?Sized + Field, R: Region> Reader<K, V, R> {
    /// Waits, without a thread and without spinning (see
    /// [`aio`](crate::aio)), until the table's version passes `since` (a
    /// key written or removed): the new version. What
    /// [`Reader::wait_changed`] is with `Wait::Forever`, for async code.
    /// Cancel-safe: it reads nothing and moves nothing.
    ///
    /// A writer that has ended or died writes nothing more: with no writer
    /// the future waits until one attaches and writes (wrap it in a
    /// timeout where that matters).
    ///
    /// # Examples
    /// ```
    /// # let rt = tokio::runtime::Builder::new_current_thread().enable_time().build()?;
    /// # rt.block_on(async {
    /// use std::time::Duration;
    /// use shmbus::blackboard::{self, Writer};
    ///
    /// let mut writer = Writer::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
    /// let mut reader = writer.reader();
    /// let early = tokio::time::timeout(Duration::from_millis(2), reader.wait_changed_async(0)).await;
    /// assert!(early.is_err(), "nothing written yet");
    /// writer.put(&1, &10)?;
    /// assert_eq!(reader.wait_changed_async(0).await, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn wait_changed_async(&mut self, since: u64) -> u64 {
        loop {
            let v = self.version();
            if v > since {
                return v;
            }
            readable(&Since {
                reader: &*self,
                since,
            })
            .await;
        }
    }

    /// Waits, as [`Reader::wait_changed_async`] does, until `key`'s entry
    /// has a version past `since`: written (`Some` value) or removed
    /// (`None`). What [`Reader::wait_key`] is with `Wait::Forever`, for
    /// async code. Cancel-safe.
    ///
    /// # Errors
    /// As [`Reader::get`]: a raw key of the wrong size, or an entry on the
    /// key's probe that could not be read ([`GetError::Busy`],
    /// [`GetError::Stuck`]: only one that may hold the key;
    /// [`GetError::Corrupt`]).
    ///
    /// # Examples
    /// ```
    /// # let rt = tokio::runtime::Builder::new_current_thread().build()?;
    /// # rt.block_on(async {
    /// use shmbus::blackboard::{self, Writer};
    ///
    /// let mut writer = Writer::<u64, u64, _>::on_heap(&blackboard::Options::new(4))?;
    /// let mut reader = writer.reader();
    /// writer.put(&2, &20)?; // another key: not what we wait for
    /// writer.put(&1, &10)?;
    /// let got = reader.wait_key_async(&1, 0).await?;
    /// assert_eq!((got.value, got.version), (Some(10), 2));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn wait_key_async(
        &mut self,
        key: &K,
        since: u64,
    ) -> Result<Versioned<Option<V::Owned>>, GetError> {
        loop {
            let table_version = self.version();
            if table_version > since {
                // The key's entry, live or removed: a removal is a change.
                if let Some(found) = self.key_since(key.as_bytes(), since)? {
                    return Ok(found);
                }
            }
            self.wait_changed_async(table_version).await;
        }
    }
}
