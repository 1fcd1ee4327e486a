#!/usr/bin/env bash
# History backfill, both paths, on the same fleet: `backfill --remote-write` into a running
# Prometheus (receiver on, out-of-order window 120d), against `backfill --output` followed by
# `promtool tsdb create-blocks-from openmetrics`. The simulated API serves ASSETS assets with three
# months of history each; everything runs on 127.0.0.1. Release build.
#
# Usage: bench/backfill.sh [ASSETS] [CONCURRENCY...]     (default: 10000, concurrency 4 and 32)
#
# One row per path and concurrency: wall time, CPU (user + sys) and peak RSS of each process that
# does the work (the exporter; promtool; Prometheus' CPU and resident memory growth while it took
# the samples), and the samples written.
set -euo pipefail
cd "$(dirname "$0")/.."

assets=${1:-10000}
shift || true
concurrencies=("$@")
[ ${#concurrencies[@]} -gt 0 ] || concurrencies=(4 32)

e2e_name=bench-backfill
# shellcheck source=tests/e2e/lib.sh
. tests/e2e/lib.sh

cargo build --release --quiet --bin reputation-exporter --bin reputation-exporter-backfill
exporter=$(realpath target/release/reputation-exporter)
simulated api_url "$exporter" "$assets"
export REPUTATION_EXPORTER_API__BASE_URL=$api_url REPUTATION_EXPORTER_API__TOKEN=demo-token

# `timed LOG COMMAND...`: runs COMMAND under /usr/bin/time; prints "wall cpu rss_mb".
timed() {
    local log=$1
    shift
    /usr/bin/time -f '%e %U %S %M' -o "$work/time" "$@" >"$work/$log" 2>&1 ||
        fail "$* failed (see $log)"
    awk '{ printf "%.1f %.2f %.0f\n", $1, $2 + $3, $4 / 1024 }' "$work/time"
}
# CPU seconds a process has used so far.
cpu_of() { awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$1/stat"; }
rss_mb_of() { awk '/^VmRSS/ { printf "%.0f\n", $2 / 1024 }' "/proc/$1/status"; }

printf '| path | concurrency | wall | exporter CPU | exporter peak RSS | TSDB side | samples |\n'
printf '|---|---|---|---|---|---|---|\n'
for concurrency in "${concurrencies[@]}"; do
    export REPUTATION_EXPORTER_ASSET_REPORTS__CONCURRENCY=$concurrency

    # Remote write into a Prometheus that already scrapes (its head holds the present).
    port=$(free_port)
    data="$work/prometheus-$concurrency"
    printf 'global:\n  scrape_interval: 5s\nscrape_configs:\n  - job_name: self\n    static_configs: [{targets: ["127.0.0.1:%s"]}]\nstorage:\n  tsdb:\n    out_of_order_time_window: 120d\n' \
        "$port" >"$work/prometheus.yml"
    prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$data" \
        --storage.tsdb.retention.time=120d --web.listen-address="127.0.0.1:$port" \
        --web.enable-remote-write-receiver >"$work/prometheus-$concurrency.log" 2>&1 &
    prometheus_pid=$!
    pids+=("$prometheus_pid")
    wait_for --every 0.5 "prometheus scraping itself" 60 answers "http://127.0.0.1:$port" up
    cpu_before=$(cpu_of "$prometheus_pid")
    rss_before=$(rss_mb_of "$prometheus_pid")
    read -r wall cpu rss < <(timed "remote-$concurrency.log" "$exporter" backfill --since 90d \
        --remote-write "http://127.0.0.1:$port/api/v1/write" --label job=reputation)
    prometheus_cpu=$(awk -v a="$cpu_before" -v b="$(cpu_of "$prometheus_pid")" 'BEGIN { printf "%.2f", b - a }')
    prometheus_rss=$(( $(rss_mb_of "$prometheus_pid") - rss_before ))
    sent=$(awk '/^remote write:/ { print $3 }' "$work/remote-$concurrency.log")
    printf '| remote write | %s | %s s | %s s | %s MB | Prometheus: %s s CPU, +%s MB resident | %s |\n' \
        "$concurrency" "$wall" "$cpu" "$rss" "$prometheus_cpu" "$prometheus_rss" "$sent"
    kill "$prometheus_pid"
    wait "$prometheus_pid" 2>/dev/null || true

    # The file, then promtool's blocks.
    read -r wall cpu rss < <(timed "file-$concurrency.log" "$exporter" backfill --since 90d \
        --output "$work/history.om" --label job=reputation)
    read -r p_wall p_cpu p_rss < <(timed "promtool-$concurrency.log" promtool tsdb \
        create-blocks-from openmetrics --max-block-duration=744h "$work/history.om" "$work/blocks-$concurrency")
    written=$(grep -c '^reputation_' "$work/history.om")
    printf '| file + promtool | %s | %s s + %s s | %s s | %s MB | promtool: %s s CPU, %s MB peak | %s |\n' \
        "$concurrency" "$wall" "$p_wall" "$cpu" "$rss" "$p_cpu" "$p_rss" "$written"
    rm -rf "$work/history.om" "$work/blocks-$concurrency" "$data"
done
