#!/usr/bin/env bash
# `shmbus bridge` between two hosts: two network namespaces joined by a
# veth pair (10.77.0.1 and 10.77.0.2, nothing else routed), host A with the
# upstream bus and `bridge out`, host B with `bridge in` and a subscriber.
# Buses have distinct names (the namespaces share /dev/shm).
#   1. every message crosses, in order;
#   2. with the link down for 2 s while messages keep coming, a subscriber
#      on B ends with delivered + skipped == published (loss, if any, is
#      reported exactly, never silent), then the link comes back and later
#      messages cross again.
# Needs root (ip netns); every wait is bounded; everything it made goes.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v ip >/dev/null || { apt-get update -qq && apt-get install -y -qq iproute2; }
cargo build -q -p shmbus-cli
SHMBUS=$PWD/target/debug/shmbus

A=shmbus-a-$$
B=shmbus-b-$$
VA=sbA$$
VB=sbB$$
up=/dev/shm/shmbus-netns-up-$$
down=/dev/shm/shmbus-netns-down-$$
key=shmbus/netns/$$
work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    ip netns del "$A" 2>/dev/null || true
    ip netns del "$B" 2>/dev/null || true
    rm -f "$up" "$down"
    rm -rf "$work"
}
trap cleanup EXIT
fail() {
    echo "FAILED: $*" >&2
    for f in "$work"/*; do echo "== $f" >&2; tail -20 "$f" >&2; done
    exit 1
}

ip netns add "$A"
ip netns add "$B"
ip link add "$VA" type veth peer name "$VB"
ip link set "$VA" netns "$A"
ip link set "$VB" netns "$B"
ip -n "$A" addr add 10.77.0.1/24 dev "$VA"
ip -n "$B" addr add 10.77.0.2/24 dev "$VB"
for ns in "$A" "$B"; do ip -n "$ns" link set lo up; done
ip -n "$A" link set "$VA" up
ip -n "$B" link set "$VB" up

# Waits (at most 60 s) until FILE has a line LINE.
wait_line() { # FILE LINE
    local i
    for ((i = 0; i < 6000; i++)); do
        grep -qx "$2" "$1" 2>/dev/null && return 0
        sleep 0.01
    done
    fail "no line '$2' in $1"
}
# Waits (at most 60 s) until the bus's head (next sequence) is N.
wait_head() { # BUS N
    local i
    for ((i = 0; i < 600; i++)); do
        [[ "$("$SHMBUS" stat "$1" --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["head"])' 2>/dev/null)" == "$2" ]] && return 0
        sleep 0.1
    done
    fail "$1 never reached head $2"
}

"$SHMBUS" create "$up" --msg-size 32 --capacity 4096
ip netns exec "$B" timeout 300 "$SHMBUS" bridge in "$key" "$down" --create 4096 \
    --listen tcp/10.77.0.2:7447 >"$work/in.out" 2>"$work/in.err" &
pids+=($!)
wait_line "$work/in.out" listening
ip netns exec "$A" timeout 300 "$SHMBUS" bridge out "$up" --key "$key" \
    --connect tcp/10.77.0.2:7447 >"$work/out.out" 2>"$work/out.err" &
pids+=($!)
wait_line "$work/out.out" matched

echo "--- every message crosses, in order"
seq 1 1000 | "$SHMBUS" pub "$up"
wait_head "$down" 1000
"$SHMBUS" sub "$down" --from oldest --count 1000 --timeout 10 >"$work/got" || fail "sub on B"
diff <(seq 1 1000) "$work/got" >/dev/null || fail "B got other lines than 1..1000"
echo "ok: 1000 messages from A to B"

echo "--- the link down for 2 s while 2000 more are published"
# Its own --timeout ends it 5 s after the last message.
"$SHMBUS" sub "$down" --from next --timeout 5 >"$work/sub.out" 2>"$work/sub.err" &
sub=$!
pids+=($sub)
for ((i = 0; i < 600; i++)); do
    "$SHMBUS" stat "$down" --json | python3 -c "import json,sys; sys.exit($sub not in json.load(sys.stdin)['subscriber_pids'])" && break
    [[ $i == 599 ]] && fail "the subscriber on B never registered"
    sleep 0.1
done
ip -n "$A" link set "$VA" down
for ((i = 1001; i <= 3000; i += 100)); do seq "$i" $((i + 99)) | "$SHMBUS" pub "$up"; sleep 0.1; done
ip -n "$A" link set "$VA" up
seq 3001 3010 | "$SHMBUS" pub "$up"
wait "$sub" || fail "the subscriber on B"
delivered=$(wc -l <"$work/sub.out")
skipped=$(awk '/^lagged: skipped /{n += $3} END {print n + 0}' "$work/sub.err")
[[ $((delivered + skipped)) == 2010 ]] || fail "delivered $delivered + skipped $skipped != 2010 published"
tail -1 "$work/sub.out" | grep -qx 3010 || fail "the last message after the outage did not cross"
echo "ok: after the outage delivered $delivered + skipped $skipped = 2010 published, and 3010 crossed"
echo "ci/zenoh_netns.sh: all passed"
