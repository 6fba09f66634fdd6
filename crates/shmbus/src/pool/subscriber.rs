//! [`PoolSubscriber`] and its [`Sample`]: a published block read in place,
//! held until the sample is dropped.

use std::ptr::NonNull;
use std::sync::Arc;

use super::blocks::Blocks;
use crate::bus::activity::Activity;
use crate::bus::ring::{Poll, Ring, Stall};
use crate::bus::Received;
use crate::mem::{DefaultRegion, HeapRegion, Region};
use crate::options::Start;
use crate::sys::fork::Origin;
use crate::wait::{Wait, WaitStrategy};
use crate::wire::{control, hold_line::HOLDS, DESCRIPTOR_BYTES};

/// Reads a pool bus at its own cursor, each message in place: a
/// [`Sample`] derefs to the block the publisher wrote, and holds it (the
/// publisher will not reuse it) until dropped. A subscriber holds at most
/// [`PoolSubscriber::MAX_HELD`] samples at once.
///
/// Lag is counted as on a copying bus: over a subscriber's life, samples
/// delivered plus all `skipped` equal the messages published since it
/// started. A message whose descriptor it read but whose block the
/// publisher had already reclaimed (it was being lapped) counts as one
/// skipped.
///
/// It maps the pool read-only, and writes only its registry entry's lines
/// in the control area. It always takes a registry entry (its holds are
/// recorded there, so a publisher can reclaim them if it dies), whatever
/// [`crate::OpenOptions::register`] says.
///
/// # Examples
/// ```
/// use shmbus::{Received, Start, Wait, WaitStrategy, pool::PoolPublisher};
///
/// let mut publisher = PoolPublisher::on_heap(4, 64, 8)?;
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
pub struct PoolSubscriber<R: Region = DefaultRegion> {
    pub(super) inner: Arc<Inner<R>>,
    pos: u64,
    stall: Stall,
    wait: WaitStrategy,
    activity: Activity,
}

impl<R: Region> std::fmt::Debug for PoolSubscriber<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PoolSubscriber")
            .field("pos", &self.pos)
            .field("capacity", &self.inner.ring.capacity())
            .field("wait", &self.wait)
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

impl<R: Region> Drop for Inner<R> {
    fn drop(&mut self) {
        // Every sample is gone (each keeps this alive): nothing is held.
        if !self.origin.is_current() {
            return;
        }
        self.blocks.leave(self.ring.region(), self.entry);
    }
}

/// Why a pool receive failed.
///
/// # Examples
/// ```
/// use shmbus::{Start, Wait, WaitStrategy, pool::{PoolPublisher, PoolRecvError, PoolSubscriber}};
///
/// let mut publisher = PoolPublisher::on_heap(16, 64, 32)?;
/// let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default())?;
/// let mut held = Vec::new();
/// for _ in 0..=PoolSubscriber::<shmbus::mem::HeapRegion>::MAX_HELD {
///     publisher.loan(1, Wait::Never)?.publish()?;
/// }
/// while let Ok(Some(shmbus::Received::Message(s))) = subscriber.recv(Wait::Never) {
///     held.push(s);
/// }
/// assert_eq!(
///     subscriber.recv(Wait::Never).err(),
///     Some(PoolRecvError::TooManySamples { max: 8 })
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum PoolRecvError {
    /// The subscriber already holds as many samples as it may: drop one.
    /// Nothing was received; the next message waits.
    #[error("this subscriber holds {max} samples, the most it may: drop one before receiving")]
    TooManySamples {
        /// [`PoolSubscriber::MAX_HELD`].
        max: usize,
    },
}

impl<R: Region> PoolSubscriber<R> {
    /// How many samples one subscriber may hold at once.
    pub const MAX_HELD: usize = HOLDS;

    fn from_parts(
        ring: Ring<R>,
        blocks: Blocks,
        entry: usize,
        pos: u64,
        wait: WaitStrategy,
    ) -> Self {
        blocks.enter(ring.region(), entry);
        PoolSubscriber {
            inner: Arc::new(Inner {
                ring,
                blocks,
                entry,
                origin: Origin::here(),
            }),
            pos,
            stall: Stall::default(),
            wait,
            activity: Activity::none(),
        }
    }

