# Sourced by the CI scripts: `shmbus_tool [CARGO ARGS]` sets SHMBUS to the
# `shmbus` tool. .ci/run builds it once, with the README's test command
# (every feature), and names it in SHMBUS_BIN; a script run by hand builds
# it here. Building it again with `-p shmbus-cli` would resolve features
# for that package alone and rebuild ~75 crates.
shmbus_tool() {
    if [ -n "${SHMBUS_BIN:-}" ]; then
        SHMBUS=$SHMBUS_BIN
    else
        cargo build -q -p shmbus-cli "$@"
        SHMBUS=$PWD/target/debug/shmbus
    fi
}

# `skip NEED WHY`: this script cannot check what it names on this machine.
# It says so and exits 0; under strict skips it exits 1 instead, unless
# SHMBUS_ALLOW_SKIPS (comma-separated) names NEED: the rule of the tests'
# `shmbus_testkit::skip` (docs/GUIDE.md, "Tests and CI"). Strict skips:
# SHMBUS_STRICT_SKIPS=1 (0 turns them off); unset, CI=true or 1 (.ci/run
# sets SHMBUS_STRICT_SKIPS=1).
skip() {
    local need=$1 why=$2 strict=${SHMBUS_STRICT_SKIPS:-} ci=${CI:-}
    if [ -z "${strict// /}" ]; then
        case "${ci,,}" in true | 1) strict=1 ;; *) strict=0 ;; esac
    fi
    case "${strict// /}" in
        0 | 1) strict=${strict// /} ;;
        *)
            echo "SHMBUS_STRICT_SKIPS=\"$strict\": expected 1 (skips fail) or 0 (skips pass)" >&2
            exit 1
            ;;
    esac
    local allowed=",${SHMBUS_ALLOW_SKIPS:-},"
    allowed=${allowed// /}
    if [ "$strict" = 1 ] && [[ $allowed != *",$need,"* ]]; then
        echo "SKIPPED ($need): $why; this run has strict skips (SHMBUS_STRICT_SKIPS=1, or CI=true): give the machine what the script needs, or list \"$need\" in SHMBUS_ALLOW_SKIPS if it may go without" >&2
        exit 1
    fi
    echo "SKIPPED ($need): $why"
    exit 0
}
