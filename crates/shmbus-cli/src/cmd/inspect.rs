//! `shmbus stat` and `shmbus ls`: looking at buses without touching them.
//!
//! Both map segments read-only and take no lock (see `shmbus::stat`), so
//! they are safe to run against a bus in use. The JSON of `stat` is one
//! object; `ls --json` is an array of the same objects, plus `in_use`, with
//! `error` in place of the state for a segment that cannot be read.
//!
//! A stream has other figures than a bus (bytes, not messages; one consumer,
//! not subscribers), so it has its own JSON keys and text rows; `ls` fits
//! them into the bus's columns, in bytes. A typed stream's record type is
//! its `type` row (`type_name` and `msg_align` in JSON; a raw stream's
//! type is `stream`), and `ls` names it in MSG SIZE.
//!
//! A pool bus also shows its pool: block size, blocks, where each block
//! is (the census), and how many blocks each subscriber holds; `ls` marks
//! it `pool` in the KIND column, with its block size as MSG SIZE.
//!
//! A journaled bus also shows its journal: the file's path, size and
//! records (read without a lock too; a journal being appended to may show a
//! few records fewer than the bus has published).
//!
//! A service shows its shape (client entries, call slots per client,
//! server entries, the largest request and response and their types),
//! then each server entry ever used (pid, alive, taken, answered, late,
//! refused, mean and longest latency) and each client entry ever used
//! (pid, alive, calls, timeouts, late, gone, full, and each call in
//! flight: slot, phase, generation, the server that took it); `ls` shows
//! its clients as CAPACITY, its responses delivered as PUBLISHED, its live
//! servers and clients.
//!
//! A bus also shows the bridges running on it (`shmbus bridge`, read from
//! their status files: `crate::bridge_status`): `bridges` in the JSON, a
//! row per bridge in the text (no row when there is none).

use std::io::Write;
use std::path::{Path, PathBuf};

use comfy_table::{Table, TableComponent, presets};
use serde_json::{Value, json};
use shmbus::journal;
use shmbus::stat::{
    BlackboardStat, BusStat, ClientStat, Listing, Lossless, PoolStat, ServerStat, ServiceStat,
    Size, StreamStat, SubscriberStat,
};
use shmbus::{OpenError, SegmentKind};

use crate::bridge_status::{self, Status};
use crate::error::CliError;

/// Arguments of `shmbus stat`.
#[derive(clap::Args, Debug)]
pub struct StatArgs {
    /// Bus name (a bare name lives in /dev/shm) or a path.
    pub name: String,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `shmbus ls`.
#[derive(clap::Args, Debug)]
pub struct LsArgs {
    /// The directory to look in.
    #[arg(long, value_name = "DIR", default_value = "/dev/shm")]
    pub dir: PathBuf,
    /// Print a JSON array instead of a table.
    #[arg(long)]
    pub json: bool,
}

pub fn stat(args: &StatArgs) -> Result<(), CliError> {
    let stat = shmbus::stat::stat(&args.name)?;
    let all = bridge_status::read_live();
    let bridges = bridge_status::on_bus(&all, &stat.path);
    let text = if args.json {
        stat_json(&stat, &bridges).to_string()
    } else {
        stat_text(&stat, &bridges)
    };
    print(&text)
}

pub fn ls(args: &LsArgs) -> Result<(), CliError> {
    let listings = shmbus::stat::list(&args.dir).map_err(|e| CliError::runtime(e.to_string()))?;
    let text = if args.json {
        let bridges = bridge_status::read_live();
        Value::Array(listings.iter().map(|l| listing_json(l, &bridges)).collect()).to_string()
    } else if listings.is_empty() {
        format!(
            "no shmbus segments in {}",
            escaped(&args.dir.display().to_string())
        )
    } else {
        listing_table(&listings)
    };
    print(&text)
}

/// Writes `text` and a newline to stdout (EPIPE ends quietly).
fn print(text: &str) -> Result<(), CliError> {
    let mut out = crate::out::stdout()?;
    writeln!(out, "{text}")
        .and_then(|()| out.flush())
        .map_err(CliError::stdout)
}

/// `text` with control characters and backslashes escaped (`\n`, `\x1b`,
/// `\\`): a name may hold a newline, which must not break a line of
/// `stat` or a row of `ls`. JSON escapes for itself.
pub(crate) fn escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// A segment's size in its kind's unit (slots, bytes or keys); 0 for a
/// kind this build does not know.
pub(crate) fn size_of(s: &BusStat) -> u64 {
    match s.size {
        Some(Size::Slots { slots, .. }) => slots,
        Some(Size::Bytes(n) | Size::Keys(n)) => n,
        Some(Size::Calls { clients, .. }) => clients,
        _ => 0,
    }
}

/// What [`size_of`] counts, as the JSON names it.
pub(crate) fn size_unit(s: &BusStat) -> &'static str {
    match s.size {
        Some(Size::Bytes(_)) => "bytes",
        Some(Size::Keys(_)) => "max_keys",
        Some(Size::Calls { .. }) => "clients",
        _ => "slots",
    }
}

