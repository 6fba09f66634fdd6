#!/usr/bin/env bash
# Soak: one publisher and four subscriber processes, 100 million messages
# (SHMBUS_SOAK_MESSAGES to change), in an optimized build (SHMBUS_PROFILE:
# release, or CI's `ci`), with the chaos
# suite's checks (torn = 0, delivered + skipped == published, no receive
# past its bound). Prints the figures.
#
# Bounded: the run took 38-43 s on 2 cores (256-byte messages), and
# `timeout` ends it at 10 minutes whatever happens.
set -euo pipefail
cd "$(dirname "$0")/.."
timeout 600 cargo test --profile "${SHMBUS_PROFILE:-release}" -p shmbus --test chaos soak -- --ignored --nocapture
