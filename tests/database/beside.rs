//! Connections that do not block each other without cause: two connections updating
//! different components write at the same time (seen in `Database::concurrency`'s
//! counters, not in timings), two updating the same one take turns and lose no update,
//! readers see every statement whole, structural writes in between wait their turn, and
//! a file database's journal replays what they left.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ecsql::{Connection, Database};

const ROWS: i64 = 20_000;

/// A world of `ROWS` entities with Health, Position and Mana (FLOAT fields, whose
/// arithmetic cannot fail, so that their UPDATEs are written in place): entity `n`'s hp
/// and x start at `n - 1` (so that a value written to another entity's row shows), y
/// and mp at 0.
fn world(db: &Database) -> Connection {
    let conn = db.connect();
    conn.execute_batch(&format!(
        "CREATE COMPONENT Health (hp FLOAT);
         CREATE COMPONENT Position (x FLOAT, y FLOAT);
         CREATE COMPONENT Mana (mp FLOAT);
         SPAWN Health(hp => CAST(i AS FLOAT)), Position(x => CAST(i AS FLOAT), y => 0.0), Mana(mp => 0.0)
             FROM range({ROWS}) AS r(i);"
    ))
    .unwrap();
    conn
}

/// Runs each of `statements` on a connection of its own, on a thread of its own, `runs`
/// times, then on until `enough` holds of the database's counters and a quarter of a
/// second passed (at most 20 s in all),
/// with, when `reading`, a reader on a connection of its own reading all the while.
/// Gives how many times each ran.
fn race(
    db: &Database,
    statements: &[&str],
    runs: usize,
    reading: bool,
    enough: impl Fn(&Database) -> bool + Sync,
) -> Vec<usize> {
    let stop = AtomicBool::new(false);
    let deadline = Instant::now() + Duration::from_secs(20);
    std::thread::scope(|s| {
        let threads: Vec<_> = statements
            .iter()
            .map(|sql| {
                let (db, stop) = (db.clone(), &stop);
                s.spawn(move || {
                    let conn = db.connect();
                    conn.set_busy_timeout(Duration::from_secs(60));
                    let mut ran = 0;
                    while ran < runs || !stop.load(Ordering::SeqCst) {
                        conn.execute(sql, ()).unwrap_or_else(|e| panic!("{sql}: {e}"));
                        ran += 1;
                    }
                    ran
                })
            })
            .collect();
        s.spawn(|| {
            let conn = db.connect();
            while reading && !stop.load(Ordering::SeqCst) {
                conn.query_row("SELECT count(*) FROM Health WHERE hp > -1", (), |r| {
                    r.get::<_, f64>(0)
                })
                .unwrap();
            }
        });
        // A quarter of a second at least, so that the threads run together a while.
        let started = Instant::now();
        while !((enough(db) && started.elapsed() > Duration::from_millis(250)) || Instant::now() > deadline) {
            std::thread::sleep(Duration::from_millis(5));
        }
        stop.store(true, Ordering::SeqCst);
        let ran = threads.into_iter().map(|t| t.join().unwrap()).collect();
        eprintln!("{statements:?} ran {ran:?} times: {:?}", db.concurrency());
        ran
    })
}

fn two_cores() -> bool {
    std::thread::available_parallelism().map_or(1, usize::from) >= 2
}

/// How far each entity's `field` moved from where `world` put it, each distance once.
fn moved(conn: &Connection, field: &str) -> Vec<String> {
    column(
        conn,
        &format!("SELECT DISTINCT {field} - (CAST(id AS INT) - 1) FROM Health, Position WHERE id <= {ROWS}"),
    )
}

/// Every value of `sql`'s one column, as text.
fn column(conn: &Connection, sql: &str) -> Vec<String> {
    crate::common::result_rows(conn, sql, |r| format!("{:?}", r.get_value(0).unwrap())).unwrap()
}

