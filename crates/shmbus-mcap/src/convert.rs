//! [`replay`]: an MCAP file published back by a [`Replayer`]; [`export`]:
//! a native recording converted into MCAP.

use std::path::Path;

use shmbus::record::{BusSpec, Record, RecordingFiles, Replayer, Sink};

use crate::error::{ExportError, ReadError, ReplayMcapError};
use crate::read::McapRecording;
use crate::write::{McapOptions, McapRecorder};

/// One pass of `replayer` over the MCAP file at `path` (and its parts):
/// its buses declared as they come, each message and gap replayed with the
/// replayer's pace, window, targets and stats
/// ([`Replayer::run_records`]). Returns how many messages and gaps it
/// published. A file cut short is replayed up to its last whole chunk.
///
/// # Examples
/// ```
/// use shmbus::record::{BusSpec, RecordedKind, Replayer, Sink, Speed};
/// use shmbus::{OpenOptions, Received, Start, Subscriber, Wait};
/// use shmbus_mcap::{McapOptions, McapRecorder};
///
/// let dir = std::env::temp_dir().join(format!("shmbus-mcap-doc-replay-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("r.mcap");
/// let mut rec = McapRecorder::create(&path, McapOptions::default())?;
/// let bus = rec.add_bus(&BusSpec::new("ticks", RecordedKind::Bus, 8).slots(64))?;
/// rec.message(bus, 0, 10, 20, &7u64.to_le_bytes())?;
/// rec.finish()?;
/// let target = format!("shmbus-mcap-doc-replay-{}", std::process::id());
/// let mut replayer = Replayer::new(Speed::Max).to(&target);
/// assert_eq!(shmbus_mcap::replay(&mut replayer, &path)?, 1);
/// let mut sub = Subscriber::<[u8]>::open(&target, &OpenOptions::default().start(Start::Oldest))?;
/// assert!(matches!(sub.recv(Wait::Never), Some(Received::Message(m)) if m == 7u64.to_le_bytes()));
/// drop(replayer);
/// shmbus::remove(&target)?;
/// std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`ReplayMcapError::Open`] if the file cannot be opened or is not MCAP,
/// [`ReplayMcapError::Read`] if a record is damaged or a channel is not
/// one a replay takes (what came before was replayed),
/// [`ReplayMcapError::Replay`] as [`Replayer::run_records`].
pub fn replay(replayer: &mut Replayer, path: &Path) -> Result<u64, ReplayMcapError> {
    let mut reading = McapRecording::open(path)?;
    let mut failed: Option<ReadError> = None;
    let records = std::iter::from_fn(|| match reading.next()? {
        Ok(r) => Some(r),
        Err(e) => {
            failed = Some(e);
            None
        }
    });
    let replayed = replayer.run_records(&[], records);
    if let Some(e) = failed {
        return Err(e.into());
    }
    Ok(replayed?)
}

/// What [`export`] wrote.
///
/// # Examples
/// ```
/// assert_eq!(shmbus_mcap::ExportStats::default().messages, 0);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExportStats {
    /// Buses.
    pub buses: u64,
    /// Messages.
    pub messages: u64,
    /// Gaps.
    pub gaps: u64,
    /// MCAP files written (more than 1 where `options` rotate).
    pub parts: u32,
}

/// Converts the native recording at `native` (every part) into the MCAP
/// file `out` (it must not exist): every bus, message (sequence, both
/// times, bytes) and gap, as a capture into an [`McapRecorder`] would
/// have written them.
///
/// # Examples
/// ```
/// use shmbus::record::{BusSpec, FileRecorder, RecordedKind, Rotation};
/// use shmbus_mcap::McapOptions;
///
/// let dir = std::env::temp_dir().join(format!("shmbus-mcap-doc-export-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let mut rec = FileRecorder::create(&dir.join("r.rec"), Rotation::default())?;
/// let bus = rec.add_bus(&BusSpec::new("ticks", RecordedKind::Bus, 8))?;
/// rec.message(bus, 0, 10, 20, &7u64.to_le_bytes())?;
/// rec.gap(bus, 1, 4)?;
/// drop(rec);
/// let stats = shmbus_mcap::export(&dir.join("r.rec"), &dir.join("r.mcap"), McapOptions::default())?;
/// assert_eq!((stats.buses, stats.messages, stats.gaps), (1, 1, 1));
/// std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`ExportError::Open`] and [`ExportError::Read`] for the native
/// recording, [`ExportError::Create`], [`ExportError::AddBus`] and
/// [`ExportError::Write`] for the MCAP file.
pub fn export(native: &Path, out: &Path, options: McapOptions) -> Result<ExportStats, ExportError> {
    let files = RecordingFiles::open(native).map_err(|source| ExportError::Open {
        path: native.to_owned(),
        source,
    })?;
    let mut rec = McapRecorder::create(out, options)?;
    let write = |source| ExportError::Write {
        path: out.to_owned(),
        source,
    };
    // Native bus id to MCAP bus id.
    let mut ids: Vec<Option<u32>> = Vec::new();
    let mut stats = ExportStats::default();
    let id_of = |ids: &[Option<u32>], bus: u32| ids.get(bus as usize).copied().flatten();
    for record in files {
        let record = record.map_err(|source| ExportError::Read {
            path: native.to_owned(),
            source,
        })?;
        match record {
            Record::Bus(b) => {
                let mut spec = BusSpec::new(&b.name, b.kind, b.msg_size)
                    .slots(b.slots)
                    .blocks(b.blocks)
                    .lossless(b.lossless);
                spec.msg_type = b.msg_type;
                let id = rec.add_bus(&spec).map_err(|source| ExportError::AddBus {
                    path: out.to_owned(),
                    name: b.name.clone(),
                    source,
                })?;
                let i = b.id as usize;
                if ids.len() <= i {
                    ids.resize(i + 1, None);
                }
                ids[i] = Some(id);
                stats.buses += 1;
            }
            Record::Message(m) => {
                // The native reader gives a bus's record before its
                // messages.
                if let Some(id) = id_of(&ids, m.bus) {
                    rec.message(id, m.seq, m.mono_ns, m.wall_ns, &m.payload)
                        .map_err(write)?;
                    stats.messages += 1;
                }
            }
            Record::Gap(g) => {
                if let Some(id) = id_of(&ids, g.bus) {
                    rec.gap(id, g.first, g.count).map_err(write)?;
                    stats.gaps += 1;
                }
            }
            _ => {}
        }
    }
    stats.parts = rec.parts();
    rec.finish().map_err(write)?;
    Ok(stats)
}
