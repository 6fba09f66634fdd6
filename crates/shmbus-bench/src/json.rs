//! The `--json` file (schema `shmbus-bench/1`): the machine, the settings,
//! every result, the targets, the many-publishers table and the idle rows.

use std::path::Path;

use serde_json::{Value, json};

use crate::case::Pattern;
use crate::counters::{Counters, Delta};
use crate::error::BenchError;
use crate::figures::Figures;
use crate::settings::Settings;
use crate::{blackboard, idle, many_publishers, reqrep, stall};

/// The sections of a run beside its cases' results.
pub struct Sections<'a> {
    /// The many-publishers table.
    pub mpmc: &'a [many_publishers::Row],
    /// The idle async subscribers.
    pub idle: &'a [idle::Row],
    /// The stalled lossless subscriber.
    pub stall: &'a [stall::Row],
    /// The blackboard rows.
    pub blackboard: Option<&'a blackboard::Report>,
    /// The request-response rows.
    pub reqrep: Option<&'a reqrep::Report>,
}

/// Writes the JSON document to `path`.
pub fn write(
    path: &Path,
    results: &[Figures],
    sections: &Sections<'_>,
    settings: &Settings,
    targets: &[Value],
) -> Result<(), BenchError> {
    let Sections {
        mpmc,
        idle,
        stall,
        blackboard,
        reqrep,
    } = *sections;
    let t = settings.ticks_per_ns;
    let doc = json!({
        "schema": "shmbus-bench/1",
        "machine": machine(settings),
        "config": {
            "quick": settings.quick, "rounds": settings.rounds,
            "pingpong_count": settings.pingpong_count, "paced_count": settings.paced_count,
            "pace_ns": settings.pace.as_nanos() as u64,
        },
        "results": results.iter().map(|f| result_json(f, t)).collect::<Vec<_>>(),
        "targets": targets,
        "mpmc": if mpmc.is_empty() { Value::Null } else { many_publishers::json(mpmc, settings.quick) },
        "idle": if idle.is_empty() { Value::Null } else { idle::json(idle) },
        "stall": if stall.is_empty() { Value::Null } else { stall::json(stall, settings.quick) },
        "blackboard": blackboard.map_or(Value::Null, |b| blackboard::json(b, settings.quick)),
        "reqrep": reqrep.map_or(Value::Null, with_targets),
    });
    let text = serde_json::to_string_pretty(&doc).map_err(|source| BenchError::Encode {
        what: "the results",
        source,
    })?;
    std::fs::write(path, text).map_err(|source| BenchError::WriteFile {
        path: path.to_owned(),
        source,
    })
}

/// The `--blackboard` run's file (schema `shmbus-bench/blackboard-1`):
/// the machine and the blackboard rows alone.
pub fn write_blackboard(
    path: &Path,
    report: &blackboard::Report,
    quick: bool,
    cpus: &[usize],
) -> Result<(), BenchError> {
    let uname = rustix::system::uname();
    let doc = json!({
        "schema": "shmbus-bench/blackboard-1",
        "machine": {
            "cpu": cpu_model(),
            // SAFETY: sysconf has no preconditions.
            "cores": unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) },
            "kernel": format!("{} {}", uname.sysname().to_string_lossy(), uname.release().to_string_lossy()),
            "arch": std::env::consts::ARCH,
            "clock": "monotonic (std Instant around each block)",
            "cpus_pinned": cpus,
        },
        "blackboard": blackboard::json(report, quick),
    });
    let text = serde_json::to_string_pretty(&doc).map_err(|source| BenchError::Encode {
        what: "the blackboard rows",
        source,
    })?;
    std::fs::write(path, text).map_err(|source| BenchError::WriteFile {
        path: path.to_owned(),
        source,
    })
}

/// The `--reqrep` run's file (schema `shmbus-bench/reqrep-1`): the
/// machine and the request-response rows alone.
pub fn write_reqrep(
    path: &Path,
    report: &reqrep::Report,
    cpus: &[usize],
) -> Result<(), BenchError> {
    let uname = rustix::system::uname();
    let doc = json!({
        "schema": "shmbus-bench/reqrep-1",
        "machine": {
            "cpu": cpu_model(),
            // SAFETY: sysconf has no preconditions.
            "cores": unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) },
            "kernel": format!("{} {}", uname.sysname().to_string_lossy(), uname.release().to_string_lossy()),
            "arch": std::env::consts::ARCH,
            "clock": report.clock.name(),
            "cpus_pinned": cpus,
            "syscalls_counted": report.syscalls_counted,
        },
        "reqrep": with_targets(report),
    });
    let text = serde_json::to_string_pretty(&doc).map_err(|source| BenchError::Encode {
        what: "the request-response rows",
        source,
    })?;
    std::fs::write(path, text).map_err(|source| BenchError::WriteFile {
        path: path.to_owned(),
        source,
    })
}

