//! `shmbus sub`: prints each message of a bus, or each record of a stream,
//! as one line.
//!
//! Output is raw bytes (messages need not be text) with the zero padding of
//! the fixed-size slot trimmed, one message per line, flushed at once so a
//! pipe sees each message as it arrives. Lag goes to stderr as exactly
//! `lagged: skipped N`, a format scripts may match; it never counts towards
//! `--count`.
//!
//! A stream's records have exact lengths, so nothing is trimmed, and nothing
//! is ever lost: a stream has one consumer at a time, which carries on where
//! the last one stopped (so `--from` does not apply). A record is released
//! only once its line is written, so one that could not be written stays
//! for the next consumer: the reader of stdout went away (a quiet stop), or
//! the write failed (an error; a stdout closed from the start is refused
//! before anything is read, see `out`). A stream whose producer is gone,
//! whether it left or died before this consumer opened, is waited on until
//! a producer comes back: `--timeout` ends that wait like any other, quietly
//! unless `--count` was not reached. A producer that dies while we wait, with
//! nothing left to read, is an error.
//!
//! A pool bus's messages are read in place (a `pool::Subscriber`), and
//! printed like any bus's, one line each, lag reports the same. Their
//! lengths are exact, so, as a stream's records, nothing is trimmed; each
//! block is let go once its line is written. A message whose block was
//! reclaimed as it was read counts as one skipped (`lagged: skipped 1`).
//!
//! `--bootstrap` (a journaled bus) prints the journal first, then the live
//! messages, each line as `SEQ<TAB>MESSAGE`: every sequence once, in order.
//! From a compacted journal, the snapshot's sequences skip (one per key).
//! A lag the journal can repair is repaired; `lagged: skipped N` then means
//! what the journal no longer had either.
//!
//! `--lossless` opens a lossless subscriber (`OpenOptions::lossless`): the
//! publisher waits for it rather than overwrite a message it has not read,
//! up to the bus's eviction timeout; held back that long, it is evicted
//! (lossy from then on) and its next receive reports the lag as above. The
//! bus may refuse it (created refusing them, its limit reached, its
//! registry full): one line, exit 1, as any refused open. Every kind of
//! bus takes one: plain, many-publisher, pool, journaled. A stream needs no flag: nothing is lost from one.

use std::io::{self, Write};
use std::time::Duration;

use shmbus::pool;
use shmbus::{Kind, OpenError, OpenOptions, Received, Start, WaitStrategy};
use shmbus::{
    Subscriber,
    journal::{self, JoinError, JoinOptions},
    stream::{Consumer, PopError},
};

use crate::error::CliError;
use crate::out::{self, Stdout};

/// Arguments of `shmbus sub`.
#[derive(clap::Args, Debug)]
pub struct SubArgs {
    /// Bus name (a bare name lives in /dev/shm) or a path.
    pub name: String,
    /// More buses, pools or streams to follow at once: each line is then
    /// prefixed with its name and a tab, and a lag is reported as
    /// `lagged: NAME skipped N`.
    #[arg(value_name = "NAME")]
    pub more: Vec<String>,
    /// Where to start: the newest message, the oldest still in the ring, or
    /// the next one published [default: next]. Not for a stream, which
    /// always continues where its last consumer stopped.
    #[arg(long, value_enum, conflicts_with = "bootstrap")]
    pub from: Option<From>,
    /// A journaled bus: print the journal first, then live messages, each
    /// line prefixed with its sequence and a tab.
    #[arg(long)]
    pub bootstrap: bool,
    /// Stop after N messages or records (lag reports do not count).
    #[arg(long, value_name = "N")]
    pub count: Option<u64>,
    /// Stop when no message (record) arrives for SECS seconds; an error if
    /// --count was given and not reached.
    #[arg(long, value_name = "SECS", value_parser = parse_timeout, allow_negative_numbers = true)]
    pub timeout: Option<Timeout>,
    /// How to wait for the next message.
    #[arg(long, value_enum, default_value_t = Wait::Futex)]
    pub wait: Wait,
    /// Lossless: the publisher waits for this subscriber instead of
    /// overwriting what it has not read, up to the bus's eviction timeout
    /// (`create --evict-ms`); held back longer, it is evicted, made lossy,
    /// and reports its lag. Refused by a bus made with
    /// `--lossless-subscribers 0`, or with its limit reached.
    #[arg(long, conflicts_with = "bootstrap")]
    pub lossless: bool,
}

