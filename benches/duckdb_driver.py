#!/usr/bin/env python3
"""Runs DuckDB statements for a criterion bench that measures DuckDB beside ecsql in the
same run (benches/common/duck.rs starts it). One command a line on stdin, one answer a line:

    threads N      ->  ok
    sql TEXT       ->  ok                      (runs a statement, results dropped)
    time TEXT      ->  ok ROWS NANOSECONDS     (runs a query, fetches every row)
    first TEXT     ->  ok V1|V2|...            (runs a query, its first row's values)

The time is DuckDB's own, from the call to the last row fetched, so the pipe is not
counted. An error answers `error MESSAGE`; end of input ends it.
"""

import sys
import time

try:
    import duckdb
except ImportError:
    print("error duckdb is not installed for this python3: pip install duckdb", flush=True)
    sys.exit(0)

db = duckdb.connect()
print(f"ready duckdb {duckdb.__version__}", flush=True)
for line in sys.stdin:
    command, _, text = line.rstrip("\n").partition(" ")
    try:
        if command == "threads":
            db.execute(f"SET threads = {int(text)}")
            print("ok", flush=True)
        elif command == "sql":
            db.execute(text)
            print("ok", flush=True)
        elif command == "time":
            start = time.perf_counter_ns()
            rows = db.execute(text).fetchall()
            elapsed = time.perf_counter_ns() - start
            print(f"ok {len(rows)} {elapsed}", flush=True)
        elif command == "first":
            row = db.execute(text).fetchone()
            print("ok " + "|".join(str(v) for v in (row or ())), flush=True)
        else:
            print(f"error unknown command {command}", flush=True)
    except Exception as e:  # the bench prints it
        print("error " + str(e).replace("\n", " "), flush=True)
