//! A shmbus ↔ Zenoh bridge: a bus's messages carried to other machines by
//! Zenoh (an existing distributed engine; shmbus adds no protocol of its
//! own beyond a 40-byte frame header), with their sequence numbers end to
//! end, so that every message lost on the way reaches the subscribers of
//! the downstream bus as an exact `Received::Lagged { skipped }`.
//!
//! - [`bridge_out`] is one more subscriber of a local bus: its messages
//!   go as puts on a key expression, framed with the upstream bus's
//!   creation (`frame::Upstream`) and sequence ([`frame`]), a lone
//!   message alone at once, a backlog batched (up to [`BATCH_BYTES`] a
//!   put); a lap (the network, or this process, too slow) becomes a gap
//!   frame naming exactly what was lost. It never slows the bus's
//!   publisher down.
//! - [`bridge_in`] publishes what arrives into a local bus at the same
//!   sequence numbers: a message after a hole (a gap frame, or sequences
//!   Zenoh never delivered) is published after `Publisher::skip` of the
//!   hole, so downstream subscribers count it; a sequence already passed
//!   (a repeat) is dropped and counted; a frame that cannot be applied
//!   whole is dropped as bad; a re-created upstream is a new stream that
//!   continues the downstream sequence (docs/BRIDGE-WIRE.md).
//!
//! tokio and zenoh live in this crate only: the core library stays free of
//! them. Design and guarantees: docs/ARCHITECTURE.md, docs/BRIDGE-WIRE.md.
//!
//! # Examples
//! Both ends in one process, over loopback: what `shmbus bridge in` and
//! `shmbus bridge out` do on two hosts.
//! ```
//! use std::sync::atomic::{AtomicBool, Ordering};
//! use std::time::Duration;
//! use shmbus::{BusOptions, OpenOptions, Publisher, Received, Start, Subscriber, Wait, WaitStrategy};
//! use shmbus_zenoh::{bridge_in, bridge_out, Endpoints, InOptions, OutOptions};
//!
//! # let pid = std::process::id();
//! # let (up, down) = (format!("/dev/shm/doc-bridge-up-{pid}"), format!("/dev/shm/doc-bridge-down-{pid}"));
//! # let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
//! let endpoint = format!("tcp/127.0.0.1:{port}");
//! let mut publisher = Publisher::<[u8]>::create(&up, &BusOptions::new(256).msg_size(32))?;
//! let inbound = InOptions {
//!     key: "doc/ticks".into(),
//!     name: down.clone(),
//!     create: Some(256),
//!     journal: None,
//!     message_type: None,
//!     bootstrap: false,
//!     replay_timeout: Duration::from_secs(10),
//!     state: None,
//!     endpoints: Endpoints { listen: vec![endpoint.clone()], ..Endpoints::default() },
//! };
//! let outbound = OutOptions {
//!     name: up.clone(),
//!     key: "doc/ticks".into(),
//!     endpoints: Endpoints { connect: vec![endpoint.clone()], ..Endpoints::default() },
//!     start: Start::Next,
//!     wait: WaitStrategy::default(),
//!     lossless: false,
//! };
//! let stop = AtomicBool::new(false);
//! std::thread::scope(|s| -> Result<(), Box<dyn std::error::Error>> {
//!     let (stop, inbound, outbound) = (&stop, &inbound, &outbound);
//!     s.spawn(move || bridge_in(inbound, stop, |_| {}));
//!     let (matched_tx, matched) = std::sync::mpsc::channel();
//!     s.spawn(move || {
//!         bridge_out(outbound, stop, |st| {
//!             if st.matched {
//!                 let _ = matched_tx.send(());
//!             }
//!         })
//!     });
//!     // Whatever happens below, the bridges stop after it.
//!     let checked = (|| -> Result<(), Box<dyn std::error::Error>> {
//!         matched.recv_timeout(Duration::from_secs(30))?; // a remote subscriber for the key
//!
//!         publisher.publish(b"first")?; // makes the downstream bus, at the same sequence
//!         // The bridge-in makes the bus when the message arrives.
//!         let from_oldest = OpenOptions::default().start(Start::Oldest);
//!         let mut opened = None;
//!         for _ in 0..3000 {
//!             match Subscriber::<[u8]>::open(&down, &from_oldest) {
//!                 Ok(sub) => { opened = Some(sub); break; }
//!                 Err(_) => std::thread::sleep(Duration::from_millis(10)),
//!             }
//!         }
//!         let mut sub = opened.ok_or("no downstream bus after 30 s")?;
//!         match sub.recv(Wait::For(Duration::from_secs(10))) {
//!             Some(Received::Message(m)) => assert_eq!(&m[..5], b"first"),
//!             other => return Err(format!("expected the message, got {other:?}").into()),
//!         }
//!         Ok(())
//!     })();
//!     stop.store(true, Ordering::Relaxed);
//!     checked
//! })?;
//! # drop(publisher); shmbus::remove(&up)?; shmbus::remove(&down)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![deny(unsafe_op_in_unsafe_fn)]
#![forbid(unsafe_code)]
#![deny(missing_debug_implementations)]

