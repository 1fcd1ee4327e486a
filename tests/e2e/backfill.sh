#!/usr/bin/env bash
# History backfill end to end: `reputation-exporter backfill` against the demo API, the file
# turned into blocks by promtool, and a real Prometheus started on those blocks answering a
# past value of reputation_senderscore through its query API. Everything listens on 127.0.0.1
# and is stopped on exit.
#
# Usage: tests/e2e/backfill.sh [path/to/reputation-exporter]
set -euo pipefail
cd "$(dirname "$0")/../.."

exporter_bin=${1:-target/debug/reputation-exporter}
e2e_name=backfill
# shellcheck source=tests/e2e/lib.sh
. tests/e2e/lib.sh

"$exporter_bin" backfill --demo --output "$work/history.om" --since 60d \
    --label job=reputation --label instance=reputation-exporter:9525 2>"$work/backfill.log" ||
    fail "backfill exited $?"
grep -q '^assets written: 36$' "$work/backfill.log" || fail "not every demo asset was written"
promtool tsdb create-blocks-from openmetrics "$work/history.om" "$work/data" >"$work/promtool.log" ||
    fail "promtool refused the file: $(tail -n 5 "$work/promtool.log")"

# A past sample: the oldest Sender Score of 192.0.2.1 in the file.
line=$(grep -m1 '^reputation_senderscore{.*asset="192.0.2.1"}' "$work/history.om")
value=$(awk '{print $2}' <<<"$line")
at=$(awk '{print $3}' <<<"$line")
[ -n "$at" ] || fail "no sample for 192.0.2.1"

port=$(free_port)
printf 'global:\n  scrape_interval: 1m\n' >"$work/prometheus.yml"
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/data" \
    --storage.tsdb.retention.time=10y --web.listen-address="127.0.0.1:$port" \
    >"$work/prometheus.log" 2>&1 &
pids+=($!)
deadline=$((SECONDS + 60))
until curl -sf -o /dev/null "http://127.0.0.1:$port/-/ready"; do
    [ "$SECONDS" -lt "$deadline" ] || fail "prometheus never became ready"
    sleep 1
done

query='reputation_senderscore{job="reputation",instance="reputation-exporter:9525",kind="ip",asset="192.0.2.1"}'
answer=$(curl -sfG "http://127.0.0.1:$port/api/v1/query" --data-urlencode "query=$query" \
    --data-urlencode "time=$at")
got=$(python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")' <<<"$answer")
[ "$got" = "$value" ] || fail "Prometheus answered '$got' at $at, the file says $value ($answer)"
echo "backfill: Prometheus answers reputation_senderscore=$value for 192.0.2.1 at $(date -u -d "@$at" +%FT%TZ)"
echo "backfill: passed"
