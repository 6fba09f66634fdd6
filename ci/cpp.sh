#!/usr/bin/env bash
# The C++ API (include/shmbus.hpp), end to end:
#   1. the header and every program of examples/cpp/ compile with g++ and
#      clang++-19, -std=c++17 -Wall -Wextra -Werror -pedantic, and again
#      with -std=c++20 (the std::span views); the header alone compiles as
#      the only include of a file (self-contained);
#   2. the test program (examples/cpp/test_shmbus.cpp: every kind of handle,
#      typed and raw, each error class, lag and timeouts as values, moves,
#      fork) passes, built by each compiler, and under AddressSanitizer and
#      UBSan (-fno-sanitize-recover=all, leaks checked; the Rust static
#      library is linked as is, not instrumented);
#   3. the C++ examples and the `shmbus` tool (Rust) share each kind in
#      separate processes: the tool publishes and C++ reads, and C++
#      publishes and the tool reads, on a plain, a many-publisher, a
#      journaled and a pool bus and a stream; a blackboard both ways (the
#      Python matrix, ci/python.sh, runs C++ against Rust and Python too);
#   4. `make -C examples/c install` installs a CMake package:
#      find_package(shmbus) in a tiny project configures, builds and runs
#      against it, and a version it is not refuses;
#   5. nothing is left in /dev/shm.
# Every process runs under `timeout`. SHMBUS_PROFILE picks the library's
# cargo profile (as for ci/c.sh; default release).
set -euo pipefail
cd "$(dirname "$0")/.."

need() { # COMMAND PACKAGE
    command -v "$1" >/dev/null || { apt-get update -qq && apt-get install -y -qq "$2"; }
}
need g++ g++
need make make
need cmake cmake

CXXS=(g++)
if command -v clang++-19 >/dev/null; then
    CXXS+=(clang++-19)
else
    echo "ci/cpp.sh: clang++-19 is not installed (apt-get install clang-19): g++ only"
fi

echo "--- build"
. ci/tool.sh
shmbus_tool
profile=${SHMBUS_PROFILE:-release}
make -s -C examples/cpp SHMBUS_PROFILE="$profile"
LIB=target/$profile/libshmbus.a
NATIVE_LIBS=(-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc)
PUB=examples/cpp/publisher
SUB=examples/cpp/subscriber
BOARD=examples/cpp/blackboard

prefix="shmbus-ci-cpp-$$"
work=$(mktemp -d)
cleanup() {
    local f
    for f in /dev/shm/"$prefix"-* /dev/shm/shmbus-cpp-test-* /dev/shm/shmbus-cpp-consumer-*; do
        [[ -e "$f" ]] && "$SHMBUS" rm "$f" >/dev/null 2>&1 || true
    done
    rm -rf "$work"
}
trap cleanup EXIT

