//! Systems and ticks as a program and a user see them: the same script gives the same
//! world bit for bit (through `.dump`, after 1,000 ticks, and through its dump read back
//! into a new process); a tick that fails in its first, a middle or its last system leaves nothing;
//! Rust closures run among SQL systems; prepared statements read events once; a long
//! TICK can be interrupted.

use std::path::PathBuf;
use std::process::Command;

use ecsql::{Connection, Database, Error, ScheduleError};

/// A small game whose every system changes something each tick: random() in systems,
/// spawns and despawns, events read by two systems, EVERY and WHEN.
const GAME: &str = "
CREATE COMPONENT Position (x REAL, y REAL);
CREATE COMPONENT Velocity (dx REAL, dy REAL);
CREATE COMPONENT Age (ticks INT);
CREATE COMPONENT Score (points FLOAT);
CREATE EVENT Bounce (who ENTITY, speed REAL);
CREATE EVENT Expired (who ENTITY) WITH (keep = 5 TICKS);
SPAWN Score(0.0);
SPAWN Position(x => i % 17, y => i % 5), Velocity(dx => (i % 7) - 3, dy => (i % 3) - 1), Age(0)
  FROM range(200) AS r(i);
CREATE SYSTEM spawner EVERY 3 TICKS WHEN ((SELECT count(*) FROM Age) < 400) AS
  SPAWN Position(x => 10 * random(), y => 10 * random()),
        Velocity(dx => random() - 0.5, dy => random() - 0.5), Age(0) FROM range(5) AS r(i);
CREATE SYSTEM movement AS
  UPDATE Position SET x = Position.x + Velocity.dx * delta_time() * 10,
                      y = Position.y + Velocity.dy * delta_time() * 10 FROM Velocity;
CREATE SYSTEM walls AFTER movement AS BEGIN
  INSERT INTO Bounce (who, speed) SELECT id, abs(Velocity.dx) FROM Position, Velocity
    WHERE Position.x < 0 OR Position.x > 20;
  UPDATE Velocity SET dx = -Velocity.dx FROM Position WHERE Position.x < 0 OR Position.x > 20;
END;
CREATE SYSTEM scoring AFTER walls AS
  UPDATE Score SET points = Score.points + (SELECT coalesce(sum(Bounce.speed), 0) FROM Bounce);
CREATE SYSTEM aging IN PHASE post_update AS BEGIN
  UPDATE Age SET ticks = Age.ticks + 1;
  INSERT INTO Expired (who) SELECT id FROM Age WHERE Age.ticks > 50 + CAST(id AS INT) % 30;
  DESPAWN FROM Age WHERE Age.ticks > 50 + CAST(id AS INT) % 30;
END;
CREATE SYSTEM counting IN PHASE pre_update AS
  UPDATE Score SET points = Score.points + 0.001 * (SELECT count(*) FROM Bounce);
";

