#!/usr/bin/env python3
"""Prints every benchmark of two `cargo bench -p ecsql-benches` runs side by side: before, after, and
after / before, from two criterion result folders.

Run both trees' benches with the same options, then compare, e.g.:

    git worktree add ../before <commit>
    (cd ../before && cargo bench -p ecsql-benches -- --warm-up-time 1 --measurement-time 2)
    cargo bench -p ecsql-benches -- --warm-up-time 1 --measurement-time 2
    python3 benches/compare.py ../before/target/criterion target/criterion

A case only one run has is printed with the other side empty. The anchors (hecs, SQLite,
the plain loops) run the same code in both runs: their after / before is the machine's
noise between the two runs.
"""

import json
import pathlib
import sys

# Beside this file: criterion's estimate of a case, and times as the docs print them.
from report import human, seconds


def results(root):
    cases = {}
    for bench in pathlib.Path(root).glob("**/new/benchmark.json"):
        meta = json.loads(bench.read_text())
        estimates = json.loads((bench.parent / "estimates.json").read_text())
        cases[meta["full_id"]] = seconds(estimates)
    return cases


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: compare.py BEFORE_CRITERION_FOLDER AFTER_CRITERION_FOLDER")
    before, after = results(sys.argv[1]), results(sys.argv[2])
    print("| benchmark | before | after | after / before |")
    print("|---|---:|---:|---:|")
    for case in sorted(set(before) | set(after)):
        b, a = before.get(case), after.get(case)
        ratio = f"{a / b:.2f}" if a and b else ""
        print(f"| {case} | {human(b) if b else ''} | {human(a) if a else ''} | {ratio} |")


if __name__ == "__main__":
    main()