mod downstream;
pub mod frame;
mod inbound;
mod outbound;
mod replay;
mod session;
mod state;

pub use frame::BATCH_BYTES;
pub use inbound::{InOptions, InStats, bridge_in};
pub use outbound::{OutOptions, OutStats, bridge_out};
pub use session::{Endpoints, SessionError, session};

/// Why a bridge stopped.
///
/// # Examples
/// ```
/// use std::sync::atomic::AtomicBool;
/// use std::time::Duration;
/// use shmbus_zenoh::{bridge_in, BridgeError, Endpoints, InOptions};
///
/// let opts = InOptions {
///     key: "doc/err".into(),
///     name: "/dev/shm/doc-bridge-no-such-bus".into(),
///     create: None, // it must exist, and does not
///     journal: None,
///     message_type: None,
///     bootstrap: false,
///     replay_timeout: Duration::from_secs(10),
///     state: None,
///     endpoints: Endpoints::default(),
/// };
/// match bridge_in(&opts, &AtomicBool::new(true), |_| {}) {
///     Err(e @ BridgeError::Attach { .. }) => println!("{e}"),
///     other => panic!("expected an attach error, got {other:?}"),
/// }
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
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
    /// A message from upstream is longer than the downstream bus's
    /// messages. (A frame that declares so is dropped before as a bad
    /// frame, docs/BRIDGE-WIRE.md; this stays as the last defence.)
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
    /// The downstream bus's journal failed (its message says how).
    #[error("journal of {name}: {message}")]
    Journal {
        /// The bus.
        name: String,
        /// What failed.
        message: String,
    },
    /// A journaled downstream bus met a hole the upstream's journal could
    /// not fill (compacted away, or no journal answered): a journal cannot
    /// skip, so the bridge stops rather than lose a message unannounced.
    #[error(
        "{name}: upstream sequences {first}.. ({count}) are in no journal that answered; a journaled downstream cannot skip them (start a new downstream with --bootstrap)"
    )]
    Unrepairable {
        /// The bus.
        name: String,
        /// The first sequence of the hole.
        first: u64,
        /// How many.
        count: u64,
    },
    /// A bootstrap found no journal to start from.
    #[error(
        "no journal answered on {key}/@journal: {why} (bridge out a journaled bus, or drop --bootstrap)"
    )]
    NoJournal {
        /// The key expression asked.
        key: String,
        /// The error reply, or the timeout.
        why: String,
    },
    /// The upstream bus was removed and created again each time the
    /// bridge-out opened it, so which creation it reads could not be told.
    #[error(
        "{name} was removed and created again while it was opened (4 times): no creation to name in the frames"
    )]
    Recreated {
        /// The bus.
        name: String,
    },
    /// A Zenoh call failed.
    #[error("zenoh: {0}")]
    Zenoh(String),
}
