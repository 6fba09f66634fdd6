//! `crossbar-pool`: the crossbar crate's pool publish-subscribe between
//! processes (a region file under /dev/shm holding a block pool and a ring
//! of block indices per topic, with a lock file beside it).
//!
//! Configured as its fastest zero-copy setup, like iceoryx2's row: one
//! topic; the publisher loans a block, copies the message in once
//! (`set_data`) and publishes it without a wake-up (`publish_silent`: no
//! subscriber ever sleeps); subscribers busy-poll `try_recv` and read the
//! block in place, holding it until the next `recv`. The ring is lossy (a
//! subscriber that falls behind skips to the newest messages; crossbar does
//! not report it, so the harness counts the missing ones as lost) and holds
//! `ring_slots` messages (~4 MiB, 64 to 16384), with that many blocks plus
//! 64 for those loaned, held or cached. Pingpong uses a second region back;
//! fanout one topic with a subscriber per receiver.
//!
//! Each region is made by its publisher (the sender the ping region,
//! receiver 0 the pong one, in their `open`), the other side retrying its
//! connect until the topic is there. crossbar also records topics in a
//! discovery registry file; `main` points it (`CROSSBAR_REGISTRY`) at a
//! file of this run, which the block's `Resources` remove with the regions'
//! files, so nothing is left in /dev/shm.

use std::io;
use std::ptr::NonNull;
use std::time::{Duration, Instant};

use ::crossbar::{Config, Publisher, Sample, Stream, Subscriber, Topic};

use super::{ChannelSpec, Endpoint, Files, Got, Mechanism, Resources, Side, ping, pong};

/// crossbar's pool publish-subscribe between processes.
pub struct CrossbarPool;

/// How long an open may wait for the peer's region to appear.
const OPEN_LIMIT: Duration = Duration::from_secs(10);

/// The one topic of each region.
const TOPIC: &str = "/m";

/// The environment variable crossbar reads for its registry's path.
pub const REGISTRY_VAR: &str = "CROSSBAR_REGISTRY";

/// The registry file of this run (see `main`).
pub fn registry_path(pid: u32) -> String {
    format!("/dev/shm/shmbus-bench-{pid}-crossbar-registry")
}

fn io_err(what: &str, e: impl std::fmt::Display) -> io::Error {
    io::Error::other(format!("crossbar pool: {what}: {e}"))
}

fn config(msg_size: usize) -> io::Result<Config> {
    let slots = super::ring_slots(msg_size);
    let too_big = || io::Error::other("crossbar pool: message too large");
    let block = (msg_size + 8).next_multiple_of(64);
    Ok(Config {
        max_topics: 1,
        block_count: u32::try_from(slots + 64).map_err(|_| too_big())?,
        block_size: u32::try_from(block).map_err(|_| too_big())?,
        ring_depth: u32::try_from(slots).map_err(|_| too_big())?,
        ..Config::default()
    })
}

/// A subscription whose last sample stays loaned until the next `recv`.
struct Reader {
    /// The sample handed out last. Declared first: it borrows `*stream`.
    held: Option<Sample<'static>>,
    /// Owned (from `Box::leak`), freed in `Drop` after `held`.
    stream: NonNull<Stream>,
    /// Maps the region `stream` reads; dropped after it.
    _subscriber: Subscriber,
}

