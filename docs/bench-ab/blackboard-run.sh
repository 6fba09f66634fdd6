#!/usr/bin/env bash
# The blackboard's write and read through entry handles against ringfire's,
# taken apart: `main` and variant shmbus-bench binaries (each built from
# main with one change, docs/bench-ab/blackboard-handles.md) alternated run
# by run, the order rotated each run. Each `--blackboard` run interleaves
# shmbus, ringfire and iceoryx2 round by round, so a variant's ratio to
# ringfire compares figures of the same rounds. VARIANTS names the
# binaries in this directory, `main` first.
set -u
cd "${BENCH_AB_DIR:-.}"
read -r -a vs <<< "${VARIANTS:-main v1 v2 v3}"
n=${#vs[@]}
for i in ${RUNS:-1 2 3 4 5 6 7 8}; do
  for k in $(seq 0 $((n - 1))); do
    v=${vs[$(( (k + i) % n ))]}
    echo "=== $v run $i $(date +%T) $(uptime | sed 's/.*load/load/')"
    ./$v --blackboard --cpus 0,1 --json "$v-$i.json" > "$v-$i.txt" 2>&1 || echo "$v $i failed: $?"
  done
done
echo "=== done $(date +%T)"
