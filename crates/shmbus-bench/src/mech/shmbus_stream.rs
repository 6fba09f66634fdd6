//! `shmbus-stream`: shmbus's lossless stream between processes, over
//! /dev/shm. The sender is the producer, each receiver the consumer of its
//! own stream (a stream has one consumer: fanout to N receivers pushes each
//! message into N streams); pingpong has one more stream for the way back.
//!
//! Each message is one record of exactly `msg_size` bytes, pushed with one
//! copy into the ring. Receivers busy-poll (`Wait::Never` in a loop) and
//! read the record in place (`peek`): it is released only at the next
//! `recv`, so no receiver copies a payload. The sender waits for room
//! (backpressure: nothing is lost) by spinning, never sleeping, so neither
//! side makes a system call while messages flow. A receiver that dies is
//! reported by the stream (`PeerGone`); one that stops reading but lives is
//! given up on after [`SEND_LIMIT`].

use std::io;
use std::ptr::NonNull;
use std::time::Duration;

use shmbus::{OpenOptions, WaitStrategy};
use shmbus::{
    Wait,
    stream::{Consumer, PopError, Producer},
};

use super::{ChannelSpec, Endpoint, Got, Mechanism, Resources, Side};
use crate::case::Pattern;

/// The stream between processes.
pub struct ShmbusStream;

/// How long a push may wait for room before the receiver is taken as stuck.
const SEND_LIMIT: Duration = Duration::from_secs(10);

/// Ring bytes: 4 MiB, like the bus, or more if that would hold fewer than
/// four records.
fn capacity(msg_size: usize) -> Option<u64> {
    let record = (msg_size as u64).checked_add(8)?.next_multiple_of(8);
    let cap = record.checked_mul(4)?.checked_next_power_of_two()?;
    Some(cap.max(4 << 20)).filter(|&c| c <= shmbus::wire::MAX_STREAM)
}

fn io_err(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(format!("shmbus-stream: {e}"))
}

fn to_receiver(token: &str, i: usize) -> String {
    format!("{token}-r{i}")
}

fn back(token: &str) -> String {
    format!("{token}-pong")
}

/// A consumer whose last record is left in the ring until the next `recv`.
struct Reader {
    consumer: Consumer<[u8]>,
    /// A record was handed out and is not released yet.
    held: bool,
}

impl Reader {
    #[inline]
    fn recv(&mut self) -> io::Result<&[u8]> {
        if self.held {
            // The record handed out last is still first in the ring: peek
            // finds it again at once, and releasing it gives its bytes back.
            self.consumer
                .peek(Wait::Never)
                .map_err(|e| io_err(format!("the held record is gone: {e}")))?
                .release();
            self.held = false;
        }
        let mut patience = super::Patience::default();
        let (ptr, len) = loop {
            match self.consumer.peek(Wait::Never) {
                Ok(record) => break (NonNull::from(&*record).cast::<u8>(), record.len()),
                Err(PopError::Empty) => patience.spin()?,
                Err(e) => return Err(io_err(e)),
            }
        };
        self.held = true;
        // SAFETY: the record lies in the ring, mapped while `consumer`
        // lives, and is not released (its bytes stay the consumer's, which
        // the producer does not write) until the next `recv`, which needs
        // `&mut self` and so comes after the returned borrow has ended.
        Ok(unsafe { std::slice::from_raw_parts(ptr.as_ptr(), len) })
    }
}

struct Ends {
    tx: Vec<Producer<[u8]>>,
    rx: Option<Reader>,
}

impl Endpoint for Ends {
    #[inline]
    fn send(&mut self, msg: &[u8]) -> io::Result<()> {
        if self.tx.is_empty() {
            return Err(io::Error::other("no way back on this end"));
        }
        for tx in &mut self.tx {
            tx.push(msg, Wait::For(SEND_LIMIT)).map_err(io_err)?;
        }
        Ok(())
    }
    #[inline]
    fn recv(&mut self) -> io::Result<Got<'_>> {
        let rx = super::receiving(&mut self.rx)?;
        Ok(Got::Msg(rx.recv()?))
    }
}

