#!/usr/bin/env bash
# A sharded fleet's global view, measured: the exporter (release build) polls `simulate --assets
# ASSETS` with metrics.shards = N; for each shard in turn, a Prometheus shard server scrapes it
# with the shipped alerts-servers.yml (alerts and recording rules) and remote-writes what the
# shipped remote-write.yml keeps to a global Prometheus (remote-write receiver), then stops (one
# at a time, so that the measurement fits one machine; the servers of a real fleet run side by
# side). Prints, per shard server, its head series and peak memory; for the global server, its
# head series and peak memory once every shard has written, and the time of each query of the
# dashboard's fleet overview there (variables at All).
#
# Scrapes every 15s and rules every 15s (the changes group too) so that each server is done in a
# minute; the global server looks back an hour (--query.lookback-delta=1h) so that the first
# shards' aggregates are still current when the last is written.
#
# Usage: bench/global.sh [ASSETS] [N]    (default: 1000000 and 8)
set -euo pipefail
cd "$(dirname "$0")/.."

assets=${1:-1000000}
shards=${2:-8}
# shellcheck source=bench/need.sh
. bench/need.sh
need prometheus curl

e2e_name=bench-global
# shellcheck source=tests/e2e/lib.sh
. tests/e2e/lib.sh

cargo build --release --quiet --bin reputation-exporter
exporter=$(realpath target/release/reputation-exporter)
simulated api_url "$exporter" "$assets"
exporter_port=$(free_port)
REPUTATION_EXPORTER_API__BASE_URL=$api_url REPUTATION_EXPORTER_API__TOKEN=demo-token \
    REPUTATION_EXPORTER_METRICS__SHARDS=$shards REPUTATION_EXPORTER_POLL__INTERVAL=1h \
    "$exporter" --web.listen-address "127.0.0.1:$exporter_port" >"$work/exporter.log" 2>&1 &
pids+=($!)
for _ in $(seq 600); do
    curl -sf -o /dev/null "http://127.0.0.1:$exporter_port/-/ready" && break
    sleep 1
done

peak_mb() { awk '/^VmHWM/ {print int($2 / 1024)}' "/proc/$1/status"; }
head_series() { curl -sf "http://127.0.0.1:$1/metrics" | awk '/^prometheus_tsdb_head_series / {print $2}'; }
# `query PORT EXPR`: the value of an instant query's first result, empty when none.
query() { first_value "http://127.0.0.1:$1" "$2"; }

global_port=$(free_port)
printf 'global:\n  scrape_interval: 15s\n' >"$work/global.yml"
prometheus --config.file="$work/global.yml" --storage.tsdb.path="$work/global-data" \
    --web.listen-address="127.0.0.1:$global_port" --web.enable-remote-write-receiver \
    --query.lookback-delta=1h >"$work/global.log" 2>&1 &
global_pid=$!
pids+=($!)

sed -E -e 's/^( +(- )?interval: ).*/\1"15s"/' deploy/prometheus/fleet/alerts-servers.yml >"$work/rules.yml"
grep -q 'interval: "15s"' "$work/rules.yml" || fail "the changes group's interval was not shortened to 15s"
sed -e "s#http://victoriametrics:8428/api/v1/write#http://127.0.0.1:$global_port/api/v1/write#" \
    deploy/prometheus/fleet/remote-write.yml >"$work/remote-write.yml"

printf '| shard server | its head series | its peak RSS |\n|---|---|---|\n'
for ((shard = 0; shard < shards; shard++)); do
    port=$(free_port)
    {
        printf 'global:\n  scrape_interval: 15s\n  evaluation_interval: 15s\nrule_files: ["%s"]\n' "$work/rules.yml"
        printf 'scrape_configs:\n  - job_name: reputation\n    scrape_timeout: 14s\n'
        printf '    params: {shard: ["%s"]}\n' "$shard"
        printf '    static_configs: [{targets: ["127.0.0.1:%s"], labels: {account: main, shard: "%s"}}]\n' \
            "$exporter_port" "$shard"
        sed -n '/^remote_write:/,$p' "$work/remote-write.yml"
    } >"$work/shard-$shard.yml"
    prometheus --config.file="$work/shard-$shard.yml" --storage.tsdb.path="$work/shard-$shard-data" \
        --web.listen-address="127.0.0.1:$port" >"$work/shard-$shard.log" 2>&1 &
    pid=$!
    # Its shard's aggregates and its changes reach the global server.
    arrived() {
        [ -n "$(query "$global_port" "account_kind:reputation_assets:count{shard=\"$shard\"}")" ] &&
            [ -n "$(query "$global_port" "count(asset:reputation_senderscore:bottomk{shard=\"$shard\"})")" ] &&
            curl -sf "http://127.0.0.1:$port/api/v1/rules" | python3 -c '
import json, sys
groups = json.load(sys.stdin)["data"]["groups"]
sys.exit(0 if groups and all(g["lastEvaluation"] > "2000" and g["evaluationTime"] > 0 for g in groups) else 1)'
    }
    wait_for --every 2 "shard $shard's aggregates on the global server" 600 arrived
    sleep 20 # one more evaluation and send
    printf '| %s | %s | %s MB |\n' "$shard" "$(head_series "$port")" "$(peak_mb "$pid")"
    kill "$pid"
    wait "$pid" || true
    rm -rf "$work/shard-$shard-data"
done

counted=$(query "$global_port" 'sum(account_kind:reputation_assets:count)')
[ "$counted" = "$assets" ] || fail "the global server counts $counted assets"
printf '\nglobal server: %s assets counted from the aggregates, %s head series, peak RSS %s MB\n\n' \
    "$counted" "$(head_series "$global_port")" "$(peak_mb "$global_pid")"
python3 - deploy/grafana/dashboard.json "http://127.0.0.1:$global_port" <<'PY'
import json, sys, time
sys.path.insert(0, "tests/e2e")
from dashboard_queries import fleet_targets, get
dashboard, url = json.load(open(sys.argv[1])), sys.argv[2]
print("| fleet panel | series | seconds |\n|---|---|---|")
for title, expr, instant in fleet_targets(dashboard):
    now = time.time()
    if instant:
        data, took = get(url, "/api/v1/query", {"query": expr, "time": now})
    else:
        data, took = get(url, "/api/v1/query_range", {"query": expr, "start": now - 3600, "end": now, "step": 300})
    print(f"| {title} | {len(data['result'])} | {took:.3f} |")
PY
