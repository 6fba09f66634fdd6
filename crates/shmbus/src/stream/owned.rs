//! [`OwnedReadChunk`]: a record read in place that owns its consumer,
//! made by [`Consumer::into_chunk`], and [`IntoChunkError`], which gives
//! the consumer back when no record could be read.
//!
//! A [`ReadChunk`](super::ReadChunk) borrows its consumer mutably, so a
//! holder that cannot keep a borrow (a binding's handle, which C calls
//! once to peek and again to release) would have to keep the consumer and
//! a chunk of it side by side, self-referentially. An owned chunk holds
//! both, as [`OwnedLoan`](crate::pool::OwnedLoan) holds its publisher: the
//! record's logic is the consumer's, the same as `ReadChunk`'s; only who
//! holds the consumer differs.

use std::ptr::NonNull;

use super::PopError;
use super::consumer::Consumer;
use crate::bus::Payload;
use crate::mem::{DefaultRegion, Region};
use crate::wait::Wait;
use crate::wire::Message;

impl<T: ?Sized + Payload, R: Region> Consumer<T, R> {
    /// The chunk of the record `found` (its offset and length) names, or
    /// the consumer back with the error.
    #[allow(clippy::result_large_err)] // as `into_chunk`'s
    fn chunk_of(
        self,
        found: Result<(usize, usize), PopError>,
    ) -> Result<OwnedReadChunk<T, R>, IntoChunkError<T, R>> {
        let (at, len) = match found {
            Ok(found) => found,
            Err(error) => {
                return Err(IntoChunkError {
                    consumer: self,
                    error,
                });
            }
        };
        let ptr = self
            .ring
            .region
            .raw(at, len)
            .expect("plain memory outside loom");
        Ok(OwnedReadChunk {
            consumer: self,
            ptr,
            len,
        })
    }
}

impl<R: Region> Consumer<[u8], R> {
    /// Waits for the next record as [`Consumer::peek`] does, into a chunk
    /// that owns this consumer until the record is released
    /// ([`OwnedReadChunk::release`]) or left for the next read
    /// ([`OwnedReadChunk::into_consumer`]), for a holder that cannot keep
    /// a borrow: a binding, a chunk moved to another thread.
    ///
    /// # Errors
    /// As [`Consumer::peek`], inside an [`IntoChunkError`] that gives the
    /// consumer back.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, Wait, stream::{self, Consumer, Producer}};
    /// # let name = format!("/dev/shm/shmbus-doc-intochunk-{}", std::process::id());
    /// let mut producer = Producer::<[u8]>::create(&name, &stream::Options::new(4096))?;
    /// let consumer = Consumer::<[u8]>::attach(&name, &OpenOptions::default())?;
    /// producer.push(b"record", Wait::Never)?;
    /// let chunk = consumer.into_chunk(Wait::Never)?;
    /// assert_eq!(&chunk[..], b"record");
    /// let consumer = chunk.release(); // consumed: the consumer comes back
    /// assert!(consumer.is_empty());
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    // The `Ok` side holds the same consumer, so boxing the error would not
    // shrink the `Result`; it would only allocate on every empty try.
    #[allow(clippy::result_large_err)]
    pub fn into_chunk(
        mut self,
        wait: Wait,
    ) -> Result<OwnedReadChunk<[u8], R>, IntoChunkError<[u8], R>> {
        let found = self.next(wait);
        self.chunk_of(found)
    }
}

impl<T: Message, R: Region> Consumer<T, R> {
    /// [`Consumer::into_chunk`] for one `T`: a chunk that derefs to the
    /// `T` in the ring.
    ///
    /// # Errors
    /// As [`Consumer::peek`] (a record of another length is
    /// [`PopError::RecordLength`] and stays next), inside an
    /// [`IntoChunkError`] that gives the consumer back.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, Wait, stream::{self, Consumer, Producer}};
    /// # let name = format!("/dev/shm/shmbus-doc-intochunk-typed-{}", std::process::id());
    /// let mut producer = Producer::<u64>::create(&name, &stream::Options::new(4096))?;
    /// let consumer = Consumer::<u64>::attach(&name, &OpenOptions::default())?;
    /// producer.push(&7, Wait::Never)?;
    /// let chunk = consumer.into_chunk(Wait::Never)?;
    /// assert_eq!(*chunk, 7);
    /// let consumer = chunk.release();
    /// assert!(consumer.is_empty());
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    // The `Ok` side holds the same consumer, so boxing the error would not
    // shrink the `Result`; it would only allocate on every empty try.
    #[allow(clippy::result_large_err)]
    pub fn into_chunk(mut self, wait: Wait) -> Result<OwnedReadChunk<T, R>, IntoChunkError<T, R>> {
        let found = self.next_one(wait).map(|at| (at, size_of::<T>()));
        self.chunk_of(found)
    }
}

