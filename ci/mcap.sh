#!/usr/bin/env bash
# MCAP recordings read by another reader: foxglove's `mcap` Python package
# (1.6.0, with zstandard and lz4 for compressed chunks) in a venv of its
# own, and `mcap doctor` (the Go tool) where it installs. `shmbus record
# --format mcap` records buses of every kind (plain, many-publisher, pool,
# stream, journaled, and a plain bus overrun into a gap) with each chunk
# compression, beside a native recorder of the same buses; each MCAP file
# is read back by tools/check_mcap.py and compared message by message with
# what was published (bytes, sequences, gaps, times never going back) and
# with the native recording of the same run; `shmbus export --mcap` of that
# native recording must hold exactly what tools/read_recording.py reads
# from it (every time too); a rotated recording is complete files; a
# recorder killed mid-write leaves a file that reads to its last chunk.
# The check is shown able to fail: a line changed in what was published
# must be found. Uses $SHMBUS_BIN (a tool built with the `mcap` feature)
# or builds one. Leaves nothing in /dev/shm.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=target/ci-mcap-venv
python3 -m venv --help >/dev/null 2>&1 && python3 -c 'import ensurepip' 2>/dev/null ||
    { apt-get update -qq && apt-get install -y -qq python3-venv; }
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet 'mcap==1.6.0' zstandard lz4
py="$venv/bin/python"
check() { "$py" tools/check_mcap.py "$@"; }

bin=${SHMBUS_BIN:-}
if [ -z "$bin" ]; then
    cargo build --quiet -p shmbus-cli --features mcap
    bin=${CARGO_TARGET_DIR:-target}/debug/shmbus
fi
if "$bin" export /dev/null --mcap /dev/null 2>&1 | grep -q 'built without MCAP'; then
    echo "mcap.sh: $bin was built without the mcap feature" >&2
    exit 1
fi

# `mcap doctor`, where Go can install it.
gobin=$PWD/target/ci-mcap-go/bin
doctor=""
if [ -x "$gobin/mcap" ]; then
    doctor=$gobin/mcap
elif command -v go >/dev/null &&
    GOBIN=$gobin GOFLAGS=-mod=mod go install github.com/foxglove/mcap/go/cli/mcap@latest >/dev/null 2>&1; then
    doctor=$gobin/mcap
else
    echo "mcap doctor: the Go tool could not be installed here; its checks are skipped"
fi
doctor() {
    [ -z "$doctor" ] && return 0
    local out
    out=$("$doctor" doctor "$1" 2>&1) || { echo "$out" >&2; echo "mcap doctor: $1 fails" >&2; exit 1; }
    ! grep -qi error <<< "$out" || { echo "$out" >&2; echo "mcap doctor: $1 has errors" >&2; exit 1; }
    echo "mcap doctor: $1 ok"
}

shm=/dev/shm/shmbus-ci-mcap-$$
work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    rm -rf "$shm" "$work"
}
trap cleanup EXIT
mkdir -p "$shm"

# Waits (up to 60 s) until `cmd` prints something matching `want`.
wait_for() {
    local what=$1 want=$2
    shift 2
    for _ in $(seq 600); do
        if "$@" 2>/dev/null | grep -qE "$want"; then return 0; fi
        sleep 0.1
    done
    echo "mcap.sh: timed out waiting for $what" >&2
    "$@" >&2 || true
    exit 1
}
# Whether every bus in MCAP file $1 has reached the last sequence: $2 lines
# of "NAME SEQ".
reached() { check last "$1" | sort | diff -q - <(sort "$2") >/dev/null && echo reached; }

n=2000
seq 1 $n | sed 's/^/line-/' > "$work/lines"
seq 1 100 | sed 's/^/lossy-/' > "$work/lossy-lines"

