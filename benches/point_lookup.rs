//! point lookup: 1,000,000 entities with Position; read `Position.x` of one entity by id,
//! per call, cycling through 1,024 random live ids.
//!
//! Side by side in one group: ecsql's prepared `SELECT Position.x FROM Position WHERE id =
//! ?` (by `query_row`, and by `query` and the rows' `next`), hecs `World::get`, and
//! SQLite's prepared `SELECT x FROM position WHERE id = ?` (by `query_row`). ecsql's first
//! line keeps the `Database` the connection came from (each read takes the lock); the
//! others run with the connection alone on its database (no lock).
//! Plus statement overhead: the same lookup written out as a new text each call (SQLite
//! prepares from text too; rusqlite's `query_row` on a connection does not cache); and
//! those texts as a script file's statements, each on a line of its own (`run_script_at`,
//! as the shell runs a file).
//!
//! And writes as text: a point UPDATE by id and a SPAWN of one entity (SQLite: UPDATE and
//! INSERT), a different text each call; and deep texts as SQLite's generated test queries
//! write them (120 comparisons in 40 nested groups), a different one each call.
//!
//! The texts of each kind differ only in their constants, so ecsql's connection shares
//! one plan among those of one shape (`PRAGMA parameterize`, on by default); the
//! `…_as_written` lines turn that off, so each text is parsed and planned.
//!
//! Run: `cargo bench -p ecsql-benches --bench point_lookup`.

mod common;

use common::{Rng, sqlite, sqlite_tx};
use criterion::{Criterion, criterion_group, criterion_main};
use ecsql::Entity;

const N: usize = 1_000_000;
const PROBES: usize = 1024;

struct Position {
    x: f32,
}

/// Probe positions in 0..N, the same for every side.
fn probes() -> Vec<usize> {
    let mut rng = Rng::new(11);
    (0..PROBES).map(|_| rng.below(N as u64) as usize).collect()
}

fn x_of(row: usize) -> f32 {
    row as f32 * 0.5
}

/// ecsql, hecs and SQLite each holding the same N positions; ids in spawn order.
struct Sides {
    conn: ecsql::Connection,
    ids: Vec<Entity>,
    world: hecs::World,
    entities: Vec<hecs::Entity>,
    db: rusqlite::Connection,
}

/// The sides, and the ecsql `Database` their connection was made from: while the program
/// keeps it, a point read takes the lock (another thread could connect); once it is
/// dropped, the connection is alone on its database and reads without it.
fn sides() -> (Sides, ecsql::Database) {
    let database = ecsql::Database::open_in_memory();
    let conn = database.connect();
    conn.execute_batch("CREATE COMPONENT Position (x REAL, y REAL, z REAL);")
        .unwrap();
    conn.execute(
        &format!("SPAWN Position(i * 0.5, 0, 0) FROM range({N}) AS r(i)"),
        (),
    )
    .unwrap();
    let ids = common::ids(&conn, "SELECT id FROM Position");
    let mut world = hecs::World::new();
    let entities = world
        .spawn_batch((0..N).map(|i| (Position { x: x_of(i) },)))
        .collect();
    let db = sqlite("CREATE TABLE position (id INTEGER PRIMARY KEY, x REAL, y REAL, z REAL);");
    sqlite_tx(&db, || {
        let mut insert = db
            .prepare("INSERT INTO position VALUES (?, ?, 0.0, 0.0)")
            .unwrap();
        for row in 0..N {
            insert.execute((row as i64, f64::from(x_of(row)))).unwrap();
        }
    });
    let sides = Sides {
        conn,
        ids,
        world,
        entities,
        db,
    };
    (sides, database)
}

