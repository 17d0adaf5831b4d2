//! Differential test of the functions of numbers against SQLite's math functions
//! (rusqlite's bundled SQLite, built with them: `.cargo/config.toml`). Seeded random
//! columns of FLOAT and INT values (zeros of both signs, ±1, values near the edges of each
//! function's domain, huge and tiny ones, infinities, random ones) are read by each
//! function, over the whole column (ecsql's typed loops) and row by row, in both engines,
//! and each row's answers compared.
//!
//! The documented differences are the rules of the comparison: where a value is outside a
//! function's domain ecsql refuses the statement where SQLite gives NULL (or, for
//! `power(0, -1)` and `log(1, x)`, an infinity); SQLite gives NULL for a NaN, ecsql NaN;
//! floats agree within a relative 1e-12 (both call the C library's functions). `round`
//! to digits takes a number as it is written in ecsql (`round(1.005, 2)` is 1.01, as in
//! PostgreSQL) and from its binary value in SQLite (1.0): there the two may differ by one
//! in the last digit kept. SQLite counts negative digits as 0, so none here are negative.
//! SQLite's `log(b, x)` is NULL for a base below 1, ecsql's (and PostgreSQL's) the
//! logarithm (`log(0.5, 8)` is -3).
//!
//! `ECSQL_MATH_SEEDS=N` runs N seeds (100 in `cargo test`, under 5 s in a debug build;
//! 3,000 passed), `ECSQL_SEED=N` replays one.

use ecsql::Database;

use crate::common;
use crate::common::cells;

use cells::Cell;
use common::Rng;

/// The values a FLOAT column draws from, besides random ones. (Not -0.0: SQLite stores it
/// as 0, so `atan2(-0.0, -1)` would differ by what was stored; tests/slt has it.)
const EDGES: &[f64] = &[
    0.0,
    1.0,
    -1.0,
    0.5,
    -0.5,
    2.0,
    -2.0,
    1.0000000000000002,
    -1.0000000000000002,
    0.9999999999999999,
    std::f64::consts::PI,
    -std::f64::consts::FRAC_PI_2,
    10.0,
    100.0,
    1e-300,
    -1e-300,
    5e-324,
    1e300,
    -1e300,
    709.0,
    710.0,
    -745.0,
    0.285,
    2.675,
    1.005,
    -2.5,
    f64::INFINITY,
    f64::NEG_INFINITY,
];

/// Each expression reads `V.a`, `V.b` (FLOAT) or `V.i`, `V.j` (INT), written the same in
/// both dialects.
const EXPRESSIONS: &[&str] = &[
    "sin(V.a)",
    "cos(V.a)",
    "tan(V.a)",
    "asin(V.a)",
    "acos(V.a)",
    "atan(V.a)",
    "sinh(V.a)",
    "cosh(V.a)",
    "tanh(V.a)",
    "exp(V.a)",
    "ln(V.a)",
    "log(V.a)",
    "log10(V.a)",
    "log2(V.a)",
    "sqrt(V.a)",
    "degrees(V.a)",
    "radians(V.a)",
    "sign(V.a)",
    "floor(V.a)",
    "ceil(V.a)",
    "ceiling(V.a / 16)",
    "trunc(V.a)",
    "round(V.a)",
    "round(V.a, 2)",
    "round(V.a, V.i * V.i)",
    "atan2(V.a, V.b)",
    "power(V.a, V.b)",
    "power(V.a, V.i)",
    "log(V.a, V.b)",
    "mod(V.a, V.b)",
    "sin(V.i)",
    "exp(V.i)",
    "ln(V.i)",
    "sqrt(V.i)",
    "sign(V.i)",
    "floor(V.i)",
    "ceil(V.i)",
    "mod(V.i, V.j)",
    "power(V.i, V.j)",
    "atan2(V.i, V.j)",
    "degrees(V.i) + radians(V.j) * pi()",
];

/// The rows of `sql` in ecsql, or its error.
fn ecsql_rows(conn: &ecsql::Connection, sql: &str) -> Result<Vec<Vec<Cell>>, String> {
    let mut stmt = conn.prepare(sql).map_err(|e| e.to_string())?;
    let rows = stmt.query(()).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for row in rows {
        let row = row.map_err(|e| e.to_string())?;
        out.push(row.values().iter().map(Cell::from_ecsql).collect());
    }
    Ok(out)
}

/// As a float, for comparing (an INT result is compared by value).
fn number(c: &Cell) -> Option<f64> {
    match c {
        Cell::Int(i) => Some(*i as f64),
        Cell::Float(x) | Cell::Real(x) => Some(*x),
        _ => None,
    }
}

/// Whether ecsql's answer is SQLite's; `unit`: the last digit kept by a `round` to
/// digits, which may differ by one.
fn same(mine: &Cell, theirs: &Cell, unit: Option<f64>) -> bool {
    match (number(mine), number(theirs)) {
        // SQLite gives NULL for a NaN.
        (Some(x), None) => x.is_nan() && *theirs == Cell::Null,
        (None, None) => mine == theirs,
        (Some(x), Some(y)) => {
            let close = (x - y).abs() <= 1e-12 * x.abs().max(y.abs());
            let last_digit = unit.is_some_and(|u| (x - y).abs() <= u * (1.0 + 1e-9));
            x == y || (x.is_finite() && y.is_finite() && (close || last_digit))
        }
        (None, Some(_)) => false,
    }
}

/// Whether SQLite answers NULL where ecsql answers a number, as documented, for a row.
fn null_in_sqlite(expr: &str, (a, _, _, _): (f64, f64, i64, i64)) -> bool {
    expr == "log(V.a, V.b)" && a > 0.0 && a < 1.0
}