#[test]
fn writers_of_different_components_compute_at_the_same_time() {
    let db = Database::open_in_memory();
    let conn = world(&db);
    let ran = race(
        &db,
        &[
            "UPDATE Health SET hp = hp + 1.0",
            "UPDATE Position SET x = x + 1.0, y = y - 1.0",
        ],
        50,
        false,
        |db| !two_cores() || db.concurrency().overlapped >= 5,
    );
    let counts = db.concurrency();
    if two_cores() {
        assert!(
            counts.overlapped >= 5,
            "the two writers never computed at once: {counts:?}"
        );
        assert_eq!(counts.most_at_once, 2, "{counts:?}");
    } else {
        eprintln!("one core: the overlap of two writers is not asserted ({counts:?})");
    }
    // Nothing lost: every run of each wrote every row.
    assert_eq!(moved(&conn, "hp"), [format!("Float({}.0)", ran[0])]);
    assert_eq!(moved(&conn, "x"), [format!("Float({}.0)", ran[1])]);
    assert_eq!(
        column(&conn, "SELECT DISTINCT y FROM Position"),
        [format!("Float(-{}.0)", ran[1])]
    );
}

#[test]
fn writers_of_the_same_field_or_of_what_the_other_reads_take_turns() {
    for statements in [
        [
            "UPDATE Health SET hp = hp + 1.0",
            "UPDATE Health SET hp = hp + 1.0",
        ],
        [
            "UPDATE Health SET hp = hp + 1.0",
            "UPDATE Mana SET mp = mp + Health.hp FROM Health",
        ],
    ] {
        let db = Database::open_in_memory();
        let conn = world(&db);
        // Many tries at once: the test that they never overlap has to mean something.
        let ran = race(&db, &statements, 300, false, |db| db.concurrency().beside >= 500);
        let counts = db.concurrency();
        assert!(
            counts.beside >= 500,
            "{statements:?}: too few writes held only their fields: {counts:?}"
        );
        assert_eq!(
            counts.overlapped, 0,
            "{statements:?}: writes that meet computed at once: {counts:?}"
        );
        assert_eq!(counts.most_at_once, 1, "{statements:?}: {counts:?}");
        if statements[1].contains("Mana") {
            assert_eq!(moved(&conn, "hp"), [format!("Float({}.0)", ran[0])]);
            // Each run of the second read hp whole, as one run of the first left it:
            // mp moved as far as hp, entity by entity, each run.
            let mp = column(
                &conn,
                "SELECT DISTINCT mp - (CAST(id AS INT) - 1) * %d FROM Mana"
                    .replace("%d", &ran[1].to_string())
                    .as_str(),
            );
            assert_eq!(
                mp.len(),
                1,
                "the rows of one UPDATE saw different runs of the other: {mp:?}"
            );
        } else {
            assert_eq!(
                moved(&conn, "hp"),
                [format!("Float({}.0)", ran[0] + ran[1])],
                "an update was lost"
            );
        }
    }
}

#[test]
fn an_update_waits_for_a_reader_of_the_whole_database() {
    // The columnar door reads the whole database: an UPDATE that would hold only its
    // fields writes as any write, after the reader is done, not beside it.
    let db = Database::open_in_memory();
    let conn = world(&db);
    let mut heal = conn.prepare("UPDATE Health SET hp = hp + 1.0").unwrap();
    heal.execute(()).unwrap();
    heal.execute(()).unwrap();
    let before = db.concurrency();
    assert_eq!(
        before.beside, 1,
        "its second run held only its fields: {before:?}"
    );
    let (reading, done) = (AtomicBool::new(false), AtomicBool::new(false));
    std::thread::scope(|s| {
        s.spawn(|| {
            db.connect()
                .with_world(|_| {
                    reading.store(true, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(300));
                    done.store(true, Ordering::SeqCst);
                })
                .unwrap();
        });
        while !reading.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        heal.execute(()).unwrap();
        assert!(
            done.load(Ordering::SeqCst),
            "the UPDATE wrote while the whole database was being read"
        );
    });
    assert_eq!(db.concurrency().beside, before.beside, "{:?}", db.concurrency());
    assert_eq!(moved(&conn, "hp"), ["Float(3.0)"]);
}

