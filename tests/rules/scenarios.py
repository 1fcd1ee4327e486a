#!/usr/bin/env python3
"""The per-asset alerts' promises as timelines, written out as promtool rule tests.

    python3 tests/rules/scenarios.py   (deploy/generate.sh runs it; CI fails on a difference)

Each scenario says what the upstream API does minute by minute (a listing begins, a report
fails, the API goes down), how the topology serves it (replicas polling a few minutes apart,
reports split, restarts, scrapes missed, Prometheus down) and, by hand, which alerts page and
from which minute to which. The script expands that into the series promtool feeds Prometheus
(one sample a minute, as the shipped scrape.yml scrapes) and into checks: each expected alert
is not firing the minute before its first minute, firing at its first and last minute, not
firing the minute after, and its ALERTS series fired exactly as many minutes as expected over
the whole timeline (once, without a gap); no other alert of the watched names fires at all.

Minute m is the sample at m minutes and the evaluation at m minutes; Unix time is m * 60.
"""

import itertools
import os
import sys

STALE = "stale"  # the exporter stopped serving the series: Prometheus writes a stale marker
GONE = None  # no sample (after a stale marker, or before the series existed)
NO_SCRAPE = "_"  # Prometheus scraped nothing (it was down): no sample, no stale marker

POLL = 5  # poll.interval, minutes
JOB = {"job": "reputation", "account": "main"}
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "..", "deploy", "prometheus", "tests")


def labels_text(name, labels):
    inner = ",".join(f'{k}="{v}"' for k, v in labels.items())
    return f"{name}{{{inner}}}"


MAX_AGE = 60  # metrics.max_age, minutes


class Replica:
    """One exporter: its name (the `instance` label), the minute of its first poll (it polls
    every POLL minutes from then on), the minutes it serves nothing (down: a restart, or
    scrapes missed), and the minutes the API fails it."""

    def __init__(
        self,
        instance,
        offset,
        down=(),
        reports=lambda asset: True,
        report_delay=1,
        api_down=(),
        report_fails=(),
        report_rounds=None,
    ):
        self.instance = instance
        self.offset = offset
        self.down = list(down)
        # Whether this replica reports on an asset (asset_reports.replica, include/exclude).
        self.reports = reports
        # Minutes between a list poll and the report it makes the exporter fetch (reports
        # follow the list).
        self.report_delay = report_delay
        # Minutes every request fails (an API outage): the last good values are served until
        # metrics.max_age, then the asset series are dropped.
        self.api_down = list(api_down)
        # Minutes the asset reports fail (the lists still answer).
        self.report_fails = list(report_fails)
        # (first, every): reports fetched only by the report round, at these minutes, and not
        # after each poll (a change the list does not show).
        self.report_rounds = report_rounds

    def is_down(self, minute):
        return any(a <= minute < b for a, b in self.down)

    def polls(self, minute):
        """The minutes of the list polls at or before `minute`, newest first."""
        if minute < self.offset:
            return
        p = minute - (minute - self.offset) % POLL
        while p >= self.offset:
            yield p
            p -= POLL

    def good_poll(self, minute):
        """The minute of the last list poll at or before `minute` that the API answered, or
        None when there is none, or it is older than metrics.max_age."""
        for p in self.polls(minute):
            if not any(a <= p < b for a, b in self.api_down):
                return p if minute - p < MAX_AGE else None
        return None

    def report_view(self, minute):
        """The minute of the upstream state the asset reports served at `minute` show: the
        report fetched after the newest poll whose report answered."""
        if self.report_rounds is not None:
            first, every = self.report_rounds
            if minute < first:
                return None
            return minute - (minute - first) % every
        for p in self.polls(minute):
            fetched = p + self.report_delay
            if fetched > minute:
                continue
            if any(a <= fetched < b for a, b in self.report_fails + self.api_down):
                continue
            return p
        return None


