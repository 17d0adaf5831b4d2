//! Every statement is atomic: one that fails half way — on its third row, its second
//! table, its last id — leaves the database exactly as before, down to the next id the
//! entity index would hand out.

use ecsql::{Connection, Database};

/// Everything a user can observe: the catalog, the archetypes, every entity and value, and
/// the id the next spawn would get (probed inside a rolled-back transaction).
fn fingerprint(conn: &Connection) -> String {
    let mut out = String::new();
    let mut dump = |sql: &str| {
        conn.run_script(sql, |r| {
            let r = r.expect("fingerprint query");
            for row in r.rows.expect("rows") {
                out.push_str(&format!("{:?}\n", row.expect("row").values()));
            }
            true
        })
        .expect("fingerprint script");
    };
    dump("SHOW COMPONENTS; SHOW ARCHETYPES; SELECT id, archetype FROM entities ORDER BY id;");
    for name in conn.component_names().unwrap() {
        dump(&format!("SELECT * FROM \"{name}\" ORDER BY id"));
    }
    conn.execute("BEGIN", ()).unwrap();
    let next: i64 = conn.query_row("SPAWN Probe", (), |r| r.get(0)).unwrap();
    conn.execute("ROLLBACK", ()).unwrap();
    out.push_str(&format!("next id {next}\n"));
    out
}

#[test]
fn failing_statements_change_nothing() {
    let db = Database::open_in_memory();
    let conn = db.connect();
    conn.execute_batch(
        "CREATE COMPONENT Position (x REAL, y REAL);
         CREATE COMPONENT Velocity (x REAL, y REAL);
         CREATE COMPONENT Health (hp INT);
         CREATE COMPONENT Link (to ENTITY);
         CREATE TAG Probe;
         CREATE TAG Frozen;
         SPAWN Position(x => i, y => 0), Velocity(1, 1), Health(i) FROM range(5) AS r(i);
         SPAWN Position(9, 9), Health(3), Frozen;
         SPAWN Health(0);
         DESPAWN 2;",
    )
    .unwrap();
    let before = fingerprint(&conn);
    let failing = [
        // SPAWN: the third source row divides by zero; a NULL in the fifth row.
        "SPAWN Health(10 / (i - 2)) FROM range(5) AS r(i)",
        "SPAWN Position(CASE WHEN i = 4 THEN NULL ELSE i END, 0) FROM range(6) AS r(i)",
        "SPAWN Health(9223372036854775807 + i) FROM range(3) AS r(i)",
        // INSERT: the last id is stale, or repeated, or already attached.
        "INSERT INTO Link (id, to) VALUES (1, 1), (3, 1), (2, 1)",
        "INSERT INTO Link (id, to) VALUES (1, 1), (3, 1), (1, 3)",
        "INSERT INTO Velocity (id, x, y) VALUES (7, 0, 0), (1, 0, 0)",
        "INSERT INTO Health (id, hp) VALUES (1, 1), (6, 1) ON CONFLICT DO UPDATE SET hp = 1 / (Health.hp - 3)",
        "INSERT INTO Link (id, to) SELECT id, id FROM Health WHERE 10 / (Health.hp - 4) > 0",
        // UPDATE: fails in the second archetype table, or on a later row of the first.
        "UPDATE Health SET hp = Health.hp * 2 + 10 / (Health.hp - 3)",
        "UPDATE Health SET hp = Health.hp + 9223372036854775805",
        "UPDATE Position SET x = Position.x + 1, y = 1 / (Position.x - 9) FROM Health",
        "UPDATE Position SET x = 'a'",
        // DESPAWN: the last id is stale.
        "DESPAWN 1, 3, 2",
        "DESPAWN 1, 4294967297",
        "DESPAWN FROM Health WHERE 1 / (Health.hp - 3) > 0",
        // DELETE with a failing filter.
        "DELETE FROM Velocity WHERE 1 / (Velocity.x - 1) = 0",
        // Catalog statements.
        "CREATE COMPONENT Position (z INT)",
        "CREATE COMPONENT Broken (a INT DEFAULT 'x')",
        "DROP COMPONENT Nothing",
        // Transactions misused.
        "COMMIT",
        "ROLLBACK",
    ];
    for sql in failing {
        let result = conn.execute(sql, ());
        assert!(result.is_err(), "expected {sql} to fail, got {result:?}");
        assert_eq!(
            fingerprint(&conn),
            before,
            "{sql} changed the database before failing"
        );
    }
}

