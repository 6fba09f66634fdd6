//! [`Producer`]: the stream's one writer, and [`WriteChunk`], a record
//! written in place; raw (`[u8]`, records of any length) or typed (`T`,
//! every record one `T`).

use super::ring::{Look, Peer, Stop, StreamRing, padded};
use super::side::SideLine;
use super::{PushError, WRAP};
use crate::bus::Payload;
use crate::mem::{DefaultRegion, Region};
use crate::sync::Ordering;
use crate::sys::fork::Origin;
use crate::wait::{self, Wait, WaitStrategy};
use crate::wire::Message;
use crate::wire::{lock_byte, stream_control as ctl};

/// Writes records of payload `T` into a stream. One per stream at a time.
/// Records are delivered whole, once each, in order; a full ring makes
/// the producer wait (as its call's [`Wait`] says), never lose a record.
///
/// `T = [u8]`: records of any length up to [`Producer::max_record`]
/// bytes. `T: Message`: every record is one `T` (its `size_of` bytes); the
/// stream records `T`'s name and alignment, and a typed opener of another
/// type is refused ([`crate::OpenError::TypeMismatch`]).
///
/// # Examples
/// ```
/// use shmbus::{OpenOptions, Wait, stream::{self, Consumer, Producer}};
/// # let name = format!("/dev/shm/shmbus-doc-producer-type-{}", std::process::id());
/// let mut producer = Producer::<[u8]>::create(&name, &stream::Options::new(4096))?;
/// let mut consumer = Consumer::<[u8]>::attach(&name, &OpenOptions::default())?;
/// producer.push(b"one", Wait::Never)?;
/// producer.push(b"two", Wait::Never)?;
/// let mut record = Vec::new();
/// consumer.pop(&mut record, Wait::Never)?;
/// assert_eq!(record, b"one");
/// consumer.pop(&mut record, Wait::Never)?;
/// assert_eq!(record, b"two");
/// # shmbus::remove(&name)?;
///
/// // Typed: every record is one `u64`.
/// let mut producer = Producer::<u64>::create(&name, &stream::Options::new(4096))?;
/// let mut consumer = Consumer::<u64>::attach(&name, &OpenOptions::default())?;
/// producer.push(&7, Wait::Never)?;
/// assert_eq!(consumer.pop(Wait::Never)?, 7);
/// # shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Producer<T: ?Sized + Payload, R: Region = DefaultRegion> {
    pub(crate) ring: StreamRing<R>,
    /// Our TAIL (only we store it).
    tail: u64,
    /// The consumer's HEAD as last loaded, checked: in [tail - capacity, tail].
    head: u64,
    strategy: WaitStrategy,
    /// Our line for `stat` and `top` (none on the heap).
    line: SideLine,
    /// The process that took the role: a forked child's copy leaves the
    /// pid word, the parent's, alone.
    origin: Origin,
    _payload: std::marker::PhantomData<fn(&T)>,
}

impl<T: ?Sized + Payload, R: Region> std::fmt::Debug for Producer<T, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Producer")
            .field("tail", &self.tail)
            .field("head", &self.head)
            .field("wait", &self.strategy)
            .finish_non_exhaustive()
    }
}

impl<T: ?Sized + Payload, R: Region> Producer<T, R> {
    pub(crate) fn from_ring(ring: StreamRing<R>, strategy: WaitStrategy) -> Self {
        // Relaxed: we are the only writer of TAIL, and HEAD is reloaded with
        // Acquire before any byte is reused.
        let tail = ring.cursor(ctl::TAIL).load(Ordering::Relaxed);
        let head = ring.cursor(ctl::HEAD).load(Ordering::Acquire);
        // A HEAD out of range is not kept: the cache then says "full", so
        // the first push reloads it and reports it.
        let head = if tail.wrapping_sub(head) <= ring.capacity {
            head
        } else {
            tail.wrapping_sub(ring.capacity)
        };
        Producer {
            ring,
            tail,
            head,
            strategy,
            line: SideLine::default(),
            origin: Origin::here(),
            _payload: std::marker::PhantomData,
        }
    }

