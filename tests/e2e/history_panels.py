"""The shipped dashboard over backfilled history, as Grafana would query it.

Runs every panel query and every annotation query of deploy/grafana/dashboard.json as a range
query against a real Prometheus holding the blocks of `backfill --demo`, at the steps Grafana
uses for a month and for three months (1h and 1d), with the variables replaced as Grafana
replaces them (All for job, account and kind; one asset picked for the drill-down). Every query
must succeed, and for the demo's 192.0.2.1 the trend panels and the annotations must show what
the backfill file says: each day's Sender Score, the listing episode on Spamhaus SBL from its
listing to its delisting, and the score dip while it lasted.

Usage: history_panels.py PROMETHEUS_URL HISTORY_FILE DASHBOARD_JSON
"""

import json
import re
import sys
import urllib.parse
import urllib.request

ASSET = "192.0.2.1"
BLACKLIST = "Spamhaus SBL"
LOOKBACK = 26 * 3600
STEPS = {"1h": 3600, "1d": 86400}


def fail(message):
    print(f"history panels: FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def read_history(path):
    """The samples of ASSET in the backfill file: {(family, blacklist): [(time, value)]}."""
    series = {}
    line_re = re.compile(r"^(\w+)\{(.*)\} (\S+) (\d+)$")
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = line_re.match(line.rstrip("\n"))
            if not m:
                continue
            name, labels, value, at = m.groups()
            found = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', labels))
            if found.get("asset") != ASSET:
                continue
            key = (name, found.get("blacklist"))
            series.setdefault(key, []).append((int(at), float(value)))
    return series


def last_over_time(samples, at):
    """What `last_over_time(x[26h])` gives at `at`: the newest sample in (at - 26h, at]."""
    value = None
    for t, v in samples:
        if at - LOOKBACK < t <= at:
            value = v
    return value


def regions(points, step):
    """Grafana's Prometheus annotations: points above 0, grouped when at most a step apart."""
    found = []
    for t in (t for t, v in points if v > 0):
        if found and found[-1][1] + step >= t:
            found[-1][1] = t
        else:
            found.append([t, t])
    return [tuple(r) for r in found]


def grafana_expr(expr, step):
    """The query Grafana sends: variables replaced, regex values escaped."""
    asset = re.sub(r"([.\\+*?\[^\]$(){}=!<>|:-])", r"\\\\\1", ASSET)
    replaced = (
        expr.replace("$__rate_interval", f"{max(step + 15, 60)}s")
        .replace("$__interval", f"{step}s")
        .replace('"$job"', '".*"')
        .replace('"$account"', '".*"')
        .replace('"$kind"', '".*"')
        .replace('"$asset"', f'"{asset}"')
    )
    if "$" in replaced:
        fail(f"a variable is left in {replaced}")
    return replaced


def query_range(url, expr, start, end, step):
    params = urllib.parse.urlencode(
        {"query": expr, "start": start, "end": end, "step": step}
    )
    with urllib.request.urlopen(f"{url}/api/v1/query_range?{params}", timeout=30) as r:
        answer = json.load(r)
    if answer.get("status") != "success":
        fail(f"{expr}: {answer}")
    return answer["data"]["result"]


def points_of(result, **labels):
    """The points of the one series whose labels include `labels`."""
    chosen = [s for s in result if all(s["metric"].get(k) == v for k, v in labels.items())]
    if len(chosen) != 1:
        fail(f"expected one series with {labels}, got {[s['metric'] for s in result]}")
    return [(int(t), float(v)) for t, v in chosen[0]["values"]]


def expected_points(samples, start, end, step):
    points = []
    for at in range(start, end + 1, step):
        value = last_over_time(samples, at)
        if value is not None:
            points.append((at, value))
    return points


def main():
    url, history_path, dashboard_path = sys.argv[1:4]
    history = read_history(history_path)
    scores = history.get(("reputation_senderscore", None))
    counts = history.get(("reputation_blacklistings", None))
    listed = history.get(("reputation_blacklist_listed", BLACKLIST))
    if not scores or not counts or not listed:
        fail(f"the backfill file lacks {ASSET}'s history: {sorted(history)}")
    # The episode as the file has it: the first run of 1s, ended by the 0 after it.
    listing = next(t for t, v in listed if v == 1)
    delisting = next(t for t, v in listed if t > listing and v == 0)
    first = min(t for series in history.values() for t, _ in series)
    last = max(t for series in history.values() for t, _ in series)
    start, end = first - first % 3600, last + 86400

    with open(dashboard_path, encoding="utf-8") as f:
        dashboard = json.load(f)
    queries = []
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            queries.append((panel["title"], target.get("legendFormat", ""), target["expr"]))
    annotations = {a["name"]: a for a in dashboard["annotations"]["list"]}

    for step_name, step in STEPS.items():
        answers = {}
        for title, legend, expr in queries:
            answers[(title, legend)] = query_range(
                url, grafana_expr(expr, step), start, end, step
            )
        empty = sorted(f"{t} ({legend})" if legend else t for (t, legend), r in answers.items() if not r)
        print(f"history panels: step {step_name}: {len(answers)} queries answered; "
              f"live-only, so empty over the history: {', '.join(empty) or 'none'}")

        # Sender Score: every step of the history period, each with the file's value.
        got = points_of(answers[("Sender Score", "{{asset}} current")], asset=ASSET)
        want = expected_points(scores, start, end, step)
        if got != want:
            fail(f"step {step_name}: Sender Score of {ASSET}: got {len(got)} points, "
                 f"want {len(want)}; first difference "
                 f"{next(((g, w) for g, w in zip(got, want) if g != w), None)}")
        day = scores[len(scores) // 2]
        shown = [v for t, v in got if day[0] <= t < day[0] + step]
        print(f"history panels: step {step_name}: Sender Score {day[1]:g} on "
              f"{day[0]} shown as {shown[:1]}; {len(got)} points, no gap")

        # The listing on Spamhaus SBL: 1 from the listing to the delisting, nothing after.
        got = points_of(
            answers[("Blacklistings", "{{asset}} on {{blacklist}}")],
            asset=ASSET,
            blacklist=BLACKLIST,
        )
        want = [(t, 1.0) for t, v in expected_points(listed, start, end, step) if v == 1]
        if got != want or not got:
            fail(f"step {step_name}: listing of {ASSET} on {BLACKLIST}: got {got}, want {want}")
        if not all(listing <= t < delisting for t, _ in got):
            fail(f"step {step_name}: listed outside {listing}..{delisting}: {got}")
        print(f"history panels: step {step_name}: listed on {BLACKLIST} at "
              f"{got[0][0]}..{got[-1][0]} (listing {listing}, delisting {delisting})")

        # The count during the episode, and the score dip it caused.
        count = points_of(answers[("Blacklistings", "{{asset}} count")], asset=ASSET)
        if count != expected_points(counts, start, end, step):
            fail(f"step {step_name}: blacklistings of {ASSET} differ from the file")
        score = dict(points_of(answers[("Sender Score", "{{asset}} current")], asset=ASSET))
        during = [v for t, v in score.items() if listing + LOOKBACK <= t < delisting]
        before = [v for t, v in score.items() if listing - 8 * 86400 <= t < listing]
        if step == 3600 and (not during or not before or max(during) >= min(before)):
            fail(f"no score dip: during the listing {during}, before it {before}")
        if during and before:
            print(f"history panels: step {step_name}: score {min(before):g}..{max(before):g} "
                  f"before the listing, {min(during):g}..{max(during):g} during it")

        # The fleet view reads recording rules, which start when they are loaded: over the
        # backfilled past it is empty, and never draws per-asset series in their place.
        fleet = answers[("Assets listed per blacklist over time (asset reports)", "{{blacklist}}")]
        if any(t < end - 86400 for s in fleet for t, _ in s["values"]):
            fail(f"step {step_name}: the fleet panel shows the past without recording rules")

        # Annotations: the listing and the blacklisted period as regions, as Grafana groups them.
        listing_result = query_range(
            url, grafana_expr(annotations["Listings"]["expr"], step), start, end, step
        )
        got = regions(points_of(listing_result, asset=ASSET, blacklist=BLACKLIST), step)
        want = regions([(t, v) for t, v in expected_points(listed, start, end, step) if v == 1], step)
        if got != want or len(got) != 1:
            fail(f"step {step_name}: listing annotation {got}, want {want}")
        began, ended = got[0]
        if not (listing <= began < listing + step and delisting - step <= ended < delisting):
            fail(f"step {step_name}: listing annotation {got[0]} is not at {listing}..{delisting}")
        blacklisted_result = query_range(
            url, grafana_expr(annotations["Blacklisted"]["expr"], step), start, end, step
        )
        got = regions(points_of(blacklisted_result, asset=ASSET), step)
        want = regions(expected_points(counts, start, end, step), step)
        if got != want or not got:
            fail(f"step {step_name}: blacklisted annotation {got}, want {want}")
        print(f"history panels: step {step_name}: annotations: listed {began}..{ended}, "
              f"blacklisted {got}")
    print("history panels: passed")


if __name__ == "__main__":
    main()
