//! [`Consumer`]: the stream's one reader, and [`ReadChunk`], a record read
//! in place; raw (`[u8]`, records of any length) or typed (`T`, every
//! record one `T`).

use super::ring::{Look, Peer, Stop, StreamRing, padded};
use super::side::SideLine;
use super::{PopError, WRAP};
use crate::bus::Payload;
use crate::mem::{DefaultRegion, Region};
use crate::sync::Ordering;
use crate::sys::fork::Origin;
use crate::wait::{self, Wait, WaitStrategy};
use crate::wire::Message;
use crate::wire::{lock_byte, stream_control as ctl};

/// Reads records of payload `T` from a stream. One per stream at a time.
/// Each record is read once, whole, in the order pushed: copied out
/// ([`Consumer::pop`]) or where it lies ([`Consumer::read_with`],
/// [`Consumer::peek`]).
///
/// `T = [u8]`: records as bytes, of any length; opens a stream of any
/// type. `T: Message`: every record is one `T`, returned by value or
/// viewed in place as a `&T`; the stream must carry `T` (else
/// [`crate::OpenError::TypeMismatch`]), and a record of another length
/// is [`PopError::RecordLength`].
///
/// # Examples
/// ```
/// use shmbus::{OpenOptions, Wait, stream::{self, Consumer, Producer}};
/// # let name = format!("/dev/shm/shmbus-doc-consumer-type-{}", std::process::id());
/// let mut producer = Producer::<[u8]>::create(&name, &stream::Options::new(4096))?;
/// let mut consumer = Consumer::<[u8]>::attach(&name, &OpenOptions::default())?;
/// producer.push(b"one", Wait::Never)?;
/// producer.push(b"two", Wait::Never)?;
/// let mut record = Vec::new();
/// consumer.pop(&mut record, Wait::Never)?;
/// assert_eq!(record, b"one");
/// let len = consumer.read_with(Wait::Never, |bytes| bytes.len())?;
/// assert_eq!(len, 3);
/// assert!(consumer.is_empty());
/// # shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Consumer<T: ?Sized + Payload, R: Region = DefaultRegion> {
    pub(crate) ring: StreamRing<R>,
    /// Our HEAD (only we store it): past every record read.
    head: u64,
    /// Records read past HEAD as last stored, their bytes not yet given
    /// back to the producer ([`ReadChunk::take`]).
    held: u64,
    /// The producer's TAIL as last loaded, checked: in [head, head + capacity].
    tail: u64,
    strategy: WaitStrategy,
    /// Our line for `stat` and `top` (none on the heap).
    line: SideLine,
    /// The process that took the role: a forked child's copy leaves the
    /// pid word, the parent's, alone.
    origin: Origin,
    /// The producer that was already dead when we opened: we wait for the
    /// next one instead of reporting it (0: none).
    dead_at_open: u32,
    _payload: std::marker::PhantomData<fn() -> Box<T>>,
}

impl<T: ?Sized + Payload, R: Region> std::fmt::Debug for Consumer<T, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consumer")
            .field("head", &self.head)
            .field("tail", &self.tail)
            .field("wait", &self.strategy)
            .finish_non_exhaustive()
    }
}

impl<T: ?Sized + Payload, R: Region> Consumer<T, R> {
    pub(crate) fn from_ring(ring: StreamRing<R>, strategy: WaitStrategy) -> Self {
        // Relaxed: we are the only writer of HEAD.
        let head = ring.cursor(ctl::HEAD).load(Ordering::Relaxed);
        let tail = ring.cursor(ctl::TAIL).load(Ordering::Acquire);
        // A TAIL out of range is not kept: the cache then says "empty", so
        // the first pop reloads it and reports it.
        let tail = if tail.wrapping_sub(head) <= ring.capacity {
            tail
        } else {
            head
        };
        Consumer {
            ring,
            head,
            held: 0,
            tail,
            strategy,
            line: SideLine::default(),
            origin: Origin::here(),
            dead_at_open: 0,
            _payload: std::marker::PhantomData,
        }
    }

