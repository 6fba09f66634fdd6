//! [`Publisher`] and its [`Loan`]: a block written in place, then
//! published as a descriptor on the ring.
//!
//! A typed loan is `&mut T` rather than `&mut MaybeUninit<T>`: a block's
//! bytes are always initialised (zero at creation, then whole messages),
//! so the old message is a valid `T` to overwrite field by field, no
//! `assume_init` is needed, and safe code cannot publish uninitialised
//! bytes for a subscriber to read.

use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::blocks::{Blocks, Census};
use super::error::LoanError;
use super::subscriber::Subscriber;
use crate::bus::gate::Gate;
use crate::bus::ring::Ring;
use crate::bus::{Abandoned, Payload};
use crate::error::CreateError;
use crate::mem::{DefaultRegion, HeapRegion, Region};
use crate::options::Start;
use crate::sys::fork::Origin;
use crate::wait::{Backoff, Step, Wait, WaitStrategy};
use crate::wire::Message;

/// Publishes messages of payload `T` without copying them: a
/// [`Message`] type (each loan is one `T`, written in place as `&mut T`),
/// or `[u8]` for raw bytes (each loan is up to a block of bytes). It loans
/// a block from the bus's shared pool, the caller writes the message in
/// place, and [`Loan::publish`] puts a 16-byte descriptor on the ring.
/// Subscribers ([`Subscriber`]) read the block in place.
///
/// The pool records its block type (`T`'s name, size and alignment, or
/// `bytes` for a raw pool) when it is made; a typed publisher or
/// subscriber of another type is refused with
/// [`OpenError::TypeMismatch`](crate::OpenError::TypeMismatch), and a raw
/// one opens any pool. Blocks are 64-byte aligned, so a `T` aligned to
/// more than 64 bytes, or larger than a block, is refused when the pool
/// is made or opened.
///
/// A pool bus has one publisher (held by the publisher lock, as a plain
/// bus) or, created with [`Publisher::create_many`], any number. A
/// publisher holds at most one loan at a time: a [`Loan`] borrows it
/// ([`Publisher::loan`]), an [`OwnedLoan`](super::OwnedLoan) owns it
/// ([`Publisher::into_loan`]) until the block is published or given
/// back.
///
/// # Examples
/// Typed: each message is one `Frame`, written in place.
/// ```
/// use shmbus::{Message, OpenOptions, Received, Start, Wait};
/// use shmbus::pool;
///
/// #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
/// #[repr(C)]
/// struct Frame { id: u64, pixels: [u8; 4096] }
///
/// impl Message for Frame {
///     const NAME: &'static str = "video.Frame";
/// }
///
/// # let name = format!("/dev/shm/shmbus-doc-poolpublisher-{}", std::process::id());
/// // 8 slots, 16 blocks of 4160 bytes.
/// let mut publisher = pool::Publisher::<Frame>::create(&name, &pool::Options::new(8, 4160, 16))?;
/// let opts = OpenOptions::default().start(Start::Oldest);
/// let mut subscriber = pool::Subscriber::<Frame>::open(&name, &opts)?;
///
/// let mut frame = publisher.loan(Wait::Never)?;
/// frame.id = 7;
/// frame.pixels.fill(255);
/// frame.publish()?;
///
/// match subscriber.recv(Wait::Never)? {
///     Some(Received::Message(frame)) => assert_eq!((frame.id, frame.pixels[4095]), (7, 255)),
///     other => panic!("expected the frame, got {other:?}"),
/// }
/// shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// Raw: each message is up to a block of bytes.
/// ```
/// use shmbus::{OpenOptions, Received, Start, Wait};
/// use shmbus::pool;
///
/// # let name = format!("/dev/shm/shmbus-doc-poolpublisher-raw-{}", std::process::id());
/// // 8 slots, 16 blocks of 4 KiB.
/// let mut publisher = pool::Publisher::<[u8]>::create(&name, &pool::Options::new(8, 4096, 16))?;
/// let opts = OpenOptions::default().start(Start::Oldest);
/// let mut subscriber = pool::Subscriber::<[u8]>::open(&name, &opts)?;
///
/// let mut loan = publisher.loan(5, Wait::Never)?;
/// loan.copy_from_slice(b"hello");
/// loan.publish()?;
///
/// match subscriber.recv(Wait::Never)? {
///     Some(Received::Message(sample)) => assert_eq!(&sample[..], b"hello"),
///     other => panic!("expected the message, got {other:?}"),
/// }
/// shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// A typed publisher's loan is one `T`: it takes no length.
/// ```compile_fail,E0061
/// let mut publisher = shmbus::pool::Publisher::<u64, _>::on_heap(4, 64, 5).unwrap();
/// let _ = publisher.loan(8, shmbus::Wait::Never);
/// ```
pub struct Publisher<T: ?Sized + Payload, R: Region = DefaultRegion> {
    pub(super) ring: Ring<R>,
    blocks: Blocks,
    /// Holds ring writes (claims, on a many-publisher pool) back for
    /// lossless subscribers (`bus::gate`).
    gate: Gate,
    /// Single-publisher buses: the next sequence.
    pub(super) next: u64,
    multi: bool,
    /// Where the next search for a free block starts.
    hint: u64,
    /// The block the next loan tries first: the one whose descriptor the
    /// publish [`CUSHION`] publishes back overwrote (or a loan given back
    /// unpublished), `Blocks::loan`.
    warm: Option<u64>,
    /// The blocks whose descriptors the last publishes overwrote, each
    /// waiting to become warm.
    left: Cushion,
    /// Loans that took their warm block at the first try.
    #[cfg(test)]
    pub(super) warm_loans: u64,
    /// Single publisher: the block published as each sequence of the last
    /// lap, at `seq % capacity` ([`NONE`] where it has published nothing
    /// yet), so a publish knows the block of the descriptor it overwrites
    /// without reading the slot a waiting subscriber is polling. Empty on
    /// a many-publisher bus, whose publishers read it from their slot.
    lap: Box<[u64]>,
    /// The process that made it: its pid marks its loans, and a forked
    /// child's copy frees no loan.
    origin: Origin,
    /// Frees what dead processes held (a bus in /dev/shm has locks to
    /// tell; a heap bus's threads cannot die alone).
    sweep: fn(&R, &Blocks),
    _payload: PhantomData<fn(&T)>,
}

