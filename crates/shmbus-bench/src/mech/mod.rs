//! The mechanisms `shmbus-bench` compares, each a small adapter behind
//! [`Mechanism`]: adding one is one file and one line in [`all`].
//!
//! A run has one sender (the parent process, or a thread) and one or more
//! receivers (child processes re-executed from this binary, or threads for
//! in-process mechanisms). Every message is `msg_size` bytes; its first 8
//! bytes are the sequence number (or a [`marker`]), the next 8 the sender's
//! clock (see `clock`), the rest a checked pattern (see `payload`) that the
//! harness, not the adapter, reads in full. Receivers answer on the way
//! back only in pingpong.

use std::io;

use crate::error::BenchError;

pub mod crossbar_podbus;
pub mod crossbar_pool;
pub mod floor;
pub mod iceoryx2_pubsub;
pub mod ipc_ring_spsc;
pub mod ipmpsc_ring;
pub mod kio;
pub mod mq;
pub mod photon;
pub mod pipe;
pub mod ringfire;
pub mod ringfire_async;
pub mod shmbus_bus;
pub mod shmbus_stream;
pub mod shmbus_wake;
pub mod shmbus_zc;
pub mod tcp;
pub mod udp;
pub mod uds;

/// Which side of a channel an endpoint is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The parent: sends to every receiver, receives pongs from receiver 0.
    Sender,
    /// Receiver `i` of `receivers`.
    Receiver(usize),
}

/// What the channel is for: message size and number of receivers.
#[derive(Clone, Debug)]
pub struct ChannelSpec {
    /// Bytes per message (at least 16).
    pub msg_size: usize,
    /// Number of receivers.
    pub receivers: usize,
    /// Whether pongs flow back (pingpong).
    pub duplex: bool,
    /// Prefix for names of files, queues and buses, unique to the run.
    pub prefix: String,
}

/// One received message, or how many were lost just before the next one.
pub enum Got<'a> {
    /// A whole message.
    Msg(&'a [u8]),
    /// The mechanism itself reported `n` lost messages (shmbus lag).
    Lost(u64),
}

/// One end of a channel.
pub trait Endpoint {
    /// Sends one message: the sender to every receiver, a receiver back to
    /// the sender. May block for backpressure.
    fn send(&mut self, msg: &[u8]) -> io::Result<()>;
    /// Waits for the next message (busy-polling for shared-memory
    /// mechanisms, blocking in the kernel for the others: each in its
    /// fastest mode).
    fn recv(&mut self) -> io::Result<Got<'_>>;
}

/// Both ends of an in-process channel: the sender, then each receiver.
pub type Pair = (Box<dyn Endpoint + Send>, Vec<Box<dyn Endpoint + Send>>);

/// Files, queues or sockets a cross-process channel needs, removed on drop.
pub trait Resources {
    /// What a child needs to open its end (passed on its command line).
    fn token(&self) -> String;
}

/// The sending half of an end that may have none (a receiver's way back
/// exists only in pingpong).
#[inline]
pub fn sending<T>(tx: &mut Option<T>) -> io::Result<&mut T> {
    tx.as_mut()
        .ok_or_else(|| io::Error::other("no way back on this end"))
}

/// The receiving half of an end that may have none (a sender's, outside
/// pingpong).
#[inline]
pub fn receiving<T>(rx: &mut Option<T>) -> io::Result<&mut T> {
    rx.as_mut()
        .ok_or_else(|| io::Error::other("nothing to receive on this end"))
}

/// A message as the fixed-size array a typed peer carries; `what` names
/// the peer and its channel in the error.
#[inline]
pub fn fixed<'a, const N: usize>(msg: &'a [u8], what: &str) -> io::Result<&'a [u8; N]> {
    msg.try_into().map_err(|_| {
        io::Error::other(format!(
            "{what}: a {}-byte message on a {N}-byte channel",
            msg.len()
        ))
    })
}

/// The name of a block's sender-to-receiver way.
pub fn ping(token: &str) -> String {
    format!("{token}-ping")
}

/// The name of a block's way back (pingpong).
pub fn pong(token: &str) -> String {
    format!("{token}-pong")
}

/// A block's token and the files its peer library makes for it, removed
/// on drop (whichever exist then).
pub struct Files {
    pub token: String,
    pub paths: Vec<String>,
}

