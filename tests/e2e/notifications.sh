#!/usr/bin/env bash
# What a page says, as on call receives it: an exporter polling a fleet API this script
# controls (tests/e2e/fleet_api.py; the defaults: the listed assets' reports), a real Prometheus with the
# shipped scrape job and rules (at a compressed pace), a real Alertmanager with the shipped
# configuration and templates sending real e-mail to an SMTP server on loopback
# (tests/e2e/smtp_sink.py, aiosmtpd) and Slack messages and webhooks to a local receiver.
#
# 1. A new listing on a list the table knows, spelled as a service spells it ("BARRACUDA"):
#    one e-mail, parsed with Python's e-mail parser, whose text and HTML name the asset, its
#    host names and owner tag, the list, since when, the policy in words, what to do and the
#    removal page with the asset filled in, and the runbook; the same in the Slack message and
#    the webhook's annotations.
# 2. A listing on a list nobody knows pages, saying that the exporter knows nothing of it.
# 3. A listing on a list that has shut down (SORBS) is served as such and never pages.
# 4. The HTML mail as a person sees it: rendered by headless Chromium, its removal button and
#    the critical border in the screenshot (target/notification.png).
# 5. The delisting sends the resolution by e-mail.
#
# Usage: tests/e2e/notifications.sh [path/to/reputation-exporter]
set -euo pipefail
cd "$(dirname "$0")/../.."

exporter_bin=$(realpath "${1:-target/debug/reputation-exporter}")
e2e_name=notifications
# shellcheck source=tests/e2e/lib.sh
. tests/e2e/lib.sh

evaluation=5
poll=5
keep=15
# metrics.max_age: the exporter's default here.
max_age=3600

# Twelve addresses, nothing listed.
echo '{"assets": 12, "listings": [], "flaky": false}' >"$work/fleet.json"
python3 tests/e2e/fleet_api.py "$work/fleet.json" "$work/api.port" >"$work/api.log" 2>&1 &
pids+=($!)
webhook_port=$(free_port)
python3 tests/e2e/webhook_sink.py "$work" "$webhook_port" >"$work/webhook.log" 2>&1 &
pids+=($!)
/usr/bin/python3 tests/e2e/smtp_sink.py "$work/mail" "$work/smtp.port" >"$work/smtp.log" 2>&1 &
pids+=($!)
wait_for --every 0.1 "the fleet API's port" 10 test -s "$work/api.port"
wait_for --every 0.1 "the SMTP server's port" 10 test -s "$work/smtp.port"

exporter_port=$(free_port)
REPUTATION_EXPORTER_API__BASE_URL="http://127.0.0.1:$(cat "$work/api.port")" \
REPUTATION_EXPORTER_API__TOKEN=e2e-token \
REPUTATION_EXPORTER_POLL__INTERVAL=${poll}s \
REPUTATION_EXPORTER_ASSET_REPORTS__INTERVAL=1h \
REPUTATION_EXPORTER_STATE__ENABLED=false \
    "$exporter_bin" --web.listen-address "127.0.0.1:$exporter_port" >"$work/exporter.log" 2>&1 &
pids+=($!)

start_alertmanager "$webhook_port" "$(cat "$work/smtp.port")"
compressed_rules "$work/rules"
compressed_prometheus "127.0.0.1:$exporter_port"
prometheus_port=$(free_port)
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/prometheus-data" \
    --web.listen-address="127.0.0.1:$prometheus_port" --query.lookback-delta=20s \
    >"$work/prometheus.log" 2>&1 &
pids+=($!)
query() { first_value "http://127.0.0.1:$prometheus_port" "$1"; }
equals() { [ "$(query "$1")" = "$2" ]; }

wait_for "Prometheus seeing the twelve assets" 60 \
    equals 'count(reputation_asset_info{job="reputation"})' 12
list_on 10.0.0.3 "BARRACUDA"
list_on 10.0.0.4 "SORBS DUHL"
list_on 10.0.0.5 "Nightwatch RBL"

# mailed N: at least N messages have been received.
mailed() { [ "$(find "$work/mail" -name '*.eml' | wc -l)" -ge "$1" ]; }
wait_for "the e-mails of the two listings that page (a poll, a report, group_wait)" 120 mailed 2
# Past another group_wait: a page for the SORBS listing would have come by then.
sleep 35

# 1-3. The messages, read with Python's e-mail parser; the Slack messages and webhooks.
python3 - "$work" <<'PY' || fail "the notifications do not say what a page must"
import email, email.policy, glob, json, sys
work = sys.argv[1]
mails = [email.message_from_binary_file(open(f, "rb"), policy=email.policy.default)
         for f in sorted(glob.glob(f"{work}/mail/*.eml"))]
by_asset = {}
for m in mails:
    subject = m["Subject"]
    assert "10.0.0.4" not in subject, f"the SORBS listing paged: {subject}"
    asset = subject.rsplit(": ", 1)[-1]
    assert asset not in by_asset, f"two e-mails for {asset}: {subject}"
    by_asset[asset] = m
assert set(by_asset) == {"10.0.0.3", "10.0.0.5"}, sorted(by_asset)

barracuda = by_asset["10.0.0.3"]
assert barracuda["Subject"] == "[FIRING:1] ReputationBlacklistListed on BARRACUDA (main): 10.0.0.3", barracuda["Subject"]
text = barracuda.get_body(("plain",)).get_content()
html = barracuda.get_body(("html",)).get_content()
removal = "https://www.barracudacentral.org/rbl/removal-request/10.0.0.3"
for line in ["ip 10.0.0.3: Asset newly listed on a blacklist.",
             "Host names: mta3.example.com",
             "Owner: team-transactional",
             "Blacklist: BARRACUDA",
             "Policy: Removal on request, reviewed by a person.",
             "What to do: Fill in Barracuda's removal request form",
             f"Removal: {removal}",
             "Runbook: https://github.com/reputation-exporter/reputation-exporter/blob/main/docs/runbook.md#reputationblacklistlisted"]:
    assert line in text, f"the text mail lacks {line!r}:\n{text}"
