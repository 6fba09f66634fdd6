#!/usr/bin/env bash
# The warm-reuse rule in instructions and simulated cache misses:
# `pool_callgrind-old` and `pool_callgrind-new` (the example built
# before and after) under callgrind, each case run for 256 and 512 rounds;
# the difference is 256 rounds of steady state (the first laps, which
# touch every block once, cancel out).
#   64 B: instructions only (100 000 rounds would do as well; 20 000 here).
#   64 KiB, 1 MiB, 4 MiB at the bench's geometry (64 slots, 128 blocks),
#     with the host's last-level cache simulated (valgrind reads it).
#   A small ring with a roomy pool (4 slots, 64 blocks) at 64 KiB under a
#     2 MiB simulated last level (this machine's L2) and at 1 MiB under
#     32 MiB (an EPYC CCX's L3).
set -u
cd "${BENCH_AB_DIR:-.}"
for v in old new; do
  valgrind --tool=callgrind --callgrind-out-file=cg-64-$v.out ./pool_callgrind-$v 64 20000 > /dev/null 2>&1
done
run() { # name size rounds slots blocks [valgrind options]
  local out=$1; shift
  local size=$1 n=$2 slots=$3 blocks=$4; shift 4
  valgrind --tool=callgrind --cache-sim=yes "$@" --callgrind-out-file=$out \
    ./pool_callgrind-${out%%-*} $size $n $slots $blocks > /dev/null 2>&1
  echo "$out $(grep '^summary' $out)"
}
for size in 65536 1048576 4194304; do
  for n in 256 512; do
    for v in old new; do
      run $v-$size-64-128-$n.out $size $n 64 128
    done
  done
done
for c in "65536 2097152" "1048576 33554432"; do
  set -- $c
  for n in 256 512; do
    for v in old new; do
      run $v-$1-4-64-LL$2-$n.out $1 $n 4 64 --LL=$2,16,64
    done
  done
done
