#!/usr/bin/env python3
"""What the shipped rules cost Prometheus: for every rule, the samples its evaluation reads,
counted as Prometheus counts them (each vector selector: the series it matches times the
samples each holds over its range, one for an instant selector), from the series an exporter
serves.

    rule_cost.py EXPOSITION REPLICAS SCRAPE_SECONDS RULE_FILE...

EXPOSITION is one replica's /metrics (0.0.4 text); every replica serves the same series, so a
selector of a per-asset or API series matches REPLICAS times the series of the exposition.
`up` is one series per replica. A recording rule's result (a name with `:`) is a few series per
account and kind, written once per evaluation of its group: its series are counted from the
exposition's kinds and each holds range / group interval samples, except the records of
DENSE, one series per asset that has the per-asset series they are made of (the delistings':
only those of the last 12 hours, counted back from the exposition's newest last success). ALERTS is not counted (no
shipped rule reads it; rules of earlier versions that did are undercounted).

Prints a line per rule and per group (samples per evaluation and per minute) and the total per
minute; with --json, the same as one JSON object on the last line.
"""
import json
import re
import sys

import yaml

DURATION = re.compile(r"(\d+)(ms|s|m|h|d|w)")
UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless",
            "bool", "offset", "inf", "nan", "sum", "min", "max", "avg", "count", "stddev", "stdvar",
            "topk", "bottomk", "quantile", "count_values", "group"}
LISTS = {"by", "without", "on", "ignoring", "group_left", "group_right"}
MATCHER = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"')
SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? ")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
# Recording rules with one series per asset (or per asset and blacklist): name -> the per-asset
# series it has one for, less those of a second family, and the age in seconds past which a
# series' value (a timestamp) keeps it out (the delistings: the blacklists of a report with no
# listed-since series, that delisted the asset within the 12 hours a listing pages).
DENSE = {
    "asset:reputation_blacklistings_named:reported": ("reputation_blacklistings_named", None, None),
    "asset_blacklist:reputation_blacklist_delisted:max": (
        "reputation_blacklist_last_change_timestamp_seconds",
        "reputation_blacklist_listed_since_timestamp_seconds",
        43200,
    ),
}
KEY = ("kind", "asset", "blacklist")


def seconds(text):
    return sum(int(n) * UNITS[u] for n, u in DURATION.findall(text))


def load_series(path):
    """Every series of the exposition as (name, labels, value)."""
    series = []
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            m = SAMPLE.match(line)
            if m:
                value = float(line.rsplit(None, 1)[1])
                series.append((m.group(1), dict(LABEL.findall(m.group(3) or "")), value))
    return series


def dense(name, series):
    """The series of the DENSE record `name`: one per key of its family's series that the
    second family lacks, and that is younger than its age limit."""
    plus, minus, age = DENSE[name]
    now = max((v for s, labels, v in series if s == "reputation_last_success_timestamp_seconds"), default=0)
    minus_keys = {tuple(labels.get(k) for k in KEY) for s, labels, v in series if s == minus}
    return sum(
        1
        for s, labels, v in series
        if s == plus and tuple(labels.get(k) for k in KEY) not in minus_keys and (age is None or v > now - age)
    )


def matches(labels, matchers):
    for name, op, value in matchers:
        have = labels.get(name, "")
        if name == "job":
            have = "reputation"
        if op == "=" and have != value:
            return False
        if op == "!=" and have == value:
            return False
        if op == "=~" and not re.fullmatch(value, have):
            return False
        if op == "!~" and re.fullmatch(value, have):
            return False
    return True


