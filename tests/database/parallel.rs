//! Parallel execution gives what one thread gives: every statement here runs with
//! `PRAGMA threads = 1` and again with 2, 3 and 4 threads over worlds large enough to be
//! split, and the rows (in order, floats bit for bit), the errors and, for writes, the
//! whole world after them must be the same. EXPLAIN says which statements split
//! ("Split among N threads", "split among N threads"), and each test checks that those it
//! expects to split do, so that a split never taken cannot pass for a correct one.

use ecsql::{Connection, Database};

use crate::common;

/// Rows of several archetype tables, enough for four threads' shares: FLOAT values of
/// far apart magnitudes (so that adding them in another order gives other bits), INT,
/// REAL, TEXT and ENTITY values (some NULL), and a tag on some.
fn world(rows: i64) -> Database {
    let db = Database::open_in_memory();
    let conn = db.connect();
    // Parts of 32,768 rows or more, so that worlds small enough for a test split.
    conn.execute("PRAGMA min_parallel_rows = 32768", ()).unwrap();
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
        // Values spread over every block, so that zone maps leave whole tables to
        // the conditions on B.g below, and they split.
        (", B((i % 97) * 0.5, NULL), T", 2),
    ] {
        let n = rows * share / 8;
        conn.execute(&format!("SPAWN {a}{others} FROM range({n}) AS r(i)"), ())
            .unwrap();
    }
    // Some entity references, for count() of a column with NULLs.
    conn.execute("UPDATE B SET e = id WHERE B.g > 0.5", ()).unwrap();
    db
}

/// Every row as its values' Debug text (which tells -0.0 from 0.0), or the error's text.
fn rows(conn: &Connection, sql: &str) -> Result<Vec<String>, String> {
    common::result_rows(conn, sql, |row| format!("{:?}", row.values()))
}

fn set_threads(conn: &Connection, n: usize) {
    conn.execute(&format!("PRAGMA threads = {n}"), ()).unwrap();
}

/// The machine's cores: a statement splits only where there are two or more.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// Whether EXPLAIN says `sql` is split among threads now.
fn splits(conn: &Connection, sql: &str) -> bool {
    // The statement's own lines: a subquery's plan follows under a line of its own
    // (`scalar subquery (runs once, …)`, `EXISTS (correlated: …)`).
    let subquery = |l: &String| {
        ["subquery (", "EXISTS ("]
            .iter()
            .any(|k| l.contains(&format!("{k}runs once")) || l.contains(&format!("{k}correlated")))
    };
    rows(conn, &format!("EXPLAIN {sql}"))
        .unwrap()
        .iter()
        .take_while(|l| !subquery(l))
        .any(|l| l.to_lowercase().contains("split among"))
}

/// Queries, and whether they split among threads.
const QUERIES: &[(&str, bool)] = &[
    ("SELECT count(*) FROM A WHERE A.f > 100", true),
    ("SELECT id, A.f, A.i, A.t FROM A WHERE A.i % 3 = 1", true),
    ("SELECT id FROM A, B WHERE B.g < 0.5 AND A.r > 10", true),
    (
        "SELECT sum(A.f), avg(A.f), sum(A.r), avg(A.i), min(A.f), max(A.t), sum(A.i), count(B.e), count(*) FROM A, B",
        true,
    ),
    (
        "SELECT sum(A.f * 3 - B.g), avg(A.f / 7) FROM A, B WHERE B.g > 0.1",
        true,
    ),
    ("SELECT sum(A.f) FROM A WHERE abs(A.f) > 1e20", true),
    // Ties of -0.0 and 0.0 (equal in order): the first row's stays.
    (
        "SELECT min(0.0 * A.f), max(0.0 * A.f), min(-0.0 * A.f), max(-0.0 * A.f) FROM A",
        true,
    ),
    (
        "SELECT A.i % 10 AS k, count(*), sum(A.i), min(A.f), max(A.f), count(DISTINCT A.t) FROM A GROUP BY k",
        true,
    ),
    ("SELECT DISTINCT A.i % 1000 FROM A", true),
    (
        "SELECT count(DISTINCT A.t), min(A.t), sum(DISTINCT A.i) FROM A WHERE A.i > 0",
        true,
    ),
    (
        "SELECT id, A.f FROM A WHERE has(T) ORDER BY A.f DESC, id LIMIT 50",
        true,
    ),
    ("SELECT A.f * 2 + 1, B.e FROM A, B WHERE B.g < 0.25", true),
    ("SELECT id FROM A, B WHERE B.e IS NOT NULL", true),
    // An optional component (NULL where absent) and a sparse one.
    ("SELECT id, B.g, B.e FROM A LEFT JOIN B WHERE A.i > 400", true),
    (
        "SELECT count(*), sum(S.s) FROM A LEFT JOIN S WHERE A.f > 0.5",
        true,
    ),
    // Starts from the sparse table's 40,000 rows: too few to split.
    ("SELECT count(*), sum(S.s) FROM A, S", false),
    ("SELECT id, S.s FROM A LEFT JOIN S WHERE A.i < -450", true),
    // Errors: the same message, whichever thread meets its row.
    ("SELECT A.i * 4611686018427387904 FROM A", true),
    ("SELECT sum(A.i * 4611686018427387) FROM A", true),
    ("SELECT id FROM A WHERE A.i / (A.i % 7) > 3", true),
    // Two errors in two later tables: the first in row order is the one reported.
    (
        "SELECT CASE WHEN has(T) THEN 1 / (A.i - A.i) WHEN has(B) THEN A.i * 4611686018427387904 ELSE 0 END FROM A",
        true,
    ),
    // On one thread: float sums per group, random(), a subquery, and a bare count(*)
    // (it adds up batch lengths: less work than waking a thread).
    ("SELECT A.t, sum(A.f), avg(A.r) FROM A GROUP BY A.t", false),
    ("SELECT count(*) FROM A", false),
    ("SELECT count(*), count(*) FROM A, B", false),
    ("SELECT count(*) FROM A WHERE A.f > random() - 1e13", false),
    (
        "SELECT count(*) FROM A WHERE A.i > (SELECT avg(A.i) FROM A)",
        false,
    ),
];

