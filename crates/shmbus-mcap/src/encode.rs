//! [`McapFile`]: MCAP's records written straight into one file
//! (mcap.dev/spec): the header, schemas and channels in the data section,
//! messages in chunks (each built in memory, its CRC computed once, then
//! compressed and written whole with its message indexes), then the data
//! end, the summary (schemas, channels, statistics, chunk indexes), the
//! summary offsets and the footer. A message costs one copy into the open
//! chunk and an index entry, as a native record does.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufWriter, Write};

/// The magic at both ends of an MCAP file.
pub(crate) const MAGIC: &[u8] = b"\x89MCAP0\r\n";

/// How a chunk's records are compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Codec {
    None,
    Zstd,
    Lz4,
}

impl Codec {
    /// Its name in a chunk record ("" for none).
    fn name(self) -> &'static str {
        match self {
            Codec::None => "",
            Codec::Zstd => "zstd",
            Codec::Lz4 => "lz4",
        }
    }
}

const OP_HEADER: u8 = 0x01;
const OP_FOOTER: u8 = 0x02;
const OP_SCHEMA: u8 = 0x03;
const OP_CHANNEL: u8 = 0x04;
const OP_MESSAGE: u8 = 0x05;
const OP_CHUNK: u8 = 0x06;
const OP_MESSAGE_INDEX: u8 = 0x07;
const OP_CHUNK_INDEX: u8 = 0x08;
const OP_STATISTICS: u8 = 0x0B;
const OP_SUMMARY_OFFSET: u8 = 0x0E;
const OP_DATA_END: u8 = 0x0F;

fn put_str(b: &mut Vec<u8>, s: &str) {
    b.extend_from_slice(&(s.len() as u32).to_le_bytes());
    b.extend_from_slice(s.as_bytes());
}

/// Appends a record of opcode `op` whose body `body` writes.
fn record(b: &mut Vec<u8>, op: u8, body: impl FnOnce(&mut Vec<u8>)) {
    b.push(op);
    let at = b.len();
    b.extend_from_slice(&[0; 8]);
    body(b);
    let len = (b.len() - at - 8) as u64;
    b[at..at + 8].copy_from_slice(&len.to_le_bytes());
}

/// One MCAP file being written.
pub(crate) struct McapFile {
    out: BufWriter<File>,
    /// Bytes handed to `out` so far.
    pos: u64,
    codec: Codec,
    chunk_size: usize,
    /// The open chunk's records.
    chunk: Vec<u8>,
    chunk_times: Option<(u64, u64)>,
    /// The open chunk's message index entries by channel (log time and
    /// offset, 16 bytes each).
    index: BTreeMap<u16, Vec<u8>>,
    /// The summary's groups, as they will be written.
    schemas: Vec<u8>,
    channels: Vec<u8>,
    chunk_indexes: Vec<u8>,
    schema_count: u16,
    channel_count: u32,
    chunk_count: u32,
    message_count: u64,
    counts: BTreeMap<u16, u64>,
    times: Option<(u64, u64)>,
    next_schema: u16,
    next_channel: u16,
    scratch: Vec<u8>,
}

impl McapFile {
    /// Starts the file on `file`: the magic and the header record.
    pub(crate) fn create(
        file: File,
        profile: &str,
        library: &str,
        codec: Codec,
        chunk_size: u64,
    ) -> io::Result<Self> {
        let mut f = Self {
            out: BufWriter::with_capacity(256 << 10, file),
            pos: 0,
            codec,
            chunk_size: usize::try_from(chunk_size).unwrap_or(usize::MAX),
            chunk: Vec::new(),
            chunk_times: None,
            index: BTreeMap::new(),
            schemas: Vec::new(),
            channels: Vec::new(),
            chunk_indexes: Vec::new(),
            schema_count: 0,
            channel_count: 0,
            chunk_count: 0,
            message_count: 0,
            counts: BTreeMap::new(),
            times: None,
            next_schema: 1,
            next_channel: 0,
            scratch: Vec::new(),
        };
        let mut b = MAGIC.to_vec();
        record(&mut b, OP_HEADER, |b| {
            put_str(b, profile);
            put_str(b, library);
        });
        f.write(&b)?;
        Ok(f)
    }

    fn write(&mut self, b: &[u8]) -> io::Result<()> {
        self.out.write_all(b)?;
        self.pos += b.len() as u64;
        Ok(())
    }

    /// The bytes written so far (the open chunk not counted).
    pub(crate) fn bytes(&self) -> u64 {
        self.pos
    }

