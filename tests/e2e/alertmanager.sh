#!/usr/bin/env bash
# End to end, as an on-call engineer lives with the alerts in the deployment the project ships:
# two replicas of the exporter polling a fleet API this script controls
# (tests/e2e/fleet_api.py), asset reports on at a 1h round (so a listing is named only because
# reports follow the list), scraped by a real Prometheus with the shipped scrape.yml (its two
# replicas and `account` label; intervals shortened, addresses filled in) and the shipped
# alerts (`for:` and `keep_firing_for:` shortened, ReputationDataStale's threshold and the pages'
# hold shortened with metrics.max_age, nothing else changed), a real Alertmanager with the shipped
# configuration (its webhook URLs pointed here, its group_interval shortened), and a webhook
# receiver that records every notification. Time is compressed: polls every 5s, Prometheus'
# query look-back 20s, metrics.max_age 60s.
#
# 1. A new installation on 200 assets with 400 standing listings pages nothing and sends at
#    most a handful of notifications.
# 2. A new listing pages once (not once per replica), naming the blacklist, within a poll plus
#    a minute.
# 3. A replica restarting sends nothing; a replica down while the other serves is a ticket,
#    not a page. A rolling restart (one replica after the other, each warm from its own state
#    store, as the shipped StatefulSet rolls) neither resolves the open page nor pages again.
# 4. Prometheus down for longer than its query look-back neither resolves the page nor pages
#    it again.
# 5. The delisting resolves the alert within two evaluations and keep_firing_for of the
#    exporters serving it; one page, one resolution, and no count page after it (the asset's
#    report already names two standing listings: a delisting once paged it again, unnamed).
# 6. An API outage past metrics.max_age pages once (ReputationDataStale): the listing paging
#    before it stays firing in Prometheus (its alert holds what was served while no replica
#    serves the lists), though its series go and come back; nothing is resolved or paged again.
# 7. Reports split over the replicas (asset_reports.replica 1/2 and 2/2): a new listing pages
#    once, its delisting resolves once.
# 8. One exporter: a new listing pages within a poll plus a minute naming the blacklist, and
#    once: no unnamed count page follows it (as once it did, 88 s later) while the count's
#    `for:` and its report's retries could bring one.
# 9. That exporter restarted mid-listing, warm from its state store (each replica has its own),
#    the delisting happening while it is down: nothing pages, the first poll resolves it.
# 10. 503s that the retries get past send nothing, and ReputationApiDown is not even pending.
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
poll=5
max_age=60
# keep_firing_for, compressed as the rest: three scrapes.
keep=15
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
python3 tests/e2e/fleet_api.py "$work/fleet.json" "$work/api.port" >"$work/api.log" 2>&1 &
pids+=($!)
wait_for --every 0.1 "the fleet API's port" 10 test -s "$work/api.port"
api_port=$(cat "$work/api.port")

# The webhook receiver: every notification, one JSON line per receiver; and an SMTP server for
# the pager's e-mail (tests/e2e/notifications.sh reads them).
webhook_port=$(free_port)
python3 tests/e2e/webhook_sink.py "$work" "$webhook_port" >"$work/webhook.log" 2>&1 &
pids+=($!)
/usr/bin/python3 tests/e2e/smtp_sink.py "$work/mail" "$work/smtp.port" >"$work/smtp.log" 2>&1 &
pids+=($!)
wait_for --every 0.1 "the SMTP server's port" 10 test -s "$work/smtp.port"

