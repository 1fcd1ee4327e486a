#!/usr/bin/env bash
# The README's "Run it for real" block, run as written, as an ordinary user without sudo: the
# same commands, with only the account swapped for the simulated API the README says to start
# for it. Stand-ins, each for what this machine cannot have: that user's home is a scratch
# directory, and (as root, where the toolchain is root's) the block's `cargo install` runs as
# root and the user's `cargo` finds it done. The exporter must become ready and serve the
# simulated fleet. Everything listens on 127.0.0.1 (the exporter on its default port, 9525) and
# is stopped on exit.
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
# The first build takes minutes on a fresh machine.
serving() {
    kill -0 "$try_pid" 2>/dev/null || fail "Try it: the demo stopped"
    $curl_line 2>/dev/null | grep -q '^reputation_up 1$'
}
wait_for "Try it: the demo serving" 600 serving
# cargo run execs the exporter in its place (or runs it as its child): stop both.
pkill -P "$try_pid" 2>/dev/null || true
kill "$try_pid" 2>/dev/null || true
wait "$try_pid" 2>/dev/null || true
port_free() { ! curl -s -o /dev/null localhost:9525/; }
wait_for --every 0.1 "the demo's port free again" 10 port_free
echo "readme: Try it served the demo"

# The simulated API as the README tells a reader without an account to start it, in the
# foreground of its own terminal (here, a background job), with the binary Try it built.
simulate=$(grep -o -m1 'cargo run --release -- simulate[^`]*' README.md) || fail "the README does not say how to simulate"
bash -c "$simulate" >"$work/api.url" 2>"$work/simulate.log" &
pids+=($!)
wait_for --every 0.1 "the simulated API's address" 60 test -s "$work/api.url"
api=$(head -n 1 "$work/api.url")
[ -n "$api" ] || fail "the simulated API printed no address"

sed -e "s#https://api.example.com#$api#g" "$work/block.sh" >"$work/run.sh"
grep -q 'sudo\|/etc/' "$work/run.sh" && fail "the block needs sudo or /etc: an ordinary user has neither"
home="$work/home"
mkdir -p "$work/bin" "$home"
chmod 755 "$work"
export CARGO_INSTALL_ROOT="$work/root"
as_user=()
if [ "$(id -u)" = 0 ]; then
    # The block is for an ordinary user: as root (CI), it runs as one made for it, with no
    # sudo. The toolchain is root's, out of that user's reach, so its first line, `cargo
    # install`, runs here as root, exactly as written; the user's `cargo` then finds it done.
    user=reputation-readme
    id "$user" >/dev/null 2>&1 || useradd --system --no-create-home --shell /bin/sh "$user"
    install_line=$(grep -m1 '^cargo install ' "$work/block.sh")
    CARGO_TARGET_DIR="$PWD/target" bash -ec "$install_line" >"$work/install.log" 2>&1 ||
        fail "the block's cargo install failed"
    printf '#!/bin/sh\n[ "$*" = "%s" ] && [ -x "%s" ] && exit 0\necho "cargo $*: not run by this test" >&2; exit 1\n' \
        "${install_line#cargo }" "$work/root/bin/reputation-exporter" >"$work/bin/cargo"
    chmod +x "$work/bin/cargo"
    chown "$user" "$home"
    as_user=(setpriv "--reuid=$user" "--regid=$user" --init-groups --)
fi
(
    export PATH="$work/root/bin:$work/bin:$PATH" HOME="$home"
    export CARGO_TARGET_DIR="$PWD/target" API_TOKEN=demo-token
    # Somewhere that user may be: the repository may sit where it cannot look.
    cd "$home"
    exec "${as_user[@]}" bash -e "$work/run.sh"
) >"$work/run.log" 2>&1 &
pids+=($!)

# Ready, then the whole simulated fleet served (the two lists arrive one after the other).
fleet_served() {
    kill -0 "${pids[1]}" 2>/dev/null || fail "the block stopped"
    curl -sf http://127.0.0.1:9525/metrics | grep -q '^reputation_assets{kind="ip"} 16$'
}
wait_for "the simulated fleet served" 600 fleet_served
token="$home/.config/reputation-exporter/token"
[ "$(stat -c %a "$token")" = 600 ] || fail "the token file is not mode 0600"
[ "$(stat -c %a "$(dirname "$token")")" = 700 ] || fail "the directory is not mode 0700"
if [ "${#as_user[@]}" -gt 0 ]; then
    owner=$(stat -c %U "$token")
    [ "$owner" = "$user" ] || fail "the token file belongs to $owner, not to the user who ran the block"
    uids=$(ps -o uid= -C reputation-exporter)
    grep -qw -- "$(id -u "$user")" <<<"$uids" || fail "the exporter does not run as $user"
fi
# The two commands the README names for checking a configuration, with the block's settings.
for command in 'reputation-exporter --config.check' 'reputation-exporter --once'; do
    grep -qF "\`$command\`" README.md || fail "the README no longer names $command"
    (
        export PATH="$work/root/bin:$PATH" REPUTATION_EXPORTER_API__BASE_URL="$api"
        export REPUTATION_EXPORTER_API__TOKEN_FILE="$token"
        exec "${as_user[@]}" $command
    ) >"$work/check.out" 2>"$work/check.log" || fail "$command failed"
done
grep -q '^reputation_up 1$' "$work/check.out" || fail "--once printed no healthy exposition"
echo "readme: passed"
