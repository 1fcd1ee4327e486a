#!/usr/bin/env bash
# docs/deploying.md's blocks as a user copies them:
#
# - "Replicas": the block run as written in a copy of the checkout's deploy/ (what the block
#   reads), with reputation-exporter and prometheus on the PATH; the simulated API, two
#   replicas splitting the asset reports and a real Prometheus with the shipped scrape job and
#   rules. Stand-in: the ports it names (9525, 9526, 9090) become free ones, since a test binds
#   what is free. Checks that Prometheus scrapes both replicas as one account, evaluates the
#   alerts, and that each replica reports on its own half of the fleet and the two halves make
#   the fleet.
# - The `rule_files:` lines: the shipped files load under them (promtool check config).
#
# Everything listens on 127.0.0.1 and is stopped on exit.
# Usage: tests/e2e/deploying.sh [path/to/reputation-exporter]
set -euo pipefail
cd "$(dirname "$0")/../.."

exporter_bin=$(realpath "${1:-target/debug/reputation-exporter}")
e2e_name=deploying
# shellcheck source=tests/e2e/lib.sh
. tests/e2e/lib.sh

# The first ```sh block after a heading.
block() {
    awk -v heading="$1" -v fence="$2" '$0 == heading {s=1} s && $0 == "```" fence {b=1; next}
        b && /^```/ {exit} b {print}' docs/deploying.md
}

# The rule_files lines, with the shipped files where they say.
rule_files=$(awk '/^  ```yaml$/{b=1; next} b && /^  ```$/{exit} b{print}' docs/deploying.md)
grep -q '^  rule_files:' <<<"$rule_files" || fail "docs/deploying.md shows no rule_files lines"
mkdir -p "$work/etc"
sed -e 's/^  //' -e "s#/etc/prometheus/reputation#$PWD/deploy/prometheus#" <<<"$rule_files" >"$work/etc/prometheus.yml"
promtool check config "$work/etc/prometheus.yml" >"$work/check.log" 2>&1 ||
    fail "the rule_files lines of docs/deploying.md do not load the shipped files"
echo "deploying: the rule_files lines load alerts.yml and rules.yml"

block "## Replicas" sh >"$work/replicas.sh"
grep -q 'reputation-exporter simulate' "$work/replicas.sh" || fail "the Replicas block was not found"
ports=("$(free_port)" "$(free_port)" "$(free_port)")
sed -e "s/:9525/:${ports[0]}/g" -e "s/:9526/:${ports[1]}/g" -e "s/:9090/:${ports[2]}/g" \
    -e "s/reputation-exporter-1:${ports[0]}/reputation-exporter-1:9525/" \
    -e "s/reputation-exporter-2:${ports[0]}/reputation-exporter-2:9525/" \
    "$work/replicas.sh" >"$work/run.sh"
mkdir -p "$work/checkout" "$work/bin"
cp -r deploy "$work/checkout/"
ln -s "$exporter_bin" "$work/bin/reputation-exporter"
(
    cd "$work/checkout"
    export PATH="$work/bin:$PATH"
    # The block's background jobs end with it: its own process group, stopped on exit.
    exec setsid bash -e "$work/run.sh"
) >"$work/block.log" 2>&1 &
block_pid=$!
pids+=($block_pid)
trap 'kill -- -$block_pid 2>/dev/null || true; cleanup' EXIT

prom="http://127.0.0.1:${ports[2]}"
query() { first_value "$prom" "$1"; }
equals() { [ "$(query "$1")" = "$2" ]; }
wait_for "Prometheus scraping both replicas as account main" 120 \
    equals 'count(up{job="reputation",account="main"} == 1)' 2
wait_for "each replica reporting on its half of the 200 assets" 180 \
    equals 'count(count by (instance) (reputation_blacklistings_named{account="main"}) > 0)' 2
halves=$(query 'sum(count by (instance) (reputation_blacklistings_named{account="main"}))')
[ "$halves" = 200 ] || fail "the replicas' reports cover $halves assets, not 200 once each"
alerts_evaluated() {
    curl -sf "$prom/api/v1/rules" | python3 -c '
import json, sys
groups = {g["name"]: g for g in json.load(sys.stdin)["data"]["groups"]}
ok = "reputation.alerts" in groups and "reputation.rules" in groups
ok = ok and all(r["health"] == "ok" for r in groups["reputation.alerts"]["rules"])
sys.exit(0 if ok else 1)'
}
wait_for "the alerts evaluated" 120 alerts_evaluated
echo "deploying: the Replicas block: two replicas scraped as one account, the reports split in halves, the alerts evaluated"
echo "deploying: passed"
