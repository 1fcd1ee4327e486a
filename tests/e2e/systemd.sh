#!/usr/bin/env bash
# The systemd unit without running it under systemd: `systemd-analyze verify` on the shipped
# unit (ExecStart pointed at the built binary), and its sandbox against what the binary really
# does: every system call of a demo run with scrapes, a reload (SIGHUP) and a backfill, recorded
# with `strace -f`, must be allowed by the unit's SystemCallFilter lines as
# `systemd-analyze syscall-filter` expands their sets (a call outside them would kill the
# service). The unit must keep its hardening and reload with SIGHUP. Everything listens on
# 127.0.0.1 and is stopped on exit.
#
# Usage: tests/e2e/systemd.sh [path/to/reputation-exporter]
set -euo pipefail
cd "$(dirname "$0")/../.."

exporter_bin=$(realpath "${1:-target/debug/reputation-exporter}")
e2e_name=systemd
# shellcheck source=tests/e2e/lib.sh
. tests/e2e/lib.sh

unit=deploy/systemd/reputation-exporter.service
for directive in 'DynamicUser=yes' 'NoNewPrivileges=yes' 'ProtectSystem=strict' \
    'PrivateDevices=yes' 'RestrictAddressFamilies=AF_INET AF_INET6' 'MemoryDenyWriteExecute=yes' \
    'SystemCallArchitectures=native' 'ExecReload=/bin/kill -HUP $MAINPID'; do
    grep -qxF "$directive" "$unit" || fail "the unit lost $directive"
done

# systemd-analyze verify, with the binary where ExecStart says it is.
mkdir -p "$work/units"
sed -e "s#^ExecStart=/usr/local/bin/reputation-exporter#ExecStart=$exporter_bin#" \
    "$unit" >"$work/units/reputation-exporter.service"
SYSTEMD_LOG_LEVEL=notice systemd-analyze verify --man=no "$work/units/reputation-exporter.service" \
    >"$work/verify.log" 2>&1 || fail "systemd-analyze verify failed: $(cat "$work/verify.log")"
if grep -v -e 'credential' -e '^$' "$work/verify.log" | grep -q .; then
    fail "systemd-analyze verify complains: $(cat "$work/verify.log")"
fi
echo "systemd: systemd-analyze verify passes"

# The system calls the unit allows: each SystemCallFilter line, in order, adds (or with ~
# removes) its sets and calls.
allowed=$(python3 - "$unit" <<'PY'
import subprocess, sys
allowed, denied = set(), set()
def expand(name):
    if not name.startswith("@"):
        return {name}
    out = subprocess.run(["systemd-analyze", "syscall-filter", name], capture_output=True, text=True, check=True).stdout
    calls = set()
    for line in out.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or line == name:
            continue
        calls |= expand(line) if line.startswith("@") else {line}
    return calls
for line in open(sys.argv[1]):
    line = line.strip()
    if not line.startswith("SystemCallFilter="):
        continue
    value = line.split("=", 1)[1]
    deny = value.startswith("~")
    for name in value.lstrip("~").split():
        (denied if deny else allowed).update(expand(name))
print("\n".join(sorted(allowed - denied)))
PY
)
[ -n "$allowed" ] || fail "the unit allows no system call"

# A demo run under strace: scrapes, a reload, a backfill.
port=$(free_port)
strace -f -qq -o "$work/serve.strace" "$exporter_bin" --demo --web.listen-address "127.0.0.1:$port" \
    >"$work/serve.log" 2>&1 &
pids+=($!)
deadline=$((SECONDS + 60))
until curl -sf "http://127.0.0.1:$port/metrics" | grep '^reputation_asset_tag_info{' >/dev/null; do
    [ "$SECONDS" -lt "$deadline" ] || fail "the traced exporter never served report series"
    sleep 1
done
curl -sf -o /dev/null -H 'Accept-Encoding: gzip' "http://127.0.0.1:$port/metrics"
curl -sf -o /dev/null "http://127.0.0.1:$port/"
traced=$(pgrep -P "${pids[0]}")
traced=${traced%%$'\n'*}
[ -n "$traced" ] || fail "no exporter under strace"
kill -HUP "$traced"
until grep -q 'configuration reloaded' "$work/serve.log"; do
    [ "$SECONDS" -lt "$deadline" ] || fail "no reload under strace"
    sleep 0.5
done
curl -sf -o /dev/null "http://127.0.0.1:$port/metrics"
curl -sf -o /dev/null -X POST "http://127.0.0.1:$port/-/reload"
kill -TERM "$traced"
wait "${pids[0]}" || fail "the traced exporter did not stop cleanly on SIGTERM"
strace -f -qq -o "$work/backfill.strace" "$exporter_bin" backfill --demo --output "$work/history.om" \
    >"$work/backfill.log" 2>&1 || fail "the traced backfill failed"

used=$(cat "$work/serve.strace" "$work/backfill.strace" |
    sed -n -E 's/^[0-9]+ +([a-z0-9_]+)\(.*/\1/p; s/^[0-9]+ +<\.\.\. ([a-z0-9_]+) resumed>.*/\1/p' | sort -u)
[ "$(wc -l <<<"$used")" -gt 20 ] || fail "strace recorded almost nothing: $(head -n 5 "$work/serve.strace")"
outside=$(comm -23 <(echo "$used") <(echo "$allowed" | sort -u))
[ -z "$outside" ] || fail "system calls the unit's SystemCallFilter would refuse: $(echo $outside)"
echo "systemd: the $(wc -l <<<"$used") system calls of a demo run with scrapes, reloads and a backfill are all allowed by SystemCallFilter"
echo "systemd: passed"
