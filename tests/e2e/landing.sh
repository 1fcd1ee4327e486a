#!/usr/bin/env bash
# The landing page as a person sees it: the exporter in --demo mode, its page loaded by a real
# headless Chromium (Debian's), the rendered DOM checked for the summary, the coloured cells
# and the blacklists, and a screenshot left in target/landing.png. Everything listens on
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
deadline=$((SECONDS + 60))
until curl -sf "$url/metrics" | grep '^reputation_blacklist_listed{.*} 1$' >/dev/null; do
    [ "$SECONDS" -lt "$deadline" ] || fail "no blacklist listing within 60 s"
    sleep 1
done

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
if grep -q '<script' "$work/dom.html"; then fail "the page has a script"; fi

mkdir -p target
chromium --screenshot="$PWD/target/landing.png" --window-size=1280,1024 "$url/" ||
    fail "no screenshot"
[ -s target/landing.png ] || fail "empty screenshot"
echo "landing: passed (screenshot in target/landing.png)"
