#!/usr/bin/env bash
# The container image's build stage, without a Docker engine: the build stage's COPY lines of
# deploy/docker/Dockerfile are carried out into an empty directory (nothing else of the
# repository is there), its RUN line runs there as written, and the binary it makes must run
# (`--version`, `--demo --once`, `backfill` finding its binary beside it, and the state store in
# the image's volume) and need nothing
# at run time that the distroless cc image lacks (checked with ldd). The runtime stage must
# stay shell-free: an exec-form ENTRYPOINT and no RUN.
#
# Usage: tests/e2e/docker-build.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

e2e_name=docker-build
# shellcheck source=tests/e2e/lib.sh
. tests/e2e/lib.sh

dockerfile=deploy/docker/Dockerfile
stage="$work/context"
mkdir -p "$stage"

# The build stage's WORKDIR, COPY sources and destinations, ARG defaults and RUN command.
python3 - "$dockerfile" >"$work/plan.sh" <<'PY'
import shlex, sys
lines, stage, workdir, run = [], 0, "/", None
text = open(sys.argv[1]).read().replace("\\\n", " ")
for raw in text.splitlines():
    line = raw.strip()
    if not line or line.startswith("#"):
        continue
    word, _, rest = line.partition(" ")
    word = word.upper()
    if word == "FROM":
        stage += 1
        continue
    if stage != 1:
        continue
    if word == "WORKDIR":
        workdir = rest.strip()
    elif word == "COPY":
        parts = shlex.split(rest)
        if any(p.startswith("--") for p in parts):
            sys.exit(f"unsupported COPY flags: {line}")
        *sources, dest = parts
        print(f"copy {shlex.quote(workdir)} {shlex.quote(dest)} " + " ".join(map(shlex.quote, sources)))
    elif word == "ARG" and "=" in rest:
        print(f"export {rest.strip()}")
    elif word == "RUN":
        if run is not None:
            sys.exit("more than one RUN in the build stage")
        run = rest.strip()
if run is None:
    sys.exit("no RUN in the build stage")
print(f"run {shlex.quote(run)}")
PY

copy() {
    local workdir=$1 dest=$2
    shift 2
    local target
    case "$dest" in
        /*) target="$stage$dest" ;;
        *) target="$stage$workdir/$dest" ;;
    esac
    for source in "$@"; do
        [ -e "$source" ] || fail "COPY $source: no such file in the repository"
        if [ -d "$source" ]; then
            mkdir -p "$target"
            cp -a "$source/." "$target/"
        elif [[ "$dest" == */ ]]; then
            mkdir -p "$target"
            cp -a "$source" "$target"
        else
            mkdir -p "$(dirname "$target")"
            cp -a "$source" "$target"
        fi
    done
}
run() {
    local command=$1
    case "$command" in
        cargo\ *) ;;
        *) fail "the build stage's RUN is not a cargo command: $command" ;;
    esac
    grep -q -- '--locked' <<<"$command" || fail "the build stage's RUN does not use --locked"
    workdir_of_run=$(grep -m1 '^copy ' "$work/plan.sh" | cut -d' ' -f2)
    # The dependencies built for the repository's own release binary are reused when present;
    # the project itself is always compiled from the staged copy.
    mkdir -p "$work/target"
    [ -d target/release ] && cp -a target/release "$work/target/" 2>/dev/null || true
    (cd "$stage$workdir_of_run" && CARGO_TARGET_DIR="$work/target" CARGO_TERM_COLOR=never \
        eval "$command") >"$work/build.log" 2>&1 ||
        fail "the build stage fails from its COPY lines alone: $(grep -m3 -E '^error' "$work/build.log")"
}
# shellcheck disable=SC1090
. "$work/plan.sh"
echo "docker-build: the build stage ran from $(grep -c '^copy ' "$work/plan.sh") COPY lines"

