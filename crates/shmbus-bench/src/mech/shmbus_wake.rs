//! shmbus's sleeping rows: receivers that sleep instead of spinning, so
//! every paced message wakes one.
//!
//! - `shmbus-futex`: the synchronous subscriber asleep on the bus's futex
//!   (`recv(Wait::Forever)` with `WaitStrategy::SpinFutex { spin: 0 }`):
//!   the reference the async targets are held to.
//! - `shmbus-async`: the same subscriber awaited, `recv_async().await`, in
//!   a tokio current-thread runtime with its I/O and time drivers (as a
//!   service has), built with the feature `io-uring`: an io_uring
//!   `FUTEX_WAIT` completes on the runtime's own reactor (Linux 6.7+; the
//!   row's description says which wake ran).
//! - `shmbus-async-thread`: the same, its process started with
//!   `SHMBUS_AIO_WAKE=thread`: the `aio` waiter thread sleeps on the futex
//!   and wakes the runtime's thread (the wake of older kernels). Each receive is one poll of the `recv_async`
//!   future; only when that is `Pending` does the runtime run it
//!   (`block_on`), parking its thread until the waker fires, exactly what a
//!   task awaiting it in a loop does (a message already there costs no
//!   entry into the runtime, as it costs a running task none).
//! - `shmbus-select64`: one `shmbus::select::Select` (spin 0) over 64 buses;
//!   the sender publishes each message on the next bus in turn, so every
//!   wake comes from a different word of the one `futex_waitv`; the
//!   receiver then receives from the bus the select named
//!   (`recv(Wait::Never)`). Oneway only: its figure is the wake, beside
//!   `shmbus-futex` (examples/select_wake.rs measures the same in one
//!   process). Its buses hold 1 024 slots each (64 rings of the usual
//!   ~4 MiB would be 256 MiB of /dev/shm; a paced message never queues).
//!
//! All three are oneway and throughput rows (select: oneway only), never
//! pingpong or fanout, whose figures would repeat the spinning rows'. Their
//! oneway messages come one every [`SLEEPER_PACE`] (200 µs), not the run's
//! 20 µs, so that every one wakes a sleeping receiver.

use std::future::Future;
use std::io;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use shmbus::select::{Select, Selectable};
use shmbus::{BusOptions, OpenOptions, Publisher, Received, Start, Subscriber, Wait, WaitStrategy};

use super::{ChannelSpec, Endpoint, Got, Mechanism, Resources, Segments, Side};
use crate::case::Pattern;

/// The wait of every row here: straight to the futex, no spin.
const NO_SPIN: WaitStrategy = WaitStrategy::SpinFutex {
    spin: Duration::ZERO,
};

/// The gap between paced messages of every sleeping row (theirs and
/// `ringfire-async`'s): each receiver must be asleep when the next message
/// comes, or the row measures a receiver that never slept. At the run's
/// 20 µs, on the 2-vCPU VM, the futex subscriber slept before one message
/// in ten and the 64-bus select before one in 2 000 (voluntary context
/// switches per message): a sleep's preamble (sleepers flag, membarrier,
/// the look again) and the message itself filled the gap. 200 µs is
/// examples/aio_latency.rs's pace.
pub const SLEEPER_PACE: Duration = Duration::from_micros(200);

/// How long a sleeping receiver waits for one message before it gives up:
/// the runner's own limit for a block (`runner::BLOCK_LIMIT`, which kills
/// it anyway; not imported, as `runner` sits above `mech`).
const PATIENCE: Duration = Duration::from_secs(60);

/// The buses of `shmbus-select64`.
pub const SELECT_BUSES: usize = 64;

/// Slots of each of `shmbus-select64`'s buses.
const SELECT_SLOTS: u64 = 1024;

/// How a `shmbus-futex` or `shmbus-async` receiver waits.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Futex,
    Async,
    AsyncThread,
}

/// A shmbus bus whose receiver sleeps: on the futex, or awaited.
pub struct Sleeper {
    kind: Kind,
}

/// `shmbus-futex`.
pub static FUTEX: Sleeper = Sleeper { kind: Kind::Futex };
/// `shmbus-async`.
pub static ASYNC: Sleeper = Sleeper { kind: Kind::Async };
/// `shmbus-async-thread`.
pub static ASYNC_THREAD: Sleeper = Sleeper {
    kind: Kind::AsyncThread,
};

/// `shmbus-select64`.
pub struct Select64;

fn io_err(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(e.to_string())
}

