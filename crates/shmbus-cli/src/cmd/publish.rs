//! `shmbus pub`: publishes each line of stdin as one message of a bus, or
//! pushes it as one record of a stream.
//!
//! Lines are bytes, not text: stdin need not be UTF-8. A line longer than
//! the largest message (record) is refused as soon as its first byte too
//! many is read, so input without newlines (`shmbus pub x < /dev/zero`)
//! fails instead of filling memory. Into a bus, a line is read with that
//! bound (the message size, small). Into a stream, whose largest record is
//! half the ring (512 MiB for a 1 GiB stream), a line is gathered on the
//! heap only up to [`STAGE`] bytes; a longer one is read straight into the
//! ring, into room reserved for it that doubles as the line grows, and is
//! published when it ends (or dropped unpublished when it is too long). So
//! pub's own memory stays near `STAGE` plus stdin's buffer whatever the
//! stream's size; the bytes of a long line take only ring pages, which the
//! stream owns anyway.
//!
//! The kind of segment is found by trying the bus first: a stream answers
//! `WrongKind`. Into a stream, a push waits for room as long as it takes
//! (nothing is ever dropped), unless the consumer dies while the stream is
//! full, or the stream stays full for `--timeout`. A bus waits only for
//! its lossless subscribers (`sub --lossless`): `publish` holds a message
//! back while one has not read the one it would overwrite, up to the bus's
//! eviction timeout (`create --evict-ms`), then evicts it and goes on;
//! `--timeout` does not apply to that wait, which the bus bounds.
//!
//! A pool bus refuses a plain publisher (`OpenError::PoolMismatch`); a
//! `pool::Publisher` attaches instead (one of many if the bus was made for
//! many), and each line is loaned a block of exactly its length, copied
//! in and published. When every block is on the ring or held by
//! subscribers, it waits for one as a stream waits for room (`--timeout`).
//!
//! A journaled bus refuses a plain publisher (`AttachError::Journaled`);
//! the journaled one attaches instead, which appends each line to the
//! journal before it publishes it, and at the end of input closes, which
//! finishes a compaction `--compact-after` started or made due (the count
//! since the last compaction is the journal's, so it carries over from run
//! to run).

use std::io::{self, BufRead};

use shmbus::{AttachError, Kind, OpenError, OpenOptions, mem::Region};
use shmbus::{
    Publisher, journal,
    pool::{self, LoanError},
};
use shmbus::{
    Wait,
    stream::{Producer, PushError},
};

use crate::cmd::subscribe::{Timeout, parse_timeout};
use crate::error::CliError;

/// The longest line `pub` gathers on the heap before it pushes it into a
/// stream; a longer one is read straight into the ring.
pub const STAGE: usize = 64 << 10;

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
    /// SECS seconds; a pool bus: when no block comes free for the next
    /// line for SECS seconds [default: wait as long as it takes]. Any
    /// other bus waits only for a lossless subscriber, at most its
    /// eviction timeout (`create --evict-ms`).
    #[arg(long, value_name = "SECS", value_parser = parse_timeout, allow_negative_numbers = true)]
    pub timeout: Option<Timeout>,
}