# The two replicas: one configuration (asset_reports.replica aside, in step 6).
replica_ports=("$(free_port)" "$(free_port)")
replica_pids=("" "")
# start_replica N [SHARD]: replica N (1 or 2) with asset_reports.replica = SHARD (1/1 by default).
start_replica() {
    local n=$1 shard=${2:-1/1}
    REPUTATION_EXPORTER_API__BASE_URL="http://127.0.0.1:$api_port" \
    REPUTATION_EXPORTER_API__TOKEN=e2e-token \
    REPUTATION_EXPORTER_POLL__INTERVAL=${poll}s \
    REPUTATION_EXPORTER_METRICS__MAX_AGE=${max_age}s \
    REPUTATION_EXPORTER_ASSET_REPORTS__ENABLED=true \
    REPUTATION_EXPORTER_ASSET_REPORTS__INTERVAL=1h \
    REPUTATION_EXPORTER_ASSET_REPORTS__CONCURRENCY=16 \
    REPUTATION_EXPORTER_ASSET_REPORTS__REPLICA="$shard" \
    REPUTATION_EXPORTER_BACKOFF__INITIAL_DELAY=100ms \
    REPUTATION_EXPORTER_BACKOFF__MAX_DELAY=500ms \
    REPUTATION_EXPORTER_STATE__PATH="$work/state-$n" \
        "$exporter_bin" --web.listen-address "127.0.0.1:${replica_ports[$((n - 1))]}" \
        >>"$work/exporter-$n.log" 2>&1 &
    replica_pids[$((n - 1))]=$!
    pids+=($!)
}
stop_replica() {
    local pid=${replica_pids[$(($1 - 1))]}
    kill -TERM "$pid"
    wait "$pid" || true
}
start_replica 1
start_replica 2

# Alertmanager with the shipped configuration, its receivers pointed at the webhook and the
# SMTP server.
start_alertmanager "$webhook_port" "$(cat "$work/smtp.port")"

# Prometheus with the shipped scrape job, alerts and recording rules, every `for:` shortened to
# 20s, `keep_firing_for:` to three scrapes, the 5-minute groups to the poll's compressed pace,
# ReputationDataStale's threshold (45 of metrics.max_age's 60 minutes) to 30 of its 60 seconds,
# and the pages' hold while no replica serves the lists to metrics.max_age's 60 seconds.
compressed_rules "$work/rules"
compressed_prometheus "127.0.0.1:${replica_ports[0]}" "127.0.0.1:${replica_ports[1]}"
prometheus_port=$(free_port)
prometheus_pid=
start_prometheus() {
    prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/prometheus-data" \
        --web.listen-address="127.0.0.1:$prometheus_port" --query.lookback-delta=20s \
        >>"$work/prometheus.log" 2>&1 &
    prometheus_pid=$!
    pids+=($!)
}
start_prometheus

