//! `shmbus` (between processes, over /dev/shm) and `shmbus-threads`
//! (between two threads, over the heap-backed region): the same ring code.
//! `shmbus-unregistered` is `shmbus` with subscribers that take no registry
//! entry (`OpenOptions::register(false)`), so they keep no line for `stat`
//! and `top`: beside `shmbus` in the same run it measures what that line's
//! one store per receive costs. `shmbus-lossless` is `shmbus` with lossless
//! subscribers (`OpenOptions::lossless`): the publisher waits for
//! a receiver that has not read the slot it would overwrite, so nothing is
//! lost; throughput rows beside the peers' lossless modes, and fanout
//! rows, whose receivers keep up, for the time inside each publish against
//! `shmbus`'s (the lossless rows' first target).
//!
//! Receivers busy-poll `try_recv`, the bus's lowest-latency mode. Pingpong
//! uses two buses, one each way. The publisher never waits, so under
//! `throughput` a receiver slower than the sender is lapped and the lag is
//! reported as lost messages, exactly.

use std::io;
use std::sync::Arc;

use shmbus::{
    OpenOptions, Publisher, Received, Start, Subscriber, WaitStrategy,
    mem::{HeapRegion, Region},
};

use super::{ChannelSpec, Endpoint, Got, Mechanism, Pair, Resources, Side};

/// The broadcast bus between processes; `register: false` opens its
/// subscribers unregistered, `lossless: true` lossless.
pub struct ShmbusBus {
    register: bool,
    lossless: bool,
}

/// `shmbus`: registered subscribers, as a user gets by default.
pub static SHMBUS: ShmbusBus = ShmbusBus {
    register: true,
    lossless: false,
};
/// `shmbus-unregistered`: no subscriber line.
pub static UNREGISTERED: ShmbusBus = ShmbusBus {
    register: false,
    lossless: false,
};
/// `shmbus-lossless`: lossless subscribers (throughput and fanout).
pub static LOSSLESS: ShmbusBus = ShmbusBus {
    register: true,
    lossless: true,
};
/// The broadcast bus between two threads of one process.
pub struct ShmbusThreads;

struct Ends<R: Region> {
    tx: Option<Publisher<[u8], R>>,
    rx: Option<Subscriber<[u8], R>>,
}

impl<R: Region> Endpoint for Ends<R> {
    #[inline]
    fn send(&mut self, msg: &[u8]) -> io::Result<()> {
        let tx = super::sending(&mut self.tx)?;
        tx.publish(msg).map_err(io::Error::other)?;
        Ok(())
    }
    #[inline]
    fn recv(&mut self) -> io::Result<Got<'_>> {
        let rx = super::receiving(&mut self.rx)?;
        let mut patience = super::Patience::default();
        let lost = loop {
            match rx.try_recv() {
                Some(Received::Message(_)) => break 0,
                Some(Received::Lagged { skipped }) => break skipped,
                None => patience.spin()?,
            }
        };
        Ok(if lost == 0 {
            Got::Msg(rx.message())
        } else {
            Got::Lost(lost)
        })
    }
}

fn io_err(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(e.to_string())
}

impl Mechanism for ShmbusBus {
    fn name(&self) -> &'static str {
        match (self.register, self.lossless) {
            (_, true) => "shmbus-lossless",
            (true, false) => "shmbus",
            (false, false) => "shmbus-unregistered",
        }
    }
    fn describe(&self) -> &'static str {
        match (self.register, self.lossless) {
            (_, true) => "shmbus with lossless subscribers: the publisher waits, nothing lost",
            (true, false) => "shmbus broadcast bus between processes (/dev/shm, busy-poll)",
            (false, false) => {
                "shmbus with unregistered subscribers: no line for stat/top (the cost of that line)"
            }
        }
    }
    fn unsupported(&self, pattern: crate::case::Pattern, _msg_size: usize) -> Option<String> {
        super::lossless_rows_only_throughput_and_fanout(self.lossless, pattern)
    }
    fn setup(&self, spec: &ChannelSpec) -> io::Result<Box<dyn Resources>> {
        let mut buses = super::Segments {
            token: spec.prefix.clone(),
            names: Vec::new(),
        };
        let ways: &[&str] = if spec.duplex {
            &["ping", "pong"]
        } else {
            &["ping"]
        };
        for way in ways {
            let name = format!("{}-{way}", spec.prefix);
            let opts =
                shmbus::BusOptions::new(super::ring_slots(spec.msg_size) as u64).prefault(true);
            Publisher::<[u8]>::create(&name, &opts.clone().msg_size(spec.msg_size as u32))
                .map_err(io_err)?;
            buses.names.push(name);
        }
        Ok(Box::new(buses))
    }
    fn open(&self, token: &str, side: Side, spec: &ChannelSpec) -> io::Result<Box<dyn Endpoint>> {
        let (ping, pong) = (format!("{token}-ping"), format!("{token}-pong"));
        let sub = |name: &str| {
            let opts = OpenOptions::default()
                .start(Start::Next)
                .wait_strategy(WaitStrategy::BusySpin)
                .prefault(true)
                .register(self.register)
                .lossless(self.lossless);
            Subscriber::<[u8]>::open(name, &opts).map_err(io_err)
        };
        let publ = |name: &str| {
            Publisher::<[u8]>::attach(name, &OpenOptions::default().prefault(true)).map_err(io_err)
        };
        let ends = match side {
            Side::Sender => Ends {
                tx: Some(publ(&ping)?),
                rx: if spec.duplex { Some(sub(&pong)?) } else { None },
            },
            Side::Receiver(i) => Ends {
                rx: Some(sub(&ping)?),
                tx: if spec.duplex && i == 0 {
                    Some(publ(&pong)?)
                } else {
                    None
                },
            },
        };
        Ok(Box::new(ends))
    }
}

impl Mechanism for ShmbusThreads {
    fn name(&self) -> &'static str {
        "shmbus-threads"
    }
    fn describe(&self) -> &'static str {
        "shmbus broadcast bus between two threads (heap region, same ring code; in-process)"
    }
    fn in_process(&self) -> bool {
        true
    }
    fn pair(&self, spec: &ChannelSpec) -> io::Result<Pair> {
        let cap = super::ring_slots(spec.msg_size) as u64;
        let ping = Publisher::<[u8], Arc<HeapRegion>>::on_heap_bytes(spec.msg_size as u32, cap)
            .map_err(io_err)?;
        let pong = Publisher::<[u8], Arc<HeapRegion>>::on_heap_bytes(spec.msg_size as u32, cap)
            .map_err(io_err)?;
        let mut receivers: Vec<Box<dyn Endpoint + Send>> = Vec::new();
        for _ in 0..spec.receivers {
            receivers.push(Box::new(Ends {
                tx: None,
                rx: Some(ping.subscribe(Start::Next, WaitStrategy::BusySpin)),
            }));
        }
        let back = spec
            .duplex
            .then(|| pong.subscribe(Start::Next, WaitStrategy::BusySpin));
        if spec.duplex {
            receivers[0] = Box::new(Ends {
                tx: Some(pong),
                rx: Some(ping.subscribe(Start::Next, WaitStrategy::BusySpin)),
            });
        }
        Ok((
            Box::new(Ends {
                tx: Some(ping),
                rx: back,
            }),
            receivers,
        ))
    }
}
