//! What a segment is, decoded once from its header: the header's `kind`
//! and the flags that make a bus a many-publisher, journaled or pool bus,
//! or a blackboard a many-writer one. Everything that asks which kind a
//! segment is (`stat`, recordings, the tool) asks [`SegmentKind::of`].

use std::fmt;

use crate::wire::{Header, Kind, Publishers, flags};

/// What a segment is: one of the kinds this crate makes, each as `ls`,
/// `top` and `stat` name it (its [`Display`](fmt::Display)), or a kind
/// this build does not know. More kinds may come: match with a `_` arm.
///
/// # Examples
/// ```
/// use shmbus::{BusOptions, Publisher, SegmentKind, pool};
/// # let bus = format!("/dev/shm/shmbus-doc-segkind-bus-{}", std::process::id());
/// # let pool = format!("/dev/shm/shmbus-doc-segkind-pool-{}", std::process::id());
/// let publisher = Publisher::<u64>::create(&bus, &BusOptions::new(64))?;
/// let pooled = pool::Publisher::<[u8]>::create(&pool, &pool::Options::new(4, 256, 8))?;
/// let kind = shmbus::stat::stat(&pool)?.kind;
/// assert_eq!(kind, SegmentKind::Pool);
/// assert_eq!(kind.to_string(), "pool");
/// assert_eq!(shmbus::stat::stat(&bus)?.kind.to_string(), "broadcast");
/// # shmbus::remove(&bus)?;
/// # shmbus::remove(&pool)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SegmentKind {
    /// A broadcast bus with one publisher ([`Publisher`](crate::Publisher)).
    Bus,
    /// A broadcast bus of any number of publishers
    /// ([`ManyPublisher`](crate::bus::ManyPublisher)).
    ManyPublisherBus,
    /// A broadcast bus whose messages also go to a journal file
    /// ([`journal`](crate::journal)).
    JournaledBus,
    /// A pool bus with one publisher ([`pool`](crate::pool)).
    Pool,
    /// A pool bus of any number of publishers.
    ManyPublisherPool,
    /// A stream ([`stream`](crate::stream)).
    Stream,
    /// A blackboard with one writer ([`blackboard`](crate::blackboard)).
    Blackboard,
    /// A blackboard of any number of writers
    /// ([`ManyWriter`](crate::blackboard::ManyWriter)).
    ManyWriterBlackboard,
    /// A request-response service ([`reqrep`](crate::reqrep)).
    Service,
    /// A header `kind` this build does not know: the number found.
    Unknown(u32),
}

impl SegmentKind {
    /// Decodes the kind from a validated header: the only place that reads
    /// the flags that tell the kinds apart.
    pub(crate) fn of(h: &Header) -> SegmentKind {
        let has = |flag: u32| h.flags & flag != 0;
        match h.kind {
            Kind::Broadcast if has(flags::POOL) && has(flags::MULTI_PUBLISHER) => {
                SegmentKind::ManyPublisherPool
            }
            Kind::Broadcast if has(flags::POOL) => SegmentKind::Pool,
            Kind::Broadcast if has(flags::JOURNALED) => SegmentKind::JournaledBus,
            Kind::Broadcast if has(flags::MULTI_PUBLISHER) => SegmentKind::ManyPublisherBus,
            Kind::Broadcast => SegmentKind::Bus,
            Kind::Stream => SegmentKind::Stream,
            Kind::Blackboard if has(crate::wire::blackboard::MULTI_WRITER) => {
                SegmentKind::ManyWriterBlackboard
            }
            Kind::Blackboard => SegmentKind::Blackboard,
            Kind::Service => SegmentKind::Service,
            Kind::Unknown(n) => SegmentKind::Unknown(n),
        }
    }

