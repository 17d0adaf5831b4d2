#!/usr/bin/env python3
"""DuckDB's COPY of the rows benches/copy.rs copies, for the table in docs/performance.md.

Not a criterion bench: DuckDB is measured through its Python package (`pip install
duckdb`), best of 7 runs each, with the same 1,000,000 rows (x, y, z DOUBLE, n BIGINT) and
the same kind of file. Run it right after `cargo bench -p ecsql-benches --bench copy`, on the same machine:

    python3 benches/duckdb_copy.py

DuckDB runs on every core it finds (two here); `SET threads = 1` is measured too, beside
ecsql's one thread.
"""

import os
import sys
import tempfile
import time

try:
    import duckdb
except ImportError:
    sys.exit("duckdb is not installed: pip install duckdb")

N = 1_000_000


def best(f, runs=7):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    folder = tempfile.mkdtemp(prefix="ecsql-duckdb-")
    rows = os.path.join(folder, "rows.csv")
    out = os.path.join(folder, "out.csv")
    parquet = os.path.join(folder, "rows.parquet")
    print(f"duckdb {duckdb.__version__}")
    for threads in (os.cpu_count(), 1):
        db = duckdb.connect()
        db.execute(f"SET threads = {threads}")
        db.execute(
            f"CREATE TABLE c AS SELECT i * 0.5 AS x, i / 3.0 AS y, -i * 1.25 AS z, i AS n FROM range({N}) t(i)"
        )
        db.execute(f"COPY c TO '{rows}' (HEADER)")
        db.execute(f"COPY c TO '{parquet}' (FORMAT parquet)")

        def load(source, how):
            fresh = duckdb.connect()
            fresh.execute(f"SET threads = {threads}")
            fresh.execute("CREATE TABLE c (x DOUBLE, y DOUBLE, z DOUBLE, n BIGINT)")
            fresh.execute(f"COPY c FROM '{source}' {how}")
            fresh.close()

        results = {
            "to_csv": best(lambda: db.execute(f"COPY c TO '{out}' (HEADER)")),
            "from_csv": best(lambda: load(rows, "(HEADER)")),
            "to_parquet": best(lambda: db.execute(f"COPY c TO '{out}.parquet' (FORMAT parquet)")),
            "from_parquet": best(lambda: load(parquet, "(FORMAT parquet)")),
        }
        for name, t in results.items():
            print(f"duckdb {threads} thread(s) {name}: {t * 1000:.1f} ms")
    for f in os.listdir(folder):
        os.remove(os.path.join(folder, f))
    os.rmdir(folder)


if __name__ == "__main__":
    main()