since = [l for l in text.splitlines() if l.startswith("Listed since: ")]
assert since and since[0].startswith("Listed since: 20"), text
assert f'href="{removal}"' in html, html
for words in ["mta3.example.com", "team-transactional", "Removal on request, reviewed by a person.", "Removal page"]:
    assert words in html, f"the HTML mail lacks {words!r}"
open(f"{work}/notification.html", "w").write(html)
# The sample README.md and docs/blacklists.md show is what arrives, but for its times.
import re
def timeless(t):
    t = re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \+0000 UTC", "DATE", t)
    return re.sub(r"(\d+m )?\d+(\.\d+)?s ago", "N ago", t).strip()
received = timeless(f"Subject: {barracuda['Subject']}\n\n{text}")
for doc in ["README.md", "docs/blacklists.md"]:
    sample = open(doc).read().split("```text\nSubject: [FIRING:1] ReputationBlacklistListed", 1)[1].split("```", 1)[0]
    sample = timeless("Subject: [FIRING:1] ReputationBlacklistListed" + sample)
    assert sample == received, f"{doc}'s sample is not what arrives:\n{sample}\n---\n{received}"

unknown = by_asset["10.0.0.5"].get_body(("plain",)).get_content()
assert "Policy: reputation-exporter knows nothing of this list" in unknown, unknown
assert "Removal:" not in unknown, unknown

slack = [json.loads(l) for l in open(f"{work}/notified-slack.jsonl")]
attachments = [a for s in slack for a in s["attachments"]]
titles = [a["title"] for a in attachments]
assert barracuda["Subject"] in titles, titles
body = next(a["text"] for a in attachments if a["title"] == barracuda["Subject"])
for words in ["ip 10.0.0.3 was listed on BARRACUDA", "Host names: mta3.example.com", "Owner: team-transactional",
              f"<{removal}|Removal page>", "Policy: Removal on request, reviewed by a person."]:
    assert words in body, f"the Slack message lacks {words!r}:\n{body}"

hooks = [a for l in open(f"{work}/notified-pager.jsonl") for a in json.loads(l)["alerts"]]
hook = next(a for a in hooks if a["labels"].get("asset") == "10.0.0.3")
annotations = hook["annotations"]
assert annotations["removal_url"] == removal, annotations
assert annotations["hostnames"] == "mta3.example.com" and annotations["owner"] == "team-transactional", annotations
assert not any(a["labels"].get("asset") == "10.0.0.4" for a in hooks), "the SORBS listing paged"
PY
equals 'max(reputation_blacklist_listed{job="reputation", asset="10.0.0.4", blacklist="SORBS DUHL"})' 1 ||
    fail "the SORBS listing is not served"
equals 'count(reputation_blacklist_info{job="reputation", blacklist="SORBS DUHL", list="SORBS", policy="gone"})' 1 ||
    fail "the SORBS listing is not served as gone"
[ -z "$(query 'ALERTS{asset="10.0.0.4"}')" ] || fail "the SORBS listing raised an alert"
echo "notifications: a known list's page names its removal page, policy, owner and host names in e-mail, Slack and webhook; an unknown list pages saying so; a gone list does not page"

# 4. The HTML mail as a person sees it.
chromium() {
    command chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --no-default-browser-check --disable-background-networking --disable-sync \
        --user-data-dir="$work/profile" "$@" 2>>"$work/chromium.log"
}
mkdir -p target
chromium --screenshot="$PWD/target/notification.png" --window-size=800,700 "file://$work/notification.html" ||
    fail "chromium could not render the e-mail"
python3 tests/e2e/png_colours.py target/notification.png 1f6feb c0392b >"$work/shot.txt" ||
    fail "the screenshot could not be read"
python3 - "$work/shot.txt" <<'PY' || fail "the rendered e-mail lacks its removal button or its critical border: $(cat "$work/shot.txt")"
import sys
lines = open(sys.argv[1]).read().split("\n")
counts = dict(line.split() for line in lines[1:] if line)
assert int(counts["1f6feb"]) > 1000, counts   # the removal button, about 120 x 34 pixels
assert int(counts["c0392b"]) > 600, counts    # the border, 6 pixels wide down the alert
PY
chromium --dump-dom "file://$work/notification.html" >"$work/mail-dom.html" || fail "chromium could not load the e-mail"
grep -q "barracudacentral.org/rbl/removal-request/10.0.0.3" "$work/mail-dom.html" ||
    fail "the rendered e-mail lacks the removal link"
echo "notifications: the HTML mail rendered in Chromium shows the removal button and the critical border (target/notification.png)"

# 5. The delisting resolves the page by e-mail.
delist 10.0.0.3 BARRACUDA
wait_for "the resolution's e-mail" 120 mailed 3
python3 - "$work" <<'PY' || fail "the resolution's e-mail is not the listing's"
import email, email.policy, glob, sys
work = sys.argv[1]
last = max(glob.glob(f"{work}/mail/*.eml"), key=lambda f: int(f.rsplit("/", 1)[1].split(".")[0]))
m = email.message_from_binary_file(open(last, "rb"), policy=email.policy.default)
assert m["Subject"].startswith("[RESOLVED] ReputationBlacklistListed on BARRACUDA (main)"), m["Subject"]
text = m.get_body(("plain",)).get_content()
assert "- ReputationBlacklistListed 10.0.0.3 on BARRACUDA" in text, text
PY
echo "notifications: the delisting sent the resolution by e-mail"
