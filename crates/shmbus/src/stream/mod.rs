//! The stream: a lossless single-producer single-consumer ring of
//! variable-length records, with backpressure. Like the bus, each handle
//! is generic over its payload: `Producer<[u8]>`/`Consumer<[u8]>` move
//! byte records of any length, `Producer<T>`/`Consumer<T>` (`T:`
//! [`Message`](crate::Message)) records of one `T` each, popped by value or
//! viewed in place as a `&T`.
//!
//! Files: `ring.rs` (the two cursors, records, wrap markers, sleeping and
//! peer checks over a region), `record.rs` (the record type in the header:
//! what a typed creator records and an opener checks), `side.rs` (each
//! side's line for `stat`), [`Producer`] and [`Consumer`] (the two ends,
//! each with its in-place chunk), `owned.rs` ([`OwnedReadChunk`], a chunk
//! that owns its consumer, for holders that cannot keep a borrow).
//!
//! # Invariants
//! - The ring is `capacity` bytes (a power of two) at `data_offset`. Two
//!   64-bit cursors count bytes ever written and ever released: `TAIL`,
//!   stored only by the producer, and `HEAD`, stored only by the consumer,
//!   each on its own cache line. `0 <= TAIL - HEAD <= capacity`, always.
//! - A record at ring position `p` (a multiple of 8) is an 8-byte header
//!   holding its length `n` (little-endian u64, `n <= max_record`), then `n`
//!   bytes, padded to a multiple of 8. A record never straddles the end of
//!   the ring: where it would, the producer writes a header holding
//!   [`WRAP`] and the record starts at position 0. `max_record` is half the
//!   ring less a header, so a record always fits after a wrap marker.
//! - A typed stream's records are one `T` each: the header records `T`'s
//!   name hash and alignment (at most 8, so a record's bytes, 8 past a
//!   multiple of 8 in a page-aligned ring, are a `&T`), and its largest
//!   record bounds `size_of::<T>()`; typed openers check both
//!   (`record.rs`). A typed consumer reads only records of exactly
//!   `size_of::<T>()` bytes and refuses any other ([`PopError::RecordLength`]),
//!   without consuming it: the ring's protocol is the same for both.
//! - A reserved record of unknown length may grow ([`WriteChunk::grow`]):
//!   it is claimed again, bigger, from the same `TAIL`, and where it now
//!   needs a wrap marker its bytes so far move to position 0 (unpublished,
//!   they are still the producer's alone). Its header, written at commit,
//!   may say fewer bytes than were claimed ([`WriteChunk::truncate`]).
//! - Bytes in `[HEAD, TAIL)` belong to the consumer, the rest to the
//!   producer. The producer writes a record (and any wrap marker before it),
//!   then stores `TAIL` with Release; the consumer loads `TAIL` with Acquire
//!   and reads it. The consumer stores `HEAD` with Release after it is done
//!   with a record; the producer loads `HEAD` with Acquire before it writes
//!   over those bytes. Ownership moves only through these two stores, so the
//!   payload itself is copied with plain `memcpy`: nobody else touches it.
//! - Each side caches the other's cursor and reloads it only when the cached
//!   value says "full" or "empty", so a steady stream costs one shared load
//!   per batch of records, not one per record. The stores are not batched:
//!   `TAIL` after each record for latency, `HEAD` after each record because
//!   the file's `HEAD` is where a new consumer resumes (a batched one would
//!   deliver records again after a crash), and batching it gained nothing
//!   measurable (`examples/stream_bench.rs`); nor did storing
//!   `TAIL` once per 8 records. The cursor lines are not where a small
//!   record's time goes: the push and pop path is long, and that is the
//!   next place to look (measured: docs/GUIDE.md, Performance).
//! - Both sides sleep on shared futexes with the doorbell protocol in
//!   `wait`: the consumer on `DATA_BELL` (rung after each `TAIL` store), the
//!   producer on `SPACE_BELL` (rung after each `HEAD` store).
//! - Cursors read from the file are untrusted: each load of the other
//!   side's cursor is checked before it is used. The producer takes a
//!   `HEAD` only in `[last HEAD, TAIL]` (it never moves back, nor more than
//!   `capacity` behind `TAIL`), the consumer a `TAIL` only in
//!   `[HEAD, HEAD + capacity]`; anything else is
//!   [`PushError::CorruptCursors`] / [`PopError::CorruptCursors`] at once,
//!   never a wait (a cursor found corrupt at attach is not used at all).
//! - One producer and one consumer at a time, each holding an exclusive OFD
//!   lock (`lock_byte::PUBLISHER`, `lock_byte::CONSUMER`) and writing its pid
//!   into the control page. A waiting side whose peer's pid is set but whose
//!   lock is free gets [`PushError::PeerGone`] / [`PopError::PeerGone`]
//!   within [`PEER_CHECK`], instead of waiting forever. One exception: a
//!   producer already dead when the consumer opened is no news, and the
//!   consumer waits for a new one (until its `Wait` ends), as it does after
//!   a producer that left cleanly; so a consumer may start first after a
//!   crash. A producer that attaches later and dies is reported as usual
//!   (known by its pid: one that reused the dead one's pid would not be).
//!
//! ```no_run
//! use shmbus::{Wait, stream::{self, Consumer, Producer}};
//!
//! let mut producer = Producer::<[u8]>::create("logs", &stream::Options::new(1 << 20))?;
//! producer.push(b"first record", Wait::Forever)?;
//! let mut chunk = producer.reserve(5, Wait::Forever)?; // written in place
//! chunk.copy_from_slice(b"hello");
//! chunk.commit();
//!
//! let mut consumer = Consumer::<[u8]>::attach("logs", &shmbus::OpenOptions::default())?;
//! let mut record = Vec::new();
//! consumer.pop(&mut record, Wait::Forever)?;
//! consumer.read_with(Wait::Forever, |bytes| println!("{} bytes", bytes.len()))?;
//!
//! // Typed: every record one `u64`.
//! let mut producer = Producer::<u64>::create("counts", &stream::Options::new(4096))?;
//! producer.push(&42, Wait::Forever)?;
//! let mut consumer = Consumer::<u64>::attach("counts", &shmbus::OpenOptions::default())?;
//! assert_eq!(consumer.pop(Wait::Forever)?, 42);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The design follows the classic Lamport SPSC queue with cached indices
//! (as in rtrb), with records and wrap markers as in BipBuffer-style byte
//! rings.