/// Why a sleeping row does not run `pattern`.
fn only(pattern: Pattern, allowed: &[Pattern]) -> Option<String> {
    (!allowed.contains(&pattern)).then(|| {
        let names: Vec<&str> = allowed.iter().map(|p| p.name()).collect();
        format!("a sleeping receiver's row: {} only", names.join(" and "))
    })
}

fn bus_name(token: &str, i: usize) -> String {
    format!("{token}-ping-{i}")
}

/// Creates `n` buses for the block, removed when it ends.
fn create(spec: &ChannelSpec, n: usize, slots: u64) -> io::Result<Box<dyn Resources>> {
    let mut buses = Segments {
        token: spec.prefix.clone(),
        names: Vec::new(),
    };
    for i in 0..n {
        let name = bus_name(&spec.prefix, i);
        let opts = BusOptions::new(slots)
            .prefault(true)
            .msg_size(spec.msg_size as u32);
        Publisher::<[u8]>::create(&name, &opts).map_err(io_err)?;
        buses.names.push(name);
    }
    Ok(Box::new(buses))
}

fn subscribe(name: &str) -> io::Result<Subscriber<[u8]>> {
    let opts = OpenOptions::default()
        .start(Start::Next)
        .wait_strategy(NO_SPIN)
        .prefault(true);
    Subscriber::<[u8]>::open(name, &opts).map_err(io_err)
}

/// The sender: publishes each message on the next of its buses.
struct Tx {
    buses: Vec<Publisher<[u8]>>,
    next: usize,
}

impl Tx {
    fn open(token: &str, n: usize) -> io::Result<Tx> {
        let opts = OpenOptions::default().prefault(true);
        let buses = (0..n)
            .map(|i| Publisher::<[u8]>::attach(&bus_name(token, i), &opts).map_err(io_err))
            .collect::<io::Result<_>>()?;
        Ok(Tx { buses, next: 0 })
    }
}

impl Endpoint for Tx {
    #[inline]
    fn send(&mut self, msg: &[u8]) -> io::Result<()> {
        let i = self.next;
        self.next = (i + 1) % self.buses.len();
        self.buses[i].publish(msg).map_err(io::Error::other)?;
        Ok(())
    }
    fn recv(&mut self) -> io::Result<Got<'_>> {
        Err(io::Error::other("nothing to receive on this end"))
    }
}

/// A message or lag report as the harness takes it.
fn got(r: Received<&[u8]>) -> Got<'_> {
    match r {
        Received::Message(m) => Got::Msg(m),
        Received::Lagged { skipped } => Got::Lost(skipped),
    }
}

fn timed_out() -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        "no message before the block's deadline (has the peer died?)",
    )
}

/// A `shmbus-futex` receiver.
struct FutexRx {
    rx: Subscriber<[u8]>,
}

impl Endpoint for FutexRx {
    fn send(&mut self, _msg: &[u8]) -> io::Result<()> {
        Err(io::Error::other("no way back on this end"))
    }
    #[inline]
    fn recv(&mut self) -> io::Result<Got<'_>> {
        self.rx
            .recv(Wait::For(PATIENCE))
            .map(got)
            .ok_or_else(timed_out)
    }
}

/// The runtime every async row's receiver runs: current-thread, with the
/// I/O and time drivers.
pub fn runtime() -> io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

/// Awaits `fut` as a task that loops on it would: one poll first (with a
/// waker nobody needs: a `Pending` future is polled again at once, with
/// the runtime's), and only if that is `Pending`, the runtime, which parks
/// this thread until the future's waker fires.
pub fn await_on<F: Future>(rt: &tokio::runtime::Runtime, fut: F) -> F::Output {
    let mut fut = pin!(fut);
    // Inside the runtime's context: a future may start a timer or yield.
    let entered = rt.enter();
    if let Poll::Ready(out) = fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        return out;
    }
    drop(entered);
    rt.block_on(fut)
}

/// A `shmbus-async` receiver.
struct AsyncRx {
    rt: tokio::runtime::Runtime,
    rx: Subscriber<[u8]>,
}

impl Endpoint for AsyncRx {
    fn send(&mut self, _msg: &[u8]) -> io::Result<()> {
        Err(io::Error::other("no way back on this end"))
    }
    #[inline]
    fn recv(&mut self) -> io::Result<Got<'_>> {
        Ok(got(await_on(&self.rt, self.rx.recv_async())))
    }
}

