#!/usr/bin/env bash
# End-to-end benchmark: the exporter against the simulated API with N assets, side by side
# with nginx serving the very same bytes from a file, all on 127.0.0.1.
#
# Usage: bench/run.sh [ASSETS...]            (default: 10000 100000)
# Environment: BENCH_SECONDS (per load run, default 10), BENCH_POLLS (default 50).
#
# For each size it prints one table row:
#   start     seconds from the exporter's start until it serves every asset, and of that,
#             after the list requests had returned (the exporter's own work)
#   plain/gz  requests per second of the exporter, of nginx, and their ratio (wrk, 1 thread,
#             4 connections), identity and gzip
#   rss       peak resident memory over the last fifth of BENCH_POLLS polls, over the size of
#             one uncompressed body, and its growth from the peak over as many polls after
#             poll 5 (a peak depends on how a poll's steps overlap, so one poll's peak is noise)
#   poll      time to turn a fetched list into the served snapshot, over serde_json's time to
#             parse the same bytes into serde_json::Value (crates/bench/src/bin/poll-cost.rs)
set -euo pipefail
cd "$(dirname "$0")/.."

sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(10000 100000)
seconds=${BENCH_SECONDS:-10}
polls=${BENCH_POLLS:-50}

# shellcheck source=bench/need.sh
. bench/need.sh
need nginx wrk curl

cargo build --release --quiet --bin reputation-exporter --bin poll-cost
exporter=target/release/reputation-exporter

work=$(mktemp -d)
chmod 755 "$work"
pids=()
stop() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    pids=()
}
trap 'stop; rm -rf "$work"' EXIT

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
wait_for() {
    local deadline=$((SECONDS + $1)); shift
    until "$@" >/dev/null 2>&1; do
        [ "$SECONDS" -lt "$deadline" ] || { echo "bench: timed out: $*" >&2; return 1; }
        sleep 0.1
    done
}
now() { date +%s.%N; }
calc() { awk "BEGIN { print $* }"; }
metric() { # metric URL SERIES: the value of one sample line
    curl -sf "$1" | awk -v s="$2" 'index($0, s" ") == 1 {print $2}'
}
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
rps() { # rps URL [HEADER]: requests per second under wrk
    local args=(-t1 -c4 -d"${seconds}s" "$1")
    [ -z "${2:-}" ] || args+=(-H "$2")
    wrk "${args[@]}" | awk '/^Requests\/sec:/ {print $2}'
}
start_exporter() { # start_exporter SIM_URL PORT INTERVAL
    REPUTATION_EXPORTER_API__BASE_URL=$1 REPUTATION_EXPORTER_API__TOKEN=demo-token \
        REPUTATION_EXPORTER_POLL__INTERVAL=$3 REPUTATION_EXPORTER_METRICS__MAX_AGE=2h \
        "$exporter" --web.listen-address "127.0.0.1:$2" --log.level warn \
        >>"$work/exporter.log" 2>&1 &
    pids+=($!)
    exporter_pid=$!
}

printf '%-8s %-8s %-15s %-24s %-24s %-20s %-6s\n' \
    assets "body MB" "start s (own)" "plain rps exp/nginx" "gzip rps exp/nginx" "rss/body (growth)" poll
for n in "${sizes[@]}"; do
    sim_port=$(free_port)
    target/release/reputation-exporter simulate --assets "$n" --listen-address "127.0.0.1:$sim_port" >/dev/null &
    pids+=($!)
    sim="http://127.0.0.1:$sim_port"
    wait_for 120 curl -sf -H "Authorization: Bearer demo-token" "$sim/api/v1/system-check"
    # Serialize the lists once before timing the start.
    curl -sf -o /dev/null -H "Authorization: Bearer demo-token" "$sim/api/v1/ip-list"
    curl -sf -o /dev/null -H "Authorization: Bearer demo-token" "$sim/api/v1/domain-list"

    # Phase 1: start, then scrape throughput, with no poll running meanwhile.
    port=$(free_port)
    url="http://127.0.0.1:$port/metrics"
    started=$(now)
    start_exporter "$sim" "$port" 1h
    # Both lists in: every asset is served.
    both_in() { [ "$(metric "$url" reputation_up)" = 1 ]; }
    wait_for 120 both_in
    ready=$(now)
    fetch_ip=$(metric "$url" 'reputation_api_request_duration_seconds_sum{endpoint="ip-list"}')
    fetch_domain=$(metric "$url" 'reputation_api_request_duration_seconds_sum{endpoint="domain-list"}')
    start_total=$(calc "$ready - $started")
    # The two lists are fetched at once: the exporter's own part starts after the slower one.
    start_own=$(calc "$start_total - ($fetch_ip > $fetch_domain ? $fetch_ip : $fetch_domain)")

    mkdir -p "$work/www"
    curl -sf "$url" -o "$work/www/metrics"
    sleep 1 # the gzip head is compressed in the background after the snapshot
    curl -sf -H 'Accept-Encoding: gzip' "$url" -o "$work/www/metrics.gz"
    chmod -R a+rX "$work/www"
    body_bytes=$(stat -c %s "$work/www/metrics")

    nginx_port=$(free_port)
    cat >"$work/nginx.conf" <<NGINX
