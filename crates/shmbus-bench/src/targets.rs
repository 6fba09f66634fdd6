//! The performance targets set in the issues, each checked against this
//! run's figures: listed on standard output and kept in the JSON.

use serde_json::{Value, json};

use crate::case::Pattern;
use crate::figures::Figures;
use crate::memcpy::MEMCPY;
use crate::settings::ONE_LINE;

/// One performance target from the issues, checked against this run.
fn target(
    name: &str,
    wanted: &str,
    found: Option<f64>,
    met: impl Fn(f64) -> bool,
) -> Option<Value> {
    let found = found?;
    Some(
        json!({"target": name, "wanted": wanted, "found": (found * 1000.0).round() / 1000.0, "met": met(found)}),
    )
}

/// Every target this run's figures can check.
pub fn targets(results: &[Figures], t: f64) -> Vec<Value> {
    let get = |m: &str, p: Pattern, size: Option<usize>| {
        results.iter().find(|f| {
            f.mechanism == m
                && f.case.pattern == p
                && size.is_none_or(|s| f.case.msg_size == s)
                && f.ran()
        })
    };
    let main_size = results
        .iter()
        .filter(|f| f.case.pattern == Pattern::Pingpong && f.case.only.is_none())
        .map(|f| f.case.msg_size)
        .next();
    let p50_at = |m: &str, size| get(m, Pattern::Pingpong, Some(size)).and_then(|f| f.ns(0.5, t));
    let p50 = |m: &str| main_size.and_then(|s| p50_at(m, s));
    let rate =
        |m: &str, size| get(m, Pattern::Throughput, Some(size)).and_then(|f| f.msgs_per_sec());
    let ratio = |a: Option<f64>, b: Option<f64>| Some(a? / b?);
    let mut out = Vec::new();
    // The floor moves one cache line each way and its receiver does the
    // same fold of the message as every other (floor.rs). A 16 B message
    // and its stamp fit one line; at 64 B they take two, held to 1.25x
    // the one-line floor and to 1.10x `floor-2line`, two lines moved
    // together (both polled at once, their transfers overlapping). The
    // 16 B miss (190 against 130 ns in quiet rounds, 2026-11-23) survived
    // removing in turn the writer's odd-stamp store, its cursor store and
    // bell load, the reader's cursor load every 64th empty poll, its `top`
    // line store, and a ring small enough for L1/L2: what is left is the
    // path length of publish and try_recv against the floor's one store
    // and one load. At 64 B the second line cost a transfer of its own
    // until the reader prefetched it while polling the stamp and the
    // publisher prefetched the next slot's lines for writing (ring.rs).
    for (size, floor, limit) in [
        (ONE_LINE, "floor", 1.10),
        (64, "floor", 1.25),
        (64, "floor-2line", 1.10),
    ] {
        out.extend(target(
            &format!("shmbus pingpong p50 / {floor} p50 at {size} B"),
            &format!("<= {limit:.2}"),
            ratio(p50_at("shmbus", size), p50_at(floor, size)),
            |r| r <= limit,
        ));
    }
    // The subscriber's line for `stat` and `top` (one store per receive)
    // must not move the figures beyond their spread: shmbus's p50 (rate)
    // against the same bus without the line, same run, met while it is
    // within the slowest of the unregistered bus's rounds.
    for size in [Some(ONE_LINE), main_size.filter(|&s| s != ONE_LINE)]
        .into_iter()
        .flatten()
    {
        let bare = get("shmbus-unregistered", Pattern::Pingpong, Some(size));
        let spread = bare.and_then(|f| {
            let worst = *f.round_p50.iter().max()? as f64 / t;
            Some(worst / f.ns(0.5, t)?)
        });
        if let Some(spread) = spread {
            out.extend(target(
                &format!("shmbus pingpong p50 / shmbus-unregistered p50 at {size} B"),
                &format!("<= {spread:.2} (its slowest round)"),
                ratio(p50_at("shmbus", size), p50_at("shmbus-unregistered", size)),
                |r| r <= spread,
            ));
        }
    }
    for k in ["pipe", "uds", "tcp", "tcp-nagle", "udp", "mq"] {
        out.extend(target(
            &format!("{k} pingpong p50 / shmbus p50"),
            ">= 20",
            ratio(p50(k), p50("shmbus")),
            |r| r >= 20.0,
        ));
    }
    out.extend(target(
        "iceoryx2 pingpong p50 / shmbus p50",
        ">= 3",
        ratio(p50("iceoryx2"), p50("shmbus")),
        |r| r >= 3.0,
    ));
    for k in ["crossbar-podbus", "crossbar-pool"] {
        out.extend(target(
            &format!("{k} pingpong p50 / shmbus p50"),
            ">= 1",
            ratio(p50(k), p50("shmbus")),
            |r| r >= 1.0,
        ));
    }
    // ringfire: the closest peer, a cross-process SPMC ring
    // like the bus, at every size both ran.
    let mut ping_sizes: Vec<usize> = results
        .iter()
        .filter(|f| f.case.pattern == Pattern::Pingpong)
        .map(|f| f.case.msg_size)
        .collect();
    ping_sizes.sort_unstable();
    ping_sizes.dedup();
    for &size in &ping_sizes {
        out.extend(target(
            &format!("shmbus pingpong p50 / ringfire p50 at {size} B"),
            "<= 1",
            ratio(p50_at("shmbus", size), p50_at(RINGFIRE, size)),
            |r| r <= 1.0,
        ));
    }
    // One-way, paced, beside ringfire at every size both ran.
    let mut oneway_sizes: Vec<usize> = results
        .iter()
        .filter(|f| f.case.pattern == Pattern::Oneway)
        .map(|f| f.case.msg_size)
        .collect();
    oneway_sizes.sort_unstable();
    oneway_sizes.dedup();
    let oneway_at = |m: &str, size| get(m, Pattern::Oneway, Some(size)).and_then(|f| f.ns(0.5, t));
    for &size in &oneway_sizes {
        out.extend(target(
            &format!("shmbus oneway p50 / ringfire p50 at {size} B"),
            "<= 1",
            ratio(oneway_at("shmbus", size), oneway_at(RINGFIRE, size)),
            |r| r <= 1.0,
        ));
    }
    out.extend(fanout_widths(results, t));
    out.extend(lossless_publish_cost(results, t));
    let p99 = |m: &str| {
        main_size
            .and_then(|s| get(m, Pattern::Pingpong, Some(s)))
            .and_then(|f| f.ns(0.99, t))
    };
    out.extend(target(
        "iceoryx2 pingpong p99 / shmbus p99",
        "> 1",
        ratio(p99("iceoryx2"), p99("shmbus")),
        |r| r > 1.0,
    ));
    // photon-ring runs between two threads, so it is held against the bus
    // between two threads. Missed here so far; the cursor line and the
    // stamp stores were ruled out for the cross-process round trip (see
    // above), so the same path-length question applies.
    out.extend(target(
        "photon-ring p50 / shmbus-threads p50",
        ">= 1",
        ratio(p50("photon-ring"), p50("shmbus-threads")),
        |r| r >= 1.0,
    ));
    let mut sizes: Vec<usize> = results
        .iter()
        .filter(|f| f.case.pattern == Pattern::Throughput)
        .map(|f| f.case.msg_size)
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    // Throughput of a lossy ring is the rate a reader keeps up while the
    // writer laps it; it swings with how often the reader is lapped, which
    // is not the same from one ring design to the next, nor round to round.
    for &size in &sizes {
        out.extend(target(
            &format!("shmbus-threads / photon-ring throughput at {size} B"),
            ">= 1",
            ratio(rate("shmbus-threads", size), rate("photon-ring", size)),
            |r| r >= 1.0,
        ));
    }
    // A bus copies each message in and out of a slot; the stream's records
    // are contiguous, so its copies stream. Pool buses (`shmbus-zc`, the
    // `--large` table) are the bus's answer for large messages.
    for &size in &sizes {
        let bare = get("shmbus-unregistered", Pattern::Throughput, Some(size));
        let spread = bare.and_then(|f| {
            let worst = f.round_rate.iter().copied().reduce(f64::min)?;
            Some(worst / f.msgs_per_sec()?)
        });
        if let Some(spread) = spread {
            out.extend(target(
                &format!("shmbus / shmbus-unregistered throughput at {size} B"),
                &format!(">= {spread:.2} (its slowest round)"),
                ratio(rate("shmbus", size), rate("shmbus-unregistered", size)),
                |r| r >= spread,
            ));
        }
    }
    for &size in sizes.iter().filter(|&&s| s >= 4096) {
        out.extend(target(
            &format!("shmbus / shmbus-stream throughput at {size} B"),
            ">= 0.8",
            ratio(rate("shmbus", size), rate("shmbus-stream", size)),
            |r| r >= 0.8,
        ));
    }
    out.extend(target(
        "shmbus / mq throughput at 16 B",
        ">= 10",
        ratio(rate("shmbus", 16), rate("mq", 16)),
        |r| r >= 10.0,
    ));
    // The old "20x ipmpsc at 256 B" targets are gone: 20x ipmpsc's rate
    // here is above what one core's memcpy moves. The references for the
    // byte stream are now ipc_ring (another SPSC ring, same run) and the
    // floor; for the bus, crossbar's PodBus (another seqlock ring).
    // The journaled publisher's targets (mean <= 2x, p50 <= 1.5x the plain
    // publisher) are checked by examples/journal_bench.rs, which times each
    // publish call; this bench times deliveries, not publish calls.
    out.extend(target(
        "shmbus-stream / ipc_ring throughput at 256 B",
        ">= 1.5",
        ratio(rate("shmbus-stream", 256), rate("ipc_ring", 256)),
        |r| r >= 1.5,
    ));
    for &size in sizes.iter().filter(|&&s| s != 256) {
        out.extend(target(
            &format!("shmbus-stream / ipc_ring throughput at {size} B"),
            ">= 1",
            ratio(rate("shmbus-stream", size), rate("ipc_ring", size)),
            |r| r >= 1.0,
        ));
    }
    for &size in &sizes {
        out.extend(target(
            &format!("shmbus / crossbar-podbus throughput at {size} B"),
            ">= 1",
            ratio(rate("shmbus", size), rate("crossbar-podbus", size)),
            |r| r >= 1.0,
        ));
    }
    let lost_share = |m: &str, size| {
        get(m, Pattern::Throughput, Some(size))
            .filter(|f| f.sent > 0)
            .map(|f| f.lost as f64 / f.sent as f64)
    };
    for &size in &sizes {
        out.extend(target(
            &format!("shmbus / {RINGFIRE} throughput at {size} B"),
            ">= 1",
            ratio(rate("shmbus", size), rate(RINGFIRE, size)),
            |r| r >= 1.0,
        ));
        // The share of the measured messages a lapped reader lost, less
        // ringfire's: at most 0 (found is the difference, in percent).
        let diff = lost_share("shmbus", size)
            .zip(lost_share(RINGFIRE, size))
            .map(|(a, b)| (a - b) * 100.0);
        out.extend(target(
            &format!("shmbus lost % - {RINGFIRE} lost % throughput at {size} B"),
            "<= 0",
            diff,
            |d| d <= 0.0,
        ));
    }
    // Lossless: shmbus's lossless subscriber delivers every
    // message (0 lost) at a rate no lower than the peers' lossless modes,
    // at every size both ran, in the same rounds.
    for &size in &sizes {
        let lost = get("shmbus-lossless", Pattern::Throughput, Some(size)).map(|f| f.lost as f64);
        out.extend(target(
            &format!("shmbus-lossless lost throughput at {size} B"),
            "= 0",
            lost,
            |n| n == 0.0,
        ));
        for peer in [RINGFIRE_LOSSLESS, CROSSBAR_LOSSLESS] {
            out.extend(target(
                &format!("shmbus-lossless / {peer} throughput at {size} B"),
                ">= 1",
                ratio(rate("shmbus-lossless", size), rate(peer, size)),
                |r| r >= 1.0,
            ));
        }
    }
    out.extend(target(
        "shmbus-stream / mq throughput at 256 B",
        ">= 10",
        ratio(rate("shmbus-stream", 256), rate("mq", 256)),
        |r| r >= 10.0,
    ));
    out.extend(target(
        "shmbus-stream / memcpy (1 core) bytes per second at 64 KiB",
        ">= 0.5",
        ratio(rate("shmbus-stream", 65536), rate(MEMCPY, 65536)),
        |r| r >= 0.5,
    ));
    for f in results.iter().filter(|f| {
        f.mechanism == "shmbus-stream" && f.case.pattern == Pattern::Throughput && f.ran()
    }) {
        let what = format!(
            "shmbus-stream throughput {} B system calls per message",
            f.case.msg_size
        );
        out.extend(target(&what, "0", f.syscalls_per_msg(), |s| s < 0.001));
    }
    out.extend(zero_copy(&get, t));
    out.extend(sleeping(&get, &sizes, t));
    // A row that failed measured nothing its targets could use: each is
    // one target missed, named, instead of targets gone without a word.
    for f in results {
        if let Some(fault) = f.fault() {
            out.push(json!({
                "target": format!("{} ran with every payload intact", f.row_name()),
                "wanted": "every block run, 0 payload check failures",
                "found": fault,
                "met": false,
            }));
        }
    }
    for f in results
        .iter()
        .filter(|f| (f.mechanism == "shmbus" || f.mechanism == ZC) && f.ran())
    {
        let case = match f.case.receivers {
            1 => format!("{} {} B", f.case.pattern.name(), f.case.msg_size),
            n => format!(
                "{} {} B to {n} receivers",
                f.case.pattern.name(),
                f.case.msg_size
            ),
        };
        let what = format!("{} {case} system calls per message", f.mechanism);
        out.extend(target(&what, "0", f.syscalls_per_msg(), |s| s < 0.001));
        // Spinning threads are still preempted by the scheduler tick when
        // another task wants the CPU: those switches come per second of the
        // run, not per message, and show on a busy machine.
        let what = format!("{} {case} context switches per message", f.mechanism);
        out.extend(target(&what, "0", Some(f.ctx_per_msg()), |s| s < 0.001));
    }
    out
}

