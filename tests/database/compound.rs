//! Compound UPDATEs (`x = x op e`, the shape of a game's systems) write the values their
//! arithmetic gives, bit for bit, however they are written: in place over large tables,
//! as new columns over whole tables of one morsel at most, in packs of tiny ones, or
//! staged. Each UPDATE's new values are first computed by a SELECT of the same expression
//! (which takes none of those ways), and the world after it must hold exactly those, its
//! index on the written field must find them, and a field tracked for changes must be
//! marked changed in exactly the rows whose values differ. Two fields written at once
//! each get their own values; `random()` draws anew in every table; a transaction rolled
//! back and a tick undone by a failing system leave every old value.

use ecsql::{Connection, Database};

use crate::common::result_rows;

/// The tables of a test's world (`world`).
#[derive(Clone, Copy, Debug)]
enum Shape {
    /// Of one row to one morsel's.
    Few,
    /// Up to several morsels' too: an UPDATE then writes its tables in more than one way.
    Large,
    /// `Few`'s and 100 more of 1 to 20 rows: enough tiny tables that an UPDATE computes
    /// them in packs.
    Many,
}

/// Each shape, with each type.
const WORLDS: [(&str, Shape); 6] = [
    ("REAL", Shape::Few),
    ("FLOAT", Shape::Few),
    ("REAL", Shape::Large),
    ("FLOAT", Shape::Large),
    ("REAL", Shape::Many),
    ("FLOAT", Shape::Many),
];

/// Archetype tables (tags make them different tables) of `A (x TY, y TY, v TY)`, with
/// values of far apart magnitudes, as `shape` says, and one table emptied. `x` is indexed.
fn world(ty: &str, shape: Shape) -> Connection {
    let conn = Database::open_in_memory().connect();
    conn.execute_batch(&format!(
        "CREATE COMPONENT A (x {ty}, y {ty}, v {ty});
         CREATE TAG T0; CREATE TAG T1; CREATE TAG T2; CREATE TAG T3;
         CREATE INDEX by_x ON A (x);"
    ))
    .unwrap();
    let values = format!(
        "A(x => CAST(i * 0.37 - 50 + (i % 7) * 1000000.0 AS {ty}), y => CAST(i % 3 - 1 AS {ty}), \
           v => CAST((i % 13) * 1.7 - 3.1 AS {ty}))"
    );
    let tables = [
        (", T0", 400),
        ("", 1),
        (", T1", 7),
        (", T2", 300),
        (", T3", 2048),
        (", T1, T2", 2049),
        (", T2, T3", 6000),
    ];
    let made = match shape {
        Shape::Few | Shape::Many => 5,
        Shape::Large => 7,
    };
    for (tags, rows) in &tables[..made] {
        conn.execute(&format!("SPAWN {values}{tags} FROM range({rows}) AS r(i)"), ())
            .unwrap();
    }
    if let Shape::Many = shape {
        for k in 0..100 {
            let rows = 1 + (k * 7) % 20;
            conn.execute_batch(&format!(
                "CREATE TAG U{k}; SPAWN {values}, U{k} FROM range({rows}) AS r(i)"
            ))
            .unwrap();
        }
    }
    conn.execute("DESPAWN FROM A WHERE has(T0)", ()).unwrap();
    conn
}

/// Each row's value of `expr`, in entity order, as bits (a REAL is widened exactly);
/// `param` is `?1`, when `expr` reads it.
fn bits(conn: &Connection, expr: &str, param: f64) -> Vec<String> {
    let sql = format!("SELECT {expr} FROM A ORDER BY id");
    let mut statement = conn.prepare(&sql).unwrap();
    let rows = match expr.contains("?1") {
        true => statement.query([param]),
        false => statement.query(()),
    };
    rows.unwrap_or_else(|e| panic!("{sql}: {e}"))
        .map(|r| format!("{:016x}", r.unwrap().get::<_, f64>(0).unwrap().to_bits()))
        .collect()
}

