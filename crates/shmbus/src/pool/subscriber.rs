//! [`Subscriber`] and its [`Sample`]: a published block read in place,
//! held until the sample is dropped.

use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::Arc;

use super::block_type::{Exact, exact};
use super::blocks::Blocks;
use super::error::RecvError;
use crate::bus::Cursor;
use crate::bus::ring::{Poll, Ring};
use crate::bus::{Payload, Received};
use crate::mem::{DefaultRegion, HeapRegion, Region};
use crate::options::Start;
use crate::sys::fork::Origin;
use crate::wait::{Wait, WaitStrategy};
use crate::wire::{DESCRIPTOR_BYTES, Message, control, hold_line::HOLDS};

/// Reads a pool bus of payload `T` (a [`Message`] type, or `[u8]` for
/// raw bytes) at its own cursor, each message in place: a [`Sample`]
/// derefs to the `T` (or the bytes) the publisher wrote in its block, and
/// holds it (the publisher will not reuse it) until dropped. A subscriber
/// holds at most [`Subscriber::MAX_HELD`] samples at once.
///
/// A typed subscriber opens only a pool whose recorded block type is `T`
/// ([`OpenError::TypeMismatch`](crate::OpenError::TypeMismatch) otherwise);
/// a raw one opens any pool.
///
/// Lag is counted as on a copying bus: over a subscriber's life, samples
/// delivered plus all `skipped` equal the messages published since it
/// started. A message whose descriptor it read but whose block the
/// publisher had already reclaimed (it was being lapped) counts as one
/// skipped, as does a descriptor no honest publisher writes: a block past
/// the pool, a length past the block, or (typed) a length other than
/// `size_of::<T>()`.
///
/// It maps the pool read-only, and writes only its registry entry's lines
/// in the control area. It always takes a registry entry (its holds are
/// recorded there, so a publisher can reclaim them if it dies), whatever
/// [`crate::OpenOptions::register`] says.
///
/// # Examples
/// ```
/// use shmbus::{Received, Start, Wait, WaitStrategy, pool};
///
/// let mut publisher = pool::Publisher::<[u8], _>::on_heap(4, 64, 8)?;
/// let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default())?;
/// let mut loan = publisher.loan(2, Wait::Never)?;
/// loan.copy_from_slice(b"hi");
/// loan.publish()?;
/// let Some(Received::Message(sample)) = subscriber.recv(Wait::Never)? else {
///     panic!("expected a message")
/// };
/// assert_eq!(&*sample, b"hi");
/// assert_eq!(sample.sequence(), 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Subscriber<T: ?Sized + Payload, R: Region = DefaultRegion> {
    pub(super) inner: Arc<Inner<R>>,
    /// Its position on the descriptor ring, wait strategy and registry
    /// line.
    cursor: Cursor,
    /// A typed subscriber's: each message must be exactly `T`'s size,
    /// aligned for it, or it is lost.
    exact: Option<Exact>,
    _payload: PhantomData<fn() -> Box<T>>,
}

impl<T: ?Sized + Payload, R: Region> std::fmt::Debug for Subscriber<T, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PoolSubscriber")
            .field("pos", &self.cursor.pos)
            .field("capacity", &self.inner.ring.capacity())
            .field("wait", &self.cursor.strategy)
            .finish_non_exhaustive()
    }
}

/// What the subscriber and its samples share: the mapping (kept while any
/// sample lives) and the registry entry its holds are in.
pub(super) struct Inner<R: Region> {
    pub(super) ring: Ring<R>,
    pub(super) blocks: Blocks,
    pub(super) entry: usize,
    /// A forked child's copy gives back neither the entry nor its holds:
    /// they are the parent's.
    origin: Origin,
}

impl<T: ?Sized + Payload, R: Region> Drop for Subscriber<T, R> {
    fn drop(&mut self) {
        // A lossless one stops gating when its handle goes (its samples
        // hold their blocks by their hold lines, not by the gate).
        let Some(joined) = self.cursor.activity.joined() else {
            return;
        };
        let ring = &self.inner.ring;
        if self.inner.origin.is_current() && ring.is_gating(joined.entry) {
            ring.leave(joined);
        }
    }
}

impl<R: Region> Drop for Inner<R> {
    fn drop(&mut self) {
        // Every sample is gone (each keeps this alive): nothing is held.
        if !self.origin.is_current() {
            return;
        }
        self.blocks.leave(self.ring.region(), self.entry);
    }
}

impl<T: ?Sized + Payload, R: Region> Subscriber<T, R> {
    /// How many samples one subscriber may hold at once.
    pub const MAX_HELD: usize = HOLDS;

