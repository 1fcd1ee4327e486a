#!/usr/bin/env bash
# The landing page as a person sees it: the exporter in --demo mode, its page loaded by a real
# headless Chromium (Debian's), the rendered DOM checked for the summary, the coloured cells,
# the blacklists, the schedule, the legend and the next steps with the address the page was
# reached at, and the screenshot (target/landing.png) checked for the colours a person sees;
# then an exporter with two accounts, one of them down, whose page must say why that one has no
# data and lead to the other's assets (target/landing-accounts.png). Everything listens on
# 127.0.0.1 and is stopped on exit.
#
# Usage: tests/e2e/landing.sh [path/to/reputation-exporter]
set -euo pipefail
cd "$(dirname "$0")/../.."

exporter_bin=${1:-target/debug/reputation-exporter}
e2e_name=landing
# shellcheck source=tests/e2e/lib.sh
. tests/e2e/lib.sh

port=$(free_port)
"$exporter_bin" --demo --web.listen-address "127.0.0.1:$port" >"$work/exporter.log" 2>&1 &
pids+=($!)
url="http://127.0.0.1:$port"

# Ready, and the first asset reports in (the demo turns them on).
listed() { curl -sf "$url/metrics" | grep -q '^reputation_blacklist_listed{.*} 1$'; }
wait_for "a blacklist listing from the demo's reports" 60 listed

chromium() {
    command chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$work/profile" "$@" 2>>"$work/chromium.log"
}
chromium --dump-dom "$url/" >"$work/dom.html" || fail "chromium could not load the page"

grep -q 'Demo mode' "$work/dom.html" || fail "demo mode is not said"
grep -Eq '[0-9]+ assets \([0-9]+ IP addresses, [0-9]+ domains\): <b>[0-9]+</b> listed on a blacklist' \
    "$work/dom.html" || fail "no summary line"
grep -q '<th>listed on</th>' "$work/dom.html" || fail "no blacklist column"
grep -q 'class="num bad"' "$work/dom.html" || fail "no cell coloured as bad"
grep -q 'href="/-/ready"' "$work/dom.html" || fail "no readiness link"
grep -Eq 'The lists are polled every 15s; the next poll is due in [0-9]+s' "$work/dom.html" ||
    fail "no poll schedule"
grep -q 'class="legend">Colours: Sender Score' "$work/dom.html" || fail "no legend"
grep -q '<a href="#next">Next steps</a>' "$work/dom.html" || fail "the demo banner has no next step"
grep -Fq "      - targets: [\"${url#http://}\"]" "$work/dom.html" && grep -Fq "          account: main</pre>" "$work/dom.html" ||
    fail "no scrape configuration for the address the page was opened at"
grep -q '<meta http-equiv="refresh" content="30">' "$work/dom.html" || fail "the page does not refresh"
if grep -q '<script' "$work/dom.html"; then fail "the page has a script"; fi

mkdir -p target
chromium --screenshot="$PWD/target/landing.png" --window-size=1280,1024 "$url/" ||
    fail "no screenshot"
# What the screenshot shows: the whole window, with the demo banner and the Sender Score cells
# coloured bad and good as the legend says (the page's own colours, in pixels of their own).
python3 tests/e2e/png_colours.py target/landing.png fff3cd f8d7da d4edda >"$work/shot.txt" ||
    fail "the screenshot cannot be read"
[ "$(head -n 1 "$work/shot.txt")" = 1280x1024 ] || fail "the screenshot is $(head -n 1 "$work/shot.txt")"
for colour in fff3cd f8d7da d4edda; do
    pixels=$(awk -v c="$colour" '$1 == c {print $2}' "$work/shot.txt")
    [ "${pixels:-0}" -ge 200 ] || fail "the screenshot shows $pixels pixels of #$colour"
done
echo "landing: the screenshot shows the demo banner and cells coloured bad and good ($(tr '\n' ' ' <"$work/shot.txt"))"

# Two accounts: `up` polls a simulated API, `down` a port where nothing listens.
simulated up_url "$exporter_bin" 12
cat >"$work/accounts.toml" <<TOML
[poll]
interval = "1m"

[backoff]
max_elapsed = "1s"

[accounts.up]
base_url = "$up_url"
token = "demo-token"

[accounts.down]
base_url = "http://127.0.0.1:$(free_port)"
token = "demo-token"
TOML
port=$(free_port)
"$exporter_bin" --config.file "$work/accounts.toml" --web.listen-address "127.0.0.1:$port" \
    >"$work/accounts.log" 2>&1 &
pids+=($!)
url="http://127.0.0.1:$port"
wait_for "the two accounts polled" 60 curl -sf -o /dev/null "$url/-/ready"
chromium --dump-dom "$url/" >"$work/accounts.html" || fail "chromium could not load the page"
down_row=$(grep -o '<tr><td><a href="/?account=down">down</a>.*' "$work/accounts.html" | sed 's#</tr>.*##')
[ -n "$down_row" ] || fail "no row for the account that is down"
grep -q 'no data yet: ip-list: connection refused; domain-list: connection refused' <<<"$down_row" ||
    fail "the down account does not say why it has no data: $down_row"
if grep -q 'num good' <<<"$down_row"; then fail "green cells for an account without data"; fi
grep -q 'href="/?account=up"' "$work/accounts.html" || fail "no link to the up account's page"
grep -q 'class="legend">Colours' "$work/accounts.html" || fail "no legend"
grep -q '<th class="num">next poll in</th>' "$work/accounts.html" || fail "no next poll column"
chromium --dump-dom "$url/?account=up" >"$work/up.html" || fail "chromium could not load /?account=up"
grep -q '<h2>Account up</h2>' "$work/up.html" || fail "no account heading"
grep -q 'Assets, worst first' "$work/up.html" || fail "the up account's assets are not shown"
grep -q '<td>192.0.2.1</td>' "$work/up.html" || fail "192.0.2.1 is not on the up account's page"
chromium --screenshot="$PWD/target/landing-accounts.png" --window-size=1280,600 "$url/" ||
    fail "no screenshot of the accounts"
echo "landing: passed (screenshots in target/landing.png, target/landing-accounts.png)"
