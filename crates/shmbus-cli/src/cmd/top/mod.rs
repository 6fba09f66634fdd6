//! `shmbus top`: a live view of running buses, and the same figures once
//! for scripts (`--json`, `--prometheus`), or served to a scraper over
//! HTTP (`--listen`, `serve`).
//!
//! `model` samples (buses, subscribers' lines, pools, /proc), `tui` draws
//! the live view (`pool` its pool figures), `json` and `prom` print one
//! sample. A one-shot output takes two samples `--interval-ms` apart, so
//! that its rates are rates.
//!
//! A blackboard shows its table and its hottest keys (`blackboard` samples
//! them, `tui/board.rs` writes them; what they cost on a big table:
//! `blackboard`).
//!
//! A service shows its shape, calls/s and responses/s, and per server
//! and client entry its counters, rates and calls in flight (`service`
//! samples them, `tui/calls.rs` writes them).
//!
//! A pool bus also shows its pool: block size and blocks, the census
//! (free, on the ring, held off the ring, loaned, reclaimable, corrupt),
//! how many blocks the next loan cannot take, and per subscriber the
//! blocks it holds. It shows messages/s but no bytes/s: its slots carry
//! descriptors, and the lengths of the messages between two samples are
//! not all still readable.

mod blackboard;
mod json;
mod model;
mod pool;
mod proc_row;
mod prom;
mod serve;
mod service;
mod tui;

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use crate::error::CliError;

pub use model::Sampler;

/// Arguments of `shmbus top`.
#[derive(clap::Args, Debug)]
pub struct TopArgs {
    /// Buses to watch (names or paths); every bus in --dir if none.
    pub names: Vec<String>,
    /// The directory to watch when no name is given.
    #[arg(long, value_name = "DIR", default_value = "/dev/shm")]
    pub dir: PathBuf,
    /// Print one sample and exit (rates over one interval).
    #[arg(long)]
    pub once: bool,
    /// Print one sample as JSON (implies --once).
    #[arg(long, conflicts_with = "prometheus")]
    pub json: bool,
    /// Print one sample in the Prometheus text format (implies --once).
    #[arg(long)]
    pub prometheus: bool,
    /// Serve the Prometheus text over HTTP at http://ADDR:PORT/metrics
    /// (404 elsewhere), sampled every --interval-ms, until ended; prints
    /// the address it listens on. No authentication: listen on 127.0.0.1
    /// or a private interface. Port 0 picks a free one.
    #[arg(long, value_name = "ADDR:PORT", conflicts_with_all = ["once", "json", "prometheus"])]
    pub listen: Option<String>,
    /// Milliseconds between samples.
    #[arg(long, value_name = "MS", default_value_t = 500,
          value_parser = clap::value_parser!(u64).range(10..=60_000))]
    pub interval_ms: u64,
}

pub fn run(args: &TopArgs) -> Result<(), CliError> {
    let interval = Duration::from_millis(args.interval_ms);
    let mut sampler = Sampler::new(args.names.clone(), args.dir.clone()).with_interval(interval);
    if let Some(addr) = &args.listen {
        return serve::run(addr, sampler, interval);
    }
    if !(args.once || args.json || args.prometheus) {
        return tui::run(sampler, interval);
    }
    sampler.sample();
    std::thread::sleep(interval);
    let snap = sampler.sample();
    let text = if args.json {
        json::snapshot_json(&snap).to_string()
    } else if args.prometheus {
        prom::exposition(&snap)
    } else {
        tui::plain(&snap)
    };
    let mut out = crate::out::stdout()?;
    writeln!(out, "{}", text.trim_end())
        .and_then(|()| out.flush())
        .map_err(CliError::stdout)
}