    /// The largest record this stream carries: half the ring less an
    /// 8-byte record header.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, stream::{self, Consumer, Producer}};
    /// # let name = format!("/dev/shm/shmbus-doc-consumer-max-{}", std::process::id());
    /// let producer = Producer::<[u8]>::create(&name, &stream::Options::new(1024))?;
    /// let consumer = Consumer::<[u8]>::attach(&name, &OpenOptions::default())?;
    /// assert_eq!(consumer.max_record(), 504);
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
    /// use shmbus::{OpenOptions, stream::{self, Consumer, Producer}};
    /// # let name = format!("/dev/shm/shmbus-doc-consumer-capacity-{}", std::process::id());
    /// let producer = Producer::<[u8]>::create(&name, &stream::Options::new(1024))?;
    /// let consumer = Consumer::<[u8]>::attach(&name, &OpenOptions::default())?;
    /// assert_eq!(consumer.ring_bytes(), 1024);
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn ring_bytes(&self) -> u64 {
        self.ring.capacity
    }

    /// The chunk of the record `next` found at ring offset `at`, `len`
    /// bytes: what either payload's `peek` returns.
    #[cfg(not(loom))]
    fn chunk(&mut self, at: usize, len: usize) -> ReadChunk<'_, T, R> {
        let ptr = self
            .ring
            .region
            .raw(at, len)
            .expect("plain memory outside loom");
        ReadChunk {
            consumer: self,
            ptr,
            len,
        }
    }

    /// Waits for a record; skips a wrap marker; returns the payload's region
    /// offset and length.
    pub(super) fn next(&mut self, wait: Wait) -> Result<(usize, usize), PopError> {
        let ring = &self.ring;
        let head = self.head;
        let cap = ring.capacity;
        let mut cached = self.tail;
        let mut found = cached;
        let got = ring.wait_for(
            wait,
            self.strategy,
            ctl::DATA_BELL,
            Peer {
                lock: lock_byte::PUBLISHER,
                pid_field: ctl::PRODUCER_PID,
                known_dead: self.dead_at_open,
            },
            &self.line,
            || {
                if cached != head {
                    return Look::Ready;
                }
                // Acquire, paired with the producer's Release store of TAIL.
                found = ring.cursor(ctl::TAIL).load(Ordering::Acquire);
                // We reload only when empty (cached == head), so "never
                // moves back" and "at most `cap` ahead" are one check.
                if found.wrapping_sub(head) > cap {
                    return Look::Corrupt;
                }
                cached = found;
                if cached != head {
                    Look::Ready
                } else {
                    Look::NotYet
                }
            },
        );
        self.tail = cached;
        match got {
            Ok(()) => {}
            Err(Stop::NotNow) => return Err(PopError::Empty),
            Err(Stop::TimedOut(d)) => return Err(PopError::TimedOut(d)),
            Err(Stop::PeerGone(pid)) => return Err(PopError::PeerGone { pid }),
            Err(Stop::Corrupt) => {
                return Err(PopError::CorruptCursors {
                    head,
                    tail: found,
                    capacity: cap,
                });
            }
        }
        // Checked against the ring, not trusted: a corrupt file (or a writer
        // that ignores the protocol) gets `Corrupt`, never an overflow or a
        // read past the ring (found by tests/fuzz_header.rs).
        let cap = self.ring.capacity;
        let to_end = cap - (self.head & (cap - 1));
        let avail = self.tail.wrapping_sub(self.head);
        if self.head % 8 != 0 {
            // Only a corrupt HEAD found at open can be unaligned.
            return Err(PopError::Corrupt {
                at: self.head,
                header: 0,
            });
        }
        let mut header = self.header();
        let mut at = self.head;
        if header == WRAP && avail > to_end && avail <= cap {
            at += to_end;
            header = self.ring.get_header(at);
        }
        let fits = |h: u64| {
            let left = self.tail.wrapping_sub(at);
            h <= self.ring.max
                && left <= cap
                && padded(h) <= left
                && padded(h) <= cap - (at & (cap - 1))
        };
        if !fits(header) {
            return Err(PopError::Corrupt { at, header });
        }
        self.head = at;
        Ok((self.ring.at(self.head) + 8, header as usize))
    }

    #[inline]
    fn header(&self) -> u64 {
        // Made visible by the Acquire load of TAIL in `next`.
        self.ring.get_header(self.head)
    }

    /// Gives a record's bytes back to the producer.
    pub(super) fn release(&mut self, len: usize) {
        self.take(len);
        self.give_back();
    }

    /// Reads past a record without giving its bytes back yet.
    fn take(&mut self, len: usize) {
        self.head += padded(len as u64);
        self.held += 1;
    }

    /// Gives the bytes of every record read so far back to the producer
    /// (those [`ReadChunk::take`] kept): until then they stay in the
    /// stream, and a consumer that dies first leaves them to the next one.
    pub(crate) fn give_back(&mut self) {
        if self.held == 0 {
            return;
        }
        // Release, paired with the producer's Acquire load of HEAD: we are
        // done reading these bytes before it may write them again.
        self.ring
            .cursor(ctl::HEAD)
            .store(self.head, Ordering::Release);
        wait::ring(self.ring.bell(ctl::SPACE_BELL), self.ring.light);
        for _ in 0..self.held {
            self.line.moved(&self.ring.region);
        }
        self.held = 0;
    }

    /// Bytes of the ring read but not given back ([`give_back`](Self::give_back)).
    pub(crate) fn held_bytes(&self) -> u64 {
        // Relaxed: we are the only writer of HEAD.
        self.head
            .wrapping_sub(self.ring.cursor(ctl::HEAD).load(Ordering::Relaxed))
    }

    /// Bytes of the ring in use: records written and not yet released,
    /// each with its 8-byte header and padding to 8 bytes (what `stat`
    /// calls the fill).
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, Wait, stream::{self, Consumer, Producer}};
    /// # let name = format!("/dev/shm/shmbus-doc-consumer-len-{}", std::process::id());
    /// let mut producer = Producer::<[u8]>::create(&name, &stream::Options::new(4096))?;
    /// let mut consumer = Consumer::<[u8]>::attach(&name, &OpenOptions::default())?;
    /// producer.push(b"abc", Wait::Never)?;
    /// producer.push(b"abcdefghi", Wait::Never)?;
    /// assert_eq!(consumer.len(), 16 + 24);
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn len(&self) -> u64 {
        self.ring
            .cursor(ctl::TAIL)
            .load(Ordering::Acquire)
            .wrapping_sub(self.head)
    }

    /// Whether nothing is waiting to be read.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, Wait, stream::{self, Consumer, Producer}};
    /// # let name = format!("/dev/shm/shmbus-doc-consumer-empty-{}", std::process::id());
    /// let mut producer = Producer::<[u8]>::create(&name, &stream::Options::new(4096))?;
    /// let consumer = Consumer::<[u8]>::attach(&name, &OpenOptions::default())?;
    /// assert!(consumer.is_empty());
    /// producer.push(b"x", Wait::Never)?;
    /// assert!(!consumer.is_empty());
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// For a select: whether a pop would not wait. A record (or a corrupt
    /// `TAIL`, which the pop reports) is there, or the producer is gone
    /// (its pop reports that; one dead when we opened does not count).
    pub(crate) fn has_news(&self) -> bool {
        !self.is_empty()
            || self
                .ring
                .peer_gone(lock_byte::PUBLISHER, ctl::PRODUCER_PID)
                .is_some_and(|pid| pid != self.dead_at_open)
    }

    /// The producer's pid if it died after this consumer opened (its lock
    /// is free): an async pop's end, as the waiting pop's peer check. A
    /// loop that pops with `Wait::Never` and waits on its own (an event
    /// loop's, through [`aio::arm`](crate::aio::arm)) ends with
    /// [`PopError::PeerGone`] when this says so and one last pop finds
    /// the ring empty.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, stream::{self, Consumer, Producer}};
    /// # let name = format!("/dev/shm/shmbus-doc-gone-{}", std::process::id());
    /// let producer = Producer::<[u8]>::create(&name, &stream::Options::new(4096))?;
    /// let consumer = Consumer::<[u8]>::attach(&name, &OpenOptions::default())?;
    /// assert_eq!(consumer.producer_gone(), None);
    /// # drop(producer);
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn producer_gone(&self) -> Option<u32> {
        self.ring
            .peer_gone(lock_byte::PUBLISHER, ctl::PRODUCER_PID)
            .filter(|&pid| pid != self.dead_at_open)
    }

    /// The bell the producer rings after each push.
    pub(crate) fn data_bell(&self) -> &crate::sync::AtomicU32 {
        self.ring.bell(ctl::DATA_BELL)
    }
}

