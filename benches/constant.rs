//! Constant conditions: a WHERE or ON that depends on no row, over a join of two
//! 3,000-row tables of TEXT values (`x.t < y.u`, nine million pairs), side by side with
//! SQLite's same query (prepared, as ecsql's). `false`: `WHERE FALSE`; `null`: `WHERE
//! NULL >= -45`; `param`: `WHERE ?1` bound to false at each run; `on`: `ON x.t < y.u AND
//! 1 > 2`. ecsql decides such a condition once per run and scans nothing; SQLite's
//! planner does the same.
//!
//! Run: `cargo bench -p ecsql-benches --bench constant`.

mod common;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};

const N: usize = 3_000;

fn constant(c: &mut Criterion) {
    let mut group = c.benchmark_group("constant_where");
    let conn = common::ecsql("CREATE COMPONENT A (t TEXT); CREATE COMPONENT B (u TEXT);");
    conn.execute("SPAWN A(t => 'a' || i) FROM range(?1) AS r(i)", (N as i64,))
        .unwrap();
    conn.execute("SPAWN B(u => 'b' || i) FROM range(?1) AS r(i)", (N as i64,))
        .unwrap();
    let db = common::sqlite("CREATE TABLE a (t TEXT); CREATE TABLE b (u TEXT);");
    common::sqlite_tx(&db, || {
        let mut a = db.prepare("INSERT INTO a VALUES (?1)").unwrap();
        let mut b = db.prepare("INSERT INTO b VALUES (?1)").unwrap();
        for i in 0..N {
            a.execute([format!("a{i}")]).unwrap();
            b.execute([format!("b{i}")]).unwrap();
        }
    });
    for (name, on, condition) in [
        ("false", "", "WHERE FALSE"),
        ("null", "", "WHERE NULL >= -45"),
        ("param", "", "WHERE ?1"),
        ("on", " AND 1 > 2", ""),
    ] {
        let sql = format!("SELECT x.t FROM A AS x JOIN B AS y ON x.t < y.u{on} {condition}");
        let mut statement = conn.prepare(&sql).unwrap();
        group.bench_function(BenchmarkId::new("ecsql", name), |b| {
            b.iter(|| {
                let rows = if condition == "WHERE ?1" {
                    statement.query((false,)).unwrap()
                } else {
                    statement.query(()).unwrap()
                };
                assert_eq!(rows.remaining(), 0);
            })
        });
        let sql = format!("SELECT x.t FROM a AS x JOIN b AS y ON x.t < y.u{on} {condition}");
        let mut statement = db.prepare(&sql).unwrap();
        group.bench_function(BenchmarkId::new("sqlite", name), |b| {
            b.iter(|| {
                let mut rows = if condition == "WHERE ?1" {
                    statement.query([false]).unwrap()
                } else {
                    statement.query([]).unwrap()
                };
                assert!(rows.next().unwrap().is_none());
            })
        });
    }
    group.finish();
}

criterion_group!(benches, constant);
criterion_main!(benches);
