#!/usr/bin/env bash
# loom explores the interleavings of the real slot and sleep protocols
# (crates/shmbus/src/loom/bus.rs) through the `sync` facade.
set -euo pipefail
cd "$(dirname "$0")/.."
. ci/ran.sh
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
    ran_some cargo test -p shmbus --profile "${SHMBUS_PROFILE:-release}" --lib loom
