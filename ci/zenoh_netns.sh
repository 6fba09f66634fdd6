#!/usr/bin/env bash
# `shmbus bridge` between two hosts: two network namespaces joined by a
# veth pair (10.77.0.1 and 10.77.0.2, nothing else routed), host A with the
# upstream bus and `bridge out`, host B with `bridge in` and a subscriber.
# Buses have distinct names (the namespaces share /dev/shm).
#   1. every message crosses, in order;
#   2. with the link down for 2 s while messages keep coming, a subscriber
#      on B ends with delivered + skipped == published (loss, if any, is
#      reported exactly, never silent), then the link comes back and later
#      messages cross again;
#   3. a journaled upstream, the link down for 2 s and the bridge-in
#      SIGKILLed and restarted meanwhile: the subscriber on B gets every
#      message once, in order (the restarted bridge-in repairs the hole
#      from the upstream's journal);
#   4. no journal, the same outage and restart, and a loss forced on top
#      (the bridge-out held with SIGSTOP while 2000 messages go through 64
#      slots): the subscriber's lag reports add up to exactly what it
#      missed;
#   5. a journaled downstream bootstrapped from a compacted upstream: a late
#      joiner on B, started mid-stream, ends with the publisher's exact
#      keyed state, every sequence at most once.
# Needs root (ip netns); every wait is bounded; everything it made goes.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v ip >/dev/null || { apt-get update -qq && apt-get install -y -qq iproute2; }
. ci/tool.sh
shmbus_tool --features bridge

A=shmbus-a-$$
B=shmbus-b-$$
VA=sbA$$
VB=sbB$$
up=/dev/shm/shmbus-netns-up-$$
down=/dev/shm/shmbus-netns-down-$$
key=shmbus/netns/$$
work=$(mktemp -d)
# Bridges write their status files here (`shmbus stat` reads them).
export XDG_RUNTIME_DIR=$work
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    ip netns del "$A" 2>/dev/null || true
    ip netns del "$B" 2>/dev/null || true
    rm -f "$up" "$down" "$up"-[345] "$down"-[345]
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

"$SHMBUS" create "$up" --msg-size 32 --slots 4096
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
# Waits (at most 60 s) until process PID is registered on BUS.
wait_registered() { # BUS PID
    local i
    for ((i = 0; i < 600; i++)); do
        "$SHMBUS" stat "$1" --json | python3 -c "import json,sys; sys.exit($2 not in json.load(sys.stdin)['subscriber_pids'])" && return 0
        sleep 0.1
    done
    fail "$2 never registered on $1"
}
# Sums a `shmbus sub` stderr's lag reports.
skipped_in() { awk '/^lagged: skipped /{n += $3} END {print n + 0}' "$1"; }
# The shmbus process under a `timeout` wrapper (signals go to it).
child_of() { pgrep -P "$1" | head -1; }
# Starts `bridge in` on B, waits for `listening`; its pid in $in_pid.
start_in() { # OUTFILE ARGS...
    local out=$1
    shift
    ip netns exec "$B" timeout 300 "$SHMBUS" bridge in "$@" >"$out" 2>"$out.err" &
    pids+=($!)
    wait_line "$out" listening
    in_pid=$(child_of $!)
}
# Starts `bridge out` on A, waits for `matched`; its pid in $out_pid.
start_out() { # OUTFILE ARGS...
    local out=$1
    shift
    ip netns exec "$A" timeout 300 "$SHMBUS" bridge out "$@" >"$out" 2>"$out.err" &
    pids+=($!)
    wait_line "$out" matched
    out_pid=$(child_of $!)
}
# After an outage: publishes FIRST, FIRST+1, ... on UP, one every 0.2 s,
# until one reaches DOWN (its head is that number), at most 60 s; the last
# number published in $probed. The bridge-out may not see its peer go and
# come back (it can be held in a blocking put meanwhile), so a message
# crossing is the one sure sign the link is whole again.
probe() { # UP DOWN FIRST
    local i head
    for ((i = $3; i < $3 + 300; i++)); do
        echo "$i" | "$SHMBUS" pub "$1"
        sleep 0.2
        head=$("$SHMBUS" stat "$2" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["head"])')
        if [[ "$head" == "$i" ]]; then
            probed=$i
            return 0
        fi
    done
    fail "nothing published on $1 after the outage reached $2 in 60 s"
}
# Publishes FIRST..LAST on BUS in chunks of 100, 0.1 s apart.
publish_slowly() { # BUS FIRST LAST
    local i
    for ((i = $2; i <= $3; i += 100)); do
        seq "$i" $((i + 99 > $3 ? $3 : i + 99)) | "$SHMBUS" pub "$1"
        sleep 0.1
    done
}

