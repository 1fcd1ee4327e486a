# Shared by the end-to-end scripts and benchmarks (sourced, after setting e2e_name): a scratch
# directory, the processes listed in `pids` stopped on exit, `fail` showing the tail of every log
# in the scratch directory, a free port on 127.0.0.1, the simulated API, a Prometheus query's
# first value, and waiting for a condition with a deadline.

work=$(mktemp -d)
# The exporters a script starts keep their state (the store a restart starts from) under its
# scratch directory, never in a directory of the machine.
export XDG_STATE_HOME="$work/state"
pids=()

cleanup() {
    for pid in "${pids[@]}"; do
        pkill -P "$pid" 2>/dev/null || true
        kill "$pid" 2>/dev/null || true
    done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

fail() {
    echo "$e2e_name: FAILED: $*" >&2
    for log in "$work"/*.log; do
        [ -f "$log" ] || continue
        echo "--- $(basename "$log")" >&2
        tail -n 20 "$log" >&2
    done
    exit 1
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# `simulated VARIABLE BINARY ASSETS [FLAGS...]`: starts `BINARY simulate` on a free loopback
# port, stopped on exit, and sets VARIABLE to its base URL once it serves (token: demo-token).
simulated() {
    local variable=$1 binary=$2 assets=$3 url_file
    shift 3
    url_file=$(mktemp -p "$work" simulated.XXXXXX)
    "$binary" simulate --assets "$assets" "$@" >"$url_file" &
    pids+=($!)
    for _ in $(seq 100); do
        if [ -s "$url_file" ]; then
            printf -v "$variable" '%s' "$(head -n1 "$url_file")"
            return
        fi
        sleep 0.1
    done
    fail "the simulated API did not start"
}

# `first_value URL EXPR [TIME]`: the value of the first series an instant query of EXPR (at TIME,
# else now) returns from the Prometheus API at URL; empty when it returns none or does not answer
# (yet).
first_value() {
    local answer
    answer=$(curl -sfG "$1/api/v1/query" --data-urlencode "query=$2" ${3:+--data-urlencode "time=$3"}) ||
        return 0
    python3 -c 'import json,sys; r=json.loads(sys.argv[1])["data"]["result"]; print(r[0]["value"][1] if r else "")' "$answer"
}

# `answers URL EXPR`: an instant query of EXPR at the Prometheus API at URL returns a value.
answers() { [ -n "$(first_value "$1" "$2")" ]; }

# `wait_for [--every S] WHAT SECONDS COMMAND...`: runs COMMAND every S seconds (1 by default)
# until it succeeds; fails the test, naming WHAT, when SECONDS have passed first.
wait_for() {
    local every=1
    if [ "$1" = --every ]; then
        every=$2
        shift 2
    fi
    local what=$1 deadline=$((SECONDS + $2))
    shift 2
    until "$@"; do
        [ "$SECONDS" -lt "$deadline" ] || fail "$what: not within the deadline"
        sleep "$every"
    done
}

# `compressed_rules DIR`: the shipped alerts and recording rules, written to DIR/alerts.yml and
# DIR/rules.yml at the compressed pace of a test that sets `poll`, `keep` and `max_age`
# (seconds): every `for:` 20s, `keep_firing_for:` `keep`, the 5-minute groups every `poll`,
# ReputationDataStale's threshold (45 of metrics.max_age's 60 minutes) 30 of 60 seconds, and
# the pages' hold while no replica serves the lists metrics.max_age (`max_age`). Fails the test
# when a substitution no longer applies.
compressed_rules() {
    mkdir -p "$1"
    sed -E -e 's/^( +for: ).*/\1"20s"/' -e "s/^( +keep_firing_for: ).*/\\1\"${keep}s\"/" \
        -e "s/^( +(- )?interval: )\"5m\"/\\1\"${poll}s\"/" \
        -e 's/(domain-list\\"\}\[15m\]\)\)\) > )2700"/\130"/' \
        -e "s/\\[1h\\]\\)/[${max_age}s])/g" \
        deploy/prometheus/alerts.yml >"$1/alerts.yml"
    sed -e "s/interval: \"5m\"/interval: \"${poll}s\"/" deploy/prometheus/rules.yml >"$1/rules.yml"
    grep -q 'domain-list\\"}\[15m\]))) > 30"' "$1/alerts.yml" || fail "ReputationDataStale's threshold was not shortened"
    ! grep -q '\[1h\])' "$1/alerts.yml" || fail "the pages' hold was not shortened"
    grep -q "interval: \"${poll}s\"" "$1/rules.yml" || fail "the recording rules' interval was not shortened"
}

