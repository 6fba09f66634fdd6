//! `ipmpsc`: the ipmpsc crate's `SharedRingBuffer` between processes, a
//! multi-producer single-consumer byte ring in a shared file under
//! /dev/shm, guarded by a process-shared pthread mutex and condvar.
//!
//! Configured as its fastest mode: each message is one bincode byte string
//! (length, then a single copy of the bytes in), received through a
//! `ZeroCopyContext` busy-polling `try_recv` (no condvar wait), and the
//! message is read in place in the ring, released only at the next `recv`.
//! The ring holds ~4 MiB (at least 64 messages). Being single-consumer, it
//! needs one ring per receiver: fanout sends each message once per ring;
//! pingpong uses a second ring back. The sender waits when a ring is full
//! (its backpressure), so nothing is lost; a wait of more than 10 s is an
//! error (a receiver died).

use std::io;
use std::ptr::NonNull;
use std::time::Duration;

use ipmpsc::{Receiver, Sender, SharedRingBuffer, ZeroCopyContext};

use super::{ChannelSpec, Endpoint, Got, Mechanism, Resources, Side};
use crate::case::Pattern;

/// ipmpsc's shared-memory ring between processes.
pub struct Ipmpsc;

/// How long a send may wait for room before the receiver is taken as dead.
const SEND_LIMIT: Duration = Duration::from_secs(10);

/// Ring bytes for `msg_size`: ~4 MiB, and at least 64 framed messages.
fn ring_bytes(msg_size: usize) -> Option<u32> {
    let framed = msg_size.checked_add(16)?;
    u32::try_from(framed.checked_mul(64)?.max(4 << 20)).ok()
}

fn io_err(what: &str, e: impl std::fmt::Display) -> io::Error {
    io::Error::other(format!("ipmpsc: {what}: {e}"))
}

/// The ring files, removed on drop.
struct Rings {
    base: String,
    paths: Vec<String>,
}

impl Resources for Rings {
    fn token(&self) -> String {
        self.base.clone()
    }
}

impl Drop for Rings {
    fn drop(&mut self) {
        for p in &self.paths {
            let _ = std::fs::remove_file(p);
        }
    }
}

fn to_receiver(base: &str, i: usize) -> String {
    format!("{base}-r{i}")
}

fn back(base: &str) -> String {
    format!("{base}-pong")
}

/// A message as one bincode byte string: a length, then one copy of the
/// bytes (a plain `&[u8]` would be serialized element by element).
struct Bytes<'a>(&'a [u8]);

impl serde::Serialize for Bytes<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(self.0)
    }
}

/// A receiver that leaves the last message in the ring until the next
/// `recv`: ipmpsc's zero-copy mode, where dropping the context advances the
/// read position.
struct ZeroCopyRx {
    /// The context of the message handed out last. Declared first: it
    /// borrows `*rx` and must go before it.
    ctx: Option<ZeroCopyContext<'static>>,
    /// Owned (from `Box::leak`), freed in `Drop` after `ctx`.
    rx: NonNull<Receiver>,
}

impl ZeroCopyRx {
    fn new(rx: Receiver) -> Self {
        ZeroCopyRx {
            ctx: None,
            rx: NonNull::from(Box::leak(Box::new(rx))),
        }
    }

    #[inline]
    fn recv(&mut self) -> io::Result<&[u8]> {
        // Releases the previous message: the sender may reuse its space.
        self.ctx = None;
        // SAFETY: `rx` came from `Box::leak` in `new` and is freed only in
        // `Drop`, after `ctx`. The only borrow of it is the one context
        // alive at a time (the previous one was dropped just above).
        let rx: &'static mut Receiver = unsafe { &mut *self.rx.as_ptr() };
        let ctx = self.ctx.insert(rx.zero_copy_context());
        let mut patience = super::Patience::default();
        let (ptr, len) = loop {
            match ctx.try_recv::<&[u8]>() {
                Ok(Some(m)) => break (m.as_ptr(), m.len()),
                Ok(None) => patience.spin()?,
                Err(e) => return Err(io_err("receive", e)),
            }
        };
        // SAFETY: the bytes lie in the ring, mapped while `rx` lives; `ctx`
        // keeps the sender from reusing them until it is dropped, at the
        // next `recv` or in `Drop`, both after the returned borrow of `self`
        // has ended.
        Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
    }
}