fn point_lookup(c: &mut Criterion) {
    let probes = probes();
    let (sides, database) = sides();
    let mut next = probes.iter().cycle();

    let mut group = c.benchmark_group("point_lookup");
    let mut lookup = sides
        .conn
        .prepare("SELECT Position.x FROM Position WHERE id = ?1")
        .unwrap();
    // While the program keeps the `Database`, each read takes the read lock.
    group.bench_function("ecsql_sql_database_kept", |b| {
        b.iter(|| {
            let &row = next.next().unwrap();
            let x: f32 = lookup.query_row([sides.ids[row]], |r| r.get(0)).unwrap();
            assert_eq!(x, x_of(row));
        })
    });
    // The rest with the connection alone on its database, as a program that keeps only
    // its connection has it.
    drop(database);
    // query_row on both sides, as a point read is usually written; and ecsql's rows
    // taken one by one (query, next, get).
    group.bench_function("ecsql_sql", |b| {
        b.iter(|| {
            let &row = next.next().unwrap();
            let x: f32 = lookup.query_row([sides.ids[row]], |r| r.get(0)).unwrap();
            assert_eq!(x, x_of(row));
        })
    });
    group.bench_function("ecsql_sql_rows", |b| {
        b.iter(|| {
            let &row = next.next().unwrap();
            let x: f32 = lookup
                .query([sides.ids[row]])
                .unwrap()
                .next()
                .unwrap()
                .unwrap()
                .get(0)
                .unwrap();
            assert_eq!(x, x_of(row));
        })
    });
    group.bench_function("hecs", |b| {
        b.iter(|| {
            let &row = next.next().unwrap();
            assert_eq!(
                sides.world.get::<&Position>(sides.entities[row]).unwrap().x,
                x_of(row)
            );
        })
    });
    let mut sql_lookup = sides.db.prepare("SELECT x FROM position WHERE id = ?1").unwrap();
    group.bench_function("sqlite", |b| {
        b.iter(|| {
            let &row = next.next().unwrap();
            let x: f64 = sql_lookup.query_row([row as i64], |r| r.get(0)).unwrap();
            assert_eq!(x as f32, x_of(row));
        })
    });
    group.finish();

    let mut group = c.benchmark_group("statement_overhead");
    let texts: Vec<String> = probes
        .iter()
        .map(|&row| {
            format!(
                "SELECT Position.x FROM Position WHERE id = {}",
                sides.ids[row].to_bits()
            )
        })
        .collect();
    // The texts differ only in their constant, so they share one plan
    // (PRAGMA parameterize); as written, each text is parsed and planned.
    for (id, parameterize) in [("ecsql_sql", "on"), ("ecsql_sql_as_written", "off")] {
        set_parameterize(&sides.conn, parameterize);
        let mut next_text = probes.iter().zip(&texts).cycle();
        group.bench_function(id, |b| {
            b.iter(|| {
                let (&row, text) = next_text.next().unwrap();
                let x: f32 = sides.conn.query_row(text, (), |r| r.get(0)).unwrap();
                assert_eq!(x, x_of(row));
            })
        });
    }
    set_parameterize(&sides.conn, "on");
    // The same texts as the statements of a script file, each on its own line (a shell's
    // `.read`): they share one plan wherever they stand.
    let mut next_line = probes.iter().zip(&texts).zip(1u32..).cycle();
    group.bench_function("ecsql_script_lines", |b| {
        b.iter(|| {
            let ((&row, text), line) = next_line.next().unwrap();
            let mut x = None;
            sides
                .conn
                .run_script_at(text, ecsql::Location::new(line, 1), |r| {
                    let mut rows = r.unwrap().rows.unwrap();
                    x = Some(rows.next().unwrap().unwrap().get::<_, f32>(0).unwrap());
                    true
                })
                .unwrap();
            assert_eq!(x, Some(x_of(row)));
        })
    });
    let texts: Vec<String> = probes
        .iter()
        .map(|&row| format!("SELECT x FROM position WHERE id = {row}"))
        .collect();
    let mut next_text = probes.iter().zip(&texts).cycle();
    group.bench_function("sqlite", |b| {
        b.iter(|| {
            let (&row, text) = next_text.next().unwrap();
            let x: f64 = sides.db.query_row(text, (), |r| r.get(0)).unwrap();
            assert_eq!(x as f32, x_of(row));
        })
    });
    // The same text every time, as a game loop's statements are: ecsql parses it once
    // (the connection keeps texts parsed); rusqlite's query_row prepares it each call.
    let row = probes[0];
    let text = format!(
        "SELECT Position.x FROM Position WHERE id = {}",
        sides.ids[row].to_bits()
    );
    group.bench_function("ecsql_same_text", |b| {
        b.iter(|| {
            let x: f32 = sides.conn.query_row(&text, (), |r| r.get(0)).unwrap();
            assert_eq!(x, x_of(row));
        })
    });
    let text = format!("SELECT x FROM position WHERE id = {row}");
    group.bench_function("sqlite_same_text", |b| {
        b.iter(|| {
            let x: f64 = sides.db.query_row(&text, (), |r| r.get(0)).unwrap();
            assert_eq!(x as f32, x_of(row));
        })
    });
    // rusqlite's prepare_cached on both sides: a statement kept by its text, a parameter
    // per call.
    let mut next = probes.iter().cycle();
    group.bench_function("ecsql_prepare_cached", |b| {
        b.iter(|| {
            let &row = next.next().unwrap();
            let mut s = sides
                .conn
                .prepare_cached("SELECT Position.x FROM Position WHERE id = ?1")
                .unwrap();
            let x: f32 = s.query_row([sides.ids[row]], |r| r.get(0)).unwrap();
            assert_eq!(x, x_of(row));
        })
    });
    let mut next = probes.iter().cycle();
    group.bench_function("sqlite_prepare_cached", |b| {
        b.iter(|| {
            let &row = next.next().unwrap();
            let mut s = sides
                .db
                .prepare_cached("SELECT x FROM position WHERE id = ?1")
                .unwrap();
            let x: f64 = s.query_row([row as i64], |r| r.get(0)).unwrap();
            assert_eq!(x as f32, x_of(row));
        })
    });
    group.finish();

    // Writes given as text, each call a text not seen in the last 1,024: a point UPDATE by
    // id, and a SPAWN of one entity with its values written out (SQLite: INSERT).
    let mut group = c.benchmark_group("write_texts");
    let ecsql = |text: &String| sides.conn.execute(text, ()).unwrap();
    let sqlite = |text: &String| sides.db.execute(text, ()).unwrap();
    let texts: Vec<String> = probes
        .iter()
        .map(|&row| {
            format!(
                "UPDATE Position SET x = {} WHERE id = {}",
                x_of(row),
                sides.ids[row].to_bits()
            )
        })
        .collect();
    for (id, parameterize) in [("update/ecsql_sql", "on"), ("update/ecsql_sql_as_written", "off")] {
        set_parameterize(&sides.conn, parameterize);
        each_text_once(&mut group, id, texts.clone(), ecsql);
    }
    set_parameterize(&sides.conn, "on");
    let texts = probes
        .iter()
        .map(|&row| format!("UPDATE position SET x = {} WHERE id = {row}", x_of(row)));
    each_text_once(&mut group, "update/sqlite", texts.collect(), sqlite);
    let texts: Vec<String> = (0..PROBES)
        .map(|i| format!("SPAWN Position(x => {}, y => {i}, z => 0.5)", x_of(i)))
        .collect();
    for (id, parameterize) in [("spawn/ecsql_sql", "on"), ("spawn/ecsql_sql_as_written", "off")] {
        set_parameterize(&sides.conn, parameterize);
        each_text_once(&mut group, id, texts.clone(), ecsql);
    }
    set_parameterize(&sides.conn, "on");
    let texts = (0..PROBES).map(|i| format!("INSERT INTO position (x, y, z) VALUES ({}, {i}, 0.5)", x_of(i)));
    each_text_once(&mut group, "spawn/sqlite", texts.collect(), sqlite);
    group.finish();

    deep_texts(c);
}

