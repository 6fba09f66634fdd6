//! Plumbing shared by the kernel IPC adapters (`pipe`, `uds`, `tcp`, `udp`,
//! `mq`): time limits, the hand-over of a socket bound in `setup` to the
//! sender's `open` in the same process, waiting with a timeout, a private
//! directory, and the stream endpoint that frames messages by their fixed
//! size.
//!
//! No end ever blocks forever: the sender gives up on a receiver after
//! [`OPEN_TIMEOUT`] while opening and after [`STALL_TIMEOUT`] of silence
//! where the mechanism has no end-of-file; a receiver blocked where it
//! would not see the sender die checks every [`PARENT_CHECK`] that its
//! parent is still there.

use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec, poll};

use super::{Endpoint, Got, Resources, Side};

/// How long the sender's `open` waits for the receivers, and a receiver's
/// `open` for the sender.
pub const OPEN_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the sender waits on a receiver that neither drains nor answers,
/// where nothing else would tell it the receiver is gone (mq, udp).
pub const STALL_TIMEOUT: Duration = Duration::from_secs(10);
/// How often a blocked receiver checks that its parent (the sender) lives,
/// where nothing else would tell it (mq, udp, a FIFO not yet written).
pub const PARENT_CHECK: Duration = Duration::from_secs(1);

/// Sockets bound in `setup`, waiting for the sender's `open`, by token.
static HANDOFF: Mutex<Vec<(String, OwnedFd)>> = Mutex::new(Vec::new());

fn handoff() -> MutexGuard<'static, Vec<(String, OwnedFd)>> {
    HANDOFF.lock().unwrap_or_else(|e| e.into_inner())
}

/// Keeps `fd` for the sender's `open` of `token`.
pub fn hand_over(token: &str, fd: OwnedFd) {
    handoff().push((token.to_owned(), fd));
}

/// Takes the socket `setup` kept for `token`.
pub fn take_over(token: &str) -> io::Result<OwnedFd> {
    let mut kept = handoff();
    let i = kept.iter().position(|(t, _)| t == token).ok_or_else(|| {
        io::Error::other(format!(
            "no socket was set up for {token:?} in this process \
             (the sender opens after setup, in the same process, once)"
        ))
    })?;
    Ok(kept.swap_remove(i).1)
}

/// Closes the socket kept for `token`, if the sender never took it.
pub fn discard(token: &str) {
    handoff().retain(|(t, _)| t != token);
}

/// An error that says what was being done.
pub fn context(e: io::Error, what: impl std::fmt::Display) -> io::Error {
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

/// A time-out error.
pub fn timed_out(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, msg)
}

/// What a blocked end does when a wait of [`Patience::period`] ends with
/// nothing.
#[derive(Clone, Copy, Debug)]
pub enum Patience {
    /// The sender gives up after [`STALL_TIMEOUT`].
    Sender,
    /// A receiver waits as long as its parent (the sender's process, with
    /// this pid) lives.
    Receiver(u32),
}

impl Patience {
    /// The patience of `side` in this process.
    pub fn of(side: Side) -> Patience {
        match side {
            Side::Sender => Patience::Sender,
            Side::Receiver(_) => Patience::Receiver(std::os::unix::process::parent_id()),
        }
    }

    /// How long one wait lasts.
    pub fn period(self) -> Duration {
        match self {
            Patience::Sender => STALL_TIMEOUT,
            Patience::Receiver(_) => PARENT_CHECK,
        }
    }

    /// Called after a whole [`period`](Self::period) passed with nothing:
    /// `Ok` to wait again, or why not.
    pub fn expired(self, what: &str) -> io::Result<()> {
        match self {
            Patience::Sender => Err(timed_out(format!(
                "{what}: nothing for {} s (has a receiver died?)",
                STALL_TIMEOUT.as_secs()
            ))),
            Patience::Receiver(parent) if std::os::unix::process::parent_id() != parent => {
                Err(io::Error::new(
                    io::ErrorKind::BrokenPipe,
                    format!("{what}: the sender's process is gone"),
                ))
            }
            Patience::Receiver(_) => Ok(()),
        }
    }
}

fn timespec(d: Duration) -> Timespec {
    Timespec {
        tv_sec: d.as_secs().try_into().unwrap_or(i64::MAX),
        tv_nsec: d.subsec_nanos().into(),
    }
}