class Timeline:
    def __init__(self, name, comment, minutes, watched):
        self.name = name
        self.comment = comment
        self.minutes = minutes
        self.series = []
        # Alerts that must not fire outside the expectations.
        self.watched = watched
        self.expected = []  # (alertname, labels, [(first, last), ...])
        self.no_scrape = []  # minutes Prometheus scraped nothing: [(first, end)]
        self.replicas = []  # the replicas serving series, each with its health series

    def add(self, name, labels, values):
        assert len(values) == self.minutes, (name, len(values))
        self.series.append((labels_text(name, labels), values))

    def served(self, name, labels, replica, value_at, report=False):
        """A series as `replica` serves it: `value_at(minute)` is the value the upstream shows
        at a minute (None: no series), as of the replica's last good list poll, or for report
        series as of its report; nothing while the replica is down (a stale marker at the
        first scrape without it) or once its lists are older than metrics.max_age (a report's
        series are served with its asset's list only)."""
        if replica not in self.replicas:
            self.replicas.append(replica)
        values = []
        for m in range(self.minutes):
            polled = replica.good_poll(m)
            if replica.is_down(m) or polled is None:
                values.append(GONE)
                continue
            if report:
                if not replica.reports(labels.get("asset")):
                    values.append(GONE)
                    continue
                polled = replica.report_view(m)
            values.append(GONE if polled is None else value_at(polled))
        self.add(name, {**JOB, "instance": replica.instance, **labels}, values)

    def health(self, replica):
        """What `replica` serves of itself: the lists' last success, and the assets it serves
        (none past metrics.max_age)."""
        self.last_success(replica)
        self.add(
            "reputation_assets",
            {**JOB, "instance": replica.instance, "kind": "ip"},
            [GONE if replica.is_down(m) else 1 if replica.good_poll(m) is not None else 0 for m in range(self.minutes)],
        )

    def last_success(self, replica):
        """`reputation_last_success_timestamp_seconds` of both lists as `replica` serves it."""
        for endpoint in ("ip-list", "domain-list"):
            values = []
            last = None
            for m in range(self.minutes):
                for p in replica.polls(m):
                    if not any(a <= p < b for a, b in replica.api_down):
                        last = p
                        break
                values.append(GONE if replica.is_down(m) or last is None else last * 60)
            self.add(
                "reputation_last_success_timestamp_seconds",
                {**JOB, "instance": replica.instance, "endpoint": endpoint},
                values,
            )

    def expect(self, alertname, labels, *intervals, settle=0):
        """`alertname` with `labels` fires from the first to the last minute of each interval.
        With `settle` (minutes), each end may come that much later: for the alerts that read
        a recording rule, which promtool evaluates in the same minute as the alerts, in either
        order."""
        self.expected.append((alertname, labels, list(intervals), settle))

    def prometheus_down(self, first, end):
        self.no_scrape.append((first, end))

    def values_text(self, values):
        """promtool's notation, run-length encoded, with stale markers where a series ends."""
        unscraped = {m for a, b in self.no_scrape for m in range(a, b)}
        texts = {}  # each value's text, formatted once (a series holds few distinct values)
        cells = []
        previous = GONE
        for m, v in enumerate(values):
            if m in unscraped:
                cells.append(NO_SCRAPE)
                continue
            if v is GONE and previous is not GONE and previous != STALE:
                cells.append(STALE)
            elif v is GONE:
                cells.append(NO_SCRAPE)
            else:
                key = (v.__class__, v)
                if key not in texts:
                    texts[key] = format_value(v)
                cells.append(texts[key])
            previous = v if v is not GONE else (STALE if previous is not GONE else GONE)
        out = []
        for cell, run in itertools.groupby(cells):
            n = sum(1 for _ in run)
            if cell == STALE:
                out.extend([STALE] * n)  # each stale marker is a sample of its own
            elif cell == NO_SCRAPE:
                # `_xN` is N missing samples.
                out.append(NO_SCRAPE if n == 1 else f"{NO_SCRAPE}x{n}")
            else:
                # `VxN` is N + 1 samples.
                out.append(cell if n == 1 else f"{cell}x{n - 1}")
        return " ".join(out)

    def render(self):
        for replica in self.replicas:
            self.health(replica)
        lines = [f"  # {line}".rstrip() for line in self.comment.strip().splitlines()]
        lines.append('  - interval: "1m"')
        lines.append("    input_series:")
        for series, values in self.series:
            lines.append(f"      - series: '{series}'")
            lines.append(f'        values: "{self.values_text(values)}"')
        lines.append("    promql_expr_test:")
        last = self.minutes - 1

        def check(expr, minute, sample=None):
            lines.append(f"      - expr: '{expr}'")
            lines.append(f"        eval_time: {minute}m")
            if sample is None:
                lines.append("        exp_samples: []")
            else:
                lines.append("        exp_samples:")
                lines.append(f"          - labels: '{sample[0]}'")
                lines.append(f"            value: {sample[1]}")

        for alertname, labels, intervals, settle in self.expected:
            selector = alerts_selector(alertname, labels)
            full = alerts_labels(alertname, labels)
            for first, end in intervals:
                for minute, firing in ((first - 1, False), (first + settle, True), (end, True), (end + 1 + settle, False)):
                    if 0 <= minute <= last:
                        check(selector, minute, (full, 1) if firing else None)
            if settle:
                # Fired as many minutes as expected, give or take the settling at each end.
                minutes = sum(end - first + 1 for first, end in intervals)
                n = len(intervals) * settle
                window = f"count_over_time({selector}[{self.minutes}m])"
                check(
                    f"({window} >= bool {minutes - n}) * ({window} <= bool {minutes + n})",
                    last,
                    (alerts_labels(alertname, labels, name=False), 1),
                )
        # Over the whole timeline: the expected alerts fired exactly their minutes, and no
        # other watched alert fired.
        exact = [e for e in self.expected if not e[3]]
        names = "|".join(self.watched)
        settling = "|".join(sorted({e[0] for e in self.expected if e[3]}))
        unless = f', alertname!~"{settling}"' if settling else ""
        lines.append(
            f"      - expr: 'count_over_time(ALERTS{{alertstate=\"firing\", alertname=~\"{names}\"{unless}}}[{self.minutes}m])'"
        )
        lines.append(f"        eval_time: {last}m")
        if exact:
            lines.append("        exp_samples:")
            for alertname, labels, intervals, _ in exact:
                minutes = sum(end - first + 1 for first, end in intervals)
                lines.append(f"          - labels: '{alerts_labels(alertname, labels, name=False)}'")
                lines.append(f"            value: {minutes}")
        else:
            lines.append("        exp_samples: []")
        return "\n".join(lines)


