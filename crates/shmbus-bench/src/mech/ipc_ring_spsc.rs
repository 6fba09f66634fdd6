//! `ipc_ring`: the ipc_ring crate's SPSC byte ring between processes, a file
//! under /dev/shm mapped by both sides.
//!
//! Configured as its fastest mode: the sender `try_push`es each message
//! (one copy in, behind a 4-byte length), spinning while the ring is full
//! (backpressure: nothing is lost); the receiver busy-polls `try_pop`, which
//! copies the message out into a buffer this adapter keeps (ipc_ring has no
//! in-place read). Both calls also signal the peer's futex on every message
//! (the crate's design: one system call per message and side even when no
//! one sleeps). The ring holds 4 MiB, like shmbus-stream's, or more if that
//! would hold fewer than four messages. Single-consumer: no fanout;
//! pingpong uses a second ring back.
//!
//! A ring file is made by its writer (`RingWriter::create`, which only
//! creates), so the sender makes the ping ring in its `open`, receiver 0 the
//! pong ring in its; each is made under a temporary name and renamed when
//! whole, and the other side waits for the name. The block's `Resources`
//! remove every name, so a killed child leaves nothing in /dev/shm.

use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

use ::ipc_ring::{IpcError, RingReader, RingWriter};

use super::{ChannelSpec, Endpoint, Files, Got, Mechanism, Resources, Side, ping, pong};
use crate::case::Pattern;

/// ipc_ring's SPSC ring between processes.
pub struct IpcRing;

/// How long an open may wait for the peer's ring to appear.
const OPEN_LIMIT: Duration = Duration::from_secs(10);

/// Ring bytes: 4 MiB, or the power of two that holds four framed messages.
fn capacity(msg_size: usize) -> Option<usize> {
    let framed = msg_size.checked_add(4)?.next_multiple_of(4);
    Some(
        framed
            .checked_mul(4)?
            .checked_next_power_of_two()?
            .max(4 << 20),
    )
}

fn io_err(what: &str, e: impl std::fmt::Display) -> io::Error {
    io::Error::other(format!("ipc_ring: {what}: {e}"))
}

fn temporary(path: &str) -> String {
    format!("{path}.new")
}

/// Makes the ring at `path`, visible under that name only once whole.
fn create(path: &str, msg_size: usize) -> io::Result<RingWriter> {
    let cap = capacity(msg_size).ok_or_else(|| io::Error::other("ipc_ring: message too large"))?;
    let tmp = temporary(path);
    let writer = RingWriter::create(&tmp, cap).map_err(|e| io_err(&format!("create {tmp}"), e))?;
    std::fs::rename(&tmp, path)?;
    Ok(writer)
}

/// Opens the ring at `path` once its writer has made it.
fn open_reader(path: &str) -> io::Result<RingReader> {
    let deadline = Instant::now() + OPEN_LIMIT;
    while !Path::new(path).exists() {
        if Instant::now() > deadline {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("ipc_ring: {path} did not appear (has the peer died?)"),
            ));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    RingReader::open(path).map_err(|e| io_err(&format!("open {path}"), e))
}

struct Ends {
    tx: Option<RingWriter>,
    rx: Option<RingReader>,
    /// Where `try_pop` copies each message.
    buf: Vec<u8>,
}

impl Endpoint for Ends {
    #[inline]
    fn send(&mut self, msg: &[u8]) -> io::Result<()> {
        let tx = super::sending(&mut self.tx)?;
        let mut patience = super::Patience::default();
        loop {
            match tx.try_push(msg) {
                Ok(()) => return Ok(()),
                Err(IpcError::Full) => patience.spin()?,
                Err(e) => return Err(io_err("push", e)),
            }
        }
    }
    #[inline]
    fn recv(&mut self) -> io::Result<Got<'_>> {
        let rx = super::receiving(&mut self.rx)?;
        let mut patience = super::Patience::default();
        loop {
            match rx.try_pop(&mut self.buf) {
                Ok(Some(n)) => return Ok(Got::Msg(&self.buf[..n])),
                Ok(None) => patience.spin()?,
                Err(e) => return Err(io_err("pop", e)),
            }
        }
    }
}

impl Mechanism for IpcRing {
    fn name(&self) -> &'static str {
        "ipc_ring"
    }
    fn describe(&self) -> &'static str {
        "ipc_ring SPSC byte ring between processes (/dev/shm, copy out, busy-poll)"
    }
    fn unsupported(&self, pattern: Pattern, msg_size: usize) -> Option<String> {
        if pattern == Pattern::Fanout {
            return Some("a single-consumer ring".into());
        }
        capacity(msg_size)
            .is_none()
            .then(|| "the ring would be too large".into())
    }
    fn setup(&self, spec: &ChannelSpec) -> io::Result<Box<dyn Resources>> {
        if spec.receivers != 1 {
            return Err(io::Error::other("ipc_ring: one receiver only"));
        }
        let token = format!("/dev/shm/{}-ipcring", spec.prefix);
        let paths = [ping(&token), pong(&token)]
            .iter()
            .flat_map(|p| [temporary(p), p.clone()])
            .collect();
        Ok(Box::new(Files { token, paths }))
    }
    fn open(&self, token: &str, side: Side, spec: &ChannelSpec) -> io::Result<Box<dyn Endpoint>> {
        let buf = Vec::with_capacity(spec.msg_size);
        // Each side makes the ring it writes before it waits for the other.
        let ends = match side {
            Side::Sender => {
                let tx = create(&ping(token), spec.msg_size)?;
                let rx = spec.duplex.then(|| open_reader(&pong(token))).transpose()?;
                Ends {
                    tx: Some(tx),
                    rx,
                    buf,
                }
            }
            Side::Receiver(_) => {
                let tx = spec
                    .duplex
                    .then(|| create(&pong(token), spec.msg_size))
                    .transpose()?;
                Ends {
                    tx,
                    rx: Some(open_reader(&ping(token))?),
                    buf,
                }
            }
        };
        Ok(Box::new(ends))
    }
}