fn ecsql(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_ecsql"))
        .args(args)
        .output()
        .expect("run ecsql");
    assert!(
        out.status.success(),
        "ecsql {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ecsql-systems-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn a_thousand_ticks_give_the_same_dump_every_run_and_from_a_dump_read_back() {
    let game = scratch("game.sql");
    std::fs::write(&game, GAME).unwrap();
    let game = game.to_str().unwrap();
    let (first, second, start, resumed) = (
        scratch("first.dump"),
        scratch("second.dump"),
        scratch("start.dump"),
        scratch("resumed.dump"),
    );
    let path = |p: &PathBuf| p.to_str().unwrap().to_owned();
    // The same script twice.
    for out in [&first, &second] {
        ecsql(&[game, "-c", "TICK 1000", "-c", &format!(".dump {}", path(out))]);
    }
    // The world built another way: dumped before its first tick (a dump keeps no event
    // rows, and none are kept then), read into a new process, ticked there.
    ecsql(&[game, "-c", &format!(".dump {}", path(&start))]);
    ecsql(&[
        "-c",
        &format!(".read {}", path(&start)),
        "-c",
        "TICK 1000",
        "-c",
        &format!(".dump {}", path(&resumed)),
    ]);
    let read = |p: &PathBuf| std::fs::read_to_string(p).unwrap();
    let dump = read(&first);
    assert!(dump.contains("PRAGMA tick = 1000;"), "{dump}");
    assert!(
        dump.contains("CREATE SYSTEM spawner EVERY 3 TICKS WHEN"),
        "{dump}"
    );
    assert!(
        dump.len() > 10_000,
        "the game keeps entities: {} bytes",
        dump.len()
    );
    assert!(dump == read(&second), "two runs of one script differ");
    assert!(
        dump == read(&resumed),
        "the world read back from a dump went another way"
    );
    let _ = std::fs::remove_dir_all(first.parent().unwrap());
}

fn connection() -> Connection {
    Database::open_in_memory().connect()
}

fn digest(conn: &Connection) -> String {
    conn.with_world(|w| w.digest()).unwrap()
}

fn ints(conn: &Connection, sql: &str) -> Vec<i64> {
    let mut statement = conn.prepare(sql).unwrap();
    let rows = statement.query(()).unwrap();
    rows.map(|r| r.unwrap().get::<_, i64>(0).unwrap()).collect()
}

/// Three systems that each spawn, write, emit and despawn; one of them fails at tick 3.
fn failing_at_tick_3(which: usize) -> Connection {
    let conn = connection();
    conn.execute_batch(
        "CREATE COMPONENT A (v INT); CREATE EVENT E (n INT);
         SPAWN A(0); SPAWN A(100);",
    )
    .unwrap();
    for (i, name) in ["s1", "s2", "s3"].iter().enumerate() {
        let fail = if i == which { "/ (tick() - 3)" } else { "" };
        conn.execute(
            &format!(
                "CREATE SYSTEM {name} AS BEGIN
                   SPAWN A(tick());
                   INSERT INTO E (n) SELECT A.v FROM A WHERE A.v < 3;
                   UPDATE A SET v = (A.v + 1) {fail};
                   DESPAWN FROM A WHERE A.v > 200;
                 END"
            ),
            (),
        )
        .unwrap();
    }
    conn
}

#[test]
fn a_tick_failing_in_its_first_a_middle_or_its_last_system_leaves_nothing() {
    for which in 0..3 {
        let conn = failing_at_tick_3(which);
        assert_eq!(conn.tick(2).unwrap(), 2);
        let before = digest(&conn);
        let e = conn.tick(5).unwrap_err();
        let text = e.to_string();
        let name = ["s1", "s2", "s3"][which];
        assert!(
            text.starts_with(&format!("tick 3 was undone: system {name} failed at statement 3 (UPDATE A SET v = (A.v + 1) / (tick() - 3)): division by zero")),
            "{text}"
        );
        assert!(
            matches!(&e, Error::Schedule(ScheduleError::System { system, tick: 3, .. }) if system == name),
            "{e:?}"
        );
        assert_eq!(digest(&conn), before, "failing in {name} left a change");
        assert_eq!(conn.clock().unwrap().tick, 2);
        // The systems' runs are those of the two ticks that stayed.
        let mut show = conn.prepare("SHOW SYSTEMS").unwrap();
        let rows: Vec<i64> = show
            .query(())
            .unwrap()
            .map(|r| r.unwrap().get::<_, i64>("runs").unwrap())
            .collect();
        assert_eq!(rows, [2, 2, 2]);
    }
}

#[test]
fn a_failed_tick_n_says_how_many_of_its_ticks_it_kept_in_memory_and_in_a_file() {
    let folder = crate::common::Folder::new("tick-kept");
    let in_file = Database::open(folder.0.join("kept.ecsql")).unwrap().connect();
    for conn in [connection(), in_file] {
        conn.execute_batch(
            "CREATE COMPONENT A (v INT); SPAWN A(0);
             CREATE SYSTEM s AS UPDATE A SET v = A.v + 1 / (tick() - 3);",
        )
        .unwrap();
        let e = conn.tick(5).unwrap_err();
        assert!(
            matches!(
                &e,
                Error::Schedule(ScheduleError::System { tick: 3, kept: 2, .. })
            ),
            "{e:?}"
        );
        let text = e.to_string();
        assert!(
            text.starts_with(
                "tick 3 was undone (TICK kept the 2 ticks it had run before it): system s failed"
            ),
            "{text}"
        );
        assert_eq!(conn.clock().unwrap().tick, 2);
    }
}

#[test]
fn rust_systems_run_in_order_among_sql_ones_and_fail_or_panic_the_tick() {
    let conn = connection();
    conn.execute_batch(
        "CREATE COMPONENT Log (step TEXT);
         CREATE COMPONENT N (v INT); SPAWN N(1);
         CREATE SYSTEM double AS UPDATE N SET v = N.v * 2;",
    )
    .unwrap();
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let seen = std::sync::Arc::clone(&calls);
    conn.create_system("add_ten", "AFTER double EVERY 2 TICKS", move |world, clock| {
        seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        assert_eq!(clock.tick % 2, 0);
        let n = world.component_by_name("N")?.id();
        let v = world.field(n, "v")?;
        for table in world.matching_tables(&ecsql::Filter::new().with(n))? {
            if let Some(mut table) = world.table_mut(table) {
                for x in table.slice_mut::<i64>(v)? {
                    *x += 10;
                }
            }
        }
        Ok(())
    })
    .unwrap();
    conn.tick(4).unwrap();
    // 1 → 2 → 4+10 → 28 → 56+10.
    assert_eq!(ints(&conn, "SELECT v FROM N"), [66]);
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 2);
    let mut systems = conn.prepare("SHOW SYSTEMS").unwrap();
    let show: Vec<(String, String)> = systems
        .query(())
        .unwrap()
        .map(|r| {
            let r = r.unwrap();
            (r.get(0).unwrap(), r.get("kind").unwrap())
        })
        .collect();
    assert_eq!(
        show,
        [("double".into(), "sql".into()), ("add_ten".into(), "rust".into())]
    );
    // An error, and a panic: each fails its tick, which is undone.
    conn.create_system("refuse", "AFTER add_ten WHEN (tick() = 5)", |_, _| {
        Err("no fuel".into())
    })
    .unwrap();
    let before = digest(&conn);
    let e = conn.tick(1).unwrap_err().to_string();
    assert_eq!(e, "tick 5 was undone: system refuse failed: no fuel");
    assert_eq!(digest(&conn), before);
    conn.execute("DROP SYSTEM refuse", ()).unwrap();
    conn.create_system("crash", "IN PHASE post_update", |_, clock| {
        if clock.tick == 5 {
            panic!("out of range");
        }
        Ok(())
    })
    .unwrap();
    let e = conn.tick(1).unwrap_err().to_string();
    assert_eq!(
        e,
        "tick 5 was undone: system crash failed: it panicked: out of range"
    );
    assert_eq!(digest(&conn), before);
    // The clauses are checked like CREATE SYSTEM's.
    let e = conn.create_system("x", "AFTER nope", |_, _| Ok(())).unwrap_err();
    assert_eq!(
        e.to_string(),
        "unknown system nope at line 1, column 7 (systems: double, add_ten, crash)"
    );
    let e = conn.create_system("x", "EVERY TICKS", |_, _| Ok(())).unwrap_err();
    assert!(
        e.to_string().contains("expected a number of ticks after EVERY"),
        "{e}"
    );
    // .schema writes a Rust system as a comment.
    let schema = conn.schedule_sql().unwrap();
    assert!(
        schema
            .iter()
            .any(|l| l == "-- system add_ten is a Rust closure: the program registers it again"),
        "{schema:?}"
    );
}

