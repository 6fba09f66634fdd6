#!/usr/bin/env bash
# Soak: one publisher and four subscriber processes, 100 million messages
# times SHMBUS_TEST_SCALE (SHMBUS_SOAK_MESSAGES sets it exactly), in an
# optimized build (SHMBUS_PROFILE: release, or CI's `ci`), with the chaos
# suite's checks (torn = 0, delivered + skipped == published, no receive
# past its bound). Prints the figures.
#
# Bounded: the run took 38-43 s on 2 cores (256-byte messages), and
# `timeout` ends it at 10 minutes whatever happens (times the scale, above 1).
set -euo pipefail
cd "$(dirname "$0")/.."
. ci/ran.sh
limit=$(awk -v s="${SHMBUS_TEST_SCALE:-1}" 'BEGIN { printf "%d", 600 * (s > 1 ? s : 1) }')
ran_some timeout "$limit" cargo test --profile "${SHMBUS_PROFILE:-release}" -p shmbus --test chaos soak -- --ignored --nocapture
