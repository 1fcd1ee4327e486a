#!/usr/bin/env python3
"""The on-call promises over a long run of stories, resumable across machines.

    python3 bench/long_stories.py --until 18:30      # run chunks until then, record each
    python3 bench/long_stories.py --summary          # what the record holds for today's rules

A run of tests/rules/stories.py over seeds 1 to --stories (20,000) costs hours of CPU (about
1.5 to 3.4 s of one core a story, with the machine), more than one sitting. So it runs in
chunks of --chunk stories, each one invocation of stories.py, and every chunk that completes is
appended to the record (bench/results/long-stories.tsv, committed): the rules' fingerprint,
the chunk's first seed and size, the stories that broke a promise, the CPU time and promtool's
version. A later run, on any machine, goes on with the first chunk the record does not hold for
the same fingerprint; a run stopped in a chunk loses that chunk only.

The fingerprint is the SHA-256 of what decides a story's outcome: the shipped rules
(deploy/prometheus/alerts.yml, rules.yml), the receiver's rules and the generator, model and
oracle (tests/rules/receiver.yml, stories.py, and scenarios.py that writes the timelines). A
change to any of them starts the run over; chunks of other fingerprints stay in the record,
and --summary counts only today's.
`--summary` marks the failures listed in tests/rules/open_stories.txt as open and exits 1 if
any other story broke a promise.

    python3 bench/long_stories.py --carry REV       # carry REV's record over to today's files

A change to the generator or the oracle that leaves most stories as they were need not cost
the hours again. A story's outcome is a function of what promtool is given: the rules (the
shipped ones, as the batches load them, and the receiver's) and the story's own test input (its
series, the oracle's expectations and the checks; the stories of a batch are separate accounts).
`--carry` takes the chunks recorded on the fingerprint of the files at git revision REV and,
where the rules are the same byte for byte, compares every seed's test input under REV's files
and today's: a story whose input is unchanged keeps its outcome, the others run again with
promtool. Each chunk so checked is recorded on today's fingerprint, its promtool column naming
the fingerprint it was carried from and how many stories ran again.
"""
import argparse
import datetime
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

STORIES = os.path.join(ROOT, "tests", "rules", "stories.py")
OUTCOME = [
    os.path.join(ROOT, "deploy", "prometheus", "alerts.yml"),
    os.path.join(ROOT, "deploy", "prometheus", "rules.yml"),
    os.path.join(ROOT, "tests", "rules", "receiver.yml"),
    os.path.join(ROOT, "tests", "rules", "scenarios.py"),
    STORIES,
]
OPEN = os.path.join(ROOT, "tests", "rules", "open_stories.txt")
RECORD = os.path.join(ROOT, "bench", "results", "long-stories.tsv")
HEADER = "# fingerprint\tfirst_seed\tstories\tfailed\tcpu_seconds\tpromtool\tfinished\n"


def fingerprint(root=ROOT):
    h = hashlib.sha256()
    for path in OUTCOME:
        with open(os.path.join(root, os.path.relpath(path, ROOT)), "rb") as f:
            h.update(os.path.relpath(path, ROOT).encode() + b"\0" + f.read() + b"\0")
    return h.hexdigest()[:16]


def stories_module(root=ROOT):
    """tests/rules/stories.py of the tree at `root` (one tree a process: it imports its
    scenarios.py by name)."""
    sys.path.insert(0, os.path.join(root, "tests", "rules"))
    import stories

    return stories


def digests(root, first, count):
    """Prints what decides the outcome of seeds first..first+count-1 under the files at `root`:
    a line of the rules' SHA-256 (the alerts as the batches load them, and the receiver's), then
    a line `seed SHA-256` of each story's own test input."""
    stories = stories_module(root)
    with tempfile.TemporaryDirectory() as workdir:
        with open(stories.checked_rules(workdir), "rb") as f:
            rules = f.read()
    with open(stories.RECEIVER, "rb") as f:
        rules += b"\0" + f.read()
    print("rules", hashlib.sha256(rules).hexdigest())
    for seed in range(first, first + count):
        text = stories.test_file([stories.story(seed)], ["alerts.yml"], "receiver.yml")
        print(seed, hashlib.sha256(text.encode()).hexdigest())


