//! The mapping between shmbus recordings and MCAP (docs/RECORDING.md,
//! section "MCAP"): channel names, metadata keys, the gap and sequence
//! channels' payloads, and how a 64-bit sequence rides in MCAP's 32 bits.

use std::collections::BTreeMap;

use shmbus::TypeFingerprint;
use shmbus::record::{BusSpec, RecordedKind};

/// The profile in an MCAP header shmbus writes.
///
/// # Examples
/// ```
/// assert_eq!(shmbus_mcap::PROFILE, "shmbus");
/// ```
pub const PROFILE: &str = "shmbus";
/// The message encoding (and schema encoding) of a bus's channel: a
/// message's bytes are the bus message's bytes, nothing added.
///
/// # Examples
/// ```
/// assert_eq!(shmbus_mcap::RAW_ENCODING, "shmbus.raw");
/// ```
pub const RAW_ENCODING: &str = "shmbus.raw";
/// The topic of the channel of gaps: each message says `count` messages of
/// bus `bus` from `first` were missed (20 bytes, little-endian: the bus id
/// u32, first u64, count u64).
///
/// # Examples
/// ```
/// assert_eq!(shmbus_mcap::GAP_TOPIC, "shmbus.gap");
/// ```
pub const GAP_TOPIC: &str = "shmbus.gap";
/// The topic of the channel of sequence marks: each says the next message
/// of bus `bus` has the 64-bit sequence `seq` (12 bytes, little-endian: the
/// bus id u32, seq u64); written only where a reader could not infer it
/// from the 32 bits in the message.
///
/// # Examples
/// ```
/// assert_eq!(shmbus_mcap::SEQ_TOPIC, "shmbus.seq");
/// ```
pub const SEQ_TOPIC: &str = "shmbus.seq";
/// The encoding (and schema name) of the gap and sequence channels.
///
/// # Examples
/// ```
/// assert_eq!(shmbus_mcap::CONTROL_ENCODING, "shmbus.control");
/// ```
pub const CONTROL_ENCODING: &str = "shmbus.control";
/// The schema name of a raw bus of fixed-size messages: `bytes[N]`; of a
/// raw pool or stream, whose messages have lengths of their own: `bytes`.
///
/// # Examples
/// ```
/// assert_eq!(shmbus_mcap::RAW_SCHEMA, "bytes");
/// ```
pub const RAW_SCHEMA: &str = "bytes";

/// Channel metadata keys.
pub(crate) mod key {
    pub const BUS_ID: &str = "shmbus.bus_id";
    pub const KIND: &str = "shmbus.kind";
    pub const MSG_SIZE: &str = "shmbus.msg_size";
    pub const SLOTS: &str = "shmbus.slots";
    pub const BLOCKS: &str = "shmbus.blocks";
    pub const LOSSLESS: &str = "shmbus.lossless";
    pub const TYPE_NAME: &str = "shmbus.type_name";
    pub const TYPE_SIZE: &str = "shmbus.type_size";
    pub const TYPE_ALIGN: &str = "shmbus.type_align";
    pub const TYPE_HASH: &str = "shmbus.type_name_hash";
}

/// A kind's name in channel metadata.
pub(crate) fn kind_name(kind: RecordedKind) -> &'static str {
    match kind {
        RecordedKind::Bus => "bus",
        RecordedKind::ManyPublisher => "many_publisher",
        RecordedKind::Pool => "pool",
        RecordedKind::Stream => "stream",
        RecordedKind::Journaled => "journaled",
        _ => "unknown",
    }
}

/// The kind named `name` in channel metadata.
pub(crate) fn kind_of_name(name: &str) -> Option<RecordedKind> {
    Some(match name {
        "bus" => RecordedKind::Bus,
        "many_publisher" => RecordedKind::ManyPublisher,
        "pool" => RecordedKind::Pool,
        "stream" => RecordedKind::Stream,
        "journaled" => RecordedKind::Journaled,
        _ => return None,
    })
}

/// The bus's type, if it records a named one (a raw bus records `bytes`,
/// a raw stream `stream`).
fn named_type(spec: &BusSpec) -> Option<&TypeFingerprint> {
    spec.msg_type
        .as_ref()
        .filter(|t| !t.name.is_empty() && t.name != "bytes" && t.name != "stream")
}

/// The schema name of a bus's channel: its type's name, else `bytes[N]`
/// (fixed-size messages of N bytes) or `bytes` (a pool's or a stream's).
pub(crate) fn schema_name(spec: &BusSpec) -> String {
    match named_type(spec) {
        Some(t) => t.name.clone(),
        None if spec.kind.variable_length() => RAW_SCHEMA.to_owned(),
        None => format!("{RAW_SCHEMA}[{}]", spec.msg_size),
    }
}

/// The size a raw schema name gives: `bytes[N]` is N.
pub(crate) fn raw_schema_size(name: &str) -> Option<u32> {
    let n = name.strip_prefix("bytes[")?.strip_suffix(']')?;
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    n.parse().ok().filter(|&n| n > 0)
}

