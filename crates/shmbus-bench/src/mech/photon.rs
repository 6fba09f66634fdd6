//! `photon-ring`: the photon-ring crate's SPMC channel between two threads,
//! an in-process reference (it has no cross-process mode).
//!
//! Configured as its fastest path: the lossy `channel()` (seqlock-stamped
//! slots, the publisher never waits), subscribers busy-polling `try_recv`,
//! the ring sized like shmbus's (~4 MiB of messages, 64 to 16384 slots, a
//! power of two). A subscriber that falls behind reports `Lagged { skipped }`,
//! passed on as lost messages, exactly as shmbus's lag. Pingpong uses two
//! channels, one each way.
//!
//! photon-ring carries a `Pod` type fixed at compile time, so messages are
//! `[u8; N]` for the sizes in [`SIZES`]; other sizes are not supported.

use std::io;

use ::photon_ring::{Publisher, Subscriber, TryRecvError, channel};

use super::{ChannelSpec, Endpoint, Got, Mechanism, Pair};
use crate::case::Pattern;

/// photon-ring's SPMC channel between threads.
pub struct PhotonRing;

/// The message sizes this adapter has a `[u8; N]` for.
pub const SIZES: [usize; 13] = [
    16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536,
];

struct Ends<const N: usize> {
    tx: Option<Publisher<[u8; N]>>,
    rx: Option<Subscriber<[u8; N]>>,
    /// The last message received: `try_recv` returns a copy (a seqlock read).
    last: Box<[u8; N]>,
}

impl<const N: usize> Ends<N> {
    fn new(tx: Option<Publisher<[u8; N]>>, rx: Option<Subscriber<[u8; N]>>) -> Self {
        Ends {
            tx,
            rx,
            last: Box::new([0; N]),
        }
    }
}

impl<const N: usize> Endpoint for Ends<N> {
    #[inline]
    fn send(&mut self, msg: &[u8]) -> io::Result<()> {
        let tx = super::sending(&mut self.tx)?;
        let msg: &[u8; N] = super::fixed(msg, "photon-ring")?;
        tx.publish_with(|| *msg);
        Ok(())
    }
    #[inline]
    fn recv(&mut self) -> io::Result<Got<'_>> {
        let rx = super::receiving(&mut self.rx)?;
        let mut patience = super::Patience::default();
        loop {
            match rx.try_recv() {
                Ok(m) => {
                    *self.last = m;
                    return Ok(Got::Msg(&self.last[..]));
                }
                Err(TryRecvError::Empty) => patience.spin()?,
                Err(TryRecvError::Lagged { skipped }) => return Ok(Got::Lost(skipped)),
            }
        }
    }
}

fn pair_n<const N: usize>(spec: &ChannelSpec) -> io::Result<Pair> {
    if spec.receivers == 0 {
        return Err(io::Error::other("photon-ring: no receivers"));
    }
    let cap = super::ring_slots(N);
    let (ping, ping_subs) = channel::<[u8; N]>(cap);
    let mut receivers: Vec<Box<dyn Endpoint + Send>> = Vec::new();
    let (back, pong) = if spec.duplex {
        let (pong, pong_subs) = channel::<[u8; N]>(cap);
        (Some(pong_subs.subscribe()), Some(pong))
    } else {
        (None, None)
    };
    receivers.push(Box::new(Ends::new(pong, Some(ping_subs.subscribe()))));
    for _ in 1..spec.receivers {
        receivers.push(Box::new(Ends::new(None, Some(ping_subs.subscribe()))));
    }
    Ok((Box::new(Ends::new(Some(ping), back)), receivers))
}

impl Mechanism for PhotonRing {
    fn name(&self) -> &'static str {
        "photon-ring"
    }
    fn describe(&self) -> &'static str {
        "photon-ring between two threads (in-process reference; it has no cross-process mode)"
    }
    fn in_process(&self) -> bool {
        true
    }
    fn unsupported(&self, _pattern: Pattern, msg_size: usize) -> Option<String> {
        (!SIZES.contains(&msg_size)).then(|| {
            "its message type is fixed at compile time: powers of two, 16 B to 64 KiB".into()
        })
    }
    fn pair(&self, spec: &ChannelSpec) -> io::Result<Pair> {
        match spec.msg_size {
            16 => pair_n::<16>(spec),
            32 => pair_n::<32>(spec),
            64 => pair_n::<64>(spec),
            128 => pair_n::<128>(spec),
            256 => pair_n::<256>(spec),
            512 => pair_n::<512>(spec),
            1024 => pair_n::<1024>(spec),
            2048 => pair_n::<2048>(spec),
            4096 => pair_n::<4096>(spec),
            8192 => pair_n::<8192>(spec),
            16384 => pair_n::<16384>(spec),
            32768 => pair_n::<32768>(spec),
            65536 => pair_n::<65536>(spec),
            n => Err(io::Error::other(format!(
                "photon-ring: no {n}-byte message type (sizes {SIZES:?})"
            ))),
        }
    }
}