impl Drop for ZeroCopyRx {
    fn drop(&mut self) {
        self.ctx = None;
        // SAFETY: `rx` came from `Box::leak` in `new`, nothing borrows it
        // any more (`ctx` is gone), and this is the only place it is freed.
        drop(unsafe { Box::from_raw(self.rx.as_ptr()) });
    }
}

struct Ends {
    tx: Vec<Sender>,
    rx: Option<ZeroCopyRx>,
}

impl Endpoint for Ends {
    #[inline]
    fn send(&mut self, msg: &[u8]) -> io::Result<()> {
        if self.tx.is_empty() {
            return Err(io::Error::other("no way back on this end"));
        }
        for tx in &self.tx {
            if !tx
                .send_timeout(&Bytes(msg), SEND_LIMIT)
                .map_err(|e| io_err("send", e))?
            {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "ipmpsc: ring full for 10 s: the receiver is not reading",
                ));
            }
        }
        Ok(())
    }
    #[inline]
    fn recv(&mut self) -> io::Result<Got<'_>> {
        let rx = super::receiving(&mut self.rx)?;
        Ok(Got::Msg(rx.recv()?))
    }
}

fn open_ring(path: &str) -> io::Result<SharedRingBuffer> {
    SharedRingBuffer::open(path).map_err(|e| io_err(&format!("open {path}"), e))
}

impl Mechanism for Ipmpsc {
    fn name(&self) -> &'static str {
        "ipmpsc"
    }
    fn describe(&self) -> &'static str {
        "ipmpsc shared-memory ring between processes (bincode, zero-copy receive, busy-poll)"
    }
    fn unsupported(&self, _pattern: Pattern, msg_size: usize) -> Option<String> {
        match ring_bytes(msg_size) {
            Some(_) => None,
            None => Some("the ring size would not fit its 32-bit offsets".into()),
        }
    }
    fn setup(&self, spec: &ChannelSpec) -> io::Result<Box<dyn Resources>> {
        let bytes = ring_bytes(spec.msg_size)
            .ok_or_else(|| io::Error::other("ipmpsc: message too large for a ring"))?;
        let base = format!("/dev/shm/{}-ipmpsc", spec.prefix);
        let mut rings = Rings {
            base: base.clone(),
            paths: Vec::new(),
        };
        let mut paths: Vec<String> = (0..spec.receivers).map(|i| to_receiver(&base, i)).collect();
        if spec.duplex {
            paths.push(back(&base));
        }
        for p in paths {
            // Listed first, so a half-made file is removed too.
            rings.paths.push(p.clone());
            SharedRingBuffer::create(&p, bytes).map_err(|e| io_err(&format!("create {p}"), e))?;
        }
        Ok(Box::new(rings))
    }
    fn open(&self, token: &str, side: Side, spec: &ChannelSpec) -> io::Result<Box<dyn Endpoint>> {
        let ends = match side {
            Side::Sender => Ends {
                tx: (0..spec.receivers)
                    .map(|i| open_ring(&to_receiver(token, i)).map(Sender::new))
                    .collect::<io::Result<_>>()?,
                rx: if spec.duplex {
                    Some(ZeroCopyRx::new(Receiver::new(open_ring(&back(token))?)))
                } else {
                    None
                },
            },
            Side::Receiver(i) => Ends {
                rx: Some(ZeroCopyRx::new(Receiver::new(open_ring(&to_receiver(
                    token, i,
                ))?))),
                tx: if spec.duplex && i == 0 {
                    vec![Sender::new(open_ring(&back(token))?)]
                } else {
                    Vec::new()
                },
            },
        };
        Ok(Box::new(ends))
    }
}
