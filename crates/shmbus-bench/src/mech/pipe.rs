//! `pipe`: named pipes (FIFOs) in a private directory under the temp dir,
//! `ping-<i>` from the sender to receiver `i` and, for pingpong, `pong-0`
//! back from receiver 0.
//!
//! Plain blocking `read`/`write` with the kernel's default pipe buffer
//! (64 KiB). A write above `PIPE_BUF` (4 KiB) may arrive in pieces, so the
//! reader frames by reading exactly `msg_size` bytes.
//!
//! Opening: a FIFO's write end cannot open before its read end exists, so
//! every read end opens at once (`O_NONBLOCK`, then made blocking) and every
//! write end is retried while `ENXIO` for up to 10 s, then made blocking.
//! Nobody holds both ends of a FIFO, so a side that exits is seen at once:
//! `EPIPE` for its writer, end-of-file for its reader. Until the first
//! bytes, a read end with no writer yet reads end-of-file, so the reader
//! then sleeps in `poll` instead.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use rustix::event::PollFlags;
use rustix::fs::OFlags;

use super::kio::{self, Patience, Streams, TempDir};
use super::{ChannelSpec, Endpoint, Mechanism, Resources, Side};

/// Named pipes, one each way per receiver.
pub struct Pipe;

struct Fifos {
    token: String,
    _dir: TempDir,
}

impl Resources for Fifos {
    fn token(&self) -> String {
        self.token.clone()
    }
}

fn ping(dir: &Path, i: usize) -> std::path::PathBuf {
    dir.join(format!("ping-{i}"))
}

fn pong(dir: &Path) -> std::path::PathBuf {
    dir.join("pong-0")
}

fn blocking(f: &File) -> io::Result<()> {
    let flags = rustix::fs::fcntl_getfl(f)?;
    rustix::fs::fcntl_setfl(f, flags.difference(OFlags::NONBLOCK))?;
    Ok(())
}

/// Opens the read end of `path` at once, blocking from then on.
fn open_read(path: &Path, patience: Patience) -> io::Result<FifoIn> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| kio::context(e, path.display()))?;
    blocking(&file)?;
    Ok(FifoIn {
        file,
        written: false,
        patience,
    })
}

/// Opens the write end of `path` once its reader is there, blocking.
fn open_write(path: &Path, deadline: Instant) -> io::Result<File> {
    loop {
        match OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
        {
            Ok(f) => {
                blocking(&f)?;
                return Ok(f);
            }
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
                if Instant::now() >= deadline {
                    return Err(kio::timed_out(format!(
                        "{}: nobody opened it for reading within {} s",
                        path.display(),
                        kio::OPEN_TIMEOUT.as_secs()
                    )));
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(kio::context(e, path.display())),
        }
    }
}

/// A FIFO's read end.
struct FifoIn {
    file: File,
    /// Whether bytes came: end-of-file from then on means the writer left.
    written: bool,
    patience: Patience,
}

impl Read for FifoIn {
    #[inline]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let n = self.file.read(buf)?;
            if n > 0 || self.written {
                self.written = true;
                return Ok(n);
            }
            // No writer has opened the FIFO yet: a read returns 0 at once.
            // Sleep until the first bytes (or a writer that came and went).
            let ev = kio::wait_in(&self.file, self.patience, "waiting for the FIFO's writer")?;
            if ev.contains(PollFlags::HUP) && !ev.contains(PollFlags::IN) {
                return Ok(0);
            }
        }
    }
}

impl Mechanism for Pipe {
    fn name(&self) -> &'static str {
        "pipe"
    }
    fn describe(&self) -> &'static str {
        "named pipes (FIFOs), one each way per receiver (blocking read/write)"
    }
    fn setup(&self, spec: &ChannelSpec) -> io::Result<Box<dyn Resources>> {
        use nix::sys::stat::Mode;
        let dir = TempDir::create(&spec.prefix)?;
        let mut paths: Vec<_> = (0..spec.receivers).map(|i| ping(&dir.path, i)).collect();
        if spec.duplex {
            paths.push(pong(&dir.path));
        }
        for p in &paths {
            nix::unistd::mkfifo(p, Mode::S_IRUSR | Mode::S_IWUSR)
                .map_err(|e| kio::context(e.into(), format!("mkfifo {}", p.display())))?;
        }
        let token = kio::utf8(&dir.path)?;
        Ok(Box::new(Fifos { token, _dir: dir }))
    }
    fn open(&self, token: &str, side: Side, spec: &ChannelSpec) -> io::Result<Box<dyn Endpoint>> {
        let dir = Path::new(token);
        let deadline = Instant::now() + kio::OPEN_TIMEOUT;
        let (out, inp) = match side {
            Side::Sender => {
                // The read end first: it never waits, and receiver 0 waits
                // for it before it is ready.
                let inp = if spec.duplex {
                    Some(open_read(&pong(dir), Patience::of(side))?)
                } else {
                    None
                };
                let out = (0..spec.receivers)
                    .map(|i| open_write(&ping(dir, i), deadline))
                    .collect::<io::Result<Vec<_>>>()?;
                (out, inp)
            }
            Side::Receiver(i) => {
                let inp = open_read(&ping(dir, i), Patience::of(side))?;
                let out = if spec.duplex && i == 0 {
                    vec![open_write(&pong(dir), deadline)?]
                } else {
                    Vec::new()
                };
                (out, Some(inp))
            }
        };
        Ok(Box::new(Streams::new(out, inp, spec.msg_size)))
    }
}
