#!/usr/bin/env bash
# Several accounts end to end: two replicas of one exporter configuration polling two
# simulated APIs (each its own token), scraped by a real Prometheus with the shipped
# deploy/prometheus/scrape-accounts.yml (intervals shortened, the replicas' addresses filled
# in); every account on every replica must be up, `account` naming the account and `instance`
# the replica, each account with its own assets, counted once over its replicas. Everything
# listens on 127.0.0.1 and is stopped on exit.
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
ports=()
for replica in 1 2; do
    port=$(free_port)
    ports+=("$port")
    "$exporter_bin" --config.file "$work/exporter.toml" --web.listen-address "127.0.0.1:$port" \
        >"$work/exporter-$replica.log" 2>&1 &
    pids+=($!)
done

prometheus_port=$(free_port)
{
    echo "global:"
    echo "  evaluation_interval: 2s"
    sed -e "s/scrape_interval: .*/scrape_interval: 2s/" \
        -e "s/scrape_timeout: .*/scrape_timeout: 1s/" \
        -e "s/reputation-exporter-1:9525/127.0.0.1:${ports[0]}/g" \
        -e "s/reputation-exporter-2:9525/127.0.0.1:${ports[1]}/g" \
        deploy/prometheus/scrape-accounts.yml
} >"$work/prometheus.yml"
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/data" \
    --web.listen-address="127.0.0.1:$prometheus_port" >"$work/prometheus.log" 2>&1 &
pids+=($!)

# query PROMQL: each series as account@instance=value (either label left out when absent),
# sorted, on one line.
query() {
    curl -sfG "http://127.0.0.1:$prometheus_port/api/v1/query" --data-urlencode "query=$1" |
        python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(" ".join(sorted("@".join(v for v in (x["metric"].get("account",""), x["metric"].get("instance","")) if v)+"="+x["value"][1] for x in r)))'
}
# sorted WORD...: the words sorted as query sorts its series, on one line.
sorted() { printf '%s\n' "$@" | LC_ALL=C sort | paste -sd' '; }
a="127.0.0.1:${ports[0]}"
b="127.0.0.1:${ports[1]}"
probes=$(sorted "eu@$a=1" "eu@$b=1" "us@$a=1" "us@$b=1")
exporters=$(sorted "$a=1" "$b=1")
# Each job is scraped first at its own offset within the interval: wait for all of them.
all_up() {
    [ "$(query 'up{job="reputation"}' 2>/dev/null)" = "$probes" ] &&
        [ "$(query 'reputation_up{job="reputation"}' 2>/dev/null)" = "$probes" ] &&
        [ "$(query 'up{job="reputation-exporter"}' 2>/dev/null)" = "$exporters" ]
}
wait_for "both accounts on both replicas and the exporters' own /metrics up" 180 all_up
assets=$(query 'sum by (account) (max without (instance) (reputation_assets{job="reputation"}))')
[ "$assets" = "eu=10 us=5" ] || fail "assets per account: $assets"
echo "accounts: Prometheus scrapes both accounts on both replicas through /probe, one value each: $assets"
echo "accounts: passed"