impl<T: ?Sized + Payload, R: Region> std::fmt::Debug for Publisher<T, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PoolPublisher")
            .field("next", &self.next)
            .field("capacity", &self.ring.capacity())
            .field("block_size", &self.blocks.geo.block_size)
            .field("many_publishers", &self.multi)
            .finish_non_exhaustive()
    }
}

impl<T: ?Sized + Payload, R: Region> Publisher<T, R> {
    pub(super) fn from_parts(
        mut ring: Ring<R>,
        blocks: Blocks,
        next: u64,
        multi: bool,
        sweep: fn(&R, &Blocks),
    ) -> Self {
        ring.set_light_barrier();
        let gate = Gate::new(&ring, if multi { ring.head() } else { next });
        let left = Cushion::new(ring.capacity(), blocks.geo.blocks);
        let lap = if multi {
            Box::default()
        } else {
            vec![NONE; ring.capacity() as usize].into()
        };
        Publisher {
            ring,
            blocks,
            gate,
            next,
            multi,
            hint: 0,
            warm: None,
            left,
            #[cfg(test)]
            warm_loans: 0,
            lap,
            origin: Origin::here(),
            sweep,
            _payload: PhantomData,
        }
    }

    /// Finds a block for a loan of `len` bytes, waiting as `wait` says:
    /// the search behind every loan (borrowed or owned, typed or raw).
    pub(super) fn lend(&mut self, len: usize, wait: Wait) -> Result<LoanedBlock, LoanError> {
        let max = self.block_size();
        if len > max {
            return Err(LoanError::TooLong { len, max });
        }
        // The pass that finds a block reads no clock: the deadline, the
        // backoff and the sweep's schedule are for a loan that waits.
        let block = match self.try_loan() {
            Some(b) => b,
            None => self.wait_for_block(wait)?,
        };
        let offset = self.blocks.geo.block(block);
        let ptr = self.ring.region().raw(offset, len);
        Ok(LoanedBlock { block, len, ptr })
    }

    /// The loan's slow path: passes over the pool until one finds a block,
    /// sweeping what the dead hold, until `wait` runs out.
    #[cold]
    fn wait_for_block(&mut self, wait: Wait) -> Result<u64, LoanError> {
        let spin = Duration::from_micros(20);
        let mut backoff = Backoff::new(WaitStrategy::SpinFutex { spin }, wait.deadline());
        // A holder may die while we wait: sweep at once, then every
        // SWEEP_EVERY of waiting.
        let mut next_sweep = Instant::now();
        loop {
            let now = Instant::now();
            if now >= next_sweep {
                next_sweep = now + SWEEP_EVERY;
                (self.sweep)(self.ring.region(), &self.blocks);
            }
            if let Some(b) = self.try_loan() {
                return Ok(b);
            }
            // Every failed pass reaches the backoff, and so the deadline,
            // even when a pass and its sweep take longer than SWEEP_EVERY.
            match backoff.next() {
                Step::Spin => crate::sync::spin_loop(),
                Step::Yield => crate::sync::yield_now(),
                // Nothing rings a bell when a block comes free: poll.
                Step::Sleep(left) => {
                    let nap = Duration::from_micros(200);
                    std::thread::sleep(left.map_or(nap, |l| l.min(nap)));
                }
                Step::TimedOut => {
                    let census = self.census();
                    return Err(LoanError::Exhausted { census });
                }
            }
        }
    }