/// One record where it lies, holding the consumer it was read by: its
/// bytes (a `[u8]` through `Deref`), consumed by
/// [`OwnedReadChunk::release`] or left first in the stream by
/// [`OwnedReadChunk::into_consumer`], each of which returns the consumer.
/// Dropped, it leaves the record (as a dropped
/// [`ReadChunk`](super::ReadChunk) does) and drops the consumer.
///
/// # Examples
/// ```
/// use shmbus::{OpenOptions, Wait, stream::{self, Consumer, Producer}};
/// # let name = format!("/dev/shm/shmbus-doc-ownedchunk-{}", std::process::id());
/// let mut producer = Producer::<[u8]>::create(&name, &stream::Options::new(4096))?;
/// let consumer = Consumer::<[u8]>::attach(&name, &OpenOptions::default())?;
/// producer.push(b"in place", Wait::Never)?;
/// let chunk = consumer.into_chunk(Wait::Never)?;
/// // The chunk may go to another thread to be read.
/// let chunk = std::thread::spawn(move || {
///     assert!(chunk.starts_with(b"in"));
///     chunk
/// })
/// .join()
/// .expect("the reader");
/// let consumer = chunk.release();
/// assert!(producer.is_empty()); // the producer has the room back
/// # drop(consumer); shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct OwnedReadChunk<T: ?Sized + Payload, R: Region = DefaultRegion> {
    /// The consumer that read the record: it keeps the mapping of `ptr`'s
    /// bytes alive, and, not storing `HEAD` until `release`, keeps the
    /// producer off them.
    consumer: Consumer<T, R>,
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: an `OwnedReadChunk` is its consumer plus a pointer to a record in
// `[HEAD, TAIL)` of that consumer's ring. The producer does not write those
// bytes until the consumer stores `HEAD` past them, which only `release`
// does (consuming the chunk); they lie in the mapping the owned consumer
// keeps alive wherever the chunk goes, and no other handle of this process
// reaches them, so moving the chunk to another thread moves all access.
unsafe impl<T: ?Sized + Payload, R: Region> Send for OwnedReadChunk<T, R> where Consumer<T, R>: Send {}
// SAFETY: as for `Send`; `&OwnedReadChunk` only reads the bytes (`Deref`),
// and shared reads of bytes nobody writes are as sound as a `&[u8]`'s.
unsafe impl<T: ?Sized + Payload, R: Region> Sync for OwnedReadChunk<T, R> where Consumer<T, R>: Sync {}

impl<T: ?Sized + Payload, R: Region> OwnedReadChunk<T, R> {
    /// Consumes the record (its bytes go back to the producer) and returns
    /// the consumer, ready for the next read.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, Wait, stream::{self, Consumer, Producer}};
    /// # let name = format!("/dev/shm/shmbus-doc-ownedrelease-{}", std::process::id());
    /// let mut producer = Producer::<[u8]>::create(&name, &stream::Options::new(4096))?;
    /// let consumer = Consumer::<[u8]>::attach(&name, &OpenOptions::default())?;
    /// producer.push(b"one", Wait::Never)?;
    /// producer.push(b"two", Wait::Never)?;
    /// let consumer = consumer.into_chunk(Wait::Never)?.release();
    /// let chunk = consumer.into_chunk(Wait::Never)?;
    /// assert_eq!(&chunk[..], b"two");
    /// # drop(chunk); shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn release(self) -> Consumer<T, R> {
        let OwnedReadChunk {
            mut consumer, len, ..
        } = self;
        consumer.release(len);
        consumer
    }

    /// Returns the consumer without consuming the record: the next read
    /// gets it again.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, Wait, stream::{self, Consumer, Producer}};
    /// # let name = format!("/dev/shm/shmbus-doc-ownedleave-{}", std::process::id());
    /// let mut producer = Producer::<[u8]>::create(&name, &stream::Options::new(4096))?;
    /// let consumer = Consumer::<[u8]>::attach(&name, &OpenOptions::default())?;
    /// producer.push(b"again", Wait::Never)?;
    /// let consumer = consumer.into_chunk(Wait::Never)?.into_consumer();
    /// assert_eq!(&consumer.into_chunk(Wait::Never)?[..], b"again");
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn into_consumer(self) -> Consumer<T, R> {
        self.consumer
    }

    /// The consumer that holds the record (for its figures: `max_record`,
    /// `len`, ...).
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, Wait, stream::{self, Consumer, Producer}};
    /// # let name = format!("/dev/shm/shmbus-doc-ownedconsumer-{}", std::process::id());
    /// let mut producer = Producer::<[u8]>::create(&name, &stream::Options::new(1024))?;
    /// let consumer = Consumer::<[u8]>::attach(&name, &OpenOptions::default())?;
    /// producer.push(b"x", Wait::Never)?;
    /// let chunk = consumer.into_chunk(Wait::Never)?;
    /// assert_eq!(chunk.consumer().max_record(), 504);
    /// assert_eq!(chunk.consumer().len(), 16); // not released yet
    /// # drop(chunk); shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn consumer(&self) -> &Consumer<T, R> {
        &self.consumer
    }
}

