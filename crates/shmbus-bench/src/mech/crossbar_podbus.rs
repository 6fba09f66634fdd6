//! `crossbar-podbus`: the crossbar crate's `PodBus`, a seqlock SPMC
//! broadcast ring between processes (a file under /dev/shm, mapped by each
//! side, with a lock file beside it).
//!
//! Configured like shmbus's bus: the lossy ring (`PodBus::create`, the
//! publisher never waits), sized by `ring_slots` (~4 MiB of messages, 64 to
//! 16384 slots), subscribers busy-polling `try_recv` (which copies the
//! value out of its slot: a seqlock read). A subscriber that falls behind
//! skips ahead; the growth of its `total_lagged` is passed on as lost
//! messages, like shmbus's lag. Pingpong uses a second bus back; fanout one
//! bus with a subscriber per receiver.
//!
//! PodBus carries a `Pod` type fixed at compile time, so messages are
//! `[u8; N]` for the sizes in [`SIZES`]; other sizes are not supported.
//! It moves a value with one volatile read or write of the whole type,
//! which LLVM expands byte by byte: above 4 KiB rustc overflows its stack
//! compiling it (seen at 64 KiB), so 8 KiB and up are not supported. Each bus is made by its publisher (the sender the ping bus,
//! receiver 0 the pong bus, in their `open`), the other side retrying its
//! connect until it is there. `crossbar-podbus-lossless` is the bounded
//! ring (`PodBus::create_bounded`, watermark 1: the publisher spin-waits
//! while the slowest subscriber is a ring less one slot behind; each
//! subscriber claims a cursor slot as it connects): a throughput row only,
//! beside `shmbus-lossless`. A publisher removes its files when dropped;
//! the block's `Resources` remove them too, for a child that was killed.

use std::io;
use std::time::{Duration, Instant};

use ::crossbar::{BusSubscriber, PodBus};

use super::{ChannelSpec, Endpoint, Files, Got, Mechanism, Resources, Side, ping, pong};
use crate::case::Pattern;

/// crossbar's PodBus between processes, lossy or bounded (lossless).
pub struct CrossbarPodBus {
    lossless: bool,
}

/// `crossbar-podbus`: the unbounded (lossy) ring.
pub static LOSSY: CrossbarPodBus = CrossbarPodBus { lossless: false };
/// `crossbar-podbus-lossless`: the bounded ring (throughput only).
pub static LOSSLESS: CrossbarPodBus = CrossbarPodBus { lossless: true };

/// The message sizes this adapter has a `[u8; N]` for (see above).
pub const SIZES: [usize; 9] = [16, 32, 64, 128, 256, 512, 1024, 2048, 4096];

/// How long an open may wait for the peer's bus to appear.
const OPEN_LIMIT: Duration = Duration::from_secs(10);

fn io_err(what: &str, e: impl std::fmt::Display) -> io::Error {
    io::Error::other(format!("crossbar PodBus: {what}: {e}"))
}

fn connect<const N: usize>(name: &str) -> io::Result<BusSubscriber<[u8; N]>> {
    let deadline = Instant::now() + OPEN_LIMIT;
    loop {
        match BusSubscriber::<[u8; N]>::connect(name) {
            Ok(s) => return Ok(s),
            // Not there yet (no file, or its publisher is still making it).
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(1)),
            Err(e) => return Err(io_err(&format!("connect {name}"), e)),
        }
    }
}

fn create<const N: usize>(name: &str, lossless: bool) -> io::Result<PodBus<[u8; N]>> {
    if lossless {
        PodBus::<[u8; N]>::create_bounded(name, super::ring_slots(N), 1)
    } else {
        PodBus::<[u8; N]>::create(name, super::ring_slots(N))
    }
    .map_err(|e| io_err(&format!("create {name}"), e))
}

struct Ends<const N: usize> {
    tx: Option<PodBus<[u8; N]>>,
    rx: Option<BusSubscriber<[u8; N]>>,
    /// The last message received (`try_recv` returns a copy).
    last: Box<[u8; N]>,
    /// `last` is a message not handed out yet (a loss was reported first).
    pending: bool,
    /// The subscriber's `total_lagged` already reported.
    lagged: u64,
}

impl<const N: usize> Endpoint for Ends<N> {
    #[inline]
    fn send(&mut self, msg: &[u8]) -> io::Result<()> {
        let tx = super::sending(&mut self.tx)?;
        let msg: &[u8; N] = super::fixed(msg, "crossbar PodBus")?;
        tx.publish(*msg);
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
            let got = rx.try_recv();
            let lost = rx.total_lagged() - self.lagged;
            self.lagged = rx.total_lagged();
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
    // Each side makes the bus it publishes before it waits for the other.
    let (tx, rx) = match side {
        Side::Sender => {
            let tx = create::<N>(&ping(token), lossless)?;
            let rx = spec
                .duplex
                .then(|| connect::<N>(&pong(token)))
                .transpose()?;
            (Some(tx), rx)
        }
        Side::Receiver(i) => {
            let tx = (spec.duplex && i == 0)
                .then(|| create::<N>(&pong(token), lossless))
                .transpose()?;
            (tx, Some(connect::<N>(&ping(token))?))
        }
    };
    Ok(Box::new(Ends {
        tx,
        rx,
        last: Box::new([0; N]),
        pending: false,
        lagged: 0,
    }))
}

impl Mechanism for CrossbarPodBus {
    fn name(&self) -> &'static str {
        if self.lossless {
            "crossbar-podbus-lossless"
        } else {
            "crossbar-podbus"
        }
    }
    fn describe(&self) -> &'static str {
        if self.lossless {
            "crossbar PodBus bounded (lossless) ring: the publisher waits for the slowest"
        } else {
            "crossbar PodBus seqlock SPMC ring between processes (/dev/shm, lossy, busy-poll)"
        }
    }
    fn unsupported(&self, pattern: Pattern, msg_size: usize) -> Option<String> {
        if let Some(why) = super::lossless_rows_only_throughput(self.lossless, pattern) {
            return Some(why);
        }
        (!SIZES.contains(&msg_size)).then(|| {
            "its message type is fixed at compile time, and its volatile copy of \
             the whole type does not compile above 4 KiB: powers of two, 16 B to 4 KiB"
                .into()
        })
    }
    fn setup(&self, spec: &ChannelSpec) -> io::Result<Box<dyn Resources>> {
        let token = format!("{}-xpod", spec.prefix);
        let paths = [ping(&token), pong(&token)]
            .iter()
            .flat_map(|n| {
                let file = format!("/dev/shm/crossbar-pod-{n}");
                [format!("{file}.lock"), file]
            })
            .collect();
        Ok(Box::new(Files { token, paths }))
    }
    fn open(&self, token: &str, side: Side, spec: &ChannelSpec) -> io::Result<Box<dyn Endpoint>> {
        match spec.msg_size {
            16 => open_n::<16>(token, side, spec, self.lossless),
            32 => open_n::<32>(token, side, spec, self.lossless),
            64 => open_n::<64>(token, side, spec, self.lossless),
            128 => open_n::<128>(token, side, spec, self.lossless),
            256 => open_n::<256>(token, side, spec, self.lossless),
            512 => open_n::<512>(token, side, spec, self.lossless),
            1024 => open_n::<1024>(token, side, spec, self.lossless),
            2048 => open_n::<2048>(token, side, spec, self.lossless),
            4096 => open_n::<4096>(token, side, spec, self.lossless),
            n => Err(io::Error::other(format!(
                "crossbar PodBus: no {n}-byte message type (sizes {SIZES:?})"
            ))),
        }
    }
}