    /// The largest record this stream carries: half the ring less an
    /// 8-byte record header.
    ///
    /// # Examples
    /// ```
    /// use shmbus::stream::{self, Producer};
    /// # let name = format!("/dev/shm/shmbus-doc-producer-max-{}", std::process::id());
    /// let producer = Producer::<[u8]>::create(&name, &stream::Options::new(4096))?;
    /// assert_eq!(producer.max_record(), 2040);
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn max_record(&self) -> usize {
        self.ring.max as usize
    }

    /// Ring size in bytes.
    ///
    /// # Examples
    /// ```
    /// use shmbus::stream::{self, Producer};
    /// # let name = format!("/dev/shm/shmbus-doc-producer-capacity-{}", std::process::id());
    /// let producer = Producer::<[u8]>::create(&name, &stream::Options::new(4096))?;
    /// assert_eq!(producer.ring_bytes(), 4096);
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn ring_bytes(&self) -> u64 {
        self.ring.capacity
    }

    /// A chunk of `len` bytes claimed for the next record: what either
    /// payload's `reserve` returns.
    #[cfg(not(loom))]
    fn chunk(&mut self, len: usize, wait: Wait) -> Result<WriteChunk<'_, T, R>, PushError> {
        let at = self.claim(len, wait)?;
        let ptr = self
            .ring
            .region
            .raw(self.ring.at(at) + 8, len)
            .expect("plain memory outside loom");
        Ok(WriteChunk {
            producer: self,
            at,
            ptr,
            len,
        })
    }

    /// Waits for room for a `len`-byte record after any wrap marker, writes
    /// that marker (unpublished), and returns the record's position.
    fn claim(&mut self, len: usize, wait: Wait) -> Result<u64, PushError> {
        let max = self.ring.max;
        if len as u64 > max {
            return Err(PushError::TooLong {
                len,
                max: max as usize,
            });
        }
        let size = padded(len as u64);
        let to_end = self.ring.capacity - (self.tail & (self.ring.capacity - 1));
        let need = if size > to_end { to_end + size } else { size };
        let cap = self.ring.capacity;
        let ring = &self.ring;
        let tail = self.tail;
        let mut head = self.head;
        let mut found = head;
        let got = ring.wait_for(
            wait,
            self.strategy,
            ctl::SPACE_BELL,
            Peer {
                lock: lock_byte::CONSUMER,
                pid_field: ctl::CONSUMER_PID,
                known_dead: 0,
            },
            &self.line,
            || {
                // `head` is checked to be within `cap` of `tail`; checked
                // here again all the same, as no overflow may come of it.
                let room = |head: u64| cap.checked_sub(tail.wrapping_sub(head)) >= Some(need);
                if room(head) {
                    return Look::Ready;
                }
                // Acquire, paired with the consumer's Release store of HEAD:
                // the bytes it released are done with before we write them.
                found = ring.cursor(ctl::HEAD).load(Ordering::Acquire);
                // In [head, tail]: HEAD never moves back nor passes TAIL;
                // `head` is within `cap` of `tail`, so this bounds it too.
                if found.wrapping_sub(head) > tail.wrapping_sub(head) {
                    return Look::Corrupt;
                }
                head = found;
                if room(head) {
                    Look::Ready
                } else {
                    Look::NotYet
                }
            },
        );
        self.head = head;
        match got {
            Ok(()) => {}
            Err(Stop::NotNow) => return Err(PushError::Full),
            Err(Stop::TimedOut(d)) => return Err(PushError::TimedOut(d)),
            Err(Stop::PeerGone(pid)) => return Err(PushError::PeerGone { pid }),
            Err(Stop::Corrupt) => {
                return Err(PushError::CorruptCursors {
                    head: found,
                    tail,
                    capacity: cap,
                    min_head: head,
                });
            }
        }
        if size > to_end {
            // Published with the record by `commit`'s TAIL store.
            self.ring.put_header(self.tail, WRAP);
            self.tail += to_end;
        }
        Ok(self.tail)
    }

    /// Writes the header of the claimed record and publishes it.
    fn commit(&mut self, len: usize) {
        // Published by the Release store of TAIL just below.
        self.ring.put_header(self.tail, len as u64);
        self.tail += padded(len as u64);
        // Release, paired with the consumer's Acquire load of TAIL: the
        // record's bytes and header (and any wrap marker) are visible first.
        self.ring
            .cursor(ctl::TAIL)
            .store(self.tail, Ordering::Release);
        wait::ring(self.ring.bell(ctl::DATA_BELL), self.ring.light);
        self.line.moved(&self.ring.region);
    }

    /// Bytes of the ring in use: records written and not yet released by
    /// the consumer, each with its 8-byte header and padding to 8 bytes.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Wait, stream::{self, Producer}};
    /// # let name = format!("/dev/shm/shmbus-doc-producer-len-{}", std::process::id());
    /// let mut producer = Producer::<[u8]>::create(&name, &stream::Options::new(4096))?;
    /// producer.push(b"abc", Wait::Never)?;
    /// assert_eq!(producer.len(), 16); // 8-byte header, 3 bytes padded to 8
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn len(&self) -> u64 {
        self.tail
            .wrapping_sub(self.ring.cursor(ctl::HEAD).load(Ordering::Acquire))
    }

    /// Whether the consumer has released everything written.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, Wait, stream::{self, Consumer, Producer}};
    /// # let name = format!("/dev/shm/shmbus-doc-producer-empty-{}", std::process::id());
    /// let mut producer = Producer::<[u8]>::create(&name, &stream::Options::new(4096))?;
    /// let mut consumer = Consumer::<[u8]>::attach(&name, &OpenOptions::default())?;
    /// producer.push(b"x", Wait::Never)?;
    /// assert!(!producer.is_empty());
    /// consumer.pop(&mut Vec::new(), Wait::Never)?;
    /// assert!(producer.is_empty());
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<R: Region> Producer<[u8], R> {
    /// Pushes one record, whole; it is delivered exactly once, in order.
    /// Waits for room as `wait` says.
    ///
    /// # Errors
    /// Nothing is pushed on any of them:
    /// [`PushError::TooLong`] for a record longer than
    /// [`Producer::max_record`]; [`PushError::Full`] if there is no room
    /// and `wait` is [`Wait::Never`]; [`PushError::TimedOut`] if there was
    /// none before `wait` ran out; [`PushError::PeerGone`] if the consumer
    /// died while the ring is full; [`PushError::CorruptCursors`] if the
    /// consumer's `HEAD` in the file cannot be right.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, Wait, stream::{self, Consumer, Producer}};
    /// # let name = format!("/dev/shm/shmbus-doc-push-{}", std::process::id());
    /// let mut producer = Producer::<[u8]>::create(&name, &stream::Options::new(4096))?;
    /// producer.push(b"a record", Wait::Never)?;
    /// producer.push(b"", Wait::Never)?; // an empty record is a record
    /// let mut consumer = Consumer::<[u8]>::attach(&name, &OpenOptions::default())?;
    /// let mut record = Vec::new();
    /// consumer.pop(&mut record, Wait::Never)?;
    /// assert_eq!(record, b"a record");
    /// consumer.pop(&mut record, Wait::Never)?;
    /// assert!(record.is_empty());
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn push(&mut self, record: &[u8], wait: Wait) -> Result<(), PushError> {
        let at = self.claim(record.len(), wait)?;
        // SAFETY: `claim` made these bytes ours: they lie outside
        // [HEAD, TAIL), and the consumer reads them only after `commit`'s
        // Release store of TAIL.
        unsafe { self.ring.region.copy_in(self.ring.at(at) + 8, record) };
        self.commit(record.len());
        Ok(())
    }

    /// Reserves room for a record of `len` bytes to be written in place;
    /// nothing is visible to the consumer until [`WriteChunk::commit`].
    /// The chunk's bytes are whatever the ring held there before.
    ///
    /// # Errors
    /// As [`Producer::push`]: [`PushError::TooLong`],
    /// [`PushError::Full`], [`PushError::TimedOut`],
    /// [`PushError::PeerGone`], [`PushError::CorruptCursors`].
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, Wait, stream::{self, Consumer, Producer}};
    /// # let name = format!("/dev/shm/shmbus-doc-reserve-{}", std::process::id());
    /// let mut producer = Producer::<[u8]>::create(&name, &stream::Options::new(4096))?;
    /// let mut chunk = producer.reserve(5, Wait::Never)?;
    /// chunk.copy_from_slice(b"hello");
    /// chunk.commit();
    /// let mut consumer = Consumer::<[u8]>::attach(&name, &OpenOptions::default())?;
    /// let mut record = Vec::new();
    /// consumer.pop(&mut record, Wait::Never)?;
    /// assert_eq!(record, b"hello");
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(not(loom))]
    pub fn reserve(
        &mut self,
        len: usize,
        wait: Wait,
    ) -> Result<WriteChunk<'_, [u8], R>, PushError> {
        self.chunk(len, wait)
    }
}

