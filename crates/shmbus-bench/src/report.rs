//! What a run leaves: the tables and targets on standard output, and the
//! JSON and SVG files when asked for.

use crate::args::BenchArgs;
use crate::error::BenchError;
use crate::figures::Figures;
use crate::mpmc;
use crate::settings::Settings;
use crate::{idle, json, plot, table, targets};

/// Prints the tables and targets, writes JSON and plot as asked. `mpmc`
/// (the many-publishers table, empty if it did not run) goes under its own
/// top-level key of the JSON, so readers of `results` see no change; so
/// do the idle rows (`idle`, empty if none ran).
pub fn emit(
    results: &[Figures],
    mpmc: &[mpmc::Row],
    idle: &[idle::Row],
    settings: &Settings,
    args: &BenchArgs,
) -> Result<(), BenchError> {
    let t = settings.ticks_per_ns;
    let mut targets = targets::targets(results, t);
    targets.extend(targets::idle_targets(idle));
    table::print_tables(results, settings);
    table::print_fanout_widths(results, settings);
    targets::print_targets(&targets);
    if let Some(path) = &args.json {
        json::write(path, results, mpmc, idle, settings, &targets)?;
    }
    if let Some(path) = &args.plot {
        plot::write(results, mpmc, t, path)?;
    }
    Ok(())
}
