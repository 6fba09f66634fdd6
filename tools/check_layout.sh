#!/usr/bin/env bash
# Checks that docs/LAYOUT.md is enough to read a bus: the layout-only reader
# tools/read_bus.py must agree with the `shmbus` CLI on an existing bus.
#
#   tools/check_layout.sh NAME_OR_PATH [N]
#
# NAME_OR_PATH is an existing broadcast bus, e.g. one made with
#   target/debug/shmbus create demo --msg-size 16 --capacity 8
# and a few `shmbus pub` calls. The bus should be quiet while this runs: no
# publisher writing and nobody subscribing, or the two views may differ.
# A pool bus (LAYOUT.md section 19) is checked too: its geometry, census
# and holders against `shmbus stat`, its messages (read from their blocks)
# against `shmbus sub`.
#
# Steps:
#   1. cargo build -p shmbus-cli (skip with SHMBUS_NO_BUILD=1; use another
#      binary with SHMBUS_BIN=/path/to/shmbus);
#   2. compare `read_bus.py --json` with `shmbus stat NAME --json` on every
#      field both print (matched by key name at any depth of the CLI's JSON);
#   3. compare the messages of `shmbus sub NAME --from oldest --count N
#      --timeout 1` (extra arguments in SHMBUS_SUB_ARGS replace
#      `--timeout 1`) with `read_bus.py --from oldest --count N`. N defaults
#      to the number of messages still in the ring. Each CLI message line
#      be the payload with its zero padding trimmed (the CLI prints raw
#      bytes), or else contain it as text or hex, and if it starts with a
#      number, that number must be the sequence. On a pool bus, both read
#      each message from its block.
# Each subscriber line's gate fields (LAYOUT.md sections 5.1 and 13.1:
# contract, evictions, blocked_ns) are compared, and the bus's
# max_gating and evict_ns (section 5).
# A stream (LAYOUT.md section 20) is checked by step 2 alone (its record
# type, largest record and cursors): only its consumer reads its records.
# Exit status 0 when everything compared agrees, 1 otherwise.
set -euo pipefail