/// A bus's bytes per slot; 0 for another kind.
fn slot_size(s: &BusStat) -> u32 {
    match s.size {
        Some(Size::Slots { slot_size, .. }) => slot_size,
        _ => 0,
    }
}

/// The file name of a segment: what `ls` calls it.
fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

fn stat_json(s: &BusStat, bridges: &[&Status]) -> Value {
    if let Some(stream) = &s.stream {
        return stream_json(s, stream);
    }
    if let Some(bb) = &s.blackboard {
        return blackboard_json(s, bb);
    }
    if let Some(svc) = &s.service {
        return service_json(s, svc);
    }
    if let SegmentKind::Unknown(code) = s.kind {
        return json!({
            "name": file_name(&s.path),
            "path": s.path.display().to_string(),
            "kind": s.kind.to_string(),
            "kind_code": code,
            "created_unix_ns": s.created_ns,
        });
    }
    json!({
        "name": file_name(&s.path),
        "path": s.path.display().to_string(),
        "kind": s.kind.to_string(),
        "slots": size_of(s),
        "msg_size": s.msg.size,
        "slot_size": slot_size(s),
        "published": s.published,
        "head": s.head,
        "epoch": s.epoch,
        "publisher_pid": s.publisher_pid,
        "publisher_alive": s.publisher_alive,
        "subscribers": s.subscribers.len(),
        "lossless": s.lossless.map(|l| json!({"max": l.max, "evict_ns": l.evict_ns})),
        "subscriber_pids": s.subscribers.iter().map(|l| l.pid).collect::<Vec<_>>(),
        "per_subscriber": s.subscribers.iter().map(|l| (l, true))
            .chain(s.gone.iter().map(|l| (l, false)))
            .map(|(l, alive)| {
                let mut line = subscriber_json(l, alive, size_of(s));
                if let Some(pool) = &s.pool {
                    let (held, reclaimable) = holds(pool, l.entry);
                    line["held_blocks"] = json!(held);
                    line["reclaimable_blocks"] = json!(reclaimable);
                }
                line
            })
            .collect::<Vec<_>>(),
        "type_name": s.msg.name,
        "first_seq": s.first_seq,
        "created_unix_ns": s.created_ns,
        "journal": journal_json(s),
        "huge_page_size": s.huge_page_size,
        "pool": s.pool.as_ref().map(pool_json),
        "bridges": bridges.iter().map(|b| b.report_json()).collect::<Vec<_>>(),
    })
}

/// Where a pool's blocks are, as `stat --json` and `top --json` print it.
pub(crate) fn census_json(c: &shmbus::pool::Census) -> Value {
    json!({
        "free": c.free,
        "loaned": c.loaned,
        "on_ring": c.on_ring,
        "held": c.held,
        "reclaimable": c.reclaimable,
        "corrupt": c.corrupt,
    })
}

/// A pool bus's pool: its geometry, its blocks' message type, census and
/// holders.
fn pool_json(p: &PoolStat) -> Value {
    let t = &p.block_type;
    json!({
        "block_size": p.block_size,
        "blocks": p.blocks,
        "type_name": t.name,
        "type_hash": format!("{:#018x}", t.name_hash),
        "msg_size": t.size,
        "msg_align": t.align,
        "census": census_json(&p.census),
        "holders": p.holders.iter().map(|h| json!({
            "entry": h.entry,
            "pid": h.pid,
            "alive": h.alive,
            "held_blocks": if h.alive { h.held } else { 0 },
            "reclaimable_blocks": if h.alive { 0 } else { h.held },
        })).collect::<Vec<_>>(),
    })
}

/// The blocks registry entry `entry` holds, as (held, reclaimable): a
/// gone subscriber's holds are the next sweep's to clear (LAYOUT §19.6),
/// so they are reclaimable, not in use.
pub(crate) fn holds(p: &PoolStat, entry: usize) -> (usize, usize) {
    match p.holders.iter().find(|h| h.entry == entry) {
        Some(h) if !h.alive => (0, h.held),
        Some(h) => (h.held, 0),
        None => (0, 0),
    }
}

