//! Change detection, beside bevy's `Changed<T>` on the same data, in one run.
//!
//! 1,000,000 entities with Position in 100 archetype tables of 10,000 (Position and a
//! different set of seven tags each). Before each measured run, 1% of the rows of 1% of
//! the tables change: every 100th row of one table (100 rows, spread over all its blocks).
//!
//! - `changed_count/ecsql_changed`: a prepared `SELECT count(*) FROM Position WHERE
//!   changed(Position)`, a reader that last ran before the change;
//! - `changed_count/ecsql_count`: the same count without `changed()` (which counts each
//!   batch's rows without reading a value), and `ecsql_count_visit` a count that tests
//!   every row's value (`WHERE Position.x >= 0`, true of all): what visiting every row
//!   costs, as a `changed()` that could not skip would;
//! - `changed_count/bevy_changed`: `Query<(), Changed<Pos>>` counted, its last run before
//!   the change (`World::clear_trackers`), and `bevy_count` the same count without the
//!   filter.
//!
//! Sparse tags (`tag_add_remove`): 10,000 entities with Position, Velocity and Health;
//! one pass gives every one a tag and takes it away again, as `add_remove` does with a
//! component:
//!
//! - `ecsql_dense_sql` / `ecsql_sparse_sql`: `INSERT INTO T (id) SELECT id FROM Position`
//!   then `DELETE FROM T`, prepared, with T a dense tag (each entity's row moves to another
//!   archetype table and back) or a sparse one (`WITH (storage = sparse)`: a row appended
//!   to and removed from the tag's own table);
//! - `ecsql_dense_door` / `ecsql_sparse_door`: `World::attach` / `World::detach` per
//!   entity;
//! - `hecs`: `insert_one` / `remove_one` of a unit struct per entity (hecs has archetypes
//!   only: its tag moves the entity as ecsql's dense one does).
//!
//! Reading sparse components (`sparse_read`): 200,000 entities with Position, 20,000 of
//! them with Heat, dense or sparse: `UPDATE Heat SET t = Heat.t + 1` (a sparse Heat is
//! read and written in its own table), and `SELECT sum(Position.x) FROM Position, Heat`
//! (a sparse Heat's holders are looked up in the archetype tables).
//!
//! Run: `cargo bench -p ecsql-benches --bench changes`.

mod common;

use std::hint::black_box;
use std::time::{Duration, Instant};

use bevy_ecs::prelude::{Component, Entity, World};
use bevy_ecs::query::Changed;
use criterion::{Criterion, criterion_group, criterion_main};

const TABLES: usize = 100;
const PER_TABLE: usize = 10_000;
/// The table whose rows change: the one with tags T0, T2 and T5.
const CHANGED_TABLE: usize = 0b010_0101;

#[derive(Component)]
struct Pos(f32);

macro_rules! tags {
    ($($tag:ident = $bit:expr),*) => {
        $(#[derive(Component)] struct $tag;)*
        /// Gives `e` the tags whose bits are set in `mask`.
        fn tag(world: &mut World, e: Entity, mask: usize) {
            let mut entity = world.entity_mut(e);
            $(if mask & (1 << $bit) != 0 { entity.insert($tag); })*
        }
        /// The ecsql tag list of `mask`: `, T0, T2…`.
        fn tag_list(mask: usize) -> String {
            let mut out = String::new();
            $(if mask & (1 << $bit) != 0 { out += concat!(", ", stringify!($tag)); })*
            out
        }
    };
}

tags!(T0 = 0, T1 = 1, T2 = 2, T3 = 3, T4 = 4, T5 = 5, T6 = 6);

/// The time `run` takes, `iters` times, each after `prepare` (not timed).
fn timed<T>(iters: u64, mut prepare: impl FnMut(), mut run: impl FnMut() -> T) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        prepare();
        let start = Instant::now();
        black_box(run());
        total += start.elapsed();
    }
    total
}