impl<R: Region> Consumer<[u8], R> {
    /// Pops the next record into `out` (replacing its contents), waiting
    /// for one as `wait` says.
    ///
    /// # Errors
    /// [`PopError::Empty`] if there is no record and `wait` is
    /// [`Wait::Never`]; [`PopError::TimedOut`] if none came before `wait`
    /// ran out; [`PopError::PeerGone`] if the producer died and the ring is
    /// empty (not one already dead when this consumer opened: a new one is
    /// waited for); [`PopError::CorruptCursors`] if the producer's `TAIL`
    /// in the file cannot be right; [`PopError::Corrupt`] for a record
    /// header that cannot be. Nothing is consumed on any of them.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use shmbus::{OpenOptions, Wait, stream::{self, Consumer, Producer}};
    /// # let name = format!("/dev/shm/shmbus-doc-pop-{}", std::process::id());
    /// let mut producer = Producer::<[u8]>::create(&name, &stream::Options::new(4096))?;
    /// let mut consumer = Consumer::<[u8]>::attach(&name, &OpenOptions::default())?;
    /// producer.push(b"record", Wait::Never)?;
    /// let mut out = b"old contents".to_vec();
    /// consumer.pop(&mut out, Wait::For(Duration::from_secs(1)))?;
    /// assert_eq!(out, b"record");
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pop(&mut self, out: &mut Vec<u8>, wait: Wait) -> Result<(), PopError> {
        let (at, len) = self.next(wait)?;
        // Zeroes only bytes `out` did not hold yet (a reused buffer: none):
        // the copy below overwrites all `len` of them anyway.
        out.truncate(len);
        out.resize(len, 0);
        // SAFETY: the record lies in [HEAD, TAIL), ours until we store HEAD;
        // the producer's Release store of TAIL made it visible.
        unsafe { self.ring.region.copy_out(at, out) };
        self.release(len);
        Ok(())
    }

