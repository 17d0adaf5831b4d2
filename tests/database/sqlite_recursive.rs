//! Differential test of WITH RECURSIVE against SQLite (rusqlite, bundled): seeded random
//! graphs of entities whose ENTITY field `parent` points at another (trees, and graphs with
//! cycles), the same rows in a SQLite table keyed by id, and random recursive walks (down
//! and up the relation, UNION and UNION ALL, with depth, weights and text) run on both; the
//! rows compared as multisets. Half the worlds index `parent`, so the recursive part's
//! join is read through the index in those.
//!
//! Runs 150 seeds in `cargo test`; `ECSQL_RECURSIVE_SEEDS=N` runs N, `ECSQL_SEED=N`
//! replays one; a failure prints the seed, the query and both answers.

use crate::common;
use crate::common::cells;

use cells::Cell;
use common::Rng;
use ecsql::{Connection, Database, Value};

fn below(rng: &mut Rng, n: u64) -> u64 {
    rng.next() % n
}

struct World {
    _db: Database,
    conn: Connection,
    lite: rusqlite::Connection,
    ids: Vec<i64>,
}

/// A world of `n` nodes: each points at an earlier one (a forest), or, with `cycles`, at
/// any one; a few point nowhere.
fn world(rng: &mut Rng, cycles: bool, indexed: bool) -> World {
    let db = Database::open_in_memory();
    let conn = db.connect();
    conn.execute_batch("CREATE COMPONENT Node (parent ENTITY, w INT, name TEXT)")
        .expect("the component is created");
    let lite = rusqlite::Connection::open_in_memory().expect("SQLite opens");
    lite.execute_batch("CREATE TABLE Node (id INTEGER PRIMARY KEY, parent INTEGER, w INTEGER, name TEXT)")
        .expect("the table is created");
    let n = 2 + below(rng, 60);
    let mut ids: Vec<i64> = Vec::new();
    for _ in 0..n {
        let parent = match (ids.is_empty(), below(rng, 10)) {
            (true, _) | (_, 0) => None,
            _ => Some(ids[below(rng, ids.len() as u64) as usize]),
        };
        let w = below(rng, 7) as i64 - 2;
        let name = ["a", "b", "ü", ""][below(rng, 4) as usize];
        let id: Value = conn
            .query_row(
                "SPAWN Node(?1, ?2, ?3) RETURNING id",
                (parent.map_or(Value::Null, Value::Int), w, name),
                |r| r.get(0),
            )
            .expect("spawned");
        let Value::Entity(id) = id else {
            panic!("SPAWN returned {id:?}")
        };
        let id = id.to_bits() as i64;
        lite.execute(
            "INSERT INTO Node VALUES (?1, ?2, ?3, ?4)",
            rusqlite::params![id, parent, w, name],
        )
        .expect("inserted");
        ids.push(id);
    }
    if cycles {
        // Point some early nodes at later ones: cycles.
        for _ in 0..3 {
            let (a, b) = (
                ids[below(rng, ids.len() as u64) as usize],
                ids[below(rng, ids.len() as u64) as usize],
            );
            conn.execute(&format!("UPDATE Node SET parent = {b} WHERE id = {a}"), ())
                .expect("updated");
            lite.execute(&format!("UPDATE Node SET parent = {b} WHERE id = {a}"), [])
                .expect("updated");
        }
    }
    if indexed {
        conn.execute_batch("CREATE INDEX ON Node (parent)")
            .expect("indexed");
    }
    World {
        _db: db,
        conn,
        lite,
        ids,
    }
}

