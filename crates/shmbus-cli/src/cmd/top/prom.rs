//! `shmbus top --prometheus`: one sample in the Prometheus text exposition
//! format (version 0.0.4), for a node-exporter textfile collector or a
//! scrape. Counters end in `_total`; every series of a bus carries
//! `bus="NAME"`, a subscriber's also `pid` and `entry`.
//!
//! A pool bus adds `shmbus_pool_block_size_bytes`, `shmbus_pool_blocks`
//! (one gauge per census `state`: their sum is the pool's blocks) and
//! `shmbus_subscriber_held_blocks`; any other bus has none of them.
//!
//! A blackboard adds `shmbus_blackboard_keys`,
//! `shmbus_blackboard_max_keys`, `shmbus_blackboard_updates_total`,
//! `shmbus_blackboard_mid_write_entries` and `shmbus_blackboard_corrupt`
//! (its hottest keys are in `--json` only: keys as labels would make a
//! series per key).
//!
//! A service adds per bus `shmbus_service_clients`,
//! `shmbus_service_servers`, `shmbus_service_live_clients`,
//! `shmbus_service_live_servers` and `shmbus_service_calls_in_flight`
//! (its `shmbus_published_total` counts responses delivered); per server
//! entry ever used, labelled `bus`, `entry` and `pid`,
//! `shmbus_server_alive`, `shmbus_server_taken_total`,
//! `shmbus_server_answered_total`, `shmbus_server_late_total`,
//! `shmbus_server_refused_total`, `shmbus_server_latency_seconds_total`
//! (take to response, summed over answered) and
//! `shmbus_server_latency_max_seconds`; per client entry ever used,
//! `shmbus_client_alive`, `shmbus_client_calls_total`,
//! `shmbus_client_timeouts_total`, `shmbus_client_late_total`,
//! `shmbus_client_gone_total`, `shmbus_client_full_total` and
//! `shmbus_client_calls_in_flight`.
//!
//! Lossless subscribers: per bus `shmbus_lossless_max` and
//! `shmbus_evict_timeout_seconds`; per subscriber `shmbus_subscriber_contract`
//! (one series per `contract`, lossy, lossless or evicted: 1 for the one it
//! has), `shmbus_subscriber_evictions_total` and
//! `shmbus_subscriber_publisher_blocked_seconds_total` (the publisher's time
//! blocked waiting for it to read).
//!
//! A bridge on a bus (`shmbus bridge`) adds its series, labelled `bus`,
//! `direction` ("out" or "in"), `key` and `pid`: `shmbus_bridge_messages_total`
//! (out: put on Zenoh; in: published into the bus), `shmbus_bridge_lost_total`
//! (out: lost to laps, sent on as gaps; in: upstream sequences skipped),
//! `shmbus_bridge_repeats_total` and `shmbus_bridge_bad_frames_total` (in
//! only), `shmbus_bridge_peer` and `shmbus_bridge_messages_per_second`
//! (the bridge's own rate over its last second).

use std::fmt::Write;

use shmbus::stat::{ClientStat, ServerStat};

use super::model::Snapshot;
use crate::bridge_status::{Direction, Status};

