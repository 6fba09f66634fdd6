#!/usr/bin/env bash
# Before (`old`) and after (`new`) shmbus-bench binaries alternated run by
# run, the lossless throughput rows beside ringfire's
# (lossless-throughput.md); each run's load average is logged.
set -u
cd "${BENCH_AB_DIR:-.}"
mech=shmbus,shmbus-lossless,ringfire,ringfire-lossless
for i in ${RUNS:-1 2 3}; do
  for v in old new; do
    echo "=== $v run $i $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
    ./$v --quick --mechanisms $mech --patterns throughput --json $v-$i.json > $v-$i.txt 2>&1 || echo "$v $i failed: $?"
  done
done
echo "=== done $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
