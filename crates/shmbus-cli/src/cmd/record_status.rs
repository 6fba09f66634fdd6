//! What a running `shmbus record` tells others and its user: a status
//! file like a bridge's (`crate::bridge_status`, direction `record`, its
//! file as the key), so `shmbus stat` and `top` show its rate, bytes and
//! losses; and on a terminal, a progress line on stderr (messages, bytes,
//! lost), rewritten in place about once a second, ended with a newline.
//! Both are looked at with each message, against the receive time the
//! recorder reads for its record anyway, and on each idle wake: a message
//! costs a comparison, not a clock read.

use std::io::{IsTerminal, Write};
use std::path::Path;

use crate::bridge_status::{self, Counts, Direction, Identity, Writer};
use crate::error::print_error;

/// How often the status and the progress line are rewritten, ns.
const PERIOD_NS: u64 = 1_000_000_000;

/// A recorder's status file and progress line.
#[derive(Debug)]
pub struct Progress {
    status: Option<Writer>,
    tty: bool,
    counts: Counts,
    /// When they were last rewritten (CLOCK_MONOTONIC, ns).
    last_ns: u64,
}

impl Progress {
    /// Writes the first status (a failure is said once; the recording goes
    /// on without one) and notes whether stderr is a terminal.
    pub fn start(bus: &str, out: &Path) -> Progress {
        let file = std::path::absolute(out).unwrap_or_else(|_| out.to_owned());
        let identity = Identity {
            direction: Direction::Record,
            bus: bridge_status::bus_path(bus),
            key: file.display().to_string(),
            listen: Vec::new(),
            connect: Vec::new(),
        };
        let status = Writer::create(identity).map_err(|e| warn(&e)).ok();
        Progress {
            status,
            tty: std::io::stderr().is_terminal(),
            counts: Counts::default(),
            last_ns: mono_ns(),
        }
    }

    /// A message of `bytes` written, received at `now_ns`
    /// (CLOCK_MONOTONIC).
    #[inline]
    pub fn message(&mut self, bytes: usize, now_ns: u64) {
        self.counts.messages += 1;
        self.counts.bytes += bytes as u64;
        if now_ns.wrapping_sub(self.last_ns) >= PERIOD_NS {
            self.rewrite(now_ns);
        }
    }

    /// A gap of `n` written.
    pub fn lost(&mut self, n: u64) {
        self.counts.lost = self.counts.lost.saturating_add(n);
    }

    /// The bus was idle for a moment: a rewrite if a period has passed.
    pub fn look(&mut self) {
        let now = mono_ns();
        if now.wrapping_sub(self.last_ns) >= PERIOD_NS {
            self.rewrite(now);
        }
    }

    #[cold]
    fn rewrite(&mut self, now_ns: u64) {
        self.last_ns = now_ns;
        self.write();
    }

    fn write(&mut self) {
        if let Some(Err(e)) = self.status.as_mut().map(|w| w.update(self.counts)) {
            warn(&e);
            self.status = None;
        }
        if self.tty {
            let c = &self.counts;
            // \r and erase to the end of the line: rewritten in place.
            let _ = write!(
                std::io::stderr(),
                "\rrecorded {} messages, {} bytes, lost {}\x1b[K",
                c.messages,
                c.bytes,
                c.lost
            );
        }
    }

    /// The last status and progress line; the status file goes when this
    /// is dropped.
    pub fn finish(mut self) {
        self.write();
        if self.tty {
            let _ = writeln!(std::io::stderr());
        }
    }
}

fn warn(e: &bridge_status::WriteError) {
    print_error(&format!(
        "{e} (the recording goes on; `shmbus stat` and `top` will not show it)"
    ));
}

fn mono_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    (t.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(t.tv_nsec as u64)
}