/// The rows a pool bus adds to `stat`'s text.
fn pool_rows(p: &PoolStat) -> [(&'static str, String); 3] {
    let c = &p.census;
    [
        ("block size", format!("{} bytes", p.block_size)),
        ("blocks", p.blocks.to_string()),
        (
            "pool census",
            format!(
                "free {}, loaned {}, on ring {}, held {}, reclaimable {}, corrupt {}",
                c.free, c.loaned, c.on_ring, c.held, c.reclaimable, c.corrupt
            ),
        ),
    ]
}

/// One subscriber's line, as `stat --json` and `top --json` print it
/// (`top` adds its rates and process figures): `capacity` is the bus's,
/// for `lag_fraction`, `near_lap` and `lapped`.
pub(crate) fn subscriber_json(l: &SubscriberStat, alive: bool, capacity: u64) -> Value {
    let lag = LagState::of(l, alive, capacity);
    let now = shmbus::stat::monotonic_ns();
    let idle_s = (l.active_ns != 0 && l.active_ns <= now).then(|| (now - l.active_ns) as f64 / 1e9);
    json!({
        "entry": l.entry,
        "pid": l.pid,
        "alive": alive,
        "position": l.position,
        "lag": l.lag,
        "lag_fraction": lag.fraction,
        "near_lap": lag.near_lap,
        "lapped": lag.lapped,
        "delivered": l.delivered,
        "skipped": l.skipped,
        "active_monotonic_ns": l.active_ns,
        "idle_s": idle_s,
        "corrupt": l.corrupt,
        "contract": contract_token(l.contract),
        "evictions": l.evictions,
        "publisher_blocked_ns": l.blocked_ns,
    })
}

/// A subscriber's contract as `--json` and Prometheus name it: `lossy`,
/// `lossless`, or `evicted` (opened lossless, lossy since).
pub(crate) fn contract_token(c: shmbus::stat::Contract) -> &'static str {
    use shmbus::stat::Contract;
    match c {
        Contract::Lossless => "lossless",
        Contract::Evicted => "evicted",
        // `Lossy`, and whatever a later library adds: it gates nothing.
        _ => "lossy",
    }
}

/// How far behind a subscriber is, as `stat` and `top` say it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LagState {
    /// `lag / capacity`: above 1 its next receive reports a lag.
    pub fraction: f64,
    /// More than 3/4 of the ring behind, not yet more than the ring.
    pub near_lap: bool,
    /// More than the ring behind: lapped already.
    pub lapped: bool,
}

impl LagState {
    pub(crate) fn of(l: &SubscriberStat, alive: bool, capacity: u64) -> LagState {
        let believed = alive && l.corrupt.is_none();
        let capacity = capacity.max(1);
        let lapped = believed && l.lag > capacity;
        LagState {
            fraction: l.lag as f64 / capacity as f64,
            near_lap: believed && !lapped && l.lag.saturating_mul(4) >= capacity.saturating_mul(3),
            lapped,
        }
    }
}

/// The journal's figures, or why they could not be read (`None`: no
/// journal).
fn journal_stat(s: &BusStat) -> Option<Result<journal::Stat, shmbus::journal::OpenError>> {
    let path = s.journal.as_ref()?;
    Some(shmbus::journal::stat(path))
}

fn journal_json(s: &BusStat) -> Value {
    match journal_stat(s) {
        None => Value::Null,
        Some(Ok(j)) => json!({
            "path": j.path.display().to_string(),
            "file_bytes": j.file_bytes,
            "records": j.records,
            "snapshot_records": j.snapshot,
            "base": j.base,
            "next": j.next,
        }),
        Some(Err(e)) => json!({
            "path": s.journal.as_ref().map(|p| p.display().to_string()),
            "error": e.to_string(),
        }),
    }
}

fn journal_text(s: &BusStat) -> Option<String> {
    Some(match journal_stat(s)? {
        Ok(j) => {
            let snapshot = if j.snapshot > 0 {
                format!(", {} of them a snapshot of one per key", j.snapshot)
            } else {
                String::new()
            };
            format!(
                "{} ({} bytes, {} records{snapshot}, up to sequence {})",
                j.path.display(),
                j.file_bytes,
                j.records,
                j.next
            )
        }
        Err(e) => e.to_string(),
    })
}

/// One server entry, as `stat --json` and `top --json` print it.
pub(crate) fn server_json(l: &ServerStat) -> Value {
    json!({
        "entry": l.entry,
        "pid": l.pid,
        "alive": l.alive,
        "taken": l.taken,
        "answered": l.answered,
        "late": l.late,
        "refused": l.refused,
        "latency_sum_ns": l.latency_sum_ns,
        "mean_latency_ns": l.mean_latency_ns(),
        "max_latency_ns": l.latency_max_ns,
    })
}

