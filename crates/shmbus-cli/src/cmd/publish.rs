//! `shmbus pub`: publishes each line of stdin as one message of a bus, or
//! pushes it as one record of a stream.
//!
//! Lines are bytes, not text: stdin need not be UTF-8. A line is read with
//! a bound of the message size (plus the newline and one byte to tell "too
//! long"), so a stream without newlines (`shmbus pub x < /dev/zero`) fails
//! at once instead of filling memory.
//!
//! The kind of segment is found by trying the bus first: a stream answers
//! `WrongKind`. Into a stream, a push waits for room as long as it takes
//! (nothing is ever dropped), unless the consumer dies while the stream is
//! full, or the stream stays full for `--timeout` (a bus never waits).
//!
//! A journaled bus refuses a plain publisher (`AttachError::Journaled`);
//! the journaled one attaches instead, which appends each line to the
//! journal before it publishes it.

use std::io::{self, BufRead, Read};

use shmbus::journal::RawJournalPublisher;
use shmbus::stream::{Producer, PushError, Wait};
use shmbus::{AttachError, Kind, OpenError, OpenOptions, RawPublisher};

use crate::cmd::subscribe::{parse_timeout, Timeout};
use crate::error::CliError;

/// Arguments of `shmbus pub`.
#[derive(clap::Args, Debug)]
pub struct PubArgs {
    /// Bus or stream name (a bare name lives in /dev/shm) or a path.
    pub name: String,
    /// A journaled bus: compact the journal to one record per key (the
    /// first 8 bytes of a message) every N messages.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub compact_after: Option<u64>,
    /// A stream: fail when it stays full (no room for the next line) for
    /// SECS seconds [default: wait as long as it takes]. A bus never waits.
    #[arg(long, value_name = "SECS", value_parser = parse_timeout, allow_negative_numbers = true)]
    pub timeout: Option<Timeout>,
}

pub fn run(args: &PubArgs) -> Result<(), CliError> {
    let opts = OpenOptions::default();
    match RawPublisher::attach(&args.name, &opts) {
        Ok(_) if args.compact_after.is_some() => Err(CliError::usage(format!(
            "--compact-after applies to a journaled bus; {} has no journal",
            args.name
        ))),
        Ok(mut publisher) => {
            let max = publisher.msg_size();
            publish_lines(io::stdin().lock(), max, BUS, |line, number| {
                publisher
                    .publish(line)
                    .map(drop)
                    .map_err(|e| CliError::usage(format!("line {number}: {e}")))
            })
        }
        Err(AttachError::Journaled { .. }) => {
            let mut publisher = RawJournalPublisher::attach(&args.name, &opts)
                .map_err(|e| CliError::runtime(e.to_string()))?;
            publisher.compact_after(args.compact_after);
            let max = publisher.msg_size();
            publish_lines(io::stdin().lock(), max, BUS, |line, number| {
                publisher
                    .publish(line)
                    .map(drop)
                    .map_err(|e| CliError::runtime(format!("line {number}: {e}")))
            })
        }
        Err(AttachError::WrongPublishers { .. }) => {
            // A multi-publisher bus: any number of `shmbus pub` at once.
            let mut publisher = shmbus::RawMpPublisher::attach(&args.name, &opts)?;
            let max = publisher.msg_size();
            publish_lines(io::stdin().lock(), max, BUS, |line, number| {
                publisher.publish(line).map(drop).map_err(|e| match e {
                    shmbus::MpPublishError::TooLong { .. } => {
                        CliError::usage(format!("line {number}: {e}"))
                    }
                    shmbus::MpPublishError::Abandoned(_) => {
                        CliError::runtime(format!("line {number}: {e}"))
                    }
                })
            })
        }
        Err(AttachError::Open(OpenError::WrongKind {
            found: Kind::Stream,
            ..
        })) => {
            if args.compact_after.is_some() {
                return Err(CliError::usage(format!(
                    "--compact-after applies to a journaled bus; {} is a stream",
                    args.name
                )));
            }
            let mut producer = Producer::attach(&args.name, &opts)?;
            let max = producer.max_record();
            let wait = args
                .timeout
                .map_or(Wait::Forever, |t| Wait::For(t.duration));
            publish_lines(io::stdin().lock(), max, STREAM, |line, number| {
                producer
                    .push(line, wait)
                    .map_err(|e| push_failed(&e, number, args))
            })
        }
        Err(e) => Err(e.into()),
    }
}

