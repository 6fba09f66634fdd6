//! A recording's index side file (`FILE.idx`, docs/RECORDING.md
//! "Index"): where each bus record is, and every so many bytes a position
//! with what came before it, so a reader seeks without reading from the
//! start. It is a hint: a reader checks each record it is pointed at, and
//! a missing, cut or stale index only costs a scan.

use std::io::BufReader;
use std::path::Path;

use super::format::{
    INDEX_BUS, INDEX_BUS_LEN, INDEX_MAGIC, INDEX_POSITION, INDEX_POSITION_LEN, MAX_INDEX_ENTRIES,
    frame, u32_at, u64_at,
};
use super::recording::Recording;

/// A record boundary of the recording and what lies before it, across all
/// earlier parts too: every message before `offset` has a receive time
/// (CLOCK_MONOTONIC) below `mono_below`, and every message and gap of
/// `bus` before it a sequence below `seq_below`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Position {
    pub offset: u64,
    pub mono_below: u64,
    pub bus: u32,
    pub seq_below: u64,
}

/// The writer's side: what has been recorded so far, and the entries not
/// yet written (they go to the index file only after the recording's bytes
/// they point at are flushed, so an index is never ahead of its file).
#[derive(Debug)]
pub(crate) struct IndexWriter {
    every: u64,
    /// The offset of the last positions written in this part; `None` in a
    /// new part (the first record gets positions).
    last: Option<u64>,
    mono_below: u64,
    /// Per bus declared: the sequence bound (0 before its first record).
    seq_below: Vec<u64>,
    pub pending: Vec<u8>,
}

impl IndexWriter {
    pub fn new(every: u64) -> Self {
        Self {
            every: every.max(1),
            last: None,
            mono_below: 0,
            seq_below: Vec::new(),
            pending: Vec::new(),
        }
    }

    /// A new part: its own entries from its start, the bounds kept.
    pub fn new_part(&mut self) {
        self.last = None;
    }

    pub fn bus(&mut self, id: u32, offset: u64) {
        let mut body = [0u8; INDEX_BUS_LEN];
        body[0..4].copy_from_slice(&id.to_le_bytes());
        body[8..16].copy_from_slice(&offset.to_le_bytes());
        frame(&mut self.pending, INDEX_BUS, &body, &[]);
        if self.seq_below.len() <= id as usize {
            self.seq_below.resize(id as usize + 1, 0);
        }
    }

    /// Before a message or gap at `offset`: positions, if due.
    pub fn before_record(&mut self, offset: u64) {
        if self
            .last
            .is_some_and(|l| offset.saturating_sub(l) < self.every)
        {
            return;
        }
        self.last = Some(offset);
        for (bus, &seq) in self.seq_below.iter().enumerate() {
            let mut body = [0u8; INDEX_POSITION_LEN];
            body[0..8].copy_from_slice(&offset.to_le_bytes());
            body[8..16].copy_from_slice(&self.mono_below.to_le_bytes());
            body[16..20].copy_from_slice(&(bus as u32).to_le_bytes());
            body[24..32].copy_from_slice(&seq.to_le_bytes());
            frame(&mut self.pending, INDEX_POSITION, &body, &[]);
        }
    }

    pub fn message(&mut self, bus: u32, seq: u64, mono_ns: u64) {
        self.mono_below = self.mono_below.max(mono_ns.saturating_add(1));
        self.seq(bus, seq.saturating_add(1));
    }

    pub fn gap(&mut self, bus: u32, first: u64, count: u64) {
        self.seq(bus, first.saturating_add(count));
    }

    fn seq(&mut self, bus: u32, below: u64) {
        if let Some(s) = self.seq_below.get_mut(bus as usize) {
            *s = (*s).max(below);
        }
    }
}

/// An index read back: only entries that checked, up to the first that did
/// not.
#[derive(Debug, Default)]
pub(crate) struct Index {
    /// (bus id, offset of its bus record), in file order.
    pub buses: Vec<(u32, u64)>,
    pub positions: Vec<Position>,
}

/// The index of the part whose header said `part` and `id`, or `None`
/// where there is none, or it belongs to another file.
pub(crate) fn read(path: &Path, part: u32, id: u64) -> Option<Index> {
    let file = super::regular::open_regular(path).ok()?;
    let mut entries = Recording::with_magic(BufReader::new(file), INDEX_MAGIC).ok()?;
    if entries.part() != (part, id) {
        return None;
    }
    let mut index = Index::default();
    // Bounded: a damaged entry ends it, and so does a huge index.
    for _ in 0..MAX_INDEX_ENTRIES {
        let Ok(Some((ty, body))) = entries.next_raw() else {
            break;
        };
        match (ty, body.len()) {
            (INDEX_BUS, INDEX_BUS_LEN) => index.buses.push((u32_at(&body, 0), u64_at(&body, 8))),
            (INDEX_POSITION, INDEX_POSITION_LEN) => index.positions.push(Position {
                offset: u64_at(&body, 0),
                mono_below: u64_at(&body, 8),
                bus: u32_at(&body, 16),
                seq_below: u64_at(&body, 24),
            }),
            _ => break,
        }
    }
    Some(index)
}
