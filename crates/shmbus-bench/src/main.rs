//! `shmbus-bench`: every way to move a message between processes, side by
//! side, in one run.
//!
//! Method: the parent is the sender, pinned to the first CPU of `--cpus`;
//! receivers are child processes re-executed from this binary as its hidden
//! `child` subcommand (or threads, for in-process mechanisms), pinned to the
//! others. For each case (pattern, message size, receivers) the mechanisms
//! run one block each per round, round after round, the order rotating, so
//! drift hits all alike. Every block warms up first; only the measured
//! interval is timed and counted. Latencies go into HDR histograms in clock
//! ticks (see `clock`) and are converted to nanoseconds once, by the parent.
//!
//! `--record` runs only the recording and replay table (`record`);
//! `--reqrep` only the request-response rows (`reqrep`), which also run,
//! after the blackboard's, whenever shmbus is among the mechanisms.
//!
//! `run` takes the phases in order: the many-publishers table (`mpmc`), the
//! idle async subscribers (`idle`), the stalled lossless subscriber (`stall`), the rounds of every case (`rounds`, one block at a time by `runner`), then
//! the outputs (`report`). A row that failed, or whose receivers found a
//! payload torn or corrupt, fails the run (exit 1, one line naming each)
//! once the outputs are written; a row is "not run" only for a reason
//! known before it starts (a size or pattern its mechanism does not do).

mod args;
mod blackboard;
mod case;
mod child;
mod clock;
mod counters;
mod cpu;
mod error;
mod fault;
mod figures;
mod idle;
mod json;
mod many_publishers;
mod mech;
mod memcpy;
mod pattern;
mod payload;
mod plot;
mod record;
mod report;
mod reqrep;
mod rounds;
mod runner;
mod settings;
mod stall;
mod table;
mod targets;

use std::process::ExitCode;
use std::time::Duration;

use args::{BenchArgs, ChildArgs};
use error::BenchError;
use mech::Mechanism;
use runner::Runner;

/// Measure shmbus against the kernel's IPC mechanisms and peer libraries.
#[derive(clap::Parser, Debug)]
#[command(name = "shmbus-bench", version, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(flatten)]
    args: BenchArgs,
    #[command(subcommand)]
    hidden: Option<Hidden>,
}

/// Subcommands the benchmark runs itself, never the user.
#[derive(clap::Subcommand, Debug)]
enum Hidden {
    /// One side of a benchmark (run by `shmbus-bench` itself).
    #[command(hide = true)]
    Child(ChildArgs),
}

fn main() -> ExitCode {
    use clap::Parser;
    // Before any thread: crossbar's discovery registry goes to a file of
    // this run (children inherit it), which its blocks remove.
    if std::env::var_os(mech::crossbar_pool::REGISTRY_VAR).is_none() {
        let path = mech::crossbar_pool::registry_path(std::process::id());
        // SAFETY: first thing in `main`, before any thread is started, so
        // nothing reads the environment while it changes.
        unsafe { std::env::set_var(mech::crossbar_pool::REGISTRY_VAR, path) };
    }
    let cli = Cli::parse();
    let result = match &cli.hidden {
        Some(Hidden::Child(args)) => child::run_child(args),
        None => run(&cli.args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            use std::io::Write;
            // One line, whatever a path or a child's message held.
            let line = e.to_string().replace('\n', "\\n");
            let _ = writeln!(std::io::stderr().lock(), "shmbus-bench: {line}");
            ExitCode::from(e.exit_code())
        }
    }
}

