//! The tables on standard output: one per case, a row per mechanism.

use std::collections::BTreeMap;

use crate::case::Pattern;
use crate::figures::Figures;
use crate::memcpy::{MEMCPY, MEMCPY_PASSES, MEMCPY_RING};
use crate::settings::Settings;

fn fmt_ns(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(v) if v >= 100_000.0 => format!("{:.0} us", v / 1000.0),
        Some(v) if v >= 10_000.0 => format!("{:.1} us", v / 1000.0),
        Some(v) => format!("{v:.0} ns"),
    }
}

fn fmt_rate(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(v) if v >= 1e6 => format!("{:.2} M/s", v / 1e6),
        Some(v) => format!("{:.0} k/s", v / 1e3),
    }
}

fn fmt_bytes(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(v) if v >= 1e9 => format!("{:.2} GB/s", v / 1e9),
        Some(v) => format!("{:.0} MB/s", v / 1e6),
    }
}

/// Prints one table per case.
pub fn print_tables(results: &[Figures], settings: &Settings) {
    let t = settings.ticks_per_ns;
    let mut by_case: BTreeMap<(Pattern, usize, usize), Vec<&Figures>> = BTreeMap::new();
    for f in results {
        by_case
            .entry((f.case.pattern, f.case.msg_size, f.case.receivers))
            .or_default()
            .push(f);
    }
    for ((pattern, size, receivers), figs) in by_case {
        let what = match pattern {
            Pattern::Pingpong => format!("pingpong: round-trip time, {size} B messages"),
            Pattern::Oneway => format!("oneway: one-way latency, {size} B messages, paced"),
            Pattern::Throughput => {
                format!("throughput: {size} B messages, as fast as the sender can go")
            }
            Pattern::Fanout => {
                let free = settings.cpus.len().saturating_sub(1);
                let note = if receivers > free {
                    format!(" (more receivers than the {free} free CPU(s): they share)")
                } else {
                    String::new()
                };
                format!("fanout: one-way latency to {receivers} receiver(s), {size} B{note}")
            }
        };
        println!("\n{what}");
        let mut table = comfy_table::Table::new();
        table.load_preset(comfy_table::presets::UTF8_BORDERS_ONLY);
        let reference = figs
            .iter()
            .find(|f| f.mechanism == "shmbus")
            .and_then(|f| f.ns(0.5, t));
        if pattern == Pattern::Throughput {
            table.set_header(vec![
                "mechanism",
                "msgs/s",
                "bytes/s",
                "rounds min..max",
                "lost",
                "sys/msg",
                "cs/msg",
                "rx cpu",
            ]);
        } else {
            let mut header = vec![
                "mechanism",
                "p50",
                "p90",
                "p99",
                "p99.9",
                "max",
                "p50 rounds",
                "x shmbus",
            ];
            if pattern == Pattern::Fanout {
                header.extend(["worst rx p50", "worst rx p99"]);
            }
            header.extend(["lost", "sys/msg", "cs/msg", "rx cpu"]);
            table.set_header(header);
        }
        let corrupt: Vec<String> = figs
            .iter()
            .filter(|f| f.checksum_errors > 0)
            .map(|f| format!("{} ({})", f.mechanism, f.checksum_errors))
            .collect();
        for f in figs {
            let name = if f.mechanism == MEMCPY {
                "memcpy (1 core)".to_owned()
            } else if f.in_process {
                format!("{} (in-process)", f.mechanism)
            } else {
                f.mechanism.to_owned()
            };
            // A row paced slower than the run (it sleeps between messages).
            let run_pace = settings.pace.as_nanos() as f64;
            let pace = f.pace as f64 / t;
            let name = if f.pace > 0 && pace > run_pace * 1.01 {
                format!("{name} (1 per {:.0} us)", pace / 1000.0)
            } else {
                name
            };
            if let Some(why) = &f.skipped {
                table.add_row(vec![name, format!("not run: {why}")]);
                continue;
            }
            if let Some(why) = &f.failed {
                table.add_row(vec![name, format!("FAILED: {why}")]);
                continue;
            }
            let sys = f
                .syscalls_per_msg()
                .map_or("?".into(), |s| format!("{s:.2}"));
            let cs = format!("{:.3}", f.ctx_per_msg());
            // The receiver process's CPU, % of one core (cross-process rows).
            let cpu = f
                .receiver_cpu(t)
                .map_or("-".into(), |c| format!("{:.1} %", c * 100.0));
            let lost = if pattern == Pattern::Pingpong {
                "-".into()
            } else {
                f.lost.to_string()
            };
            if pattern == Pattern::Throughput {
                let spread = match (
                    f.round_rate.iter().cloned().reduce(f64::min),
                    f.round_rate.iter().cloned().reduce(f64::max),
                ) {
                    (Some(a), Some(b)) => format!("{}..{}", fmt_rate(Some(a)), fmt_rate(Some(b))),
                    _ => "-".into(),
                };
                let rate = f.msgs_per_sec();
                table.add_row(vec![
                    name,
                    fmt_rate(rate),
                    fmt_bytes(rate.map(|r| r * f.case.msg_size as f64)),
                    spread,
                    lost,
                    sys,
                    cs,
                    cpu,
                ]);
            } else {
                let rounds = match (f.round_p50.iter().min(), f.round_p50.iter().max()) {
                    (Some(&a), Some(&b)) => format!(
                        "{}..{}",
                        fmt_ns(Some(a as f64 / t)),
                        fmt_ns(Some(b as f64 / t))
                    ),
                    _ => "-".into(),
                };
                let ratio = match (f.ns(0.5, t), reference) {
                    (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
                    _ => "-".into(),
                };
                let mut row = vec![
                    name,
                    fmt_ns(f.ns(0.5, t)),
                    fmt_ns(f.ns(0.9, t)),
                    fmt_ns(f.ns(0.99, t)),
                    fmt_ns(f.ns(0.999, t)),
                    fmt_ns(f.max_ns(t)),
                    rounds,
                    ratio,
                ];
                if pattern == Pattern::Fanout {
                    row.extend([fmt_ns(f.worst_ns(0.5, t)), fmt_ns(f.worst_ns(0.99, t))]);
                }
                row.extend([lost, sys, cs, cpu]);
                table.add_row(row);
            }
        }
        println!("{table}");
        if !corrupt.is_empty() {
            println!(
                "payload check FAILED (torn or corrupt messages): {}",
                corrupt.join(", ")
            );
        }
        if pattern == Pattern::Throughput {
            println!(
                "memcpy (1 core): the sender's loop copying each message into a \
                 {} MiB ring itself, no channel, no second core (best of {MEMCPY_PASSES} passes)",
                MEMCPY_RING >> 20
            );
        }
    }
}

/// Prints fanout's worst receiver by receiver count: a row per mechanism,
/// a column per N, each cell the p50 / p99 of the receiver with the highest
/// median in each round (rounds merged).
pub fn print_fanout_widths(results: &[Figures], settings: &Settings) {
    let t = settings.ticks_per_ns;
    let rows: Vec<&Figures> = results
        .iter()
        .filter(|f| f.case.pattern == Pattern::Fanout && f.ran())
        .collect();
    let mut widths: Vec<usize> = rows.iter().map(|f| f.case.receivers).collect();
    widths.sort_unstable();
    widths.dedup();
    if widths.len() < 2 {
        return;
    }
    let mut mechs: Vec<&str> = Vec::new();
    for f in &rows {
        if !mechs.contains(&f.mechanism) {
            mechs.push(f.mechanism);
        }
    }
    println!("\nfanout by receivers: the worst receiver's one-way p50 / p99");
    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::UTF8_BORDERS_ONLY);
    let mut header = vec!["mechanism".to_owned()];
    header.extend(widths.iter().map(|n| format!("{n} rx")));
    table.set_header(header);
    for m in mechs {
        let mut row = vec![m.to_owned()];
        for &n in &widths {
            let cell = rows
                .iter()
                .find(|f| f.mechanism == m && f.case.receivers == n)
                .map_or("-".into(), |f| {
                    format!(
                        "{} / {}",
                        fmt_ns(f.worst_ns(0.5, t)),
                        fmt_ns(f.worst_ns(0.99, t))
                    )
                });
            row.push(cell);
        }
        table.add_row(row);
    }
    println!("{table}");
}
