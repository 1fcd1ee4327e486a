# Shared by the end-to-end scripts (sourced, after setting e2e_name): a scratch directory, the
# processes listed in `pids` stopped on exit, `fail` showing the tail of every log in the
# scratch directory, and a free port on 127.0.0.1.

work=$(mktemp -d)
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