/// Asserts that `got` holds `want`'s values, naming the first row that differs.
#[track_caller]
fn assert_same(got: &[String], want: &[String], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: rows");
    if let Some(row) = (0..got.len()).find(|&i| got[i] != want[i]) {
        panic!("{what}: row {row} holds {}, expected {}", got[row], want[row]);
    }
}

/// The new values of every compound shape, over REAL and FLOAT fields.
const EXPRESSIONS: [&str; 10] = [
    "A.x + A.v",
    "A.x - A.v",
    "A.x * A.v",
    "A.v + A.x",
    "A.v * A.x",
    "A.x + A.v * ?1",
    "A.x - A.v * ?1",
    "A.x * (A.v * ?1)",
    "A.x - ?1 * A.v",
    "A.x + A.v * 0.5",
];

fn update(conn: &Connection, expr: &str, param: f64) {
    let sql = format!("UPDATE A SET x = {expr}");
    let done = match expr.contains("?1") {
        true => conn.execute(&sql, [param]),
        false => conn.execute(&sql, ()),
    };
    done.unwrap_or_else(|e| panic!("{sql}: {e}"));
}

/// How many rows the index on `A.x` finds below zero, and how many `values` (bits of
/// `A.x`, in entity order) are.
fn below_zero(conn: &Connection, values: &[String]) -> (i64, usize) {
    let found = conn
        .query_row("SELECT count(*) FROM A WHERE A.x < 0", (), |r| r.get::<_, i64>(0))
        .unwrap();
    let negative = values
        .iter()
        .filter(|b| f64::from_bits(u64::from_str_radix(b, 16).unwrap()) < 0.0)
        .count();
    (found, negative)
}

/// Asserts that the index on `A.x` (of type `ty`) finds rows by their new values
/// (`values`, bits of `A.x` in entity order): a few rows of every table, the one-row
/// table's among them, each by equality, which the index serves.
#[track_caller]
fn assert_index_finds(conn: &Connection, ty: &str, values: &[String], what: &str) {
    let mut find = conn
        .prepare(&format!("SELECT count(*) FROM A WHERE A.x = CAST(?1 AS {ty})"))
        .unwrap();
    for row in [0, 1, 7, 8, 307, 308, values.len() - 1] {
        let value = &values[row];
        let want = values.iter().filter(|v| *v == value).count() as i64;
        let x = f64::from_bits(u64::from_str_radix(value, 16).unwrap());
        let found = find.query_row([x], |r| r.get::<_, i64>(0)).unwrap();
        assert_eq!(found, want, "{what}: the index on A.x finds row {row} ({x})");
    }
}

#[test]
fn compound_updates_write_their_arithmetic_bit_for_bit() {
    for (ty, shape) in WORLDS {
        let conn = world(ty, shape);
        for (k, expr) in EXPRESSIONS.iter().enumerate() {
            // The parameter takes the field's type, as `delta_time()` does in a system.
            let expr = expr.replace("?1", &format!("CAST(?1 AS {ty})"));
            let param = 0.25 + k as f64 / 3.0;
            let want = bits(&conn, &expr, param);
            update(&conn, &expr, param);
            let what = format!("{ty} ({shape:?}): UPDATE A SET x = {expr}");
            let got = bits(&conn, "A.x", 0.0);
            assert_same(&got, &want, &what);
            let (found, negative) = below_zero(&conn, &got);
            assert_eq!(found as usize, negative, "{what}: the index on A.x");
        }
        // Two fields at once, each its own compound assignment.
        let (want_x, want_y) = (bits(&conn, "A.x - A.v", 0.0), bits(&conn, "A.y * A.v", 0.0));
        conn.execute("UPDATE A SET y = A.y * A.v, x = A.x - A.v", ())
            .unwrap();
        let what = format!("{ty} ({shape:?}): UPDATE A SET y = A.y * A.v, x = A.x - A.v");
        assert_same(&bits(&conn, "A.x", 0.0), &want_x, &what);
        assert_same(&bits(&conn, "A.y", 0.0), &want_y, &what);
        // Two fields, each scaled by a value of its own, the same in every table.
        let ex = format!("A.x - A.v * CAST(2.5 AS {ty})");
        let ey = format!("A.y + CAST(?1 AS {ty}) * A.v");
        let (want_x, want_y) = (bits(&conn, &ex, 0.0), bits(&conn, &ey, 0.75));
        let sql = format!("UPDATE A SET y = {ey}, x = {ex}");
        conn.execute(&sql, [0.75]).unwrap();
        let what = format!("{ty} ({shape:?}): {sql}");
        assert_same(&bits(&conn, "A.x", 0.0), &want_x, &what);
        assert_same(&bits(&conn, "A.y", 0.0), &want_y, &what);
    }
}

