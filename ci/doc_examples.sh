#!/usr/bin/env bash
# Every public item of each crate named (default: shmbus shmbus-zenoh
# shmbus-mcap) has
# `# Examples` that run, and `# Errors` where it returns a Result: nightly's
# rustdoc JSON read by tools/doc_examples.py, in a target dir of its own
# (target/nightly-doc; ci/packages.sh, run after this, checks the crates'
# packages there). Any rustdoc warning fails: a broken intra-doc link.
#
#   ci/doc_examples.sh [CRATE...]
set -euo pipefail
cd "$(dirname "$0")/.."
rustup component list --toolchain nightly --installed >/dev/null 2>&1 || {
    echo "needs the nightly toolchain (rustup toolchain install nightly)" >&2
    exit 1
}
export CARGO_TARGET_DIR=target/nightly-doc
crates=("$@")
[ "${#crates[@]}" -gt 0 ] || crates=(shmbus shmbus-zenoh shmbus-mcap)
for crate in "${crates[@]}"; do
    cargo +nightly rustdoc -q -p "$crate" --lib -- \
        -Z unstable-options --output-format json --document-hidden-items -D warnings
    python3 tools/doc_examples.py "target/nightly-doc/doc/${crate//-/_}.json"
done
