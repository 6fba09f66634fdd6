#!/usr/bin/env bash
# Soak: one publisher and four subscriber processes, 100 million messages
# (SHMBUS_SOAK_MESSAGES to change), in a release build, with the chaos
# suite's checks (torn = 0, delivered + skipped == published, no receive
# past its bound). Prints the figures.
#
# Bounded: the release build reuses the library and dependencies that
# `shmbus-bench --quick` built; the run took 38 s on 2 cores (256-byte messages),
# and `timeout` ends it at 10 minutes whatever happens.
set -euo pipefail
cd "$(dirname "$0")/.."
timeout 600 cargo test --release -p shmbus --test chaos soak -- --ignored --nocapture