/// The closest peer's row.
const RINGFIRE: &str = "ringfire";
/// The peers' lossless rows.
const RINGFIRE_LOSSLESS: &str = "ringfire-lossless";
const CROSSBAR_LOSSLESS: &str = "crossbar-podbus-lossless";

/// Fanout's targets, from the worst receiver of each round: its
/// p50 against ringfire's at every receiver count, merged and round by
/// round (rounds run in rotating order, so round k of each row ran close
/// together), and the widest count against one receiver.
fn fanout_widths(results: &[Figures], t: f64) -> Vec<Value> {
    let at = |m: &str, n: usize| {
        results.iter().find(|f| {
            f.mechanism == m
                && f.case.pattern == Pattern::Fanout
                && f.case.receivers == n
                && f.ran()
        })
    };
    let mut widths: Vec<usize> = results
        .iter()
        .filter(|f| f.case.pattern == Pattern::Fanout)
        .map(|f| f.case.receivers)
        .collect();
    widths.sort_unstable();
    widths.dedup();
    let mut out = Vec::new();
    for &n in &widths {
        let (ours, theirs) = (at("shmbus", n), at(RINGFIRE, n));
        let merged = ours
            .and_then(|f| f.worst_ns(0.5, t))
            .zip(theirs.and_then(|f| f.worst_ns(0.5, t)))
            .map(|(a, b)| a / b);
        out.extend(target(
            &format!("shmbus fanout worst receiver p50 / {RINGFIRE}'s at {n} receivers"),
            "<= 1",
            merged,
            |r| r <= 1.0,
        ));
        let worst_round = ours.zip(theirs).and_then(|(a, b)| {
            a.worst_round_p50
                .iter()
                .zip(&b.worst_round_p50)
                .filter(|&(_, &b)| b > 0)
                .map(|(&a, &b)| a as f64 / b as f64)
                .reduce(f64::max)
        });
        out.extend(target(
            &format!(
                "shmbus fanout worst receiver p50 / {RINGFIRE}'s at {n} receivers, worst round"
            ),
            "<= 1",
            worst_round,
            |r| r <= 1.0,
        ));
    }
    if let Some(&wide) = widths.last().filter(|&&n| n >= 14) {
        let one = at("shmbus", 1).and_then(|f| f.worst_ns(0.5, t));
        let many = at("shmbus", wide).and_then(|f| f.worst_ns(0.5, t));
        out.extend(target(
            &format!("shmbus fanout worst receiver p50 at {wide} receivers / at 1"),
            "<= 1.3",
            many.zip(one).map(|(a, b)| a / b),
            |r| r <= 1.3,
        ));
    }
    out
}

