//! `floor`: the physical limit. Two processes bounce one 64-bit counter
//! through a cache line each way, the least any shared-memory ping-pong can
//! do between the same two cores. It carries no payload, so it runs only
//! pingpong; every other figure is held against it.
//!
//! Each side hands the harness a local message of `msg_size` bytes (the
//! pattern written once, the header and trailer of the sequence it saw), so
//! the harness reads and checks as many bytes as it does for every other
//! mechanism: the floor is the floor of the same work, minus the transfer.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{ChannelSpec, Endpoint, Got, Mechanism, Resources, Side};
use crate::case::Pattern;

/// The bare cache-line ping-pong.
pub struct Floor;

struct File {
    path: String,
}

impl Resources for File {
    fn token(&self) -> String {
        self.path.clone()
    }
}

impl Drop for File {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Two lines: [0] written by the sender, [64] by the receiver. Each holds
/// the sequence number of the last message; they start at [`IDLE`].
struct Lines {
    map: shmbus::mem::ShmRegion,
    out: usize,
    inp: usize,
    last: u64,
    msg: Vec<u8>,
}

/// What the lines hold before the first message: no sequence or marker.
const IDLE: u64 = u64::MAX - 2;

impl Lines {
    /// Maps the floor's file; the sender writes line 0, the receiver 64.
    fn open(token: &str, side: Side, spec: &ChannelSpec) -> io::Result<Lines> {
        use shmbus::internals::Access;
        let path = std::path::Path::new(token);
        let (fd, len) = shmbus::mem::ShmRegion::open_file(path, Access::ReadWrite)?;
        let map = shmbus::mem::ShmRegion::map(fd, path, len as usize, Access::ReadWrite)?;
        let (out, inp) = if side == Side::Sender {
            (0, 64)
        } else {
            (64, 0)
        };
        let mut msg = vec![0; spec.msg_size];
        crate::payload::fill(&mut msg);
        Ok(Lines {
            map,
            out,
            inp,
            last: IDLE,
            msg,
        })
    }

    fn word(&self, off: usize) -> &AtomicU64 {
        use shmbus::mem::Region;
        self.map.word(off)
    }
}

impl Endpoint for Lines {
    #[inline]
    fn send(&mut self, msg: &[u8]) -> io::Result<()> {
        // Only the sequence travels: all a pong needs.
        let (seq, _) = super::unstamp(msg);
        // Release, paired with the Acquire load in `recv`.
        self.word(self.out).store(seq, Ordering::Release);
        Ok(())
    }
    #[inline]
    fn recv(&mut self) -> io::Result<Got<'_>> {
        let mut patience = super::Patience::default();
        loop {
            // Acquire, paired with the Release store in `send`.
            let v = self.word(self.inp).load(Ordering::Acquire);
            if v != self.last {
                self.last = v;
                crate::payload::seal(&mut self.msg, v, 0);
                return Ok(Got::Msg(&self.msg));
            }
            patience.spin()?;
        }
    }
}

impl Mechanism for Floor {
    fn name(&self) -> &'static str {
        "floor"
    }
    fn describe(&self) -> &'static str {
        "bare cache-line ping-pong through shared memory (the physical limit)"
    }
    fn unsupported(&self, pattern: Pattern, _msg_size: usize) -> Option<String> {
        match pattern {
            Pattern::Pingpong => None,
            _ => Some("a bare cache line carries no payload".into()),
        }
    }
    fn setup(&self, spec: &ChannelSpec) -> io::Result<Box<dyn Resources>> {
        use std::os::unix::fs::FileExt;
        let path = format!("/dev/shm/{}-floor", spec.prefix);
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)?;
        let resources = File { path };
        f.set_len(4096)?;
        f.write_all_at(&IDLE.to_le_bytes(), 0)?;
        f.write_all_at(&IDLE.to_le_bytes(), 64)?;
        Ok(Box::new(resources))
    }
    fn open(&self, token: &str, side: Side, spec: &ChannelSpec) -> io::Result<Box<dyn Endpoint>> {
        Ok(Box::new(Lines::open(token, side, spec)?))
    }
}

/// The floor for a message of two cache lines (64 B and its 8-byte stamp
/// need two), moved together: the sender writes the second line, then
/// the first; the receiver loads both on every poll, so the two transfers
/// overlap instead of the second starting when the first has arrived.
/// What two lines cost at least; a protocol that learns from one line
/// that the other is ready pays more unless it fetches both at once.
pub struct Floor2;

struct TwoLines {
    lines: Lines,
}

impl Endpoint for TwoLines {
    #[inline]
    fn send(&mut self, msg: &[u8]) -> io::Result<()> {
        let (seq, _) = super::unstamp(msg);
        // Relaxed: published by the Release store in `Lines::send`.
        self.lines
            .word(self.lines.out + 128)
            .store(seq, Ordering::Relaxed);
        self.lines.send(msg)
    }
    #[inline]
    fn recv(&mut self) -> io::Result<Got<'_>> {
        let (inp, second) = (self.lines.inp, self.lines.inp + 128);
        let mut patience = super::Patience::default();
        loop {
            // Both lines every poll: their misses overlap. The second's
            // value counts only once the first (Acquire, paired with the
            // Release store in `Lines::send`) says the message is there.
            let early = self.lines.word(second).load(Ordering::Relaxed);
            let v = self.lines.word(inp).load(Ordering::Acquire);
            if v != self.lines.last {
                let two = if early == v {
                    early
                } else {
                    self.lines.word(second).load(Ordering::Relaxed)
                };
                debug_assert_eq!(v, two);
                std::hint::black_box(two);
                self.lines.last = v;
                crate::payload::seal(&mut self.lines.msg, v, 0);
                return Ok(Got::Msg(&self.lines.msg));
            }
            patience.spin()?;
        }
    }
}

impl Mechanism for Floor2 {
    fn name(&self) -> &'static str {
        "floor-2line"
    }
    fn describe(&self) -> &'static str {
        "the floor for two cache lines moved together (what a 64 B message and its stamp occupy)"
    }
    fn unsupported(&self, pattern: Pattern, msg_size: usize) -> Option<String> {
        Floor.unsupported(pattern, msg_size)
    }
    fn setup(&self, spec: &ChannelSpec) -> io::Result<Box<dyn Resources>> {
        Floor.setup(spec)
    }
    fn open(&self, token: &str, side: Side, spec: &ChannelSpec) -> io::Result<Box<dyn Endpoint>> {
        Ok(Box::new(TwoLines {
            lines: Lines::open(token, side, spec)?,
        }))
    }
}
