#!/usr/bin/env python3
"""Prints the tables of docs/performance.md and docs/architecture.md from the last
`cargo bench -p ecsql-benches` run.

Reads criterion's results under target/criterion and puts, for every workload and size,
each side's time per iteration next to the others, with the ratios the targets are
stated in: the anchors (hecs, a plain SoA loop, SQLite); each index query beside its
scan (benches/index.rs); each index structure beside its alternatives
(benches/structures.rs); and, last, every case of any other group (the sorts, the live
queries, bevy's side of the ticks, …), each side beside the fastest of its case. Run it
from the repository root after `cargo bench -p ecsql-benches`:

    cargo bench -p ecsql-benches && python3 benches/report.py
"""

import json
import pathlib
import sys

# The (case, side) pairs a table has printed; the last table prints every case with a
# side none printed.
PRINTED = set()

ROOT = pathlib.Path("target/criterion")
ORDER = ["simple_insert", "simple_iter", "frag_iter", "add_remove", "filtered_select",
         "point_lookup", "statement_overhead", "write_texts", "deep_texts", "transaction", "update_1pct",
         "rollback_1pct",
         "tick_20_systems", "falling_cubes"]
ANCHORS = ["ecsql_door", "hecs", "plain_soa", "sqlite"]
HEADS = ["ecsql", "ecsql door", "hecs", "plain SoA", "SQLite"]
# The entity counts of the workloads that run at one size only.
SIZE = {"frag_iter": 520, "add_remove": 10_000, "point_lookup": 1_000_000, "statement_overhead": 1_000_000,
        "write_texts": 1_000_000, "deep_texts": 100,
        "tick_20_systems": 10_000, "falling_cubes": 10_000}
# benches/ticks.rs: what the time of one tick is divided by, and what the quotient is.
TICK_UNITS = {"empty_tick": (1, "per tick (no system)"), "idle_systems": (20, "per system with nothing to do"),
              "tick_20_systems": (20, "per system (500 entities each)"), "events": (100_000, "per event emitted and read twice")}
# How ecsql's side runs, where a workload has more than one way. A way whose SQLite side
# is named alike (`ecsql_same_text` and `sqlite_same_text`) is put beside that side;
# every other beside `sqlite`.
READS = {"ecsql_sql": "", "ecsql_sql_one_thread": " (PRAGMA threads = 1)", "ecsql_columns": " (Rows::column)",
         "ecsql_sql_as_written": " (PRAGMA parameterize = off)",
         "ecsql_sql_one_table": " (the same rows in one table)",
         "ecsql_sql_database_kept": " (the Database kept: the read lock taken)",
         "ecsql_sql_rows": " (query, next and get)", "ecsql_same_text": " (the same text each call)",
         "ecsql_prepare_cached": " (prepare_cached)", "ecsql_script_lines": " (a script's lines)"}
# Ways that run another workload than the anchors do (frag_iter's rows in one table, not
# 26): printed with their time alone, no anchor beside them and no ratio.
OWN_WORKLOAD = {"ecsql_sql_one_table"}


def seconds(estimates):
    """Criterion's estimate of the time per iteration: the slope when it fitted one."""
    best = estimates.get("slope") or estimates["mean"]
    return best["point_estimate"] / 1e9