# query PROMQL: the first value of the answer, empty when there is none (or no answer yet).
query() { first_value "http://127.0.0.1:$prometheus_port" "$1"; }
equals() { [ "$(query "$1")" = "$2" ]; }
# notifications RECEIVER [ALERTNAME [ASSET [STATUS]]]: how many notifications reached the
# receiver with an alert of that name (any when empty), about that asset (any when empty), in
# that status (firing by default) in them; all of them without more than the receiver. A
# notification counts as firing only for the alerts its group's previous notification did not
# have firing: Alertmanager sends a group again when an old resolved alert joins it (Prometheus
# re-sends resolved alerts for 15 minutes), which tells on call nothing new.
notifications() {
    local file="$work/notified-$1.jsonl"
    [ -f "$file" ] || { echo 0; return; }
    python3 - "$file" "$#" "${2:-}" "${3:-}" "${4:-firing}" <<'PY'
import json, sys
given, name, asset, status = int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
def wanted(a):
    return ((not name or a["labels"]["alertname"] == name) and a["status"] == status
            and (not asset or a["labels"].get("asset") == asset))
count, last = 0, {}
for line in open(sys.argv[1]):
    n = json.loads(line)
    firing = {a["fingerprint"] for a in n["alerts"] if a["status"] == "firing"}
    new = firing - last.get(n["groupKey"], set())
    last[n["groupKey"]] = firing
    if given == 1:
        count += 1
    elif status == "firing":
        count += any(wanted(a) and a["fingerprint"] in new for a in n["alerts"])
    else:
        count += any(wanted(a) for a in n["alerts"])
print(count)
PY
}
total() { echo $(($(notifications pager) + $(notifications tickets) + $(notifications transactional-pager))); }
# sent: one line per notification so far, in order: receiver, status, its alerts.
sent() {
    python3 - "$work" <<'PY'
import glob, json, sys
for f in sorted(glob.glob(f"{sys.argv[1]}/notified-*.jsonl")):
    if f.endswith("notified-slack.jsonl"):
        continue
    for line in open(f):
        n = json.loads(line)
        alerts = ", ".join(f'{a["labels"]["alertname"]} {a["labels"].get("asset", "")} {a["status"]}' for a in n["alerts"])
        print(f'{n["receiver"]} {n["status"]}: {alerts}')
PY
}
# pages [ALERTNAME [ASSET]]: the notifications with a firing alert (of that name, about that
# asset) that reached a pager, whichever the team routing chose; a resolution is no page.
pages() {
    echo $(($(notifications pager "${1:-}" "${2:-}") + $(notifications transactional-pager "${1:-}" "${2:-}")))
}
# active ALERTNAME ASSET: Alertmanager holds that alert about that asset, unresolved.
active() {
    curl -sf "http://127.0.0.1:$alertmanager_port/api/v2/alerts?active=true&silenced=false&inhibited=false" |
        python3 -c '
import json, sys
name, asset = sys.argv[1], sys.argv[2]
sys.exit(0 if any(a["labels"]["alertname"] == name and a["labels"].get("asset") == asset
                  for a in json.load(sys.stdin)) else 1)' "$1" "$2"
}
# The listing's page: named, one per account, never per replica.
page_is_named() {
    python3 - "$work" "$1" "$2" <<'PY'
import glob, json, sys
work, asset, blacklist = sys.argv[1:4]
alerts = [a for f in glob.glob(f"{work}/notified-*pager.jsonl") for line in open(f)
          for a in json.loads(line)["alerts"] if a["labels"].get("asset") == asset and a["status"] == "firing"]
assert alerts, "no page"
for a in alerts:
    labels = a["labels"]
    assert labels["alertname"] == "ReputationBlacklistListed", labels
    assert labels["blacklist"] == blacklist, labels
    assert labels.get("account") == "main" and "instance" not in labels, labels
PY
}
# served_everywhere SERIES VALUE: every running replica serves that sample.
served_everywhere() {
    local port served
    for port in "${serving[@]}"; do
        served=$(curl -sf "http://127.0.0.1:$port/metrics") || return 1
        grep -qxF "$1 $2" <<<"$served" || return 1
    done
}
serving=("${replica_ports[@]}")
# `let_pass SECONDS WHY`: lets wall time pass that the step is about: nothing may be sent in it
# that Alertmanager would send by then (a group's first notification after group_wait, 30s for
# pages and 1m for tickets; a change to it after group_interval, 20s here).
let_pass() { sleep "$1"; }
# `reports_served N`: Prometheus sees N report series (one per asset with a report) from the
# replicas it scrapes. Restarted warm, a replica serves the reports its store kept at once, and
# only those of the assets it selects (its shard); the ones it lacks are fetched at once.
reports_served() { equals 'count(reputation_blacklistings_named{job="reputation"})' "$1"; }

# 1. The installation: every listing in Prometheus, then past every group_wait.
wait_for "Prometheus seeing the 400 standing listings from both replicas" 120 \
    equals 'count(reputation_blacklist_listed{job="reputation"} == 1)' 800
wait_for "the standing listings' info alert firing, once for the account" 60 \
    equals 'count(ALERTS{alertname="ReputationBlacklistedAssets",alertstate="firing",account="main"})' 1
let_pass 75 "past every group_wait of the installation's alerts: no page, at most a few tickets"
installed=$(total)
[ "$(pages)" = 0 ] || fail "the installation paged: $(cat "$work"/notified-*pager.jsonl)"
[ "$installed" -le 3 ] || fail "the installation sent $installed notifications"
firing=$(query 'count(ALERTS{alertstate="firing"})')
echo "alertmanager: two replicas installed on 400 standing listings: $installed notification(s), no page; ${firing:-0} alert(s) firing"
! grep -q "level=warn" "$work/alertmanager.log" ||
    fail "Alertmanager warned about the shipped configuration: $(grep "level=warn" "$work/alertmanager.log")"

# 2. A new listing pages once, naming the blacklist, within a poll plus a minute.
list_on 10.0.0.7 "Spamhaus DBL"
listed_at=$SECONDS
paged() { [ "$(pages "${1-ReputationBlacklistListed}" "${2-10.0.0.7}")" -ge 1 ]; }
wait_for "the new listing's page (a poll plus a minute)" $((poll + 60)) paged
took=$((SECONDS - listed_at))
let_pass 20 "a group_interval: a second page for the same listing would come by then"
[ "$(pages)" = 1 ] || fail "the new listing paged $(pages) times: $(cat "$work"/notified-*pager.jsonl)"
page_is_named 10.0.0.7 "Spamhaus DBL" || fail "the page does not name the blacklist once for the account"
echo "alertmanager: two replicas, a new listing paged once, ${took}s after the API showed it, naming the blacklist"