/// The rows of receivers that sleep (mech/shmbus_wake.rs,
/// mech/ringfire_async.rs).
const FUTEX: &str = "shmbus-futex";
const ASYNC: &str = "shmbus-async";
const SELECT64: &str = "shmbus-select64";
const RINGFIRE_ASYNC: &str = "ringfire-async";

/// The async targets, same run: the async subscriber's paced one-way
/// latency against the synchronous futex subscriber's (p50 <= 1.2x, p99 <=
/// 1.5x), the 64-bus select's wake against it (p50 <= 1.2x), the async
/// throughput against it (>= 0.9x at every size both ran), and against
/// ringfire's `AsyncRingConsumer` at the same (paced) rate: lower receiver
/// CPU and lower p50.
fn sleeping<'a>(
    get: &impl Fn(&str, Pattern, Option<usize>) -> Option<&'a Figures>,
    sizes: &[usize],
    t: f64,
) -> Vec<Value> {
    let oneway = |m: &str| get(m, Pattern::Oneway, None);
    let q = |m: &str, p: f64| oneway(m).and_then(|f| f.ns(p, t));
    let ratio = |a: Option<f64>, b: Option<f64>| Some(a? / b?);
    let mut out = Vec::new();
    let size = oneway(FUTEX).map_or(0, |f| f.case.msg_size);
    for (m, p, name, limit) in [
        (ASYNC, 0.5, "p50", 1.2),
        (ASYNC, 0.99, "p99", 1.5),
        (SELECT64, 0.5, "p50", 1.2),
    ] {
        out.extend(target(
            &format!("{m} oneway {name} / {FUTEX} {name} at {size} B"),
            &format!("<= {limit:.1}"),
            ratio(q(m, p), q(FUTEX, p)),
            |r| r <= limit,
        ));
    }
    let rate =
        |m: &str, size| get(m, Pattern::Throughput, Some(size)).and_then(|f| f.msgs_per_sec());
    for &size in sizes {
        out.extend(target(
            &format!("{ASYNC} / {FUTEX} throughput at {size} B"),
            ">= 0.9",
            ratio(rate(ASYNC, size), rate(FUTEX, size)),
            |r| r >= 0.9,
        ));
    }
    let cpu = |m: &str| oneway(m).and_then(|f| f.receiver_cpu(t));
    out.extend(target(
        &format!("{ASYNC} receiver CPU / {RINGFIRE_ASYNC}'s, oneway (same rate)"),
        "< 1",
        ratio(cpu(ASYNC), cpu(RINGFIRE_ASYNC)),
        |r| r < 1.0,
    ));
    out.extend(target(
        &format!("{ASYNC} oneway p50 / {RINGFIRE_ASYNC} p50"),
        "< 1",
        ratio(q(ASYNC, 0.5), q(RINGFIRE_ASYNC, 0.5)),
        |r| r < 1.0,
    ));
    out
}

