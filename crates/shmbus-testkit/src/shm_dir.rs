//! [`ShmDir`]: a private directory under /dev/shm for one test.

use std::path::{Path, PathBuf};

use crate::cleanup::{assert_gone, assert_nothing_left};
use crate::names::{SHM_DIR, unique_prefix};

/// `/dev/shm/shmbus-test-<pid>-<n>-<label>`, created empty and removed with
/// its contents when this drops, even if the test panics. A test that keeps
/// its files here can run `clean --dir` or `ls --dir` on it without
/// touching anything of another test's.
#[derive(Debug)]
pub struct ShmDir {
    path: PathBuf,
    prefix: String,
}

impl ShmDir {
    /// Creates the directory (removing one an earlier process with the
    /// same pid left).
    pub fn new(label: &str) -> ShmDir {
        let prefix = unique_prefix();
        let path = Path::new(SHM_DIR).join(format!("{prefix}{label}"));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir(&path).unwrap_or_else(|e| panic!("create {}: {e}", path.display()));
        ShmDir { path, prefix }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory, as a string (for command lines).
    pub fn dir(&self) -> &str {
        self.path.to_str().expect("UTF-8 path")
    }

    /// The path of `name` in the directory.
    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// The name (a path) of a bus `name` in the directory.
    pub fn bus(&self, name: &str) -> String {
        self.file(name).to_str().expect("UTF-8 path").to_owned()
    }

    /// Removes the directory and checks that it, and anything else under
    /// its prefix in /dev/shm, is gone.
    pub fn finish(self) {
        let _ = std::fs::remove_dir_all(&self.path);
        assert_gone(&self.path);
        assert_nothing_left(Path::new(SHM_DIR), &self.prefix);
    }
}

impl Drop for ShmDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
