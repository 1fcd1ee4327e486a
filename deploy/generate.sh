#!/usr/bin/env bash
# Writes the deploy files that derive from one place. From the monitoring mixin (mixin/): the
# alerts and recording rules (deploy/prometheus/alerts.yml, rules.yml, and split for a sharded
# fleet in deploy/prometheus/fleet/alerts-servers.yml and alerts-global.yml), the Grafana dashboard
# (deploy/grafana/dashboard.json) and the Kubernetes PrometheusRule
# (deploy/kubernetes/prometheusrule.yaml); the ServiceMonitor of a sharded exporter
# (deploy/kubernetes/servicemonitor-shards.yaml, N = 4); and the units' Documentation=
# (deploy/systemd); and the promtool tests of the alerts' promises
# (deploy/prometheus/tests/alerts_test.yml and timelines_test.yml, from tests/rules/scenarios.py,
# where a checkout has it). CI runs it with the defaults and fails on any difference.
#
# Needs jsonnet (Debian: apt-get install jsonnet). To change a threshold, a selector or the
# dashboard, edit mixin/config.libsonnet and run it again. The runbook lives at RUNBOOK_URL, by
# default the repository's docs/runbook.md (mixin/config.libsonnet's runbookUrl). To point the
# alerts at your own copy (a wiki, an internal git host), run for example:
#   RUNBOOK_URL=https://wiki.example.com/reputation/runbook bash deploy/generate.sh
# Each alert links RUNBOOK_URL#<alert name in lower case>, the runbook's heading for it.
set -euo pipefail
cd "$(dirname "$0")"

command -v jsonnet >/dev/null || { echo "generate.sh: needs jsonnet (apt-get install jsonnet)" >&2; exit 1; }
repository=$(sed -n 's/^repository = "\(.*\)"$/\1/p' ../Cargo.toml)
[ -n "$repository" ] || { echo "generate.sh: Cargo.toml has no repository" >&2; exit 1; }
default=$(jsonnet -S -e '(import "../mixin/mixin.libsonnet")._config.runbookUrl')
case $default in
    "$repository"/*) ;;
    *) echo "generate.sh: the mixin's runbookUrl ($default) is not in the repository $repository" >&2; exit 1 ;;
esac
runbook=${RUNBOOK_URL:-$default}

# The runbook URL as jsonnet code: a JSON string is one.
config=$(python3 -c 'import json, sys; print(json.dumps({"runbookUrl": sys.argv[1]}))' "$runbook")
jsonnet -S -m . --tla-code "config=$config" ../mixin/render.jsonnet >/dev/null
jsonnet -S kubernetes/servicemonitor-shards.jsonnet >kubernetes/servicemonitor-shards.yaml
if [ -f ../tests/rules/scenarios.py ]; then
    python3 ../tests/rules/scenarios.py
fi

sed -i "s#^Documentation=.*#Documentation=$repository $runbook#" systemd/reputation-exporter.service \
    systemd/reputation-exporter.socket