#[test]
fn tick_with_dt_sets_delta_time_and_a_bad_dt_is_refused() {
    let conn = connection();
    conn.execute_batch("CREATE COMPONENT T (t FLOAT); SPAWN T(0.0); CREATE SYSTEM clock AS UPDATE T SET t = T.t + delta_time();")
        .unwrap();
    assert_eq!(conn.tick_with_dt(4, 0.25).unwrap(), 4);
    assert_eq!(conn.tick(2).unwrap(), 2);
    let t: f64 = conn.query_row("SELECT t FROM T", (), |r| r.get(0)).unwrap();
    assert_eq!(t, 1.5);
    assert_eq!(conn.clock().unwrap().dt, 0.25);
    let e = conn.tick_with_dt(1, f64::NAN).unwrap_err();
    assert!(
        e.to_string()
            .contains("tick_with_dt: a tick's dt is a length of time in seconds (0 or more), not NaN"),
        "{e}"
    );
    assert_eq!(conn.clock().unwrap().tick, 6);
}

#[test]
fn a_prepared_statement_reads_each_event_once_and_rollback_gives_them_back() {
    let conn = connection();
    conn.execute_batch("CREATE EVENT E (n INT); INSERT INTO E VALUES (1), (2);")
        .unwrap();
    let mut reader = conn.prepare("SELECT n FROM E").unwrap();
    let read = |s: &mut ecsql::Statement<'_>| -> Vec<i64> {
        s.query(())
            .unwrap()
            .map(|r| r.unwrap().get::<_, i64>(0).unwrap())
            .collect()
    };
    assert_eq!(read(&mut reader), [1, 2]);
    assert_eq!(read(&mut reader), Vec::<i64>::new());
    conn.execute("INSERT INTO E VALUES (3)", ()).unwrap();
    assert_eq!(read(&mut reader), [3]);
    // Ad-hoc statements see every row kept and consume nothing.
    assert_eq!(ints(&conn, "SELECT n FROM E"), [1, 2, 3]);
    conn.execute("BEGIN", ()).unwrap();
    conn.execute("INSERT INTO E VALUES (4)", ()).unwrap();
    assert_eq!(read(&mut reader), [4]);
    conn.execute("ROLLBACK", ()).unwrap();
    conn.execute("INSERT INTO E VALUES (5)", ()).unwrap();
    assert_eq!(read(&mut reader), [5]);
    // A second prepared statement has its own cursor.
    let mut other = conn.prepare("SELECT n FROM E").unwrap();
    assert_eq!(read(&mut other), [1, 2, 3, 5]);
}