    /// One pass over the pool for a free or reclaimable block, the warm
    /// one first.
    fn try_loan(&mut self) -> Option<u64> {
        let head = self.ring.head();
        let ring = &self.ring;
        let cap = ring.capacity();
        // Many publishers: a block whose descriptor a lossless subscriber
        // has not read is still needed, however far the claims ran.
        let needed = |s: u64| ring.multi() && ring.gate_holds(s.wrapping_add(cap)).is_some();
        let warm = self.warm.take();
        let got = self.blocks.loan(
            ring.region(),
            self.origin.pid(),
            head,
            warm,
            &mut self.hint,
            &needed,
        );
        #[cfg(test)]
        if got.is_some() && got == warm {
            self.warm_loans += 1;
        }
        got
    }

    /// The largest message a loan carries: the pool's block size.
    ///
    /// # Examples
    /// ```
    /// let publisher = shmbus::pool::Publisher::<[u8], _>::on_heap(4, 4096, 5)?;
    /// assert_eq!(publisher.block_size(), 4096);
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn block_size(&self) -> usize {
        self.blocks.geo.block_size as usize
    }

    /// Where every block of the pool is now (a snapshot).
    ///
    /// # Examples
    /// ```
    /// let publisher = shmbus::pool::Publisher::<u64, _>::on_heap(4, 64, 6)?;
    /// assert_eq!(publisher.census().free, 6);
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn census(&self) -> Census {
        self.blocks.census(self.ring.region(), self.ring.head())
    }

    fn publish(&mut self, block: u64, len: usize) -> Result<u64, Abandoned> {
        let desc = descriptor(block, len);
        if !self.multi {
            let seq = self.next;
            if !self.gate.open_for(seq) {
                self.gate.room(&self.ring, seq);
            }
            return Ok(self.write_single(seq, block, &desc));
        }
        let (seq, generation) = self.ring.claim_gated();
        self.gate.after_claim(seq, generation);
        if !self.gate.open_for(seq) {
            self.gate.room(&self.ring, seq);
        }
        self.fill_claimed(seq, block, &desc)
    }

    /// Publishes `block` only if the gate has room for it by `deadline`
    /// (a deadline of now never waits): else `Full`, and nothing was
    /// published or claimed (a many-publisher bus claims only a sequence
    /// it found room for, as `ManyPublisher::publish_within`). On `Full`
    /// the block is still the caller's; on `Abandoned` it is gone, as
    /// from `publish`.
    pub(crate) fn publish_within(
        &mut self,
        block: u64,
        len: usize,
        deadline: Option<Instant>,
    ) -> Result<u64, crate::bus::TryPublishError> {
        let full = |f: crate::bus::gate::Full| crate::bus::TryPublishError::Full {
            entry: f.entry,
            pid: f.pid,
        };
        let desc = descriptor(block, len);
        if !self.multi {
            let seq = self.next;
            self.gate
                .room_until(&self.ring, seq, deadline)
                .map_err(full)?;
            return Ok(self.write_single(seq, block, &desc));
        }
        let seq = self
            .gate
            .claim_with_room(&self.ring, deadline)
            .map_err(full)?;
        Ok(self.fill_claimed(seq, block, &desc)?)
    }

    /// One publisher: writes `block`'s descriptor as `seq`, past the gate.
    fn write_single(&mut self, seq: u64, block: u64, desc: &[u8; 16]) -> u64 {
        // The descriptor of `seq - capacity` leaves the ring now: its block
        // is a first try a cushion later. The capacity is a power of two.
        let i = (seq & (self.ring.capacity() - 1)) as usize;
        if let Some(last) = self.lap.get_mut(i) {
            let overwritten = std::mem::replace(last, block);
            self.warm = self.left.pass(overwritten);
        }
        self.blocks.publish(self.ring.region(), block, seq);
        let generation = self.ring.write(seq, desc);
        self.gate.after_write(seq, generation);
        self.next = seq.wrapping_add(1);
        seq
    }

    /// Many publishers: the claimed `seq`, past the gate: takes its slot,
    /// stores `block`'s descriptor, commits.
    fn fill_claimed(&mut self, seq: u64, block: u64, desc: &[u8; 16]) -> Result<u64, Abandoned> {
        let region = self.ring.region();
        let lost = Abandoned {
            seq,
            unblock: self.ring.unblock_timeout(),
        };
        let Ok(replaced) = self.ring.begin(seq) else {
            self.blocks.free(region, block);
            self.warm = Some(block);
            return Err(lost);
        };
        // The slot is ours (`writing(seq)`); the descriptor of `seq -
        // capacity` it held, if any, leaves the ring now, and its block is
        // a first try a cushion later. The line is the one `begin` just
        // wrote.
        self.warm = self
            .left
            .pass(self.ring.replaced_word(seq, replaced).unwrap_or(NONE));
        self.blocks.publish(region, block, seq);
        self.ring.store_payload(seq, desc);
        if self.ring.commit(seq).is_err() {
            // Never `done(seq)`: no reader can have taken it; but a stall
            // this long may have let another publisher reclaim it.
            self.blocks.unpublish(region, block, seq);
            return Err(lost);
        }
        Ok(seq)
    }