    /// Hands the next record to `f` where it lies, then releases it; returns
    /// what `f` returned.
    ///
    /// # Errors
    /// [`PopError::Empty`] if there is no record and `wait` is
    /// [`Wait::Never`]; [`PopError::TimedOut`] if none came before `wait`
    /// ran out; [`PopError::PeerGone`] if the producer died and the ring is
    /// empty (not one already dead when this consumer opened: a new one is
    /// waited for); [`PopError::CorruptCursors`] if the producer's `TAIL`
    /// in the file cannot be right; [`PopError::Corrupt`] for a record
    /// header that cannot be. `f` is not called on any of them.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, Wait, stream::{self, Consumer, Producer}};
    /// # let name = format!("/dev/shm/shmbus-doc-readwith-{}", std::process::id());
    /// let mut producer = Producer::<[u8]>::create(&name, &stream::Options::new(4096))?;
    /// let mut consumer = Consumer::<[u8]>::attach(&name, &OpenOptions::default())?;
    /// producer.push(b"12345", Wait::Never)?;
    /// let sum = consumer.read_with(Wait::Never, |bytes| {
    ///     bytes.iter().map(|b| u32::from(b - b'0')).sum::<u32>()
    /// })?;
    /// assert_eq!(sum, 15);
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(not(loom))]
    pub fn read_with<U>(&mut self, wait: Wait, f: impl FnOnce(&[u8]) -> U) -> Result<U, PopError> {
        let chunk = self.peek(wait)?;
        let out = f(&chunk);
        chunk.release();
        Ok(out)
    }

    /// The next record where it lies, without releasing it: dropping the
    /// chunk leaves it for the next read, [`ReadChunk::release`] consumes it.
    ///
    /// # Errors
    /// [`PopError::Empty`] if there is no record and `wait` is
    /// [`Wait::Never`]; [`PopError::TimedOut`] if none came before `wait`
    /// ran out; [`PopError::PeerGone`] if the producer died and the ring is
    /// empty (not one already dead when this consumer opened: a new one is
    /// waited for); [`PopError::CorruptCursors`] if the producer's `TAIL`
    /// in the file cannot be right; [`PopError::Corrupt`] for a record
    /// header that cannot be. Nothing is consumed on any of them.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, Wait, stream::{self, Consumer, Producer}};
    /// # let name = format!("/dev/shm/shmbus-doc-peek-{}", std::process::id());
    /// let mut producer = Producer::<[u8]>::create(&name, &stream::Options::new(4096))?;
    /// let mut consumer = Consumer::<[u8]>::attach(&name, &OpenOptions::default())?;
    /// producer.push(b"first", Wait::Never)?;
    /// assert_eq!(&consumer.peek(Wait::Never)?[..], b"first"); // dropped: still there
    /// let chunk = consumer.peek(Wait::Never)?;
    /// assert_eq!(&chunk[..], b"first");
    /// chunk.release(); // now consumed
    /// assert!(consumer.is_empty());
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(not(loom))]
    pub fn peek(&mut self, wait: Wait) -> Result<ReadChunk<'_, [u8], R>, PopError> {
        let (at, len) = self.next(wait)?;
        Ok(self.chunk(at, len))
    }
}

