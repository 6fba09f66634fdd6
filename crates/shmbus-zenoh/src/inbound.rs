//! `bridge in`: publishes what arrives from Zenoh into a local bus, at the
//! upstream's sequence numbers.
//!
//! # Invariants
//! - The downstream bus's next sequence is the next upstream sequence this
//!   bridge expects. A new downstream bus starts at the first frame's
//!   sequence, so its subscribers, all of whom joined after it, have
//!   missed nothing.
//! - A frame past that point means a hole (a gap frame from the
//!   bridge-out, or frames Zenoh dropped or never delivered): the hole is
//!   given up with `Publisher::skip`, and every downstream subscriber
//!   counts it in `Lagged`. So, from a subscriber's join, delivered +
//!   skipped equals what the upstream published in that span.
//! - A frame before that point (a repeat, or an upstream restarted at a
//!   lower sequence) is dropped and counted in [`InStats::repeats`]: the
//!   downstream never goes back.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use shmbus::{BusOptions, OpenOptions, Publisher, Region};
use zenoh::Wait as _;

use crate::frame::Frame;
use crate::{session, BridgeError, Endpoints};

/// How `bridge_in` runs.
#[derive(Clone, Debug)]
pub struct InOptions {
    /// The Zenoh key expression to subscribe to.
    pub key: String,
    /// The local bus to publish into.
    pub name: String,
    /// Create the bus, with this many slots and the upstream's message
    /// size, when the first frame arrives, unless it exists (then, as
    /// without this, it is taken over: it must have no live publisher).
    pub create: Option<u64>,
    /// Where to listen and whom to dial.
    pub endpoints: Endpoints,
}

/// What `bridge_in` has done so far.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InStats {
    /// Messages published into the local bus.
    pub published: u64,
    /// Upstream sequences given up (gap frames and holes).
    pub skipped: u64,
    /// Frames dropped because their sequence was already passed.
    pub repeats: u64,
    /// Payloads that were not frames (see `frame::FrameError`), dropped.
    pub bad_frames: u64,
}

const STATS_EVERY: Duration = Duration::from_secs(1);

/// Subscribes to `opts.key` and publishes every frame into `opts.name`
/// until `stop` is set (checked at least every 100 ms), calling
/// `on_stats` about once a second and once the subscription is declared
/// (with all counts zero), so a caller can tell it is listening.
///
/// # Errors
/// [`BridgeError`]: Zenoh could not be set up, the bus could not be made
/// or taken over, or upstream messages do not fit it.
pub fn bridge_in(
    opts: &InOptions,
    stop: &AtomicBool,
    mut on_stats: impl FnMut(&InStats),
) -> Result<InStats, BridgeError> {
    let session = session(&opts.endpoints)?;
    let sub = session
        .declare_subscriber(opts.key.clone())
        .wait()
        .map_err(|e| BridgeError::Zenoh(e.to_string()))?;
    let mut stats = InStats::default();
    on_stats(&stats);
    let mut last_report = Instant::now();
    let mut bus: Option<Publisher<[u8]>> = None;
    while !stop.load(Ordering::Relaxed) {
        if last_report.elapsed() >= STATS_EVERY {
            on_stats(&stats);
            last_report = Instant::now();
        }
        let sample = match sub.recv_timeout(Duration::from_millis(100)) {
            Ok(Some(sample)) => sample,
            Ok(None) => continue,
            Err(e) => return Err(BridgeError::Zenoh(e.to_string())),
        };
        let payload = sample.payload().to_bytes();
        let frame = match Frame::parse(&payload) {
            Ok(frame) => frame,
            Err(_) => {
                stats.bad_frames += 1;
                continue;
            }
        };
        let (first, msg_size) = match frame {
            Frame::Message { seq, msg_size, .. } => (seq, msg_size),
            Frame::Batch {
                first, msg_size, ..
            } => (first, msg_size),
            // A gap before any message says nothing a new bus needs: it
            // starts after it, at the next message.
            Frame::Gap { .. } if bus.is_none() => continue,
            Frame::Gap { first, .. } => (first, 0),
        };
        let publisher = match &mut bus {
            Some(p) => p,
            None => bus.insert(downstream(opts, first, msg_size)?),
        };
        apply(publisher, &frame, &mut stats, &opts.name)?;
    }
    Ok(stats)
}

/// The downstream bus: created at `first` if asked and it does not exist
/// yet, else taken over (a restarted bridge-in carries on where the last
/// one stopped, and the hole between is skipped like any other).
fn downstream(opts: &InOptions, first: u64, msg_size: u64) -> Result<Publisher<[u8]>, BridgeError> {
    let attach = || {
        Publisher::<[u8]>::attach(&opts.name, &OpenOptions::default()).map_err(|source| {
            BridgeError::Attach {
                name: opts.name.clone(),
                source,
            }
        })
    };
    let publisher = match opts.create {
        Some(capacity) => {
            let size = u32::try_from(msg_size).unwrap_or(u32::MAX);
            let bus = BusOptions::new(capacity)
                .msg_size(size)
                .first_sequence(first);
            match Publisher::<[u8]>::create(&opts.name, &bus) {
                Ok(p) => p,
                Err(shmbus::CreateError::AlreadyExists { .. }) => attach()?,
                Err(source) => {
                    return Err(BridgeError::Create {
                        name: opts.name.clone(),
                        source,
                    })
                }
            }
        }
        None => attach()?,
    };
    if (publisher.msg_size() as u64) < msg_size {
        return Err(BridgeError::MsgSize {
            name: opts.name.clone(),
            upstream: msg_size,
            downstream: publisher.msg_size(),
        });
    }
    Ok(publisher)
}

