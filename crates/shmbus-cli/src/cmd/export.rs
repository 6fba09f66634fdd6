//! `shmbus export FILE --mcap OUT`: a native recording (every part)
//! converted into an MCAP file (feature `mcap`; docs/RECORDING.md, MCAP).

use std::path::PathBuf;

use crate::cmd::mcap::Compression;
use crate::error::CliError;

/// Arguments of `shmbus export`.
#[derive(clap::Args, Debug)]
pub struct ExportArgs {
    /// The native recording to convert (its first part; the rest follow).
    pub file: PathBuf,
    /// The MCAP file to write; it must not exist.
    #[arg(long, value_name = "OUT", required = true)]
    pub mcap: PathBuf,
    /// How the MCAP file's chunks are compressed.
    #[arg(long, value_enum, value_name = "HOW", default_value = "none")]
    pub compression: Compression,
}

/// Converts the recording (feature `mcap`).
///
/// # Errors
/// The recording's or the MCAP file's failure as one line; without the
/// feature, always: how to build it.
pub fn run(args: &ExportArgs) -> Result<(), CliError> {
    #[cfg(feature = "mcap")]
    {
        use shmbus::record::{FileAccess, Rotation};
        use shmbus_mcap::ExportError;
        // The MCAP file lets read whom the recording lets read.
        let mode = std::fs::metadata(&args.file)
            .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o644)
            .unwrap_or(0o600);
        let options = crate::cmd::mcap::options(
            args.compression,
            Rotation::default(),
            FileAccess::default().mode(mode | 0o600),
        );
        let stats = shmbus_mcap::export(&args.file, &args.mcap, options).map_err(|e| match e {
            ExportError::Create(e) => crate::cmd::mcap::create_failed(e),
            e @ (ExportError::Open { .. } | ExportError::Read { .. }) => {
                CliError::usage(e.to_string())
            }
            e => CliError::runtime(e.to_string()),
        })?;
        eprintln!(
            "exported {} buses, {} messages and {} gaps into {}",
            stats.buses,
            stats.messages,
            stats.gaps,
            args.mcap.display()
        );
        Ok(())
    }
    #[cfg(not(feature = "mcap"))]
    {
        let _ = args;
        Err(crate::cmd::mcap::not_built("export --mcap"))
    }
}
