#!/usr/bin/env bash
# End to end, as an on-call engineer lives with the alerts: the exporter polling a fleet API this
# script controls (tests/e2e/fleet_api.py), a real Prometheus with the shipped alerts (`for:`
# shortened, nothing else changed), a real Alertmanager with the shipped configuration (only its
# webhook URLs pointed here), and a webhook receiver that records every notification.
#
# 1. A new installation on 200 assets with 400 standing listings (days old) pages nothing and
#    sends at most a handful of notifications.
# 2. A new listing pages once.
# 3. A restart of the exporter while it is listed sends nothing.
# 4. The delisting resolves the alert within two evaluation intervals of the exporter serving it.
# 5. 503s that the retries get past send nothing, and ReputationApiDown is not even pending.
#
# Everything listens on 127.0.0.1 and is stopped on exit.
# Usage: tests/e2e/alertmanager.sh [path/to/reputation-exporter]
set -euo pipefail
cd "$(dirname "$0")/../.."

exporter_bin=$(realpath "${1:-target/debug/reputation-exporter}")
e2e_name=alertmanager
# shellcheck source=tests/e2e/lib.sh
. tests/e2e/lib.sh

evaluation=5
now=$(date +%s)

# The fleet: 200 addresses, each listed on two of four blacklists for two to nine days.
python3 - "$work/fleet.json" "$now" <<'PY'
import json, sys
now = int(sys.argv[2])
lists = ["Spamhaus SBL", "Barracuda BRBL", "SpamCop", "UCEPROTECT L1"]
listings = [{"asset": f"10.0.{i // 256}.{i % 256}", "blacklist": lists[(i + k) % 4],
             "listed": now - (2 + (i + k) % 8) * 86400, "delisted": None}
            for i in range(200) for k in (0, 1)]
json.dump({"assets": 200, "listings": listings, "flaky": False}, open(sys.argv[1], "w"))
PY
# edit PYTHON: changes the fleet (`s` is the state, `now` the time).
edit() {
    python3 - "$work/fleet.json" "$1" <<'PY'
import json, sys, time
s = json.load(open(sys.argv[1])); now = int(time.time())
exec(sys.argv[2])
json.dump(s, open(sys.argv[1] + ".new", "w"))
PY
    mv "$work/fleet.json.new" "$work/fleet.json"
}

python3 tests/e2e/fleet_api.py "$work/fleet.json" "$work/api.port" >"$work/api.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do [ -s "$work/api.port" ] && break; sleep 0.1; done
api_port=$(cat "$work/api.port")

# The webhook receiver: every notification, one JSON line per receiver.
webhook_port=$(free_port)
python3 - "$work" "$webhook_port" >"$work/webhook.log" 2>&1 <<'PY' &
import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
work, port = sys.argv[1], int(sys.argv[2])
class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args): pass
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        with open(f"{work}/notified-{self.path.strip('/')}.jsonl", "a") as f:
            f.write(json.dumps(json.loads(body)) + "\n")
        self.send_response(200); self.end_headers()
HTTPServer(("127.0.0.1", port), Handler).serve_forever()
PY
pids+=($!)

exporter_port=$(free_port)
start_exporter() {
    REPUTATION_EXPORTER_API__BASE_URL="http://127.0.0.1:$api_port" \
    REPUTATION_EXPORTER_API__TOKEN=e2e-token \
    REPUTATION_EXPORTER_POLL__INTERVAL=5s \
    REPUTATION_EXPORTER_ASSET_REPORTS__ENABLED=true \
    REPUTATION_EXPORTER_ASSET_REPORTS__INTERVAL=20s \
    REPUTATION_EXPORTER_ASSET_REPORTS__CONCURRENCY=16 \
    REPUTATION_EXPORTER_BACKOFF__INITIAL_DELAY=100ms \
    REPUTATION_EXPORTER_BACKOFF__MAX_DELAY=500ms \
        "$exporter_bin" --web.listen-address "127.0.0.1:$exporter_port" >>"$work/exporter.log" 2>&1 &
    exporter_pid=$!
    pids+=("$exporter_pid")
}
start_exporter

# Alertmanager with the shipped configuration, its receivers pointed at the webhook.
alertmanager_port=$(free_port)
sed "s#http://127.0.0.1:5001/#http://127.0.0.1:$webhook_port/#" deploy/alertmanager/alertmanager.yml \
    >"$work/alertmanager.yml"
prometheus-alertmanager --config.file="$work/alertmanager.yml" --storage.path="$work/am-data" \
    --web.listen-address="127.0.0.1:$alertmanager_port" --cluster.listen-address= \
    >"$work/alertmanager.log" 2>&1 &
pids+=($!)

# Prometheus with the shipped alerts, every `for:` shortened to 20s.
mkdir -p "$work/rules"
sed -E 's/^( +for: ).*/\1"20s"/' deploy/prometheus/alerts.yml >"$work/rules/alerts.yml"
cat >"$work/prometheus.yml" <<YAML
global:
  scrape_interval: 5s
  evaluation_interval: ${evaluation}s
rule_files: ["$work/rules/alerts.yml"]
alerting:
  alertmanagers:
    - static_configs:
        - targets: ["127.0.0.1:$alertmanager_port"]
scrape_configs:
  - job_name: reputation
    static_configs:
      - targets: ["127.0.0.1:$exporter_port"]
YAML
prometheus_port=$(free_port)
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/prometheus-data" \
    --web.listen-address="127.0.0.1:$prometheus_port" >"$work/prometheus.log" 2>&1 &
