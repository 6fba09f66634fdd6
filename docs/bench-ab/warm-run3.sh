#!/usr/bin/env bash
# old (round robin), new (warm block, no cushion), cush (warm, cushion 4): rotated per run.
set -u
cd "${BENCH_AB_DIR:-.}"
vs=(old new cush)
for i in ${RUNS:-1 2 3 4}; do
  for k in 0 1 2; do
    v=${vs[$(( (k + i) % 3 ))]}
    echo "=== $v run $i $(date +%T) $(uptime | sed 's/.*load/load/')"
    ./$v --large --quick --sizes ${SIZES:-65536,1048576} --mechanisms shmbus-zc,iceoryx2,crossbar-pool \
      --json c$v-$i.json > c$v-$i.txt 2>&1 || echo "$v $i failed: $?"
  done
done
echo "=== done $(date +%T)"
