//! Huge pages for a segment.
//!
//! [`HugePages`] (`BusOptions::huge_pages`, `stream::Options::huge_pages`) backs a bus with 2 MiB pages
//! (the system's huge page size), so its slots cost one TLB entry per 2 MiB
//! instead of per 4 KiB. Either way the segment is laid out with the huge
//! page size as its page size (header `page_size`, so the header page, the
//! control page and the data pages each start on a huge page boundary; the
//! header and control pages cost 2 MiB each, which is the price), and the
//! header carries `flags::HUGE_PAGES`. Every mapping of such a segment
//! (creator and openers, who read the page size before mapping) is placed at
//! an address aligned to that page size, without which the kernel could not
//! map a huge page with one page-table entry.
//! - [`HugePages::Transparent`]: the file stays on tmpfs (/dev/shm). After
//!   the pages are reserved and initialised, the creator advises
//!   `MADV_HUGEPAGE` on the data pages and then `MADV_COLLAPSE` (Linux 6.1),
//!   which turns them into huge pages in the page cache *now*, whatever the
//!   tmpfs mount's `huge=` option says. `MADV_HUGEPAGE` alone is not enough
//!   on a default /dev/shm: its mount has `huge=never`, which wins over the
//!   advice (measured: 0 kB `ShmemHugePages` after faulting an advised
//!   range; 6 MiB after the collapse). Only
//!   /sys/kernel/mm/transparent_hugepage/shmem_enabled = `deny` forbids it;
//!   that, a kernel without transparent huge pages, and a failed collapse
//!   (no free 2 MiB block) are each a [`HugePageError`].
//!   Openers need do nothing: the huge folios are in the page cache and
//!   their aligned mappings map them whole (`ShmemPmdMapped` in smaps).
//! - [`HugePages::Hugetlbfs`]: the bus is named by a path on a hugetlbfs
//!   mount (`/dev/hugepages/ticks`), whose pages are huge by construction and
//!   come from the pool reserved in /proc/sys/vm/nr_hugepages. The path's
//!   file system is checked before anything is created; `fallocate` then
//!   takes all the pages at once, so too few free pages is an error at
//!   create time, never a `SIGBUS` later.

/// Where a bus's huge pages come from (see the module docs), for
/// [`BusOptions::huge_pages`](crate::BusOptions::huge_pages) and
/// [`stream::Options::huge_pages`](crate::stream::Options::huge_pages). A system
/// that cannot give them fails the create with a [`HugePageError`].
///
/// # Examples
/// ```
/// use shmbus::{BusOptions, mem::HugePages, stream};
///
/// // A bare name lives in /dev/shm (tmpfs): transparent huge pages.
/// let bus = BusOptions::new(4096).huge_pages(HugePages::Transparent);
/// // A path on a hugetlbfs mount: pages from the pool the system reserved.
/// let stream = stream::Options::new(1 << 21).huge_pages(HugePages::Hugetlbfs);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HugePages {
    /// Transparent huge pages on a tmpfs file (a bare name, in /dev/shm).
    Transparent,
    /// A file on a hugetlbfs mount (name the bus by a path on it).
    Hugetlbfs,
}

use std::io;
use std::path::PathBuf;

use thiserror::Error;

#[cfg(not(loom))]
pub(crate) use imp::*;