/// What an idle process of async subscribers may cost and still count as
/// 0: a hundredth of a percent of one core (1 ms in 10 s), the
/// child's own two clock reads and its sleep included.
const IDLE_ZERO_PERCENT: f64 = 0.01;

/// The idle targets: `shmbus-async`'s idle subscribers (1, and 100
/// in one runtime) use 0 CPU; `ringfire-async`'s rows are listed beside
/// them in the idle table, not held to a target.
pub fn idle_targets(rows: &[crate::idle::Row]) -> Vec<Value> {
    rows.iter()
        .filter(|r| r.mechanism == ASYNC)
        .filter_map(|r| {
            target(
                &format!(
                    "{ASYNC} idle CPU, {} subscriber(s) in one runtime, % of a core over {:.0} s",
                    r.subscribers, r.secs
                ),
                &format!("0 (< {IDLE_ZERO_PERCENT} %)"),
                r.percent(),
                |p| p < IDLE_ZERO_PERCENT,
            )
        })
        .collect()
}

/// The lossless rows' first target: the time inside one publish with lossless
/// subscribers that keep up (fanout: paced, in other processes, never
/// lapped) against the same with lossy ones, p50 of all rounds merged: at
/// most 1.1x with one subscriber, 1.3x with four. ringfire's own ratio
/// (`LosslessBackpressure` against `LossyLatestWins`, same rounds) is given
/// beside it in the wanted column, for reference.
fn lossless_publish_cost(results: &[Figures], t: f64) -> Vec<Value> {
    let p50 = |m: &str, n: usize| {
        results
            .iter()
            .find(|f| {
                f.mechanism == m
                    && f.case.pattern == Pattern::Fanout
                    && f.case.receivers == n
                    && f.ran()
            })
            .and_then(|f| f.publish_ns(0.5, t))
    };
    let ratio = |a: Option<f64>, b: Option<f64>| Some(a? / b?);
    let mut out = Vec::new();
    for (n, limit) in [(1, 1.1), (4, 1.3)] {
        let theirs = ratio(p50(RINGFIRE_LOSSLESS, n), p50(RINGFIRE, n))
            .map(|r| format!(" (ringfire's: {r:.2})"))
            .unwrap_or_default();
        out.extend(target(
            &format!("shmbus-lossless / shmbus publish p50 (fanout, {n} receivers that keep up)"),
            &format!("<= {limit:.1}{theirs}"),
            ratio(p50("shmbus-lossless", n), p50("shmbus", n)),
            |r| r <= limit,
        ));
    }
    out
}

