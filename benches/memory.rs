//! Memory: heap bytes per entity for 1,000,000 entities holding Position and Velocity
//! (3 REAL each: 24 bytes of field data), for ecsql (SPAWN … FROM range, and the columnar
//! door) and hecs, against the raw size of the fields. Bytes are counted by a global
//! allocator that tracks live heap bytes, so the figure is what the process holds, not an
//! estimate. Not a criterion bench: it measures bytes, once, and prints them.
//!
//! Run: `cargo bench -p ecsql-benches --bench memory`.

use ecsql::{Column, Database};

#[path = "common/counting.rs"]
mod counting;

#[global_allocator]
static ALLOCATOR: counting::Counting = counting::Counting;

const N: usize = 1_000_000;
const RAW: usize = 6 * std::mem::size_of::<f32>();

/// Live heap bytes that `build` adds and keeps, per entity.
fn per_entity<T>(build: impl FnOnce() -> T) -> (f64, T) {
    let before = counting::live();
    let kept = build();
    let after = counting::live();
    ((after - before) as f64 / N as f64, kept)
}

struct Position(#[allow(dead_code)] [f32; 3]);
struct Velocity(#[allow(dead_code)] [f32; 3]);

fn main() {
    let ddl = "CREATE COMPONENT Position (x REAL, y REAL, z REAL); CREATE COMPONENT Velocity (x REAL, y REAL, z REAL);";
    let db = Database::open_in_memory();
    let conn = db.connect();
    conn.execute_batch(ddl).unwrap();
    let (sql, _) = per_entity(|| {
        conn.execute(
            &format!("SPAWN Position(i, 0, 0), Velocity(1, 0, 0) FROM range({N}) AS r(i)"),
            (),
        )
        .unwrap()
    });
    drop((conn, db));

    let db = Database::open_in_memory();
    let conn = db.connect();
    conn.execute_batch(ddl).unwrap();
    let ids = conn
        .with_world(|w| ["Position", "Velocity"].map(|c| w.component_by_name(c).unwrap().id()))
        .unwrap();
    let (door, _) = per_entity(|| {
        conn.with_world_mut(|w| {
            let columns = || (0..3).map(|_| Column::from(vec![0.0f32; N])).collect();
            // The ids it returns are the caller's, not the database's: dropped here.
            drop(
                w.spawn_columns(N, vec![(ids[0], columns()), (ids[1], columns())])
                    .unwrap(),
            );
        })
        .unwrap()
    });
    drop((conn, db));

    let (hecs, _world) = per_entity(|| {
        let mut world = hecs::World::new();
        world.spawn_batch((0..N).map(|_| (Position([0.0; 3]), Velocity([0.0; 3]))));
        world
    });

    println!("memory: bytes per entity, {N} entities with Position and Velocity (raw fields: {RAW} B)");
    for (name, bytes) in [("ecsql SPAWN", sql), ("ecsql door", door), ("hecs", hecs)] {
        println!("  {name:<12} {bytes:6.1} B  ({:.2}x raw)", bytes / RAW as f64);
    }
}
