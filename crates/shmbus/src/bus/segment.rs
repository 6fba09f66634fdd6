//! A bus's segment in /dev/shm: the steps between `segment` (file, header,
//! magic) and a ring a handle can use. Creating one (single or
//! many-publisher), opening it for a role, taking the publisher's role,
//! and registering a subscriber so `stat` can name it.

use super::activity::Activity;
use super::options::{BusOptions, PublisherCount, publishers};
use super::payload::Payload;
use super::ring::Ring;
use crate::error::{AttachError, CreateError, OpenError};
use crate::mem::{Access, Region, ShmRegion};
use crate::options::OpenOptions;
use crate::segment::{Role, create_region, layout_page, open_checked, take_role};
use crate::sync::Ordering;
use crate::sys::lock;
use crate::wire::{
    GeometryError, Header, Kind, LINE, Publishers, TypeFingerprint, control, lock_byte,
};

/// Creates a bus of payload `T` as `opts` say; options for [`Many`]
/// make a many-publisher bus, whose every publisher shares the publisher
/// lock.
///
/// [`Many`]: super::Many
pub(crate) fn create<T: ?Sized + Payload, P: PublisherCount>(
    name: &str,
    opts: &BusOptions<P>,
) -> Result<Ring<ShmRegion>, CreateError> {
    let msg = T::fingerprint(opts.msg_size, opts.message.as_ref())
        .map_err(CreateError::InvalidGeometry)?;
    create_with(name, opts, |page| {
        Ok((
            Header::broadcast(opts.capacity, msg, page, opts.first_seq)?,
            (),
        ))
    })
    .map(|(ring, ())| ring)
}

/// Creates a pool bus of `blocks` blocks of `block_size` bytes, whose
/// blocks carry `block_msg`.
pub(crate) fn create_pool<P: PublisherCount>(
    name: &str,
    opts: &BusOptions<P>,
    (block_size, blocks): (u64, u64),
    block_msg: TypeFingerprint,
) -> Result<(Ring<ShmRegion>, crate::wire::PoolGeometry), CreateError> {
    create_with(name, opts, |page| {
        Header::broadcast(
            opts.capacity,
            crate::wire::descriptor(),
            page,
            opts.first_seq,
        )?
        .with_pool(blocks, block_size, block_msg)
    })
}

/// Creates the segment of the header `header` builds for the page size;
/// returns the ring and what else `header` gave.
fn create_with<X, P: PublisherCount>(
    name: &str,
    opts: &BusOptions<P>,
    header: impl FnOnce(u64) -> Result<(Header, X), GeometryError>,
) -> Result<(Ring<ShmRegion>, X), CreateError> {
    let multi = publishers::<P>() == Publishers::Many;
    opts.check_timeouts()?;
    let (page, huge) = layout_page(name, &opts.file)?;
    let (mut header, extra) = header(page).map_err(CreateError::InvalidGeometry)?;
    let pool = header.pool;
    header.flags |= huge;
    if multi {
        header.set_publishers(Publishers::Many);
    }
    let region = create_region(name, &header, &opts.file, |r| {
        if multi {
            super::claim::init_control(r, &header, opts.unblock);
        }
        super::gate::init_control(
            r,
            header.control_offset as usize,
            opts.max_lossless,
            opts.evict,
        );
        if multi && pool.is_some() {
            // Published with the header by the magic's Release store.
            r.word(crate::wire::header::POOL_PID_NS)
                .store(crate::sys::lock::pid_namespace(), Ordering::Relaxed);
        }
        Ring::new(r, &header).init()
    })?;
    let ring = Ring::new(region, &header);
    if !multi {
        return Ok((ring, extra));
    }
    // The creator built the bus holding the publisher byte exclusively;
    // from now on every publisher shares it (the same open file
    // description converts its lock in place).
    match lock::try_lock(ring.region().file(), lock_byte::PUBLISHER, false) {
        Ok(true) => Ok((ring, extra)),
        res => {
            let _ = crate::mem::shm::unlink(ring.region().path());
            Err(CreateError::Io {
                what: "lock",
                source: res
                    .err()
                    .unwrap_or_else(|| std::io::Error::other("shared lock refused")),
            })
        }
    }
}

/// Refuses a pool bus to a handle that copies messages (`pool` false),
/// and a copying bus to a pool handle: either would read descriptors as
/// messages, or messages as descriptors.
pub(crate) fn expect_pool(header: &Header, pool: bool) -> Result<(), OpenError> {
    if header.pool.is_some() == pool {
        Ok(())
    } else {
        Err(OpenError::PoolMismatch {
            found: header.pool.is_some(),
        })
    }
}

/// Opens a bus for `role`, checking the message type if `msg` is given.
pub(crate) fn open(
    name: &str,
    role: Role,
    msg: Option<&TypeFingerprint>,
    opts: &OpenOptions,
) -> Result<Ring<ShmRegion>, OpenError> {
    open_header(name, role, msg, opts, false).map(|(ring, _)| ring)
}