fn changed_count(c: &mut Criterion) {
    let mut group = c.benchmark_group("changed_count");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(3));
    group.warm_up_time(Duration::from_secs(1));

    // ecsql: the tables, a reader, and the write that changes 100 rows of one table.
    let mut ddl = String::from("CREATE COMPONENT Position (x REAL, i INT);");
    for t in 0..7 {
        ddl += &format!("CREATE TAG T{t};");
    }
    for mask in 0..TABLES {
        ddl += &format!(
            "SPAWN Position(x => i, i => i){} FROM range({PER_TABLE}) AS r(i);",
            tag_list(mask)
        );
    }
    let conn = common::ecsql(&ddl);
    let only = (0..7)
        .map(|t| {
            let has = CHANGED_TABLE & (1 << t) != 0;
            format!("{}has(T{t})", if has { "" } else { "NOT " })
        })
        .collect::<Vec<_>>()
        .join(" AND ");
    let ids = common::ids(
        &conn,
        &format!("SELECT id FROM Position WHERE {only} AND Position.i % 100 = 0"),
    );
    let list: Vec<String> = ids.iter().map(|e| e.to_bits().to_string()).collect();
    let mut change = conn
        .prepare(&format!(
            "UPDATE Position SET x = Position.x + 1 WHERE id IN ({})",
            list.join(", ")
        ))
        .expect("the bench's UPDATE is valid");
    let mut changed = conn
        .prepare("SELECT count(*) FROM Position WHERE changed(Position)")
        .expect("the bench's query is valid");
    let mut all = conn
        .prepare("SELECT count(*) FROM Position")
        .expect("the bench's query is valid");
    let count = |s: &mut ecsql::Statement<'_>| -> i64 {
        let rows = s.query(()).expect("the count runs");
        rows.column::<i64>(0).expect("a count")[0]
    };
    count(&mut changed);
    assert_eq!(change.execute(()).unwrap(), 100);
    assert_eq!(count(&mut changed), 100, "the reader sees the 100 rows changed");
    group.bench_function("ecsql_changed", |b| {
        b.iter_custom(|iters| {
            timed(
                iters,
                || {
                    change.execute(()).unwrap();
                },
                || count(&mut changed),
            )
        })
    });
    assert_eq!(count(&mut all), (TABLES * PER_TABLE) as i64);
    group.bench_function("ecsql_count", |b| b.iter(|| count(&mut all)));
    let mut visit = conn
        .prepare("SELECT count(*) FROM Position WHERE Position.x >= 0")
        .expect("the bench's query is valid");
    assert_eq!(count(&mut visit), (TABLES * PER_TABLE) as i64);
    group.bench_function("ecsql_count_visit", |b| b.iter(|| count(&mut visit)));

    // bevy: the same tables and the same change.
    let mut world = World::new();
    let mut changing = Vec::new();
    for mask in 0..TABLES {
        let ids: Vec<Entity> = world.spawn_batch((0..PER_TABLE).map(|i| Pos(i as f32))).collect();
        for &e in &ids {
            tag(&mut world, e, mask);
        }
        if mask == CHANGED_TABLE {
            changing = ids.into_iter().step_by(100).collect();
        }
    }
    let mut changed_query = world.query_filtered::<(), Changed<Pos>>();
    let mut all_query = world.query::<&Pos>();
    let touch = |world: &mut World| {
        world.clear_trackers();
        for &e in &changing {
            if let Some(mut p) = world.get_mut::<Pos>(e) {
                p.0 += 1.0;
            }
        }
    };
    touch(&mut world);
    assert_eq!(changed_query.iter(&world).count(), 100);
    let world = std::cell::RefCell::new(world);
    group.bench_function("bevy_changed", |b| {
        b.iter_custom(|iters| {
            timed(
                iters,
                || touch(&mut world.borrow_mut()),
                || changed_query.iter(&world.borrow()).count(),
            )
        })
    });
    let world = world.into_inner();
    group.bench_function("bevy_count", |b| b.iter(|| all_query.iter(&world).count()));
    group.finish();
}