fn cpu_model() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_owned())
        .unwrap_or_else(|| "unknown".into())
}

fn machine(settings: &Settings) -> Value {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_owned())
        .unwrap_or_else(|| "unknown".into());
    let uname = rustix::system::uname();
    json!({
        "cpu": model,
        // Online CPUs, not `available_parallelism`: we are pinned by now.
        // SAFETY: sysconf has no preconditions.
        "cores": unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) },
        "kernel": format!("{} {}", uname.sysname().to_string_lossy(), uname.release().to_string_lossy()),
        "arch": std::env::consts::ARCH,
        "clock": settings.clock.name(),
        "ticks_per_ns": settings.ticks_per_ns,
        "cpus_pinned": settings.cpus,
        "syscalls_counted": Counters::for_this_thread().counts_syscalls(),
    })
}

fn result_json(f: &Figures, t: f64) -> Value {
    let lat = f.latency.as_ref().filter(|h| !h.is_empty()).map(|_| {
        json!({
            "min": f.ns(0.0, t), "p50": f.ns(0.5, t), "p90": f.ns(0.9, t), "p99": f.ns(0.99, t),
            "p999": f.ns(0.999, t), "max": f.max_ns(t),
            "p50_rounds": f.round_p50.iter().map(|&v| v as f64 / t).collect::<Vec<_>>(),
        })
    });
    // Fanout: the receiver with the highest p50 in each round, merged.
    let worst = f.worst.as_ref().filter(|h| !h.is_empty()).map(|_| {
        json!({
            "p50": f.worst_ns(0.5, t), "p99": f.worst_ns(0.99, t),
            "p50_rounds": f.worst_round_p50.iter().map(|&v| v as f64 / t).collect::<Vec<_>>(),
        })
    });
    // Paced patterns: the time inside each publish (the lossless rows' first
    // target: lossless against lossy subscribers that keep up).
    let publish = f.publish.as_ref().filter(|h| !h.is_empty()).map(|h| {
        json!({
            "p50": f.publish_ns(0.5, t), "p90": f.publish_ns(0.9, t), "p99": f.publish_ns(0.99, t),
            "max": h.max() as f64 / t, "mean": f.publish_mean_ns(t),
            "p50_rounds": f.round_publish_p50.iter().map(|&v| v as f64 / t).collect::<Vec<_>>(),
        })
    });
    let rate = f.msgs_per_sec();
    let side = |d: &Delta| {
        let (s, v, i) = f.per_msg(d);
        json!({"syscalls_per_msg": s, "voluntary_cs_per_msg": v, "involuntary_cs_per_msg": i})
    };
    json!({
        "mechanism": f.mechanism,
        "pattern": f.case.pattern.name(),
        "msg_size": f.case.msg_size,
        "receivers": f.case.receivers,
        "in_process": f.in_process,
        "latency_ns": lat,
        "worst_receiver_ns": worst,
        "publish_ns": publish,
        "msgs_per_sec": rate,
        "msgs_per_sec_rounds": if f.round_rate.is_empty() { Value::Null } else { json!(f.round_rate) },
        "bytes_per_sec": rate.map(|r| r * f.case.msg_size as f64),
        "syscalls_per_msg": f.syscalls_per_msg(),
        // The receiver process's CPU time (all its threads) over START to
        // STOP, in % of one core: null for in-process rows.
        "receiver_cpu_percent": f.receiver_cpu(t).map(|c| (c * 1e4).round() / 100.0),
        // Paced rows: the gap between messages (the run's `pace_ns`, or
        // more for a row that sleeps between them).
        "pace_ns": (f.pace > 0).then(|| (f.pace as f64 / t).round()),
        "ctx_switches_per_msg": if f.skipped.is_some() { Value::Null } else { json!(f.ctx_per_msg()) },
        "sender": side(&f.sender),
        "receiver": side(&f.receiver),
        "lost": if f.skipped.is_some() || f.case.pattern == Pattern::Pingpong { Value::Null } else { json!(f.lost) },
        "sent": f.sent,
        // Every receiver (and the pingpong sender) folds every byte of
        // every message it gets and checks it: see `payload`.
        "receiver_reads_payload": true,
        "checksum_errors": if f.skipped.is_some() { Value::Null } else { json!(f.checksum_errors) },
        "skipped": f.skipped,
        // A block's error: the run failed (its exit status says so too).
        "failed": f.failed,
    })
}

/// The request-response rows as JSON, with their targets.
fn with_targets(r: &reqrep::Report) -> Value {
    let mut v = reqrep::json(r);
    v["targets"] = Value::Array(crate::targets::reqrep(r));
    v
}
