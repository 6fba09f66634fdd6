//! `ringfire-async`: ringfire's own tokio consumer,
//! `AsyncRingConsumer` (its `tokio` feature), awaited in the same
//! current-thread runtime as `shmbus-async` (`shmbus_wake::runtime`, one
//! poll first, then the runtime: `shmbus_wake::await_on`).
//!
//! Its defaults, as shipped: each `recv_detailed` polls the ring 32 times,
//! then yields to tokio (`yield_now`) up to 8 times, then sleeps
//! `idle_sleep` (50 µs, which tokio's timer rounds up to its 1 ms tick)
//! and starts over; a receiver is never woken by the publisher, only by
//! its own timer. The ring is `ringfire`'s (ringfire.rs): `LossyLatestWins`,
//! sized by `ring_slots`, consumers from the head, its lap count passed on
//! as lost messages. Oneway and throughput only, beside `shmbus-async`,
//! paced as it is (`SLEEPER_PACE`, 200 µs).

use std::io;

use ::ringfire::{AsyncRingConsumer, RingProducer};

use super::ringfire::{SIZES, attach, create, path};
use super::shmbus_wake::{await_on, runtime};
use super::{ChannelSpec, Endpoint, Files, Got, Mechanism, Resources, Side, ping};
use crate::case::Pattern;

/// `ringfire-async`.
pub struct RingfireAsync;

/// A receiver: its runtime and consumer.
struct Rx<const N: usize> {
    rt: tokio::runtime::Runtime,
    rx: AsyncRingConsumer<[u8; N]>,
    /// The last message received (the consumer returns a copy).
    last: Box<[u8; N]>,
    /// `last` is a message not handed out yet (a loss was reported first).
    pending: bool,
    /// The consumer's `lapped_count` already reported.
    lapped: u64,
}

impl<const N: usize> Endpoint for Rx<N> {
    fn send(&mut self, _msg: &[u8]) -> io::Result<()> {
        Err(io::Error::other("no way back on this end"))
    }
    #[inline]
    fn recv(&mut self) -> io::Result<Got<'_>> {
        if std::mem::take(&mut self.pending) {
            return Ok(Got::Msg(&self.last[..]));
        }
        let (m, _) = await_on(&self.rt, self.rx.recv_detailed());
        *self.last = m;
        // The lap count, as for `ringfire`: it also keeps the skips of
        // polls that then found nothing.
        let lost = self.rx.lapped_count() - self.lapped;
        self.lapped = self.rx.lapped_count();
        if lost == 0 {
            Ok(Got::Msg(&self.last[..]))
        } else {
            self.pending = true;
            Ok(Got::Lost(lost))
        }
    }
}

/// The sender: the ring's producer.
struct Tx<const N: usize>(RingProducer<[u8; N]>);

impl<const N: usize> Endpoint for Tx<N> {
    #[inline]
    fn send(&mut self, msg: &[u8]) -> io::Result<()> {
        self.0.push(super::fixed(msg, "ringfire-async")?);
        Ok(())
    }
    fn recv(&mut self) -> io::Result<Got<'_>> {
        Err(io::Error::other("nothing to receive on this end"))
    }
}

fn open_n<const N: usize>(token: &str, side: Side) -> io::Result<Box<dyn Endpoint>> {
    Ok(match side {
        Side::Sender => Box::new(Tx(create::<N>(&ping(token), false)?)),
        Side::Receiver(_) => Box::new(Rx {
            rt: runtime()?,
            rx: AsyncRingConsumer::from_consumer(attach::<N>(&ping(token))?),
            last: Box::new([0; N]),
            pending: false,
            lapped: 0,
        }),
    })
}

impl Mechanism for RingfireAsync {
    fn name(&self) -> &'static str {
        "ringfire-async"
    }
    fn describe(&self) -> &'static str {
        "ringfire's AsyncRingConsumer (spin, yield_now, 50 us timer) on a tokio current-thread runtime"
    }
    fn unsupported(&self, pattern: Pattern, msg_size: usize) -> Option<String> {
        if !matches!(pattern, Pattern::Oneway | Pattern::Throughput) {
            return Some("an async receiver's row: oneway and throughput only".into());
        }
        (!SIZES.contains(&msg_size)).then(|| {
            "its message type is fixed at compile time: 16, 32, 48, 56 B and powers of \
             two to 64 KiB"
                .into()
        })
    }
    fn min_pace(&self) -> Option<std::time::Duration> {
        // Beside the other sleeping rows, at the same rate.
        Some(super::shmbus_wake::SLEEPER_PACE)
    }
    fn setup(&self, spec: &ChannelSpec) -> io::Result<Box<dyn Resources>> {
        let token = format!("{}-rfa", spec.prefix);
        let paths = vec![path(&ping(&token))];
        Ok(Box::new(Files { token, paths }))
    }
    fn open(&self, token: &str, side: Side, spec: &ChannelSpec) -> io::Result<Box<dyn Endpoint>> {
        match spec.msg_size {
            16 => open_n::<16>(token, side),
            32 => open_n::<32>(token, side),
            48 => open_n::<48>(token, side),
            56 => open_n::<56>(token, side),
            64 => open_n::<64>(token, side),
            128 => open_n::<128>(token, side),
            256 => open_n::<256>(token, side),
            512 => open_n::<512>(token, side),
            1024 => open_n::<1024>(token, side),
            2048 => open_n::<2048>(token, side),
            4096 => open_n::<4096>(token, side),
            8192 => open_n::<8192>(token, side),
            16384 => open_n::<16384>(token, side),
            32768 => open_n::<32768>(token, side),
            65536 => open_n::<65536>(token, side),
            n => Err(io::Error::other(format!(
                "ringfire-async: no {n}-byte message type (sizes {SIZES:?})"
            ))),
        }
    }
}