if [[ $# -lt 1 || $# -gt 2 ]]; then
    echo "usage: $0 NAME_OR_PATH [N]" >&2
    exit 1
fi
bus=$1
root=$(cd "$(dirname "$0")/.." && pwd)
reader=("python3" "$root/tools/read_bus.py")
shmbus=${SHMBUS_BIN:-$root/target/debug/shmbus}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [[ ${SHMBUS_NO_BUILD:-0} != 1 && -z ${SHMBUS_BIN:-} ]]; then
    echo "== building shmbus-cli"
    (cd "$root" && cargo build -q -p shmbus-cli)
fi
if [[ ! -x $shmbus ]]; then
    echo "FAIL: no shmbus binary at $shmbus" >&2
    exit 1
fi

echo "== header and state: read_bus.py --json vs shmbus stat --json"
"${reader[@]}" "$bus" --json >"$tmp/py.json"
"$shmbus" stat "$bus" --json >"$tmp/cli.json"

set +e
python3 - "$tmp/py.json" "$tmp/cli.json" <<'EOF'
import json, sys

py = json.load(open(sys.argv[1]))
try:
    cli = json.load(open(sys.argv[2]))
except ValueError as e:
    print(f"FAIL: `shmbus stat --json` did not print JSON ({e}); is it implemented?")
    sys.exit(1)

def leaves(obj, prefix=""):
    """Every scalar or list in the CLI's JSON, keyed by its leaf name; the
    pool's (whose block type repeats the header's key names) are matched
    apart, below."""
    out = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            if not prefix and k == "pool":
                continue
            if isinstance(v, dict):
                for lk, lv in leaves(v, f"{prefix}{k}.").items():
                    out.setdefault(lk, lv)
            else:
                out.setdefault(k, (f"{prefix}{k}", v))
    return out

def all_leaves(obj, prefix=""):
    """Every (path, value) of a scalar or list in the CLI's JSON."""
    out = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            if isinstance(v, dict):
                out += all_leaves(v, f"{prefix}{k}.")
            else:
                out.append((f"{prefix}{k}", v))
    return out

def norm(v):
    """Compare numbers whether printed as ints or "0x..." strings, and
    strings without case."""
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, str):
        s = v.strip()
        try:
            return int(s, 0)
        except ValueError:
            return s.lower()
    if isinstance(v, list):
        return sorted(norm(x) for x in v)
    return v

# Names the CLI might use for the same thing.
aliases = {
    "msg_size": ["message_size", "size", "max_record"],
    "msg_align": ["align", "message_align"],
    "type_hash": ["name_hash"],
    "type_name": ["name", "type"],
    "head": ["cursor", "next_sequence"],
    "created_ns": ["created_unix_ns"],
    "max_gating": ["max"],
    "path": [],
    "file_len": [],
    "magic": [],
    "type_hash_matches_name": [],
}
# A second CLI key for a field that read_bus prints once.
extra = {"subscriber_pids": "subscribers"}

cli_leaves = leaves(cli)
compared = failed = 0
# A pool bus's fields (LAYOUT.md section 19) are compared below, and only
# those `shmbus stat` prints too.
pool_keys = {k for k in py if k.startswith("pool_")}
for key, pv in py.items():
    if key in pool_keys:
        continue
    names = [key] + aliases.get(key, [])
    hit = next((n for n in names if n in cli_leaves), None)
    if hit is None:
        continue
    where, cv = cli_leaves[hit]
    compared += 1
    same = norm(pv) == norm(cv)
    if isinstance(pv, list) and isinstance(cv, int) and not isinstance(cv, bool):
        same = len(pv) == cv  # the CLI may print a count where we list pids
    if key == "path":
        same = str(pv).rstrip("/") == str(cv).rstrip("/")
    print(f"  {'ok  ' if same else 'DIFF'} {key:<16} read_bus={pv!r:<26} shmbus {where}={cv!r}")
    failed += not same
for ck, pk in extra.items():
    if ck in cli_leaves and pk in py:
        where, cv = cli_leaves[ck]
        compared += 1
        same = norm(py[pk]) == norm(cv)
        print(f"  {'ok  ' if same else 'DIFF'} {pk:<16} read_bus={py[pk]!r:<26} shmbus {where}={cv!r}")
        failed += not same
# Each subscriber's line (LAYOUT.md section 5.1), matched by registry entry.
lines_py = {l["entry"]: l for l in py.get("subscriber_lines", [])}
lines_cli = {l["entry"]: l for l in cli.get("per_subscriber", [])}
if set(lines_py) != set(lines_cli):
    print(f"  DIFF subscriber lines: read_bus entries {sorted(lines_py)}, shmbus {sorted(lines_cli)}")
    failed += 1
for entry in sorted(set(lines_py) & set(lines_cli)):
    for k in ["pid", "alive", "position", "lag", "delivered", "skipped", "corrupt",
              "contract", "evictions", "blocked_ns"]:
        # The CLI names the publisher's time blocked on it so.
        ck = "publisher_blocked_ns" if k == "blocked_ns" else k
        pv, cv = lines_py[entry].get(k), lines_cli[entry].get(ck)
        compared += 1
        same = pv == cv or (k == "corrupt" and (pv is None) == (cv is None))
        print(f"  {'ok  ' if same else 'DIFF'} line {entry} {k:<9} read_bus={pv!r:<26} shmbus {cv!r}")
        failed += not same
# A pool bus: each field read_bus.py prints as `pool_X`, matched with a CLI
# key `pool_X` or `X` whose path names the pool (the census counts: the pool
# or the census); nothing is required of the CLI.
pool_matched = set()

def find_pool(names, hints):
    for where, v in all_leaves(cli):
        leaf = where.rsplit(".", 1)[-1]
        if leaf in names and any(h in where.lower() for h in hints):
            pool_matched.add(leaf)
            return where, v
    return None

def compare_pool(label, pv, hit):
    global compared, failed
    where, cv = hit
    compared += 1
    same = norm(pv) == norm(cv)
    print(f"  {'ok  ' if same else 'DIFF'} {label:<16} read_bus={pv!r:<26} shmbus {where}={cv!r}")
    failed += not same

pool_compared = 0
for key in sorted(pool_keys):
    pv = py[key]
    if isinstance(pv, (dict, list)):
        continue
    hit = find_pool({key, key[len("pool_"):]}, ("pool",))
    if hit:
        compare_pool(key, pv, hit)
        pool_compared += 1
for field, pv in py.get("pool_census", {}).items():
    hit = find_pool({field, "pool_" + field}, ("pool", "census"))
    if hit:
        compare_pool(f"census {field}", pv, hit)
        pool_compared += 1
# The active entries (read_bus.py's pool_active) against a CLI list of
# holders under a pool key, matched by entry: pid, alive, and how many hold
# words are non-zero (a CLI count named held or held_blocks).
holders = next((v for where, v in all_leaves(cli)
                if "pool" in where.lower() and isinstance(v, list)
                and where.rsplit(".", 1)[-1] in ("holders", "active", "pool_active")
                and all(isinstance(x, dict) and "entry" in x for x in v)), None)
if "pool_active" in py and holders is not None:
    pool_matched.update(("holders", "active", "pool_active"))
    act_py = {e["entry"]: e for e in py["pool_active"]}
    act_cli = {e["entry"]: e for e in holders}
    pool_compared += 1
    compared += 1
    if set(act_py) != set(act_cli):
        print(f"  DIFF pool holders: read_bus entries {sorted(act_py)}, shmbus {sorted(act_cli)}")
        failed += 1
    for entry in sorted(set(act_py) & set(act_cli)):
        for k, ck in (("pid", "pid"), ("alive", "alive"), ("held", "held"), ("held", "held_blocks")):
            cv = act_cli[entry].get(ck)
            if ck not in act_cli[entry] or (k == "held" and not isinstance(cv, int)):
                continue
            pv = act_py[entry][k]
            compared += 1
            same = pv == cv
            print(f"  {'ok  ' if same else 'DIFF'} holder {entry} {ck:<11} read_bus={pv!r:<26} shmbus {cv!r}")
            failed += not same
if pool_keys and pool_compared < 8:
    print(f"  FAIL: a pool bus, but only {pool_compared} pool fields compared (want geometry and census)")
    failed += 1
extra["per_subscriber"] = "subscriber_lines"
only_cli = sorted(set(cli_leaves) - set(py) - set(extra) - {a for v in aliases.values() for a in v}
                  - pool_matched)
if only_cli:
    print(f"  (only in shmbus stat: {', '.join(only_cli)})")
if compared < 5:
    print(f"FAIL: only {compared} fields in common; is `shmbus stat --json` implemented?")
    sys.exit(1)
print(f"  {compared} fields compared, {failed} differ")
sys.exit(1 if failed else 0)
EOF
header_ok=$?
set -e

if python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["kind"] != "stream")' "$tmp/py.json"; then
    if [[ $header_ok -eq 0 ]]; then
        echo "PASS: read_bus.py (from docs/LAYOUT.md) agrees with shmbus on stream $bus"
        exit 0
    fi
    echo "FAIL: see DIFF lines above"
    exit 1
