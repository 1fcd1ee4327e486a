#!/usr/bin/env bash
# End-to-end: the exporter in --demo mode scraped by a real Prometheus with the shipped
# scrape configuration (interval shortened) and rules (`for:` shortened), checked through
# Prometheus' HTTP API; and a second exporter behind mutual TLS and basic auth (certificates
# made here with openssl), scraped the way the README's Security section says. Everything
# listens on 127.0.0.1 and is stopped on exit.
#
# Usage: tests/e2e/prometheus.sh [path/to/reputation-exporter]
set -euo pipefail
cd "$(dirname "$0")/../.."

exporter_bin=${1:-target/release/reputation-exporter}
e2e_name=e2e
# shellcheck source=tests/e2e/lib.sh
. tests/e2e/lib.sh

exporter_port=$(free_port)
prometheus_port=$(free_port)

"$exporter_bin" --demo --web.listen-address "127.0.0.1:$exporter_port" \
    >"$work/exporter.log" 2>&1 &
pids+=($!)
wait_for "the exporter ready" 20 curl -sf -o /dev/null "http://127.0.0.1:$exporter_port/-/ready"

# The second exporter: TLS with a CA made for this run, client certificates required, and a
# bcrypt-hashed password (of "e2e-scrape-password", cost 6).
tls=$work/tls
mkdir "$tls"
make_cert() { # file-name common-name extensions
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=$2" \
        -keyout "$tls/$1.key" -out "$tls/$1.csr" 2>/dev/null
    openssl x509 -req -in "$tls/$1.csr" -CA "$tls/ca.crt" -CAkey "$tls/ca.key" \
        -CAcreateserial -days 1 -extfile <(printf '%s\n' "$3") -out "$tls/$1.crt" 2>/dev/null
}
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
    -subj "/CN=e2e CA" -keyout "$tls/ca.key" -out "$tls/ca.crt" 2>/dev/null
make_cert server 127.0.0.1 $'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth'
make_cert client prometheus 'extendedKeyUsage=clientAuth'
printf '%s' e2e-scrape-password >"$tls/password"
hash='$2b$06$lITZqjBJ4CutfHzmROCODu2bqRICDUgXLIxrissuQNSfa8GatIOGi'
cat >"$tls/web.yml" <<EOF
tls_server_config:
  cert_file: server.crt
  key_file: server.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: ca.crt
basic_auth_users:
  prometheus: '$hash'
EOF
tls_port=$(free_port)
"$exporter_bin" --demo --web.listen-address "127.0.0.1:$tls_port" \
    --web.config.file "$tls/web.yml" >"$work/exporter-tls.log" 2>&1 &
pids+=($!)
tls_curl() {
    curl -s --cacert "$tls/ca.crt" "$@"
}
wait_for "the TLS exporter ready" 20 tls_curl -f -o /dev/null --cert "$tls/client.crt" \
    --key "$tls/client.key" -u prometheus:e2e-scrape-password "https://127.0.0.1:$tls_port/-/ready"
if tls_curl -o /dev/null -u prometheus:e2e-scrape-password "https://127.0.0.1:$tls_port/metrics"; then
    fail "the TLS exporter answered a client without a certificate"
fi
status=$(tls_curl -o /dev/null -w '%{http_code}' --cert "$tls/client.crt" --key "$tls/client.key" \
    "https://127.0.0.1:$tls_port/metrics")
[ "$status" = 401 ] || fail "a scrape without the password got $status, not 401"
echo "e2e: TLS exporter refuses clients without a certificate (handshake) or a password (401)"

# The shipped files, with the target, the intervals (the recording rules' too) and the `for:`
# durations shortened.
sed -e "s/scrape_interval: .*/scrape_interval: 2s/" \
    -e "s/scrape_timeout: .*/scrape_timeout: 1s/" \
    -e "/reputation-exporter-2/d" \
    -e "s/reputation-exporter-1:9525/127.0.0.1:$exporter_port/" \
    deploy/prometheus/scrape.yml >"$work/scrape.yml"