    /// The word a publisher waiting for room sleeps on (an async publish
    /// registers it with the `aio` waiter).
    pub(crate) fn room_bell(&self) -> &crate::sync::AtomicU32 {
        self.ring.room_bell()
    }
}

/// A pool descriptor: the block's index, then the message's length.
fn descriptor(block: u64, len: usize) -> [u8; 16] {
    let mut desc = [0u8; 16];
    desc[..8].copy_from_slice(&block.to_le_bytes());
    desc[8..].copy_from_slice(&(len as u64).to_le_bytes());
    desc
}

impl<T: Message, R: Region> Publisher<T, R> {
    /// Loans a block for one `T`, waiting as `wait` says while every block
    /// is on the ring, loaned or held. The loan derefs to the `T` in the
    /// block: the bytes of the block's last message, or zeros (a block's
    /// bytes are always a valid `T`); write every field.
    ///
    /// # Errors
    /// [`LoanError::Exhausted`] when the wait ends with no block free. A
    /// waiting publisher frees what dead processes held (their loans, and
    /// their subscribers' holds) on a bus in /dev/shm, at once and again
    /// every 50 ms of its wait.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Wait, pool};
    ///
    /// let mut publisher = pool::Publisher::<[u64; 8], _>::on_heap(4, 64, 5)?;
    /// let mut loan = publisher.loan(Wait::Never)?;
    /// *loan = [1; 8];
    /// assert_eq!(loan.publish()?, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn loan(&mut self, wait: Wait) -> Result<Loan<'_, T, R>, LoanError> {
        let block = self.lend(size_of::<T>(), wait)?;
        Ok(Loan {
            publisher: self,
            block,
        })
    }
}

impl<R: Region> Publisher<[u8], R> {
    /// Loans a block for a message of `len` bytes, waiting as `wait` says
    /// while every block is on the ring, loaned or held. The loan's bytes
    /// hold whatever the block held before: write all `len` of them.
    ///
    /// # Errors
    /// [`LoanError::TooLong`] for a `len` above the block size;
    /// [`LoanError::Exhausted`] when the wait ends with no block free. A
    /// waiting publisher frees what dead processes held (their loans, and
    /// their subscribers' holds) on a bus in /dev/shm, at once and again
    /// every 50 ms of its wait.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Wait, pool};
    ///
    /// let mut publisher = pool::Publisher::<[u8], _>::on_heap(4, 4096, 5)?;
    /// let mut loan = publisher.loan(3, Wait::Never)?;
    /// loan.copy_from_slice(&[1, 2, 3]);
    /// assert_eq!(loan.publish()?, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn loan(&mut self, len: usize, wait: Wait) -> Result<Loan<'_, [u8], R>, LoanError> {
        let block = self.lend(len, wait)?;
        Ok(Loan {
            publisher: self,
            block,
        })
    }
}

/// A block loaned to a publisher: one `T` (a typed publisher's) or `len`
/// bytes (a raw one's) in the pool, written in place through `DerefMut`,
/// published by [`Loan::publish`], given back unpublished when dropped.
///
/// # Examples
/// ```
/// use shmbus::{Wait, pool};
///
/// let mut publisher = pool::Publisher::<[u8], _>::on_heap(4, 64, 5)?;
/// let mut loan = publisher.loan(8, Wait::Never)?;
/// loan.fill(7);
/// assert_eq!(loan.len(), 8);
/// drop(loan); // not published: the block is free again
/// assert_eq!(publisher.census().free, 5);
///
/// let mut typed = pool::Publisher::<u64, _>::on_heap(4, 64, 5)?;
/// let mut loan = typed.loan(Wait::Never)?;
/// *loan = 7;
/// assert_eq!(*loan, 7);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Loan<'a, T: ?Sized + Payload, R: Region = DefaultRegion> {
    publisher: &'a mut Publisher<T, R>,
    /// A typed loan's is exactly `size_of::<T>()` bytes at a block's
    /// start, 64-byte aligned, and `T`'s alignment is at most 64 (checked
    /// when the pool was made or opened).
    block: LoanedBlock,
}