/// One client entry and its calls in flight, as `stat --json` and `top
/// --json` print it.
pub(crate) fn client_json(l: &ClientStat) -> Value {
    json!({
        "entry": l.entry,
        "pid": l.pid,
        "alive": l.alive,
        "calls": l.calls,
        "timeouts": l.timeouts,
        "late": l.late,
        "gone": l.gone,
        "full": l.full,
        "outstanding": l.outstanding.iter().map(|k| json!({
            "slot": k.slot,
            "phase": k.phase.name(),
            "generation": k.generation,
            "server": k.server,
        })).collect::<Vec<_>>(),
    })
}

fn service_json(s: &BusStat, svc: &ServiceStat) -> Value {
    json!({
        "name": file_name(&s.path),
        "path": s.path.display().to_string(),
        "kind": s.kind.to_string(),
        "clients": svc.clients,
        "slots": svc.slots,
        "servers": svc.servers,
        "request_size": svc.request.size,
        "request_type": svc.request.name,
        "request_align": svc.request.align,
        "response_size": svc.response.size,
        "response_type": svc.response.name,
        "response_align": svc.response.align,
        "answered": s.published,
        "in_flight": svc.in_flight(),
        "live_servers": svc.live_servers(),
        "live_clients": svc.live_clients(),
        "per_server": svc.per_server.iter().map(server_json).collect::<Vec<_>>(),
        "per_client": svc.per_client.iter().map(client_json).collect::<Vec<_>>(),
        "created_unix_ns": s.created_ns,
    })
}

/// A request or response type: `bytes, up to 64 bytes` for a raw side.
fn payload_text(t: &shmbus::TypeFingerprint) -> String {
    if t.name == "bytes" {
        format!("bytes, up to {} bytes", t.size)
    } else {
        format!("{} (size {}, align {})", escaped(&t.name), t.size, t.align)
    }
}

/// A duration in ns, in the unit that reads best.
pub(crate) fn ns_text(ns: u64) -> String {
    match ns {
        0..1_000 => format!("{ns} ns"),
        1_000..1_000_000 => format!("{:.1} µs", ns as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.1} ms", ns as f64 / 1e6),
        _ => format!("{:.3} s", ns as f64 / 1e9),
    }
}

/// One server entry's figures: "pid 12 (alive): taken 3, answered 3, late
/// 0, refused 0, latency mean 4.1 µs, max 9.0 µs".
pub(crate) fn server_text(l: &ServerStat) -> String {
    let latency = match l.mean_latency_ns() {
        Some(mean) => format!(
            ", latency mean {}, max {}",
            ns_text(mean),
            ns_text(l.latency_max_ns)
        ),
        None => String::new(),
    };
    format!(
        "entry {}, pid {} ({}): taken {}, answered {}, late {}, refused {}{latency}",
        l.entry,
        l.pid,
        if l.alive { "alive" } else { "dead" },
        l.taken,
        l.answered,
        l.late,
        l.refused
    )
}

/// One client entry's figures, then a line per call in flight.
pub(crate) fn client_text(l: &ClientStat, indent: &str) -> String {
    let mut text = format!(
        "entry {}, pid {} ({}): calls {}, timeouts {}, late {}, gone {}, full {}, in flight {}",
        l.entry,
        l.pid,
        if l.alive { "alive" } else { "dead" },
        l.calls,
        l.timeouts,
        l.late,
        l.gone,
        l.full,
        l.outstanding.len()
    );
    for k in &l.outstanding {
        let by = k
            .server
            .map_or(String::new(), |s| format!(" by server {s}"));
        text.push_str(&format!(
            "\n{indent}  slot {}: {}{by} (generation {})",
            k.slot,
            k.phase.name(),
            k.generation
        ));
    }
    text
}

fn service_text(s: &BusStat, svc: &ServiceStat) -> String {
    let indent = format!("{:<16}  ", "");
    let mut servers = format!("{} entries, {} live", svc.servers, svc.live_servers());
    for l in &svc.per_server {
        servers.push_str(&format!("\n{indent}{}", server_text(l)));
    }
    let mut clients = format!("{} entries, {} live", svc.clients, svc.live_clients());
    for l in &svc.per_client {
        clients.push_str(&format!("\n{indent}{}", client_text(l, &indent)));
    }
    let rows: [(&str, String); 11] = [
        ("name", escaped(&file_name(&s.path))),
        ("path", escaped(&s.path.display().to_string())),
        ("kind", s.kind.to_string()),
        ("call slots", format!("{} per client", svc.slots)),
        ("request", payload_text(&svc.request)),
        ("response", payload_text(&svc.response)),
        ("answered", s.published.to_string()),
        ("in flight", svc.in_flight().to_string()),
        ("created", utc_time(s.created_ns)),
        ("servers", servers),
        ("clients", clients),
    ];
    rows.iter()
        .map(|(key, value)| format!("{:<16}{value}", format!("{key}:")))
        .collect::<Vec<_>>()
        .join("\n")
}

