//! The typed API beside the hand-written door and hecs, in one run per group:
//!
//! - `typed_iter` (simple_iter's pass, 1,000,000 entities with Position and Velocity of
//!   three REAL fields each): `World::query::<(&mut Position, &Velocity)>()` an entity at
//!   a time (`ecsql_typed_items`) and a table at a time (`ecsql_typed_tables`), the same
//!   loop over the door's `TableMut::columns` written by hand (`ecsql_door_hand`), and
//!   hecs' `query_mut` (`hecs_query_mut`).
//! - `typed_spawn_batch` (1,000,000 entities of Position and Velocity):
//!   `World::spawn_batch` of tuples, `SPAWN … FROM range` through a connection, hecs'
//!   `spawn_batch`.
//! - `typed_get` (one entity's Position among 1,000,000, cycling through 1,024 ids):
//!   `World::get::<Position>` beside hecs' `get`.
//!
//! Run: `cargo bench -p ecsql-benches --bench typed`.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use ecsql::{Component, Entity, Filter, World};

#[derive(Component, Clone, Copy)]
struct Position {
    x: f32,
    y: f32,
    z: f32,
}

#[derive(Component, Clone, Copy)]
struct Velocity {
    x: f32,
    y: f32,
    z: f32,
}

const N: usize = 1_000_000;

fn pair(i: usize) -> (Position, Velocity) {
    let f = i as f32;
    (
        Position { x: f, y: 0.0, z: 0.0 },
        Velocity {
            x: 1.0,
            y: 0.5,
            z: 0.25,
        },
    )
}

fn world(n: usize) -> (World, Vec<Entity>) {
    let mut w = World::new();
    w.register::<Position>().unwrap();
    w.register::<Velocity>().unwrap();
    let ids = w.spawn_batch((0..n).map(pair)).unwrap();
    (w, ids)
}

fn hecs_world(n: usize) -> (hecs::World, Vec<hecs::Entity>) {
    let mut w = hecs::World::new();
    let ids = w.spawn_batch((0..n).map(pair)).collect();
    (w, ids)
}

fn typed_iter(c: &mut Criterion) {
    let mut group = c.benchmark_group("typed_iter");
    group.sample_size(30);
    let (mut w, _) = world(N);
    group.bench_function(BenchmarkId::new("ecsql_typed_items", N), |b| {
        b.iter(|| {
            let mut q = w.query::<(&mut Position, &Velocity)>().unwrap();
            for (mut p, v) in q.iter() {
                p.x += v.x;
                p.y += v.y;
                p.z += v.z;
            }
        })
    });
    group.bench_function(BenchmarkId::new("ecsql_typed_tables", N), |b| {
        b.iter(|| {
            let mut q = w.query::<(&mut Position, &Velocity)>().unwrap();
            for (p, v) in q.tables() {
                for i in 0..p.x.len() {
                    p.x[i] += v.x[i];
                    p.y[i] += v.y[i];
                    p.z[i] += v.z[i];
                }
            }
        })
    });
    let pos = w.component_by_name("Position").unwrap().id();
    let vel = w.component_by_name("Velocity").unwrap().id();
    let f = |w: &World, c, n| w.field(c, n).unwrap();
    let fields = [
        f(&w, pos, "x"),
        f(&w, pos, "y"),
        f(&w, pos, "z"),
        f(&w, vel, "x"),
        f(&w, vel, "y"),
        f(&w, vel, "z"),
    ];
    let filter = Filter::new().with(pos).with(vel);
    group.bench_function(BenchmarkId::new("ecsql_door_hand", N), |b| {
        b.iter(|| {
            for table in w.matching_tables(&filter).unwrap() {
                let mut t = w.table_mut(table).unwrap();
                let [px, py, pz, vx, vy, vz] = t.columns(fields).unwrap();
                let (px, py, pz) = (
                    px.into_mut::<f32>().unwrap(),
                    py.into_mut::<f32>().unwrap(),
                    pz.into_mut::<f32>().unwrap(),
                );
                let (vx, vy, vz) = (
                    vx.into_ref::<f32>().unwrap(),
                    vy.into_ref::<f32>().unwrap(),
                    vz.into_ref::<f32>().unwrap(),
                );
                for i in 0..px.len() {
                    px[i] += vx[i];
                    py[i] += vy[i];
                    pz[i] += vz[i];
                }
            }
        })
    });
    drop(w);
    let (mut h, _) = hecs_world(N);
    group.bench_function(BenchmarkId::new("hecs_query_mut", N), |b| {
        b.iter(|| {
            for (p, v) in h.query_mut::<(&mut Position, &Velocity)>() {
                p.x += v.x;
                p.y += v.y;
                p.z += v.z;
            }
        })
    });
    group.finish();
}

fn typed_spawn_batch(c: &mut Criterion) {
    let mut group = c.benchmark_group("typed_spawn_batch");
    group.sample_size(10);
    group.bench_function(BenchmarkId::new("ecsql_typed_spawn_batch", N), |b| {
        b.iter_with_large_drop(|| {
            let mut w = World::new();
            w.register::<Position>().unwrap();
            w.register::<Velocity>().unwrap();
            w.spawn_batch((0..N).map(pair)).unwrap();
            w
        })
    });
    group.bench_function(BenchmarkId::new("ecsql_spawn_from_range", N), |b| {
        b.iter_with_large_drop(|| {
            let db = ecsql::Database::open_in_memory();
            let conn = db.connect();
            conn.execute_batch(
                "CREATE COMPONENT Position (x REAL, y REAL, z REAL);
                 CREATE COMPONENT Velocity (x REAL, y REAL, z REAL);",
            )
            .unwrap();
            conn.execute(
                "SPAWN Position(x => i, y => 0, z => 0), Velocity(1, 0.5, 0.25) FROM range(?1) AS r(i)",
                (N as i64,),
            )
            .unwrap();
            (conn, db)
        })
    });
    group.bench_function(BenchmarkId::new("hecs_spawn_batch", N), |b| {
        b.iter_with_large_drop(|| hecs_world(N).0)
    });
    group.finish();
}

fn typed_get(c: &mut Criterion) {
    let mut group = c.benchmark_group("typed_get");
    let (w, ids) = world(N);
    let picks: Vec<Entity> = (0..1024).map(|k| ids[(k * 7919) % N]).collect();
    let mut k = 0;
    group.bench_function("ecsql_world_get", |b| {
        b.iter(|| {
            k = (k + 1) & 1023;
            black_box(w.get::<Position>(picks[k]).unwrap().map(|p| p.x))
        })
    });
    let (h, ids) = hecs_world(N);
    let picks: Vec<hecs::Entity> = (0..1024).map(|k| ids[(k * 7919) % N]).collect();
    group.bench_function("hecs_get", |b| {
        b.iter(|| {
            k = (k + 1) & 1023;
            black_box(h.get::<&Position>(picks[k]).map(|p| p.x).ok())
        })
    });
    group.finish();
}

criterion_group!(benches, typed_iter, typed_spawn_batch, typed_get);
criterion_main!(benches);
