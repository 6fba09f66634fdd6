#!/usr/bin/env bash
# docs/LAYOUT.md is enough to read a bus: tools/check_layout.sh compares
# tools/read_bus.py (written from the page alone) with `shmbus` on a plain
# bus with a subscriber's line left behind (LAYOUT.md 5.1), on a pool
# bus lapped once (LAYOUT.md 19), and on a stream of a named record type
# (LAYOUT.md 20). Uses $SHMBUS_BIN, or builds the tool.
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
