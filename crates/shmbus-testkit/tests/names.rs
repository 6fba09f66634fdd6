//! Unique names, and files and directories removed when their guards drop.

mod common;

use std::path::Path;

use common::failure_of;
use shmbus_testkit::{assert_nothing_left, unique_prefix, BusName, ShmDir, SHM_DIR};

#[test]
fn two_names_made_by_one_process_differ_and_carry_its_pid_and_label() {
    let (a, b) = (BusName::new("same"), BusName::new("same"));
    assert_ne!(a.name(), b.name());
    let pid = format!("shmbus-test-{}-", std::process::id());
    assert!(
        a.name().starts_with(&pid) && a.name().ends_with("-same"),
        "{}",
        a.name()
    );
    assert!(!a.name().contains('/'), "a bare name");
    assert_eq!(a.path(), Path::new(SHM_DIR).join(a.name()));
    assert_ne!(unique_prefix(), unique_prefix());
}

#[test]
fn a_bus_name_s_file_is_removed_when_it_drops() {
    let bus = BusName::new("dropped");
    let path = bus.path().to_owned();
    std::fs::write(&path, b"bus").unwrap();
    drop(bus);
    assert!(!path.exists());
}

#[test]
fn finish_removes_the_file_and_passes_when_nothing_else_is_left() {
    let bus = BusName::new("finished");
    std::fs::write(bus.path(), b"bus").unwrap();
    let path = bus.path().to_owned();
    bus.finish();
    assert!(!path.exists());
}

#[test]
fn finish_fails_if_another_file_under_the_same_prefix_is_left() {
    let bus = BusName::new("main");
    let stray = bus.path().with_file_name(format!("{}-journal", bus.name()));
    std::fs::write(&stray, b"left").unwrap();
    let msg = failure_of(|| bus.finish());
    let _ = std::fs::remove_file(&stray);
    assert!(
        msg.contains("left behind") && msg.contains("-journal"),
        "{msg}"
    );
}

#[test]
fn a_bus_in_a_directory_is_named_by_its_full_path() {
    let dir = ShmDir::new("holder");
    let bus = BusName::in_dir(dir.path(), "bus");
    assert_eq!(bus.name(), dir.bus("bus"));
    assert_eq!(bus.path(), dir.file("bus"));
    std::fs::write(bus.path(), b"bus").unwrap();
    bus.finish();
    dir.finish();
}

#[test]
fn a_unique_name_in_another_directory_is_checked_there() {
    let dir = ShmDir::new("shared");
    let bus = BusName::unique_in(dir.path(), "tlb");
    assert!(bus.name().starts_with(dir.dir()) && bus.name().ends_with("-tlb"));
    let stray = dir.file(&format!(
        "{}-stray",
        bus.path().file_name().unwrap().to_str().unwrap()
    ));
    std::fs::write(&stray, b"left").unwrap();
    let msg = failure_of(|| bus.finish());
    assert!(
        msg.contains("left behind") && msg.contains("-stray"),
        "{msg}"
    );
}

#[test]
fn a_shm_dir_is_made_empty_under_dev_shm_and_removed_with_its_contents() {
    let dir = ShmDir::new("contents");
    assert!(dir.path().starts_with(SHM_DIR) && dir.dir().ends_with("-contents"));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    std::fs::create_dir(dir.file("sub")).unwrap();
    std::fs::write(dir.file("sub/file"), b"x").unwrap();
    let path = dir.path().to_owned();
    drop(dir);
    assert!(!path.exists());
}

#[test]
fn shm_dir_finish_checks_nothing_under_its_prefix_is_left() {
    let dir = ShmDir::new("tidy");
    std::fs::write(dir.file("inside"), b"x").unwrap();
    let path = dir.path().to_owned();
    dir.finish();
    assert!(!path.exists());
}

#[test]
fn assert_nothing_left_lists_what_it_finds() {
    let dir = ShmDir::new("scan");
    std::fs::write(dir.file("keep-a"), b"x").unwrap();
    std::fs::write(dir.file("other"), b"x").unwrap();
    assert_nothing_left(dir.path(), "gone-");
    let msg = failure_of(|| assert_nothing_left(dir.path(), "keep-"));
    assert!(msg.contains("keep-a") && !msg.contains("other"), "{msg}");
}
