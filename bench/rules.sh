#!/usr/bin/env bash
# What the shipped alerts and recording rules cost Prometheus, measured two ways.
#
# 1. Counted at ASSETS (the release exporter's --once against `simulate --assets ASSETS`, asset
#    reports on): for every rule and group of deploy/prometheus/alerts.yml and rules.yml, the
#    samples one evaluation reads with two replicas scraped every 15 s (bench/rule_cost.py:
#    series x range / scrape interval for every selector, as Prometheus' totalQueryableSamples
#    counts them), and per minute at each group's interval. Then the same count of the rules
#    of the commit BASE (default: none; e.g. BASE=7f86afb for the rules before the exporter
#    served what is new), for the before-and-after table of docs/benchmarks.md.
# 2. Live at LIVE_ASSETS: two replicas (asset reports on, the default 5m poll) polling
#    `simulate`, scraped every 15 s by a real Prometheus with the shipped scrape job and rules
#    unchanged, for LIVE_SECONDS (25 minutes by default: the 20-minute windows the rules read
#    are full). Prints each group's evaluation time (the median over its evaluations after the
#    first five minutes, each read once from prometheus_rule_group_last_duration_seconds with
#    its prometheus_rule_group_last_evaluation_timestamp_seconds) against its interval, their
#    sum as a share of the intervals, the iterations missed, and
#    for each rule the samples Prometheus itself reports reading (stats=all,
#    totalQueryableSamples) beside the count of step 1 at LIVE_ASSETS.
#
# Usage: bench/rules.sh [ASSETS] [LIVE_ASSETS] [LIVE_SECONDS]   (default: 100000 10000 1500)
set -euo pipefail
cd "$(dirname "$0")/.."

assets=${1:-100000}
live_assets=${2:-10000}
live_seconds=${3:-1500}
# shellcheck source=bench/need.sh
. bench/need.sh
need prometheus curl
python3 -c 'import yaml' 2>/dev/null || { apt-get update -qq && apt-get install -y -qq python3-yaml >/dev/null; }

e2e_name=bench-rules
# shellcheck source=tests/e2e/lib.sh
. tests/e2e/lib.sh

cargo build --release --quiet --bin reputation-exporter
exporter=$(realpath target/release/reputation-exporter)
rules=(deploy/prometheus/alerts.yml deploy/prometheus/rules.yml)

# exposition N FILE: one replica's /metrics over N simulated assets, asset reports on.
exposition() {
    local url
    simulated url "$exporter" "$1"
    REPUTATION_EXPORTER_API__BASE_URL=$url REPUTATION_EXPORTER_API__TOKEN=demo-token \
        REPUTATION_EXPORTER_ASSET_REPORTS__ENABLED=true REPUTATION_EXPORTER_ASSET_REPORTS__CONCURRENCY=64 \
        "$exporter" --once >"$2" 2>"$work/once.log" || true
    grep -q '^reputation_blacklistings_named{' "$2" || fail "no asset reports in the exposition of $1 assets"
}

echo "== counted: $assets assets, two replicas, 15 s scrape"
exposition "$assets" "$work/exposition.txt"
python3 bench/rule_cost.py "$work/exposition.txt" 2 15 "${rules[@]}"
if [ -n "${BASE:-}" ]; then
    echo "== counted, the rules of $BASE"
    git show "$BASE:deploy/prometheus/alerts.yml" >"$work/base-alerts.yml"
    git show "$BASE:deploy/prometheus/rules.yml" >"$work/base-rules.yml"
    python3 bench/rule_cost.py "$work/exposition.txt" 2 15 "$work/base-alerts.yml" "$work/base-rules.yml" | grep -v '^  '
fi

echo "== live: $live_assets assets, two replicas, a real Prometheus, ${live_seconds}s"
simulated api_url "$exporter" "$live_assets"
ports=("$(free_port)" "$(free_port)")
for port in "${ports[@]}"; do
    REPUTATION_EXPORTER_API__BASE_URL=$api_url REPUTATION_EXPORTER_API__TOKEN=demo-token \
        REPUTATION_EXPORTER_ASSET_REPORTS__ENABLED=true \
        "$exporter" --web.listen-address "127.0.0.1:$port" >>"$work/exporter-$port.log" 2>&1 &
    pids+=($!)
