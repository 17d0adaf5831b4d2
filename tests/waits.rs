//! Never stuck: a running statement can be interrupted from another thread and changes
//! nothing; a statement waiting for another connection gives up after the busy timeout;
//! the waits that could never end (a transaction held on the same thread, a statement
//! inside `with_world`, a connection leaked inside BEGIN) are errors, not hangs; a
//! statement's working memory is bounded by `memory_limit`, and a count over a series or
//! a join streams, holding no rows.

use std::time::{Duration, Instant};

use ecsql::{Database, Error, ExecError, ExecErrorKind};

/// A statement that would run for minutes: a count over two billion series values.
const FOREVER: &str = "SELECT count(*) FROM range(2147483647) AS r(i) WHERE i % 7 = 3";

fn interrupted(result: ecsql::Result<usize>) {
    match result {
        Err(Error::Exec(ExecError {
            kind: ExecErrorKind::Interrupted,
            ..
        })) => {}
        other => panic!("expected an interrupt, got {other:?}"),
    }
}

#[test]
fn an_interrupt_from_another_thread_stops_a_long_query_and_the_connection_goes_on() {
    let conn = Database::open_in_memory().connect();
    let handle = conn.get_interrupt_handle();
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        handle.interrupt();
    });
    let began = Instant::now();
    interrupted(conn.execute(FOREVER, ()));
    assert!(
        began.elapsed() < Duration::from_secs(30),
        "took {:?}",
        began.elapsed()
    );
    stopper.join().unwrap();
    // The interrupt was for that call only.
    assert_eq!(
        conn.query_row("SELECT 1 + 1", (), |r| r.get::<_, i64>(0))
            .unwrap(),
        2
    );
}

#[test]
fn an_interrupted_write_writes_nothing() {
    let conn = Database::open_in_memory().connect();
    conn.execute_batch("CREATE COMPONENT C (x INT); SPAWN C(i) FROM range(10) AS r(i);")
        .unwrap();
    let handle = conn.get_interrupt_handle();
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        handle.interrupt();
    });
    // The spawn's rows come from a join too large to finish.
    let slow = "SPAWN C(a.i) FROM range(100000) AS a(i) JOIN range(100000) AS b(j) ON a.i * b.j = -1";
    interrupted(conn.execute(slow, ()));
    stopper.join().unwrap();
    let count: i64 = conn
        .query_row("SELECT count(*) FROM C", (), |r| r.get(0))
        .unwrap();
    assert_eq!(count, 10);
}

#[test]
fn an_interrupt_stops_the_rest_of_a_batch_and_an_idle_interrupt_does_nothing() {
    let conn = Database::open_in_memory().connect();
    let handle = conn.get_interrupt_handle();
    handle.interrupt(); // nothing runs: no effect on what follows
    conn.execute_batch("CREATE COMPONENT C (x INT)").unwrap();
    let h = handle.clone();
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        h.interrupt();
    });
    let batch = format!("SPAWN C(1); {FOREVER}; SPAWN C(2);");
    let e = conn.execute_batch(&batch).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Exec(ExecError {
                kind: ExecErrorKind::Interrupted,
                ..
            })
        ),
        "{e}"
    );
    assert!(e.to_string().contains("interrupted at line 1, column 13"), "{e}");
    stopper.join().unwrap();
    let xs: Vec<i64> = conn
        .prepare("SELECT C.x FROM C")
        .unwrap()
        .query_map((), |r| r.get(0))
        .unwrap()
        .collect::<ecsql::Result<_>>()
        .unwrap();
    assert_eq!(xs, [1], "the statement before ran, the one after did not");
}

#[test]
fn a_reader_gives_up_after_the_busy_timeout_while_another_connection_holds_a_transaction() {
    let db = Database::open_in_memory();
    let writer = db.connect();
    writer.execute("BEGIN", ()).unwrap();
    let db2 = db.clone();
    let waited = std::thread::spawn(move || {
        let reader = db2.connect();
        reader.set_busy_timeout(Duration::from_millis(150));
        let began = Instant::now();
        let result = reader.query_row("SELECT 1", (), |r| r.get::<_, i64>(0));
        (result, began.elapsed())
    })
    .join()
    .unwrap();
    let (result, elapsed) = waited;
    let e = result.unwrap_err();
    assert!(matches!(e, Error::Busy { .. }), "{e}");
    assert!(e.to_string().contains("has held a transaction"), "{e}");
    assert!(elapsed >= Duration::from_millis(150), "gave up after {elapsed:?}");
    writer.execute("COMMIT", ()).unwrap();
}