impl<T: Message, R: Region> Producer<T, R> {
    /// Pushes one `T` as a record of `size_of::<T>()` bytes; it is
    /// delivered exactly once, in order. Waits for room as `wait` says.
    ///
    /// # Errors
    /// Nothing is pushed on any of them: [`PushError::Full`] if there is
    /// no room and `wait` is [`Wait::Never`]; [`PushError::TimedOut`] if
    /// there was none before `wait` ran out; [`PushError::PeerGone`] if
    /// the consumer died while the ring is full;
    /// [`PushError::CorruptCursors`] if the consumer's `HEAD` in the file
    /// cannot be right. (Never [`PushError::TooLong`]: a `T` larger than
    /// the largest record is refused at create and attach.)
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, Wait, stream::{self, Consumer, Producer}};
    /// # let name = format!("/dev/shm/shmbus-doc-push-typed-{}", std::process::id());
    /// let mut producer = Producer::<[u32; 2]>::create(&name, &stream::Options::new(4096))?;
    /// producer.push(&[1, 2], Wait::Never)?;
    /// assert_eq!(producer.len(), 16); // an 8-byte header, then the 8 bytes
    /// let mut consumer = Consumer::<[u32; 2]>::attach(&name, &OpenOptions::default())?;
    /// assert_eq!(consumer.pop(Wait::Never)?, [1, 2]);
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn push(&mut self, msg: &T, wait: Wait) -> Result<(), PushError> {
        let bytes = bytemuck::bytes_of(msg);
        let at = self.claim(bytes.len(), wait)?;
        // SAFETY: as in the raw `push`: `claim` made these bytes ours until
        // `commit`'s Release store of TAIL.
        unsafe { self.ring.region.copy_in(self.ring.at(at) + 8, bytes) };
        self.commit(bytes.len());
        Ok(())
    }

    /// Reserves room for one `T`, to be written in place; nothing is
    /// visible to the consumer until [`WriteChunk::commit`]. The chunk
    /// derefs to `&mut T`, holding whatever bytes the ring held there
    /// before (any bytes are a `T`: it is plain old data).
    ///
    /// # Errors
    /// As the typed [`Producer::push`]: [`PushError::Full`],
    /// [`PushError::TimedOut`], [`PushError::PeerGone`],
    /// [`PushError::CorruptCursors`].
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, Wait, stream::{self, Consumer, Producer}};
    /// # let name = format!("/dev/shm/shmbus-doc-reserve-typed-{}", std::process::id());
    /// let mut producer = Producer::<[u64; 4]>::create(&name, &stream::Options::new(4096))?;
    /// let mut chunk = producer.reserve(Wait::Never)?;
    /// *chunk = [0; 4];
    /// chunk[3] = 9;
    /// chunk.commit();
    /// let mut consumer = Consumer::<[u64; 4]>::attach(&name, &OpenOptions::default())?;
    /// assert_eq!(consumer.pop(Wait::Never)?, [0, 0, 0, 9]);
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(not(loom))]
    pub fn reserve(&mut self, wait: Wait) -> Result<WriteChunk<'_, T, R>, PushError> {
        self.chunk(size_of::<T>(), wait)
    }
}

