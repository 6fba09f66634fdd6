#!/usr/bin/env bash
# ThreadSanitizer and AddressSanitizer over the threaded tests: the library's
# unit tests (the slot protocol and the stream between threads on the heap)
# and the heap half of the wrap test. Nightly `-Zsanitizer` with
# `-Zbuild-std`, so the standard library is instrumented too (TSan reports
# false races otherwise); needs the nightly rust-src component.
#
# Bounded: two builds of std and the crate (a few minutes on 2 cores, kept
# in target/tsan and target/asan so later runs are incremental) and tests
# that are already sized for a debug build.
# Processes are not under test here: the multi-process suites re-execute the
# test binary, and a sanitizer runtime per child adds nothing the threaded
# tests do not already cover for the same code.
set -euo pipefail
cd "$(dirname "$0")/.."
. ci/ran.sh
if ! rustup +nightly component list --installed 2>/dev/null | grep '^rust-src' >/dev/null; then
    rustup +nightly component add rust-src
fi
target=$(rustc +nightly -vV | sed -n 's/^host: //p')

run() {
    local san=$1
    shift
    echo "--- $san sanitizer"
    RUSTFLAGS="-Zsanitizer=$san" \
    RUSTDOCFLAGS="-Zsanitizer=$san" \
    CARGO_TARGET_DIR="target/$san" \
        ran_some cargo +nightly test -q -Zbuild-std --target "$target" -p shmbus "$@"
}

# TSan: std's own atomics are instrumented by build-std; the seqlock's racy
# payload reads are atomic loads, so a report here is a real race.
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" run thread --lib
TSAN_OPTIONS="halt_on_error=1" run thread --test wrap -- heap
# ASan: out-of-bounds or use-after-free in the region and ring code; the
# leaks a test makes on purpose are named in ci/lsan.supp.
export LSAN_OPTIONS="suppressions=$PWD/ci/lsan.supp"
ASAN_OPTIONS="detect_leaks=1" run address --lib
ASAN_OPTIONS="detect_leaks=1" run address --test wrap -- heap