impl<R: Region> std::ops::Deref for OwnedReadChunk<[u8], R> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: the record lies in [HEAD, TAIL) of the ring the owned
        // consumer maps, which the producer does not touch until HEAD is
        // stored past it; only `release` stores it, and it consumes the
        // chunk, so that cannot happen while this slice lives.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Message, R: Region> std::ops::Deref for OwnedReadChunk<T, R> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the bytes stay put as for the raw chunk; `next_one`
        // checked they are `size_of::<T>()` long; they start 8 bytes past
        // a multiple of 8 from the page-aligned ring, and `T` is aligned to
        // at most 8 (checked at attach); any bytes are a `T` (`Pod`).
        unsafe { &*self.ptr.as_ptr().cast::<T>() }
    }
}

impl<T: ?Sized + Payload, R: Region> std::fmt::Debug for OwnedReadChunk<T, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnedReadChunk")
            .field("len", &self.len)
            .field("consumer", &self.consumer)
            .finish()
    }
}

/// Why [`Consumer::into_chunk`] read no record, with the consumer it was
/// given, so that a failed read never loses it (as
/// [`IntoLoanError`](crate::pool::IntoLoanError) gives back its publisher).
///
/// # Examples
/// ```
/// use shmbus::{OpenOptions, Wait, stream::{self, Consumer, PopError, Producer}};
/// # let name = format!("/dev/shm/shmbus-doc-intochunkerror-{}", std::process::id());
/// let mut producer = Producer::<[u8]>::create(&name, &stream::Options::new(4096))?;
/// let consumer = Consumer::<[u8]>::attach(&name, &OpenOptions::default())?;
/// let failed = consumer.into_chunk(Wait::Never).unwrap_err();
/// assert_eq!(failed.error(), &PopError::Empty);
/// let (consumer, _error) = failed.into_parts();
/// producer.push(b"now", Wait::Never)?;
/// assert!(consumer.into_chunk(Wait::Never).is_ok());
/// # shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct IntoChunkError<T: ?Sized + Payload, R: Region = DefaultRegion> {
    consumer: Consumer<T, R>,
    error: PopError,
}

impl<T: ?Sized + Payload, R: Region> IntoChunkError<T, R> {
    /// Why no record was read.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, Wait, stream::{self, Consumer, PopError, Producer}};
    /// # let name = format!("/dev/shm/shmbus-doc-intochunkerr-error-{}", std::process::id());
    /// let producer = Producer::<[u8]>::create(&name, &stream::Options::new(4096))?;
    /// let consumer = Consumer::<[u8]>::attach(&name, &OpenOptions::default())?;
    /// let failed = consumer.into_chunk(Wait::Never).unwrap_err();
    /// assert!(matches!(failed.error(), PopError::Empty));
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn error(&self) -> &PopError {
        &self.error
    }

    /// The consumer, given back, and the error.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, Wait, stream::{self, Consumer, Producer}};
    /// # let name = format!("/dev/shm/shmbus-doc-intochunkerr-parts-{}", std::process::id());
    /// let producer = Producer::<[u8]>::create(&name, &stream::Options::new(1024))?;
    /// let consumer = Consumer::<[u8]>::attach(&name, &OpenOptions::default())?;
    /// let (consumer, error) = consumer.into_chunk(Wait::Never).unwrap_err().into_parts();
    /// assert_eq!(consumer.max_record(), 504);
    /// assert_eq!(error.to_string(), "stream is empty");
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn into_parts(self) -> (Consumer<T, R>, PopError) {
        (self.consumer, self.error)
    }

