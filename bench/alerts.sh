#!/usr/bin/env bash
# How many alerts the shipped rules send Alertmanager for one account of ASSETS assets, and
# whether Prometheus' notifier drops any: the exporter (lists only, the defaults) polling
# `simulate --assets ASSETS`, a real Prometheus with the shipped scrape job and rules
# (every `for:` shortened to 0s and the 5-minute groups to 15 s, so that every standing
# condition fires within a minute or two, as it would within an hour) and Prometheus' default
# notifier (--alertmanager.notification-queue-capacity 10,000), sending to a real Alertmanager.
# After SECONDS, prints the alerts firing, what Prometheus sent and dropped, and what
# Alertmanager received. With BASE=<commit>, the rules of that commit are measured too, on the
# same exporter.
#
# With SHARDS=N (N > 1), the exporter serves metrics.shards = N and the Prometheus is one server
# of a fleet: it scrapes shard 0 alone (ASSETS / N assets or so) with the shipped server rules,
# deploy/prometheus/fleet/alerts-servers.yml, as every server of the fleet does its shards; the
# fleet's account-wide alerts (alerts-global.yml) are one per account on the global view.
#
# Usage: [SHARDS=N] bench/alerts.sh [path/to/reputation-exporter] [ASSETS] [SECONDS]   (default:
# release build, 100000, 180)
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -n "${1:-}" ]; then
    exporter=$(realpath "$1")
else
    cargo build --release --quiet --bin reputation-exporter
    exporter=$(realpath target/release/reputation-exporter)
fi
assets=${2:-100000}
seconds=${3:-180}
shards=${SHARDS:-1}
# shellcheck source=bench/need.sh
. bench/need.sh
need prometheus prometheus-alertmanager curl

e2e_name=bench-alerts
# shellcheck source=tests/e2e/lib.sh
. tests/e2e/lib.sh

simulated api_url "$exporter" "$assets"
exporter_port=$(free_port)
REPUTATION_EXPORTER_API__BASE_URL=$api_url REPUTATION_EXPORTER_API__TOKEN=demo-token \
    REPUTATION_EXPORTER_STATE__ENABLED=false REPUTATION_EXPORTER_METRICS__SHARDS="$shards" \
    "$exporter" --web.listen-address "127.0.0.1:$exporter_port" >"$work/exporter.log" 2>&1 &
pids+=($!)

alertmanager_port=$(free_port)
cat >"$work/alertmanager.yml" <<YAML
route:
  receiver: nobody
receivers:
  - name: nobody
YAML
prometheus-alertmanager --config.file="$work/alertmanager.yml" --storage.path="$work/am-data" \
    --web.listen-address="127.0.0.1:$alertmanager_port" --cluster.listen-address= \
    >"$work/alertmanager.log" 2>&1 &
pids+=($!)