impl<T: Message, R: Region> Consumer<T, R> {
    /// Pops the next record, one `T`, waiting for one as `wait` says.
    ///
    /// # Errors
    /// As the raw `pop`: [`PopError::Empty`], [`PopError::TimedOut`],
    /// [`PopError::PeerGone`], [`PopError::CorruptCursors`],
    /// [`PopError::Corrupt`]; and [`PopError::RecordLength`] for a record
    /// that is not `size_of::<T>()` bytes (a raw producer wrote it).
    /// Nothing is consumed on any of them: the record that is not a `T`
    /// stays the next one (see [`PopError::RecordLength`]).
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, Wait, stream::{self, Consumer, PopError, Producer}};
    /// # let name = format!("/dev/shm/shmbus-doc-pop-typed-{}", std::process::id());
    /// let mut producer = Producer::<u32>::create(&name, &stream::Options::new(4096))?;
    /// let mut consumer = Consumer::<u32>::attach(&name, &OpenOptions::default())?;
    /// producer.push(&42, Wait::Never)?;
    /// assert_eq!(consumer.pop(Wait::Never), Ok(42));
    /// assert_eq!(consumer.pop(Wait::Never), Err(PopError::Empty));
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pop(&mut self, wait: Wait) -> Result<T, PopError> {
        let at = self.next_one(wait)?;
        let mut msg = T::zeroed();
        // SAFETY: as in the raw `pop`: the record lies in [HEAD, TAIL),
        // ours until we store HEAD; `next_one` checked it is one `T` long.
        unsafe {
            self.ring
                .region
                .copy_out(at, bytemuck::bytes_of_mut(&mut msg))
        };
        self.release(size_of::<T>());
        Ok(msg)
    }

    /// Hands the next record, a `&T` where it lies, to `f`, then releases
    /// it; returns what `f` returned.
    ///
    /// # Errors
    /// As the typed [`Consumer::pop`]; `f` is not called on any of them.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, Wait, stream::{self, Consumer, Producer}};
    /// # let name = format!("/dev/shm/shmbus-doc-readwith-typed-{}", std::process::id());
    /// let mut producer = Producer::<[u16; 3]>::create(&name, &stream::Options::new(4096))?;
    /// let mut consumer = Consumer::<[u16; 3]>::attach(&name, &OpenOptions::default())?;
    /// producer.push(&[1, 2, 3], Wait::Never)?;
    /// assert_eq!(consumer.read_with(Wait::Never, |r| r.iter().sum::<u16>())?, 6);
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(not(loom))]
    pub fn read_with<U>(&mut self, wait: Wait, f: impl FnOnce(&T) -> U) -> Result<U, PopError> {
        let chunk = self.peek(wait)?;
        let out = f(&chunk);
        chunk.release();
        Ok(out)
    }

    /// The next record, a `T` where it lies, without releasing it:
    /// dropping the chunk leaves it for the next read,
    /// [`ReadChunk::release`] consumes it.
    ///
    /// # Errors
    /// As the typed [`Consumer::pop`]. Nothing is consumed on any of them.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, Wait, stream::{self, Consumer, Producer}};
    /// # let name = format!("/dev/shm/shmbus-doc-peek-typed-{}", std::process::id());
    /// let mut producer = Producer::<u64>::create(&name, &stream::Options::new(4096))?;
    /// let mut consumer = Consumer::<u64>::attach(&name, &OpenOptions::default())?;
    /// producer.push(&5, Wait::Never)?;
    /// let chunk = consumer.peek(Wait::Never)?;
    /// assert_eq!(*chunk, 5); // a `&u64` into the ring
    /// chunk.release();
    /// assert!(consumer.is_empty());
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(not(loom))]
    pub fn peek(&mut self, wait: Wait) -> Result<ReadChunk<'_, T, R>, PopError> {
        let at = self.next_one(wait)?;
        Ok(self.chunk(at, size_of::<T>()))
    }

    /// [`Consumer::next`], for one `T`: a record of another length is an
    /// error, and stays where it is.
    pub(super) fn next_one(&mut self, wait: Wait) -> Result<usize, PopError> {
        let (at, len) = self.next(wait)?;
        if len != size_of::<T>() {
            return Err(PopError::RecordLength {
                at: self.head,
                len,
                expected: size_of::<T>(),
                type_name: T::NAME,
            });
        }
        Ok(at)
    }
}

