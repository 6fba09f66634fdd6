#!/usr/bin/env bash
# The Python binding (python/): installs it the way a user does
# (`pip install ./python`, maturin from PyPI as the build backend), builds
# the Rust CLI the cross-language tests drive, and runs the Python tests.
# Works on a machine where nothing was installed by hand: it installs
# pytest and numpy (and pip's build backend pulls maturin) into whatever
# `python3` is, a venv if one is active. Leaves nothing in /dev/shm.
set -euo pipefail
cd "$(dirname "$0")/.."

# A venv of its own, as the README's quick start makes one (unless one is
# active already); Debian's python3 needs python3-venv for it.
# --quick (ci/quick.sh): keep the venv of an earlier run, skip the benchmark.
quick=0
[ "${1:-}" != --quick ] || quick=1
if [ -z "${VIRTUAL_ENV:-}" ]; then
    python3 -m venv --help >/dev/null 2>&1 && python3 -c 'import ensurepip' 2>/dev/null ||
        { apt-get update -qq && apt-get install -y -qq python3-venv; }
    if [ "$quick" = 0 ] || [ ! -x target/ci-venv/bin/python ]; then
        rm -rf target/ci-venv
        python3 -m venv target/ci-venv
    fi
    # shellcheck disable=SC1091
    . target/ci-venv/bin/activate
fi
PYTHON=${PYTHON:-python}
"$PYTHON" -m pip --version >/dev/null 2>&1 || "$PYTHON" -m ensurepip --upgrade
"$PYTHON" -m pip install --quiet --upgrade pip
"$PYTHON" -m pip install --quiet pytest numpy
"$PYTHON" -m pip install ./python

. ci/tool.sh
shmbus_tool
export SHMBUS_BIN=$SHMBUS

before=$(ls /dev/shm | sort)
status=0
# From the repository root `import shmbus` is the installed package (the
# source one is python/shmbus, not on the path).
"$PYTHON" -m pytest python/tests -q -p no:cacheprovider || status=$?
after=$(ls /dev/shm | sort)
left=$(comm -13 <(echo "$before") <(echo "$after") | grep -E '^(pytest-shmbus-|shmbus-matrix-|iox2_)' || true)
if [ -n "$left" ]; then
    echo "python.sh: left in /dev/shm:" $left >&2
    for n in $left; do rm -f "/dev/shm/$n"; done
    status=1
fi
[ "$status" = 0 ] || exit $status

[ "$quick" = 0 ] || exit 0

# The receive benchmark, short: that it runs and every receiver checks
# every message (its figures are docs/PYTHON.md's, from a full run).
"$PYTHON" -m pip install --quiet iceoryx2==0.10.0
"$PYTHON" python/bench/bench_recv.py --messages 20000 --rounds 1
# The asyncio wake latency, short: that it runs (its figures are
# docs/PYTHON.md's, from full runs).
"$PYTHON" python/bench/aio_latency.py --messages 200 --rounds 1
