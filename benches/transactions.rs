//! Transactions: what BEGIN, COMMIT and ROLLBACK cost as the world grows.
//!
//! - `transaction`: `BEGIN; UPDATE Health SET hp = hp + 1 WHERE id = ?1; COMMIT` at 1,000
//!   and at 1,000,000 entities, the three statements prepared once. The target is the same
//!   time at both sizes (BEGIN and COMMIT do not depend on the world) and at most 5 µs.
//! - `rollback_1pct`: `BEGIN; UPDATE Health SET hp = hp + 1 WHERE Health.k = 0; ROLLBACK`
//!   at 1,000,000 entities, where `k = i % 100` picks 1% of the rows; beside it,
//!   `update_1pct` is the same UPDATE alone (autocommit), so the difference is what BEGIN
//!   and ROLLBACK add.
//!
//! SQLite (in memory, journal off, one table with an INTEGER PRIMARY KEY) runs the same
//! statements beside each. Run: `cargo bench -p ecsql-benches --bench transactions`.

mod common;

use common::{Rng, size_group, sqlite, sqlite_tx};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use ecsql::{Connection, Entity};

const SIZES: [usize; 2] = [1_000, 1_000_000];

fn ecsql_world(n: usize) -> (Connection, Vec<Entity>) {
    let conn = common::ecsql("CREATE COMPONENT Health (hp INT, k INT);");
    conn.execute(&format!("SPAWN Health(i, i % 100) FROM range({n}) AS r(i)"), ())
        .unwrap();
    let ids = common::ids(&conn, "SELECT id FROM Health");
    (conn, ids)
}

fn sqlite_world(n: usize) -> rusqlite::Connection {
    let db = sqlite("CREATE TABLE health (id INTEGER PRIMARY KEY, hp INTEGER, k INTEGER);");
    sqlite_tx(&db, || {
        let mut insert = db
            .prepare("INSERT INTO health VALUES (?1, ?1, ?1 % 100)")
            .unwrap();
        for i in 0..n {
            insert.execute([i as i64]).unwrap();
        }
    });
    db
}

fn transaction(c: &mut Criterion) {
    let mut group = c.benchmark_group("transaction");
    for n in SIZES {
        size_group(&mut group, n);
        let (conn, ids) = ecsql_world(n);
        let mut rng = Rng::new(5);
        let probes: Vec<Entity> = (0..1024).map(|_| ids[rng.below(n as u64) as usize]).collect();
        let mut begin = conn.prepare("BEGIN").unwrap();
        let mut update = conn
            .prepare("UPDATE Health SET hp = hp + 1 WHERE id = ?1")
            .unwrap();
        let mut commit = conn.prepare("COMMIT").unwrap();
        let mut next = probes.iter().cycle();
        group.bench_with_input(BenchmarkId::new("ecsql_sql", n), &n, |b, _| {
            b.iter(|| {
                begin.execute(()).unwrap();
                assert_eq!(update.execute([*next.next().unwrap()]).unwrap(), 1);
                commit.execute(()).unwrap();
            })
        });
        drop((begin, update, commit));
        drop(conn);

        let db = sqlite_world(n);
        let mut begin = db.prepare("BEGIN").unwrap();
        let mut update = db.prepare("UPDATE health SET hp = hp + 1 WHERE id = ?1").unwrap();
        let mut commit = db.prepare("COMMIT").unwrap();
        let mut rng = Rng::new(5);
        let probes: Vec<i64> = (0..1024).map(|_| rng.below(n as u64) as i64).collect();
        let mut next = probes.iter().cycle();
        group.bench_with_input(BenchmarkId::new("sqlite", n), &n, |b, _| {
            b.iter(|| {
                begin.execute(()).unwrap();
                assert_eq!(update.execute([*next.next().unwrap()]).unwrap(), 1);
                commit.execute(()).unwrap();
            })
        });
    }
    group.finish();
}

fn rollback(c: &mut Criterion) {
    let n = 1_000_000;
    let rows = n / 100;
    let (conn, _) = ecsql_world(n);
    let db = sqlite_world(n);
    let update_sql = "UPDATE Health SET hp = hp + 1 WHERE Health.k = 0";
    let sqlite_update_sql = "UPDATE health SET hp = hp + 1 WHERE k = 0";

    let mut group = c.benchmark_group("rollback_1pct");
    size_group(&mut group, n);
    let mut begin = conn.prepare("BEGIN").unwrap();
    let mut update = conn.prepare(update_sql).unwrap();
    let mut rollback = conn.prepare("ROLLBACK").unwrap();
    group.bench_with_input(BenchmarkId::new("ecsql_sql", n), &n, |b, _| {
        b.iter(|| {
            begin.execute(()).unwrap();
            assert_eq!(update.execute(()).unwrap(), rows);
            rollback.execute(()).unwrap();
        })
    });
    let mut s_begin = db.prepare("BEGIN").unwrap();
    let mut s_update = db.prepare(sqlite_update_sql).unwrap();
    let mut s_rollback = db.prepare("ROLLBACK").unwrap();
    group.bench_with_input(BenchmarkId::new("sqlite", n), &n, |b, _| {
        b.iter(|| {
            s_begin.execute(()).unwrap();
            assert_eq!(s_update.execute(()).unwrap(), rows);
            s_rollback.execute(()).unwrap();
        })
    });
    group.finish();

    let mut group = c.benchmark_group("update_1pct");
    size_group(&mut group, n);
    group.bench_with_input(BenchmarkId::new("ecsql_sql", n), &n, |b, _| {
        b.iter(|| assert_eq!(update.execute(()).unwrap(), rows))
    });
    group.bench_with_input(BenchmarkId::new("sqlite", n), &n, |b, _| {
        b.iter(|| assert_eq!(s_update.execute(()).unwrap(), rows))
    });
    group.finish();
}

criterion_group!(benches, transaction, rollback);
criterion_main!(benches);