/// One record where it lies; see [`Consumer::peek`]. It derefs to the
/// record: its bytes (`&[u8]`) on a raw stream, a `&T` on a typed one.
/// [`ReadChunk::release`] consumes the record, and dropping the chunk
/// leaves it for the next read.
///
/// # Examples
/// ```
/// use shmbus::{OpenOptions, Wait, stream::{self, Consumer, Producer}};
/// # let name = format!("/dev/shm/shmbus-doc-readchunk-{}", std::process::id());
/// let mut producer = Producer::<[u8]>::create(&name, &stream::Options::new(4096))?;
/// let mut consumer = Consumer::<[u8]>::attach(&name, &OpenOptions::default())?;
/// producer.push(b"in place", Wait::Never)?;
/// let chunk = consumer.peek(Wait::Never)?;
/// assert_eq!(chunk.len(), 8);
/// assert!(chunk.starts_with(b"in"));
/// chunk.release();
/// # shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[cfg(not(loom))]
pub struct ReadChunk<'a, T: ?Sized + Payload, R: Region> {
    consumer: &'a mut Consumer<T, R>,
    ptr: std::ptr::NonNull<u8>,
    len: usize,
}

#[cfg(not(loom))]
impl<T: ?Sized + Payload, R: Region> std::fmt::Debug for ReadChunk<'_, T, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadChunk")
            .field("at", &self.consumer.head)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

#[cfg(not(loom))]
impl<T: ?Sized + Payload, R: Region> ReadChunk<'_, T, R> {
    /// Consumes the record: its bytes go back to the producer.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, Wait, stream::{self, Consumer, Producer}};
    /// # let name = format!("/dev/shm/shmbus-doc-release-{}", std::process::id());
    /// let mut producer = Producer::<[u8]>::create(&name, &stream::Options::new(4096))?;
    /// let mut consumer = Consumer::<[u8]>::attach(&name, &OpenOptions::default())?;
    /// producer.push(b"x", Wait::Never)?;
    /// consumer.peek(Wait::Never)?.release();
    /// assert!(producer.is_empty()); // the producer has the room back
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn release(self) {
        self.consumer.release(self.len);
    }

    /// Consumes the record but keeps its bytes from the producer until
    /// [`Consumer::give_back`]: a recorder gives them back once they are
    /// in its file, so a record it had not written when it died is read
    /// again by the next consumer.
    pub(crate) fn take(self) {
        self.consumer.take(self.len);
    }
}

#[cfg(not(loom))]
impl<R: Region> std::ops::Deref for ReadChunk<'_, [u8], R> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: the record lies in [HEAD, TAIL), which the producer does
        // not touch until we store HEAD past it, and the chunk borrows the
        // consumer, so that cannot happen while this slice lives.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

#[cfg(not(loom))]
impl<T: Message, R: Region> std::ops::Deref for ReadChunk<'_, T, R> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: as for the raw chunk, the record's bytes stay put while
        // the chunk lives; `next_one` checked they are `size_of::<T>()`
        // long; they start 8 bytes past a multiple of 8 from the
        // page-aligned ring, and `T` is aligned to at most 8 (`record`:
        // checked at attach); any bytes are a `T` (`Pod`).
        unsafe { &*self.ptr.as_ptr().cast::<T>() }
    }
}