#[test]
fn a_long_tick_is_interrupted_and_undone() {
    let conn = connection();
    conn.execute_batch(
        "CREATE COMPONENT C (v INT); SPAWN C(0);
         CREATE SYSTEM slow AS UPDATE C SET v = C.v + (SELECT count(*) FROM range(200000) AS r(i));",
    )
    .unwrap();
    conn.tick(1).unwrap();
    let handle = conn.get_interrupt_handle();
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(200));
        handle.interrupt();
    });
    let e = conn.tick(1_000_000).unwrap_err();
    stopper.join().unwrap();
    assert!(e.to_string().contains("interrupted"), "{e}");
    let ticks = conn.clock().unwrap().tick;
    let v = ints(&conn, "SELECT v FROM C")[0];
    assert_eq!(v, ticks as i64 * 200_000, "the interrupted tick left a change");
    assert!(ticks < 1_000_000);
    assert_eq!(ints(&conn, "SELECT tick()"), [ticks as i64]);
}

#[test]
fn a_rust_system_cannot_end_the_ticks_transaction() {
    let conn = connection();
    conn.execute_batch(
        "CREATE COMPONENT V (v INT); SPAWN V(0); CREATE SYSTEM bump AS UPDATE V SET v = V.v + 1;",
    )
    .unwrap();
    conn.create_system("sneaky", "AFTER bump", |world, _| {
        world.commit()?;
        Err("after committing".into())
    })
    .unwrap();
    let e = conn.tick(1).unwrap_err().to_string();
    assert!(
        e.contains("a tick is running: a system cannot begin, commit or roll back a transaction"),
        "{e}"
    );
    assert_eq!(ints(&conn, "SELECT v FROM V"), [0], "the tick was not undone");
    assert_eq!(conn.clock().unwrap().tick, 0);
}

#[test]
fn a_transaction_begun_on_the_world_leaves_no_schedule_image_behind() {
    let conn = connection();
    conn.with_world_mut(|w| w.begin()).unwrap().unwrap();
    conn.execute("CREATE SYSTEM a AS SELECT 1", ()).unwrap();
    conn.with_world_mut(|w| w.commit()).unwrap().unwrap();
    conn.execute_batch("CREATE SYSTEM b AS SELECT 2; CREATE SYSTEM c AS SELECT 3;")
        .unwrap();
    conn.execute_batch("BEGIN; CREATE SYSTEM d AS SELECT 4; ROLLBACK;")
        .unwrap();
    let mut show = conn.prepare("SHOW SYSTEMS").unwrap();
    let names: Vec<String> = show
        .query(())
        .unwrap()
        .map(|r| r.unwrap().get(0).unwrap())
        .collect();
    assert_eq!(names, ["a", "b", "c"]);
}

#[test]
fn the_schedule_written_for_a_dump_always_reads_back() {
    let conn = connection();
    conn.execute_batch(
        "CREATE COMPONENT A (x INT);
         CREATE SYSTEM uses_a AS UPDATE A SET x = A.x + 1;
         CREATE SYSTEM after_a AFTER uses_a AS SELECT 1;",
    )
    .unwrap();
    conn.create_system("spin", "", |_, _| Ok(())).unwrap();
    conn.execute_batch("CREATE SYSTEM after_spin AFTER spin, after_a AS SELECT 2; DROP COMPONENT A;")
        .unwrap();
    let lines = conn.schedule_sql().unwrap();
    assert_eq!(
        lines,
        [
            "-- system uses_a is not written: it no longer binds (unknown component A at line 2, column 41 (no components are declared yet: CREATE COMPONENT first))",
            "-- system after_a ran AFTER uses_a, which is not written here",
            "CREATE SYSTEM after_a AS SELECT 1;",
            "-- system spin is a Rust closure: the program registers it again",
            "-- system after_spin ran AFTER spin, which is not written here",
            "CREATE SYSTEM after_spin AFTER after_a AS SELECT 2;",
        ]
    );
    let copy = connection();
    copy.execute_batch(&lines.join("\n")).unwrap();
    assert_eq!(
        copy.schedule_sql().unwrap(),
        lines[2..]
            .iter()
            .filter(|l| !l.starts_with("--"))
            .cloned()
            .collect::<Vec<_>>()
    );
}

