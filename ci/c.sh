#!/usr/bin/env bash
# The C binding, end to end:
#   1. include/shmbus.h is what cbindgen generates from crates/shmbus-ffi now;
#   2. `make -C examples/c` builds the examples (gcc -Werror, libshmbus.a);
#   3. the examples run against buses made by the `shmbus` tool: publisher ->
#      subscriber on every kind of bus, the tool -> a stream read in place
#      and a journaled bus's state, then pingpong; a lossless C subscriber
#      that stops (SIGSTOP) makes the C publisher's try_publish say full,
#      naming it, and once it reads on it gets every message; a
#      request-response C server answers a C client in another process,
#      and with it gone the client's call says no server;
#   4. the same under valgrind (no definite or indirect leak, no invalid
#      access: --error-exitcode);
#   5. `make install` writes a shmbus.pc that builds and links a program
#      against libshmbus.so;
#   6. nothing is left in /dev/shm.
# Every process runs under `timeout`.
set -euo pipefail
cd "$(dirname "$0")/.."

need() { # COMMAND PACKAGE
    command -v "$1" >/dev/null || { apt-get update -qq && apt-get install -y -qq "$2"; }
}
need gcc gcc
need make make
need valgrind valgrind
need pkg-config pkg-config

echo "--- include/shmbus.h is current"
crates/shmbus-ffi/cbindgen.sh --check

echo "--- build"
. ci/tool.sh
shmbus_tool
make -s -C examples/c
PUB=examples/c/publisher
SUB=examples/c/subscriber
PINGPONG=examples/c/pingpong
STATE=examples/c/state
BOARD=examples/c/blackboard
REQREP=examples/c/reqrep

prefix="shmbus-ci-c-$$"
work=$(mktemp -d)
cleanup() {
    local f
    for f in /dev/shm/"$prefix"-*; do
        [[ -e "$f" ]] && "$SHMBUS" rm "$f" >/dev/null 2>&1 || true
    done
    ls "$work"/valgrind.*.log >/dev/null 2>&1 && echo "valgrind logs: $(ls "$work"/valgrind.*.log | wc -l)"
    rm -rf "$work"
}
trap cleanup EXIT

VALGRIND=(valgrind --quiet --leak-check=full --error-exitcode=1
    --errors-for-leak-kinds=definite,indirect --log-file="$work/valgrind.%p.log")

