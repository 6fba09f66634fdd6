//! Who may write what: the file's mode, and the page protections of each
//! role's mapping (a stray store by a subscriber dies of SIGSEGV instead of
//! corrupting the bus for everyone).

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::{BusName, param, print_result, role, spawn_child};
use shmbus::{BusOptions, OpenOptions, Publisher, Subscriber};

fn mode_of(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_new_bus_is_mode_0600_by_default() {
    let bus = BusName::new("mode-default");
    let p = Publisher::<u64>::create(bus.name(), &BusOptions::new(8)).expect("create");
    assert_eq!(mode_of(bus.path()), 0o600);
    drop(p);
    let raw = BusName::new("mode-default-raw");
    let p =
        Publisher::<[u8]>::create(raw.name(), &BusOptions::new(8).msg_size(24)).expect("create");
    assert_eq!(mode_of(raw.path()), 0o600);
    drop(p);
    raw.finish();
    bus.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_new_bus_is_mode_0660_when_asked() {
    let bus = BusName::new("mode-0660");
    let p = Publisher::<u64>::create(bus.name(), &BusOptions::new(8).mode(0o660)).expect("create");
    // Exactly as asked, whatever the umask.
    assert_eq!(mode_of(bus.path()), 0o660);
    drop(p);
    bus.finish();
}

// ---------------------------------------------------------------------------
// Stores into a subscriber's mapping, from a child process.

/// Opens a subscriber and stores into its mapping at SHMBUS_TARGET (the
/// value already there, so a store that is wrongly allowed changes nothing).
#[test]
fn as_child_store_into_the_mapping() {
    role("store", || {
        let name: String = param("SHMBUS_BUS");
        let target: String = param("SHMBUS_TARGET");
        let sub = Subscriber::<u64>::open(&name, &OpenOptions::default()).expect("open");
        let h = shmbus::stat::stat(&name)
            .expect("stat")
            .raw_header()
            .clone();
        let offset = match target.as_str() {
            "header" => 0,
            // A word of the control page no field uses.
            "control" => h.control_offset as usize + 512,
            "data" => h.data_offset as usize,
            "last_data_word" => h.total_len as usize - 8,
            other => panic!("unknown target {other}"),
        };
        let base = sub.data_pages_ptr().wrapping_sub(h.data_offset as usize);
        print_result(&[("about_to_store", target.clone())]);
        // SAFETY: `offset` is inside the subscriber's mapping (the header says
        // so and the mapping covers the whole file) and 8-aligned. Nothing else
        // writes these bytes, and the store writes back the value just read;
        // whether the page lets us store at all is what the parent checks.
        unsafe {
            let p = base.wrapping_add(offset).cast::<u64>();
            let v = std::ptr::read_volatile(p);
            std::ptr::write_volatile(p, v);
        }
        print_result(&[("survived", target)]);
    });
}

fn store_in_child(target: &str) -> common::Finished {
    let bus = BusName::new(&format!("store-{target}"));
    let mut p = Publisher::<u64>::create(bus.name(), &BusOptions::new(16)).expect("create");
    p.publish(&42);
    let f = spawn_child(
        "as_child_store_into_the_mapping",
        "store",
        &[
            ("SHMBUS_BUS", bus.name().to_owned()),
            ("SHMBUS_TARGET", target.to_owned()),
        ],
    )
    .wait();
    // The bus is intact either way.
    let mut s = Subscriber::<u64>::open(
        bus.name(),
        &OpenOptions::default().start(shmbus::Start::Oldest),
    )
    .expect("reopen");
    assert_eq!(s.try_recv(), Some(shmbus::Received::Message(42)));
    drop((p, s));
    bus.finish();
    f
}

fn assert_segv(f: &common::Finished, target: &str) {
    assert_eq!(
        f.signal(),
        Some(libc::SIGSEGV),
        "a store into the {target} should kill the subscriber with SIGSEGV; it ended {:?}\n{}",
        f.status,
        f.output()
    );
    assert_eq!(f.result().raw("about_to_store"), Some(target));
    assert!(!f.stdout().contains("survived="), "{}", f.output());
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_subscriber_that_stores_into_the_data_pages_dies_of_sigsegv() {
    assert_segv(&store_in_child("data"), "data");
    assert_segv(&store_in_child("last_data_word"), "last_data_word");
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_subscriber_that_stores_into_the_header_page_dies_of_sigsegv() {
    assert_segv(&store_in_child("header"), "header");
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_subscriber_may_store_into_the_control_page() {
    // The control check: the same pointer arithmetic, on the one page a
    // subscriber is meant to write, does not fault.
    let f = store_in_child("control");
    assert!(f.status.success(), "{:?}\n{}", f.status, f.output());
    assert_eq!(f.result().raw("survived"), Some("control"));
}

// ---------------------------------------------------------------------------
// Page protections, read from /proc/self/maps.

/// One line of /proc/self/maps for a file: [start, end) at file `offset`.
#[derive(Debug, Clone)]
struct Vma {
    start: u64,
    end: u64,
    perms: String,
    offset: u64,
}

fn vmas_of(path: &Path) -> Vec<Vma> {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let want = path.to_str().unwrap();
    maps.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let range = f.next()?;
            let perms = f.next()?;
            let offset = f.next()?;
            let (_dev, _inode) = (f.next()?, f.next()?);
            let file = f.next()?;
            if file != want {
                return None;
            }
            let (a, b) = range.split_once('-')?;
            Some(Vma {
                start: u64::from_str_radix(a, 16).ok()?,
                end: u64::from_str_radix(b, 16).ok()?,
                perms: perms.to_owned(),
                offset: u64::from_str_radix(offset, 16).ok()?,
            })
        })
        .collect()
}

/// The mapping whose file offset 0 is at `base`, as (file offset, length,
/// permissions) runs.
fn layout_at(vmas: &[Vma], base: u64) -> Vec<(u64, u64, String)> {
    let mut runs: Vec<(u64, u64, String)> = vmas
        .iter()
        .filter(|v| v.start - v.offset == base)
        .map(|v| (v.offset, v.end - v.start, v.perms.clone()))
        .collect();
    runs.sort();
    runs
}

#[test]
#[cfg_attr(miri, ignore)]
fn the_publisher_cannot_write_its_header_page_and_a_subscriber_only_its_control_area() {
    let bus = BusName::new("protections");
    let p = Publisher::<u64>::create(bus.name(), &BusOptions::new(256)).expect("create");
    let h = shmbus::stat::stat(bus.name())
        .expect("stat")
        .raw_header()
        .clone();
    let (page, total) = (h.page_size, h.total_len);
    assert!(total > 3 * page, "several data pages");

    // Only the publisher's mapping exists yet.
    let vmas = vmas_of(bus.path());
    let bases: std::collections::BTreeSet<u64> = vmas.iter().map(|v| v.start - v.offset).collect();
    assert_eq!(bases.len(), 1, "{vmas:?}");
    let publisher_base = *bases.first().unwrap();
    assert_eq!(
        layout_at(&vmas, publisher_base),
        vec![
            (0, page, "r--s".to_owned()),
            (page, total - page, "rw-s".to_owned()),
        ],
        "publisher: header read-only, control and data read-write"
    );

    let s = Subscriber::<u64>::open(bus.name(), &OpenOptions::default()).expect("open");
    let subscriber_base = s.data_pages_ptr() as u64 - h.data_offset;
    let vmas = vmas_of(bus.path());
    assert_eq!(
        layout_at(&vmas, subscriber_base),
        vec![
            (0, page, "r--s".to_owned()),
            (page, h.data_offset - page, "rw-s".to_owned()),
            (h.data_offset, total - h.data_offset, "r--s".to_owned()),
        ],
        "subscriber: only the control area (fields, registry, lines) writable"
    );
    assert_eq!(layout_at(&vmas, publisher_base).len(), 2);
    drop((p, s));
    assert!(vmas_of(bus.path()).is_empty(), "dropping unmaps");
    bus.finish();
}
