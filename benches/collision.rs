//! collision: the game loop's collision step (examples/game_loop.sql's `collide` query):
//! every unit with Health paired with every other collider closer than their two radii,
//! `distance((a.x, a.y), (b.x, b.y)) < ac.radius + bc.radius`. Units are uniform over a
//! square sized so each has about one neighbour in reach (radius 0.5 to 1).
//!
//! Side by side in one group, per N: ecsql's prepared query with a spatial index on
//! Position (an index join), ecsql without the index (every pair), SQLite's self-join
//! (every pair, squared distances), a hand loop over every pair in Rust, and a
//! hand-written uniform grid in Rust rebuilt each time (what a game would write itself:
//! the upper bound). The every-pair sides run at 1,000 units only.
//!
//! Run: `cargo bench -p ecsql-benches --bench collision`.

mod common;

use std::hint::black_box;

use common::{Rng, sqlite, sqlite_tx};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};

const QUERY: &str = "SELECT count(*) FROM Position AS a, Collider AS ac, Health \
    JOIN Position AS b ON b.id <> a.id JOIN Collider AS bc ON bc.id = b.id \
    WHERE distance((a.x, a.y), (b.x, b.y)) < ac.radius + bc.radius";

const SQLITE_QUERY: &str = "SELECT count(*) FROM unit AS a JOIN unit AS b ON b.id <> a.id \
    WHERE a.hp IS NOT NULL AND (a.x - b.x) * (a.x - b.x) + (a.y - b.y) * (a.y - b.y) \
    < (a.r + b.r) * (a.r + b.r)";

/// N units: (x, y, radius), uniform over a square of side √(8N) (one unit per 8 square
/// units), radius in [0.5, 1).
fn units(n: usize) -> Vec<(f32, f32, f32)> {
    let mut rng = Rng::new(7);
    let side = (8.0 * n as f32).sqrt();
    (0..n)
        .map(|_| (rng.unit() * side, rng.unit() * side, 0.5 + rng.unit() * 0.5))
        .collect()
}

fn ecsql_world(units: &[(f32, f32, f32)], indexed: bool) -> ecsql::Connection {
    let conn = common::ecsql(
        "CREATE COMPONENT Position (x REAL, y REAL);
         CREATE COMPONENT Collider (radius REAL);
         CREATE COMPONENT Health (hp INT DEFAULT 100);",
    );
    if indexed {
        conn.execute("CREATE SPATIAL INDEX ON Position (x, y)", ())
            .unwrap();
    }
    let mut spawn = conn
        .prepare("SPAWN Position(?1, ?2), Collider(?3), Health(10)")
        .unwrap();
    for &(x, y, r) in units {
        spawn.execute((x, y, r)).unwrap();
    }
    conn
}

/// Every pair, by hand.
fn pairs_by_hand(units: &[(f32, f32, f32)]) -> usize {
    let mut hits = 0;
    for (i, a) in units.iter().enumerate() {
        for (j, b) in units.iter().enumerate() {
            let (dx, dy) = (a.0 - b.0, a.1 - b.1);
            let reach = a.2 + b.2;
            if i != j && dx * dx + dy * dy < reach * reach {
                hits += 1;
            }
        }
    }
    hits
}

/// A uniform grid of cells as wide as the largest reach, built from scratch, each unit
/// checked against the units of the 3×3 cells around it.
fn grid_by_hand(units: &[(f32, f32, f32)]) -> usize {
    let cell = units.iter().map(|u| u.2).fold(0.0f32, f32::max) * 2.0;
    let key = |x: f32, y: f32| ((x / cell).floor() as i32, (y / cell).floor() as i32);
    let mut cells: std::collections::HashMap<(i32, i32), Vec<u32>> = std::collections::HashMap::new();
    for (i, u) in units.iter().enumerate() {
        cells.entry(key(u.0, u.1)).or_default().push(i as u32);
    }
    let mut hits = 0;
    for (i, a) in units.iter().enumerate() {
        let (cx, cy) = key(a.0, a.1);
        for gx in cx - 1..=cx + 1 {
            for gy in cy - 1..=cy + 1 {
                for &j in cells.get(&(gx, gy)).map_or(&[][..], Vec::as_slice) {
                    let b = &units[j as usize];
                    let (dx, dy) = (a.0 - b.0, a.1 - b.1);
                    let reach = a.2 + b.2;
                    if j as usize != i && dx * dx + dy * dy < reach * reach {
                        hits += 1;
                    }
                }
            }
        }
    }
    hits
}

fn collision(c: &mut Criterion) {
    let mut group = c.benchmark_group("collision");
    group.sample_size(20);
    for n in [1_000usize, 10_000] {
        let units = units(n);
        let expected = grid_by_hand(&units) as i64;

        let conn = ecsql_world(&units, true);
        let mut query = conn.prepare(QUERY).unwrap();
        group.bench_with_input(BenchmarkId::new("ecsql_sql", n), &n, |b, _| {
            b.iter(|| assert_eq!(query.query_row((), |r| r.get::<_, i64>(0)).unwrap(), expected))
        });
        drop(query);

        group.bench_with_input(BenchmarkId::new("plain_grid", n), &n, |b, _| {
            b.iter(|| assert_eq!(grid_by_hand(black_box(&units)) as i64, expected))
        });

        if n > 1_000 {
            continue;
        }
        let conn = ecsql_world(&units, false);
        let mut query = conn.prepare(QUERY).unwrap();
        group.bench_with_input(BenchmarkId::new("ecsql_no_index", n), &n, |b, _| {
            b.iter(|| assert_eq!(query.query_row((), |r| r.get::<_, i64>(0)).unwrap(), expected))
        });
        drop(query);

        group.bench_with_input(BenchmarkId::new("plain_pairs", n), &n, |b, _| {
            b.iter(|| assert_eq!(pairs_by_hand(black_box(&units)) as i64, expected))
        });

        let db = sqlite("CREATE TABLE unit (id INTEGER PRIMARY KEY, x REAL, y REAL, r REAL, hp INTEGER)");
        sqlite_tx(&db, || {
            let mut insert = db
                .prepare("INSERT INTO unit VALUES (?1, ?2, ?3, ?4, 10)")
                .unwrap();
            for (i, &(x, y, r)) in units.iter().enumerate() {
                insert
                    .execute((i as i64 + 1, x as f64, y as f64, r as f64))
                    .unwrap();
            }
        });
        let mut query = db.prepare(SQLITE_QUERY).unwrap();
        group.bench_with_input(BenchmarkId::new("sqlite", n), &n, |b, _| {
            b.iter(|| {
                let hits: i64 = query.query_row((), |r| r.get(0)).unwrap();
                assert_eq!(hits, expected);
            })
        });
    }
    group.finish();
}

criterion_group!(benches, collision);
criterion_main!(benches);