fn stream_json(s: &BusStat, st: &StreamStat) -> Value {
    json!({
        "name": file_name(&s.path),
        "path": s.path.display().to_string(),
        "kind": s.kind.to_string(),
        "bytes": size_of(s),
        "max_record": s.msg.size,
        // `stream` for a raw stream, else the record type's name.
        "type_name": s.msg.name,
        "msg_align": s.msg.align,
        "tail": st.tail,
        "head": st.head,
        // Corrupt cursors have no fill: null, never a number beside it.
        "fill": (!st.corrupt).then_some(st.fill),
        "corrupt": st.corrupt,
        "producer_pid": s.publisher_pid,
        "producer_alive": s.publisher_alive,
        "consumer_pid": st.consumer_pid,
        "consumer_alive": st.consumer_alive,
        "created_unix_ns": s.created_ns,
    })
}

fn blackboard_json(s: &BusStat, bb: &BlackboardStat) -> Value {
    json!({
        "name": file_name(&s.path),
        "path": s.path.display().to_string(),
        "kind": s.kind.to_string(),
        "keys": bb.keys,
        "max_keys": bb.capacity,
        "entries": bb.entries,
        "updates": bb.updates,
        "mid_write": bb.mid_write,
        "key_type": bb.key_type.name,
        "key_size": bb.key_type.size,
        "value_type": s.msg.name,
        "value_size": s.msg.size,
        "writer_pid": s.publisher_pid,
        "writer_alive": s.publisher_alive,
        "many_writers": bb.unblock.is_some(),
        "unblock_ns": bb.unblock.map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
        "created_unix_ns": s.created_ns,
    })
}