# 3. A replica restarting sends nothing; one down while the other serves is a ticket.
before=$(total)
stop_replica 1
start_replica 1
wait_for "the restarted replica serving the listing again" 60 \
    equals "reputation_blacklist_listed{job=\"reputation\",instance=\"127.0.0.1:${replica_ports[0]}\",asset=\"10.0.0.7\",blacklist=\"Spamhaus DBL\"}" 1
let_pass 30 "a page's group_wait: a notification the restart caused would come by then"
[ "$(total)" = "$before" ] || fail "a replica's restart sent notifications: $(sent | tail -n 2)"
stop_replica 2
serving=("${replica_ports[0]}")
ticket() { [ "$(notifications tickets ReputationExporterReplicaDown)" -ge 1 ]; }
wait_for "a replica down in the ticket queue" 150 ticket
[ "$(pages)" = 1 ] || fail "a replica down paged: $(tail -n 1 "$work"/notified-*pager.jsonl)"
start_replica 2
serving=("${replica_ports[@]}")
wait_for "replica 2 back" 60 \
    equals "up{job=\"reputation\",instance=\"127.0.0.1:${replica_ports[1]}\"}" 1
equals 'count(ALERTS{alertname="ReputationBlacklistListed",alertstate="firing"})' 1 ||
    fail "the listing's alert did not stay firing, once, across the replicas' restarts"
echo "alertmanager: a replica's restart sent nothing; a replica down was a ticket, not a page"
before=$(pages)
for n in 1 2; do
    stop_replica "$n"
    start_replica "$n"
    wait_for "replica $n serving the listing again after its turn in the rolling restart" 60 \
        equals "reputation_blacklist_listed{job=\"reputation\",instance=\"127.0.0.1:${replica_ports[$((n - 1))]}\",asset=\"10.0.0.7\",blacklist=\"Spamhaus DBL\"}" 1
done
let_pass 45 "two group_intervals after the rolling restart: a resolution or page it caused would come by then"
[ "$(pages)" = "$before" ] || fail "the rolling restart paged: $(sent | tail -n 2)"
[ "$(notifications pager ReputationBlacklistListed 10.0.0.7 resolved)" = 0 ] ||
    fail "the rolling restart resolved the page"
equals 'count(ALERTS{alertname="ReputationBlacklistListed",alertstate="firing"})' 1 ||
    fail "the listing's alert did not stay firing, once, across the rolling restart"
echo "alertmanager: a rolling restart of both replicas sent no page and resolved nothing"

# 4. Prometheus down for twice its query look-back: the page is neither resolved nor sent again.
before=$(pages)
kill -TERM "$prometheus_pid"
wait "$prometheus_pid" || true
let_pass 40 "Prometheus down for twice its query look-back (20s)"
start_prometheus
wait_for "Prometheus back" 60 curl -sf -o /dev/null "http://127.0.0.1:$prometheus_port/-/ready"
let_pass 45 "an evaluation and two group_intervals: a resolution or page the restart caused would come by then"
[ "$(pages)" = "$before" ] || fail "Prometheus' restart paged again: $(tail -n 1 "$work"/notified-*pager.jsonl)"
[ "$(notifications pager ReputationBlacklistListed 10.0.0.7 resolved)" = 0 ] ||
    fail "Prometheus' restart resolved the page"
equals 'count(ALERTS{alertname="ReputationBlacklistListed",alertstate="firing"})' 1 ||
    fail "the listing's alert did not stay firing across Prometheus' restart"
active ReputationBlacklistListed 10.0.0.7 || fail "Alertmanager no longer holds the page"
echo "alertmanager: Prometheus down 40s (look-back 20s): the page stayed, nothing sent"

# 5. The delisting resolves within two evaluations and keep_firing_for of the replicas serving
# it.
delist 10.0.0.7 "Spamhaus DBL"
wait_for "the replicas serving the delisting" 60 \
    served_everywhere 'reputation_blacklist_listed{kind="ip",asset="10.0.0.7",blacklist="Spamhaus DBL"}' 0