#[test]
fn structural_writes_between_writes_beside_each_other_wait_their_turn() {
    let db = Database::open_in_memory();
    let conn = world(&db);
    // Detaching Mana from some entities fills their rows with the table's last ones;
    // attaching it again puts them at the end: rows move all the time.
    let ran = race(
        &db,
        &[
            "UPDATE Health SET hp = hp + 1.0",
            "UPDATE Position SET x = x + 1.0",
            "DELETE FROM Mana WHERE CAST(id AS INT) % 40 = 0",
            "INSERT INTO Mana (id, mp) SELECT id, 0.0 FROM Health WHERE NOT has(Mana)",
            "SPAWN Health(hp => -1.0), Position(x => 0.0, y => 0.0) FROM range(50) AS r(i)",
            "DESPAWN FROM Health WHERE hp < 3 AND id > 20000",
        ],
        40,
        false,
        |db| db.concurrency().overlapped >= 3 || !two_cores(),
    );
    let counts = db.concurrency();
    assert!(counts.beside >= 1, "no write went beside the others: {counts:?}");
    assert_eq!(moved(&conn, "hp"), [format!("Float({}.0)", ran[0])]);
    assert_eq!(moved(&conn, "x"), [format!("Float({}.0)", ran[1])]);
}

#[test]
fn a_file_database_replays_what_writers_beside_each_other_left() {
    let folder = crate::common::Folder::new("beside");
    let path = folder.file("world.ecsql");
    let state = |conn: &Connection| {
        column(
            conn,
            "SELECT format('%s %s %s %s %s', id, hp, x, y, mp) FROM Health, Position, Mana ORDER BY id",
        )
    };
    let before = {
        let db = Database::open(&path).unwrap();
        let conn = world(&db);
        conn.execute("PRAGMA synchronous = OFF", ()).unwrap();
        race(
            &db,
            &[
                "UPDATE Health SET hp = hp + 1.0",
                "UPDATE Position SET x = x * 0.5 + 1.0",
                "UPDATE Mana SET mp = mp * 0.5 + Health.hp FROM Health",
                "UPDATE Position SET y = y + Mana.mp * 0.25 FROM Mana",
            ],
            30,
            false,
            |db| db.concurrency().beside >= 50 && (db.concurrency().overlapped >= 3 || !two_cores()),
        );
        let counts = db.concurrency();
        assert!(
            counts.beside >= 50,
            "too few UPDATEs went beside the others: {counts:?}"
        );
        state(&conn)
    };
    let db = Database::open(&path).unwrap();
    assert_eq!(
        state(&db.connect()),
        before,
        "the journal replayed to another world"
    );
}

/// Runs `writes` on a connection and thread of its own until stopped, while a prepared
/// `read` (one FLOAT) runs on this one `reads` times at least and until `enough` holds
/// (at most 20 s), resting `pause` after each; gives each value read, and how many
/// times the write ran.
fn read_beside(
    db: &Database,
    write: &str,
    read: &str,
    reads: usize,
    pause: Duration,
    enough: impl Fn(&Database) -> bool,
) -> (Vec<f64>, usize) {
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let writer = s.spawn(|| {
            let conn = db.connect();
            let mut stmt = conn.prepare(write).unwrap();
            let mut ran = 0;
            while !stop.load(Ordering::SeqCst) {
                stmt.execute(()).unwrap_or_else(|e| panic!("{write}: {e}"));
                ran += 1;
            }
            ran
        });
        let conn = db.connect();
        let mut stmt = conn.prepare(read).unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut seen = Vec::new();
        while seen.len() < reads || !(enough(db) || Instant::now() > deadline) {
            seen.push(stmt.query_row((), |r| r.get::<_, f64>(0)).unwrap());
            std::thread::sleep(pause);
        }
        stop.store(true, Ordering::SeqCst);
        (seen, writer.join().unwrap())
    })
}

#[test]
fn a_reader_of_other_components_reads_beside_a_writer() {
    let db = Database::open_in_memory();
    let conn = world(&db);
    let (seen, ran) = read_beside(
        &db,
        "UPDATE Position SET x = x + 1.0",
        "SELECT sum(hp) FROM Health",
        200,
        Duration::ZERO,
        |db| !two_cores() || db.concurrency().reads_beside >= 20,
    );
    let counts = db.concurrency();
    if two_cores() {
        assert!(
            counts.reads_beside >= 20,
            "the reader never read beside the writer: {counts:?}"
        );
    }
    // Health never changed: every read saw the same sum.
    let sum = (ROWS * (ROWS - 1) / 2) as f64;
    assert!(seen.iter().all(|&s| s == sum), "{:?}", &seen[..10]);
    assert_eq!(moved(&conn, "x"), [format!("Float({ran}.0)")]);
}

