//! `shmbus sub A B C`: follows several buses, pools and streams at once,
//! one thread, sleeping on all of them together (`shmbus::select`).
//!
//! Each line is the name as given, a tab, then what `sub` prints for one
//! (with `--bootstrap`, `NAME<TAB>SEQ<TAB>MESSAGE`). A lag goes to stderr
//! as exactly `lagged: NAME skipped N`. `--count` counts lines of all of
//! them together; `--timeout` ends the wait when none of them has
//! anything for that long. A stream whose producer dies while we wait,
//! with nothing left to read, is an error naming it, as for one.
//! `--lossless` opens every bus lossless (a stream needs nothing); a bus
//! that refuses it is one line naming it.

use std::io::Write;

use shmbus::journal::{self, JoinOptions};
use shmbus::pool;
use shmbus::select::{Select, Selectable};
use shmbus::stream::{Consumer, PopError};
use shmbus::{Kind, OpenError, OpenOptions, Received, Subscriber};

use super::subscribe::{From, SubArgs, join_failed, timed_out, trim_padding, write_line};
use crate::error::CliError;
use crate::out::Stdout;

/// One followed name and its open handle.
enum Member {
    Bus(Subscriber<[u8]>),
    Pool(pool::Subscriber<[u8]>),
    Stream(Consumer<[u8]>),
    Journal(journal::Subscriber<[u8]>),
}

impl Member {
    fn selectable(&self) -> &dyn Selectable {
        match self {
            Member::Bus(s) => s,
            Member::Pool(s) => s,
            Member::Stream(s) => s,
            Member::Journal(s) => s,
        }
    }
}

/// What one receive from a ready member gave.
enum Got {
    Line,
    Lag(u64),
    Nothing,
}

fn open(name: &str, args: &SubArgs) -> Result<Member, CliError> {
    if args.bootstrap {
        let opts = JoinOptions::default().wait_strategy(args.wait.strategy());
        return journal::Subscriber::<[u8]>::join(name, &opts)
            .map(Member::Journal)
            .map_err(join_failed);
    }
    let opts = OpenOptions::default()
        .start(args.from.unwrap_or(From::Next).start())
        .wait_strategy(args.wait.strategy())
        .lossless(args.lossless);
    let refused = |why: shmbus::bus::LosslessRefused| {
        CliError::runtime(format!("{name}: {}", OpenError::Lossless(why)))
    };
    match Subscriber::<[u8]>::open(name, &opts) {
        Ok(s) => Ok(Member::Bus(s)),
        Err(OpenError::Lossless(why)) => Err(refused(why)),
        Err(OpenError::WrongKind {
            found: Kind::Stream,
            ..
        }) => {
            if args.from.is_some() {
                return Err(CliError::usage(format!(
                    "--from does not apply to a stream: {name} always continues where its \
                     last consumer stopped (see `shmbus sub --help`)"
                )));
            }
            let opts = opts.lossless(false);
            Ok(Member::Stream(Consumer::<[u8]>::attach(name, &opts)?))
        }
        Err(OpenError::PoolMismatch { found: true }) => {
            Ok(Member::Pool(pool::Subscriber::<[u8]>::open(name, &opts)?))
        }
        Err(e) => Err(e.into()),
    }
}

pub fn run(args: &SubArgs) -> Result<(), CliError> {
    // First: with nowhere to print, nothing is read (nor a record released).
    let out = &mut crate::out::stdout()?;
    let names: Vec<&str> = std::iter::once(args.name.as_str())
        .chain(args.more.iter().map(String::as_str))
        .collect();
    let mut members = names
        .iter()
        .map(|name| open(name, args))
        .collect::<Result<Vec<_>, _>>()?;
    let mut select = Select::with_strategy(args.wait.strategy());
    let wait = args
        .timeout
        .map_or(shmbus::Wait::Forever, |t| shmbus::Wait::For(t.duration));
    let mut delivered: u64 = 0;
    while args.count.is_none_or(|count| delivered < count) {
        let ready = {
            let view: Vec<&dyn Selectable> = members.iter().map(Member::selectable).collect();
            select.ready(&view, wait)
        };
        let Some(i) = ready else {
            return timed_out(args, delivered, "message");
        };
        match take(&mut members[i], names[i], out)? {
            Got::Line => delivered += 1,
            Got::Lag(skipped) => {
                let _ = writeln!(
                    std::io::stderr().lock(),
                    "lagged: {} skipped {skipped}",
                    names[i]
                );
            }
            Got::Nothing => {}
        }
    }
    Ok(())
}

/// Receives one thing from a member the select named, and prints it.
fn take(member: &mut Member, name: &str, out: &mut Stdout) -> Result<Got, CliError> {
    let line = |out: &mut Stdout, prefix: String, msg: &[u8]| {
        out.write_all(prefix.as_bytes())
            .and_then(|()| write_line(out, msg))
            .map_err(CliError::stdout)
    };
    let now = shmbus::Wait::Never;
    Ok(match member {
        Member::Bus(s) => match s.recv(now) {
            Some(Received::Message(msg)) => {
                line(out, format!("{name}\t"), trim_padding(msg))?;
                Got::Line
            }
            Some(Received::Lagged { skipped }) => Got::Lag(skipped),
            None => Got::Nothing,
        },
        Member::Pool(s) => match s.recv(now).map_err(|e| CliError::runtime(e.to_string()))? {
            Some(Received::Message(sample)) => {
                line(out, format!("{name}\t"), &sample)?;
                Got::Line
            }
            Some(Received::Lagged { skipped }) => Got::Lag(skipped),
            None => Got::Nothing,
        },
        Member::Journal(s) => match s.recv(now) {
            Some(Received::Message(entry)) => {
                line(
                    out,
                    format!("{name}\t{}\t", entry.seq),
                    trim_padding(entry.msg),
                )?;
                Got::Line
            }
            Some(Received::Lagged { skipped }) => Got::Lag(skipped),
            None => Got::Nothing,
        },
        Member::Stream(c) => {
            // Named with nothing to pop: its producer died. A pop that may
            // wait says so at its first peer check.
            let wait = if c.is_empty() {
                shmbus::Wait::For(shmbus::stream::PEER_CHECK * 2)
            } else {
                now
            };
            match c.peek(wait) {
                Ok(record) => {
                    // Released only once written, as for one stream.
                    line(out, format!("{name}\t"), &record)?;
                    record.release();
                    Got::Line
                }
                Err(PopError::Empty | PopError::TimedOut(_)) => Got::Nothing,
                Err(e) => return Err(CliError::runtime(format!("{name}: {e}"))),
            }
        }
    })
}
