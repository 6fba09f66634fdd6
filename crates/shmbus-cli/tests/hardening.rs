//! The `shmbus` binary against a hostile or unlucky user: corrupt stamps,
//! lock-free mappers, descriptor exhaustion, symlinks, odd names. Each run
//! is under a watchdog; each test's files live in a private directory
//! under /dev/shm, removed on drop.

mod common;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::time::Duration;

use common::{Finished, ShmDir, run, shmbus};

/// Runs `shmbus ARGS` in `cwd` with `limit_fds` descriptors at most (if
/// given), under the watchdog.
fn run_with(args: &[&str], cwd: Option<&Path>, limit_fds: Option<u64>) -> Finished {
    let mut cmd = shmbus(args);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    if let Some(n) = limit_fds {
        // SAFETY: runs in the forked child before exec; setrlimit is
        // async-signal-safe and changes only that child.
        unsafe {
            cmd.pre_exec(move || {
                let lim = libc::rlimit {
                    rlim_cur: n,
                    rlim_max: n,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    run(cmd)
}

fn run_args(args: &[&str]) -> Finished {
    run(shmbus(args))
}

fn ok(args: &[&str]) -> Finished {
    let o = run_args(args);
    assert_eq!(o.code(), Some(0), "{args:?}: {o:?}");
    o
}

/// A bus in `dir` with `n` published messages `0..n` and no live publisher.
fn bus_with(dir: &ShmDir, name: &str, n: u64, capacity: u64) -> String {
    let bus = dir.bus(name);
    ok(&[
        "create",
        &bus,
        "--msg-size",
        "8",
        "--capacity",
        &capacity.to_string(),
    ]);
    if n > 0 {
        let lines: String = (0..n).map(|i| format!("{i}\n")).collect();
        let input = dir.file(&format!("{name}.in"));
        std::fs::write(&input, lines).unwrap();
        // stdin is the file, as `pub BUS < FILE` has it.
        let mut cmd = shmbus(&["pub", &bus]);
        cmd.stdin(std::fs::File::open(&input).unwrap());
        run(cmd).assert_success();
        std::fs::remove_file(input).unwrap();
    }
    bus
}

fn patch_u64(path: &str, off: u64, v: u64) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(&v.to_le_bytes(), off).unwrap();
}

// ---------------------------------------------------------------------------

#[test]
fn sub_from_oldest_over_a_corrupt_stamp_reports_a_true_lag_and_ends_at_its_timeout() {
    let dir = ShmDir::new("stamp");
    let bus = bus_with(&dir, "bus", 21, 8);
    let st = shmbus::stat::stat(&bus).unwrap();
    // The oldest in the ring is 13, in slot 5; a stamp naming 20 (slot 4)
    // once made the reader report `skipped 0` forever.
    let off = st.raw_header().data_offset + 5 * st.raw_header().slot_size as u64;
    patch_u64(&bus, off, 2 * 20 + 2);
    let o = run_args(&["sub", &bus, "--from", "oldest", "--timeout", "1"]);
    assert_eq!(o.code(), Some(0), "{o:?}");
    assert!(o.took < Duration::from_secs(5), "took {:?}", o.took);
    let lags: Vec<u64> = o
        .stderr
        .lines()
        .map(|l| {
            l.strip_prefix("lagged: skipped ")
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("unexpected stderr line {l:?}"))
        })
        .collect();
    assert_eq!(lags, [1], "{o:?}");
    let stdout = o.stdout();
    let got: Vec<&str> = stdout.lines().collect();
    assert_eq!(got, ["14", "15", "16", "17", "18", "19", "20"], "{o:?}");
}

#[test]
fn clean_spares_a_bus_mapped_by_a_lockless_reader_however_the_directory_is_spelled() {
    let dir = ShmDir::new("spelled");
    let bus = bus_with(&dir, "bus", 1, 8);
    let file = std::fs::File::open(&bus).unwrap();
    let len = file.metadata().unwrap().len() as usize;
    // SAFETY: a fresh read-only shared mapping, unmapped below; never read.
    let map = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            std::os::fd::AsRawFd::as_raw_fd(&file),
            0,
        )
    };
    assert_ne!(map, libc::MAP_FAILED);
    let leaf = dir.path().file_name().unwrap().to_str().unwrap().to_owned();
    let doubled = dir.dir().replacen("/dev/shm", "/dev//shm", 1);
    let parent = format!("../{leaf}");
    for (spelling, cwd) in [
        (dir.dir(), None),
        (doubled.as_str(), None),
        (".", Some(dir.path())),
        (parent.as_str(), Some(dir.path())),
    ] {
        let o = run_with(&["clean", "--dir", spelling], cwd, None);
        assert_eq!(o.code(), Some(0), "{spelling}: {o:?}");
        assert!(
            Path::new(&bus).exists(),
            "clean --dir {spelling} removed a bus a live process maps: {o:?}"
        );
    }
    // SAFETY: our own mapping, not used again.
    unsafe { libc::munmap(map, len) };
    drop(file);
    let o = run_with(&["clean", "--dir", "."], Some(dir.path()), None);
    assert!(
        o.code() == Some(0) && o.stdout().contains("removed 1 segment"),
        "{o:?}"
    );
    assert!(!Path::new(&bus).exists(), "{o:?}");
}

#[test]
fn ls_and_clean_out_of_descriptors_say_so_instead_of_finding_nothing() {
    let dir = ShmDir::new("emfile");
    bus_with(&dir, "bus", 0, 8);
    // Descriptors 0-2, and one more: the directory opens, the bus cannot.
    for args in [
        vec!["ls", "--dir", dir.dir()],
        vec!["ls", "--dir", dir.dir(), "--json"],
        vec!["clean", "--dir", dir.dir(), "--dry-run"],
        vec!["clean", "--dir", dir.dir()],
    ] {
        let o = run_with(&args, None, Some(4));
        assert_eq!(o.code(), Some(1), "{args:?}: {o:?}");
        assert!(o.stderr.contains("Too many open files"), "{args:?}: {o:?}");
        assert!(
            !o.stdout().contains("no shmbus segments"),
            "{args:?}: {o:?}"
        );
    }
    assert!(Path::new(&dir.bus("bus")).exists());
}

#[test]
fn rm_of_a_symlink_says_it_is_a_symlink_and_removes_nothing() {
    let dir = ShmDir::new("rm-link");
    let bus = bus_with(&dir, "bus", 0, 8);
    let link = dir.bus("link");
    std::os::unix::fs::symlink(&bus, &link).unwrap();
    let o = run_args(&["rm", &link]);
    assert_eq!(o.code(), Some(1), "{o:?}");
    assert!(o.stderr.contains("is a symbolic link"), "{o:?}");
    assert!(!o.stderr.contains("Too many levels"), "{o:?}");
    assert!(Path::new(&link).symlink_metadata().is_ok() && Path::new(&bus).exists());
}

#[test]
fn errors_name_the_path_they_are_about() {
    let dir = ShmDir::new("paths");
    let missing = dir.bus("no-such-dir/bus");
    let o = run_args(&["create", &missing, "--msg-size", "8", "--capacity", "8"]);
    assert_eq!(o.code(), Some(1), "{o:?}");
    assert!(
        o.stderr.contains(&missing) && o.stderr.contains("no such directory"),
        "{o:?}"
    );
    let junk = dir.bus("junk");
    std::fs::write(&junk, [0xabu8; 8192]).unwrap();
    let o = run_args(&["sub", &junk, "--timeout", "0.1"]);
    assert_eq!(o.code(), Some(1), "{o:?}");
    assert!(
        o.stderr.contains(&junk) && o.stderr.contains("not a shmbus segment"),
        "{o:?}"
    );
    let bus = bus_with(&dir, "short", 0, 8);
    let total = shmbus::stat::stat(&bus).unwrap().raw_header().total_len;
    std::fs::OpenOptions::new()
        .write(true)
        .open(&bus)
        .unwrap()
        .set_len(total - 8)
        .unwrap();
    let o = run_args(&["stat", &bus]);
    assert_eq!(o.code(), Some(1), "{o:?}");
    let said = format!("the file is {} bytes, expected at least {total}", total - 8);
    assert!(o.stderr.contains(&bus) && o.stderr.contains(&said), "{o:?}");
}

#[test]
fn a_name_with_a_newline_keeps_stat_and_ls_one_line_per_field_and_row() {
    let dir = ShmDir::new("newline");
    let bus = bus_with(&dir, "two\nlines", 0, 8);
    let o = ok(&["ls", "--dir", dir.dir()]);
    assert_eq!(o.stdout().lines().count(), 2, "header and one row: {o:?}");
    assert!(o.stdout().contains("two\\nlines"), "{o:?}");
    let o = ok(&["stat", &bus]);
    assert!(
        o.stdout().lines().all(|l| !l.ends_with("two")),
        "a line broken by the name: {o:?}"
    );
    assert!(o.stdout().contains("two\\nlines"), "{o:?}");
    let o = ok(&["stat", &bus, "--json"]);
    let v: serde_json::Value = serde_json::from_str(&o.stdout()).unwrap();
    assert_eq!(v["name"], "two\nlines", "JSON carries the name exactly");
}
