//! What a tick costs, beside the same loops written against hecs, in one run:
//!
//! - `tick_20_systems`: 10,000 entities in 20 archetypes (Pos, Vel and one of 20 tags);
//!   20 systems, each `UPDATE Pos SET x = Pos.x + Vel.dx * delta_time() FROM Vel WHERE
//!   has(Tag_j)`: one archetype of 500 entities each. hecs: the same 20 `query_mut` loops.
//!   ecsql as it starts (`tick_threads` = the cores: the 20 may run together, but their
//!   10,000 rows are too few to start threads for) and with `tick_threads = 1`; bevy_ecs:
//!   the same 20 systems (`Query<(&mut Pos, &Vel), With<Tag_j>>`) in a schedule run by
//!   its single-threaded and multi-threaded executors.
//! - `small_world`: one system, `UPDATE Pos SET x = Pos.x + Vel.dx * delta_time() FROM
//!   Vel`, over 100 entities in one archetype (a small game's tick, and what a journal of
//!   ticks replays) and over 8 archetypes of 100 (Pos, Vel and one of 8 tags); bevy_ecs's
//!   single-threaded schedule of the same system and hecs' loop beside it.
//! - `empty_tick`: a tick with no system (the savepoint, the clock, the event drops).
//! - `idle_systems`: 20 systems whose UPDATE matches no table; per tick, so divided by 20
//!   it is what one system costs when it has nothing to do.
//! - `falling_cubes`: the 10,000 cubes of examples/falling_cubes.sql, two systems
//!   (gravity, movement) per tick; hecs: the same two loops.
//! - `events`: 100,000 events emitted by one system and read by two others per tick
//!   (each sums a field); the time per tick over 100,000 is the cost per event.
//! - `four_systems_250k`: 250,000 entities with components A, B, C, D and V; four
//!   systems, each `UPDATE A SET x = A.x + V.v * delta_time() FROM V` (then B, C, D),
//!   which keep none of each other apart. ecsql with `tick_threads = 1` (one after
//!   another) and `= 2` (computed together, written in run order); bevy_ecs's
//!   multi-threaded and single-threaded executors over the same four systems; hecs: the
//!   four loops.
//!
//! Run: `cargo bench -p ecsql-benches --bench ticks`.

mod common;

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};

const ENTITIES: usize = 10_000;
const SYSTEMS: usize = 20;
const DT: f32 = 1.0 / 60.0;

#[derive(bevy_ecs::prelude::Component)]
struct Pos(f32);
#[derive(bevy_ecs::prelude::Component)]
struct Vel(f32);

