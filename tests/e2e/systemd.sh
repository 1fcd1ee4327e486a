#!/usr/bin/env bash
# The systemd unit without running it under systemd: `systemd-analyze verify` on the shipped
# unit (ExecStart pointed at the built binary), and its sandbox against what the binary really
# does: every system call of a demo run with scrapes, a reload (SIGHUP) and a backfill, and of
# runs writing and reading the state store in $STATE_DIRECTORY (StateDirectory=), recorded
# with `strace -f`, must be allowed by the unit's SystemCallFilter lines as
# `systemd-analyze syscall-filter` expands their sets (a call outside them would kill the
# service). The unit must keep its hardening and reload with SIGHUP. The socket unit and its
# drop-in: verified the same way, and the exporter started as they start it, by
# `systemd-socket-activate` (systemd's own tool for socket-activating a command) with the
# drop-in's environment, on one socket per ListenStream= (moved to free loopback ports), and
# scraped on each. Everything listens on 127.0.0.1 and is stopped on exit.
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
    'SystemCallArchitectures=native' 'ExecReload=/bin/kill -HUP $MAINPID' \
    'StateDirectory=reputation-exporter'; do
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

# Socket activation: the socket unit, and the service with the drop-in's directives merged in
# (systemd merges a drop-in's sections into the unit's).
socket=deploy/systemd/reputation-exporter.socket
dropin=deploy/systemd/socket-activation.conf
grep -qxF 'Accept=no' "$socket" || fail "the socket unit must pass its listening socket (Accept=no)"
streams=$(sed -n 's/^ListenStream=//p' "$socket")
[ -n "$streams" ] || fail "the socket unit listens nowhere"
cp "$socket" "$work/units/"
cat "$work/units/reputation-exporter.service" "$dropin" >"$work/units/merged.service"
for unit_file in reputation-exporter.socket merged.service; do
    SYSTEMD_LOG_LEVEL=notice systemd-analyze verify --man=no "$work/units/$unit_file" \
        >"$work/verify-$unit_file.log" 2>&1 ||
        fail "systemd-analyze verify $unit_file failed: $(cat "$work/verify-$unit_file.log")"
    if grep -v -e 'credential' -e '^$' "$work/verify-$unit_file.log" | grep -q .; then
        fail "systemd-analyze verify $unit_file complains: $(cat "$work/verify-$unit_file.log")"
    fi
done
echo "systemd: systemd-analyze verify passes on the socket unit and the service with its drop-in"

# Started as the socket unit starts it: one socket per ListenStream= (plus one more, to show
# several are served), the drop-in's environment, no --web.listen-address.
environment=$(sed -n 's/^Environment=//p' "$dropin")
[ "$environment" = "REPUTATION_EXPORTER_WEB__SYSTEMD_SOCKET=true" ] ||
    fail "the drop-in no longer turns on web.systemd_socket: $environment"
activated_ports=()
listen_flags=()
for _ in $streams extra; do
    activated_ports+=("$(free_port)")
    listen_flags+=(-l "127.0.0.1:${activated_ports[-1]}")
done
systemd-socket-activate -E "$environment" "${listen_flags[@]}" "$exporter_bin" --demo \
    >"$work/activated.log" 2>&1 &
activated_pid=$!
pids+=("$activated_pid")
answers_on() {
    curl -sf --max-time 10 "http://127.0.0.1:$1/metrics" | grep -q '^reputation_exporter_build_info{'
}
for activated_port in "${activated_ports[@]}"; do
    wait_for --every 0.5 "the socket-activated exporter answering on $activated_port" 60 \
        answers_on "$activated_port"
    grep -q "msg=listening address=127.0.0.1:$activated_port " "$work/activated.log" ||
        fail "the socket-activated exporter does not say it listens on $activated_port"
