//! Buses on huge pages: the header says so and is laid out in huge pages,
//! the kernel really maps huge pages (read back from /proc/self/smaps, with
//! /proc/meminfo's counters printed alongside), and a system that cannot
//! give them is a typed error that leaves no file behind.
//!
//! The working paths depend on the machine (a kernel with `MADV_COLLAPSE`
//! and transparent huge pages for tmpfs, a hugetlbfs mount); where it
//! cannot, the test skips (`shmbus_testkit::skip`, which fails it under
//! strict skips unless allowed) and checks only what it can. Nothing here
//! needs root.

mod common;

use std::path::{Path, PathBuf};

use common::BusName;
use shmbus::wire::flags;
use shmbus::{
    BusOptions, CreateError, OpenOptions, Publisher, Received, Start, Subscriber,
    error::HugePageError, mem::HugePages,
};

/// 64 bytes of payload: a 128-byte slot.
type Msg = [u64; 8];
/// 2^15 slots of 128 bytes: 4 MiB of data pages, two 2 MiB huge pages.
const CAPACITY: u64 = 1 << 15;
const DATA_BYTES: u64 = CAPACITY * 128;

/// The values of `field` (kB) in each of this process's mappings of `path`.
fn smaps_kb(path: &Path, field: &str) -> Vec<u64> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").expect("read /proc/self/smaps");
    let path = path.to_str().expect("utf-8 path");
    let mut ours = false;
    let mut values = Vec::new();
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if first.contains('-') && first.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
            ours = line.ends_with(path);
        } else if ours && line.starts_with(field) {
            values.extend(
                line.split_whitespace()
                    .nth(1)
                    .and_then(|v| v.parse::<u64>().ok()),
            );
        }
    }
    values
}

fn meminfo_kb(field: &str) -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

fn sys_u64(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Publishes `n` messages and checks one subscriber gets them all.
fn round_trip(publisher: &mut Publisher<Msg>, subscriber: &mut Subscriber<Msg>, n: u64) {
    for i in 0..n {
        publisher.publish(&[i; 8]);
    }
    for i in 0..n {
        match subscriber.try_recv() {
            Some(Received::Message(m)) => assert_eq!(m, [i; 8]),
            other => panic!("message {i}: {other:?}"),
        }
    }
}

#[test]
fn transparent_huge_pages_back_the_data_pages_of_creator_and_subscriber() {
    let bus = BusName::new("thp");
    let huge_kb = sys_u64("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size").map(|b| b / 1024);
    let before = meminfo_kb("ShmemHugePages:");
    let opts = BusOptions::new(CAPACITY).huge_pages(HugePages::Transparent);
    let mut publisher = match Publisher::<Msg>::create(bus.name(), &opts) {
        Ok(p) => p,
        Err(CreateError::HugePages(
            e @ (HugePageError::NoTransparent { .. }
            | HugePageError::ShmemDenied { .. }
            | HugePageError::Collapse { .. }),
        )) => {
            common::skip(
                common::Need::TransparentHugePages,
                format!("this system gives no transparent huge pages to tmpfs: {e}"),
            );
            assert!(!bus.path().exists(), "a refused bus left its file");
            bus.finish();
            return;
        }
        Err(e) => panic!("create: {e}"),
    };
    let huge = huge_kb.expect("hpage_pmd_size readable once a collapse worked") * 1024;
    let after = meminfo_kb("ShmemHugePages:");
    let st = shmbus::stat::stat(bus.name()).expect("stat");
    assert_ne!(
        st.raw_header().flags & flags::HUGE_PAGES,
        0,
        "HUGE_PAGES flag"
    );
    assert_eq!(st.raw_header().page_size, huge, "laid out in huge pages");
    assert_eq!(st.raw_header().data_offset, 2 * huge);
    let creator = smaps_kb(bus.path(), "ShmemPmdMapped:").iter().sum::<u64>();
    println!(
        "creator maps {creator} kB of the bus with huge pages; /proc/meminfo ShmemHugePages \
         {before} kB -> {after} kB"
    );
    assert!(
        creator >= DATA_BYTES / 1024,
        "creator: {creator} kB PMD-mapped, expected the {} kB of data pages",
        DATA_BYTES / 1024
    );

    let mut subscriber = Subscriber::<Msg>::open(
        bus.name(),
        &OpenOptions::default().start(Start::Oldest).prefault(true),
    )
    .expect("open");
    round_trip(&mut publisher, &mut subscriber, 1000);
    let both = smaps_kb(bus.path(), "ShmemPmdMapped:").iter().sum::<u64>();
    println!("creator and subscriber map {both} kB with huge pages");
    assert!(
        both >= 2 * DATA_BYTES / 1024,
        "the subscriber's mapping is not PMD-mapped: {both} kB in all"
    );
    drop((publisher, subscriber));
    shmbus::remove(bus.name()).expect("remove");
    bus.finish();
}

#[test]
fn transparent_huge_pages_on_a_disk_file_are_refused_naming_its_file_system() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let bus = BusName::unique_in(&dir, "thp-disk");
    let opts = BusOptions::new(CAPACITY).huge_pages(HugePages::Transparent);
    match Publisher::<Msg>::create(bus.name(), &opts) {
        Err(CreateError::HugePages(HugePageError::NotTmpfs { path, found })) => {
            assert_eq!(path, bus.path());
            assert_ne!(found, "tmpfs");
        }
        Ok(_) => common::skip(
            common::Need::DiskTargetDir,
            format!("{} is on tmpfs here", dir.display()),
        ),
        Err(e) => panic!("expected NotTmpfs, got: {e}"),
    }
    assert!(!bus.path().exists(), "a refused bus left its file");
    bus.finish();
}