/// `x = x op ?1` with a parameter of the field's type (the same value for every row, so
/// each table is written whole by it), and `x = x ± v * ?1` (the parameter a scale of a
/// field): one prepared UPDATE run again and again writes each run's own value, and a
/// constant operand its constant.
#[test]
fn a_compound_update_by_a_parameter_writes_each_runs_value() {
    fn each_run<P: ecsql::ToParam + Copy>(ty: &str, shape: Shape, params: [P; 3]) {
        let conn = world(ty, shape);
        // Beside those, `e` a field times the parameter (a scale computed once a run).
        for e in ["* ?1", "+ ?1", "- ?1", "+ A.v * ?1", "- ?1 * A.v"] {
            let mut update = conn.prepare(&format!("UPDATE A SET x = A.x {e}")).unwrap();
            let mut select = conn
                .prepare(&format!("SELECT A.x {e} FROM A ORDER BY id"))
                .unwrap();
            for param in params {
                let want: Vec<String> = select
                    .query([param])
                    .unwrap()
                    .map(|r| format!("{:016x}", r.unwrap().get::<_, f64>(0).unwrap().to_bits()))
                    .collect();
                update.execute([param]).unwrap();
                let what = format!("{ty} ({shape:?}): UPDATE A SET x = A.x {e}");
                let got = bits(&conn, "A.x", 0.0);
                assert_same(&got, &want, &what);
                assert_index_finds(&conn, ty, &got, &what);
            }
        }
        let want = bits(&conn, "A.x - 0.75", 0.0);
        update(&conn, "A.x - 0.75", 0.0);
        assert_same(
            &bits(&conn, "A.x", 0.0),
            &want,
            &format!("{ty}: UPDATE A SET x = A.x - 0.75"),
        );
    }
    for shape in [Shape::Few, Shape::Large, Shape::Many] {
        each_run("REAL", shape, [0.5f32, -3.0, 1.25]);
        each_run("FLOAT", shape, [0.5f64, -3.0, 1.25]);
    }
    // A parameter of another type than the field's binds the statement again: a FLOAT
    // for a REAL field is computed as FLOAT and written as the REAL it casts to.
    let conn = world("REAL", Shape::Few);
    let mut update = conn.prepare("UPDATE A SET x = A.x * ?1").unwrap();
    update.execute([0.5f32]).unwrap();
    let want = bits(&conn, "CAST(A.x * ?1 AS REAL)", 1.1);
    update.execute([1.1f64]).unwrap();
    assert_same(
        &bits(&conn, "A.x", 0.0),
        &want,
        "REAL: UPDATE A SET x = A.x * ?1 given a FLOAT",
    );
}

