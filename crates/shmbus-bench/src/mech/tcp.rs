//! `tcp` and `tcp-nagle`: TCP over loopback (127.0.0.1), one connection per
//! receiver; for pingpong, receiver 0 answers on its own connection. `tcp`
//! sets `TCP_NODELAY` on both ends (each write goes out at once);
//! `tcp-nagle` leaves Nagle's algorithm on, as a socket comes, to show what
//! it costs small messages.
//!
//! Plain blocking `read`/`write` with the kernel's default socket buffers
//! (`net.ipv4.tcp_wmem`/`tcp_rmem`, autotuned). A stream has no message
//! boundaries, so the reader frames by reading exactly `msg_size` bytes.
//!
//! Opening: `setup` binds port 0 (the kernel picks) and listens; the port
//! is the token, so receivers can connect at once; each says its index
//! first. The sender's `open` accepts them (polling the listener, at most
//! 10 s). A side that exits is seen at once: `EPIPE`/`ECONNRESET` for its
//! writer, end-of-file for its reader.

use std::io;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};

use super::kio::{self, Handed, Stream, Streams};
use super::{ChannelSpec, Endpoint, Mechanism, Resources, Side};

/// TCP over loopback with `TCP_NODELAY`.
pub struct Tcp;
/// TCP over loopback with Nagle's algorithm (no `TCP_NODELAY`).
pub struct TcpNagle;

fn setup(spec: &ChannelSpec) -> io::Result<Box<dyn Resources>> {
    let _ = spec;
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .map_err(|e| kio::context(e, "binding 127.0.0.1:0"))?;
    listener.set_nonblocking(true)?;
    let token = listener.local_addr()?.to_string();
    Ok(Box::new(Handed::new(token, listener.into(), None)))
}

fn open(
    token: &str,
    side: Side,
    spec: &ChannelSpec,
    nodelay: bool,
) -> io::Result<Box<dyn Endpoint>> {
    let (out, inp) = match side {
        Side::Sender => {
            let listener = TcpListener::from(kio::take_over(token)?);
            let out = kio::accept_all(&listener, spec.receivers, || {
                listener.accept().map(|(s, _)| s)
            })?;
            for s in &out {
                s.set_nodelay(nodelay)?;
            }
            let inp = if spec.duplex {
                Some(out[0].dup()?)
            } else {
                None
            };
            (out, inp)
        }
        Side::Receiver(i) => {
            let addr: SocketAddr = token.parse().map_err(|e| {
                io::Error::new(io::ErrorKind::InvalidInput, format!("{token:?}: {e}"))
            })?;
            let mut s = TcpStream::connect_timeout(&addr, kio::OPEN_TIMEOUT)
                .map_err(|e| kio::context(e, format!("connecting to {addr}")))?;
            s.set_nodelay(nodelay)?;
            kio::hello(&mut s, i)?;
            let out = if spec.duplex && i == 0 {
                vec![s.dup()?]
            } else {
                Vec::new()
            };
            (out, Some(s))
        }
    };
    Ok(Box::new(Streams::new(out, inp, spec.msg_size)))
}

impl Mechanism for Tcp {
    fn name(&self) -> &'static str {
        "tcp"
    }
    fn describe(&self) -> &'static str {
        "TCP over loopback with TCP_NODELAY, one connection per receiver (blocking)"
    }
    fn setup(&self, spec: &ChannelSpec) -> io::Result<Box<dyn Resources>> {
        setup(spec)
    }
    fn open(&self, token: &str, side: Side, spec: &ChannelSpec) -> io::Result<Box<dyn Endpoint>> {
        open(token, side, spec, true)
    }
}

impl Mechanism for TcpNagle {
    fn name(&self) -> &'static str {
        "tcp-nagle"
    }
    fn describe(&self) -> &'static str {
        "TCP over loopback with Nagle's algorithm on (no TCP_NODELAY), one connection per receiver"
    }
    fn setup(&self, spec: &ChannelSpec) -> io::Result<Box<dyn Resources>> {
        setup(spec)
    }
    fn open(&self, token: &str, side: Side, spec: &ChannelSpec) -> io::Result<Box<dyn Endpoint>> {
        open(token, side, spec, false)
    }
}