/// `--from`.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum From {
    Latest,
    Oldest,
    Next,
}

/// `--wait`.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum Wait {
    /// Poll without pause: lowest latency, one core busy.
    Spin,
    /// Poll, then yield the CPU between polls.
    Yield,
    /// Poll briefly, then sleep until the publisher wakes us.
    Futex,
}

/// `--timeout` (of `sub` and `pub`): the duration, and the number as the
/// user wrote it, for the error message.
#[derive(Clone, Copy, Debug)]
pub struct Timeout {
    pub secs: f64,
    pub duration: Duration,
}

/// Parses `--timeout` (clap's value parser for it).
pub fn parse_timeout(s: &str) -> Result<Timeout, CliError> {
    let bad = || CliError::usage(format!("{s:?} is not a number of seconds (like 2 or 0.5)"));
    let secs: f64 = s.trim().parse().map_err(|_| bad())?;
    // Rejects negative, NaN, infinite and absurdly large values.
    let duration = Duration::try_from_secs_f64(secs).map_err(|_| bad())?;
    Ok(Timeout { secs, duration })
}

impl From {
    pub(crate) fn start(self) -> Start {
        match self {
            From::Latest => Start::Latest,
            From::Oldest => Start::Oldest,
            From::Next => Start::Next,
        }
    }
}

impl Wait {
    pub(crate) fn strategy(self) -> WaitStrategy {
        // The spin phase the library defaults to: long enough to catch a
        // burst without a system call, short enough to cost nothing idle.
        let spin = Duration::from_micros(50);
        match self {
            Wait::Spin => WaitStrategy::BusySpin,
            Wait::Yield => WaitStrategy::SpinYield { spin },
            Wait::Futex => WaitStrategy::SpinFutex { spin },
        }
    }
}

pub fn run(args: &SubArgs) -> Result<(), CliError> {
    // First: with nowhere to print, nothing is read (nor a record released).
    let mut out = out::stdout()?;
    if args.bootstrap {
        return run_bootstrap(args, &mut out);
    }
    let opts = OpenOptions::default()
        .start(args.from.unwrap_or(From::Next).start())
        .wait_strategy(args.wait.strategy())
        .lossless(args.lossless);
    match Subscriber::<[u8]>::open(&args.name, &opts) {
        Ok(subscriber) => run_bus(args, subscriber, &mut out),
        Err(OpenError::WrongKind {
            found: Kind::Stream,
            ..
        }) => run_stream(args, &opts.lossless(false), &mut out),
        Err(OpenError::PoolMismatch { found: true }) => run_pool(
            args,
            pool::Subscriber::<[u8]>::open(&args.name, &opts)?,
            &mut out,
        ),
        Err(e) => Err(e.into()),
    }
}

fn run_pool(
    args: &SubArgs,
    mut subscriber: pool::Subscriber<[u8]>,
    out: &mut Stdout,
) -> Result<(), CliError> {
    let timeout = args.timeout.map(|t| t.duration);
    let mut delivered: u64 = 0;
    while args.count.is_none_or(|count| delivered < count) {
        let wait = timeout.map_or(shmbus::Wait::Forever, shmbus::Wait::For);
        match subscriber.recv(wait).map_err(pool_recv_failed)? {
            Some(Received::Message(sample)) => {
                // Exact length: a pool message has no padding to trim.
                write_line(out, &sample).map_err(CliError::stdout)?;
                drop(sample);
                delivered += 1;
            }
            Some(Received::Lagged { skipped }) => report_lag(skipped),
            None => return timed_out(args, delivered, "message"),
        }
    }
    Ok(())
}

/// Each sample is dropped before the next receive, so the subscriber never
/// holds more than one: this cannot happen, but is an error, not a panic.
fn pool_recv_failed(err: pool::RecvError) -> CliError {
    CliError::runtime(err.to_string())
}

fn run_bus(
    args: &SubArgs,
    mut subscriber: Subscriber<[u8]>,
    out: &mut Stdout,
) -> Result<(), CliError> {
    let timeout = args.timeout.map(|t| t.duration);
    let mut delivered: u64 = 0;
    while args.count.is_none_or(|count| delivered < count) {
        match subscriber.recv(timeout.map_or(shmbus::Wait::Forever, shmbus::Wait::For)) {
            Some(Received::Message(msg)) => {
                write_line(out, trim_padding(msg)).map_err(CliError::stdout)?;
                delivered += 1;
            }
            Some(Received::Lagged { skipped }) => report_lag(skipped),
            None => return timed_out(args, delivered, "message"),
        }
    }
    Ok(())
}