/// Why a bus cannot have the huge pages [`HugePages`] asked
/// for. Each names the setting found and the one needed.
///
/// # Examples
/// ```
/// use shmbus::{BusOptions, CreateError, Publisher, error::HugePageError, mem::HugePages};
/// # let name = format!("/dev/shm/shmbus-doc-hugepageerror-{}", std::process::id());
/// let opts = BusOptions::new(64).huge_pages(HugePages::Hugetlbfs);
/// // /dev/shm is not a hugetlbfs mount: refused before any file is made.
/// match Publisher::<u64>::create(&name, &opts) {
///     Err(CreateError::HugePages(HugePageError::NotHugetlbfs { found, .. })) => {
///         assert_ne!(found, "hugetlbfs");
///     }
///     Err(other) => panic!("unexpected error: {other}"),
///     Ok(_) => panic!("/dev/shm is not hugetlbfs"),
/// }
/// assert!(!std::path::Path::new(&name).exists());
/// ```
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum HugePageError {
    /// The kernel has no transparent huge pages (no sysfs directory).
    #[error(
        "transparent huge pages: this kernel has none ({path}: {source}); expected a kernel built with CONFIG_TRANSPARENT_HUGEPAGE"
    )]
    NoTransparent {
        /// The sysfs file that could not be read.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// `shmem_enabled` forbids huge pages for every tmpfs file.
    #[error(
        "transparent huge pages for shared memory are off: /sys/kernel/mm/transparent_hugepage/shmem_enabled is [{found}], expected anything but [deny] (echo advise > that file, as root)"
    )]
    ShmemDenied {
        /// The selected setting.
        found: String,
    },
    /// Transparent huge pages back tmpfs files only (/dev/shm).
    #[error(
        "{path}: on a {found} file system; transparent huge pages need tmpfs (a bare name, which lives in /dev/shm)"
    )]
    NotTmpfs {
        /// The bus's path.
        path: PathBuf,
        /// The file system found (its name, or its magic number).
        found: String,
    },
    /// `--huge-pages hugetlbfs` with a path that is not on hugetlbfs.
    #[error(
        "{path}: on a {found} file system, expected hugetlbfs: name the bus by a path under {mounts}"
    )]
    NotHugetlbfs {
        /// The bus's path.
        path: PathBuf,
        /// The file system found.
        found: String,
        /// The hugetlbfs mounts this process sees, or how to make one.
        mounts: String,
    },
    /// hugetlbfs had too few free huge pages for the segment.
    #[error(
        "{path}: needs {needed} huge pages of {page_kib} KiB, {free} free of {total} reserved (raise /proc/sys/vm/nr_hugepages, as root)"
    )]
    NoneFree {
        /// The bus's path.
        path: PathBuf,
        /// Huge pages the segment needs.
        needed: u64,
        /// Huge page size in KiB.
        page_kib: u64,
        /// `free_hugepages` of that size when it failed.
        free: u64,
        /// `nr_hugepages` of that size.
        total: u64,
    },
    /// `madvise(MADV_HUGEPAGE | MADV_COLLAPSE)` refused.
    #[error("transparent huge pages: {what} failed: {source}; {hint}")]
    Collapse {
        /// Which advice.
        what: &'static str,
        /// The kernel's answer.
        source: io::Error,
        /// What it means.
        hint: &'static str,
    },
    /// A kind of segment that cannot be laid out in huge pages.
    #[error("huge pages are not supported for {what}")]
    Unsupported {
        /// The kind of segment.
        what: &'static str,
    },
}

#[cfg(not(loom))]
mod imp {
    use super::HugePageError;
    use super::HugePages;
    use std::path::{Path, PathBuf};

    const THP: &str = "/sys/kernel/mm/transparent_hugepage";
    const TMPFS_MAGIC: u64 = 0x0102_1994;
    const HUGETLBFS_MAGIC: u64 = 0x9584_58f6;

    fn read_sys(path: &str) -> Result<String, HugePageError> {
        std::fs::read_to_string(path)
            .map(|s| s.trim().to_owned())
            .map_err(|source| HugePageError::NoTransparent {
                path: PathBuf::from(path),
                source,
            })
    }

    /// The selected word of a sysfs choice such as `always [never] deny`.
    pub(crate) fn selected(text: &str) -> &str {
        text.split_once('[')
            .and_then(|(_, rest)| rest.split_once(']'))
            .map_or(text, |(word, _)| word)
    }

