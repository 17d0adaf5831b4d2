//! Window functions over 1,000,000 entities, beside SQLite (bundled) and DuckDB in one
//! criterion run, the same rows and the same query text in all three:
//! - `leaderboard`: every entity ranked by its points (`rank() OVER (ORDER BY points
//!   DESC)`, 100,000 distinct values, so ties), the top 100 places kept by an outer WHERE
//!   (the ranks of all rows are computed either way);
//! - `sliding_sum`: per team (100 of them), the sum of each entity's points and the nine
//!   before it by id (`ROWS BETWEEN 9 PRECEDING AND CURRENT ROW`), counted where it
//!   passes 600,000.
//!
//! DuckDB is measured through its Python package (`pip install duckdb`), driven by
//! `benches/duckdb_driver.py` over a pipe; the time is DuckDB's own, call to last row
//! fetched, on every core (`duckdb_*`) and on one (`duckdb_1thread_*`), beside ecsql's one
//! thread for the window stage. Without python3 or the package the bench says so and
//! measures ecsql and SQLite alone.
//!
//! `python3 benches/report.py` prints the ratios; docs/performance.md records them.

mod common;

use common::duck::Duck;
use criterion::{Criterion, criterion_group, criterion_main};
use ecsql::{Connection, Database};

const ENTITIES: i64 = 1_000_000;

const LEADERBOARD: &str = "SELECT t.e, t.points, t.place FROM (SELECT id AS e, Score.points AS points, rank() OVER (ORDER BY Score.points DESC) AS place FROM Score) AS t WHERE t.place <= 100";

const SLIDING_SUM: &str = "SELECT count(*) FROM (SELECT sum(Score.points) OVER (PARTITION BY Score.team ORDER BY id ROWS BETWEEN 9 PRECEDING AND CURRENT ROW) AS s FROM Score) AS t WHERE t.s > 600000";

/// Entity i's points and team, the same in every engine.
const POINTS: &str = "(i * 7919) % 1000003 % 100000";
const TEAM: &str = "i % 100";

fn ecsql_world() -> Connection {
    let conn = Database::open_in_memory().connect();
    conn.execute_batch(&format!(
        "CREATE COMPONENT Score (points INT, team INT);
         SPAWN Score({POINTS}, {TEAM}) FROM range(1, {end}) AS r(i);",
        end = ENTITIES + 1
    ))
    .expect("the entities are spawned");
    conn
}

fn sqlite_world() -> rusqlite::Connection {
    let lite = rusqlite::Connection::open_in_memory().expect("SQLite opens");
    lite.execute_batch(&format!(
        "CREATE TABLE Score (id INTEGER PRIMARY KEY, points INTEGER, team INTEGER);
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {ENTITIES})
         INSERT INTO Score SELECT i, {POINTS}, {TEAM} FROM n;"
    ))
    .expect("SQLite's rows are inserted");
    lite
}

fn ecsql_rows(conn: &Connection, sql: &str) -> Vec<Vec<ecsql::Value>> {
    let mut stmt = conn.prepare(sql).expect("the query plans");
    stmt.query(())
        .expect("the query runs")
        .map(|r| r.expect("a row").values().to_vec())
        .collect()
}

fn sqlite_count(lite: &rusqlite::Connection, sql: &str) -> (usize, i64) {
    let mut stmt = lite.prepare(sql).expect("SQLite plans it");
    let mut rows = stmt.query([]).expect("SQLite runs it");
    let (mut n, mut first) = (0, 0);
    while let Some(row) = rows.next().expect("a row") {
        if n == 0 {
            first = row.get(0).unwrap_or(0);
        }
        n += 1;
    }
    (n, first)
}

fn bench(c: &mut Criterion) {
    let conn = ecsql_world();
    let lite = sqlite_world();
    let setup = [format!(
        "CREATE TABLE Score AS SELECT i AS id, {POINTS} AS points, {TEAM} AS team FROM range(1, {end}) t(i)",
        end = ENTITIES + 1
    )];
    let mut duck = match Duck::start("window", &setup) {
        Ok(d) => Some(d),
        Err(why) => {
            eprintln!("window bench: DuckDB is not measured: {why}");
            None
        }
    };
    // The three agree before anything is timed.
    let leaders = ecsql_rows(&conn, LEADERBOARD).len();
    let over = match ecsql_rows(&conn, SLIDING_SUM).first().and_then(|r| r.first()) {
        Some(ecsql::Value::Int(n)) => *n,
        other => panic!("the sliding sum counted {other:?}"),
    };
    assert_eq!(sqlite_count(&lite, LEADERBOARD).0, leaders);
    assert_eq!(sqlite_count(&lite, SLIDING_SUM).1, over);
    if let Some(d) = &mut duck {
        assert_eq!(d.time(LEADERBOARD).0 as usize, leaders);
    }
    eprintln!("window bench: the top 100 places hold {leaders} entities; {over} sliding sums pass 600,000");

    let mut g = c.benchmark_group("window");
    g.sample_size(10);
    for (name, sql) in [("leaderboard", LEADERBOARD), ("sliding_sum", SLIDING_SUM)] {
        g.bench_function(format!("ecsql_{name}"), |b| {
            b.iter(|| ecsql_rows(&conn, sql).len())
        });
        g.bench_function(format!("sqlite_{name}"), |b| b.iter(|| sqlite_count(&lite, sql)));
        if let Some(d) = &mut duck {
            for (label, threads) in [("", 0), ("1thread_", 1)] {
                g.bench_function(format!("duckdb_{label}{name}"), |b| {
                    b.iter_custom(|iters| d.runs(sql, threads, iters))
                });
            }
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
