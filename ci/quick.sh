#!/usr/bin/env bash
# The inner loop: format, lints, the README's test command, the doc
# examples, the layout page read back by the Python reader, the C header
# and the Python binding's tests. Under 8 minutes on 2 cores from a cold
# target/ (docs/GUIDE.md, "Tests and CI"); .ci/run is the whole gate (Miri,
# loom, sanitizers, the bridge between namespaces, the benchmarks, the
# soak, the optimized builds), run before a change lands.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
# The C examples' library and the Python module unoptimized, with debug
# assertions: quicker to build from cold, and stricter; .ci/run tests the
# optimized ones (the `ci` profile).
export SHMBUS_PROFILE=debug
export MATURIN_PEP517_ARGS="--profile dev"
# Line tables for debug info, as .ci/run builds: every backtrace keeps its
# file and line, and a cold build writes and links far less.
export CARGO_PROFILE_DEV_DEBUG=line-tables-only
# The long tests' loops at a quarter of their full size (.ci/run runs half) (docs/GUIDE.md,
# "Tests and CI"); set SHMBUS_TEST_SCALE yourself to run another.
export SHMBUS_TEST_SCALE=${SHMBUS_TEST_SCALE:-0.25}
start=$(date +%s)
cpu_file=$(mktemp)
# Wall and CPU seconds (user + sys of this shell's finished children, the
# builtin `times`) since the start, as .ci/run counts them.
step() {
    times > "$cpu_file"
    echo; echo "=== $* ($(( $(date +%s) - start )) s, $(awk 'NR == 2 { gsub(/s/, ""); split($1, u, "m"); split($2, s, "m"); printf "%d", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$cpu_file") cpu-s)"
}

# `shmbus top` is tested in a real terminal under tmux: installed as .ci/run
# does, so those tests run rather than skip. Where it cannot be installed
# (no root) they skip, saying so, which passes here unless
# SHMBUS_STRICT_SKIPS=1 or CI=true (docs/GUIDE.md, "Tests and CI").
command -v tmux >/dev/null || { apt-get update -qq && apt-get install -y -qq tmux; } \
    || echo "tmux is missing and could not be installed: the terminal tests of top will skip"

step "cargo fmt --check"
cargo fmt --all -- --check

step "no import cycles between modules; the library's layers in ARCHITECTURE's order; each kind named only where its list says (tools/kind_house.py)"
for src in crates/*/src; do python3 tools/modcycles.py "$src"; done
python3 tools/modcycles.py crates/shmbus/src --order docs/ARCHITECTURE.md
python3 tools/kind_house.py crates/shmbus/src

step "clippy and the tests (the README's test command), in one build"
# As .ci/run does: clippy-driver compiles the workspace's own crates as the
# tests build them, every target linted with -D warnings, and the
# dependencies are compiled once rather than checked for `cargo clippy`
# and built again for `cargo test`.
RUSTC_WORKSPACE_WRAPPER="$(rustup which clippy-driver)" \
    CLIPPY_ARGS=-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__ \
    cargo test -q --workspace --all-features
# The async tests on the forced waiter thread too (the run above used the
# io_uring wake where the kernel has it).
SHMBUS_AIO_WAKE=thread RUSTC_WORKSPACE_WRAPPER="$(rustup which clippy-driver)" \
    CLIPPY_ARGS=-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__ \
    cargo test -q --workspace --all-features --test aio
export SHMBUS_BIN=$PWD/target/debug/shmbus

step "doc examples and # Errors"
bash ci/doc_examples.sh shmbus

step "layout page, read back by tools/read_bus.py (ci/layout.sh)"
bash ci/layout.sh

step "C header current (the examples ran with the tests)"
crates/shmbus-ffi/cbindgen.sh --check

step "man pages render, completions load (ci/install.sh)"
bash ci/install.sh

step "Python binding's tests (ci/python.sh --quick)"
bash ci/python.sh --quick

step "done"
