//! `shmbus pub`: publishes each line of stdin as one message.
//!
//! Lines are bytes, not text: stdin need not be UTF-8. A line is read with
//! a bound of the message size (plus the newline and one byte to tell "too
//! long"), so a stream without newlines (`shmbus pub x < /dev/zero`) fails
//! at once instead of filling memory.

use std::io::{self, BufRead, Read};

use shmbus::{OpenOptions, RawPublisher};

use crate::error::CliError;

/// Arguments of `shmbus pub`.
#[derive(clap::Args, Debug)]
pub struct PubArgs {
    /// Bus name (a bare name lives in /dev/shm) or a path.
    pub name: String,
}

pub fn run(args: &PubArgs) -> Result<(), CliError> {
    let mut publisher = RawPublisher::attach(&args.name, &OpenOptions::default())?;
    publish_lines(&mut publisher, io::stdin().lock())
}

/// Publishes every line of `input`; a too-long line stops it, and the lines
/// before it stay published (a bus has no way to take a message back).
fn publish_lines(publisher: &mut RawPublisher, mut input: impl BufRead) -> Result<(), CliError> {
    let max = publisher.msg_size();
    let mut line = Vec::with_capacity(max + 2);
    let mut number: u64 = 0;
    while read_line(&mut input, &mut line, max)? {
        number += 1;
        if line.len() > max {
            return Err(too_long(number, max));
        }
        publisher
            .publish(&line)
            .map_err(|e| CliError::usage(format!("line {number}: {e}")))?;
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

fn too_long(number: u64, max: usize) -> CliError {
    let before = number - 1;
    let what = if before == 1 {
        "line stays"
    } else {
        "lines stay"
    };
    CliError::usage(format!(
        "line {number} is longer than {max} bytes, the bus's message size \
         ({before} earlier {what} published)"
    ))
}