fail() {
    echo "FAILED: $*" >&2
    for f in "$work"/*.err "$work"/*.log; do
        [[ -s "$f" ]] && { echo "== $f" >&2; tail -n 40 "$f" >&2; }
    done
    exit 1
}

echo "--- compile: each compiler, C++17 and C++20, -Werror"
WARN=(-Wall -Wextra -Werror -pedantic)
printf '#include <shmbus.hpp>\nint main() { return shmbus::version()[0] == 0; }\n' >"$work/alone.cpp"
for cxx in "${CXXS[@]}"; do
    for std in c++17 c++20; do
        extra=()
        [[ "$std" == c++20 ]] && extra=(-DSHMBUS_TEST_NEED_SPAN)
        for src in "$work/alone.cpp" examples/cpp/*.cpp examples/cpp/consumer/consumer.cpp; do
            "$cxx" -std="$std" "${WARN[@]}" "${extra[@]}" -Iinclude -c "$src" -o "$work/obj.o" \
                2>"$work/compile.err" || fail "$cxx -std=$std $src"
        done
        echo "ok: $cxx -std=$std ${WARN[*]}: shmbus.hpp alone and examples/cpp/*.cpp"
    done
done

echo "--- the test program"
for cxx in "${CXXS[@]}"; do
    "$cxx" -std=c++17 -O2 -g "${WARN[@]}" -Iinclude examples/cpp/test_shmbus.cpp -o "$work/test-$cxx" \
        "$LIB" "${NATIVE_LIBS[@]}" 2>"$work/compile.err" || fail "$cxx test_shmbus"
    timeout 300 "$work/test-$cxx" >"$work/test.log" 2>&1 || fail "test_shmbus built by $cxx"
    echo "ok: test_shmbus built by $cxx: $(grep -c '^ok:' "$work/test.log") groups passed"
done

echo "--- the test program under ASan and UBSan"
# The Rust static library is not instrumented (its own ASan run is
# ci/sanitizers.sh's); the header's code and the test's are, and every
# access they make through the C API's pointers is checked.
g++ -std=c++17 -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all \
    "${WARN[@]}" -Iinclude examples/cpp/test_shmbus.cpp -o "$work/test-asan" \
    "$LIB" "${NATIVE_LIBS[@]}" 2>"$work/compile.err" || fail "g++ -fsanitize=address,undefined test_shmbus"
ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" LSAN_OPTIONS="suppressions=$PWD/ci/lsan.supp" \
    UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    timeout 600 "$work/test-asan" >"$work/test.log" 2>&1 || fail "test_shmbus under ASan and UBSan"
echo "ok: test_shmbus under -fsanitize=address,undefined (leaks checked)"

# Waits (at most 60 s) for the subscriber writing to ERR_FILE to say ready.
wait_ready() { # ERR_FILE PID
    local i
    for ((i = 0; i < 6000; i++)); do
        grep -qx ready "$1" 2>/dev/null && return 0
        kill -0 "$2" 2>/dev/null || fail "subscriber $2 exited before it was ready"
        sleep 0.01
    done
    fail "subscriber $2 never said ready"
}

# PUBLISHER -> SUBSCRIBER on one bus, in their own processes.
#   exchange KIND CREATE_ARGS PUB_CMD... -- SUB_CMD...
exchange() {
    local kind=$1 create=$2 name="$prefix-$1" pub=() sub=() sub_pid
    shift 2
    while [[ $1 != -- ]]; do pub+=("$1"); shift; done
    shift
    sub=("$@")
    # shellcheck disable=SC2086
    "$SHMBUS" create "$name" $create >/dev/null
    : >"$work/sub.err"
    timeout 120 "${sub[@]}" "$name" >"$work/sub.out" 2>"$work/sub.err" &
    sub_pid=$!
    if [[ "${sub[0]}" == "$SUB" ]]; then
        wait_ready "$work/sub.err" "$sub_pid"
    else
        # `shmbus sub` says nothing when ready: wait for its registry entry,
        # the bus's only one (a stream has none: its consumer reads from
        # where the stream starts).
        local i
        for ((i = 0; i < 6000; i++)); do
            [[ "$kind" == stream ]] && break
            "$SHMBUS" stat "$name" --json 2>/dev/null | grep -q '"subscriber_pids":\[[0-9]' && break
            kill -0 "$sub_pid" 2>/dev/null || fail "${sub[*]} exited before it was ready"
            sleep 0.01
        done
        ((i < 6000)) || fail "${sub[*]} never registered"
    fi
    printf 'alpha\nbeta\ngamma\n' | timeout 60 "${pub[@]}" "$name" 2>"$work/pub.err" ||
        fail "${pub[*]} on a $kind"
    wait "$sub_pid" || fail "${sub[*]} on a $kind exited $?"
    diff <(printf 'alpha\nbeta\ngamma\n') <(cut -f2- "$work/sub.out") >&2 || fail "$kind: ${pub[*]} -> ${sub[*]}: wrong output"
    "$SHMBUS" rm "$name" >/dev/null
}

echo "--- C++ and Rust (the shmbus tool) in separate processes"
for kind in bus many journal pool stream; do
    case $kind in
        bus) create="--msg-size 32 --slots 16" ;;
        many) create="--msg-size 32 --slots 16 --publishers many" ;;
        journal) create="--msg-size 32 --slots 16 --journal $work/$kind.journal" ;;
        pool) create="--pool 128:32 --slots 16" ;;
        stream) create="--kind stream --bytes 1024" ;;
    esac
    subkind=$kind
    [[ $kind == many ]] && subkind=bus
    rust_sub=("$SHMBUS" sub --count 3 --timeout 60)
    [[ $kind == journal ]] && rust_sub+=(--bootstrap)
    rm -f "$work/$kind.journal"
    exchange "$kind" "$create" "$SHMBUS" pub -- "$SUB" --kind "$subkind" --count 3 --timeout 60
    rm -f "$work/$kind.journal"
    exchange "$kind" "$create" "$PUB" --kind "$kind" -- "${rust_sub[@]}"
    echo "ok: $kind: shmbus pub -> C++ subscriber, C++ publisher -> shmbus sub"
done

name="$prefix-board"
timeout 60 "$BOARD" create "$name" 4 8 8 2>"$work/board.err" || fail "C++ blackboard create"
out=$(timeout 60 "$BOARD" put "$name" AAPL 101.5 2>"$work/board.err") || fail "C++ blackboard put"
[[ "$out" == 1 ]] || fail "C++ blackboard put printed $out, expected version 1"
out=$(timeout 60 "$SHMBUS" get --with-version "$name" AAPL) || fail "shmbus get of a C++ put"
[[ "$out" == $'1\t101.5' ]] || fail "shmbus get printed $out after a C++ put"
timeout 60 "$SHMBUS" put "$name" MSFT 400.25 || fail "shmbus put"
out=$(timeout 60 "$BOARD" get "$name" MSFT 2>"$work/board.err") || fail "C++ blackboard get"
[[ "$out" == $'2\t400.25' ]] || fail "C++ blackboard get printed $out after shmbus put"
timeout 60 "$SHMBUS" put "$name" MSFT || fail "shmbus put (remove)"
rc=0
timeout 60 "$BOARD" get "$name" MSFT >/dev/null 2>"$work/board.err" || rc=$?
[[ "$rc" == 3 ]] || fail "C++ blackboard get of a removed key exited $rc, expected 3"
"$SHMBUS" rm "$name" >/dev/null
echo "ok: blackboard: C++ put -> shmbus get, shmbus put and remove -> C++ get"

echo "--- find_package(shmbus)"
make -s -C examples/c install PREFIX="$work/prefix" CARGO=true SHMBUS_PROFILE="$profile"
for f in include/shmbus.hpp lib/cmake/shmbus/shmbusConfig.cmake lib/cmake/shmbus/shmbusConfigVersion.cmake; do
    [[ -f "$work/prefix/$f" ]] || fail "make install wrote no $f"
done
cmake -S examples/cpp/consumer -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" \
    >"$work/cmake.log" 2>&1 || fail "cmake configure of a find_package(shmbus) project"
cmake --build "$work/consumer" >"$work/cmake.log" 2>&1 || fail "cmake --build of a find_package(shmbus) project"
out=$(timeout 60 "$work/consumer/consumer") || fail "the find_package(shmbus) program exited $?"
[[ "$out" == "1 = 42" ]] || fail "the find_package(shmbus) program printed $out"
# A version the package is not: refused at configure.
mkdir -p "$work/v9"
sed 's/find_package(shmbus 0.1 REQUIRED)/find_package(shmbus 9.9 REQUIRED)/' examples/cpp/consumer/CMakeLists.txt \
    >"$work/v9/CMakeLists.txt"
cp examples/cpp/consumer/consumer.cpp "$work/v9/"
if cmake -S "$work/v9" -B "$work/v9/build" -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/v9.log" 2>&1; then
    fail "find_package(shmbus 9.9) was not refused"
fi
grep -q 'requested version "9.9"' "$work/v9.log" || fail "find_package(shmbus 9.9) failed, not for its version: $(cat "$work/v9.log")"
echo "ok: find_package(shmbus) configures, builds (shmbus::shmbus, static) and runs; shmbus 9.9 is refused"

echo "--- /dev/shm"
left=$(find /dev/shm -maxdepth 1 \( -name "$prefix-*" -o -name 'shmbus-cpp-test-*' -o -name 'shmbus-cpp-consumer-*' \) -print)
[[ -z "$left" ]] || fail "left in /dev/shm: $left"
echo "ok: nothing left in /dev/shm"
echo "ci/cpp.sh: all passed"