fail() {
    echo "FAILED: $*" >&2
    for f in "$work"/*.err "$work"/valgrind.*.log; do
        [[ -s "$f" ]] && { echo "== $f" >&2; cat "$f" >&2; }
    done
    exit 1
}

# Waits (at most 60 s) for the subscriber writing to ERR_FILE to say ready.
wait_ready() { # ERR_FILE PID
    local i
    for ((i = 0; i < 6000; i++)); do
        grep -qx ready "$1" 2>/dev/null && return 0
        kill -0 "$2" 2>/dev/null || fail "subscriber $2 exited before it was ready"
        sleep 0.01
    done
    fail "subscriber $2 never said ready"
}

# One publisher -> subscriber run. WRAP is "" or "valgrind".
#   scenario WRAP KIND NAME CREATE_ARGS INPUT EXPECTED [PRELOAD]
# PRELOAD lines are published before the subscriber starts (a late joiner).
scenario() {
    local wrap=$1 kind=$2 name=$3 create=$4 input=$5 expected=$6 preload=${7:-}
    local run=() subkind=$kind count
    [[ "$wrap" == valgrind ]] && run=("${VALGRIND[@]}")
    [[ "$kind" == many ]] && subkind=bus
    # shellcheck disable=SC2086
    "$SHMBUS" create "$name" $create >/dev/null
    if [[ -n "$preload" ]]; then
        printf '%s' "$preload" | timeout 60 "${run[@]}" "$PUB" --kind "$kind" "$name" \
            2>"$work/pub.err" || fail "$wrap publisher --kind $kind (preload)"
    fi
    count=$(printf '%s' "$expected" | wc -l)
    # Emptied here, not only by the child's redirection: until the child
    # runs, the last scenario's "ready" would still be there.
    : >"$work/sub.err"
    timeout 120 "${run[@]}" "$SUB" --kind "$subkind" --count "$count" --timeout 60 "$name" \
        >"$work/sub.out" 2>"$work/sub.err" &
    local sub=$!
    wait_ready "$work/sub.err" "$sub"
    printf '%s' "$input" | timeout 60 "${run[@]}" "$PUB" --kind "$kind" "$name" \
        2>"$work/pub.err" || fail "$wrap publisher --kind $kind"
    wait "$sub" || fail "$wrap subscriber --kind $subkind exited $?"
    diff <(printf '%s' "$expected") "$work/sub.out" >&2 || fail "$wrap $kind: wrong output"
    "$SHMBUS" rm "$name" >/dev/null
    echo "ok: ${wrap:+$wrap }publisher -> subscriber, --kind $kind"
}

# The tool writes, the C examples read: a stream's records in place (the
# subscriber also checks that a second peek before the release is
# refused), and the last value per key of a compacted journaled bus.
tool_to_c() { # WRAP
    local wrap=$1 run=() name sub
    [[ "$wrap" == valgrind ]] && run=("${VALGRIND[@]}")
    name="$prefix-stream"
    "$SHMBUS" create "$name" --kind stream --bytes 256 >/dev/null
    : >"$work/sub.err"
    timeout 120 "${run[@]}" "$SUB" --kind stream --count 3 --timeout 60 "$name" \
        >"$work/sub.out" 2>"$work/sub.err" &
    sub=$!
    wait_ready "$work/sub.err" "$sub"
    printf 'one\ntwo\nthree\n' | timeout 60 "$SHMBUS" pub "$name" || fail "shmbus pub into a stream"
    wait "$sub" || fail "$wrap subscriber --kind stream exited $?"
    diff <(printf 'one\ntwo\nthree\n') "$work/sub.out" >&2 || fail "$wrap stream: wrong output"
    "$SHMBUS" rm "$name" >/dev/null
    echo "ok: ${wrap:+$wrap }shmbus pub -> subscriber --kind stream (read in place)"

    name="$prefix-state"
    "$SHMBUS" create "$name" --msg-size 32 --slots 4 --journal "$work/$wrap-state.journal" >/dev/null
    printf 'sensor01=20\nsensor02=30\nsensor01=21\nsensor02=31\nsensor01=22\n' |
        timeout 60 "$SHMBUS" pub "$name" --compact-after 2 || fail "shmbus pub into a journaled bus"
    timeout 120 "${run[@]}" "$STATE" --until 4 --timeout 60 "$name" \
        >"$work/state.out" 2>"$work/state.err" || fail "$wrap state exited $?"
    diff <(printf 'sensor01=22\nsensor02=31\n') "$work/state.out" >&2 || fail "$wrap state: wrong output"
    "$SHMBUS" rm "$name" >/dev/null
    echo "ok: ${wrap:+$wrap }shmbus pub -> state (the last value of each key)"
}

# A blackboard between C and the tool, both ways: C creates and writes,
# `shmbus get` reads; `shmbus put` writes and removes, C reads and lists
# what changed and reads a key through an entry handle while the tool
# removes and puts it again; then C's check of every status and error of
# the API.
blackboard() { # WRAP
    local wrap=$1 run=() name out rc
    [[ "$wrap" == valgrind ]] && run=("${VALGRIND[@]}")
    name="$prefix-board"
    timeout 60 "${run[@]}" "$BOARD" create "$name" 4 8 8 2>"$work/board.err" || fail "$wrap blackboard create"
    out=$(timeout 60 "${run[@]}" "$BOARD" put "$name" AAPL 101.5 2>"$work/board.err") || fail "$wrap blackboard put"
    [[ "$out" == 1 ]] || fail "$wrap blackboard put printed $out, expected version 1"
    out=$(timeout 60 "$SHMBUS" get --with-version "$name" AAPL) || fail "shmbus get of a C put"
    [[ "$out" == $'1\t101.5' ]] || fail "shmbus get printed $out after a C put"
    timeout 60 "$SHMBUS" put "$name" MSFT 400.25 || fail "shmbus put"
    timeout 60 "$SHMBUS" put "$name" AAPL || fail "shmbus put (remove)"
    out=$(timeout 60 "${run[@]}" "$BOARD" get "$name" MSFT 2>"$work/board.err") || fail "$wrap blackboard get"
    [[ "$out" == $'2\t400.25' ]] || fail "$wrap blackboard get printed $out after shmbus put"
    rc=0
    timeout 60 "${run[@]}" "$BOARD" get "$name" AAPL >/dev/null 2>"$work/board-gone.err" || rc=$?
    [[ "$rc" == 3 ]] || fail "$wrap blackboard get of a removed key exited $rc, expected 3"
    out=$(timeout 60 "${run[@]}" "$BOARD" dump "$name" 1 2>"$work/board.err") || fail "$wrap blackboard dump"
    diff <(printf 'AAPL removed 3\nMSFT=400.25 2\n') <(sort <<<"$out") >&2 || fail "$wrap blackboard dump 1: wrong output"
    # C reads MSFT through an entry handle while the tool removes it and
    # puts it again: the handle finds it, first and last values exactly
    # (what it sees between depends on when it wakes).
    : >"$work/watch.err"
    timeout 60 "${run[@]}" "$BOARD" watch "$name" MSFT 402 >"$work/watch.out" 2>"$work/watch.err" &
    local watcher=$!
    wait_ready "$work/watch.err" "$watcher"
    timeout 60 "$SHMBUS" put "$name" MSFT || fail "shmbus put (remove) under a watch"
    timeout 60 "$SHMBUS" put "$name" AAPL 99 || fail "shmbus put under a watch"
    timeout 60 "$SHMBUS" put "$name" MSFT 402 || fail "shmbus put again under a watch"
    wait "$watcher" || fail "$wrap blackboard watch exited $?"
    [[ "$(head -n 1 "$work/watch.out")" == $'2\t400.25' && "$(tail -n 1 "$work/watch.out")" == $'6\t402' ]] ||
        fail "$wrap blackboard watch printed $(cat "$work/watch.out"), expected 2<TAB>400.25 first and 6<TAB>402 last"
    "$SHMBUS" rm "$name" >/dev/null
    timeout 120 "${run[@]}" "$BOARD" check "$name" >"$work/board.out" 2>"$work/board.err" ||
        fail "$wrap blackboard check exited $?"
    echo "ok: ${wrap:+$wrap }blackboard: C <-> shmbus get/put, an entry handle across a removal, and every status of the C API"
}

# A request-response service between two C processes: the server creates
# it and answers two calls upper-cased, the client prints each response;
# with the server gone, the client's next call ends "no server".
reqrep() { # WRAP
    local wrap=$1 run=() name server out
    [[ "$wrap" == valgrind ]] && run=("${VALGRIND[@]}")
    name="$prefix-reqrep"
    : >"$work/reqrep.err"
    timeout 120 "${run[@]}" "$REQREP" serve "$name" --create --count 2 2>"$work/reqrep.err" &
    server=$!
    wait_ready "$work/reqrep.err" "$server"
    out=$(timeout 60 "${run[@]}" "$REQREP" call "$name" --timeout-ms 30000 ping pong \
        2>"$work/reqrep-call.err") || fail "$wrap reqrep call"
    [[ "$out" == $'ping -> PING\npong -> PONG' ]] || fail "$wrap reqrep call printed $out"
    wait "$server" || fail "$wrap reqrep serve exited $?"
    out=$(timeout 60 "${run[@]}" "$REQREP" call "$name" --timeout-ms 30000 anyone \
        2>"$work/reqrep-call.err") || fail "$wrap reqrep call with no server"
    [[ "$out" == "anyone: SHMBUS_NO_SERVER SHMBUS_E_PEER_GONE" ]] ||
        fail "$wrap reqrep call with no server printed $out"
    "$SHMBUS" rm "$name" >/dev/null
    echo "ok: ${wrap:+$wrap }reqrep: a C server answers a C client in another process; with none, no server"
}

pingpong() { # WRAP ROUNDS
    local wrap=$1 rounds=$2 run=()
    [[ "$wrap" == valgrind ]] && run=("${VALGRIND[@]}")
    local ping="$prefix-ping" pong="$prefix-pong"
    "$SHMBUS" create "$ping" --msg-size 64 --slots 64 >/dev/null
    "$SHMBUS" create "$pong" --msg-size 64 --slots 64 >/dev/null
    timeout 300 "${run[@]}" "$PINGPONG" serve "$ping" "$pong" 2>"$work/serve.err" &
    local server=$!
    timeout 300 "${run[@]}" "$PINGPONG" client "$ping" "$pong" "$rounds" \
        >"$work/client.out" 2>"$work/client.err" || fail "$wrap pingpong client"
    wait "$server" || fail "$wrap pingpong serve exited $?"
    grep -Eq "^c rounds=$rounds p50_ns=[0-9]+ p99_ns=[0-9]+ p999_ns=[0-9]+ max_ns=[0-9]+$" \
        "$work/client.out" || fail "pingpong printed: $(cat "$work/client.out")"
    "$SHMBUS" rm "$ping" >/dev/null
    "$SHMBUS" rm "$pong" >/dev/null
    echo "ok: ${wrap:+$wrap }pingpong: $(cat "$work/client.out")"
}

# A lossless C subscriber in its own process: stopped (SIGSTOP) before
# reading, it holds the C publisher's try_publish at a full ring (the
# message names its registry entry and pid); continued, it reads on, the
# publisher publishes the rest, and it got every line, still lossless.
lossless() {
    local name="$prefix-lossless" sub pid i
    "$SHMBUS" create "$name" --msg-size 16 --slots 4 >/dev/null
    : >"$work/sub.err"
    timeout 120 "$SUB" --lossless --count 8 --timeout 60 "$name" \
        >"$work/sub.out" 2>"$work/sub.err" &
    sub=$!
    wait_ready "$work/sub.err" "$sub"
    pid=$(sed -n 's/^lossless pid \([0-9]*\)$/\1/p' "$work/sub.err")
    [[ -n "$pid" ]] || fail "the lossless subscriber did not say its pid"
    kill -STOP "$pid"
    # Stopped for sure (state T) before anything is published.
    for ((i = 0; i < 6000; i++)); do
        [[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" == T ]] && break
        sleep 0.01
    done
    [[ "$(awk '{print $3}' "/proc/$pid/stat")" == T ]] || fail "subscriber $pid never stopped"
    local st=0
    printf 'l1\nl2\nl3\nl4\nl5\n' | timeout 60 "$PUB" --try "$name" 2>"$work/pub.err" || st=$?
    [[ $st == 3 ]] || { kill -CONT "$pid"; fail "try_publish past a stopped lossless subscriber exited $st"; }
    grep -Eq "^publisher: line 5: full: .*registry entry [0-9]+ \(pid $pid\)" "$work/pub.err" ||
        { kill -CONT "$pid"; fail "the full message does not name subscriber $pid"; }
    kill -CONT "$pid"
    # Once it has read the four, the ring has room for four more.
    for ((i = 0; i < 6000; i++)); do
        [[ $(wc -l <"$work/sub.out") -ge 4 ]] && break
        kill -0 "$sub" 2>/dev/null || fail "the lossless subscriber exited early"
        sleep 0.01
    done
    printf 'l5\nl6\nl7\nl8\n' | timeout 60 "$PUB" --try "$name" 2>"$work/pub.err" ||
        fail "try_publish after the lossless subscriber read on"
    wait "$sub" || fail "lossless subscriber exited $?"
    diff <(printf 'l%s\n' 1 2 3 4 5 6 7 8) "$work/sub.out" >&2 || fail "lossless: wrong output"
    grep -qx "lossless: yes" "$work/sub.err" || fail "the subscriber was evicted"
    "$SHMBUS" rm "$name" >/dev/null
    echo "ok: a stopped lossless C subscriber holds try_publish at full, named; it then gets every line"
}

all_scenarios() { # WRAP
    local w=$1 long
    long=$(printf 'x%.0s' {1..100})
    scenario "$w" bus "$prefix-bus" "--msg-size 32 --slots 16" \
        $'alpha\nbeta\n\ngamma' $'alpha\nbeta\n\ngamma\n'
    scenario "$w" many "$prefix-many" "--msg-size 16 --slots 16 --publishers many" \
        $'one\ntwo\n' $'one\ntwo\n'
    # Six lines before the join into a four-slot ring: only the journal has
    # the first two when the subscriber joins.
    scenario "$w" journal "$prefix-journal" \
        "--msg-size 16 --slots 4 --journal $work/$w-journal.journal" \
        $'j7\n' $'j1\nj2\nj3\nj4\nj5\nj6\nj7\n' $'j1\nj2\nj3\nj4\nj5\nj6\n'
    scenario "$w" pool "$prefix-pool" "--pool 128:24 --slots 16" \
        "short"$'\n'"$long"$'\n' "short"$'\n'"$long"$'\n'
}

echo "--- end to end"
all_scenarios ""
tool_to_c ""
blackboard ""
reqrep ""
# 5000 round trips: both ends busy-spin, and beside CI's other lane on 2
# CPUs a trip can wait for a scheduler slice (ms): this checks that it
# runs and prints its line, the figures are bench.sh's.
pingpong "" 5000
lossless

echo "--- under valgrind"
all_scenarios valgrind
tool_to_c valgrind
blackboard valgrind
reqrep valgrind
pingpong valgrind 300

echo "--- pkg-config"
make -s -C examples/c install PREFIX="$work/prefix" CARGO=true
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig"
[[ "$(pkg-config --modversion shmbus)" == "$(sed -n 's/^version = "\(.*\)"/\1/p' crates/shmbus-ffi/Cargo.toml)" ]] ||
    fail "pkg-config --modversion shmbus"
# shellcheck disable=SC2046
gcc -O2 -Wall -Werror -std=c11 $(pkg-config --cflags shmbus) examples/c/subscriber.c \
    -o "$work/subscriber-pc" $(pkg-config --libs shmbus)
name="$prefix-pc"
"$SHMBUS" create "$name" --msg-size 16 --slots 8 >/dev/null
printf 'via pkg-config\n' | timeout 60 "$PUB" "$name"
LD_LIBRARY_PATH="$work/prefix/lib" timeout 60 "$work/subscriber-pc" --from oldest --count 1 \
    --timeout 10 "$name" >"$work/pc.out" 2>"$work/pc.err" || fail "subscriber via pkg-config"
[[ "$(cat "$work/pc.out")" == "via pkg-config" ]] || fail "pkg-config build printed $(cat "$work/pc.out")"
# Captured first: `ldd | grep -q` under pipefail fails when grep exits
# before the loader has written its last line (SIGPIPE).
linked=$(LD_LIBRARY_PATH="$work/prefix/lib" ldd "$work/subscriber-pc")
grep -qF "$work/prefix/lib/libshmbus.so" <<<"$linked" || fail "not linked to libshmbus.so: $linked"
"$SHMBUS" rm "$name" >/dev/null
echo "ok: a program built with pkg-config links libshmbus.so and runs"

echo "--- /dev/shm"
left=$(find /dev/shm -maxdepth 1 -name "$prefix-*" -print)
[[ -z "$left" ]] || fail "left in /dev/shm: $left"
echo "ok: nothing left in /dev/shm"
echo "ci/c.sh: all passed"
