//! `udp`: UDP datagrams over loopback (127.0.0.1), one socket per receiver;
//! the sender sends each message once to every receiver from its own
//! socket, and for pingpong receiver 0 answers to it.
//!
//! One datagram per message (so no framing, and at most 65507 bytes), plain
//! blocking `send`/`recv`, with 4 MiB socket buffers (`SO_RCVBUFFORCE`
//! where allowed, else as much of it as `net.core.rmem_max`/`wmem_max`
//! allow). UDP is lossy: a datagram that finds the receiver's buffer full
//! is dropped, so under `throughput` receivers may get fewer messages than
//! were sent (reported as lost); the parent sends STOP again until every
//! receiver reports.
//!
//! Opening: `setup` binds the sender's socket to port 0 (the kernel picks)
//! and the port is the token. Each receiver binds its own port 0, connects
//! to the sender and says hello (its index) every 20 ms until acknowledged;
//! the sender's `open` collects the hellos (at most 10 s) and so learns
//! where each receiver is. With one receiver the sender's socket is
//! connected to it too. Blocked receivers check every second that the
//! sender's process lives; the sender waits at most 10 s for a pong.

use std::io;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use super::kio::{self, Handed, Patience};
use super::{ChannelSpec, Endpoint, Got, Mechanism, Resources, Side};
use crate::case::Pattern;

/// UDP datagrams over loopback.
pub struct Udp;

/// The largest UDP payload over IPv4.
const MAX_DATAGRAM: usize = 65507;
/// Socket buffer size asked for, each way.
const BUFFER: usize = 4 << 20;
/// A receiver's hello: this, then its index (u32 LE): 12 bytes, never a
/// message (at least 16).
const HELLO: &[u8; 8] = b"shmbHELO";
/// The sender's answer to a hello: 8 bytes, never a message.
const ACK: &[u8; 8] = b"shmbACK!";
/// How often a receiver says hello until acknowledged.
const HELLO_EVERY: Duration = Duration::from_millis(20);

fn buffers(s: &UdpSocket) -> io::Result<()> {
    use rustix::net::sockopt;
    sockopt::set_socket_recv_buffer_size_force(s, BUFFER)
        .or_else(|_| sockopt::set_socket_recv_buffer_size(s, BUFFER))?;
    sockopt::set_socket_send_buffer_size_force(s, BUFFER)
        .or_else(|_| sockopt::set_socket_send_buffer_size(s, BUFFER))?;
    Ok(())
}

fn quiet(e: &io::Error) -> bool {
    use io::ErrorKind::*;
    matches!(
        e.kind(),
        WouldBlock | TimedOut | Interrupted | ConnectionRefused
    )
}

/// One end: the sender (to `peers`, or connected when there is one) or a
/// receiver (connected to the sender).
struct Datagrams {
    sock: UdpSocket,
    /// Where the sender sends when its socket is not connected.
    peers: Vec<SocketAddr>,
    connected: bool,
    buf: Vec<u8>,
    /// A message that arrived while the receiver waited for its ack.
    pending: Option<usize>,
    patience: Patience,
}

impl Endpoint for Datagrams {
    #[inline]
    fn send(&mut self, msg: &[u8]) -> io::Result<()> {
        if self.connected {
            self.sock.send(msg)?;
            return Ok(());
        }
        if self.peers.is_empty() {
            return Err(io::Error::other("no way back on this end"));
        }
        let mut first = None;
        for p in &self.peers {
            if let Err(e) = self.sock.send_to(msg, p) {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }

    #[inline]
    fn recv(&mut self) -> io::Result<Got<'_>> {
        let n = match self.pending.take() {
            Some(n) => n,
            None => loop {
                match self.sock.recv(&mut self.buf) {
                    Ok(n) if n == self.buf.len() => break n,
                    // A late hello or ack.
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e)
                        if matches!(
                            e.kind(),
                            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                        ) =>
                    {
                        self.patience.expired("waiting for a datagram")?
                    }
                    Err(e) => return Err(e),
                }
            },
        };
        Ok(Got::Msg(&self.buf[..n]))
    }
}