/// Opening options: prefaulted, and a producer that spins while the ring is
/// full instead of sleeping.
fn open_options() -> OpenOptions {
    OpenOptions::default()
        .wait_strategy(WaitStrategy::BusySpin)
        .prefault(true)
}

fn produce(name: &str) -> io::Result<Producer<[u8]>> {
    Producer::<[u8]>::attach(name, &open_options()).map_err(io_err)
}

fn consume(name: &str) -> io::Result<Reader> {
    Ok(Reader {
        consumer: Consumer::<[u8]>::attach(name, &open_options()).map_err(io_err)?,
        held: false,
    })
}

impl Mechanism for ShmbusStream {
    fn name(&self) -> &'static str {
        "shmbus-stream"
    }
    fn describe(&self) -> &'static str {
        "shmbus lossless SPSC stream between processes (/dev/shm, one per receiver, busy-poll)"
    }
    fn unsupported(&self, _pattern: Pattern, msg_size: usize) -> Option<String> {
        match capacity(msg_size) {
            Some(_) => None,
            None => Some("the ring would be larger than a stream may be".into()),
        }
    }
    fn setup(&self, spec: &ChannelSpec) -> io::Result<Box<dyn Resources>> {
        let cap = capacity(spec.msg_size).ok_or_else(|| io_err("message too large"))?;
        let token = format!("{}-stream", spec.prefix);
        let mut streams = super::Segments {
            token: token.clone(),
            names: Vec::new(),
        };
        let mut names: Vec<String> = (0..spec.receivers)
            .map(|i| to_receiver(&token, i))
            .collect();
        if spec.duplex {
            names.push(back(&token));
        }
        for name in names {
            let opts = shmbus::stream::Options::new(cap).prefault(true);
            // Dropped at once: the creator's producer role is free again.
            Producer::<[u8]>::create(&name, &opts).map_err(io_err)?;
            streams.names.push(name);
        }
        Ok(Box::new(streams))
    }
    fn open(&self, token: &str, side: Side, spec: &ChannelSpec) -> io::Result<Box<dyn Endpoint>> {
        let ends = match side {
            Side::Sender => Ends {
                tx: (0..spec.receivers)
                    .map(|i| produce(&to_receiver(token, i)))
                    .collect::<io::Result<_>>()?,
                rx: if spec.duplex {
                    Some(consume(&back(token))?)
                } else {
                    None
                },
            },
            Side::Receiver(i) => Ends {
                rx: Some(consume(&to_receiver(token, i))?),
                tx: if spec.duplex && i == 0 {
                    vec![produce(&back(token))?]
                } else {
                    Vec::new()
                },
            },
        };
        Ok(Box::new(ends))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacity_is_4_mib_or_four_records() {
        assert_eq!(capacity(16), Some(4 << 20));
        assert_eq!(capacity(65536), Some(4 << 20));
        assert_eq!(capacity(1 << 20), Some(8 << 20));
        assert_eq!(capacity(usize::MAX - 4), None);
        assert_eq!(capacity(1 << 31), None);
    }

    #[test]
    fn records_cross_and_are_released_one_recv_later() {
        let spec = ChannelSpec {
            msg_size: 64,
            receivers: 1,
            duplex: false,
            prefix: format!("shmbus-stream-test-{}", std::process::id()),
        };
        let m = ShmbusStream;
        let resources = m.setup(&spec).expect("setup");
        let token = resources.token();
        let mut tx = m.open(&token, Side::Sender, &spec).expect("sender");
        let mut rx = m.open(&token, Side::Receiver(0), &spec).expect("receiver");
        for i in 0..200_000u32 {
            let mut msg = [0u8; 64];
            msg[..4].copy_from_slice(&i.to_le_bytes());
            tx.send(&msg).expect("send");
            match rx.recv().expect("recv") {
                Got::Msg(m) => assert_eq!(m[..4], i.to_le_bytes()),
                Got::Lost(_) => panic!("a stream loses nothing"),
            }
        }
        let name = to_receiver(&token, 0);
        let fill = shmbus::stat::stat(&name)
            .expect("stat")
            .stream
            .expect("a stream");
        assert_eq!(fill.fill, 72, "the last record is held until the next recv");
        drop((tx, rx));
        drop(resources);
        assert!(shmbus::stat::stat(&name).is_err(), "removed");
    }
}
