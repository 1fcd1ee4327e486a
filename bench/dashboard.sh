#!/usr/bin/env bash
# The dashboard on a large fleet (tests/e2e/dashboard.sh, release build): one Prometheus with a
# week of backfilled history and the live series of `simulate --assets ASSETS`, every query of
# the dashboard as Grafana sends it at its defaults, with the series each returns and the time
# Prometheus takes. With a second dashboard (an older deploy/grafana/dashboard.json), the same
# for it, without the bounds, for a before and after.
#
# Usage: bench/dashboard.sh [ASSETS] [OTHER_DASHBOARD_JSON]   (default: 100000)
set -euo pipefail
cd "$(dirname "$0")/.."

assets=${1:-100000}
# shellcheck source=bench/need.sh
. bench/need.sh
need prometheus curl

cargo build --release --quiet --bin reputation-exporter --bin reputation-exporter-backfill
bash tests/e2e/dashboard.sh target/release/reputation-exporter "$assets"
if [ -n "${2:-}" ]; then
    BOUNDS=0 bash tests/e2e/dashboard.sh target/release/reputation-exporter "$assets" "$2"
fi
