//! `ringfire`: the ringfire crate's SPMC broadcast ring between processes
//! (one file under /dev/shm per way, mapped by each side).
//!
//! Configured like shmbus's bus: a `RingProducer` built with
//! `FlowControl::LossyLatestWins` (the publisher never waits; no reader
//! registry, `max_readers(0)`, so a receiver writes nothing shared), sized
//! by `ring_slots` (~4 MiB of messages, 64 to 16384 slots, a power of two),
//! `push` per message; each receiver a `RingConsumer` attached from the
//! head (only messages published after it attached) busy-polling
//! `recv_status`, which copies the value out of its slot (a sequence check,
//! the copy, the sequence again). A consumer that falls behind skips to the
//! oldest message still in the ring; the growth of its own lap count
//! (`lapped_count`) is passed on as lost messages, like shmbus's lag.
//! Pingpong uses a second ring back; fanout one ring with a consumer per
//! receiver. Its `tokio` feature's `AsyncRingConsumer` is the
//! `ringfire-async` row (ringfire_async.rs).
//!
//! A ring carries a type fixed at compile time, so messages are `[u8; N]`
//! for the sizes in [`SIZES`] (its slot is the 8-byte sequence then the
//! array, unpadded); other sizes are not supported. Each ring is made by
//! its publisher (the sender the ping ring, receiver 0 the pong ring, in
//! their `open`), the other side retrying its attach until the ring's
//! header is published. A producer unlinks its file when dropped; the
//! block's `Resources` remove them too, for a child that was killed.
//!
//! `ringfire-lossless` is the same ring built with
//! `FlowControl::LosslessBackpressure` (its default reader registry; each
//! consumer registers as it attaches, and `push` waits for the slowest
//! registered one): throughput and fanout rows, beside `shmbus-lossless`
//! (in fanout, the time inside each `push`: the publisher's cost).
//!
//! Its variable-size `BlobProducer`/`BlobConsumer` ring is not a row of the
//! zero-copy (`--large`) table: a blob's bytes live in one byte arena that
//! the producer overwrites as it wraps, and a consumer can only see them
//! inside a closure (`view`), whose result is thrown away if the payload
//! was overwritten meanwhile. A receiver cannot hold a message in place
//! past that call, as the `shmbus-zc`, `iceoryx2` and `crossbar-pool` rows
//! hold their samples, so it would have to copy every message out: a
//! copying ring, which this row already measures.

use std::io;
use std::time::{Duration, Instant};

use ::ringfire::{
    ConsumerStartMode, FlowControl, RecvStatus, RingConsumer, RingConsumerBuilder, RingProducer,
    RingProducerBuilder,
};

use super::{ChannelSpec, Endpoint, Files, Got, Mechanism, Resources, Side, ping, pong};
use crate::case::Pattern;

/// ringfire's SPMC ring between processes, lossy or lossless.
pub struct Ringfire {
    lossless: bool,
}

/// `ringfire`: `LossyLatestWins`.
pub static LOSSY: Ringfire = Ringfire { lossless: false };
/// `ringfire-lossless`: `LosslessBackpressure` (throughput and fanout).
pub static LOSSLESS: Ringfire = Ringfire { lossless: true };

/// The message sizes this adapter has a `[u8; N]` for: every size of the
/// bench's tables, and 48 and 56 B (one 64-byte line with the bench's
/// stamp; pass `--msg-size 48` or `56`).
pub const SIZES: [usize; 15] = [
    16, 32, 48, 56, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536,
];

/// How long an open may wait for the peer's ring to appear.
const OPEN_LIMIT: Duration = Duration::from_secs(10);

fn io_err(what: &str, e: impl std::fmt::Display) -> io::Error {
    io::Error::other(format!("ringfire: {what}: {e}"))
}

/// The file a way's ring lives in.
pub(crate) fn path(name: &str) -> String {
    format!("/dev/shm/{name}")
}

pub(crate) fn attach<const N: usize>(name: &str) -> io::Result<RingConsumer<[u8; N]>> {
    let deadline = Instant::now() + OPEN_LIMIT;
    loop {
        let attached = RingConsumerBuilder::<[u8; N]>::new()
            .start_mode(ConsumerStartMode::Head)
            .attach(path(name));
        match attached {
            Ok(c) => return Ok(c),
            // Not there yet (no file, an empty one, or a header its
            // producer has not published yet).
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(1)),
            Err(e) => return Err(io_err(&format!("attach {name}"), e)),
        }
    }
}

pub(super) fn create<const N: usize>(
    name: &str,
    lossless: bool,
) -> io::Result<RingProducer<[u8; N]>> {
    let builder = RingProducerBuilder::new(super::ring_slots(N) as u64);
    let builder = if lossless {
        // Its default registry (`DEFAULT_MAX_READERS` readers).
        builder.flow_control(FlowControl::LosslessBackpressure)
    } else {
        builder
            .flow_control(FlowControl::LossyLatestWins)
            .max_readers(0)
    };
    builder
        .build::<[u8; N], _>(path(name))
        .map_err(|e| io_err(&format!("create {name}"), e))
}

