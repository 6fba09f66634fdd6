//! `shmbus top --json`: one sample as one JSON object. The keys are stable
//! (a script may rely on them) and named by `SCHEMA`; a new key may be
//! added under the same schema, a changed or removed one changes it.
//!
//! A pool bus adds `pool` (null for any other bus) and, per subscriber,
//! `held_blocks`, named as in `stat --json`; its `bytes_per_sec` is null
//! (its message sizes are not known, see `model`).
//!
//! A blackboard adds `blackboard` (null for any other kind): `keys`,
//! `max_keys`, `entries`, `used`, `updates` (the table's version),
//! `updates_per_sec`, `mid_write`, `stuck`, `corrupt` (null, or why
//! versions cannot be believed) and `hottest` (the entries written most
//! since the previous sample: `entry`, `key`, `updates`,
//! `updates_per_sec`, `note`).
//!
//! A service adds `service` (null for any other kind): `clients`,
//! `slots`, `servers`, `request_size`, `response_size`, `calls_per_sec`,
//! `in_flight`, `live_servers`, `live_clients`, and `per_server` and
//! `per_client` as in `stat --json`, each entry with its rate
//! (`answered_per_sec`, `calls_per_sec`) and `proc`. Its `published` is
//! its responses delivered, `msgs_per_sec` their rate.
//!
//! Every bus has `bridges`, as in `stat --json` (an empty array when none
//! runs on it), and every subscriber `bridge`: true if it is a bridge-out.
//!
//! Lossless subscribers, as in `stat --json`: a bus's
//! `lossless` (`max`, `evict_ns`), each subscriber's `contract` (`lossy`,
//! `lossless` or `evicted`), `evictions` and `publisher_blocked_ns` (the
//! publisher's time blocked on it, a counter).

use serde_json::{Value, json};

use super::blackboard::BlackboardRow;
use super::model::{BusRow, PoolRow, ProcRow, Snapshot, SubRow};
use super::service::ServiceRow;
use crate::cmd::inspect::subscriber_json;

/// Names the shape of the JSON below.
pub const SCHEMA: &str = "shmbus-top/2";

pub fn snapshot_json(s: &Snapshot) -> Value {
    json!({
        "schema": SCHEMA,
        "monotonic_ns": s.at_ns,
        "interval_s": s.interval_s,
        "buses": s.buses.iter().map(|b| {
            let mut v = match &b.state {
                Ok(row) => bus_json(row),
                Err(e) => json!({ "error": e }),
            };
            v["name"] = json!(b.name);
            v["path"] = json!(b.path.display().to_string());
            v
        }).collect::<Vec<_>>(),
    })
}

fn bus_json(b: &BusRow) -> Value {
    let mut v = json!({
        "kind": b.kind,
        "msg_size": b.msg_size,
        "head": b.head,
        "published": b.published,
        "epoch": b.epoch,
        "publisher_pid": b.publisher_pid,
        "publisher_alive": b.publisher_alive,
        "lossless": b.lossless.map(|l| json!({"max": l.max, "evict_ns": l.evict_ns})),
        "msgs_per_sec": b.msgs_per_sec,
        "bytes_per_sec": b.bytes_per_sec,
        "publisher_proc": b.publisher_proc.map(proc_json),
        "journal": b.journal.as_ref().map(|j| match j {
            Ok(j) => json!({
                "path": j.path.display().to_string(),
                "file_bytes": j.file_bytes,
                "records": j.records,
            }),
            Err(e) => json!({ "error": e }),
        }),
        "subscribers": b.subscribers.iter().map(sub_json).collect::<Vec<_>>(),
        "stream": b.stream.as_ref().map(|s| json!({
            // Corrupt cursors have no fill: null, never a number beside it.
            "fill": (!s.corrupt).then_some(s.fill),
            "fill_fraction": (!s.corrupt).then_some(s.fill_fraction),
            "tail": s.tail,
            "head": s.head,
            "consumer_pid": s.consumer_pid,
            "consumer_alive": s.consumer_alive,
            "corrupt": s.corrupt,
            "consumer_proc": s.consumer_proc.map(proc_json),
            "producer_records": s.producer.records,
            "producer_records_per_sec": s.producer.records_per_sec,
            "producer_idle_s": s.producer.idle_s,
            "consumer_records": s.consumer.records,
            "consumer_records_per_sec": s.consumer.records_per_sec,
            "consumer_idle_s": s.consumer.idle_s,
        })),
        "pool": b.pool.as_ref().map(pool_json),
        "blackboard": b.blackboard.as_ref().map(blackboard_json),
        "service": b.service.as_ref().map(service_json),
        "bridges": b.bridges.iter().map(|s| s.report_json()).collect::<Vec<_>>(),
    });
    // The size in its kind's unit: `slots`, `bytes` or `max_keys`.
    v[b.unit] = json!(b.capacity);
    v
}