#[test]
fn a_reader_waits_for_a_transaction_that_ends_within_its_timeout() {
    let db = Database::open_in_memory();
    let writer = db.connect();
    writer
        .execute_batch("CREATE COMPONENT C (x INT); BEGIN; SPAWN C(7);")
        .unwrap();
    let db2 = db.clone();
    let reader = std::thread::spawn(move || {
        let conn = db2.connect();
        conn.query_row("SELECT count(*) FROM C", (), |r| r.get::<_, i64>(0))
    });
    std::thread::sleep(Duration::from_millis(100));
    writer.execute("COMMIT", ()).unwrap();
    assert_eq!(
        reader.join().unwrap().unwrap(),
        1,
        "the reader saw the committed row"
    );
}

#[test]
fn a_second_connection_on_the_thread_that_holds_a_transaction_is_refused_at_once() {
    let db = Database::open_in_memory();
    let first = db.connect();
    first.execute("BEGIN", ()).unwrap();
    let second = db.connect();
    let began = Instant::now();
    let e = second
        .query_row("SELECT 1", (), |r| r.get::<_, i64>(0))
        .unwrap_err();
    assert!(began.elapsed() < Duration::from_secs(1));
    assert!(
        e.to_string()
            .contains("on this same thread holds an open transaction"),
        "{e}"
    );
    first.execute("ROLLBACK", ()).unwrap();
    assert_eq!(
        second.query_row("SELECT 1", (), |r| r.get::<_, i64>(0)).unwrap(),
        1
    );
}

#[test]
fn a_read_committed_transaction_holds_the_database_from_its_first_write_only() {
    let db = Database::open_in_memory();
    let reader = db.connect();
    reader
        .execute_batch("CREATE COMPONENT Gold (amount INT); SPAWN Gold(amount => 10)")
        .unwrap();
    let other = db.connect();
    let sum = |c: &ecsql::Connection| c.query_row("SELECT sum(amount) FROM Gold", (), |r| r.get::<_, i64>(0));
    reader
        .execute("BEGIN ISOLATION LEVEL READ COMMITTED", ())
        .unwrap();
    assert!(!reader.is_autocommit());
    assert_eq!(sum(&reader).unwrap(), 10);
    assert!(!reader.holds_transaction());
    // Reads only so far: another connection (here on the same thread, which would be
    // refused at once if the database were held) reads, writes and ticks.
    assert_eq!(sum(&other).unwrap(), 10);
    other.execute("UPDATE Gold SET amount = 15", ()).unwrap();
    other.execute("TICK", ()).unwrap();
    // Each statement reads what was committed before it began.
    assert_eq!(sum(&reader).unwrap(), 15);
    // The first write holds the database: the other connection is refused until COMMIT.
    reader.execute("UPDATE Gold SET amount = amount + 1", ()).unwrap();
    assert!(reader.holds_transaction());
    let e = sum(&other).unwrap_err();
    assert!(e.to_string().contains("holds an open transaction"), "{e}");
    reader.execute("COMMIT", ()).unwrap();
    assert!(reader.is_autocommit());
    assert_eq!(sum(&other).unwrap(), 16);
    // A serializable one (the default in-process) holds it from BEGIN.
    reader.execute("BEGIN", ()).unwrap();
    assert!(reader.holds_transaction());
    assert!(sum(&other).is_err());
    reader.execute("ROLLBACK", ()).unwrap();
}

#[test]
fn a_statement_inside_with_world_is_an_error_not_a_deadlock() {
    let conn = Database::open_in_memory().connect();
    let other = Database::open_in_memory().connect();
    let (inner, unrelated) = conn
        .with_world(|_| {
            (
                conn.query_row("SELECT 1", (), |r| r.get::<_, i64>(0)),
                other.query_row("SELECT 1", (), |r| r.get::<_, i64>(0)),
            )
        })
        .unwrap();
    let e = inner.unwrap_err();
    assert!(matches!(e, Error::Misuse { .. }), "{e}");
    assert!(e.to_string().contains("inside with_world"), "{e}");
    assert_eq!(unrelated.unwrap(), 1, "another database is free to use");
    let nested = conn.with_world_mut(|_| conn.with_world(|w| w.len())).unwrap();
    assert!(matches!(nested, Err(Error::Misuse { .. })));
    assert_eq!(
        conn.query_row("SELECT 1", (), |r| r.get::<_, i64>(0)).unwrap(),
        1,
        "the lock is given back"
    );
}

#[test]
fn a_connection_leaked_inside_begin_makes_others_busy_not_stuck() {
    let db = Database::open_in_memory();
    let leaked = db.connect();
    leaked.execute("BEGIN", ()).unwrap();
    std::mem::forget(leaked);
    let db2 = db.clone();
    let result = std::thread::spawn(move || {
        let conn = db2.connect();
        conn.set_busy_timeout(Duration::from_millis(100));
        conn.query_row("SELECT 1", (), |r| r.get::<_, i64>(0))
    })
    .join()
    .unwrap();
    assert!(matches!(result, Err(Error::Busy { .. })), "{result:?}");
}

