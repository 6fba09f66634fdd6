//! `bridge out`: a local bus's subscriber that puts each message on Zenoh.
//!
//! Batching: after a message is received, what is already on the bus
//! behind it (never waiting for more) goes in the same put, up to
//! [`BATCH_BYTES`](crate::BATCH_BYTES): an idle bus's message goes alone at once, a busy one's
//! go in few puts, so the per-put cost of Zenoh is paid once per batch.
//! A lap ends a batch (the batch first, then the gap frame).
//!
//! Congestion control is `Block`: Zenoh then never drops a frame silently
//! (a dropped put is not reported to its sender), and a network too slow
//! for the bus makes this subscriber fall behind until the bus laps it,
//! which it learns exactly and sends on as a gap frame. The bus's
//! publisher never waits for it, unless the bridge is lossless
//! ([`OutOptions::lossless`]): then a network slower than the bus holds
//! the bus's publisher back (a blocked put holds this subscriber still,
//! and the publisher waits for it), up to the bus's eviction timeout;
//! after that the bus evicts it, it is lossy from then on
//! ([`OutStats::evicted`]), and its laps are counted and sent on as above.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use shmbus::{OpenError, OpenOptions, Received, Start, Subscriber, Wait, WaitStrategy};
use zenoh::Wait as _;
use zenoh::handlers::FifoChannel;
use zenoh::qos::CongestionControl;

use crate::frame::{BATCH_BYTES, BatchWriter, Frame, Upstream};
use crate::{BridgeError, Endpoints, replay, session};

/// How `bridge_out` runs.
///
/// # Examples
/// ```
/// use shmbus::{Start, WaitStrategy};
/// use shmbus_zenoh::{Endpoints, OutOptions};
/// let opts = OutOptions {
///     name: "ticks".into(),
///     key: "md/ticks".into(),
///     endpoints: Endpoints { connect: vec!["tcp/10.0.0.2:7447".into()], ..Endpoints::default() },
///     start: Start::Next,
///     wait: WaitStrategy::default(),
///     lossless: false,
/// };
/// ```
#[derive(Clone, Debug)]
pub struct OutOptions {
    /// The local bus to read.
    pub name: String,
    /// The Zenoh key expression to put on.
    pub key: String,
    /// Where to listen and whom to dial.
    pub endpoints: Endpoints,
    /// Where the subscriber starts on the bus.
    pub start: Start,
    /// How it waits for the bus's next message: `BusySpin` for the lowest
    /// latency (a core busy), the default spins briefly then sleeps on the
    /// futex (a wake costs tens of µs on a VM).
    pub wait: WaitStrategy,
    /// Open the bus as a lossless subscriber (`OpenOptions::lossless`):
    /// the bus's publisher waits for the bridge (and so for the network)
    /// rather than lap it, up to the bus's eviction timeout. The bus may
    /// refuse it ([`BridgeError::Open`] with `OpenError::Lossless`).
    pub lossless: bool,
}

/// What `bridge_out` has done so far.
///
/// # Examples
/// ```
/// let s = shmbus_zenoh::OutStats { forwarded: 98, lost: 2, matched: true, evicted: false };
/// assert_eq!(s.forwarded + s.lost, 100); // what the bus published since it joined
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OutStats {
    /// Messages put on Zenoh.
    pub forwarded: u64,
    /// Messages the bus lapped this bridge by (sent on as gap frames).
    pub lost: u64,
    /// Whether a remote subscriber matches the key (puts before that go
    /// nowhere: Zenoh sends only to matching subscribers).
    pub matched: bool,
    /// A lossless bridge ([`OutOptions::lossless`]) that the bus evicted:
    /// it held the bus's publisher back past the eviction timeout, and is
    /// lossy from then on (`on_stats` is called when this turns true).
    pub evicted: bool,
}

/// How often the stats callback runs.
const STATS_EVERY: Duration = Duration::from_secs(1);

/// Reads `opts.name` from `opts.start` and puts every message on
/// `opts.key` until `stop` is set (checked at least every 100 ms), calling
/// `on_stats` about once a second and whenever `matched` changes.
///
/// # Errors
/// [`BridgeError`]: the bus could not be opened, Zenoh could not be set up
/// or refused a put.
///
/// # Examples
/// ```
/// use std::sync::atomic::AtomicBool;
/// use shmbus::{BusOptions, Publisher, Start, WaitStrategy};
/// use shmbus_zenoh::{bridge_out, Endpoints, OutOptions};
///
/// # let name = format!("/dev/shm/doc-bridge-out-{}", std::process::id());
/// let publisher = Publisher::<[u8]>::create(&name, &BusOptions::new(64).msg_size(32))?;
/// let opts = OutOptions {
///     name: name.clone(),
///     key: "doc/out".into(),
///     endpoints: Endpoints::default(),
///     start: Start::Next,
///     wait: WaitStrategy::default(),
///     lossless: false,
/// };
/// // Set from a signal handler in `shmbus bridge out`; set already here,
/// // so it returns at its first look.
/// let stop = AtomicBool::new(true);
/// let stats = bridge_out(&opts, &stop, |s| println!("forwarded {}", s.forwarded))?;
/// assert_eq!(stats.forwarded, 0);
/// # drop(publisher); shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn bridge_out(
    opts: &OutOptions,
    stop: &AtomicBool,
    mut on_stats: impl FnMut(&OutStats),
) -> Result<OutStats, BridgeError> {
    let session = session(&opts.endpoints)?;
    let (mut sub, upstream) = open(opts)?;
    let publisher = session
        .declare_publisher(opts.key.clone())
        .congestion_control(CongestionControl::Block)
        .wait()
        .map_err(|e| BridgeError::Zenoh(e.to_string()))?;
    // Journal queries are answered on a thread of ours (`replay`); a bus
    // without a journal answers each with an error.
    let queryable = session
        .declare_queryable(replay::journal_key(&opts.key))
        .with(FifoChannel::new(16))
        .wait()
        .map_err(|e| BridgeError::Zenoh(e.to_string()))?;
    let finished = AtomicBool::new(false);
    let stopped = || stop.load(Ordering::Relaxed) || finished.load(Ordering::Relaxed);
    std::thread::scope(|s| {
        s.spawn(|| replay::serve(&queryable, &opts.name, upstream, &stopped));
        let result = forward(
            &mut sub,
            upstream,
            &publisher,
            stop,
            opts.lossless,
            &mut on_stats,
        );
        finished.store(true, Ordering::Relaxed);
        result
    })
}

