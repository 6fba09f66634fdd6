//! `floor`: the physical limit. Two processes bounce one 64-bit counter
//! through a cache line each way, the least any shared-memory ping-pong can
//! do between the same two cores. It carries no payload, so it runs only
//! pingpong; every other figure is held against it.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{ChannelSpec, Endpoint, Got, Mechanism, Resources, Side};
use crate::bench::Pattern;

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
    map: shmbus::ShmRegion,
    out: usize,
    inp: usize,
    last: u64,
    msg: Vec<u8>,
}

/// What the lines hold before the first message: no sequence or marker.
const IDLE: u64 = u64::MAX - 2;

impl Lines {
    fn word(&self, off: usize) -> &AtomicU64 {
        use shmbus::Region;
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
        loop {
            // Acquire, paired with the Release store in `send`.
            let v = self.word(self.inp).load(Ordering::Acquire);
            if v != self.last {
                self.last = v;
                super::stamp(&mut self.msg, v, 0);
                return Ok(Got::Msg(&self.msg));
            }
            std::hint::spin_loop();
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
    fn supports(&self, pattern: Pattern, _msg_size: usize) -> Result<(), String> {
        match pattern {
            Pattern::Pingpong => Ok(()),
            _ => Err("a bare cache line carries no payload".into()),
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
        use shmbus::region::Access;
        let path = std::path::Path::new(token);
        let (fd, len) = shmbus::ShmRegion::open_file(path, Access::ReadWrite)?;
        let map = shmbus::ShmRegion::map(fd, path, len as usize, Access::ReadWrite)?;
        let (out, inp) = if side == Side::Sender {
            (0, 64)
        } else {
            (64, 0)
        };
        Ok(Box::new(Lines {
            map,
            out,
            inp,
            last: IDLE,
            msg: vec![0; spec.msg_size],
        }))
    }
}
