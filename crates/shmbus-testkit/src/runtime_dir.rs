//! [`RuntimeDir`]: a private `XDG_RUNTIME_DIR` for one test.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::names::unique_prefix;

/// `$TMPDIR/shmbus-test-<pid>-<n>-<label>`, mode 0700, removed with its
/// contents when this drops. What the tool keeps per user (bridge statuses,
/// a bridge-in's creation state) goes here instead of the machine's runtime
/// directory, so a test neither sees nor leaves anything of another run's.
#[derive(Debug)]
pub struct RuntimeDir {
    path: PathBuf,
}

impl RuntimeDir {
    /// Creates the directory (removing one an earlier process with the
    /// same pid left).
    pub fn new(label: &str) -> RuntimeDir {
        let path = std::env::temp_dir().join(format!("{}{label}", unique_prefix()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir(&path).unwrap_or_else(|e| panic!("create {}: {e}", path.display()));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700))
            .unwrap_or_else(|e| panic!("chmod {}: {e}", path.display()));
        RuntimeDir { path }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `<dir>/shmbus/<what>`: where the tool keeps `what` ("bridges",
    /// "bridge-in").
    pub fn shmbus(&self, what: &str) -> PathBuf {
        self.path.join("shmbus").join(what)
    }

    /// Points `cmd` at this directory.
    pub fn apply<'c>(&self, cmd: &'c mut Command) -> &'c mut Command {
        cmd.env("XDG_RUNTIME_DIR", &self.path)
    }
}

impl Drop for RuntimeDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