SEVERITY = {
    "ReputationBlacklistListed": "critical",
    "ReputationAssetBlacklisted": "critical",
    "ReputationSenderScoreDropped": "critical",
    "ReputationSndsBlocked": "critical",
    "ReputationDataStale": "critical",
    "ReputationSenderScoreLowAssets": "warning",
    "ReputationSndsRedAssets": "warning",
    "ReputationBlacklistedAssets": "info",
    "ReputationSndsBlockedAssets": "info",
}


def alerts_labels(alertname, labels, name=True):
    full = {"alertname": alertname, "alertstate": "firing", **JOB, **labels, "severity": SEVERITY[alertname]}
    return labels_text("ALERTS" if name else "", full)


def alerts_selector(alertname, labels):
    return labels_text("ALERTS", {"alertname": alertname, "alertstate": "firing", **JOB, **labels})


def format_value(v):
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return str(v)


def ip(n):
    return {"kind": "ip", "asset": f"192.0.2.{n}"}


def step(before, changes):
    """A value that is `before` until the first minute of `changes` ({minute: value}), then
    each value from its minute on; None is no series."""

    def at(minute):
        value = before
        for m in sorted(changes):
            if minute >= m:
                value = changes[m]
        return value

    return at


def listing(periods):
    """The upstream's blacklisting of one asset on one blacklist: listed during each (first,
    end) minute range. Returns the `since` value (Unix time of the listing's start) for a
    minute, None while not listed."""

    def since(minute):
        for first, end in periods:
            if first <= minute < end:
                return first * 60
        return None

    return since


