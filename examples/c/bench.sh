#!/usr/bin/env bash
# C pingpong (examples/c/pingpong, -O2, libshmbus.a from --release) against
# the same program in Rust (crates/shmbus-ffi/examples/pingpong.rs,
# --release), in the same run, alternating language round by round (and
# which goes first), each round on fresh buses. Prints each run, then per
# language the median over the rounds of p50/p99/p99.9/max, and the ratio
# C p50 / Rust p50 (target <= 1.10). A benchmark, not a test.
#
#   examples/c/bench.sh [ROUNDS_OF_EACH=7] [ROUND_TRIPS=200000]
set -euo pipefail
cd "$(dirname "$0")/../.."
K=${1:-7}
N=${2:-200000}

# SHMBUS_PROFILE: the cargo profile of both (CI's `ci`; release by default).
profile=${SHMBUS_PROFILE:-release}
. ci/tool.sh
shmbus_tool
cargo build -q --profile "$profile" -p shmbus-ffi --example pingpong
make -s -C examples/c pingpong SHMBUS_PROFILE="$profile" CFLAGS="-O2 -g -Wall -Wextra -Werror -std=c11"
C_BIN=examples/c/pingpong
RUST_BIN=target/$profile/examples/pingpong

ping=shmbus-bench-ping-$$
pong=shmbus-bench-pong-$$
cleanup() {
    "$SHMBUS" rm "$ping" 2>/dev/null || true
    "$SHMBUS" rm "$pong" 2>/dev/null || true
}
trap cleanup EXIT

run() { # BINARY -> one result line
    local bin=$1 server
    cleanup
    "$SHMBUS" create --msg-size 64 --slots 64 "$ping" >/dev/null
    "$SHMBUS" create --msg-size 64 --slots 64 "$pong" >/dev/null
    timeout 120 "$bin" serve "$ping" "$pong" &
    server=$!
    timeout 120 "$bin" client "$ping" "$pong" "$N"
    wait "$server"
}

results=$(mktemp)
trap 'cleanup; rm -f "$results"' EXIT
echo "machine: $(nproc) CPUs, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1); $K rounds of $N round trips per language"
for ((k = 0; k < K; k++)); do
    if ((k % 2 == 0)); then order="$C_BIN $RUST_BIN"; else order="$RUST_BIN $C_BIN"; fi
    for bin in $order; do
        line=$(run "$bin")
        echo "round $k: $line"
        echo "$line" >>"$results"
    done
done

python3 - "$results" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    lang, *kv = line.split()
    rows.setdefault(lang, []).append(dict(f.split("=") for f in kv))
print()
print(f"{'median of ' + str(len(rows['c'])) + ' rounds':<20}{'p50 ns':>10}{'p99 ns':>10}{'p99.9 ns':>10}{'max ns':>10}")
med = {}
for lang in ("c", "rust"):
    m = {k: statistics.median(int(r[k]) for r in rows[lang]) for k in ("p50_ns", "p99_ns", "p999_ns", "max_ns")}
    med[lang] = m
    print(f"{lang:<20}{m['p50_ns']:>10.0f}{m['p99_ns']:>10.0f}{m['p999_ns']:>10.0f}{m['max_ns']:>10.0f}")
ratio = med["c"]["p50_ns"] / med["rust"]["p50_ns"]
print(f"\nC p50 / Rust p50 = {ratio:.3f} (target <= 1.10: {'met' if ratio <= 1.10 else 'MISSED'})")
PY