impl Resources for Files {
    fn token(&self) -> String {
        self.token.clone()
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        for p in &self.paths {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// A block's token and the shmbus buses or streams made for it, removed
/// on drop.
pub struct Segments {
    pub token: String,
    pub names: Vec<String>,
}

impl Resources for Segments {
    fn token(&self) -> String {
        self.token.clone()
    }
}

impl Drop for Segments {
    fn drop(&mut self) {
        for n in &self.names {
            let _ = shmbus::remove(n);
        }
    }
}

/// A way to move messages.
pub trait Mechanism: Sync {
    /// Name in tables and JSON.
    fn name(&self) -> &'static str;
    /// One line on what it is.
    fn describe(&self) -> &'static str;
    /// Whether both ends are threads of one process.
    fn in_process(&self) -> bool {
        false
    }
    /// Why it cannot run `pattern` at `msg_size`; `None` if it can.
    fn unsupported(&self, pattern: crate::case::Pattern, msg_size: usize) -> Option<String> {
        let _ = (pattern, msg_size);
        None
    }
    /// The least gap between paced messages (oneway, fanout) this row
    /// needs, where more than the run's: a receiver that sleeps must be
    /// asleep before the next message comes (the sleeping receivers' rows).
    fn min_pace(&self) -> Option<std::time::Duration> {
        None
    }
    /// Environment variables its receiver processes start with (a row
    /// that forces a choice the library makes once per process).
    fn child_env(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }
    /// Cross-process: creates what the channel needs, before the children
    /// start.
    fn setup(&self, spec: &ChannelSpec) -> io::Result<Box<dyn Resources>> {
        let _ = spec;
        Err(io::Error::other("in-process mechanism"))
    }
    /// Cross-process: opens one end in the calling process. The sender's
    /// open may wait for the receivers to open theirs.
    fn open(&self, token: &str, side: Side, spec: &ChannelSpec) -> io::Result<Box<dyn Endpoint>> {
        let _ = (token, side, spec);
        Err(io::Error::other("in-process mechanism"))
    }
    /// In-process: both ends at once, the sender first.
    fn pair(&self, spec: &ChannelSpec) -> io::Result<Pair> {
        let _ = spec;
        Err(io::Error::other("cross-process mechanism"))
    }
}

/// Why a lossless row does not run `pattern`: its figure is lossless
/// throughput; the latency patterns never fill a ring, so they
/// would repeat the lossy rows.
pub fn lossless_rows_only_throughput(
    lossless: bool,
    pattern: crate::case::Pattern,
) -> Option<String> {
    (lossless && pattern != crate::case::Pattern::Throughput)
        .then(|| "a lossless row: throughput only".into())
}

/// Why a lossless row that also measures the publisher's cost does not run
/// `pattern`: throughput as above, and fanout, whose paced receivers keep
/// up, so its figure is the time inside each publish with lossless
/// subscribers against lossy ones (the lossless rows' first target).
pub fn lossless_rows_only_throughput_and_fanout(
    lossless: bool,
    pattern: crate::case::Pattern,
) -> Option<String> {
    use crate::case::Pattern::{Fanout, Throughput};
    (lossless && !matches!(pattern, Throughput | Fanout))
        .then(|| "a lossless row: throughput and fanout only".into())
}

/// Every mechanism, in table order.
pub fn all() -> Vec<&'static dyn Mechanism> {
    vec![
        &floor::Floor,
        &floor::Floor2,
        &shmbus_bus::SHMBUS,
        &shmbus_bus::UNREGISTERED,
        &shmbus_bus::LOSSLESS,
        &shmbus_bus::ShmbusThreads,
        &shmbus_stream::ShmbusStream,
        &shmbus_zc::ShmbusZc,
        &ipc_ring_spsc::IpcRing,
        &crossbar_podbus::LOSSY,
        &crossbar_podbus::LOSSLESS,
        &ringfire::LOSSY,
        &ringfire::LOSSLESS,
        &pipe::Pipe,
        &uds::Uds,
        &tcp::Tcp,
        &tcp::TcpNagle,
        &udp::Udp,
        &mq::Mq,
        &iceoryx2_pubsub::Iceoryx2,
        &crossbar_pool::CrossbarPool,
        &ipmpsc_ring::Ipmpsc,
        &photon::PhotonRing,
        // Receivers that sleep (oneway and throughput).
        &shmbus_wake::FUTEX,
        &shmbus_wake::ASYNC,
        &shmbus_wake::ASYNC_THREAD,
        &shmbus_wake::Select64,
        &ringfire_async::RingfireAsync,
    ]
}

/// The mechanism called `name`.
pub fn find(name: &str) -> Result<&'static dyn Mechanism, BenchError> {
    all()
        .into_iter()
        .find(|m| m.name() == name)
        .ok_or_else(|| BenchError::UnknownMechanism {
            found: name.to_owned(),
            expected: all()
                .iter()
                .map(|m| m.name())
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// Slots of a ring of messages: enough for ~4 MiB, between 64 and 16384.
/// Every ring-backed mechanism is sized by this one rule, so none wins by
/// having more room than another.
pub fn ring_slots(msg_size: usize) -> usize {
    let slot = (msg_size + 8).div_ceil(64) * 64;
    ((4 << 20) / slot)
        .clamp(64, 16384)
        .next_power_of_two()
        .min(16384)
}

/// Sequence numbers with special meaning in a message's first 8 bytes.
pub mod marker {
    /// The measured interval starts now (receivers snapshot counters).
    pub const START: u64 = u64::MAX - 1;
    /// The run is over; receivers report and exit.
    pub const STOP: u64 = u64::MAX;
}

// The header codec is the message format's (payload.rs); the adapters use it
// through here.
pub use crate::payload::{HEADER, stamp, unstamp};

/// When the running block must be over: a receiver or sender that polls
/// shared memory has no end-of-file to tell it that its peer died, so it
/// checks this instead (see [`Patience`]).
static DEADLINE_NS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(u64::MAX);
static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();

fn since_epoch() -> u64 {
    EPOCH
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_nanos() as u64
}

/// Sets how long from now any polling loop in this process may wait.
pub fn set_deadline(limit: std::time::Duration) {
    let at = since_epoch().saturating_add(limit.as_nanos() as u64);
    DEADLINE_NS.store(at, std::sync::atomic::Ordering::Relaxed);
}

/// A polling loop's patience: spins, and fails with `TimedOut` once the
/// block's deadline has passed (checking the clock every 4096 spins).
#[derive(Default)]
pub struct Patience {
    spins: u32,
}

impl Patience {
    /// One more spin.
    #[inline]
    pub fn spin(&mut self) -> io::Result<()> {
        self.spins = self.spins.wrapping_add(1);
        if self.spins.is_multiple_of(4096)
            && since_epoch() > DEADLINE_NS.load(std::sync::atomic::Ordering::Relaxed)
        {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "no message before the block's deadline (has the peer died?)",
            ));
        }
        std::hint::spin_loop();
        Ok(())
    }
}
