#!/usr/bin/env python3
"""Stories on grids: every combination of a few choices around one case that the drawn stories
of stories.py reach seldom, checked with the same model, oracle and checks.

    python3 tests/rules/directed.py                           # every grid
    python3 tests/rules/directed.py --grid count-then-report  # one grid
    python3 tests/rules/directed.py --story 2000046 --write tests/rules/regressions/

stories.py draws each story's parts independently, so a case that needs four of them at once (a
report that fails for an hour, a second listing an API check later, an outage between them) comes
once in thousands of stories, and a promise that breaks only there can go unseen through a long
run. Each grid walks the neighbourhood of such a case instead:

  hidden-change      a score drop or an SNDS block that the API checks during an outage, while
                     one replica restarts, warm or cold, minutes before the outage ends: the
                     page of the change the outage hid comes from the replica that remembers
                     its list, whichever is back first;
  count-then-report  a listing no report names in time (its report failing), then a second
                     listing, named or not, at the same API check or one to two checks later,
                     with and without an outage between: the report that names the first ends
                     the count's page, and what the second pages depends on whether that page
                     still stands;
  report-then-count  the same the other way round (a listing no report names, then one a late
                     report names), and three listings over three checks, one hidden by an
                     outage.

A story that breaks a promise is printed with its number; `--story N --write DIR` writes it as a
promtool test file (a regression, as stories.py --replay writes one).
"""

import argparse
import itertools
import os
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import stories as S  # noqa: E402

MINUTES = 480
CHECK_PHASE = 37  # hidden-change: the API checks at :37, so the change is checked at minute 157


def replicas(offsets, reports="all"):
    return [
        S.ReplicaSpec(f"exporter-{i}:9525", offset=o, reports=reports, report_latency=1, round_phase=(13 + 28 * i) % 60)
        for i, o in enumerate(offsets)
    ]


def hidden_change(first):
    """A drop or a block checked at 157, in an API outage from 100, while a replica restarts."""
    out = []
    cases = itertools.product(
        [(0, 1), (0, 3), (0, 4), (0, 3, 2)],
        [90, 200],
        ["score", "snds"],
        [0, 1],
        [True, False],
        [(1, 1), (4, 4), (9, 9), (15, 4), (1, 9), (4, 1)],
    )
    for n, (offsets, length, family, who, warm, (before, down)) in enumerate(cases):
        reps = replicas(offsets)
        end = 100 + length
        reps[who].restarts.append((end - before, end - before + down, warm))
        asset = S.AssetSpec(1)
        if family == "score":
            asset.drops.append(157)
        else:
            asset.blocks.append((157, 157 + 3 * S.CHECK))
        note = (
            f"{len(offsets)} replicas at offsets {offsets}, API outage 100-{end}, {family} change checked at 157, "
            f"{reps[who].instance} restarts {end - before}-{end - before + down} ({'warm' if warm else 'cold'})"
        )
        out.append(S.Story(first + n, MINUTES, CHECK_PHASE, reps, [asset, S.AssetSpec(2)], [(100, end)], [], [note]))
    return out


def count_then_report(first):
    """SpamCop from `start`, its reports failing; then a second listing `gap` minutes later."""
    out = []
    n = 0
    cases = itertools.product([1, 2], [110, 127], [0, 1, 30, 60, 61, 120], [20, 70, 130], ["all", "one"], [False, True], [False, True])
    for count, start, gap, fails, who, outage, unnamed in cases:
        if unnamed and gap == 0:
            continue
        reps = replicas([0, 3][:count])
        for i, r in enumerate(reps):
            if who == "all" or i == 0:
                r.report_fails.append((start - 10, start + fails))
        asset = S.AssetSpec(1)
        asset.listings.append(("SpamCop", start, start + 600))
        second = start + gap
        if unnamed:
            asset.unnamed.append((second, second + 600))
        else:
            asset.listings.append(("Barracuda", second, second + 500))
        outages = [(start + 5, start + 95)] if outage else []
        note = (
            f"{count} replica(s), reports of {'every replica' if who == 'all' else 'exporter-0'} fail {start - 10}-{start + fails}, "
            f"SpamCop from {start}, {'a listing no report names' if unnamed else 'Barracuda'} from {second}"
            + (f", API outage {outages[0][0]}-{outages[0][1]}" if outages else "")
        )
        out.append(S.Story(first + n, MINUTES, 7, reps, [asset, S.AssetSpec(2)], outages, [], [note]))
        n += 1
    return out


