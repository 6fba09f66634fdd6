//! A shmbus ↔ Zenoh bridge: a bus's messages carried to other machines by
//! Zenoh (an existing distributed engine; shmbus adds no protocol of its
//! own beyond a 32-byte frame header), with their sequence numbers end to
//! end, so that every message lost on the way reaches the subscribers of
//! the downstream bus as an exact `Received::Lagged { skipped }`.
//!
//! - [`bridge_out`] is one more subscriber of a local bus: its messages
//!   go as puts on a key expression, framed with the upstream epoch and
//!   sequence ([`frame`]), a lone message alone at once, a backlog batched
//!   (up to [`BATCH_BYTES`] a put); a lap (the network, or this process, too
//!   slow) becomes a gap frame naming exactly what was lost. It never
//!   slows the bus's publisher down.
//! - [`bridge_in`] publishes what arrives into a local bus at the same
//!   sequence numbers: a message after a hole (a gap frame, or sequences
//!   Zenoh never delivered) is published after `Publisher::skip` of the
//!   hole, so downstream subscribers count it; a sequence already passed
//!   (a repeat) is dropped and counted.
//!
//! tokio and zenoh live in this crate only: the core library stays free of
//! them. Design and guarantees: docs/ARCHITECTURE.md, docs/LAYOUT.md §24.

#![deny(unsafe_op_in_unsafe_fn)]
#![forbid(unsafe_code)]

pub mod frame;
mod inbound;
mod outbound;
mod session;

pub use inbound::{bridge_in, InOptions, InStats};
pub use outbound::{bridge_out, OutOptions, OutStats, BATCH_BYTES};
pub use session::{session, Endpoints, SessionError};

/// Why a bridge stopped.
#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    /// Zenoh could not be set up (its message says why).
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The local bus could not be opened.
    #[error("opening {name}: {source}")]
    Open {
        /// The bus.
        name: String,
        /// Why.
        source: shmbus::OpenError,
    },
    /// The downstream bus could not be created.
    #[error("creating {name}: {source}")]
    Create {
        /// The bus.
        name: String,
        /// Why.
        source: shmbus::CreateError,
    },
    /// The downstream bus could not be taken over.
    #[error("publishing into {name}: {source}")]
    Attach {
        /// The bus.
        name: String,
        /// Why.
        source: shmbus::AttachError,
    },
    /// A message from upstream is longer than the downstream bus's messages.
    #[error(
        "upstream sends {upstream}-byte messages, the downstream bus {name} carries {downstream}"
    )]
    MsgSize {
        /// The bus.
        name: String,
        /// The upstream bus's message size.
        upstream: u64,
        /// The downstream bus's.
        downstream: usize,
    },
    /// A Zenoh call failed.
    #[error("zenoh: {0}")]
    Zenoh(String),
}