impl<T: ?Sized + Payload, R: Region> Loan<'_, T, R> {
    /// Publishes the block: its descriptor goes on the ring, and returns
    /// the message's sequence number.
    ///
    /// # Errors
    /// [`Abandoned`] on a many-publisher bus whose claim was skipped (the
    /// publisher stalled past the unblock timeout): nothing was published
    /// and the block is free again. A single-publisher bus never fails.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Wait, pool};
    ///
    /// let mut publisher = pool::Publisher::<u32, _>::on_heap(4, 64, 5)?;
    /// let mut loan = publisher.loan(Wait::Never)?;
    /// *loan = 42;
    /// assert_eq!(loan.publish()?, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn publish(mut self) -> Result<u64, Abandoned> {
        self.block.publish(self.publisher)
    }

    /// One try of an async publish: publishes, or finds no room now and
    /// publishes nothing (`Full`: the loan still holds its block).
    pub(crate) fn try_publish_now(&mut self) -> Result<u64, crate::bus::TryPublishError> {
        self.block.try_publish(self.publisher, Some(Instant::now()))
    }

    /// The `room` word of the loan's bus.
    pub(crate) fn room_bell(&self) -> &crate::sync::AtomicU32 {
        self.publisher.room_bell()
    }
}

impl<R: Region> Loan<'_, [u8], R> {
    /// Shortens the message to its first `len` bytes; a `len` at or above
    /// the loan's length changes nothing (as `Vec::truncate`). A writer
    /// that learns the length only as it writes loans a whole block
    /// ([`Publisher::block_size`]) and truncates to what it wrote.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{pool, Received, Start, Wait, WaitStrategy};
    ///
    /// let mut publisher = pool::Publisher::<[u8], _>::on_heap(4, 64, 5)?;
    /// let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default())?;
    /// let mut loan = publisher.loan(publisher.block_size(), Wait::Never)?;
    /// let written = b"seven b";
    /// loan[..written.len()].copy_from_slice(written);
    /// loan.truncate(written.len());
    /// loan.publish()?;
    /// match subscriber.recv(Wait::Never)? {
    ///     Some(Received::Message(sample)) => assert_eq!(&sample[..], written),
    ///     other => panic!("expected the message, got {other:?}"),
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn truncate(&mut self, len: usize) {
        self.block.truncate(len);
    }
}

impl<R: Region> std::ops::Deref for Loan<'_, [u8], R> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.block.bytes()
    }
}

impl<R: Region> std::ops::DerefMut for Loan<'_, [u8], R> {
    fn deref_mut(&mut self) -> &mut [u8] {
        self.block.bytes_mut()
    }
}

impl<T: Message, R: Region> std::ops::Deref for Loan<'_, T, R> {
    type Target = T;
    fn deref(&self) -> &T {
        self.block.value()
    }
}

impl<T: Message, R: Region> std::ops::DerefMut for Loan<'_, T, R> {
    fn deref_mut(&mut self) -> &mut T {
        self.block.value_mut()
    }
}

impl<T: ?Sized + Payload, R: Region> Drop for Loan<'_, T, R> {
    fn drop(&mut self) {
        self.block.free(self.publisher);
    }
}

impl<T: ?Sized + Payload, R: Region> std::fmt::Debug for Loan<'_, T, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.block.fmt_as("Loan", f)
    }
}

/// A block loaned to a publisher: what [`Loan`] and [`OwnedLoan`](super::OwnedLoan) share
/// (its bytes, its length, publishing it, freeing it), each beside the
/// publisher it was loaned from, which keeps the mapping (and so `ptr`)
/// alive for as long as this lives.
pub(super) struct LoanedBlock {
    /// [`PUBLISHED`] once published: nothing left to free.
    block: u64,
    len: usize,
    /// The block's bytes (`None` only in a region that lends no plain
    /// memory, which no handle is built on).
    ptr: Option<NonNull<u8>>,
}

impl LoanedBlock {
    pub(super) fn bytes(&self) -> &[u8] {
        match self.ptr {
            // SAFETY: the block is loaned to this publisher (its state says
            // so, set by CAS in `Blocks::loan`): no reader takes it before
            // it is published, and no other publisher loans it, so these
            // `len` bytes (checked by `raw`) are ours alone until `publish`;
            // the holder keeps the publisher, whose region maps them.
            Some(p) => unsafe { std::slice::from_raw_parts(p.as_ptr(), self.len) },
            None => &[],
        }
    }

    pub(super) fn bytes_mut(&mut self) -> &mut [u8] {
        match self.ptr {
            // SAFETY: as in `bytes`; `&mut self` makes this the only view.
            Some(p) => unsafe { std::slice::from_raw_parts_mut(p.as_ptr(), self.len) },
            None => &mut [],
        }
    }

    /// The block's bytes as the one `T` of a typed loan: its length is
    /// `size_of::<T>()` and its start 64-byte aligned, which `T`'s
    /// alignment divides (both checked when the pool was made or opened),
    /// so the cast cannot fail; and any bytes are a valid `T` (`Pod`).
    pub(super) fn value<T: Message>(&self) -> &T {
        bytemuck::from_bytes(self.bytes())
    }

    /// As [`LoanedBlock::value`], writable.
    pub(super) fn value_mut<T: Message>(&mut self) -> &mut T {
        bytemuck::from_bytes_mut(self.bytes_mut())
    }

