#!/usr/bin/env bash
# The Python binding (python/), built and installed the way a user gets it:
# the sdist (maturin sdist), the wheel built from that sdist by pip (maturin
# from PyPI as the build backend: the one optimized build of the binding),
# then installed into a fresh venv whose PATH has no cargo or rustc
# (ci/no_rust.sh), where the Python tests run. What needs Rust is built
# before: the wheel, the `shmbus` tool and the C and C++ examples the
# cross-language tests drive, and the Rust server the request-response tests call. The wheel and sdist stay in target/wheels (the Python quick
# start installs that wheel). Works on a machine where nothing was
# installed by hand; leaves nothing in /dev/shm.
# --quick (ci/quick.sh): the wheel from the tree (no sdist: cargo's
# incremental state in target/ is reused), the venv of an earlier run kept,
# of the benchmarks only the peers' --quick run.
set -euo pipefail
cd "$(dirname "$0")/.."
. ci/no_rust.sh

quick=0
[ "${1:-}" != --quick ] || quick=1
python3 -m venv --help >/dev/null 2>&1 && python3 -c 'import ensurepip' 2>/dev/null ||
    { apt-get update -qq && apt-get install -y -qq python3-venv; }
wheels=target/wheels
rm -f "$wheels"/shmbus-*.whl "$wheels"/shmbus-*.tar.gz

# The build: a venv with maturin (the sdist) and pip (the wheel, in an
# isolated environment with maturin, as `pip install` builds it). cargo's
# target/ is the workspace's, also for the build from the unpacked sdist,
# so that the core's dependencies are not compiled again.
build_venv=target/ci-build-venv
[ -x "$build_venv/bin/python" ] || python3 -m venv "$build_venv"
"$build_venv/bin/python" -m pip install --quiet --upgrade pip
"$build_venv/bin/python" -m pip install --quiet 'maturin>=1.9.4,<2'
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
# --compatibility pypi: pip's builds are tagged plain `linux` unless asked
# (maturin's PEP 517 default); this way maturin checks the module's glibc
# symbols itself (its own auditwheel: no tool, no zig) and tags the wheel
# with the oldest manylinux the build host's glibc allows, as `maturin
# build` does: manylinux_2_34 from glibc 2.34 or later, such as Debian 12's
# (pthread_create and its kin moved into libc in 2.34 and are linked at
# that version). An older floor needs an older build host (a manylinux2014
# container) or `--zig`.
export MATURIN_PEP517_ARGS="${MATURIN_PEP517_ARGS:-} --compatibility pypi"
if [ "$quick" = 0 ]; then
    "$build_venv/bin/maturin" sdist --manifest-path python/Cargo.toml --out "$wheels"
    # The sdist's files carry one fixed mtime, older than any earlier
    # build's outputs: cargo would take the shmbus crates built from an
    # older tree in this target dir as fresh (a stale module). Their
    # fingerprints go, so they are compiled from the sdist (the
    # dependencies' stay).
    for profile in ci release; do
        rm -rf "$CARGO_TARGET_DIR/$profile/.fingerprint"/shmbus-*
    done
    "$build_venv/bin/python" -m pip wheel --no-deps --no-cache-dir --wheel-dir "$wheels" "$wheels"/shmbus-*.tar.gz
else
    "$build_venv/bin/python" -m pip wheel --no-deps --no-cache-dir --wheel-dir "$wheels" ./python
fi
wheel=$(ls "$wheels"/shmbus-*.whl)
case "${wheel##*/}" in
    shmbus-*-cp311-abi3-manylinux_*.whl) echo "the wheel: $wheel" ;;
    *) echo "python.sh: $wheel is not an abi3 manylinux wheel" >&2; exit 1 ;;
esac

. ci/tool.sh
shmbus_tool
export SHMBUS_BIN=$SHMBUS
# The Rust server the request-response tests call in another process.
cargo build -q -p shmbus --example reqrep_serve
export SHMBUS_REQREP_SERVE=$CARGO_TARGET_DIR/debug/examples/reqrep_serve
# As the matrix tests call it (SHMBUS_PROFILE picks the library), with cargo.
make -s -C examples/c
command -v g++ >/dev/null || { apt-get update -qq && apt-get install -y -qq g++; }
make -s -C examples/cpp

