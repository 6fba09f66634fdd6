//! What crosses between the demo's processes: the update on the bus, the
//! clock its timestamp is read from, and the lines a child writes to the
//! parent (`READY`, `ROUND r`, `SAY text`, `DONE digest keys last`).

use std::io::Write;

use shmbus::{
    Message,
    journal::{Keyed, KeyedState},
};

use crate::error::CliError;

/// One update: `key` now has value `val`; `sent_ns` is the publisher's
/// CLOCK_MONOTONIC just before it published it.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub(super) struct Update {
    pub(super) key: u64,
    pub(super) val: u64,
    pub(super) sent_ns: u64,
}

impl Message for Update {
    const NAME: &'static str = "shmbus.demo.Update";
}

impl Keyed for Update {
    fn key(&self) -> u64 {
        self.key
    }
}

/// CLOCK_MONOTONIC in nanoseconds: one clock for every process of the
/// machine, so a subscriber can subtract the publisher's `sent_ns`.
pub(super) fn monotonic_ns() -> u64 {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Writes one protocol line to the parent.
pub(super) fn say(line: &str) -> Result<(), CliError> {
    let mut out = crate::out::stdout()?;
    writeln!(out, "{line}")
        .and_then(|()| out.flush())
        .map_err(|e| CliError::runtime(format!("writing to the demo: {e}")))
}

/// Writes the last line, `DONE digest keys last`: the state the parent
/// compares with the publisher's.
pub(super) fn say_done(state: &KeyedState<Update>) -> Result<(), CliError> {
    say(&format!(
        "DONE {} {} {}",
        state.digest(),
        state.len(),
        state.last_seq().unwrap_or(0)
    ))
}

/// (digest, keys, last sequence) from what follows `DONE `.
pub(super) fn parse_done(rest: &str) -> Option<(u64, u64, u64)> {
    let mut it = rest.split_whitespace().map(str::parse::<u64>);
    match (it.next(), it.next(), it.next()) {
        (Some(Ok(d)), Some(Ok(k)), Some(Ok(l))) => Some((d, k, l)),
        _ => None,
    }
}
