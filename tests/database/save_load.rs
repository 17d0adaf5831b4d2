//! SAVE TO / LOAD FROM: a database written to a snapshot file and read back is the same
//! database (the world's digest, its indexes, its clock, the ids it hands out next); a
//! file that is missing, damaged, cut short or not a snapshot is refused with its name and
//! changes nothing; LOAD inside a transaction is refused.

use ecsql::{Connection, Database};

use crate::common::Folder;

fn busy() -> (Database, Connection) {
    let db = Database::open_in_memory();
    let conn = db.connect();
    conn.execute_batch(
        "CREATE COMPONENT Position (x REAL, y REAL);
         CREATE COMPONENT Name (v TEXT, f FLOAT, b BOOL, parent ENTITY);
         CREATE COMPONENT Health (hp INT) WITH (storage = sparse);
         CREATE TAG Frozen;
         CREATE EVENT Hit (who ENTITY, dmg INT);
         CREATE SPATIAL INDEX ON Position (x, y);
         CREATE INDEX by_hp ON Health (hp);
         CREATE INDEX by_v ON Name USING filter (v);
         CREATE INDEX near ON Position (floor(x / 10), y * 2.0) WHERE x >= 5 AND 'a''b' <> 'it''s';
         SPAWN Position(x => i, y => -0.0), Health(i) FROM range(50) AS r(i);
         SPAWN Name('naïve', CAST('NaN' AS FLOAT), TRUE, 3), Frozen;
         SPAWN Name('it''s', CAST('-inf' AS FLOAT), FALSE, 7);
         DESPAWN 3, 5, 40;
         SPAWN Position(1, 1);
         INSERT INTO Hit (who, dmg) VALUES (2, 5), (NULL, 1);
         DROP COMPONENT Frozen;
         TICK 7 WITH dt = 0.25;",
    )
    .unwrap();
    (db, conn)
}

/// The lines of `EXPLAIN` of `query`'s text (`query` begins with EXPLAIN).
fn plan_lines(conn: &Connection, query: &str) -> Vec<String> {
    let mut s = conn.prepare(query).unwrap();
    s.query(())
        .unwrap()
        .map(|r| r.unwrap().get::<_, String>(0).unwrap())
        .collect()
}

fn digest(conn: &Connection) -> String {
    conn.with_world(|w| w.digest()).unwrap()
}

/// A file `name` in a test's own folder (removed with the folder when the test ends).
fn path(folder: &Folder, name: &str) -> String {
    folder.file(name).to_string_lossy().into_owned()
}

