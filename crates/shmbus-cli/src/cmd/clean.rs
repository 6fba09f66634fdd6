//! `shmbus clean` and `shmbus rm`: removing segments.
//!
//! `clean` removes only what no live process uses (the library decides, from
//! the liveness locks and /proc/*/maps, and removes each file while holding
//! its locks). It reports every file it removed, and every abandoned one it
//! could not remove (one line each on stderr), goes on, and exits 1 at the
//! end if any could not be removed. `rm` removes one named bus whatever its
//! state; the library first checks that the file is a shmbus segment at
//! all: `shmbus rm` must not become a way to delete an arbitrary file.
//!
//! `clean` also removes the status files of bridges that no longer run
//! (`crate::bridge_status::remove_stale`), one line each, not counted as
//! segments.

use std::io::{self, Write};
use std::path::PathBuf;

use crate::bridge_status;
use crate::cmd::inspect::escaped;
use crate::error::{print_error, CliError};

/// Arguments of `shmbus clean`.
#[derive(clap::Args, Debug)]
pub struct CleanArgs {
    /// The directory to clean.
    #[arg(long, value_name = "DIR", default_value = "/dev/shm")]
    pub dir: PathBuf,
    /// Only say what would be removed.
    #[arg(long)]
    pub dry_run: bool,
}

/// Arguments of `shmbus rm`.
#[derive(clap::Args, Debug)]
pub struct RmArgs {
    /// Bus name (a bare name lives in /dev/shm) or a path.
    pub name: String,
}

pub fn clean(args: &CleanArgs) -> Result<(), CliError> {
    // Before anything is removed: the report of what was is the output.
    let mut out = crate::out::stdout()?;
    let cleaned = shmbus::stat::clean(&args.dir, args.dry_run)
        .map_err(|e| CliError::runtime(e.to_string()))?;
    let verb = if args.dry_run {
        "would remove"
    } else {
        "removed"
    };
    let mut removed = 0usize;
    let mut failed = 0usize;
    let mut write = || -> io::Result<()> {
        for c in &cleaned {
            match &c.result {
                Ok(()) => {
                    removed += 1;
                    writeln!(out, "{verb} {}", escaped(&c.path.display().to_string()))?;
                }
                Err(e) => {
                    // Said at once, and the rest still cleaned (a sticky
                    // /dev/shm holds other users' dead buses).
                    failed += 1;
                    out.flush()?;
                    print_error(&e.to_string());
                }
            }
        }
        let plural = if removed == 1 { "" } else { "s" };
        writeln!(out, "{verb} {removed} segment{plural}")?;
        for c in bridge_status::remove_stale(args.dry_run) {
            let path = escaped(&c.path.display().to_string());
            match &c.result {
                Ok(()) => writeln!(out, "{verb} stale bridge status {path}")?,
                Err(e) => {
                    failed += 1;
                    out.flush()?;
                    print_error(&format!("removing stale bridge status {path}: {e}"));
                }
            }
        }
        out.flush()
    };
    write().map_err(CliError::stdout)?;
    if failed > 0 {
        let plural = if failed == 1 { "" } else { "s" };
        return Err(CliError::runtime(format!(
            "{failed} abandoned file{plural} could not be removed (see above)"
        )));
    }
    Ok(())
}

/// `rm`: the library checks that the file is a bus and removes the file it
/// checked (never following a symlink, by directory fd).
pub fn rm(args: &RmArgs) -> Result<(), CliError> {
    shmbus::remove(&args.name)?;
    Ok(())
}