def human(t):
    for unit, scale in (("s", 1), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if t >= scale:
            return f"{t / scale:.3g} {unit}"
    return f"{t * 1e9:.3g} ns"


def results():
    cases = {}
    for bench in ROOT.glob("**/new/benchmark.json"):
        meta = json.loads(bench.read_text())
        estimates = json.loads((bench.parent / "estimates.json").read_text())
        case, _, side = meta["function_id"].rpartition("/")
        # A numeric parameter is the workload's size; any other (`constant_where`'s
        # `false`) names the case.
        value = meta["value_str"] or ""
        n = int(value) if value.isdigit() else 0
        if value and not value.isdigit():
            case = f"{case} {value}".strip()
        key = (meta["group_id"], case, n)
        cases.setdefault(key, {})[side] = seconds(estimates)
    return cases


def main():
    cases = results()
    if not cases:
        sys.exit("no criterion results under target/criterion: run `cargo bench -p ecsql-benches` first")
    print("| workload | N | " + " | ".join(HEADS) + " | ecsql / hecs | ecsql / SoA | SQLite / ecsql |")
    print("|---|---:|" + "---:|" * len(HEADS) + "---:|---:|---:|")
    rank = {g: i for i, g in enumerate(ORDER)}
    ordered = sorted((c for c in cases.items() if c[0][0] in rank),
                     key=lambda c: (rank[c[0][0]], c[0][1], c[0][2]))
    for (group, case, n), sides in ordered:
        for reads, how in READS.items():
            ecsql = sides.get(reads)
            if ecsql is None:
                continue
            name = f"{group} {case}".strip() + how
            own = "sqlite" + reads.removeprefix("ecsql")
            anchors = {**sides, "sqlite": sides[own]} if own in sides else sides
            if reads in OWN_WORKLOAD:
                anchors = {}
            cells = [human(ecsql)] + [human(anchors[s]) if s in anchors else "" for s in ANCHORS]
            key = (group, case, n)
            PRINTED.update([(key, reads)] + [(key, s) for s in ANCHORS if s in sides])
            if own in sides:
                PRINTED.add((key, own))

            def ratio(a, b):
                return f"{a / b:.2f}" if a and b else ""

            ratios = [ratio(ecsql, anchors.get("hecs")), ratio(ecsql, anchors.get("plain_soa")),
                      ratio(anchors.get("sqlite"), ecsql)]
            size = n or SIZE.get(group, "")
            print(f"| {name} | {size:,} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
    ticks(cases)
    indexes(cases)
    structures(cases)
    collision(cases)
    others(cases)


def ticks(cases):
    """benches/ticks.rs: a tick's time divided into what it is made of."""
    rows = [(g, sides["ecsql_sql"]) for (g, _, _), sides in sorted(cases.items())
            if g in TICK_UNITS and "ecsql_sql" in sides]
    if not rows:
        return
    print("\n| tick bench | per tick | divided by | each |")
    print("|---|---:|---:|---|")
    for group, t in rows:
        units, what = TICK_UNITS[group]
        print(f"| {group} | {human(t)} | {units:,} | {human(t / units)} {what} |")


def indexes(cases):
    """benches/index.rs: each index query beside the scan doing the same query."""
    rows = sorted((g, sides) for (g, _, _), sides in cases.items()
                  if g.startswith("index_") and "index" in sides and "scan" in sides)
    if not rows:
        return
    print("\n| index bench | index | scan | scan / index |")
    print("|---|---:|---:|---:|")
    for group, sides in rows:
        PRINTED.update(((group, case, n), side) for (g, case, n) in cases if g == group for side in ("index", "scan"))
        i, s = sides["index"], sides["scan"]
        print(f"| {group.removeprefix('index_')} | {human(i)} | {human(s)} | {s / i:.3g} |")


def collision(cases):
    """benches/collision.rs: the collision step per N, each side beside ecsql's."""
    sides_order = ["ecsql_sql", "plain_grid", "plain_pairs", "ecsql_no_index", "sqlite"]
    rows = sorted((n, sides) for (g, _, n), sides in cases.items() if g == "collision")
    if not rows:
        return
    print("\n| collision | N | " + " | ".join(sides_order) + " |")
    print("|---|---:|" + "---:|" * len(sides_order))
    for n, sides in rows:
        PRINTED.update((("collision", case, m), s) for (g, case, m) in cases if g == "collision" and m == n
                       for s in sides_order)
        cells = [human(sides[s]) if s in sides else "" for s in sides_order]
        print(f"| collision | {n:,} | " + " | ".join(cells) + " |")


def structures(cases):
    """benches/structures.rs: every structure's time, and its multiple of the fastest."""
    rows = sorted((g, sides) for (g, _, _), sides in cases.items()
                  if g.startswith(("points_", "relation_")))
    if not rows:
        return
    print("\n| structure bench | side | time | x fastest |")
    print("|---|---|---:|---:|")
    for group, sides in rows:
        fastest = min(sides.values())
        for side, t in sorted(sides.items(), key=lambda kv: kv[1]):
            print(f"| {group} | {side} | {human(t)} | {t / fastest:.3g} |")
    PRINTED.update((key, side) for key, sides in cases.items()
                   if key[0].startswith(("points_", "relation_")) for side in sides)


def others(cases):
    """Every case with a side no table above printed, each side beside the fastest of
    its case: the benches without a table of their own (sort, window, live, …)."""
    rows = sorted((key, sides) for key, sides in cases.items()
                  if any((key, side) not in PRINTED for side in sides))
    if not rows:
        return
    print("\n| bench group | case | N | side | time | x fastest of the case |")
    print("|---|---|---:|---|---:|---:|")
    for (group, case, n), sides in rows:
        fastest = min(sides.values())
        for side, t in sorted(sides.items(), key=lambda kv: kv[1]):
            size = f"{n:,}" if n else ""
            print(f"| {group} | {case} | {size} | {side} | {human(t)} | {t / fastest:.3g} |")


if __name__ == "__main__":
    main()
