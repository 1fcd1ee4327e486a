#!/usr/bin/env bash
# The monitoring mixin (mixin/): formatted as jsonnetfmt formats it; linted as `mixtool lint`
# lints; and configurable for real:
# rendered with another score floor, job selector, account and replica labels, gap window and
# runbook URL
# (and with teamTag, the alerts carry the asset's team), the alert
# expressions, recording rules, dashboard queries and runbook links follow. (.ci/run checks that
# deploy/ is the default rendering and runs its promtool tests.)
#
# Usage: tests/e2e/mixin.sh  (needs jsonnet, jsonnetfmt, promtool, python3)
set -euo pipefail
e2e_name=mixin
cd "$(dirname "$0")/../.."
. tests/e2e/lib.sh

mapfile -t sources < <(find mixin -name '*.libsonnet' -o -name '*.jsonnet' | sort)
jsonnetfmt --test "${sources[@]}" || fail "not formatted as jsonnetfmt formats it: run jsonnetfmt -i ${sources[*]}"

# render DIR [CONFIG]: the deploy files of the mixin with CONFIG merged into _config.
render() {
    mkdir -p "$1"/{prometheus/fleet,grafana,kubernetes}
    jsonnet -S -m "$1" --tla-code "config=${2:-{\}}" mixin/render.jsonnet >/dev/null
}
# as_json DIR FIELD [CONFIG]: one field of the mixin as JSON, for the lint.
as_json() {
    jsonnet --tla-code "config=${3:-{\}}" -e "function(config) ((import 'mixin/mixin.libsonnet') + {_config+:: config}).$2" >"$1/$2.json"
}

floor=$(jsonnet -e "(import 'mixin/mixin.libsonnet')._config.senderScoreFloor")
landing=$(sed -n 's/^pub const LOW_SCORE: f64 = \([0-9]*\)\.0;$/\1/p' src/snapshot/list.rs)
[ "$floor" = "$landing" ] || fail "the landing page counts scores under $landing as low, the alert under $floor"
# That deploy/ holds the default rendering, and the promtool tests on it, are .ci/run's
# `deploy/generate.sh` with `git diff --exit-code` and `promtool test rules`.

# Routing by team: rendered with teamTag, a team-tagged asset's alerts carry `team`.
render "$work/team" "{teamTag: 'team-.+'}"
mkdir -p "$work/team/prometheus/tests"
cp tests/e2e/mixin_team_test.yml "$work/team/prometheus/tests/"
promtool test rules "$work/team/prometheus/tests/mixin_team_test.yml" >"$work/team.log" 2>&1 ||
    fail "promtool test rules on the rendering with teamTag"
echo "team: a team-tagged asset's new listing carries team for Alertmanager's routing"

override='{senderScoreFloor: 80, senderScoreGood: 90, selector: "job=\"mail-reputation\"", globalViewSelector: "job=\"mail-reputation-global\"", accountLabel: "tenant", replicaLabel: "pod", keepFiringFor: "5m", eventKeepFiringFor: "10m", runbookUrl: "https://wiki.example.com/reputation/runbook", dashboardUrl: "https://grafana.example.com/d/reputation-exporter"}'
render "$work/override" "$override"
promtool check rules "$work/override/prometheus/alerts.yml" "$work/override/prometheus/rules.yml" >"$work/check.log" 2>&1 ||
    fail "promtool check rules on the override's rendering"

for config in default override; do
    c='{}'
    [ "$config" = override ] && c=$override
    mkdir -p "$work/$config/json"
    as_json "$work/$config/json" prometheusAlerts "$c"
    as_json "$work/$config/json" prometheusRules "$c"
    as_json "$work/$config/json" grafanaDashboards "$c"
    python3 tests/e2e/mixin_lint.py "$work/$config/json"/{prometheusAlerts,prometheusRules,grafanaDashboards}.json >"$work/lint-$config.log" ||
        fail "mixin lint ($config): $(cat "$work/lint-$config.log")"
    echo "$config: $(tail -n 1 "$work/lint-$config.log")"
done
# A group past 20 rules is refused, and named.
python3 - "$work/default/json/prometheusRules.json" "$work/large.json" <<'PY'
import json, sys
rules = json.load(open(sys.argv[1]))
group = max(rules["groups"], key=lambda g: len(g["rules"]))
group["rules"] += [{"record": f"account:up{i}:sum", "expr": "sum by (account) (up)"} for i in range(21 - len(group["rules"]))]
json.dump(rules, open(sys.argv[2], "w"))
PY
if python3 tests/e2e/mixin_lint.py "$work/default/json/prometheusAlerts.json" "$work/large.json" "$work/default/json/grafanaDashboards.json" >"$work/lint-large.log"; then
    fail "the lint passed a group of 21 rules"