    fn from_parts(
        ring: Ring<R>,
        blocks: Blocks,
        entry: usize,
        pos: u64,
        wait: WaitStrategy,
        exact: Option<Exact>,
    ) -> Self {
        blocks.enter(ring.region(), entry);
        Subscriber {
            inner: Arc::new(Inner {
                ring,
                blocks,
                entry,
                origin: Origin::here(),
            }),
            cursor: Cursor::new(pos, wait),
            exact,
            _payload: PhantomData,
        }
    }

    /// Receives the next message in place, waiting as `wait` says. `None`:
    /// nothing arrived before the wait ended.
    ///
    /// # Errors
    /// [`RecvError::TooManySamples`] while the subscriber holds
    /// [`Subscriber::MAX_HELD`] samples; nothing is consumed.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Start, Wait, WaitStrategy, pool};
    ///
    /// let publisher = pool::Publisher::<u64, _>::on_heap(4, 64, 8)?;
    /// let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default())?;
    /// assert!(subscriber.recv(Wait::Never)?.is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn recv(&mut self, wait: Wait) -> Result<Option<Received<Sample<T, R>>>, RecvError> {
        let inner = &*self.inner;
        let region = inner.ring.region();
        let Some(slot) = inner.blocks.free_slot(region, inner.entry) else {
            return Err(RecvError::TooManySamples { max: HOLDS });
        };
        let mut desc = [0u8; DESCRIPTOR_BYTES as usize];
        // The position moves past this message only once its block is
        // held (or found lost): a lossless subscriber's publisher may
        // overwrite the descriptor, and reclaim its block, once it sees it.
        let found = inner.ring.recv_unnoted(&mut self.cursor, &mut desc, wait);
        match found {
            Poll::Empty => return Ok(None),
            Poll::Lagged(skipped) | Poll::Lapped(skipped) => {
                return Ok(Some(Received::Lagged { skipped }));
            }
            Poll::Message => {}
        }
        let seq = self.cursor.pos.wrapping_sub(1);
        let block = u64::from_le_bytes(desc[..8].try_into().unwrap_or_default());
        let len = u64::from_le_bytes(desc[8..].try_into().unwrap_or_default());
        let geo = inner.blocks.geo;
        // A descriptor is untrusted: a block past the pool, or a length
        // past the block, is a lost message; so is, to a typed reader, a
        // length other than its type's (a raw or hostile writer's), or
        // bytes not aligned for it (never: blocks are 64-byte aligned and
        // the type's alignment was checked to divide 64 at open).
        let in_pool = block < geo.blocks && len <= geo.block_size;
        let ptr = in_pool
            .then(|| region.raw(geo.block(block), len as usize))
            .flatten();
        let typed_ok = self.exact.is_none_or(|e| {
            len == e.size as u64 && ptr.is_some_and(|p| p.as_ptr() as usize % e.align == 0)
        });
        if !in_pool || !typed_ok || !inner.blocks.take(region, inner.entry, slot, block, seq) {
            inner.ring.note_lost(&mut self.cursor);
            return Ok(Some(Received::Lagged { skipped: 1 }));
        }
        // After the take: the hold's Release store comes before the
        // position's (a Release store), which the gate's Acquire load
        // pairs with, so a reclaimer the gate let past this descriptor
        // finds the hold in its scan.
        inner.ring.note_delivered(&mut self.cursor);
        Ok(Some(Received::Message(Sample {
            inner: Arc::clone(&self.inner),
            slot,
            ptr,
            len: len as usize,
            seq,
            _payload: PhantomData,
        })))
    }

    /// Whether the publishers wait for this subscriber: it opened lossless
    /// ([`OpenOptions::lossless`](crate::OpenOptions::lossless)) and has
    /// not been evicted. Its unread descriptors stay on the ring, so their
    /// blocks are never reclaimed.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Start, WaitStrategy, pool};
    /// let publisher = pool::Publisher::<u64, _>::on_heap(4, 64, 8)?;
    /// let subscriber = publisher.subscribe(Start::Next, WaitStrategy::default())?;
    /// assert!(!subscriber.is_lossless());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_lossless(&self) -> bool {
        self.cursor
            .activity
            .gating()
            .is_some_and(|j| self.inner.ring.is_gating(j.entry))
    }

    /// The sequence number this subscriber will read next.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Start, WaitStrategy, pool};
    /// let publisher = pool::Publisher::<[u8], _>::on_heap(4, 64, 8)?;
    /// let subscriber = publisher.subscribe(Start::Next, WaitStrategy::default())?;
    /// assert_eq!(subscriber.position(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn position(&self) -> u64 {
        self.cursor.pos
    }

    /// The descriptor ring (for a select's look and doorbell).
    pub(crate) fn ring(&self) -> &Ring<R> {
        &self.inner.ring
    }

    /// How many samples this subscriber holds now.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Start, WaitStrategy, pool};
    /// let publisher = pool::Publisher::<[u8], _>::on_heap(4, 64, 8)?;
    /// let subscriber = publisher.subscribe(Start::Next, WaitStrategy::default())?;
    /// assert_eq!(subscriber.held(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn held(&self) -> usize {
        let inner = &*self.inner;
        inner.blocks.held_by(inner.ring.region(), inner.entry)
    }
}

