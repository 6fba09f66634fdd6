#!/usr/bin/env bash
# Buses across containers, without a container engine: every process runs
# in pid and mount namespaces of its own (`unshare --pid --fork --mount
# --mount-proc`: its own /proc, and each is pid 1 there), and each binds
# one shared tmpfs on its /dev/shm, as containers given one tmpfs do
# (docs/DEPLOYMENT.md, "Buses across containers"). On every kind (plain,
# many-publisher, pool, journaled, stream):
#   - the creator, the publishers and the subscribers are each in a
#     namespace of their own, and every subscriber gets what was published
#     (a journal's late joiner all of it, from its start);
#   - a subscriber SIGKILLed in its namespace reads as gone in `stat` run
#     from yet another, while a live one there (also pid 1 in its own)
#     reads as alive: liveness is by lock, never by pid;
#   - `shmbus clean` from another namespace leaves the bus while a
#     subscriber of another namespace holds it, and removes it once none
#     does;
#   - a many-publisher pool bus refuses a publisher from a pid namespace
#     other than its creator's, in one line (its loans are freed by pid).
# Needs root (unshare, mount); skips, saying why, where the system refuses
# (a failure under strict skips, as in .ci/run: `skip` in ci/tool.sh).
# Uses $SHMBUS_BIN, or builds the tool.
set -euo pipefail
cd "$(dirname "$0")/.."
. ci/tool.sh
shmbus_tool
if [ "$(id -u)" != 0 ]; then
    skip root "mounting a tmpfs and new namespaces need root"
fi
command -v unshare >/dev/null || skip namespaces "no unshare on PATH"
if ! unshare --pid --fork --mount --mount-proc true 2>/dev/null; then
    skip namespaces "this system refuses new pid and mount namespaces"
