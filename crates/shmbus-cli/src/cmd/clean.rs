//! `shmbus clean` and `shmbus rm`: removing segments.
//!
//! `clean` removes only what no live process uses (the library decides, from
//! the liveness locks and /proc/*/maps, and removes each file while holding
//! its locks). It reports every file it removed, and every abandoned one it
//! could not remove (one line each on stderr), goes on, and exits 1 at the
//! end if any could not be removed (2 if the permissions refused each). A
//! file it could remove but may not open (a team member's private bus in
//! the team's directory) is one line on stderr too, naming it and why; it
//! is not known to be abandoned, so it is no failure. `rm` removes one named bus whatever its
//! state; the library first checks that the file is a shmbus segment at
//! all: `shmbus rm` must not become a way to delete an arbitrary file.
//!
//! `clean` also removes the status files of bridges (and recorders) that
//! no longer run and whose bus is in the directory cleaned
//! (`crate::bridge_status::remove_stale`), one line each, not counted as
//! segments.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::bridge_status;
use crate::cmd::inspect::escaped;
use crate::error::{CliError, print_error};

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
    let cleaned = shmbus::stat::clean(&args.dir, args.dry_run).map_err(|e| {
        // A directory this user may not read: theirs to fix (exit 2).
        if matches!(e.source.raw_os_error(), Some(libc::EPERM | libc::EACCES)) {
            CliError::usage(e.to_string())
        } else {
            CliError::runtime(e.to_string())
        }
    })?;
    let verb = if args.dry_run {
        "would remove"
    } else {
        "removed"
    };
    let mut removed = 0usize;
    let mut failed = 0usize;
    let mut refused = 0usize;
    let mut write = || -> io::Result<()> {
        for c in &cleaned {
            match &c.result {
                Ok(()) => {
                    removed += 1;
                    writeln!(out, "{verb} {}", escaped(&c.path.display().to_string()))?;
                }
                Err(shmbus::stat::CleanError::Unreadable { path, .. }) => {
                    // Not known to be abandoned: said, not a failure.
                    out.flush()?;
                    print_error(&format!(
                        "{}: left alone: cannot open it to tell whether it is an abandoned \
                         bus: {} (its owner or root may clean it)",
                        escaped(&path.display().to_string()),
                        refused_because(path)
                    ));
                }
                Err(e) => {
                    // Said at once, and the rest still cleaned (a sticky
                    // /dev/shm holds other users' dead buses).
                    failed += 1;
                    out.flush()?;
                    match refusal(e) {
                        Some(why) => {
                            refused += 1;
                            print_error(&why);
                        }
                        None => print_error(&e.to_string()),
                    }
                }
            }
        }
        let plural = if removed == 1 { "" } else { "s" };
        writeln!(out, "{verb} {removed} segment{plural}")?;
        for c in bridge_status::remove_stale(&args.dir, args.dry_run) {
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
        let msg = format!("{failed} abandoned file{plural} could not be removed (see above)");
        // Every failure a refusal of the permissions: this user's to fix
        // (exit 2), not a failure of the run.
        return Err(if refused == failed {
            CliError::usage(msg)
        } else {
            CliError::runtime(msg)
        });
    }
    Ok(())
}

/// A clean's failure that the permissions refused, said with why.
fn refusal(e: &shmbus::stat::CleanError) -> Option<String> {
    match e {
        shmbus::stat::CleanError::Io { path, step, source }
            if matches!(source.raw_os_error(), Some(libc::EPERM | libc::EACCES)) =>
        {
            Some(format!(
                "{}: cannot {step}: {}",
                escaped(&path.display().to_string()),
                refused_because(path)
            ))
        }
        _ => None,
    }
}

/// Why this user may not remove `path`, from its directory's and its own
/// owner and mode: a directory it cannot write, a sticky directory (as
/// /dev/shm is) and a file of another user, or a file it cannot open.
fn refused_because(path: &Path) -> String {
    use std::os::unix::fs::MetadataExt;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let euid = rustix::process::geteuid().as_raw();
    let Ok(d) = std::fs::metadata(dir) else {
        return format!(
            "permission denied: {} cannot be looked at by you",
            dir.display()
        );
    };
    let owner = |m: &std::fs::Metadata| {
        format!(
            "uid {}, gid {}, mode {:o}",
            m.uid(),
            m.gid(),
            m.mode() & 0o7777
        )
    };
    if !may_write_dir(dir) {
        return format!(
            "permission denied: its directory {} ({}) does not let you write it",
            dir.display(),
            owner(&d)
        );
    }
    match std::fs::symlink_metadata(path) {
        Ok(f) if d.mode() & 0o1000 != 0 && f.uid() != euid && d.uid() != euid => format!(
            "permission denied: {} is sticky and the file is another user's ({}): only its \
             owner or root may remove it (a team shares a directory of its group instead: \
             docs/DEPLOYMENT.md)",
            dir.display(),
            owner(&f)
        ),
        Ok(f) => format!(
            "permission denied: the file ({}) does not let you open it",
            owner(&f)
        ),
        Err(e) => format!("permission denied ({e})"),
    }
}

/// Whether this process may add and remove names in `dir` (write and
/// search), by its effective ids.
fn may_write_dir(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a NUL-terminated path that lives across the call.
    unsafe {
        libc::faccessat(
            libc::AT_FDCWD,
            c.as_ptr(),
            libc::W_OK | libc::X_OK,
            libc::AT_EACCESS,
        ) == 0
    }
}

/// `rm`: the library checks that the file is a bus and removes the file it
/// checked (never following a symlink, by directory fd).
pub fn rm(args: &RmArgs) -> Result<(), CliError> {
    match shmbus::remove(&args.name) {
        Ok(_) => Ok(()),
        Err(shmbus::OpenError::PermissionDenied { .. }) => {
            // The error names where the walk stopped (perhaps a
            // directory): the reason is about the bus's own path.
            let path = if args.name.contains('/') {
                PathBuf::from(&args.name)
            } else {
                Path::new("/dev/shm").join(&args.name)
            };
            Err(CliError::usage(format!(
                "{}: not removed: {}",
                escaped(&path.display().to_string()),
                refused_because(&path)
            )))
        }
        Err(e) => Err(e.into()),
    }
}
