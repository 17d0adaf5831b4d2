//! filtered select: N entities with Position (x, y, z REAL) and Health (hp INT), x uniform
//! in [0, 1) and hp uniform in 0..100; count, and collect the ids of, the entities where
//! `Position.x > 0.5 AND Health.hp < 50` (about a quarter of them).
//!
//! Side by side in one group: ecsql's prepared SELECTs (the ids read row by row as
//! `Row::get`, and as one typed column with `Rows::column`), hecs `query` with a filter, a plain
//! loop over the `Vec`s of x, hp and ids (the upper bound), and SQLite's prepared SELECT
//! joining its two tables on `id`.
//!
//! Run: `cargo bench -p ecsql-benches --bench filtered_select`.

mod common;

use std::hint::black_box;

use common::{Rng, SIZES, size_group, sqlite, sqlite_tx};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use ecsql::Entity;

const WHERE: &str = "WHERE Position.x > 0.5 AND Health.hp < 50";
const SQLITE_FROM: &str = "FROM position AS p JOIN health AS h ON h.id = p.id WHERE p.x > 0.5 AND h.hp < 50";

struct Position {
    x: f32,
    #[allow(dead_code)]
    y: f32,
    #[allow(dead_code)]
    z: f32,
}

struct Health {
    hp: i64,
}

/// The same data for every side: x and hp per entity.
fn data(n: usize) -> (Vec<f32>, Vec<i64>) {
    let mut rng = Rng::new(5);
    (0..n).map(|_| (rng.unit(), rng.below(100) as i64)).unzip()
}

