//! ORDER BY against a naive model: seeded random worlds (rows in several archetype
//! tables; INT, FLOAT, TEXT (short, long with a shared start, with NUL), BOOL and ENTITY
//! fields with ties, -0.0 and NaN; NULLs
//! from NULLIF, from ENTITY fields and from a LEFT JOIN),
//! random ORDER BYs of one to three keys (fields, expressions, ids; ASC or DESC; NULLS
//! FIRST, LAST or the default) with and without LIMIT and OFFSET, on one thread and
//! split among two. The model takes the same select without its ORDER BY (the rows in the
//! order they come), sorts them stably with a comparator written here from the docs'
//! rules, and cuts OFFSET and LIMIT; the answers must be equal row for row, so the tie
//! order is checked too (ORDER BY is stable: rows equal on every key keep the order they
//! came in).
//!
//! The sizes cross the sort's paths: a LIMIT small beside the rows (the first rows kept
//! as they come, trimmed past a thousand), a LIMIT near them (a whole sort), keys that
//! pack into integers and texts that do not, sorts of more than 16,384 rows (pieces
//! merged). Runs 40 seeds in `cargo test`; `ECSQL_SORT_SEEDS=N` runs N, `ECSQL_SEED=N`
//! replays one; a failure prints the seed, the query and the first row that differs.

use std::cmp::Ordering;

use ecsql::{Connection, Database, Value};

use crate::common::{self, Rng};

fn below(rng: &mut Rng, n: u64) -> u64 {
    rng.next() % n
}

/// A world of `n` entities in four tables (A alone, A with B, A with a tag, A with both).
fn world(rng: &mut Rng, n: u64) -> Connection {
    let conn = Database::open_in_memory().connect();
    conn.execute_batch(
        "PRAGMA min_parallel_rows = 4096;
         CREATE COMPONENT A (i INT, f FLOAT, t TEXT, b BOOL, e ENTITY);
         CREATE COMPONENT B (j INT);
         CREATE TAG Tag;
         BEGIN;",
    )
    .unwrap();
    let floats = [0.0, -0.0, 1.5, -2.25, f64::NAN, 1e300, -1e300, 0.5];
    // Short texts, whose sort codes hold them whole, in some worlds; in the others
    // also long ones that share their first 20 bytes, texts with a NUL, which the
    // codes cannot tell apart from others, and texts about eight bytes long that
    // differ before, at and past their eighth byte (a top k reads a text's first eight
    // bytes as one number).
    let short: &[&str] = &["", "a", "b", "ab", "ü", "Z", "a b", "zz"];
    let long: &[&str] = &[
        "",
        "a",
        "a\0",
        "a\0b",
        "ü",
        "twenty bytes shared: one",
        "twenty bytes shared: two",
        "twenty bytes shared: two and more",
        "eight by",
        "eight b\0",
        "eight bytes",
        "eighty",
        "eight bz",
        "Eight by",
    ];
    let texts = if below(rng, 2) == 0 { short } else { long };
    let mut spawns: Vec<_> = ["", ", B(?5)", ", Tag", ", B(?5), Tag"]
        .iter()
        .map(|others| {
            conn.prepare(&format!("SPAWN A(?1, ?2, ?3, ?4, NULL){others}"))
                .unwrap()
        })
        .collect();
    for _ in 0..n {
        let i = Value::Int(below(rng, 40) as i64 - 20);
        let f = Value::Float(floats[below(rng, 8) as usize]);
        let t = Value::Text(texts[below(rng, texts.len() as u64) as usize].to_string());
        let b = Value::Bool(below(rng, 2) == 0);
        let j = Value::Int(below(rng, 5) as i64);
        let table = below(rng, 4) as usize;
        let mut values = vec![i, f, t, b, j];
        // Only the statements that spawn B take its field.
        values.truncate(if table % 2 == 1 { 5 } else { 4 });
        spawns[table].execute(values).unwrap();
    }
    drop(spawns);
    // Ids in some rows' ENTITY field (each its own: ties come from NULLs only).
    conn.execute("UPDATE A SET e = id WHERE A.i % 3 = 0", ()).unwrap();
    conn.execute("COMMIT", ()).unwrap();
    conn
}

/// A sort key: its text, and how the model reads its column.
struct SortKey {
    expr: &'static str,
    desc: bool,
    /// `None`: the default (NULLs last ascending, first descending).
    nulls_first: Option<bool>,
}

/// Keys over A; NULLs come from NULLIF and from A.e where it holds no id.
const KEYS: [&str; 13] = [
    "A.i",
    "NULLIF(A.i, 0)",
    "A.f",
    "NULLIF(A.f, 1.5)",
    "A.t",
    "NULLIF(A.t, 'a')",
    "A.b",
    "NULLIF(A.b, false)",
    "A.e",
    "id",
    "A.i % 7",
    "-A.f",
    "length(A.t)",
];