/// The last digit a `round(…, digits)` keeps, for a row's `i` (SQLite rounds to 30 digits
/// at most).
fn round_unit(expr: &str, i: i64) -> Option<f64> {
    match expr {
        "round(V.a, 2)" => Some(0.01),
        // SQLite keeps no more than 30 digits.
        "round(V.a, V.i * V.i)" => Some(10f64.powi((i * i).min(30) as i32).recip()),
        _ => None,
    }
}

/// Whether SQLite's answer for a row ecsql refuses is the documented one: NULL, or the C
/// library's where it has one (an infinity for `power(0, -1)` and `log(1, x)`; 0 for a
/// fractional negative power of -inf, which PostgreSQL refuses as ecsql does).
fn refused_in_sqlite(theirs: &Cell, expr: &str, (a, ..): (f64, f64, i64, i64)) -> bool {
    match theirs {
        Cell::Null => true,
        Cell::Float(x) if x.is_infinite() => true,
        Cell::Float(x) => *x == 0.0 && expr.starts_with("power") && a == f64::NEG_INFINITY,
        _ => false,
    }
}

fn run_seed(seed: u64) {
    let mut rng = Rng(seed);
    let rows = 40;
    let mut values = Vec::new();
    for _ in 0..rows {
        let float = |rng: &mut Rng| match rng.next() % 3 {
            0 => EDGES[(rng.next() % EDGES.len() as u64) as usize],
            1 => (rng.next() % 2_000_001) as f64 / 100_000.0 - 10.0,
            _ => f64::from_bits(rng.next() >> 2) * if rng.next().is_multiple_of(2) { 1.0 } else { -1.0 },
        };
        let a = float(&mut rng);
        let b = float(&mut rng);
        let i = (rng.next() % 21) as i64 - 10;
        let j = (rng.next() % 21) as i64 - 10;
        values.push((a, b, i, j));
    }
    let conn = Database::open_in_memory().connect();
    conn.execute("CREATE COMPONENT V (a FLOAT, b FLOAT, i INT, j INT)", ())
        .unwrap();
    let lite = rusqlite::Connection::open_in_memory().unwrap();
    lite.execute(
        "CREATE TABLE V (id INTEGER PRIMARY KEY, a REAL, b REAL, i INTEGER, j INTEGER)",
        [],
    )
    .unwrap();
    for (k, &(a, b, i, j)) in values.iter().enumerate() {
        let id = k as i64 + 1;
        conn.execute(
            "SPAWN AT ?1 V(a => ?2, b => ?3, i => ?4, j => ?5)",
            (ecsql::Value::Int(id), a, b, i, j),
        )
        .unwrap_or_else(|e| panic!("seed {seed}: spawning {a} {b}: {e}"));
        lite.execute(
            "INSERT INTO V VALUES (?1, ?2, ?3, ?4, ?5)",
            rusqlite::params![id, a, b, i, j],
        )
        .unwrap();
    }
    let sin = cells::sqlite_rows(&lite, "SELECT sin(0)");
    assert!(
        sin.is_ok(),
        "seed {seed}: SQLite was built without its math functions ({sin:?}): .cargo/config.toml sets LIBSQLITE3_FLAGS"
    );
    for expr in EXPRESSIONS {
        let whole = format!("SELECT id, {expr} FROM V ORDER BY id");
        let theirs = cells::sqlite_rows(&lite, &whole).unwrap();
        match ecsql_rows(&conn, &whole) {
            Ok(mine) => {
                assert_eq!(mine.len(), theirs.len(), "seed {seed}: {whole}");
                for ((m, t), &row) in mine.iter().zip(&theirs).zip(&values) {
                    assert!(
                        same(&m[1], &t[1], round_unit(expr, row.2))
                            || (t[1] == Cell::Null && null_in_sqlite(expr, row)),
                        "seed {seed} (ECSQL_SEED={seed}): {whole}, id {:?}: ecsql {:?}, SQLite {:?}; row {:?}",
                        m[0],
                        m[1],
                        t[1],
                        values.get(number(&m[0]).unwrap_or(1.0) as usize - 1)
                    );
                }
            }
            Err(e) => {
                // Some row is outside the domain: row by row, each refused row is one
                // SQLite answers NULL (or infinity) for, and every other row agrees.
                let mut refused = 0;
                for (k, t) in theirs.iter().enumerate() {
                    let one = format!("SELECT {expr} FROM V WHERE id = {}", k + 1);
                    match ecsql_rows(&conn, &one) {
                        Ok(m) => assert!(
                            same(&m[0][0], &t[1], round_unit(expr, values[k].2))
                                || (t[1] == Cell::Null && null_in_sqlite(expr, values[k])),
                            "seed {seed}: {one}: ecsql {:?}, SQLite {:?}; row {:?}",
                            m[0][0],
                            t[1],
                            values[k]
                        ),
                        Err(one_error) => {
                            refused += 1;
                            assert!(
                                refused_in_sqlite(&t[1], expr, values[k]),
                                "seed {seed}: {one}: ecsql refused ({one_error}), SQLite {:?}; row {:?}",
                                t[1],
                                values[k]
                            );
                        }
                    }
                }
                assert!(
                    refused > 0,
                    "seed {seed}: {whole} failed ({e}) but no row alone does"
                );
            }
        }
    }
}

#[test]
fn functions_of_numbers_agree_with_sqlite() {
    if let Some(seed) = std::env::var("ECSQL_SEED").ok().and_then(|s| s.parse().ok()) {
        run_seed(seed);
        return;
    }
    let seeds: u64 = std::env::var("ECSQL_MATH_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100);
    for seed in 0..seeds {
        run_seed(seed);
    }
}
