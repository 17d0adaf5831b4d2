//! Differential test of window functions against SQLite (rusqlite, bundled): seeded random
//! worlds of entities (a partition key, an order key with ties, values, texts, NULLs
//! written as a sentinel that both engines read through NULLIF), the same rows in a SQLite
//! table, and random window queries run on both: every window function, every aggregate
//! SQLite also has, PARTITION BY or not, ROWS, RANGE and GROUPS frames with random
//! offsets, windows over GROUP BY, several windows in one select. Rows are compared as
//! multisets, each carrying a unique `u`.
//!
//! What makes the answers comparable: every ORDER BY writes NULLS FIRST or LAST (the
//! engines' defaults differ); a result that depends on how peers are ordered (row_number,
//! lag, first_value, a ROWS frame, string_agg's order) is asked only of a window whose
//! ORDER BY ends with the unique `u`; float values are multiples of 1/4, so their sums
//! are exact in both.
//!
//! The 100th world holds 20,000 entities (a sort's pieces merged), the others up to 40.
//! Runs 200 seeds in `cargo test`; `ECSQL_WINDOW_SEEDS=N` runs N, `ECSQL_SEED=N` replays
//! one; a failure prints the seed, the query and both answers.

use crate::common;
use crate::common::cells;

use cells::Cell;
use common::Rng;
use ecsql::{Connection, Database};

fn below(rng: &mut Rng, n: u64) -> u64 {
    rng.next() % n
}

fn pick<'a>(rng: &mut Rng, items: &[&'a str]) -> &'a str {
    items[below(rng, items.len() as u64) as usize]
}

/// The sentinel that stands for NULL in a stored field.
const NULL: i64 = -99;

struct World {
    _db: Database,
    conn: Connection,
    lite: rusqlite::Connection,
}

/// A world of up to 40 entities, or of `big` ones: past a sort's 16,384-row pieces, so
/// that their merges run, and past a loop's interrupt check.
fn world(rng: &mut Rng, big: Option<u64>) -> World {
    let db = Database::open_in_memory();
    let conn = db.connect();
    conn.execute_batch("CREATE COMPONENT W (u INT, g INT, k INT, v INT, f FLOAT, t TEXT)")
        .expect("the component is created");
    let lite = rusqlite::Connection::open_in_memory().expect("SQLite opens");
    lite.execute_batch("CREATE TABLE W (u INTEGER, g INTEGER, k INTEGER, v INTEGER, f REAL, t TEXT)")
        .expect("the table is created");
    let n = big.unwrap_or_else(|| below(rng, 40));
    let null_or = |rng: &mut Rng, value: i64| if below(rng, 8) == 0 { NULL } else { value };
    conn.execute("BEGIN", ()).expect("begun");
    lite.execute_batch("BEGIN").expect("begun");
    for u in 0..n as i64 {
        let g = below(rng, 4) as i64;
        let g = null_or(rng, g);
        let k = below(rng, 8) as i64 - 2;
        let k = null_or(rng, k);
        let v = below(rng, 21) as i64 - 10;
        let v = null_or(rng, v);
        let f = below(rng, 33) as f64 / 4.0 - 4.0;
        let t = ["a", "b", "ü", "", "zz"][below(rng, 5) as usize];
        conn.execute("SPAWN W(?1, ?2, ?3, ?4, ?5, ?6)", (u, g, k, v, f, t))
            .expect("spawned");
        lite.execute(
            "INSERT INTO W VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            rusqlite::params![u, g, k, v, f, t],
        )
        .expect("inserted");
    }
    conn.execute("COMMIT", ()).expect("committed");
    lite.execute_batch("COMMIT").expect("committed");
    World { _db: db, conn, lite }
}

/// A column read through its NULL sentinel.
fn col(name: &str) -> String {
    if name == "u" || name == "f" || name == "t" {
        format!("W.{name}")
    } else {
        format!("NULLIF(W.{name}, {NULL})")
    }
}

