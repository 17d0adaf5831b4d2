//! Prepared statements are readers of changes: each sees what changed since its own last
//! run (two of them never take each other's changes), a ROLLBACK moves it back with the
//! data, and a statement run from text is no reader: it sees every row present.

use ecsql::{Connection, Database, Entity};

fn setup() -> Connection {
    let conn = Database::open_in_memory().connect();
    conn.execute_batch(
        "CREATE COMPONENT Position (x REAL, y REAL);
         SPAWN Position(x => i, y => 0) FROM range(5) AS r(i);",
    )
    .unwrap();
    conn
}

fn ids(statement: &mut ecsql::Statement<'_>) -> Vec<u64> {
    let rows = statement.query(()).unwrap();
    rows.column::<Option<Entity>>(0)
        .unwrap()
        .iter()
        .flatten()
        .map(|e| e.to_bits())
        .collect()
}

#[test]
fn each_prepared_statement_sees_changes_since_its_own_last_run() {
    let conn = setup();
    let mut a = conn
        .prepare("SELECT id FROM Position WHERE changed(Position) ORDER BY id")
        .unwrap();
    let mut b = conn
        .prepare("SELECT id FROM Position WHERE changed(Position.y) ORDER BY id")
        .unwrap();
    assert_eq!(
        ids(&mut a),
        vec![1, 2, 3, 4, 5],
        "a first run sees every row present"
    );
    assert_eq!(ids(&mut a), Vec::<u64>::new(), "and then nothing new");
    conn.execute("UPDATE Position SET x = 9 WHERE id = 2", ())
        .unwrap();
    conn.execute("UPDATE Position SET y = Position.y WHERE id = 3", ())
        .unwrap();
    assert_eq!(ids(&mut a), vec![2]);
    // b has not run yet: everything; then only what changed after its run.
    assert_eq!(ids(&mut b), vec![1, 2, 3, 4, 5]);
    conn.execute("UPDATE Position SET y = 1 WHERE id = 4", ())
        .unwrap();
    assert_eq!(ids(&mut b), vec![4]);
    assert_eq!(ids(&mut a), vec![4], "a still sees the change b saw");
    // Run from text, the same query is no reader.
    let all: i64 = conn
        .query_row("SELECT count(*) FROM Position WHERE changed(Position)", (), |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(all, 5);
}

#[test]
fn rollback_moves_a_prepared_reader_back() {
    let conn = setup();
    let mut a = conn
        .prepare("SELECT id FROM Position WHERE changed(Position.x) ORDER BY id")
        .unwrap();
    assert_eq!(ids(&mut a).len(), 5);
    conn.execute("UPDATE Position SET x = 1 WHERE id = 1", ())
        .unwrap();
    conn.execute("BEGIN", ()).unwrap();
    conn.execute("UPDATE Position SET x = 100 WHERE id = 5", ())
        .unwrap();
    assert_eq!(ids(&mut a), vec![1, 5], "inside the transaction it read both");
    conn.execute("ROLLBACK", ()).unwrap();
    // The read is taken back with the write: id 1's change is still unseen, id 5's is gone.
    assert_eq!(ids(&mut a), vec![1]);
    assert_eq!(ids(&mut a), Vec::<u64>::new());
}

#[test]
fn added_counts_spawns_and_attaches_once_per_reader() {
    let conn = setup();
    conn.execute("CREATE COMPONENT Tagged (n INT)", ()).unwrap();
    let mut added = conn
        .prepare("SELECT id FROM Tagged WHERE added(Tagged) ORDER BY id")
        .unwrap();
    assert_eq!(ids(&mut added), Vec::<u64>::new());
    conn.execute("INSERT INTO Tagged (id, n) VALUES (2, 0), (4, 0)", ())
        .unwrap();
    conn.execute("SPAWN Tagged(1)", ()).unwrap();
    assert_eq!(ids(&mut added), vec![2, 4, 6]);
    conn.execute("UPDATE Tagged SET n = 5", ()).unwrap();
    assert_eq!(
        ids(&mut added),
        Vec::<u64>::new(),
        "a new value is a change, not an addition"
    );
}

#[test]
fn a_component_dropped_and_declared_again_is_new_to_a_reader() {
    let conn = setup();
    let mut added = conn
        .prepare("SELECT id FROM Position WHERE added(Position) ORDER BY id")
        .unwrap();
    assert_eq!(ids(&mut added).len(), 5);
    conn.execute_batch(
        "DROP COMPONENT Position;
         CREATE COMPONENT Position (x REAL, y REAL);
         SPAWN Position(x => 1, y => 2);",
    )
    .unwrap();
    assert_eq!(ids(&mut added), vec![6]);
    assert_eq!(ids(&mut added), Vec::<u64>::new());
}

#[test]
fn only_readers_turn_tracking_on() {
    let conn = setup();
    let tracked = |conn: &Connection| {
        conn.with_world(|w| w.component_by_name("Position").unwrap().is_tracked())
            .unwrap()
    };
    // Statements run once see every row as changed: they need no marks, and writes to
    // Position stay as cheap as before.
    conn.execute_batch("SELECT id FROM Position WHERE changed(Position)")
        .unwrap();
    let n: i64 = conn
        .query_row("SELECT count(*) FROM Position WHERE changed(Position)", (), |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(n, 5);
    let mut explain = conn
        .prepare("EXPLAIN SELECT id FROM Position WHERE changed(Position)")
        .unwrap();
    explain.query(()).unwrap();
    assert!(!tracked(&conn));
    // A prepared reader does, on its first run.
    let mut reader = conn
        .prepare("SELECT id FROM Position WHERE changed(Position)")
        .unwrap();
    assert_eq!(ids(&mut reader).len(), 5);
    assert!(tracked(&conn));
}

#[test]
fn prepared_statements_read_removals_since_their_own_last_run() {
    let conn = setup();
    let mut a = conn.prepare("SELECT id FROM removed(Position)").unwrap();
    let mut b = conn.prepare("SELECT id FROM removed(Position)").unwrap();
    assert_eq!(
        ids(&mut a),
        Vec::<u64>::new(),
        "nothing was logged before a reader asked"
    );
    conn.execute("DELETE FROM Position WHERE id = 2", ()).unwrap();
    conn.execute("DESPAWN 4", ()).unwrap();
    assert_eq!(ids(&mut a), vec![2, 4]);
    assert_eq!(ids(&mut a), Vec::<u64>::new(), "seen once");
    // b's first run sees every loss still logged, a's reads took nothing from it.
    assert_eq!(ids(&mut b), vec![2, 4]);
    // A rollback takes back the losses and the readers' cursors with them.
    conn.execute("BEGIN", ()).unwrap();
    conn.execute("DESPAWN 1", ()).unwrap();
    assert_eq!(ids(&mut a), vec![1]);
    conn.execute("ROLLBACK", ()).unwrap();
    conn.execute("DESPAWN 3", ()).unwrap();
    assert_eq!(ids(&mut a), vec![3], "the rolled-back loss of 1 is gone");
    assert_eq!(ids(&mut b), vec![3]);
    // Without a system reading the log, it keeps a loss for 64 ticks.
    conn.execute("TICK 63", ()).unwrap();
    let kept = |conn: &Connection| -> i64 {
        conn.query_row("SELECT count(*) FROM removed(Position)", (), |r| r.get(0))
            .unwrap()
    };
    assert_eq!(kept(&conn), 3);
    conn.execute("TICK", ()).unwrap();
    assert_eq!(kept(&conn), 0);
}

#[test]
fn a_system_holds_removals_until_it_has_seen_them() {
    let conn = setup();
    conn.execute_batch(
        "CREATE COMPONENT Gone (who ENTITY);
         CREATE SYSTEM mourn EVERY 100 TICKS AS SPAWN Gone(r.id) FROM removed(Position) AS r;
         TICK 100;
         DESPAWN 5;
         TICK 70;",
    )
    .unwrap();
    // Past the 64 ticks a loss is kept at most: dropped unseen.
    let kept: i64 = conn
        .query_row("SELECT count(*) FROM removed(Position)", (), |r| r.get(0))
        .unwrap();
    assert_eq!(kept, 0);
    conn.execute_batch("DESPAWN 4; TICK 30;").unwrap();
    let seen: Vec<u64> = {
        let mut s = conn.prepare("SELECT Gone.who FROM Gone").unwrap();
        ids(&mut s)
    };
    assert_eq!(seen, vec![4]);
    let kept: i64 = conn
        .query_row("SELECT count(*) FROM removed(Position)", (), |r| r.get(0))
        .unwrap();
    assert_eq!(kept, 0, "seen by every system reading it, the loss is dropped");
}

/// Readers of changes on many connections start the tracking they ask for at once, while
/// another connection writes: each turns tracking on or finds it on (one at a time, under
/// the upgradable lock, never waiting for itself), and each later run sees only rows the
/// writer changed since the reader's run before: never a row twice for one change.
#[test]
fn readers_starting_tracking_together_beside_a_writer_each_see_their_changes() {
    let db = Database::open_in_memory();
    db.connect()
        .execute_batch(
            "CREATE COMPONENT Position (x REAL, y REAL);
             CREATE COMPONENT Velocity (v REAL);
             SPAWN Position(x => i, y => 0), Velocity(1) FROM range(200) AS r(i);",
        )
        .unwrap();
    let start = std::sync::Barrier::new(9);
    std::thread::scope(|s| {
        for reader in 0..8 {
            let (db, start) = (&db, &start);
            s.spawn(move || {
                // Nothing before the barrier can fail, so no thread leaves the others
                // waiting at it.
                start.wait();
                let conn = db.connect();
                // Half ask about Position, half about Velocity: two trackings started
                // by whoever comes first.
                let component = if reader % 2 == 0 { "Position" } else { "Velocity" };
                let sql = format!("SELECT count(*) FROM {component} WHERE changed({component})");
                let mut changed = conn.prepare(&sql).unwrap();
                let first: i64 = changed.query_row((), |r| r.get(0)).unwrap();
                assert_eq!(first, 200, "a first run sees every row");
                // Each later run sees what changed since its own last one: Velocity is
                // never written; of Position, the writer changes 10 + 9 + … + 1 = 55 rows
                // in all (x < 10 climbs to 10), so no reader sees more, however its runs
                // fall between the writes.
                let mut seen = 0;
                for _ in 0..50 {
                    seen += changed.query_row((), |r| r.get::<_, i64>(0)).unwrap();
                }
                match component {
                    "Velocity" => assert_eq!(seen, 0, "reader {reader} saw changes nobody made"),
                    _ => assert!(seen <= 55, "reader {reader} saw {seen} changes of at most 55"),
                }
            });
        }
        let writer = db.connect();
        start.wait();
        for _ in 0..50 {
            writer
                .execute("UPDATE Position SET x = Position.x + 1 WHERE Position.x < 10", ())
                .unwrap();
        }
    });
    // After every write, a reader that saw them all counts each changed row once.
    let conn = db.connect();
    let mut changed = conn
        .prepare("SELECT count(*) FROM Position WHERE changed(Position)")
        .unwrap();
    assert_eq!(changed.query_row((), |r| r.get::<_, i64>(0)).unwrap(), 200);
    // The first ten rows stopped at x = 10: with the ten from 10 to 19, twenty change.
    conn.execute("UPDATE Position SET y = 1 WHERE Position.x < 20", ())
        .unwrap();
    assert_eq!(changed.query_row((), |r| r.get::<_, i64>(0)).unwrap(), 20);
}