#[test]
fn a_statement_past_the_memory_limit_fails_cleanly() {
    let conn = Database::open_in_memory().connect();
    conn.set_memory_limit(1 << 20);
    let e = conn
        .execute("SELECT i FROM range(1000000) AS r(i)", ())
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Exec(ExecError {
                kind: ExecErrorKind::MemoryLimit { .. },
                ..
            })
        ),
        "{e}"
    );
    assert!(e.to_string().contains("PRAGMA memory_limit"), "{e}");
    // The same rows counted, not kept, stream within the limit.
    let n: i64 = conn
        .query_row("SELECT count(*) FROM range(5000000) AS r(i)", (), |r| r.get(0))
        .unwrap();
    assert_eq!(n, 5_000_000);
}

/// ORDER BY … LIMIT holds its first rows, not all the rows it sorts: the first five of
/// a million texts, and the first thousand of them trimmed a thousand times over (on
/// one thread and on two), fit in 4 MB, which the same sort without its LIMIT does not,
/// and neither does a LIMIT as large as the rows.
#[test]
fn the_first_rows_of_a_sort_hold_only_those_rows() {
    let conn = Database::open_in_memory().connect();
    conn.execute_batch(
        "PRAGMA min_parallel_rows = 65536;
         CREATE COMPONENT G (k INT, t TEXT);
         SPAWN G(i, 'text number ' || (i * 7919 % 1000003)) FROM range(1000000) AS r(i);",
    )
    .unwrap();
    conn.set_memory_limit(4 << 20);
    let over = |sql: &str| match conn.execute(sql, ()) {
        Err(Error::Exec(ExecError {
            kind: ExecErrorKind::MemoryLimit { .. },
            ..
        })) => {}
        other => panic!("{sql}: expected the memory limit, got {other:?}"),
    };
    for threads in [1, 2] {
        conn.execute(&format!("PRAGMA threads = {threads}"), ()).unwrap();
        let first = common_rows(&conn, "SELECT t, k FROM G ORDER BY t DESC, k LIMIT 5");
        assert_eq!(
            first,
            [
                "text number 999999 / 365325",
                "text number 999998 / 706657",
                "text number 999997 / 47986",
                "text number 999996 / 389318",
                "text number 999995 / 730650",
            ],
            "{threads} threads"
        );
        // Rows in the order of the sort's key: each beats the first kept so far, so the
        // top is trimmed every few thousand rows, and what each trim's sort held is
        // given back.
        let last = common_rows(&conn, "SELECT t, k FROM G ORDER BY k DESC LIMIT 1000");
        assert_eq!(last.len(), 1000, "{threads} threads");
        assert_eq!(last[0], "text number 968327 / 999999", "{threads} threads");
        over("SELECT t, k FROM G ORDER BY t DESC, k");
        over("SELECT t, k FROM G ORDER BY t DESC, k LIMIT 1000000");
    }
}

/// `sql`'s rows as `t / k`.
fn common_rows(conn: &ecsql::Connection, sql: &str) -> Vec<String> {
    let mut stmt = conn.prepare(sql).unwrap();
    stmt.query(())
        .unwrap()
        .map(|row| {
            let row = row.unwrap();
            format!(
                "{} / {}",
                row.get::<_, String>(0).unwrap(),
                row.get::<_, i64>(1).unwrap()
            )
        })
        .collect()
}

#[test]
fn a_count_over_a_non_equi_join_holds_no_pairs() {
    let conn = Database::open_in_memory().connect();
    conn.execute_batch(
        "CREATE COMPONENT A (x INT); CREATE COMPONENT B (y INT);
         SPAWN A(i) FROM range(2000) AS r(i); SPAWN B(i) FROM range(2000) AS r(i);",
    )
    .unwrap();
    // 4 million pairs, about 2 million of them kept by ON: far past 1 MiB as rows.
    conn.set_memory_limit(1 << 20);
    let n: i64 = conn
        .query_row("SELECT count(*) FROM A JOIN B ON A.x < B.y", (), |r| r.get(0))
        .unwrap();
    assert_eq!(n, 2000 * 1999 / 2);
    let e = conn
        .execute("SELECT A.x, B.y FROM A JOIN B ON A.x < B.y", ())
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Exec(ExecError {
                kind: ExecErrorKind::MemoryLimit { .. },
                ..
            })
        ),
        "{e}"
    );
}

