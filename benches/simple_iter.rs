//! simple_iter (ecs_bench_suite): N entities with Transform, Position, Rotation and
//! Velocity; one pass adds Velocity to Position on every entity.
//!
//! Side by side in one group: ecsql's prepared `UPDATE Position … FROM Velocity` (one
//! `execute` per pass), ecsql's columnar door (typed slices through
//! `Connection::with_world_mut`), hecs `query_mut`, a plain struct-of-arrays loop over six
//! `Vec<f32>` (the upper bound), and SQLite's `UPDATE … FROM` (prepared, one transaction).
//! `ecsql_sql_delta_time` is the same UPDATE with each velocity times `delta_time()`.
//!
//! Run: `cargo bench -p ecsql-benches --bench simple_iter`.

mod common;

use std::hint::black_box;

use common::transforms::{
    IDENTITY, Position, Rotation, Transform, UNIT_X, Velocity, ddl, spawn_sql, sqlite_ddl, sqlite_insert,
};
use common::{SIZES, size_group, sqlite, sqlite_tx};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use ecsql::{FieldId, Filter};

const UPDATE: &str = "UPDATE Position SET x = Position.x + Velocity.x, y = Position.y + Velocity.y, \
                      z = Position.z + Velocity.z FROM Velocity";

/// The same pass scaled by the tick's `delta_time()`, as a game's system writes it.
const UPDATE_DT: &str = "UPDATE Position SET x = Position.x + Velocity.x * delta_time(), \
                         y = Position.y + Velocity.y * delta_time(), z = Position.z + Velocity.z * delta_time() \
                         FROM Velocity";

const SQLITE_UPDATE: &str = "UPDATE position SET x = position.x + v.x, y = position.y + v.y, \
                             z = position.z + v.z FROM velocity AS v WHERE v.id = position.id";

/// The loop the plain and door sides both run, over slices.
fn integrate([px, py, pz]: [&mut [f32]; 3], [vx, vy, vz]: [&[f32]; 3]) {
    for (((x, y), z), ((dx, dy), dz)) in px.iter_mut().zip(py).zip(pz).zip(vx.iter().zip(vy).zip(vz)) {
        *x += dx;
        *y += dy;
        *z += dz;
    }
}

fn simple_iter(c: &mut Criterion) {
    let mut group = c.benchmark_group("simple_iter");
    for n in SIZES {
        size_group(&mut group, n);

        let conn = common::ecsql(&ddl());
        conn.execute(&spawn_sql(), [n as i64]).unwrap();
        let mut update = conn.prepare(UPDATE).unwrap();
        group.bench_with_input(BenchmarkId::new("ecsql_sql", n), &n, |b, &n| {
            b.iter(|| assert_eq!(update.execute(()).unwrap(), n))
        });
        // The same statement on one thread (PRAGMA threads = 1); the row above runs on
        // every core the machine has.
        let cores = conn.threads();
        conn.set_threads(1);
        group.bench_with_input(BenchmarkId::new("ecsql_sql_one_thread", n), &n, |b, &n| {
            b.iter(|| assert_eq!(update.execute(()).unwrap(), n))
        });
        conn.set_threads(cores);
        drop(update);
        let mut update = conn.prepare(UPDATE_DT).unwrap();
        group.bench_with_input(BenchmarkId::new("ecsql_sql_delta_time", n), &n, |b, &n| {
            b.iter(|| assert_eq!(update.execute(()).unwrap(), n))
        });
        drop(update);

        let (filter, fields) = conn
            .with_world(|w| {
                let pos = w.component_by_name("Position").unwrap().id();
                let vel = w.component_by_name("Velocity").unwrap().id();
                let field = |c, f| w.field(c, f).unwrap();
                let fields: [FieldId; 6] = [
                    field(pos, "x"),
                    field(pos, "y"),
                    field(pos, "z"),
                    field(vel, "x"),
                    field(vel, "y"),
                    field(vel, "z"),
                ];
                (Filter::new().with(pos).with(vel), fields)
            })
            .unwrap();
        group.bench_with_input(BenchmarkId::new("ecsql_door", n), &n, |b, _| {
            b.iter(|| {
                conn.with_world_mut(|world| {
                    for table in world.matching_tables(&filter).unwrap() {
                        let mut table = world.table_mut(table).unwrap();
                        let [px, py, pz, vx, vy, vz] = table.columns(fields).unwrap();
                        integrate(
                            [px, py, pz].map(|c| c.into_mut::<f32>().unwrap()),
                            [vx, vy, vz].map(|c| c.into_ref::<f32>().unwrap()),
                        );
                    }
                })
                .unwrap()
            })
        });
        drop(conn);

        let mut world = hecs::World::new();
        world.spawn_batch((0..n).map(|_| {
            (
                Transform(IDENTITY),
                Position(UNIT_X),
                Rotation(UNIT_X),
                Velocity(UNIT_X),
            )
        }));
        group.bench_with_input(BenchmarkId::new("hecs", n), &n, |b, _| {
            b.iter(|| {
                for (velocity, position) in world.query_mut::<(&Velocity, &mut Position)>() {
                    for (p, v) in position.0.iter_mut().zip(velocity.0) {
                        *p += v;
                    }
                }
            })
        });
        drop(world);

        let mut position = UNIT_X.map(|v| vec![v; n]);
        let velocity = UNIT_X.map(|v| vec![v; n]);
        group.bench_with_input(BenchmarkId::new("plain_soa", n), &n, |b, _| {
            b.iter(|| {
                let [px, py, pz] = &mut position;
                let [vx, vy, vz] = &velocity;
                integrate([px, py, pz], [vx, vy, vz]);
                black_box(&position);
            })
        });

        let db = sqlite(&sqlite_ddl());
        sqlite_insert(&db, n);
        let mut update = db.prepare(SQLITE_UPDATE).unwrap();
        group.bench_with_input(BenchmarkId::new("sqlite", n), &n, |b, &n| {
            b.iter(|| sqlite_tx(&db, || assert_eq!(update.execute(()).unwrap(), n)))
        });
    }
    group.finish();
}

criterion_group!(benches, simple_iter);
criterion_main!(benches);