def selectors(expr):
    """(name, matchers, range seconds or None) of every vector selector of a PromQL expression:
    an identifier that is not a keyword, not a function (followed by `(`), not a label name of
    a `by (...)`-like list or of a selector's braces, with its braces and range."""
    # Blank out strings (label_replace's arguments), keeping offsets.
    blank = re.sub(r'"(?:[^"\\]|\\.)*"', lambda m: '"' + " " * (len(m.group(0)) - 2) + '"', expr)
    out = []
    i, depth_braces, label_list = 0, 0, 0
    while i < len(blank):
        c = blank[i]
        if c == "{":
            depth_braces += 1
        elif c == "}":
            depth_braces -= 1
        elif c == ")" and label_list:
            label_list -= 1
        m = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*").match(blank, i)
        if not m or (i > 0 and (blank[i - 1].isalnum() or blank[i - 1] in "_:.")):
            i += 1
            continue
        word, j = m.group(0), m.end()
        rest = blank[j:].lstrip()
        if depth_braces or label_list:
            i = j
            continue
        if word in LISTS:
            if rest.startswith("("):
                label_list += 1
                i = blank.index("(", j) + 1
            else:
                i = j
            continue
        if word in KEYWORDS or rest.startswith("("):
            i = j
            continue
        k = j + (len(blank[j:]) - len(rest))
        braces = ""
        if rest.startswith("{"):
            end = blank.index("}", k)
            braces = expr[k : end + 1]
            k = end + 1
        rng = None
        after = blank[k:].lstrip()
        if after.startswith("["):
            start = blank.index("[", k)
            end = blank.index("]", start)
            rng = seconds(blank[start + 1 : end].split(":")[0])
            k = end + 1
        out.append((word, MATCHER.findall(braces), rng))
        i = k
    return out


def cost(expr, series, replicas, scrape, group_interval, kinds, dense_counts):
    total = 0
    parts = []
    for name, matchers, rng in selectors(expr):
        if name == "ALERTS":
            continue
        if name in DENSE:
            n = dense_counts[name]
            samples = max(1, int(rng // group_interval)) if rng else 1
        elif ":" in name:
            # A recording rule's result: about one series per account and kind (and blacklist
            # or colour), one sample per evaluation of its group.
            n = kinds
            samples = max(1, int(rng // group_interval)) if rng else 1
        elif name == "up":
            n, samples = replicas, max(1, int(rng // scrape)) if rng else 1
        else:
            n = replicas * sum(1 for s, labels, v in series if s == name and matches(labels, matchers))
            samples = max(1, int(rng // scrape)) if rng else 1
        total += n * samples
        parts.append((name, n, samples))
    return total, parts


def main():
    args = [a for a in sys.argv[1:] if a != "--json"]
    as_json = "--json" in sys.argv[1:]
    exposition, replicas, scrape, files = args[0], int(args[1]), float(args[2]), args[3:]
    series = load_series(exposition)
    kinds = len({labels.get("kind") for name, labels, v in series if "kind" in labels}) or 1
    # Each DENSE record counted once per exposition, however many rules read it.
    dense_counts = {name: dense(name, series) for name in DENSE}
    result = {"groups": {}, "rules": {}, "per_minute": 0}
    for path in files:
        for group in yaml.safe_load(open(path))["groups"]:
            interval = seconds(group.get("interval", "1m"))
            group_total = 0
            for rule in group["rules"]:
                name = rule.get("alert") or rule.get("record")
                total, parts = cost(rule["expr"], series, replicas, scrape, 300, kinds, dense_counts)
                group_total += total
                result["rules"][f'{group["name"]}/{name}'] = {
                    "samples": total,
                    "per_minute": total * 60 / interval,
                    "characters": len(rule["expr"].strip()),
                }
                if not as_json:
                    detail = ", ".join(f"{n} {s}x{k}" for n, s, k in parts)
                    print(f'  {name:45s} {total:>12,d}  ({detail})')
            per_minute = group_total * 60 / interval
            result["groups"][group["name"]] = {"samples": group_total, "interval": interval, "per_minute": per_minute}
            result["per_minute"] += per_minute
            if not as_json:
                print(f'{group["name"]:47s} {group_total:>12,d} per evaluation, every {interval:.0f}s: {per_minute:,.0f} a minute')
    if as_json:
        print(json.dumps(result))
    else:
        print(f"all groups: {result['per_minute']:,.0f} samples a minute")


if __name__ == "__main__":
    main()