def count_and_change(periods, checks_every=60):
    """The list's `blacklisted` and `blacklisted_change.last_check` for listings during
    `periods` [(first, end)]: the API checks every `checks_every` minutes (its count changes
    only at a check) and the change is the difference between its last two checks."""

    def count_at_check(check):
        return sum(1 for first, end in periods if first <= check < end)

    def last_check(minute):
        return minute - minute % checks_every

    def count(minute):
        return count_at_check(last_check(minute))

    def change(minute):
        check = last_check(minute)
        return count_at_check(check) - count_at_check(check - checks_every)

    return count, change


# Listings older than monitoring: five days before minute 0.
OLD = -5 * 1440

LISTING_ALERTS = ["ReputationBlacklistListed", "ReputationAssetBlacklisted"]
CRITICAL = ["ReputationBlacklistListed", "ReputationAssetBlacklisted", "ReputationSenderScoreDropped", "ReputationSndsBlocked", "ReputationDataStale"]


def serve_listing(t, replicas, asset, blacklist_periods, checks_every=60, extra_listings=()):
    """The series of one asset's listings as each replica serves them: the list's count and
    change (every replica), and from its report (the replicas that report on it) the start of
    each current listing and the number named. `blacklist_periods` is {blacklist: [(first,
    end)]}; `extra_listings` are periods the list counts but no report names."""
    all_periods = [p for periods in blacklist_periods.values() for p in periods] + list(extra_listings)
    count, change = count_and_change(all_periods, checks_every)
    for r in replicas:
        t.served("reputation_blacklistings", asset, r, count)
        t.served("reputation_blacklistings_change", asset, r, change)
        named = lambda m: sum(1 for periods in blacklist_periods.values() for a, b in periods if a <= m < b)
        t.served("reputation_blacklistings_named", asset, r, named, report=True)
        for blacklist, periods in blacklist_periods.items():
            t.served(
                "reputation_blacklist_listed_since_timestamp_seconds",
                {**asset, "blacklist": blacklist},
                r,
                listing(periods),
                report=True,
            )
            # The report's newest event of that blacklist: listed (1) or delisted (0), and when.
            newest = newest_event(periods)
            for name, i in (("reputation_blacklist_listed", 1), ("reputation_blacklist_last_change_timestamp_seconds", 0)):
                t.served(name, {**asset, "blacklist": blacklist}, r, lambda m, i=i: None if newest(m) is None else newest(m)[i], report=True)


def newest_event(periods):
    """The newest blacklist event at a minute for listings during `periods`: (Unix time, 1)
    listed then, (Unix time, 0) delisted then; None before the first."""

    def at(minute):
        events = [(first * 60, 1) for first, _ in periods] + [(end * 60, 0) for _, end in periods]
        return max((e for e in events if e[0] <= minute * 60), default=None)

    return at