    /// The protocol its header names: what
    /// [`OpenError::WrongKind`](crate::OpenError::WrongKind) compares.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Kind, SegmentKind};
    /// assert_eq!(SegmentKind::Pool.protocol(), Kind::Broadcast);
    /// assert_eq!(SegmentKind::ManyWriterBlackboard.protocol(), Kind::Blackboard);
    /// ```
    pub fn protocol(self) -> Kind {
        match self {
            SegmentKind::Bus
            | SegmentKind::ManyPublisherBus
            | SegmentKind::JournaledBus
            | SegmentKind::Pool
            | SegmentKind::ManyPublisherPool => Kind::Broadcast,
            SegmentKind::Stream => Kind::Stream,
            SegmentKind::Blackboard | SegmentKind::ManyWriterBlackboard => Kind::Blackboard,
            SegmentKind::Service => Kind::Service,
            SegmentKind::Unknown(n) => Kind::Unknown(n),
        }
    }

    /// How many publishers (a blackboard: writers) it is made for; `None`
    /// for a stream (one producer, always), a service (servers and
    /// clients) and an unknown kind.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Publishers, SegmentKind};
    /// assert_eq!(SegmentKind::ManyPublisherPool.publishers(), Some(Publishers::Many));
    /// assert_eq!(SegmentKind::JournaledBus.publishers(), Some(Publishers::One));
    /// assert_eq!(SegmentKind::Stream.publishers(), None);
    /// ```
    pub fn publishers(self) -> Option<Publishers> {
        match self {
            SegmentKind::Bus
            | SegmentKind::JournaledBus
            | SegmentKind::Pool
            | SegmentKind::Blackboard => Some(Publishers::One),
            SegmentKind::ManyPublisherBus
            | SegmentKind::ManyPublisherPool
            | SegmentKind::ManyWriterBlackboard => Some(Publishers::Many),
            SegmentKind::Stream | SegmentKind::Service | SegmentKind::Unknown(_) => None,
        }
    }

    /// Whether it is a pool bus, of either number of publishers.
    ///
    /// # Examples
    /// ```
    /// use shmbus::SegmentKind;
    /// assert!(SegmentKind::ManyPublisherPool.is_pool());
    /// assert!(!SegmentKind::ManyPublisherBus.is_pool());
    /// ```
    pub fn is_pool(self) -> bool {
        matches!(self, SegmentKind::Pool | SegmentKind::ManyPublisherPool)
    }
}

impl fmt::Display for SegmentKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SegmentKind::Bus => "broadcast",
            SegmentKind::ManyPublisherBus => "broadcast, many-publisher",
            SegmentKind::JournaledBus => "broadcast, journaled",
            SegmentKind::Pool => "pool",
            SegmentKind::ManyPublisherPool => "pool, many-publisher",
            SegmentKind::Stream => "stream",
            SegmentKind::Blackboard => "blackboard",
            SegmentKind::ManyWriterBlackboard => "blackboard, many-writer",
            SegmentKind::Service => "service",
            SegmentKind::Unknown(n) => return write!(f, "unknown ({n})"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{TypeFingerprint, blackboard::MULTI_WRITER};

    fn bus(flags: u32) -> Header {
        let mut h = Header::broadcast(8, TypeFingerprint::of::<u64>(), 4096, 0).unwrap();
        h.flags = flags;
        h
    }

    #[test]
    fn each_flag_combination_of_a_bus_decodes_to_its_own_kind() {
        let cases = [
            (0, SegmentKind::Bus),
            (flags::MULTI_PUBLISHER, SegmentKind::ManyPublisherBus),
            (flags::JOURNALED, SegmentKind::JournaledBus),
            (flags::POOL, SegmentKind::Pool),
            (
                flags::POOL | flags::MULTI_PUBLISHER,
                SegmentKind::ManyPublisherPool,
            ),
            (flags::HUGE_PAGES, SegmentKind::Bus),
        ];
        for (bits, want) in cases {
            assert_eq!(SegmentKind::of(&bus(bits)), want, "flags {bits:#x}");
        }
        let mut bb = bus(MULTI_WRITER);
        bb.kind = Kind::Blackboard;
        assert_eq!(SegmentKind::of(&bb), SegmentKind::ManyWriterBlackboard);
        bb.kind = Kind::Unknown(9);
        assert_eq!(SegmentKind::of(&bb), SegmentKind::Unknown(9));
    }
}
