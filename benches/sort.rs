//! ORDER BY over one million and six million entities, beside SQLite (bundled) and
//! DuckDB in one criterion run, the same rows and the same query text in all three:
//! - `one_key`: `ORDER BY b` (about a million distinct values);
//! - `two_keys`: `ORDER BY a, b DESC` (`a` has 1,000 values, so long runs of ties);
//! - `text`: `ORDER BY s, a` (50,000 distinct texts, ties broken by `a`);
//!
//! each as the first five rows (`LIMIT 5`: `_top5`) and as a whole sort (`_all`: the
//! last five rows of the order, `LIMIT 5 OFFSET n - 5`, so that every row is sorted and
//! none is sent: what is measured is the sort, not the client's fetching).
//!
//! ecsql runs on both cores (`ecsql_*`) and on one (`ecsql_1thread_*`); SQLite on one;
//! DuckDB (`benches/common/duck.rs`: `pip install duckdb`, else it is left out) on both
//! (`duckdb_*`) and on one (`duckdb_1thread_*`), its time its own. Before anything is
//! timed the three give the same first row for every query.

mod common;

use common::duck::Duck;
use criterion::{Criterion, criterion_group, criterion_main};
use ecsql::Connection;

/// Entity i's fields, the same in every engine.
const A: &str = "i % 1000";
const B: &str = "(i * 7919) % 1000003";
const S: &str = "'name' || ((i * 31) % 50000)";

/// The queries, each to be followed by its LIMIT. Each selects its keys only: engines
/// may order ties differently (ecsql's sort is stable, SQLite's is not).
const QUERIES: [(&str, &str); 3] = [
    ("one_key", "SELECT b FROM T ORDER BY b"),
    ("two_keys", "SELECT a, b FROM T ORDER BY a, b DESC"),
    ("text", "SELECT s, a FROM T ORDER BY s, a"),
];

fn ecsql_world(n: usize) -> Connection {
    common::ecsql(&format!(
        "CREATE COMPONENT T (a INT, b INT, s TEXT);
         SPAWN T({A}, {B}, {S}) FROM range(1, {end}) AS r(i);",
        end = n + 1
    ))
}

fn sqlite_world(n: usize) -> rusqlite::Connection {
    common::sqlite(&format!(
        "CREATE TABLE T (id INTEGER PRIMARY KEY, a INTEGER, b INTEGER, s TEXT);
         WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < {n})
         INSERT INTO T SELECT i, {A}, {B}, {S} FROM r;"
    ))
}

/// The rows of `sql` and its first row, as text.
fn ecsql_run(conn: &Connection, sql: &str) -> (usize, String) {
    let mut stmt = conn.prepare_cached(sql).expect("the query plans");
    let mut first = String::new();
    let mut n = 0;
    for row in stmt.query(()).expect("the query runs") {
        let row = row.expect("a row");
        if n == 0 {
            first = row.values().iter().map(show).collect::<Vec<_>>().join("|");
        }
        n += 1;
    }
    (n, first)
}

fn show(v: &ecsql::Value) -> String {
    match v {
        ecsql::Value::Text(s) => s.clone(),
        other => other.to_string(),
    }
}

fn sqlite_run(lite: &rusqlite::Connection, sql: &str) -> (usize, String) {
    let mut stmt = lite.prepare_cached(sql).expect("SQLite plans it");
    let mut rows = stmt.query([]).expect("SQLite runs it");
    let (mut n, mut first) = (0, String::new());
    while let Some(row) = rows.next().expect("a row") {
        if n == 0 {
            let value = |i: usize| match row.get_ref(i).expect("a value") {
                rusqlite::types::ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
                rusqlite::types::ValueRef::Integer(x) => x.to_string(),
                other => format!("{other:?}"),
            };
            let columns = row.as_ref().column_count();
            first = (0..columns).map(value).collect::<Vec<_>>().join("|");
        }
        n += 1;
    }
    (n, first)
}

fn bench(c: &mut Criterion) {
    for n in [1_000_000, 6_000_000] {
        let conn = ecsql_world(n);
        let lite = sqlite_world(n);
        let setup = [format!(
            "CREATE TABLE T AS SELECT i AS id, {A} AS a, {B} AS b, {S} AS s FROM range(1, {end}) t(i)",
            end = n + 1
        )];
        let mut duck = match Duck::start("sort", &setup) {
            Ok(d) => Some(d),
            Err(why) => {
                eprintln!("sort bench: DuckDB is not measured: {why}");
                None
            }
        };
        let mut g = c.benchmark_group(format!("sort_{n}"));
        g.sample_size(10);
        g.warm_up_time(std::time::Duration::from_secs(1));
        for (name, query) in QUERIES {
            for (what, tail) in [
                ("top5", " LIMIT 5".to_owned()),
                ("all", format!(" LIMIT 5 OFFSET {}", n - 5)),
            ] {
                let sql = format!("{query}{tail}");
                let name = format!("{name}_{what}");
                // The three agree before anything is timed.
                let (rows, first) = ecsql_run(&conn, &sql);
                assert_eq!(rows, 5, "{sql}");
                assert_eq!(sqlite_run(&lite, &sql), (rows, first.clone()), "{sql}");
                if let Some(d) = &mut duck {
                    assert_eq!(d.first(&sql), first, "{sql}");
                }
                for (label, threads) in [("", 0), ("1thread_", 1)] {
                    // 0: every core.
                    let cores = std::thread::available_parallelism().map_or(1, usize::from);
                    let threads = if threads == 0 { cores } else { threads };
                    conn.execute(&format!("PRAGMA threads = {threads}"), ())
                        .expect("the pragma applies");
                    g.bench_function(format!("ecsql_{label}{name}"), |b| {
                        b.iter(|| ecsql_run(&conn, &sql))
                    });
                }
                g.bench_function(format!("sqlite_{name}"), |b| b.iter(|| sqlite_run(&lite, &sql)));
                if let Some(d) = &mut duck {
                    for (label, threads) in [("", 0), ("1thread_", 1)] {
                        g.bench_function(format!("duckdb_{label}{name}"), |b| {
                            b.iter_custom(|iters| d.runs(&sql, threads, iters))
                        });
                    }
                }
            }
        }
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