    /// Receives the next message in place, waiting as `wait` says. `None`:
    /// nothing arrived before the wait ended.
    ///
    /// # Errors
    /// [`PoolRecvError::TooManySamples`] while the subscriber holds
    /// [`PoolSubscriber::MAX_HELD`] samples; nothing is consumed.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Start, Wait, WaitStrategy, pool::PoolPublisher};
    ///
    /// let publisher = PoolPublisher::on_heap(4, 64, 8)?;
    /// let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default())?;
    /// assert!(subscriber.recv(Wait::Never)?.is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn recv(&mut self, wait: Wait) -> Result<Option<Received<Sample<R>>>, PoolRecvError> {
        let inner = &*self.inner;
        let region = inner.ring.region();
        let Some(slot) = inner.blocks.free_slot(region, inner.entry) else {
            return Err(PoolRecvError::TooManySamples { max: HOLDS });
        };
        let mut desc = [0u8; DESCRIPTOR_BYTES as usize];
        let found = inner.ring.recv(
            &mut self.pos,
            &mut self.stall,
            &mut desc,
            self.wait,
            wait,
            &mut self.activity,
        );
        match found {
            Poll::Empty => return Ok(None),
            Poll::Lagged(skipped) => return Ok(Some(Received::Lagged { skipped })),
            Poll::Message => {}
        }
        let seq = self.pos.wrapping_sub(1);
        let block = u64::from_le_bytes(desc[..8].try_into().unwrap_or_default());
        let len = u64::from_le_bytes(desc[8..].try_into().unwrap_or_default());
        let geo = inner.blocks.geo;
        // A descriptor is untrusted: a block past the pool, or a length
        // past the block, is a lost message.
        let valid = block < geo.blocks && len <= geo.block_size;
        if !valid || !inner.blocks.take(region, inner.entry, slot, block, seq) {
            self.activity.lagged(region, self.pos, 1);
            return Ok(Some(Received::Lagged { skipped: 1 }));
        }
        let ptr = region.raw(geo.block(block), len as usize);
        Ok(Some(Received::Message(Sample {
            inner: Arc::clone(&self.inner),
            slot,
            ptr,
            len: len as usize,
            seq,
        })))
    }

    /// The sequence number this subscriber will read next.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Start, WaitStrategy, pool::PoolPublisher};
    /// let publisher = PoolPublisher::on_heap(4, 64, 8)?;
    /// let subscriber = publisher.subscribe(Start::Next, WaitStrategy::default())?;
    /// assert_eq!(subscriber.position(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// How many samples this subscriber holds now.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Start, WaitStrategy, pool::PoolPublisher};
    /// let publisher = PoolPublisher::on_heap(4, 64, 8)?;
    /// let subscriber = publisher.subscribe(Start::Next, WaitStrategy::default())?;
    /// assert_eq!(subscriber.held(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn held(&self) -> usize {
        let inner = &*self.inner;
        inner.blocks.held_by(inner.ring.region(), inner.entry)
    }
}

/// One message of a pool bus, read in place: derefs to the bytes the
/// publisher wrote. The block stays the message's (the publisher reclaims
/// it for no other) until the sample is dropped.
///
/// The bytes are shared memory another process wrote: they are stable
/// while held unless a process with write access to the file breaks the
/// protocol, which can change their contents under you but never move
/// them outside the block.
///
/// # Examples
/// ```
/// use shmbus::{Received, Start, Wait, WaitStrategy, pool::PoolPublisher};
///
/// let mut publisher = PoolPublisher::on_heap(2, 64, 4)?;
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
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Sample<R: Region = DefaultRegion> {
    inner: Arc<Inner<R>>,
    slot: usize,
    ptr: Option<NonNull<u8>>,
    len: usize,
    seq: u64,
}

impl<R: Region> Sample<R> {
    /// The message's sequence number.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Received, Start, Wait, WaitStrategy, pool::PoolPublisher};
    ///
    /// let mut publisher = PoolPublisher::on_heap(2, 64, 4)?;
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
}

impl<R: Region> std::ops::Deref for Sample<R> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
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

impl<R: Region> Drop for Sample<R> {
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

impl<R: Region> std::fmt::Debug for Sample<R> {
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
unsafe impl<R: Region + Send + Sync> Send for Sample<R> {}
// SAFETY: as above: `&Sample` only reads the held bytes.
unsafe impl<R: Region + Send + Sync> Sync for Sample<R> {}

impl PoolSubscriber<Arc<HeapRegion>> {
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
        Ok(PoolSubscriber::from_parts(ring, blocks, entry, pos, wait))
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

    impl PoolSubscriber<ShmRegion> {
        /// Opens a pool bus to read its messages in place.
        ///
        /// # Errors
        /// As [`crate::Subscriber::open`]; [`OpenError::PoolMismatch`] for
        /// a bus without a pool; [`OpenError::RegistryFull`] if 256 live
        /// subscribers hold every registry entry.
        ///
        /// # Examples
        /// ```
        /// use shmbus::{BusOptions, OpenOptions, pool::{PoolPublisher, PoolSubscriber}};
        /// # let name = format!("/dev/shm/shmbus-doc-poolsubscriber-{}", std::process::id());
        /// let publisher = PoolPublisher::create(&name, &shmbus::pool::PoolOptions::new(8, 4096, 16))?;
        /// let subscriber = PoolSubscriber::open(&name, &OpenOptions::default())?;
        /// # shmbus::remove(&name)?;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn open(name: &str, opts: &OpenOptions) -> Result<Self, OpenError> {
            let msg = descriptor();
            let (ring, header) =
                crate::bus::segment::open_header(name, Role::Subscriber, Some(&msg), opts, true)?;
            let geo = header
                .pool
                .ok_or(OpenError::PoolMismatch { found: false })?;
            let blocks = Blocks::new(geo, header.control_offset as usize, header.capacity);
            let pos = ring.start_at(opts.start);
            let (entry, activity) =
                crate::bus::segment::register_entry(&ring, pos).ok_or(OpenError::RegistryFull {
                    entries: control::REGISTRY_SLOTS,
                })?;
            let mut subscriber = PoolSubscriber::from_parts(ring, blocks, entry, pos, opts.wait);
            subscriber.activity = activity;
            Ok(subscriber)
        }
    }
}
