//! `mq`: POSIX message queues (`mq_open`), `/<prefix>-ping-<i>` from the
//! sender to receiver `i` and, for pingpong, `/<prefix>-pong-0` back from
//! receiver 0, created by `setup` and unlinked on drop.
//!
//! The kernel keeps message boundaries: one message per `mq_send`, read
//! whole by `mq_receive`, no framing. Sends and receives block in the
//! kernel (`mq_timedsend`/`mq_timedreceive` with a deadline that is only
//! renewed once it has passed, so each call is one system call): the
//! sender gives up after 10 to 20 s on a queue that stays full or empty, a
//! receiver checks every second or two that the sender's process lives.
//! STOP, which the parent sends again and again, waits at most 20 ms for
//! room in a queue (its receiver may have exited).
//!
//! Each queue holds up to 64 messages of `msg_size` bytes when the caller
//! may exceed `fs.mqueue.msg_max` (`CAP_SYS_RESOURCE`), else `msg_max`
//! (10 by default); fewer if the user's `RLIMIT_MSGQUEUE` (`ulimit -q`,
//! 800 KiB by default) has no room. Messages above `fs.mqueue.msgsize_max`
//! (8192 by default) need `CAP_SYS_RESOURCE`; without it those sizes are
//! skipped. The bench never writes to /proc.

use std::io;
use std::os::fd::AsRawFd;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nix::errno::Errno;
use nix::mqueue::{MQ_OFlag, MqAttr, MqdT, mq_close, mq_open, mq_timedreceive, mq_unlink};
use nix::sys::stat::Mode;
use nix::sys::time::TimeSpec;

use super::kio::Patience;
use super::{ChannelSpec, Endpoint, Got, Mechanism, Resources, Side, marker};
use crate::case::Pattern;

/// POSIX message queues, one each way per receiver.
pub struct Mq;

/// Messages per queue when the limits allow.
const DEPTH: usize = 64;
/// How long a STOP waits for room.
const STOP_WAIT: Duration = Duration::from_millis(20);

fn ping(token: &str, i: usize) -> String {
    format!("{token}-ping-{i}")
}

fn pong(token: &str) -> String {
    format!("{token}-pong-0")
}

