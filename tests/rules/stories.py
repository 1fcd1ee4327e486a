#!/usr/bin/env python3
"""The on-call promises as properties, checked over generated stories.

    python3 tests/rules/stories.py --stories 2000 --seed 1
    python3 tests/rules/stories.py --replay 1234 --write tests/rules/regressions/

A story is one account over six hours to a day (its length drawn from the seed with the rest,
the short ones as likely as the day, as promtool's time grows with the length): one to three
replicas at different poll phases, reports on every asset, split between the replicas, or off;
warm and cold restarts of one replica or of all (a rolling update restarts them one after another),
Prometheus restarts, API outages (short, or past metrics.max_age), a replica cut off from the
API, reports that fail, listings the list counts and no report names, listings days old at
installation, score drops and SNDS blocks the API checks hourly (some during an outage), and
assets the API stopped checking weeks ago with a drop or a block as their last change.

A model of the exporter (`serve`) turns a story into the series each replica serves minute by
minute (checked against the exporter itself: `--exporter-check` writes a few stories with what
the model serves, which tests/api/model.rs replays against the exporter on Tokio's paused
clock); promtool evaluates the shipped alerts (deploy/prometheus/alerts.yml) over them and
tests/rules/receiver.yml turns their ALERTS into what the receiver gets from the shipped
Alertmanager configuration. An oracle written from the story alone, never from the rules,
says when each event must be paged and when nothing may be open; promtool checks, for every
story at once (each its own account):

  late        every event is paged by its deadline: a poll plus three minutes of the
              exporter being able to see it (a replica up and reaching the API, Prometheus
              running; not counting a stretch shorter than a poll that an outage or a
              restart cuts off, as no poll need fall in it);
  unexpected  nothing is open at the receiver outside an event's window (its first visibility
              to its end as the exporter sees it, plus a poll and four minutes): no page
              without an event, no old news, every end closed;
  pages       each event pages exactly once (a listing: one alert, named when a report can
              name it), whatever restarts, rollouts, outages and replicas that disagree (a
              page due after the story ends, or for an event over before its deadline, may
              count or not, but a change an outage hid, which the first lists back show for
              a poll, pages; what the API's data cannot tell, as the runbook lists it, may
              page or not);
  lost        no resolution is swallowed by an inhibition.

Stories run in batches of one length, one promtool test file each, on every core. A story
that breaks a promise is printed with its seed (`--stories 1 --seed SEED` checks it alone);
`--replay SEED --write DIR` writes it as a promtool test file that can be committed as a
regression (promtool test rules DIR/*.yml), and `--trace N` prints what fires every N minutes.
`--open FILE` names the stories known to break a promise (the open cases and gaps the runbook
lists): they are printed and not failed, and one of them that keeps every promise fails the run
until it is taken out of the file, so the list only shrinks.
"""

import argparse
import os
import random
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from scenarios import GONE, Timeline, newest_event  # noqa: E402

RULES = os.path.join(HERE, "..", "..", "deploy", "prometheus", "alerts.yml")
RECORDING = os.path.join(HERE, "..", "..", "deploy", "prometheus", "rules.yml")
RECEIVER = os.path.join(HERE, "receiver.yml")

# A story's length, drawn: six hours to a day (promtool's time grows with it, so the short
# ones are as likely as the day).
LENGTHS = (360, 480, 720, 960, 1440)
POLL = 5  # poll.interval
MAX_AGE = 60  # metrics.max_age
CHECK = 60  # the API checks each asset hourly
NEW = 720  # a listing pages while younger than this (listingNewSeconds)
STALE_AFTER = 45 + 5  # ReputationDataStale: 45 minutes without a list, for 5 minutes
HELD = 15  # ReputationDataStale: a replica's last success counts this long after its last scrape
KEEP = 3  # keep_firing_for
BLACKLISTS = ["SpamCop", "Spamhaus SBL", "Barracuda", "UCEPROTECT Level 1"]


def within(intervals, minute):
    return any(a <= minute < b for a, b in intervals)


@dataclass
class ReplicaSpec:
    instance: str
    offset: int  # the minute of its first poll
    reports: str  # "all", "none" or "split:K/N"
    report_latency: int  # minutes from a list poll to the report it asks for
    round_phase: int  # the hourly report round's minute (None: no round but a cold start's)
    restarts: list = field(default_factory=list)  # (first, end, warm)
    cut_off: list = field(default_factory=list)  # (first, end): this replica cannot reach the API
    report_fails: list = field(default_factory=list)  # (first, end): its report requests fail

    def reports_on(self, index):
        if self.reports == "all":
            return True
        if self.reports == "none":
            return False
        k, n = map(int, self.reports.split(":")[1].split("/"))
        return index % n == k - 1


@dataclass
class AssetSpec:
    index: int
    listings: list = field(default_factory=list)  # (blacklist, start, end): reports name them
    unnamed: list = field(default_factory=list)  # (start, end): counted by the list, named by no report
    drops: list = field(default_factory=list)  # checks whose score change is -12
    blocks: list = field(default_factory=list)  # (first check, end check) SNDS blocks
    checked_until: int = None  # the API stopped checking the asset at this minute

    @property
    def labels(self):
        return {"kind": "ip", "asset": f"192.0.2.{self.index}"}