/// `ORDER BY` items for a window: keys with their direction and NULLs' place; `unique`
/// ends them with `W.u`, so that no two rows are peers.
fn order_by(rng: &mut Rng, unique: bool) -> String {
    let mut keys = Vec::new();
    for _ in 0..1 + below(rng, 2) {
        let key = col(pick(rng, &["k", "v", "g", "t", "f"]));
        let dir = pick(rng, &["", " DESC"]);
        let nulls = pick(rng, &[" NULLS FIRST", " NULLS LAST"]);
        keys.push(format!("{key}{dir}{nulls}"));
    }
    if unique {
        keys.push(format!("W.u{}", pick(rng, &["", " DESC"])));
    }
    keys.join(", ")
}

fn partition(rng: &mut Rng) -> String {
    match below(rng, 3) {
        0 => String::new(),
        1 => format!("PARTITION BY {} ", col("g")),
        _ => format!("PARTITION BY {}, W.t ", col("g")),
    }
}

/// A frame: ROWS or GROUPS with any offsets, RANGE with offsets only when the window is
/// ordered by the one INT key `range_key`.
fn frame(rng: &mut Rng, units: &str) -> String {
    let offset = |rng: &mut Rng| below(rng, 4);
    let (start, end) = match below(rng, 6) {
        0 => ("UNBOUNDED PRECEDING".to_owned(), "CURRENT ROW".to_owned()),
        1 => (format!("{} PRECEDING", offset(rng)), "CURRENT ROW".to_owned()),
        2 => (
            format!("{} PRECEDING", offset(rng)),
            format!("{} FOLLOWING", offset(rng)),
        ),
        3 => ("CURRENT ROW".to_owned(), "UNBOUNDED FOLLOWING".to_owned()),
        4 => (
            format!("{} FOLLOWING", offset(rng)),
            format!("{} FOLLOWING", 3 + offset(rng)),
        ),
        _ => {
            let a = offset(rng);
            (format!("{} PRECEDING", a + 1), format!("{a} PRECEDING"))
        }
    };
    format!(" {units} BETWEEN {start} AND {end}")
}

/// One window call with its OVER clause; a call over a named window comes with that
/// window's definition, named `name`.
fn call(rng: &mut Rng, name: &str) -> (String, Option<String>) {
    let part = partition(rng);
    if below(rng, 9) == 0 {
        let value = col(pick(rng, &["v", "k", "u"]));
        return (
            format!(
                "sum({value}) OVER {name}, count(*) OVER ({name} ORDER BY {})",
                order_by(rng, false)
            ),
            Some(format!("{name} AS ({})", part.trim_end())),
        );
    }
    (unnamed(rng, &part), None)
}

fn unnamed(rng: &mut Rng, part: &str) -> String {
    let value = col(pick(rng, &["v", "k", "u"]));
    match below(rng, 8) {
        // Ranks: ties are peers, no tiebreak needed.
        0 => {
            let f = pick(rng, &["rank()", "dense_rank()", "percent_rank()", "cume_dist()"]);
            format!("{f} OVER ({part}ORDER BY {})", order_by(rng, false))
        }
        1 => {
            let f = match below(rng, 3) {
                0 => "row_number()".to_owned(),
                1 => format!("ntile({})", 1 + below(rng, 5)),
                _ => format!(
                    "{}({value}, {}, {})",
                    pick(rng, &["lag", "lead"]),
                    below(rng, 3),
                    pick(rng, &["NULL", "0", "-1"])
                ),
            };
            format!("{f} OVER ({part}ORDER BY {})", order_by(rng, true))
        }
        2 => {
            let f = pick(rng, &["first_value", "last_value"]);
            let frame = if below(rng, 2) == 0 {
                let units = pick(rng, &["ROWS", "GROUPS"]);
                frame(rng, units)
            } else {
                String::new()
            };
            format!(
                "{f}({value}) OVER ({part}ORDER BY {}{frame})",
                order_by(rng, true)
            )
        }
        3 => format!(
            "nth_value({value}, {}) OVER ({part}ORDER BY {}{})",
            1 + below(rng, 3),
            order_by(rng, true),
            frame(rng, "ROWS")
        ),
        // Aggregates that no order among peers changes, over ROWS/GROUPS frames of a
        // unique order, RANGE and GROUPS frames of ties, or the default frame.
        4..=6 => {
            let f = match below(rng, 6) {
                0 => format!("sum({value})"),
                1 => format!("count({value})"),
                2 => "count(*)".to_owned(),
                3 => format!("min({value})"),
                4 => format!("max({})", pick(rng, &["W.t", "NULLIF(W.v, -99)"])),
                _ => pick(rng, &["avg(W.f)", "sum(W.f)"]).to_owned(),
            };
            let over = match below(rng, 5) {
                0 => format!("{part}ORDER BY {}{}", order_by(rng, true), frame(rng, "ROWS")),
                1 => format!(
                    "{part}ORDER BY {} {}{}",
                    col("k"),
                    pick(rng, &["ASC NULLS FIRST", "DESC NULLS LAST", "NULLS LAST"]),
                    frame(rng, "RANGE")
                ),
                2 => format!("{part}ORDER BY {}{}", order_by(rng, false), frame(rng, "GROUPS")),
                3 => format!("{part}ORDER BY {}", order_by(rng, false)),
                _ => part.trim_end().to_owned(),
            };
            format!("{f} OVER ({over})")
        }
        // From the partition's start only, of texts never empty: SQLite's string_agg
        // mangles text when a row leaves its frame, and gives a NUL for one empty text
        // (such frames are in tests/slt/select/window.slt).
        _ => format!(
            "string_agg(W.t || '.', '|') OVER ({part}ORDER BY {} ROWS BETWEEN UNBOUNDED PRECEDING AND {})",
            order_by(rng, true),
            pick(
                rng,
                &["CURRENT ROW", "1 FOLLOWING", "2 PRECEDING", "UNBOUNDED FOLLOWING"]
            )
        ),
    }
}