fn sysctl(name: &str) -> Option<usize> {
    std::fs::read_to_string(format!("/proc/sys/fs/mqueue/{name}"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

fn too_big(size: usize) -> String {
    let max = sysctl("msgsize_max").map_or_else(|| "?".into(), |m| m.to_string());
    format!(
        "a message queue cannot take {size}-byte messages here: \
         /proc/sys/fs/mqueue/msgsize_max is {max} and more needs CAP_SYS_RESOURCE"
    )
}

fn mq_error(e: Errno, what: &str) -> io::Error {
    let e = io::Error::from(e);
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

/// Creates queue `name` (then closes it): `depth` messages of `size` bytes.
fn create(name: &str, depth: usize, size: usize) -> nix::Result<()> {
    let attr = MqAttr::new(0, depth as _, size as _, 0);
    let q = mq_open(
        name,
        MQ_OFlag::O_CREAT | MQ_OFlag::O_EXCL | MQ_OFlag::O_RDWR | MQ_OFlag::O_CLOEXEC,
        Mode::S_IRUSR | Mode::S_IWUSR,
        Some(&attr),
    )?;
    let _ = mq_close(q);
    Ok(())
}

/// The queues of one run, unlinked on drop.
struct Queues {
    token: String,
    names: Vec<String>,
}

impl Resources for Queues {
    fn token(&self) -> String {
        self.token.clone()
    }
}

impl Drop for Queues {
    fn drop(&mut self) {
        for n in &self.names {
            let _ = mq_unlink(n.as_str());
        }
    }
}

/// An open queue descriptor, closed on drop.
struct Queue(Option<MqdT>);

impl Queue {
    fn open(name: &str, flags: MQ_OFlag) -> io::Result<Queue> {
        let q = mq_open(name, flags | MQ_OFlag::O_CLOEXEC, Mode::empty(), None)
            .map_err(|e| mq_error(e, &format!("mq_open {name}")))?;
        Ok(Queue(Some(q)))
    }
    fn get(&self) -> io::Result<&MqdT> {
        self.0
            .as_ref()
            .ok_or_else(|| io::Error::other("queue closed"))
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        if let Some(q) = self.0.take() {
            let _ = mq_close(q);
        }
    }
}

/// `mq_timedsend`, which nix lacks.
fn timed_send(q: &MqdT, msg: &[u8], at: &TimeSpec) -> nix::Result<()> {
    // SAFETY: `q` is an open queue descriptor, `msg` is valid for reads of
    // `msg.len()` bytes and `at` is a valid timespec, all borrowed for the
    // duration of the call, which keeps no pointer.
    let r = unsafe {
        libc::mq_timedsend(
            q.as_raw_fd(),
            msg.as_ptr().cast(),
            msg.len(),
            0,
            at.as_ref(),
        )
    };
    Errno::result(r).map(drop)
}

/// The wall-clock time `d` from now (queue deadlines are CLOCK_REALTIME).
fn after(d: Duration) -> TimeSpec {
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        + d;
    TimeSpec::new(t.as_secs() as _, t.subsec_nanos() as _)
}

/// A deadline for blocking calls, renewed only when it has passed.
struct Deadline {
    at: TimeSpec,
    patience: Patience,
}

impl Deadline {
    /// Runs `op` (a timed queue call) until it succeeds: when it times out,
    /// first with a fresh deadline, then as `patience` says.
    #[inline]
    fn run<T>(
        &mut self,
        what: &str,
        mut op: impl FnMut(&TimeSpec) -> nix::Result<T>,
    ) -> io::Result<T> {
        let mut fresh = false;
        loop {
            match op(&self.at) {
                Ok(v) => return Ok(v),
                Err(Errno::EINTR) => {}
                Err(Errno::ETIMEDOUT) => {
                    if fresh {
                        self.patience.expired(what)?;
                    }
                    self.at = after(self.patience.period());
                    fresh = true;
                }
                Err(e) => return Err(mq_error(e, what)),
            }
        }
    }
}

/// One end: queues to send to, maybe one to receive from.
struct Ends {
    out: Vec<Queue>,
    inp: Option<Queue>,
    buf: Vec<u8>,
    deadline: Deadline,
    /// Whether this is the sender (which sends STOP).
    sender: bool,
}

impl Endpoint for Ends {
    #[inline]
    fn send(&mut self, msg: &[u8]) -> io::Result<()> {
        if self.out.is_empty() {
            return Err(io::Error::other("no way back on this end"));
        }
        let stop = self.sender && super::unstamp(msg).0 == marker::STOP;
        let mut first = None;
        for q in &self.out {
            let q = q.get()?;
            // A receiver that has stopped drains no more, and the parent
            // sends STOP again and again: never wait long for room then,
            // nor once one queue has failed (do not wait that long again).
            let r = if stop || first.is_some() {
                timed_send(q, msg, &after(STOP_WAIT)).map_err(|e| mq_error(e, "sending"))
            } else {
                self.deadline.run("sending", |at| timed_send(q, msg, at))
            };
            if let Err(e) = r {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }

    #[inline]
    fn recv(&mut self) -> io::Result<Got<'_>> {
        let q = super::receiving(&mut self.inp)?.get()?;
        let buf = &mut self.buf;
        let mut prio = 0;
        let n = self
            .deadline
            .run("receiving", |at| mq_timedreceive(q, buf, &mut prio, at))?;
        Ok(Got::Msg(&self.buf[..n]))
    }
}

impl Mechanism for Mq {
    fn name(&self) -> &'static str {
        "mq"
    }
    fn describe(&self) -> &'static str {
        "POSIX message queues, one each way per receiver (blocking mq_send/mq_receive)"
    }
    fn unsupported(&self, _pattern: Pattern, msg_size: usize) -> Option<String> {
        // Ask the kernel: whether this size is allowed depends on
        // msgsize_max and on privileges.
        let name = format!("/shmbus-bench-probe-{}", std::process::id());
        let _ = mq_unlink(name.as_str());
        match create(&name, 1, msg_size) {
            Ok(()) => {
                let _ = mq_unlink(name.as_str());
                None
            }
            Err(Errno::EINVAL) => Some(too_big(msg_size)),
            Err(Errno::ENOSYS) => Some("POSIX message queues are not in this kernel".into()),
            Err(Errno::EMFILE) => Some(format!(
                "no room for even one {msg_size}-byte message under this user's \
                 RLIMIT_MSGQUEUE (`ulimit -q`) or open-file limit"
            )),
            Err(e) => Some(format!("cannot create a message queue: {e}")),
        }
    }
    fn setup(&self, spec: &ChannelSpec) -> io::Result<Box<dyn Resources>> {
        let token = format!("/{}", spec.prefix);
        let mut names: Vec<String> = (0..spec.receivers).map(|i| ping(&token, i)).collect();
        if spec.duplex {
            names.push(pong(&token));
        }
        let msg_max = sysctl("msg_max").unwrap_or(10).max(1);
        let mut depth = DEPTH;
        loop {
            // All queues alike: on failure, remove those made and retry.
            let mut queues = Queues {
                token: token.clone(),
                names: Vec::new(),
            };
            let mut failed = None;
            for name in &names {
                match create(name, depth, spec.msg_size) {
                    Ok(()) => queues.names.push(name.clone()),
                    Err(e) => {
                        failed = Some((name, e));
                        break;
                    }
                }
            }
            let Some((name, e)) = failed else {
                return Ok(Box::new(queues));
            };
            drop(queues);
            match e {
                // Beyond msg_max without CAP_SYS_RESOURCE.
                Errno::EINVAL if depth > msg_max => depth = msg_max,
                Errno::EINVAL => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        too_big(spec.msg_size),
                    ));
                }
                // The user's RLIMIT_MSGQUEUE: shallower queues.
                Errno::EMFILE if depth > 1 => depth /= 2,
                Errno::EMFILE => {
                    return Err(io::Error::other(format!(
                        "mq_open {name}: no room for {} queue(s) of one {}-byte message \
                         under this user's RLIMIT_MSGQUEUE (`ulimit -q`) or open-file limit",
                        names.len(),
                        spec.msg_size
                    )));
                }
                e => return Err(mq_error(e, &format!("mq_open {name}"))),
            }
        }
    }
    fn open(&self, token: &str, side: Side, spec: &ChannelSpec) -> io::Result<Box<dyn Endpoint>> {
        // The queues exist already: opening never waits.
        let (out, inp) = match side {
            Side::Sender => {
                let out = (0..spec.receivers)
                    .map(|i| Queue::open(&ping(token, i), MQ_OFlag::O_WRONLY))
                    .collect::<io::Result<Vec<_>>>()?;
                let inp = if spec.duplex {
                    Some(Queue::open(&pong(token), MQ_OFlag::O_RDONLY)?)
                } else {
                    None
                };
                (out, inp)
            }
            Side::Receiver(i) => {
                let inp = Queue::open(&ping(token, i), MQ_OFlag::O_RDONLY)?;
                let out = if spec.duplex && i == 0 {
                    vec![Queue::open(&pong(token), MQ_OFlag::O_WRONLY)?]
                } else {
                    Vec::new()
                };
                (out, Some(inp))
            }
        };
        let patience = Patience::of(side);
        Ok(Box::new(Ends {
            out,
            inp,
            buf: vec![0; spec.msg_size],
            deadline: Deadline {
                at: after(patience.period()),
                patience,
            },
            sender: side == Side::Sender,
        }))
    }
}