/// Waits up to `timeout` for `fd` to be readable or hung up: its events,
/// empty if the time ran out.
pub fn poll_in(fd: &impl AsFd, timeout: Duration) -> io::Result<PollFlags> {
    let deadline = Instant::now() + timeout;
    loop {
        let mut fds = [PollFd::new(fd, PollFlags::IN)];
        let left = timespec(deadline.saturating_duration_since(Instant::now()));
        match poll(&mut fds, Some(&left)) {
            Ok(0) => return Ok(PollFlags::empty()),
            Ok(_) => return Ok(fds[0].revents()),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Waits, per `patience`, for `fd` to be readable or hung up: its events.
pub fn wait_in(fd: &impl AsFd, patience: Patience, what: &str) -> io::Result<PollFlags> {
    loop {
        let ev = poll_in(fd, patience.period())?;
        if !ev.is_empty() {
            return Ok(ev);
        }
        patience.expired(what)?;
    }
}

/// A directory only this user can enter, for a run's FIFOs or socket,
/// removed with everything in it on drop.
pub struct TempDir {
    /// Where it is.
    pub path: PathBuf,
}

impl TempDir {
    /// Creates `<temp dir>/<prefix>`; fails if it exists.
    pub fn create(prefix: &str) -> io::Result<TempDir> {
        let path = std::env::temp_dir().join(prefix);
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&path)
            .map_err(|e| context(e, path.display()))?;
        Ok(TempDir { path })
    }

    /// The path of `name` inside, as UTF-8.
    pub fn file(&self, name: &str) -> io::Result<String> {
        utf8(&self.path.join(name))
    }
}

/// A path as UTF-8 (tokens travel on a command line).
pub fn utf8(p: &Path) -> io::Result<String> {
    p.to_str()
        .map(str::to_owned)
        .ok_or_else(|| io::Error::other(format!("{}: not UTF-8 (set TMPDIR)", p.display())))
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// The resources of a socket mechanism: a socket bound in `setup` and kept
/// in the hand-over for the sender, maybe in a private directory.
pub struct Handed {
    /// What children get; also the hand-over key.
    token: String,
    /// The directory holding the socket's file, if it has one.
    _dir: Option<TempDir>,
}

impl Handed {
    /// Keeps `fd` in the hand-over under `token` until the sender takes it
    /// or this drops.
    pub fn new(token: String, fd: OwnedFd, dir: Option<TempDir>) -> Handed {
        hand_over(&token, fd);
        Handed { token, _dir: dir }
    }
}

impl Resources for Handed {
    fn token(&self) -> String {
        self.token.clone()
    }
}

impl Drop for Handed {
    fn drop(&mut self) {
        // The socket first, then (as a field) the directory.
        discard(&self.token);
    }
}

/// A connected stream socket, as [`accept_all`] and [`Streams`] use it.
pub trait Stream: Read + Write + AsFd + Sized {
    /// `set_read_timeout` of the socket.
    fn read_timeout(&self, t: Option<Duration>) -> io::Result<()>;
    /// `set_nonblocking` of the socket.
    fn nonblocking(&self, on: bool) -> io::Result<()>;
    /// `try_clone` of the socket.
    fn dup(&self) -> io::Result<Self>;
}

impl Stream for std::os::unix::net::UnixStream {
    fn read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.set_read_timeout(t)
    }
    fn nonblocking(&self, on: bool) -> io::Result<()> {
        self.set_nonblocking(on)
    }
    fn dup(&self) -> io::Result<Self> {
        self.try_clone()
    }
}

impl Stream for std::net::TcpStream {
    fn read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.set_read_timeout(t)
    }
    fn nonblocking(&self, on: bool) -> io::Result<()> {
        self.set_nonblocking(on)
    }
    fn dup(&self) -> io::Result<Self> {
        self.try_clone()
    }
}

/// What a receiver sends first on a stream connection: its index.
pub fn hello(stream: &mut impl Write, index: usize) -> io::Result<()> {
    stream
        .write_all(&(index as u64).to_le_bytes())
        .map_err(|e| context(e, "saying hello to the sender"))
}

/// Accepts one connection from each of `n` receivers on a non-blocking
/// listening socket within [`OPEN_TIMEOUT`], and returns them (blocking)
/// in receiver order, as each says with [`hello`].
pub fn accept_all<S: Stream>(
    listener: &impl AsFd,
    n: usize,
    mut accept: impl FnMut() -> io::Result<S>,
) -> io::Result<Vec<S>> {
    let deadline = Instant::now() + OPEN_TIMEOUT;
    let mut slots: Vec<Option<S>> = (0..n).map(|_| None).collect();
    let mut got = 0;
    while got < n {
        let mut s = match accept() {
            Ok(s) => s,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() || poll_in(listener, left)?.is_empty() {
                    return Err(timed_out(format!(
                        "{got} of {n} receiver(s) connected within {} s",
                        OPEN_TIMEOUT.as_secs()
                    )));
                }
                continue;
            }
            Err(e) => return Err(context(e, "accept")),
        };
        s.nonblocking(false)?;
        let left = deadline.saturating_duration_since(Instant::now());
        s.read_timeout(Some(left.max(Duration::from_millis(1))))?;
        let mut index = [0u8; 8];
        s.read_exact(&mut index)
            .map_err(|e| context(e, "a receiver connected but did not say which it is"))?;
        s.read_timeout(None)?;
        let i = u64::from_le_bytes(index);
        match usize::try_from(i).ok().and_then(|i| slots.get_mut(i)) {
            Some(slot @ None) => {
                *slot = Some(s);
                got += 1;
            }
            _ => {
                return Err(io::Error::other(format!(
                    "unexpected hello from receiver {i}"
                )));
            }
        }
    }
    Ok(slots.into_iter().flatten().collect())
}

