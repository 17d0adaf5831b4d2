//! Compound UPDATEs (`x = x op e`, the shape of a game's systems) write the values their
//! arithmetic gives, bit for bit, however they are written: in place over large tables,
//! as new columns over whole small ones, in packs of tiny ones, or staged. Each UPDATE's
//! new values are first computed by a SELECT of the same expression (which takes none of
//! those ways), and the world after it must hold exactly those; a transaction rolled back
//! and a tick undone by a failing system must leave every old value.

use ecsql::{Connection, Database};

use crate::common::result_rows;

/// Archetype tables (tags make them different tables) of `A (x TY, v TY)`, with values
/// of far apart magnitudes: of one row to one morsel's when not `large`, else up to
/// several morsels' too (an UPDATE then writes its tables in more than one way).
fn world(ty: &str, large: bool) -> Connection {
    let conn = Database::open_in_memory().connect();
    conn.execute_batch(&format!(
        "CREATE COMPONENT A (x {ty}, v {ty});
         CREATE TAG T1; CREATE TAG T2; CREATE TAG T3;"
    ))
    .unwrap();
    let values = format!(
        "A(x => CAST(i * 0.37 - 50 + (i % 7) * 1000000.0 AS {ty}), v => CAST((i % 13) * 1.7 - 3.1 AS {ty}))"
    );
    let tables = [
        ("", 1),
        (", T1", 7),
        (", T2", 300),
        (", T3", 2048),
        (", T1, T2", 2049),
        (", T2, T3", 6000),
    ];
    for (tags, rows) in &tables[..if large { 6 } else { 4 }] {
        conn.execute(&format!("SPAWN {values}{tags} FROM range({rows}) AS r(i)"), ())
            .unwrap();
    }
    conn
}

/// Each row's value of `expr`, in entity order, as bits (a REAL is widened exactly).
fn bits(conn: &Connection, expr: &str, param: f64) -> Vec<String> {
    let mut statement = conn
        .prepare(&format!("SELECT {expr} FROM A ORDER BY id"))
        .unwrap();
    let rows = statement.query([param]);
    let rows = match rows {
        Ok(rows) => rows,
        // An expression that reads no parameter is given none.
        Err(_) => conn
            .prepare(&format!("SELECT {expr} FROM A ORDER BY id"))
            .unwrap()
            .query(())
            .unwrap(),
    };
    rows.map(|r| format!("{:016x}", r.unwrap().get::<_, f64>(0).unwrap().to_bits()))
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
    conn.execute(&sql, [param])
        .or_else(|_| conn.execute(&sql, ()))
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}

#[test]
fn compound_updates_write_their_arithmetic_bit_for_bit() {
    for (ty, large) in [("REAL", false), ("FLOAT", false), ("REAL", true), ("FLOAT", true)] {
        let conn = world(ty, large);
        for (k, expr) in EXPRESSIONS.iter().enumerate() {
            // The parameter takes the field's type, as `delta_time()` does in a system.
            let expr = expr.replace("?1", &format!("CAST(?1 AS {ty})"));
            let param = 0.25 + k as f64 / 3.0;
            let want = bits(&conn, &expr, param);
            update(&conn, &expr, param);
            let what = format!("{ty} (large: {large}): UPDATE A SET x = {expr}");
            assert_same(&bits(&conn, "A.x", 0.0), &want, &what);
        }
    }
}

#[test]
fn compound_updates_rolled_back_or_undone_leave_every_old_value() {
    for (ty, large) in [("REAL", false), ("FLOAT", false), ("REAL", true), ("FLOAT", true)] {
        let conn = world(ty, large);
        let before = bits(&conn, "A.x", 0.0);
        for expr in EXPRESSIONS {
            let expr = expr.replace("?1", &format!("CAST(?1 AS {ty})"));
            conn.execute("BEGIN", ()).unwrap();
            update(&conn, &expr, 1.5);
            assert_ne!(
                bits(&conn, "A.x", 0.0),
                before,
                "{ty} (large: {large}): {expr} wrote nothing"
            );
            conn.execute("ROLLBACK", ()).unwrap();
            assert_same(
                &bits(&conn, "A.x", 0.0),
                &before,
                &format!("{ty} (large: {large}): {expr} rolled back"),
            );
        }
        // A tick whose second system fails is undone whole, the first one's writes too.
        conn.execute_batch(&format!(
            "CREATE SYSTEM integrate AS UPDATE A SET x = A.x - A.v * CAST(delta_time() AS {ty});
             CREATE SYSTEM fails AFTER integrate AS UPDATE A SET v = 1 / 0;"
        ))
        .unwrap();
        let failed = conn.tick(1);
        assert!(failed.is_err(), "{ty} (large: {large}): the tick should fail");
        let what = format!("{ty} (large: {large}): the failed tick was undone");
        assert_same(&bits(&conn, "A.x", 0.0), &before, &what);
        // Without the failing system, the tick writes what the expression gives.
        conn.execute("DROP SYSTEM fails", ()).unwrap();
        let rows = result_rows(&conn, "SELECT count(*) FROM A", |r| {
            r.get::<_, i64>(0).unwrap().to_string()
        });
        assert_eq!(rows.unwrap(), [if large { "10405" } else { "2356" }]);
        let want = bits(&conn, &format!("A.x - A.v * CAST(?1 AS {ty})"), 1.0 / 60.0);
        assert_ne!(want, before);
        conn.tick(1).unwrap();
        assert_same(
            &bits(&conn, "A.x", 0.0),
            &want,
            &format!("{ty} (large: {large}): the tick's values"),
        );
    }
}
