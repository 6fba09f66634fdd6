//! Faults the benchmark's own tests inject, to prove that a run whose
//! payloads arrive torn, or whose receiver fails, fails as a whole
//! (`crates/shmbus-bench/tests/cli.rs`). Set in the environment, so the
//! receiver processes see the parent's: `SHMBUS_BENCH_FAULT=torn-payload`
//! or `receiver-fails`. Unset in every real run; any other value is refused
//! at the start ([`check`]).

use crate::error::BenchError;

/// The variable read.
pub const VAR: &str = "SHMBUS_BENCH_FAULT";

/// A fault to inject.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The sender flips a bit of every measured message's payload (the
    /// first byte past the header, in messages of 32 B and more), as a
    /// torn or corrupt delivery would leave it: every receiver's payload
    /// check must catch it.
    TornPayload,
    /// Every receiver fails before its first message, as a crashed one.
    ReceiverFails,
}

fn parse(v: &str) -> Result<Option<Fault>, BenchError> {
    match v {
        "" => Ok(None),
        "torn-payload" => Ok(Some(Fault::TornPayload)),
        "receiver-fails" => Ok(Some(Fault::ReceiverFails)),
        other => Err(BenchError::BadFault {
            found: other.to_owned(),
        }),
    }
}

/// Refuses a `SHMBUS_BENCH_FAULT` that names no fault.
pub fn check() -> Result<(), BenchError> {
    parse(&std::env::var(VAR).unwrap_or_default()).map(|_| ())
}

/// The fault this run injects, if any.
pub fn injected() -> Option<Fault> {
    parse(&std::env::var(VAR).ok()?).ok().flatten()
}

/// Where [`Fault::TornPayload`] is injected, flips the bit (a second call
/// flips it back): the first byte past the header, which `payload::seal`
/// never writes in a message of 32 B or more.
pub fn tear(buf: &mut [u8]) {
    if buf.len() >= 32 && injected() == Some(Fault::TornPayload) {
        buf[crate::payload::HEADER] ^= 0x10;
    }
}