@dataclass
class Story:
    seed: int
    minutes: int  # its length
    check_phase: int
    replicas: list
    assets: list
    outages: list  # (first, end): the API fails every request
    prometheus_down: list  # (first, end): nothing scraped, no stale markers
    notes: list
    entries: dict = field(default_factory=dict, repr=False, compare=False)  # list_entry's, by (asset, check)

    @property
    def account(self):
        return f"s{self.seed}"

    # --- the upstream, as the API shows it ----------------------------------------------------

    def check_before(self, minute):
        """The API's last check of an asset at or before `minute`."""
        return minute - (minute - self.check_phase) % CHECK

    def last_check(self, asset, minute):
        if asset.checked_until is None:
            return self.check_before(minute)
        return self.check_before(min(minute, asset.checked_until))

    def count_at(self, asset, check):
        periods = [(s, e) for _, s, e in asset.listings] + list(asset.unnamed)
        return sum(1 for s, e in periods if s <= check < e)

    def blocked_at(self, asset, check):
        return int(any(a <= check < b for a, b in asset.blocks))

    def score_at(self, asset, check):
        """The Sender Score at `check`: each drop takes 12 points off."""
        return 80 - 12 * sum(1 for d in asset.drops if d <= check)

    def list_entry(self, asset, minute):
        """What the list shows of an asset at `minute`: (count, count change, score change,
        blocked, block change), all as of the API's last check (so computed once a check)."""
        c = self.last_check(asset, minute)
        key = (id(asset), c)
        if key not in self.entries:
            self.entries[key] = (
                self.count_at(asset, c),
                self.count_at(asset, c) - self.count_at(asset, c - CHECK),
                -12 if c in asset.drops else 0,
                self.blocked_at(asset, c),
                self.blocked_at(asset, c) - self.blocked_at(asset, c - CHECK),
            )
        return self.entries[key]

    def rose_at(self, asset, minute):
        """When a report fetched at `minute` says the asset's count rose: the newest entry of
        its count history (the API's last check) when it counts more than the check before,
        else None."""
        c = self.last_check(asset, minute)
        return c if self.count_at(asset, c) > self.count_at(asset, c - CHECK) else None

    def served_rise(self, asset, view):
        """The rise a replica's view serves for `asset`: its report's (rose_at), only while
        that report says the count and its change as the served list does. A report behind
        its list dates an earlier rise, or none, until the report that follows the list comes."""
        fetched = view.reports.get(asset.index)
        if fetched is None or self.list_entry(asset, fetched)[:2] != self.list_entry(asset, view.list_at)[:2]:
            return None
        return self.rose_at(asset, fetched)

    def served_rise_ended(self, asset, view):
        """What the rise a replica's view serves is net of: the listings its report names that
        the check before the rise counted and the rise's check did not (ended in between)."""
        c = self.served_rise(asset, view)
        if c is None:
            return None
        return sum(1 for _, s, e in asset.listings if s <= c - CHECK < e <= c)

    def missed(self, asset, view):
        """What a replica's view serves of `asset`'s changes its lists did not show: (score,
        SNDS block), each the value's move since the replica's previous list less the change
        at the API's last check, where the value or its change moved (a check came between);
        None where neither did or the change accounts for the whole move (the exporter serves
        no series then)."""
        if view.list_at is None or view.previous is None:
            return None, None
        now, before = self.list_entry(asset, view.list_at), self.list_entry(asset, view.previous)
        level = lambda m: self.score_at(asset, self.last_check(asset, m))
        moved = level(view.list_at) - level(view.previous)
        score = moved - now[2] if moved or now[2] != before[2] else 0
        blocked = now[3] - before[3] - now[4] if now[3] != before[3] or now[4] != before[4] else 0
        return score or None, blocked or None

    def named_at(self, asset, minute):
        """The listings a report fetched at `minute` names: {blacklist: start}."""
        return {b: s for b, s, e in asset.listings if s <= minute < e}

    def newest_event(self, asset, blacklist, minute):
        """The newest event of `blacklist` a report fetched at `minute` shows for `asset`:
        (minute, 1) listed then, (minute, 0) delisted then; None before the first."""
        event = newest_event([(s, e) for b, s, e in asset.listings if b == blacklist])(minute)
        return None if event is None else (event[0] // 60, event[1])

    def reachable(self, replica, minute):
        return not within(self.outages, minute) and not within(replica.cut_off, minute)


def story(seed):
    """A story drawn from `seed`."""
    rnd = random.Random(seed)
    minutes = rnd.choice(LENGTHS)
    notes = [f"{minutes // 60} hours"]
    check_phase = rnd.randrange(CHECK)
    n_replicas = rnd.choice([1, 2, 2, 3])
    split = n_replicas > 1 and rnd.random() < 0.3
    reports = rnd.choice(["all", "all", "all", "none"]) if not split else None
    replicas = []
    for i in range(n_replicas):
        replicas.append(
            ReplicaSpec(
                instance=f"exporter-{i}:9525",
                offset=rnd.randrange(POLL),
                reports=f"split:{i + 1}/{n_replicas}" if split else reports,
                report_latency=rnd.choice([1, 1, 2]),
                round_phase=rnd.randrange(60),
            )
        )
    notes.append(f"{n_replicas} replica(s), reports {'split' if split else reports}, API checks at :{check_phase:02d}")

    def interval(shortest, longest, first=60, last=minutes - 60):
        start = rnd.randrange(first, last)
        return start, min(start + rnd.randrange(shortest, longest + 1), minutes)

    drawn = []
    for _ in range(rnd.choice([0, 0, 1, 2])):
        drawn.append(interval(5, 30) if rnd.random() < 0.5 else interval(80, 240))
    outages = None
    while outages != drawn:  # (stretching one can make it meet another: merge again)
        outages, drawn = drawn, []
        for a, b in sorted(outages):
            # Short (the held data serves) or past max_age; never in between, where whether
            # ReputationDataStale fires is a matter of a minute.
            if 30 < b - a < 80:
                b = min(a + 80, minutes)
                a = b - 80  # (one the story's end cuts short is as long)
            if drawn and a < drawn[-1][1] + POLL:  # (no poll between them: one outage)
                drawn[-1] = (min(drawn[-1][0], a), max(drawn[-1][1], b))
            else:
                drawn.append((a, b))
    notes += [f"API outage {a}-{b}" for a, b in outages]
    prometheus_down = []
    for _ in range(rnd.choice([0, 0, 1])):
        a, b = interval(1, 4)
        prometheus_down.append((a, b))
        notes.append(f"Prometheus down {a}-{b}")
    for _ in range(rnd.choice([0, 1, 2, 3])):
        kind = rnd.choice(["one", "one", "all", "rolling"])
        warm = rnd.random() < 0.6
        a, _ = interval(1, 1)
        length = rnd.randrange(1, 11)
        if kind == "one":
            r = rnd.choice(replicas)
            r.restarts.append((a, a + length, warm))
            notes.append(f"{r.instance} restarts {a}-{a + length} ({'warm' if warm else 'cold'})")
        elif kind == "all":
            for r in replicas:
                r.restarts.append((a, a + length, warm))
            notes.append(f"every replica restarts {a}-{a + length} ({'warm' if warm else 'cold'})")
        else:
            t = a
            for r in replicas:
                r.restarts.append((t, t + 1, warm))
                t += rnd.randrange(1, 4)
            notes.append(f"rolling update from {a} ({'warm' if warm else 'cold'})")
    if n_replicas > 1 and rnd.random() < 0.2:
        r = rnd.choice(replicas)
        a, b = interval(30, 300)
        r.cut_off.append((a, b))
        notes.append(f"{r.instance} cannot reach the API {a}-{b}")
    for r in replicas:
        if rnd.random() < 0.2:
            a, b = interval(10, 120)
            r.report_fails.append((a, b))
            notes.append(f"{r.instance}'s reports fail {a}-{b}")

    assets = []
    for index in range(1, rnd.randrange(2, 6)):
        asset = AssetSpec(index)
        for _ in range(rnd.choice([0, 1, 1, 2])):
            b = rnd.choice(BLACKLISTS)
            if rnd.random() < 0.15:
                # Days old at installation, or hours old: news when monitoring begins.
                s = rnd.choice([-5 * 1440, -rnd.randrange(60, 600)])
            else:
                s = rnd.randrange(0, minutes - 180)
            e = s + rnd.choice([rnd.randrange(130, 600), rnd.randrange(600, 3000)])
            if s < 0 and -CHECK < e < 15:
                # Not one that ends between the API's last check before installation and the
                # first reports: the list would count it and no report name it, which no
                # promise is about (a listing over before monitoring began).
                e = 15
            if any(x == b and not (e + CHECK < xs or xe + CHECK < s) for x, xs, xe in asset.listings):
                continue  # one listing per blacklist at a time, an hour apart
            asset.listings.append((b, s, e))
        if rnd.random() < 0.2:
            s = rnd.randrange(0, minutes - 180)
            asset.unnamed.append((s, s + rnd.randrange(130, 1500)))
        for _ in range(rnd.choice([0, 0, 1])):
            c = check_phase + CHECK * rnd.randrange(1, minutes // CHECK - 2)
            if all(abs(c - d) > CHECK for d in asset.drops):
                asset.drops.append(c)
        if rnd.random() < 0.2:
            c = check_phase + CHECK * rnd.randrange(1, minutes // CHECK - 4)
            asset.blocks.append((c, c + CHECK * rnd.randrange(2, 20)))
        if rnd.random() < 0.1:
            # The API last checked this asset weeks ago, and that check saw a drop or a block.
            asset.checked_until = -20 * 1440
            last = asset.checked_until - (asset.checked_until - check_phase) % CHECK
            asset.listings = [x for x in asset.listings if x[2] < 0 or x[1] < last]
            asset.unnamed = []
            asset.drops = [last]
            asset.blocks = [(last, 10**7)] if rnd.random() < 0.5 else []
            notes.append(f"{asset.labels['asset']} last checked weeks ago")
        assets.append(asset)
    return Story(seed, minutes, check_phase, replicas, assets, outages, prometheus_down, notes)


# --- the exporter, as a model -----------------------------------------------------------------


@dataclass
class View:
    """What one replica serves at one minute: the minute of the list it serves (None: no asset
    series) and, per asset, the minute of its report."""

    up: bool
    list_at: int = None
    reports: dict = field(default_factory=dict)
    last_success: int = None
    previous: int = None  # the replica's list before `list_at`, whatever its age (None: none)


def serve(st, r):
    """The replica `r`'s view of story `st`, minute by minute. Polls every POLL minutes from its
    offset (and at once after a restart); a poll that reaches the API takes the lists. Reports
    follow the list (an asset whose count or its change changed is asked for a report
    `report_latency` minutes later, and again after each poll while the fetch fails) and an
    hourly round asks for every selected asset's. A warm restart keeps
    the lists and reports (the state store) and the last success whatever its age, a cold one
    starts with none. Past metrics.max_age
    without a good poll the asset series go; the replica still remembers the last list's
    values, to tell the next list's missed changes from."""
    views = []
    list_at = None
    previous = None
    last_success = None
    reports = {}
    pending = {}  # minute -> assets whose report is asked then
    next_poll = r.offset
    down_before = False
    selected = [a for a in st.assets if r.reports_on(a.index)]
    for m in range(st.minutes):
        restart = next((x for x in r.restarts if x[0] <= m < x[1]), None)
        if restart:
            if not restart[2]:
                list_at, last_success, reports, pending, previous = None, None, {}, {}, None
            down_before = True
            views.append(View(up=False))
            continue
        if down_before:
            next_poll = m
            down_before = False
            if list_at is None:
                # Cold: the first round asks for every selected asset's report.
                pending.setdefault(m + r.report_latency, set()).update(a.index for a in selected)
        if m == next_poll:
            next_poll += POLL
            if st.reachable(r, m):
                previous = list_at
                list_at = last_success = m
                for a in selected:
                    if previous is None or st.list_entry(a, previous)[:2] != st.list_entry(a, m)[:2]:
                        pending.setdefault(m + r.report_latency, set()).add(a.index)
        if r.round_phase is not None and m % 60 == r.round_phase:
            pending.setdefault(m, set()).update(a.index for a in selected)
        for index in pending.pop(m, ()):
            if st.reachable(r, m) and not within(r.report_fails, m):
                reports[index] = m
            else:
                # A report whose fetch failed is asked for again at the next poll.
                pending.setdefault(next_poll + r.report_latency, set()).add(index)
        fresh = list_at is not None and m - list_at < MAX_AGE
        views.append(
            View(
                up=True,
                list_at=list_at if fresh else None,
                reports=dict(reports) if fresh else {},
                last_success=last_success,
                previous=previous if fresh else None,
            )
        )
    return views


def timeline(st):
    """The story's series as its replicas serve them, and the oracle's series."""
    minutes = st.minutes
    t = Timeline(st.account, "\n".join(st.notes), minutes, [])
    t.no_scrape = list(st.prometheus_down)
    job = {"job": "reputation", "account": st.account}
    served = [(r, serve(st, r)) for r in st.replicas]
    for r, views in served:
        who = {**job, "instance": r.instance}
        t.add("up", who, [1 if v.up else 0 for v in views])
        t.add("reputation_assets", {**who, "kind": "ip"}, [(len(st.assets) if v.list_at is not None else 0) if v.up else GONE for v in views])
        for endpoint in ("ip-list", "domain-list"):
            t.add(
                "reputation_last_success_timestamp_seconds",
                {**who, "endpoint": endpoint},
                [v.last_success * 60 if v.up and v.last_success is not None else GONE for v in views],
            )
        for a in st.assets:
            lab = {**who, **a.labels}
            entries = [st.list_entry(a, v.list_at) if v.list_at is not None else None for v in views]
            # (reputation_snds_blocked, index 3, feeds only the recording rules.)
            for name, i in (
                ("reputation_blacklistings", 0),
                ("reputation_blacklistings_change", 1),
                ("reputation_senderscore_change", 2),
                ("reputation_snds_blocked_change", 4),
            ):
                t.add(name, lab, [e[i] if e is not None else GONE for e in entries])
            missed = [st.missed(a, v) for v in views]
            for name, i in (("reputation_senderscore_missed_change", 0), ("reputation_snds_blocked_missed_change", 1)):
                if any(x[i] is not None for x in missed):
                    t.add(name, lab, [x[i] if x[i] is not None else GONE for x in missed])
            if not r.reports_on(a.index):
                continue
            named = [st.named_at(a, v.reports[a.index]) if a.index in v.reports else None for v in views]
            t.add("reputation_blacklistings_named", lab, [len(n) if n is not None else GONE for n in named])
            # The newest count history date, while that entry is a rise.
            rose = [st.served_rise(a, v) for v in views]
            t.add(
                "reputation_blacklistings_rise_timestamp_seconds",
                lab,
                [x * 60 if x is not None else GONE for x in rose],
            )
            ended = [st.served_rise_ended(a, v) for v in views]
            t.add("reputation_blacklistings_rise_ended", lab, [x if x is not None else GONE for x in ended])
            # The newest Sender Score history date: the API's last check of the asset.
            t.add(
                "reputation_senderscore_last_update_timestamp_seconds",
                lab,
                [st.last_check(a, v.reports[a.index]) * 60 if a.index in v.reports else GONE for v in views],
            )
            for b in sorted({x[0] for x in a.listings}):
                t.add(
                    "reputation_blacklist_listed_since_timestamp_seconds",
                    {**lab, "blacklist": b},
                    [n[b] * 60 if n is not None and b in n else GONE for n in named],
                )
                # The report's newest event of that blacklist: listed (1) or delisted (0), and when.
                events = [st.newest_event(a, b, v.reports[a.index]) if a.index in v.reports else None for v in views]
                t.add("reputation_blacklist_listed", {**lab, "blacklist": b}, [e[1] if e else GONE for e in events])
                t.add(
                    "reputation_blacklist_last_change_timestamp_seconds",
                    {**lab, "blacklist": b},
                    [e[0] * 60 if e else GONE for e in events],
                )
    for labels, due, allowed, pages in oracle(st, served):
        lab = {**job, **labels}
        t.add("story_due", lab, [1 if m in due else GONE for m in range(minutes)])
        t.add("story_allowed", lab, [1 if m in allowed else GONE for m in range(minutes)])
        t.add("story_pages", lab, [pages[0]] * minutes)
        t.add("story_pages_max", lab, [pages[1]] * minutes)
    return t


# --- the model against the exporter ------------------------------------------------------------

# Stories the exporter itself replays (tests/api/model.rs, on Tokio's paused clock), each with
# what the model says it serves: warm and cold restarts, outages past metrics.max_age, failing
# reports, score drops and SNDS blocks an outage hid (18: through a warm restart; 172: both at
# once). `--exporter-check FILE` writes them; CI checks the committed file is current.
EXPORTER_SEEDS = [575, 1006, 216, 4574, 18, 172]
EXPORTER_MINUTES = 720


def exporter_story(seed):
    """Story `seed` as one exporter meets it: its first replica alone, polling from minute 0,
    fetching the reports a poll asks for at once, with no report round but a cold start's (the
    check runs the exporter with a round interval longer than the story), and what the list's
    count, score and SNDS block and the reports' listings show (no unchecked assets, nothing
    cut off)."""
    st = story(seed)
    r = st.replicas[0]
    for other in st.replicas[1:]:
        r.restarts += [x for x in other.restarts if x not in r.restarts]
    r.offset, r.report_latency, r.round_phase, r.reports, r.cut_off = 0, 0, None, "all", []
    r.restarts = sorted(x for x in r.restarts if x[0] < EXPORTER_MINUTES)
    st.replicas = [r]
    for a in st.assets:
        a.checked_until = None
    return st


def exporter_check(seeds):
    """The stories of `seeds` as tests/api/model.rs replays them, and per minute what the model
    says the exporter serves of each asset: [list count, listings the report names, the minute
    its report says the count rose, the listings ended that rise is net of, the score's and
    the SNDS block's missed changes] (null: no series)."""
    out = []
    for seed in seeds:
        st = exporter_story(seed)
        r = st.replicas[0]
        views = serve(st, r)[:EXPORTER_MINUTES]
        assets = []
        for a in st.assets:
            served = []
            for v in views:
                count = st.list_entry(a, v.list_at)[0] if v.list_at is not None else None
                named = len(st.named_at(a, v.reports[a.index])) if a.index in v.reports else None
                rose = st.served_rise(a, v)
                served.append([count, named, rose, st.served_rise_ended(a, v), *st.missed(a, v)])
            assets.append(
                {
                    "name": a.labels["asset"],
                    "listings": [list(x) for x in a.listings],
                    "unnamed": [list(x) for x in a.unnamed],
                    "drops": a.drops,
                    "blocks": [list(x) for x in a.blocks],
                    "served": served,
                }
            )
        out.append(
            {
                "seed": seed,
                "minutes": len(views),
                "check_phase": st.check_phase,
                "restarts": [[a, b, warm] for a, b, warm in r.restarts],
                "outages": [list(x) for x in st.outages],
                "report_fails": [list(x) for x in r.report_fails],
                "assets": assets,
            }
        )
    return out


# --- the oracle: what on call must get, from the story alone ----------------------------------


def oracle(st, views):
    """Per asset and family (and for the account's staleness): the minutes by which a page
    must be open (due), the minutes a page may be open (allowed) and the number of pages.
    `views`: each replica with what the exporter's model says it serves (`serve`)."""
    minutes = st.minutes
    scraped = lambda m: not within(st.prometheus_down, m)

    def can_see(m):
        """Some replica is up and reaches the API at `m`."""
        return any(not within([(a, b) for a, b, _ in r.restarts], m) and st.reachable(r, m) for r in st.replicas)

    def seen(m):
        """The first minute at or after `m` at which the exporter can see the API's data."""
        while m < minutes and not can_see(m):
            m += 1
        return m

    def paging(m):
        """The first minute at or after `m` that counts toward a page's deadline: the exporter
        can see the API's data and Prometheus runs (a Prometheus down evaluates nothing)."""
        while m < minutes and not (can_see(m) and scraped(m)):
            m += 1
        return m

    def all_seen(m):
        """The minute by which every replica that can has polled since `m`, and some replica
        has (an outage that begins before any poll after `m` delays it to the first after)."""
        return max(seen(m) + POLL, next((p for p in range(m, minutes) if polled(p)), minutes))

    def due_at(minute):
        m = minute + 1  # story:open reads ALERTS a minute back
        while m < minutes and not scraped(m):
            m += 1
        return {m} if m < minutes else set()

    def refreshed(a, m0, follows):
        """The minute by which a replica reporting on `a` has fetched its report after the API's
        check `m0`: the one following a change of its list entry (`follows`, asked for again
        at each poll until it answers), or an hourly round's."""
        can = lambda r, m: not within([(x, y) for x, y, _ in r.restarts], m) and st.reachable(r, m) and not within(r.report_fails, m)
        reporters = [r for r in st.replicas if r.reports_on(a.index)]
        if follows:
            # Asked for at the first poll after the check, and again at each poll until it
            # answers.
            return next((m + POLL + 2 for m in range(m0, minutes) if any(can(r, m) for r in reporters)), minutes)
        for m in range(m0, minutes):
            if any(r.round_phase is not None and m % 60 == r.round_phase and can(r, m) for r in reporters):
                return m
        return minutes

    served = [(r, v) for r, v in views if any(r.reports_on(a.index) for a in st.assets)]

    def polled(m):
        """Some replica polls the API's lists at `m`."""
        return any(v[m].list_at == m for _, v in views)

    def first_named(a, s, e):
        """The first minute a replica serves a report naming `a`'s listing (s, e): one fetched
        while it stood (the exporter's model is used here for when lists and reports are
        fetched only)."""
        firsts = [
            next((m for m, v in enumerate(views) if s <= v.reports.get(a.index, -(10**9)) < e), None)
            for r, views in served
            if r.reports_on(a.index)
        ]
        return min((m for m in firsts if m is not None), default=None)

    def relisted(a, b, s):
        """Whether `a`'s listing on `b` from `s` began again after one on the same blacklist
        ended, with no minute between at which the exporter could see: its page, held through
        that time and still news when the data is back, stays open as the same alert, and
        the listing has no page of its own (the data never said the one before was over)."""
        back = seen(s)
        return any(
            b0 == b and 0 <= e0 <= s and s0 + NEW > back and not any(can_see(m) for m in range(e0, s + 1)) and first_named(a, s0, e0) is not None
            for b0, s0, e0 in a.listings
        )

    out = []
    for a in st.assets:
        reported = any(r.reports_on(a.index) for r in st.replicas)
        # Listings: each is one event while it is new (younger than 12 hours) and visible at a
        # check the API made; a listing no report can name pages as the list's count.
        events = []  # (may open from, visible at the API's check, closes by)
        pages = []  # (may open from, visible from) of each page of its own
        late = []  # (begun, first check, named at) of the listings a report names after their check
        hidden = []  # (begun, named at, visible) of the named listings whose rise no list showed
        counted = set()
        installed = -((-st.check_phase) % CHECK)  # the API's last check before minute 0
        for b, s, e in [(b, s, e) for b, s, e in a.listings] + [(None, s, e) for s, e in a.unnamed]:
            # The first check that counts it, or the last before installation.
            first = max(s + (st.check_phase - s) % CHECK, installed)
            news_end = s + NEW
            if first >= min(e, news_end, minutes if a.checked_until is None else a.checked_until):
                continue
            ended = e + (st.check_phase - e) % CHECK  # the first check that no longer counts it
            # Named when a report can name it: a replica reports on the asset and some report
            # it serves does while the listing stands (one cut off from the API to the story's
            # end never does, and the listing pages as the count).
            named_at = first_named(a, s, e) if b is not None and reported else None
            named = named_at is not None
            if named and st.count_at(a, ended) > 0:
                # The lists still count a listing: only a report says which one ended (one that
                # follows the list where its count or the count's change changed, as `serve`'s).
                ended = refreshed(a, ended, st.list_entry(a, ended)[:2] != st.list_entry(a, ended - CHECK)[:2])
            close = min(all_seen(ended), news_end)
            rises = st.count_at(a, first) > st.count_at(a, first - CHECK)
            if rises and not any(polled(m) for m in range(max(first, 0), min(first + CHECK, st.minutes))):
                # No replica polls the lists before the next check overwrites the rise (an
                # outage, or restarts, from minutes after the check): only a report can say.
                rises = False
            if rises:
                visible = first  # the list's count rises: reports follow it
            elif named:
                # The count does not rise (another listing ended at the same check, or an
                # outage hid the check): a report names it, at a round or after an outage.
                visible = named_at
            else:
                continue  # nothing the exporter reads shows it
            # A report names a listing from its start (a round may fetch it before the list's
            # check counts it); the list's count shows it from that check.
            events.append((max(s if named else first, 0), max(visible, 0), close))
            if named and relisted(a, b, s):
                continue  # the page of the listing before it, held, is its page
            if not named:
                counted.add(first)
            elif rises and named_at > first:
                late.append((s, first, named_at))
            elif not rises:
                hidden.append((s, named_at, max(visible, 0)))
            else:
                pages.append((named_at, max(visible, 0)))
        # The count's page: one per run of checks that each show a rise no report names by the
        # page's deadline (it stays open from the first rise to the first check without one,
        # however many listings rose the count). A check no replica polls before the next one
        # (an outage, restarts) shows nothing, so it does not end a run. A listing a report
        # names after that deadline rose the count unnamed: its check is part of a run too,
        # until that report comes, which ends the page (a rise after it pages anew).
        unnamed_checks = counted | {first for _, first, named_at in late if named_at >= page_deadline(first, paging, minutes)}

        def previous(c):
            """The check before `c` that shows a rise no report names in time, or else the one
            before `c` that the exporter saw."""
            k = c - CHECK
            while k > c - minutes and k not in unnamed_checks and not any(polled(m) for m in range(max(k, 0), min(k + CHECK, minutes))):
                k -= CHECK
            return k

        def shows(c):
            """The first poll of the lists at or after check `c`."""
            return next((m for m in range(max(c, 0), minutes) if polled(m)), minutes)

        def run_begins(c):
            """Whether the rise of check `c` begins a run: True, False, or None where it may or
            may not (the page before it ends as this rise shows)."""
            k = previous(c)
            named = [n for _, first, n in late if first == k]
            if k in counted or not named:
                return k not in unnamed_checks
            # Every listing of the rise at `k` is one a report names after its check: the
            # report naming them ends the count's page, and a rise after that pages anew.
            # Named as this rise shows (its first poll, and the page's 2 minutes), either; named
            # before its deadline, the count's page may not have opened, and either.
            if max(named) < c:
                return True
            return None if max(named) <= shows(c) + POLL + 3 or k not in unnamed_checks else False

        begins = {c: run_begins(c) for c in counted}
        runs = {c for c, b in begins.items() if b}
        maybe_runs = {c for c, b in begins.items() if b is None}

        def undated(c):
            """Whether the rise of check `c` may go unpaged, taken for a named listing: no
            replica's list was current when the first poll after it showed it (an outage, every
            replica restarting), and a listing a report names began between the check and that
            poll. Nothing the exporter has then says which of them the check counted: the
            report's count history dates the rise, but its dates may be a daily sample's,
            which only the lists of a moment before could tell from the check's."""
            first_poll = next((m for m in range(max(c, 0), minutes) if polled(m)), minutes)
            if any(polled(m) for m in range(max(first_poll - POLL - 1, 0), first_poll)):
                return False
            return any(b is not None and c < s <= first_poll for b, s, _ in a.listings)

        undated_runs = {c for c in runs if undated(c)}
        pages += [(max(c, 0), max(c, 0)) for c in runs - undated_runs]
        lo, hi = page_count(pages, paging, minutes)
        hi += page_count([(max(c, 0), max(c, 0)) for c in undated_runs | maybe_runs], paging, minutes)[1]
        # A listing a report names after the check that counted it, at the first check of a run
        # of the count's page (a listing no report names rose the count at that check too): the
        # count's page takes the first begun of them for its own once the page is open before
        # the report names it (it says "N more"), as it does for any listing named after it. Named
        # after the page's deadline, it is the page's; before it, either. One of the check after
        # a run's first, begun before that page began (a poll and its 2 minutes after the check),
        # may be the page's too: the rules take a listing begun 2 minutes before the page for the
        # page's, not knowing when the check came; begun later, it pages by name.
        taken = set()
        for begun, first, named_at in sorted(late):
            l, h = page_count([(named_at, max(first, 0))], paging, minutes)
            if first in runs and first not in taken:
                taken.add(first)
                l = 0
                h = 0 if named_at >= page_deadline(first, paging, minutes) else h
            elif first not in runs and begun <= shows(previous(first)) + 3 and (previous(first) in runs or previous(first) in maybe_runs):
                l = 0
            lo, hi = lo + l, hi + h
        # A listing whose rise no list showed, begun in the two API check intervals before the
        # first poll that showed a rise no report names, no replica's list current before that
        # poll (an outage): the rules may take the first begun of them for that page's, as
        # nothing the exporter serves dates the page's rise once its report is behind a newer
        # rise (the report dates the newest only), and its page of its own may not come.
        relaxed = set()
        for c in sorted(runs | maybe_runs):
            p = shows(c)
            if not any(polled(m) for m in range(max(p - POLL - 1, 0), p)):
                candidates = [x for x in hidden if p - 2 * CHECK < x[0] < p - 2 and x not in relaxed]
                relaxed |= set(sorted(candidates)[:1])
        for x in hidden:
            l, h = page_count([x[1:]], paging, minutes)
            lo, hi = lo + (0 if x in relaxed else l), hi + h
        out.append(window(a.labels, "listing", events, (lo, hi), paging, due_at, minutes))
        if a.checked_until is not None and not reported:
            # The API stopped checking the asset weeks ago and no replica reports on it: nothing
            # the exporter serves dates its last change, so a page for it is allowed, not due.
            for family in ("score", "snds"):
                out.append(({**a.labels, "family": family}, set(), set(range(minutes)), (-1, -1)))
            continue
        # Score drops and SNDS blocks: the change at the API's check, until its next check.
        # One that no replica's list showed before the next check overwrote it (an API outage
        # of an hour or more) is over when the exporter first sees it: the first lists after
        # show it as missed, to a replica that remembers its list from before (no cold
        # restart since), and it pages once from them, until the lists after them (held
        # through an outage that begins before those). Without such a replica within a poll
        # of the first list back, nothing the exporter has says it happened: it may page.
        # Shown for a poll, such a change is over before the deadline of a page (a poll and
        # three minutes), yet it is the one sign the exporter will ever give of it: where the
        # replica showing it stays up that poll, Prometheus scrapes it, and no other page of
        # the family stands then (one would hold it), it is due by that deadline. A block
        # lifted in the outage too shows in a list back only while the API's last check is
        # the lift (its change says "lifted"); lifted a check before that, the list says the
        # same as before the outage, and nothing says it happened: it may page.
        for family, changes in (("score", [(c, None) for c in a.drops]), ("snds", a.blocks)):
            events = []
            pages = []
            unknowable = 0
            shown = []  # (event, first list back, last list showing it) of hidden changes shown a poll
            for c, lifted in changes:
                if c < 0 or (a.checked_until is not None and c > a.checked_until):
                    continue
                close = all_seen(c + CHECK)
                shown_at = None  # the last list back showing it for a whole poll
                if c + CHECK < minutes and not any(polled(m) for m in range(c, c + CHECK)):
                    back = next((m for m in range(c + CHECK, minutes) if polled(m)), minutes)
                    showing = [
                        (p, v)
                        for _, v in views
                        for p in range(back, min(back + POLL, minutes))
                        if v[p].list_at == p
                        and v[p].previous is not None
                        and (lifted is None or lifted >= st.last_check(a, p))
                    ]
                    if not showing:
                        events.append((c, c, close))
                        unknowable += 1
                        continue
                    # Shown from the first lists back until the lists after them: an outage
                    # that begins before those holds the page through it.
                    close = max(close, all_seen(back + 1))
                    shown_at = max(
                        (
                            p
                            for p, v in showing
                            if p + POLL + 4 <= minutes
                            and all(v[m].up for m in range(p, p + POLL))
                            and all(scraped(m) for m in range(p, p + POLL + 4))
                        ),
                        default=None,
                    )
                event = (c, c, close)
                events.append(event)
                pages.append(event)
                if shown_at is not None:
                    shown.append((event, back, shown_at))
            lo, hi = page_count(pages, paging, minutes)
            due_shown = set()
            for event, back, p in shown:
                apart = all(o is event or o[0] >= back + POLL + 4 or o[2] + POLL + 4 < back for o in events)
                # By the deadline, or once the poll showing it is over (an outage after it
                # stretches the deadline past the one sign there is).
                deadline = min(page_deadline(back, paging, minutes), p + POLL + 3)
                if apart and not page_count([event], paging, minutes)[0] and deadline <= minutes - 3:
                    lo += 1
                    due_shown |= due_at(deadline)
            counts = (lo, hi + unknowable)
            labels, due, allowed, counted = window(a.labels, family, events, counts, paging, due_at, minutes)
            out.append((labels, due | due_shown, allowed, counted))
    # The account's data stale: an outage past 45 minutes without a list, counted from the
    # last minute a replica could poll before it (every replica restarting just before the
    # outage makes the last list older than the outage), or from the newest list the replicas
    # still serve, where that is older: the replica holding the newest list restarted cold in
    # the outage while another, cut off from the API before it, serves an older one (the
    # runbook's "newest list any replica served in the last 15 minutes").
    def newest(m, carried):
        """The newest list a replica served (and Prometheus scraped) in the HELD minutes to
        `m`, or `carried` while none did (the age goes on counting)."""
        lists = [
            v[k].last_success
            for _, v in views
            for k in range(max(0, m - HELD + 1), m + 1)
            if scraped(k) and v[k].up and v[k].last_success is not None
        ]
        return max(lists, default=carried)

    events = []
    maybe = []
    for a_, b_ in st.outages:
        dark = a_
        while dark > 0 and not can_see(dark - 1):
            dark -= 1
        first = dark
        held = None
        for m in range(dark, min(b_, dark + STALE_AFTER)):
            held = newest(m, held)
            if held is not None and held < dark - POLL:
                # Stale from the minute the list served is 45 minutes old (or, when an older
                # one takes over past that, at once).
                first = min(first, max(held, m - (STALE_AFTER - 5)))
        if b_ - first >= STALE_AFTER + POLL + 10:
            events.append((first, b_ + POLL))
        elif first < dark and b_ - first >= STALE_AFTER - POLL:
            # An outage near 50 minutes of served age: the page may come, or not.
            maybe.append((first, b_ + POLL))
    due = set()
    allowed = set()
    for first, close in events:
        due |= due_at(first + STALE_AFTER + POLL + 1)
    for first, close in events + maybe:
        allowed |= set(range(first + STALE_AFTER - POLL, min(close + POLL + KEEP + 2, minutes)))
    out.append(({"kind": "", "asset": "", "family": "stale"}, due, allowed, (len(events), len(events) + len(maybe))))
    return out


def page_deadline(visible, seen, minutes):
    """The minute by which a change visible from `visible` must have paged: the count's page
    waits 2 minutes for a report and for every replica to see the change, a poll and three
    minutes during which the exporter can see the API and Prometheus runs. A poll falls in any poll's length of
    such minutes in a row, not in a shorter stretch an outage or a restart cuts off: those
    minutes do not count."""
    deadline, seeing = visible, 0
    while deadline < minutes and seeing < POLL + 3:
        if seen(deadline) == deadline:
            seeing += 1
        elif seeing < POLL:
            seeing = 0
        deadline += 1
    return deadline


def page_count(pages, seen, minutes):
    """The fewest and the most pages the receiver counts by the story's end, of `pages`, each
    (may open from, visible from) or (may open from, visible from, over at): one paged by its
    deadline counts; one that cannot open before the last minute (the receiver counts an alert
    a minute after it fires) does not, nor one over by its deadline (it is not due: `window`);
    one in between may."""
    lo = hi = 0
    for opens, visible, *over in pages:
        if opens >= minutes - 1:
            continue
        hi += 1
        deadline = page_deadline(visible, seen, minutes)
        lo += deadline <= minutes - 3 and all(deadline < close for close in over)
    return lo, hi


def window(labels, family, events, pages, seen, due_at, minutes):
    due = set()
    allowed = set()
    for opens, visible, close in events:
        if close <= visible:
            continue
        deadline = page_deadline(visible, seen, minutes)
        if deadline < close:
            due |= due_at(deadline)
        allowed |= set(range(opens, min(close + POLL + 4 + 1, minutes)))
    return ({**labels, "family": family}, due, allowed, pages)


# --- running promtool -------------------------------------------------------------------------

# Each check names the stories (accounts) that break it; the first three give the first minute
# at which they do (promtool prints it as the value), the last the pages counted.
CHECKS = {
    "late": "min_over_time(story:late[{T}m])",
    "unexpected": "min_over_time(story:unexpected[{T}m])",
    "lost": "min_over_time(story:lost[{T}m])",
    "pages": (
        "(sum_over_time(story:onsets[{T}m]) < on (job, account, kind, asset, family) (last_over_time(story_pages[{T}m]) >= 0))"
        " or (sum_over_time(story:onsets[{T}m]) > on (job, account, kind, asset, family) (last_over_time(story_pages_max[{T}m]) >= 0))"
        " or (sum_over_time(story:onsets[{T}m]) unless on (job, account, kind, asset, family) last_over_time(story_pages[{T}m]))"
        # (story_pages -1: any number of pages.)
        " or (last_over_time(story_pages[{T}m]) > 0 unless on (job, account, kind, asset, family) sum_over_time(story:onsets[{T}m]))"
    ),
}


def test_file(stories, rules, receiver, comment="", trace=0):
    """`rules`: the alerts' files (the batches' subset, or alerts.yml and rules.yml). The
    stories are all of one length."""
    (minutes,) = {st.minutes for st in stories}
    groups = ("reputation.pages", "reputation.alerts", "story.receiver")
    lines = [comment] if comment else []
    lines += ["rule_files:"] + [f"  - {r}" for r in rules] + [
        f"  - {receiver}",
        "",
        "evaluation_interval: 1m",
        f"group_eval_order: [{', '.join(groups)}]",
        "",
        "tests:",
        '  - interval: "1m"',
        "    input_series:",
    ]
    for st in stories:
        t = timeline(st)
        for series, values in t.series:
            lines.append(f"      - series: '{series}'")
            lines.append(f'        values: "{t.values_text(values)}"')
    lines.append("    promql_expr_test:")
    for name, expr in CHECKS.items():
        lines.append(f"      # {name}")
        lines.append(f"      - expr: '{expr.format(T=minutes)}'")
        lines.append(f"        eval_time: {minutes - 1}m")
        lines.append("        exp_samples: []")
    for minute in range(0, minutes, trace) if trace else ():
        # --trace: what fires every `trace` minutes, printed as failures.
        lines.append("      - expr: 'ALERTS{alertstate=\"firing\"}'")
        lines.append(f"        eval_time: {minute}m")
        lines.append("        exp_samples: []")
    return "\n".join(lines) + "\n"


def write_test(st, folder, name, title, recording=RECORDING, trace=0):
    """Writes story `st` as promtool test file `name` in `folder` (a regression, with the whole
    of alerts.yml and `recording`), headed by `title` and the story's notes; its path."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name)
    rel = lambda f: os.path.relpath(f, folder)
    comment = "\n".join(f"# {line}" for line in [title] + st.notes)
    with open(path, "w") as f:
        f.write(test_file([st], [rel(RULES), rel(recording)], rel(RECEIVER), comment, trace=trace))
    return path


FAILURE = re.compile(r'account="s(\d+)"')


# The alerts the checks read (the pages, and the sources of the inhibitions): promtool's time
# grows with every rule it evaluates, so the batches load these alone. A regression file loads
# the whole of alerts.yml.
CHECKED = {
    "ReputationSenderScoreDropped",
    "ReputationBlacklistListed",
    "ReputationAssetBlacklisted",
    "ReputationSndsBlocked",
    "ReputationDataStale",
    "ReputationExporterDown",
}


def checked_rules(workdir, recording=RECORDING):
    import yaml

    with open(RULES) as f:
        alerts = yaml.safe_load(f)
    group = next(g for g in alerts["groups"] if g["name"] == "reputation.alerts")
    group["rules"] = [r for r in group["rules"] if r["alert"] in CHECKED]
    missing = CHECKED - {r["alert"] for r in group["rules"]}
    assert not missing, f"alerts.yml has no {missing}"
    with open(recording) as f:
        pages = next(g for g in yaml.safe_load(f)["groups"] if g["name"] == "reputation.pages")
    path = os.path.join(workdir, "alerts.yml")
    with open(path, "w") as f:
        yaml.safe_dump({"groups": [pages, group]}, f)
    return path


def run_batch(stories, workdir, rules, promtool):
    path = os.path.join(workdir, f"batch-{stories[0].seed}.yml")
    with open(path, "w") as f:
        f.write(test_file(stories, [rules], os.path.abspath(RECEIVER)))
    # Each batch's promtool on one core (a batch evaluates its rules on one goroutine anyway, and
    # the batches fill the cores), collecting garbage a quarter as often: a quarter less CPU
    # for about 1 GB a batch, the same results.
    env = {"GOMAXPROCS": "1", "GOGC": "400", **os.environ}
    done = subprocess.run([promtool, "test", "rules", path], capture_output=True, text=True, env=env)
    failures = {}
    if done.returncode != 0:
        check = None
        for line in done.stdout.splitlines() + done.stderr.splitlines():
            if ", err: " in line:
                raise RuntimeError(f"promtool could not evaluate a check on {path}:\n{line}")
            if "expr:" in line:
                marks = {"late": "story:late", "unexpected": "story:unexpected", "lost": "story:lost[", "pages": "story:onsets"}
                check = next((name for name, mark in marks.items() if mark in line), None)
            for seed in FAILURE.findall(line):
                failures.setdefault(int(seed), set()).add(check or "?")
        if not failures:
            raise RuntimeError(f"promtool failed on {path}:\n{done.stdout}{done.stderr}")
    return failures, done.stdout


def print_trace(path, promtool, every, minutes):
    """The firing alerts of a --trace file: each minute at which what fires changes."""
    done = subprocess.run([promtool, "test", "rules", path], capture_output=True, text=True)
    output = (done.stdout + done.stderr).splitlines()
    firing = {}
    minute = None
    for line in output:
        if "ALERTS{alertstate=" in line and "time:" in line:
            h, m = re.search(r"time: (?:(\d+)h)?(?:(\d+)m)?", line).groups()
            minute = int(h or 0) * 60 + int(m or 0)
        elif minute is not None and "got:" in line:
            found = []
            for sample in re.split(r"\}[^{]*\{", line):
                name = re.search(r'alertname="Reputation(\w+)"', sample)
                asset = re.search(r'asset="([^"]*)"', sample)
                bl = re.search(r'blacklist="([^"]*)"', sample)
                found.append(name.group(1) + (f" {asset.group(1)}" if asset else "") + (f" [{bl.group(1)}]" if bl else ""))
            firing[minute] = "; ".join(found)
            minute = None
    previous = ""
    for m in range(0, minutes, every):
        if firing.get(m, "") != previous:
            print(f"  {m:>5}: {firing.get(m, '(nothing)')}")
        previous = firing.get(m, "")
    for line in output:
        if "got:" in line and "ALERTS" not in line:
            print("  check " + line.strip()[:400])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stories", type=int, default=200)
    p.add_argument("--seed", type=int, default=1, help="the first story's seed; the others follow")
    p.add_argument("--batch", type=int, default=50, help="stories per promtool run")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--replay", type=int, help="one story: print it (and with --write, write it)")
    p.add_argument("--write", help="a folder: the replayed story as a promtool test file there")
    p.add_argument(
        "--open",
        help="a file of seeds known to break a promise: printed, not failed; one of them that keeps every promise fails the run until it is taken out",
    )
    p.add_argument("--trace", type=int, default=0, help="with --write: list the firing alerts every N minutes")
    p.add_argument("--promtool", default="promtool")
    p.add_argument(
        "--recording",
        default=RECORDING,
        help="the recording rules checked (default: the shipped ones; a changed copy shows what the checks catch)",
    )
    p.add_argument(
        "--exporter-check",
        metavar="FILE",
        help="write the stories the exporter replays (tests/api/model.rs) with what the model says it serves; '-' for stdout",
    )
    args = p.parse_args()

    if args.exporter_check:
        import json

        text = json.dumps(exporter_check(EXPORTER_SEEDS), separators=(",", ":")) + "\n"
        if args.exporter_check == "-":
            sys.stdout.write(text)
        else:
            with open(args.exporter_check, "w") as f:
                f.write(text)
        return 0

    if args.replay is not None:
        st = story(args.replay)
        print(f"story {st.seed}: " + "; ".join(st.notes))
        for a in st.assets:
            print(f"  {a.labels['asset']}: listings {a.listings} unnamed {a.unnamed} drops {a.drops} blocks {a.blocks}")
        if args.write:
            path = write_test(st, args.write, f"story_{st.seed}_test.yml", f"Story {st.seed} of tests/rules/stories.py:", args.recording, args.trace)
            print(f"written: {path}")
            if args.trace:
                print_trace(path, args.promtool, args.trace, st.minutes)
        return 0

    seeds = list(range(args.seed, args.seed + args.stories))
    # A batch's stories are of one length (promtool evaluates them over one time range).
    by_length = {}
    for s in seeds:
        st = story(s)
        by_length.setdefault(st.minutes, []).append(st)
    batches = [group[i : i + args.batch] for group in by_length.values() for i in range(0, len(group), args.batch)]
    failed = {}
    with tempfile.TemporaryDirectory() as workdir, ThreadPoolExecutor(args.jobs) as pool:
        rules = checked_rules(workdir, args.recording)
        for failures, _ in pool.map(lambda b: run_batch(b, workdir, rules, args.promtool), batches):
            failed.update(failures)
    by_check = {}
    for seed, checks in failed.items():
        for c in checks:
            by_check.setdefault(c, []).append(seed)
    for c, seeds_ in sorted(by_check.items()):
        print(f"{c}: {len(seeds_)} stories, e.g. {sorted(seeds_)[:10]}")
    known = open_stories(args.open) & set(seeds) if args.open else set()
    for seed in sorted(failed):
        mark = " [open]" if seed in known else ""
        print(f"  story {seed}{mark} ({', '.join(sorted(failed[seed]))}): " + "; ".join(story(seed).notes))
    new = sorted(set(failed) - known)
    fixed = sorted(known - set(failed))
    if known:
        print(f"stories: {len(known & set(failed))} open ({args.open}), not counted below")
    if fixed:
        print(f"stories now keeping every promise, to take out of {args.open}: {fixed}")
    print(f"stories: {len(seeds) - len(failed)} passed, {len(new)} failed")
    return 1 if new or fixed else 0


def open_stories(path):
    """The seeds a file lists (one per line; what follows `#` is a comment)."""
    with open(path) as f:
        return {int(line.split("#")[0]) for line in f if line.split("#")[0].strip()}


if __name__ == "__main__":
    sys.exit(main())