fn filtered_select(c: &mut Criterion) {
    let mut group = c.benchmark_group("filtered_select");
    for n in SIZES {
        size_group(&mut group, n);
        let (xs, hps) = data(n);
        let expected = xs
            .iter()
            .zip(&hps)
            .filter(|&(&x, &hp)| x > 0.5 && hp < 50)
            .count();

        let conn = common::ecsql(
            "CREATE COMPONENT Position (x REAL, y REAL, z REAL); CREATE COMPONENT Health (hp INT);",
        );
        conn.with_world_mut(|w| {
            let pos = w.component_by_name("Position").unwrap().id();
            let health = w.component_by_name("Health").unwrap().id();
            let zeros = || ecsql::Column::from(vec![0.0f32; n]);
            let columns = vec![
                (pos, vec![ecsql::Column::from(xs.clone()), zeros(), zeros()]),
                (health, vec![ecsql::Column::from(hps.clone())]),
            ];
            w.spawn_columns(n, columns).unwrap();
        })
        .unwrap();
        let mut count = conn
            .prepare(&format!("SELECT count(*) FROM Position, Health {WHERE}"))
            .unwrap();
        group.bench_with_input(BenchmarkId::new("count/ecsql_sql", n), &n, |b, _| {
            b.iter(|| {
                let rows: i64 = count.query(()).unwrap().next().unwrap().unwrap().get(0).unwrap();
                assert_eq!(rows as usize, expected);
            })
        });
        // The same count on one thread (PRAGMA threads = 1); the row above runs on every
        // core the machine has.
        let cores = conn.threads();
        conn.set_threads(1);
        group.bench_with_input(BenchmarkId::new("count/ecsql_sql_one_thread", n), &n, |b, _| {
            b.iter(|| {
                let rows: i64 = count.query(()).unwrap().next().unwrap().unwrap().get(0).unwrap();
                assert_eq!(rows as usize, expected);
            })
        });
        conn.set_threads(cores);
        let mut ids = conn
            .prepare(&format!("SELECT id FROM Position, Health {WHERE}"))
            .unwrap();
        group.bench_with_input(BenchmarkId::new("ids/ecsql_sql", n), &n, |b, _| {
            b.iter(|| {
                let ids: Vec<Entity> = ids
                    .query_map((), |row| row.get(0))
                    .unwrap()
                    .collect::<ecsql::Result<_>>()
                    .unwrap();
                assert_eq!(ids.len(), expected);
                ids
            })
        });
        group.bench_with_input(BenchmarkId::new("ids/ecsql_columns", n), &n, |b, _| {
            b.iter(|| {
                let rows = ids.query(()).unwrap();
                let ids: Vec<Entity> = rows
                    .column::<Option<Entity>>(0)
                    .unwrap()
                    .iter()
                    .flatten()
                    .copied()
                    .collect();
                assert_eq!(ids.len(), expected);
                ids
            })
        });
        drop((count, ids));
        drop(conn);

        let mut world = hecs::World::new();
        world.spawn_batch(
            xs.iter()
                .zip(&hps)
                .map(|(&x, &hp)| (Position { x, y: 0.0, z: 0.0 }, Health { hp })),
        );
        let keep = |p: &Position, h: &Health| p.x > 0.5 && h.hp < 50;
        group.bench_with_input(BenchmarkId::new("count/hecs", n), &n, |b, _| {
            b.iter(|| {
                let mut query = world.query::<(&Position, &Health)>();
                let rows = query.iter().filter(|(p, h)| keep(p, h)).count();
                assert_eq!(rows, expected);
            })
        });
        group.bench_with_input(BenchmarkId::new("ids/hecs", n), &n, |b, _| {
            b.iter(|| {
                let mut query = world.query::<(hecs::Entity, &Position, &Health)>();
                let ids: Vec<hecs::Entity> = query
                    .iter()
                    .filter(|(_, p, h)| keep(p, h))
                    .map(|(e, _, _)| e)
                    .collect();
                assert_eq!(ids.len(), expected);
                ids
            })
        });
        drop(world);

        let entity_ids: Vec<u64> = (0..n as u64).collect();
        group.bench_with_input(BenchmarkId::new("count/plain_soa", n), &n, |b, _| {
            b.iter(|| {
                let rows = black_box(&xs)
                    .iter()
                    .zip(black_box(&hps))
                    .filter(|&(&x, &hp)| x > 0.5 && hp < 50)
                    .count();
                assert_eq!(rows, expected);
            })
        });
        group.bench_with_input(BenchmarkId::new("ids/plain_soa", n), &n, |b, _| {
            b.iter(|| {
                let ids: Vec<u64> = black_box(&xs)
                    .iter()
                    .zip(black_box(&hps))
                    .zip(&entity_ids)
                    .filter(|&((&x, &hp), _)| x > 0.5 && hp < 50)
                    .map(|(_, &id)| id)
                    .collect();
                assert_eq!(ids.len(), expected);
                ids
            })
        });

        let db = sqlite(
            "CREATE TABLE position (id INTEGER PRIMARY KEY, x REAL, y REAL, z REAL);
             CREATE TABLE health (id INTEGER PRIMARY KEY, hp INTEGER);",
        );
        sqlite_tx(&db, || {
            let mut position = db
                .prepare("INSERT INTO position VALUES (?, ?, 0.0, 0.0)")
                .unwrap();
            let mut health = db.prepare("INSERT INTO health VALUES (?, ?)").unwrap();
            for (id, (&x, &hp)) in xs.iter().zip(&hps).enumerate() {
                position.execute((id as i64, f64::from(x))).unwrap();
                health.execute((id as i64, hp)).unwrap();
            }
        });
        let mut count = db.prepare(&format!("SELECT count(*) {SQLITE_FROM}")).unwrap();
        group.bench_with_input(BenchmarkId::new("count/sqlite", n), &n, |b, _| {
            b.iter(|| {
                let rows: i64 = count.query_row((), |row| row.get(0)).unwrap();
                assert_eq!(rows as usize, expected);
            })
        });
        let mut ids = db.prepare(&format!("SELECT p.id {SQLITE_FROM}")).unwrap();
        group.bench_with_input(BenchmarkId::new("ids/sqlite", n), &n, |b, _| {
            b.iter(|| {
                let ids: Vec<i64> = ids
                    .query_map((), |row| row.get(0))
                    .unwrap()
                    .collect::<Result<_, _>>()
                    .unwrap();
                assert_eq!(ids.len(), expected);
                ids
            })
        });
    }
    group.finish();
}

criterion_group!(benches, filtered_select);
criterion_main!(benches);