pids+=($!)

# query PROMQL: the first value of the answer, empty when there is none (or no answer yet).
query() {
    local answer
    answer=$(curl -sf --get "http://127.0.0.1:$prometheus_port/api/v1/query" --data-urlencode "query=$1") || return 0
    python3 -c 'import json,sys; r=json.loads(sys.argv[1])["data"]["result"]; print(r[0]["value"][1] if r else "")' "$answer"
}
# wait_until SECONDS WHAT COMMAND...: the command succeeds within the deadline, or the test fails.
wait_until() {
    local deadline=$((SECONDS + $1)) what=$2
    shift 2
    until "$@"; do
        [ "$SECONDS" -lt "$deadline" ] || fail "$what"
        sleep 1
    done
}
equals() { [ "$(query "$1")" = "$2" ]; }
# notifications RECEIVER [ALERTNAME]: how many notifications reached the receiver (with that
# alert firing in them).
notifications() {
    local file="$work/notified-$1.jsonl"
    [ -f "$file" ] || { echo 0; return; }
    python3 - "$file" "${2:-}" <<'PY'
import json, sys
name = sys.argv[2]
print(sum(1 for line in open(sys.argv[1])
          if not name or any(a["labels"]["alertname"] == name and a["status"] == "firing"
                             for a in json.loads(line)["alerts"])))
PY
}
total() { echo $(($(notifications pager) + $(notifications tickets) + $(notifications transactional-pager))); }

# 1. The installation: every listing in Prometheus, then past every group_wait.
wait_until 120 "Prometheus never saw the 400 standing listings" \
    equals 'sum(reputation_blacklist_listed{job="reputation"})' 400
wait_until 60 "the standing listings' info alert never fired" \
    equals 'count(ALERTS{alertname="ReputationBlacklistedAssets",alertstate="firing"})' 1
sleep 75
installed=$(total)
[ "$(notifications pager)" = 0 ] || fail "the installation paged: $(cat "$work/notified-pager.jsonl")"
[ "$installed" -le 3 ] || fail "the installation sent $installed notifications"
firing=$(query 'count(ALERTS{alertstate="firing"})')
echo "alertmanager: installation on 400 standing listings: $installed notification(s), no page; ${firing:-0} alert(s) firing"

# 2. A new listing pages once.
edit 's["listings"].append({"asset": "10.0.0.7", "blacklist": "Spamhaus DBL", "listed": now, "delisted": None})'
new_listing() { [ "$(notifications pager ReputationBlacklistListed)" -ge 1 ]; }
wait_until 120 "the new listing did not page" new_listing
sleep 20
[ "$(notifications pager)" = 1 ] || fail "the new listing paged $(notifications pager) times"
grep -q '"asset": "10.0.0.7"' "$work/notified-pager.jsonl" || fail "the page is not about 10.0.0.7"
echo "alertmanager: a new listing paged once"

# 3. A restart while listed sends nothing.
before=$(total)
kill -TERM "$exporter_pid"
wait "$exporter_pid" || true
start_exporter
wait_until 60 "the restarted exporter did not serve the listing again" \
    equals 'reputation_blacklist_listed{job="reputation",asset="10.0.0.7",blacklist="Spamhaus DBL"}' 1
sleep 45
[ "$(total)" = "$before" ] || fail "the restart sent notifications: $(tail -n 2 "$work"/notified-*.jsonl)"
equals 'count(ALERTS{alertname="ReputationBlacklistListed",alertstate="firing"})' 1 ||
    fail "the listing's alert did not stay firing across the restart"
echo "alertmanager: a restart while listed sent nothing, the alert stayed firing"

# 4. The delisting resolves within two evaluation intervals of the exporter serving it.
edit 'next(l for l in s["listings"] if l["blacklist"] == "Spamhaus DBL")["delisted"] = now'
served_zero() {
    local served
    served=$(curl -sf "http://127.0.0.1:$exporter_port/metrics") || return 1
    grep -q '^reputation_blacklist_listed{kind="ip",asset="10.0.0.7",blacklist="Spamhaus DBL"} 0$' <<<"$served"
}
wait_until 60 "the exporter never served the delisting" served_zero
delisted_at=$SECONDS
resolved() { [ -z "$(query 'ALERTS{alertname="ReputationBlacklistListed"}')" ]; }
wait_until 60 "the delisting never resolved the alert" resolved
took=$((SECONDS - delisted_at))
# A scrape (5s) to see it, two evaluations (5s each), one second of polling slack.
[ "$took" -le $((5 + 2 * evaluation + 1)) ] || fail "the delisting resolved ${took}s after the exporter served it"
echo "alertmanager: the delisting resolved ${took}s after the exporter served it"

# 5. 503s the retries get past send nothing.
before=$(total)
edit 's["flaky"] = True'
sleep 60
edit 's["flaky"] = False'
retried=$(query 'sum(reputation_api_requests_total{job="reputation",code="503"})')
[ "${retried%.*}" -ge 10 ] || fail "the API's 503s never reached the exporter ($retried)"
[ "$(query 'min(reputation_api_up{job="reputation"})')" = 1 ] || fail "a poll failed after its retries"
[ -z "$(query 'ALERTS{alertname="ReputationApiDown"}')" ] || fail "ReputationApiDown is pending or firing"
[ "$(total)" = "$before" ] || fail "503s that retries got past sent notifications"
echo "alertmanager: ${retried%.*} answers 503 that the retries got past sent nothing"
echo "alertmanager: passed"