/// Publishes one frame at its upstream sequence, giving up the hole
/// before it.
fn apply<R: Region>(
    p: &mut Publisher<[u8], R>,
    frame: &Frame<'_>,
    stats: &mut InStats,
    name: &str,
) -> Result<(), BridgeError> {
    let next = p.next_sequence();
    // Signed distance: sequences wrap like the bus's.
    let ahead = |seq: u64| seq.wrapping_sub(next) as i64;
    match *frame {
        Frame::Message { seq, bytes, .. } => {
            if ahead(seq) < 0 {
                stats.repeats += 1;
                return Ok(());
            }
            skip(p, ahead(seq) as u64, stats);
            p.publish(bytes).map_err(|_| BridgeError::MsgSize {
                name: name.to_owned(),
                upstream: bytes.len() as u64,
                downstream: p.msg_size(),
            })?;
            stats.published += 1;
        }
        // Message by message, so holes and repeats within and between
        // batches follow the same rules as lone messages.
        Frame::Batch { .. } => {
            for message in frame.messages() {
                apply(p, &message, stats, name)?;
            }
        }
        Frame::Gap { first, count, .. } => {
            let end = first.wrapping_add(count);
            if ahead(end) <= 0 {
                stats.repeats += 1;
                return Ok(());
            }
            skip(p, ahead(end) as u64, stats);
        }
    }
    Ok(())
}

fn skip<R: Region>(p: &mut Publisher<[u8], R>, n: u64, stats: &mut InStats) {
    // A hole too far to tell from a lap (2^60) cannot come from a bus
    // whose sequences stay within 2^61: skip what may be skipped.
    let n = n.min(shmbus::SkipError::MAX);
    if p.skip(n).is_ok() {
        stats.skipped += n;
    }
}

#[cfg(test)]
mod tests {
    use shmbus::{Publisher, Received, Start, Wait, WaitStrategy};

    use super::*;

    fn message(seq: u64, bytes: &[u8]) -> Frame<'_> {
        Frame::Message {
            epoch: 1,
            seq,
            msg_size: 8,
            bytes,
        }
    }

    #[test]
    fn holes_are_skipped_repeats_dropped_and_every_sequence_kept() {
        let mut p = Publisher::<[u8], _>::on_heap_bytes(8, 64).expect("a heap bus");
        let mut sub = p.subscribe(Start::Next, WaitStrategy::BusySpin);
        let mut stats = InStats::default();
        let frames = [
            message(0, b"a"),
            message(3, b"d"), // a hole: 1 and 2 never came
            message(2, b"c"), // late: a repeat now
            Frame::Gap {
                epoch: 1,
                first: 4,
                count: 2,
            },
            Frame::Gap {
                epoch: 1,
                first: 5,
                count: 2,
            }, // overlaps: only 6 is new
            message(7, b"h"),
        ];
        for f in &frames {
            apply(&mut p, f, &mut stats, "test").expect("fits");
        }
        assert_eq!(p.next_sequence(), 8);
        let (mut got, mut skipped) = (Vec::new(), 0);
        while let Some(r) = sub.recv(Wait::Never) {
            match r {
                Received::Message(m) => got.push(m[0]),
                Received::Lagged { skipped: n } => skipped += n,
            }
        }
        assert_eq!(got, b"adh");
        assert_eq!(skipped, 5, "1, 2, 4, 5, 6");
        assert_eq!(
            stats,
            InStats {
                published: 3,
                skipped: 5,
                repeats: 1,
                bad_frames: 0
            }
        );
    }

    #[test]
    fn batches_with_holes_repeats_and_overlaps_keep_delivered_plus_skipped_exact() {
        let mut p = Publisher::<[u8], _>::on_heap_bytes(1, 64).expect("a heap bus");
        let mut sub = p.subscribe(Start::Next, WaitStrategy::BusySpin);
        let mut stats = InStats::default();
        let batch = |first: u64, bytes: &'static [u8]| Frame::Batch {
            epoch: 1,
            first,
            msg_size: 1,
            bytes,
        };
        let frames = [
            batch(0, b"abc"),  // 0..3
            batch(5, b"fg"),   // a hole: 3 and 4
            batch(4, b"efgh"), // overlaps: 4..7 repeats, 7 is new
            Frame::Gap {
                epoch: 1,
                first: 8,
                count: 2,
            }, // 8, 9 lost upstream
            batch(9, b"jk"),   // 9 is past, 10 new
            batch(11, b"l"),   // one
            batch(0, b"abc"),  // a late repeat of the first
            batch(14, b"op"),  // a hole: 12, 13
        ];
        for f in &frames {
            apply(&mut p, f, &mut stats, "test").expect("fits");
        }
        assert_eq!(p.next_sequence(), 16);
        let (mut got, mut skipped) = (Vec::new(), 0);
        while let Some(r) = sub.recv(Wait::Never) {
            match r {
                Received::Message(m) => got.push(m[0]),
                Received::Lagged { skipped: n } => skipped += n,
            }
        }
        assert_eq!(got, b"abcfghklop");
        assert_eq!(skipped, 6, "3, 4, 8, 9, 12, 13");
        assert_eq!(got.len() as u64 + skipped, 16, "every sequence once");
        assert_eq!(
            stats,
            InStats {
                published: 10,
                skipped: 6,
                repeats: 3 + 1 + 3,
                bad_frames: 0
            }
        );
    }
}
