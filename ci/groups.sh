#!/usr/bin/env bash
# A team's buses: two unprivileged users of one group (A and B, the group
# a supplementary one of each, as a team's service accounts have it) and
# an outsider (C), each run with `setpriv`; made here and removed at the
# end (root only: skipped, saying so, without useradd or setpriv; a skip
# fails under strict skips, as in .ci/run: `skip` in ci/tool.sh).
#   - A creates with `--group TEAM --mode 660` a plain bus, a pool bus, a
#     stream and a journaled bus; each file (and the journal) is A's, of
#     group TEAM, mode 0660, whatever A's umask;
#   - B publishes on A's bus, its journal and pool, and reads them (the
#     journal from its start); C is refused each (exit 1, permission);
#   - in /dev/shm (sticky) B may not remove A's bus: `rm` and `clean` say
#     why in one line and exit 2; in a directory of the group (setgid,
#     not sticky) B removes A's abandoned buses (`rm`, `clean`) and C is
#     refused with exit 2;
#   - `--group` of a group A is not in, and of no group, exit 2.
# Uses $SHMBUS_BIN, or builds the tool.
set -euo pipefail
cd "$(dirname "$0")/.."
. ci/tool.sh
shmbus_tool
if [ "$(id -u)" != 0 ]; then
    skip root "making users needs root"
fi
for tool in useradd setpriv; do
    command -v "$tool" >/dev/null || skip root "no $tool on PATH (the tools to make and be other users)"