/// Room for one record, written in place; see [`Producer::reserve`]. It
/// derefs to the record: its bytes (`&mut [u8]`) on a raw stream, a
/// `&mut T` on a typed one. [`WriteChunk::commit`] publishes it, and
/// dropping the chunk publishes nothing.
///
/// # Examples
/// ```
/// use std::io::Write;
/// use shmbus::{OpenOptions, Wait, stream::{self, Consumer, Producer}};
/// # let name = format!("/dev/shm/shmbus-doc-writechunk-{}", std::process::id());
/// let mut producer = Producer::<[u8]>::create(&name, &stream::Options::new(4096))?;
/// let mut chunk = producer.reserve(64, Wait::Never)?;
/// let n = {
///     let mut room = &mut chunk[..];
///     write!(room, "{} + {} = {}", 2, 2, 4)?;
///     64 - room.len()
/// };
/// chunk.truncate(n);
/// chunk.commit();
/// drop(producer.reserve(8, Wait::Never)?); // dropped: nothing published
///
/// let mut consumer = Consumer::<[u8]>::attach(&name, &OpenOptions::default())?;
/// let mut record = Vec::new();
/// consumer.pop(&mut record, Wait::Never)?;
/// assert_eq!(record, b"2 + 2 = 4");
/// assert!(consumer.is_empty());
/// # shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[cfg(not(loom))]
pub struct WriteChunk<'a, T: ?Sized + Payload, R: Region> {
    producer: &'a mut Producer<T, R>,
    /// The record's stream position (its header's); the producer's TAIL.
    at: u64,
    ptr: std::ptr::NonNull<u8>,
    len: usize,
}