delisted_at=$SECONDS
resolved() { [ -z "$(query 'ALERTS{alertname="ReputationBlacklistListed"}')" ]; }
wait_for "the delisting resolving the alert" 60 resolved
took=$((SECONDS - delisted_at))
# A scrape (5s) to see it, two evaluations (5s each), keep_firing_for, one second of polling
# slack.
[ "$took" -le $((5 + 2 * evaluation + keep + 1)) ] || fail "the delisting resolved ${took}s after the replicas served it"
gone() { ! active ReputationBlacklistListed 10.0.0.7; }
gone_listing() { ! active ReputationBlacklistListed 10.0.0.8; }
wait_for "Alertmanager letting go of the resolved page" 30 gone
let_pass 30 "the count's for: and a page's group_wait after the delisting: a count page it caused would come by then"
[ "$(pages ReputationBlacklistListed 10.0.0.7)" = 1 ] || fail "the listing paged more than once"
[ "$(pages "" 10.0.0.7)" = 1 ] || fail "the delisting paged the asset again: $(sent)"
echo "alertmanager: the delisting resolved ${took}s after the replicas served it; one page, one resolution"

# 6. An API outage past metrics.max_age while a listing pages: one page for the outage, and the
# listing's page neither resolved nor sent again though its series go (max_age) and come back.
list_on 10.0.0.8 "SpamCop"
wait_for "the listing before the outage paging" $((poll + 60)) paged ReputationBlacklistListed 10.0.0.8
before=$(pages)
edit 's["down"] = True'
stale() { [ "$(pages ReputationDataStale)" -ge 1 ]; }
wait_for "the outage's page (ReputationDataStale)" 120 stale
series_gone() { [ -z "$(query 'reputation_blacklistings{asset="10.0.0.8"}')" ]; }
wait_for "the listing's series dropped at metrics.max_age" 120 series_gone
firing() { equals 'count(ALERTS{alertname="ReputationBlacklistListed",asset="10.0.0.8",alertstate="firing"})' 1; }
firing || fail "the listing's page did not stay firing in Prometheus when its series went"
edit 's["down"] = False'
back() { [ -n "$(query 'reputation_blacklistings{asset="10.0.0.8"}')" ]; }
wait_for "the listing's series back with the data" 60 back
firing || fail "the listing's page did not stay firing when its series came back"
not_stale() { [ -z "$(query 'ALERTS{alertname="ReputationDataStale"}')" ]; }
wait_for "the outage's page resolved" 60 not_stale
let_pass 45 "two group_intervals after the outage: anything it would send about the listing comes by then"
[ "$(pages)" = $((before + 1)) ] || fail "the outage paged $(($(pages) - before)) times; sent: $(sent)"
[ "$(pages ReputationDataStale)" = 1 ] || fail "the outage's page was not the one sent"
[ "$(notifications pager ReputationBlacklistListed 10.0.0.8 resolved)" = 0 ] ||
    fail "the outage resolved the listing's page"
[ "$(pages ReputationBlacklistListed 10.0.0.8)" = 1 ] || fail "the listing paged again after the outage"
delist 10.0.0.8 "SpamCop"
wait_for "the listing's delisting resolving it" 60 gone_listing
echo "alertmanager: an API outage past metrics.max_age paged once; the listing paging before it was held, not resolved or paged again"

# 7. Reports split over the replicas.
stop_replica 1
stop_replica 2
start_replica 1 1/2
start_replica 2 2/2
wait_for "the split replicas each serving the reports of its own shard, 200 between them" 60 \
    reports_served 200
before=$(pages)
list_on 10.0.0.9 "Spamhaus DBL"
listed_at=$SECONDS
wait_for "split reports: the new listing's page (a poll plus a minute)" $((poll + 60)) \
    paged "" 10.0.0.9