/// Texts as SQLite's generated test queries write them (its corpus's `index/` files): a
/// WHERE of 120 comparisons, ANDs and ORs in 40 nested groups, about 1,900 characters, over
/// 100 rows; each call a text not seen in the last 1,023. ecsql as written (`PRAGMA
/// parameterize = off`: parsed, planned and run) and by default (the texts share one shape),
/// SQLite prepared and stepped.
fn deep_texts(c: &mut Criterion) {
    const ROWS: usize = 100;
    const TEXTS: usize = PROBES;
    const GROUPS: usize = 40;
    let mut rng = Rng::new(5);
    let mut condition = |i: usize| {
        let (a, b) = (rng.below(100), rng.below(10_000) as f64 / 100.0);
        format!("(x < {a} AND (y >= {b:.2} OR z IS NULL) OR w = {i}")
    };
    let texts: Vec<String> = (0..TEXTS)
        .map(|_| {
            let groups: Vec<String> = (0..GROUPS).map(&mut condition).collect();
            format!("{}{}", groups.join(" AND "), ")".repeat(GROUPS))
        })
        .collect();
    let conn = common::ecsql(&format!(
        "CREATE COMPONENT Deep (w INT, x INT, y REAL, z REAL);
         SPAWN Deep(w => i, x => i % 100, y => i * 0.75, z => i) FROM range({ROWS}) AS r(i);"
    ));
    let db = sqlite("CREATE TABLE deep (id INTEGER PRIMARY KEY, w INT, x INT, y REAL, z REAL);");
    sqlite_tx(&db, || {
        for i in 0..ROWS {
            db.execute(
                "INSERT INTO deep (w, x, y, z) VALUES (?1, ?2, ?3, ?4)",
                (i as i64, (i % 100) as i64, i as f64 * 0.75, i as f64),
            )
            .unwrap();
        }
    });
    let mut group = c.benchmark_group("deep_texts");
    let ecsql_texts: Vec<String> = texts
        .iter()
        .map(|w| format!("SELECT count(*) FROM Deep WHERE {w}"))
        .collect();
    let sqlite_texts: Vec<String> = texts
        .iter()
        .map(|w| format!("SELECT count(*) FROM deep WHERE {w}"))
        .collect();
    // Each side's count of each text, which the other side must match.
    let counts: Vec<i64> = sqlite_texts
        .iter()
        .map(|t| db.query_row(t, (), |r| r.get(0)).unwrap())
        .collect();
    // SQLite first: what ecsql's side leaves to free (its text cache's plans, freed over
    // later lookups; large values handed to the dropping thread) is then not freed
    // beside SQLite's run.
    let mut next = sqlite_texts.iter().zip(&counts).cycle();
    group.bench_function("sqlite", |b| {
        b.iter(|| {
            let (text, &count) = next.next().unwrap();
            let n: i64 = db.query_row(text, (), |r| r.get(0)).unwrap();
            assert_eq!(n, count);
        })
    });
    for (id, parameterize) in [("ecsql_sql_as_written", "off"), ("ecsql_sql", "on")] {
        set_parameterize(&conn, parameterize);
        let mut next = ecsql_texts.iter().zip(&counts).cycle();
        group.bench_function(id, |b| {
            b.iter(|| {
                let (text, &count) = next.next().unwrap();
                let n: i64 = conn.query_row(text, (), |r| r.get(0)).unwrap();
                assert_eq!(n, count);
            })
        });
    }
    group.finish();
}

fn set_parameterize(conn: &ecsql::Connection, to: &str) {
    conn.query_row(&format!("PRAGMA parameterize = {to}"), (), |_| Ok(()))
        .unwrap();
}

/// Runs `texts` in turn, one a call, each writing one row (`execute` returns 1).
fn each_text_once(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    id: &str,
    texts: Vec<String>,
    execute: impl Fn(&String) -> usize,
) {
    let mut next_text = texts.iter().cycle();
    group.bench_function(id, |b| {
        b.iter(|| assert_eq!(execute(next_text.next().unwrap()), 1))
    });
}

criterion_group!(benches, point_lookup);
criterion_main!(benches);