echo "--- journaled upstream: link down 2 s and bridge-in killed and restarted meanwhile"
"$SHMBUS" create "$up-3" --msg-size 32 --slots 4096 --journal "$work/up3.journal"
in3=("$key/3" "$down-3" --create 4096 --listen tcp/10.77.0.2:7448)
start_in "$work/in3.out" "${in3[@]}"
start_out "$work/out3.out" "$up-3" --key "$key/3" --connect tcp/10.77.0.2:7448
seq 1 1000 | "$SHMBUS" pub "$up-3"
wait_head "$down-3" 1000
"$SHMBUS" sub "$down-3" --from next --timeout 5 >"$work/sub3.out" 2>"$work/sub3.err" &
sub=$!
pids+=($sub)
wait_registered "$down-3" "$sub"
ip -n "$A" link set "$VA" down
publish_slowly "$up-3" 1001 2000
kill -KILL "$in_pid"
publish_slowly "$up-3" 2001 3000
start_in "$work/in3b.out" "${in3[@]}"
ip -n "$A" link set "$VA" up
probe "$up-3" "$down-3" 3001
wait "$sub" || fail "the subscriber on B (journaled upstream)"
diff <(seq 1001 "$probed") "$work/sub3.out" >/dev/null || fail "B did not get 1001..$probed once each, in order"
[[ "$(skipped_in "$work/sub3.err")" == 0 ]] || fail "a loss reported with a journaled upstream"
echo "ok: $((probed - 1000)) messages, each once and in order, across the outage and the restart"

echo "--- no journal: the same, with a loss forced (bridge-out stopped while 2000 go through 64 slots)"
"$SHMBUS" create "$up-4" --msg-size 32 --slots 64
in4=("$key/4" "$down-4" --create 4096 --listen tcp/10.77.0.2:7449)
start_in "$work/in4.out" "${in4[@]}"
start_out "$work/out4.out" "$up-4" --key "$key/4" --connect tcp/10.77.0.2:7449
seq 1 100 | "$SHMBUS" pub "$up-4"
wait_head "$down-4" 100
"$SHMBUS" sub "$down-4" --from next --timeout 10 >"$work/sub4.out" 2>"$work/sub4.err" &
sub=$!
pids+=($sub)
wait_registered "$down-4" "$sub"
ip -n "$A" link set "$VA" down
kill -STOP "$out_pid"
seq 101 2100 | "$SHMBUS" pub "$up-4"
kill -KILL "$in_pid"
kill -CONT "$out_pid"
start_in "$work/in4b.out" "${in4[@]}"
ip -n "$A" link set "$VA" up
probe "$up-4" "$down-4" 2101
wait "$sub" || fail "the subscriber on B (no journal)"
delivered=$(wc -l <"$work/sub4.out")
skipped=$(skipped_in "$work/sub4.err")
published=$((probed - 100))
[[ $((delivered + skipped)) == "$published" ]] || fail "delivered $delivered + skipped $skipped != $published published"
((skipped > 0)) || fail "2000 messages through 64 slots and no loss reported"
tail -1 "$work/sub4.out" | grep -qx "$probed" || fail "the last message after the outage did not cross"
echo "ok: delivered $delivered + skipped $skipped = $published published"

echo "--- journaled downstream bootstrapped from a compacted upstream: a late joiner on B"
keyed() { # FIRST LAST: lines whose first 8 bytes are the key
    local i
    for ((i = $1; i <= $2; i++)); do printf 'k%07d=%d\n' $((i % 50)) "$i"; done
}
"$SHMBUS" create "$up-5" --msg-size 32 --slots 1024 --journal "$work/up5.journal"
keyed 1 2000 | "$SHMBUS" pub "$up-5" --compact-after 500
start_in "$work/in5.out" "$key/5" "$down-5" --create 1024 --journal "$work/down5.journal" \
    --listen tcp/10.77.0.2:7450
start_out "$work/out5.out" "$up-5" --key "$key/5" --connect tcp/10.77.0.2:7450
wait_head "$down-5" 2000
for ((c = 0; c < 40; c++)); do
    keyed $((2001 + c * 100)) $((2100 + c * 100)) | "$SHMBUS" pub "$up-5" --compact-after 500
    if ((c == 10)); then
        # Mid-stream: reads the journal on B, then live, until 3 s of quiet.
        "$SHMBUS" sub "$down-5" --bootstrap --timeout 3 >"$work/late5.out" 2>"$work/late5.err" &
        late=$!
        pids+=($late)
    fi
    sleep 0.05
done
wait "$late" || fail "the late joiner on B"
fold() { awk -F'\t' '{ k = substr($2, 1, 8); v[k] = $2 } END { for (k in v) print v[k] }' | sort; }
seqs_increase() { awk -F'\t' 'NR > 1 && $1 <= last { exit 1 } { last = $1 }'; }
seqs_increase <"$work/late5.out" || fail "the late joiner got a sequence twice or out of order"
diff <(keyed 1 6000 | awk '{print "0\t" $0}' | fold) <(fold <"$work/late5.out") >/dev/null \
    || fail "the late joiner's keyed state differs from the publisher's"
echo "ok: the late joiner on B ends with the publisher's state ($(wc -l <"$work/late5.out") entries read)"
echo "ci/zenoh_netns.sh: all passed"