/// Runs the benchmark; the error is one line for the user.
pub fn run(args: &BenchArgs) -> Result<(), BenchError> {
    fault::check()?;
    if args.list {
        for m in mech::all() {
            let place = if m.in_process() {
                "in-process"
            } else {
                "cross-process"
            };
            println!("{:16} {place:13} {}", m.name(), m.describe());
        }
        return Ok(());
    }
    if args.record {
        let table = record::run(args.quick)?;
        record::print(&table);
        for t in record::targets(&table) {
            println!(
                "  target: {} {} found {} {}",
                t["target"].as_str().unwrap_or(""),
                t["wanted"].as_str().unwrap_or(""),
                t["found"],
                if t["met"] == true { "met" } else { "MISSED" }
            );
        }
        if let Some(path) = &args.json {
            record::write(path, &table)?;
        }
        return Ok(());
    }
    let sizes = std::iter::once(args.msg_size).chain(args.sizes.iter().flatten().copied());
    if let Some(found) = sizes.into_iter().find(|&s| s < mech::HEADER) {
        return Err(BenchError::MsgSizeTooSmall {
            found,
            expected: mech::HEADER,
        });
    }
    let mechanisms: Vec<&'static dyn Mechanism> = match &args.mechanisms {
        Some(names) => names
            .iter()
            .map(|n| mech::find(n))
            .collect::<Result<_, _>>()?,
        None if args.large => settings::LARGE_ROWS
            .iter()
            .map(|n| mech::find(n))
            .collect::<Result<_, _>>()?,
        None => mech::all(),
    };
    let cpus = match &args.cpus {
        Some(c) if c.is_empty() => return Err(BenchError::NoCpus),
        Some(c) => c.clone(),
        // All of them: a fanout case pins each receiver to a CPU of its
        // own where there are enough (a one-receiver case uses the first two).
        None => cpu::allowed_cpus(),
    };
    if let Some(list) = &args.fanout
        && (list.is_empty() || list.contains(&0))
    {
        return Err(BenchError::BadFanout {
            found: list
                .iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(","),
        });
    }
    // The blackboard rows: alone with --blackboard, and whenever
    // shmbus runs; before pinning (the ping-pong pins its own threads).
    let blackboard_rows = if args.blackboard
        || (!args.mpmc
            && !args.large
            && !args.reqrep
            && mechanisms.iter().any(|m| m.name() == "shmbus"))
    {
        let report = blackboard::run(args.quick, &cpus)?;
        blackboard::print(&report);
        Some(report)
    } else {
        None
    };
    if args.blackboard {
        if let (Some(path), Some(report)) = (&args.json, &blackboard_rows) {
            json::write_blackboard(path, report, args.quick, &cpus)?;
        }
        return Ok(());
    }
    // The request-response rows: before pinning too (the server is a
    // child process and the clients pin their own threads).
    let reqrep_rows = if args.reqrep
        || (!args.mpmc && !args.large && mechanisms.iter().any(|m| m.name() == "shmbus"))
    {
        let report = reqrep::run(args.quick, args.rounds, &cpus)?;
        reqrep::print(&report);
        Some(report)
    } else {
        None
    };
    if let (true, Some(report)) = (args.reqrep, &reqrep_rows) {
        targets::print_targets(&targets::reqrep(report));
        if let Some(path) = &args.json {
            json::write_reqrep(path, report, &cpus)?;
        }
        let faults = report.faults();
        if faults.is_empty() {
            return Ok(());
        }
        return Err(BenchError::RowsFailed {
            count: faults.len(),
            rows: faults.join("; "),
        });
    }
    let mpmc_rows = if args.mpmc
        || (!args.large && !args.blackboard && mechanisms.iter().any(|m| m.name() == "shmbus"))
    {
        // Before pinning: the two publisher processes (and threads) must be
        // free to run on two CPUs.
        let rows = many_publishers::run(args.quick)?;
        many_publishers::print(&rows);
        rows
    } else {
        Vec::new()
    };
    // The stalled lossless subscriber: whenever the lossless
    // row runs, before pinning, as the table above.
    let stall_rows =
        if !args.mpmc && !args.large && mechanisms.iter().any(|m| m.name() == "shmbus-lossless") {
            let rows = stall::run(args.quick)?;
            stall::print(&rows);
            rows
        } else {
            Vec::new()
        };
    if args.mpmc && args.json.is_none() && args.plot.is_none() {
        return Ok(());
    }
    // The idle rows, whenever an async row is among the mechanisms;
    // also before pinning (the idle child is not pinned).
    let names: Vec<&str> = mechanisms.iter().map(|m| m.name()).collect();
    let idle_rows = if args.mpmc || args.large {
        Vec::new()
    } else {
        idle::run(args.quick, &names)?
    };
    idle::print(&idle_rows);
    counters::ensure_tracefs();
    let clock = clock::Source::detect();
    let ticks_per_ns = clock.calibrate(Duration::from_millis(200));
    cpu::pin(cpus[0])?;
    let mut runner = Runner::new(cpus.clone());
    let settings = settings::Settings::new(args, &cpus, clock, ticks_per_ns);
    let results = if args.mpmc {
        Vec::new()
    } else {
        rounds::run_all(&mut runner, &mechanisms, &settings)?
    };
    report::emit(
        &results,
        &mpmc_rows,
        &idle_rows,
        &stall_rows,
        blackboard_rows.as_ref(),
        reqrep_rows.as_ref(),
        &settings,
        args,
    )?;
    let faults: Vec<String> = idle_rows
        .iter()
        .filter_map(idle::Row::fault)
        .chain(results.iter().filter_map(figures::Figures::fault))
        .chain(reqrep_rows.iter().flat_map(reqrep::Report::faults))
        .collect();
    if faults.is_empty() {
        Ok(())
    } else {
        Err(BenchError::RowsFailed {
            count: faults.len(),
            rows: faults.join("; "),
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn clap_definitions_are_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