# The tests' venv, fresh, made and filled where no Rust is: pip could not
# build the binding here, it can only install the wheel.
venv=target/ci-venv
if [ "$quick" = 0 ] || [ ! -x "$venv/bin/python" ]; then
    rm -rf "$venv"
    no_rust python3 -m venv "$venv"
fi
PYTHON=$PWD/$venv/bin/python
no_rust "$PYTHON" -m pip install --quiet --upgrade pip
no_rust "$PYTHON" -m pip install --quiet pytest numpy
no_rust "$PYTHON" -m pip install --quiet --force-reinstall --no-deps "$wheel"
no_rust "$PYTHON" -c 'import shmbus, sys; print("installed without Rust:", shmbus.__file__)'

# The Python benchmark's peers, from PyPI where it is reachable. One that
# cannot be installed is skipped: this says why, and the benchmark skips
# its rows. A pinned version already installed is not looked up again.
peer_log=$(mktemp)
peer() { # DIST==VERSION, then how to run pip
    local dist=$1
    shift
    if ! "$@" -m pip install --quiet --retries 1 --timeout 10 "$dist" > "$peer_log" 2>&1; then
        echo "python.sh: $dist not installed, the benchmark skips its rows:" \
            "$(grep -iE 'error|required|unsupported' "$peer_log" | grep -v 'exited-with-error' | head -3 | tr -s ' \n' ' ')"
    fi
}
peer mmbus==0.5.1 no_rust "$PYTHON"
peer iceoryx2==0.10.0 no_rust "$PYTHON"
# tachyon-ipc has no wheel, only an sdist whose build wants GCC 14 or later
# (Debian 12 has 12) or a clang that knows C++23, and its -flto objects
# need lld to link: bookworm's clang-19 and lld-19. Built once: pip keeps
# the wheel it built in its cache. Not under no_rust, whose pip takes
# wheels only; the build needs no Rust.
if ! "$PYTHON" -c 'import tachyon' 2>/dev/null; then
    if ! command -v clang++-19 >/dev/null || ! command -v ld.lld-19 >/dev/null; then
        { apt-get update -qq && apt-get install -y -qq clang-19 lld-19; } > "$peer_log" 2>&1 ||
            echo "python.sh: clang-19 and lld-19 could not be installed (tachyon-ipc's build needs them)"
    fi
    CC=clang-19 CXX=clang++-19 LDFLAGS="-fuse-ld=lld -flto" peer tachyon-ipc==0.5.1 "$PYTHON"
fi

before=$(ls /dev/shm | sort)
status=0
# From the repository root `import shmbus` is the installed package (the
# source one is python/shmbus, not on the path).
no_rust "$PYTHON" -m pytest python/tests -q -p no:cacheprovider || status=$?
# The binding beside its peers, short: every row runs once on a few
# thousand messages through 1 024-message rings, and a torn, missing or
# wrong message on a shmbus row fails it (its figures are
# docs/PYTHON.md's, from a full run).
no_rust "$PYTHON" python/bench/bench_peers.py --quick || status=$?
after=$(ls /dev/shm | sort)
left=$(comm -13 <(echo "$before") <(echo "$after") | grep -E '^(pytest-shmbus-|shmbus-matrix-|bench-peers-|iox2_)' || true)
if [ -n "$left" ]; then
    echo "python.sh: left in /dev/shm:" $left >&2
    for n in $left; do rm -rf "/dev/shm/$n"; done
    status=1
fi
[ "$status" = 0 ] || exit $status

[ "$quick" = 0 ] || exit 0

# The receive benchmark, short: that it runs and every receiver checks
# every message (its figures are docs/PYTHON.md's, from a full run).
"$PYTHON" python/bench/bench_recv.py --messages 20000 --rounds 1
# The asyncio wake latency, short: that it runs (its figures are
# docs/PYTHON.md's, from full runs).
"$PYTHON" python/bench/aio_latency.py --messages 200 --rounds 1