/// A random query, written the same for both engines.
fn query(rng: &mut Rng) -> String {
    if below(rng, 8) == 0 {
        // Over the groups of a GROUP BY.
        let (dir, nulls) = (
            pick(rng, &["", " DESC"]),
            pick(rng, &[" NULLS FIRST", " NULLS LAST"]),
        );
        return format!(
            "SELECT {g}, sum(W.v), rank() OVER (ORDER BY sum(W.v){dir}{nulls}), sum(count(*)) OVER (ORDER BY {g} NULLS FIRST ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM W GROUP BY {g}",
            g = col("g")
        );
    }
    let filter = if below(rng, 3) == 0 {
        format!(" WHERE {} > {}", col("v"), below(rng, 10) as i64 - 5)
    } else {
        String::new()
    };
    let (mut items, mut windows) = (Vec::new(), Vec::new());
    for i in 0..1 + below(rng, 2) {
        let (item, window) = call(rng, &format!("w{i}"));
        items.push(item);
        windows.extend(window);
    }
    let windows = if windows.is_empty() {
        String::new()
    } else {
        format!(" WINDOW {}", windows.join(", "))
    };
    format!("SELECT W.u, {} FROM W{filter}{windows}", items.join(", "))
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

fn sorted(rows: Vec<Vec<Cell>>) -> Vec<String> {
    let mut out: Vec<String> = rows.into_iter().map(|r| format!("{r:?}")).collect();
    out.sort();
    out
}

#[test]
fn window_functions_agree_with_sqlite() {
    let seeds = common::seeds("ECSQL_WINDOW_SEEDS", 200);
    let mut failures = Vec::new();
    let mut compared = 0;
    let runs = seeds.len();
    for seed in seeds {
        let mut rng = Rng(seed);
        let big = seed == 100;
        let w = world(&mut rng, big.then_some(20_000));
        for _ in 0..10 {
            // Over 20,000 rows a string_agg to the partition's end is 20,000 long texts.
            let sql = loop {
                let sql = query(&mut rng);
                if !(big && sql.contains("string_agg")) {
                    break sql;
                }
            };
            let mine = ecsql_rows(&w.conn, &sql);
            let theirs = cells::sqlite_rows(&w.lite, &sql);
            match (mine, theirs) {
                (Ok(a), Ok(b)) => {
                    let (a, b) = (sorted(a), sorted(b));
                    if a != b {
                        failures.push(format!(
                            "seed {seed} (ECSQL_SEED={seed}):\n  {sql}\n  ecsql:  {a:?}\n  sqlite: {b:?}"
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
    assert!(
        compared >= (10 * runs).min(100),
        "only {compared} queries were compared"
    );
}