def scenarios():
    out = {"alerts_test.yml": [], "timelines_test.yml": []}

    # --- hours: one promise each -------------------------------------------------------------

    t = Timeline(
        "installation",
        """A new installation on a fleet with what stands: listings days old (named by reports,
and one the list counts that no report names), a low score, SNDS red, an SNDS block
(no change at the API's last check): no page over six hours; one ticket per account for
the low scores (after 30m) and for SNDS red (after 1h), one info alert per account for the
listings and the block (15m after the recording rules first wrote them: they run every 5m).""",
        360,
        CRITICAL + ["ReputationSenderScoreLowAssets", "ReputationSndsRedAssets", "ReputationBlacklistedAssets", "ReputationSndsBlockedAssets"],
    )
    r = Replica("exporter:9525", 0)
    serve_listing(t, [r], ip(1), {"SpamCop": [(OLD, 10**6)], "Spamhaus SBL": [(OLD - 600, 10**6)]})
    serve_listing(t, [r], ip(2), {}, extra_listings=[(OLD, 10**6)])
    t.served("reputation_asset_info", ip(1), r, lambda m: 1)
    t.served("reputation_senderscore", ip(3), r, lambda m: 60)
    t.served("reputation_senderscore_change", ip(3), r, lambda m: -2)
    t.served("reputation_snds_reputation", {**ip(4), "reputation_snds_reputation": "red"}, r, lambda m: 1)
    t.served("reputation_snds_blocked", ip(5), r, lambda m: 1)
    t.served("reputation_snds_blocked_change", ip(5), r, lambda m: 0)
    t.expect("ReputationSenderScoreLowAssets", {}, (30, 359), settle=1)
    t.expect("ReputationSndsRedAssets", {}, (60, 359), settle=1)
    t.expect("ReputationBlacklistedAssets", {}, (15, 359), settle=1)
    t.expect("ReputationSndsBlockedAssets", {}, (15, 359), settle=1)
    out["alerts_test.yml"].append(t)

    t = Timeline(
        "score drop",
        """A score that falls 12 points at the API's check at minute 60 pages once changeFor (2m)
has given the report its chance to date it, and resolves when the next check (minute 120)
says otherwise; one that falls 5 points does not page.""",
        240,
        CRITICAL,
    )
    r = Replica("exporter:9525", 0)
    t.served("reputation_senderscore_change", ip(1), r, step(0, {60: -12, 120: 0}))
    t.served("reputation_senderscore_change", ip(2), r, step(0, {60: -5, 120: 0}))
    t.expect("ReputationSenderScoreDropped", ip(1), (62, 119))
    out["alerts_test.yml"].append(t)

    t = Timeline(
        "count without a report",
        """The list's count rises at the API's check at minute 60: for an asset no report names
(reports off or not selected), a page after listingCountFor (2m) until the next check
(minute 120); for one whose report follows the list and names the
listing a minute later, only the named page; for one whose stale report names an older
listing but not the new one, the count's page too.""",
        240,
        CRITICAL,
    )
    r = Replica("exporter:9525", 0)
    serve_listing(t, [r], ip(1), {}, extra_listings=[(60, 10**6)])
    serve_listing(t, [r], ip(2), {"SpamCop": [(60, 10**6)]})
    serve_listing(t, [r], ip(3), {"Barracuda": [(OLD, 10**6)]}, extra_listings=[(60, 10**6)])
    t.expect("ReputationAssetBlacklisted", ip(1), (62, 119))
    t.expect("ReputationBlacklistListed", {**ip(2), "blacklist": "SpamCop"}, (61, 60 + 720 - 1))
    t.expect("ReputationAssetBlacklisted", ip(3), (62, 119))
    out["alerts_test.yml"].append(t)

    t = Timeline(
        "snds block",
        """SNDS reports an address blocked at the API's check at minute 60: a page after changeFor
(2m), until the next check says otherwise; an address blocked all along does not page.""",
        240,
        CRITICAL,
    )
    r = Replica("exporter:9525", 0)
    t.served("reputation_snds_blocked", ip(1), r, step(0, {60: 1}))
    t.served("reputation_snds_blocked_change", ip(1), r, step(0, {60: 1, 120: 0}))
    t.served("reputation_snds_blocked", ip(2), r, lambda m: 1)
    t.served("reputation_snds_blocked_change", ip(2), r, lambda m: 0)
    t.expect("ReputationSndsBlocked", ip(1), (62, 119))
    out["alerts_test.yml"].append(t)

    t = Timeline(
        "a listing and its end within a poll",
        """The API checks every minute here. A listing that the first replica's poll sees
(minute 600) and the next one no longer (605) pages from its report (601) and resolves
when the second replica (polling at 4 past), which never sees it, fetches a report that says
it was delisted (605).
A listing that begins and ends between two polls of both (611 to 613) pages nothing.""",
        720,
        CRITICAL,
    )
    r1, r2 = Replica("reputation-exporter-1:9525", 0), Replica("reputation-exporter-2:9525", 4)
    serve_listing(t, [r1, r2], ip(2), {"SpamCop": [(600, 603)]}, checks_every=1)
    serve_listing(t, [r1, r2], ip(3), {"SpamCop": [(611, 614)]}, checks_every=1)
    t.expect("ReputationBlacklistListed", {**ip(2), "blacklist": "SpamCop"}, (601, 604))
    out["alerts_test.yml"].append(t)

    # --- days: the topologies ----------------------------------------------------------------

    t = Timeline(
        "two replicas, both reporting",
        """Two replicas of one account, both reporting on every asset, over three days; the API
checks hourly. Replica 1 polls on the minute (600, 605, ...), replica 2 four minutes later,
each fetching a report a minute after a poll that shows a change (reports follow the list).
192.0.2.2 is listed on SpamCop at 600 (10:00 on day one) until 2400: one page from its
report at 601, through replica 2's restart (700-701), a restart of both (800-801),
Prometheus down four minutes (900-903) and two scrapes missed (1000-1001), until the listing
is twelve hours old (1320); it stands then as one of the account's
listings. 192.0.2.1's listing, days old when monitoring began, ends at 3000: no page
for it either way. 192.0.2.3 is listed on SpamCop 1500-1619 and again from 1740 to 2039, and
on Barracuda 1680-1919: a page per listing, each resolved when the first replica's report
says that blacklist delisted the asset (a minute after the API's check), whatever the other
replica's report, fetched before, still names.""",
        3 * 1440,
        CRITICAL,
    )
    r1 = Replica("reputation-exporter-1:9525", 0, down=[(800, 802), (1000, 1002)])
    r2 = Replica("reputation-exporter-2:9525", 4, down=[(700, 702), (800, 802), (1000, 1002)])
    t.prometheus_down(900, 904)
    serve_listing(t, [r1, r2], ip(1), {"Spamhaus SBL": [(OLD, 3000)]})
    serve_listing(t, [r1, r2], ip(2), {"SpamCop": [(600, 2400)]})
    serve_listing(t, [r1, r2], ip(3), {"SpamCop": [(1500, 1620), (1740, 2040)], "Barracuda": [(1680, 1920)]})
    t.expect("ReputationBlacklistListed", {**ip(2), "blacklist": "SpamCop"}, (601, 1319))
    t.expect("ReputationBlacklistListed", {**ip(3), "blacklist": "SpamCop"}, (1501, 1620), (1741, 2040))
    t.expect("ReputationBlacklistListed", {**ip(3), "blacklist": "Barracuda"}, (1681, 1920))
    out["timelines_test.yml"].append(t)

    t = Timeline(
        "reports split",
        """Two replicas, reports split (asset_reports.replica 1/2 and 2/2): replica 1 reports on
192.0.2.2 and 192.0.2.4, replica 2 (polling four minutes later) on 192.0.2.3; no replica
reports on 192.0.2.6 (excluded). The API checks hourly. 192.0.2.2 listed at 600: one page
through a restart of the replica that reports on it (700-701). 192.0.2.3 listed at 900:
replica 2's report names it at 905, one page through its restart of three minutes
(1000-1002); replica 1 saw the list's count rise four minutes before, but the count pages
only once every replica has seen the rise, so the named page is the only one. 192.0.2.6
listed at 1200: a page from the list's count listingCountFor after the later replica saw it
(1204), until the first sees the API's next check (1260). 192.0.2.4 listed at 1440 while its
report fails for an hour: the count pages (from 1446) until the API's next check (1500);
the report that names the listing at last (1501) does not page it again, as the count's page
was its page: one page for that listing.""",
        2 * 1440,
        CRITICAL,
    )
    r1 = Replica(
        "reputation-exporter-1:9525",
        0,
        down=[(700, 702)],
        reports=lambda a: a in ("192.0.2.2", "192.0.2.4"),
        report_fails=[(1441, 1501)],
    )
    r2 = Replica("reputation-exporter-2:9525", 4, down=[(1000, 1003)], reports=lambda a: a == "192.0.2.3")
    serve_listing(t, [r1, r2], ip(2), {"SpamCop": [(600, 2000)]})
    serve_listing(t, [r1, r2], ip(3), {"Barracuda": [(900, 2000)]})
    serve_listing(t, [r1, r2], ip(6), {"SpamCop": [(1200, 1500)]})
    serve_listing(t, [r1, r2], ip(4), {"SpamCop": [(1440, 2400)]})
    t.expect("ReputationBlacklistListed", {**ip(2), "blacklist": "SpamCop"}, (601, 1319))
    t.expect("ReputationBlacklistListed", {**ip(3), "blacklist": "Barracuda"}, (905, 1619))
    t.expect("ReputationAssetBlacklisted", ip(6), (1206, 1259))
    t.expect("ReputationAssetBlacklisted", ip(4), (1446, 1499))
    out["timelines_test.yml"].append(t)

    t = Timeline(
        "hourly report rounds",
        """One replica whose reports come only from the hourly round (at 40 past): a listing the
list's count does not show (192.0.2.2 delisted from Barracuda as SpamCop lists it, at the
same check, 600) pages when the round reaches its report (640), until it is twelve hours
old.""",
        1440,
        CRITICAL,
    )
    r = Replica("exporter:9525", 0, report_rounds=(40, 60))
    serve_listing(t, [r], ip(2), {"Barracuda": [(OLD, 600)], "SpamCop": [(600, 1400)]})
    t.expect("ReputationBlacklistListed", {**ip(2), "blacklist": "SpamCop"}, (640, 1319))
    out["timelines_test.yml"].append(t)

    t = Timeline(
        "api outage",
        """Two replicas; the API fails every request from 700 to 899. The lists' last good
polls are 695 and 699; the replicas drop the asset series an hour later (755, 759), and
ReputationDataStale pages once from 750 (45m without a list, for 5m) until the lists are back
(900), through both replicas missing two scrapes (800-801) and replica 1's restart (820-821).
The listing's page (192.0.2.2, listed at 600) fires on without a gap: the rules hold it while
no replica serves the lists (its series gone at 755 and 759, back at 900) until the listing is
twelve hours old (1320). On call receives one page for the listing and one for the outage,
and no inhibition is needed to hide a gap.""",
        1440,
        CRITICAL,
    )
    r1 = Replica("reputation-exporter-1:9525", 0, api_down=[(700, 900)], down=[(800, 802), (820, 822)])
    r2 = Replica("reputation-exporter-2:9525", 4, api_down=[(700, 900)], down=[(800, 802)])
    serve_listing(t, [r1, r2], ip(2), {"SpamCop": [(600, 1400)]})
    t.expect("ReputationBlacklistListed", {**ip(2), "blacklist": "SpamCop"}, (601, 1319))
    t.expect("ReputationDataStale", {}, (750, 899))
    out["timelines_test.yml"].append(t)

    return out