#[test]
fn a_failing_statement_inside_a_transaction_keeps_the_transaction_going() {
    let db = Database::open_in_memory();
    let conn = db.connect();
    conn.execute_batch("CREATE COMPONENT C (v INT); CREATE TAG Probe; SPAWN C(1); SPAWN C(2);")
        .unwrap();
    conn.execute("BEGIN", ()).unwrap();
    conn.execute("UPDATE C SET v = C.v + 10", ()).unwrap();
    let inside = {
        let mut s = String::new();
        conn.run_script("SELECT * FROM C ORDER BY id", |r| {
            for row in r.unwrap().rows.unwrap() {
                s.push_str(&format!("{:?}", row.unwrap().values()));
            }
            true
        })
        .unwrap();
        s
    };
    assert!(conn.execute("UPDATE C SET v = 1 / (C.v - 12)", ()).is_err());
    let mut after = String::new();
    conn.run_script("SELECT * FROM C ORDER BY id", |r| {
        for row in r.unwrap().rows.unwrap() {
            after.push_str(&format!("{:?}", row.unwrap().values()));
        }
        true
    })
    .unwrap();
    assert_eq!(inside, after);
    conn.execute("ROLLBACK", ()).unwrap();
    let v: i64 = conn
        .query_row("SELECT sum(C.v) FROM C", (), |r| r.get(0))
        .unwrap();
    assert_eq!(v, 3);
}

/// UPDATE runs a table in batches of a few thousand rows. One that can fail must not write
/// its early batches before a later one fails; one that cannot fail writes as it goes and
/// must still write every batch.
#[test]
fn updates_spanning_many_batches_fail_whole_or_write_every_row() {
    let db = Database::open_in_memory();
    let conn = db.connect();
    conn.execute_batch(
        "CREATE COMPONENT Position (x REAL, y REAL);
         CREATE COMPONENT Health (hp INT);
         CREATE TAG Probe;
         SPAWN Position(x => i, y => 0), Health(i) FROM range(10000) AS r(i);",
    )
    .unwrap();
    let before = fingerprint(&conn);
    let failing = [
        // Integer arithmetic may fail: it fails on the very last row.
        "UPDATE Health SET hp = Health.hp + 10 / (Health.hp - 9999)",
        // A NULL reaches a REAL field on the last row only.
        "UPDATE Position SET x = CASE WHEN Position.x < 9999 THEN Position.x + 1 END",
        // The WHERE clause fails on the last row.
        "UPDATE Position SET x = Position.x + 1 WHERE 1 / (Position.x - 9999) < 5",
    ];
    for sql in failing {
        assert!(conn.execute(sql, ()).is_err(), "expected {sql} to fail");
        assert_eq!(
            fingerprint(&conn),
            before,
            "{sql} changed the database before failing"
        );
    }
    let changed = conn
        .execute(
            "UPDATE Position SET x = Position.x * 2 + 1, y = Position.x WHERE Position.x >= 100",
            (),
        )
        .unwrap();
    assert_eq!(changed, 9900);
    let (sum_x, sum_y): (f64, f64) = conn
        .query_row("SELECT sum(Position.x), sum(Position.y) FROM Position", (), |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    let expected_x: f64 = (0..10000)
        .map(|i| if i >= 100 { 2.0 * i as f64 + 1.0 } else { i as f64 })
        .sum();
    let expected_y: f64 = (100..10000).map(|i| i as f64).sum();
    assert_eq!((sum_x, sum_y), (expected_x, expected_y));
}

/// An UPDATE that could fail but did not, over every row of tables bigger than one
/// batch: its batches are joined into whole columns that replace the tables' own, and a
/// ROLLBACK puts the old columns back, in the big table and in a small one beside it.
#[test]
fn whole_table_updates_over_many_batches_write_every_row_and_roll_back() {
    let db = Database::open_in_memory();
    let conn = db.connect();
    conn.execute_batch(
        "CREATE COMPONENT Position (x REAL, y REAL);
         CREATE TAG Small;
         CREATE TAG Probe;
         SPAWN Position(x => i, y => -i) FROM range(10000) AS r(i);
         SPAWN Position(x => i, y => 1), Small FROM range(3) AS r(i);",
    )
    .unwrap();
    let before = fingerprint(&conn);
    conn.execute("BEGIN", ()).unwrap();
    // FLOAT values narrowed to REAL can overflow it, so the batches are kept until the
    // last one succeeded.
    let changed = conn
        .execute(
            "UPDATE Position SET x = Position.x * delta_time() + Position.y, y = Position.x",
            (),
        )
        .unwrap();
    assert_eq!(changed, 10003);
    let rows: Vec<(f64, f64, bool)> = conn
        .prepare("SELECT Position.x, Position.y, has(Small) FROM Position ORDER BY id")
        .unwrap()
        .query_map((), |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let dt = 1.0 / 60.0;
    let expected: Vec<(f64, f64, bool)> = (0..10000)
        .map(|i| (f64::from(i) * dt - f64::from(i), false, i))
        .chain((0..3).map(|i| (f64::from(i) * dt + 1.0, true, i)))
        .map(|(x, small, i)| (f64::from(x as f32), f64::from(i), small))
        .collect();
    assert_eq!(rows, expected);
    conn.execute("ROLLBACK", ()).unwrap();
    assert_eq!(fingerprint(&conn), before);
}