    /// Writes a schema record (the open chunk ended first); its id.
    pub(crate) fn add_schema(
        &mut self,
        name: &str,
        encoding: &str,
        data: &[u8],
    ) -> io::Result<u16> {
        self.end_chunk()?;
        let id = self.next_schema;
        self.next_schema = id
            .checked_add(1)
            .ok_or_else(|| io::Error::other("more than 65535 schemas"))?;
        let mut b = Vec::new();
        record(&mut b, OP_SCHEMA, |b| {
            b.extend_from_slice(&id.to_le_bytes());
            put_str(b, name);
            put_str(b, encoding);
            b.extend_from_slice(&(data.len() as u32).to_le_bytes());
            b.extend_from_slice(data);
        });
        self.write(&b)?;
        self.schemas.extend_from_slice(&b);
        self.schema_count += 1;
        Ok(id)
    }

    /// Writes a channel record (the open chunk ended first); its id.
    pub(crate) fn add_channel(
        &mut self,
        schema: u16,
        topic: &str,
        encoding: &str,
        metadata: &BTreeMap<String, String>,
    ) -> io::Result<u16> {
        self.end_chunk()?;
        let id = self.next_channel;
        self.next_channel = id
            .checked_add(1)
            .ok_or_else(|| io::Error::other("more than 65535 channels"))?;
        let mut b = Vec::new();
        record(&mut b, OP_CHANNEL, |b| {
            b.extend_from_slice(&id.to_le_bytes());
            b.extend_from_slice(&schema.to_le_bytes());
            put_str(b, topic);
            put_str(b, encoding);
            let mut map = Vec::new();
            for (k, v) in metadata {
                put_str(&mut map, k);
                put_str(&mut map, v);
            }
            b.extend_from_slice(&(map.len() as u32).to_le_bytes());
            b.extend_from_slice(&map);
        });
        self.write(&b)?;
        self.channels.extend_from_slice(&b);
        self.channel_count += 1;
        Ok(id)
    }

    /// Appends a message to the open chunk (ending it first if full).
    pub(crate) fn message(
        &mut self,
        channel: u16,
        sequence: u32,
        log_time: u64,
        publish_time: u64,
        data: &[u8],
    ) -> io::Result<()> {
        if self.chunk.len() >= self.chunk_size {
            self.end_chunk()?;
        }
        let offset = self.chunk.len() as u64;
        let c = &mut self.chunk;
        c.reserve(31 + data.len());
        c.push(OP_MESSAGE);
        c.extend_from_slice(&((22 + data.len()) as u64).to_le_bytes());
        c.extend_from_slice(&channel.to_le_bytes());
        c.extend_from_slice(&sequence.to_le_bytes());
        c.extend_from_slice(&log_time.to_le_bytes());
        c.extend_from_slice(&publish_time.to_le_bytes());
        c.extend_from_slice(data);
        let entries = self.index.entry(channel).or_default();
        entries.extend_from_slice(&log_time.to_le_bytes());
        entries.extend_from_slice(&offset.to_le_bytes());
        let widen = |t: Option<(u64, u64)>| match t {
            None => Some((log_time, log_time)),
            Some((a, b)) => Some((a.min(log_time), b.max(log_time))),
        };
        self.chunk_times = widen(self.chunk_times);
        self.times = widen(self.times);
        self.message_count += 1;
        Ok(())
    }

