#!/usr/bin/env bash
# What the state store costs and what it saves, at production's size: the exporter (release
# build) against a simulated API of ASSETS assets on 127.0.0.1, asset reports on (hourly rounds,
# CONCURRENCY reports at once so that the first round of a large fleet ends within the run),
# polls every POLL_S seconds.
#
# 1. Cold start with the store: the time until it is ready (/-/ready), then serving every asset on
#    /metrics, the first round's duration, the bytes the process wrote during it per report, the
#    store's size on disk, and the bytes one poll writes (the lists); peak RSS (VmHWM).
# 2. Three warm restarts: the time until each is ready again and serving every asset (median and
#    range), the report requests of the first one's first WARM_S seconds
#    (reputation_api_requests_total{endpoint="asset"}: only the due ones, none at this size within
#    that time), peak RSS.
# 3. Cold start without the store (state.enabled=false): time to every asset, peak RSS, for
#    the comparison.
#
# Usage: bench/state.sh [ASSETS] [CONCURRENCY]   (default: 100000 16)
# Environment: POLL_S (default 60), WARM_S (default 60).
set -euo pipefail
cd "$(dirname "$0")/.."

assets=${1:-100000}
concurrency=${2:-16}
poll_s=${POLL_S:-60}
warm_s=${WARM_S:-60}

cargo build --release --quiet --bin reputation-exporter
exporter=$(realpath target/release/reputation-exporter)
e2e_name=bench-state
# shellcheck source=tests/e2e/lib.sh
. tests/e2e/lib.sh

simulated api_url "$exporter" "$assets"
state="$work/state"

# start NAME [ENV...]: the exporter, its pid in $pid, its port in $port, the Unix time it was
# started at in $since.
start() {
    local name=$1
    shift
    port=$(free_port)
    since=$(date +%s.%N)
    env REPUTATION_EXPORTER_API__BASE_URL="$api_url" REPUTATION_EXPORTER_API__TOKEN=demo-token \
        REPUTATION_EXPORTER_POLL__INTERVAL="${poll_s}s" REPUTATION_EXPORTER_ASSET_REPORTS__ENABLED=true \
        REPUTATION_EXPORTER_ASSET_REPORTS__INTERVAL=1h \
        REPUTATION_EXPORTER_ASSET_REPORTS__CONCURRENCY="$concurrency" \
        REPUTATION_EXPORTER_STATE__PATH="$state" "$@" \
        "$exporter" --web.listen-address "127.0.0.1:$port" >"$work/$name.log" 2>&1 &
    pid=$!
    pids+=("$pid")
}
# Stops the exporter, and lets the kernel write out what it left (so that the next start is not
# timed against the writeback of the last one's store).
stop() {
    kill -TERM "$pid"
    wait "$pid" || true
    sync
}
# "READY SERVED SCRAPE": seconds since the exporter started (SINCE, Unix time) until it is ready
# (/-/ready, checked every 10 ms: one list has arrived, or the store's lists were restored), until
# the start of the first scrape that serves every asset (scrapes back to back, as Prometheus asks:
# OpenMetrics, gzip), and how long that scrape took. One Python process checks, so the figures
# carry no process start-up of their own.
until_served() {
    python3 - "$1" "$port" "$assets" <<'PY'
import gzip, sys, time, urllib.request
since, port, assets = float(sys.argv[1]), sys.argv[2], int(sys.argv[3])
base = f"http://127.0.0.1:{port}"
def answers(path):
    try:
        with urllib.request.urlopen(base + path, timeout=60) as reply:
            return reply.status == 200
    except OSError:
        return False
deadline = time.time() + 900
while not answers("/-/ready"):
    if time.time() > deadline:
        sys.exit("the exporter was not ready within 900 s")
    time.sleep(0.01)
ready = time.time() - since
accept = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"
while True:
    began = time.time()
    request = urllib.request.Request(base + "/metrics", headers={"Accept": accept, "Accept-Encoding": "gzip"})
    with urllib.request.urlopen(request, timeout=120) as reply:
        body = reply.read()
        if reply.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
    took = time.time() - began
    served = sum(float(line.rsplit(b" ", 1)[1]) for line in body.splitlines() if line.startswith(b"reputation_assets{"))
    if served >= assets:
        break
    if time.time() > deadline:
        sys.exit(f"ready, but serving {served:.0f} of {assets} assets after 900 s")
print(f"{ready:.2f} {began - since:.2f} {took:.2f}")
PY
}
written() { awk '/^write_bytes/ {print $2}' "/proc/$pid/io"; }
hwm() { awk '/VmHWM/ {printf "%.0f", $2 / 1024}' "/proc/$pid/status"; }
asked() {
    curl -sf "http://127.0.0.1:$port/metrics" |
        awk '/^reputation_api_requests_total\{endpoint="asset"/ {n += $2} END {print n + 0}'
}
polls() {
    curl -sf "http://127.0.0.1:$port/metrics" |
        awk '/^reputation_api_requests_total\{endpoint="ip-list",code="200"/ {print $2 + 0}'
}

