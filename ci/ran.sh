# Sourced by the steps that run tests picked by a filter (ci/loom.sh,
# ci/miri.sh, ci/sanitizers.sh, ci/soak.sh, .ci/run's default-build test):
# `ran_some CMD...` runs CMD, a `cargo test` or `cargo miri test`, its
# output shown as it comes, and fails unless its "test result:" lines add
# up to at least one test passed. A filter that matches nothing (a test
# renamed, a module moved) ends "0 passed" with status 0, and would leave
# the step green having checked nothing.
ran_some() {
    local log status n
    log=$(mktemp)
    set +e
    "$@" 2>&1 | tee "$log"
    status=${PIPESTATUS[0]}
    set -e
    if [ "$status" != 0 ]; then
        rm -f "$log"
        return "$status"
    fi
    n=$(awk '/^test result: / { for (i = 2; i <= NF; i++) if ($i == "passed;") s += $(i - 1) }
             END { print s + 0 }' "$log")
    rm -f "$log"
    if [ "$n" = 0 ]; then
        echo "no test ran (0 passed; does the filter still name a test?): $*" >&2
        return 1
    fi
    echo "$n passed: $*"
}