#[test]
fn queries_give_what_one_thread_gives() {
    let db = world(200_000);
    let conn = db.connect();
    conn.execute_batch(
        "CREATE COMPONENT S (s INT) WITH (storage = sparse);
         INSERT INTO S (id, s) SELECT id, A.i FROM A WHERE A.i % 5 = 0;",
    )
    .unwrap();
    for &(sql, split) in QUERIES {
        set_threads(&conn, 1);
        assert!(!splits(&conn, sql), "{sql} splits on one thread");
        let one = rows(&conn, sql);
        for threads in [2, 3, 4] {
            set_threads(&conn, threads);
            assert_eq!(
                splits(&conn, sql),
                split && cores() >= 2,
                "{sql}: split on {threads} threads"
            );
            assert_eq!(rows(&conn, sql), one, "{sql} on {threads} threads");
        }
    }
}

#[test]
fn a_memory_limit_is_met_as_on_one_thread() {
    // Groups every thread meets are kept once (one thread holds about 1.1 MB of them;
    // kept per thread they would pass 1.5 MB), and the rows every thread keeps count
    // together (one thread's 200,000 ids pass 2.5 MB, each thread's half does not).
    let db = world(200_000);
    let conn = db.connect();
    let groups = "SELECT A.i % 997 AS k, count(*), count(DISTINCT A.t) FROM A GROUP BY k";
    let ids = "SELECT id FROM A";
    for (sql, limit, fits) in [(groups, "1.5MB", true), (ids, "2.5MB", false), (ids, "5MB", true)] {
        conn.execute(&format!("PRAGMA memory_limit = '{limit}'"), ())
            .unwrap();
        for threads in [1, 2, 4] {
            set_threads(&conn, threads);
            assert_eq!(splits(&conn, sql), threads > 1 && cores() >= 2);
            let got = rows(&conn, sql).map(|r| r.len());
            assert_eq!(
                got.is_ok(),
                fits,
                "{sql} under {limit} on {threads} threads: {got:?}"
            );
        }
    }
}

#[test]
fn a_float_sum_adds_in_the_same_order_on_any_number_of_threads() {
    // Values whose sum depends on the order they are added in: large ones of both signs
    // among many small ones, which lose bits differently in every grouping.
    let db = Database::open_in_memory();
    let conn = db.connect();
    conn.execute("CREATE COMPONENT V (x FLOAT)", ()).unwrap();
    conn.execute("PRAGMA min_parallel_rows = 32768", ()).unwrap();
    conn.execute(
        "SPAWN V(CASE WHEN i % 1000 = 0 THEN 1e17 * (i % 7 - 3) ELSE (i * 7919 % 10007) * 0.00137 END) \
         FROM range(300000) AS r(i)",
        (),
    )
    .unwrap();
    let sql = "SELECT sum(V.x), avg(V.x) FROM V";
    set_threads(&conn, 1);
    let one = rows(&conn, sql).unwrap();
    for threads in [2, 3, 4] {
        set_threads(&conn, threads);
        assert_eq!(splits(&conn, sql), cores() >= 2);
        assert_eq!(rows(&conn, sql).unwrap(), one, "on {threads} threads");
    }
}

/// Every value of the world, entity by entity, for comparing two worlds.
fn dump(conn: &Connection) -> Vec<String> {
    let mut all = rows(conn, "SELECT id, A.f, A.i, A.r, A.t FROM A").unwrap();
    all.extend(rows(conn, "SELECT id, B.g, B.e, has(T) FROM B").unwrap());
    all
}

