# Shared by the end-to-end scripts and benchmarks (sourced, after setting e2e_name): a scratch
# directory, the processes listed in `pids` stopped on exit, `fail` showing the tail of every log
# in the scratch directory, a free port on 127.0.0.1, the simulated API, a Prometheus query's
# first value, and waiting for a condition with a deadline.

work=$(mktemp -d)
# The exporters a script starts keep their state (the store a restart starts from) under its
# scratch directory, never in a directory of the machine.
export XDG_STATE_HOME="$work/state"
pids=()

cleanup() {
    for pid in "${pids[@]}"; do
        pkill -P "$pid" 2>/dev/null || true
        kill "$pid" 2>/dev/null || true
    done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

fail() {
    echo "$e2e_name: FAILED: $*" >&2
    for log in "$work"/*.log; do
        [ -f "$log" ] || continue
        echo "--- $(basename "$log")" >&2
        tail -n 20 "$log" >&2
    done
    exit 1
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# `simulated VARIABLE BINARY ASSETS [FLAGS...]`: starts `BINARY simulate` on a free loopback
# port, stopped on exit, and sets VARIABLE to its base URL once it serves (token: demo-token).
simulated() {
    local variable=$1 binary=$2 assets=$3 url_file
    shift 3
    url_file=$(mktemp -p "$work" simulated.XXXXXX)
    "$binary" simulate --assets "$assets" "$@" >"$url_file" &
    pids+=($!)
    for _ in $(seq 100); do
        if [ -s "$url_file" ]; then
            printf -v "$variable" '%s' "$(head -n1 "$url_file")"
            return
        fi
        sleep 0.1
    done
    fail "the simulated API did not start"
}

# `first_value URL EXPR [TIME]`: the value of the first series an instant query of EXPR (at TIME,
# else now) returns from the Prometheus API at URL; empty when it returns none or does not answer
# (yet).
first_value() {
    local answer
    answer=$(curl -sfG "$1/api/v1/query" --data-urlencode "query=$2" ${3:+--data-urlencode "time=$3"}) ||
        return 0
    python3 -c 'import json,sys; r=json.loads(sys.argv[1])["data"]["result"]; print(r[0]["value"][1] if r else "")' "$answer"
}

# `answers URL EXPR`: an instant query of EXPR at the Prometheus API at URL returns a value.
answers() { [ -n "$(first_value "$1" "$2")" ]; }

# `wait_for [--every S] WHAT SECONDS COMMAND...`: runs COMMAND every S seconds (1 by default)
# until it succeeds; fails the test, naming WHAT, when SECONDS have passed first.
wait_for() {
    local every=1
    if [ "$1" = --every ]; then
        every=$2
        shift 2
    fi
    local what=$1 deadline=$((SECONDS + $2))
    shift 2
    until "$@"; do
        [ "$SECONDS" -lt "$deadline" ] || fail "$what: not within the deadline"
        sleep "$every"
    done
}
