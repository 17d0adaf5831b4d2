//! A recursive WITH query beside the traversal it competes with, in one criterion group:
//! the entities below the root of a 100,000-entity binary tree (each entity's `parent` is
//! entity ⌊i/2⌋; 17 levels), counted
//! - `descendants`: `SELECT count(*) FROM descendants(1, Node.parent)`, with the relation
//!   index;
//! - `with_recursive_indexed`: `WITH RECURSIVE below(e) AS (SELECT 1 UNION ALL SELECT
//!   Node.id FROM Node JOIN below ON Node.parent = below.e) SELECT count(*) FROM below`,
//!   the recursive part's join read through the same index for each round's ids;
//! - `with_recursive_scan`: the same query without the index (each round scans the nodes);
//! - `sqlite_with_recursive`: the same query in SQLite (bundled) over a table with an
//!   index on `parent`.
//!
//! `python3 benches/report.py` prints the times (in its last table, beside the fastest);
//! docs/performance.md records the ratios.

use criterion::{Criterion, criterion_group, criterion_main};
use ecsql::{Connection, Database};

const NODES: i64 = 100_000;
const WALK: &str = "WITH RECURSIVE below(e) AS (SELECT 1 UNION ALL SELECT Node.id FROM Node JOIN below ON Node.parent = below.e) SELECT count(*) FROM below";

fn tree(indexed: bool) -> Connection {
    let conn = Database::open_in_memory().connect();
    conn.execute_batch(&format!(
        "CREATE COMPONENT Node (parent ENTITY);
         SPAWN Node(NULL);
         SPAWN Node(CAST(i / 2 AS ENTITY)) FROM range(2, {end}) AS r(i);",
        end = NODES + 1
    ))
    .expect("the tree is built");
    if indexed {
        conn.execute_batch("CREATE INDEX ON Node (parent)")
            .expect("indexed");
    }
    conn
}

fn count(conn: &Connection, sql: &str) -> i64 {
    conn.query_row(sql, (), |r| r.get(0)).expect("the query runs")
}

fn bench(c: &mut Criterion) {
    let indexed = tree(true);
    let plain = tree(false);
    let last = count(&indexed, "SELECT count(*) FROM Node");
    let lite = rusqlite::Connection::open_in_memory().expect("SQLite opens");
    lite.execute_batch(&format!(
        "CREATE TABLE Node (id INTEGER PRIMARY KEY, parent INTEGER);
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {last})
         INSERT INTO Node SELECT i, CASE WHEN i = 1 THEN NULL ELSE i / 2 END FROM n;
         CREATE INDEX node_parent ON Node (parent);"
    ))
    .expect("SQLite's tree is built");
    let walk_lite = WALK;
    let expected = count(&indexed, "SELECT count(*) FROM Node");
    assert_eq!(
        count(&indexed, "SELECT count(*) FROM descendants(1, Node.parent)"),
        expected - 1
    );
    assert_eq!(count(&indexed, WALK), expected);
    assert_eq!(count(&plain, WALK), expected);
    let lite_count: i64 = lite
        .query_row(walk_lite, [], |r| r.get(0))
        .expect("SQLite runs it");
    assert_eq!(lite_count, expected);

    let mut g = c.benchmark_group("recursive");
    g.sample_size(20);
    g.bench_function("descendants", |b| {
        b.iter(|| count(&indexed, "SELECT count(*) FROM descendants(1, Node.parent)"))
    });
    g.bench_function("with_recursive_indexed", |b| b.iter(|| count(&indexed, WALK)));
    g.bench_function("with_recursive_scan", |b| b.iter(|| count(&plain, WALK)));
    g.bench_function("sqlite_with_recursive", |b| {
        b.iter(|| -> i64 {
            lite.query_row(walk_lite, [], |r| r.get(0))
                .expect("SQLite runs it")
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