/// UPDATEs, and whether they write in place on several threads.
const UPDATES: &[(&str, bool)] = &[
    ("UPDATE A SET f = A.f * 0.5 + 1, r = A.r - 2", true),
    ("UPDATE A SET f = A.f + B.g, r = A.r * 2 FROM B", true),
    // || can fail (a text past its limit): staged, on one thread.
    ("UPDATE A SET t = A.t || '!' WHERE A.f > 100", false),
    ("UPDATE B SET e = id WHERE B.g < 0.3", true),
    ("UPDATE B SET g = B.g * -1.0, e = NULL WHERE has(T)", true),
    ("UPDATE A SET f = -A.f WHERE A.f < 0.5 AND NOT has(T)", true),
    ("UPDATE A SET f = -A.f WHERE A.i % 4 = 1 AND NOT has(T)", false),
    ("UPDATE A SET r = 0.0 WHERE abs(A.r) > 1e30", true),
    // A call that cannot fail on its arguments' types (abs of a float, least): split.
    (
        "UPDATE A SET f = least(abs(A.f - 1000), 50.0) WHERE A.r > 10",
        true,
    ),
    // delta_time() meets a REAL field in REAL, as a constant does: it cannot fail.
    ("UPDATE A SET r = A.r + A.r * delta_time() WHERE A.r > 10", true),
    // Can fail (INT arithmetic): staged, on one thread; the same either way.
    ("UPDATE A SET i = A.i * 3 WHERE A.i > 0", false),
    ("UPDATE A SET i = A.i * 4611686018427387904", false),
    // abs of an INT can overflow.
    ("UPDATE A SET i = abs(A.i)", false),
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
    let probe = "SELECT id FROM A WHERE A.f > 50 AND A.f < 5000";
    for (n, &(sql, split)) in UPDATES.iter().enumerate() {
        set_threads(&b, 2 + n % 3);
        assert_eq!(splits(&b, sql), split && cores() >= 2, "{sql}");
        assert!(!splits(&a, sql), "{sql} splits on one thread");
        let (x, y) = (a.execute(sql, ()), b.execute(sql, ()));
        assert_eq!(
            x.map_err(|e| e.to_string()),
            y.map_err(|e| e.to_string()),
            "{sql}"
        );
        assert!(dump(&a) == dump(&b), "{sql}: the worlds differ");
        assert_eq!(rows(&a, probe), rows(&b, probe), "{sql}: the index differs");
    }
    // A transaction's UPDATE is undone whole, a filtered one too; one committed stays.
    let before = dump(&a);
    for sql in [
        "UPDATE A SET f = A.f + 1, r = 0",
        "UPDATE A SET f = 7.5, t = 'x' WHERE A.f < 1000",
    ] {
        assert_eq!(splits(&b, sql), cores() >= 2, "{sql}");
        for conn in [&a, &b] {
            conn.execute_batch(&format!("BEGIN; {sql}; ROLLBACK;")).unwrap();
        }
        assert!(dump(&a) == before && dump(&b) == before, "{sql}: not undone");
        assert_eq!(rows(&a, probe), rows(&b, probe), "{sql}: the index differs");
    }
    for sql in ["UPDATE A SET f = 7.5, t = 'x' WHERE A.f < 1000"] {
        for conn in [&a, &b] {
            conn.execute_batch(&format!("BEGIN; {sql}; COMMIT;")).unwrap();
        }
        assert!(dump(&a) == dump(&b), "{sql}: committed worlds differ");
    }
}

#[test]
fn a_reader_of_changes_sees_what_one_thread_writes() {
    let one = world(200_000);
    let many = world(200_000);
    let (a, b) = (one.connect(), many.connect());
    set_threads(&a, 1);
    set_threads(&b, 2);
    // B's changes are tracked: an UPDATE of B stays on one thread (it marks only rows
    // whose values differ); one of A is split and marks nothing of B.
    let count = "SELECT count(*) FROM B WHERE changed(B.g)";
    let (mut ra, mut rb) = (a.prepare(count).unwrap(), b.prepare(count).unwrap());
    let seen = |r: &mut ecsql::Statement<'_>| -> i64 { r.query_row((), |row| row.get(0)).unwrap() };
    assert_eq!(seen(&mut ra), seen(&mut rb));
    for (sql, split) in [
        ("UPDATE A SET f = A.f * 2 WHERE A.i > 0", true),
        ("UPDATE B SET g = B.g WHERE B.g > 0.5", false),
        ("UPDATE B SET g = B.g + 1 WHERE B.g > 0.5", false),
        ("UPDATE A SET r = 1", true),
    ] {
        assert_eq!(splits(&b, sql), split && cores() >= 2, "{sql}");
        a.execute(sql, ()).unwrap();
        b.execute(sql, ()).unwrap();
        assert_eq!(seen(&mut ra), seen(&mut rb), "{sql}");
    }
    assert!(dump(&a) == dump(&b));
}