    pub(super) fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// Moves the block out, leaving in its place one with nothing to free.
    pub(super) fn take(&mut self) -> LoanedBlock {
        std::mem::replace(
            self,
            LoanedBlock {
                block: PUBLISHED,
                len: 0,
                ptr: None,
            },
        )
    }

    /// Publishes the block on `publisher`, the one it was loaned from;
    /// afterwards `free` does nothing.
    pub(super) fn publish<T: ?Sized + Payload, R: Region>(
        &mut self,
        publisher: &mut Publisher<T, R>,
    ) -> Result<u64, Abandoned> {
        let block = std::mem::replace(&mut self.block, PUBLISHED);
        publisher.publish(block, self.len)
    }

    /// `publish` if the gate has room by `deadline`; on `Full` the block
    /// stays loaned (still ours to publish or free).
    pub(super) fn try_publish<T: ?Sized + Payload, R: Region>(
        &mut self,
        publisher: &mut Publisher<T, R>,
        deadline: Option<Instant>,
    ) -> Result<u64, crate::bus::TryPublishError> {
        let r = publisher.publish_within(self.block, self.len, deadline);
        if !matches!(r, Err(crate::bus::TryPublishError::Full { .. })) {
            // Published, or abandoned (the block freed or unpublished
            // there): nothing left to free.
            self.block = PUBLISHED;
        }
        r
    }

    /// Gives an unpublished block back to `publisher`'s pool, once: it is
    /// free, and its publisher's next loan tries it first.
    pub(super) fn free<T: ?Sized + Payload, R: Region>(&mut self, publisher: &mut Publisher<T, R>) {
        let block = std::mem::replace(&mut self.block, PUBLISHED);
        // In a forked child the block is the parent's loan, not ours.
        if block != PUBLISHED && publisher.origin.is_current() {
            publisher.blocks.free(publisher.ring.region(), block);
            publisher.warm = Some(block);
        }
    }

    /// The block's index in the pool.
    #[cfg(test)]
    pub(super) fn index(&self) -> u64 {
        self.block
    }

    pub(super) fn fmt_as(&self, name: &str, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct(name)
            .field("block", &self.block)
            .field("len", &self.len)
            .finish()
    }
}

/// `LoanedBlock::block` once published or freed: nothing for `free` to do.
const PUBLISHED: u64 = u64::MAX;

/// A `Publisher::lap` entry for a sequence not published by this handle.
const NONE: u64 = u64::MAX;

/// How many publishes a block whose descriptor left the ring waits before
/// its publisher loans it first. Not 0: a subscriber the publisher laps
/// reads the oldest descriptors, so the block of the one just overwritten
/// is most likely the one it read last, and rewriting it at once takes
/// each of its lines back from that reader's cache. Measured against no
/// wait: 1 MiB messages delivered to a lapped subscriber 1.44 times as
/// fast, the rest unchanged (docs/bench-ab/warm-reuse.md). The cycle
/// grows by as many blocks.
pub(super) const CUSHION: usize = 4;

/// The blocks whose descriptors the last `len` publishes overwrote, in
/// the order they left the ring from `at` on ([`NONE`] where none did).
/// `len` is [`CUSHION`], or fewer where the pool has fewer blocks to spare
/// beyond its ring and a loan: a block kept waiting there would only be
/// found by the search, and the warm try fail.
#[derive(Clone, Copy)]
struct Cushion {
    waiting: [u64; CUSHION],
    len: usize,
    at: usize,
}

impl Cushion {
    fn new(capacity: u64, blocks: u64) -> Self {
        let spare = blocks.saturating_sub(capacity + 1);
        Cushion {
            waiting: [NONE; CUSHION],
            len: spare.min(CUSHION as u64) as usize,
            at: 0,
        }
    }

    /// `block`'s descriptor just left the ring ([`NONE`]: none did); the
    /// block that left `len` publishes ago, if any, is warm now.
    #[inline(always)]
    fn pass(&mut self, block: u64) -> Option<u64> {
        let oldest = if self.len == 0 {
            block
        } else {
            let oldest = std::mem::replace(&mut self.waiting[self.at], block);
            self.at = if self.at + 1 == self.len {
                0
            } else {
                self.at + 1
            };
            oldest
        };
        (oldest != NONE).then_some(oldest)
    }
}

/// How often a waiting loan frees what dead processes hold: a sweep takes
/// a lock per live subscriber, too dear for every poll.
const SWEEP_EVERY: Duration = Duration::from_millis(50);