impl Mechanism for Sleeper {
    fn name(&self) -> &'static str {
        match self.kind {
            Kind::Futex => "shmbus-futex",
            Kind::Async => "shmbus-async",
            Kind::AsyncThread => "shmbus-async-thread",
        }
    }
    fn describe(&self) -> &'static str {
        match self.kind {
            Kind::Futex => {
                "shmbus subscriber asleep on the bus's futex (no spin): the async rows' reference"
            }
            Kind::Async => {
                "shmbus recv_async().await on a tokio current-thread runtime (io_uring FUTEX_WAIT on its reactor)"
            }
            Kind::AsyncThread => {
                "shmbus recv_async().await on a tokio current-thread runtime (aio waiter thread, forced)"
            }
        }
    }
    fn unsupported(&self, pattern: Pattern, _msg_size: usize) -> Option<String> {
        if self.kind == Kind::Async {
            // This row is the io_uring wake's: where it cannot run (an
            // older kernel), it says why rather than measure the thread.
            let mechanism = runtime().map(|rt| {
                let _in = rt.enter();
                shmbus::aio::wake_mechanism()
            });
            match mechanism {
                Ok(shmbus::aio::WakeMechanism::IoUring) => {}
                Ok(other) => return Some(format!("no io_uring wake here: it would use {other}")),
                Err(e) => return Some(format!("no tokio runtime: {e}")),
            }
        }
        only(pattern, &[Pattern::Oneway, Pattern::Throughput])
    }
    fn min_pace(&self) -> Option<Duration> {
        Some(SLEEPER_PACE)
    }
    fn child_env(&self) -> &'static [(&'static str, &'static str)] {
        match self.kind {
            Kind::AsyncThread => &[("SHMBUS_AIO_WAKE", "thread")],
            Kind::Futex | Kind::Async => &[],
        }
    }
    fn setup(&self, spec: &ChannelSpec) -> io::Result<Box<dyn Resources>> {
        create(spec, 1, super::ring_slots(spec.msg_size) as u64)
    }
    fn open(&self, token: &str, side: Side, _spec: &ChannelSpec) -> io::Result<Box<dyn Endpoint>> {
        if side == Side::Sender {
            return Ok(Box::new(Tx::open(token, 1)?));
        }
        let rx = subscribe(&bus_name(token, 0))?;
        Ok(match self.kind {
            Kind::Futex => Box::new(FutexRx { rx }),
            Kind::Async | Kind::AsyncThread => Box::new(AsyncRx { rt: runtime()?, rx }),
        })
    }
}

/// A `shmbus-select64` receiver.
struct SelectRx {
    subs: Vec<Subscriber<[u8]>>,
    select: Select,
}

impl Endpoint for SelectRx {
    fn send(&mut self, _msg: &[u8]) -> io::Result<()> {
        Err(io::Error::other("no way back on this end"))
    }
    #[inline]
    fn recv(&mut self) -> io::Result<Got<'_>> {
        loop {
            let i = {
                // On the stack: no allocation per message.
                let members: [&dyn Selectable; SELECT_BUSES] =
                    std::array::from_fn(|i| &self.subs[i] as &dyn Selectable);
                self.select
                    .ready(&members, Wait::For(PATIENCE))
                    .ok_or_else(timed_out)?
            };
            let lost = match self.subs[i].recv(Wait::Never) {
                Some(Received::Message(_)) => 0,
                Some(Received::Lagged { skipped }) => skipped,
                // Rarely empty (see `Select::ready`): look again.
                None => continue,
            };
            return Ok(if lost == 0 {
                Got::Msg(self.subs[i].message())
            } else {
                Got::Lost(lost)
            });
        }
    }
}

impl Mechanism for Select64 {
    fn name(&self) -> &'static str {
        "shmbus-select64"
    }
    fn describe(&self) -> &'static str {
        "one shmbus Select over 64 buses (futex_waitv, no spin), each message on the next bus"
    }
    fn unsupported(&self, pattern: Pattern, _msg_size: usize) -> Option<String> {
        only(pattern, &[Pattern::Oneway])
    }
    fn min_pace(&self) -> Option<Duration> {
        Some(SLEEPER_PACE)
    }
    fn setup(&self, spec: &ChannelSpec) -> io::Result<Box<dyn Resources>> {
        create(spec, SELECT_BUSES, SELECT_SLOTS)
    }
    fn open(&self, token: &str, side: Side, _spec: &ChannelSpec) -> io::Result<Box<dyn Endpoint>> {
        if side == Side::Sender {
            return Ok(Box::new(Tx::open(token, SELECT_BUSES)?));
        }
        let subs = (0..SELECT_BUSES)
            .map(|i| subscribe(&bus_name(token, i)))
            .collect::<io::Result<_>>()?;
        Ok(Box::new(SelectRx {
            subs,
            select: Select::with_strategy(NO_SPIN),
        }))
    }
}