/// Two values of one column, neither NULL, in ORDER BY's order: numbers by value
/// (floats by IEEE's total order, -0.0 as 0.0), texts by their bytes, false before
/// true, ids by their bits.
fn value_order(a: &Value, b: &Value) -> Ordering {
    let canonical = |x: f64| {
        if x == 0.0 {
            0.0
        } else if x.is_nan() {
            f64::NAN
        } else {
            x
        }
    };
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        (Value::Float(x), Value::Float(y)) => canonical(*x).total_cmp(&canonical(*y)),
        (Value::Text(x), Value::Text(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Entity(x), Value::Entity(y)) => x.to_bits().cmp(&y.to_bits()),
        (x, y) => panic!("a column of two types: {x:?} and {y:?}"),
    }
}

fn model_order(keys: &[SortKey], a: &[Value], b: &[Value]) -> Ordering {
    // Column 0 is the row's id; the keys follow.
    for (k, key) in keys.iter().enumerate() {
        let (x, y) = (&a[k + 1], &b[k + 1]);
        let nulls_first = key.nulls_first.unwrap_or(key.desc);
        let ord = match (x == &Value::Null, y == &Value::Null) {
            (true, true) => Ordering::Equal,
            (true, false) if nulls_first => Ordering::Less,
            (true, false) => Ordering::Greater,
            (false, true) if nulls_first => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) if key.desc => value_order(x, y).reverse(),
            (false, false) => value_order(x, y),
        };
        if ord != Ordering::Equal {
            return ord;
        }
    }
    Ordering::Equal
}

fn rows(conn: &Connection, sql: &str) -> Vec<Vec<Value>> {
    let mut stmt = conn.prepare(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    stmt.query(())
        .unwrap()
        .map(|row| row.unwrap_or_else(|e| panic!("{sql}: {e}")).values().to_vec())
        .collect()
}

/// Debug text, which tells -0.0 from 0.0 and shows NaN.
fn show(rows: &[Vec<Value>]) -> Vec<String> {
    rows.iter().map(|r| format!("{r:?}")).collect()
}

fn run_seed(seed: u64) {
    let mut rng = Rng(seed);
    // Every fifth world past a sort's pieces of 16,384 rows; the others from a few rows
    // to a few thousand (past a top's trims of a thousand).
    let n = match seed % 5 {
        0 => 20_000 + below(&mut rng, 5_000),
        _ => below(&mut rng, 4_000),
    };
    let conn = world(&mut rng, n);
    for _ in 0..12 {
        // A LEFT JOIN of B (a join's rows, B.j NULL where B is absent) or A alone.
        let joined = below(&mut rng, 3) == 0;
        let keys: Vec<SortKey> = (0..1 + below(&mut rng, 3))
            .map(|_| SortKey {
                expr: match below(&mut rng, KEYS.len() as u64 + 1) as usize {
                    k if k < KEYS.len() => KEYS[k],
                    _ if joined => "B.j",
                    _ => "A.i",
                },
                desc: below(&mut rng, 2) == 0,
                nulls_first: match below(&mut rng, 3) {
                    0 => None,
                    1 => Some(true),
                    _ => Some(false),
                },
            })
            .collect();
        let list: Vec<&str> = keys.iter().map(|k| k.expr).collect();
        let filter = match below(&mut rng, 3) {
            0 => " WHERE A.i > -5",
            _ => "",
        };
        let join = if joined { " LEFT JOIN B" } else { "" };
        let from = format!("SELECT id, {} FROM A{join}{filter}", list.join(", "));
        let order: Vec<String> = keys
            .iter()
            .enumerate()
            .map(|(k, key)| {
                let nulls = match key.nulls_first {
                    None => "",
                    Some(true) => " NULLS FIRST",
                    Some(false) => " NULLS LAST",
                };
                format!("{}{}{nulls}", k + 2, if key.desc { " DESC" } else { "" })
            })
            .collect();
        let limit = match below(&mut rng, 6) {
            0 => None,
            1 => Some(0),
            2 => Some(1 + below(&mut rng, 5)),
            3 => Some(100),
            4 => Some(n * 3 / 10),
            _ => Some(n),
        };
        let offset = match below(&mut rng, 3) {
            0 => below(&mut rng, 2_000),
            _ => 0,
        };
        let mut sql = format!("{from} ORDER BY {}", order.join(", "));
        if let Some(l) = limit {
            sql += &format!(" LIMIT {l}");
        }
        if offset > 0 {
            sql += &format!(" OFFSET {offset}");
        }
        for threads in [1, 2] {
            conn.execute(&format!("PRAGMA threads = {threads}"), ()).unwrap();
            let mut want = rows(&conn, &from);
            want.sort_by(|a, b| model_order(&keys, a, b));
            let start = (offset as usize).min(want.len());
            let end = limit.map_or(want.len(), |l| (start + l as usize).min(want.len()));
            let want = show(&want[start..end]);
            let got = show(&rows(&conn, &sql));
            if got != want {
                let at = got.iter().zip(&want).position(|(g, w)| g != w);
                panic!(
                    "seed {seed}, {threads} threads, {n} rows: {sql}\n{} rows, {} wanted; first difference at {at:?}: {:?} vs {:?}",
                    got.len(),
                    want.len(),
                    at.map(|i| &got[i]),
                    at.map(|i| &want[i]),
                );
            }
        }
    }
}

#[test]
fn order_by_gives_the_stable_sort_of_the_rows_as_they_come() {
    for seed in common::seeds("ECSQL_SORT_SEEDS", 40) {
        run_seed(seed);
    }
}
