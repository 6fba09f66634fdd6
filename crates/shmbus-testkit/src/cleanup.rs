//! Checking that a test left nothing behind.

use std::path::Path;

/// Fails the test if anything in `dir` has a name starting with `prefix`
/// (say, a [`unique_prefix`](crate::unique_prefix) a test named its files
/// with), listing what is there.
pub fn assert_nothing_left(dir: &Path, prefix: &str) {
    let left: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with(prefix))
        .collect();
    assert!(
        left.is_empty(),
        "left behind in {}: {left:?}",
        dir.display()
    );
}

/// Fails the test if `path` still exists (as anything, a dangling symlink
/// included).
pub(crate) fn assert_gone(path: &Path) {
    assert!(
        std::fs::symlink_metadata(path).is_err(),
        "{} is still there",
        path.display()
    );
}