#[test]
fn hugetlbfs_on_a_dev_shm_name_is_refused_and_names_where_to_put_it() {
    let bus = BusName::new("tlb-on-tmpfs");
    let opts = BusOptions::new(CAPACITY).huge_pages(HugePages::Hugetlbfs);
    match Publisher::<Msg>::create(bus.name(), &opts) {
        Err(e @ CreateError::HugePages(HugePageError::NotHugetlbfs { .. })) => {
            let text = e.to_string();
            assert!(
                text.contains("on a tmpfs file system, expected hugetlbfs"),
                "{text}"
            );
            assert!(
                text.contains("hugetlbfs") && text.contains("under"),
                "{text}"
            );
        }
        Ok(_) => panic!("a /dev/shm name cannot be on hugetlbfs"),
        Err(e) => panic!("expected NotHugetlbfs, got: {e}"),
    }
    bus.finish();
}

/// A hugetlbfs mount this process sees, with its huge page size.
fn hugetlbfs_mount() -> Option<(PathBuf, u64)> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    mounts.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.get(2) != Some(&"hugetlbfs") {
            return None;
        }
        let size = f[3]
            .split(',')
            .find_map(|o| o.strip_prefix("pagesize="))
            .map_or(2 << 20, |s| match s.strip_suffix('M') {
                Some(m) => m.parse::<u64>().unwrap_or(2) << 20,
                None => s
                    .strip_suffix('G')
                    .map_or(2 << 20, |g| g.parse::<u64>().unwrap_or(1) << 30),
            });
        Some((PathBuf::from(f[1]), size))
    })
}

#[test]
fn hugetlbfs_bus_gets_reserved_huge_pages_or_says_how_many_are_free() {
    let Some((mount, page)) = hugetlbfs_mount() else {
        common::skip(
            common::Need::Hugetlbfs,
            "no hugetlbfs mount (as root: mount -t hugetlbfs -o mode=1777 none \
             /dev/hugepages; echo 8 > /proc/sys/vm/nr_hugepages)",
        );
        return;
    };
    let pool = format!("/sys/kernel/mm/hugepages/hugepages-{}kB", page / 1024);
    let free_before = sys_u64(&format!("{pool}/free_hugepages")).unwrap_or(0);
    // Header page, control page, data pages.
    let needed = 2 + DATA_BYTES.div_ceil(page);
    let bus = BusName::unique_in(&mount, "tlb");
    let opts = BusOptions::new(CAPACITY).huge_pages(HugePages::Hugetlbfs);
    let mut publisher = match Publisher::<Msg>::create(bus.name(), &opts) {
        Ok(p) => p,
        Err(CreateError::HugePages(e @ HugePageError::NoneFree { .. })) => {
            println!("typed error with {free_before} pages free: {e}");
            let HugePageError::NoneFree {
                needed: n, free, ..
            } = e
            else {
                unreachable!()
            };
            assert_eq!(n, needed);
            assert!(free < needed, "{free} free is enough for {needed}");
            assert!(!bus.path().exists(), "a refused bus left its file");
            bus.finish();
            return;
        }
        Err(e @ CreateError::PermissionDenied { .. }) => {
            common::skip(
                common::Need::Hugetlbfs,
                format!("cannot create files on {}: {e}", mount.display()),
            );
            return;
        }
        Err(e) => panic!("create on {}: {e}", mount.display()),
    };
    let free_after = sys_u64(&format!("{pool}/free_hugepages")).unwrap_or(0);
    println!(
        "hugetlbfs {}: free huge pages {free_before} -> {free_after} ({needed} needed)",
        mount.display()
    );
    let st = shmbus::stat::stat(bus.name()).expect("stat");
    assert_ne!(
        st.raw_header().flags & flags::HUGE_PAGES,
        0,
        "HUGE_PAGES flag"
    );
    assert_eq!(st.raw_header().page_size, page);
    assert_eq!(st.raw_header().total_len, needed * page);
    let mut subscriber =
        Subscriber::<Msg>::open(bus.name(), &OpenOptions::default().start(Start::Oldest))
            .expect("open");
    round_trip(&mut publisher, &mut subscriber, 1000);
    let sizes = smaps_kb(bus.path(), "KernelPageSize:");
    assert!(
        !sizes.is_empty() && sizes.iter().all(|&s| s == page / 1024),
        "mappings' page sizes {sizes:?} kB, expected {} kB",
        page / 1024
    );
    drop((publisher, subscriber));
    shmbus::remove(bus.name()).expect("remove");
    bus.finish();
}

#[test]
fn a_journaled_bus_can_live_in_huge_pages_too() {
    let dir = common::ShmDir::new("thp-journal");
    let bus = BusName::new("thp-journal");
    let opts = BusOptions::new(64).huge_pages(HugePages::Transparent);
    let journal = shmbus::journal::Options::new(dir.path().join("j"));
    match shmbus::journal::Publisher::<Msg>::create(bus.name(), &opts, &journal) {
        Ok(p) => {
            let st = shmbus::stat::stat(bus.name()).expect("stat");
            assert_ne!(
                st.raw_header().flags & flags::HUGE_PAGES,
                0,
                "HUGE_PAGES flag"
            );
            assert!(st.raw_header().journal.is_some(), "still journaled");
            drop(p);
        }
        Err(shmbus::journal::CreateError::Create(CreateError::HugePages(e))) => {
            common::skip(
                common::Need::TransparentHugePages,
                format!("this system gives no transparent huge pages to tmpfs: {e}"),
            );
            assert!(!bus.path().exists(), "a refused bus left its file");
            assert!(
                !dir.path().join("j").exists(),
                "a refused bus left its journal"
            );
        }
        Err(e) => panic!("create: {e}"),
    }
    bus.finish();
    dir.finish();
}