/// How the error messages name a line's limit and its fate.
struct Words {
    /// What bounds a line's length.
    limit: &'static str,
    /// Where the lines before a failed one are.
    stay: &'static str,
}

const BUS: Words = Words {
    limit: "the bus's message size",
    stay: "published",
};

const STREAM: Words = Words {
    limit: "the stream's largest record",
    stay: "in the stream",
};

/// Sends every line of `input` through `send` (given the line and its
/// number); a too-long line stops it, and the lines before it stay sent (a
/// bus has no way to take a message back, nor a stream a record).
fn publish_lines(
    mut input: impl BufRead,
    max: usize,
    words: Words,
    mut send: impl FnMut(&[u8], u64) -> Result<(), CliError>,
) -> Result<(), CliError> {
    // A stream's largest record may be gigabytes: the buffer grows only as
    // long lines need it.
    let mut line = Vec::with_capacity(max.min(64 << 10) + 2);
    let mut number: u64 = 0;
    while read_line(&mut input, &mut line, max)? {
        number += 1;
        if line.len() > max {
            return Err(too_long(number, max, &words));
        }
        send(&line, number)?;
    }
    Ok(())
}

/// Reads the next line into `line`, without its newline, keeping at most
/// `max + 1` bytes of it: enough to tell that it is longer than `max`.
/// Returns false at the end of input.
fn read_line(input: &mut impl BufRead, line: &mut Vec<u8>, max: usize) -> Result<bool, CliError> {
    line.clear();
    let limit = max as u64 + 2;
    let n = input
        .take(limit)
        .read_until(b'\n', line)
        .map_err(|e| CliError::runtime(format!("reading stdin: {e}")))?;
    if line.last() == Some(&b'\n') {
        line.pop();
    }
    Ok(n > 0)
}

fn too_long(number: u64, max: usize, words: &Words) -> CliError {
    let before = number - 1;
    let what = if before == 1 {
        "line stays"
    } else {
        "lines stay"
    };
    CliError::usage(format!(
        "line {number} is longer than {max} bytes, {} ({before} earlier {what} {})",
        words.limit, words.stay
    ))
}

/// A push that failed: the consumer died while the stream was full, the
/// stream stayed full past `--timeout`, or its cursors are corrupt.
fn push_failed(err: &PushError, number: u64, args: &PubArgs) -> CliError {
    let before = number - 1;
    let (what, sent) = if before == 1 {
        ("line is", "record sent")
    } else {
        ("lines are", "records sent")
    };
    match (err, args.timeout) {
        (PushError::TimedOut(_), Some(t)) => CliError::runtime(format!(
            "stream {} stayed full for {:?} s: line {number} not pushed ({before} {sent})",
            args.name, t.secs
        )),
        _ => CliError::runtime(format!(
            "{}: line {number} not pushed: {err} ({before} earlier {what} in the stream)",
            args.name
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_sent_in_order_and_a_long_one_stops_the_rest() {
        let mut sent = Vec::new();
        let input = &b"one\n\ntwo\nthree is long\nfour\n"[..];
        let err = publish_lines(input, 5, STREAM, |line, n| {
            sent.push((n, line.to_vec()));
            Ok(())
        })
        .unwrap_err();
        assert_eq!(
            sent,
            [
                (1, b"one".to_vec()),
                (2, b"".to_vec()),
                (3, b"two".to_vec())
            ]
        );
        match err {
            CliError::Usage(msg) => assert_eq!(
                msg,
                "line 4 is longer than 5 bytes, the stream's largest record \
                 (3 earlier lines stay in the stream)"
            ),
            other => panic!("{other:?}"),
        }
    }
}
