#!/usr/bin/env bash
# docs/LAYOUT.md is enough to read a bus: tools/check_layout.sh compares
# tools/read_bus.py (written from the page alone) with `shmbus` on a plain
# bus with a subscriber's line left behind (LAYOUT.md 5.1), on a pool
# bus lapped once (LAYOUT.md 19), and on a stream of a named record type
# (LAYOUT.md 20), on a blackboard read key by key (LAYOUT.md 21), and on a
# service with calls in flight (its bytes: wire::service). Uses
# $SHMBUS_BIN, or builds the tool.
set -euo pipefail
cd "$(dirname "$0")/.."
. ci/tool.sh
shmbus_tool
export SHMBUS_BIN=$SHMBUS SHMBUS_NO_BUILD=1
name="shmbus-ci-layout-$$"
trap '"$SHMBUS" rm "$name" >/dev/null 2>&1 || true' EXIT
"$SHMBUS" create "$name" --msg-size 16 --slots 8 --lossless-subscribers 3 --evict-ms 200
# The gate's bytes (LAYOUT.md 5, 5.1, 13.1), each made non-zero: a lossless
# subscriber stopped while pub laps it (the publisher blocks 200 ms on it,
# then evicts it: evictions 1, blocked_ns, contract evicted), a live one
# that gates (its bit in gating), and one that has come and gone.
"$SHMBUS" sub "$name" --lossless > /dev/null & stalled=$!
"$SHMBUS" sub "$name" --lossless > /dev/null & live=$!
trap 'kill -KILL $stalled $live 2>/dev/null || true; "$SHMBUS" rm "$name" >/dev/null 2>&1 || true' EXIT
# Polls `stat --json` (at most 10 s) until the Python test $1 holds of it (s).
until_stat() {
    for _ in $(seq 200); do
        if "$SHMBUS" stat "$name" --json | python3 -c "import json,sys; s=json.load(sys.stdin); sys.exit(0 if $1 else 1)"; then
            return 0
        fi
        sleep 0.05
    done
    echo "FAIL: timed out waiting for $1 on $name" >&2
    "$SHMBUS" stat "$name" >&2
    exit 1
}
# Both joined (their bits set) before one is stopped.
until_stat '[l["contract"] for l in s["per_subscriber"]] == ["lossless", "lossless"]'
kill -STOP $stalled
seq 1 12 | "$SHMBUS" pub "$name"
kill -CONT $stalled
# It reads what is left after its lag; the live one read everything.
until_stat 'all(l["lag"] == 0 for l in s["per_subscriber"])'
"$SHMBUS" sub "$name" --lossless --from oldest --count 2 --timeout 1 > /dev/null
until_stat 'sorted(l["contract"] for l in s["per_subscriber"]) == ["evicted", "lossless", "lossless"]'
bash tools/check_layout.sh "$name" 8
kill -KILL $stalled $live
wait $stalled $live 2>/dev/null || true
"$SHMBUS" rm "$name"
# A pool bus, lapped once: its pool and messages from blocks.
"$SHMBUS" create "$name" --pool 4096:16 --slots 8
seq 1 10 | "$SHMBUS" pub "$name"
bash tools/check_layout.sh "$name" 8
"$SHMBUS" rm "$name"
# A stream recording its record type, with records in it: the type, the
# largest record and the cursors.
"$SHMBUS" create "$name" --kind stream --bytes 4096 --type md.Tick:8
printf '0123456789abcdef\nfedcba9876543210\n' | "$SHMBUS" pub "$name"
bash tools/check_layout.sh "$name"
python3 tools/read_bus.py "$name" | grep -x '# type_name: md.Tick' >/dev/null
"$SHMBUS" rm "$name"
# A blackboard (LAYOUT.md 21): its header, control words and every key read
# back by the page's hash and probe, against `shmbus stat` and `shmbus get`.
"$SHMBUS" create "$name" --kind blackboard --keys 50 --key-size 12 --value-size 24 --type md.Quote:8 --key-type sym:1
for i in $(seq 1 40); do "$SHMBUS" put "$name" "sym$i" "quote $i"; done
for i in $(seq 1 40 | shuf -n 10 --random-source=<(yes)); do "$SHMBUS" put "$name" "sym$i" "again $i"; done
for i in 3 7 11; do "$SHMBUS" put "$name" "sym$i"; done
python3 - "$name" "$SHMBUS" <<'PY'
import json, subprocess, sys
name, tool = sys.argv[1], sys.argv[2]
ours = json.loads(subprocess.run(["python3", "tools/read_bus.py", name, "--json"], check=True, capture_output=True, text=True).stdout)
theirs = json.loads(subprocess.run([tool, "stat", name, "--json"], check=True, capture_output=True, text=True).stdout)
same = ["kind", "max_keys", "keys", "entries", "updates", "mid_write", "key_type", "key_size", "value_type", "value_size", "writer_pid", "writer_alive"]
bad = [k for k in same if ours[k] != theirs[k]]
if bad:
    sys.exit(f"FAIL: read_bus.py and shmbus stat differ on {[(k, ours[k], theirs[k]) for k in bad]}")