/// A pool bus's geometry and census, with the census's keys as in `stat
/// --json`.
fn pool_json(p: &PoolRow) -> Value {
    json!({
        "block_size": p.block_size,
        "blocks": p.blocks,
        "census": crate::cmd::inspect::census_json(&p.census),
        "in_use": p.in_use(),
        "occupancy": p.occupancy(),
    })
}

/// A blackboard's table and hottest keys (most written first; `key` is
/// null where none could be read, `updates_per_sec` where it would mix
/// keys or the table's version went back).
fn blackboard_json(b: &BlackboardRow) -> Value {
    json!({
        "keys": b.keys,
        "max_keys": b.capacity,
        "entries": b.entries,
        "used": b.used(),
        "updates": b.updates,
        "updates_per_sec": b.updates_per_sec,
        "mid_write": b.mid_write,
        "stuck": b.stuck,
        "corrupt": b.corrupt,
        "hottest": b.hottest.iter().map(|h| json!({
            "entry": h.entry,
            "key": h.key,
            "updates": h.updates,
            "updates_per_sec": h.per_sec,
            "note": h.note,
        })).collect::<Vec<_>>(),
    })
}

/// A service's shape, rates and entries (the entries' keys as in `stat
/// --json`, with their rates and processes).
fn service_json(s: &ServiceRow) -> Value {
    use crate::cmd::inspect::{client_json, server_json};
    json!({
        "clients": s.clients,
        "slots": s.slots,
        "servers": s.servers,
        "request_size": s.request_size,
        "response_size": s.response_size,
        "calls_per_sec": s.calls_per_sec,
        "in_flight": s.in_flight(),
        "live_servers": s.live_servers(),
        "live_clients": s.live_clients(),
        "per_server": s.per_server.iter().map(|r| {
            let mut v = server_json(&r.line);
            v["answered_per_sec"] = json!(r.answered_per_sec);
            v["proc"] = json!(r.proc.map(proc_json));
            v
        }).collect::<Vec<_>>(),
        "per_client": s.per_client.iter().map(|r| {
            let mut v = client_json(&r.line);
            v["calls_per_sec"] = json!(r.calls_per_sec);
            v["proc"] = json!(r.proc.map(proc_json));
            v
        }).collect::<Vec<_>>(),
    })
}

fn sub_json(r: &SubRow) -> Value {
    let mut v = subscriber_json(&r.line, !r.gone, 0);
    v["corrupt"] = json!(r.corrupt);
    v["lag_fraction"] = json!(r.lag_fraction);
    v["near_lap"] = json!(r.near_lap());
    v["lapped"] = json!(r.lapped());
    v["msgs_per_sec"] = json!(r.msgs_per_sec);
    v["idle_s"] = json!(r.idle_s);
    v["proc"] = json!(r.proc.map(proc_json));
    v["bridge"] = json!(r.bridge);
    v["recorder"] = json!(r.recorder);
    // Only on a pool bus, as in `stat --json`: elsewhere no block is held.
    if let Some(held) = r.held {
        v["held_blocks"] = json!(held);
    }
    if let Some(reclaimable) = r.reclaimable {
        v["reclaimable_blocks"] = json!(reclaimable);
    }
    v
}

fn proc_json(p: ProcRow) -> Value {
    json!({
        "cpu_percent": p.cpu_percent,
        "voluntary_switches_per_sec": p.voluntary_per_sec,
        "involuntary_switches_per_sec": p.involuntary_per_sec,
    })
}
