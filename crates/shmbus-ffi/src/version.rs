//! The library's version, for C.

use std::ffi::c_char;

/// The library's version, "MAJOR.MINOR.PATCH" (a static string).
#[unsafe(no_mangle)]
pub extern "C" fn shmbus_version() -> *const c_char {
    const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");
    VERSION.as_ptr().cast()
}
