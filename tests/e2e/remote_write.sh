#!/usr/bin/env bash
# History over remote write end to end, as docs/backfill.md says to do it: a real Prometheus
# started with the remote-write receiver and the page's out-of-order window, the page's
# `backfill --remote-write` command run as written (against one simulated API, so that every run
# sends the same history whatever the time), then every panel and annotation
# of the shipped dashboard run over the history as Grafana would run them
# (tests/e2e/history_panels.py), compared with the file the same history gives, with no restart.
# A second run changes nothing; a Prometheus without the window refuses in words that name it,
# and takes the history after a reload that adds it. Everything listens on 127.0.0.1.
#
# Usage: tests/e2e/remote_write.sh [path/to/reputation-exporter]
set -euo pipefail
cd "$(dirname "$0")/../.."

exporter_bin=$(realpath "${1:-target/debug/reputation-exporter}")
e2e_name=remote-write
# shellcheck source=tests/e2e/lib.sh
. tests/e2e/lib.sh

# The page's commands and settings: the file command (for the reference), the remote-write
# command, the out-of-order window block and the retention.
awk '/^```sh/{block=1; next} block && /^```/{exit} block{print}' docs/backfill.md |
    awk '/^reputation-exporter backfill --output /{print; exit}' >"$work/file.sh"
awk '/^reputation-exporter backfill --remote-write http:\/\/prometheus:9090\//{print; exit}' \
    docs/backfill.md >"$work/remote.sh"
awk '/^```yaml/{block=1; next} block && /^```/{exit} block{print}' docs/backfill.md >"$work/window.yml"
retention=$(awk 'match($0, /--storage[.]tsdb[.]retention[.]time=[0-9a-z]+/) {
        print substr($0, RSTART, RLENGTH); exit }' docs/backfill.md)
[ -s "$work/file.sh" ] || fail "docs/backfill.md gives no file command"
[ -s "$work/remote.sh" ] || fail "docs/backfill.md gives no remote-write command for Prometheus"
grep -q 'out_of_order_time_window: ' "$work/window.yml" || fail "docs/backfill.md gives no window"
[ -n "$retention" ] || fail "docs/backfill.md gives no retention"

# `start_prometheus NAME WITH_WINDOW`: a Prometheus scraping itself every second, with the
# receiver; sets port_NAME once its head holds a scrape (an empty head takes any sample in order,
# which a running Prometheus never is).
start_prometheus() {
    local name=$1 with_window=$2 port
    port=$(free_port)
    printf 'global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: self\n    static_configs: [{targets: ["127.0.0.1:%s"]}]\n' \
        "$port" >"$work/$name.yml"
    [ "$with_window" = yes ] && cat "$work/window.yml" >>"$work/$name.yml"
    prometheus --config.file="$work/$name.yml" --storage.tsdb.path="$work/$name-data" \
        "$retention" --web.listen-address="127.0.0.1:$port" \
        --web.enable-remote-write-receiver --web.enable-lifecycle >"$work/$name.log" 2>&1 &
    pids+=($!)
    wait_for --every 0.5 "prometheus $name scraping itself" 60 answers "http://127.0.0.1:$port" up
    printf -v "port_$name" '%s' "$port"
}

# `totals PORT`: the samples of the three families within the window, and the sum of their
# values, one per line.
totals() {
    local function query="" total
    for function in count_over_time sum_over_time; do
        query=""
        for family in reputation_senderscore reputation_blacklistings reputation_blacklist_listed; do
            query+="${query:+ + }sum($function($family[120d]))"
        done
        total=$(first_value "http://127.0.0.1:$1" "$query")
        echo "${total:-0}"
    done
}

# The API every run asks: one simulated fleet of 36 assets, its histories dated from its start.
simulated api_url "$exporter_bin" 36
export REPUTATION_EXPORTER_API__BASE_URL=$api_url REPUTATION_EXPORTER_API__TOKEN=demo-token

# `remote PORT LOG`: the page's remote-write command, to Prometheus at PORT.
remote() {
    sed -e "s#^reputation-exporter backfill #\"$exporter_bin\" backfill #" \
        -e "s#http://prometheus:9090/#http://127.0.0.1:$1/#" "$work/remote.sh" >"$work/remote-$1.sh"
    (cd "$work" && bash -e "remote-$1.sh") >"$work/$2" 2>&1
}

# Without the window: refused, in words that name the setting; a reload that adds it is enough.
start_prometheus bare no
if remote "$port_bare" refused.log; then fail "Prometheus without the window took the history"; fi
grep -q 'the receiver answered HTTP 400 Bad Request: out of bounds' "$work/refused.log" ||
    fail "the refusal is not reported in Prometheus' words"
grep -q 'storage.tsdb.out_of_order_time_window' "$work/refused.log" ||
    fail "the refusal does not name the setting"
echo "remote-write: without the window: $(grep -o 'the receiver answered[^\\]*' "$work/refused.log" | head -n1)"
cat "$work/window.yml" >>"$work/bare.yml"
curl -sf -X POST "http://127.0.0.1:$port_bare/-/reload" || fail "the reload failed"
remote "$port_bare" after-reload.log || fail "refused after the reload added the window"
echo "remote-write: after a reload that adds the window: $(grep '^remote write:' "$work/after-reload.log")"

# The page's Prometheus; the file, the first and the second run, of the same history.
start_prometheus main yes
sed -e "s#^reputation-exporter backfill #\"$exporter_bin\" backfill #" "$work/file.sh" >"$work/file-run.sh"
(cd "$work" && bash -e file-run.sh) >"$work/file.log" 2>&1 || fail "the file backfill failed"
remote "$port_main" first.log || fail "the remote-write backfill failed"
read -r -d '' count sum < <(totals "$port_main"; printf '\0') || true
remote "$port_main" second.log || fail "the second run failed"
read -r -d '' count2 sum2 < <(totals "$port_main"; printf '\0') || true
range=$(grep '^time range:' "$work/file.log")
for log in first second; do
    [ "$(grep '^time range:' "$work/$log.log")" = "$range" ] ||
        fail "the $log run did not send the file's time range"
done
grep -q '^assets written: 36$' "$work/first.log" || fail "not every simulated asset was sent"
echo "remote-write: $(grep '^remote write:' "$work/first.log")"

samples=$(grep -c '^reputation_' "$work/history.om")
[ "$count" = "$samples" ] || fail "Prometheus holds $count samples, the file $samples"
echo "remote-write: Prometheus holds $count samples, as many as the file; their sum $sum"
[ "$count2" = "$count" ] && [ "$sum2" = "$sum" ] ||
    fail "the second run changed the data: $count -> $count2 samples, sum $sum -> $sum2"
echo "remote-write: a second run over the same range changed nothing ($count2 samples, sum $sum2)"

python3 tests/e2e/history_panels.py "http://127.0.0.1:$port_main" "$work/history.om" \
    deploy/grafana/dashboard.json || fail "the dashboard does not show the history"
echo "remote-write: passed"
