//! Unique names, and files and directories removed when their guards drop.

mod common;

use std::path::{Path, PathBuf};

use common::{assert_says, failure_of};
use shmbus_testkit::{BusName, SHM_DIR, ShmDir, assert_nothing_left, unique_prefix};

/// Writes a small file at `path`.
fn touch(path: &Path) {
    std::fs::write(path, b"x").unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

/// `path`'s sibling named after it plus `suffix`: under the same prefix.
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let name = path.file_name().unwrap().to_str().unwrap();
    path.with_file_name(format!("{name}{suffix}"))
}

#[test]
fn two_names_made_by_one_process_differ_and_carry_its_pid_and_label() {
    let (a, b) = (BusName::new("same"), BusName::new("same"));
    assert_ne!(a.name(), b.name());
    let pid = format!("shmbus-test-{}-", std::process::id());
    assert!(a.name().starts_with(&pid), "{}", a.name());
    assert!(a.name().ends_with("-same"), "{}", a.name());
    assert!(!a.name().contains('/'), "a bare name");
    assert_eq!(a.path(), Path::new(SHM_DIR).join(a.name()));
    assert_ne!(unique_prefix(), unique_prefix());
}

#[test]
fn a_bus_name_s_file_is_removed_when_it_drops() {
    let bus = BusName::new("dropped");
    let path = bus.path().to_owned();
    touch(&path);
    drop(bus);
    assert!(!path.exists());
}

#[test]
fn finish_removes_what_it_names_and_passes_when_nothing_else_is_left() {
    let (bus, dir) = (BusName::new("finished"), ShmDir::new("tidy"));
    touch(bus.path());
    touch(&dir.file("inside"));
    let paths = [bus.path().to_owned(), dir.path().to_owned()];
    bus.finish();
    dir.finish();
    assert!(paths.iter().all(|p| !p.exists()), "{paths:?}");
}

#[test]
fn finish_fails_if_another_file_under_the_same_prefix_is_left() {
    let bus = BusName::new("main");
    let stray = sibling(bus.path(), "-journal");
    touch(&stray);
    let msg = failure_of(|| bus.finish());
    let _ = std::fs::remove_file(&stray);
    assert_says(&msg, &["left behind", "-journal"]);
}

#[test]
fn a_bus_in_a_directory_is_named_by_its_full_path() {
    let dir = ShmDir::new("holder");
    let bus = BusName::in_dir(dir.path(), "bus");
    assert_eq!(bus.name(), dir.bus("bus"));
    assert_eq!(bus.path(), dir.file("bus"));
    touch(bus.path());
    bus.finish();
    dir.finish();
}

#[test]
fn a_unique_name_in_another_directory_is_checked_there() {
    let dir = ShmDir::new("shared");
    let bus = BusName::unique_in(dir.path(), "tlb");
    assert!(bus.name().starts_with(dir.dir()), "{}", bus.name());
    assert!(bus.name().ends_with("-tlb"), "{}", bus.name());
    touch(&sibling(bus.path(), "-stray"));
    let msg = failure_of(|| bus.finish());
    assert_says(&msg, &["left behind", "-stray"]);
}

#[test]
fn a_shm_dir_is_made_empty_under_dev_shm_and_removed_with_its_contents() {
    let dir = ShmDir::new("contents");
    assert!(dir.path().starts_with(SHM_DIR), "{}", dir.dir());
    assert!(dir.dir().ends_with("-contents"), "{}", dir.dir());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    std::fs::create_dir(dir.file("sub")).unwrap();
    touch(&dir.file("sub/file"));
    let path = dir.path().to_owned();
    drop(dir);
    assert!(!path.exists());
}

#[test]
fn assert_nothing_left_lists_what_it_finds() {
    let dir = ShmDir::new("scan");
    touch(&dir.file("keep-a"));
    touch(&dir.file("other"));
    assert_nothing_left(dir.path(), "gone-");
    let msg = failure_of(|| assert_nothing_left(dir.path(), "keep-"));
    assert_says(&msg, &["keep-a"]);
    assert!(!msg.contains("other"), "{msg}");
}