struct Ends<const N: usize> {
    tx: Option<RingProducer<[u8; N]>>,
    rx: Option<RingConsumer<[u8; N]>>,
    /// The last message received (`recv_status` returns a copy).
    last: Box<[u8; N]>,
    /// `last` is a message not handed out yet (a loss was reported first).
    pending: bool,
    /// The consumer's `lapped_count` already reported.
    lapped: u64,
}

impl<const N: usize> Endpoint for Ends<N> {
    #[inline]
    fn send(&mut self, msg: &[u8]) -> io::Result<()> {
        let tx = super::sending(&mut self.tx)?;
        let msg: &[u8; N] = super::fixed(msg, "ringfire")?;
        tx.push(msg);
        Ok(())
    }
    #[inline]
    fn recv(&mut self) -> io::Result<Got<'_>> {
        if std::mem::take(&mut self.pending) {
            return Ok(Got::Msg(&self.last[..]));
        }
        let rx = super::receiving(&mut self.rx)?;
        let mut patience = super::Patience::default();
        loop {
            let got = match rx.recv_status() {
                RecvStatus::Ok(m) | RecvStatus::Lapped { item: m, .. } => Some(m),
                RecvStatus::Empty => None,
            };
            // The lap count, not `Lapped`'s own figure: a poll that skips
            // ahead and then finds nothing returns `Empty`, and only the
            // count keeps those skips.
            let lost = rx.lapped_count() - self.lapped;
            self.lapped = rx.lapped_count();
            match (got, lost) {
                (Some(m), 0) => {
                    *self.last = m;
                    return Ok(Got::Msg(&self.last[..]));
                }
                (Some(m), n) => {
                    *self.last = m;
                    self.pending = true;
                    return Ok(Got::Lost(n));
                }
                (None, 0) => patience.spin()?,
                (None, n) => return Ok(Got::Lost(n)),
            }
        }
    }
}

fn open_n<const N: usize>(
    token: &str,
    side: Side,
    spec: &ChannelSpec,
    lossless: bool,
) -> io::Result<Box<dyn Endpoint>> {
    // Each side makes the ring it publishes before it waits for the other.
    let (tx, rx) = match side {
        Side::Sender => {
            let tx = create::<N>(&ping(token), lossless)?;
            let rx = spec.duplex.then(|| attach::<N>(&pong(token))).transpose()?;
            (Some(tx), rx)
        }
        Side::Receiver(i) => {
            let tx = (spec.duplex && i == 0)
                .then(|| create::<N>(&pong(token), lossless))
                .transpose()?;
            (tx, Some(attach::<N>(&ping(token))?))
        }
    };
    Ok(Box::new(Ends {
        tx,
        rx,
        last: Box::new([0; N]),
        pending: false,
        lapped: 0,
    }))
}

impl Mechanism for Ringfire {
    fn name(&self) -> &'static str {
        if self.lossless {
            "ringfire-lossless"
        } else {
            "ringfire"
        }
    }
    fn describe(&self) -> &'static str {
        if self.lossless {
            "ringfire SPMC ring, LosslessBackpressure (registered readers gate the writer)"
        } else {
            "ringfire SPMC broadcast ring between processes (/dev/shm, LatestWins, busy-poll)"
        }
    }
    fn unsupported(&self, pattern: Pattern, msg_size: usize) -> Option<String> {
        if let Some(why) = super::lossless_rows_only_throughput_and_fanout(self.lossless, pattern) {
            return Some(why);
        }
        (!SIZES.contains(&msg_size)).then(|| {
            "its message type is fixed at compile time: 16, 32, 48, 56 B and powers of \
             two to 64 KiB"
                .into()
        })
    }
    fn setup(&self, spec: &ChannelSpec) -> io::Result<Box<dyn Resources>> {
        let token = format!("{}-rf", spec.prefix);
        let paths = [ping(&token), pong(&token)]
            .iter()
            .map(|n| path(n))
            .collect();
        Ok(Box::new(Files { token, paths }))
    }
    fn open(&self, token: &str, side: Side, spec: &ChannelSpec) -> io::Result<Box<dyn Endpoint>> {
        match spec.msg_size {
            16 => open_n::<16>(token, side, spec, self.lossless),
            32 => open_n::<32>(token, side, spec, self.lossless),
            48 => open_n::<48>(token, side, spec, self.lossless),
            56 => open_n::<56>(token, side, spec, self.lossless),
            64 => open_n::<64>(token, side, spec, self.lossless),
            128 => open_n::<128>(token, side, spec, self.lossless),
            256 => open_n::<256>(token, side, spec, self.lossless),
            512 => open_n::<512>(token, side, spec, self.lossless),
            1024 => open_n::<1024>(token, side, spec, self.lossless),
            2048 => open_n::<2048>(token, side, spec, self.lossless),
            4096 => open_n::<4096>(token, side, spec, self.lossless),
            8192 => open_n::<8192>(token, side, spec, self.lossless),
            16384 => open_n::<16384>(token, side, spec, self.lossless),
            32768 => open_n::<32768>(token, side, spec, self.lossless),
            65536 => open_n::<65536>(token, side, spec, self.lossless),
            n => Err(io::Error::other(format!(
                "ringfire: no {n}-byte message type (sizes {SIZES:?})"
            ))),
        }
    }
}
