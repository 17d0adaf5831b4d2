//! The storage kernel's columnar door against its upper bound, a plain struct-of-arrays of
//! `Vec<f32>`, in the same criterion group so the report is a ratio from one run:
//! - `simple_iter`: `position += velocity` (3 REAL fields each) over every entity;
//! - `spawn_batch`: spawning N entities with Position and Velocity from ready columns.
//!
//! Run: `cargo bench --bench storage`. The anchors of issue 5 (hecs, SQLite) join later.

use std::hint::black_box;

use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use ecsql::{Column, ComponentId, FieldDef, FieldId, FieldType, Filter, World};

const SIZES: [usize; 2] = [10_000, 1_000_000];

struct Soa {
    pos: [Vec<f32>; 3],
    vel: [Vec<f32>; 3],
}

fn columns(n: usize, seed: f32) -> [Vec<f32>; 3] {
    [0.0, 1.0, 2.0].map(|k| (0..n).map(|i| seed + k + i as f32 * 0.001).collect())
}

/// The loop both sides run, over slices, so the ratio measures only what the door adds.
fn integrate([px, py, pz]: [&mut [f32]; 3], [vx, vy, vz]: [&[f32]; 3]) {
    for (((x, y), z), ((dx, dy), dz)) in px.iter_mut().zip(py).zip(pz).zip(vx.iter().zip(vy).zip(vz)) {
        *x += dx;
        *y += dy;
        *z += dz;
    }
}

fn xyz() -> Vec<FieldDef> {
    ["x", "y", "z"]
        .into_iter()
        .map(|f| FieldDef::new(f, FieldType::Real))
        .collect()
}

/// A world with Position and Velocity declared, and their six field ids.
fn empty_world() -> (World, ComponentId, ComponentId, [FieldId; 6]) {
    let mut world = World::new();
    let pos = world.create_component("Position", xyz()).unwrap();
    let vel = world.create_component("Velocity", xyz()).unwrap();
    let f = |c, name| world.field(c, name).unwrap();
    let fields = [
        f(pos, "x"),
        f(pos, "y"),
        f(pos, "z"),
        f(vel, "x"),
        f(vel, "y"),
        f(vel, "z"),
    ];
    (world, pos, vel, fields)
}

fn batch(pos: ComponentId, vel: ComponentId, soa: &Soa) -> Vec<(ComponentId, Vec<Column>)> {
    let cols = |c: &[Vec<f32>; 3]| c.iter().cloned().map(Column::from).collect();
    vec![(pos, cols(&soa.pos)), (vel, cols(&soa.vel))]
}

fn simple_iter(c: &mut Criterion) {
    let mut group = c.benchmark_group("simple_iter");
    for n in SIZES {
        let mut soa = Soa {
            pos: columns(n, 0.0),
            vel: columns(n, 1.0),
        };
        group.bench_with_input(BenchmarkId::new("plain_soa", n), &n, |b, _| {
            b.iter(|| {
                let [px, py, pz] = &mut soa.pos;
                let [vx, vy, vz] = &soa.vel;
                integrate([px, py, pz], [vx, vy, vz]);
                black_box(&soa.pos);
            })
        });

        let (mut world, pos, vel, fields) = empty_world();
        world.spawn_batch(n, batch(pos, vel, &soa)).unwrap();
        let filter = Filter::new().with(pos).with(vel);
        group.bench_with_input(BenchmarkId::new("ecsql_door", n), &n, |b, _| {
            b.iter(|| {
                for table in world.matching_tables(&filter).unwrap() {
                    let mut table = world.table_mut(table).unwrap();
                    let [px, py, pz, vx, vy, vz] = table.columns(fields).unwrap();
                    integrate(
                        [
                            px.into_mut().unwrap(),
                            py.into_mut().unwrap(),
                            pz.into_mut().unwrap(),
                        ],
                        [
                            vx.into_ref().unwrap(),
                            vy.into_ref().unwrap(),
                            vz.into_ref().unwrap(),
                        ],
                    );
                }
                black_box(&world);
            })
        });
    }
    group.finish();
}

fn spawn_batch(c: &mut Criterion) {
    let mut group = c.benchmark_group("spawn_batch");
    group.sample_size(20);
    for n in SIZES {
        let soa = Soa {
            pos: columns(n, 0.0),
            vel: columns(n, 1.0),
        };
        group.bench_with_input(BenchmarkId::new("plain_soa", n), &n, |b, _| {
            b.iter_batched(
                || (soa.pos.clone(), soa.vel.clone()),
                |(pos, vel)| {
                    // The plain equivalent: move the columns into owned storage, number rows.
                    let mut stored: Vec<Vec<f32>> = vec![Vec::new(); 6];
                    for (dst, mut src) in stored.iter_mut().zip(pos.into_iter().chain(vel)) {
                        dst.append(&mut src);
                    }
                    let ids: Vec<u64> = (1..=n as u64).collect();
                    black_box((stored, ids))
                },
                BatchSize::LargeInput,
            )
        });
        group.bench_with_input(BenchmarkId::new("ecsql", n), &n, |b, _| {
            b.iter_batched(
                || {
                    let (world, pos, vel, _) = empty_world();
                    let columns = batch(pos, vel, &soa);
                    (world, columns)
                },
                |(mut world, columns)| {
                    let ids = world.spawn_batch(n, columns).unwrap();
                    black_box((world, ids))
                },
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, simple_iter, spawn_batch);
criterion_main!(benches);