fi
n=${SHMBUS_NS_MESSAGES:-200}
shm=$(mktemp -d /tmp/shmbus-ci-ns-F.XXXXXX)
work=$(mktemp -d)
mount -t tmpfs -o size=64m,mode=1777 shmbus-ci-ns "$shm"
pids=()
cleanup() {
    for p in "${pids[@]}"; do
        for q in $(tree "$p"); do kill -KILL "$q" 2>/dev/null || true; done
    done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    umount "$shm" 2>/dev/null || true
    rmdir "$shm" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# ns CMD...: CMD in new pid and mount namespaces, the shared tmpfs its
# /dev/shm (bound in its own mount namespace: the host's is untouched).
ns() {
    timeout 60 unshare --pid --fork --mount --mount-proc --propagation private \
        sh -c 'mount --bind "$0" /dev/shm && exec "$@"' "$shm" "$@"
}
# The host pid of the `shmbus` that runs as pid 1 in the namespace made
# by the `ns` started in the background as $1 (a subshell, then timeout,
# unshare, and it).
inner() {
    local p=$1
    for _ in 1 2 3 4 5; do
        p=$(awk '{ print $1 }' /proc/"$p"/task/"$p"/children 2>/dev/null)
        [ -n "$p" ] || return 1
        [ "$(cat /proc/"$p"/comm 2>/dev/null)" = shmbus ] && { echo "$p"; return 0; }
    done
    return 1
}
# Every process under $1, deepest first (by pid, from /proc).
tree() {
    local c
    for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do tree "$c"; done
    echo "$1"
}
# stat_is BUS PY: `stat --json` of the bus (read from the host, by path)
# satisfies the Python expression PY of s, within 10 s.
stat_is() {
    for _ in $(seq 200); do
        if "$SHMBUS" stat "$shm/$1" --json 2>/dev/null \
            | python3 -c "import json,sys; s=json.load(sys.stdin); sys.exit(0 if $2 else 1)"; then
            return 0
        fi
        sleep 0.05
    done
    fail "$1: timed out waiting for $2: $("$SHMBUS" stat "$shm/$1" 2>&1)"
}
lines_of() { tr -d '\0' < "$1" | awk -F'\t' '{ print $NF }' | sort -n | tr '\n' ' '; }
expected=$(seq 1 "$n" | sort -n | tr '\n' ' ')

# broadcast KIND PUBLISH CREATE_ARGS...: one kind of broadcast bus.
# PUBLISH is `one` (one publisher) or `two` (two at once, each in its own
# namespace, half the messages each).
broadcast() {
    local kind=$1 publish=$2; shift 2
    local bus="shmbus-ci-ns-F-$kind"
    ns "$SHMBUS" create "$bus" "$@"
    # S1 reads them all; S2 is killed; S3 holds the bus while clean runs.
    ns "$SHMBUS" sub "$bus" --count "$n" --timeout 30 > "$work/$kind.s1" & pids+=($!); local s1=$!
    ns "$SHMBUS" sub "$bus" > /dev/null 2>&1 & pids+=($!); local s2=$!
    ns "$SHMBUS" sub "$bus" > /dev/null 2>&1 & pids+=($!); local s3=$!
    stat_is "$bus" 's["subscribers"] == 3 and all(l["pid"] == 1 for l in s["per_subscriber"])'
    if [ "$publish" = two ]; then
        seq 1 2 "$n" | ns "$SHMBUS" pub "$bus" & local p1=$!
        seq 2 2 "$n" | ns "$SHMBUS" pub "$bus"
        wait "$p1"
    else
        seq 1 "$n" | ns "$SHMBUS" pub "$bus"
    fi
    wait "$s1" || fail "$kind: the subscriber in its own namespace ended with $?"
    [ "$(lines_of "$work/$kind.s1")" = "$expected" ] || fail "$kind: the subscriber got $(lines_of "$work/$kind.s1")"
    if [ "$kind" = journaled ]; then
        # A late joiner, in a namespace of its own, from the journal's start.
        ns "$SHMBUS" sub "$bus" --bootstrap --count "$n" --timeout 30 > "$work/$kind.late"
        [ "$(lines_of "$work/$kind.late")" = "$expected" ] || fail "$kind: the late joiner got $(lines_of "$work/$kind.late")"
    fi
    local victim
    victim=$(inner "$s2") || fail "$kind: no process in S2's namespace"
    kill -KILL "$victim"
    wait "$s2" 2>/dev/null || true
    # S3 (pid 1 in its namespace, as S2 was) alive, S2 gone.
    stat_is "$bus" 's["subscribers"] == 1 and [l["alive"] for l in s["per_subscriber"]].count(True) == 1'
    ns "$SHMBUS" clean > "$work/$kind.clean"
    [ -e "$shm/$bus" ] || fail "$kind: clean in another namespace removed a bus a live subscriber holds"
    victim=$(inner "$s3") || fail "$kind: no process in S3's namespace"
    kill -KILL "$victim"
    wait "$s3" 2>/dev/null || true
    ns "$SHMBUS" clean > "$work/$kind.clean"
    grep -q "^removed /dev/shm/$bus$" "$work/$kind.clean" || fail "$kind: clean did not remove it: $(cat "$work/$kind.clean")"
    [ ! -e "$shm/$bus" ] || fail "$kind: $bus is still there"
    echo "$kind: $n messages across namespaces; the killed subscriber gone, the live one alive (both pid 1); clean from another namespace kept it while held, removed it after"
}

broadcast plain one --msg-size 16 --slots 256
broadcast many two --msg-size 16 --slots 256 --publishers many
broadcast pool one --pool 256:512 --slots 256
broadcast journaled one --msg-size 16 --slots 256 --journal /dev/shm/shmbus-ci-ns-F.journal
rm -f "$shm/shmbus-ci-ns-F.journal"

# A stream: producer and consumer each in its own namespace; a consumer
# killed in its namespace; the next one, in another, goes on exactly.
stream=shmbus-ci-ns-F-stream
ns "$SHMBUS" create "$stream" --kind stream --bytes 65536
seq 1 "$n" | ns "$SHMBUS" pub "$stream"
ns "$SHMBUS" sub "$stream" --count "$((n / 2))" --timeout 30 > "$work/stream.c1"
ns "$SHMBUS" sub "$stream" > /dev/null 2>&1 & pids+=($!); c2=$!
# C2 (pid 1 in its namespace) is the consumer, alive, and reads the rest.
stat_is "$stream" 's["consumer_alive"] and s["consumer_pid"] == 1 and s["fill"] == 0'
victim=$(inner "$c2") || fail "stream: no process in the consumer's namespace"
kill -KILL "$victim"
wait "$c2" 2>/dev/null || true
stat_is "$stream" 'not s["consumer_alive"]'
[ "$(lines_of "$work/stream.c1")" = "$(seq 1 $((n / 2)) | tr '\n' ' ')" ] || fail "stream: the first consumer got $(lines_of "$work/stream.c1")"
ns "$SHMBUS" clean > "$work/stream.clean"
grep -q "^removed /dev/shm/$stream$" "$work/stream.clean" || fail "stream: clean did not remove it: $(cat "$work/stream.clean")"
echo "stream: producer and consumers each in its own namespace; a consumer killed in its namespace; clean from another removed it"

# A many-publisher pool bus: its publishers share its creator's pid
# namespace, and one from another is refused in one line while that
# namespace lives (a namespace's number, the inode of /proc/self/ns/pid,
# may be given to a new one once it is gone: then no publisher of the old
# one lives, and the new one's are taken).
mpool=shmbus-ci-ns-F-mpool
mkfifo "$work/feed"
ns sh -c "'$SHMBUS' create $mpool --pool 256:64 --slots 32 --publishers many && exec '$SHMBUS' pub $mpool" \
    < "$work/feed" & pids+=($!); creator=$!
exec 3> "$work/feed"
printf '1\n2\n3\n' >&3
stat_is "$mpool" 's["published"] == 3'
rc=0
echo 4 | ns "$SHMBUS" pub "$mpool" 2> "$work/mpool.err" || rc=$?
exec 3>&-
wait "$creator" || fail "many-publisher pool: the publisher in the creator's namespace ended with $?"
[ "$rc" = 1 ] || fail "many-publisher pool: a publisher from another pid namespace exited $rc: $(cat "$work/mpool.err")"
[ "$(wc -l < "$work/mpool.err")" = 1 ] && grep -q "pid namespace" "$work/mpool.err" \
    || fail "many-publisher pool: $(cat "$work/mpool.err")"
ns "$SHMBUS" rm "$mpool"
echo "many-publisher pool: a publisher from another pid namespace refused: $(cat "$work/mpool.err")"
left=$(ls -A "$shm")
[ -z "$left" ] || fail "left in the shared tmpfs: $left"
echo "ok"