const TAGGED: usize = 10_000;

#[derive(Clone, Copy)]
struct HPos(#[allow(dead_code)] f32, #[allow(dead_code)] f32);
#[derive(Clone, Copy)]
struct HVel(#[allow(dead_code)] f32, #[allow(dead_code)] f32);
#[derive(Clone, Copy)]
struct HHealth(#[allow(dead_code)] i64);
struct HTag;

fn tag_add_remove(c: &mut Criterion) {
    let mut group = c.benchmark_group("tag_add_remove");
    for (name, with) in [("dense", ""), ("sparse", " WITH (storage = sparse)")] {
        let conn = common::ecsql(&format!(
            "CREATE COMPONENT Position (x REAL, y REAL); CREATE COMPONENT Velocity (x REAL, y REAL);
             CREATE COMPONENT Health (hp INT); CREATE TAG T{with};
             SPAWN Position(0, 0), Velocity(1, 1), Health(10) FROM range({TAGGED});"
        ));
        let mut attach = conn
            .prepare("INSERT INTO T (id) SELECT id FROM Position")
            .unwrap();
        let mut detach = conn.prepare("DELETE FROM T").unwrap();
        group.bench_function(format!("ecsql_{name}_sql"), |b| {
            b.iter(|| {
                assert_eq!(attach.execute(()).unwrap(), TAGGED);
                assert_eq!(detach.execute(()).unwrap(), TAGGED);
            })
        });
        drop((attach, detach));
        let ids = common::ids(&conn, "SELECT id FROM Position");
        let t = conn
            .with_world(|w| w.component_by_name("T").unwrap().id())
            .unwrap();
        group.bench_function(format!("ecsql_{name}_door"), |b| {
            b.iter(|| {
                conn.with_world_mut(|w| {
                    for &e in &ids {
                        w.attach(e, t, Vec::new()).unwrap();
                    }
                    for &e in &ids {
                        w.detach(e, t).unwrap();
                    }
                })
                .unwrap()
            })
        });
    }
    let mut world = hecs::World::new();
    let entities: Vec<hecs::Entity> = world
        .spawn_batch((0..TAGGED).map(|_| (HPos(0.0, 0.0), HVel(1.0, 1.0), HHealth(10))))
        .collect();
    group.bench_function("hecs", |b| {
        b.iter(|| {
            for &e in &entities {
                world.insert_one(e, HTag).unwrap();
            }
            for &e in &entities {
                world.remove_one::<HTag>(e).unwrap();
            }
        })
    });
    group.finish();
}

const READ_ENTITIES: usize = 200_000;

fn sparse_read(c: &mut Criterion) {
    let mut group = c.benchmark_group("sparse_read");
    for (name, with) in [("dense", ""), ("sparse", " WITH (storage = sparse)")] {
        let conn = common::ecsql(&format!(
            "CREATE COMPONENT Position (x REAL, y REAL); CREATE COMPONENT Heat (t INT){with};
             SPAWN Position(x => i, y => 0) FROM range({READ_ENTITIES}) AS r(i);
             INSERT INTO Heat (id, t) SELECT id, 1 FROM Position WHERE CAST(id AS INT) % 10 = 0;"
        ));
        let mut update = conn.prepare("UPDATE Heat SET t = Heat.t + 1").unwrap();
        group.bench_function(format!("update_{name}"), |b| {
            b.iter(|| assert_eq!(update.execute(()).unwrap(), READ_ENTITIES / 10))
        });
        let mut sum = conn
            .prepare("SELECT sum(Position.x) FROM Position, Heat")
            .unwrap();
        group.bench_function(format!("join_sum_{name}"), |b| {
            b.iter(|| black_box(sum.query(()).unwrap().column::<f64>(0).map(|c| c[0]).ok()))
        });
    }
    group.finish();
}

criterion_group!(benches, changed_count, tag_add_remove, sparse_read);
criterion_main!(benches);
