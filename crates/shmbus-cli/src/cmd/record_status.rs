//! What a running `shmbus record` tells others and its user: for each bus
//! it records, a status file like a bridge's (`crate::bridge_status`,
//! direction `record`, its file as the key), so `shmbus stat` and `top`
//! show that bus's rate, bytes and losses; and on a terminal, a progress
//! line on stderr (all buses' messages, bytes, lost), rewritten in place
//! about once a second, ended with a newline. Both are looked at after
//! each poll of the capture (up to 256 records a bus), not per message.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::bridge_status::{self, Counts, Direction, Identity, Writer};
use crate::error::print_error;

/// How often the status and the progress line are rewritten.
const PERIOD: Duration = Duration::from_secs(1);

/// A recorder's status file and progress line.
#[derive(Debug)]
pub struct Progress {
    /// Each bus's status file (`None` once writing it failed) and counts.
    status: Vec<(Option<Writer>, Counts)>,
    tty: bool,
    total: Counts,
    last: Instant,
}

impl Progress {
    /// Writes each bus's first status (a failure is said once; the
    /// recording goes on without it) and notes whether stderr is a
    /// terminal.
    pub fn start(buses: &[String], out: &Path) -> Progress {
        let file = std::path::absolute(out).unwrap_or_else(|_| out.to_owned());
        let status = buses
            .iter()
            .map(|bus| {
                let identity = Identity {
                    direction: Direction::Record,
                    bus: bridge_status::bus_path(bus),
                    key: file.display().to_string(),
                    listen: Vec::new(),
                    connect: Vec::new(),
                };
                let writer = Writer::create(identity).map_err(|e| warn(&e)).ok();
                (writer, Counts::default())
            })
            .collect();
        Progress {
            status,
            tty: std::io::stderr().is_terminal(),
            total: Counts::default(),
            last: Instant::now(),
        }
    }

    /// What the capture has written: bus `i`'s counts (in the order of
    /// `start`'s buses) by `each(i)`, and all of them; a rewrite if a
    /// period has passed.
    pub fn look(&mut self, total: Counts, each: impl Fn(usize) -> Counts) {
        self.total = total;
        for (i, (_, counts)) in self.status.iter_mut().enumerate() {
            *counts = each(i);
        }
        if self.last.elapsed() < PERIOD {
            return;
        }
        self.last = Instant::now();
        self.write();
    }

    fn write(&mut self) {
        for (writer, counts) in &mut self.status {
            if let Some(Err(e)) = writer.as_mut().map(|w| w.update(*counts)) {
                warn(&e);
                *writer = None;
            }
        }
        if self.tty {
            let c = &self.total;
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
