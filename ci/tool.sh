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
