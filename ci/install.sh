#!/usr/bin/env bash
# The install paths of the README's "Install" section that are neither the
# wheel (ci/python.sh builds and tests that) nor the crates' packages
# (ci/packages.sh): the tool's man pages and shell completions (`shmbus
# generate`), put where the README puts them: each page renders with no
# groff warning and `man` finds it beside the bin directory on PATH; each
# completion script loads in its shell (bash, zsh, fish) and completes a
# subcommand and a flag.
set -euo pipefail
cd "$(dirname "$0")/.."
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