for i in range(1, 46):
    key = f"sym{i}".encode().ljust(12, b"\0").hex()
    a = subprocess.run(["python3", "tools/read_bus.py", name, "--get", key], capture_output=True, text=True)
    b = subprocess.run([tool, "get", name, "--hex", "--with-version", key], capture_output=True, text=True)
    if (a.returncode == 0) != (b.returncode == 0) or a.stdout != b.stdout:
        sys.exit(f"FAIL: key sym{i}: read_bus.py {a.returncode} {a.stdout!r}, shmbus get {b.returncode} {b.stdout!r}")
print(f"blackboard: {ours['keys']} keys, {ours['updates']} updates: read_bus.py agrees with shmbus")
PY
"$SHMBUS" rm "$name"
# A blackboard for many writers (LAYOUT.md 21.1, 21.2, 21.7): the flag and
# the unblock word against `shmbus stat`, and keys written by `put` as one
# of its writers against `shmbus get`.
"$SHMBUS" create "$name" --kind blackboard --keys 8 --key-size 8 --value-size 8 --many-writers --unblock-ms 250
for i in 1 2 3; do "$SHMBUS" put "$name" "k$i" "v$i"; done
"$SHMBUS" put "$name" k2
python3 - "$name" "$SHMBUS" <<'PY'
import json, subprocess, sys
name, tool = sys.argv[1], sys.argv[2]
ours = json.loads(subprocess.run(["python3", "tools/read_bus.py", name, "--json"], check=True, capture_output=True, text=True).stdout)
if (ours["many_writers"], ours["unblock_ns"], ours["keys"], ours["updates"]) != (True, 250_000_000, 2, 4):
    sys.exit(f"FAIL: many-writer blackboard as read_bus.py reads it: {ours}")
theirs = json.loads(subprocess.run([tool, "stat", name, "--json"], check=True, capture_output=True, text=True).stdout)
bad = [k for k in ["many_writers", "unblock_ns", "keys", "updates"] if ours[k] != theirs[k]]
if bad:
    sys.exit(f"FAIL: read_bus.py and shmbus stat differ on {[(k, ours[k], theirs[k]) for k in bad]}")
for i in (1, 2, 3):
    key = f"k{i}".encode().ljust(8, b"\0").hex()
    a = subprocess.run(["python3", "tools/read_bus.py", name, "--get", key], capture_output=True, text=True)
    b = subprocess.run([tool, "get", name, "--hex", "--with-version", key], capture_output=True, text=True)
    if (a.returncode == 0) != (b.returncode == 0) or a.stdout != b.stdout:
        sys.exit(f"FAIL: key k{i}: read_bus.py {a.returncode} {a.stdout!r}, shmbus get {b.returncode} {b.stdout!r}")