fi
grep -q 'has 21 rules, more than 20$' "$work/lint-large.log" ||
    fail "the lint did not name the group of 21 rules: $(cat "$work/lint-large.log")"
echo "lint: a group past 20 rules is refused and named"
# A rule that keeps state (a recorded series read back at an offset, ALERTS) or that no one can
# read (past 400 characters) is refused, and named.
python3 - "$work/default/json/prometheusRules.json" "$work/stateful.json" <<'PY'
import json, sys
rules = json.load(open(sys.argv[1]))
rules["groups"][0]["rules"] += [
    {"record": "account:latch:max", "expr": "max by (account) (up) or account:latch:max offset 1m"},
    {"record": "account:alerts:count", "expr": 'count by (account) (ALERTS{alertstate="firing"})'},
    {"record": "account:long:sum", "expr": "sum by (account) (up" + " + up" * 80 + ")"},
]
json.dump(rules, open(sys.argv[2], "w"))
PY
if python3 tests/e2e/mixin_lint.py "$work/default/json/prometheusAlerts.json" "$work/stateful.json" "$work/default/json/grafanaDashboards.json" >"$work/lint-stateful.log"; then
    fail "the lint passed rules that keep state"
fi
for said in 'account:latch:max reads a recorded series at an offset' 'account:alerts:count reads ALERTS' 'account:long:sum is 421 characters, more than 400'; do
    grep -q "$said" "$work/lint-stateful.log" || fail "the lint did not say \"$said\": $(cat "$work/lint-stateful.log")"
done
echo "lint: a rule that reads its own past or ALERTS, or past 400 characters, is refused and named"

python3 - "$work/default/json" "$work/override/json" <<'PY' || fail "the override did not change the rendering as configured"
import json, sys
d, o = ({n: json.load(open(f"{p}/{n}.json")) for n in ("prometheusAlerts", "prometheusRules", "grafanaDashboards")} for p in sys.argv[1:3])

def alerts(m):
    return {r["alert"]: r for g in m["prometheusAlerts"]["groups"] for r in g["rules"]}

def dashboard(m):
    return m["grafanaDashboards"]["reputation-exporter.json"]

def exprs(dash):
    out = [a["expr"] for a in dash["annotations"]["list"]]
    for p in dash["panels"]:
        out += [t["expr"] for t in p.get("targets", [])]
    return out

def steps(dash, title):
    panel = next(p for p in dash["panels"] if p["title"] == title)
    return [s["value"] for s in panel["fieldConfig"]["defaults"]["thresholds"]["steps"]]

def check(what, got, want):
    assert got == want, f"{what}: {got!r}, expected {want!r}"

da, oa = alerts(d), alerts(o)
check("default score alert", da["ReputationSenderScoreLowAssets"]["expr"], 'sum by (job, account) (last_over_time(account_kind:reputation_senderscore_low_assets:count{job="reputation"}[20m])) > 0')
check("override score alert", oa["ReputationSenderScoreLowAssets"]["expr"], 'sum by (job, tenant) (last_over_time(account_kind:reputation_senderscore_low_assets:count{job="mail-reputation"}[20m])) > 0')
low_count = next(r for g in o["prometheusRules"]["groups"] for r in g["rules"] if r.get("record") == "account_kind:reputation_senderscore_low_assets:count")
assert "reputation_senderscore{job=\"mail-reputation\"}) < 80)" in low_count["expr"], low_count
assert "tenant=%q" in oa["ReputationSenderScoreLowAssets"]["annotations"]["description"], "the worst assets of the alert's account"
assert "dashboard_url" not in da["ReputationSndsRedAssets"]["annotations"], "no link without dashboardUrl"
check("dashboard link", oa["ReputationSndsRedAssets"]["annotations"]["dashboard_url"], "https://grafana.example.com/d/reputation-exporter?var-job={{ $labels.job }}&var-account={{ $labels.tenant }}")
check("override gap tolerance", oa["ReputationApiDown"]["keep_firing_for"], "5m")
check("override gap tolerance of the pages", oa["ReputationBlacklistListed"]["keep_firing_for"], "10m")
assert "below 80;" in oa["ReputationSenderScoreLowAssets"]["annotations"]["description"]
# The servers' watch of a fleet's global view selects its own scrape job, whose `instance` is
# the view's address, not a replica of the exporter.
check("override global view", oa["ReputationGlobalViewDown"]["expr"], 'up{job="mail-reputation-global"} == 0')
for name, rule in oa.items():
    expr = rule["expr"]
    if name not in ("ReputationExporterReloadFailed", "ReputationGlobalViewDown"):
        assert 'job="mail-reputation"' in expr and 'job="reputation"' not in expr, f"{name}: {expr}"
    check(f"{name} runbook", rule["annotations"]["runbook_url"], f"https://wiki.example.com/reputation/runbook#{name.lower()}")
    if name != "ReputationGlobalViewDown":
        assert "$labels.instance" not in rule["annotations"]["description"], name
    assert "instance" not in expr, f"{name}: {expr}"
