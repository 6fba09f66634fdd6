#!/usr/bin/env python3
"""Markdown tables from a `shmbus bench --json` file, for the README.

    python3 tools/bench_table.py bench.json
"""
import json
import sys


def ns(v):
    if v is None:
        return "-"
    if v >= 1_000_000:
        return f"{v / 1e6:.1f} ms"
    if v >= 10_000:
        return f"{v / 1000:.1f} µs"
    return f"{v:.0f} ns"


def rate(v):
    if v is None:
        return "-"
    return f"{v / 1e6:.2f} M/s" if v >= 1e6 else f"{v / 1e3:.0f} k/s"


def gbs(v):
    if v is None:
        return "-"
    return f"{v / 1e9:.2f} GB/s" if v >= 1e9 else f"{v / 1e6:.0f} MB/s"


def num(v, digits=2):
    return "?" if v is None else f"{v:.{digits}f}"


def name(r):
    return r["mechanism"] + (" (in-process)" if r["in_process"] else "")


def main(path):
    d = json.load(open(path))
    m = d["machine"]
    print(f"Machine: {m['cpu']}, {m['cores']} cores, {m['kernel']}; clock {m['clock']}, "
          f"CPUs {m['cpus_pinned']}.\n")
    res = [r for r in d["results"] if not r.get("skipped")]
    skipped = [r for r in d["results"] if r.get("skipped")]
    for pattern, title in [("pingpong", "Round trip (pingpong)"), ("oneway", "One-way latency (paced)"),
                           ("fanout", "Fan-out, one-way latency")]:
        rows = [r for r in res if r["pattern"] == pattern]
        if not rows:
            continue
        print(f"**{title}**\n")
        print("| mechanism | size | rx | p50 | p90 | p99 | p99.9 | max | p50 over rounds | sys/msg | cs/msg |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            l = r["latency_ns"] or {}
            rounds = l.get("p50_rounds") or []
            spread = f"{ns(min(rounds))}–{ns(max(rounds))}" if rounds else "-"
            print(f"| {name(r)} | {r['msg_size']} B | {r['receivers']} | {ns(l.get('p50'))} | {ns(l.get('p90'))} | "
                  f"{ns(l.get('p99'))} | {ns(l.get('p999'))} | {ns(l.get('max'))} | {spread} | "
                  f"{num(r['syscalls_per_msg'])} | {num(r['ctx_switches_per_msg'], 3)} |")
        print()
    rows = [r for r in res if r["pattern"] == "throughput"]
    if rows:
        sizes = sorted({r["msg_size"] for r in rows})
        mechs = []
        for r in rows:
            if name(r) not in mechs:
                mechs.append(name(r))
        print("**Throughput (messages/s delivered; bytes/s; lost where the mechanism drops)**\n")
        print("| mechanism | " + " | ".join(f"{s} B" for s in sizes) + " |")
        print("|---|" + "---|" * len(sizes))
        for mech in mechs:
            cells = []
            for s in sizes:
                r = next((r for r in rows if name(r) == mech and r["msg_size"] == s), None)
                if r is None:
                    cells.append("-")
                    continue
                lost = f", lost {r['lost']}" if r.get("lost") else ""
                cells.append(f"{rate(r['msgs_per_sec'])} ({gbs(r['bytes_per_sec'])}{lost})")
            print(f"| {mech} | " + " | ".join(cells) + " |")
        print()
    if skipped:
        print("Not run: " + "; ".join(sorted({f"{name(r)} {r['pattern']} {r['msg_size']} B ({r['skipped']})" for r in skipped})) + ".\n")
    print("**Targets** (ratios from this run)\n")
    print("| target | wanted | measured | |")
    print("|---|---|---|---|")
    for t in d.get("targets", []):
        print(f"| {t['target']} | {t['wanted']} | {t['found']} | {'met' if t['met'] else '**missed**'} |")


if __name__ == "__main__":
    main(sys.argv[1])