print("many-writer blackboard: flag and unblock word read, keys agree with shmbus get")
PY
"$SHMBUS" rm "$name"
# A service: server lines, client entries and call slots in every phase a
# stopped scene holds (an answered past, a call cancelled after its take,
# one taken, one posted), read by read_bus.py against `shmbus stat`.
"$SHMBUS" create "$name" --kind service --clients 4 --slots 2 --servers 3 --request-size 100 --response-size 40
"$SHMBUS" serve "$name" --echo & echo_server=$!
trap 'kill -KILL $echo_server 2>/dev/null || true; "$SHMBUS" rm "$name" >/dev/null 2>&1 || true' EXIT
until_stat 's["live_servers"] == 1'
for i in 1 2 3; do "$SHMBUS" call "$name" "hello $i" > /dev/null; done
kill -TERM $echo_server
wait $echo_server
# Two servers that hold every request: the first call is taken and given
# up (cancelled), the second taken, the third posted with both asleep.
"$SHMBUS" serve "$name" --echo --delay-ms 600000 & slow1=$!
"$SHMBUS" serve "$name" --echo --delay-ms 600000 & slow2=$!
trap 'kill -KILL $slow1 $slow2 ${taken:-} ${posted:-} 2>/dev/null || true; "$SHMBUS" rm "$name" >/dev/null 2>&1 || true' EXIT
until_stat 's["live_servers"] == 2'
status=0
"$SHMBUS" call "$name" "given up" --timeout 0.3 2> /dev/null || status=$?
[ "$status" = 3 ] || { echo "FAIL: a call held by a slow server ended $status, expected 3 (timed out)" >&2; exit 1; }
"$SHMBUS" call "$name" "taken" --timeout 60 > /dev/null 2>&1 & taken=$!
until_stat 'sum(k["phase"] == "taken" for c in s["per_client"] for k in c["outstanding"]) == 1'
"$SHMBUS" call "$name" "posted" --timeout 60 > /dev/null 2>&1 & posted=$!
until_stat 'sorted(k["phase"] for c in s["per_client"] for k in c["outstanding"]) == ["cancelled", "posted", "taken"]'
kill -STOP $slow1 $slow2
python3 - "$name" "$SHMBUS" <<'PY'
import json, subprocess, sys
name, tool = sys.argv[1], sys.argv[2]
ours = json.loads(subprocess.run(["python3", "tools/read_bus.py", name, "--json"], check=True, capture_output=True, text=True).stdout)
theirs = json.loads(subprocess.run([tool, "stat", name, "--json"], check=True, capture_output=True, text=True).stdout)
same = ["kind", "clients", "slots", "servers", "request_size", "request_type", "request_align",
        "response_size", "response_type", "response_align", "answered", "in_flight",
        "live_servers", "live_clients", "per_server", "per_client"]
# read_bus.py also shows a client's posted bits and bell: compared on
# stat's keys.
for key in ("per_server", "per_client"):
    ours[key] = [{k: v for k, v in line.items() if k in theirs_line}
                 for line, theirs_line in zip(ours[key], theirs[key])] + ours[key][len(theirs[key]):]
bad = [k for k in same if ours[k] != theirs[k]]
if bad:
    sys.exit(f"FAIL: read_bus.py and shmbus stat differ on {[(k, ours[k], theirs[k]) for k in bad]}")
if (ours["answered"], ours["per_server"][0]["answered"], ours["per_server"][0]["alive"]) != (3, 3, True):
    sys.exit(f"FAIL: the echo server's 3 answers are not on server entry 0: {ours['per_server']}")
phases = sorted((k["phase"], k["server"] is None) for k in ours["calls"])
if phases != [("cancelled", False), ("posted", True), ("taken", False)]:
    sys.exit(f"FAIL: call slots as read_bus.py reads them: {ours['calls']}")
print(f"service: {len(ours['per_server'])} servers, {len(ours['per_client'])} clients, "
      f"{ours['in_flight']} calls in flight: read_bus.py agrees with shmbus")
PY
{ kill -KILL $slow1 $slow2 $taken $posted; wait $slow1 $slow2 $taken $posted; } 2>/dev/null || true
"$SHMBUS" rm "$name"