impl Reader {
    fn connect(name: &str) -> io::Result<Reader> {
        let deadline = Instant::now() + OPEN_LIMIT;
        let (subscriber, stream) = loop {
            // The region or its topic may not be there yet.
            let tried = Subscriber::connect(name).and_then(|s| {
                let stream = s.subscribe(TOPIC)?;
                Ok((s, stream))
            });
            match tried {
                Ok(both) => break both,
                Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(1)),
                Err(e) => return Err(io_err(&format!("connect {name}"), e)),
            }
        };
        Ok(Reader {
            held: None,
            stream: NonNull::from(Box::leak(Box::new(stream))),
            _subscriber: subscriber,
        })
    }

    #[inline]
    fn recv(&mut self) -> io::Result<&[u8]> {
        // Gives the previous block back to the pool.
        self.held = None;
        // SAFETY: `stream` came from `Box::leak` in `connect` and is freed
        // only in `Drop`, after `held`, the only borrow of it.
        let stream: &'static Stream = unsafe { self.stream.as_ref() };
        let mut patience = super::Patience::default();
        let sample = loop {
            match stream.try_recv() {
                Some(s) => break s,
                None => patience.spin()?,
            }
        };
        Ok(&self.held.insert(sample)[..])
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        self.held = None;
        // SAFETY: `stream` came from `Box::leak` in `connect`, nothing
        // borrows it any more (`held` is gone), and this is the only place
        // it is freed.
        drop(unsafe { Box::from_raw(self.stream.as_ptr()) });
    }
}

struct Writer {
    publisher: Publisher,
    topic: Topic,
}

impl Writer {
    fn create(name: &str, msg_size: usize) -> io::Result<Writer> {
        let mut publisher = Publisher::create(name, config(msg_size)?)
            .map_err(|e| io_err(&format!("create {name}"), e))?;
        let topic = publisher
            .register(TOPIC)
            .map_err(|e| io_err("register", e))?;
        Ok(Writer { publisher, topic })
    }

    #[inline]
    fn send(&mut self, msg: &[u8]) -> io::Result<()> {
        let mut loan = self
            .publisher
            .loan(&self.topic)
            .map_err(|e| io_err("loan", e))?;
        loan.set_data(msg).map_err(|e| io_err("write", e))?;
        loan.publish_silent();
        Ok(())
    }
}

struct Ends {
    rx: Option<Reader>,
    tx: Option<Writer>,
}

impl Endpoint for Ends {
    #[inline]
    fn send(&mut self, msg: &[u8]) -> io::Result<()> {
        super::sending(&mut self.tx)?.send(msg)
    }
    #[inline]
    fn recv(&mut self) -> io::Result<Got<'_>> {
        let rx = super::receiving(&mut self.rx)?;
        Ok(Got::Msg(rx.recv()?))
    }
}

impl Mechanism for CrossbarPool {
    fn name(&self) -> &'static str {
        "crossbar-pool"
    }
    fn describe(&self) -> &'static str {
        "crossbar pool publish-subscribe between processes (/dev/shm, zero-copy, busy-poll)"
    }
    fn setup(&self, spec: &ChannelSpec) -> io::Result<Box<dyn Resources>> {
        config(spec.msg_size)?;
        let token = format!("{}-xpool", spec.prefix);
        let mut paths: Vec<String> = [ping(&token), pong(&token)]
            .iter()
            .flat_map(|n| {
                let file = format!("/dev/shm/crossbar-{n}");
                [format!("{file}.lock"), file]
            })
            .collect();
        // The registry is ours alone (named after this run); the next
        // block makes it again.
        if let Ok(path) = std::env::var(REGISTRY_VAR)
            && path == registry_path(std::process::id())
        {
            paths.push(path);
        }
        Ok(Box::new(Files { token, paths }))
    }
    fn open(&self, token: &str, side: Side, spec: &ChannelSpec) -> io::Result<Box<dyn Endpoint>> {
        // Each side makes the region it publishes before it waits for the
        // other's.
        let ends = match side {
            Side::Sender => {
                let tx = Writer::create(&ping(token), spec.msg_size)?;
                let rx = spec
                    .duplex
                    .then(|| Reader::connect(&pong(token)))
                    .transpose()?;
                Ends { rx, tx: Some(tx) }
            }
            Side::Receiver(i) => {
                let tx = (spec.duplex && i == 0)
                    .then(|| Writer::create(&pong(token), spec.msg_size))
                    .transpose()?;
                Ends {
                    rx: Some(Reader::connect(&ping(token))?),
                    tx,
                }
            }
        };
        Ok(Box::new(ends))
    }
}
