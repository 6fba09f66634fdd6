#!/usr/bin/env bash
# `shmbus top --listen`: a real HTTP client (curl) scrapes /metrics on
# 127.0.0.1 while a plain bus with a subscriber and a pool bus run; any
# other path is 404, a POST is 405; a client that sends half a request and
# holds its connection, and one that sends a request and never reads, do
# not hold the next scrape back (it must answer within 2 s); an endless
# header is cut at the head limit (431, or a reset); and every
# metric docs/grafana-shmbus.json queries is one the endpoint serves.
# Uses $SHMBUS_BIN, or builds the tool.
set -euo pipefail
cd "$(dirname "$0")/.."
. ci/tool.sh
shmbus_tool
command -v curl >/dev/null || { apt-get update -qq && apt-get install -y -qq curl; }
tag="shmbus-ci-metrics-F$$"
plain="$tag-plain" pool="$tag-pool"
out=$(mktemp -d)
pids=()
cleanup() {
    # TERM: `timeout` passes it on to the command it watches.
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    "$SHMBUS" rm "$plain" >/dev/null 2>&1 || true
    "$SHMBUS" rm "$pool" >/dev/null 2>&1 || true
    rm -rf "$out"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$SHMBUS" create "$plain" --msg-size 16 --slots 64
"$SHMBUS" create "$pool" --pool 4096:16 --slots 8
timeout 60 "$SHMBUS" sub "$plain" > /dev/null 2>&1 & pids+=($!)
seq 1 100 | "$SHMBUS" pub "$plain"

timeout 120 "$SHMBUS" top "$plain" "$pool" --listen 127.0.0.1:0 --interval-ms 100 > "$out/top" 2>&1 &
pids+=($!)
top_pid=$!
for _ in $(seq 100); do
    grep -q '^serving ' "$out/top" && break
    kill -0 "$top_pid" 2>/dev/null || fail "top --listen ended: $(cat "$out/top")"
    sleep 0.05
done
url=$(sed -n 's/^serving \(http:[^ ]*\)$/\1/p' "$out/top")
[ -n "$url" ] || fail "top --listen printed no address: $(cat "$out/top")"
base=${url%/metrics}
case "$base" in http://127.0.0.1:*) ;; *) fail "listening on $base, not 127.0.0.1";; esac
echo "top --listen: $url"

code=$(curl -sS -o "$out/metrics" -w '%{http_code} %{content_type}' --max-time 5 "$url")
[ "${code%% *}" = 200 ] || fail "GET /metrics: $code"
case "$code" in *"text/plain; version=0.0.4"*) ;; *) fail "content type: $code";; esac
grep -q "^shmbus_up{bus=\"$plain\"} 1$" "$out/metrics" || fail "no shmbus_up for $plain: $(head -20 "$out/metrics")"
grep -q "^shmbus_published_total{bus=\"$plain\"} 100$" "$out/metrics" || fail "published_total of $plain is not 100"
grep -q "^shmbus_subscriber_lag{bus=\"$plain\"," "$out/metrics" || fail "no subscriber line for $plain"
grep -q "^shmbus_pool_blocks{bus=\"$pool\"," "$out/metrics" || fail "no pool census for $pool"
echo "GET /metrics: 200, $(grep -c -v '^#' "$out/metrics") series"

for path in / /metrics/ /favicon.ico "/x?metrics"; do
    code=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 5 "$base$path")
    [ "$code" = 404 ] || fail "GET $path: $code, 404 expected"
done
code=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 5 -X POST "$url")
[ "$code" = 405 ] || fail "POST /metrics: $code, 405 expected"
echo "elsewhere: 404; POST: 405"

# A slow client (half a request line, held open) and one that asks and
# never reads: the next scrape still answers within 2 s.
port=${base##*:}
timeout 60 python3 - "$port" > "$out/held" <<'EOF' & pids+=($!)
import socket, sys, time
port = int(sys.argv[1])
held = []
for _ in range(8):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /metr")
    held.append(s)
for _ in range(4):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n" * 64)
    held.append(s)
print("held", flush=True)
time.sleep(60)
EOF
for _ in $(seq 100); do
    grep -q '^held$' "$out/held" && break
    sleep 0.05
done
grep -q '^held$' "$out/held" || fail "the held connections were not made"
start=$(date +%s%N)
code=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 2 "$url") || fail "the scrape behind held connections did not answer within 2 s"
[ "$code" = 200 ] || fail "the scrape behind held connections: $code"
echo "a scrape behind 8 half-sent and 4 unread requests: 200 in $(( ($(date +%s%N) - start) / 1000000 )) ms"

# An endless header: answered 431 (or reset, the rest unread) within the
# deadline, never read on into memory; the next scrape is served.
python3 - "$port" <<'EOF'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.settimeout(5)
start = time.monotonic()
got = b""
try:
    s.sendall(b"GET /metrics HTTP/1.1\r\nX: " + b"a" * (64 * 1024))
    while True:
        b = s.recv(4096)
        if not b:
            break
        got += b
except (ConnectionResetError, BrokenPipeError):
    pass
took = time.monotonic() - start
assert took < 3, f"an endless header held its connection {took:.1f} s"
assert got == b"" or got.startswith(b"HTTP/1.1 431 "), got[:80]
print(f"an endless header: {'431' if got else 'reset'} after {took * 1000:.0f} ms")
EOF
code=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 2 "$url")
[ "$code" = 200 ] || fail "the scrape after an endless header: $code"

# Every metric the dashboard queries is one the endpoint serves (its
# families are listed by # TYPE whether or not a bus has series of them).
python3 - docs/grafana-shmbus.json "$out/metrics" <<'EOF'
import json, re, sys
dash = json.load(open(sys.argv[1]))
served = set(re.findall(r"^# TYPE (\S+) ", open(sys.argv[2]).read(), re.M))
exprs = []
def walk(v):
    if isinstance(v, dict):
        for k, x in v.items():
            if k == "expr" and isinstance(x, str):
                exprs.append(x)
            else:
                walk(x)
    elif isinstance(v, list):
        for x in v:
            walk(x)
walk(dash)
assert exprs, "the dashboard has no queries"
used = set()
for e in exprs:
    used |= set(re.findall(r"\bshmbus_[a-z_]+", e))
assert used, "the dashboard's queries name no shmbus metric"
missing = sorted(used - served)
assert not missing, f"the dashboard queries metrics the endpoint does not serve: {missing}"
print(f"dashboard: {len(exprs)} queries over {len(used)} metrics, all served")
EOF
echo "ok"