/// An end over byte streams: writes each message whole to every output,
/// reads exactly one message's bytes from the input (a write may arrive in
/// pieces, so this is the framing).
pub struct Streams<R, W> {
    out: Vec<W>,
    inp: Option<R>,
    buf: Vec<u8>,
}

impl<R, W> Streams<R, W> {
    /// Writes to `out`, reads `msg_size`-byte messages from `inp`.
    pub fn new(out: Vec<W>, inp: Option<R>, msg_size: usize) -> Self {
        Streams {
            out,
            inp,
            buf: vec![0; msg_size],
        }
    }
}

impl<R: Read, W: Write> Endpoint for Streams<R, W> {
    #[inline]
    fn send(&mut self, msg: &[u8]) -> io::Result<()> {
        if self.out.is_empty() {
            return Err(io::Error::other("no way back on this end"));
        }
        // Every receiver gets it even if one is gone (the parent sends STOP
        // to all, again and again, while some have already exited).
        let mut first = None;
        for w in &mut self.out {
            if let Err(e) = w.write_all(msg) {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }

    #[inline]
    fn recv(&mut self) -> io::Result<Got<'_>> {
        let r = super::receiving(&mut self.inp)?;
        r.read_exact(&mut self.buf).map_err(|e| {
            if e.kind() == io::ErrorKind::UnexpectedEof {
                io::Error::new(e.kind(), "the other side closed the channel")
            } else {
                e
            }
        })?;
        Ok(Got::Msg(&self.buf))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{Duration, Instant};

    use super::super::{
        ChannelSpec, Got, Mechanism, Side, marker, mq::Mq, pipe::Pipe, stamp, tcp::Tcp,
        tcp::TcpNagle, udp::Udp, uds::Uds, unstamp,
    };
    use crate::case::Pattern;

    const ALL: [&(dyn Mechanism + 'static); 6] = [&Pipe, &Uds, &Tcp, &TcpNagle, &Udp, &Mq];

    fn spec(m: &dyn Mechanism, msg_size: usize, receivers: usize, duplex: bool) -> ChannelSpec {
        static RUN: AtomicUsize = AtomicUsize::new(0);
        ChannelSpec {
            msg_size,
            receivers,
            duplex,
            prefix: format!(
                "shmbus-kio-test-{}-{}-{}",
                std::process::id(),
                m.name(),
                RUN.fetch_add(1, Ordering::Relaxed)
            ),
        }
    }

    fn fill(buf: &mut [u8], seq: u64) {
        for (k, b) in buf.iter_mut().enumerate().skip(16) {
            *b = (seq as usize).wrapping_mul(31).wrapping_add(k) as u8;
        }
    }

    fn check(msg: &[u8], seq: u64) {
        let mut want = msg.to_vec();
        fill(&mut want, seq);
        assert!(msg == want, "message {seq} garbled");
    }

    /// Receivers in threads of this process; the sender sends `n` messages
    /// (and waits for each echo when `duplex`), then STOP.
    fn run(m: &'static dyn Mechanism, msg_size: usize, receivers: usize, duplex: bool, n: u64) {
        let pattern = if duplex {
            Pattern::Pingpong
        } else {
            Pattern::Fanout
        };
        if let Some(why) = m.unsupported(pattern, msg_size) {
            eprintln!("{} skips {msg_size} B: {why}", m.name());
            return;
        }
        let spec = spec(m, msg_size, receivers, duplex);
        let res = m.setup(&spec).expect("setup");
        let token = res.token();
        let threads: Vec<_> = (0..receivers)
            .map(|i| {
                let (token, spec) = (token.clone(), spec.clone());
                std::thread::spawn(move || -> std::io::Result<u64> {
                    let mut ep = m.open(&token, Side::Receiver(i), &spec)?;
                    let mut got = 0;
                    loop {
                        let Got::Msg(msg) = ep.recv()? else { continue };
                        assert_eq!(msg.len(), spec.msg_size);
                        let (seq, _) = unstamp(msg);
                        if seq == marker::STOP {
                            return Ok(got);
                        }
                        check(msg, seq);
                        got += 1;
                        if spec.duplex && i == 0 {
                            let echo = msg.to_vec();
                            ep.send(&echo)?;
                        }
                    }
                })
            })
            .collect();
        let mut tx = m.open(&token, Side::Sender, &spec).expect("open sender");
        let mut buf = vec![0u8; msg_size];
        for seq in 0..n {
            stamp(&mut buf, seq, 0);
            fill(&mut buf, seq);
            tx.send(&buf).expect("send");
            if duplex {
                let Ok(Got::Msg(echo)) = tx.recv() else {
                    panic!("no echo")
                };
                assert_eq!(unstamp(echo).0, seq);
                check(echo, seq);
            }
        }
        stamp(&mut buf, marker::STOP, 0);
        while !threads.iter().all(|t| t.is_finished()) {
            let _ = tx.send(&buf);
            std::thread::sleep(Duration::from_millis(20));
        }
        for t in threads {
            let got = t.join().expect("receiver thread").expect("receiver");
            if m.name() == "udp" {
                assert!(got > 0 && got <= n, "{got} of {n}");
            } else {
                assert_eq!(got, n, "{}", m.name());
            }
        }
        drop(tx);
        drop(res);
        assert!(!std::env::temp_dir().join(&spec.prefix).exists());
        if m.name() == "mq" {
            let name = format!("/{}-ping-0", spec.prefix);
            let gone = nix::mqueue::mq_open(
                name.as_str(),
                nix::mqueue::MQ_OFlag::O_RDONLY,
                nix::sys::stat::Mode::empty(),
                None,
            );
            assert_eq!(gone.err(), Some(nix::errno::Errno::ENOENT));
        }
    }

    #[test]
    fn pingpong() {
        for m in ALL {
            for size in [16, 4096, 65536] {
                run(m, size, 1, true, 300);
            }
        }
    }

    #[test]
    fn fanout() {
        for m in ALL {
            for size in [16, 1000, 8192] {
                run(m, size, 3, false, 300);
            }
        }
    }

    #[test]
    fn udp_refuses_jumbo_messages() {
        assert_eq!(Udp.unsupported(Pattern::Throughput, 65507), None);
        let why = Udp.unsupported(Pattern::Throughput, 65508);
        assert_eq!(
            why.as_deref(),
            Some("UDP datagrams are at most 65507 bytes")
        );
    }

    /// The sender never waits forever for receivers that do not come (or,
    /// for mq, whose queues do not drain).
    #[test]
    #[ignore = "waits 10 to 20 s: .ci/run runs it with --ignored"]
    fn sender_gives_up_without_receivers() {
        let threads: Vec<_> = ALL
            .into_iter()
            .map(|m| {
                std::thread::spawn(move || {
                    let spec = spec(m, 64, 2, true);
                    let res = m.setup(&spec).expect("setup");
                    let t0 = Instant::now();
                    let err = match m.open(&res.token(), Side::Sender, &spec) {
                        Err(e) => e,
                        Ok(mut ep) => loop {
                            if let Err(e) = ep.send(&[0; 64]) {
                                break e;
                            }
                        },
                    };
                    let waited = t0.elapsed();
                    eprintln!("{}: after {waited:?}: {err}", m.name());
                    assert!(waited >= Duration::from_secs(9) && waited < Duration::from_secs(22));
                })
            })
            .collect();
        for t in threads {
            t.join().expect("no panic");
        }
    }
}
