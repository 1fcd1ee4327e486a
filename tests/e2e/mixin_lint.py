#!/usr/bin/env python3
"""The checks `mixtool lint` applies to a monitoring mixin, on its rendering as JSON.

  mixin_lint.py ALERTS.json RULES.json DASHBOARDS.json

Alerts: names CamelCase with the mixin's common prefix, `severity` critical/warning/info, a
static `summary` starting with a capital and ending with a period, a templated `description`, a
`runbook_url`. Groups: unique names, at least one rule, at most MAX_RULES. Rules, recording
ones included: at most MAX_EXPR characters, and stateless: none reads `ALERTS` or
`ALERTS_FOR_STATE`, nor a recorded series (a name with a colon) at an `offset`, so the outcome
is the same whatever the evaluation interval and the order of groups. Dashboards: a title and a
uid each; every panel and annotation query on the datasource variable and selecting the job
and account variables. Prints each problem and exits 1 when there is one.
"""
import json
import re
import sys

PREFIX = "Reputation"
SEVERITIES = {"critical", "warning", "info"}
# Prometheus evaluates a group's rules one after the other, and its groups side by side: mixins
# keep groups small: at most MAX_RULES rules, each group's rules of one concern.
MAX_RULES = 20
# A rule a person on call can read.
MAX_EXPR = 400
# A recorded series read at an offset: a rule remembering what it decided before.
RECORDED_OFFSET = re.compile(r"[a-z_]+:[a-z_]+:[a-z0-9_]+(\{[^}]*\})?(\[[^\]]*\])?\s+offset\b")
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}

problems = []


def problem(text):
    problems.append(text)


def lint_groups(what, groups):
    names = [g.get("name") for g in groups]
    for name in names:
        if not name or not re.fullmatch(r"[a-z][a-z0-9_.-]*", name):
            problem(f"{what}: group name {name!r} is not lower case dotted words")
        if names.count(name) > 1:
            problem(f"{what}: group name {name!r} is used twice")
    for g in groups:
        rules = g.get("rules", [])
        if not rules:
            problem(f"{what}: group {g.get('name')} has no rule")
        elif len(rules) > MAX_RULES:
            problem(f"{what}: group {g.get('name')} has {len(rules)} rules, more than {MAX_RULES}")


def lint_alert(rule):
    name = rule.get("alert", "")
    if not re.fullmatch(rf"{PREFIX}(?:[A-Z][a-z0-9]+)+", name):
        problem(f"alert {name!r}: not CamelCase starting with {PREFIX}")
    severity = rule.get("labels", {}).get("severity")
    if severity not in SEVERITIES:
        problem(f"{name}: severity {severity!r} is not one of {sorted(SEVERITIES)}")
    notes = rule.get("annotations", {})
    summary = notes.get("summary", "")
    if "{{" in summary:
        problem(f"{name}: summary is templated; it must be static")
    if not (summary[:1].isupper() and summary.endswith(".")):
        problem(f"{name}: summary {summary!r} must start with a capital and end with a period")
    if "{{" not in notes.get("description", ""):
        problem(f"{name}: description is not templated")
    if not notes.get("runbook_url"):
        problem(f"{name}: no runbook_url")


def queries(dashboard):
    for a in dashboard.get("annotations", {}).get("list", []):
        if "expr" in a:
            yield f"annotation {a.get('name')}", a.get("datasource"), a["expr"]
    for panel in dashboard.get("panels", []):
        if panel.get("type") == "row":
            continue
        if panel.get("datasource") != DATASOURCE:
            problem(f"panel {panel.get('title')}: not on the datasource variable")
        targets = panel.get("targets", [])
        if not targets:
            problem(f"panel {panel.get('title')}: no query")
        for t in targets:
            yield f"panel {panel.get('title')}", t.get("datasource"), t.get("expr", "")


def lint_dashboard(file, dashboard):
    for key in ("title", "uid"):
        if not dashboard.get(key):
            problem(f"{file}: no {key}")
    variables = {v.get("name") for v in dashboard.get("templating", {}).get("list", [])}
    for needed in ("datasource", "job", "account"):
        if needed not in variables:
            problem(f"{file}: no ${needed} variable")
    for where, datasource, expr in queries(dashboard):
        if datasource != DATASOURCE:
            problem(f"{file} {where}: query not on the datasource variable")
        for variable in ("$job", "$account"):
            if f'=~"{variable}"' not in expr:
                problem(f"{file} {where}: query does not select {variable}: {expr}")


def lint_stateless(what, rule):
    name = rule.get("alert") or rule.get("record")
    expr = rule.get("expr", "")
    if len(expr) > MAX_EXPR:
        problem(f"{what}: {name} is {len(expr)} characters, more than {MAX_EXPR}")
    if re.search(r"\bALERTS(_FOR_STATE)?\b", expr):
        problem(f"{what}: {name} reads ALERTS")
    if RECORDED_OFFSET.search(expr):
        problem(f"{what}: {name} reads a recorded series at an offset")


def main():
    alerts, rules, dashboards = (json.load(open(p)) for p in sys.argv[1:4])
    lint_groups("alerts", alerts["groups"])
    lint_groups("rules", rules["groups"])
    for what, groups in (("alerts", alerts["groups"]), ("rules", rules["groups"])):
        for group in groups:
            for rule in group["rules"]:
                lint_stateless(what, rule)
    for group in alerts["groups"]:
        for rule in group["rules"]:
            if "alert" not in rule:
                problem(f"alerts: group {group['name']} holds a recording rule")
            else:
                lint_alert(rule)
    for group in rules["groups"]:
        for rule in group["rules"]:
            if not re.fullmatch(r"[a-z_]+:[a-z_]+:[a-z_]+", rule.get("record", "")):
                problem(f"rules: {rule.get('record')!r} is not level:metric:operations")
    if not dashboards:
        problem("no dashboard")
    for file, dashboard in dashboards.items():
        lint_dashboard(file, dashboard)
    for p in problems:
        print(p)
    count = sum(len(g["rules"]) for g in alerts["groups"])
    print(f"mixin lint: {count} alerts, {len(dashboards)} dashboard(s), {len(problems)} problem(s)")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
