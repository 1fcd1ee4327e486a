#!/usr/bin/env bash
# Memory and polling cost of several accounts against one account of the same total size: the
# exporter (release build) polls ACCOUNTS accounts of ASSETS assets each, all served by one
# simulated API on 127.0.0.1, every 2 s, for POLLS polls.
#
# Usage: bench/accounts.sh [ACCOUNTS ASSETS]...      (default: 1 100000  20 5000)
# Environment: BENCH_POLLS (default 15).
#
# For each pair it prints one row: accounts, assets per account, peak resident memory (VmHWM)
# and the exporter's CPU seconds per poll of every account (user + system over the run,
# divided by the polls of the first account).
set -euo pipefail
cd "$(dirname "$0")/.."

pairs=("$@")
[ ${#pairs[@]} -gt 0 ] || pairs=(1 100000 20 5000)
polls=${BENCH_POLLS:-15}

cargo build --release --quiet --bin reputation-exporter
exporter=target/release/reputation-exporter
work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

printf '| accounts | assets each | peak RSS | exporter CPU per poll of every account |\n'
printf '|---|---|---|---|\n'
while [ ${#pairs[@]} -ge 2 ]; do
    accounts=${pairs[0]} assets=${pairs[1]}
    pairs=("${pairs[@]:2}")
    "$exporter" simulate --assets "$assets" >"$work/api.url" &
    api=$!
    for _ in $(seq 100); do [ -s "$work/api.url" ] && break; sleep 0.1; done
    url=$(head -n1 "$work/api.url")
    {
        printf '[poll]\ninterval = "2s"\n'
        if [ "$accounts" -eq 1 ]; then
            printf '[api]\nbase_url = "%s"\ntoken = "demo-token"\n' "$url"
        else
            for i in $(seq "$accounts"); do
                printf '[accounts.a%s]\nbase_url = "%s"\ntoken = "demo-token"\n' "$i" "$url"
            done
        fi
    } >"$work/config.toml"
    port=$(free_port)
    "$exporter" --config.file "$work/config.toml" --web.listen-address "127.0.0.1:$port" \
        --log.level warn 2>"$work/exporter.log" &
    pid=$!
    first=$([ "$accounts" -eq 1 ] && echo /metrics || echo "/probe?target=a1")
    done_polls() {
        curl -s "http://127.0.0.1:$port$first" |
            awk '/^reputation_api_requests_total\{endpoint="ip-list",code="200"\}/ {print $2}'
    }
    until [ "$(done_polls || true)" -ge "$polls" ] 2>/dev/null; do
        kill -0 "$pid" || { cat "$work/exporter.log"; exit 1; }
        sleep 1
    done
    cpu=$(awk '{print ($14 + $15) / 100}' "/proc/$pid/stat")
    hwm=$(awk '/VmHWM/ {printf "%.0f MB", $2 / 1024}' "/proc/$pid/status")
    printf '| %s | %s | %s | %s s |\n' "$accounts" "$assets" "$hwm" \
        "$(awk -v cpu="$cpu" -v polls="$polls" 'BEGIN {printf "%.2f", cpu / polls}')"
    kill "$pid" "$api"
    wait "$pid" "$api" 2>/dev/null || true
done
