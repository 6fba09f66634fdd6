//! MCAP in the tool: `record --format mcap`, `export --mcap` and replaying
//! an MCAP file (crate shmbus-mcap, docs/RECORDING.md section "MCAP").
//!
//! MCAP is the cargo feature `mcap` (it brings the mcap crate and its zstd
//! and lz4 codecs): a `shmbus` built without it parses the same arguments,
//! knows an MCAP file by its magic, and says in one line how to get it.

use std::io::Read;
use std::path::Path;

use crate::error::CliError;

/// How an MCAP file's chunks are compressed (`--compression`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Compression {
    /// As they are.
    #[default]
    None,
    /// Zstandard.
    Zstd,
    /// LZ4.
    Lz4,
}

/// The first bytes of every MCAP file.
const MAGIC: &[u8] = b"\x89MCAP0\r\n";

/// Whether `path` starts with the MCAP magic (a file that cannot be read
/// is left to the native reader to report).
pub fn is_mcap(path: &Path) -> bool {
    let mut head = Vec::with_capacity(MAGIC.len());
    std::fs::File::open(path)
        .and_then(|f| f.take(MAGIC.len() as u64).read_to_end(&mut head))
        .is_ok()
        && head == MAGIC
}

/// The error of an MCAP action in a build without the feature.
#[cfg_attr(feature = "mcap", allow(dead_code))]
pub fn not_built(what: &str) -> CliError {
    CliError::runtime(format!(
        "{what}: this shmbus was built without MCAP support; build it with the `mcap` feature (cargo install --path crates/shmbus-cli --features mcap)"
    ))
}

/// The MCAP writer's options.
#[cfg(feature = "mcap")]
pub fn options(
    compression: Compression,
    rotation: shmbus::record::Rotation,
    access: shmbus::record::FileAccess,
) -> shmbus_mcap::McapOptions {
    let compression = match compression {
        Compression::None => shmbus_mcap::Compression::None,
        Compression::Zstd => shmbus_mcap::Compression::Zstd,
        Compression::Lz4 => shmbus_mcap::Compression::Lz4,
    };
    shmbus_mcap::McapOptions::default()
        .compression(compression)
        .rotation(rotation)
        .access(access)
}

/// A write error of an MCAP file, as one line naming it.
#[cfg(feature = "mcap")]
pub fn create_failed(e: shmbus_mcap::CreateError) -> CliError {
    match &e {
        shmbus_mcap::CreateError::File { source, .. }
            if source.kind() == std::io::ErrorKind::AlreadyExists =>
        {
            CliError::usage(e.to_string())
        }
        _ => CliError::runtime(e.to_string()),
    }
}