fn run_bootstrap(args: &SubArgs, out: &mut Stdout) -> Result<(), CliError> {
    let opts = JoinOptions::default().wait_strategy(args.wait.strategy());
    let mut subscriber =
        journal::Subscriber::<[u8]>::join(&args.name, &opts).map_err(join_failed)?;
    let timeout = args.timeout.map(|t| t.duration);
    let mut delivered: u64 = 0;
    while args.count.is_none_or(|count| delivered < count) {
        match subscriber.recv(timeout.map_or(shmbus::Wait::Forever, shmbus::Wait::For)) {
            Some(Received::Message(entry)) => {
                write!(out, "{}\t", entry.seq)
                    .and_then(|()| write_line(out, trim_padding(entry.msg)))
                    .map_err(CliError::stdout)?;
                delivered += 1;
            }
            Some(Received::Lagged { skipped }) => report_lag(skipped),
            None => return timed_out(args, delivered, "message"),
        }
    }
    Ok(())
}

pub(crate) fn join_failed(err: JoinError) -> CliError {
    match err {
        JoinError::Open(e) => e.into(),
        JoinError::NotJournaled { .. } => CliError::usage(err.to_string()),
        _ => CliError::runtime(err.to_string()),
    }
}

fn run_stream(args: &SubArgs, opts: &OpenOptions, out: &mut Stdout) -> Result<(), CliError> {
    if args.from.is_some() {
        return Err(CliError::usage(format!(
            "--from does not apply to a stream: {} always continues where its last \
             consumer stopped (see `shmbus sub --help`)",
            args.name
        )));
    }
    let mut consumer = Consumer::<[u8]>::attach(&args.name, opts)?;
    let wait = match args.timeout {
        Some(t) => shmbus::Wait::For(t.duration),
        None => shmbus::Wait::Forever,
    };
    let mut delivered: u64 = 0;
    while args.count.is_none_or(|count| delivered < count) {
        let record = match consumer.peek(wait) {
            Ok(record) => record,
            Err(PopError::TimedOut(_) | PopError::Empty) => {
                return timed_out(args, delivered, "record");
            }
            // PeerGone, Corrupt, CorruptCursors, and whatever comes.
            Err(e) => return Err(CliError::runtime(format!("{}: {e}", args.name))),
        };
        // Not released unless written (and flushed): a dropped record stays
        // in the stream.
        write_line(out, &record).map_err(CliError::stdout)?;
        record.release();
        delivered += 1;
    }
    Ok(())
}

/// A message without the zeros that pad it to the bus's message size.
pub(crate) fn trim_padding(msg: &[u8]) -> &[u8] {
    let end = msg.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    &msg[..end]
}

pub(crate) fn write_line(out: &mut impl Write, msg: &[u8]) -> io::Result<()> {
    out.write_all(msg)?;
    out.write_all(b"\n")?;
    out.flush()
}

fn report_lag(skipped: u64) {
    // Not `eprintln!`: it panics if stderr is closed. A lost lag report is
    // not worth stopping for.
    let _ = writeln!(io::stderr().lock(), "lagged: skipped {skipped}");
}

/// The end of a quiet `--timeout`: fine unless `--count` was not reached.
pub(crate) fn timed_out(args: &SubArgs, delivered: u64, what: &str) -> Result<(), CliError> {
    match (args.count, args.timeout) {
        (Some(count), Some(timeout)) => Err(CliError::runtime(format!(
            "timed out after {:?} s waiting for {what} {} of {count}",
            timeout.secs,
            delivered + 1
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padding_is_trimmed_but_inner_zeros_are_kept() {
        assert_eq!(trim_padding(b"ab\0c\0\0"), b"ab\0c");
        assert_eq!(trim_padding(b"\0\0"), b"");
        assert_eq!(trim_padding(b""), b"");
    }

    #[test]
    fn timeout_takes_fractions_and_rejects_nonsense() {
        let t = parse_timeout("0.25").unwrap();
        assert_eq!(t.duration, Duration::from_millis(250));
        assert_eq!(format!("{:?}", parse_timeout("2").unwrap().secs), "2.0");
        for bad in ["-1", "NaN", "inf", "1e300", "soon", ""] {
            assert!(parse_timeout(bad).is_err(), "{bad}");
        }
    }
}
