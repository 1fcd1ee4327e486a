#!/usr/bin/env bash
# A million-asset account in shards: the exporter (release build) polls `simulate --assets
# ASSETS` with metrics.shards = N for each N given, all on 127.0.0.1, and for each prints:
#   first     seconds from start until a shard serves the first snapshot
#   rss       peak resident memory during the first poll, and over the first two polls (one
#             every POLL_S seconds; the second renders beside the snapshot still served), and
#             the bound 1.5 x the whole exposition + 100 MB
#   body      the whole exposition (every shard, OpenMetrics) in MB, and shard sizes min/max
#   scrape    one shard's scrape time, plain and gzip (curl, best of 3), and nginx serving the
#             same bytes from a file
#   prom      a real Prometheus scraping one shard: its scrape_duration_seconds, the samples,
#             and its own resident memory after three scrapes
#
# Usage: bench/shards.sh [ASSETS] [N...]    (default: 1000000, 8 and 16)
# Environment: POLL_S (default 60).
set -euo pipefail
cd "$(dirname "$0")/.."

assets=${1:-1000000}
shift || true
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(8 16)
poll_s=${POLL_S:-60}

# shellcheck source=bench/need.sh
. bench/need.sh
need nginx prometheus curl

e2e_name=bench-shards
# shellcheck source=tests/e2e/lib.sh
. tests/e2e/lib.sh
chmod 755 "$work"

cargo build --release --quiet --bin reputation-exporter
exporter=$(realpath target/release/reputation-exporter)
simulated api_url "$exporter" "$assets"
# Serialize the lists once before timing the start.
for list in ip-list domain-list; do
    curl -sf -o /dev/null -H "Authorization: Bearer demo-token" "$api_url/api/v1/$list"
done

metric() { curl -sf "$1" | awk -v s="$2" 'index($0, s" ") == 1 {print $2}'; }
now() { date +%s.%N; }
best_of_3() { # best_of_3 URL [HEADER]: the shortest of three downloads, seconds
    local best=999 t args=(-sf -o /dev/null -w '%{time_total}' "$1")
    [ -z "${2:-}" ] || args+=(-H "$2")
    for _ in 1 2 3; do
        t=$(curl "${args[@]}")
        best=$(awk -v a="$best" -v b="$t" 'BEGIN { print (b < a ? b : a) }')
    done
    echo "$best"
}

