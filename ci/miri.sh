#!/usr/bin/env bash
# The ring protocols (slots and stream) under Miri, over the heap-backed region: every atomic
# access, fence and pointer cast of the real slot code, checked for undefined
# behaviour with strict provenance. The futex calls go through libc under
# Miri (see wait.rs), which Miri models.
set -euo pipefail
cd "$(dirname "$0")/.."
. ci/ran.sh
if ! rustup +nightly component list --installed 2>/dev/null | grep '^miri' >/dev/null; then
    rustup +nightly component add miri rust-src
fi
export MIRIFLAGS="-Zmiri-strict-provenance -Zmiri-disable-isolation"

export CARGO_TARGET_DIR=target/miri
ran_some cargo +nightly miri test -p shmbus --lib
ran_some cargo +nightly miri test -p shmbus --test wrap
# The stream's heap tests (the ring model, edge records, records between
# threads), their record counts under SHMBUS_TEST_SCALE as every long
# test's.
ran_some cargo +nightly miri test -p shmbus --test stream heap::