pub fn exposition(s: &Snapshot) -> String {
    let mut out = String::new();
    let mut family = |name: &str, kind: &str, help: &str, rows: Vec<(String, f64)>| {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} {kind}");
        for (labels, v) in rows {
            let _ = writeln!(out, "{name}{{{labels}}} {v}");
        }
    };
    let buses: Vec<_> = s
        .buses
        .iter()
        .filter_map(|b| Some((label(&b.name), b.state.as_ref().ok()?)))
        .collect();
    let per_bus = |f: &dyn Fn(&super::model::BusRow) -> Option<f64>| {
        buses
            .iter()
            .filter_map(|(l, b)| Some((format!("bus=\"{l}\""), f(b)?)))
            .collect::<Vec<_>>()
    };
    family(
        "shmbus_up",
        "gauge",
        "1 if the bus could be read.",
        s.buses
            .iter()
            .map(|b| {
                (
                    format!("bus=\"{}\"", label(&b.name)),
                    if b.state.is_ok() { 1.0 } else { 0.0 },
                )
            })
            .collect(),
    );
    family(
        "shmbus_published_total",
        "counter",
        "Messages published since creation (bytes, for a stream).",
        per_bus(&|b| Some(b.published as f64)),
    );
    family(
        "shmbus_head",
        "gauge",
        "The next sequence the publisher writes (bytes written, for a stream).",
        per_bus(&|b| Some(b.head as f64)),
    );
    family(
        "shmbus_slots",
        "gauge",
        "Slots in a bus's ring.",
        per_bus(&|b| (b.unit == "slots").then_some(b.capacity as f64)),
    );
    family(
        "shmbus_stream_ring_bytes",
        "gauge",
        "Bytes in a stream's ring.",
        per_bus(&|b| (b.unit == "bytes").then_some(b.capacity as f64)),
    );
    family(
        "shmbus_epoch",
        "gauge",
        "Publisher generation (a bus's only).",
        per_bus(&|b| b.epoch.map(|e| e as f64)),
    );
    family(
        "shmbus_publisher_alive",
        "gauge",
        "1 if the publisher (producer) holds its lock.",
        per_bus(&|b| Some(f64::from(u8::from(b.publisher_alive)))),
    );
    // A stream or a blackboard has no subscribers to gate: none of its series.
    family(
        "shmbus_lossless_max",
        "gauge",
        "How many lossless subscribers may hold the publisher back (0: refused).",
        per_bus(&|b| b.lossless.map(|l| f64::from(l.max))),
    );
    family(
        "shmbus_evict_timeout_seconds",
        "gauge",
        "How long one lossless subscriber may hold the publisher back before it is evicted.",
        per_bus(&|b| b.lossless.map(|l| l.evict_ns as f64 / 1e9)),
    );
    family(
        "shmbus_journal_bytes",
        "gauge",
        "Size of the journal file.",
        per_bus(&|b| Some(b.journal.as_ref()?.as_ref().ok()?.file_bytes as f64)),
    );
    family(
        "shmbus_journal_records",
        "gauge",
        "Records in the journal.",
        per_bus(&|b| Some(b.journal.as_ref()?.as_ref().ok()?.records as f64)),
    );
    family(
        "shmbus_stream_fill_bytes",
        "gauge",
        "Bytes written and not yet released.",
        // Corrupt cursors have no fill: no sample rather than a wrong one.
        per_bus(&|b| {
            let st = b.stream.as_ref()?;
            (!st.corrupt).then_some(st.fill as f64)
        }),
    );
    family(
        "shmbus_stream_producer_records_total",
        "counter",
        "Records the stream's producer committed since it attached.",
        per_bus(&|b| Some(b.stream.as_ref()?.producer.records as f64)),
    );
    family(
        "shmbus_stream_consumer_records_total",
        "counter",
        "Records the stream's consumer released since it opened.",
        per_bus(&|b| Some(b.stream.as_ref()?.consumer.records as f64)),
    );
    family(
        "shmbus_pool_block_size_bytes",
        "gauge",
        "Bytes per block of a pool bus: its largest message.",
        per_bus(&|b| Some(b.pool.as_ref()?.block_size as f64)),
    );
    family(
        "shmbus_blackboard_keys",
        "gauge",
        "Keys in a blackboard, as its writer counted them.",
        per_bus(&|b| Some(b.blackboard.as_ref()?.keys as f64)),
    );
    family(
        "shmbus_blackboard_max_keys",
        "gauge",
        "The most keys a blackboard holds.",
        per_bus(&|b| Some(b.blackboard.as_ref()?.capacity as f64)),
    );
    family(
        "shmbus_blackboard_updates_total",
        "counter",
        "Puts and removals in a blackboard since creation (its table's version).",
        per_bus(&|b| Some(b.blackboard.as_ref()?.updates as f64)),
    );
    family(
        "shmbus_blackboard_mid_write_entries",
        "gauge",
        "Entries of a blackboard found mid-write (stuck if its writer died).",
        per_bus(&|b| Some(b.blackboard.as_ref()?.mid_write as f64)),
    );
    family(
        "shmbus_blackboard_corrupt",
        "gauge",
        "1 if some of a blackboard's versions cannot be believed.",
        per_bus(&|b| {
            let bb = b.blackboard.as_ref()?;
            Some(f64::from(u8::from(bb.corrupt.is_some())))
        }),
    );
    family(
        "shmbus_service_clients",
        "gauge",
        "Client entries of a service: how many clients may be attached at once.",
        per_bus(&|b| Some(f64::from(b.service.as_ref()?.clients))),
    );
    family(
        "shmbus_service_servers",
        "gauge",
        "Server entries of a service: how many servers may serve at once.",
        per_bus(&|b| Some(f64::from(b.service.as_ref()?.servers))),
    );
    family(
        "shmbus_service_live_clients",
        "gauge",
        "Client entries of a service whose process holds its lock.",
        per_bus(&|b| Some(b.service.as_ref()?.live_clients() as f64)),
    );
    family(
        "shmbus_service_live_servers",
        "gauge",
        "Server entries of a service whose process holds its lock.",
        per_bus(&|b| Some(b.service.as_ref()?.live_servers() as f64)),
    );
    family(
        "shmbus_service_calls_in_flight",
        "gauge",
        "Calls of a service sent and not yet read back by their clients.",
        per_bus(&|b| Some(b.service.as_ref()?.in_flight() as f64)),
    );
    let servers = |f: &dyn Fn(&ServerStat) -> f64| {
        let mut rows = Vec::new();
        for (l, b) in &buses {
            for r in b.service.iter().flat_map(|s| &s.per_server) {
                let labels = format!(
                    "bus=\"{l}\",entry=\"{}\",pid=\"{}\"",
                    r.line.entry, r.line.pid
                );
                rows.push((labels, f(&r.line)));
            }
        }
        rows
    };
    family(
        "shmbus_server_alive",
        "gauge",
        "1 if the process in a service's server entry holds its lock.",
        servers(&|s| f64::from(u8::from(s.alive))),
    );
    family(
        "shmbus_server_taken_total",
        "counter",
        "Requests a server entry took.",
        servers(&|s| s.taken as f64),
    );
    family(
        "shmbus_server_answered_total",
        "counter",
        "Responses a server entry delivered to a caller still waiting.",
        servers(&|s| s.answered as f64),
    );
    family(
        "shmbus_server_late_total",
        "counter",
        "Responses a server entry made after their caller gave up (dropped).",
        servers(&|s| s.late as f64),
    );
    family(
        "shmbus_server_refused_total",
        "counter",
        "Requests a server entry dropped unanswered.",
        servers(&|s| s.refused as f64),
    );
    family(
        "shmbus_server_latency_seconds_total",
        "counter",
        "Seconds from take to response, summed over a server entry's answered requests.",
        servers(&|s| s.latency_sum_ns as f64 / 1e9),
    );
    family(
        "shmbus_server_latency_max_seconds",
        "gauge",
        "The longest time from take to response of a server entry.",
        servers(&|s| s.latency_max_ns as f64 / 1e9),
    );
    let clients = |f: &dyn Fn(&ClientStat) -> f64| {
        let mut rows = Vec::new();
        for (l, b) in &buses {
            for r in b.service.iter().flat_map(|s| &s.per_client) {
                let labels = format!(
                    "bus=\"{l}\",entry=\"{}\",pid=\"{}\"",
                    r.line.entry, r.line.pid
                );
                rows.push((labels, f(&r.line)));
            }
        }
        rows
    };
    family(
        "shmbus_client_alive",
        "gauge",
        "1 if the process in a service's client entry holds its lock.",
        clients(&|c| f64::from(u8::from(c.alive))),
    );
    family(
        "shmbus_client_calls_total",
        "counter",
        "Calls a client entry sent.",
        clients(&|c| c.calls as f64),
    );
    family(
        "shmbus_client_timeouts_total",
        "counter",
        "Calls of a client entry that ended timed out.",
        clients(&|c| c.timeouts as f64),
    );
    family(
        "shmbus_client_late_total",
        "counter",
        "Responses to a client entry that came after their call ended (dropped).",
        clients(&|c| c.late as f64),
    );
    family(
        "shmbus_client_gone_total",
        "counter",
        "Calls of a client entry that ended with their server gone or no server alive.",
        clients(&|c| c.gone as f64),
    );
    family(
        "shmbus_client_full_total",
        "counter",
        "Sends of a client entry refused because every call slot held a call.",
        clients(&|c| c.full as f64),
    );
    family(
        "shmbus_client_calls_in_flight",
        "gauge",
        "A client entry's call slots not free.",
        clients(&|c| c.outstanding.len() as f64),
    );
    let mut by_state = Vec::new();
    for (l, b) in &buses {
        let Some(pool) = &b.pool else { continue };
        let c = &pool.census;
        for (state, n) in [
            ("free", c.free),
            ("loaned", c.loaned),
            ("on_ring", c.on_ring),
            ("held", c.held),
            ("reclaimable", c.reclaimable),
            ("corrupt", c.corrupt),
        ] {
            by_state.push((format!("bus=\"{l}\",state=\"{state}\""), n as f64));
        }
    }
    family(
        "shmbus_pool_blocks",
        "gauge",
        "Blocks of a pool bus by state: free, loaned, on_ring, held (off the ring), \
         reclaimable, corrupt.",
        by_state,
    );
    let subs = |f: &dyn Fn(&super::model::SubRow) -> Option<f64>| {
        let mut rows = Vec::new();
        for (l, b) in &buses {
            for r in b.subscribers.iter().filter(|r| !r.gone) {
                if let Some(v) = f(r) {
                    let labels = format!(
                        "bus=\"{l}\",pid=\"{}\",entry=\"{}\"",
                        r.line.pid, r.line.entry
                    );
                    rows.push((labels, v));
                }
            }
        }
        rows
    };
    let ok = |r: &super::model::SubRow| r.corrupt.is_none();
    family(
        "shmbus_subscriber_lag",
        "gauge",
        "Messages published that the subscriber has not read.",
        subs(&|r| ok(r).then_some(r.line.lag as f64)),
    );
    family(
        "shmbus_subscriber_position",
        "gauge",
        "The next sequence the subscriber reads.",
        subs(&|r| ok(r).then_some(r.line.position as f64)),
    );
    family(
        "shmbus_subscriber_delivered_total",
        "counter",
        "Messages the subscriber received.",
        subs(&|r| ok(r).then_some(r.line.delivered as f64)),
    );
    family(
        "shmbus_subscriber_skipped_total",
        "counter",
        "Messages the subscriber was told it lost to a lap.",
        subs(&|r| ok(r).then_some(r.line.skipped as f64)),
    );
    family(
        "shmbus_subscriber_idle_seconds",
        "gauge",
        "Seconds since the subscriber was last seen active.",
        subs(&|r| r.idle_s),
    );
    family(
        "shmbus_subscriber_corrupt",
        "gauge",
        "1 if the subscriber's line cannot be believed.",
        subs(&|r| Some(f64::from(u8::from(r.corrupt.is_some())))),
    );
    let mut contracts = Vec::new();
    for (l, b) in &buses {
        for r in b.subscribers.iter().filter(|r| !r.gone) {
            let has = crate::cmd::inspect::contract_token(r.line.contract);
            for c in ["lossy", "lossless", "evicted"] {
                let labels = format!(
                    "bus=\"{l}\",pid=\"{}\",entry=\"{}\",contract=\"{c}\"",
                    r.line.pid, r.line.entry
                );
                contracts.push((labels, f64::from(u8::from(c == has))));
            }
        }
    }
    family(
        "shmbus_subscriber_contract",
        "gauge",
        "1 for the subscriber's contract: lossy, lossless (the publisher waits for it), \
         or evicted (opened lossless, lossy since).",
        contracts,
    );
    family(
        "shmbus_subscriber_evictions_total",
        "counter",
        "Times the publisher evicted the subscriber (made it lossy) for holding it back.",
        subs(&|r| Some(f64::from(r.line.evictions))),
    );
    family(
        "shmbus_subscriber_publisher_blocked_seconds_total",
        "counter",
        "Seconds the publisher spent blocked waiting for the subscriber to read.",
        subs(&|r| Some(r.line.blocked_ns as f64 / 1e9)),
    );
    // From the pool's hold lines, not the subscriber's line: believable
    // even when the line is corrupt.
    family(
        "shmbus_subscriber_held_blocks",
        "gauge",
        "Blocks of a pool bus the subscriber holds (on the ring or off it).",
        subs(&|r| r.held.map(|h| h as f64)),
    );
    let bridges = |f: &dyn Fn(&Status) -> Option<f64>| {
        let mut rows = Vec::new();
        for (l, b) in &buses {
            for st in &b.bridges {
                if let Some(v) = f(st) {
                    let labels = format!(
                        "bus=\"{l}\",direction=\"{}\",key=\"{}\",pid=\"{}\"",
                        st.identity.direction.as_str(),
                        label(&st.identity.key),
                        st.pid
                    );
                    rows.push((labels, v));
                }
            }
        }
        rows
    };
    let inbound = |st: &Status| st.identity.direction == Direction::In;
    family(
        "shmbus_bridge_messages_total",
        "counter",
        "Messages a bridge moved: out, put on Zenoh; in, published into the bus.",
        bridges(&|st| Some(st.counts.messages as f64)),
    );
    family(
        "shmbus_bridge_lost_total",
        "counter",
        "Messages a bridge lost: out, to laps of its bus (sent on as gaps); in, upstream \
         sequences it skipped.",
        bridges(&|st| Some(st.counts.lost as f64)),
    );
    family(
        "shmbus_bridge_repeats_total",
        "counter",
        "Frames a bridge-in dropped because their sequence was already passed.",
        bridges(&|st| inbound(st).then_some(st.counts.repeats as f64)),
    );
    family(
        "shmbus_bridge_bad_frames_total",
        "counter",
        "Payloads a bridge-in dropped because they were not frames.",
        bridges(&|st| inbound(st).then_some(st.counts.bad_frames as f64)),
    );
    family(
        "shmbus_bridge_peer",
        "gauge",
        "1 if a bridge-out's key has a remote subscriber, or frames reached a bridge-in \
         in its last second.",
        bridges(&|st| Some(f64::from(u8::from(st.counts.peer)))),
    );
    family(
        "shmbus_bridge_messages_per_second",
        "gauge",
        "A bridge's messages per second over its last second, as it measured them.",
        bridges(&|st| st.msgs_per_sec),
    );
    out
}

/// A label value escaped as the format says: backslash, double quote and
/// newline.
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
