#!/usr/bin/env bash
# The warm-reuse A/B: before (`old`) and after (`new`) shmbus-bench
# binaries alternated run by run on the same machine, `--large --quick` at
# 64 KiB, 1 MiB and 4 MiB for the pool bus and the two peers that loan
# blocks too. Each run interleaves its mechanisms round by round, so a
# ratio to iceoryx2 or crossbar-pool compares figures of the same rounds.
# Odd pairs run old first, even pairs new first, so neither always goes
# first after a pause. `uptime` before each run goes into the log.
set -u
cd "${BENCH_AB_DIR:-.}"
mech=${MECHANISMS:-shmbus-zc,iceoryx2,crossbar-pool}
sizes=${SIZES:-65536,1048576,4194304}
for i in ${RUNS:-1 2 3}; do
  if [ $((i % 2)) -eq 1 ]; then order="old new"; else order="new old"; fi
  for v in $order; do
    echo "=== $v run $i $(date +%T) $(uptime | sed 's/.*load/load/')"
    ./$v --large --quick --sizes "$sizes" --mechanisms "$mech" \
      --json "$v-$i.json" > "$v-$i.txt" 2>&1 || echo "$v $i failed: $?"
  done
done
echo "=== done $(date +%T) $(uptime | sed 's/.*load/load/')"
