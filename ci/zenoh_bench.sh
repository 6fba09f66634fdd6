#!/usr/bin/env bash
# The bridge's figures: `shmbus bridge out` -> `bridge in` against
# a plain Zenoh publisher -> subscriber pair, in one run, between two network
# namespaces joined by a veth pair (10.78.0.1 and 10.78.0.2: not
# ci/zenoh_netns.sh's, so both can run at once). The driver and its roles are
# crates/shmbus-bench/src/bin/bridge_bench.rs: latency, throughput and the
# upstream publisher's cost, interleaved round by round.
#   ci/zenoh_bench.sh [--quick] [--release] [--json FILE] [bridge_bench run options...]
# --quick: the debug build (--release: the release one), one small round,
# and a check that the JSON has every row (no figure is judged). Without
# it: the release build, the full run.
# Needs root (ip netns); every wait is bounded; everything it made goes.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v ip >/dev/null || { apt-get update -qq && apt-get install -y -qq iproute2; }

quick=0
release=0
json=""
pass=()
while (($#)); do
    case "$1" in
    --quick) quick=1 ;;
    --release) release=1 ;;
    --json) json=$2; shift ;;
    *) pass+=("$1") ;;
    esac
    shift
done
target=${CARGO_TARGET_DIR:-$PWD/target}
features=(--features shmbus-cli/bridge,shmbus-bench/bridge)
if ((quick && !release)); then
    if [[ -n "${SHMBUS_BIN:-}" ]]; then
        # .ci/run's test step built both, with every feature.
        bin=$(dirname "$SHMBUS_BIN")
    else
        cargo build -q -p shmbus-cli -p shmbus-bench "${features[@]}" --bin shmbus --bin bridge_bench
        bin=$target/debug
    fi
else
    cargo build -q --release -p shmbus-cli -p shmbus-bench "${features[@]}" --bin shmbus --bin bridge_bench
    bin=$target/release
fi

A=zbench-a-$$
B=zbench-b-$$
VA=zbA$$
VB=zbB$$
work=$(mktemp -d)
[[ -n "$json" ]] || json=$work/bridge.json
cleanup() {
    ip netns del "$A" 2>/dev/null || true
    ip netns del "$B" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

ip netns add "$A"
ip netns add "$B"
ip link add "$VA" type veth peer name "$VB"
ip link set "$VA" netns "$A"
ip link set "$VB" netns "$B"
ip -n "$A" addr add 10.78.0.1/24 dev "$VA"
ip -n "$B" addr add 10.78.0.2/24 dev "$VB"
for ns in "$A" "$B"; do ip -n "$ns" link set lo up; done
ip -n "$A" link set "$VA" up
ip -n "$B" link set "$VB" up

args=(run --ns-a "$A" --ns-b "$B" --addr-b 10.78.0.2 --shmbus "$bin/shmbus" --json "$json")
((quick)) && args+=(--quick)
# The driver bounds every block; this bounds the whole.
timeout $((quick ? 110 : 1800)) "$bin/bridge_bench" "${args[@]}" "${pass[@]}"

if ((quick)); then
    python3 - "$json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
rows = ["latency_plain", "latency_bridge", "throughput_plain", "throughput_plain_packed",
        "throughput_bridge", "publish_cost_paced_alone", "publish_cost_flat_alone"]
missing = [r for r in rows if not isinstance(d["rows"].get(r), dict)]
for r in ["latency_plain", "latency_bridge"]:
    if r not in missing and not d["rows"][r]["latency"]:
        missing.append(r + ".latency")
for r in rows:
    if r not in missing and not d["rows"][r]["publish_cost"]:
        missing.append(r + ".publish_cost")
for r in ["throughput_plain", "throughput_plain_packed", "throughput_bridge"]:
    if r not in missing and d["rows"][r]["msgs_per_s_median"] is None:
        missing.append(r + ".msgs_per_s_median")
for k in ["latency_p50_bridge_over_plain", "throughput_bridge_over_plain",
          "publish_cost_paced_p50_bridged_over_alone", "publish_cost_flat_mean_bridged_over_alone"]:
    if d["ratios"].get(k) is None:
        missing.append("ratios." + k)
if missing:
    sys.exit("ci/zenoh_bench.sh: the JSON lacks " + ", ".join(missing))
EOF
    echo "ci/zenoh_bench.sh --quick: every row present"
fi