    /// Whether `shmem_enabled` lets a collapse make tmpfs huge pages: every
    /// setting but `deny` does (`never` only stops the fault path).
    pub(crate) fn shmem_verdict(shmem_enabled: &str) -> Result<(), HugePageError> {
        match selected(shmem_enabled) {
            "deny" => Err(HugePageError::ShmemDenied {
                found: "deny".into(),
            }),
            _ => Ok(()),
        }
    }

    fn fs_name(magic: u64) -> String {
        match magic {
            TMPFS_MAGIC => "tmpfs".into(),
            HUGETLBFS_MAGIC => "hugetlbfs".into(),
            0xEF53 => "ext2/3/4".into(),
            0x5846_5342 => "xfs".into(),
            0x9123_683E => "btrfs".into(),
            0x794C_7630 => "overlayfs".into(),
            m => format!("{m:#x}"),
        }
    }

    /// The hugetlbfs mount points this process sees, as an error can name them.
    fn hugetlbfs_mounts() -> String {
        let mounts: Vec<String> = std::fs::read_to_string("/proc/self/mounts")
            .unwrap_or_default()
            .lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                let (_, dir, fs) = (f.next()?, f.next()?, f.next()?);
                (fs == "hugetlbfs").then(|| dir.to_owned())
            })
            .collect();
        if mounts.is_empty() {
            "a hugetlbfs mount (none is mounted: mount -t hugetlbfs none /dev/hugepages, as root)"
                .into()
        } else {
            mounts.join(" or ")
        }
    }

    impl HugePages {
        /// The huge page size a new segment at `path` gets, after checking
        /// that this system can give it; nothing is created yet.
        /// `fs` is `statfs` of the directory the segment will be made in.
        pub(crate) fn page_size(
            self,
            path: &Path,
            fs: &rustix::fs::StatFs,
        ) -> Result<u64, HugePageError> {
            let magic = fs.f_type as u64 & 0xffff_ffff;
            match self {
                HugePages::Transparent => {
                    if magic != TMPFS_MAGIC {
                        return Err(HugePageError::NotTmpfs {
                            path: path.to_owned(),
                            found: fs_name(magic),
                        });
                    }
                    shmem_verdict(&read_sys(&format!("{THP}/shmem_enabled"))?)?;
                    let size = read_sys(&format!("{THP}/hpage_pmd_size"))?;
                    size.parse().map_err(|_| HugePageError::NoTransparent {
                        path: PathBuf::from(format!("{THP}/hpage_pmd_size")),
                        source: std::io::Error::other(format!("{size:?} is not a size")),
                    })
                }
                HugePages::Hugetlbfs => {
                    if magic != HUGETLBFS_MAGIC {
                        return Err(HugePageError::NotHugetlbfs {
                            path: path.to_owned(),
                            found: fs_name(magic),
                            mounts: hugetlbfs_mounts(),
                        });
                    }
                    Ok(fs.f_bsize as u64)
                }
            }
        }
    }

    /// hugetlbfs had too few pages for `len` bytes: the pool's figures.
    pub(crate) fn none_free(path: &Path, len: u64, page: u64) -> HugePageError {
        let kib = page / 1024;
        let count = |file: &str| {
            std::fs::read_to_string(format!("/sys/kernel/mm/hugepages/hugepages-{kib}kB/{file}"))
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(0)
        };
        HugePageError::NoneFree {
            path: path.to_owned(),
            needed: len.div_ceil(page),
            page_kib: kib,
            free: count("free_hugepages"),
            total: count("nr_hugepages"),
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::imp::{selected, shmem_verdict};

    #[test]
    fn shmem_enabled_deny_alone_refuses_a_collapse() {
        assert_eq!(
            selected("always within_size advise [never] deny force"),
            "never"
        );
        for ok in [
            "[always]",
            "advise [within_size]",
            "[advise]",
            "[never] deny",
            "[force]",
        ] {
            assert!(shmem_verdict(ok).is_ok(), "{ok}");
        }
        let err = shmem_verdict("always never [deny] force").unwrap_err();
        assert!(
            err.to_string()
                .contains("is [deny], expected anything but [deny]"),
            "{err}"
        );
    }
}
