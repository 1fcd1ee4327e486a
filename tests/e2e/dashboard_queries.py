"""The shipped dashboard's queries as Grafana sends them, against a real Prometheus.

Every variable as Grafana resolves it at its default (All for job, account and kind, an empty
search; `label_values(SELECTOR, LABEL)` through the label values API with the selector as
`match[]`, `query_result(EXPR)` as an instant query), the asset view on the first asset the
picker offers (the worst), every panel query (instant ones at now, the others as range queries
over the default time range at the step Grafana picks for the panel's width on a 1,920-pixel
screen, `$__rate_interval` as Grafana computes it) and every annotation query. For each, the
series it returns and the time Prometheus took to answer, as a Markdown table.

Usage: dashboard_queries.py PROMETHEUS_URL DASHBOARD_JSON [--bounds]
  --bounds: fail unless every query succeeds, none returns more than 300 series and no picker
  offers more than 1,000 values (the times are reported, not asserted).
"""

import json
import sys
import time
import urllib.parse
import urllib.request

RANGE = 7 * 86400
SCRAPE = 60
SCREEN = 1920
MAX_SERIES = 300
MAX_VALUES = 1000
NICE = [1, 5, 10, 15, 20, 30, 60, 120, 300, 600, 900, 1200, 1800, 3600, 7200, 10800, 21600,
        43200, 86400]


def get(url, path, params):
    query = urllib.parse.urlencode(params, doseq=True)
    started = time.monotonic()
    with urllib.request.urlopen(f"{url}{path}?{query}", timeout=120) as r:
        answer = json.load(r)
    took = time.monotonic() - started
    if answer.get("status") != "success":
        raise SystemExit(f"{params}: {answer}")
    return answer["data"], took


def step_for(width):
    """Grafana's interval for a panel `width` columns wide over RANGE: the range over the
    panel's pixels, rounded to the nearest of Grafana's nice intervals."""
    pixels = SCREEN * width / 24
    raw = RANGE / pixels
    return min(NICE, key=lambda nice: abs(nice - raw))


def substitute(expr, values, step):
    rate = max(step + SCRAPE, 4 * SCRAPE)
    for name, value in values.items():
        expr = expr.replace(f'"${name}"', f'"{value}"').replace(f"${{{name}}}", value)
    expr = expr.replace("$__rate_interval", f"{rate}s").replace("$__interval", f"{step}s")
    if "$" in expr:
        raise SystemExit(f"a variable is left in {expr}")
    return expr


def fleet_targets(dashboard):
    """The fleet overview's queries (every panel above the first row after the top), with job,
    account and kind at All, as (panel title, expression, whether instant)."""
    values = {"job": ".*", "account": ".*", "kind": ".*"}
    for panel in dashboard["panels"]:
        if panel["type"] == "row" and panel["gridPos"]["y"] > 0:
            return
        for target in panel.get("targets", []):
            yield panel["title"], substitute(target["expr"], values, SCRAPE), target.get("instant", False)


def main():
    url, path = sys.argv[1], sys.argv[2]
    bounds = "--bounds" in sys.argv[3:]
    dashboard = json.load(open(path))
    now = time.time()
    values = {"job": ".*", "account": ".*", "kind": ".*", "search": ""}
    rows, problems = [], []

    for variable in dashboard["templating"]["list"]:
        if variable.get("type") != "query" or variable["name"] == "datasource":
            continue
        definition = substitute(variable["definition"], values, 60)
        if definition.startswith("label_values("):
            inner = definition[len("label_values("):-1]
            selector, label = (part.strip() for part in inner.rsplit(",", 1))
            data, took = get(url, f"/api/v1/label/{label}/values", {"match[]": selector})
            offered = data
        elif definition.startswith("query_result("):
            data, took = get(url, "/api/v1/query", {"query": definition[len("query_result("):-1], "time": now})
            offered = [s["metric"].get(variable["name"], "") for s in data["result"]]
        else:
            raise SystemExit(f"variable {variable['name']}: {definition}")
        rows.append((f"variable ${variable['name']}", "picker", len(offered), took))
        if len(offered) > MAX_VALUES:
            problems.append(f"${variable['name']} offers {len(offered)} values")
        if variable["name"] == "asset":
            if not offered:
                raise SystemExit("the asset picker offers nothing")
            values["asset"] = offered[0].replace(".", "\\\\.")
            # A search, as a table's link sets it: the asset's name.
            searched = substitute(variable["definition"], {**values, "search": values["asset"]}, 60)
            data, took = get(url, "/api/v1/query", {"query": searched[len("query_result("):-1], "time": now})
            found = [s["metric"].get("asset", "") for s in data["result"]]
            rows.append((f"variable $asset, searching {offered[0]}", "picker", len(found), took))
            if found != [offered[0]]:
                problems.append(f"searching {offered[0]} offers {found[:5]}")

    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            step = step_for(panel["gridPos"]["w"])
            expr = substitute(target["expr"], values, step)
            if target.get("instant"):
                data, took = get(url, "/api/v1/query", {"query": expr, "time": now})
                kind = "instant"
            else:
                data, took = get(url, "/api/v1/query_range",
                                 {"query": expr, "start": now - RANGE, "end": now, "step": step})
                kind = f"range, step {step}s"
            label = panel["title"] + (f" ({target['legendFormat']})" if target.get("legendFormat") else "")
            rows.append((label, kind, len(data["result"]), took))
            if len(data["result"]) > MAX_SERIES:
                problems.append(f"{label}: {len(data['result'])} series")
    for annotation in dashboard["annotations"]["list"]:
        step = int(annotation.get("step", "5m").rstrip("m")) * 60
        expr = substitute(annotation["expr"], values, step)
        data, took = get(url, "/api/v1/query_range",
                         {"query": expr, "start": now - RANGE, "end": now, "step": step})
        rows.append((f"annotation {annotation['name']}", f"range, step {step}s", len(data["result"]), took))
        if len(data["result"]) > MAX_SERIES:
            problems.append(f"annotation {annotation['name']}: {len(data['result'])} series")

    print("| query | as | series | seconds |")
    print("|---|---|---|---|")
    for label, kind, series, took in rows:
        print(f"| {label} | {kind} | {series} | {took:.3f} |")
    slowest = max(rows, key=lambda r: r[3])
    most = max(rows, key=lambda r: r[2])
    print(f"\n{len(rows)} queries; slowest {slowest[0]}: {slowest[3]:.3f} s; "
          f"most series {most[0]}: {most[2]}; asset view on {values.get('asset')}")
    if bounds and problems:
        raise SystemExit("over the bounds: " + "; ".join(problems))


if __name__ == "__main__":
    main()
