# Sourced by the benchmarks: `need COMMAND...` installs with apt-get the Debian packages of the
# commands that are missing (each command's package has its name: nginx, wrk, curl, prometheus).
need() {
    local missing=() command
    for command in "$@"; do
        command -v "$command" >/dev/null || missing+=("$command")
    done
    [ ${#missing[@]} -gt 0 ] || return 0
    echo "installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
