#!/usr/bin/env bash
# Before (`old`) and after (`new`) shmbus-bench binaries,
# alternated run by run on the same machine; each run is itself a
# round-by-round interleaved comparison against the floor and ringfire.
set -u
cd "${BENCH_AB_DIR:-.}"
mech=floor,floor-2line,shmbus,shmbus-zc,shmbus-stream,ringfire
for i in ${RUNS:-1 2 3}; do
  for v in old new; do
    echo "=== $v run $i $(date +%T)"
    ./$v --quick --mechanisms $mech --patterns pingpong,throughput,fanout --json $v-$i.json > $v-$i.txt 2>&1 || echo "$v $i failed: $?"
  done
done
echo "=== done $(date +%T)"
