//! Why a new segment's geometry is impossible: [`GeometryError`].

use thiserror::Error;

/// Why the geometry asked of a new bus or stream is impossible, found
/// before any file is made.
///
/// # Examples
/// ```
/// use shmbus::{BusOptions, CreateError, Publisher, error::GeometryError};
/// # let name = format!("/dev/shm/shmbus-doc-geometryerror-{}", std::process::id());
/// match Publisher::<u64>::create(&name, &BusOptions::new(100)) {
///     Err(CreateError::InvalidGeometry(GeometryError::Capacity { capacity })) => {
///         assert_eq!(capacity, 100)
///     }
///     other => panic!("expected a capacity error, got {:?}", other.err()),
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum GeometryError {
    /// A bus's slot count is not a power of two.
    #[error("a bus of {capacity} slots: its slot count must be a power of two (1, 2, 4, ...)")]
    Capacity {
        /// The slots asked for.
        capacity: u64,
    },
    /// A message size is zero or above the format's limit.
    #[error("message size {size} is outside 1..={max}")]
    MsgSize {
        /// The size asked for.
        size: u32,
        /// The largest the format allows.
        max: u32,
    },
    /// The segment would pass the address space.
    #[error("capacity {capacity} x slot {slot_size} bytes is too large")]
    TooLarge {
        /// Slots (a bus) or bytes (a stream, whose `slot_size` is 1).
        capacity: u64,
        /// Bytes per slot.
        slot_size: u64,
    },
    /// A stream's byte capacity is not a power of two within the limits.
    #[error("a stream of {capacity} bytes: its size must be a power of two in {min}..={max} bytes")]
    StreamCapacity {
        /// The bytes asked for.
        capacity: u64,
        /// The smallest stream.
        min: u64,
        /// The largest stream.
        max: u64,
    },
    /// A typed bus was given a message size other than its type's.
    #[error("message size {asked} asked for a bus of `{type_name}`, which is {size} bytes")]
    TypeSize {
        /// `BusOptions::msg_size`.
        asked: u32,
        /// The message type.
        type_name: String,
        /// Its `size_of`.
        size: u32,
    },
    /// A bus of raw bytes was created without a message size.
    #[error("a bus of raw bytes needs BusOptions::msg_size")]
    RawNeedsMsgSize,
    /// A pool's block size is not a multiple of 64 within the limits.
    #[error("pool block size {size} is not a multiple of 64 in 64..={max} bytes")]
    PoolBlockSize {
        /// The block size asked for.
        size: u64,
        /// The largest the format allows.
        max: u64,
    },
    /// A pool's block count is outside the limits.
    #[error("pool of {blocks} blocks is outside 1..={max}")]
    PoolBlocks {
        /// The blocks asked for.
        blocks: u64,
        /// The most the format allows.
        max: u64,
    },
    /// A pool too small for its ring: every slot's descriptor holds a
    /// block, so a publisher needs at least one more to loan.
    #[error("pool of {blocks} blocks for {capacity} slots: it needs at least capacity + 1")]
    PoolTooSmall {
        /// The blocks asked for.
        blocks: u64,
        /// The ring's slots.
        capacity: u64,
    },
    /// A pool's block message type does not fit a block: larger than
    /// the block size, or aligned past the blocks' 64 bytes.
    #[error(
        "a pool of {block_size}-byte blocks, each aligned to 64, cannot hold `{type_name}` (size {size}, align {align})"
    )]
    PoolBlockType {
        /// The message type.
        type_name: String,
        /// Its `size_of`.
        size: u32,
        /// Its `align_of`.
        align: u32,
        /// The pool's block size.
        block_size: u64,
    },
    /// A message type's name is empty or longer than the header keeps
    /// (64 bytes), or its alignment is not a power of two dividing the
    /// message size, up to 4096.
    #[error(
        "message type `{name}` (size {size}, align {align}) cannot be recorded: the name must be 1..=64 bytes and the alignment a power of two up to 4096 that divides the size"
    )]
    MessageType {
        /// The name asked for.
        name: String,
        /// The message size.
        size: u32,
        /// The alignment asked for.
        align: u32,
    },
    /// A typed stream's record type is aligned to more than a stream's
    /// records are (8 bytes: each starts after an 8-byte header at a
    /// multiple of 8).
    #[error(
        "a stream of `{type_name}` records: its alignment is {align}, a stream's records are aligned to at most {max}"
    )]
    RecordAlign {
        /// The record type's name.
        type_name: String,
        /// Its `align_of`.
        align: u32,
        /// The most a stream's records are aligned to (8).
        max: u32,
    },
    /// A typed stream's record type is larger than the stream's largest
    /// record (half its bytes, less 8).
    #[error(
        "a stream of `{type_name}` records: one is {size} bytes, a {capacity}-byte stream's largest record is {max}"
    )]
    RecordTooLarge {
        /// The record type's name.
        type_name: String,
        /// Its `size_of`.
        size: u64,
        /// The stream's bytes asked for.
        capacity: u64,
        /// Its largest record.
        max: u64,
    },
    /// A blackboard's key count is 0 or above the format's limit.
    #[error("a blackboard of {keys} keys: it holds 1..={max}")]
    BlackboardKeys {
        /// The keys asked for.
        keys: u64,
        /// The most the format allows.
        max: u64,
    },
    /// A blackboard's key or value size is 0 or above the format's limit.
    #[error(
        "a blackboard of {key_size}-byte keys and {value_size}-byte values: keys are 1..={max_key} bytes, values 1..={max_value}"
    )]
    EntrySize {
        /// Bytes per key asked for.
        key_size: u32,
        /// Bytes per value asked for.
        value_size: u32,
        /// The largest key.
        max_key: u32,
        /// The largest value.
        max_value: u32,
    },
    /// A blackboard of raw bytes was created without the size of its keys
    /// or of its values.
    #[error(
        "a blackboard of raw bytes needs blackboard::Options::key_size and ::value_size for its raw side"
    )]
    RawNeedsSizes,
    /// A request-response service's number outside its bounds.
    #[error("a service of {found} {what}: it takes 1..={max}")]
    Service {
        /// Which number: "clients", "slots per client", "servers",
        /// "request bytes" or "response bytes".
        what: &'static str,
        /// The number asked for.
        found: u32,
        /// The most the format allows.
        max: u32,
    },
    /// A raw request-response service was created without the size of
    /// its requests or of its responses.
    #[error(
        "a service of raw bytes needs reqrep::Options::request_size and ::response_size for its raw side"
    )]
    RawNeedsPayloadSizes,
    /// An eviction or unblock timeout outside its bounds (1 ms to 60 s:
    /// [`MIN_TIMEOUT`](crate::bus::MIN_TIMEOUT) to
    /// [`MAX_EVICT`](crate::bus::MAX_EVICT) or
    /// [`MAX_UNBLOCK`](crate::bus::MAX_UNBLOCK)); 0 is refused, not read
    /// as "at once".
    #[error("the {option} is {found:?}, expected {min:?} to {max:?}")]
    Timeout {
        /// Which: "eviction timeout" or "unblock timeout".
        option: &'static str,
        /// The timeout asked for.
        found: std::time::Duration,
        /// The shortest allowed.
        min: std::time::Duration,
        /// The longest allowed.
        max: std::time::Duration,
    },
}