took=$((SECONDS - listed_at))
let_pass 30 "a page's group_wait: a second page from the other replica would come by then"
[ "$(pages)" = $((before + 1)) ] || fail "split reports: the new listing paged $(($(pages) - before)) times; sent: $(sent)"
page_is_named 10.0.0.9 "Spamhaus DBL" || fail "split reports: the page does not name the blacklist"
delist 10.0.0.9 "Spamhaus DBL"
resolved_split() { [ -z "$(query 'ALERTS{asset="10.0.0.9"}')" ]; }
wait_for "split reports: the delisting resolving the alert" 60 resolved_split
gone_split() { ! active ReputationBlacklistListed 10.0.0.9; }
wait_for "split reports: Alertmanager letting go of the resolved page" 30 gone_split
let_pass 20 "a group_interval: a page the delisting caused would come by then"
[ "$(pages)" = $((before + 1)) ] || fail "split reports: the delisting paged"
echo "alertmanager: reports split over the replicas, a new listing paged once (${took}s), its delisting resolved once"

# 8. One exporter, reports at 1h: a new listing pages within a poll plus a minute, named.
stop_replica 1
stop_replica 2
start_replica 1
serving=("${replica_ports[0]}")
wait_for "the single exporter serving every asset's report (its shard's kept, the rest fetched)" 60 \
    reports_served 200
before=$(pages)
list_on 10.0.0.11 "SpamCop"
listed_at=$SECONDS
wait_for "one exporter: the new listing's page (a poll plus a minute)" $((poll + 60)) \
    paged ReputationBlacklistListed 10.0.0.11
took=$((SECONDS - listed_at))
let_pass 100 "the count's for:, its report's retries and a group_interval: a second, unnamed page would come by then"
[ "$(pages)" = $((before + 1)) ] || fail "one exporter: the new listing paged $(($(pages) - before)) times; sent: $(sent)"
[ "$(pages ReputationAssetBlacklisted 10.0.0.11)" = 0 ] || fail "one exporter: the named listing was paged again from the count"
page_is_named 10.0.0.11 "SpamCop" || fail "one exporter: the page does not name the blacklist"
echo "alertmanager: one exporter with reports at 1h, a new listing paged ${took}s after the API showed it, naming SpamCop"

# 9. A restart mid-listing, warm from the exporter's state store, with the delisting happening
# while it is down: the page stays through the restart (the stored listing is served at once)
# and the first poll after the start resolves it; nothing is paged again.
before=$(pages)
stop_replica 1
delist 10.0.0.11 "SpamCop"
start_replica 1
restarted_at=$SECONDS
wait_for "the restarted exporter serving its stored state" 30 \
    grep -q 'serving what the state store kept' "$work/exporter-1.log"
gone_11() { ! active ReputationBlacklistListed 10.0.0.11; }
wait_for "the delisting during the restart resolving the page" 60 gone_11
took=$((SECONDS - restarted_at))
# The first poll (at start), its follow-up report, a scrape, two evaluations, keep_firing_for.
[ "$took" -le $((poll + 5 + 2 * evaluation + keep + 5)) ] ||
    fail "the delisting during the restart resolved ${took}s after the start"
let_pass 20 "a group_interval: a page the restart caused would come by then"
[ "$(pages)" = "$before" ] || fail "the restart paged: $(sent)"
echo "alertmanager: a restart mid-listing served its stored state; the delisting during it resolved ${took}s after the start, nothing paged"

# 10. 503s the retries get past send nothing (replica 2, stopped in 8, may still send its ticket;
# the outage of step 6 sent its own ApiDown tickets).
before=$(pages)
tickets_before=$(($(notifications tickets ReputationApiDown) + $(notifications tickets ReputationDataStale)))
edit 's["flaky"] = True'
let_pass 60 "a minute of 503s"
edit 's["flaky"] = False'
retried=$(query 'sum(reputation_api_requests_total{job="reputation",code="503"})')
[ "${retried%.*}" -ge 10 ] || fail "the API's 503s never reached the exporter ($retried)"
[ "$(query 'min(reputation_api_up{job="reputation"})')" = 1 ] || fail "a poll failed after its retries"
[ -z "$(query 'ALERTS{alertname="ReputationApiDown"}')" ] || fail "ReputationApiDown is pending or firing"
[ "$(pages)" = "$before" ] || fail "503s that retries got past paged: $(tail -n 1 "$work"/notified-*pager.jsonl)"
tickets_after=$(($(notifications tickets ReputationApiDown) + $(notifications tickets ReputationDataStale)))
[ "$tickets_after" = "$tickets_before" ] || fail "503s that retries got past sent a ticket; sent: $(sent)"
echo "alertmanager: ${retried%.*} answers 503 that the retries got past sent nothing"
echo "alertmanager: passed"