#[cfg(not(loom))]
impl<T: ?Sized + Payload, R: Region> std::fmt::Debug for WriteChunk<'_, T, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteChunk")
            .field("at", &self.at)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

#[cfg(not(loom))]
impl<T: ?Sized + Payload, R: Region> WriteChunk<'_, T, R> {
    /// Publishes the record. Dropping the chunk instead publishes nothing.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Wait, stream::{self, Producer}};
    /// # let name = format!("/dev/shm/shmbus-doc-commit-{}", std::process::id());
    /// let mut producer = Producer::<[u8]>::create(&name, &stream::Options::new(4096))?;
    /// let mut chunk = producer.reserve(3, Wait::Never)?;
    /// chunk.copy_from_slice(b"abc");
    /// chunk.commit();
    /// assert_eq!(producer.len(), 16);
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn commit(self) {
        self.producer.commit(self.len);
    }
}

#[cfg(not(loom))]
impl<R: Region> WriteChunk<'_, [u8], R> {
    /// Makes the chunk `len` bytes long, keeping the bytes written so far
    /// (the new ones are unspecified), for a record whose length is not
    /// known up front; waits for the extra room as [`Producer::reserve`]
    /// does. On an error the chunk is unchanged. The bytes may move to the
    /// start of the ring (a slice taken before does not outlive `&mut`).
    ///
    /// # Errors
    /// As [`Producer::reserve`], for the new length:
    /// [`PushError::TooLong`], [`PushError::Full`], [`PushError::TimedOut`],
    /// [`PushError::PeerGone`], [`PushError::CorruptCursors`]. A `len`
    /// no longer than the chunk is `Ok` and changes nothing.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, Wait, stream::{self, Consumer, Producer}};
    /// # let name = format!("/dev/shm/shmbus-doc-grow-{}", std::process::id());
    /// let mut producer = Producer::<[u8]>::create(&name, &stream::Options::new(4096))?;
    /// let mut chunk = producer.reserve(3, Wait::Never)?;
    /// chunk.copy_from_slice(b"abc");
    /// chunk.grow(6, Wait::Never)?; // more to write than first thought
    /// chunk[3..].copy_from_slice(b"def");
    /// chunk.commit();
    /// let mut consumer = Consumer::<[u8]>::attach(&name, &OpenOptions::default())?;
    /// let mut record = Vec::new();
    /// consumer.pop(&mut record, Wait::Never)?;
    /// assert_eq!(record, b"abcdef");
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn grow(&mut self, len: usize, wait: Wait) -> Result<(), PushError> {
        if len <= self.len {
            return Ok(());
        }
        // From the same TAIL: the room the chunk has is part of the claim.
        let at = self.producer.claim(len, wait)?;
        let ring = &self.producer.ring;
        let ptr = ring
            .region
            .raw(ring.at(at) + 8, len)
            .expect("plain memory outside loom");
        if at != self.at {
            // Past the ring's end now: `claim` put a wrap marker where our
            // header was to go, and the record starts at ring offset 0.
            // SAFETY: both ranges are claimed and unpublished, so ours
            // alone (no TAIL store has covered them); `ptr::copy` allows
            // overlap, though a record of at most half the ring that must
            // wrap started past the middle, beyond where this one ends.
            unsafe { std::ptr::copy(self.ptr.as_ptr(), ptr.as_ptr(), self.len) };
        }
        self.at = at;
        self.ptr = ptr;
        self.len = len;
        Ok(())
    }

    /// Shortens the chunk to its first `len` bytes (no effect if it is not
    /// longer): [`commit`](Self::commit) then publishes only those, and
    /// the rest of the room goes back to the producer.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Wait, stream::{self, Producer}};
    /// # let name = format!("/dev/shm/shmbus-doc-truncate-{}", std::process::id());
    /// let mut producer = Producer::<[u8]>::create(&name, &stream::Options::new(4096))?;
    /// let mut chunk = producer.reserve(100, Wait::Never)?;
    /// chunk[..2].copy_from_slice(b"ok");
    /// chunk.truncate(2);
    /// assert_eq!(&chunk[..], b"ok");
    /// chunk.commit();
    /// assert_eq!(producer.len(), 16); // the record as truncated
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }
}

