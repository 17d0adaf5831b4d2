//! frag_iter (ecs_bench_suite): 26 component types A..Z, each with one REAL field, and 20
//! entities in each archetype {letter, Data}; one pass doubles `Data.v` on all 520 entities.
//! It measures what a query pays per archetype table rather than per row.
//!
//! Side by side in one group: ecsql's prepared `UPDATE Data SET v = Data.v * 2`, hecs
//! `query_mut`, a plain loop over 26 `Vec<f32>` of 20, and SQLite's prepared UPDATE over
//! the 520 rows of its `data` table (SQLite has no archetypes; it is here as the SQL anchor).
//!
//! Run: `cargo bench -p ecsql-benches --bench frag_iter`.

mod common;

use std::hint::black_box;

use common::{sqlite, sqlite_tx};
use criterion::{Criterion, criterion_group, criterion_main};

const LETTERS: usize = 26;
const PER_ARCHETYPE: usize = 20;

struct Data(f32);

macro_rules! letters {
    ($($name:ident),*) => {
        $(struct $name(#[allow(dead_code)] f32);)*
        fn hecs_world() -> hecs::World {
            let mut world = hecs::World::new();
            $(world.spawn_batch((0..PER_ARCHETYPE).map(|_| ($name(0.0), Data(1.0))));)*
            world
        }
    };
}

letters!(
    A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S, T, U, V, W, X, Y, Z
);

fn letter(i: usize) -> char {
    (b'A' + i as u8) as char
}

fn frag_iter(c: &mut Criterion) {
    let mut group = c.benchmark_group("frag_iter");
    let total = LETTERS * PER_ARCHETYPE;

    let mut ddl = String::from("CREATE COMPONENT Data (v REAL);");
    for i in 0..LETTERS {
        let l = letter(i);
        ddl += &format!("CREATE COMPONENT {l} (v REAL); SPAWN {l}(0), Data(1) FROM range({PER_ARCHETYPE});");
    }
    let conn = common::ecsql(&ddl);
    let mut update = conn.prepare("UPDATE Data SET v = Data.v * 2").unwrap();
    group.bench_function("ecsql_sql", |b| {
        b.iter(|| assert_eq!(update.execute(()).unwrap(), total))
    });
    drop(update);

    // The same 520 rows in one table: what is left of ecsql_sql is what it pays per table.
    let conn = common::ecsql(&format!(
        "CREATE COMPONENT Data (v REAL); SPAWN Data(1) FROM range({total});"
    ));
    let mut update = conn.prepare("UPDATE Data SET v = Data.v * 2").unwrap();
    group.bench_function("ecsql_sql_one_table", |b| {
        b.iter(|| assert_eq!(update.execute(()).unwrap(), total))
    });
    drop(update);

    let mut world = hecs_world();
    group.bench_function("hecs", |b| {
        b.iter(|| {
            for data in world.query_mut::<&mut Data>() {
                data.0 *= 2.0;
            }
        })
    });

    let mut columns = vec![vec![1.0f32; PER_ARCHETYPE]; LETTERS];
    group.bench_function("plain_soa", |b| {
        b.iter(|| {
            for column in &mut columns {
                for v in column.iter_mut() {
                    *v *= 2.0;
                }
            }
            black_box(&columns);
        })
    });

    let db = sqlite("CREATE TABLE data (id INTEGER PRIMARY KEY, v REAL)");
    sqlite_tx(&db, || {
        let mut insert = db.prepare("INSERT INTO data VALUES (?, 1.0)").unwrap();
        for id in 0..total as i64 {
            insert.execute([id]).unwrap();
        }
    });
    let mut sql_update = db.prepare("UPDATE data SET v = v * 2").unwrap();
    group.bench_function("sqlite", |b| {
        b.iter(|| sqlite_tx(&db, || assert_eq!(sql_update.execute(()).unwrap(), total)))
    });
    group.finish();
}

criterion_group!(benches, frag_iter);
criterion_main!(benches);
