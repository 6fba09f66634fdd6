//! A receiver process: what `shmbus-bench child` does when the parent
//! spawns it for one block (or one publisher of the many-publishers table).

use std::io::Write;

use crate::args::ChildArgs;
use crate::case::Pattern;
use crate::error::BenchError;
use crate::mech::{self, ChannelSpec, Side};
use crate::pattern::{self, Plan};
use crate::runner::BLOCK_LIMIT;
use crate::{clock, cpu, idle, many_publishers, reqrep, stall};

/// Runs one receiver in this process (a child of `shmbus-bench`).
pub fn run_child(args: &ChildArgs) -> Result<(), BenchError> {
    if let Some(cpu) = args.cpu {
        cpu::pin(cpu)?;
    }
    mech::set_deadline(BLOCK_LIMIT);
    if args.mechanism == many_publishers::CHILD {
        return many_publishers::run_publisher_child(&args.token, args.count);
    }
    if idle::is_child(&args.mechanism) {
        return idle::run_child(&args.mechanism, &args.token, args.receivers, args.count);
    }
    if args.mechanism == reqrep::CHILD {
        return reqrep::run_server_child(&args.token, &args.prefix, args.msg_size, args.receivers);
    }
    if args.mechanism == stall::CHILD {
        return stall::run_subscriber_child(&args.token);
    }
    let m = mech::find(&args.mechanism)?;
    let clock = clock::Source::parse(&args.clock).ok_or_else(|| BenchError::UnknownClock {
        found: args.clock.clone(),
    })?;
    let spec = ChannelSpec {
        msg_size: args.msg_size,
        receivers: args.receivers,
        duplex: args.pattern == Pattern::Pingpong,
        prefix: args.prefix.clone(),
    };
    let plan = Plan {
        pattern: args.pattern,
        msg_size: args.msg_size,
        warmup: args.warmup,
        count: args.count,
        pace: args.pace,
        clock,
    };
    let mut ep = m
        .open(&args.token, Side::Receiver(args.index), &spec)
        .map_err(|source| BenchError::Mechanism {
            mechanism: m.name(),
            stage: "open",
            source,
        })?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "READY")
        .and_then(|_| out.flush())
        .map_err(BenchError::Stdout)?;
    let report = pattern::receive(ep.as_mut(), &plan).map_err(|source| BenchError::Mechanism {
        mechanism: m.name(),
        stage: "receive",
        source,
    })?;
    drop(ep);
    let line = serde_json::to_string(&report).map_err(|source| BenchError::Encode {
        what: "the receiver's report",
        source,
    })?;
    writeln!(out, "REPORT {line}")
        .and_then(|_| out.flush())
        .map_err(BenchError::Stdout)
}