/// Opens the bus and names the creation of it that was opened: its header
/// read before and after the open says the same creation (a bus removed
/// and made again in between is read again; each creation has its own
/// `created_ns`).
fn open(opts: &OutOptions) -> Result<(Subscriber<[u8]>, Upstream), BridgeError> {
    let open = OpenOptions::default()
        .start(opts.start)
        .wait_strategy(opts.wait)
        .lossless(opts.lossless);
    let open_error = |source| BridgeError::Open {
        name: opts.name.clone(),
        source,
    };
    let creation = || {
        shmbus::stat::stat(&opts.name)
            .map(|s| Upstream::from_header(s.created_ns, s.creator_pid, s.first_seq))
    };
    let mut tries = 0;
    loop {
        let before = creation().map_err(open_error)?;
        let sub = Subscriber::<[u8]>::open(&opts.name, &open).map_err(open_error)?;
        match creation() {
            Ok(after) if after == before => return Ok((sub, before)),
            // Re-created meanwhile: again, a few times.
            Ok(_) | Err(OpenError::NotFound { .. }) if tries < 3 => tries += 1,
            Ok(_) => {
                return Err(BridgeError::Recreated {
                    name: opts.name.clone(),
                });
            }
            Err(e) => return Err(open_error(e)),
        }
    }
}

/// The main loop: every message of `sub` put on Zenoh, until `stop`.
fn forward(
    sub: &mut Subscriber<[u8]>,
    upstream: Upstream,
    publisher: &zenoh::pubsub::Publisher<'_>,
    stop: &AtomicBool,
    lossless: bool,
    on_stats: &mut impl FnMut(&OutStats),
) -> Result<OutStats, BridgeError> {
    let msg_size = sub.msg_size();
    let mut stats = OutStats::default();
    let mut last_report = Instant::now();
    let put = |bytes: Vec<u8>| {
        publisher
            .put(bytes)
            .wait()
            .map_err(|e| BridgeError::Zenoh(e.to_string()))
    };
    let mut last_match_check = Instant::now() - STATS_EVERY;
    while !stop.load(Ordering::Relaxed) {
        // A receive returns one message (at the position it started from)
        // or one lag (of the sequences from there): either way `at` names
        // it.
        let at = sub.position();
        let idle = match sub.recv(Wait::For(Duration::from_millis(100))) {
            Some(Received::Message(bytes)) => {
                let mut batch = BatchWriter::new(upstream, at, msg_size, BATCH_BYTES, bytes);
                let mut lap = None;
                while batch.has_room() {
                    let at = sub.position();
                    match sub.try_recv() {
                        Some(Received::Message(bytes)) => batch.push(bytes),
                        Some(Received::Lagged { skipped }) => {
                            lap = Some((at, skipped));
                            break;
                        }
                        None => break,
                    }
                }
                let count = batch.count();
                put(batch.finish())?;
                stats.forwarded += count;
                if let Some((first, count)) = lap {
                    put(gap(upstream, first, count))?;
                    stats.lost += count;
                }
                false
            }
            Some(Received::Lagged { skipped }) => {
                put(gap(upstream, at, skipped))?;
                stats.lost += skipped;
                false
            }
            None => true,
        };
        // Evicted: said at once, not at the next second's stats.
        if lossless && !stats.evicted && !sub.is_lossless() {
            stats.evicted = true;
            on_stats(&stats);
            last_report = Instant::now();
        }
        // Whether anyone listens: asked when idle or every 100 ms, never
        // per message.
        if idle || last_match_check.elapsed() >= Duration::from_millis(100) {
            last_match_check = Instant::now();
            let matched = publisher
                .matching_status()
                .wait()
                .map(|m| m.matching())
                .unwrap_or(false);
            if matched != stats.matched {
                stats.matched = matched;
                on_stats(&stats);
                last_report = Instant::now();
            }
        }
        if last_report.elapsed() >= STATS_EVERY {
            on_stats(&stats);
            last_report = Instant::now();
        }
    }
    Ok(stats)
}

fn gap(upstream: Upstream, first: u64, count: u64) -> Vec<u8> {
    Frame::Gap {
        upstream,
        first,
        count,
    }
    .encode()
}