impl Udp {
    fn open_sender(token: &str, spec: &ChannelSpec) -> io::Result<Datagrams> {
        let sock = UdpSocket::from(kio::take_over(token)?);
        let n = spec.receivers;
        let mut peers: Vec<Option<SocketAddr>> = vec![None; n];
        let deadline = Instant::now() + kio::OPEN_TIMEOUT;
        let mut buf = [0u8; 64];
        while peers.iter().any(Option::is_none) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                let got = peers.iter().flatten().count();
                return Err(kio::timed_out(format!(
                    "{got} of {n} receiver(s) said hello within {} s",
                    kio::OPEN_TIMEOUT.as_secs()
                )));
            }
            sock.set_read_timeout(Some(left))?;
            match sock.recv_from(&mut buf) {
                Ok((12, from)) if &buf[..8] == HELLO => {
                    let i = u32::from_le_bytes([buf[8], buf[9], buf[10], buf[11]]) as usize;
                    if let Some(slot) = peers.get_mut(i) {
                        *slot = Some(from);
                        sock.send_to(ACK, from)?;
                    }
                }
                Ok(_) => {}
                Err(e) if quiet(&e) => {}
                Err(e) => return Err(kio::context(e, "waiting for hellos")),
            }
        }
        let peers: Vec<SocketAddr> = peers.into_iter().flatten().collect();
        let connected = peers.len() == 1;
        if connected {
            sock.connect(peers[0])?;
        }
        sock.set_read_timeout(Some(Patience::Sender.period()))?;
        Ok(Datagrams {
            sock,
            peers,
            connected,
            buf: vec![0; spec.msg_size],
            pending: None,
            patience: Patience::Sender,
        })
    }

    fn open_receiver(token: &str, index: usize, spec: &ChannelSpec) -> io::Result<Datagrams> {
        let sender: SocketAddr = token
            .parse()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("{token:?}: {e}")))?;
        let sock = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))?;
        buffers(&sock)?;
        sock.connect(sender)?;
        sock.set_read_timeout(Some(HELLO_EVERY))?;
        let mut hello = [0u8; 12];
        hello[..8].copy_from_slice(HELLO);
        let index32 = u32::try_from(index).map_err(io::Error::other)?;
        hello[8..].copy_from_slice(&index32.to_le_bytes());
        let mut buf = vec![0u8; spec.msg_size];
        let deadline = Instant::now() + kio::OPEN_TIMEOUT;
        let pending = loop {
            if Instant::now() >= deadline {
                return Err(kio::timed_out(format!(
                    "the sender at {sender} did not answer within {} s",
                    kio::OPEN_TIMEOUT.as_secs()
                )));
            }
            match sock.send(&hello) {
                Ok(_) => {}
                Err(e) if quiet(&e) => {}
                Err(e) => return Err(kio::context(e, "saying hello")),
            }
            match sock.recv(&mut buf) {
                Ok(8) if &buf[..8] == ACK => break None,
                // The ack was lost but messages flow: keep the first.
                Ok(n) if n == spec.msg_size => break Some(n),
                Ok(_) => {}
                Err(e) if quiet(&e) => {}
                Err(e) => return Err(kio::context(e, "waiting for the ack")),
            }
        };
        let patience = Patience::of(Side::Receiver(index));
        sock.set_read_timeout(Some(patience.period()))?;
        Ok(Datagrams {
            sock,
            peers: Vec::new(),
            connected: true,
            buf,
            pending,
            patience,
        })
    }
}

impl Mechanism for Udp {
    fn name(&self) -> &'static str {
        "udp"
    }
    fn describe(&self) -> &'static str {
        "UDP datagrams over loopback, one socket per receiver, 4 MiB buffers (lossy)"
    }
    fn unsupported(&self, _pattern: Pattern, msg_size: usize) -> Option<String> {
        (msg_size > MAX_DATAGRAM).then(|| format!("UDP datagrams are at most {MAX_DATAGRAM} bytes"))
    }
    fn setup(&self, spec: &ChannelSpec) -> io::Result<Box<dyn Resources>> {
        if spec.msg_size > MAX_DATAGRAM {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("UDP datagrams are at most {MAX_DATAGRAM} bytes"),
            ));
        }
        let sock = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))
            .map_err(|e| kio::context(e, "binding 127.0.0.1:0"))?;
        buffers(&sock)?;
        let token = sock.local_addr()?.to_string();
        Ok(Box::new(Handed::new(token, sock.into(), None)))
    }
    fn open(&self, token: &str, side: Side, spec: &ChannelSpec) -> io::Result<Box<dyn Endpoint>> {
        Ok(Box::new(match side {
            Side::Sender => Udp::open_sender(token, spec)?,
            Side::Receiver(i) => Udp::open_receiver(token, i, spec)?,
        }))
    }
}
