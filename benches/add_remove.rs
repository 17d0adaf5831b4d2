//! add_remove (ecs_bench_suite): 10,000 entities with A; one pass attaches B to every one of
//! them and then detaches B from every one, moving each entity to another archetype and
//! back.
//!
//! Side by side in one group: ecsql's two statements (`INSERT INTO B (id, v) SELECT id, 0
//! FROM A`, `DELETE FROM B`), ecsql's door (`World::attach` / `World::detach` per entity),
//! hecs `insert_one` / `remove_one` per entity, and SQLite's INSERT … SELECT and DELETE in
//! one transaction.
//!
//! Run: `cargo bench -p ecsql-benches --bench add_remove`.

mod common;

use common::{sqlite, sqlite_tx};
use criterion::{Criterion, criterion_group, criterion_main};
use ecsql::Value;

const N: usize = 10_000;

struct A(#[allow(dead_code)] f32);
struct B(#[allow(dead_code)] f32);

fn add_remove(c: &mut Criterion) {
    let mut group = c.benchmark_group("add_remove");

    let conn = common::ecsql(&format!(
        "CREATE COMPONENT A (v REAL); CREATE COMPONENT B (v REAL); SPAWN A(0) FROM range({N});"
    ));
    let mut attach = conn.prepare("INSERT INTO B (id, v) SELECT id, 0 FROM A").unwrap();
    let mut detach = conn.prepare("DELETE FROM B").unwrap();
    group.bench_function("ecsql_sql", |b| {
        b.iter(|| {
            assert_eq!(attach.execute(()).unwrap(), N);
            assert_eq!(detach.execute(()).unwrap(), N);
        })
    });
    drop((attach, detach));

    let ids = common::ids(&conn, "SELECT id FROM A");
    let b_id = conn
        .with_world(|w| w.component_by_name("B").unwrap().id())
        .unwrap();
    group.bench_function("ecsql_door", |b| {
        b.iter(|| {
            conn.with_world_mut(|w| {
                for &e in &ids {
                    w.attach(e, b_id, vec![Value::Real(0.0)]).unwrap();
                }
                for &e in &ids {
                    w.detach(e, b_id).unwrap();
                }
            })
            .unwrap()
        })
    });
    drop(conn);

    let mut world = hecs::World::new();
    let entities: Vec<hecs::Entity> = world.spawn_batch((0..N).map(|_| (A(0.0),))).collect();
    group.bench_function("hecs", |b| {
        b.iter(|| {
            for &e in &entities {
                world.insert_one(e, B(0.0)).unwrap();
            }
            for &e in &entities {
                world.remove_one::<B>(e).unwrap();
            }
        })
    });

    let db = sqlite(
        "CREATE TABLE a (id INTEGER PRIMARY KEY, v REAL); CREATE TABLE b (id INTEGER PRIMARY KEY, v REAL);",
    );
    sqlite_tx(&db, || {
        let mut insert = db.prepare("INSERT INTO a VALUES (?, 0.0)").unwrap();
        for id in 0..N as i64 {
            insert.execute([id]).unwrap();
        }
    });
    let mut attach = db.prepare("INSERT INTO b SELECT id, 0.0 FROM a").unwrap();
    let mut detach = db.prepare("DELETE FROM b").unwrap();
    group.bench_function("sqlite", |b| {
        b.iter(|| {
            sqlite_tx(&db, || {
                assert_eq!(attach.execute(()).unwrap(), N);
                assert_eq!(detach.execute(()).unwrap(), N);
            })
        })
    });
    group.finish();
}

criterion_group!(benches, add_remove);
criterion_main!(benches);