for compression in none zstd lz4; do
    d=$shm/$compression
    mkdir -p "$d"
    plain=$d/plain many=$d/many pool=$d/pool stream=$d/stream journaled=$d/journaled lossy=$d/lossy
    "$bin" create "$plain" --slots 4096 --msg-size 16 >/dev/null
    "$bin" create "$many" --capacity 4096 --msg-size 16 --publishers many >/dev/null
    "$bin" create "$pool" --capacity 4096 --pool 64:8192 >/dev/null
    "$bin" create "$stream" --kind stream --bytes 65536 >/dev/null
    "$bin" create "$journaled" --capacity 4096 --msg-size 16 --journal "$work/$compression.journal" >/dev/null
    "$bin" create "$lossy" --slots 8 --msg-size 16 >/dev/null
    out=$work/$compression.mcap native=$work/$compression.rec
    "$bin" record "$plain" "$many" "$pool" "$stream" "$journaled" "$lossy" --out "$out" \
        --format mcap --compression "$compression" 2>/dev/null &
    rec=$!
    pids+=("$rec")
    # A native recorder of the same buses (a stream has one consumer: the
    # MCAP recorder's).
    "$bin" record "$plain" "$many" "$pool" "$journaled" "$lossy" --out "$native" 2>/dev/null &
    nat=$!
    pids+=("$nat")
    wait_for "the MCAP recorder's 6 buses" '^6$' sh -c "'$py' tools/check_mcap.py dump '$out' | grep -c '^bus'"
    wait_for "the native recorder's 5 buses" '^5$' sh -c "'$py' tools/read_recording.py '$native' | grep -c '^bus'"
    # The lossy bus overrun while both recorders are stopped: a gap.
    kill -STOP "$rec" "$nat"
    "$bin" pub "$lossy" < "$work/lossy-lines"
    kill -CONT "$rec" "$nat"
    for bus in "$plain" "$many" "$pool" "$stream" "$journaled"; do
        "$bin" pub "$bus" < "$work/lines"
    done
    : > "$work/want"
    for bus in "$plain" "$many" "$pool" "$stream" "$journaled"; do echo "$bus $((n - 1))" >> "$work/want"; done
    echo "$lossy 99" >> "$work/want"
    wait_for "the MCAP recorder to reach every bus's last message" reached reached "$out" "$work/want"
    sleep 0.5
    kill -TERM "$rec" "$nat"
    wait "$rec" "$nat"
    check published "$out" "$plain=$work/lines" "$many=$work/lines" "$pool=$work/lines" \
        "$stream=$work/lines" "$journaled=$work/lines" "$lossy=$work/lossy-lines"
    check dump "$out" > "$work/dump"
    grep -q '^gap ' "$work/dump" || { echo "mcap.sh: $out: the lossy bus has no gap" >&2; exit 1; }
    check agrees "$out" "$native"
    doctor "$out"

    # The native recording exported: exactly what read_recording.py reads.
    "$bin" export "$native" --mcap "$work/$compression-export.mcap" --compression "$compression" 2>/dev/null
    check compare "$work/$compression-export.mcap" "$native"
    doctor "$work/$compression-export.mcap"
    for bus in "$plain" "$many" "$pool" "$stream" "$journaled" "$lossy"; do "$bin" rm "$bus" >/dev/null; done
done

# The check fails where a message differs: one published line changed.
sed 's/^line-1000$/line-1OOO/' "$work/lines" > "$work/lines-changed"
if check published "$work/none.mcap" "$shm/none/plain=$work/lines-changed" 2>"$work/err"; then
    echo "mcap.sh: a changed message went unnoticed" >&2
    exit 1
fi
grep -q 'message 999' "$work/err" || { cat "$work/err" >&2; exit 1; }
echo "a changed message is found: $(cat "$work/err")"

# Rotation: every part a complete MCAP file, read as one recording.
bus=$shm/rotated
"$bin" create "$bus" --slots 4096 --msg-size 16 >/dev/null
out=$work/rotated.mcap
"$bin" record "$bus" --out "$out" --format mcap --rotate-size 16384 2>/dev/null &
rec=$!
pids+=("$rec")
wait_for "the rotated recorder's bus" '^1$' sh -c "'$py' tools/check_mcap.py dump '$out' | grep -c '^bus'"
"$bin" pub "$bus" < "$work/lines"
echo "$bus $((n - 1))" > "$work/want"
wait_for "the rotated recorder to reach the last message" reached reached "$out" "$work/want"
sleep 0.5
kill -INT "$rec"
wait "$rec"
[ -f "$out.2" ] || { echo "mcap.sh: $out did not rotate" >&2; exit 1; }
check published "$out" "$bus=$work/lines"
for part in "$out" "$out".*; do doctor "$part"; done
"$bin" rm "$bus" >/dev/null

# A recorder killed mid-write: its file reads to its last whole chunk.
bus=$shm/killed
"$bin" create "$bus" --slots 4096 --msg-size 16 >/dev/null
out=$work/killed.mcap
"$bin" record "$bus" --out "$out" --format mcap --compression zstd 2>/dev/null &
rec=$!
pids+=("$rec")
wait_for "the killed recorder's bus" '^1$' sh -c "'$py' tools/check_mcap.py dump '$out' | grep -c '^bus'"
"$bin" pub "$bus" < "$work/lines"
echo "$bus $((n - 1))" > "$work/want"
wait_for "the killed recorder to reach the last message" reached reached "$out" "$work/want"
kill -KILL "$rec"
wait "$rec" || true
check published "$out" "$bus=$work/lines" --kill
"$bin" rm "$bus" >/dev/null
echo "mcap.sh: ok"
