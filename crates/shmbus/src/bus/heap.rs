//! A ring on the heap, for threads of one process, loom and Miri: built
//! as `segment.rs` builds one in /dev/shm, the many-publisher control
//! fields (`claim`) included. Its own file so that `ring` imports nothing
//! of `claim`, which sits on `ring`.

use std::sync::Arc;
use std::time::Duration;

use super::ring::Ring;
use crate::mem::HeapRegion;
use crate::mem::heap::HEAP_PAGE;
use crate::wire::{Header, TypeFingerprint};

/// A ring on the heap, built as `create` builds one in /dev/shm; `unblock`
/// makes it a many-publisher ring with that unblock timeout.
pub(crate) fn heap_ring(
    capacity: u64,
    msg: TypeFingerprint,
    first_seq: u64,
    unblock: Option<Duration>,
) -> Result<Ring<Arc<HeapRegion>>, crate::error::CreateError> {
    // A small page: the heap ring needs no mprotect, and loom models
    // every word of the region.
    let mut header = Header::broadcast(capacity, msg, HEAP_PAGE, first_seq)
        .map_err(crate::error::CreateError::InvalidGeometry)?
        .with_heap_lines();
    let region = Arc::new(HeapRegion::new(header.total_len as usize));
    if let Some(unblock) = unblock {
        header.set_publishers(crate::wire::Publishers::Many);
        super::claim::init_control(&*region, &header, unblock);
    }
    header.write(&*region);
    let ring = Ring::new(region, &header);
    ring.init();
    super::gate::init_control(
        ring.region(),
        ring.control_field(0),
        super::ring::HEAP_ENTRIES as u32,
        super::options::DEFAULT_EVICT,
    );
    Header::publish_magic(ring.region());
    Ok(ring)
}