    /// Writes the open chunk, if it has anything, and its message indexes
    /// in one piece; notes its chunk index for the summary.
    pub(crate) fn end_chunk(&mut self) -> io::Result<()> {
        if self.chunk.is_empty() {
            return Ok(());
        }
        let crc = crc32fast::hash(&self.chunk);
        let records: Cow<'_, [u8]> = match self.codec {
            Codec::None => Cow::Borrowed(&self.chunk),
            Codec::Zstd => Cow::Owned(zstd::bulk::compress(&self.chunk, 0)?),
            Codec::Lz4 => {
                let mut e =
                    lz4::EncoderBuilder::new().build(Vec::with_capacity(self.chunk.len() / 2))?;
                e.write_all(&self.chunk)?;
                let (v, r) = e.finish();
                r?;
                Cow::Owned(v)
            }
        };
        let (start, end) = self.chunk_times.unwrap_or((0, 0));
        let uncompressed = self.chunk.len() as u64;
        let compressed = records.len() as u64;
        let mut b = std::mem::take(&mut self.scratch);
        b.clear();
        record(&mut b, OP_CHUNK, |b| {
            b.extend_from_slice(&start.to_le_bytes());
            b.extend_from_slice(&end.to_le_bytes());
            b.extend_from_slice(&uncompressed.to_le_bytes());
            b.extend_from_slice(&crc.to_le_bytes());
            put_str(b, self.codec.name());
            b.extend_from_slice(&compressed.to_le_bytes());
            b.extend_from_slice(&records);
        });
        drop(records);
        let chunk_start = self.pos;
        let chunk_length = b.len() as u64;
        let mut offsets: Vec<(u16, u64)> = Vec::new();
        for (&channel, entries) in &self.index {
            if entries.is_empty() {
                continue;
            }
            // Each index entry is 16 bytes: the channel's count, a chunk
            // at a time rather than a map look-up a message.
            *self.counts.entry(channel).or_insert(0) += entries.len() as u64 / 16;
            offsets.push((channel, chunk_start + b.len() as u64));
            record(&mut b, OP_MESSAGE_INDEX, |b| {
                b.extend_from_slice(&channel.to_le_bytes());
                b.extend_from_slice(&(entries.len() as u32).to_le_bytes());
                b.extend_from_slice(entries);
            });
        }
        let index_length = b.len() as u64 - chunk_length;
        self.write(&b)?;
        self.scratch = b;
        let codec = self.codec.name();
        record(&mut self.chunk_indexes, OP_CHUNK_INDEX, |x| {
            x.extend_from_slice(&start.to_le_bytes());
            x.extend_from_slice(&end.to_le_bytes());
            x.extend_from_slice(&chunk_start.to_le_bytes());
            x.extend_from_slice(&chunk_length.to_le_bytes());
            x.extend_from_slice(&((offsets.len() * 10) as u32).to_le_bytes());
            for (channel, offset) in &offsets {
                x.extend_from_slice(&channel.to_le_bytes());
                x.extend_from_slice(&offset.to_le_bytes());
            }
            x.extend_from_slice(&index_length.to_le_bytes());
            put_str(x, codec);
            x.extend_from_slice(&compressed.to_le_bytes());
            x.extend_from_slice(&uncompressed.to_le_bytes());
        });
        self.chunk.clear();
        self.chunk_times = None;
        for entries in self.index.values_mut() {
            entries.clear();
        }
        self.chunk_count += 1;
        Ok(())
    }

    /// Ends the open chunk and hands everything to the file.
    pub(crate) fn flush(&mut self) -> io::Result<()> {
        self.end_chunk()?;
        self.out.flush()
    }

    /// Ends the file: its last chunk, the data end, the summary, the
    /// summary offsets, the footer and the closing magic.
    pub(crate) fn finish(mut self) -> io::Result<()> {
        self.end_chunk()?;
        let mut b = Vec::new();
        record(&mut b, OP_DATA_END, |b| {
            b.extend_from_slice(&0u32.to_le_bytes())
        });
        self.write(&b)?;
        let (start, end) = self.times.unwrap_or((0, 0));
        let mut stats = Vec::new();
        record(&mut stats, OP_STATISTICS, |b| {
            b.extend_from_slice(&self.message_count.to_le_bytes());
            b.extend_from_slice(&self.schema_count.to_le_bytes());
            b.extend_from_slice(&self.channel_count.to_le_bytes());
            b.extend_from_slice(&0u32.to_le_bytes()); // attachments
            b.extend_from_slice(&0u32.to_le_bytes()); // metadata
            b.extend_from_slice(&self.chunk_count.to_le_bytes());
            b.extend_from_slice(&start.to_le_bytes());
            b.extend_from_slice(&end.to_le_bytes());
            b.extend_from_slice(&((self.counts.len() * 10) as u32).to_le_bytes());
            for (channel, n) in &self.counts {
                b.extend_from_slice(&channel.to_le_bytes());
                b.extend_from_slice(&n.to_le_bytes());
            }
        });
        let summary_start = self.pos;
        let groups = [
            (OP_SCHEMA, std::mem::take(&mut self.schemas)),
            (OP_CHANNEL, std::mem::take(&mut self.channels)),
            (OP_STATISTICS, stats),
            (OP_CHUNK_INDEX, std::mem::take(&mut self.chunk_indexes)),
        ];
        let mut offsets = Vec::new();
        for (op, bytes) in &groups {
            if bytes.is_empty() {
                continue;
            }
            record(&mut offsets, OP_SUMMARY_OFFSET, |b| {
                b.push(*op);
                b.extend_from_slice(&self.pos.to_le_bytes());
                b.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
            });
            self.write(bytes)?;
        }
        let summary_offset_start = self.pos;
        let mut tail = offsets;
        record(&mut tail, OP_FOOTER, |b| {
            b.extend_from_slice(&summary_start.to_le_bytes());
            b.extend_from_slice(&summary_offset_start.to_le_bytes());
            b.extend_from_slice(&0u32.to_le_bytes()); // no summary CRC
        });
        tail.extend_from_slice(MAGIC);
        self.write(&tail)?;
        self.out.flush()
    }
}