# `start_alertmanager WEBHOOK_PORT SMTP_PORT`: a real Alertmanager with the shipped
# configuration and templates (in $work/am), its receivers pointed at a webhook receiver
# (tests/e2e/webhook_sink.py: the webhooks and Slack) and an SMTP server (tests/e2e/smtp_sink.py,
# plain SMTP) on loopback, its group_interval shortened to 20s; listening on
# $alertmanager_port, logging to $work/alertmanager.log.
start_alertmanager() {
    mkdir -p "$work/am"
    cp -r deploy/alertmanager/templates "$work/am/"
    sed -e "s#http://127.0.0.1:5001/#http://127.0.0.1:$1/#" \
        -e "s/smtp_smarthost: localhost:25/smtp_smarthost: 127.0.0.1:$2\n  smtp_require_tls: false/" \
        -e "s/group_interval: 5m/group_interval: 20s/" deploy/alertmanager/alertmanager.yml \
        >"$work/am/alertmanager.yml"
    grep -q "smtp_smarthost: 127.0.0.1:$2" "$work/am/alertmanager.yml" || fail "the SMTP relay was not replaced"
    ! grep -q "5001" "$work/am/alertmanager.yml" || fail "a receiver still points at port 5001"
    alertmanager_port=$(free_port)
    prometheus-alertmanager --config.file="$work/am/alertmanager.yml" --storage.path="$work/am-data" \
        --web.listen-address="127.0.0.1:$alertmanager_port" --cluster.listen-address= \
        >"$work/alertmanager.log" 2>&1 &
    pids+=($!)
}

# `compressed_prometheus TARGET...`: $work/prometheus.yml for a real Prometheus at the test's
# pace: scrapes every 5s and evaluations every `evaluation` seconds of the rules
# compressed_rules wrote to $work/rules, alerts sent to $alertmanager_port, and the shipped
# scrape job with its replicas' addresses replaced by the TARGETs (one or two; with one, the
# second replica's line goes).
compressed_prometheus() {
    local second=("-e" "/reputation-exporter-2:9525/d")
    [ "$#" -lt 2 ] || second=("-e" "s/reputation-exporter-2:9525/$2/")
    {
        cat <<YAML
global:
  scrape_interval: 5s
  evaluation_interval: ${evaluation}s
rule_files: ["$work/rules/alerts.yml", "$work/rules/rules.yml"]
alerting:
  alertmanagers:
    - static_configs:
        - targets: ["127.0.0.1:$alertmanager_port"]
YAML
        sed -e "s/scrape_interval: .*/scrape_interval: 5s/" -e "s/scrape_timeout: .*/scrape_timeout: 4s/" \
            -e "s/reputation-exporter-1:9525/$1/" "${second[@]}" deploy/prometheus/scrape.yml
    } >"$work/prometheus.yml"
    promtool check config "$work/prometheus.yml" >/dev/null || fail "promtool check config"
}

# The fleet of tests/e2e/fleet_api.py, in $work/fleet.json. `edit PYTHON` changes it (`s` is the
# state, `now` the time); `list_on ASSET BLACKLIST` lists an asset now, `delist ASSET BLACKLIST`
# ends that listing now.
edit() {
    python3 - "$work/fleet.json" "$1" <<'PY'
import json, sys, time
s = json.load(open(sys.argv[1])); now = int(time.time())
exec(sys.argv[2])
json.dump(s, open(sys.argv[1] + ".new", "w"))
PY
    mv "$work/fleet.json.new" "$work/fleet.json"
}
list_on() { edit "s['listings'].append({'asset': '$1', 'blacklist': '$2', 'listed': now, 'delisted': None})"; }
delist() { edit "next(l for l in s['listings'] if l['asset'] == '$1' and l['delisted'] is None and l['blacklist'] == '$2')['delisted'] = now"; }