    /// The consumer, given back (the error dropped).
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, Wait, stream::{self, Consumer, Producer}};
    /// # let name = format!("/dev/shm/shmbus-doc-intochunkerr-consumer-{}", std::process::id());
    /// let producer = Producer::<[u8]>::create(&name, &stream::Options::new(1024))?;
    /// let consumer = Consumer::<[u8]>::attach(&name, &OpenOptions::default())?;
    /// let consumer = match consumer.into_chunk(Wait::Never) {
    ///     Ok(chunk) => chunk.release(),
    ///     Err(failed) => failed.into_consumer(),
    /// };
    /// assert!(consumer.is_empty());
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn into_consumer(self) -> Consumer<T, R> {
        self.consumer
    }
}

impl<T: ?Sized + Payload, R: Region> std::fmt::Debug for IntoChunkError<T, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IntoChunkError")
            .field("error", &self.error)
            .field("consumer", &self.consumer)
            .finish()
    }
}

impl<T: ?Sized + Payload, R: Region> std::fmt::Display for IntoChunkError<T, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "no record read (the consumer is given back): {}",
            self.error
        )
    }
}

impl<T: ?Sized + Payload, R: Region> std::error::Error for IntoChunkError<T, R> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::{HeapStream, PopError, on_heap};
    use crate::wait::{Wait, WaitStrategy};

    fn pair(capacity: u64) -> HeapStream {
        on_heap(capacity, WaitStrategy::default()).expect("valid geometry")
    }

    #[test]
    fn owned_chunks_read_every_record_in_place_once_in_order_while_a_thread_pushes_across_wraps() {
        // Over twenty laps of the 256-byte ring, with wrap markers.
        let n: u32 = if cfg!(miri) { 100 } else { 3_000 };
        let (mut p, mut c) = pair(256);
        let writer = std::thread::spawn(move || {
            for i in 0..n {
                let rec = vec![i as u8; (i % 61) as usize];
                p.push(&rec, Wait::Forever).expect("pushed");
            }
            p
        });
        for i in 0..n {
            let chunk = match c.into_chunk(Wait::For(Duration::from_secs(30))) {
                Ok(chunk) => chunk,
                Err(failed) => panic!("record {i}: {failed}"),
            };
            assert_eq!(chunk.len(), (i % 61) as usize, "record {i}");
            assert!(chunk.iter().all(|&b| b == i as u8), "record {i} damaged");
            c = chunk.release();
        }
        let _producer = writer.join().expect("writer");
        assert!(c.is_empty());
    }

    #[test]
    fn a_chunk_given_back_unreleased_is_read_again_and_a_failed_read_gives_the_consumer_back() {
        let (mut p, c) = pair(256);
        let failed = c.into_chunk(Wait::Never).expect_err("nothing pushed yet");
        assert_eq!(failed.error(), &PopError::Empty);
        let c = failed.into_consumer();
        p.push(b"first", Wait::Never).expect("room");
        p.push(b"second", Wait::Never).expect("room");
        let c = c.into_chunk(Wait::Never).expect("first").into_consumer();
        let chunk = c.into_chunk(Wait::Never).expect("first again");
        assert_eq!(&chunk[..], b"first");
        // The producer has not got the room back until the release.
        assert_eq!(chunk.consumer().len(), 16 + 16);
        let c = chunk.release();
        assert_eq!(c.len(), 16);
        let chunk = c.into_chunk(Wait::Never).expect("second");
        assert_eq!(&chunk[..], b"second");
        let (_c, error) = chunk
            .release()
            .into_chunk(Wait::For(Duration::from_millis(5)))
            .expect_err("nothing left")
            .into_parts();
        assert_eq!(error, PopError::TimedOut(Duration::from_millis(5)));
    }

    #[test]
    fn a_typed_owned_chunk_is_the_record_s_t_in_place_and_its_release_frees_the_room() {
        let (mut p, c) = on_heap::<[u32; 3]>(256, WaitStrategy::default()).expect("geometry");
        let mut c = c;
        for i in 0..50u32 {
            p.push(&[i, i + 1, i + 2], Wait::Never).expect("room");
            let chunk = c.into_chunk(Wait::Never).expect("the record");
            assert_eq!(*chunk, [i, i + 1, i + 2]);
            c = chunk.release();
            assert!(c.is_empty(), "record {i} released");
        }
    }
}