def read_digests(root, first, count):
    done = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--digests", root, str(first), str(count)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        sys.exit(f"could not read the stories of {root} (seeds {first}-{first + count - 1}):\n{done.stderr}")
    lines = [line.split() for line in done.stdout.splitlines()]
    return lines[0][1], {int(seed): digest for seed, digest in lines[1:]}


def carry(rev, record, jobs, deadline, version):
    """Records on today's fingerprint the chunks recorded on that of the files at `rev`: the
    seeds whose test input is unchanged keep their outcome, the others run again."""
    fp = fingerprint()
    with tempfile.TemporaryDirectory() as old_root:
        files = subprocess.run(
            ["git", "-C", ROOT, "archive", rev, "deploy/prometheus", "tests/rules"], capture_output=True
        )
        if files.returncode != 0:
            sys.exit(f"git archive {rev}: {files.stderr.decode().strip()}")
        subprocess.run(["tar", "-x", "-C", old_root], input=files.stdout, check=True)
        old_fp = fingerprint(old_root)
        if old_fp == fp:
            sys.exit(f"{rev} has today's fingerprint ({fp}): nothing to carry")
        old = read_record(record, old_fp)
        if not old:
            sys.exit(f"the record holds no chunk of {rev}'s fingerprint ({old_fp})")
        done = read_record(record, fp)
        for first, (count, failed) in sorted(old.items()):
            if first in done:
                continue
            if deadline and datetime.datetime.now() > deadline:
                print(f"stopping before seed {first}: past the deadline")
                break
            started, cpu_started = time.monotonic(), os.times()
            with ThreadPoolExecutor(2) as pool:
                (old_rules, before), (new_rules, after) = pool.map(
                    lambda root: read_digests(root, first, count), (old_root, ROOT)
                )
            if old_rules != new_rules:
                sys.exit(f"the rules differ between {rev} and today's files: nothing carries, run the stories again")
            changed = sorted(s for s in after if after[s] != before[s])
            kept = {s for s in failed if s not in changed}
            # (Few change where a carry is worth it: one run of stories.py each.)
            rerun = set().union(*(run_chunk(seed, 1, jobs)[0] for seed in changed))
            spent = os.times()
            cpu = sum(spent[:4]) - sum(cpu_started[:4])
            failed_now = kept | rerun
            finished = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            with open(record, "a") as f:
                f.write(
                    f"{fp}\t{first}\t{count}\t{','.join(map(str, sorted(failed_now)))}\t{cpu:.0f}"
                    f"\t{version}; carried from {old_fp}, {len(changed)} run again\t{finished}\n"
                )
            print(
                f"seeds {first}-{first + count - 1}: carried from {old_fp}, {len(changed)} run again"
                + (f" ({changed})" if changed and len(changed) <= 10 else "")
                + f"; {count - len(failed_now)} kept every promise"
                + (f", broken by {sorted(failed_now)}" if failed_now else "")
                + f" ({time.monotonic() - started:.0f} s)",
                flush=True,
            )


def read_record(path, fp):
    """{first_seed: (stories, failed seeds)} of the chunks recorded for fingerprint `fp`."""
    chunks = {}
    if not os.path.exists(path):
        return chunks
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if line.startswith("#") or not line.strip():
                continue
            fields = line.rstrip("\n").split("\t")
            if len(fields) != 7:
                sys.exit(f"{path}:{n}: {len(fields)} fields, not 7: {line.strip()!r}")
            if fields[0] == fp:
                failed = {int(s) for s in fields[3].split(",") if s}
                chunks[int(fields[1])] = (int(fields[2]), failed)
    return chunks


def run_chunk(first, count, jobs):
    """Runs stories.py over seeds first..first+count-1: the seeds that broke a promise, CPU s."""
    started = os.times()
    done = subprocess.run(
        [sys.executable, STORIES, "--stories", str(count), "--seed", str(first), "--jobs", str(jobs)],
        capture_output=True,
        text=True,
    )
    spent = os.times()
    cpu = (spent.children_user + spent.children_system) - (started.children_user + started.children_system)
    summary = re.search(r"^stories: (\d+) passed, (\d+) failed$", done.stdout, re.M)
    if summary is None:
        sys.exit(f"stories.py --seed {first} gave no result (exit {done.returncode}):\n{done.stdout}{done.stderr}")
    failed = {int(s) for s in re.findall(r"^  story (\d+) ", done.stdout, re.M)}
    if len(failed) != int(summary.group(2)) or int(summary.group(1)) + len(failed) != count:
        sys.exit(f"stories.py --seed {first}: its summary does not add up:\n{done.stdout}")
    return failed, cpu


