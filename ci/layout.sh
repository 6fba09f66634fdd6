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
"$SHMBUS" create "$name" --msg-size 16 --slots 8
printf 'alpha\nbeta\ngamma\n' | "$SHMBUS" pub "$name"
# A subscriber that has come and gone leaves its line.
"$SHMBUS" sub "$name" --from oldest --count 2 --timeout 1 > /dev/null
bash tools/check_layout.sh "$name" 3
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