def fix_long_expectations(out):
    """Expectations past a timeline's end are checked up to its end only."""
    for timelines in out.values():
        for t in timelines:
            last = t.minutes - 1
            fixed = []
            for alertname, labels, intervals, settle in t.expected:
                fixed.append((alertname, labels, [(a, min(b, last)) for a, b in intervals], settle))
            t.expected = fixed


HEADERS = {
    "alerts_test.yml": """# promtool test rules: each per-asset alert, one promise at a time, over hours: what pages,
# from which minute to which, and that nothing else does. Generated by tests/rules/scenarios.py
# (deploy/generate.sh); change the scenarios there.
# Run: promtool test rules deploy/prometheus/tests/alerts_test.yml
""",
    "timelines_test.yml": """# promtool test rules: timelines of days at production's time scales, in the topologies the
# deployment files ship: two replicas polling minutes apart, reports split, reports that
# follow the list or fail, restarts of a replica and of all of them, scrapes missed,
# Prometheus down, an API outage past metrics.max_age. Each event pages once (its ALERTS series
# fires without a gap, one series however many replicas) and each end resolves within a poll
# and a minute. Generated by tests/rules/scenarios.py
# (deploy/generate.sh); change the scenarios there.
# Run: promtool test rules deploy/prometheus/tests/timelines_test.yml
""",
}


def main():
    out = scenarios()
    fix_long_expectations(out)
    for file, timelines in out.items():
        text = HEADERS[file]
        text += "rule_files:\n  - ../alerts.yml\n  - ../rules.yml\n\nevaluation_interval: 1m\n# The pages group first, as the stories have it: the alerts read what it recorded that minute.\ngroup_eval_order: [reputation.pages, reputation.alerts, reputation.fleet, reputation.rules, reputation.changes]\n\ntests:\n"
        text += "\n".join(t.render() for t in timelines) + "\n"
        with open(os.path.join(OUT, file), "w") as f:
            f.write(text)


if __name__ == "__main__":
    sys.exit(main())