worker_processes 1;
daemon off;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    default_type text/plain;
    client_body_temp_path $work/tmp;
    proxy_temp_path $work/tmp;
    fastcgi_temp_path $work/tmp;
    uwsgi_temp_path $work/tmp;
    scgi_temp_path $work/tmp;
    server {
        listen 127.0.0.1:$nginx_port;
        root $work/www;
        gzip_static on;
    }
}
NGINX
    mkdir -p "$work/tmp"
    nginx -p "$work" -c "$work/nginx.conf" -e "$work/nginx-error.log" &
    pids+=($!)
    nginx_url="http://127.0.0.1:$nginx_port/metrics"
    wait_for 10 curl -sf -o /dev/null "$nginx_url"
    served_gz=$(curl -sf -H 'Accept-Encoding: gzip' "$nginx_url" | wc -c)
    [ "$served_gz" -eq "$(stat -c %s "$work/www/metrics.gz")" ] ||
        { echo "bench: nginx does not serve the saved gzip body" >&2; exit 1; }

    exp_plain=$(rps "$url")
    nginx_plain=$(rps "$nginx_url")
    exp_gzip=$(rps "$url" 'Accept-Encoding: gzip')
    nginx_gzip=$(rps "$nginx_url" 'Accept-Encoding: gzip')
    kill "$exporter_pid"

    # Phase 2: memory over many polls, one every 2 s (a poll of 100k assets takes about 1 s).
    port=$(free_port)
    url="http://127.0.0.1:$port/metrics"
    start_exporter "$sim" "$port" 2s
    wait_for 120 curl -sf "http://127.0.0.1:$port/-/ready"
    # 0 until the first ip-list request has been counted.
    polls_done() {
        local n
        n=$(metric "$url" 'reputation_api_requests_total{endpoint="ip-list",code="200"}')
        echo "${n:-0}"
    }
    # Highest RSS seen while the poll count goes from $1 to $2 (sampled every 0.2 s): the
    # peaks, not whichever moment of a poll a single reading would catch.
    peak_rss() {
        local peak=0 rss
        until [ "$(polls_done)" -ge "$1" ]; do sleep 0.2; done
        until [ "$(polls_done)" -ge "$2" ]; do
            rss=$(rss_kib "$exporter_pid")
            [ "$rss" -le "$peak" ] || peak=$rss
            sleep 0.2
        done
        echo "$peak"
    }
    window=$((polls / 5 > 2 ? polls / 5 : 2))
    rss_10=$(timeout 600 bash -c "$(declare -f metric polls_done rss_kib peak_rss); url='$url' exporter_pid=$exporter_pid peak_rss 5 $((5 + window))")
    rss_end=$(timeout 900 bash -c "$(declare -f metric polls_done rss_kib peak_rss); url='$url' exporter_pid=$exporter_pid peak_rss $((polls - window)) $polls")
    kill "$exporter_pid"

    poll_ratio=$(target/release/poll-cost "$n" 5 | awk '{print $4}')
    stop

    printf '%-8s %-8.1f %-15s %-24s %-24s %-20s %-6s\n' "$n" \
        "$(calc "$body_bytes / 1048576")" \
        "$(printf '%.2f (%.2f)' "$start_total" "$start_own")" \
        "$(printf '%.0f/%.0f = %.2f' "$exp_plain" "$nginx_plain" "$(calc "$exp_plain / $nginx_plain")")" \
        "$(printf '%.0f/%.0f = %.2f' "$exp_gzip" "$nginx_gzip" "$(calc "$exp_gzip / $nginx_gzip")")" \
        "$(printf '%.2f (%+.0f%%)' "$(calc "$rss_end * 1024 / $body_bytes")" "$(calc "($rss_end - $rss_10) * 100 / $rss_10")")" \
        "$poll_ratio"
done