#[test]
fn a_saved_database_loads_back_the_same() {
    let folder = Folder::new("save");
    let (_db, conn) = busy();
    let file = path(&folder, "slot1.ecsql");
    let before = digest(&conn);
    conn.execute(&format!("SAVE TO '{file}'"), ()).unwrap();
    conn.execute_batch("SPAWN Position(9, 9); DESPAWN 1; DROP INDEX by_hp; TICK;")
        .unwrap();
    assert_ne!(digest(&conn), before);
    conn.execute(&format!("LOAD FROM '{file}'"), ()).unwrap();
    assert_eq!(digest(&conn), before);
    // Another database, loading the same file, is the same database too.
    let other = Database::open_in_memory().connect();
    other.execute(&format!("LOAD FROM '{file}'"), ()).unwrap();
    assert_eq!(digest(&other), before);
    // The clock, the indexes (rebuilt and used), the next ids.
    let clock: (i64, f64) = other
        .query_row("SELECT tick(), delta_time()", (), |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap();
    assert_eq!(clock, (7, 0.25));
    let plan = plan_lines(&other, "EXPLAIN SELECT id FROM Health WHERE Health.hp = 4");
    assert!(plan.iter().any(|l| l.contains("index by_hp")), "{plan:?}");
    // The filter index comes back a filter index, and skips what it did.
    let plan = plan_lines(&other, "EXPLAIN SELECT id FROM Name WHERE Name.v = 'nobody'");
    assert!(
        plan.iter()
            .any(|l| l.contains("index by_v (filter) on Name.v = 'nobody' skip 1 of 1 tables")),
        "{plan:?}"
    );
    // The function index comes back with its expressions and its WHERE, and serves.
    let plan = plan_lines(
        &other,
        "EXPLAIN SELECT id FROM Position WHERE floor(Position.x / 10) = 2 AND Position.x >= 5 AND 'a''b' <> 'it''s'",
    );
    assert!(
        plan.iter()
            .any(|l| l.contains("index near (function) serves floor(x / 10) = 2.0")),
        "{plan:?}"
    );
    let near: i64 = other
        .query_row(
            "SELECT count(*) FROM Position WHERE floor(Position.x / 10) = 2 AND Position.x >= 5 AND 'a''b' <> 'it''s'",
            (),
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(near, 10);
    let hp: i64 = other
        .query_row("SELECT Health.hp FROM Health WHERE Health.hp = 6", (), |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(hp, 6);
    // The same ids next: the despawned ones' slots, with their generations, in order.
    let next = |c: &Connection| {
        c.with_world_mut(|w| {
            (0..4)
                .map(|_| w.spawn_values(vec![]).unwrap())
                .collect::<Vec<_>>()
        })
        .unwrap()
    };
    assert_eq!(next(&conn), next(&other));
    // The event rows kept came back.
    let hits: i64 = other
        .query_row("SELECT count(*) FROM Hit", (), |r| r.get(0))
        .unwrap();
    assert_eq!(hits, 2);
}

#[test]
fn a_bad_file_is_refused_and_changes_nothing() {
    let folder = Folder::new("save");
    let (_db, conn) = busy();
    let good = path(&folder, "good.ecsql");
    conn.execute(&format!("SAVE TO '{good}'"), ()).unwrap();
    let bytes = std::fs::read(&good).unwrap();
    let before = digest(&conn);
    let mut cases: Vec<(String, Vec<u8>, &str)> = vec![
        (
            path(&folder, "short.ecsql"),
            bytes[..bytes.len() / 2].to_vec(),
            "cut short",
        ),
        (
            path(&folder, "text.ecsql"),
            b"CREATE COMPONENT A (x INT);".to_vec(),
            "not an ecsql snapshot",
        ),
    ];
    let mut flipped = bytes.clone();
    flipped[bytes.len() / 3] ^= 1;
    cases.push((path(&folder, "flipped.ecsql"), flipped, "fails its checksum"));
    for (file, content, says) in cases {
        std::fs::write(&file, content).unwrap();
        let err = conn
            .execute(&format!("LOAD FROM '{file}'"), ())
            .unwrap_err()
            .to_string();
        assert!(err.contains(&file) && err.contains(says), "{err}");
        assert_eq!(digest(&conn), before, "{file} changed the database");
    }
    let missing = path(&folder, "missing.ecsql");
    let err = conn
        .execute(&format!("LOAD FROM '{missing}'"), ())
        .unwrap_err()
        .to_string();
    assert!(err.contains(&missing), "{err}");
    let folder = std::env::temp_dir().to_string_lossy().into_owned();
    assert!(
        conn.execute(&format!("SAVE TO '{folder}'"), ()).is_err(),
        "a folder is no file"
    );
    assert_eq!(digest(&conn), before);
}

#[test]
fn load_waits_for_the_transaction_to_end() {
    let folder = Folder::new("save");
    let (_db, conn) = busy();
    let file = path(&folder, "tx.ecsql");
    conn.execute(&format!("SAVE TO '{file}'"), ()).unwrap();
    conn.execute("BEGIN", ()).unwrap();
    let err = conn
        .execute(&format!("LOAD FROM '{file}'"), ())
        .unwrap_err()
        .to_string();
    assert!(err.contains("cannot run inside a transaction"), "{err}");
    conn.execute("ROLLBACK", ()).unwrap();
    conn.execute(&format!("LOAD FROM '{file}'"), ()).unwrap();
}

#[test]
fn readers_start_over_in_a_loaded_world() {
    let folder = Folder::new("save");
    let (_db, conn) = busy();
    let file = path(&folder, "readers.ecsql");
    conn.execute_batch(
        "CREATE COMPONENT Seen (n INT);
         SPAWN Seen(0);
         CREATE SYSTEM count_hits AS UPDATE Seen SET n = Seen.n + (SELECT count(*) FROM Hit);",
    )
    .unwrap();
    conn.execute(&format!("SAVE TO '{file}'"), ()).unwrap();
    let mut hits = conn.prepare("SELECT count(*) FROM Hit").unwrap();
    let mut moved = conn
        .prepare("SELECT count(*) FROM Position WHERE changed(Position)")
        .unwrap();
    let count = |s: &mut ecsql::Statement<'_>| -> i64 {
        s.query(()).unwrap().next().unwrap().unwrap().get(0).unwrap()
    };
    // Readers move past many rows and writes in the world that is replaced.
    for _ in 0..10 {
        conn.execute_batch(
            "INSERT INTO Hit (who, dmg) VALUES (1, 1); UPDATE Position SET x = Position.x + 1; TICK;",
        )
        .unwrap();
        count(&mut hits);
        count(&mut moved);
    }
    conn.execute(&format!("LOAD FROM '{file}'"), ()).unwrap();
    conn.execute_batch("DELETE FROM Seen; SPAWN Seen(0); INSERT INTO Hit (who, dmg) VALUES (1, 1), (2, 2);")
        .unwrap();
    // First runs in the loaded world: every row kept, every entity present.
    assert_eq!(count(&mut hits), 4, "the two saved rows and the two new ones");
    assert_eq!(count(&mut moved), 48);
    conn.execute("TICK", ()).unwrap();
    let seen: i64 = conn
        .query_row("SELECT sum(Seen.n) FROM Seen", (), |r| r.get(0))
        .unwrap();
    assert_eq!(seen, 4, "the system read every row of the loaded world");
}

#[test]
fn save_waits_for_the_transaction_to_end() {
    let folder = Folder::new("save");
    let (_db, conn) = busy();
    let file = path(&folder, "save-tx.ecsql");
    conn.execute("BEGIN", ()).unwrap();
    let err = conn
        .execute(&format!("SAVE TO '{file}'"), ())
        .unwrap_err()
        .to_string();
    assert!(err.contains("cannot run inside a transaction"), "{err}");
    conn.execute("ROLLBACK", ()).unwrap();
}

fn systems(conn: &Connection) -> Vec<String> {
    let mut s = conn.prepare("SHOW SYSTEMS").unwrap();
    s.query(())
        .unwrap()
        .map(|r| {
            let r = r.unwrap();
            // name, phase, order, enabled, every (not runs or times)
            (0..5)
                .map(|i| r.values()[i].to_string())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

#[test]
fn phases_and_sql_systems_are_saved_and_rust_systems_stay() {
    let folder = Folder::new("save");
    let (_db, conn) = busy();
    let file = path(&folder, "systems.ecsql");
    conn.execute_batch(
        "CREATE PHASE physics AFTER update;
         CREATE SYSTEM fall IN PHASE physics EVERY 2 TICKS AS UPDATE Position SET y = Position.y - 1;
         CREATE SYSTEM tag AFTER fall IN PHASE physics AS BEGIN SELECT 1; SELECT 2; END;
         ALTER SYSTEM tag DISABLE;",
    )
    .unwrap();
    conn.create_system("rusty", "IN PHASE post_update", |_, _| Ok(()))
        .unwrap();
    let saved = systems(&conn);
    conn.execute(&format!("SAVE TO '{file}'"), ()).unwrap();
    conn.execute_batch(
        "DROP SYSTEM tag; DROP SYSTEM fall; DROP PHASE physics; CREATE SYSTEM other AS SELECT 3;",
    )
    .unwrap();
    conn.execute(&format!("LOAD FROM '{file}'"), ()).unwrap();
    assert_eq!(
        systems(&conn),
        saved,
        "the saved SQL systems, and the Rust one kept"
    );
    conn.execute("TICK 2", ()).unwrap();
    let y: f64 = conn
        .query_row("SELECT Position.y FROM Position WHERE Position.x = 1", (), |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(y, -1.0, "fall ran on tick 2 only");

    // A Rust system in a phase the file does not have: LOAD refuses and changes nothing.
    let other = Database::open_in_memory().connect();
    other
        .execute_batch("CREATE PHASE late AFTER post_update;")
        .unwrap();
    other
        .create_system("late_rust", "IN PHASE late", |_, _| Ok(()))
        .unwrap();
    let before = systems(&other);
    let err = other
        .execute(&format!("LOAD FROM '{file}'"), ())
        .unwrap_err()
        .to_string();
    assert!(err.contains("it has no phase late"), "{err}");
    assert_eq!(systems(&other), before);
}

#[test]
fn systems_read_on_from_where_they_stood() {
    let folder = Folder::new("save");
    // Two systems read one event type at different cadences; the run that was saved and
    // loaded must end as the one that went on.
    let script = "CREATE EVENT Ping (n INT);
         CREATE COMPONENT Count (fast INT, slow INT);
         SPAWN Count(0, 0);
         CREATE SYSTEM ping IN PHASE pre_update AS INSERT INTO Ping (n) VALUES (1);
         CREATE SYSTEM fast AS UPDATE Count SET fast = Count.fast + (SELECT count(*) FROM Ping);
         CREATE SYSTEM slow EVERY 4 TICKS AS UPDATE Count SET slow = Count.slow + (SELECT count(*) FROM Ping);
         TICK 6;";
    let counts = |c: &Connection| -> (i64, i64) {
        c.query_row("SELECT Count.fast, Count.slow FROM Count", (), |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap()
    };
    let went_on = Database::open_in_memory().connect();
    went_on.execute_batch(script).unwrap();
    went_on.execute("TICK 2", ()).unwrap();
    let saved = Database::open_in_memory().connect();
    saved.execute_batch(script).unwrap();
    let file = path(&folder, "cursors.ecsql");
    saved.execute(&format!("SAVE TO '{file}'"), ()).unwrap();
    let loaded = Database::open_in_memory().connect();
    loaded.execute(&format!("LOAD FROM '{file}'"), ()).unwrap();
    loaded.execute("TICK 2", ()).unwrap();
    assert_eq!(counts(&loaded), counts(&went_on));
    assert_eq!(counts(&went_on), (8, 8));
}

#[test]
fn the_file_may_be_a_parameter() {
    let folder = Folder::new("save");
    let (_db, conn) = busy();
    let before = digest(&conn);
    let entities = conn.with_world(|w| w.len()).unwrap();
    let file = path(&folder, "it's a slot.ecsql");
    assert_eq!(conn.execute("SAVE TO ?1", (file.as_str(),)).unwrap(), entities);
    conn.execute("DESPAWN 1", ()).unwrap();
    let mut load = conn.prepare("LOAD FROM $1").unwrap();
    assert_eq!(load.execute((file.as_str(),)).unwrap(), entities);
    assert_eq!(digest(&conn), before);
    let err = conn.execute("SAVE TO ?1", (7,)).unwrap_err().to_string();
    assert!(err.contains("names the file: a non-empty TEXT, not 7"), "{err}");
}