#[test]
fn a_correlated_subquery_gives_back_what_each_run_held() {
    let conn = Database::open_in_memory().connect();
    conn.execute_batch(
        "CREATE COMPONENT A (v INT); CREATE COMPONENT B (k INT);
         SPAWN A(v => i) FROM range(2000) AS r(i); SPAWN B(k => i) FROM range(5000) AS r(i);",
    )
    .unwrap();
    // Each run sorts 5,000 rows; 2,000 runs together would pass 4 MB many times over.
    conn.set_memory_limit(4 << 20);
    let n: i64 = conn
        .query_row(
            "SELECT count(*) FROM A WHERE (SELECT B.k FROM B WHERE B.k >= A.v ORDER BY B.k DESC LIMIT 1) > 0",
            (),
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(n, 2000);
}

#[test]
fn copy_from_counts_what_it_reads_against_the_memory_limit() {
    let dir = std::env::temp_dir().join(format!("ecsql-copy-limit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("many.csv");
    std::fs::write(&file, format!("s\n{}", "a\n".repeat(300_000))).unwrap();
    let conn = Database::open_in_memory().connect();
    conn.execute("CREATE COMPONENT One (s TEXT)", ()).unwrap();
    conn.set_memory_limit(4 << 20);
    let e = conn
        .execute(&format!("COPY One FROM '{}'", file.display()), ())
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Exec(ExecError {
                kind: ExecErrorKind::MemoryLimit { .. },
                ..
            })
        ),
        "{e}"
    );
    let n: i64 = conn
        .query_row("SELECT count(*) FROM One", (), |r| r.get(0))
        .unwrap();
    assert_eq!(n, 0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// An interrupt during `tick(n)` of many ticks: the ticks run stay, each whole; the error
/// says how many, where the clock is, and which tick (if one was running) was undone.
#[test]
fn an_interrupted_tick_of_many_says_which_ticks_it_kept() {
    for file in [false, true] {
        let folder = std::env::temp_dir().join(format!("ecsql-waits-ticks-{}-{file}", std::process::id()));
        let _ = std::fs::remove_dir_all(&folder);
        std::fs::create_dir_all(&folder).unwrap();
        let db = if file {
            Database::open(folder.join("t.ecsql")).unwrap()
        } else {
            Database::open_in_memory()
        };
        let conn = db.connect();
        conn.execute_batch(
            "CREATE COMPONENT Count (n INT); SPAWN Count(0);
             CREATE SYSTEM count AS UPDATE Count SET n = Count.n + 1;",
        )
        .unwrap();
        let handle = conn.get_interrupt_handle();
        let stopper = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            handle.interrupt();
        });
        let e = conn.tick(1_000_000_000).unwrap_err();
        stopper.join().unwrap();
        let tick = conn.clock().unwrap().tick;
        let n: u64 = conn.query_row("SELECT n FROM Count", (), |r| r.get(0)).unwrap();
        assert_eq!(n, tick, "a tick is there in part");
        match &e {
            ecsql::Error::Exec(ecsql::ExecError {
                kind:
                    ExecErrorKind::TickInterrupted {
                        kept, clock, undone, ..
                    },
                ..
            }) => {
                assert_eq!((*kept, *clock), (tick, tick));
                assert!(undone.is_none_or(|u| u == tick + 1), "{e}");
            }
            other => panic!("expected the TICK's interrupt, got {other:?}"),
        }
        assert!(
            e.to_string()
                .contains(&format!("TICK kept the {tick} ticks it had run")),
            "{e}"
        );
        drop(conn);
        drop(db);
        let _ = std::fs::remove_dir_all(&folder);
    }
}

/// How long `sql` took to end once interrupted `after` it began, and its error, or `None`
/// when it finished after the interrupt reached it; `None` when it finished first.
fn stop_time(conn: &ecsql::Connection, sql: &str, after: Duration) -> Option<(Duration, Option<Error>)> {
    let handle = conn.get_interrupt_handle();
    let (said, heard) = std::sync::mpsc::channel();
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(after);
        let at = Instant::now();
        handle.interrupt();
        said.send(at).unwrap();
    });
    let result = conn.execute(sql, ());
    let ended = Instant::now();
    stopper.join().unwrap();
    let at = heard.recv().unwrap();
    (ended > at).then(|| (ended.duration_since(at), result.err()))
}

/// How long `sql` takes to run to its end here (in a transaction rolled back).
fn full_time(conn: &ecsql::Connection, sql: &str) -> Duration {
    conn.execute("BEGIN", ()).unwrap();
    let began = Instant::now();
    let _ = conn.execute(sql, ());
    let took = began.elapsed();
    conn.execute("ROLLBACK", ()).unwrap();
    took
}

