//! Parallel execution gives what one thread gives: every statement here runs with
//! `PRAGMA threads = 1` and again with 2, 3 and 4 threads over worlds large enough to be
//! split, and the rows (in order, floats bit for bit), the errors and, for writes, the
//! whole world after them must be the same.

use ecsql::{Connection, Database};

/// Rows of several archetype tables, enough for four threads' shares: FLOAT values of
/// far apart magnitudes (so that adding them in another order gives other bits), INT,
/// REAL, TEXT and ENTITY values (some NULL), and a tag on some.
fn world(rows: i64) -> Database {
    let db = Database::open_in_memory();
    let conn = db.connect();
    conn.execute_batch(
        "CREATE COMPONENT A (f FLOAT, i INT, r REAL, t TEXT);
         CREATE COMPONENT B (g FLOAT, e ENTITY);
         CREATE TAG T;",
    )
    .unwrap();
    let a = "A(f => (i * 7919 % 1000003) / 7.0 * CASE i % 3 WHEN 0 THEN 0.000001 WHEN 1 THEN 1.0 ELSE 1000000000.0 END \
             - CASE WHEN i % 5 = 0 THEN 3000000000.0 ELSE 0.0 END, \
             i => i * 37 % 1001 - 500, r => CAST(i % 101 AS REAL) / 3, t => 'n' || (i % 17))";
    for (others, share) in [
        ("", 3),
        (", B(g => (i % 89) / 89.0, e => NULL)", 2),
        (", T", 1),
        (", B(i * 0.5, NULL), T", 2),
    ] {
        let n = rows * share / 8;
        conn.execute(&format!("SPAWN {a}{others} FROM range({n}) AS r(i)"), ())
            .unwrap();
    }
    // Some entity references, for count() of a column with NULLs.
    conn.execute("UPDATE B SET e = id WHERE B.g > 0.5", ()).unwrap();
    db
}

fn rows(conn: &Connection, sql: &str) -> Result<Vec<String>, String> {
    let mut stmt = conn.prepare(sql).map_err(|e| e.to_string())?;
    let rows = stmt.query(()).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for row in rows {
        let row = row.map_err(|e| e.to_string())?;
        out.push(format!("{:?}", row.values()));
    }
    Ok(out)
}

fn set_threads(conn: &Connection, n: usize) {
    conn.execute(&format!("PRAGMA threads = {n}"), ()).unwrap();
}

const QUERIES: &[&str] = &[
    "SELECT count(*) FROM A WHERE A.f > 100",
    "SELECT id, A.f, A.i, A.t FROM A WHERE A.i % 3 = 1",
    "SELECT id FROM A, B WHERE B.g < 0.5 AND A.r > 10",
    "SELECT sum(A.f), avg(A.f), sum(A.r), avg(A.i), min(A.f), max(A.t), sum(A.i), count(B.e), count(*) FROM A, B",
    "SELECT sum(A.f * 3 - B.g), avg(A.f / 7) FROM A, B WHERE has(T)",
    "SELECT sum(A.f) FROM A WHERE A.f > 1e20",
    "SELECT A.i % 10 AS k, count(*), sum(A.i), min(A.f), max(A.f), count(DISTINCT A.t) FROM A GROUP BY k",
    "SELECT A.t, sum(A.f), avg(A.r) FROM A GROUP BY A.t",
    "SELECT DISTINCT A.i % 1000 FROM A",
    "SELECT count(DISTINCT A.t), min(A.t) FROM A WHERE A.i > 0",
    "SELECT id, A.f FROM A WHERE has(T) ORDER BY A.f DESC, id LIMIT 50",
    "SELECT A.f * 2 + 1, B.e FROM A, B WHERE B.g < 0.25",
    "SELECT id FROM A, B WHERE B.e IS NOT NULL",
    // Errors: the same message, whichever thread meets its row.
    "SELECT A.i * 4611686018427387904 FROM A",
    "SELECT sum(A.i * 4611686018427387) FROM A",
    "SELECT id FROM A WHERE A.i / (A.i % 7) > 3",
    // Not split (random(), a subquery): still the same rows.
    "SELECT count(*) FROM A WHERE A.i > (SELECT avg(A.i) FROM A)",
];

#[test]
fn queries_give_what_one_thread_gives() {
    let db = world(200_000);
    let conn = db.connect();
    for sql in QUERIES {
        set_threads(&conn, 1);
        let one = rows(&conn, sql);
        for threads in [2, 3, 4] {
            set_threads(&conn, threads);
            assert_eq!(rows(&conn, sql), one, "{sql} on {threads} threads");
        }
    }
}