impl<T: ?Sized + Payload> Publisher<T, Arc<HeapRegion>> {
    /// A pool bus on the heap, for threads of one process (and Miri): a
    /// ring of `capacity` slots, `blocks` blocks of `block_size` bytes,
    /// each carrying one `T` (or, raw, up to `block_size` bytes).
    ///
    /// # Errors
    /// [`CreateError::InvalidGeometry`] for a capacity that is not a power
    /// of two, a block size that is not a multiple of 64 in 64 B..=1 GiB,
    /// fewer blocks than `capacity + 1`, or a `T` larger than a block or
    /// aligned to more than 64 bytes
    /// ([`GeometryError::PoolBlockType`](crate::error::GeometryError::PoolBlockType)).
    ///
    /// # Examples
    /// ```
    /// use shmbus::pool;
    /// let raw = pool::Publisher::<[u8], _>::on_heap(16, 1 << 16, 32)?;
    /// let typed = pool::Publisher::<[f32; 1024], _>::on_heap(16, 4096, 32)?;
    /// assert!(pool::Publisher::<[f32; 1024], _>::on_heap(16, 1024, 32).is_err());
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn on_heap(capacity: u64, block_size: u64, blocks: u64) -> Result<Self, CreateError> {
        let block_msg = super::block_type::block_type::<T>(block_size, None)
            .map_err(CreateError::InvalidGeometry)?;
        let (ring, pool) = super::heap::ring(capacity, block_size, blocks, block_msg)?;
        Ok(Publisher::from_parts(ring, pool, 0, false, |_, _| {}))
    }

    /// A subscriber to this heap pool bus.
    ///
    /// # Errors
    /// [`crate::OpenError::RegistryFull`] if 256 subscribers are open.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Start, WaitStrategy, pool};
    /// let publisher = pool::Publisher::<u64, _>::on_heap(4, 64, 5)?;
    /// let subscriber = publisher.subscribe(Start::Next, WaitStrategy::default())?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn subscribe(
        &self,
        start: Start,
        wait: WaitStrategy,
    ) -> Result<Subscriber<T, Arc<HeapRegion>>, crate::OpenError> {
        Subscriber::on_heap(self.ring.share(), self.blocks, start, wait)
    }
}

#[cfg(not(loom))]
mod shm {
    use super::*;
    use crate::bus::{Many, PublisherCount};
    use crate::error::AttachError;
    use crate::mem::ShmRegion;
    use crate::options::OpenOptions;
    use crate::pool::Options;
    use crate::wire::{Publishers, descriptor};

    impl<T: ?Sized + Payload> Publisher<T, ShmRegion> {
        /// Creates a pool bus as `opts` say, whose blocks carry `T` (a
        /// raw pool: up to a block of bytes), and becomes its one
        /// publisher. The header records the block type.
        ///
        /// # Errors
        /// As [`crate::Publisher::create`], and
        /// [`CreateError::InvalidGeometry`] for a block size that is not a
        /// multiple of 64 in 64 B..=1 GiB, fewer blocks than one more than
        /// the capacity, or a `T` larger than a block or aligned to more
        /// than 64 bytes
        /// ([`GeometryError::PoolBlockType`](crate::error::GeometryError::PoolBlockType)).
        ///
        /// # Examples
        /// ```
        /// use shmbus::pool;
        /// # let name = format!("/dev/shm/shmbus-doc-poolcreate-{}", std::process::id());
        /// let publisher = pool::Publisher::<[u8]>::create(&name, &pool::Options::new(16, 1 << 20, 24))?;
        /// # shmbus::remove(&name)?;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn create(name: &str, opts: &Options) -> Result<Self, CreateError> {
            Self::create_as(name, opts)
        }