fi

n=${2:-$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(min(d["published"], d["capacity"]))' "$tmp/py.json")}
echo "== messages: $n from oldest"
"${reader[@]}" "$bus" -q --hex --from oldest --count "$n" >"$tmp/py.msgs"
set +e
# shellcheck disable=SC2086
"$shmbus" sub "$bus" --from oldest --count "$n" ${SHMBUS_SUB_ARGS:---timeout 1} >"$tmp/cli.msgs" 2>"$tmp/cli.err"
sub_rc=$?
set -e
cat "$tmp/cli.err" >&2
if [[ $sub_rc -ne 0 ]]; then
    echo "FAIL: shmbus sub exited with $sub_rc" >&2
    exit 1
fi

set +e
python3 - "$tmp/py.msgs" "$tmp/cli.msgs" <<'EOF'
import sys

py = [l.split("\t") for l in open(sys.argv[1]).read().splitlines() if l]
py = [(int(s), bytes.fromhex(h)) for s, h in py if s != "LAGGED"]
# `shmbus sub` prints each message's raw bytes, zero padding trimmed, one
# per line (lag reports go to stderr). Compared as bytes; a payload that
# contains a newline would split in two and show as a DIFF.
cli = [l for l in open(sys.argv[2], "rb").read().split(b"\n") if l.strip()]
cli = [l for l in cli if not l.lower().startswith(b"lagged")]

def forms(payload):
    t = payload.rstrip(b"\0")
    return {f for f in (payload.hex().encode(), t.hex().encode(), t) if f}

bad = 0
for i, (seq, payload) in enumerate(py):
    line = cli[i] if i < len(cli) else None
    trimmed = payload.rstrip(b"\0")
    if line is None:
        ok = False
    elif line == trimmed:
        ok = True
    else:
        # Another format: the line must contain the payload (text or hex),
        # and if it starts with a number, that number must be the sequence.
        ok = any(f in line for f in forms(payload))
        first = line.split()[0].rstrip(b":,") if line.split() else b""
        if ok and first.isdigit() and int(first) != seq:
            ok = False
    bad += not ok
    shown = trimmed.decode("utf-8", "replace")
    print(f"  {'ok  ' if ok else 'DIFF'} seq {seq:<20} read_bus={shown!r:<20} shmbus={line!r}")
if len(cli) != len(py):
    print(f"  DIFF read_bus gave {len(py)} messages, shmbus sub {len(cli)}")
    bad += 1
print(f"  {len(py)} messages compared, {bad} differ")
sys.exit(1 if bad else 0)
EOF
msgs_ok=$?
set -e

if [[ $header_ok -eq 0 && $msgs_ok -eq 0 ]]; then
    echo "PASS: read_bus.py (from docs/LAYOUT.md) agrees with shmbus on $bus"
    exit 0
fi
echo "FAIL: see DIFF lines above"
exit 1