printf '| N | first snapshot | peak RSS: first poll / two polls | bound 1.5 x body + 100 MB | body (shards) | shard plain: exporter / nginx | shard gzip: exporter / nginx | Prometheus on one shard |\n'
printf '|---|---|---|---|---|---|---|---|\n'
for n in "${counts[@]}"; do
    port=$(free_port)
    base="http://127.0.0.1:$port"
    started=$(now)
    REPUTATION_EXPORTER_API__BASE_URL=$api_url REPUTATION_EXPORTER_API__TOKEN=demo-token \
        REPUTATION_EXPORTER_POLL__INTERVAL="${poll_s}s" REPUTATION_EXPORTER_METRICS__SHARDS=$n \
        "$exporter" --web.listen-address "127.0.0.1:$port" --log.level warn >"$work/exporter-$n.log" 2>&1 &
    exporter_pid=$!
    pids+=("$exporter_pid")
    # Peak RSS, sampled every 0.2 s, until the sampler is stopped.
    (peak=0; while kill -0 "$exporter_pid" 2>/dev/null; do
        rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$exporter_pid/status" 2>/dev/null || echo 0)
        [ "${rss:-0}" -le "$peak" ] || { peak=$rss; echo "$peak" >"$work/peak-$n"; }
        sleep 0.2
    done) &
    sampler=$!
    served() { [ "$(metric "$base/metrics?shard=0" reputation_up)" = 1 ]; }
    deadline=$((SECONDS + 600))
    until served; do [ "$SECONDS" -lt "$deadline" ] || fail "no snapshot within 600 s"; sleep 0.2; done
    first=$(awk -v a="$started" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')
    first_peak_mb=$(awk '{printf "%.0f", $1 / 1024}' "$work/peak-$n")

    # The whole exposition, shard by shard.
    total=0 smallest=0 largest=0
    for ((i = 0; i < n; i++)); do
        size=$(curl -sf -H 'Accept: application/openmetrics-text' "$base/metrics?shard=$i" | wc -c)
        total=$((total + size))
        [ "$smallest" -ne 0 ] && [ "$size" -ge "$smallest" ] || smallest=$size
        [ "$size" -le "$largest" ] || largest=$size
    done

    # Shard 0 against nginx serving its bytes.
    mkdir -p "$work/www-$n" "$work/tmp"
    curl -sf "$base/metrics?shard=0" -o "$work/www-$n/metrics"
    curl -sf -H 'Accept-Encoding: gzip' "$base/metrics?shard=0" -o "$work/www-$n/metrics.gz"
    chmod -R a+rX "$work/www-$n"
    nginx_port=$(free_port)
    cat >"$work/nginx-$n.conf" <<NGINX
worker_processes 1;
daemon off;
pid $work/nginx-$n.pid;
error_log $work/nginx-error.log;
events { worker_connections 64; }
http {
    access_log off;
    sendfile on;
    default_type text/plain;
    client_body_temp_path $work/tmp;
    proxy_temp_path $work/tmp;
    fastcgi_temp_path $work/tmp;
    uwsgi_temp_path $work/tmp;
    scgi_temp_path $work/tmp;
    server { listen 127.0.0.1:$nginx_port; root $work/www-$n; gzip_static on; }
}
NGINX
    nginx -p "$work" -c "$work/nginx-$n.conf" -e "$work/nginx-error.log" &
    nginx_pid=$!
    pids+=("$nginx_pid")
    sleep 1
    plain_exporter=$(best_of_3 "$base/metrics?shard=0")
    plain_nginx=$(best_of_3 "http://127.0.0.1:$nginx_port/metrics")
    gzip_exporter=$(best_of_3 "$base/metrics?shard=0" 'Accept-Encoding: gzip')
    gzip_nginx=$(best_of_3 "http://127.0.0.1:$nginx_port/metrics" 'Accept-Encoding: gzip')
    kill "$nginx_pid"

    # A real Prometheus scraping shard 0.
    prom_port=$(free_port)
    cat >"$work/prometheus-$n.yml" <<PROM
global:
  scrape_interval: 30s
  scrape_timeout: 25s
scrape_configs:
  - job_name: reputation
    metrics_path: /metrics
    params: {shard: ["0"]}
    static_configs: [{targets: ["127.0.0.1:$port"], labels: {shard: "0"}}]
PROM
    prometheus --config.file="$work/prometheus-$n.yml" --storage.tsdb.path="$work/prom-$n" \
        --web.listen-address="127.0.0.1:$prom_port" >"$work/prometheus-$n.log" 2>&1 &
    prom_pid=$!
    pids+=("$prom_pid")
    scrapes() { metric "http://127.0.0.1:$prom_port/metrics" 'prometheus_target_interval_length_seconds_count{interval="30s"}'; }
    deadline=$((SECONDS + 300))
    until [ "$(scrapes || echo 0)" -ge 2 ] 2>/dev/null; do
        [ "$SECONDS" -lt "$deadline" ] || fail "Prometheus did not scrape three times"
        sleep 2
    done
    q() { first_value "http://127.0.0.1:$prom_port" "$1"; }
    prom_duration=$(q 'scrape_duration_seconds{job="reputation"}')
    prom_samples=$(q 'scrape_samples_scraped{job="reputation"}')
    prom_rss=$(awk '/^VmRSS:/ {printf "%.0f", $2 / 1024}' "/proc/$prom_pid/status")
    kill "$prom_pid"

    # Until the second poll is over, for the peak.
    polls() { metric "$base/metrics?shard=0" 'reputation_api_requests_total{endpoint="ip-list",code="200"}'; }
    deadline=$((SECONDS + 600))
    until [ "$(polls || echo 0)" -ge 2 ] 2>/dev/null && served; do
        [ "$SECONDS" -lt "$deadline" ] || fail "no second poll"
        sleep 1
    done
    sleep 3
    kill "$sampler" 2>/dev/null || true
    peak_mb=$(awk '{printf "%.0f", $1 / 1024}' "$work/peak-$n")
    kill "$exporter_pid"
    wait "$exporter_pid" 2>/dev/null || true

    mb() { awk -v b="$1" 'BEGIN { printf "%.0f", b / 1048576 }'; }
    ms() { awk -v s="$1" 'BEGIN { printf "%.1f", s * 1000 }'; }
    printf '| %s | %s s | %s MB / %s MB | %s MB | %s MB (%s to %s MB) | %.0f ms / %.0f ms | %.0f ms / %.0f ms | %.2f s, %s samples, Prometheus %s MB |\n' \
        "$n" "$first" "$first_peak_mb" "$peak_mb" "$(awk -v b="$total" 'BEGIN { printf "%.0f", 1.5 * b / 1048576 + 100 }')" \
        "$(mb "$total")" "$(mb "$smallest")" "$(mb "$largest")" \
        "$(ms "$plain_exporter")" "$(ms "$plain_nginx")" "$(ms "$gzip_exporter")" "$(ms "$gzip_nginx")" \
        "$prom_duration" "$prom_samples" "$prom_rss"
done