/// One message of a pool bus, read in place: derefs to the `T` (a typed
/// subscriber's) or the bytes (a raw one's) the publisher wrote. The block
/// stays the message's (the publisher reclaims it for no other) until the
/// sample is dropped.
///
/// The bytes are shared memory another process wrote: they are stable
/// while held unless a process with write access to the file breaks the
/// protocol, which can change their contents under you but never move
/// them outside the block.
///
/// # Examples
/// ```
/// use shmbus::{Received, Start, Wait, WaitStrategy, pool};
///
/// let mut publisher = pool::Publisher::<[u8], _>::on_heap(2, 64, 4)?;
/// let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default())?;
/// publisher.loan(3, Wait::Never)?.copy_from_slice(b"abc"); // dropped: not sent
/// let mut loan = publisher.loan(3, Wait::Never)?;
/// loan.copy_from_slice(b"xyz");
/// loan.publish()?;
/// let Some(Received::Message(sample)) = subscriber.recv(Wait::Never)? else { panic!() };
/// assert_eq!(&*sample, b"xyz");
/// assert_eq!(subscriber.held(), 1);
/// drop(sample);
/// assert_eq!(subscriber.held(), 0);
///
/// // Typed: the sample is a `&u64`.
/// let mut publisher = pool::Publisher::<u64, _>::on_heap(2, 64, 4)?;
/// let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default())?;
/// let mut loan = publisher.loan(Wait::Never)?;
/// *loan = 10;
/// loan.publish()?;
/// let Some(Received::Message(sample)) = subscriber.recv(Wait::Never)? else { panic!() };
/// assert_eq!(*sample, 10);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Sample<T: ?Sized + Payload, R: Region = DefaultRegion> {
    inner: Arc<Inner<R>>,
    slot: usize,
    /// A typed sample's: exactly `size_of::<T>()` bytes, aligned for `T`
    /// (checked in `recv`).
    ptr: Option<NonNull<u8>>,
    len: usize,
    seq: u64,
    _payload: PhantomData<fn() -> Box<T>>,
}

impl<T: ?Sized + Payload, R: Region> Sample<T, R> {
    /// The message's sequence number.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Received, Start, Wait, WaitStrategy, pool};
    ///
    /// let mut publisher = pool::Publisher::<[u8], _>::on_heap(2, 64, 4)?;
    /// let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default())?;
    /// publisher.loan(0, Wait::Never)?.publish()?;
    /// publisher.loan(0, Wait::Never)?.publish()?;
    /// let Some(Received::Message(_first)) = subscriber.recv(Wait::Never)? else { panic!() };
    /// let Some(Received::Message(second)) = subscriber.recv(Wait::Never)? else { panic!() };
    /// assert_eq!(second.sequence(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sequence(&self) -> u64 {
        self.seq
    }

    fn bytes(&self) -> &[u8] {
        match self.ptr {
            // SAFETY: `Blocks::take` saw the block still hold this
            // message after recording the hold (the Dekker pair in
            // `blocks`), so no publisher reclaims it until `drop` releases
            // the hold; the publisher's writes were published by the
            // descriptor's Release stamp, which the ring read with Acquire.
            // `raw` checked that `len` bytes lie inside the region, and the
            // mapping lives while `inner` does.
            Some(p) => unsafe { std::slice::from_raw_parts(p.as_ptr(), self.len) },
            None => &[],
        }
    }
}

impl<R: Region> std::ops::Deref for Sample<[u8], R> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.bytes()
    }
}

impl<T: Message, R: Region> std::ops::Deref for Sample<T, R> {
    type Target = T;
    fn deref(&self) -> &T {
        // `recv` delivers a typed sample only if its length is
        // `size_of::<T>()` and its bytes are aligned for `T`, so the cast
        // cannot fail; any bytes are a valid `T` (`Pod`).
        bytemuck::from_bytes(self.bytes())
    }
}

impl<T: ?Sized + Payload, R: Region> Drop for Sample<T, R> {
    fn drop(&mut self) {
        let inner = &*self.inner;
        if !inner.origin.is_current() {
            return; // a forked child's copy: the parent holds the block
        }
        inner
            .blocks
            .release(inner.ring.region(), inner.entry, self.slot);
    }
}

