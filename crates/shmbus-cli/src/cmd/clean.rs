//! `shmbus clean` and `shmbus rm`: removing segments.
//!
//! `clean` removes only what no live process uses (the library decides, from
//! the liveness locks and /proc/*/maps). `rm` removes one named bus whatever
//! its state, so it first checks that the file is a shmbus segment at all:
//! `shmbus rm` must not become a way to delete an arbitrary file by path.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use shmbus::layout::{MAGIC, MAGIC_BUILDING};

use crate::error::CliError;

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
    let removed = shmbus::stat::clean(&args.dir, args.dry_run)
        .map_err(|e| CliError::runtime(format!("{}: {e}", args.dir.display())))?;
    let verb = if args.dry_run {
        "would remove"
    } else {
        "removed"
    };
    let mut write = || -> io::Result<()> {
        for path in &removed {
            writeln!(out, "{verb} {}", path.display())?;
        }
        let plural = if removed.len() == 1 { "" } else { "s" };
        writeln!(out, "{verb} {} segment{plural}", removed.len())?;
        out.flush()
    };
    write().map_err(CliError::stdout)
}

pub fn rm(args: &RmArgs) -> Result<(), CliError> {
    let path = shmbus::region::resolve(&args.name).map_err(|e| CliError::usage(e.to_string()))?;
    match read_magic(&path) {
        Ok(magic) if magic == MAGIC || magic == MAGIC_BUILDING => {}
        Ok(_) => {
            return Err(CliError::runtime(format!(
                "{}: not a shmbus segment; not removing it",
                path.display()
            )))
        }
        // Let `remove` report a missing file in the library's words.
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(CliError::runtime(format!(
                "{}: cannot check that it is a bus: {e}",
                path.display()
            )))
        }
    }
    shmbus::remove(&args.name)?;
    Ok(())
}

/// The first 8 bytes of the file, little-endian; 0 if it is shorter. Never
/// follows a symlink, like the library.
fn read_magic(path: &Path) -> io::Result<u64> {
    let mut file = File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    let mut buf = [0u8; 8];
    match file.read_exact(&mut buf) {
        Ok(()) => Ok(u64::from_le_bytes(buf)),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(0),
        Err(e) => Err(e),
    }
}