def report_then_count(first):
    """A listing no report names from `start`, then SpamCop; or SpamCop, one unnamed, Barracuda."""
    out = []
    cases = itertools.product([1, 2], [110, 127], [1, 30, 60, 61, 120], [20, 70, 130, 190], [False, True], ["unnamed first", "three"])
    for n, (count, start, gap, fails, outage, order) in enumerate(cases):
        reps = replicas([0, 3][:count])
        for r in reps:
            r.report_fails.append((start - 10, start + fails))
        asset = S.AssetSpec(1)
        second = start + gap
        if order == "unnamed first":
            asset.unnamed.append((start, start + 600))
            asset.listings.append(("SpamCop", second, second + 500))
            what = f"a listing no report names from {start}, SpamCop from {second}"
        else:
            asset.listings.append(("SpamCop", start, start + 600))
            asset.unnamed.append((second, second + 600))
            asset.listings.append(("Barracuda", second + 60, second + 560))
            what = f"SpamCop from {start}, a listing no report names from {second}, Barracuda from {second + 60}"
        outages = [(start + 5, start + 95)] if outage else []
        note = f"{count} replica(s), reports fail {start - 10}-{start + fails}, {what}" + (
            f", API outage {outages[0][0]}-{outages[0][1]}" if outages else ""
        )
        out.append(S.Story(first + n, MINUTES, 7, reps, [asset, S.AssetSpec(2)], outages, [], [note]))
    return out


# Each grid's stories are numbered from its own million, so a number names one story for good
# (accounts s1000000 and up: never a drawn story's seed).
GRIDS = {
    "hidden-change": (1_000_000, hidden_change),
    "count-then-report": (2_000_000, count_then_report),
    "report-then-count": (3_000_000, report_then_count),
}


def grid_stories(names):
    return [st for name in names for st in GRIDS[name][1](GRIDS[name][0])]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--grid", action="append", choices=sorted(GRIDS), help="a grid to run (default: every one)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--batch", type=int, default=50, help="stories per promtool run")
    p.add_argument("--story", type=int, help="one story, by its number: print it (and with --write, write it)")
    p.add_argument("--write", help="a folder: the story as a promtool test file there")
    p.add_argument("--promtool", default="promtool")
    p.add_argument("--recording", default=S.RECORDING, help="the recording rules checked (default: the shipped ones)")
    args = p.parse_args()

    if args.story is not None:
        name = next((g for g, (first, _) in GRIDS.items() if first <= args.story < first + 1_000_000), None)
        st = next((s for s in grid_stories([name]) if s.seed == args.story), None) if name else None
        if st is None:
            sys.exit(f"no story {args.story} on any grid")
        print(f"story {st.seed} ({name}): " + "; ".join(st.notes))
        if args.write:
            title = f"Story {st.seed} of tests/rules/directed.py ({name}):"
            print("written: " + S.write_test(st, args.write, f"directed_{st.seed}_test.yml", title, args.recording))
        return 0

    names = args.grid or list(GRIDS)
    stories = grid_stories(names)
    batches = [stories[i : i + args.batch] for i in range(0, len(stories), args.batch)]
    failed = {}
    with tempfile.TemporaryDirectory() as workdir, ThreadPoolExecutor(args.jobs) as pool:
        rules = S.checked_rules(workdir, args.recording)
        for failures, _ in pool.map(lambda b: S.run_batch(b, workdir, rules, args.promtool), batches):
            failed.update(failures)
    by_seed = {st.seed: st for st in stories}
    for seed in sorted(failed):
        print(f"  story {seed} ({', '.join(sorted(failed[seed]))}): " + "; ".join(by_seed[seed].notes))
    print(f"directed stories ({', '.join(names)}): {len(stories) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