/// The channel metadata of bus `id`.
pub(crate) fn metadata(id: u32, spec: &BusSpec) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    let mut put = |k: &str, v: String| {
        m.insert(k.to_owned(), v);
    };
    put(key::BUS_ID, id.to_string());
    put(key::KIND, kind_name(spec.kind).to_owned());
    put(key::MSG_SIZE, spec.msg_size.to_string());
    put(key::SLOTS, spec.slots.to_string());
    put(key::BLOCKS, spec.blocks.to_string());
    put(key::LOSSLESS, spec.lossless.to_string());
    if let Some(t) = &spec.msg_type {
        put(key::TYPE_NAME, t.name.clone());
        put(key::TYPE_SIZE, t.size.to_string());
        put(key::TYPE_ALIGN, t.align.to_string());
        put(key::TYPE_HASH, format!("{:#018x}", t.name_hash));
    }
    m
}

/// Why channel metadata does not describe a bus: the key, and what it
/// held.
pub(crate) struct BadKey(pub &'static str, pub String);

/// The bus a channel's metadata describes, if it has shmbus's keys
/// (`Ok(None)`: none, a foreign channel).
pub(crate) fn spec_of(
    topic: &str,
    meta: &BTreeMap<String, String>,
) -> Result<Option<BusSpec>, BadKey> {
    let Some(kind) = meta.get(key::KIND) else {
        return Ok(None);
    };
    let kind = kind_of_name(kind).ok_or_else(|| BadKey(key::KIND, kind.clone()))?;
    fn num<T: std::str::FromStr>(
        meta: &BTreeMap<String, String>,
        k: &'static str,
    ) -> Result<T, BadKey> {
        let v = meta.get(k).map_or("", String::as_str);
        v.parse().map_err(|_| BadKey(k, v.to_owned()))
    }
    let lossless = match meta.get(key::LOSSLESS).map(String::as_str) {
        Some("true") => true,
        Some("false") | None => false,
        Some(v) => return Err(BadKey(key::LOSSLESS, v.to_owned())),
    };
    let mut spec = BusSpec::new(topic, kind, num(meta, key::MSG_SIZE)?)
        .slots(num(meta, key::SLOTS)?)
        .blocks(num(meta, key::BLOCKS)?)
        .lossless(lossless);
    if let Some(name) = meta.get(key::TYPE_NAME) {
        let hash = meta.get(key::TYPE_HASH).map_or("", String::as_str);
        let name_hash = hash
            .strip_prefix("0x")
            .and_then(|h| u64::from_str_radix(h, 16).ok())
            .ok_or_else(|| BadKey(key::TYPE_HASH, hash.to_owned()))?;
        spec = spec.msg_type(TypeFingerprint {
            size: num(meta, key::TYPE_SIZE)?,
            align: num(meta, key::TYPE_ALIGN)?,
            name_hash,
            name: name.clone(),
        });
    }
    Ok(Some(spec))
}

/// A gap message's payload: bus id (u32), first (u64), count (u64),
/// little-endian, 20 bytes.
pub(crate) fn encode_gap(bus: u32, first: u64, count: u64) -> [u8; 20] {
    let mut b = [0; 20];
    b[..4].copy_from_slice(&bus.to_le_bytes());
    b[4..12].copy_from_slice(&first.to_le_bytes());
    b[12..].copy_from_slice(&count.to_le_bytes());
    b
}

/// The gap a payload says, if it is one (20 bytes).
pub(crate) fn decode_gap(b: &[u8]) -> Option<(u32, u64, u64)> {
    let b: &[u8; 20] = b.try_into().ok()?;
    Some((
        u32::from_le_bytes(b[..4].try_into().ok()?),
        u64::from_le_bytes(b[4..12].try_into().ok()?),
        u64::from_le_bytes(b[12..].try_into().ok()?),
    ))
}

/// A sequence mark's payload: bus id (u32), sequence (u64), little-endian,
/// 12 bytes.
pub(crate) fn encode_seq(bus: u32, seq: u64) -> [u8; 12] {
    let mut b = [0; 12];
    b[..4].copy_from_slice(&bus.to_le_bytes());
    b[4..].copy_from_slice(&seq.to_le_bytes());
    b
}

/// The mark a payload says, if it is one (12 bytes).
pub(crate) fn decode_seq(b: &[u8]) -> Option<(u32, u64)> {
    let b: &[u8; 12] = b.try_into().ok()?;
    Some((
        u32::from_le_bytes(b[..4].try_into().ok()?),
        u64::from_le_bytes(b[4..].try_into().ok()?),
    ))
}

/// The 64-bit sequence a reader infers for a message whose MCAP sequence
/// is `low` (the low 32 bits): the least sequence at or after `next` (the
/// one after the bus's last message or gap in this file, 0 at its start)
/// with those low bits. A writer that finds this is not the message's
/// sequence writes a mark first.
pub(crate) fn infer_seq(next: u64, low: u32) -> Option<u64> {
    let base = next & !0xffff_ffff;
    let candidate = base | u64::from(low);
    if candidate >= next {
        Some(candidate)
    } else {
        candidate.checked_add(1 << 32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inference_finds_the_next_sequence_with_the_low_bits() {
        assert_eq!(infer_seq(0, 5), Some(5));
        assert_eq!(infer_seq(6, 5), Some((1 << 32) + 5));
        assert_eq!(infer_seq((1 << 32) - 1, 0), Some(1 << 32));
        assert_eq!(infer_seq(u64::MAX, 0), None);
    }

    #[test]
    fn raw_schema_sizes() {
        assert_eq!(raw_schema_size("bytes[16]"), Some(16));
        assert_eq!(raw_schema_size("bytes[0]"), None);
        assert_eq!(raw_schema_size("bytes[-1]"), None);
        assert_eq!(raw_schema_size("bytes"), None);
    }
}