/// SHOW SYSTEM RUNS: each system's last 120 runs, oldest first, with the rows it wrote
/// (its statements' counts added; NULL for a Rust closure), whether it ran alone or
/// beside others; a system skipped by EVERY or WHEN has no run that tick.
#[test]
fn show_system_runs_lists_each_systems_recent_runs_with_rows_written() {
    let conn = Database::open_in_memory().connect();
    conn.execute_batch(
        "CREATE COMPONENT A (x INT); CREATE COMPONENT B (y INT);
         SPAWN A(i), B(i) FROM range(10) AS r(i);
         PRAGMA min_parallel_rows = 1;
         CREATE SYSTEM up AS UPDATE A SET x = A.x + 1 WHERE A.x % 2 = 0;
         CREATE SYSTEM down AS UPDATE B SET y = B.y - 1;
         CREATE SYSTEM both AFTER down EVERY 2 TICKS AS BEGIN
           UPDATE A SET x = 0 WHERE A.x > 100;
           SPAWN A(1) FROM range(3) AS r(i);
         END;",
    )
    .unwrap();
    conn.create_system("rusty", "AFTER both", |_, _| Ok(())).unwrap();
    conn.execute("TICK 130", ()).unwrap();
    let runs: Vec<(String, i64, f64, Option<i64>)> = {
        let mut stmt = conn.prepare("SHOW SYSTEM RUNS").unwrap();
        let rows = stmt.query(()).unwrap();
        assert_eq!(rows.column_names(), ["system", "tick", "ms", "rows"]);
        rows.map(|r| {
            let r = r.unwrap();
            (
                r.get(0).unwrap(),
                r.get(1).unwrap(),
                r.get(2).unwrap(),
                r.get(3).unwrap(),
            )
        })
        .collect()
    };
    let of = |name: &str| -> Vec<(i64, Option<i64>)> {
        runs.iter().filter(|r| r.0 == name).map(|r| (r.1, r.3)).collect()
    };
    // The last 120 ticks of 130, oldest first; `up` writes the 5 even x of the 10 A
    // (then odd, then even again: every other tick 5, and the spawned A(1) grow it).
    let up = of("up");
    assert_eq!(up.len(), 120);
    assert_eq!(up.first().map(|r| r.0), Some(11));
    assert_eq!(up.last().map(|r| r.0), Some(130));
    // Every x is odd from tick 1 on (the spawned A(1) too): no even x left to write.
    assert!(up.iter().all(|r| r.1 == Some(0)), "{up:?}");
    assert!(of("down").iter().all(|r| r.1 == Some(10)), "{:?}", of("down"));
    // `up` and `down` computed beside each other: their rows counted on that path too.
    let together: i64 = conn.query_row("SHOW SYSTEMS", (), |r| r.get(6)).unwrap();
    assert!(together > 0, "up ran beside down");
    // EVERY 2 TICKS: all its 65 runs (fewer than 120), each spawning 3 (resetting none).
    let both = of("both");
    assert_eq!(both.len(), 65);
    assert_eq!(both.first().map(|r| r.0), Some(2));
    assert!(both.iter().all(|r| r.0 % 2 == 0 && r.1 == Some(3)), "{both:?}");
    let rusty = of("rusty");
    assert_eq!(rusty.len(), 120);
    assert!(
        rusty.iter().all(|r| r.1.is_none()),
        "a Rust system does not say: {rusty:?}"
    );
    assert!(runs.iter().all(|r| r.2 >= 0.0));
    // In run order: up, down, both, rusty.
    let order: Vec<&str> = runs.iter().map(|r| r.0.as_str()).collect();
    let firsts: Vec<&str> = order.iter().copied().fold(Vec::new(), |mut v, n| {
        if v.last() != Some(&n) {
            v.push(n);
        }
        v
    });
    assert_eq!(firsts, ["up", "down", "both", "rusty"]);
}
