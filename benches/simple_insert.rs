//! simple_insert (ecs_bench_suite): spawn N entities holding Transform (a 4x4 matrix),
//! Position, Rotation and Velocity (3 REAL each), into an empty world.
//!
//! Side by side in one group: ecsql's one `SPAWN … FROM range(N)` statement, ecsql's
//! columnar door (`World::spawn_columns` through `Connection::with_world_mut`), hecs
//! `spawn_batch`, plain struct-of-arrays `Vec<f32>` fills (the upper bound), and SQLite
//! (a table per component, prepared INSERTs, one transaction).
//!
//! Run: `cargo bench -p ecsql-benches --bench simple_insert`.

mod common;

use common::transforms::{
    IDENTITY, Position, Rotation, Transform, UNIT_X, Velocity, ddl, spawn_sql, sqlite_ddl, sqlite_insert,
};
use common::{SIZES, size_group, sqlite};
use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use ecsql::{Column, ComponentId};

/// The upper bound: one `Vec<f32>` per field plus the ids, each filled in one go. Never
/// read: it is built, then dropped outside the timing like every other side's world.
#[allow(dead_code)]
struct Soa {
    ids: Vec<u64>,
    fields: Vec<Vec<f32>>,
}

fn soa_insert(n: usize) -> Soa {
    let values = IDENTITY.iter().chain(UNIT_X.iter().cycle().take(9));
    Soa {
        ids: (0..n as u64).collect(),
        fields: values.map(|v| vec![*v; n]).collect(),
    }
}

fn door_batch(ids: &[ComponentId; 4], n: usize) -> Vec<(ComponentId, Vec<Column>)> {
    let columns = |values: &[f32]| values.iter().map(|v| Column::from(vec![*v; n])).collect();
    vec![
        (ids[0], columns(&IDENTITY)),
        (ids[1], columns(&UNIT_X)),
        (ids[2], columns(&UNIT_X)),
        (ids[3], columns(&UNIT_X)),
    ]
}

fn simple_insert(c: &mut Criterion) {
    let mut group = c.benchmark_group("simple_insert");
    for n in SIZES {
        size_group(&mut group, n);
        let sql = spawn_sql();
        group.bench_with_input(BenchmarkId::new("ecsql_sql", n), &n, |b, &n| {
            b.iter_batched(
                || common::ecsql(&ddl()),
                |conn| {
                    let spawned = conn.execute(&sql, [n as i64]).unwrap();
                    assert_eq!(spawned, n);
                    conn
                },
                BatchSize::PerIteration,
            )
        });
        group.bench_with_input(BenchmarkId::new("ecsql_door", n), &n, |b, &n| {
            b.iter_batched(
                || {
                    let conn = common::ecsql(&ddl());
                    let ids = conn
                        .with_world(|w| {
                            ["Transform", "Position", "Rotation", "Velocity"]
                                .map(|name| w.component_by_name(name).unwrap().id())
                        })
                        .unwrap();
                    (conn, ids)
                },
                |(conn, ids)| {
                    conn.with_world_mut(|w| w.spawn_columns(n, door_batch(&ids, n)).unwrap())
                        .unwrap();
                    conn
                },
                BatchSize::PerIteration,
            )
        });
        group.bench_with_input(BenchmarkId::new("hecs", n), &n, |b, &n| {
            b.iter_batched(
                hecs::World::new,
                |mut world| {
                    world.spawn_batch((0..n).map(|_| {
                        (
                            Transform(IDENTITY),
                            Position(UNIT_X),
                            Rotation(UNIT_X),
                            Velocity(UNIT_X),
                        )
                    }));
                    world
                },
                BatchSize::PerIteration,
            )
        });
        group.bench_with_input(BenchmarkId::new("plain_soa", n), &n, |b, &n| {
            b.iter_batched(|| (), |()| soa_insert(n), BatchSize::PerIteration)
        });
        group.bench_with_input(BenchmarkId::new("sqlite", n), &n, |b, &n| {
            b.iter_batched(
                || sqlite(&sqlite_ddl()),
                |db| {
                    sqlite_insert(&db, n);
                    db
                },
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, simple_insert);
criterion_main!(benches);