#[cfg(not(loom))]
impl<R: Region> std::ops::Deref for WriteChunk<'_, [u8], R> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `claim` gave the producer sole ownership of these `len`
        // bytes until it commits, and the chunk borrows the producer.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

#[cfg(not(loom))]
impl<R: Region> std::ops::DerefMut for WriteChunk<'_, [u8], R> {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`; `&mut self` makes this the only view.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

#[cfg(not(loom))]
impl<T: Message, R: Region> std::ops::Deref for WriteChunk<'_, T, R> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: `claim` gave the producer these `size_of::<T>()` bytes
        // alone until it commits (the chunk borrows it); they start 8 bytes
        // past a multiple of 8 from the page-aligned ring, and `T` is
        // aligned to at most 8 (`record`: refused otherwise at create and
        // attach); any bytes are a `T` (`Pod`).
        unsafe { &*self.ptr.as_ptr().cast::<T>() }
    }
}

#[cfg(not(loom))]
impl<T: Message, R: Region> std::ops::DerefMut for WriteChunk<'_, T, R> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`; `&mut self` makes this the only view.
        unsafe { &mut *self.ptr.as_ptr().cast::<T>() }
    }
}

impl<T: ?Sized + Payload, R: Region> Drop for Producer<T, R> {
    /// A producer that leaves cleanly clears its pid: the consumer then
    /// waits for a new one instead of being told its peer died.
    fn drop(&mut self) {
        if !self.origin.is_current() {
            return;
        }
        self.ring
            .region
            .word32(self.ring.control + ctl::PRODUCER_PID)
            .store(0, Ordering::Relaxed);
    }
}

#[cfg(not(loom))]
mod shm {
    use super::*;
    use crate::error::{AttachError, CreateError, OpenError};
    use crate::mem::ShmRegion;
    use crate::options::OpenOptions;
    use crate::segment::{Role, create_region, layout_page, open_checked, take_role};
    use crate::stream::Options;
    use crate::stream::record;
    use crate::wire::{Header, Kind};

