//! [`BusName`]: a file name for one test, its file removed when it drops.

use std::path::{Path, PathBuf};

use crate::cleanup::{assert_gone, assert_nothing_left};
use crate::names::{SHM_DIR, unique_prefix};

/// A name for one bus (or any file) of one test. The file is removed when
/// this drops, even if the test panics; [`finish`](BusName::finish) also
/// checks that it is gone, and for a unique name that nothing else made
/// under the same prefix is left.
#[derive(Debug)]
pub struct BusName {
    name: String,
    path: PathBuf,
    /// For unique names: the directory and prefix `finish` scans.
    unique: Option<(PathBuf, String)>,
}

impl BusName {
    /// `shmbus-test-<pid>-<n>-<label>` in /dev/shm, a bare name (no slash),
    /// so the library resolves it to /dev/shm itself. Any file left there
    /// by an earlier process with the same pid is removed.
    pub fn new(label: &str) -> BusName {
        let prefix = unique_prefix();
        let name = format!("{prefix}{label}");
        let dir = PathBuf::from(SHM_DIR);
        let path = dir.join(&name);
        let _ = std::fs::remove_file(&path);
        BusName {
            name,
            path,
            unique: Some((dir, prefix)),
        }
    }

    /// `dir/shmbus-test-<pid>-<n>-<label>`, named by its full path: for a
    /// unique name in a directory other tests share too (a hugetlbfs
    /// mount, the target directory).
    pub fn unique_in(dir: &Path, label: &str) -> BusName {
        let prefix = unique_prefix();
        let path = dir.join(format!("{prefix}{label}"));
        let _ = std::fs::remove_file(&path);
        BusName {
            name: path.to_str().expect("UTF-8 path").to_owned(),
            path,
            unique: Some((dir.to_owned(), prefix)),
        }
    }

    /// `dir/<label>`, named by its full path (a name with a slash): for a
    /// bus in a directory of the test's own ([`ShmDir`](crate::ShmDir)).
    pub fn in_dir(dir: &Path, label: &str) -> BusName {
        let path = dir.join(label);
        BusName {
            name: path.to_str().expect("UTF-8 path").to_owned(),
            path,
            unique: None,
        }
    }

    /// What to give the library or the CLI as the bus's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the file (it may already be gone) and checks that it is
    /// gone and, for a unique name, that nothing else under its prefix is
    /// left in its directory.
    pub fn finish(self) {
        let _ = std::fs::remove_file(&self.path);
        assert_gone(&self.path);
        if let Some((dir, prefix)) = &self.unique {
            assert_nothing_left(dir, prefix);
        }
    }
}

impl Drop for BusName {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
