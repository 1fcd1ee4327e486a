#!/usr/bin/env bash
# History backfill end to end, as docs/backfill.md says to do it:
# its two commands run as written (with --demo, against the simulated API), Prometheus started
# with the retention it gives, then a past value read back through the query API, and every
# panel and annotation of the shipped dashboard run over the backfilled months as Grafana would
# run them (tests/e2e/history_panels.py). Everything listens on 127.0.0.1 and is stopped on exit.
#
# Usage: tests/e2e/backfill.sh [path/to/reputation-exporter]
set -euo pipefail
cd "$(dirname "$0")/../.."

exporter_bin=$(realpath "${1:-target/debug/reputation-exporter}")
e2e_name=backfill
# shellcheck source=tests/e2e/lib.sh
. tests/e2e/lib.sh

# The page's first ```sh block, and the retention it tells Prometheus to keep.
awk '/^```sh/{block=1; next} block && /^```/{exit} block{print}' docs/backfill.md >"$work/block.sh"
# One awk, no pipeline: a reader that stops at its first match must not SIGPIPE the writer.
retention=$(awk 'match($0, /--storage[.]tsdb[.]retention[.]time=[0-9a-z]+/) {
        print substr($0, RSTART, RLENGTH); exit }' docs/backfill.md)
[ -n "$retention" ] || fail "docs/backfill.md gives no retention"
grep -q '^reputation-exporter backfill ' "$work/block.sh" || fail "the backfill command was not found"
grep -q '^promtool tsdb create-blocks-from openmetrics ' "$work/block.sh" ||
    fail "the promtool command was not found"
sed -e "s#^reputation-exporter backfill #\"$exporter_bin\" backfill --demo #" \
    -e "s#/var/lib/prometheus/metrics2#$work/data#g" "$work/block.sh" >"$work/run.sh"
(cd "$work" && bash -e run.sh) >"$work/backfill.log" 2>&1 || fail "the commands of docs/backfill.md failed"
grep -q '^assets written: 36$' "$work/backfill.log" || fail "not every demo asset was written"
blocks=$(find "$work/data" -mindepth 1 -maxdepth 1 -type d | wc -l)
[ "$blocks" -ge 1 ] && [ "$blocks" -le 8 ] || fail "promtool made $blocks blocks, not a handful"
echo "backfill: the commands of docs/backfill.md wrote $(grep -c '' "$work/history.om") lines and $blocks blocks"

# A past sample: the oldest Sender Score of 192.0.2.1 in the file.
line=$(grep -m1 '^reputation_senderscore{.*asset="192.0.2.1"}' "$work/history.om")
value=$(awk '{print $2}' <<<"$line")
at=$(awk '{print $3}' <<<"$line")
[ -n "$at" ] || fail "no sample for 192.0.2.1"

port=$(free_port)
printf 'global:\n  scrape_interval: 1m\n' >"$work/prometheus.yml"
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/data" \
    "$retention" --web.listen-address="127.0.0.1:$port" \
    >"$work/prometheus.log" 2>&1 &
pids+=($!)
wait_for "prometheus ready" 60 curl -sf -o /dev/null "http://127.0.0.1:$port/-/ready"

query='reputation_senderscore{job="reputation",account="main",instance="reputation-exporter-1:9525",kind="ip",asset="192.0.2.1"}'
got=$(first_value "http://127.0.0.1:$port" "$query" "$at")
[ "$got" = "$value" ] || fail "Prometheus answered '$got' at $at, the file says $value"
echo "backfill: Prometheus answers reputation_senderscore=$value for 192.0.2.1 at $(date -u -d "@$at" +%FT%TZ)"
# The oldest day too: the retention keeps all of --since.
oldest=$(awk '/^reputation_senderscore\{/ && (min == "" || $3 < min) {min = $3} END {print min}' \
    "$work/history.om")
got=$(first_value "http://127.0.0.1:$port" 'count(reputation_senderscore)' "$oldest")
[ "${got:-0}" -gt 0 ] || fail "nothing at the oldest sample, $(date -u -d "@$oldest" +%FT%TZ): the retention dropped it"
echo "backfill: $got scores at the oldest sample, $(date -u -d "@$oldest" +%FT%TZ), kept with $retention"

python3 tests/e2e/history_panels.py "http://127.0.0.1:$port" "$work/history.om" \
    deploy/grafana/dashboard.json || fail "the dashboard does not show the history"
echo "backfill: passed"