check("standing listings", oa["ReputationBlacklistedAssets"]["expr"], 'sum by (job, tenant) (last_over_time(account_kind:reputation_blacklisted_assets:count{job="mail-reputation"}[20m])) > 0')
# The pages join the replicas by the replica label, and hold while no replica of the account
# (by its label) serves its lists.
unnamed = oa["ReputationAssetBlacklisted"]["expr"]
assert "min without (pod, shard)" in unnamed and "unless on (job, tenant)" in unnamed, unnamed
for name, rule in {**da, **oa}.items():
    assert "ALERTS" not in rule["expr"], f"{name} reads ALERTS"
assert "$labels.pod" in oa["ReputationExporterReplicaDown"]["annotations"]["description"]
for group in o["prometheusRules"]["groups"]:
    for rule in group["rules"]:
        assert 'job="mail-reputation"' in rule["expr"], rule
        assert "instance" not in rule["expr"], rule
        assert "max without (pod)" in rule["expr"] and "by (job, tenant, shard" in rule["expr"], rule

dd, od = dashboard(d), dashboard(o)
check("default score colours", steps(dd, "Worst Sender Score"), [None, 70, 80])
check("override score colours", steps(od, "Worst Sender Score"), [None, 80, 90])
check("override score bars", steps(od, "Worst Sender Scores"), [None, 80, 90])
job = next(v for v in od["templating"]["list"] if v["name"] == "job")
check("override job variable", job["definition"], 'label_values(account_kind:reputation_assets:count{job="mail-reputation"}, job)')
account = next(v for v in od["templating"]["list"] if v["name"] == "account")
check("override account variable", account["definition"], 'label_values(account_kind:reputation_assets:count{job=~"$job"}, tenant)')
picker = next(v for v in od["templating"]["list"] if v["name"] == "asset")["definition"]
assert "max without (pod, shard)" in picker and 'tenant=~"$account"' in picker and "instance" not in picker, picker
changed = 0
for before, after in zip(exprs(dd), exprs(od)):
    assert 'tenant=~"$account"' in after and 'account=~' not in after, after
    assert "without (instance" not in after, after
    changed += before != after
check("dashboard queries changed", changed, len(exprs(dd)))
print(f"override: {len(oa)} alert expressions and runbook links, {changed} dashboard queries and the score colours follow _config")
PY

# The kube-prometheus example of docs/deploying.md, vendored where jsonnet-bundler puts it
# (vendor/<host>/<owner>/<repository>/<subdirectory>).
mkdir -p "$work/vendor/github.com/reputation-exporter/reputation-exporter"
ln -s "$PWD/mixin" "$work/vendor/github.com/reputation-exporter/reputation-exporter/mixin"
awk '/^```jsonnet/{block=1; next} block && /^```/{exit} block{print}' docs/deploying.md >"$work/kube.jsonnet"
jsonnet -J "$work/vendor" "$work/kube.jsonnet" >"$work/kube.json" 2>"$work/kube.log" ||
    fail "the jsonnet example of docs/deploying.md does not evaluate"
python3 - "$work/kube.json" <<'PY' || fail "the jsonnet example of docs/deploying.md does not give what it says"
import json, sys
out = json.load(open(sys.argv[1]))
rule = out["reputation-prometheusrule"]
rules = [r for g in rule["spec"]["groups"] for r in g["rules"]]
low = next(r for r in rules if r.get("record") == "account_kind:reputation_senderscore_low_assets:count")
assert 'max without (instance) (reputation_senderscore{job="mail-reputation"}) < 80)' in low["expr"], low
assert any("record" in r for r in rules), "no recording rules"
assert out["reputation-dashboard"]["uid"] == "reputation-exporter"
print(f"docs/deploying.md example: {len(rules)} rules in the PrometheusRule, the dashboard")
PY

# The generate script with RUNBOOK_URL puts it in every link and in the unit.
copy="$work/copy"
mkdir -p "$copy"
cp -r Cargo.toml deploy mixin "$copy/"
RUNBOOK_URL=https://wiki.example.com/rb bash "$copy/deploy/generate.sh"
links=$(grep -c 'runbook_url: "https://wiki.example.com/rb#' "$copy/deploy/prometheus/alerts.yml")
[ "$links" = "$(grep -c -- '- alert: ' "$copy/deploy/prometheus/alerts.yml")" ] || fail "RUNBOOK_URL reached $links alerts"
grep -q '^Documentation=.* https://wiki.example.com/rb$' "$copy/deploy/systemd/reputation-exporter.service" ||
    fail "RUNBOOK_URL did not reach the unit"
echo "mixin: passed"
