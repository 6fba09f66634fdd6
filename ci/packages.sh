#!/usr/bin/env bash
# The crates as crates.io would receive them: shmbus, shmbus-zenoh,
# shmbus-mcap, shmbus-cli and shmbus-ffi, each packaged (`cargo publish --dry-run
# --no-verify`: no warning, every dependency versioned, each package with
# its README.md and both license texts), then each compiled from its
# package alone: its own files only, its own features only (nothing a
# sibling in the workspace turns on for a shared dependency), the
# unpublished siblings patched in from their packages.
#
# The compile is `cargo +nightly check` in target/nightly-doc, the doc
# examples' target dir (ci/doc_examples.sh, run first): rustdoc has
# already checked every dependency of shmbus and shmbus-zenoh with these
# features there, so only the five crates and shmbus-cli's own
# dependencies are compiled here. `cargo publish`'s own verify builds
# (with codegen) Zenoh's whole stack again, for features that differ from
# the workspace's by one (libc's extra_traits), and took three minutes of
# the gate.
set -euo pipefail
cd "$(dirname "$0")/.."
# Absolute: the checks below run from the packages' own workspace.
CARGO_TARGET_DIR=$(realpath -m "${CARGO_TARGET_DIR:-target/nightly-doc}")
export CARGO_TARGET_DIR
crates=(shmbus shmbus-zenoh shmbus-mcap shmbus-cli shmbus-ffi)

rustup component list --toolchain nightly --installed >/dev/null 2>&1 || {
    echo "needs the nightly toolchain (rustup toolchain install nightly)" >&2
    exit 1
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "packages.sh: $*" >&2; exit 1; }

rm -rf "$CARGO_TARGET_DIR/package"
args=()
for crate in "${crates[@]}"; do args+=(-p "$crate"); done
cargo publish --dry-run --no-verify "${args[@]}" > "$work/publish" 2>&1 ||
    { cat "$work/publish" >&2; fail "cargo publish --dry-run failed (above)"; }
grep -E '^ *(Packaging|Packaged|warning|error)' "$work/publish" || true
warned=$(grep '^warning' "$work/publish" | grep -v 'aborting upload due to dry run' || true)
[ -z "$warned" ] || fail "cargo publish --dry-run warns: $warned"

# Each package unpacked beside the others, in a workspace of their own
# whose patches stand in for crates.io.
mkdir "$work/ws"
patches=""
members=""
for crate in "${crates[@]}"; do
    # A dry run leaves its packages in package/tmp-crate (cargo 1.90),
    # `cargo package` in package/.
    packed=()
    for f in "$CARGO_TARGET_DIR"/package/{tmp-crate/,}"$crate"-[0-9]*.crate; do
        [ ! -f "$f" ] || packed+=("$f")
    done
    [ "${#packed[@]}" = 1 ] || fail "not one package of $crate under $CARGO_TARGET_DIR/package: ${packed[*]}"
    extra=""
    [ "$crate" != shmbus-ffi ] || extra="include/shmbus.h include/shmbus.hpp"
    dir=$(basename "${packed[0]}" .crate)
    files=$(tar tzf "${packed[0]}")
    for f in README.md LICENSE-MIT LICENSE-APACHE $extra; do
        grep -qx "$dir/$f" <<< "$files" || fail "the $crate package has no $f"
    done
    tar xzf "${packed[0]}" -C "$work/ws"
    members="$members\"$dir\", "
    patches="$patches$crate = { path = \"$dir\" }
"
done
echo "each package has its README.md, LICENSE-MIT and LICENSE-APACHE"
cat > "$work/ws/Cargo.toml" <<EOF
[workspace]
resolver = "2"
members = [${members%, }]

[patch.crates-io]
$patches
EOF
# The versions the workspace tested, not whatever is newest offline.
cp Cargo.lock "$work/ws/Cargo.lock"
for crate in "${crates[@]}"; do
    # One at a time: each with the features it asks for alone.
    (cd "$work/ws" && cargo +nightly check --quiet --offline -p "$crate") ||
        fail "$crate does not compile from its package (above)"
    echo "$crate compiles from its package alone"
done