sed -e "s/for: .*/for: 0s/" -e 's/interval: "5m"/interval: "2s"/' deploy/prometheus/alerts.yml >"$work/alerts.yml"
sed -e 's/interval: "5m"/interval: "2s"/' deploy/prometheus/rules.yml >"$work/rules.yml"
{
    echo "global:"
    echo "  evaluation_interval: 2s"
    echo "rule_files: [alerts.yml, rules.yml]"
    cat "$work/scrape.yml"
    cat <<EOF
  - job_name: reputation-tls
    scrape_interval: 2s
    scrape_timeout: 1s
    scheme: https
    tls_config:
      ca_file: $tls/ca.crt
      cert_file: $tls/client.crt
      key_file: $tls/client.key
    basic_auth:
      username: prometheus
      password_file: $tls/password
    static_configs:
      - targets: ["127.0.0.1:$tls_port"]
EOF
} >"$work/prometheus.yml"
promtool check config "$work/prometheus.yml" >/dev/null || fail "promtool check config"

prometheus --config.file "$work/prometheus.yml" \
    --storage.tsdb.path "$work/data" \
    --web.listen-address "127.0.0.1:$prometheus_port" \
    >"$work/prometheus.log" 2>&1 &
pids+=($!)

api="http://127.0.0.1:$prometheus_port/api/v1"
# Runs a PromQL query and prints the result as JSON.
query() {
    curl -sf --get "$api/query" --data-urlencode "query=$1" |
        python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["data"]["result"]))'
}
# True when the query returns at least $2 series.
has_series() {
    local n
    n=$(query "$1" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))') || return 1
    [ "$n" -ge "$2" ]
}

wait_for "Prometheus ready" 30 curl -sf -o /dev/null "http://127.0.0.1:$prometheus_port/-/ready"

target_up() {
    curl -sf "$api/targets" | python3 -c '
import json, sys
targets = json.load(sys.stdin)["data"]["activeTargets"]
sys.exit(0 if targets and all(t["health"] == "up" for t in targets) else 1)'
}
wait_for "every target up" 30 target_up
wait_for "reputation_up from the TLS exporter" 20 has_series 'reputation_up{job="reputation-tls"} == 1' 1
echo "e2e: both targets up, the TLS one scraped over mutual TLS with basic auth"

# The scraped scores are the exporter's: compare one asset's value with /metrics (the demo
# moves every few seconds, so retry until both agree).
same_score() {
    local served stored
    served=$(curl -sf "http://127.0.0.1:$exporter_port/metrics" |
        awk '/^reputation_senderscore\{kind="ip",asset="192.0.2.1"\}/ {print $2}')
    stored=$(query 'reputation_senderscore{job="reputation",kind="ip",asset="192.0.2.1"}' |
        python3 -c 'import json,sys; r=json.load(sys.stdin); print(r[0]["value"][1] if r else "")')
    [ -n "$served" ] && [ "$served" = "$stored" ]
}
wait_for "reputation_senderscore in Prometheus as /metrics serves it" 30 same_score
served_series=$(curl -sf "http://127.0.0.1:$exporter_port/metrics" | grep -c '^reputation_senderscore{')
wait_for "as many reputation_senderscore series as the exporter serves ($served_series)" 20 \
    has_series 'reputation_senderscore{job="reputation"}' "$served_series"
echo "e2e: $served_series reputation_senderscore series, values as served"

wait_for "recording rule account_kind:reputation_senderscore:min" 30 \
    has_series 'account_kind:reputation_senderscore:min{account="main"}' 2
wait_for "recording rule account_kind:reputation_snds_reputation:count" 30 \
    has_series 'account_kind:reputation_snds_reputation:count{account="main"}' 2
wait_for "recording rule asset:reputation_senderscore:bottomk" 30 \
    has_series 'asset:reputation_senderscore:bottomk{account="main"}' 25
echo "e2e: recording rules evaluated"

# The demo always has addresses scored below 70.
wait_for "ReputationSenderScoreLowAssets firing, once for the account" 30 \
    has_series 'ALERTS{alertname="ReputationSenderScoreLowAssets",alertstate="firing"}' 1
echo "e2e: ReputationSenderScoreLowAssets firing"
if has_series 'ALERTS{alertname=~"ReputationApiTokenRejected|ReputationExporterDown",alertstate="firing"}' 1; then
    fail "an alert that the demo must not trigger is firing"
fi
echo "e2e: passed"