#[test]
fn a_float_sum_adds_in_the_same_order_on_any_number_of_threads() {
    // Values whose sum depends on the order they are added in: a large one, then many
    // small ones each lost below its last bit unless they are first added together.
    let db = Database::open_in_memory();
    let conn = db.connect();
    conn.execute("CREATE COMPONENT V (x FLOAT)", ()).unwrap();
    conn.execute(
        "SPAWN V(CASE WHEN i = 0 THEN 1e17 ELSE 3.0 END) FROM range(300000) AS r(i)",
        (),
    )
    .unwrap();
    let sql = "SELECT sum(V.x), avg(V.x) FROM V";
    set_threads(&conn, 1);
    let one = rows(&conn, sql).unwrap();
    for threads in [2, 4] {
        set_threads(&conn, threads);
        assert_eq!(rows(&conn, sql).unwrap(), one, "on {threads} threads");
    }
}

/// Every value of the world, entity by entity, for comparing two worlds.
fn dump(conn: &Connection) -> Vec<String> {
    let mut all = rows(conn, "SELECT id, A.f, A.i, A.r, A.t FROM A").unwrap();
    all.extend(rows(conn, "SELECT id, B.g, B.e, has(T) FROM B").unwrap());
    all
}

const UPDATES: &[&str] = &[
    "UPDATE A SET f = A.f * 0.5 + 1, r = A.r - 2",
    "UPDATE A SET f = A.f + B.g, r = A.r * 2 FROM B",
    "UPDATE A SET t = A.t || '!' WHERE A.f > 100",
    "UPDATE B SET e = id WHERE B.g < 0.3",
    "UPDATE B SET g = B.g * -1.0, e = NULL WHERE has(T)",
    "UPDATE A SET f = -A.f WHERE A.i % 4 = 1 AND NOT has(T)",
    // Can fail (INT arithmetic): staged, on one thread; the same either way.
    "UPDATE A SET i = A.i * 3 WHERE A.i > 0",
    "UPDATE A SET i = A.i * 4611686018427387904",
];

#[test]
fn updates_leave_the_world_one_thread_leaves() {
    // Tables of 112,500, 75,000 (twice) and 37,500 rows: split in two or three, and not.
    let one = world(300_000);
    let many = world(300_000);
    let (a, b) = (one.connect(), many.connect());
    set_threads(&a, 1);
    // An index on a written field is kept right by either.
    for conn in [&a, &b] {
        conn.execute("CREATE INDEX ON A (f)", ()).unwrap();
    }
    for (n, sql) in UPDATES.iter().enumerate() {
        set_threads(&b, 2 + n % 3);
        let (x, y) = (a.execute(sql, ()), b.execute(sql, ()));
        assert_eq!(
            x.map_err(|e| e.to_string()),
            y.map_err(|e| e.to_string()),
            "{sql}"
        );
        assert!(dump(&a) == dump(&b), "{sql}: the worlds differ");
        let probe = "SELECT id FROM A WHERE A.f > 50 AND A.f < 5000";
        assert_eq!(rows(&a, probe), rows(&b, probe), "{sql}: the index differs");
    }
    // A transaction's UPDATE is undone whole.
    for conn in [&a, &b] {
        conn.execute_batch("BEGIN; UPDATE A SET f = A.f + 1, r = 0; ROLLBACK;")
            .unwrap();
    }
    assert!(dump(&a) == dump(&b), "after ROLLBACK the worlds differ");
}

#[test]
fn a_reader_of_changes_sees_what_one_thread_writes() {
    let one = world(160_000);
    let many = world(160_000);
    let (a, b) = (one.connect(), many.connect());
    set_threads(&a, 1);
    set_threads(&b, 2);
    let count = "SELECT count(*) FROM A WHERE changed(A.f)";
    let (mut ra, mut rb) = (a.prepare(count).unwrap(), b.prepare(count).unwrap());
    let seen = |r: &mut ecsql::Statement<'_>| -> i64 { r.query_row((), |row| row.get(0)).unwrap() };
    assert_eq!(seen(&mut ra), seen(&mut rb));
    for sql in [
        "UPDATE A SET f = A.f WHERE A.i > 0",
        "UPDATE A SET f = A.f + 1 WHERE A.i > 100",
        "UPDATE A SET r = 1",
    ] {
        a.execute(sql, ()).unwrap();
        b.execute(sql, ()).unwrap();
        assert_eq!(seen(&mut ra), seen(&mut rb), "{sql}");
    }
    assert!(dump(&a) == dump(&b));
}