binary="$work/target/release/reputation-exporter"
[ -x "$binary" ] || fail "no binary at target/release/reputation-exporter"
"$binary" --version >"$work/version.log" 2>&1 || fail "--version failed"
echo "docker-build: $(head -n1 "$work/version.log")"
# --once exits 1 when the demo's simulated 503s outlast a retry; the exposition is what counts.
"$binary" --demo --once >"$work/once.txt" 2>"$work/once.log" || true
grep -q '^reputation_asset_info{' "$work/once.txt" || fail "--demo --once printed no assets"
# `backfill` runs the second binary, beside the first as the runtime stage copies them.
runtime_bin="$work/runtime/usr/local/bin"
mkdir -p "$runtime_bin"
for copied in $(awk '/^FROM /{n++} n==2 && /^COPY --from=build/ && /target\/release\// {print $(NF-1) ":" $NF}' "$dockerfile"); do
    cp "$work/target/release/$(basename "${copied%%:*}")" "$runtime_bin/$(basename "${copied##*:}")"
done
"$runtime_bin/reputation-exporter" backfill --help >"$work/backfill-help.log" 2>&1 ||
    fail "backfill --help in the image's layout failed: $(head -n3 "$work/backfill-help.log")"
grep -q -- '--remote-write' "$work/backfill-help.log" || fail "backfill --help does not list its flags"
echo "docker-build: backfill runs the backfill binary beside the exporter"

# The state store: a directory the build stage made, copied to the path the image's
# REPUTATION_EXPORTER_STATE__PATH names, owned by the image's user, a volume; the exporter of the
# image writes its store there and a restart serves from it.
state_path=$(grep -o 'REPUTATION_EXPORTER_STATE__PATH=[^ ]*' "$dockerfile" | cut -d= -f2)
[ -n "$state_path" ] || fail "the image sets no REPUTATION_EXPORTER_STATE__PATH"
grep -q "^COPY --from=build --chown=65532:65532 /src/state $state_path\$" "$dockerfile" ||
    fail "the image does not copy a state directory owned by 65532 to $state_path"
grep -q "^VOLUME $state_path\$" "$dockerfile" || fail "$state_path is not a volume"
[ -d "$stage/src/state" ] || fail "the build stage made no state directory"
state="$work/runtime$state_path"
mkdir -p "$state"
simulated api_url "$runtime_bin/reputation-exporter" 20
image_exporter() {
    REPUTATION_EXPORTER_API__BASE_URL=$api_url REPUTATION_EXPORTER_API__TOKEN=demo-token \
        REPUTATION_EXPORTER_STATE__PATH=$state REPUTATION_EXPORTER_ASSET_REPORTS__ENABLED=true \
        "$runtime_bin/reputation-exporter" --web.listen-address "127.0.0.1:$1" >>"$work/image-exporter.log" 2>&1 &
    image_pid=$!
    pids+=("$image_pid")
}
port=$(free_port)
image_exporter "$port"
stored() { [ -s "$state/api/ip-list.json" ] && grep -q 'asset report round ended' "$work/image-exporter.log"; }
wait_for "the image's exporter storing its state in $state_path" 60 stored
kill -TERM "$image_pid"
wait "$image_pid" || true
image_exporter "$port"
wait_for "the restarted exporter serving from its state" 30 \
    grep -q 'serving what the state store kept' "$work/image-exporter.log"
echo "docker-build: the state store lives in $state_path, a volume of the image's user; a restart serves from it"

# distroless/cc-debian12: glibc, libgcc_s and libstdc++, nothing else.
ldd "$binary" "$work/target/release/reputation-exporter-backfill" >"$work/ldd.log" || fail "ldd failed"
unexpected=$(awk '!/:$/ {print $1}' "$work/ldd.log" | grep -v -E \
    '^(linux-vdso\.so\.1|libc\.so\.6|libm\.so\.6|libgcc_s\.so\.1|libstdc\+\+\.so\.6|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|/lib64/ld-linux-x86-64\.so\.2)$' || true)
[ -z "$unexpected" ] || fail "the binary needs libraries the distroless cc image lacks: $unexpected"
echo "docker-build: links only $(awk '!/:$/ {print $1}' "$work/ldd.log" | sort -u | tr '\n' ' ')"

# The runtime stage: no shell to run anything with.
runtime=$(awk '/^FROM /{n++} n==2' "$dockerfile")
grep -q '^FROM gcr.io/distroless/cc-debian12' <<<"$runtime" || fail "the runtime image is not distroless cc"
if grep -q '^RUN ' <<<"$runtime"; then fail "the runtime stage has a RUN, and no shell"; fi
grep -q '^ENTRYPOINT \["' <<<"$runtime" || fail "the ENTRYPOINT is not in exec form"
echo "docker-build: passed"
