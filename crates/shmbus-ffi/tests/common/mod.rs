//! What the tests of this crate share: unique bus names that are removed
//! again, and journal directories. Both test crates compile this one file:
//! tests/examples.rs as `mod common`, the unit tests in src/api_tests by a
//! `#[path]` to it (they cannot live here: see `[lib]` in Cargo.toml).

#![allow(dead_code)]

use std::ffi::CString;
use std::sync::atomic::{AtomicU32, Ordering};

/// A bus name unique to this process and call, removed (with its side
/// files) when dropped.
pub struct Bus {
    pub name: String,
    pub c: CString,
}

impl Bus {
    pub fn new(what: &str) -> Bus {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = format!("shmbus-ffi-test-{}-{what}-{n}", std::process::id());
        Bus {
            c: CString::new(name.clone()).unwrap(),
            name,
        }
    }
    pub fn ptr(&self) -> *const std::ffi::c_char {
        self.c.as_ptr()
    }
}

impl Drop for Bus {
    fn drop(&mut self) {
        let _ = shmbus_core::remove(&self.name);
    }
}

/// A directory for journals, removed when dropped.
pub struct TempDir(pub std::path::PathBuf);

impl TempDir {
    pub fn new(what: &str) -> TempDir {
        let dir =
            std::env::temp_dir().join(format!("shmbus-ffi-test-{}-{what}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
