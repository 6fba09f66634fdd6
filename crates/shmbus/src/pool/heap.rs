//! A pool bus on the heap, built as `create` builds one in /dev/shm, for
//! threads of one process, unit tests and Miri.

use std::sync::Arc;

use super::blocks::Blocks;
use crate::bus::ring::Ring;
use crate::error::CreateError;
use crate::mem::HeapRegion;
use crate::mem::heap::HEAP_PAGE;
use crate::wire::{Header, TypeFingerprint, descriptor};

/// The ring and pool of a new heap pool bus whose blocks carry
/// `block_msg`.
pub(crate) fn ring(
    capacity: u64,
    block_size: u64,
    blocks: u64,
    block_msg: TypeFingerprint,
) -> Result<(Ring<Arc<HeapRegion>>, Blocks), CreateError> {
    let (header, geo) = Header::broadcast(capacity, descriptor(), HEAP_PAGE, 0)
        .and_then(|h| h.with_pool(blocks, block_size, block_msg))
        .map_err(CreateError::InvalidGeometry)?;
    let region = Arc::new(HeapRegion::new(header.total_len as usize));
    header.write(&*region);
    let ring = Ring::new(region, &header);
    ring.init();
    Header::publish_magic(ring.region());
    let pool = Blocks::new(geo, header.control_offset as usize, capacity);
    Ok((ring, pool))
}