fn blackboard_text(s: &BusStat, bb: &BlackboardStat) -> String {
    let mid_write = match (bb.mid_write, s.publisher_alive) {
        (0, _) => "0".to_string(),
        (n, true) => format!("{n} (being written)"),
        (n, false) if bb.unblock.is_some() => format!(
            "{n} STUCK: left mid-write by a writer that died; the next writer to meet it takes it over"
        ),
        (n, false) => {
            format!("{n} STUCK: left mid-write by a writer that died; attach a writer to repair")
        }
    };
    let writers = match bb.unblock {
        None => "one".to_string(),
        Some(d) => format!("many (unblock {} ms)", d.as_millis()),
    };
    let rows: [(&str, String); 12] = [
        ("name", escaped(&file_name(&s.path))),
        ("path", escaped(&s.path.display().to_string())),
        ("kind", s.kind.to_string()),
        (
            "keys",
            format!("{} of {} ({} entries)", bb.keys, bb.capacity, bb.entries),
        ),
        (
            "key type",
            format!(
                "{} ({} bytes)",
                escaped(&bb.key_type.name),
                bb.key_type.size
            ),
        ),
        (
            "value type",
            format!("{} ({} bytes)", escaped(&s.msg.name), s.msg.size),
        ),
        ("updates", bb.updates.to_string()),
        ("mid-write", mid_write),
        ("writers", writers),
        ("writer", role_text(s.publisher_pid, s.publisher_alive)),
        ("attached", s.attached.to_string()),
        ("created", utc_time(s.created_ns)),
    ];
    rows.iter()
        .map(|(key, value)| format!("{:<16}{value}", format!("{key}:")))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A stream's fill as a percentage of its capacity.
fn fill_percent(s: &BusStat, st: &StreamStat) -> f64 {
    st.fill as f64 * 100.0 / size_of(s).max(1) as f64
}

/// The fill, or why there is none: cursors no writer could have left.
fn fill_text(s: &BusStat, st: &StreamStat) -> String {
    if st.corrupt {
        return format!(
            "CORRUPT: TAIL {} is not within the capacity ({} bytes) ahead of HEAD {}",
            st.tail,
            size_of(s),
            st.head
        );
    }
    format!("{} bytes ({:.1}%)", st.fill, fill_percent(s, st))
}

fn stream_text(s: &BusStat, st: &StreamStat) -> String {
    let rows: [(&str, String); 12] = [
        ("name", escaped(&file_name(&s.path))),
        ("path", escaped(&s.path.display().to_string())),
        ("kind", s.kind.to_string()),
        ("capacity", format!("{} bytes", size_of(s))),
        ("largest record", format!("{} bytes", s.msg.size)),
        ("type", record_type_text(s)),
        ("written", format!("{} bytes", st.tail)),
        ("released", format!("{} bytes", st.head)),
        ("fill", fill_text(s, st)),
        ("producer", role_text(s.publisher_pid, s.publisher_alive)),
        ("consumer", role_text(st.consumer_pid, st.consumer_alive)),
        ("created", utc_time(s.created_ns)),
    ];
    rows.iter()
        .map(|(key, value)| format!("{:<16}{value}", format!("{key}:")))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether a stream is typed: a raw one records the type `stream`.
fn record_type(s: &BusStat) -> Option<&str> {
    let name = s.msg.name.as_str();
    (name != "stream").then_some(name)
}

/// A stream's record type: raw bytes, or one of a type per record.
fn record_type_text(s: &BusStat) -> String {
    match record_type(s) {
        None => "stream (raw byte records of any length)".into(),
        Some(name) => format!(
            "{} (align {}; every record is one)",
            escaped(name),
            s.msg.align
        ),
    }
}

/// A stream's producer or consumer: a pid of 0 means none has attached
/// since the last one left cleanly.
fn role_text(pid: u32, alive: bool) -> String {
    match (pid, alive) {
        (0, false) => "none".into(),
        (pid, true) => format!("pid {pid} (alive)"),
        (pid, false) => format!("pid {pid} (dead)"),
    }
}

fn stat_text(s: &BusStat, bridges: &[&Status]) -> String {
    if let Some(stream) = &s.stream {
        return stream_text(s, stream);
    }
    if let Some(bb) = &s.blackboard {
        return blackboard_text(s, bb);
    }
    if let Some(svc) = &s.service {
        return service_text(s, svc);
    }
    if let SegmentKind::Unknown(_) = s.kind {
        return unknown_text(s);
    }
    let rows: [(&str, String); 14] = [
        ("name", escaped(&file_name(&s.path))),
        ("path", escaped(&s.path.display().to_string())),
        ("kind", s.kind.to_string()),
        ("capacity", format!("{} slots", size_of(s))),
        ("message size", message_size_text(s)),
        ("slot size", format!("{} bytes", slot_size(s))),
        ("published", s.published.to_string()),
        ("head", s.head.to_string()),
        ("first sequence", s.first_seq.to_string()),
        (
            "epoch",
            s.epoch.map_or_else(|| "-".into(), |e| e.to_string()),
        ),
        ("publisher", publisher_text(s)),
        ("subscribers", subscribers_text(s)),
        ("type", type_text(s)),
        ("created", utc_time(s.created_ns)),
    ];
    let pool = s.pool.as_ref().map(pool_rows);
    let mut lines: Vec<String> = rows
        .iter()
        .chain(pool.iter().flatten())
        .map(|(key, value)| format!("{:<16}{value}", format!("{key}:")))
        .collect();
    if let Some(journal) = journal_text(s) {
        lines.push(format!("{:<16}{journal}", "journal:"));
    }
    if let Some(size) = s.huge_page_size {
        lines.push(format!("{:<16}{} KiB", "huge pages:", size / 1024));
    }
    lines.push(format!("{:<16}{}", "lossless:", lossless_text(s)));
    if !bridges.is_empty() {
        lines.push(format!("{:<16}{}", "bridges:", bridges_text(bridges)));
    }
    lines.join("\n")
}

/// What the bus allows lossless subscribers: "at most 8, evicted after
/// 1.000 s", or "refused" (`create --lossless-subscribers 0`).
fn lossless_text(s: &BusStat) -> String {
    match s.lossless {
        None => "-".into(),
        Some(Lossless { max: 0, .. }) => "refused".into(),
        Some(Lossless { max, evict_ns }) => format!(
            "at most {max}, evicted after {:.3} s",
            evict_ns as f64 / 1e9
        ),
    }
}

/// A segment of a kind this build does not know: what its header says
/// for sure, none of a broadcast bus's figures (its control area is laid
/// out in a way this build cannot know).
fn unknown_text(s: &BusStat) -> String {
    let rows: [(&str, String); 4] = [
        ("name", escaped(&file_name(&s.path))),
        ("path", escaped(&s.path.display().to_string())),
        (
            "kind",
            format!("{} (not known to this build: no figures)", s.kind),
        ),
        ("created", utc_time(s.created_ns)),
    ];
    rows.iter()
        .map(|(key, value)| format!("{:<16}{value}", format!("{key}:")))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A bus's message type; a pool bus's is its blocks', and its slots
/// carry descriptors.
fn type_text(s: &BusStat) -> String {
    let ring = format!(
        "{} (size {}, align {})",
        escaped(&s.msg.name),
        s.msg.size,
        s.msg.align
    );
    match &s.pool {
        Some(pool) => format!(
            "{}, one per block; the slots carry {ring}",
            block_type_text(pool)
        ),
        None => ring,
    }
}

/// A pool's block message type as its creator recorded it; a pool made
/// before the header recorded one has zeros there (LAYOUT §19.1).
fn block_type_text(p: &PoolStat) -> String {
    let t = &p.block_type;
    if t.name_hash == 0 && t.size == 0 {
        return "not recorded (made by an older build: raw readers only)".into();
    }
    format!("{} (size {}, align {})", escaped(&t.name), t.size, t.align)
}

/// A bus's message size; a pool bus's messages are up to a block, and its
/// slots carry their descriptors.
fn message_size_text(s: &BusStat) -> String {
    match &s.pool {
        Some(pool) => format!(
            "up to {} bytes, a block (the slots carry {}-byte descriptors)",
            pool.block_size, s.msg.size
        ),
        None => format!("{} bytes", s.msg.size),
    }
}

fn publisher_text(s: &BusStat) -> String {
    format!("pid {} ({})", s.publisher_pid, publisher_state(s))
}

fn publisher_state(s: &BusStat) -> &'static str {
    if s.publisher_alive { "alive" } else { "dead" }
}

/// How many live subscribers, then one line each (live, then gone):
/// "pid 12: position 40, lag 2, delivered 38, skipped 0" (on a pool bus,
/// then ", holds 1 block").
fn subscribers_text(s: &BusStat) -> String {
    let mut text = s.subscribers.len().to_string();
    let lines = s
        .subscribers
        .iter()
        .map(|l| (l, ""))
        .chain(s.gone.iter().map(|l| (l, " (gone)")));
    for (l, gone) in lines {
        let mut figures = match &l.corrupt {
            Some(why) => format!("corrupt: {}", escaped(why)),
            None => format!(
                "position {}, lag {}, delivered {}, skipped {}",
                l.position, l.lag, l.delivered, l.skipped
            ),
        };
        // A gone entry shows as gone, whatever contract it left with.
        if l.contract != shmbus::stat::Contract::Lossy && gone.is_empty() {
            figures.push_str(&format!(", {}", l.contract));
        }
        if l.evictions > 0 {
            figures.push_str(&format!(", evicted {}×", l.evictions));
        }
        if l.blocked_ns > 0 {
            figures.push_str(&format!(
                ", held the publisher back {:.3} s",
                l.blocked_ns as f64 / 1e9
            ));
        }
        if let Some(pool) = &s.pool {
            let (held, reclaimable) = holds(pool, l.entry);
            let blocks = |n| if n == 1 { "block" } else { "blocks" };
            if reclaimable > 0 {
                figures.push_str(&format!(
                    ", left {reclaimable} {} reclaimable",
                    blocks(reclaimable)
                ));
            } else {
                figures.push_str(&format!(", holds {held} {}", blocks(held)));
            }
        }
        text.push_str(&format!("\n{:<16}  pid {}{gone}: {figures}", "", l.pid));
    }
    text
}

/// How many bridges, then one line each: "pid 12: out -> key K, connect
/// tcp/10.0.0.2:7447, peer matched, 1.2k msgs/s, forwarded 100, lost 0".
fn bridges_text(bridges: &[&Status]) -> String {
    let mut text = bridges.len().to_string();
    for b in bridges {
        text.push_str(&format!(
            "\n{:<16}  pid {}: {}",
            "",
            b.pid,
            escaped(&b.summary())
        ));
    }
    text
}

fn listing_json(l: &Listing, bridges: &[Status]) -> Value {
    let mut obj = match &l.state {
        Ok(stat) => stat_json(stat, &bridge_status::on_bus(bridges, &stat.path)),
        Err(err) => json!({
            "name": file_name(&l.path),
            "path": l.path.display().to_string(),
            "error": listing_error(l, err),
        }),
    };
    obj["in_use"] = Value::Bool(!l.is_abandoned());
    obj
}

const LS_HEADER: [&str; 8] = [
    "NAME",
    "KIND",
    "CAPACITY",
    "MSG SIZE",
    "PUBLISHED",
    "PUBLISHER",
    "SUBSCRIBERS",
    "STATUS",
];

fn listing_table(listings: &[Listing]) -> String {
    plain_table(
        LS_HEADER.to_vec(),
        listings.iter().map(|l| listing_row(l).to_vec()),
    )
}

/// Plain columns like `ps`'s: no border, two spaces between columns.
pub(crate) fn plain_table(header: Vec<&str>, rows: impl Iterator<Item = Vec<String>>) -> String {
    let mut table = Table::new();
    table.load_preset(presets::NOTHING).set_header(header);
    for row in rows {
        table.add_row(row);
    }
    table
        .remove_style(TableComponent::LeftBorder)
        .remove_style(TableComponent::RightBorder);
    for column in table.column_iter_mut() {
        column.set_padding((0, 2));
    }
    table.trim_fmt()
}

/// One `ls` row; a segment that cannot be read shows its error as STATUS.
fn listing_row(l: &Listing) -> [String; 8] {
    let name = escaped(&file_name(&l.path));
    let s = match &l.state {
        Ok(s) => s,
        Err(err) => {
            let mut row = [(); 8].map(|()| "-".to_string());
            row[0] = name;
            row[7] = escaped(&listing_error(l, err));
            return row;
        }
    };
    let status = if l.is_abandoned() { "unused" } else { "in use" };
    if let Some(st) = &s.stream {
        // Bytes where a bus has messages; the one consumer and the fill
        // where a bus has its subscribers.
        let consumer = if st.consumer_alive { 1 } else { 0 };
        return [
            name,
            s.kind.to_string(),
            format!("{} B", size_of(s)),
            match record_type(s) {
                None => format!("{} B max", s.msg.size),
                Some(name) => format!("{} ({} B max)", escaped(name), s.msg.size),
            },
            format!("{} B", st.tail),
            if s.publisher_pid == 0 && !s.publisher_alive {
                "none".to_string()
            } else {
                format!("{} ({})", s.publisher_pid, publisher_state(s))
            },
            if st.corrupt {
                format!("{consumer}, fill CORRUPT")
            } else {
                format!("{consumer}, fill {:.0}%", fill_percent(s, st))
            },
            status.to_string(),
        ];
    }
    if let Some(bb) = &s.blackboard {
        // Keys where a bus has slots, the value where it has a message,
        // updates where it has messages published; readers register
        // nowhere, so SUBS is the keys used.
        return [
            name,
            s.kind.to_string(),
            format!("{} keys", bb.capacity),
            format!("{} B value", s.msg.size),
            bb.updates.to_string(),
            if s.publisher_pid == 0 && !s.publisher_alive {
                "none".to_string()
            } else {
                format!("{} ({})", s.publisher_pid, publisher_state(s))
            },
            format!("{} keys used", bb.keys),
            status.to_string(),
        ];
    }
    if let Some(svc) = &s.service {
        // Clients where a bus has slots, responses delivered where it has
        // messages published, live servers where it has its publisher,
        // live clients where it has subscribers.
        return [
            name,
            s.kind.to_string(),
            format!("{} clients", svc.clients),
            format!("{}/{} B", svc.request.size, svc.response.size),
            s.published.to_string(),
            format!("{} of {} servers", svc.live_servers(), svc.servers),
            format!(
                "{} clients, {} in flight",
                svc.live_clients(),
                svc.in_flight()
            ),
            status.to_string(),
        ];
    }
    if let SegmentKind::Unknown(_) = s.kind {
        let mut row = [(); 8].map(|()| "-".to_string());
        row[0] = name;
        row[1] = s.kind.to_string();
        row[7] = status.to_string();
        return row;
    }
    let (kind, msg_size) = match &s.pool {
        // The slots' messages are descriptors; a message is up to a block.
        Some(pool) => (s.kind.to_string(), format!("{} B max", pool.block_size)),
        None => (s.kind.to_string(), s.msg.size.to_string()),
    };
    [
        name,
        kind,
        size_of(s).to_string(),
        msg_size,
        s.published.to_string(),
        format!("{} ({})", s.publisher_pid, publisher_state(s)),
        s.subscribers.len().to_string(),
        status.to_string(),
    ]
}

/// A listing's error without the path the row already shows.
fn listing_error(l: &Listing, err: &OpenError) -> String {
    if let OpenError::NotInitialized { .. } = err {
        return if l.locked {
            "not initialized (its creator is still at work)".into()
        } else {
            "not initialized".into()
        };
    }
    let text = err.to_string();
    let prefix = format!("{}: ", l.path.display());
    text.strip_prefix(&prefix)
        .map_or(text.clone(), str::to_owned)
}

/// `ns` since the Unix epoch as `YYYY-MM-DD HH:MM:SS UTC`.
fn utc_time(ns: u64) -> String {
    let secs = ns / 1_000_000_000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian date, after Howard
/// Hinnant's `civil_from_days` (chrono-compatible, no dependency).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::{escaped, utc_time};

    #[test]
    fn a_name_with_a_newline_or_escape_stays_on_one_line() {
        assert_eq!(escaped("a\nb\tc\\d\x1b[2J"), "a\\nb\\tc\\\\d\\x1b[2J");
        assert_eq!(escaped("ticks"), "ticks");
    }

    #[test]
    fn utc_time_formats_known_instants() {
        assert_eq!(utc_time(0), "1970-01-01 00:00:00 UTC");
        // 2000-02-29 12:34:56 UTC, a leap day.
        assert_eq!(utc_time(951_827_696_000_000_000), "2000-02-29 12:34:56 UTC");
        assert_eq!(
            utc_time(1_735_689_599_999_999_999),
            "2024-12-31 23:59:59 UTC"
        );
    }
}
