//! The bus a bridge-in publishes into: a plain bus, or a journaled one
//! (so that late joiners on this host get the upstream's whole state).
//! Either is written at the upstream's sequence numbers.
//!
//! A plain bus gives a hole up with `Publisher::skip`, which its
//! subscribers count. A journal's records are contiguous from its base
//! (docs/LAYOUT.md §22): it cannot skip, so a hole the upstream's journal
//! cannot fill stops the bridge with [`BridgeError::Unrepairable`].

use std::path::PathBuf;

use shmbus::{
    AttachError, BusOptions, OpenError, OpenOptions, Publisher, journal,
    mem::{DefaultRegion, Region},
};

use crate::BridgeError;

/// The mode of a bus (and journal) a bridge-in creates: its user's alone.
pub(crate) const CREATE_MODE: u32 = 0o600;

/// A downstream bus (a plain one on any region, for tests on the heap).
// The enum is one plain publisher's size, which is the hot path's: kept
// inline, while the journaled one, five times larger, is boxed.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Downstream<R: Region = DefaultRegion> {
    /// Its subscribers count each hole in `Lagged`.
    Plain(Publisher<[u8], R>),
    /// Every sequence once, from the snapshot on. (Boxed: it is five
    /// times a plain publisher's size.)
    Journaled(Box<journal::Publisher<[u8]>>),
}

/// How to make a downstream bus that does not exist yet.
pub(crate) struct Create {
    /// Its number of slots.
    pub(crate) capacity: u64,
    /// Its journal, if it has one.
    pub(crate) journal: Option<PathBuf>,
    /// The message type it records (name, alignment), if any.
    pub(crate) message_type: Option<(String, u32)>,
}

impl Downstream {
    /// Takes the existing bus `name` over (a restarted bridge-in carries on
    /// where the last one stopped), or `None` if there is no such bus.
    /// A bridge that would create the bus (`create`) adopts only one it
    /// could have made: the caller's own, granting no more than the mode
    /// it creates with ([`CREATE_MODE`]); anyone else's bus would let its
    /// owner read and write the mirror.
    pub(crate) fn attach(name: &str, create: bool) -> Result<Option<Downstream>, BridgeError> {
        let attach_error = |source| BridgeError::Attach {
            name: name.to_owned(),
            source,
        };
        let mut opts = OpenOptions::default();
        if create {
            opts = opts.only_own(CREATE_MODE);
        }
        match journal::Publisher::<[u8]>::attach(name, &opts) {
            Ok(p) => Ok(Some(Downstream::Journaled(Box::new(p)))),
            Err(journal::AttachError::NotJournaled { .. }) => {
                Publisher::<[u8]>::attach(name, &opts)
                    .map(|p| Some(Downstream::Plain(p)))
                    .map_err(attach_error)
            }
            Err(journal::AttachError::Attach(AttachError::Open(OpenError::NotFound {
                ..
            }))) => Ok(None),
            Err(journal::AttachError::Attach(source)) => Err(attach_error(source)),
            Err(e) => Err(BridgeError::Journal {
                name: name.to_owned(),
                message: e.to_string(),
            }),
        }
    }

    /// Creates bus `name` whose first sequence is `first`, its journal (if
    /// any) starting with `snapshot` (records below `first`).
    pub(crate) fn create(
        name: &str,
        how: &Create,
        msg_size: u64,
        first: u64,
        snapshot: Vec<(u64, Vec<u8>)>,
    ) -> Result<Downstream, BridgeError> {
        let size = u32::try_from(msg_size).unwrap_or(u32::MAX);
        let mut bus = BusOptions::new(how.capacity)
            .mode(CREATE_MODE)
            .msg_size(size)
            .first_sequence(first);
        if let Some((type_name, align)) = &how.message_type {
            bus = bus.message_type(type_name, *align);
        }
        let create_error = |source| BridgeError::Create {
            name: name.to_owned(),
            source,
        };
        match &how.journal {
            Some(path) => {
                let journal = journal::Options::new(path).snapshot(snapshot);
                journal::Publisher::<[u8]>::create(name, &bus, &journal)
                    .map(|p| Downstream::Journaled(Box::new(p)))
                    .map_err(|e| match e {
                        shmbus::journal::CreateError::Create(source) => create_error(source),
                        e => BridgeError::Journal {
                            name: name.to_owned(),
                            message: e.to_string(),
                        },
                    })
            }
            None => Publisher::<[u8]>::create(name, &bus)
                .map(Downstream::Plain)
                .map_err(create_error),
        }
    }
}

impl<R: Region> Downstream<R> {
    /// The sequence the next message is published at.
    pub(crate) fn next_sequence(&self) -> u64 {
        match self {
            Downstream::Plain(p) => p.next_sequence(),
            Downstream::Journaled(p) => p.next_sequence(),
        }
    }

    /// Its message size.
    pub(crate) fn msg_size(&self) -> usize {
        match self {
            Downstream::Plain(p) => p.msg_size(),
            Downstream::Journaled(p) => p.msg_size(),
        }
    }

    /// Publishes `bytes` at the next sequence.
    pub(crate) fn publish(&mut self, bytes: &[u8], name: &str) -> Result<(), BridgeError> {
        let too_long = |downstream| BridgeError::MsgSize {
            name: name.to_owned(),
            upstream: bytes.len() as u64,
            downstream,
        };
        match self {
            Downstream::Plain(p) => p
                .publish(bytes)
                .map(drop)
                .map_err(|_| too_long(p.msg_size())),
            Downstream::Journaled(p) => match p.publish(bytes) {
                Ok(_) => Ok(()),
                Err(shmbus::journal::AppendError::TooLong { max, .. }) => Err(too_long(max)),
                Err(e) => Err(BridgeError::Journal {
                    name: name.to_owned(),
                    message: e.to_string(),
                }),
            },
        }
    }

    /// Gives up `n` sequences: skipped on a plain bus (its subscribers count
    /// them), an error on a journaled one.
    pub(crate) fn skip(&mut self, n: u64, name: &str) -> Result<(), BridgeError> {
        match self {
            Downstream::Plain(p) => {
                // `inbound::admissible` refuses a frame whose hole is past
                // 2^60 before anything of it is applied: `n` is within it.
                let _ = p.skip(n.min(shmbus::bus::SkipError::MAX));
                Ok(())
            }
            Downstream::Journaled(p) => Err(BridgeError::Unrepairable {
                name: name.to_owned(),
                first: p.next_sequence(),
                count: n,
            }),
        }
    }
}