done
{
    cat <<YAML
global:
  evaluation_interval: 1m
rule_files: ["$PWD/deploy/prometheus/alerts.yml", "$PWD/deploy/prometheus/rules.yml"]
YAML
    sed -e "s/scrape_interval: .*/scrape_interval: 15s/" \
        -e "s/reputation-exporter-1:9525/127.0.0.1:${ports[0]}/" \
        -e "s/reputation-exporter-2:9525/127.0.0.1:${ports[1]}/" deploy/prometheus/scrape.yml
    cat <<YAML
  - job_name: prometheus
    scrape_interval: 15s
    static_configs:
      - targets: ["127.0.0.1:PROMETHEUS_PORT"]
YAML
} >"$work/prometheus.yml"
prometheus_port=$(free_port)
sed -i "s/PROMETHEUS_PORT/$prometheus_port/" "$work/prometheus.yml"
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/prometheus-data" \
    --web.listen-address="127.0.0.1:$prometheus_port" >"$work/prometheus.log" 2>&1 &
pids+=($!)
prom="http://127.0.0.1:$prometheus_port"
wait_for "both replicas scraped with their reports" 600 \
    answers "$prom" "count(reputation_blacklistings_named{job=\"reputation\"}) >= $((2 * live_assets * 9 / 10))"
started=$SECONDS

# Each group's last duration with the time of that evaluation, every 15 s after the first five
# minutes: every evaluation of the 1-minute groups and of the 5-minute ones is read.
: >"$work/durations.txt"
while [ $((SECONDS - started)) -lt "$live_seconds" ]; do
    if [ $((SECONDS - started)) -ge 300 ]; then
        for metric in prometheus_rule_group_last_duration_seconds prometheus_rule_group_last_evaluation_timestamp_seconds; do
            curl -sfG "$prom/api/v1/query" --data-urlencode "query=$metric" >>"$work/durations.txt" &&
                echo >>"$work/durations.txt"
        done
    fi
    sleep 15
done
curl -sfG "$prom/api/v1/query" --data-urlencode 'query=prometheus_rule_group_interval_seconds' >"$work/intervals.json"
curl -sfG "$prom/api/v1/query" --data-urlencode 'query=prometheus_rule_group_iterations_missed_total' >"$work/missed.json"
curl -sf "http://127.0.0.1:${ports[0]}/metrics" >"$work/live-exposition.txt"
python3 bench/rule_cost.py "$work/live-exposition.txt" 2 15 "${rules[@]}" --json >"$work/counted.json"

python3 - "$work" "$prom" "${rules[@]}" <<'PY'
import json, statistics, sys, urllib.parse, urllib.request
import yaml

work, prom, files = sys.argv[1], sys.argv[2], sys.argv[3:]

def group_of(labels):
    return labels["rule_group"].split(";")[-1]

# Each line is one query's answer: a duration, then the time of the evaluation it took.
lines = [json.loads(line)["data"]["result"] for line in open(f"{work}/durations.txt") if line.strip()]
evaluations = {}
for took, at in zip(lines[0::2], lines[1::2]):
    when = {group_of(r["metric"]): r["value"][1] for r in at}
    for r in took:
        group = group_of(r["metric"])
        evaluations.setdefault(group, {})[when.get(group)] = float(r["value"][1])
durations = {group: list(by_time.values()) for group, by_time in evaluations.items()}
intervals = {group_of(r["metric"]): float(r["value"][1]) for r in json.load(open(f"{work}/intervals.json"))["data"]["result"]}
missed = {group_of(r["metric"]): float(r["value"][1]) for r in json.load(open(f"{work}/missed.json"))["data"]["result"]}
share = 0.0
for group in sorted(durations):
    d = statistics.median(durations[group])
    share += d / intervals[group]
    print(f"{group:22s} {d * 1000:8.1f} ms of every {intervals[group]:.0f} s ({100 * d / intervals[group]:.3f}%, median of {len(durations[group])} evaluations), {missed.get(group, 0):.0f} iterations missed")
print(f"all groups: {100 * share:.3f}% of their intervals")

counted = json.load(open(f"{work}/counted.json"))["rules"]
print(f"{'rule':45s} {'Prometheus read':>16s} {'counted':>10s}")
for path in files:
    for group in yaml.safe_load(open(path))["groups"]:
        for rule in group["rules"]:
            name = rule.get("alert") or rule.get("record")
            query = urllib.parse.urlencode({"query": rule["expr"], "stats": "all"})
            answer = json.load(urllib.request.urlopen(f"{prom}/api/v1/query?{query}"))
            read = answer["data"].get("stats", {}).get("samples", {}).get("totalQueryableSamples")
            print(f"{name:45s} {read if read is not None else '-':>16} {counted[group['name'] + '/' + name]['samples']:>10,d}")
PY
echo "bench-rules: done"