impl<T: ?Sized + Payload, R: Region> Drop for Consumer<T, R> {
    /// See `Producer`'s drop.
    fn drop(&mut self) {
        if !self.origin.is_current() {
            return;
        }
        self.ring
            .region
            .word32(self.ring.control + ctl::CONSUMER_PID)
            .store(0, Ordering::Relaxed);
    }
}

#[cfg(not(loom))]
mod shm {
    use super::*;
    use crate::error::AttachError;
    use crate::mem::ShmRegion;
    use crate::options::OpenOptions;
    use crate::segment::{Role, open_checked, take_role};
    use crate::stream::record;
    use crate::wire::Kind;

    impl<T: ?Sized + Payload> Consumer<T, ShmRegion> {
        /// Becomes the consumer of a stream; carries on after the last
        /// record the previous consumer released. A typed consumer checks
        /// the stream's record type; a raw one (`[u8]`) opens a stream of
        /// any type and reads its records as bytes.
        ///
        /// # Errors
        /// [`AttachError::Open`] if the stream cannot be opened, with
        /// [`OpenError::TypeMismatch`](crate::OpenError::TypeMismatch)
        /// inside if it carries another type than a typed consumer's (the
        /// stream's name hash or alignment differs, or `T` is larger than
        /// its largest record); [`AttachError::RoleTaken`] if a live
        /// process consumes it.
        ///
        /// # Examples
        /// ```
        /// use shmbus::{OpenOptions, Wait, stream::{self, Consumer, Producer}};
        /// # let name = format!("/dev/shm/shmbus-doc-consumer-{}", std::process::id());
        /// let mut producer = Producer::<[u8]>::create(&name, &stream::Options::new(4096))?;
        /// let mut consumer = Consumer::<[u8]>::attach(&name, &OpenOptions::default())?;
        /// producer.push(b"x", Wait::Never)?;
        /// let mut out = Vec::new();
        /// consumer.pop(&mut out, Wait::Never)?;
        /// assert_eq!(out, b"x");
        /// # shmbus::remove(&name)?;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        ///
        /// A typed consumer of another type is refused:
        /// ```
        /// use shmbus::{AttachError, OpenError, OpenOptions, stream::{self, Consumer, Producer}};
        /// # let name = format!("/dev/shm/shmbus-doc-consumer-mismatch-{}", std::process::id());
        /// let producer = Producer::<u64>::create(&name, &stream::Options::new(4096))?;
        /// let err = Consumer::<u32>::attach(&name, &OpenOptions::default()).err();
        /// assert!(matches!(err, Some(AttachError::Open(OpenError::TypeMismatch { .. }))));
        /// // A raw consumer reads a stream of any type, as bytes.
        /// let raw = Consumer::<[u8]>::attach(&name, &OpenOptions::default())?;
        /// # shmbus::remove(&name)?;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn attach(name: &str, opts: &OpenOptions) -> Result<Self, AttachError> {
            let (region, header) = open_checked(name, Role::Subscriber, Kind::Stream, None, opts)?;
            record::check::<T>(&header, opts.message.as_ref())?;
            let pid_field = header.control_offset as usize + ctl::CONSUMER_PID;
            take_role(&region, lock_byte::CONSUMER, pid_field).map_err(|pid| {
                AttachError::RoleTaken {
                    role: crate::error::Role::Consumer,
                    pid,
                }
            })?;
            let ring = StreamRing::new(region, &header);
            // A producer dead before we came is no reason to stop waiting:
            // a new one may come (a crashed pipeline restarts in any order).
            let dead_at_open = ring
                .peer_gone(lock_byte::PUBLISHER, ctl::PRODUCER_PID)
                .unwrap_or(0);
            let mut consumer = Consumer::from_ring(ring, opts.wait);
            consumer.dead_at_open = dead_at_open;
            // Ours while we hold lock byte 2.
            let at = header.control_offset as usize + ctl::CONSUMER_LINE;
            consumer.line = SideLine::claim(&consumer.ring.region, at);
            Ok(consumer)
        }
    }
}