impl<T: ?Sized + Payload, R: Region> std::fmt::Debug for Sample<T, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sample")
            .field("seq", &self.seq)
            .field("len", &self.len)
            .finish()
    }
}

// SAFETY: a sample is a read-only view of memory that no one writes while
// it is held, plus an `Arc` of a ring whose region is shared by design
// (`Sync` regions); releasing the hold is one atomic store.
unsafe impl<T: ?Sized + Payload, R: Region + Send + Sync> Send for Sample<T, R> {}
// SAFETY: as above: `&Sample` only reads the held bytes.
unsafe impl<T: ?Sized + Payload, R: Region + Send + Sync> Sync for Sample<T, R> {}

impl<T: ?Sized + Payload> Subscriber<T, Arc<HeapRegion>> {
    pub(crate) fn on_heap(
        ring: Ring<Arc<HeapRegion>>,
        blocks: Blocks,
        start: Start,
        wait: WaitStrategy,
    ) -> Result<Self, crate::OpenError> {
        let entry = blocks
            .claim_entry(ring.region())
            .ok_or(crate::OpenError::RegistryFull {
                entries: control::REGISTRY_SLOTS,
            })?;
        let pos = ring.start_at(start);
        // The publisher that made this heap pool is of the same `T`.
        let exact = exact::<T>();
        Ok(Subscriber::from_parts(
            ring, blocks, entry, pos, wait, exact,
        ))
    }
}

#[cfg(not(loom))]
mod shm {
    use super::*;
    use crate::error::OpenError;
    use crate::mem::ShmRegion;
    use crate::options::OpenOptions;
    use crate::segment::Role;
    use crate::wire::descriptor;

    impl<T: ?Sized + Payload> Subscriber<T, ShmRegion> {
        /// Opens a pool bus to read its messages in place. A typed
        /// subscriber checks the pool's block type; a raw one (`[u8]`)
        /// opens a pool of any type (or of the one
        /// [`OpenOptions::message_type`] names).
        ///
        /// # Errors
        /// As [`crate::Subscriber::open`]: [`OpenError::TypeMismatch`]
        /// for a pool of another block type, which it names beside `T`'s;
        /// [`OpenError::PoolMismatch`] for a bus without a pool;
        /// [`OpenError::RegistryFull`] if 256 live subscribers hold every
        /// registry entry; [`OpenError::Lossless`] if opened lossless on a
        /// pool that refuses them or allows no more
        /// ([`Options::lossless_subscribers`](crate::pool::Options::lossless_subscribers)).
        ///
        /// # Examples
        /// ```
        /// use shmbus::{OpenError, OpenOptions, pool};
        /// # let name = format!("/dev/shm/shmbus-doc-poolsubscriber-{}", std::process::id());
        /// let publisher = pool::Publisher::<u64>::create(&name, &pool::Options::new(8, 4096, 16))?;
        /// let typed = pool::Subscriber::<u64>::open(&name, &OpenOptions::default())?;
        /// let raw = pool::Subscriber::<[u8]>::open(&name, &OpenOptions::default())?;
        /// match pool::Subscriber::<f64>::open(&name, &OpenOptions::default()) {
        ///     Err(OpenError::TypeMismatch { found, expected }) => {
        ///         assert_eq!((found.name.as_str(), expected.name.as_str()), ("u64", "f64"));
        ///     }
        ///     other => panic!("the pool carries u64: {other:?}"),
        /// }
        /// # shmbus::remove(&name)?;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn open(name: &str, opts: &OpenOptions) -> Result<Self, OpenError> {
            let msg = descriptor();
            let (ring, header) =
                crate::bus::segment::open_header(name, Role::Subscriber, Some(&msg), opts, true)?;
            let exact =
                super::super::block_type::check_block_type::<T>(&header, opts.message.as_ref())?;
            let geo = header
                .pool
                .ok_or(OpenError::PoolMismatch { found: false })?;
            let blocks = Blocks::new(geo, header.control_offset as usize, header.capacity);
            let pos = ring.start_at(opts.start);
            let (entry, activity) =
                crate::bus::segment::register_entry(&ring, pos).ok_or(OpenError::RegistryFull {
                    entries: control::REGISTRY_SLOTS,
                })?;
            let mut subscriber = Subscriber::from_parts(ring, blocks, entry, pos, opts.wait, exact);
            subscriber.cursor.activity = activity;
            if opts.lossless {
                // Gates the publishers' ring writes (`bus::gate`): a
                // descriptor it has not read stays on the ring, and so its
                // block is never reclaimed (`Blocks::loan`).
                let joined = subscriber.inner.ring.join(entry)?;
                subscriber.cursor.activity.set_joined(joined);
            }
            Ok(subscriber)
        }
    }
}