/// The lossless rows' third target: a stalled (SIGSTOPped) lossless subscriber
/// holds the publisher for no longer than the eviction timeout plus 1 ms:
/// the longest single publish over every stall, less the timeout, in ms,
/// for each of the publisher's wait strategies the row measured.
pub fn stall(rows: &[crate::stall::Row]) -> Vec<Value> {
    let evict_ms = crate::stall::EVICT.as_secs_f64() * 1e3;
    rows.iter()
        .filter_map(|r| {
            target(
                &format!(
                    "stalled lossless subscriber: longest publish - eviction timeout ({evict_ms} ms), ms, publisher {}",
                    r.wait
                ),
                "<= 1",
                r.max_ns().map(|ns| ns as f64 / 1e6 - evict_ms),
                |d| d <= 1.0,
            )
        })
        .collect()
}

/// The zero-copy row's name.
const ZC: &str = "shmbus-zc";

/// The pool bus's targets, from `--large` runs: against the two
/// peers that loan blocks too, and at 64 B against the copying bus (the
/// descriptor costs a line more to read than an inline message).
fn zero_copy<'a>(
    get: &impl Fn(&str, Pattern, Option<usize>) -> Option<&'a Figures>,
    t: f64,
) -> Vec<Value> {
    let p50 = |m: &str, size| get(m, Pattern::Pingpong, Some(size)).and_then(|f| f.ns(0.5, t));
    let oneway = |m: &str, size| get(m, Pattern::Oneway, Some(size)).and_then(|f| f.ns(0.5, t));
    let rate =
        |m: &str, size| get(m, Pattern::Throughput, Some(size)).and_then(|f| f.msgs_per_sec());
    let ratio = |a: Option<f64>, b: Option<f64>| Some(a? / b?);
    let mut out = Vec::new();
    for size in [64 << 10, 1 << 20, 4 << 20] {
        let kib = size >> 10;
        for peer in ["iceoryx2", "crossbar-pool"] {
            out.extend(target(
                &format!("{ZC} / {peer} throughput at {kib} KiB"),
                ">= 1",
                ratio(rate(ZC, size), rate(peer, size)),
                |r| r >= 1.0,
            ));
            out.extend(target(
                &format!("{ZC} pingpong p50 / {peer} p50 at {kib} KiB"),
                "<= 1",
                ratio(p50(ZC, size), p50(peer, size)),
                |r| r <= 1.0,
            ));
            out.extend(target(
                &format!("{ZC} oneway p50 / {peer} p50 at {kib} KiB"),
                "<= 1",
                ratio(oneway(ZC, size), oneway(peer, size)),
                |r| r <= 1.0,
            ));
        }
    }
    out.extend(target(
        &format!("{ZC} pingpong p50 / shmbus p50 at 64 B"),
        "<= 1.3",
        ratio(p50(ZC, 64), p50("shmbus", 64)),
        |r| r <= 1.3,
    ));
    out.extend(target(
        &format!("{ZC} pingpong p50 / crossbar-pool p50 at 64 B"),
        "<= 1",
        ratio(p50(ZC, 64), p50("crossbar-pool", 64)),
        |r| r <= 1.0,
    ));
    out
}

