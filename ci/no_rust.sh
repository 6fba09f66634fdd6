# Sourced by ci/python.sh and ci/quickstarts.sh: `no_rust` runs a command
# with a PATH that has no cargo, rustc or rustup (the directories that hold
# them dropped), and first proves it, so that whatever the command installs
# or runs cannot build Rust: a wheel installed this way is one a user
# without Rust can install. (Installing a wheel builds nothing; a build
# there, `pip install ./python`, finds no cargo, and maturin then tries to
# download a toolchain, which the quick start's fresh HOME stops.)
# PIP_ONLY_BINARY=:all:: nothing from an index is built from source there
# either. CARGO=true: examples/c's Makefile then links the library built earlier
# instead of asking cargo.
no_rust_path() {
    local dir path="" dirs
    IFS=: read -ra dirs <<< "$PATH"
    for dir in "${dirs[@]}"; do
        [ -n "$dir" ] || continue
        if [ -e "$dir/cargo" ] || [ -e "$dir/rustc" ] || [ -e "$dir/rustup" ]; then
            case "$dir" in
                /bin | /usr/bin)
                    echo "no_rust.sh: cargo or rustc is in $dir, which nothing runs without; install Rust with rustup instead" >&2
                    return 1
                    ;;
            esac
            continue
        fi
        path=${path:+$path:}$dir
    done
    echo "$path"
}

no_rust() { # COMMAND [ARGS]
    local path
    path=$(no_rust_path) || return 1
    if env PATH="$path" sh -c 'command -v cargo || command -v rustc || command -v rustup'; then
        echo "no_rust.sh: cargo or rustc is still on PATH (above)" >&2
        return 1
    fi
    env PATH="$path" PIP_ONLY_BINARY=:all: CARGO=true "$@"
}
