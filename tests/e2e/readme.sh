#!/usr/bin/env bash
# The README's "Run it for real" block, run as written: the same commands, with only the
# account swapped for the simulated API and /etc for a scratch directory. The exporter must
# become ready and serve the simulated fleet. Everything listens on 127.0.0.1 (the exporter on
# its default port, 9525) and is stopped on exit.
#
# Usage: tests/e2e/readme.sh [path/to/reputation-exporter (for the simulated API)]
set -euo pipefail
cd "$(dirname "$0")/../.."

e2e_name=readme
# shellcheck source=tests/e2e/lib.sh
. tests/e2e/lib.sh

# The block between "## Run it for real" and the next heading's first ```sh ... ```.
awk '/^## Run it for real/{in_section=1} in_section && /^```sh/{block=1; next}
     block && /^```/{exit} block{print}' README.md >"$work/block.sh"
grep -q 'cargo install --locked --path .' "$work/block.sh" || fail "the block was not found"

# The simulated API as the README tells a reader without an account to start it.
simulate=$(grep -o -m1 'reputation-exporter simulate[^`]*' README.md) || fail "the README does not say how to simulate"
"${1:-target/debug/reputation-exporter}" ${simulate#reputation-exporter } >"$work/api.url" &
pids+=($!)
for _ in $(seq 50); do [ -s "$work/api.url" ] && break; sleep 0.1; done
api=$(head -n 1 "$work/api.url")

# Scratch stand-ins: /etc, the install root, sudo when the machine has none (CI runs as root).
sed -e "s#/etc/reputation-exporter#$work/etc#g" \
    -e "s#https://api.example.com#$api#g" "$work/block.sh" >"$work/run.sh"
mkdir -p "$work/bin"
command -v sudo >/dev/null || printf '#!/bin/sh\nexec "$@"\n' >"$work/bin/sudo"
chmod +x "$work/bin/sudo" 2>/dev/null || true
(
    export PATH="$work/root/bin:$work/bin:$PATH" CARGO_INSTALL_ROOT="$work/root"
    export CARGO_TARGET_DIR="$PWD/target" API_TOKEN=demo-token
    exec bash -e "$work/run.sh"
) >"$work/run.log" 2>&1 &
pids+=($!)

# Ready, then the whole simulated fleet served (the two lists arrive one after the other).
deadline=$((SECONDS + 600))
until curl -sf http://127.0.0.1:9525/metrics | grep '^reputation_assets{kind="ip"} 16$' >/dev/null; do
    [ "$SECONDS" -lt "$deadline" ] || fail "the simulated fleet is not served"
    kill -0 "${pids[1]}" 2>/dev/null || fail "the block stopped"
    sleep 1
done
[ "$(stat -c %a "$work/etc/token")" = 600 ] || fail "the token file is not mode 0600"
[ "$(stat -c %a "$work/etc")" = 750 ] || fail "the directory is not mode 0750"
echo "readme: passed"
