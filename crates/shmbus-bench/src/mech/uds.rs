//! `uds`: Unix-domain stream sockets (`SOCK_STREAM`), one connection per
//! receiver, through a socket file in a private directory under the temp
//! dir; for pingpong, receiver 0 answers on its own connection.
//!
//! Plain blocking `read`/`write` with the kernel's default socket buffers
//! (`net.core.wmem_default`). A stream has no message boundaries, so the
//! reader frames by reading exactly `msg_size` bytes.
//!
//! Opening: `setup` binds and listens, so receivers can connect at once;
//! each says its index first. The sender's `open` accepts them (polling
//! the listener, at most 10 s). A side that exits is seen at once:
//! `EPIPE` for its writer, end-of-file for its reader.

use std::io;
use std::os::unix::net::{UnixListener, UnixStream};

use super::kio::{self, Handed, Stream, Streams, TempDir};
use super::{ChannelSpec, Endpoint, Mechanism, Resources, Side};

/// A Unix-domain stream socket per receiver.
pub struct Uds;

impl Mechanism for Uds {
    fn name(&self) -> &'static str {
        "uds"
    }
    fn describe(&self) -> &'static str {
        "Unix-domain stream sockets, one connection per receiver (blocking read/write)"
    }
    fn setup(&self, spec: &ChannelSpec) -> io::Result<Box<dyn Resources>> {
        let dir = TempDir::create(&spec.prefix)?;
        let token = dir.file("sock")?;
        let listener = UnixListener::bind(&token).map_err(|e| kio::context(e, &token))?;
        listener.set_nonblocking(true)?;
        Ok(Box::new(Handed::new(token, listener.into(), Some(dir))))
    }
    fn open(&self, token: &str, side: Side, spec: &ChannelSpec) -> io::Result<Box<dyn Endpoint>> {
        let (out, inp) = match side {
            Side::Sender => {
                let listener = UnixListener::from(kio::take_over(token)?);
                let out = kio::accept_all(&listener, spec.receivers, || {
                    listener.accept().map(|(s, _)| s)
                })?;
                let inp = if spec.duplex {
                    Some(out[0].dup()?)
                } else {
                    None
                };
                (out, inp)
            }
            Side::Receiver(i) => {
                let mut s = UnixStream::connect(token).map_err(|e| kio::context(e, token))?;
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
}
