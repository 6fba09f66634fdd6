//! What a run leaves: the tables and targets on standard output, and the
//! JSON and SVG files when asked for.

use crate::args::BenchArgs;
use crate::error::BenchError;
use crate::figures::Figures;
use crate::settings::Settings;
use crate::{blackboard, idle, json, many_publishers, plot, reqrep, stall, table, targets};

/// Prints the tables and targets, writes JSON and plot as asked. `mpmc`
/// (the many-publishers table, empty if it did not run), `idle` (the idle
/// async subscribers) and `stall` (the stalled lossless subscriber) go
/// under their own top-level keys of the JSON, each empty if it did not
/// run, so readers of `results` see no change.
#[allow(clippy::too_many_arguments)]
pub fn emit(
    results: &[Figures],
    mpmc: &[many_publishers::Row],
    idle: &[idle::Row],
    stall: &[stall::Row],
    blackboard: Option<&blackboard::Report>,
    reqrep: Option<&reqrep::Report>,
    settings: &Settings,
    args: &BenchArgs,
) -> Result<(), BenchError> {
    let t = settings.ticks_per_ns;
    let mut targets = targets::targets(results, t);
    targets.extend(targets::idle_targets(idle));
    targets.extend(targets::stall(stall));
    targets.extend(blackboard.map(blackboard::targets).unwrap_or_default());
    targets.extend(reqrep.map(targets::reqrep).unwrap_or_default());
    table::print_tables(results, settings);
    table::print_fanout_widths(results, settings);
    targets::print_targets(&targets);
    if let Some(path) = &args.json {
        let sections = json::Sections {
            mpmc,
            idle,
            stall,
            blackboard,
            reqrep,
        };
        json::write(path, results, &sections, settings, &targets)?;
    }
    if let Some(path) = &args.plot {
        plot::write(results, mpmc, t, path)?;
    }
    Ok(())
}