done
tag="F$$"
team="shmbus-t$tag" a="shmbus-a$tag" b="shmbus-b$tag" c="shmbus-c$tag"
shm=/dev/shm/shmbus-ci-groups-$tag   # a bare name's directory is /dev/shm itself
teamdir=/dev/shm/shmbus-ci-team-$tag
work=$(mktemp -d)
cleanup() {
    rm -rf "$teamdir" "$work"
    rm -f "$shm"-*
    for u in "$a" "$b" "$c"; do userdel "$u" >/dev/null 2>&1 || true; done
    groupdel "$team" >/dev/null 2>&1 || true
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
groupadd "$team"
for u in "$a" "$b" "$c"; do useradd -M -N -g nogroup -s /usr/sbin/nologin "$u"; done
usermod -aG "$team" "$a"
usermod -aG "$team" "$b"
chmod 755 "$work"
# as USER CMD...: run as USER, its groups from the group database, umask
# 077 (the mode must be set exactly whatever the umask).
as() { local u=$1; shift; setpriv --reuid="$u" --regid=nogroup --init-groups -- sh -c 'umask 077; exec "$@"' sh "$@"; }
# expect CODE WHAT CMD...: the command exits CODE with one stderr line
# (`shmbus: ...`) containing WHAT.
expect() {
    local code=$1 what=$2 rc=0; shift 2
    "$@" > "$work/out" 2> "$work/err" || rc=$?
    [ "$rc" = "$code" ] || fail "$* exited $rc, $code expected: $(cat "$work/err")"
    [ "$(wc -l < "$work/err")" = 1 ] || fail "$*: not one stderr line: $(cat "$work/err")"
    grep -q "^shmbus: .*$what" "$work/err" || fail "$*: no \"$what\" in: $(cat "$work/err")"
}
perm() { stat -c '%U %G %a' "$1"; }

# Made by A for the team.
as "$a" "$SHMBUS" create "$shm-bus" --msg-size 16 --slots 64 --group "$team" --mode 660
as "$a" "$SHMBUS" create "$shm-pool" --pool 256:16 --slots 8 --group "$team" --mode 660
as "$a" "$SHMBUS" create "$shm-stream" --kind stream --bytes 4096 --group "$team" --mode 660
mkdir -m 2770 "$teamdir" && chgrp "$team" "$teamdir"
# The journal in a sticky directory that is not the group's (as /tmp):
# its group is the one asked for, not inherited from a setgid directory.
mkdir -m 1777 "$work/journals"
journal=$work/journals/j.journal
as "$a" "$SHMBUS" create "$shm-jbus" --msg-size 16 --slots 64 --journal "$journal" \
    --group "$team" --mode 660
for f in "$shm-bus" "$shm-pool" "$shm-stream" "$shm-jbus" "$journal"; do
    [ "$(perm "$f")" = "$a $team 660" ] || fail "$f is $(perm "$f"), $a $team 660 expected"
done
echo "A's files: $a $team 660 (a bus, a pool, a stream, a journaled bus and its journal)"

# B, of the group, uses them; C, outside it, is refused.
seq 1 3 | as "$b" "$SHMBUS" pub "$shm-bus"
as "$b" "$SHMBUS" sub "$shm-bus" --from oldest --count 3 > "$work/b-bus"
[ "$(tr -d '\0' < "$work/b-bus" | tr '\n' ' ')" = "1 2 3 " ] || fail "B read $(cat -v "$work/b-bus") from A's bus"
seq 1 2 | as "$b" "$SHMBUS" pub "$shm-pool"
as "$b" "$SHMBUS" sub "$shm-pool" --from oldest --count 2 > /dev/null
seq 1 2 | as "$b" "$SHMBUS" pub "$shm-stream"
as "$b" "$SHMBUS" sub "$shm-stream" --count 2 > /dev/null
seq 1 4 | as "$b" "$SHMBUS" pub "$shm-jbus"
as "$a" "$SHMBUS" sub "$shm-jbus" --bootstrap --count 4 > "$work/a-j"
[ "$(tr -d '\0' < "$work/a-j" | cut -f2 | tr '\n' ' ')" = "1 2 3 4 " ] || fail "A read $(cat -v "$work/a-j") from the journal B appended to"
for f in "$shm-bus" "$shm-pool" "$shm-stream" "$shm-jbus"; do
    expect 1 "permission denied" as "$c" "$SHMBUS" sub "$f" --count 1
    echo x | expect 1 "permission denied" as "$c" "$SHMBUS" pub "$f"
done
echo "B published and read on each (the journal from its start, read back by A); C refused on each"

# /dev/shm is sticky: B may not remove A's bus, and is told why.
expect 2 "is sticky and the file is another user's" as "$b" "$SHMBUS" rm "$shm-bus"
as "$b" "$SHMBUS" clean --dir /dev/shm > /dev/null 2> "$work/clean" && fail "B's clean of /dev/shm removed A's buses"
grep -q "$shm-bus: cannot unlink: permission denied: /dev/shm is sticky" "$work/clean" \
    || fail "B's clean did not say why: $(cat "$work/clean")"
echo "in /dev/shm B's rm and clean are refused, saying the directory is sticky"
for f in "$shm-bus" "$shm-pool" "$shm-stream" "$shm-jbus"; do as "$a" "$SHMBUS" rm "$f"; done

# A directory of the group: B removes what A left, C is refused.
for k in one two; do
    as "$a" "$SHMBUS" create "$teamdir/$k" --msg-size 16 --slots 8 --group "$team" --mode 660
done
as "$a" "$SHMBUS" create "$teamdir/pool" --pool 256:16 --slots 8 --group "$team" --mode 660
expect 2 "does not let you write it" as "$c" "$SHMBUS" rm "$teamdir/one"
expect 2 "cannot open the directory: Permission denied" as "$c" "$SHMBUS" clean --dir "$teamdir"
as "$b" "$SHMBUS" rm "$teamdir/one"
as "$b" "$SHMBUS" clean --dir "$teamdir" > "$work/clean"
grep -q "removed $teamdir/two" "$work/clean" && grep -q "removed $teamdir/pool" "$work/clean" \
    || fail "B's clean of the team's directory: $(cat "$work/clean")"
[ -z "$(ls "$teamdir")" ] || fail "left in $teamdir: $(ls "$teamdir")"
echo "in the group's directory B's rm and clean remove A's buses; C's are refused, exit 2"

expect 2 "cannot give the file group" as "$c" "$SHMBUS" create "$shm-x" --msg-size 16 --slots 8 --group "$team" --mode 660
[ ! -e "$shm-x" ] || fail "a refused create left $shm-x"
expect 2 "no group named" as "$a" "$SHMBUS" create "$shm-y" --msg-size 16 --slots 8 --group "no-such-group-$tag"
echo "--group of a group not one's own, or of none: exit 2, nothing left"
echo "ok"
