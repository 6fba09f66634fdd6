#!/usr/bin/env python3
"""What .ci/run asserts of the benchmark's quick runs: the rows that must
have run did, none failed, every payload passed its check.

    ci/bench_check.py quick JSON    # shmbus-bench --quick
    ci/bench_check.py large JSON    # shmbus-bench --large --quick
    ci/bench_check.py record JSON   # shmbus-bench --record --quick

The benchmark fails its own run (exit 1, naming the row) when a row fails
or a payload is torn; this reads the JSON it wrote as well, so a row gone
missing, a table left empty or a figure that is not a number fails the
gate too. A row may be "skipped" only for a reason the benchmark knows
before it runs (a size or pattern its mechanism does not do), and every
mechanism of the run must have run at least one case.
"""

import json
import math
import sys


def fail(why):
    print(f"bench_check: {why}", file=sys.stderr)
    sys.exit(1)


def positive(v):
    return isinstance(v, (int, float)) and math.isfinite(v) and v > 0


def results(d, must):
    """The result rows: none failed, none torn, each skip with its reason,
    every mechanism run somewhere, and `must` among those run."""
    rows = d.get("results") or fail("no results")
    for r in rows:
        name = f"{r['mechanism']} {r['pattern']} {r['msg_size']} B x{r['receivers']}"
        if r.get("failed"):
            fail(f"{name} failed: {r['failed']}")
        if r.get("skipped") is not None:
            if not str(r["skipped"]).strip():
                fail(f"{name} skipped without a reason")
            continue
        if r.get("checksum_errors") != 0:
            fail(f"{name}: {r.get('checksum_errors')} payload check failures")
    every = {r["mechanism"] for r in rows}
    ran = {r["mechanism"] for r in rows if r.get("skipped") is None}
    if every - ran:
        fail(f"never ran: {sorted(every - ran)} (each row skipped: "
             + "; ".join(sorted({f"{r['mechanism']}: {r['skipped']}" for r in rows
                                 if r["mechanism"] in every - ran})) + ")")
    if not set(must) <= ran:
        fail(f"did not run: {sorted(set(must) - ran)}")
    return rows


# The many-publishers table, every row (docs/GUIDE.md, "Many publishers
# and subscriber groups"): the two-process row is the one the claim's
# contention shows in.
MPMC = [
    "shmbus Publisher, 1 process",
    "shmbus ManyPublisher, 1 process",
    "shmbus ManyPublisher, 2 processes (mean, CPU time)",
    "photon-ring Publisher, 1 thread",
    "photon-ring MpPublisher, 1 thread",
    "photon-ring MpPublisher, 2 threads (mean, CPU time)",
    "shmbus SubscriberGroup of 10, per consumer",
    "shmbus 10 independent subscribers, per consumer",
]


# The request-response rows' names: at 64 B, 4 KiB and 1 MiB, with 1 and 4
# clients (the two-bus ping-pong with 1, the floor at 64 B with 1): 22 rows.
REQREP = ["floor", "iceoryx2-reqrep", "shmbus-2bus", "shmbus-reqrep", "uds-reqrep"]


def quick(d):
    if d.get("schema") != "shmbus-bench/1":
        fail(f"schema {d.get('schema')!r}, expected shmbus-bench/1")
    rows = results(d, ["shmbus", "shmbus-lossless", "shmbus-futex", "shmbus-async",
                       "shmbus-select64", "ringfire-async", "ringfire", "iceoryx2"])
    mpmc = {r["what"]: r for r in (d.get("mpmc") or {}).get("rows", [])}
    if list(mpmc) != MPMC:
        fail(f"many-publishers rows {list(mpmc)}, expected {MPMC}")
    for what, r in mpmc.items():
        if not positive(r.get("ns_per_msg")):
            fail(f"many-publishers row {what!r}: ns_per_msg {r.get('ns_per_msg')!r}")
    two = mpmc["shmbus ManyPublisher, 2 processes (mean, CPU time)"]
    if len(two.get("detail", {}).get("rounds", [])) != 3:
        fail(f"the two-process row has not its 3 rounds: {two}")
    idle = (d.get("idle") or {}).get("rows", [])
    if len(idle) != 4:
        fail(f"{len(idle)} idle rows, expected 4")
    for r in idle:
        if r.get("failed") or r.get("cpu_percent") is None:
            fail(f"idle row {r['mechanism']} x{r['subscribers']}: {r}")
    stall = (d.get("stall") or {}).get("rows", [])
    if len(stall) != 2 or not all(r.get("max_ms") is not None and r.get("block_ms")
                                  for r in stall):
        fail(f"stalled-subscriber rows: {stall}")
    board = [r["name"] for r in (d.get("blackboard") or {}).get("rows", [])]
    if board != ["shmbus-entry", "shmbus", "ringfire", "iceoryx2"]:
        fail(f"blackboard rows {board}")
    rr = (d.get("reqrep") or {}).get("rows", [])
    if sorted({r["name"] for r in rr}) != REQREP or len(rr) != 22:
        fail(f"request-response rows {[(r['name'], r['msg_size'], r['clients']) for r in rr]}")
    for r in rr:
        if r.get("failed") or not positive(r.get("p50_ns")):
            fail(f"request-response row {r['name']} {r['msg_size']} B x{r['clients']}: {r}")
    cost = {r["mechanism"] for r in rows if r.get("publish_ns")}
    if not {"shmbus", "shmbus-lossless", "ringfire-lossless"} <= cost:
        fail(f"publish-cost rows {sorted(cost)}")
    print(f"{len(rows)} results, {len(mpmc)} many-publishers rows, {len(idle)} idle rows, "
          f"{len(cost)} publish-cost rows, {len(stall)} stall rows, "
          f"{len(board)} blackboard rows, {len(rr)} request-response rows")


def large(d):
    rows = results(d, ["shmbus-zc", "iceoryx2", "crossbar-pool"])
    print(f"{len(rows)} results")


def record(d):
    r = d.get("record") or fail("no record table")
    if [c["msg_size"] for c in r["capture"]] != [4096, 64]:
        fail(f"capture rows {r['capture']}")
    if not (r["replay_pace_error_us"] and r["replay_max"]):
        fail(f"no replay rows: {r.get('replay_skipped')}")
    mcap = r.get("mcap_capture") or fail("no MCAP capture rows")
    if sorted((m["msg_size"], m["compression"]) for m in mcap) != sorted(
        (s, c) for s in (4096, 64) for c in ("none", "zstd", "lz4")
    ):
        fail(f"MCAP capture rows {[(m['msg_size'], m['compression']) for m in mcap]}")
    for m in mcap:
        rounds = m.get("rounds") or []
        ok = (len(rounds) >= 2 and m["messages"] > 0 and m["file_bytes"] > 0
              and all(x["msgs_per_sec"] > 0 and x["native_msgs_per_sec"] > 0 for x in rounds))
        if not ok:
            fail(f"a torn MCAP capture row: {m}")
    if len(r["targets"]) != 7:
        fail(f"targets {r['targets']}")
    print(f"{len(r['capture'])} capture rows, {len(mcap)} MCAP rows, {len(r['targets'])} targets")


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("quick", "large", "record"):
        fail("usage: ci/bench_check.py quick|large|record JSON")
    with open(sys.argv[2]) as f:
        d = json.load(f)
    {"quick": quick, "large": large, "record": record}[sys.argv[1]](d)


main()
