#!/usr/bin/env bash
# A kill -9 at any moment leaves the last complete state readable. The exporter (BINARY, the
# debug build by default) polls a simulated API of 20,000 assets every second with asset
# reports on, so that list bodies and report batches are being written most of the time, and is
# killed with SIGKILL at twelve moments spread over those writes. Each restart must start warm
# from what the store kept (its first scrape, sent as soon as it can be reached, serves every
# asset), set nothing aside and find every stored list readable; the bodies a kill cut off are
# removed.
#
# Usage: tests/e2e/state_kill.sh [BINARY]
set -euo pipefail
cd "$(dirname "$0")/../.."
exporter_bin=$(realpath "${1:-target/debug/reputation-exporter}")
e2e_name=state-kill
# shellcheck source=tests/e2e/lib.sh
. tests/e2e/lib.sh

assets=20000
simulated api_url "$exporter_bin" "$assets"
store="$work/store"
run=0

# Starts the exporter on the store: its pid in $pid, its port in $port, its log run-N.log.
start() {
    run=$((run + 1))
    port=$(free_port)
    REPUTATION_EXPORTER_API__BASE_URL=$api_url REPUTATION_EXPORTER_API__TOKEN=demo-token \
        REPUTATION_EXPORTER_POLL__INTERVAL=1s REPUTATION_EXPORTER_ASSET_REPORTS__ENABLED=true \
        REPUTATION_EXPORTER_ASSET_REPORTS__INTERVAL=1h REPUTATION_EXPORTER_ASSET_REPORTS__CONCURRENCY=16 \
        REPUTATION_EXPORTER_STATE__PATH="$store" \
        "$exporter_bin" --web.listen-address "127.0.0.1:$port" >"$work/run-$run.log" 2>&1 &
    pid=$!
    pids+=("$pid")
}
serving_every_asset() {
    curl -sf "http://127.0.0.1:$port/metrics" |
        awk -v assets="$assets" '/^reputation_assets\{/ {n += $2} END {exit !(n >= assets)}'
}
# A scrape as early as the exporter can be reached: its socket is bound before the restore
# begins, so the scrape waits for the restore and its answer serves every asset, never a part.
answered() {
    curl -s -o "$work/first.txt" -w '%{http_code}' "http://127.0.0.1:$port/metrics" >"$work/first.code"
}
first_answer_whole() {
    wait_for --every 0.01 "restart $run reachable" 60 answered
    [ "$(cat "$work/first.code")" = 200 ] || fail "restart $run answered its first scrape with $(cat "$work/first.code")"
    awk -v assets="$assets" '/^reputation_assets\{/ {n += $2} END {exit !(n >= assets)}' "$work/first.txt" ||
        fail "restart $run served only part of the assets at its first scrape"
}
kill_now() {
    kill -KILL "$pid"
    wait "$pid" 2>/dev/null || true
}

start
wait_for "the first run serving every asset" 120 serving_every_asset
wait_for "the first run storing both lists" 60 \
    test -s "$store/api/ip-list.json" -a -s "$store/api/domain-list.json"
kill_now

for moment in 0.1 0.3 0.5 0.7 0.9 1.2 1.5 1.9 2.3 2.8 3.3 4.0; do
    start
    first_answer_whole
    log="$work/run-$run.log"
    grep -q 'serving what the state store kept until the API answers" lists=2' "$log" ||
        fail "restart $run did not start warm from both stored lists: $(head -n 3 "$log")"
    ! grep -E 'state store cannot be used|not what was stored' "$log" ||
        fail "restart $run found the store broken by a kill"
    ! ls "$store/api" | grep -q 'set-aside' || fail "restart $run set the store aside"
    # The wall time this test is about: the moment of the kill, somewhere in a poll's writes.
    sleep "$moment"
    kill_now
done

start
wait_for "the last restart serving every asset" 60 serving_every_asset
reports=$(grep -o 'the API answers" lists=2 reports=[0-9]*' \
    "$work/run-$run.log" | grep -o '[0-9]*$')
[ "${reports:-0}" -gt 0 ] || fail "no report survived the kills"
kill -TERM "$pid"
wait "$pid" || true
leftover=$(find "$store/api" -name '*.partial-*' | wc -l)
[ "$leftover" -le 2 ] || fail "$leftover cut-off bodies left behind: $(ls "$store/api")"
echo "state-kill: $((run - 1)) kills -9 during polls and report rounds, each restart warm from a readable store ($reports reports kept at the last)"
echo "state-kill: passed"
