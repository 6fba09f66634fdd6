//! What `shmbus --version` says: the tool's version and the version of
//! each format it reads and writes, so that an operator can tell whether
//! two builds share buses (a segment of another layout is refused on
//! open: `OpenError::VersionMismatch`) without reading the code.

use std::sync::LazyLock;

/// `0.1.0 (segment layout 2, journal format 1, recording format 1)`.
pub fn line() -> &'static str {
    static LINE: LazyLock<String> = LazyLock::new(|| {
        format!(
            "{} (segment layout {}, journal format {}, recording format {})",
            env!("CARGO_PKG_VERSION"),
            shmbus::segment::VERSION,
            shmbus::journal::format::VERSION,
            shmbus::record::format::VERSION,
        )
    });
    &LINE
}