macro_rules! tags {
    ($($tag:ident),*) => {
        $(#[derive(bevy_ecs::prelude::Component)] struct $tag;)*
        /// The same world for bevy_ecs, and its schedule of the 20 systems (one per tag),
        /// run by the executor `multi` says.
        fn bevy_world(multi: bool) -> (bevy_ecs::prelude::World, bevy_ecs::schedule::Schedule) {
            let mut world = bevy_ecs::prelude::World::new();
            let mut i = 0usize;
            let mut next = || { i += 1; (Pos(i as f32), Vel(1.0)) };
            $(
                let batch: Vec<_> = (0..ENTITIES / SYSTEMS).map(|_| { let (p, v) = next(); (p, v, $tag) }).collect();
                world.spawn_batch(batch);
            )*
            let (mut schedule, _) = bevy_schedule(multi);
            $(
                schedule.add_systems(|mut q: bevy_ecs::prelude::Query<(&mut Pos, &Vel), bevy_ecs::prelude::With<$tag>>| {
                    for (mut p, v) in &mut q {
                        p.0 += v.0 * DT;
                    }
                });
            )*
            (world, schedule)
        }
        fn hecs_world() -> hecs::World {
            let mut world = hecs::World::new();
            let mut i = 0usize;
            let mut next = || { i += 1; (Pos(i as f32), Vel(1.0)) };
            $(
                let batch: Vec<_> = (0..ENTITIES / SYSTEMS).map(|_| { let (p, v) = next(); (p, v, $tag) }).collect();
                world.spawn_batch(batch);
            )*
            world
        }
        fn hecs_tick(world: &mut hecs::World) {
            $(
                for (p, v) in world.query_mut::<(&mut Pos, &Vel)>().with::<&$tag>() {
                    p.0 += v.0 * DT;
                }
            )*
        }
    };
}

tags!(
    T0, T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12, T13, T14, T15, T16, T17, T18, T19
);

/// An empty bevy_ecs schedule run by its multi-threaded executor (`multi`) or its
/// single-threaded one, and the bench's name for it.
fn bevy_schedule(multi: bool) -> (bevy_ecs::schedule::Schedule, &'static str) {
    use bevy_ecs::schedule::{MultiThreadedExecutor, Schedule, SingleThreadedExecutor};
    let mut schedule = Schedule::default();
    if multi {
        schedule.set_executor(MultiThreadedExecutor::new());
        (schedule, "bevy_multi_threaded")
    } else {
        schedule.set_executor(SingleThreadedExecutor::new());
        (schedule, "bevy_single_threaded")
    }
}

fn settings(group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    group.sample_size(50);
    group.measurement_time(Duration::from_secs(3));
    group.warm_up_time(Duration::from_secs(1));
}

fn twenty_systems(c: &mut Criterion) {
    let mut group = c.benchmark_group("tick_20_systems");
    settings(&mut group);
    let mut ddl = String::from("CREATE COMPONENT Pos (x REAL); CREATE COMPONENT Vel (dx REAL);");
    for j in 0..SYSTEMS {
        ddl += &format!(
            "CREATE TAG T{j};
             SPAWN Pos(x => i), Vel(1), T{j} FROM range({}) AS r(i);
             CREATE SYSTEM s{j} AS UPDATE Pos SET x = Pos.x + Vel.dx * delta_time() FROM Vel WHERE has(T{j});",
            ENTITIES / SYSTEMS
        );
    }
    let conn = common::ecsql(&ddl);
    group.bench_function("ecsql_sql", |b| b.iter(|| assert_eq!(conn.tick(1).unwrap(), 1)));
    // One after another, with no look at which systems may run together.
    let serial = common::ecsql(&ddl);
    serial.execute("PRAGMA tick_threads = 1", ()).unwrap();
    group.bench_function("ecsql_sql_tick_threads_1", |b| {
        b.iter(|| assert_eq!(serial.tick(1).unwrap(), 1))
    });
    for multi in [false, true] {
        let (mut world, mut schedule) = bevy_world(multi);
        schedule.run(&mut world);
        let (_, name) = bevy_schedule(multi);
        group.bench_function(name, |b| b.iter(|| schedule.run(black_box(&mut world))));
    }
    let mut world = hecs_world();
    group.bench_function("hecs", |b| b.iter(|| hecs_tick(black_box(&mut world))));
    group.finish();

    let mut group = c.benchmark_group("empty_tick");
    settings(&mut group);
    let empty = common::ecsql("");
    group.bench_function("ecsql_sql", |b| b.iter(|| empty.tick(1).unwrap()));
    group.finish();

    let mut group = c.benchmark_group("idle_systems");
    settings(&mut group);
    let mut ddl =
        String::from("CREATE COMPONENT Pos (x REAL); CREATE TAG Nobody; SPAWN Pos(1) FROM range(1000);");
    for j in 0..SYSTEMS {
        ddl += &format!("CREATE SYSTEM s{j} AS UPDATE Pos SET x = Pos.x + 1 WHERE has(Nobody);");
    }
    let idle = common::ecsql(&ddl);
    group.bench_function("ecsql_sql", |b| b.iter(|| idle.tick(1).unwrap()));
    group.finish();
}

/// Entities in each archetype of `small_world`.
const SMALL: usize = 100;

/// Spawns entity `i` of archetype `j` (Pos, Vel and tag `T{j}`, j below 8) into a
/// bevy_ecs world and a hecs one, each with its tag in the one spawn.
fn spawn_small(bevy: &mut bevy_ecs::prelude::World, hecs: &mut hecs::World, j: usize, i: usize) {
    let (p, v) = (|| Pos(i as f32), || Vel(1.0));
    macro_rules! both {
        ($tag:ident) => {{
            bevy.spawn((p(), v(), $tag));
            hecs.spawn((p(), v(), $tag));
        }};
    }
    match j {
        0 => both!(T0),
        1 => both!(T1),
        2 => both!(T2),
        3 => both!(T3),
        4 => both!(T4),
        5 => both!(T5),
        6 => both!(T6),
        _ => both!(T7),
    }
}

fn small_world(c: &mut Criterion) {
    let mut group = c.benchmark_group("small_world");
    settings(&mut group);
    for tables in [1usize, 8] {
        let name = |who: &str| format!("{who}/{tables}x{SMALL}");
        let mut ddl = String::from("CREATE COMPONENT Pos (x REAL); CREATE COMPONENT Vel (dx REAL);");
        for j in 0..tables {
            ddl += &format!("CREATE TAG T{j}; SPAWN Pos(x => i), Vel(1), T{j} FROM range({SMALL}) AS r(i);");
        }
        ddl += "CREATE SYSTEM s AS UPDATE Pos SET x = Pos.x + Vel.dx * delta_time() FROM Vel;";
        let conn = common::ecsql(&ddl);
        group.bench_function(name("ecsql_sql"), |b| {
            b.iter(|| assert_eq!(conn.tick(1).unwrap(), 1))
        });
        let mut world = bevy_ecs::prelude::World::new();
        let mut hecs_world = hecs::World::new();
        for j in 0..tables {
            for i in 0..SMALL {
                spawn_small(&mut world, &mut hecs_world, j, i);
            }
        }
        let (mut schedule, bevy) = bevy_schedule(false);
        schedule.add_systems(|mut q: bevy_ecs::prelude::Query<(&mut Pos, &Vel)>| {
            for (mut p, v) in &mut q {
                p.0 += v.0 * DT;
            }
        });
        schedule.run(&mut world);
        group.bench_function(name(bevy), |b| b.iter(|| schedule.run(black_box(&mut world))));
        group.bench_function(name("hecs"), |b| {
            b.iter(|| {
                for (p, v) in black_box(&mut hecs_world).query_mut::<(&mut Pos, &Vel)>() {
                    p.0 += v.0 * DT;
                }
            })
        });
    }
    group.finish();
}

struct Transform {
    x: f32,
    y: f32,
    z: f32,
}
struct RigidBody {
    vx: f32,
    vy: f32,
    vz: f32,
}
struct Gravity(f32);

fn falling_cubes(c: &mut Criterion) {
    let mut group = c.benchmark_group("falling_cubes");
    settings(&mut group);
    let conn = common::ecsql(
        "CREATE COMPONENT Transform (x REAL, y REAL, z REAL, rx REAL, ry REAL, rz REAL, scale REAL DEFAULT 1);
         CREATE COMPONENT RigidBody (vx REAL, vy REAL, vz REAL);
         CREATE COMPONENT Gravity (g REAL);
         SPAWN Transform(x => i % 200 - 100, y => 100 + (i * 7) % 100, z => (i * 13) % 200 - 100,
                         rx => 0, ry => 0, rz => 0),
               RigidBody(vx => 0, vy => 0, vz => 0), Gravity(g => -(1 + i % 10))
         FROM range(10000) AS r(i);
         CREATE SYSTEM gravity AS
           UPDATE RigidBody SET vy = RigidBody.vy + Gravity.g * delta_time() FROM Gravity;
         CREATE SYSTEM movement AFTER gravity AS
           UPDATE Transform SET x = Transform.x + RigidBody.vx * delta_time(),
                                y = Transform.y + RigidBody.vy * delta_time(),
                                z = Transform.z + RigidBody.vz * delta_time() FROM RigidBody;",
    );
    group.bench_function("ecsql_sql", |b| b.iter(|| conn.tick(1).unwrap()));

    let mut world = hecs::World::new();
    world.spawn_batch((0..10_000).map(|i| {
        (
            Transform {
                x: (i % 200 - 100) as f32,
                y: (100 + (i * 7) % 100) as f32,
                z: ((i * 13) % 200 - 100) as f32,
            },
            RigidBody {
                vx: 0.0,
                vy: 0.0,
                vz: 0.0,
            },
            Gravity(-(1 + i % 10) as f32),
        )
    }));
    group.bench_function("hecs", |b| {
        b.iter(|| {
            for (body, gravity) in world.query_mut::<(&mut RigidBody, &Gravity)>() {
                body.vy += gravity.0 * DT;
            }
            for (t, body) in world.query_mut::<(&mut Transform, &RigidBody)>() {
                t.x += body.vx * DT;
                t.y += body.vy * DT;
                t.z += body.vz * DT;
            }
        })
    });
    group.finish();
}

fn events(c: &mut Criterion) {
    let mut group = c.benchmark_group("events");
    settings(&mut group);
    group.sample_size(20);
    let conn = common::ecsql(
        "CREATE COMPONENT Source (v INT);
         CREATE COMPONENT Total (a INT, b INT);
         CREATE EVENT Ping (v INT);
         SPAWN Source(v => i) FROM range(100000) AS r(i);
         SPAWN Total(0, 0);
         CREATE SYSTEM emit AS INSERT INTO Ping (v) SELECT Source.v FROM Source;
         CREATE SYSTEM read_a AFTER emit AS UPDATE Total SET a = Total.a + (SELECT sum(Ping.v) FROM Ping);
         CREATE SYSTEM read_b AFTER emit AS UPDATE Total SET b = Total.b + (SELECT count(*) FROM Ping);",
    );
    group.throughput(criterion::Throughput::Elements(100_000));
    group.bench_function("ecsql_sql", |b| b.iter(|| conn.tick(1).unwrap()));
    group.finish();
}

const WIDE: usize = 250_000;

#[derive(bevy_ecs::prelude::Component)]
struct A(f32);
#[derive(bevy_ecs::prelude::Component)]
struct B(f32);
#[derive(bevy_ecs::prelude::Component)]
struct C(f32);
#[derive(bevy_ecs::prelude::Component)]
struct D(f32);
#[derive(bevy_ecs::prelude::Component)]
struct V(f32);

macro_rules! bevy_system {
    ($name:ident, $c:ident) => {
        fn $name(mut q: bevy_ecs::prelude::Query<(&mut $c, &V)>) {
            for (mut c, v) in &mut q {
                c.0 += v.0 * DT;
            }
        }
    };
}
bevy_system!(move_a, A);
bevy_system!(move_b, B);
bevy_system!(move_c, C);
bevy_system!(move_d, D);

fn four_systems(c: &mut Criterion) {
    let mut group = c.benchmark_group("four_systems_250k");
    settings(&mut group);
    let mut ddl = String::from(
        "CREATE COMPONENT A (x REAL); CREATE COMPONENT B (x REAL); CREATE COMPONENT C (x REAL);
         CREATE COMPONENT D (x REAL); CREATE COMPONENT V (v REAL);",
    );
    ddl += &format!("SPAWN A(i), B(i), C(i), D(i), V(1) FROM range({WIDE}) AS r(i);");
    for c in ["A", "B", "C", "D"] {
        ddl += &format!("CREATE SYSTEM move_{c} AS UPDATE {c} SET x = {c}.x + V.v * delta_time() FROM V;");
    }
    for threads in [1, 2] {
        let conn = common::ecsql(&ddl);
        conn.execute(&format!("PRAGMA tick_threads = {threads}"), ())
            .unwrap();
        group.bench_function(format!("ecsql_sql_tick_threads_{threads}"), |b| {
            b.iter(|| assert_eq!(conn.tick(1).unwrap(), 1))
        });
    }
    for multi in [true, false] {
        let mut world = bevy_ecs::prelude::World::new();
        world.spawn_batch((0..WIDE).map(|i| (A(i as f32), B(i as f32), C(i as f32), D(i as f32), V(1.0))));
        let (mut schedule, name) = bevy_schedule(multi);
        schedule.add_systems((move_a, move_b, move_c, move_d));
        schedule.run(&mut world);
        group.bench_function(name, |b| b.iter(|| schedule.run(black_box(&mut world))));
    }
    let mut world = hecs::World::new();
    world.spawn_batch((0..WIDE).map(|i| (A(i as f32), B(i as f32), C(i as f32), D(i as f32), V(1.0))));
    group.bench_function("hecs", |b| {
        b.iter(|| {
            for (a, v) in world.query_mut::<(&mut A, &V)>() {
                a.0 += v.0 * DT;
            }
            for (b, v) in world.query_mut::<(&mut B, &V)>() {
                b.0 += v.0 * DT;
            }
            for (c, v) in world.query_mut::<(&mut C, &V)>() {
                c.0 += v.0 * DT;
            }
            for (d, v) in world.query_mut::<(&mut D, &V)>() {
                d.0 += v.0 * DT;
            }
        })
    });
    group.finish();
}

criterion_group!(
    benches,
    twenty_systems,
    small_world,
    falling_cubes,
    events,
    four_systems
);
criterion_main!(benches);