pub fn run(args: &PubArgs) -> Result<(), CliError> {
    let opts = OpenOptions::default();
    match Publisher::<[u8]>::attach(&args.name, &opts) {
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
            let mut publisher = journal::Publisher::<[u8]>::attach(&args.name, &opts)
                .map_err(|e| CliError::runtime(e.to_string()))?;
            publisher.compact_after(args.compact_after);
            let max = publisher.msg_size();
            publish_lines(io::stdin().lock(), max, BUS, |line, number| {
                publisher
                    .publish(line)
                    .map(drop)
                    .map_err(|e| CliError::runtime(format!("line {number}: {e}")))
            })?;
            // A compaction this run started (or made due) is finished here,
            // not thrown away: short runs must not grow the journal.
            publisher
                .close()
                .map_err(|e| CliError::runtime(e.to_string()))
        }
        Err(AttachError::WrongMode { .. }) => {
            // A many-publisher bus: any number of `shmbus pub` at once.
            let mut publisher = shmbus::bus::ManyPublisher::<[u8]>::attach(&args.name, &opts)?;
            let max = publisher.msg_size();
            publish_lines(io::stdin().lock(), max, BUS, |line, number| {
                publisher.publish(line).map(drop).map_err(|e| match e {
                    shmbus::bus::ManyPublishError::TooLong { .. } => {
                        CliError::usage(format!("line {number}: {e}"))
                    }
                    _ => CliError::runtime(format!("line {number}: {e}")),
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
            let mut producer = Producer::<[u8]>::attach(&args.name, &opts)?;
            push_lines(io::stdin().lock(), &mut producer, args)
        }
        Err(AttachError::Open(OpenError::PoolMismatch { found: true })) => run_pool(args, &opts),
        Err(e) => Err(e.into()),
    }
}

/// Publishes each line into a pool bus: a block loaned for exactly the
/// line's length, the line copied in, the block published.
fn run_pool(args: &PubArgs, opts: &OpenOptions) -> Result<(), CliError> {
    if args.compact_after.is_some() {
        return Err(CliError::usage(format!(
            "--compact-after applies to a journaled bus; {} has no journal",
            args.name
        )));
    }
    let mut publisher = match pool::Publisher::<[u8]>::attach(&args.name, opts) {
        Err(AttachError::WrongMode { .. }) => {
            pool::Publisher::<[u8]>::attach_many(&args.name, opts)?
        }
        attached => attached?,
    };
    let max = publisher.block_size();
    // The loan's wait also frees what dead processes held, every 50 ms.
    let wait = args
        .timeout
        .map_or(Wait::Forever, |t| Wait::For(t.duration));
    publish_lines(io::stdin().lock(), max, POOL, |line, number| {
        let mut loan = publisher
            .loan(line.len(), wait)
            .map_err(|e| loan_failed(&e, number, args))?;
        loan.copy_from_slice(line);
        loan.publish()
            .map(drop)
            .map_err(|e| CliError::runtime(format!("line {number}: {e}")))
    })
}

/// A loan that failed: no block came free within `--timeout`.
fn loan_failed(err: &LoanError, number: u64, args: &PubArgs) -> CliError {
    let before = number - 1;
    let what = if before == 1 { "line is" } else { "lines are" };
    match (err, args.timeout) {
        (LoanError::Exhausted { .. }, Some(t)) => CliError::runtime(format!(
            "{}: no block came free for {:?} s: line {number} not published \
             ({before} earlier {what} published): {err}",
            args.name, t.secs
        )),
        (LoanError::TooLong { .. }, _) => CliError::usage(format!("line {number}: {err}")),
        _ => CliError::runtime(format!(
            "{}: line {number} not published: {err} ({before} earlier {what} published)",
            args.name
        )),
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

const POOL: Words = Words {
    limit: "the pool's block size",
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
    let mut line = Vec::with_capacity(max + 1);
    let mut number: u64 = 0;
    loop {
        line.clear();
        let end = read_part(&mut input, &mut line, max + 1)
            .map_err(|e| CliError::runtime(format!("reading stdin: {e}")))?;
        if end == End::Input && line.is_empty() {
            return Ok(());
        }
        number += 1;
        if end == End::Limit {
            return Err(too_long(number, max, &words));
        }
        send(&line, number)?;
    }
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

/// Why a line did not make it into a stream.
#[derive(Debug)]
enum Refused {
    /// Longer than the largest record.
    TooLong,
    Push(PushError),
    Read(io::Error),
}

impl From<PushError> for Refused {
    fn from(e: PushError) -> Refused {
        Refused::Push(e)
    }
}

impl From<io::Error> for Refused {
    fn from(e: io::Error) -> Refused {
        Refused::Read(e)
    }
}

/// Pushes every line of `input` as one record; stops at the first that
/// fails (the records before it stay in the stream).
fn push_lines(
    input: impl BufRead,
    producer: &mut Producer<[u8]>,
    args: &PubArgs,
) -> Result<(), CliError> {
    let max = producer.max_record();
    let wait = args
        .timeout
        .map_or(Wait::Forever, |t| Wait::For(t.duration));
    push_each_line(input, producer, wait).map_err(|(number, why)| match why {
        Refused::TooLong => too_long(number, max, &STREAM),
        Refused::Read(e) => CliError::runtime(format!("reading stdin: {e}")),
        Refused::Push(e) => push_failed(&e, number, args),
    })
}

/// `push_lines` without the words: the number of the line that failed,
/// and why.
fn push_each_line<R: Region>(
    mut input: impl BufRead,
    producer: &mut Producer<[u8], R>,
    wait: Wait,
) -> Result<(), (u64, Refused)> {
    let max = producer.max_record();
    let stage = STAGE.min(max);
    let mut line = Vec::with_capacity(stage + 1);
    let mut number: u64 = 0;
    loop {
        line.clear();
        let end =
            read_part(&mut input, &mut line, stage + 1).map_err(|e| (number + 1, e.into()))?;
        if end == End::Input && line.is_empty() {
            return Ok(());
        }
        number += 1;
        let pushed = if line.len() > max {
            Err(Refused::TooLong)
        } else if end == End::Limit {
            push_long(&mut input, producer, &line, wait)
        } else {
            producer.push(&line, wait).map_err(Refused::from)
        };
        pushed.map_err(|why| (number, why))?;
    }
}

/// How `read_part` stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    /// At a newline (consumed, not kept).
    Newline,
    /// At the end of input.
    Input,
    /// With `limit` bytes of the line kept and its end not yet seen.
    Limit,
}

/// Appends the next line's bytes to `line` until its newline, the end of
/// input, or `limit` bytes in `line`.
fn read_part(input: &mut impl BufRead, line: &mut Vec<u8>, limit: usize) -> io::Result<End> {
    loop {
        let room = limit - line.len();
        if room == 0 {
            return Ok(End::Limit);
        }
        let buf = fill(input)?;
        if buf.is_empty() {
            return Ok(End::Input);
        }
        let take = buf.len().min(room);
        if let Some(i) = newline(&buf[..take]) {
            line.extend_from_slice(&buf[..i]);
            input.consume(i + 1);
            return Ok(End::Newline);
        }
        line.extend_from_slice(&buf[..take]);
        input.consume(take);
    }
}

/// Pushes a line whose first `staged` bytes are read and whose end is not:
/// the rest is read straight into room reserved in the ring, which doubles
/// as the line grows, up to the largest record; one byte more (not a
/// newline) drops it unpublished.
fn push_long<R: Region>(
    input: &mut impl BufRead,
    producer: &mut Producer<[u8], R>,
    staged: &[u8],
    wait: Wait,
) -> Result<(), Refused> {
    let max = producer.max_record();
    let mut chunk = producer.reserve((2 * staged.len()).min(max), wait)?;
    chunk[..staged.len()].copy_from_slice(staged);
    let mut filled = staged.len();
    loop {
        if filled == chunk.len() {
            if filled == max {
                // Full length: only the line's end may come next.
                return match fill(input)?.first() {
                    None => {
                        chunk.commit();
                        Ok(())
                    }
                    Some(b'\n') => {
                        input.consume(1);
                        chunk.commit();
                        Ok(())
                    }
                    Some(_) => Err(Refused::TooLong),
                };
            }
            chunk.grow((2 * filled).min(max), wait)?;
        }
        let buf = fill(input)?;
        if buf.is_empty() {
            break;
        }
        let take = buf.len().min(chunk.len() - filled);
        let (n, ended) = match newline(&buf[..take]) {
            Some(i) => (i, true),
            None => (take, false),
        };
        chunk[filled..filled + n].copy_from_slice(&buf[..n]);
        filled += n;
        input.consume(n + usize::from(ended));
        if ended {
            break;
        }
    }
    chunk.truncate(filled);
    chunk.commit();
    Ok(())
}

/// `fill_buf`, again when a signal interrupted it.
fn fill(input: &mut impl BufRead) -> io::Result<&[u8]> {
    loop {
        match input.fill_buf() {
            // Not read again: a terminal would wait for a second Ctrl-D.
            Ok([]) => return Ok(&[]),
            Ok(_) => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    // Buffered now: this returns the same bytes without reading.
    input.fill_buf()
}

/// The first newline in `buf`: blocks are tested with `contains`, which is
/// core's fast memchr, so a long line costs little more than its copy.
fn newline(buf: &[u8]) -> Option<usize> {
    let mut base = 0;
    for block in buf.chunks(4096) {
        if block.contains(&b'\n') {
            return block.iter().position(|&b| b == b'\n').map(|i| base + i);
        }
        base += block.len();
    }
    None
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
    use std::time::Duration;

    #[test]
    fn long_lines_go_through_the_ring_and_one_byte_too_many_is_refused() {
        let (mut p, mut c) =
            shmbus::internals::stream_on_heap::<[u8]>(256 << 10, shmbus::WaitStrategy::default())
                .expect("ring");
        let max = p.max_record();
        let lens = [0, 1, STAGE - 1, STAGE, STAGE + 1, 100_000, max, 3];
        let line = |i: usize, len: usize| -> Vec<u8> {
            (0..len).map(|j| b'a' + ((i + j) % 26) as u8).collect()
        };
        let mut input = Vec::new();
        for (i, &len) in lens.iter().enumerate() {
            input.extend(line(i, len));
            input.push(b'\n');
        }
        input.extend(vec![b'x'; max + 1]);
        input.extend(b"\nnever\n");
        let patience = Wait::For(Duration::from_secs(10));
        let n = lens.len();
        let reader = std::thread::spawn(move || {
            let mut got = Vec::new();
            for _ in 0..n {
                let mut out = Vec::new();
                c.pop(&mut out, patience).expect("a record");
                got.push(out);
            }
            let last = c.pop(&mut Vec::new(), Wait::For(Duration::from_millis(100)));
            (got, last)
        });
        let r = push_each_line(&input[..], &mut p, patience);
        assert!(
            matches!(r, Err((9, Refused::TooLong))),
            "line 9 is one byte too long: {r:?}"
        );
        let (got, last) = reader.join().expect("reader");
        for (i, (rec, &len)) in got.iter().zip(&lens).enumerate() {
            assert!(*rec == line(i, len), "line {} ({len} bytes) differs", i + 1);
        }
        assert!(matches!(last, Err(shmbus::stream::PopError::TimedOut(_))));
    }

    #[test]
    fn a_long_last_line_without_a_newline_is_pushed_whole() {
        let (mut p, mut c) =
            shmbus::internals::stream_on_heap::<[u8]>(1 << 20, shmbus::WaitStrategy::default())
                .expect("ring");
        let long: Vec<u8> = (0..3 * STAGE + 5).map(|j| (j % 9) as u8).collect();
        push_each_line(&long[..], &mut p, Wait::Never).expect("pushed");
        let mut out = Vec::new();
        c.pop(&mut out, Wait::Never).expect("the line");
        assert!(out == long);
        assert!(c.is_empty());
    }

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