/// Every statement stops soon after an interrupt, changing nothing: here a sort, a SPAWN
/// of millions of rows (its writes included), a DESPAWN, an INSERT and a DELETE of a
/// component (an attach, a detach) of millions (some rows of a table, or all), and an
/// UPDATE written as it goes, inside a transaction and outside one (the writes first undo
/// what they wrote), each interrupted three times in the first three fifths of its run,
/// and each stops within a tenth of a second (asserted: a second, for a loaded machine).
/// The times are printed: `cargo test --release --test waits -- --nocapture stop`.
#[test]
fn long_statements_of_every_kind_stop_soon_after_an_interrupt() {
    let conn = Database::open_in_memory().connect();
    conn.execute_batch(
        "CREATE COMPONENT T (a INT, b TEXT);
         SPAWN T(i % 100, 'x' || (i * 7919 % 1000003)) FROM range(400000) AS r(i);
         CREATE COMPONENT U (a INT, b TEXT);
         SPAWN U(i % 100, 'x' || (i * 7919 % 1000003)) FROM range(4000000) AS r(i);
         CREATE COMPONENT F (x FLOAT, y FLOAT);
         SPAWN F(i, i / 3) FROM range(4000000) AS r(i);
         CREATE COMPONENT G (g INT);
         CREATE COMPONENT H (h TEXT);
         INSERT INTO H (id, h) SELECT id, U.b FROM U;",
    )
    .unwrap();
    // The rows of T, U, G and H, and the values of F.
    let count = |conn: &ecsql::Connection| -> (i64, i64, i64, i64, f64, f64) {
        conn.query_row(
            "SELECT (SELECT count(*) FROM T), (SELECT count(*) FROM U), (SELECT count(*) FROM G),
                    (SELECT count(*) FROM H), (SELECT sum(x) FROM F), (SELECT sum(y) FROM F)",
            (),
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)),
        )
        .unwrap()
    };
    let before = count(&conn);
    assert_eq!(
        (before.0, before.1, before.2, before.3),
        (400_000, 4_000_000, 0, 4_000_000)
    );
    let mut times = Vec::new();
    // `whole`: a whole table's rows move in one write (its columns whole, 4M rows in ~25
    // ms in a release build, ~200 ms in a debug one), which an interrupt that reaches it
    // there lets finish; inside a transaction, so that its ROLLBACK puts the world back.
    for (what, sql, in_transaction, whole) in [
        (
            "sort by texts",
            "SELECT a, b FROM U ORDER BY b, a DESC",
            false,
            false,
        ),
        (
            "sort by numbers",
            "SELECT x, y FROM F ORDER BY y DESC, x",
            false,
            false,
        ),
        (
            "the first rows by a text",
            "SELECT a, b FROM U ORDER BY b DESC, a LIMIT 5",
            false,
            false,
        ),
        (
            "spawn",
            "SPAWN T(i, 'y') FROM range(4000000) AS r(i)",
            false,
            false,
        ),
        (
            "despawn in a transaction",
            "DESPAWN FROM U WHERE U.a >= 0",
            true,
            false,
        ),
        ("despawn", "DESPAWN FROM U WHERE U.a >= 0", false, false),
        (
            "attach",
            "INSERT INTO G (id, g) SELECT id, 1 FROM F WHERE F.x >= 1.0",
            false,
            false,
        ),
        (
            "attach in a transaction",
            "INSERT INTO G (id, g) SELECT id, 1 FROM F WHERE F.x >= 1.0",
            true,
            false,
        ),
        (
            "attach to a whole table, in a transaction",
            "INSERT INTO G (id, g) SELECT id, 1 FROM F",
            true,
            true,
        ),
        (
            "detach from a whole table, in a transaction",
            "DELETE FROM H",
            true,
            true,
        ),
        (
            "detach",
            "DELETE FROM H WHERE id IN (SELECT id FROM U WHERE U.a > 0)",
            false,
            false,
        ),
        (
            "detach in a transaction",
            "DELETE FROM H WHERE id IN (SELECT id FROM U WHERE U.a > 0)",
            true,
            false,
        ),
        (
            "update written as it goes",
            "UPDATE F SET x = floor(F.x * 0.75) + abs(F.y - 3.0) * 0.5 + floor(abs(F.x - F.y) * 0.25), \
             y = CASE WHEN F.x > F.y THEN greatest(F.y, F.x * 0.5, abs(F.x - 7.0)) \
                 WHEN F.x < 0.0 THEN least(F.x, abs(F.y), floor(F.y)) ELSE ceil(F.y * 0.125) END",
            false,
            false,
        ),
        (
            "update written as it goes, in a transaction",
            "UPDATE F SET x = floor(F.x * 0.75) + abs(F.y - 3.0) * 0.5",
            true,
            false,
        ),
    ] {
        // The shorter of two runs: a stall while timing would put the interrupts late.
        let full = full_time(&conn, sql).min(full_time(&conn, sql));
        let mut stopped = 0;
        // Outside a transaction a statement that finishes first has changed the world:
        // its interrupts come earlier. Inside one, it is rolled back and tried again with
        // an interrupt twice as early.
        let parts: &[f64] = match in_transaction {
            true => &[0.2, 0.4, 0.6],
            false => &[0.1, 0.25, 0.4],
        };
        for &part in parts {
            let mut after = full.mul_f64(part);
            let (took, e) = loop {
                if in_transaction {
                    conn.execute("BEGIN", ()).unwrap();
                }
                match stop_time(&conn, sql, after) {
                    Some(ended) => break ended,
                    None if in_transaction && after > Duration::from_millis(1) => {
                        conn.execute("ROLLBACK", ()).unwrap();
                        after /= 2;
                    }
                    None => panic!("{what} finished before the interrupt at {after:?}: make it longer"),
                }
            };
            match e {
                Some(e) => {
                    assert!(
                        matches!(
                            e,
                            Error::Exec(ExecError {
                                kind: ExecErrorKind::Interrupted,
                                ..
                            })
                        ),
                        "{what}: {e}"
                    );
                    assert_eq!(count(&conn), before, "{what} changed the world");
                    stopped += 1;
                }
                None => {
                    assert!(whole, "{what} finished after the interrupt at {part} of {full:?}");
                    // Whole: every entity of F has G, or none has H.
                    let now = count(&conn);
                    assert!(now.2 == 4_000_000 || now.3 == 0, "{what} finished half: {now:?}");
                }
            }
            if in_transaction {
                conn.execute("ROLLBACK", ()).unwrap();
                assert_eq!(
                    count(&conn),
                    before,
                    "{what}'s rollback did not put the world back"
                );
            }
            times.push((what, part, full, took));
        }
        // The interrupt stops even a whole table's move before its one write.
        assert!(stopped > 0, "{what} was never stopped");
    }
    println!("ended after (statement, interrupted at, its whole run, end): {times:?}");
    for (what, part, full, took) in times {
        assert!(
            took < Duration::from_secs(1),
            "{what} took {took:?} to end at {part} of {full:?}"
        );
    }
}