# measure NAME ALERTS RULES: a Prometheus with these rules, for $seconds once the exporter is
# scraped whole; prints one line of counts.
measure() {
    local name=$1 dir="$work/$1" port
    mkdir -p "$dir"
    sed -E -e 's/^( +for: ).*/\1"0s"/' "$2" >"$dir/alerts.yml"
    sed -E -e 's/^( +(- )?interval: )"5m"/\1"15s"/' "$3" >"$dir/rules.yml"
    sed -i -E -e 's/^( +(- )?interval: )"5m"/\1"15s"/' "$dir/alerts.yml"
    port=$(free_port)
    {
        cat <<YAML
global:
  scrape_interval: 30s
  scrape_timeout: 25s
  evaluation_interval: 15s
rule_files: ["$dir/alerts.yml", "$dir/rules.yml"]
alerting:
  alertmanagers:
    - static_configs:
        - targets: ["127.0.0.1:$alertmanager_port"]
scrape_configs:
  - job_name: reputation
YAML
        if [ "$shards" -gt 1 ]; then
            cat <<YAML
    params: {shard: ["0"]}
    static_configs:
      - targets: ["127.0.0.1:$exporter_port"]
        labels: {account: main, shard: "0"}
YAML
        else
            cat <<YAML
    static_configs:
      - targets: ["127.0.0.1:$exporter_port"]
        labels: {account: main}
YAML
        fi
    } >"$dir/prometheus.yml"
    prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/data" \
        --web.listen-address="127.0.0.1:$port" >"$dir/prometheus.log" 2>&1 &
    local pid=$!
    pids+=("$pid")
    local prom="http://127.0.0.1:$port"
    # Every asset of the target scraped (of its shard: reputation_assets counts those).
    wait_for "$name: every asset scraped" 900 \
        answers "$prom" 'count(reputation_asset_info{job="reputation"}) >= sum(reputation_assets{job="reputation"})'
    local scraped
    scraped=$(first_value "$prom" 'count(reputation_asset_info{job="reputation"})')
    sleep "$seconds"
    local firing own sent dropped errors queue overflow
    firing=$(first_value "$prom" 'count(ALERTS{alertstate="firing"}) or vector(0)')
    # Prometheus' own notifier counters, from its /metrics.
    own=$(curl -sf "$prom/metrics")
    sum_of() { awk -v m="$1" '$1 == m || index($1, m "{") == 1 {s += $2} END {print s + 0}' <<<"$own"; }
    sent=$(sum_of prometheus_notifications_sent_total)
    dropped=$(sum_of prometheus_notifications_dropped_total)
    errors=$(sum_of prometheus_notifications_errors_total)
    queue=$(sum_of prometheus_notifications_queue_capacity)
    overflow=$(grep -c "Alert batch larger than queue capacity" "$dir/prometheus.log" || true)
    local names
    names=$(curl -sfG "$prom/api/v1/query" --data-urlencode 'query=count by (alertname) (ALERTS{alertstate="firing"})' |
        python3 -c 'import json,sys; rs = sorted(json.load(sys.stdin)["data"]["result"], key=lambda r: r["metric"]["alertname"]); print(", ".join(r["metric"]["alertname"] + " " + r["value"][1] for r in rs))')
    echo "bench-alerts: $name, firing: ${names:-none}"
    # Prometheus' peak resident memory, and its scrapes of the target: the first, the last.
    local peak scrapes
    peak=$(awk '/^VmHWM:/ {printf "%.0f", $2 / 1024}' "/proc/$pid/status")
    scrapes=$(curl -sfG "$prom/api/v1/query" --data-urlencode 'query=scrape_duration_seconds{job="reputation"}[1h]' |
        python3 -c 'import json,sys; v = json.load(sys.stdin)["data"]["result"][0]["values"]; print(f"{len(v)} scrapes, the first {float(v[0][1]):.2f} s, the last {float(v[-1][1]):.2f} s")')
    echo "bench-alerts: $name: Prometheus peak RSS $peak MB; $scrapes"
    echo "bench-alerts: $name, $assets assets in $shards shard(s), $scraped of them on this server: $firing alerts firing; Prometheus sent $sent alert(s), dropped $dropped, errors $errors (queue capacity $queue, 'batch larger than queue capacity' logged $overflow times)"
    kill "$pid"
    wait "$pid" 2>/dev/null || true
}

if [ -n "${BASE:-}" ]; then
    git show "$BASE:deploy/prometheus/alerts.yml" >"$work/base-alerts.yml"
    git show "$BASE:deploy/prometheus/rules.yml" >"$work/base-rules.yml"
    measure "the rules of $BASE" "$work/base-alerts.yml" "$work/base-rules.yml"
fi
if [ "$shards" -gt 1 ]; then
    # The server rules hold every group a fleet server runs; the second file is empty.
    echo "groups: []" >"$work/none.yml"
    measure "the shipped server rules" deploy/prometheus/fleet/alerts-servers.yml "$work/none.yml"
else
    measure "the shipped rules" deploy/prometheus/alerts.yml deploy/prometheus/rules.yml
fi
received=$(curl -sf "http://127.0.0.1:$alertmanager_port/metrics" | awk '/^alertmanager_alerts_received_total/ {s += $2} END {print s + 0}')
echo "bench-alerts: Alertmanager received $received alert(s) in all"
echo "bench-alerts: done"