        /// Creates a pool bus for any number of publishers
        /// ([`Publisher::attach_many`]), and becomes the first. It
        /// takes options for many publishers ([`Options::many`]), whose
        /// [`Options::unblock_timeout`] it keeps.
        ///
        /// # Errors
        /// As [`Publisher::create`].
        ///
        /// # Examples
        /// ```
        /// use shmbus::{OpenOptions, pool};
        /// # let name = format!("/dev/shm/shmbus-doc-poolmany-{}", std::process::id());
        /// let first = pool::Publisher::<u64>::create_many(&name, &pool::Options::new(16, 4096, 24).many())?;
        /// let second = pool::Publisher::<u64>::attach_many(&name, &OpenOptions::default())?;
        /// # shmbus::remove(&name)?;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn create_many(name: &str, opts: &Options<Many>) -> Result<Self, CreateError> {
            Self::create_as(name, opts)
        }

        fn create_as<P: PublisherCount>(
            name: &str,
            opts: &Options<P>,
        ) -> Result<Self, CreateError> {
            let multi = crate::bus::options::publishers::<P>() == Publishers::Many;
            let bus = opts.bus();
            let (block_size, count) = opts.pool();
            let block_msg = super::super::block_type::block_type::<T>(block_size, opts.named())
                .map_err(CreateError::InvalidGeometry)?;
            let (ring, pool) =
                crate::bus::segment::create_pool(name, &bus, (block_size, count), block_msg)?;
            let blocks = Blocks::new(pool, ring.control_field(0), ring.capacity());
            Ok(Publisher::from_parts(
                ring,
                blocks,
                bus.first_seq,
                multi,
                sweep,
            ))
        }

        /// Becomes the publisher of an existing single-publisher pool bus
        /// after the last one exited or died: it carries on the sequence,
        /// bumps the epoch, and frees the blocks the last one had loaned.
        /// A typed publisher checks the pool's block type; a raw one
        /// (`[u8]`) attaches to a pool of any type.
        ///
        /// # Errors
        /// As [`crate::Publisher::attach`]:
        /// [`crate::OpenError::TypeMismatch`] (inside
        /// [`AttachError::Open`]) for a pool of another block type, which
        /// it names beside `T`'s; [`crate::OpenError::PoolMismatch`] for a
        /// bus without a pool.
        ///
        /// # Examples
        /// ```
        /// use shmbus::{AttachError, OpenError, OpenOptions, pool};
        /// # let name = format!("/dev/shm/shmbus-doc-poolattach-{}", std::process::id());
        /// drop(pool::Publisher::<u64>::create(&name, &pool::Options::new(16, 4096, 24))?);
        /// let second = pool::Publisher::<u64>::attach(&name, &OpenOptions::default())?;
        /// drop(second);
        /// assert!(matches!(
        ///     pool::Publisher::<u32>::attach(&name, &OpenOptions::default()),
        ///     Err(AttachError::Open(OpenError::TypeMismatch { .. }))
        /// ));
        /// # shmbus::remove(&name)?;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn attach(name: &str, opts: &OpenOptions) -> Result<Self, AttachError> {
            Self::attach_as(name, opts, Publishers::One)
        }

        /// Becomes one more publisher of a pool bus made by
        /// [`Publisher::create_many`].
        ///
        /// # Errors
        /// As [`crate::bus::ManyPublisher::attach`];
        /// [`crate::OpenError::TypeMismatch`] as for
        /// [`Publisher::attach`]; [`crate::OpenError::PoolMismatch`]
        /// for a bus without a pool.
        ///
        /// # Examples
        /// ```
        /// use shmbus::{OpenOptions, Wait, pool};
        /// # let name = format!("/dev/shm/shmbus-doc-poolattachmany-{}", std::process::id());
        /// let mut first = pool::Publisher::<[u8]>::create_many(&name, &pool::Options::new(4, 64, 8).many())?;
        /// let mut second = pool::Publisher::<[u8]>::attach_many(&name, &OpenOptions::default())?;
        /// assert_eq!(first.loan(1, Wait::Never)?.publish()?, 0);
        /// assert_eq!(second.loan(1, Wait::Never)?.publish()?, 1);
        /// # shmbus::remove(&name)?;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn attach_many(name: &str, opts: &OpenOptions) -> Result<Self, AttachError> {
            Self::attach_as(name, opts, Publishers::Many)
        }

        fn attach_as(
            name: &str,
            opts: &OpenOptions,
            want: Publishers,
        ) -> Result<Self, AttachError> {
            let msg = descriptor();
            let check = |header: &crate::wire::Header| {
                super::super::block_type::check_block_type::<T>(header, opts.message.as_ref())
                    .map(|_| ())
            };
            let (ring, next, header) =
                crate::bus::segment::attach_header(name, Some(&msg), opts, want, Some(&check))?;
            let pool = header
                .pool
                .ok_or(crate::OpenError::PoolMismatch { found: false })?;
            let blocks = Blocks::new(pool, ring.control_field(0), ring.capacity());
            let multi = want == Publishers::Many;
            if !multi {
                // We hold the publisher lock: every loan is a dead one's.
                blocks.free_loans(ring.region(), |_| true);
            } else {
                // Loans name their publisher by pid, and a sweep frees a
                // loan whose pid is gone: from another pid namespace a live
                // publisher's pid looks gone. The header was validated
                // after the magic's Acquire load.
                let bus = ring
                    .region()
                    .word(crate::wire::header::POOL_PID_NS)
                    .load(crate::sync::Ordering::Relaxed);
                let ours = crate::sys::lock::pid_namespace();
                if bus != 0 && bus != ours {
                    return Err(AttachError::PidNamespace { bus, ours });
                }
            }
            Ok(Publisher::from_parts(ring, blocks, next, multi, sweep))
        }
    }

    fn sweep(region: &ShmRegion, blocks: &Blocks) {
        super::super::sweep::dead(region, blocks);
    }

    impl<T: ?Sized + Payload> Publisher<T, ShmRegion> {
        /// Frees now what dead processes left (as a loan that finds the
        /// pool exhausted does first): returns (subscriber entries
        /// cleared, loans freed). For tests and `shmbus clean`.
        #[doc(hidden)]
        pub fn reclaim_dead(&self) -> (u64, u64) {
            super::super::sweep::dead(self.ring.region(), &self.blocks)
        }
    }
}