/// SAVE and LOAD write and read regular files: a pipe (whose open would wait for ever for
/// its other end) or a device is refused at once, saying so.
#[test]
#[cfg(unix)]
fn save_and_load_refuse_a_pipe_instead_of_waiting_for_it() {
    let folder = std::env::temp_dir().join(format!("ecsql-waits-fifo-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(&folder).unwrap();
    let fifo = folder.join("pipe");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let conn = Database::open_in_memory().connect();
    conn.execute_batch("CREATE COMPONENT C (n INT); SPAWN C(1);")
        .unwrap();
    let name = fifo.display().to_string();
    let began = Instant::now();
    for (sql, what) in [("SAVE TO ?1", "SAVE writes"), ("LOAD FROM ?1", "LOAD reads")] {
        let e = conn.execute(sql, [name.as_str()]).unwrap_err().to_string();
        assert!(e.contains(&format!("{what} a regular file")), "{e}");
    }
    assert!(began.elapsed() < Duration::from_secs(5));
    let e = conn.execute("SAVE TO '/dev/null'", ()).unwrap_err().to_string();
    assert!(e.contains("not one (a pipe or a device)"), "{e}");
    let _ = std::fs::remove_dir_all(&folder);
}

/// A DELETE of a component from whole tables inside a transaction keeps only the
/// tables' columns to undo it with (they move whole): it counts nothing against
/// `memory_limit`, and its ROLLBACK puts them back. (Each entity's values would be 112 MB here, over the limit.)
#[test]
fn a_detach_of_whole_tables_counts_nothing_against_the_memory_limit() {
    for (setup, sql) in [
        (
            "CREATE COMPONENT C (x FLOAT, y FLOAT, z FLOAT); CREATE COMPONENT X (k INT);
             SPAWN C(i, i, i) FROM range(2000000) AS r(i); SPAWN C(i, i, i), X(1) FROM range(2000000) AS r(i);",
            "DELETE FROM C",
        ),
        (
            "CREATE COMPONENT C (x FLOAT, y FLOAT, z FLOAT); CREATE COMPONENT X (k INT);
             SPAWN C(i, i, i) FROM range(3000000) AS r(i); SPAWN C(i, i, i), X(1) FROM range(1000000) AS r(i);",
            "DELETE FROM C WHERE id IN (SELECT id FROM X) OR C.x >= 0.0",
        ),
    ] {
        let conn = Database::open_in_memory().connect();
        conn.execute_batch(setup).unwrap();
        conn.execute("PRAGMA memory_limit = '100MB'", ()).unwrap();
        conn.execute("BEGIN", ()).unwrap();
        assert_eq!(conn.execute(sql, ()).unwrap(), 4_000_000, "{sql}");
        conn.execute("ROLLBACK", ()).unwrap();
        let back: i64 = conn
            .query_row("SELECT count(*) FROM C WHERE C.x = C.z", (), |r| r.get(0))
            .unwrap();
        assert_eq!(back, 4_000_000, "{sql}");
    }
}

/// The child of `memory_limit_holds_for_what_a_statement_holds`: runs the case named by
/// `ECSQL_MEMORY_CASE` under a 100 MB limit and prints its error and how much the
/// process's peak memory grew while it ran, in MB.
#[test]
fn memory_process() {
    let Ok(case) = std::env::var("ECSQL_MEMORY_CASE") else {
        return;
    };
    let peak_kb = || -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status.lines().find(|l| l.starts_with("VmHWM")).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    let conn = Database::open_in_memory().connect();
    let (setup, sql) = match case.as_str() {
        "despawn" => (
            "CREATE COMPONENT T (a INT, b FLOAT, c TEXT); SPAWN T(i, i, 'abc') FROM range(3000000) AS r(i); BEGIN;",
            "DESPAWN FROM T WHERE T.a >= 0",
        ),
        "detach" => (
            "CREATE COMPONENT D (a INT, c TEXT); SPAWN D(i, 'some text ' || i) FROM range(4000000) AS r(i); BEGIN;",
            "DELETE FROM D WHERE D.a % 2 = 0",
        ),
        "join" => (
            "CREATE COMPONENT A (k INT, t TEXT); CREATE COMPONENT B (k INT, t TEXT);
             SPAWN A(i % 100, 'a' || i) FROM range(20000) AS r(i); SPAWN B(i % 100, 'b' || i) FROM range(20000) AS r(i);",
            "SELECT a.t, b.t FROM A AS a JOIN B AS b ON a.k = b.k ORDER BY 1",
        ),
        _ => (
            "CREATE COMPONENT G (k INT, t TEXT); SPAWN G(i, 'text ' || i) FROM range(3000000) AS r(i);",
            "SELECT k, t, count(*) FROM G GROUP BY k, t",
        ),
    };
    conn.execute_batch(setup).unwrap();
    conn.execute("PRAGMA memory_limit = '100MB'", ()).unwrap();
    // The peak from here on.
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
    let before = peak_kb();
    let e = conn.prepare(sql).unwrap().query(()).map(drop);
    println!("\nerror {e:?}\ngrew {}", (peak_kb() - before) / 1024);
    eprintln!("{case}: the peak grew by {} MB", (peak_kb() - before) / 1024);
}

/// `PRAGMA memory_limit` holds for what a statement holds beyond its rows: a DESPAWN and
/// a DELETE of a component inside a transaction (the removals kept to undo them), a join, a GROUP BY of millions
/// of groups. Each fails early with the usual error, its process's peak memory grown by
/// no more than half as much again as the limit (a statement split among threads that
/// passes its threads' shares runs again on one, which may take back memory the
/// allocator kept). (Each runs alone in a child process, whose peak memory is its own.)
#[test]
#[cfg(target_os = "linux")]
fn memory_limit_holds_for_what_a_statement_holds() {
    for case in ["despawn", "detach", "join", "group"] {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["memory_process", "--exact", "--nocapture", "--test-threads", "1"])
            .env("ECSQL_MEMORY_CASE", case)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let error = text
            .lines()
            .find(|l| l.starts_with("error"))
            .unwrap_or_else(|| panic!("{case}: {text}"));
        assert!(
            error.contains("MemoryLimit") && error.contains("limit: 100000000"),
            "{case}: {error}"
        );
        let grew: u64 = text
            .lines()
            .find_map(|l| l.strip_prefix("grew "))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{case}: {text}"));
        assert!(
            grew <= 150,
            "{case}: the peak grew by {grew} MB under a 100 MB limit"
        );
    }
}

#[test]
fn a_statement_timeout_stops_a_long_statement_or_a_long_wait_and_nothing_after() {
    let db = Database::open_in_memory();
    let conn = db.connect();
    conn.execute_batch("CREATE COMPONENT Gold (n INT); SPAWN Gold(1)")
        .unwrap();
    conn.set_statement_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let timed_out = |result: ecsql::Result<usize>, took: Duration| match result {
        Err(Error::Exec(ExecError {
            kind: ExecErrorKind::TimedOut { after },
            ..
        })) => {
            assert_eq!(after, Duration::from_millis(200));
            assert!(took >= after && took < Duration::from_secs(20), "{took:?}");
        }
        other => panic!("expected a statement timeout, got {other:?}"),
    };
    // A statement running long.
    let started = Instant::now();
    timed_out(conn.execute(FOREVER, ()), started.elapsed());
    // A write waiting for another connection's transaction longer than its timeout (and
    // shorter than its busy timeout).
    let (begun, begin) = std::sync::mpsc::channel();
    let (end, ended) = std::sync::mpsc::channel::<()>();
    let holder = std::thread::spawn({
        let db = db.clone();
        move || {
            let other = db.connect();
            other.execute_batch("BEGIN; UPDATE Gold SET n = 0").unwrap();
            begun.send(()).unwrap();
            let _ = ended.recv();
            other.execute_batch("ROLLBACK").unwrap();
        }
    });
    begin.recv().unwrap();
    let started = Instant::now();
    timed_out(conn.execute("UPDATE Gold SET n = 3", ()), started.elapsed());
    end.send(()).unwrap();
    holder.join().unwrap();
    // Quick calls after, each within its own timeout, are not stopped; nor are calls
    // that together run past it.
    for _ in 0..50 {
        conn.execute("UPDATE Gold SET n = Gold.n + 1", ()).unwrap();
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(
        conn.query_row("SELECT Gold.n FROM Gold", (), |r| r.get::<_, i64>(0))
            .unwrap(),
        51
    );
    // A long statement right after many quick ones (whose deadlines the watchdog was not
    // woken for) is stopped at its own.
    for _ in 0..1000 {
        conn.execute("UPDATE Gold SET n = Gold.n + 1", ()).unwrap();
    }
    let started = Instant::now();
    timed_out(conn.execute(FOREVER, ()), started.elapsed());
}

#[test]
fn a_prepared_point_read_waits_and_refuses_as_any_read() {
    // Prepared, and as text (the same text each time, and the id written in, a different
    // id each read: its shape's plan with the id as its parameter), each answered from its
    // kept plan past the statement machinery where nothing else is owed.
    for way in ["prepared", "the same text", "the id written in"] {
        let db = Database::open_in_memory();
        let reader = db.connect();
        reader.execute("CREATE COMPONENT Gold (amount INT)", ()).unwrap();
        reader
            .execute("SPAWN Gold(amount => 10) FROM range(5) AS r(i)", ())
            .unwrap();
        let ids: Vec<ecsql::Entity> = reader
            .prepare("SELECT id FROM Gold")
            .unwrap()
            .query_as::<(ecsql::Entity,)>(())
            .unwrap()
            .into_iter()
            .map(|(id,)| id)
            .collect();
        let sql = "SELECT Gold.amount FROM Gold WHERE id = ?1";
        let mut amount = reader.prepare(sql).unwrap();
        let mut next = ids.iter().cycle();
        let mut read = || {
            let &id = next.next().expect("ids");
            match way {
                "prepared" => amount.query_row([id], |r| r.get::<_, i64>(0)),
                "the same text" => reader.query_row(sql, [id], |r| r.get::<_, i64>(0)),
                _ => reader.query_row(
                    &format!("SELECT Gold.amount FROM Gold WHERE id = {}", id.to_bits()),
                    (),
                    |r| r.get::<_, i64>(0),
                ),
            }
        };
        // Planned at the first runs and found a point read; the later runs answer it
        // from the kept plan.
        for _ in 0..4 {
            assert_eq!(read().unwrap(), 10, "{way}");
        }
        // Another connection (on this thread: refused at once) holds a transaction and
        // has written: the point read neither sees its write nor runs.
        let other = db.connect();
        other
            .execute_batch("BEGIN; UPDATE Gold SET amount = 99;")
            .unwrap();
        let e = read().unwrap_err();
        assert!(e.to_string().contains("holds an open transaction"), "{way}: {e}");
        other.execute("ROLLBACK", ()).unwrap();
        assert_eq!(read().unwrap(), 10, "{way}");
        // Its own connection's transaction: its writes are seen, and gone after ROLLBACK.
        reader
            .execute_batch("BEGIN; UPDATE Gold SET amount = 20;")
            .unwrap();
        assert_eq!(read().unwrap(), 20, "{way}");
        reader.execute("ROLLBACK", ()).unwrap();
        assert_eq!(read().unwrap(), 10, "{way}");
        // A point read is a query of the transaction it runs in: its level is fixed after.
        reader
            .execute("BEGIN ISOLATION LEVEL READ COMMITTED", ())
            .unwrap();
        assert_eq!(read().unwrap(), 10, "{way}");
        let e = reader
            .execute("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", ())
            .unwrap_err();
        assert!(
            e.to_string().contains("must be called before any query"),
            "{way}: {e}"
        );
        reader.execute("ROLLBACK", ()).unwrap();
        // Inside with_world on the same thread: the error, not a read past the lock.
        let inside = reader.with_world(|_| read()).unwrap();
        let e = inside.unwrap_err();
        assert!(matches!(e, Error::Misuse { .. }), "{way}: {e}");
        assert_eq!(read().unwrap(), 10, "{way}");
    }
}