#[cfg(not(loom))]
mod aio;
mod consumer;
mod error;
mod options;
#[cfg(not(loom))]
mod owned;
mod producer;
mod record;
pub(crate) mod ring;
mod side;
#[cfg(all(test, not(loom)))]
mod tests;

use std::time::Duration;

#[cfg(all(feature = "async-stream", not(loom)))]
pub use aio::Records;
pub use consumer::Consumer;
#[cfg(not(loom))]
pub use consumer::ReadChunk;
pub use error::{PopError, PushError};
pub use options::Options;
#[cfg(not(loom))]
pub use owned::{IntoChunkError, OwnedReadChunk};
pub use producer::Producer;
#[cfg(not(loom))]
pub use producer::WriteChunk;

use crate::bus::Payload;
use crate::mem::HeapRegion;
use crate::mem::heap::HEAP_PAGE;
use crate::wait::WaitStrategy;
use crate::wire::Header;
use ring::StreamRing;

#[doc(hidden)] // reached through `internals`
/// The header of a wrap marker: the rest of the ring up to its end is
/// unused, and the next record is at position 0.
pub const WRAP: u64 = u64::MAX;

#[doc(hidden)] // reached through `internals`
/// How often a waiting side checks whether its peer is still alive.
pub const PEER_CHECK: Duration = Duration::from_millis(20);

#[doc(hidden)] // reached through `internals`
/// Both ends of a stream of `T` on the heap.
pub type HeapStream<T = [u8]> = (
    Producer<T, std::sync::Arc<HeapRegion>>,
    Consumer<T, std::sync::Arc<HeapRegion>>,
);

#[doc(hidden)] // reached through `internals`
/// A stream of `T` (`[u8]`: raw bytes) on the heap between two threads
/// (and for loom and Miri).
pub fn on_heap<T: ?Sized + Payload>(
    capacity: u64,
    strategy: WaitStrategy,
) -> Result<HeapStream<T>, crate::error::CreateError> {
    let header = record::header::<T>(capacity, HEAP_PAGE, None)
        .map_err(crate::error::CreateError::InvalidGeometry)?;
    let region = std::sync::Arc::new(HeapRegion::new(header.total_len as usize));
    header.write(&*region);
    Header::publish_magic(&*region);
    let producer =
        producer::Producer::from_ring(StreamRing::new(region.clone(), &header), strategy);
    let consumer = consumer::Consumer::from_ring(StreamRing::new(region, &header), strategy);
    Ok((producer, consumer))
}