/// A random recursive query, written the same for both engines (`Node.id` is `id`).
fn query(rng: &mut Rng, w: &World, cycles: bool) -> String {
    let root = w.ids[below(rng, w.ids.len() as u64) as usize];
    // A graph with cycles is walked with UNION (rows found before are dropped, so it
    // ends) or with a depth bound.
    let all = !cycles || below(rng, 2) == 0;
    let union = if all { "UNION ALL" } else { "UNION" };
    let bound = if cycles && all { " AND r.depth < 6" } else { "" };
    let depth = if all { "r.depth + 1" } else { "0" };
    match below(rng, 4) {
        // Down: the entities below the root, with depth (and their weights' sums).
        0 => format!(
            "WITH RECURSIVE r(e, depth) AS (SELECT {root}, 0 {union} SELECT Node.id, {depth} FROM Node JOIN r ON Node.parent = r.e WHERE TRUE{bound}) SELECT r.e, r.depth FROM r"
        ),
        1 => format!(
            "WITH RECURSIVE r(e, depth, total) AS (SELECT Node.id, 0, Node.w FROM Node WHERE Node.id = {root} {union} SELECT Node.id, {depth}, {total} FROM Node JOIN r ON Node.parent = r.e WHERE Node.w > -2{bound}) SELECT r.e, r.total, r.depth FROM r",
            total = if all { "r.total + Node.w" } else { "Node.w" },
        ),
        // Up: the ancestors, with the path of names.
        2 => format!(
            "WITH RECURSIVE r(e, depth, path) AS (SELECT Node.parent, 0, Node.name FROM Node WHERE Node.id = {root} AND Node.parent IS NOT NULL {union} SELECT Node.parent, {depth}, {path} FROM Node JOIN r ON Node.id = r.e WHERE Node.parent IS NOT NULL{bound}) SELECT r.e, r.depth, r.path FROM r",
            path = if all { "r.path || '/' || Node.name" } else { "''" },
        ),
        // A count of the walk, grouped by depth, joined back to the nodes.
        _ => format!(
            "WITH RECURSIVE r(e, depth) AS (SELECT Node.id, 0 FROM Node WHERE Node.parent IS NULL {union} SELECT Node.id, {depth} FROM Node JOIN r ON Node.parent = r.e WHERE TRUE{bound}) SELECT r.depth, count(*), sum(n.w) FROM r JOIN Node AS n ON n.id = r.e GROUP BY r.depth"
        ),
    }
}

fn ecsql_rows(conn: &Connection, sql: &str) -> Result<Vec<Vec<Cell>>, String> {
    let mut stmt = conn.prepare(sql).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for row in stmt.query(()).map_err(|e| e.to_string())? {
        let row = row.map_err(|e| e.to_string())?;
        out.push(row.values().iter().map(Cell::from_ecsql).collect());
    }
    Ok(out)
}

fn sorted(mut rows: Vec<Vec<Cell>>) -> Vec<String> {
    let mut out: Vec<String> = rows.drain(..).map(|r| format!("{r:?}")).collect();
    out.sort();
    out
}

#[test]
fn recursive_queries_agree_with_sqlite() {
    let seeds = common::seeds("ECSQL_RECURSIVE_SEEDS", 150);
    let mut failures = Vec::new();
    let mut compared = 0;
    for seed in seeds {
        let mut rng = Rng(seed);
        let cycles = below(&mut rng, 2) == 0;
        let indexed = below(&mut rng, 2) == 0;
        let w = world(&mut rng, cycles, indexed);
        for _ in 0..8 {
            let sql = query(&mut rng, &w, cycles);
            let mine = ecsql_rows(&w.conn, &sql);
            let theirs = cells::sqlite_rows(&w.lite, &sql);
            match (mine, theirs) {
                (Ok(a), Ok(b)) => {
                    let (a, b) = (sorted(a), sorted(b));
                    if a != b {
                        failures.push(format!(
                            "seed {seed} (ECSQL_SEED={seed}), cycles {cycles}, indexed {indexed}:\n  {sql}\n  ecsql:  {a:?}\n  sqlite: {b:?}"
                        ));
                    }
                    compared += 1;
                }
                (a, b) => failures.push(format!(
                    "seed {seed}: {sql}\n  ecsql: {:?}\n  sqlite: {:?}",
                    a.err(),
                    b.err()
                )),
            }
        }
        if failures.len() >= 5 {
            break;
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(compared > 0, "no query was compared");
}