def promtool_version():
    out = subprocess.run(["promtool", "--version"], capture_output=True, text=True).stdout
    m = re.search(r"version (\S+)", out)
    return m.group(1) if m else "unknown"


def summary(path, fp, total):
    chunks = read_record(path, fp)
    covered = set()
    failed = set()
    for first, (count, f) in chunks.items():
        covered |= set(range(first, first + count))
        failed |= f
    wanted = set(range(1, total + 1))
    known = stories_module().open_stories(OPEN)
    print(f"rules {fp}: {len(covered & wanted)} of seeds 1-{total} run, {len(covered - failed)} kept every promise")
    for seed in sorted(failed):
        print(f"  story {seed}{' [open]' if seed in known else ''}")
    new = failed - known
    print(f"failed: {len(new)} (open: {len(failed & known)})")
    return 1 if new else 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stories", type=int, default=20000, help="the run: seeds 1 to this")
    # 500 a chunk: stories.py runs a chunk in batches of one story length, so a chunk of 100
    # (five lengths, five uneven batches) left a core idle about a fifth of its time.
    p.add_argument("--chunk", type=int, default=500, help="stories per invocation of stories.py")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--until", help="HH:MM: start no chunk that the last one's time says would end later")
    p.add_argument("--record", default=RECORD)
    p.add_argument("--summary", action="store_true")
    p.add_argument("--carry", metavar="REV", help="carry the record of the files at git revision REV to today's")
    p.add_argument("--digests", nargs=3, metavar=("ROOT", "FIRST", "COUNT"), help=argparse.SUPPRESS)
    args = p.parse_args()

    if args.digests:
        root, first, count = args.digests
        return digests(root, int(first), int(count))
    fp = fingerprint()
    if args.summary:
        return summary(args.record, fp, args.stories)
    deadline = None
    if args.until:
        h, m = (int(x) for x in args.until.split(":"))
        now = datetime.datetime.now()
        deadline = now.replace(hour=h, minute=m, second=0, microsecond=0)
        if deadline <= now:
            deadline += datetime.timedelta(days=1)
    version = promtool_version()
    os.makedirs(os.path.dirname(os.path.abspath(args.record)), exist_ok=True)
    if not os.path.exists(args.record) or os.path.getsize(args.record) == 0:
        with open(args.record, "w") as f:
            f.write(HEADER)
    if args.carry:
        carry(args.carry, args.record, args.jobs, deadline, version)
        return summary(args.record, fp, args.stories)
    last = 0.0
    done = read_record(args.record, fp)  # read once: only this run appends to it
    first = 1
    while first <= args.stories:
        recorded = done.get(first)
        if recorded is not None:
            first += recorded[0]
            continue
        # A chunk ends where the run or the next recorded chunk begins, so chunks of another
        # size (an earlier run's --chunk) are gone past, never run twice.
        count = min([args.chunk, args.stories + 1 - first] + [s - first for s in done if s > first])
        if deadline and datetime.datetime.now() + datetime.timedelta(seconds=last) > deadline:
            print(f"stopping before seed {first}: the chunk would end after {args.until}")
            break
        started = time.monotonic()
        failed, cpu = run_chunk(first, count, args.jobs)
        last = time.monotonic() - started
        finished = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        with open(args.record, "a") as f:
            f.write(f"{fp}\t{first}\t{count}\t{','.join(map(str, sorted(failed)))}\t{cpu:.0f}\t{version}\t{finished}\n")
        print(f"seeds {first}-{first + count - 1}: {count - len(failed)} kept every promise"
              + (f", broken by {sorted(failed)}" if failed else "") + f" ({last:.0f} s)", flush=True)
        first += count
    return summary(args.record, fp, args.stories)


if __name__ == "__main__":
    sys.exit(main())
