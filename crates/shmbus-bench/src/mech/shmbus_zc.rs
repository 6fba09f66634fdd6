//! `shmbus-zc`: a shmbus pool bus between processes (/dev/shm): the
//! publisher loans a block, copies the message in once and publishes its
//! 16-byte descriptor; subscribers busy-poll `recv(Wait::Never)` and read
//! the block in place, holding the sample until the next `recv`, as the
//! iceoryx2 and crossbar-pool rows hold theirs.
//!
//! Sized by the rule every ring-backed row shares: `ring_slots` descriptors
//! on the ring, and as many blocks plus 64 (for the loan and the held
//! samples), the crossbar-pool row's count, so neither row has a smaller
//! pool to keep in cache. Blocks are the message size rounded up to 64
//! bytes. Pingpong uses two buses, one each way. The publisher never waits
//! for a reader (only for a free block, which a lapped reader does not
//! keep), so under `throughput` a slower receiver is lapped and told
//! exactly how many it lost.

use std::io;

use shmbus::{
    OpenOptions, Received, Start,
    pool::{self, Sample},
};
use shmbus::{Wait, WaitStrategy};

use super::{ChannelSpec, Endpoint, Got, Mechanism, Resources, Side, ping, pong};

/// A shmbus pool bus between processes.
pub struct ShmbusZc;

fn io_err(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(format!("shmbus-zc: {e}"))
}

/// A subscription whose last sample stays held until the next `recv`.
struct Reader {
    /// Declared first: dropped before the subscriber it came from.
    held: Option<Sample<[u8]>>,
    sub: pool::Subscriber<[u8]>,
}

struct Ends {
    rx: Option<Reader>,
    tx: Option<pool::Publisher<[u8]>>,
}

impl Endpoint for Ends {
    #[inline]
    fn send(&mut self, msg: &[u8]) -> io::Result<()> {
        let tx = super::sending(&mut self.tx)?;
        // Receivers hold one block each and blocks outnumber the ring by
        // 64: a free block is always there, so this never waits.
        let mut loan = tx.loan(msg.len(), Wait::Forever).map_err(io_err)?;
        loan.copy_from_slice(msg);
        loan.publish().map_err(io_err)?;
        Ok(())
    }
    #[inline]
    fn recv(&mut self) -> io::Result<Got<'_>> {
        let rx = super::receiving(&mut self.rx)?;
        // Gives the previous block back.
        rx.held = None;
        let mut patience = super::Patience::default();
        loop {
            match rx.sub.recv(Wait::Never).map_err(io_err)? {
                Some(Received::Message(sample)) => {
                    return Ok(Got::Msg(&rx.held.insert(sample)[..]));
                }
                Some(Received::Lagged { skipped }) => return Ok(Got::Lost(skipped)),
                None => patience.spin()?,
            }
        }
    }
}

impl Mechanism for ShmbusZc {
    fn name(&self) -> &'static str {
        "shmbus-zc"
    }
    fn describe(&self) -> &'static str {
        "shmbus pool bus between processes (/dev/shm, loaned blocks read in place, busy-poll)"
    }
    fn setup(&self, spec: &ChannelSpec) -> io::Result<Box<dyn Resources>> {
        let token = format!("{}-zc", spec.prefix);
        let mut buses = super::Segments {
            token: token.clone(),
            names: Vec::new(),
        };
        let slots = super::ring_slots(spec.msg_size) as u64;
        let block = spec.msg_size.next_multiple_of(64) as u64;
        let opts = shmbus::pool::Options::new(slots, block, slots + 64).prefault(true);
        let ways = if spec.duplex { 2 } else { 1 };
        for name in [ping(&token), pong(&token)].into_iter().take(ways) {
            pool::Publisher::<[u8]>::create(&name, &opts).map_err(io_err)?;
            buses.names.push(name);
        }
        Ok(Box::new(buses))
    }
    fn open(&self, token: &str, side: Side, spec: &ChannelSpec) -> io::Result<Box<dyn Endpoint>> {
        let sub = |name: &str| {
            let opts = OpenOptions::default()
                .start(Start::Next)
                .wait_strategy(WaitStrategy::BusySpin)
                .prefault(true);
            let sub = pool::Subscriber::<[u8]>::open(name, &opts).map_err(io_err)?;
            Ok::<_, io::Error>(Reader { held: None, sub })
        };
        let publ = |name: &str| {
            pool::Publisher::<[u8]>::attach(name, &OpenOptions::default().prefault(true))
                .map_err(io_err)
        };
        let ends = match side {
            Side::Sender => Ends {
                tx: Some(publ(&ping(token))?),
                rx: spec.duplex.then(|| sub(&pong(token))).transpose()?,
            },
            Side::Receiver(i) => Ends {
                rx: Some(sub(&ping(token))?),
                tx: (spec.duplex && i == 0)
                    .then(|| publ(&pong(token)))
                    .transpose()?,
            },
        };
        Ok(Box::new(ends))
    }
}
