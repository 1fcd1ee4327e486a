#!/usr/bin/env bash
# The dashboard on a large fleet, as a person opens it: `simulate --assets ASSETS`, a week of
# its history backfilled (backfill, promtool), the exporter polling it with asset reports on,
# one real Prometheus scraping it with the shipped scrape job, alerts and recording rules (their
# 5-minute groups every minute), then
# every query of the shipped dashboard as Grafana sends it (tests/e2e/dashboard_queries.py):
# the pickers, every panel over the default 7 days at Grafana's step, every annotation. Checks
# that no picker offers more than 1,000 values and no query returns more than 300 series, and
# prints what each returned and how long Prometheus took (bench/dashboard.sh keeps the table).
# Everything listens on 127.0.0.1 and is stopped on exit.
#
# Usage: tests/e2e/dashboard.sh [path/to/reputation-exporter] [ASSETS] [DASHBOARD_JSON]
#   (default: 100000 assets and deploy/grafana/dashboard.json; BOUNDS=0 reports without
#   checking, for another dashboard)
set -euo pipefail
cd "$(dirname "$0")/../.."

exporter_bin=$(realpath "${1:-target/debug/reputation-exporter}")
assets=${2:-100000}
dashboard=$(realpath "${3:-deploy/grafana/dashboard.json}")
e2e_name=dashboard
# shellcheck source=tests/e2e/lib.sh
. tests/e2e/lib.sh

simulated api_url "$exporter_bin" "$assets"
exporter_port=$(free_port)
api() {
    REPUTATION_EXPORTER_API__BASE_URL=$api_url REPUTATION_EXPORTER_API__TOKEN=demo-token \
        REPUTATION_EXPORTER_ASSET_REPORTS__ENABLED=true \
        REPUTATION_EXPORTER_ASSET_REPORTS__CONCURRENCY=32 "$@"
}

# A week of history, labelled as the live series will be.
started=$SECONDS
api "$exporter_bin" backfill --output "$work/history.om" --since 7d --skip-recent 0s \
    --label job=reputation --label account=main --label "instance=127.0.0.1:$exporter_port" \
    >"$work/backfill.log" 2>&1 || fail "backfill"
promtool tsdb create-blocks-from openmetrics --max-block-duration=168h "$work/history.om" "$work/data" \
    >"$work/promtool.log" 2>&1 || fail "promtool create-blocks-from"
rm "$work/history.om"
echo "dashboard: a week of history for $assets assets backfilled in $((SECONDS - started))s"

api "$exporter_bin" --web.listen-address "127.0.0.1:$exporter_port" >"$work/exporter.log" 2>&1 &
pids+=($!)

prometheus_port=$(free_port)
# The shipped rules, the groups that run at the poll's 5 minutes evaluated every minute: what the
# dashboard shows of them is the same, and Prometheus has it four minutes sooner.
mkdir -p "$work/rules"
for rules in alerts rules; do
    sed 's/^\( *- interval: \)"5m"$/\1"1m"/' "deploy/prometheus/$rules.yml" >"$work/rules/$rules.yml"
done
grep -q 'interval: "1m"' "$work/rules/rules.yml" || fail "the recording rules' interval was not shortened"
{
    echo "global:"
    echo "  scrape_interval: 1m"
    echo "  evaluation_interval: 1m"
    echo "rule_files: [$work/rules/alerts.yml, $work/rules/rules.yml]"
    sed -e "/reputation-exporter-2/d" -e "s/reputation-exporter-1:9525/127.0.0.1:$exporter_port/" \
        -e "s/scrape_timeout: .*/scrape_timeout: 50s/" deploy/prometheus/scrape.yml
} >"$work/prometheus.yml"
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/data" \
    --storage.tsdb.retention.time=30d --web.listen-address="127.0.0.1:$prometheus_port" \
    >"$work/prometheus.log" 2>&1 &
prometheus_pid=$!
pids+=($!)
url="http://127.0.0.1:$prometheus_port"

query() { first_value "$url" "$1"; }
# The fleet and its reports scraped, and every recording rule evaluated.
scraped() { [ "$(query 'sum(account_kind:reputation_assets:count)')" = "$assets" ]; }
wait_for --every 5 "Prometheus scraping the $assets assets" 600 scraped
reported() { [ -n "$(query 'count(reputation_asset_tag_info) > 0.9 * sum(account_kind:reputation_assets:count)')" ]; }
wait_for --every 5 "the first report round in Prometheus" 900 reported
# Every rule group evaluated since then.
reported_at=$(date +%s)
evaluated() {
    curl -sf "$url/api/v1/rules" | python3 -c '
import datetime, json, sys
groups = json.load(sys.stdin)["data"]["groups"]
since = float(sys.argv[1])
def at(text):
    return datetime.datetime.fromisoformat(text[:26].rstrip("Z") + "+00:00").timestamp()
sys.exit(0 if groups and all(at(g["lastEvaluation"]) > since for g in groups) else 1)' "$reported_at"
}
wait_for --every 5 "every rule group evaluated after the reports" 600 evaluated
series=$(query 'count({__name__=~".+"})')
echo "dashboard: Prometheus holds $series series for $assets assets and a week of history"

bounds=()
[ "${BOUNDS:-1}" = 0 ] || bounds=(--bounds)
python3 tests/e2e/dashboard_queries.py "$url" "$dashboard" "${bounds[@]}" >"$work/queries.md" ||
    { cat "$work/queries.md"; fail "the dashboard's queries"; }
cat "$work/queries.md"
rss=$(awk '/^VmHWM/ {print int($2 / 1024)}' "/proc/$prometheus_pid/status")
echo "dashboard: Prometheus peak RSS ${rss} MB"
echo "dashboard: passed"