echo "== $assets assets, reports at concurrency $concurrency, polls every ${poll_s}s"
start cold
served=$(until_served "$since")
read -r cold cold_all cold_scrape <<<"$served"
wait_for --every 0.5 "the first report round" 3600 grep -q 'asset report round ended' "$work/cold.log"
round=$(grep -m1 'asset report round ended' "$work/cold.log" | grep -o 'took=[0-9.]*' | cut -d= -f2)
round_written=$(written)
round_polls=$(polls)
size=$(du -sb "$state" | cut -f1)
reports_size=$(stat -c %s "$state/api/state.redb")
# One poll: what the process writes from one list poll to the next, no round in between.
polled_since() { [ "$(polls)" -gt "$1" ]; }
first=$(polls)
wait_for --every 0.5 "the next poll" $((poll_s * 3)) polled_since "$first"
before=$(written)
second=$(polls)
wait_for --every 0.5 "the poll after it" $((poll_s * 3)) polled_since "$second"
poll_written=$(($(written) - before))
cold_hwm=$(hwm)
stop

# Three warm restarts (start times vary with what else the machine runs): the first also counts
# the report requests of its first WARM_S seconds.
warm_runs=()
for run in 1 2 3; do
    start "warm$run"
    served=$(until_served "$since")
    if [ "$run" = 1 ]; then
        sleep "$warm_s" # The wall time this step is about: the report requests of a warm start's first WARM_S.
        warm_asked=$(asked)
        warm_hwm=$(hwm)
    fi
    # The exporter's own account of the restore: reading the store, then reading and publishing it.
    restore=$(grep -m1 'serving what the state store kept' "$work/warm$run.log" | grep -o 'read=[^ ]* took=[^ ]*')
    warm_runs+=("$served $restore")
    stop
done

start off REPUTATION_EXPORTER_STATE__ENABLED=false
served=$(until_served "$since")
read -r off off_all off_scrape <<<"$served"
wait_for --every 0.5 "the first report round without the store" 3600 grep -q 'asset report round ended' "$work/off.log"
off_hwm=$(hwm)
stop

python3 - "$assets" "$cold" "$round" "$round_written" "$size" "$reports_size" "$poll_written" \
    "$cold_hwm" "$(printf '%s;' "${warm_runs[@]}")" "$warm_asked" "$warm_hwm" "$off" "$off_hwm" "$warm_s" "$cold_all" \
    "$off_all" "$round_polls" <<'PY'
import sys
(assets, cold, round_s, round_written, size, reports_size, poll_written, cold_hwm, warm_runs,
 warm_asked, warm_hwm, off, off_hwm, warm_s, cold_all, off_all, round_polls) = sys.argv[1:]
import re, statistics
runs = [run.split() for run in warm_runs.strip(";").split(";")]
def seconds(text):  # a Rust Duration's Debug: 812.4ms, 1.21s
    number, unit = re.fullmatch(r"([0-9.]+)(ms|s)", text.split("=")[1]).groups()
    return float(number) / (1000 if unit == "ms" else 1)
def spread(values):
    values = sorted(values)
    return f"{statistics.median(values):.2f} s ({values[0]:.2f}–{values[-1]:.2f})"
column = lambda i, f=float: [f(run[i]) for run in runs]
assets = int(assets)
mb = lambda b: f"{int(b) / 1e6:,.0f} MB"
print(f"| assets | {assets:,} |")
print("|---|---|")
print(f"| cold start, store on / off: ready | {cold} s / {off} s |")
print(f"| cold start, store on / off: every asset served | {cold_all} s / {off_all} s |")
print(f"| warm restart, median (range) of {len(runs)}: ready | {spread(column(0))} |")
print(f"| warm restart: first scrape serving every asset and report began | {spread(column(1))} |")
print(f"| warm restart: that scrape took (OpenMetrics, gzip) | {spread(column(2))} |")
print(f"| warm restart: the store read / read and published (exporter's log) | {spread(column(3, seconds))} / {spread(column(4, seconds))} |")
print(f"| report requests in a warm restart's first {warm_s} s | {warm_asked} (a cold start: {assets:,}) |")
print(f"| first report round | {round_s} s |")
print(f"| written during the first round, per report (its {round_polls} list polls included) | {int(round_written) / assets:,.0f} bytes |")
print(f"| written per list poll | {mb(poll_written)} |")
print(f"| store on disk (of which reports) | {mb(size)} ({mb(reports_size)}) |")
print(f"| peak RSS: store on, cold / warm / store off | {cold_hwm} / {warm_hwm} / {off_hwm} MB |")
PY
echo "bench-state: done"
