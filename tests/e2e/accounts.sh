#!/usr/bin/env bash
# Several accounts end to end: one exporter polling two simulated APIs (each its own token),
# scraped by a real Prometheus with the shipped deploy/prometheus/scrape-accounts.yml
# (intervals shortened, the exporter's address filled in); both `instance`s must be up, with
# their own assets. Everything listens on 127.0.0.1 and is stopped on exit.
#
# Usage: tests/e2e/accounts.sh [path/to/reputation-exporter]
set -euo pipefail
cd "$(dirname "$0")/../.."

exporter_bin=${1:-target/debug/reputation-exporter}
e2e_name=accounts
# shellcheck source=tests/e2e/lib.sh
. tests/e2e/lib.sh

simulated eu_url "$exporter_bin" 10
simulated us_url "$exporter_bin" 5
for account in eu us; do
    install -m 0600 /dev/stdin "$work/$account.token" <<<"demo-token"
done
cat >"$work/exporter.toml" <<TOML
[poll]
interval = "2s"

[accounts.eu]
base_url = "$eu_url"
token_file = "$work/eu.token"

[accounts.us]
base_url = "$us_url"
token_file = "$work/us.token"
TOML
exporter_port=$(free_port)
"$exporter_bin" --config.file "$work/exporter.toml" --web.listen-address "127.0.0.1:$exporter_port" \
    >"$work/exporter.log" 2>&1 &
pids+=($!)

prometheus_port=$(free_port)
{
    echo "global:"
    echo "  evaluation_interval: 2s"
    sed -e "s/scrape_interval: .*/scrape_interval: 2s/" \
        -e "s/scrape_timeout: .*/scrape_timeout: 1s/" \
        -e "s/reputation-exporter:9525/127.0.0.1:$exporter_port/" \
        deploy/prometheus/scrape-accounts.yml
} >"$work/prometheus.yml"
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/data" \
    --web.listen-address="127.0.0.1:$prometheus_port" >"$work/prometheus.log" 2>&1 &
pids+=($!)

query() {
    curl -sfG "http://127.0.0.1:$prometheus_port/api/v1/query" --data-urlencode "query=$1" |
        python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(" ".join(sorted(x["metric"].get("instance","")+"="+x["value"][1] for x in r)))'
}
deadline=$((SECONDS + 90))
# Each job is scraped first at its own offset within the interval: wait for all three.
until [ "$(query 'up{job="reputation"}' 2>/dev/null)" = "eu=1 us=1" ] &&
    [ "$(query 'reputation_up{job="reputation"}' 2>/dev/null)" = "eu=1 us=1" ] &&
    [ "$(query 'up{job="reputation-exporter"}' 2>/dev/null)" = "127.0.0.1:$exporter_port=1" ]; do
    [ "$SECONDS" -lt "$deadline" ] ||
        fail "not both accounts and the exporter's own /metrics up: $(query 'up' || true)"
    sleep 1
done
assets=$(query 'sum by (instance) (reputation_assets{job="reputation"})')
[ "$assets" = "eu=10 us=5" ] || fail "assets per account: $assets"
echo "accounts: Prometheus scrapes both accounts through /probe: $assets"
echo "accounts: passed"
