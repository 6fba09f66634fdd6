//! MCAP recordings of shmbus buses (docs/RECORDING.md, section "MCAP").
//!
//! An [`McapRecorder`] is a [`Sink`](shmbus::record::Sink): a
//! [`Capture`](shmbus::record::Capture) records buses of every recordable
//! kind into it, one MCAP channel per bus (topic: the bus's name, its
//! kind, geometry and type in the channel's metadata), the messages it
//! missed on the `shmbus.gap` channel; chunked, indexed, each chunk
//! compressed with zstd or lz4 by choice, rotated into complete files
//! `FILE`, `FILE.1`, ... as a native recording is. A message's MCAP
//! `log_time` is its wall-clock receive time, its `publish_time` the
//! CLOCK_MONOTONIC one, its `sequence` the low 32 bits of its 64-bit
//! sequence (the `shmbus.seq` channel says the rest wherever a reader
//! could not infer it: nothing is lost).
//!
//! An [`McapRecording`] reads such files back as shmbus
//! [`Record`](shmbus::record::Record)s, and foreign files whose channels
//! carry raw bytes of a fixed size (schema `bytes[N]`); [`replay`] feeds
//! them to a [`Replayer`](shmbus::record::Replayer); [`export`] converts a
//! native recording. `shmbus record --format mcap`, `shmbus export --mcap`
//! and `shmbus replay FILE.mcap` (the tool's `mcap` feature) are built on
//! these.
//!
//! # Examples
//! ```
//! use shmbus::record::{Capture, Record};
//! use shmbus::{BusOptions, Publisher, Wait};
//! use shmbus_mcap::{McapOptions, McapRecorder, McapRecording};
//! use std::time::Duration;
//!
//! let name = format!("shmbus-mcap-doc-lib-{}", std::process::id());
//! let mut publisher = Publisher::<u64>::create(&name, &BusOptions::new(64))?;
//! let dir = std::env::temp_dir().join(&name);
//! std::fs::create_dir_all(&dir)?;
//! let mut capture = Capture::new(McapRecorder::create(&dir.join("r.mcap"), McapOptions::default())?);
//! capture.add(&name, false)?;
//! publisher.publish(&7);
//! while capture.stats().messages < 1 {
//!     capture.poll(Wait::For(Duration::from_millis(50)))?;
//! }
//! capture.flush()?;
//! capture.into_inner().finish()?;
//! let records: Vec<Record> = McapRecording::open(&dir.join("r.mcap"))?.collect::<Result<_, _>>()?;
//! assert!(matches!(&records[1], Record::Message(m) if m.payload == 7u64.to_le_bytes()));
//! shmbus::remove(&name)?;
//! std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod convert;
mod encode;
mod error;
mod map;
mod read;
mod write;

pub use convert::{ExportStats, export, replay};
pub use error::{CreateError, ExportError, OpenError, ReadError, ReplayMcapError};
pub use map::{CONTROL_ENCODING, GAP_TOPIC, PROFILE, RAW_ENCODING, RAW_SCHEMA, SEQ_TOPIC};
pub use read::{McapRecording, is_mcap};
pub use write::{Compression, CompressionError, McapOptions, McapRecorder};

#[cfg(test)]
mod tests;