#[test]
fn compound_updates_of_fields_tracked_for_changes_mark_what_they_changed() {
    // `x + y` differs by row; `x + 1/32` is the same for every row (each table is written
    // whole), and leaves REAL values past a million as they were (it is less than half
    // their last place).
    for (ty, shape, expr) in [
        ("REAL", Shape::Few, "A.x + A.y"),
        ("FLOAT", Shape::Large, "A.x + A.y"),
        ("REAL", Shape::Many, "A.x + A.y"),
        ("REAL", Shape::Few, "A.x + CAST(0.03125 AS REAL)"),
        ("FLOAT", Shape::Large, "A.x + CAST(0.03125 AS FLOAT)"),
        ("FLOAT", Shape::Many, "A.x + CAST(0.03125 AS FLOAT)"),
    ] {
        let conn = world(ty, shape);
        // A reader of changes turns A's tracking on; it has seen everything so far.
        let mut changed = conn.prepare("SELECT count(*) FROM A WHERE changed(A)").unwrap();
        changed.query_row((), |r| r.get::<_, i64>(0)).unwrap();
        assert_eq!(changed.query_row((), |r| r.get::<_, i64>(0)).unwrap(), 0);
        // `y` is -1, 0 or 1: `x = x + y` changes two rows of three.
        let want = bits(&conn, expr, 0.0);
        let unchanged = conn
            .query_row(&format!("SELECT count(*) FROM A WHERE {expr} = A.x"), (), |r| {
                r.get::<_, i64>(0)
            })
            .unwrap();
        assert!(
            unchanged > 0 || expr.contains("FLOAT)"),
            "{ty}: {expr} changes every row"
        );
        update(&conn, expr, 0.0);
        assert_same(
            &bits(&conn, "A.x", 0.0),
            &want,
            &format!("{ty}: tracked x = {expr}"),
        );
        let rows = want.len() as i64;
        let marked = changed.query_row((), |r| r.get::<_, i64>(0)).unwrap();
        assert_eq!(
            marked,
            rows - unchanged,
            "{ty} ({shape:?}): rows marked changed by x = {expr}"
        );
    }
}

#[test]
fn a_compound_update_draws_random_values_for_every_table() {
    let conn = world("FLOAT", Shape::Few);
    conn.execute("UPDATE A SET x = 0.0", ()).unwrap();
    conn.execute("UPDATE A SET x = A.x + random()", ()).unwrap();
    let (rows, distinct) = conn
        .query_row("SELECT count(*), count(DISTINCT A.x) FROM A", (), |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))
        })
        .unwrap();
    assert_eq!(distinct, rows, "every row draws its own value");
}

#[test]
fn compound_updates_rolled_back_or_undone_leave_every_old_value() {
    for (ty, shape) in WORLDS {
        let conn = world(ty, shape);
        let before = bits(&conn, "A.x", 0.0);
        // Beside those, two the same for every row, which write each table whole in place.
        for expr in EXPRESSIONS.iter().chain(&["A.x * ?1", "A.x - CAST(0.75 AS TY)"]) {
            let expr = expr.replace("?1", &format!("CAST(?1 AS {ty})")).replace("TY", ty);
            conn.execute("BEGIN", ()).unwrap();
            update(&conn, &expr, 1.5);
            assert_ne!(
                bits(&conn, "A.x", 0.0),
                before,
                "{ty} ({shape:?}): {expr} wrote nothing"
            );
            conn.execute("ROLLBACK", ()).unwrap();
            assert_same(
                &bits(&conn, "A.x", 0.0),
                &before,
                &format!("{ty} ({shape:?}): {expr} rolled back"),
            );
        }
        // A tick whose second system fails is undone whole, the first one's writes too.
        conn.execute_batch(&format!(
            "CREATE SYSTEM integrate AS UPDATE A SET x = A.x - A.v * CAST(delta_time() AS {ty});
             CREATE SYSTEM fails AFTER integrate AS UPDATE A SET v = 1 / 0;"
        ))
        .unwrap();
        let failed = conn.tick(1);
        assert!(failed.is_err(), "{ty} ({shape:?}): the tick should fail");
        let what = format!("{ty} ({shape:?}): the failed tick was undone");
        assert_same(&bits(&conn, "A.x", 0.0), &before, &what);
        // Without the failing system, the tick writes what the expression gives.
        conn.execute("DROP SYSTEM fails", ()).unwrap();
        let rows = result_rows(&conn, "SELECT count(*) FROM A", |r| {
            r.get::<_, i64>(0).unwrap().to_string()
        });
        let want = match shape {
            Shape::Few => "2356",
            Shape::Large => "10405",
            Shape::Many => "3406",
        };
        assert_eq!(rows.unwrap(), [want]);
        let want = bits(&conn, &format!("A.x - A.v * CAST(?1 AS {ty})"), 1.0 / 60.0);
        assert_ne!(want, before);
        conn.tick(1).unwrap();
        assert_same(
            &bits(&conn, "A.x", 0.0),
            &want,
            &format!("{ty} ({shape:?}): the tick's values"),
        );
    }
}
