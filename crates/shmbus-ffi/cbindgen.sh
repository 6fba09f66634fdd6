#!/usr/bin/env bash
# Generates include/shmbus.h from this crate with cbindgen (pinned below, so
# every machine writes the same header); --check compares instead and fails
# with a one-line hint if the checked-in header is stale (ci/c.sh).
#
# cbindgen is a tool run here, not a build-dependency: a build.rs would
# compile syn and serde into every build of the library (and of everything
# that depends on it) and write outside OUT_DIR; the header is checked in,
# so only the person who changes the API needs the tool.
set -euo pipefail
cd "$(dirname "$0")/../.."
VERSION=0.29.4
if ! cbindgen --version 2>/dev/null | grep -qx "cbindgen $VERSION"; then
    cargo install --quiet --locked cbindgen --version "$VERSION"
fi
# The doc comments are rustdoc's: in the header's comments (lines that
# start with " *") a "# Safety" heading becomes "Safety:", and the code
# spans and intra-doc links lose their markup ([`X`](path), [`X`], `X`:
# X), so C readers get plain text.
plain_comments() {
    sed -E -i \
        -e '/^ *\*( |$)/{
            s/^( *\*) # (.*)$/\1 \2:/
            s/\[`?([^]`]*)`?\]\([^)]*\)/\1/g
            s/\[`([^]`]*)`\]/\1/g
            s/`//g
        }' "$1"
}
generate() {
    cbindgen --quiet --config crates/shmbus-ffi/cbindgen.toml --crate shmbus-ffi \
        --output "$1" crates/shmbus-ffi
    plain_comments "$1"
}
if [[ "${1:-}" == "--check" ]]; then
    fresh=$(mktemp)
    trap 'rm -f "$fresh"' EXIT
    generate "$fresh"
    if ! diff -u include/shmbus.h "$fresh" >&2; then
        echo "include/shmbus.h is stale: run crates/shmbus-ffi/cbindgen.sh and commit it" >&2
        exit 1
    fi
else
    generate include/shmbus.h
fi
