//! Which processes map which files, read from /proc/*/maps: how `list`
//! and `clean` tell a segment some process still maps.

use std::collections::HashMap;

use crate::sys::dir::FileId;

/// Which processes map which files, from one pass over /proc/*/maps.
pub(super) struct Mappers(HashMap<(u32, u32, u64), Vec<u32>>);

impl Mappers {
    pub(super) fn scan() -> Mappers {
        let mut map: HashMap<(u32, u32, u64), Vec<u32>> = HashMap::new();
        let Ok(procs) = std::fs::read_dir("/proc") else {
            return Mappers(map);
        };
        for p in procs.flatten() {
            let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            // A process that exits meanwhile, or is not ours to read, maps
            // nothing we can know of.
            let Ok(maps) = std::fs::read_to_string(p.path().join("maps")) else {
                continue;
            };
            for key in maps.lines().filter_map(maps_file) {
                let pids = map.entry(key).or_default();
                if pids.last() != Some(&pid) {
                    pids.push(pid);
                }
            }
        }
        Mappers(map)
    }

    pub(super) fn of(&self, id: FileId) -> Vec<u32> {
        let (major, minor) = id.major_minor();
        self.0
            .get(&(major, minor, id.ino))
            .cloned()
            .unwrap_or_default()
    }
}

/// The (major, minor, inode) of a /proc/PID/maps line that maps a file:
/// `address perms offset MAJOR:MINOR INODE path` (hex device, decimal inode,
/// 0 for anonymous memory). Compared by identity, not by the path text,
/// which differs with every spelling of the directory.
fn maps_file(line: &str) -> Option<(u32, u32, u64)> {
    let mut f = line.split_ascii_whitespace();
    let dev = f.nth(3)?;
    let ino: u64 = f.next()?.parse().ok()?;
    let (major, minor) = dev.split_once(':')?;
    let major = u32::from_str_radix(major, 16).ok()?;
    let minor = u32::from_str_radix(minor, 16).ok()?;
    (ino != 0).then_some((major, minor, ino))
}
