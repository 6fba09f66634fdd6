#!/usr/bin/env bash
# The C, C++ and Python quick starts (docs/C.md, docs/CPP.md,
# docs/PYTHON.md), run as written: each section's `sh` block with its
# `ticks.c`/`ticks.cpp`/`ticks.py` beside it, from the repository root, HOME a fresh directory (the C one installs
# into $HOME/.local), the Python one in a fresh .venv from the wheel, with
# no cargo or rustc on PATH. Fails unless each prints what its page says
# it prints. Then every code block of the docs, as written
# (tools/doc_snippets.py, checked first on pages made to fail: shell,
# Python in that .venv, C against the library the C quick start
# installed, Rust type-checked). Leaves nothing behind (.venv, ticks.*,
# ticks-cpp/, /dev/shm/ticks; the snippets run on a /dev/shm of their own).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
work=$(mktemp -d)
cleanup() {
    rm -rf "$work" "$root/.venv" "$root/ticks.c" "$root/ticks.cpp" "$root/ticks-cpp" "$root/ticks.py" "$root/ticks"
    rm -f /dev/shm/ticks
}
trap cleanup EXIT
[ ! -e .venv ] || { echo "quickstarts.sh: .venv exists here; it would be replaced" >&2; exit 1; }
[ ! -e ticks-cpp ] || { echo "quickstarts.sh: ticks-cpp exists here; it would be replaced" >&2; exit 1; }
[ ! -e /dev/shm/ticks ] || { echo "quickstarts.sh: /dev/shm/ticks exists" >&2; exit 1; }

# The first ```LANG block of FILE after the heading HEADING and, if given,
# after the line MARKER within that section.
block() { # FILE HEADING LANG [MARKER]
    python3 - "$@" <<'PY'
import sys
path, heading, lang = sys.argv[1], sys.argv[2], sys.argv[3]
marker = sys.argv[4] if len(sys.argv) > 4 else None
lines = open(path).read().split("\n")
i = lines.index(heading)
if marker:
    i = next(j for j in range(i, len(lines)) if marker in lines[j])
start = next(j for j in range(i, len(lines)) if lines[j] == "```" + lang)
end = next(j for j in range(start + 1, len(lines)) if lines[j] == "```")
print("\n".join(lines[start + 1:end]))
PY
}

check() { # WHAT EXPECTED GOT
    if [ "$2" != "$3" ]; then
        printf 'quickstarts.sh: %s printed\n%s\ninstead of\n%s\n' "$1" "$3" "$2" >&2
        exit 1
    fi
    echo "ok: $1"
}

# Rust's toolchain stays where it is when HOME moves.
export RUSTUP_HOME=${RUSTUP_HOME:-$HOME/.rustup} CARGO_HOME=${CARGO_HOME:-$HOME/.cargo}

block docs/C.md "## From C" c 'where `ticks.c` is:' > ticks.c
mkdir -p "$work/home"
got=$(HOME="$work/home" bash -euo pipefail -c "$(block docs/C.md "## From C" sh)")
check "the C quick start" "1 = 42" "$(echo "$got" | tail -1)"

block docs/CPP.md "## Quick start" cpp 'where `ticks.cpp` is:' > ticks.cpp
got=$(HOME="$work/home" bash -euo pipefail -c "$(block docs/CPP.md "## Quick start" sh)")
check "the C++ quick start" "1 = 42" "$(echo "$got" | tail -1)"

# The Python one installs the wheel ci/python.sh built (built here if
# there is none) where no cargo or rustc is on PATH (ci/no_rust.sh).
. ci/no_rust.sh
if ! ls target/wheels/shmbus-*.whl >/dev/null 2>&1; then
    python3 -m venv "$work/build"
    "$work/build/bin/python" -m pip install --quiet --upgrade pip
    "$work/build/bin/python" -m pip wheel --quiet --no-deps -w target/wheels ./python
fi
block docs/PYTHON.md "## From Python" python 'where `ticks.py` is:' > ticks.py
got=$(HOME="$work/home" no_rust bash -euo pipefail -c "$(block docs/PYTHON.md "## From Python" sh)")
check "the Python quick start" "$(printf '[(0, 42)]\n[43 44] 0')" "$(echo "$got" | tail -2)"

# Every code block of the docs (the Rust ones are cargo test's doc tests).
. ci/tool.sh
shmbus_tool
prefix=$work/home/.local
cflags="$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs shmbus) -Wl,-rpath,$prefix/lib"
SHMBUS_BIN=$SHMBUS python3 tools/doc_snippets.py --self-test --python "$root/.venv/bin/python"
SHMBUS_BIN=$SHMBUS python3 tools/doc_snippets.py --python "$root/.venv/bin/python" --cflags="$cflags"