/// [`open`] for a handle that does (`pool`) or does not use a pool; also
/// returns the validated header.
pub(crate) fn open_header(
    name: &str,
    role: Role,
    msg: Option<&TypeFingerprint>,
    opts: &OpenOptions,
    pool: bool,
) -> Result<(Ring<ShmRegion>, Header), OpenError> {
    // The pool first: a pool bus's descriptors are never the type a
    // copying handle asks for, and `PoolMismatch` says why.
    let (region, header) = open_checked(name, role, Kind::Broadcast, None, opts)?;
    expect_pool(&header, pool)?;
    header.expect(Kind::Broadcast, msg)?;
    if role == Role::Subscriber && header.publishers() == Publishers::Many {
        // Subscribers of a many-publisher bus may skip an abandoned claim,
        // a CAS on its stamp (see `claim`): the slots become writable; a
        // pool's state words and blocks after them stay read-only.
        let data = header.data_offset as usize;
        let slots_end = header.pool.map_or(header.total_len, |p| p.states) as usize;
        region
            .protect(data, slots_end - data, Access::ReadWrite)
            .map_err(|source| OpenError::Io {
                what: "mprotect",
                source,
            })?;
    }
    let ring = Ring::new(region, &header);
    Ok((ring, header))
}

/// Becomes a publisher of an existing bus of the mode `want`: the single
/// publisher (exclusive lock, refused on a journaled bus, whose journal
/// would miss messages) or one of many (shared lock). Returns the ring and
/// the sequence to publish next.
pub(crate) fn attach(
    name: &str,
    msg: Option<&TypeFingerprint>,
    opts: &OpenOptions,
    want: Publishers,
) -> Result<(Ring<ShmRegion>, u64), AttachError> {
    attach_header(name, msg, opts, want, None).map(|(ring, next, _)| (ring, next))
}

/// A pool publisher's check of a pool's header (its block type), made
/// before the publisher takes its role.
pub(crate) type PoolCheck<'a> = &'a dyn Fn(&Header) -> Result<(), OpenError>;

/// [`attach`] for a publisher that does (`pool`: the check its pool must
/// pass) or does not use a pool; also returns the validated header.
pub(crate) fn attach_header(
    name: &str,
    msg: Option<&TypeFingerprint>,
    opts: &OpenOptions,
    want: Publishers,
    pool: Option<PoolCheck<'_>>,
) -> Result<(Ring<ShmRegion>, u64, Header), AttachError> {
    // The pool first, as in `open_header`.
    let (region, header) = open_checked(name, Role::Publisher, Kind::Broadcast, None, opts)?;
    expect_pool(&header, pool.is_some())?;
    header.expect(Kind::Broadcast, msg)?;
    if let Some(check) = pool {
        // Before the role is taken: a refused publisher leaves no trace
        // (no epoch bumped, no pid written).
        check(&header)?;
    }
    let found = header.publishers();
    if found != want {
        return Err(AttachError::WrongMode {
            role: crate::error::Role::Publisher,
            found,
            expected: want,
        });
    }
    if let (Publishers::One, Some(path)) = (want, &header.journal) {
        return Err(AttachError::Journaled { path: path.clone() });
    }
    let ring = Ring::new(region, &header);
    let pid_field = ring.control_field(control::PUBLISHER_PID);
    if want == Publishers::One {
        take_role(ring.region(), lock_byte::PUBLISHER, pid_field).map_err(|pid| {
            AttachError::RoleTaken {
                role: crate::error::Role::Publisher,
                pid,
            }
        })?;
        let next = ring.resume();
        return Ok((ring, next, header));
    }
    let region = ring.region();
    let shared = lock::try_lock(region.file(), lock_byte::PUBLISHER, false).map_err(|source| {
        OpenError::Io {
            what: "lock",
            source,
        }
    })?;
    if !shared {
        // Only a creator still building holds it exclusively.
        return Err(AttachError::RoleTaken {
            role: crate::error::Role::Publisher,
            pid: region.word32(pid_field).load(Ordering::Relaxed),
        });
    }
    region
        .word32(pid_field)
        .store(std::process::id(), Ordering::Relaxed);
    Ok((ring, 0, header))
}

/// Takes a free registry entry, if any, so `stat` can name this subscriber,
/// and its line, reset for a subscriber at `pos`, so `stat` can follow it.
/// A subscriber beyond the registry's size works all the same, uncounted
/// but still holding the attached lock that keeps `clean` away.
/// Called once the subscriber's start position is fixed, so that "registered"
/// means "will see everything published from now on".
pub(crate) fn register(ring: &Ring<ShmRegion>, pos: u64) -> Activity {
    register_entry(ring, pos).map_or_else(Activity::none, |(_, activity)| activity)
}

/// [`register`], also naming the entry taken (`None`: the registry is full).
pub(crate) fn register_entry(ring: &Ring<ShmRegion>, pos: u64) -> Option<(usize, Activity)> {
    let region = ring.region();
    for i in 0..control::REGISTRY_SLOTS {
        if let Ok(true) = lock::try_lock(region.file(), lock_byte::REGISTRY + i as u64, true) {
            // A lossless subscriber that died left its gating bit set (the
            // publisher clears it only when it meets it): a subscriber
            // taking the entry clears it, or the publisher would wait for
            // it too. Clearing only relaxes the publisher's limit; a
            // lossless one sets it again when it joins.
            if ring.is_gating(i) {
                ring.ungate(i);
            }
            // The line first: `stat` reads a line only for a held lock, and
            // a pid already there would show a dead subscriber's numbers.
            let line = ring.control_field(control::SUBSCRIBERS + LINE * i);
            let activity = Activity::claim(region, line, pos, crate::wire::contract::LOSSY);
            let field = ring.control_field(control::REGISTRY + 4 * i);
            region
                .word32(field)
                .store(std::process::id(), Ordering::Relaxed);
            return Some((i, activity));
        }
    }
    None
}
