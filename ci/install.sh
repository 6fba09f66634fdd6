#!/usr/bin/env bash
# The install paths of the README's "Install" section that are not the
# wheel (ci/python.sh builds and tests that):
# - the crates as crates.io would receive them: `cargo publish --dry-run`
#   packages shmbus, shmbus-zenoh, shmbus-cli and shmbus-ffi and builds
#   each from its package alone, the unpublished siblings resolved from a
#   local registry of the packages just made (cargo 1.90 and later). It
#   shares target/ with the test step; what it builds again is the four
#   crates and the ~45 dependencies whose features unify differently
#   without the rest of the workspace (Zenoh's stack among them).
# - the tool's man pages and shell completions (`shmbus generate`), put
#   where the README puts them: each page renders with no groff warning
#   and `man` finds it beside the bin directory on PATH; each completion
#   script loads in its shell (bash, zsh, fish) and completes a
#   subcommand and a flag.
# --no-publish: only the second part (a quick look at the pages).
set -euo pipefail
cd "$(dirname "$0")/.."
publish=1
[ "${1:-}" != --no-publish ] || publish=0

need() { # COMMAND PACKAGE
    command -v "$1" >/dev/null || { apt-get update -qq && apt-get install -y -qq "$2" >/dev/null; }
}
need groff groff-base
need man man-db
need zsh zsh
need fish fish

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "install.sh: $*" >&2; exit 1; }

if [ "$publish" = 1 ]; then
    # Cargo unpacks each package of its local registry once per registry
    # path (registry/src/-HASH/NAME-VERSION) and reuses that copy while
    # the version stays 0.1.0: a second run in the same checkout path
    # would build the siblings of an earlier run. Those copies go first.
    rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/shmbus-*
    echo "cargo publish --dry-run (package, then build each from its package):"
    cargo publish --dry-run -p shmbus -p shmbus-zenoh -p shmbus-cli -p shmbus-ffi > "$work/publish" 2>&1 ||
        { cat "$work/publish" >&2; fail "cargo publish --dry-run failed (above)"; }
    grep -E '^ *(Packaged|Verifying|Finished|warning|error)' "$work/publish" || true
    # A warning is a missing field (description, license, repository...).
    warned=$(grep '^warning' "$work/publish" | grep -v 'aborting upload due to dry run' || true)
    [ -z "$warned" ] || fail "cargo publish --dry-run warns: $warned"
    # What crates.io and docs.rs show beside the code: each package's
    # README and both license texts (symlinks here, files in the package),
    # and the FFI crate's header.
    for crate in shmbus shmbus-zenoh shmbus-cli shmbus-ffi; do
        files=$(cargo package --list --quiet -p "$crate")
        extra=""
        [ "$crate" != shmbus-ffi ] || extra=include/shmbus.h
        for f in README.md LICENSE-MIT LICENSE-APACHE $extra; do
            grep -qx "$f" <<< "$files" || fail "the $crate package has no $f"
        done
    done
    echo "each package has its README.md, LICENSE-MIT and LICENSE-APACHE"
fi

. ci/tool.sh
shmbus_tool

# As the README installs them, a prefix standing for ~/.cargo.
mkdir -p "$work/bin"
"$SHMBUS" generate man "$work/share/man/man1" > "$work/written"
pages=("$work"/share/man/man1/*.1)
[ "$(wc -l < "$work/written")" = "${#pages[@]}" ] || fail "generate man listed $(wc -l < "$work/written") pages, wrote ${#pages[@]}"
# The pages are those of `shmbus --help`'s commands (help aside), and
# of bridge's two.
listed=$("$SHMBUS" --help | awk '/^Commands:/ { on = 1; next } /^$/ { on = 0 } on { print $1 }' | grep -vx help)
for cmd in "" $listed bridge-in bridge-out; do
    page="$work/share/man/man1/shmbus${cmd:+-$cmd}.1"
    [ -f "$page" ] || fail "no man page ${page##*/}"
done
for page in "${pages[@]}"; do
    name=$(basename "$page" .1)
    warnings=$(groff -man -Tutf8 -ww -z "$page" 2>&1) || fail "groff failed on $name.1: $warnings"
    [ -z "$warnings" ] || fail "groff warns on $name.1: $warnings"
    MANPAGER=cat MANWIDTH=80 man -l "$page" 2>/dev/null | grep -q "^NAME" || fail "man -l $name.1 shows no NAME section"
    found=$(PATH="$work/bin:$PATH" man -w "$name") || fail "man does not find $name beside $work/bin"
    [ "$found" = "$page" ] || fail "man -w $name found $found, not $page"
done
MANPAGER=cat MANWIDTH=200 man -l "$work/share/man/man1/shmbus.1" 2>/dev/null | grep -q "segment layout" ||
    fail "shmbus.1 does not name the segment layout"
echo "${#pages[@]} man pages render without a warning and man finds each"

"$SHMBUS" generate completions bash > "$work/shmbus.bash"
got=$(bash --norc --noprofile -c '
    source "$1" || exit 1
    complete -p shmbus >/dev/null || exit 1
    COMP_WORDS=(shmbus cre); COMP_CWORD=1; _shmbus shmbus cre shmbus; echo "${COMPREPLY[*]}"
    COMP_WORDS=(shmbus sub --fr); COMP_CWORD=2; _shmbus shmbus --fr sub; echo "${COMPREPLY[*]}"
' bash "$work/shmbus.bash") || fail "the bash completion script does not load"
[ "$got" = "$(printf 'create\n--from')" ] || fail "bash completes 'shmbus cre' and 'shmbus sub --fr' as: $got"
echo "bash: loads, completes create and --from"

"$SHMBUS" generate completions zsh > "$work/_shmbus"
zsh -f -c 'autoload -Uz compinit && compinit -u -D && source "$1" &&
    (( $+functions[_shmbus] )) && [[ ${_comps[shmbus]} == _shmbus ]]' zsh "$work/_shmbus" ||
    fail "the zsh completion script does not load, or does not register _shmbus for shmbus"
echo "zsh: loads, _shmbus registered for shmbus"

"$SHMBUS" generate completions fish > "$work/shmbus.fish"
got=$(fish --no-config -c 'source $argv[1]; or exit 1; complete -C "shmbus cre"; complete -C "shmbus sub --fr"' \
    "$work/shmbus.fish" | cut -f1) || fail "the fish completion script does not load"
[ "$got" = "$(printf 'create\n--from')" ] || fail "fish completes 'shmbus cre' and 'shmbus sub --fr' as: $got"
echo "fish: loads, completes create and --from"