/// Prints the targets under the tables.
pub fn print_targets(targets: &[Value]) {
    if targets.is_empty() {
        return;
    }
    println!("\ntargets (ratios from this run)");
    for t in targets {
        let met = if t["met"].as_bool() == Some(true) {
            "met   "
        } else {
            "MISSED"
        };
        println!(
            "  {met} {}: {} (wanted {})",
            t["target"].as_str().unwrap_or(""),
            t["found"],
            t["wanted"].as_str().unwrap_or("")
        );
    }
}

/// The request-response targets, each the median of ratios taken within
/// one round (rows of one round ran seconds apart; the VM changes speed
/// between rounds): shmbus's call p50 within 1.15x its own two-bus
/// ping-pong at 64 B, at most iceoryx2's request-response and a twentieth
/// of a Unix socket's at every size and client count; 4 clients together
/// make at least 0.9x the calls of one, the least-served of them at least
/// half the mean; no system call per call with both sides spinning. A row
/// that failed is one target missed, named.
pub fn reqrep(r: &crate::reqrep::Report) -> Vec<Value> {
    use crate::reqrep::Impl::{Iceoryx2, Shmbus, TwoBus, Uds};
    use crate::reqrep::{CLIENTS, SIZES};
    let mut out = Vec::new();
    let p50 = |a: &crate::reqrep::Round, b: &crate::reqrep::Round| Some(a.p50_ns / b.p50_ns);
    out.extend(target(
        "request-response call p50 / two-bus ping-pong p50 at 64 B, 1 client",
        "<= 1.15",
        r.round_ratio(r.row(Shmbus, 64, 1), r.row(TwoBus, 64, 1), p50),
        |x| x <= 1.15,
    ));
    for size in SIZES {
        for clients in CLIENTS {
            let ours = r.row(Shmbus, size, clients);
            let case = format!("at {size} B, {clients} client(s)");
            out.extend(target(
                &format!("request-response call p50 / iceoryx2 request-response p50 {case}"),
                "<= 1",
                r.round_ratio(ours, r.row(Iceoryx2, size, clients), p50),
                |x| x <= 1.0,
            ));
            out.extend(target(
                &format!("request-response call p50 / Unix socket request-reply p50 {case}"),
                "<= 0.05",
                r.round_ratio(ours, r.row(Uds, size, clients), p50),
                |x| x <= 0.05,
            ));
        }
    }
    for size in SIZES {
        let (one, four) = (r.row(Shmbus, size, 1), r.row(Shmbus, size, 4));
        out.extend(target(
            &format!("request-response calls/s, 4 clients / 1 client at {size} B"),
            ">= 0.9",
            r.round_ratio(four, one, |a, b| Some(a.calls_per_sec / b.calls_per_sec)),
            |x| x >= 0.9,
        ));
        out.extend(target(
            &format!(
                "request-response least-served client's calls / the mean, 4 clients at {size} B"
            ),
            ">= 0.5",
            four.and_then(|f| f.median(|x| Some(x.least_share))),
            |x| x >= 0.5,
        ));
    }
    for row in r.rows.iter().filter(|x| x.imp == Shmbus) {
        out.extend(target(
            &format!(
                "request-response system calls per call (client + server, both spinning) at {} B, {} client(s)",
                row.size, row.clients
            ),
            "0",
            row.median(crate::reqrep::Round::syscalls_per_call),
            |s| s < 0.001,
        ));
    }
    for row in &r.rows {
        if let Some(why) = &row.failed {
            out.push(json!({
                "target": format!("request-response row {} at {} B, {} client(s) ran with every message intact", row.imp.name(), row.size, row.clients),
                "wanted": "every block run, every message intact",
                "found": why,
                "met": false,
            }));
        }
    }
    out
}
