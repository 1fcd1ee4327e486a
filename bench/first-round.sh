#!/usr/bin/env bash
# The first asset report round after a start, at production's size: the exporter (release
# build) against a simulated API on 127.0.0.1 whose reports answer after LATENCY_MS, with
# hourly rounds (so only the first, unspread round runs) at CONCURRENCY.
#
# Usage: bench/first-round.sh [ASSETS CONCURRENCY]...   (default: 10000 4  100000 16)
# Environment: LATENCY_MS (default 50).
#
# For each pair it prints one row: the round's duration (from the exporter's "asset report
# round ended" line), the bound assets x latency / concurrency and how far above it the round
# was, the exporter's peak resident memory (VmHWM) with every report series held, and its CPU
# time (user + system) per report over the round.
set -euo pipefail
cd "$(dirname "$0")/.."

pairs=("$@")
[ ${#pairs[@]} -gt 0 ] || pairs=(10000 4 100000 16)
latency=${LATENCY_MS:-50}

cargo build --release --quiet --bin reputation-exporter
exporter=target/release/reputation-exporter
e2e_name=first-round
# shellcheck source=tests/e2e/lib.sh
. tests/e2e/lib.sh
cpu_seconds() {
    awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$1/stat"
}

printf '| assets | concurrency | first round | bound (assets x %s ms / concurrency) | above the bound | peak RSS | exporter CPU per report |\n' "$latency"
printf '|---|---|---|---|---|---|---|\n'
while [ ${#pairs[@]} -ge 2 ]; do
    assets=${pairs[0]} concurrency=${pairs[1]}
    pairs=("${pairs[@]:2}")
    simulated api_url "$exporter" "$assets" --report-latency "${latency}ms"
    api=${pids[-1]}
    port=$(free_port)
    REPUTATION_EXPORTER_API__BASE_URL=$api_url \
    REPUTATION_EXPORTER_API__TOKEN=demo-token \
    REPUTATION_EXPORTER_POLL__INTERVAL=1h \
    REPUTATION_EXPORTER_ASSET_REPORTS__ENABLED=true \
    REPUTATION_EXPORTER_ASSET_REPORTS__INTERVAL=1h \
    REPUTATION_EXPORTER_ASSET_REPORTS__CONCURRENCY="$concurrency" \
        "$exporter" --web.listen-address "127.0.0.1:$port" >"$work/exporter.log" 2>&1 &
    exporter_pid=$!
    pids+=("$exporter_pid")
    # The round starts once the lists are in: the CPU of the list poll is not the reports'.
    until curl -sf -o /dev/null "http://127.0.0.1:$port/-/ready"; do
        sleep 0.2
    done
    cpu_before=$(cpu_seconds "$exporter_pid")
    until grep -q 'asset report round ended' "$work/exporter.log"; do sleep 1; done
    cpu_after=$(cpu_seconds "$exporter_pid")
    took=$(grep -m1 'asset report round ended' "$work/exporter.log" | grep -o 'took=[0-9.]*' | cut -d= -f2)
    grep -m1 'asset report round ended' "$work/exporter.log" | grep -q ' failed=0 ' ||
        echo "warning: reports failed: $(grep -m1 'asset report round ended' "$work/exporter.log")" >&2
    hwm=$(awk '/VmHWM/ {printf "%.0f MB", $2 / 1024}' "/proc/$exporter_pid/status")
    python3 - "$assets" "$concurrency" "$latency" "$took" "$hwm" "$cpu_before" "$cpu_after" <<'PY'
import sys
assets, concurrency, latency, took, hwm, before, after = sys.argv[1:]
assets, concurrency, latency, took = int(assets), int(concurrency), float(latency), float(took)
bound = assets * latency / 1000 / concurrency
cpu = (float(after) - float(before)) / assets * 1e6
print(f"| {assets:,} | {concurrency} | {took:.1f} s | {bound:.1f} s | {100 * (took / bound - 1):+.1f} % | {hwm} | {cpu:.0f} µs |")
PY
    kill "$exporter_pid" "$api" 2>/dev/null || true
    wait "$exporter_pid" "$api" 2>/dev/null || true
done
