//! What the shmbus integration tests share: the harness of
//! `shmbus-testkit` (child processes under a watchdog, unique names under
//! /dev/shm, waiting with a deadline; see its crate docs), re-exported here,
//! and helpers for poking at a bus file from outside: reading and patching
//! its words through the file, a deterministic mix for payloads, and
//! whether a process sleeps on a futex in a bus's mapping.

#![allow(dead_code, unused_imports)]

use std::os::unix::fs::FileExt;
use std::path::Path;

pub use shmbus_testkit::*;

/// Reads a little-endian u32 from the file at `off`.
pub fn read_u32_at(path: &Path, off: u64) -> u32 {
    let f = std::fs::File::open(path).unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    let mut b = [0u8; 4];
    f.read_exact_at(&mut b, off)
        .unwrap_or_else(|e| panic!("read {}@{off}: {e}", path.display()));
    u32::from_le_bytes(b)
}

/// Reads a little-endian u64 from the file at `off`.
pub fn read_u64_at(path: &Path, off: u64) -> u64 {
    let f = std::fs::File::open(path).unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    let mut b = [0u8; 8];
    f.read_exact_at(&mut b, off)
        .unwrap_or_else(|e| panic!("read {}@{off}: {e}", path.display()));
    u64::from_le_bytes(b)
}

/// Writes `bytes` into the file at `off` (the file keeps its length).
pub fn write_at(path: &Path, off: u64, bytes: &[u8]) {
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap_or_else(|e| panic!("open {} for writing: {e}", path.display()));
    f.write_all_at(bytes, off)
        .unwrap_or_else(|e| panic!("write {}@{off}: {e}", path.display()));
}

/// Writes a little-endian u32 at `off`.
pub fn patch_u32(path: &Path, off: u64, v: u32) {
    write_at(path, off, &v.to_le_bytes());
}

/// Writes a little-endian u64 at `off`.
pub fn patch_u64(path: &Path, off: u64, v: u64) {
    write_at(path, off, &v.to_le_bytes());
}

/// SplitMix64: a cheap, well-mixed function of a 64-bit number.
pub fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A 32-bit word of a bus file, read through the file (not a mapping):
/// for watching a control field such as the futex waiter count from outside.
pub struct FileWord32 {
    file: std::fs::File,
    off: u64,
}

impl FileWord32 {
    /// The u32 at byte `off` of the file at `path`.
    pub fn new(path: &Path, off: u64) -> FileWord32 {
        let file =
            std::fs::File::open(path).unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
        FileWord32 { file, off }
    }

    /// Its current value.
    pub fn get(&self) -> u32 {
        let mut b = [0u8; 4];
        self.file
            .read_exact_at(&mut b, self.off)
            .unwrap_or_else(|e| panic!("read @{}: {e}", self.off));
        u32::from_le_bytes(b)
    }
}

/// Whether thread `tid` of this process is blocked in a futex wait
/// (`futex` or `futex_waitv`, as a select sleeps), as
/// /proc/self/task/<tid>/syscall says: for a test that must act only once
/// another thread sleeps, not sleep itself and hope.
pub fn in_futex_wait(tid: rustix::thread::Pid) -> bool {
    let path = format!("/proc/self/task/{}/syscall", tid.as_raw_nonzero());
    let syscall = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {path}: {e}"));
    let nr = syscall
        .split_whitespace()
        .next()
        .and_then(|n| n.parse::<i64>().ok());
    matches!(nr, Some(n) if n == libc::SYS_futex || n == libc::SYS_futex_waitv)
}

/// Whether a thread of process `pid` is blocked in a `futex` system call on
/// a word inside that process's mapping of `path`: read from
/// /proc/<pid>/maps and /proc/<pid>/task/*/syscall. `None` if /proc does
/// not let this process see that (another user's process, say).
pub fn asleep_on_futex_in(pid: u32, path: &Path) -> Option<bool> {
    let want = path.to_str()?;
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
    let ranges: Vec<(u64, u64)> = maps
        .lines()
        .filter(|l| l.split_whitespace().nth(5) == Some(want))
        .filter_map(|l| {
            let (a, b) = l.split_whitespace().next()?.split_once('-')?;
            Some((
                u64::from_str_radix(a, 16).ok()?,
                u64::from_str_radix(b, 16).ok()?,
            ))
        })
        .collect();
    let mut asleep = false;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
    {
        let Ok(syscall) = std::fs::read_to_string(task.path().join("syscall")) else {
            continue;
        };
        let mut f = syscall.split_whitespace();
        let nr = f.next().and_then(|n| n.parse::<i64>().ok());
        let addr = f
            .next()
            .and_then(|a| u64::from_str_radix(a.trim_start_matches("0x"), 16).ok());
        if let (Some(nr), Some(addr)) = (nr, addr) {
            if nr == libc::SYS_futex && ranges.iter().any(|&(a, b)| (a..b).contains(&addr)) {
                asleep = true;
            }
        }
    }
    Some(asleep)
}