#[test]
fn a_reader_of_what_a_writer_writes_sees_each_update_whole_and_never_beside_it() {
    let db = Database::open_in_memory();
    let _conn = world(&db);
    let (seen, ran) = read_beside(
        &db,
        "UPDATE Health SET hp = hp + 1.0",
        "SELECT max(hp - CAST(id AS INT)) - min(hp - CAST(id AS INT)) FROM Health",
        2000,
        // Resting between reads, the reader leaves the writer times to hold hp alone.
        Duration::from_micros(200),
        |db| db.concurrency().beside >= 200,
    );
    let counts = db.concurrency();
    assert!(
        counts.beside >= 200,
        "the writer seldom held only its fields ({ran} runs): {counts:?}"
    );
    assert_eq!(
        counts.reads_beside, 0,
        "a reader of hp read beside its writer: {counts:?}"
    );
    assert!(
        seen.iter().all(|&d| d == 0.0),
        "a reader saw an UPDATE half written"
    );
}

/// Sets its flag when dropped.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[test]
fn prepared_point_reads_see_each_update_whole() {
    // An UPDATE of x and y written in place beside others writes one column, then the
    // other: a point read between the two would find x + y moved. Point reads of a kept
    // plan (answered past the statement machinery) step aside for such a write.
    let db = Database::open_in_memory();
    let conn = world(&db);
    let ids: Vec<(ecsql::Entity, f64)> = conn
        .prepare("SELECT id, Position.x FROM Position ORDER BY id LIMIT 64")
        .unwrap()
        .query_as(())
        .unwrap();
    let stop = AtomicBool::new(false);
    let (reads, updates, torn) = std::thread::scope(|s| {
        let writer = s.spawn(|| {
            let conn = db.connect();
            let mut updates = 0;
            while !stop.load(Ordering::SeqCst) {
                conn.execute("UPDATE Position SET x = x + 1.0, y = y - 1.0", ())
                    .unwrap();
                updates += 1;
            }
            updates
        });
        // The writer is stopped whatever happens here, a panic too.
        let _stop = StopOnDrop(&stop);
        let reader = db.connect();
        let mut at = reader
            .prepare("SELECT Position.x, Position.y FROM Position WHERE id = ?1")
            .unwrap();
        let started = Instant::now();
        let (mut reads, mut torn) = (0, None);
        while (reads < 20_000 || db.concurrency().beside < 50)
            && started.elapsed() < Duration::from_secs(20)
            && torn.is_none()
        {
            let (id, x0) = ids[reads % ids.len()];
            let read = at.query_row([id], |r| Ok((r.get::<_, f64>(0)?, r.get::<_, f64>(1)?)));
            match read {
                Ok((x, y)) if x + y == x0 => reads += 1,
                other => torn = Some(format!("{id:?} (x + y = {x0} as written): {other:?}")),
            }
        }
        drop(_stop);
        (reads, writer.join().unwrap(), torn)
    });
    eprintln!(
        "{reads} point reads beside {updates} UPDATEs: {:?}",
        db.concurrency()
    );
    assert_eq!(torn, None, "a point read saw an UPDATE halfway");
    assert!(db.concurrency().beside >= 50, "{:?}", db.concurrency());
}

#[test]
fn a_short_update_runs_under_the_write_lock_until_its_tables_grow() {
    // Writing beside others costs steps of its own (fields held, tables lent one by one,
    // two locks) that only an UPDATE of a morsel's rows or more pays back.
    let db = Database::open_in_memory();
    let conn = db.connect();
    conn.execute_batch(
        "CREATE COMPONENT Health (hp FLOAT);
         SPAWN Health(hp => 0.0) FROM range(100) AS r(i);",
    )
    .unwrap();
    let mut heal = conn.prepare("UPDATE Health SET hp = hp + 1.0").unwrap();
    for _ in 0..3 {
        heal.execute(()).unwrap();
    }
    assert_eq!(db.concurrency().beside, 0, "{:?}", db.concurrency());
    conn.execute("SPAWN Health(hp => 3.0) FROM range(5000) AS r(i)", ())
        .unwrap();
    // The first run after counts the rows again, under the write lock; the next writes
    // beside others.
    heal.execute(()).unwrap();
    heal.execute(()).unwrap();
    assert_eq!(db.concurrency().beside, 1, "{:?}", db.concurrency());
    assert_eq!(column(&conn, "SELECT DISTINCT hp FROM Health"), ["Float(5.0)"]);
}