    impl<T: ?Sized + Payload> Producer<T, ShmRegion> {
        /// Creates a stream of [`Options::new`] bytes named `name` (a
        /// bare name goes under /dev/shm) and becomes its producer. A
        /// typed stream records `T`'s name and alignment in its header (a
        /// raw one the type `stream`).
        ///
        /// # Errors
        /// As [`crate::Publisher::create`]: [`CreateError::AlreadyExists`],
        /// [`CreateError::InvalidGeometry`] (a capacity that is not a power
        /// of two in 64 B..=4 GiB; for a typed stream, a `T` aligned to more
        /// than 8 bytes, [`GeometryError::RecordAlign`](crate::error::GeometryError::RecordAlign), or larger than the
        /// largest record, [`GeometryError::RecordTooLarge`](crate::error::GeometryError::RecordTooLarge), or a name the
        /// header cannot keep, [`GeometryError::MessageType`](crate::error::GeometryError::MessageType)),
        /// [`CreateError::PermissionDenied`],
        /// [`CreateError::NoSpace`], [`CreateError::NoDirectory`],
        /// [`CreateError::HugePages`], [`CreateError::Mlock`],
        /// [`CreateError::Name`], [`CreateError::File`],
        /// [`CreateError::Io`].
        ///
        /// # Examples
        /// ```
        /// use shmbus::{CreateError, Wait, error::GeometryError, stream::{self, Producer}};
        /// # let name = format!("/dev/shm/shmbus-doc-producer-{}", std::process::id());
        /// let mut producer = Producer::<[u8]>::create(&name, &stream::Options::new(4096))?;
        /// producer.push(b"a record", Wait::Never)?;
        /// # shmbus::remove(&name)?;
        ///
        /// // A 64-byte stream's largest record is 24 bytes: no room for a `[u64; 4]`.
        /// match Producer::<[u64; 4]>::create(&name, &stream::Options::new(64)) {
        ///     Err(CreateError::InvalidGeometry(GeometryError::RecordTooLarge { size, max, .. })) => {
        ///         assert_eq!((size, max), (32, 24))
        ///     }
        ///     other => panic!("expected RecordTooLarge, got {other:?}"),
        /// }
        /// // Records start 8-aligned: a `u128` (aligned to 16) is refused.
        /// let err = Producer::<u128>::create(&name, &stream::Options::new(4096)).err();
        /// assert!(matches!(
        ///     err,
        ///     Some(CreateError::InvalidGeometry(GeometryError::RecordAlign { align: 16, max: 8, .. }))
        /// ));
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn create(name: &str, opts: &Options) -> Result<Self, CreateError> {
            let (page, huge) = layout_page(name, &opts.file)?;
            let mut header = record::header::<T>(opts.bytes, page, opts.message.as_ref())
                .map_err(CreateError::InvalidGeometry)?;
            header.flags |= huge;
            let region = create_region(name, &header, &opts.file, |_| {})?;
            let mut producer = Producer::from_ring(StreamRing::new(region, &header), opts.wait);
            producer.claim_line(&header);
            Ok(producer)
        }

        /// Becomes the producer of an existing stream; carries on after the
        /// last record the previous producer committed. A typed producer
        /// checks the stream's record type; a raw one (`[u8]`) attaches to
        /// a stream of any type.
        ///
        /// # Errors
        /// [`AttachError::Open`] if the stream cannot be opened (or its
        /// `TAIL` is not a multiple of 8: a corrupt file), with
        /// [`OpenError::TypeMismatch`] inside if it carries another type
        /// than a typed producer's (the stream's name hash or alignment
        /// differs, or `T` is larger than its largest record);
        /// [`AttachError::RoleTaken`] if a live process produces into
        /// it.
        ///
        /// # Examples
        /// ```
        /// use shmbus::{OpenOptions, stream::{self, Producer}};
        /// # let name = format!("/dev/shm/shmbus-doc-reattach-{}", std::process::id());
        /// drop(Producer::<[u8]>::create(&name, &stream::Options::new(4096))?);
        /// let producer = Producer::<[u8]>::attach(&name, &OpenOptions::default())?;
        /// # shmbus::remove(&name)?;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn attach(name: &str, opts: &OpenOptions) -> Result<Self, AttachError> {
            let (region, header) = open_checked(name, Role::Publisher, Kind::Stream, None, opts)?;
            record::check::<T>(&header, opts.message.as_ref())?;
            let pid_field = header.control_offset as usize + ctl::PRODUCER_PID;
            take_role(&region, lock_byte::PUBLISHER, pid_field).map_err(|pid| {
                AttachError::RoleTaken {
                    role: crate::error::Role::Producer,
                    pid,
                }
            })?;
            // Every record header lies at a multiple of 8: a TAIL that is
            // not is a corrupt file, and writing there would straddle the
            // ring's end.
            let tail = region
                .word(header.control_offset as usize + ctl::TAIL)
                .load(Ordering::Relaxed);
            if tail % 8 != 0 {
                return Err(AttachError::Open(OpenError::InvalidGeometry(format!(
                    "stream TAIL {tail} is not a multiple of 8"
                ))));
            }
            let mut producer = Producer::from_ring(StreamRing::new(region, &header), opts.wait);
            producer.claim_line(&header);
            Ok(producer)
        }

        /// Takes the producer's line, ours while we hold lock byte 0.
        fn claim_line(&mut self, header: &Header) {
            let at = header.control_offset as usize + ctl::PRODUCER_LINE;
            self.line = SideLine::claim(&self.ring.region, at);
        }
    }
}
