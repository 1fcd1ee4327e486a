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

# "Try it": its command, then its curl, as written; stopped before the block takes the port.
try_it=$(awk '/^## Try it/{s=1} s && /^```sh/{b=1; next} b && /^```/{exit} b{print}' README.md)
[ "$try_it" = "cargo run --release -- --demo" ] || fail "Try it says: $try_it"
curl_line=$(grep -o -m1 'curl localhost:9525/metrics' README.md) || fail "Try it has no curl"
bash -c "$try_it" >"$work/try-it.log" 2>&1 &
try_pid=$!
deadline=$((SECONDS + 600))
until $curl_line 2>/dev/null | grep '^reputation_up 1$' >/dev/null; do
    [ "$SECONDS" -lt "$deadline" ] || fail "Try it: the demo does not serve"
    kill -0 "$try_pid" 2>/dev/null || fail "Try it: the demo stopped"
    sleep 1
done
# cargo run execs the exporter in its place (or runs it as its child): stop both.
pkill -P "$try_pid" 2>/dev/null || true
kill "$try_pid" 2>/dev/null || true
wait "$try_pid" 2>/dev/null || true
for _ in $(seq 100); do curl -s -o /dev/null localhost:9525/ || break; sleep 0.1; done
echo "readme: Try it served the demo"

# The simulated API as the README tells a reader without an account to start it.
simulate=$(grep -o -m1 'reputation-exporter simulate[^`]*' README.md) || fail "the README does not say how to simulate"
"${1:-target/debug/reputation-exporter}" ${simulate#reputation-exporter } >"$work/api.url" &
pids+=($!)
for _ in $(seq 50); do [ -s "$work/api.url" ] && break; sleep 0.1; done
api=$(head -n 1 "$work/api.url")

# Scratch stand-ins: /etc, the install root, sudo when the machine has none.
sed -e "s#/etc/reputation-exporter#$work/system/etc#g" \
    -e "s#https://api.example.com#$api#g" "$work/block.sh" >"$work/run.sh"
mkdir -p "$work/bin" "$work/system"
chmod 755 "$work"
export CARGO_INSTALL_ROOT="$work/root"
as_user=()
if [ "$(id -u)" = 0 ]; then
    # The block is for an ordinary user: as root (CI), it runs as one made for it. The
    # toolchain is root's, out of that user's reach, so its first line, `cargo install`, runs
    # here as root, exactly as written; the user's `cargo` then finds it done.
    user=reputation-readme
    id "$user" >/dev/null 2>&1 || useradd --system --no-create-home --shell /bin/sh "$user"
    install_line=$(grep -m1 '^cargo install ' "$work/block.sh")
    CARGO_TARGET_DIR="$PWD/target" bash -ec "$install_line" >"$work/install.log" 2>&1 ||
        fail "the block's cargo install failed"
    printf '#!/bin/sh\n[ "$*" = "%s" ] && [ -x "%s" ] && exit 0\necho "cargo $*: not run by this test" >&2; exit 1\n' \
        "${install_line#cargo }" "$work/root/bin/reputation-exporter" >"$work/bin/cargo"
    # No sudo for that user: the stand-in runs the command as the user, in a stand-in for /
    # that the user may write to, as sudo would as root in the real one.
    printf '#!/bin/sh\nexec "$@"\n' >"$work/bin/sudo"
    chown "$user" "$work/system"
    as_user=(setpriv "--reuid=$user" "--regid=$user" --init-groups --)
else
    command -v sudo >/dev/null || printf '#!/bin/sh\nexec "$@"\n' >"$work/bin/sudo"
fi
chmod +x "$work"/bin/* 2>/dev/null || true
(
    export PATH="$work/root/bin:$work/bin:$PATH"
    export CARGO_TARGET_DIR="$PWD/target" API_TOKEN=demo-token
    if [ "${#as_user[@]}" -gt 0 ]; then
        # Somewhere that user may be: the repository may sit where it cannot look.
        export HOME="$work"
        cd "$work"
    fi
    exec "${as_user[@]}" bash -e "$work/run.sh"
) >"$work/run.log" 2>&1 &
pids+=($!)

# Ready, then the whole simulated fleet served (the two lists arrive one after the other).
deadline=$((SECONDS + 600))
until curl -sf http://127.0.0.1:9525/metrics | grep '^reputation_assets{kind="ip"} 16$' >/dev/null; do
    [ "$SECONDS" -lt "$deadline" ] || fail "the simulated fleet is not served"
    kill -0 "${pids[1]}" 2>/dev/null || fail "the block stopped"
    sleep 1
done
[ "$(stat -c %a "$work/system/etc/token")" = 600 ] || fail "the token file is not mode 0600"
[ "$(stat -c %a "$work/system/etc")" = 750 ] || fail "the directory is not mode 0750"
if [ "${#as_user[@]}" -gt 0 ]; then
    owner=$(stat -c %U "$work/system/etc/token")
    [ "$owner" = "$user" ] || fail "the token file belongs to $owner, not to the user who ran the block"
    uids=$(ps -o uid= -C reputation-exporter)
    grep -qw -- "$(id -u "$user")" <<<"$uids" || fail "the exporter does not run as $user"
fi
# The two commands the README names for checking a configuration, with the block's settings.
for command in 'reputation-exporter --config.check' 'reputation-exporter --once'; do
    grep -qF "\`$command\`" README.md || fail "the README no longer names $command"
    (
        export PATH="$work/root/bin:$PATH" REPUTATION_EXPORTER_API__BASE_URL="$api"
        export REPUTATION_EXPORTER_API__TOKEN_FILE="$work/system/etc/token"
        exec "${as_user[@]}" $command
    ) >"$work/check.out" 2>"$work/check.log" || fail "$command failed"
done
grep -q '^reputation_up 1$' "$work/check.out" || fail "--once printed no healthy exposition"
echo "readme: passed"
