//! A test that cannot check what it names on this machine (no root, no
//! tmux, no huge pages) says so through [`skip`], the one way a test skips.
//!
//! A skipped test passes, and `cargo test` hides what a passing test
//! printed: left at that, a machine without tmux would pass every terminal
//! test having checked nothing. So a skip writes its line past the test
//! harness's capture, and under strict skips (CI) it fails the test unless
//! what is missing is on the allow-list:
//!
//! - `SHMBUS_STRICT_SKIPS=1` makes skips fail, `0` lets them pass; unset
//!   or empty, skips fail where `CI` is `true` or `1` (as hosted CI sets
//!   it), and pass elsewhere. `.ci/run` sets it to 1.
//! - `SHMBUS_ALLOW_SKIPS` lists, comma-separated, the [`Need`]s that a
//!   strict run may still skip for (`.ci/run` names each it allows and
//!   why).
//!
//! Either variable set to anything else fails the test naming it.

use std::fmt::Display;
use std::io::Write;

/// The variable that makes skips fail.
pub const STRICT_VAR: &str = "SHMBUS_STRICT_SKIPS";
/// The variable listing what a strict run may still skip for.
pub const ALLOW_VAR: &str = "SHMBUS_ALLOW_SKIPS";

/// What a test needs that a machine may lack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Need {
    /// Root: to run a child as another user, give a file another group,
    /// make a device node.
    Root,
    /// The `tmux` program (`shmbus top` in a real terminal).
    Tmux,
    /// New pid and mount namespaces (`unshare`: root, and a system that
    /// allows them).
    Namespaces,
    /// Transparent huge pages for tmpfs (`shmem_enabled` not `never`, and
    /// `MADV_COLLAPSE`).
    TransparentHugePages,
    /// A hugetlbfs mount this process may create files on.
    Hugetlbfs,
    /// Cargo's target directory on a disk file system, not tmpfs.
    DiskTargetDir,
    /// At least two CPUs this process may run on.
    TwoCpus,
}

impl Need {
    /// Every need, in the order `SHMBUS_ALLOW_SKIPS`'s error lists them.
    pub const ALL: [Need; 7] = [
        Need::Root,
        Need::Tmux,
        Need::Namespaces,
        Need::TransparentHugePages,
        Need::Hugetlbfs,
        Need::DiskTargetDir,
        Need::TwoCpus,
    ];

    /// Its name in `SHMBUS_ALLOW_SKIPS` and in the skip's line.
    pub fn name(self) -> &'static str {
        match self {
            Need::Root => "root",
            Need::Tmux => "tmux",
            Need::Namespaces => "namespaces",
            Need::TransparentHugePages => "transparent-huge-pages",
            Need::Hugetlbfs => "hugetlbfs",
            Need::DiskTargetDir => "disk-target-dir",
            Need::TwoCpus => "two-cpus",
        }
    }
}

/// Says that the calling test skips (all or part of what it checks)
/// because this machine lacks `need`, `why` saying what was found; the
/// caller then returns, or goes on with what it can check.
///
/// The line, `SKIPPED (NEED): WHY`, goes to the process's standard error
/// directly, so `cargo test` shows it even for a test that passes.
///
/// # Panics
///
/// Under strict skips (see the module's page) unless `need` is in
/// `SHMBUS_ALLOW_SKIPS`: the message names the need, why, and the two
/// variables. Also when either variable holds something it cannot mean.
pub fn skip(need: Need, why: impl Display) {
    let line = format!("SKIPPED ({}): {why}", need.name());
    if strict_skips() && !allowed().contains(&need) {
        panic!(
            "{line}; this run has strict skips ({STRICT_VAR}=1, or CI=true): give the \
             machine what the test needs, or list {:?} in {ALLOW_VAR} if it may go without",
            need.name()
        );
    }
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// Whether skips fail in this run.
pub fn strict_skips() -> bool {
    match std::env::var(STRICT_VAR) {
        Ok(v) if v.trim().is_empty() => ci(),
        Ok(v) => parse_strict(&v).unwrap_or_else(|| {
            panic!("{STRICT_VAR}={v:?}: expected 1 (skips fail) or 0 (skips pass)")
        }),
        Err(std::env::VarError::NotPresent) => ci(),
        Err(std::env::VarError::NotUnicode(v)) => {
            panic!("{STRICT_VAR}={v:?}: expected 1 (skips fail) or 0 (skips pass)")
        }
    }
}

fn parse_strict(v: &str) -> Option<bool> {
    match v.trim() {
        "1" => Some(true),
        "0" => Some(false),
        _ => None,
    }
}

/// Whether `CI` says this is a CI run (`true` or `1`, any case).
fn ci() -> bool {
    std::env::var("CI")
        .is_ok_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "true" | "1"))
}

/// The needs `SHMBUS_ALLOW_SKIPS` names.
fn allowed() -> Vec<Need> {
    let v = std::env::var(ALLOW_VAR).unwrap_or_default();
    parse_allowed(&v).unwrap_or_else(|bad| {
        let all: Vec<&str> = Need::ALL.iter().map(|n| n.name()).collect();
        panic!(
            "{ALLOW_VAR}={v:?}: {bad:?} is not a need; expected a comma-separated list of {}",
            all.join(", ")
        )
    })
}

/// `v`'s needs, or the first name that is none.
fn parse_allowed(v: &str) -> Result<Vec<Need>, String> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            Need::ALL
                .into_iter()
                .find(|n| n.name() == s)
                .ok_or_else(|| s.to_owned())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_one_and_zero_say_whether_skips_are_strict() {
        assert_eq!(parse_strict("1"), Some(true));
        assert_eq!(parse_strict(" 0 "), Some(false));
        for bad in ["yes", "true", "2", "on"] {
            assert_eq!(parse_strict(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_allow_list_is_names_of_needs_and_a_wrong_one_is_named() {
        assert_eq!(parse_allowed(""), Ok(vec![]));
        assert_eq!(
            parse_allowed("tmux, transparent-huge-pages,"),
            Ok(vec![Need::Tmux, Need::TransparentHugePages])
        );
        assert_eq!(parse_allowed("root,hugepages"), Err("hugepages".into()));
        for n in Need::ALL {
            assert_eq!(parse_allowed(n.name()), Ok(vec![n]));
        }
    }
}