done
echo "systemd: socket-activated, the exporter serves /metrics on each of the ${#activated_ports[@]} sockets passed"
kill -TERM "$activated_pid"
wait "$activated_pid" || fail "the socket-activated exporter did not stop cleanly on SIGTERM"

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
strace_pid=$!
pids+=("$strace_pid")
reports_served() { curl -sf "http://127.0.0.1:$port/metrics" | grep -q '^reputation_asset_tag_info{'; }
wait_for "the traced exporter serving report series" 60 reports_served
curl -sf -o /dev/null -H 'Accept-Encoding: gzip' "http://127.0.0.1:$port/metrics"
curl -sf -o /dev/null "http://127.0.0.1:$port/"
traced=$(pgrep -P "$strace_pid")
traced=${traced%%$'\n'*}
[ -n "$traced" ] || fail "no exporter under strace"
kill -HUP "$traced"
wait_for --every 0.5 "the reload under strace" 60 grep -q 'configuration reloaded' "$work/serve.log"
curl -sf -o /dev/null "http://127.0.0.1:$port/metrics"
curl -sf -o /dev/null -X POST "http://127.0.0.1:$port/-/reload"
kill -TERM "$traced"
wait "$strace_pid" || fail "the traced exporter did not stop cleanly on SIGTERM"
strace -f -qq -o "$work/backfill.strace" "$exporter_bin" backfill --demo --output "$work/history.om" \
    >"$work/backfill.log" 2>&1 || fail "the traced backfill failed"

# The state store as the unit gives it: $STATE_DIRECTORY (StateDirectory=), written by a run
# against the simulated API, then read back by a restart; both traced.
simulated api_url "$exporter_bin" 20
state_dir="$work/var-lib-reputation-exporter"
mkdir -p "$state_dir"
traced_run() {
    STATE_DIRECTORY=$state_dir REPUTATION_EXPORTER_API__BASE_URL=$api_url \
        REPUTATION_EXPORTER_API__TOKEN=demo-token REPUTATION_EXPORTER_ASSET_REPORTS__ENABLED=true \
        strace -f -qq -o "$work/state-$1.strace" "$exporter_bin" --web.listen-address "127.0.0.1:$(free_port)" \
        >>"$work/state.log" 2>&1 &
    state_pid=$!
    pids+=("$state_pid")
}
traced_run write
stored() { [ -s "$state_dir/api/ip-list.json" ] && grep -q 'asset report round ended' "$work/state.log"; }
wait_for "the traced exporter writing its state in \$STATE_DIRECTORY" 60 stored
kill -TERM "$(pgrep -P "$state_pid" | head -n 1)"
wait "$state_pid" || fail "the traced exporter with a state did not stop cleanly"
traced_run read
wait_for "the traced exporter serving from its state" 60 grep -q 'serving what the state store kept' "$work/state.log"
kill -TERM "$(pgrep -P "$state_pid" | head -n 1)"
wait "$state_pid" || true

# The socket-activated run cannot be traced (LISTEN_PID would name strace): the calls that take
# the passed sockets are checked by name.
used=$({
    printf '%s\n' fstat getsockname getsockopt fcntl
    cat "$work/serve.strace" "$work/backfill.strace" "$work"/state-*.strace |
        sed -n -E 's/^[0-9]+ +([a-z0-9_]+)\(.*/\1/p; s/^[0-9]+ +<\.\.\. ([a-z0-9_]+) resumed>.*/\1/p'
} | sort -u)
[ "$(wc -l <<<"$used")" -gt 20 ] || fail "strace recorded almost nothing: $(head -n 5 "$work/serve.strace")"
outside=$(comm -23 <(echo "$used") <(echo "$allowed" | sort -u))
[ -z "$outside" ] || fail "system calls the unit's SystemCallFilter would refuse: $(echo $outside)"
echo "systemd: the $(wc -l <<<"$used") system calls of a demo run with scrapes, reloads and a backfill, a run writing and one reading its state in \$STATE_DIRECTORY, and those taking systemd's sockets, are all allowed by SystemCallFilter"
echo "systemd: passed"
