//! The public Rust API, used the way an embedding program would: `Database`,
//! `Connection`, parameters, typed row reads, matchable errors, prepared statements and
//! threads.

use ecsql::{Database, Entity, Error, Location, ParseError, PlanError, PlanErrorKind, Value};
use ecsql::{ExecError, ExecErrorKind};

fn setup() -> ecsql::Connection {
    let db = Database::open_in_memory();
    let conn = db.connect();
    conn.execute_batch(
        "CREATE COMPONENT Position (x REAL, y REAL);
         CREATE COMPONENT Velocity (x REAL, y REAL);
         CREATE COMPONENT Name (value TEXT);
         CREATE COMPONENT Health (hp INT DEFAULT 100, alive BOOL DEFAULT TRUE);
         CREATE COMPONENT ChildOf (parent ENTITY);",
    )
    .unwrap();
    conn
}

#[test]
fn the_design_example_runs() -> ecsql::Result<()> {
    let db = Database::open_in_memory();
    let conn = db.connect();
    conn.execute("CREATE COMPONENT Position (x REAL, y REAL)", ())?;
    let id: i64 = conn.query_row("SPAWN Position(1, 2)", (), |row| row.get(0))?;
    assert_eq!(id, 1);
    conn.execute("SPAWN Position(0.25, 0)", ())?;
    let mut stmt = conn.prepare("SELECT id, Position.x FROM Position WHERE Position.x > ?1")?;
    let mut seen = Vec::new();
    for row in stmt.query((0.5,))? {
        let row = row?;
        let x: f32 = row.get("Position.x")?;
        seen.push((row.get::<_, i64>("id")?, x));
    }
    assert_eq!(seen, vec![(1, 1.0)]);
    Ok(())
}

/// A row computed from no table has columns of its expressions' types, as any other row.
#[test]
fn a_row_computed_from_no_table_has_typed_columns() -> ecsql::Result<()> {
    let conn = Database::open_in_memory().connect();
    let mut statement = conn.prepare("SELECT 1 + 2, CAST(0.5 AS REAL), CAST(NULL AS INT)")?;
    let rows = statement.query(())?;
    assert_eq!(rows.column::<i64>(0)?, &[3]);
    assert_eq!(rows.column::<f32>(1)?, &[0.5]);
    match rows.column::<i64>(2) {
        Err(Error::InvalidColumnType { found, .. }) => assert_eq!(found, "NULLs"),
        other => panic!("an INT column of a NULL, not {other:?}"),
    }
    Ok(())
}

#[test]
fn a_spawn_of_parameters_converts_them_as_it_converts_written_values() -> ecsql::Result<()> {
    let conn = setup();
    let mut spawn = conn.prepare("SPAWN Health(hp => ?1), ChildOf(?2)")?;
    // A whole FLOAT into INT is stored; NULL into ENTITY is kept.
    spawn.execute((2.0, None::<Entity>))?;
    // A FLOAT that is not whole, and NULL, into INT: refused, naming the field, and
    // nothing is spawned.
    let err = spawn.execute((2.5, None::<Entity>)).unwrap_err().to_string();
    assert!(
        err.contains("Health.hp is INT and") && err.contains("is not whole"),
        "{err}"
    );
    let err = spawn
        .execute((None::<f64>, None::<Entity>))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("Health.hp cannot be NULL (only ENTITY fields may be) at line 1, column 20"),
        "{err}"
    );
    let rows: Vec<(i64, bool, bool)> = conn
        .prepare("SELECT Health.hp, Health.alive, ChildOf.parent IS NULL FROM Health, ChildOf")?
        .query_map((), |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<ecsql::Result<_>>()?;
    assert_eq!(rows, vec![(2, true, true)]);
    Ok(())
}

#[test]
fn parameters_by_position_number_and_name() -> ecsql::Result<()> {
    let conn = setup();
    conn.execute("SPAWN Position(?, ?)", (1.5f32, 2))?;
    conn.execute("SPAWN Position(?2, ?1)", [3.0, 4.0])?;
    conn.execute(
        "SPAWN Position(:x, $y)",
        [(":x", &5 as &dyn ecsql::ToParam), ("y", &6.5)],
    )?;
    let rows: Vec<(f32, f32)> = conn
        .prepare("SELECT Position.x, Position.y FROM Position ORDER BY Position.x")?
        .query_map((), |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<ecsql::Result<_>>()?;
    assert_eq!(rows, vec![(1.5, 2.0), (4.0, 3.0), (5.0, 6.5)]);
    let n: i64 = conn.query_row(
        "SELECT count(*) FROM Position WHERE Position.x > $min",
        [("$min", &2 as &dyn ecsql::ToParam)],
        |r| r.get(0),
    )?;
    assert_eq!(n, 2);
    let text: String = conn.query_row("SELECT ? || '!'", ("hi",), |r| r.get(0))?;
    assert_eq!(text, "hi!");
    let null: Option<i64> = conn.query_row("SELECT ?", (None::<i64>,), |r| r.get(0))?;
    assert_eq!(null, None);
    match conn.execute("SELECT ?2", (1,)) {
        Err(Error::Plan(PlanError {
            kind: PlanErrorKind::MissingParameter { name },
            at,
            ..
        })) => {
            assert_eq!(name, "?2");
            assert_eq!(at, Location::new(1, 8));
        }
        other => panic!("expected a missing parameter, got {other:?}"),
    }
    // As in rusqlite, values the statement has no parameter for are an error: a count
    // past its highest ?N, or a name it does not use (a misspelling).
    let count =
        |sql: &str, params: &[&dyn ecsql::ToParam]| conn.query_row(sql, params, |r| r.get::<_, i64>(0));
    let too_many = count("SELECT count(*) FROM Position WHERE Position.x > ?1", &[&0, &1]);
    assert!(matches!(
        too_many,
        Err(Error::InvalidParameterCount {
            given: 2,
            expected: 1
        })
    ));
    assert_eq!(
        too_many.unwrap_err().to_string(),
        "2 parameter values were given, but the statement has 1 positional parameter"
    );
    assert!(matches!(
        count("SELECT count(*) FROM Position", &[&0]),
        Err(Error::InvalidParameterCount { .. })
    ));
    let typo = conn.query_row(
        "SELECT count(*) FROM Position WHERE Position.x > :min",
        ecsql::named_params! { ":min": 0, ":mni": 1 },
        |r| r.get::<_, i64>(0),
    );
    assert!(
        matches!(&typo, Err(Error::InvalidParameterName(name, names)) if name == "mni" && names == "min"),
        "{typo:?}"
    );
    let mut prepared = conn.prepare("SELECT count(*) FROM Position WHERE Position.x > @min")?;
    assert_eq!(
        prepared.query_row(ecsql::named_params! { "@min": 2 }, |r| r.get::<_, i64>(0))?,
        2
    );
    assert!(matches!(
        prepared.execute((1,)),
        Err(Error::InvalidParameterCount { .. })
    ));
    Ok(())
}

/// `row.get::<T>(i)` (which reads a number or a flag straight from its column) and
/// `T::from_value` of the cell's `Value` give the same answer: the same value, or an error
/// naming the same Rust type.
fn reads_agree<T: ecsql::FromValue + PartialEq + std::fmt::Debug>(row: &ecsql::Row, i: usize) {
    let typed = row.get::<_, T>(i);
    let by_value = T::from_value(row.get_value(i).unwrap());
    match (typed, by_value) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "column {i}"),
        (Err(Error::InvalidColumnType { wanted, .. }), Err(w)) => assert_eq!(wanted, w, "column {i}"),
        (typed, by_value) => panic!("column {i}: {typed:?} read typed, {by_value:?} by value"),
    }
}

#[test]
fn a_typed_read_agrees_with_the_value_on_every_kind_of_cell() -> ecsql::Result<()> {
    let conn = Database::open_in_memory().connect();
    conn.execute_batch(
        "CREATE COMPONENT K (i INT, f FLOAT, r REAL, b BOOL, t TEXT, e ENTITY);
         SPAWN K(1, 2.5, 0.5, TRUE, 'x', NULL);
         SPAWN K(-2, 1e300, -0.25, FALSE, 'yz', NULL);
         UPDATE K SET e = (SELECT min(id) FROM K) WHERE K.i < 0;",
    )?;
    // Every type of column, ids, NULLs inside a column of values (a CASE), a column of
    // nothing but NULL, a FLOAT past f32's range, an INT past i32's and u64's.
    let mut stmt = conn.prepare(
        "SELECT K.i, K.f, K.r, K.b, K.t, K.e, id,
                CASE WHEN K.i > 0 THEN NULL ELSE K.r END,
                CASE WHEN K.i > 0 THEN K.i END,
                NULL, 1e39, -5000000000
         FROM K ORDER BY K.i",
    )?;
    let mut rows = stmt.query(())?;
    let mut seen = 0;
    while let Some(row) = rows.next()? {
        seen += 1;
        for i in 0..row.len() {
            reads_agree::<i64>(&row, i);
            reads_agree::<i32>(&row, i);
            reads_agree::<u64>(&row, i);
            reads_agree::<f64>(&row, i);
            reads_agree::<f32>(&row, i);
            reads_agree::<bool>(&row, i);
            reads_agree::<String>(&row, i);
            reads_agree::<Entity>(&row, i);
            reads_agree::<Value>(&row, i);
            reads_agree::<Option<i64>>(&row, i);
            reads_agree::<Option<f64>>(&row, i);
            reads_agree::<Option<f32>>(&row, i);
            reads_agree::<Option<bool>>(&row, i);
            reads_agree::<Option<Entity>>(&row, i);
        }
    }
    assert_eq!(seen, 2);
    Ok(())
}

#[test]
fn rows_kept_from_query_map_are_each_their_own_row() -> ecsql::Result<()> {
    let conn = Database::open_in_memory().connect();
    // 10 rows (a result the statement keeps for its next run) and 1,000 (one it does
    // not, whose rows are lent in turn from one box).
    for n in [10_i64, 1000] {
        let mut stmt = conn.prepare(
            "SELECT i, i * 2 AS twice, 'n' || i, CASE WHEN i % 3 = 0 THEN NULL ELSE i END AS m
             FROM range(?1) AS r(i)",
        )?;
        let rows: Vec<ecsql::Row> = stmt
            .query_map([n], |r| Ok(r.clone()))?
            .collect::<ecsql::Result<_>>()?;
        assert_eq!(rows.len() as i64, n);
        for (i, row) in (0..).zip(&rows) {
            assert_eq!(row.get::<_, i64>(0)?, i);
            assert_eq!(row.get::<_, i64>("twice")?, 2 * i);
            assert_eq!(row.values()[2], Value::Text(format!("n{i}")));
            assert_eq!(row.get::<_, Option<i64>>("m")?, (i % 3 != 0).then_some(i));
            assert_eq!(
                (row.len(), row.column_names()),
                (4, vec!["i", "twice", "'n' || i", "m"])
            );
        }
        // The statement runs again over the rows kept from its last run.
        let again: Vec<(i64, i64, String, Option<i64>)> = stmt.query_as([n])?;
        assert_eq!(again.len() as i64, n);
        assert_eq!(
            again.last(),
            Some(&(n - 1, 2 * (n - 1), format!("n{}", n - 1), None))
        );
        assert_eq!(rows[3].get::<_, i64>(1)?, 6);
        let mut sizes = stmt.query_map([n], |r| r.get::<_, i64>(0))?;
        assert_eq!(sizes.size_hint(), (n as usize, Some(n as usize)));
        sizes.next();
        assert_eq!(sizes.size_hint().0, n as usize - 1);
        drop(sizes);
        // Numbers only: 10 of them are a result the statement keeps (its rows shared).
        let mut numbers = conn.prepare("SELECT i FROM range(?1) AS r(i)")?;
        let rows: Vec<ecsql::Row> = numbers
            .query_map([n], |r| Ok(r.clone()))?
            .collect::<ecsql::Result<_>>()?;
        let read: Vec<i64> = rows.iter().map(|r| r.get(0)).collect::<ecsql::Result<_>>()?;
        assert_eq!(read, (0..n).collect::<Vec<_>>());
        // Some rows kept, the rest only read: each kept row is its own, every row read
        // right before and after the first is kept.
        let mut kept = Vec::new();
        let read: Vec<Option<i64>> = stmt
            .query_map([n], |r| {
                let i = r.get::<_, i64>(0)?;
                if i % 4 == 1 {
                    kept.push(r.clone());
                }
                r.get("m")
            })?
            .collect::<ecsql::Result<_>>()?;
        assert_eq!(
            read,
            (0..n).map(|i| (i % 3 != 0).then_some(i)).collect::<Vec<_>>()
        );
        let kept: Vec<(i64, String)> = kept
            .iter()
            .map(|r| Ok((r.get(0)?, r.get(2)?)))
            .collect::<ecsql::Result<_>>()?;
        let expected: Vec<(i64, String)> = (0..n)
            .filter(|i| i % 4 == 1)
            .map(|i| (i, format!("n{i}")))
            .collect();
        assert_eq!(kept, expected);
    }
    Ok(())
}

#[test]
fn typed_reads_and_their_errors() -> ecsql::Result<()> {
    let conn = setup();
    let parent: Entity = conn.query_row("SPAWN Name('root'), Health(7)", (), |r| r.get(0))?;
    conn.execute("SPAWN ChildOf(?1), Name('kid')", (parent,))?;
    let row = conn.query_row(
        "SELECT Health.hp, Health.alive, Name.value, id FROM Health, Name",
        (),
        |r| Ok(r.clone()),
    )?;
    assert_eq!(row.get::<_, i64>(0)?, 7);
    assert_eq!(row.get::<_, f64>("Health.hp")?, 7.0);
    assert!(row.get::<_, bool>(1)?);
    assert_eq!(row.get::<_, String>("Name.value")?, "root");
    assert_eq!(row.get::<_, Entity>("id")?, parent);
    assert_eq!(row.get::<_, u64>("id")?, parent.to_bits());
    assert_eq!(row.get_value(2)?, &Value::Text("root".into()));
    assert!(matches!(
        row.get::<_, bool>(2),
        Err(Error::InvalidColumnType { wanted: "bool", .. })
    ));
    assert!(matches!(row.get::<_, i64>(9), Err(Error::InvalidColumn(_))));
    assert!(matches!(row.get::<_, i64>("nope"), Err(Error::InvalidColumn(_))));
    // A FLOAT past f32's range is not read as an infinity.
    let wide = conn.query_row("SELECT 1e39, 3e38", (), |r| Ok(r.clone()))?;
    assert!(matches!(
        wide.get::<_, f32>(0),
        Err(Error::InvalidColumnType { wanted: "f32", .. })
    ));
    assert_eq!(wide.get::<_, f32>(1)?, 3e38);

    let p: Option<Entity> = conn.query_row("SELECT ChildOf.parent FROM ChildOf", (), |r| r.get(0))?;
    assert_eq!(p, Some(parent));
    conn.execute("UPDATE ChildOf SET parent = NULL", ())?;
    let p: Option<Entity> = conn.query_row("SELECT ChildOf.parent FROM ChildOf", (), |r| r.get(0))?;
    assert_eq!(p, None);
    assert!(matches!(
        conn.query_row("SELECT ChildOf.parent FROM ChildOf", (), |r| r
            .get::<_, Entity>(0)),
        Err(Error::InvalidColumnType { .. })
    ));
    assert!(matches!(
        conn.query_row("SELECT id FROM Velocity", (), |r| r.get::<_, i64>(0)),
        Err(Error::QueryReturnedNoRows)
    ));

    let mut stmt = conn.prepare("SELECT id, Name.value AS n FROM Name WHERE Name.value = ?")?;
    assert_eq!(stmt.column_names()?, vec!["id", "n"]);
    let first = stmt.query(("kid",))?.next()?.unwrap();
    assert_eq!((first.column_count(), first.column_names()), (2, vec!["id", "n"]));
    let rows = stmt.query(("kid",))?;
    assert_eq!(rows.column_names(), vec!["id", "n"]);
    assert_eq!(
        rows.column_types(),
        vec![ecsql::DataType::Entity, ecsql::DataType::Text]
    );
    assert_eq!(rows.count(), 1);

    // The schedule's reports name their columns before they run; asking a TICK's runs none.
    let names = |sql: &str| conn.prepare(sql).and_then(|s| s.column_names());
    assert_eq!(
        names("SHOW SYSTEMS")?,
        [
            "name", "phase", "order", "enabled", "every", "runs", "together", "last_ms", "kind", "reads",
            "writes"
        ]
    );
    assert_eq!(names("EXPLAIN TICK")?, ["plan"]);
    assert_eq!(names("SHOW EVENTS")?.first().map(String::as_str), Some("event"));
    let before = conn.clock()?.tick;
    assert!(names("TICK 3")?.is_empty());
    assert_eq!(conn.clock()?.tick, before);
    Ok(())
}

#[test]
fn every_statement_names_the_columns_it_returns_before_it_runs() -> ecsql::Result<()> {
    let conn = Database::open_in_memory().connect();
    conn.execute_batch(
        "CREATE COMPONENT Unit (hp INT, name TEXT); CREATE EVENT Hit (amount INT);
         CREATE SYSTEM heal AS UPDATE Unit SET hp = Unit.hp + 1",
    )?;
    // Each statement's columns as `Statement::columns` tells them, then as a run gives
    // them (every one runs on a database where it can).
    for sql in [
        "SELECT Unit.hp, Unit.name AS n FROM Unit",
        "SPAWN Unit(1, 'a')",
        "SPAWN Unit(2, 'b') RETURNING Unit.hp, id",
        "UPDATE Unit SET hp = 3 WHERE Unit.hp = 1 RETURNING Unit.name",
        "UPDATE Unit SET hp = 4 WHERE Unit.hp = 2",
        "CREATE COMPONENT Mark (n INT)",
        "INSERT INTO Mark (id, n) SELECT id, 5 FROM Unit RETURNING id",
        "SHOW COMPONENTS",
        "SHOW ARCHETYPES",
        "SHOW INDEXES",
        "DESCRIBE Unit",
        "DESCRIBE Hit",
        "PRAGMA busy_timeout",
        "PRAGMA busy_timeout = 100",
        "PRAGMA",
        "EXPLAIN SELECT Unit.hp FROM Unit",
        "EXPLAIN ANALYZE SELECT Unit.hp FROM Unit",
        "EXPLAIN SUBSCRIBE SELECT Unit.hp FROM Unit",
        "SHOW SYSTEMS",
        "SHOW EVENTS",
        "EXPLAIN TICK",
        "TICK",
        "INSERT INTO Hit (amount) VALUES (3)",
        "SELECT Hit.amount FROM Hit",
        "DELETE FROM Mark WHERE Mark.n = 5 RETURNING id",
        "DESPAWN FROM Unit WHERE Unit.hp = 4",
        "CREATE TAG Tagged",
    ] {
        let told: Vec<(String, ecsql::DataType)> = conn
            .prepare(sql)?
            .columns()?
            .into_iter()
            .map(|c| (c.name, c.ty))
            .collect();
        let mut ran = Vec::new();
        conn.run_script(sql, |r| {
            ran.push(r.map(|r| r.columns.into_iter().map(|c| (c.name, c.ty)).collect::<Vec<_>>()));
            true
        })?;
        let ran = ran.pop().expect("one statement")?;
        assert_eq!(told, ran, "{sql}");
    }
    Ok(())
}

#[test]
fn errors_are_matchable_and_located() {
    let conn = setup();
    let e = conn.execute("SELECT 1 FROM\n  Position WHERE", ()).unwrap_err();
    assert!(
        matches!(e, Error::Parse(ParseError { at, .. }) if at == Location::new(2, 17)),
        "{e}"
    );
    assert_eq!(e.location(), Some(Location::new(2, 17)));

    let e = conn.execute("SELECT Nope.x FROM Nope", ()).unwrap_err();
    assert!(
        matches!(&e, Error::Plan(PlanError { kind: PlanErrorKind::UnknownComponent { name, .. }, .. }) if name == "Nope"),
        "{e}"
    );

    let e = conn.execute("SELECT Position.z FROM Position", ()).unwrap_err();
    assert!(
        matches!(&e, Error::Plan(PlanError { kind: PlanErrorKind::UnknownField { component, field, .. }, .. }) if component == "Position" && field == "z"),
        "{e}"
    );

    let e = conn.execute("SELECT x FROM Position, Velocity", ()).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Plan(PlanError {
                kind: PlanErrorKind::Ambiguous { .. },
                ..
            })
        ),
        "{e}"
    );

    let e = conn.execute("SPAWN Position('a', 1)", ()).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Plan(PlanError {
                kind: PlanErrorKind::TypeMismatch { .. },
                ..
            })
        ),
        "{e}"
    );
    assert_eq!(e.location(), Some(Location::new(1, 16)));

    let id: Entity = conn.query_row("SPAWN Position(0, 0)", (), |r| r.get(0)).unwrap();
    conn.execute("DESPAWN ?", (id,)).unwrap();
    let e = conn.execute("DESPAWN ?", (id,)).unwrap_err();
    assert!(
        matches!(e, Error::Exec(ExecError { kind: ExecErrorKind::DespawnedEntity { entity, .. }, .. }) if entity == id.to_bits()),
        "{e}"
    );
    let e = conn.execute("DESPAWN 12345", ()).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Exec(ExecError {
                kind: ExecErrorKind::NoSuchEntity { entity: 12345, .. },
                ..
            })
        ),
        "{e}"
    );

    let id: Entity = conn
        .query_row("SPAWN Position(0, 0), Velocity(0, 0)", (), |r| r.get(0))
        .unwrap();
    let e = conn
        .execute("INSERT INTO Velocity (id, x) VALUES (?, 1)", (id,))
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Exec(ExecError {
                kind: ExecErrorKind::Constraint { .. },
                ..
            })
        ),
        "{e}"
    );

    let e = conn.execute("SELECT 1 / 0", ()).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Exec(ExecError {
                kind: ExecErrorKind::Arithmetic { .. },
                ..
            })
        ),
        "{e}"
    );

    let e = conn.execute("SELECT 1; SELECT 2", ()).unwrap_err();
    assert!(matches!(e, Error::Parse(_)), "{e}");
}

#[test]
fn prepared_statements_extend_their_table_list_when_tables_appear() -> ecsql::Result<()> {
    let conn = setup();
    conn.execute("SPAWN Position(1, 0)", ())?;
    let mut count = conn.prepare("SELECT count(*), sum(Position.x) FROM Position")?;
    let read = |stmt: &mut ecsql::Statement<'_>| -> ecsql::Result<(i64, f64)> {
        let row = stmt.query(())?.next()?.expect("one row");
        Ok((row.get(0)?, row.get(1)?))
    };
    assert_eq!(read(&mut count)?, (1, 1.0));
    assert_eq!(count.cached_scans(), 1);
    // New archetypes holding Position appear after the statement was first run.
    conn.execute("SPAWN Position(2, 0), Velocity(0, 0)", ())?;
    conn.execute("SPAWN Position(4, 0), Name('n')", ())?;
    assert_eq!(read(&mut count)?, (3, 7.0));
    assert_eq!(
        count.cached_scans(),
        1,
        "the same scan's list was extended, not a second one made"
    );
    // Dropping a component renumbers tables; the cache starts over.
    conn.execute("DROP COMPONENT Name", ())?;
    assert_eq!(read(&mut count)?, (3, 7.0));
    // A rollback restores an older set of tables; the cache must not keep the newer list.
    conn.execute("BEGIN", ())?;
    conn.execute("SPAWN Position(8, 0), Health", ())?;
    assert_eq!(read(&mut count)?, (4, 15.0));
    conn.execute("ROLLBACK", ())?;
    assert_eq!(read(&mut count)?, (3, 7.0));
    conn.execute("SPAWN Position(16, 0), ChildOf(NULL)", ())?;
    assert_eq!(read(&mut count)?, (4, 23.0));
    Ok(())
}

#[test]
fn database_is_send_and_sync() {
    fn check<T: Send + Sync + Clone>() {}
    check::<Database>();
    fn send<T: Send>() {}
    send::<ecsql::Connection>();
}

#[test]
fn threads_read_and_write_through_their_own_connections() {
    let db = Database::open_in_memory();
    let setup = db.connect();
    setup
        .execute_batch(
            "CREATE COMPONENT Counter (n INT);
             CREATE COMPONENT Account (balance INT);
             SPAWN Counter(0);
             SPAWN Account(500);
             SPAWN Account(500);",
        )
        .unwrap();
    const WRITERS: usize = 4;
    const INCREMENTS: usize = 200;
    std::thread::scope(|s| {
        for _ in 0..WRITERS {
            let db = db.clone();
            s.spawn(move || {
                let conn = db.connect();
                let mut inc = conn.prepare("UPDATE Counter SET n = Counter.n + 1").unwrap();
                for i in 0..INCREMENTS {
                    inc.execute(()).unwrap();
                    if i % 10 == 0 {
                        // Move money between the accounts inside a transaction.
                        conn.execute("BEGIN", ()).unwrap();
                        conn.execute(
                            "UPDATE Account SET balance = Account.balance - 7 WHERE id = 2",
                            (),
                        )
                        .unwrap();
                        conn.execute(
                            "UPDATE Account SET balance = Account.balance + 7 WHERE id = 3",
                            (),
                        )
                        .unwrap();
                        if i % 20 == 0 {
                            conn.execute("ROLLBACK", ()).unwrap();
                        } else {
                            conn.execute("COMMIT", ()).unwrap();
                        }
                    }
                }
            });
        }
        for _ in 0..2 {
            let db = db.clone();
            s.spawn(move || {
                let conn = db.connect();
                let mut total = conn.prepare("SELECT sum(Account.balance) FROM Account").unwrap();
                for _ in 0..300 {
                    let sum: i64 = total.query(()).unwrap().next().unwrap().unwrap().get(0).unwrap();
                    assert_eq!(sum, 1000, "a reader saw half a transfer");
                }
            });
        }
    });
    let n: i64 = setup
        .query_row("SELECT Counter.n FROM Counter", (), |r| r.get(0))
        .unwrap();
    assert_eq!(n, (WRITERS * INCREMENTS) as i64, "updates were lost");
    let moved: i64 = setup
        .query_row("SELECT Account.balance FROM Account WHERE id = 3", (), |r| {
            r.get(0)
        })
        .unwrap();
    // Of each writer's 20 transfers (i % 10 == 0), the 10 with i % 20 == 0 rolled back.
    assert_eq!(moved, 500 + (WRITERS * 10 * 7) as i64);
}

#[test]
fn a_dropped_connection_rolls_back_its_transaction() {
    let db = Database::open_in_memory();
    let a = db.connect();
    a.execute_batch("CREATE COMPONENT C (v INT); SPAWN C(1);")
        .unwrap();
    {
        let b = db.connect();
        b.execute("BEGIN", ()).unwrap();
        b.execute("UPDATE C SET v = 99", ()).unwrap();
        assert!(!b.is_autocommit());
    }
    let v: i64 = a.query_row("SELECT C.v FROM C", (), |r| r.get(0)).unwrap();
    assert_eq!(v, 1);
}

#[test]
fn whole_columns_read_as_typed_slices() -> ecsql::Result<()> {
    let conn = setup();
    conn.execute_batch("SPAWN Position(1, 2), Name('a'); SPAWN Position(3, 4);")?;
    let mut stmt =
        conn.prepare("SELECT id, Position.x, Name.value FROM Position LEFT JOIN Name ORDER BY id")?;
    let mut rows = stmt.query(())?;
    let xs: &[f32] = rows.column("Position.x")?;
    assert_eq!(xs, [1.0, 3.0]);
    let first_x = xs[0];
    let ids: &[Option<Entity>] = rows.column(0)?;
    assert!(ids.iter().all(Option::is_some));
    // The wrong type, and a column with NULLs, are errors that say which.
    let wrong = rows.column::<i64>(1).unwrap_err();
    assert_eq!(
        wrong.to_string(),
        "column Position.x holds REAL values, which cannot be read as i64"
    );
    let nulls = rows.column::<String>(2).unwrap_err();
    assert_eq!(
        nulls.to_string(),
        "column Name.value holds NULLs, which cannot be read as String"
    );
    // Reading a column leaves row iteration where it was.
    let first = rows.next()?.expect("a first row");
    assert_eq!(first.get_value(1)?, &Value::Real(first_x));
    assert_eq!(rows.remaining(), 1);
    Ok(())
}

/// A prepared statement keeps its plan between runs. Each of these would go wrong with a
/// stale plan: new parameter values, a parameter of another type, a value the plan folded
/// in (LIMIT), a subquery's result, a component dropped and declared again, a rollback.
#[test]
fn prepared_statements_rerun_with_fresh_values_and_catalog() -> ecsql::Result<()> {
    let conn = setup();
    conn.execute_batch("SPAWN Health(1); SPAWN Health(2); SPAWN Health(3);")?;
    let mut by_id = conn.prepare("SELECT Health.hp FROM Health WHERE id = ?1")?;
    let hp = |stmt: &mut ecsql::Statement<'_>, id: Value| -> ecsql::Result<Vec<i64>> {
        stmt.query_map([id], |r| r.get(0))?.collect()
    };
    let ids: Vec<Entity> = conn
        .prepare("SELECT id FROM Health ORDER BY id")?
        .query_map((), |r| r.get(0))?
        .collect::<ecsql::Result<_>>()?;
    assert_eq!(hp(&mut by_id, Value::Entity(ids[0]))?, [1]);
    assert_eq!(hp(&mut by_id, Value::Entity(ids[2]))?, [3]);
    assert_eq!(hp(&mut by_id, Value::Int(ids[1].to_bits() as i64))?, [2]);
    assert_eq!(hp(&mut by_id, Value::Null)?, Vec::<i64>::new());
    assert_eq!(hp(&mut by_id, Value::Entity(ids[1]))?, [2]);

    let mut limited = conn.prepare("SELECT Health.hp FROM Health ORDER BY 1 LIMIT ?1")?;
    for n in [1i64, 3, 2] {
        assert_eq!(
            limited.query_map([n], |r| r.get::<_, i64>(0))?.count(),
            n as usize
        );
    }

    let mut above =
        conn.prepare("SELECT count(*) FROM Health WHERE Health.hp > (SELECT avg(Health.hp) FROM Health)")?;
    let count = |stmt: &mut ecsql::Statement<'_>| -> ecsql::Result<i64> {
        stmt.query(())?.next()?.expect("one row").get(0)
    };
    assert_eq!(count(&mut above)?, 1);
    conn.execute("UPDATE Health SET hp = 0 WHERE Health.hp = 3", ())?;
    assert_eq!(
        count(&mut above)?,
        1,
        "the average is 1 now, and only hp 2 is above it"
    );

    // A correlated subquery keeps its results for one run: the next sees the world anew.
    let mut above_own = conn.prepare(
        "SELECT count(*) FROM Health AS h WHERE h.hp < (SELECT max(Health.hp) FROM Health WHERE Health.hp <> h.hp)",
    )?;
    assert_eq!(count(&mut above_own)?, 2, "hp 0 and 1 are below another's");
    conn.execute("UPDATE Health SET hp = 5 WHERE Health.hp = 0", ())?;
    assert_eq!(count(&mut above_own)?, 2, "hp 1 and 2 are below 5 now");
    conn.execute("UPDATE Health SET hp = 1", ())?;
    assert_eq!(count(&mut above_own)?, 0, "no other hp is larger");

    let mut names = conn.prepare("SELECT count(*) FROM Name")?;
    assert_eq!(count(&mut names)?, 0);
    conn.execute_batch("DROP COMPONENT Name; CREATE COMPONENT Name (value TEXT); SPAWN Name('a');")?;
    assert_eq!(count(&mut names)?, 1);

    conn.execute("BEGIN", ())?;
    conn.execute_batch(
        "DROP COMPONENT Name; CREATE COMPONENT Name (first TEXT); SPAWN Name('b'); SPAWN Name('c');",
    )?;
    assert_eq!(count(&mut names)?, 2);
    conn.execute("ROLLBACK", ())?;
    assert_eq!(count(&mut names)?, 1);
    Ok(())
}

/// `IS [NOT] DISTINCT FROM` takes a parameter like `=` does, NULL included, and gives
/// true or false, never NULL.
#[test]
fn is_distinct_from_takes_parameters_and_null() -> ecsql::Result<()> {
    let conn = setup();
    conn.execute_batch("SPAWN Health(1); SPAWN Health(2);")?;
    let mut same = conn.prepare("SELECT count(*) FROM Health WHERE Health.hp IS NOT DISTINCT FROM ?1")?;
    let mut other = conn.prepare("SELECT count(*) FROM Health WHERE Health.hp IS NOT ?")?;
    let mut test = conn.prepare("SELECT ?1 IS DISTINCT FROM ?2")?;
    let count = |stmt: &mut ecsql::Statement<'_>, v: Value| -> ecsql::Result<i64> {
        stmt.query_row([v], |r| r.get(0))
    };
    assert_eq!(count(&mut same, Value::Int(2))?, 1);
    assert_eq!(count(&mut same, Value::Null)?, 0);
    assert_eq!(count(&mut other, Value::Int(2))?, 1);
    assert_eq!(count(&mut other, Value::Null)?, 2);
    let mut distinct = |a: Value, b: Value| -> ecsql::Result<Value> { test.query_row([a, b], |r| r.get(0)) };
    assert_eq!(distinct(Value::Null, Value::Null)?, Value::Bool(false));
    assert_eq!(distinct(Value::Int(1), Value::Null)?, Value::Bool(true));
    assert_eq!(
        distinct(Value::Text("ü".into()), Value::Text("ü".into()))?,
        Value::Bool(false)
    );
    Ok(())
}

/// A window takes parameters where a constant goes (a frame's offsets, lag's offset and
/// default, ntile's buckets), and a prepared statement run again with other values gives
/// what the text written with them gives.
#[test]
fn window_functions_take_parameters() -> ecsql::Result<()> {
    let conn = setup();
    conn.execute_batch("SPAWN Health(10); SPAWN Health(20); SPAWN Health(30); SPAWN Health(40);")?;
    let mut sums = conn.prepare(
        "SELECT sum(Health.hp) OVER (ORDER BY Health.hp ROWS BETWEEN ?1 PRECEDING AND ?2 FOLLOWING) FROM Health ORDER BY Health.hp",
    )?;
    let mut run =
        |a: i64, b: i64| -> ecsql::Result<Vec<i64>> { sums.query_map((a, b), |r| r.get(0))?.collect() };
    assert_eq!(run(0, 0)?, vec![10, 20, 30, 40]);
    assert_eq!(run(1, 0)?, vec![10, 30, 50, 70]);
    assert_eq!(run(5, 1)?, vec![30, 60, 100, 100]);
    assert!(
        run(-1, 0).is_err_and(|e| e.to_string().contains("offset must not be negative")),
        "a negative offset is refused when it runs"
    );
    let mut shifted = conn.prepare(
        "SELECT lag(Health.hp, ?1, ?2) OVER (ORDER BY Health.hp), ntile(?3) OVER (ORDER BY Health.hp) FROM Health ORDER BY Health.hp",
    )?;
    let rows: Vec<(i64, i64)> = shifted
        .query_map((2, -1, 3), |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<ecsql::Result<_>>()?;
    assert_eq!(rows, vec![(-1, 1), (-1, 1), (10, 2), (20, 3)]);
    let mut ranged = conn.prepare(
        "SELECT count(*) OVER (ORDER BY Health.hp RANGE BETWEEN ?1 PRECEDING AND CURRENT ROW) FROM Health ORDER BY Health.hp",
    )?;
    let counts: Vec<i64> = ranged
        .query_map([15], |r| r.get(0))?
        .collect::<ecsql::Result<_>>()?;
    assert_eq!(counts, vec![1, 2, 2, 2]);
    Ok(())
}

/// A write with RETURNING is a statement that returns rows: read through `query`, with
/// parameters, again and again as a prepared statement; `execute` refuses it when it
/// returned rows, as rusqlite does, so that they are not lost unseen.
#[test]
fn a_prepared_update_by_id_follows_its_entity_and_writes_nothing_for_no_entity() -> ecsql::Result<()> {
    let conn = setup();
    let e: Entity = conn.query_row("SPAWN Health(hp => 10)", (), |r| r.get(0))?;
    let mut heal = conn.prepare("UPDATE Health SET hp = Health.hp + ?2 WHERE id = ?1")?;
    assert_eq!(heal.execute((e, 1))?, 1);
    // The entity moves to another table and back; the kept plan finds it in each.
    conn.execute("INSERT INTO Name (id, value) VALUES (?1, 'moved')", (e,))?;
    assert_eq!(heal.execute((e, 1))?, 1);
    conn.execute("DELETE FROM Name WHERE id = ?1", (e,))?;
    assert_eq!(heal.execute((e, 1))?, 1);
    // No entity: NULL, a negative number. A text is no id at all.
    assert_eq!(heal.execute((Value::Null, 1))?, 0);
    assert_eq!(heal.execute((-1, 1))?, 0);
    let err = heal.execute(("nope", 1)).unwrap_err();
    assert!(
        err.to_string().contains("cannot compare ENTITY with TEXT"),
        "{err}"
    );
    let hp = |conn: &ecsql::Connection| {
        conn.query_row("SELECT Health.hp FROM Health WHERE id = ?1", (e,), |r| {
            r.get::<_, i64>(0)
        })
    };
    assert_eq!(hp(&conn)?, 13);
    // An overflow writes nothing and says where.
    let err = heal.execute((e, i64::MAX)).unwrap_err();
    assert!(err.to_string().contains("integer out of range"), "{err}");
    assert_eq!(hp(&conn)?, 13);
    conn.execute("DESPAWN ?1", (e,))?;
    assert_eq!(heal.execute((e, 1))?, 0);
    Ok(())
}

#[test]
fn returning_gives_rows_to_prepared_statements() -> ecsql::Result<()> {
    let conn = setup();
    let mut spawn = conn.prepare("SPAWN Health(hp => ?1) RETURNING id, Health.hp, Health.alive")?;
    let (id, hp, alive): (Entity, i64, bool) =
        spawn.query_row([30], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    assert_eq!((hp, alive), (30, true));
    spawn.query_row([40], |r| r.get::<_, i64>(1))?;
    let mut hurt = conn.prepare("UPDATE Health SET hp = Health.hp - ?1 WHERE id = ?2 RETURNING Health.hp")?;
    assert_eq!(hurt.query_row((5, id), |r| r.get::<_, i64>(0))?, 25);
    assert_eq!(hurt.query_row((5, id), |r| r.get::<_, i64>(0))?, 20);
    let mut gone = conn.prepare("DESPAWN FROM Health WHERE Health.hp < ?1 RETURNING id, Health.hp")?;
    let rows: Vec<(Entity, i64)> = gone
        .query_map([35], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<ecsql::Result<_>>()?;
    assert_eq!(rows, [(id, 20)]);
    let count =
        |conn: &ecsql::Connection| conn.query_row("SELECT count(*) FROM Health", (), |r| r.get::<_, i64>(0));
    let before = count(&conn)?;
    let refused = conn.execute("SPAWN Health(1) RETURNING id", ());
    assert!(matches!(refused, Err(ecsql::Error::ExecuteReturnedResults)));
    // The write was done, as in rusqlite, and the error says so (a retry would spawn twice).
    assert_eq!(count(&conn)?, before + 1);
    let said = refused.unwrap_err().to_string();
    assert!(
        said.contains("a write with RETURNING was done all the same"),
        "{said}"
    );
    assert_eq!(
        conn.execute("DELETE FROM Health WHERE Health.hp > 100 RETURNING id", ())?,
        0
    );
    Ok(())
}

/// Three entities named n0, n1 and n2, with hp 0, 10 and 20.
fn three_named(conn: &ecsql::Connection) -> ecsql::Result<Vec<Entity>> {
    (0..3)
        .map(|i| {
            conn.query_row("SPAWN Name(?1), Health(?2)", (format!("n{i}"), i * 10), |r| {
                r.get(0)
            })
        })
        .collect()
}

#[test]
fn a_rerun_leaves_the_rows_and_values_of_earlier_runs_as_they_were() -> ecsql::Result<()> {
    let conn = setup();
    let ids = three_named(&conn)?;
    // A point read run again writes its result into the memory of the last one, once
    // nothing reads that any more: rows and a row still held keep their own values.
    let mut by_id = conn.prepare("SELECT id, Name.value, Health.hp FROM Name, Health WHERE id = ?1")?;
    let mut first = by_id.query([ids[0]])?;
    let second = by_id.query([ids[1]])?.next()?.expect("a row");
    let mut third = by_id.query([ids[2]])?;
    let row =
        |id: Entity, name: &str, hp: i64| vec![Value::Entity(id), Value::Text(name.into()), Value::Int(hp)];
    assert_eq!(third.next()?.expect("a row").values(), row(ids[2], "n2", 20));
    assert_eq!(second.values(), row(ids[1], "n1", 10));
    assert_eq!(first.next()?.expect("a row").values(), row(ids[0], "n0", 0));
    drop((first, second, third));
    for (i, id) in ids.iter().enumerate().rev() {
        let values = by_id.query([*id])?.next()?.expect("a row").values().to_vec();
        assert_eq!(values, row(*id, &format!("n{i}"), i as i64 * 10));
    }
    // Runs of the kept plan while the entities change in between: a value updated, an
    // entity moved to a table made after the plan (it gains a component), one despawned.
    conn.execute("UPDATE Health SET hp = 11 WHERE id = ?1", [ids[1]])?;
    assert_eq!(
        by_id.query([ids[1]])?.next()?.expect("a row").values(),
        row(ids[1], "n1", 11)
    );
    conn.execute_batch("CREATE TAG Marked")?;
    conn.execute("INSERT INTO Marked (id) VALUES (?1)", [ids[2]])?;
    assert_eq!(
        by_id.query([ids[2]])?.next()?.expect("a row").values(),
        row(ids[2], "n2", 20)
    );
    conn.execute("DESPAWN ?1", [ids[0]])?;
    assert!(by_id.query([ids[0]])?.next()?.is_none(), "n0 is gone");
    // The same statement bound again after its component changed type.
    conn.execute_batch("DROP COMPONENT Health; CREATE COMPONENT Health (hp REAL);")?;
    conn.execute("INSERT INTO Health(id, hp) VALUES (?1, 2.5)", [ids[1]])?;
    let values = by_id.query([ids[1]])?.next()?.expect("a row").values().to_vec();
    assert_eq!(values[2], Value::Real(2.5));
    assert!(by_id.query([ids[0]])?.next()?.is_none(), "n0 has no Health now");

    // Named values given in another order, and another count, than the run before.
    let mut sum = conn.prepare("SELECT :a * 10 + :b")?;
    let one = |stmt: &mut ecsql::Statement<'_>, p: &[(&str, i64)]| -> ecsql::Result<i64> {
        stmt.query_row(p, |r| r.get(0))
    };
    assert_eq!(one(&mut sum, &[(":a", 1), (":b", 2)])?, 12);
    assert_eq!(one(&mut sum, &[(":b", 3), (":a", 4)])?, 43);
    assert!(matches!(
        one(&mut sum, &[(":b", 5)]),
        Err(Error::Plan(PlanError {
            kind: PlanErrorKind::MissingParameter { .. },
            ..
        }))
    ));
    assert_eq!(one(&mut sum, &[(":a", 6), (":b", 7)])?, 67);
    let mut pair = conn.prepare("SELECT ?1 - ?2")?;
    assert!(matches!(
        pair.query((1, 2, 3)),
        Err(Error::InvalidParameterCount {
            given: 3,
            expected: 2
        })
    ));
    assert_eq!(pair.query_row((7, 2), |r| r.get::<_, i64>(0))?, 5);
    Ok(())
}

#[test]
fn a_transaction_guard_rolls_back_only_its_own_transaction() {
    let conn = ecsql::Database::open_in_memory().connect();
    conn.execute("CREATE COMPONENT Gold (n INT)", ()).unwrap();
    {
        let tx = conn.transaction().unwrap();
        tx.execute("SPAWN Gold(1)", ()).unwrap();
        // Committed by hand, then another transaction begun: not the guard's.
        tx.execute("COMMIT", ()).unwrap();
        tx.execute("BEGIN", ()).unwrap();
        tx.execute("SPAWN Gold(2)", ()).unwrap();
    }
    assert!(!conn.is_autocommit(), "the second transaction is still open");
    conn.execute("COMMIT", ()).unwrap();
    let n: i64 = conn
        .query_row("SELECT sum(n) FROM Gold", (), |r| r.get(0))
        .unwrap();
    assert_eq!(n, 3);
}

#[test]
fn texts_run_again_see_the_world_as_it_is_then() {
    // The connection keeps texts it was given twice parsed and planned; the plan is bound
    // again when the catalog or a parameter's type moved, and results are made anew each
    // run, so a text seen before sees new rows, new tables and a new catalog.
    let conn = setup();
    let one = |sql: &str| conn.query_row(sql, (), |r| r.get::<_, Value>(0)).unwrap();
    let subquery = "SELECT (SELECT count(*) FROM Name) + 0";
    let correlated = "SELECT count(*) FROM Name AS a WHERE EXISTS (SELECT 1 FROM Name AS b WHERE b.value = a.value AND b.id <> a.id)";
    let fresh = "SELECT count(*) FROM Name WHERE changed(Name)";
    let events = "SELECT count(*) FROM Hit";
    let wide = "SELECT count(*) FROM Name WHERE NOT has(Position)";
    conn.execute("CREATE EVENT Hit (n INT)", ()).unwrap();
    for k in 0..3i64 {
        assert_eq!(one(subquery), Value::Int(2 * k), "{subquery}");
        assert_eq!(
            one(correlated),
            Value::Int(if k < 2 { 0 } else { 2 * k }),
            "{correlated}"
        );
        // Not a reader: every row is changed and every event kept, run after run.
        assert_eq!(one(fresh), Value::Int(2 * k), "{fresh}");
        assert_eq!(one(events), Value::Int(k), "{events}");
        assert_eq!(one(wide), Value::Int(k), "{wide}");
        conn.execute("SPAWN Name('y')", ()).unwrap();
        conn.execute("INSERT INTO Hit (n) VALUES (1)", ()).unwrap();
        // A new table (Name with Position) the kept table lists must take in.
        conn.execute("SPAWN Name('z'), Position(0, 0)", ()).unwrap();
    }
    let typed = "SELECT ?1 + 1";
    assert_eq!(
        conn.query_row(typed, [1], |r| r.get::<_, Value>(0)).unwrap(),
        Value::Int(2)
    );
    assert_eq!(
        conn.query_row(typed, [1], |r| r.get::<_, Value>(0)).unwrap(),
        Value::Int(2)
    );
    assert_eq!(
        conn.query_row(typed, [1.5], |r| r.get::<_, Value>(0)).unwrap(),
        Value::Float(2.5)
    );
    conn.execute("BEGIN", ()).unwrap();
    conn.execute("DROP COMPONENT Name", ()).unwrap();
    assert!(conn.query_row(subquery, (), |r| r.get::<_, i64>(0)).is_err());
    conn.execute("ROLLBACK", ()).unwrap();
    assert_eq!(one(subquery), Value::Int(6));
    conn.execute("DROP COMPONENT Name", ()).unwrap();
    conn.execute("CREATE COMPONENT Name (value TEXT)", ()).unwrap();
    let count = "SELECT count(*) FROM Name";
    let n = |conn: &ecsql::Connection| conn.query_row(count, (), |r| r.get::<_, i64>(0));
    for k in 0..3 {
        assert_eq!(n(&conn).unwrap(), k);
        conn.execute("SPAWN Name('x')", ()).unwrap();
    }
    conn.execute_batch("DROP COMPONENT Name; CREATE COMPONENT Name (first TEXT, last TEXT);")
        .unwrap();
    assert_eq!(n(&conn).unwrap(), 0);
    conn.execute("DROP COMPONENT Name", ()).unwrap();
    assert!(matches!(
        n(&conn),
        Err(Error::Plan(PlanError {
            kind: PlanErrorKind::UnknownComponent { .. },
            ..
        }))
    ));
    // Thousands of distinct texts, each twice: every one answers its own question.
    conn.execute("CREATE COMPONENT Name (value TEXT)", ()).unwrap();
    conn.execute("SPAWN Name('x')", ()).unwrap();
    for k in 0..2000i64 {
        for _ in 0..2 {
            let got: i64 = conn
                .query_row(&format!("SELECT {k} + count(*) FROM Name"), (), |r| r.get(0))
                .unwrap();
            assert_eq!(got, k + 1);
        }
    }
}

#[test]
fn cached_statements_come_back_with_their_plan_and_cursors() {
    let conn = setup();
    let changed = "SELECT count(*) FROM Name WHERE changed(Name)";
    let count = |conn: &ecsql::Connection| {
        conn.prepare_cached(changed)
            .unwrap()
            .query_row((), |r| r.get::<_, i64>(0))
            .unwrap()
    };
    conn.execute("SPAWN Name('a'), Position(0, 0)", ()).unwrap();
    // The same reader from one use to the next: the second sees only what changed since.
    assert_eq!(count(&conn), 1);
    assert_eq!(count(&conn), 0);
    conn.execute("SPAWN Name('b')", ()).unwrap();
    assert_eq!(count(&conn), 1);
    // Its table lists came back too.
    assert_eq!(conn.prepare_cached(changed).unwrap().cached_scans(), 1);
    // Two of the same text at once are two statements; one of them is kept after.
    {
        let mut first = conn.prepare_cached(changed).unwrap();
        let mut second = conn.prepare_cached(changed).unwrap();
        assert_eq!(first.query_row((), |r| r.get::<_, i64>(0)).unwrap(), 0);
        assert_eq!(second.query_row((), |r| r.get::<_, i64>(0)).unwrap(), 2);
    }
    assert_eq!(count(&conn), 0);
    // Flushed, or with no room, a statement starts over as a new reader.
    conn.flush_prepared_statement_cache();
    assert_eq!(count(&conn), 2);
    conn.set_prepared_statement_cache_capacity(0);
    assert_eq!(count(&conn), 2);
    assert_eq!(count(&conn), 2);
    // At most `capacity` kept: the least lately used goes first.
    conn.set_prepared_statement_cache_capacity(2);
    assert_eq!(count(&conn), 2);
    for other in ["SELECT 1", "SELECT 2"] {
        conn.prepare_cached(other)
            .unwrap()
            .query_row((), |_| Ok(()))
            .unwrap();
    }
    assert_eq!(count(&conn), 2);
    // A statement that does not parse is an error, and nothing is kept for it.
    assert!(matches!(conn.prepare_cached("SELEC 1"), Err(Error::Parse(_))));
    // Spaces around the text are no part of it; a discarded statement is not kept.
    conn.set_prepared_statement_cache_capacity(4);
    let mut spaced = conn.prepare_cached(&format!("  {changed}\n")).unwrap();
    assert_eq!(spaced.query_row((), |r| r.get::<_, i64>(0)).unwrap(), 0);
    spaced.discard();
    assert_eq!(count(&conn), 2);
}

#[test]
fn a_copy_of_the_world_put_back_makes_prepared_statements_plan_again() -> ecsql::Result<()> {
    let conn = Database::open_in_memory().connect();
    conn.execute_batch("CREATE COMPONENT P (x INT); CREATE COMPONENT Q (s TEXT); SPAWN P(1);")?;
    let saved = conn.with_world(|w| w.clone())?;
    conn.execute_batch("SPAWN P(10), Q('a');")?;
    let mut sum = conn.prepare("SELECT count(*), sum(P.x) FROM P")?;
    let read =
        |s: &mut ecsql::Statement<'_>| s.query_row((), |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)));
    assert_eq!(read(&mut sum)?, (2, 11));
    assert_eq!(read(&mut sum)?, (2, 11));
    // The copy has no table of P and Q; a table made now may take the id that one had.
    conn.with_world_mut(|w| *w = saved)?;
    conn.execute_batch("SPAWN Q('zzz');")?;
    assert_eq!(read(&mut sum)?, (1, 1));
    Ok(())
}

#[test]
fn a_text_run_again_at_another_place_of_a_script_gives_its_errors_there() {
    // The statements of a script share what the connection keeps of their text wherever
    // they stand; each error is still the one the text gives parsed where it stands, as
    // a connection that never saw the text reports it.
    let fresh = || {
        let conn = Database::open_in_memory().connect();
        conn.execute_batch(
            "CREATE COMPONENT P (x INT, e ENTITY); SPAWN P(x => 1, e => NULL);
             CREATE COMPONENT Q (s TEXT, x INT); SPAWN Q(s => 'z', x => 1);",
        )
        .unwrap();
        conn
    };
    let error_at = |conn: &ecsql::Connection, sql: &str, at: Location| {
        let mut error = None;
        conn.run_script_at(sql, at, |r| {
            error = r.err();
            false
        })
        .unwrap();
        error.unwrap_or_else(|| panic!("{sql} ran at {at}"))
    };
    let failing = [
        // A name the catalog lacks, on the first line and on a later one.
        "SELECT nope FROM P",
        "SELECT P.x\n  FROM P WHERE P.x >\n   nope",
        // Run errors; DESPAWN's ids are lifted, so the second shares the first's plan.
        "DESPAWN 999",
        "DESPAWN 998",
        "UPDATE P SET x = x + 9223372036854775807",
        "INSERT INTO P (id, x) VALUES (999, 1)",
        "\n  UPDATE P\n    SET x = P.x + nope",
        // Texts of one shape whose literals differ in width: the third runs as the
        // second's statement (kept on its shape's second sight), and its error is placed
        // as its own text places it.
        "UPDATE P SET x = 5 WHERE P.x + 9223372036854775807 > 0",
        "UPDATE P SET x = 50000 WHERE P.x + 9223372036854775807 > 0",
        "UPDATE P SET x = 500 WHERE P.x + 9223372036854775807 > 0",
        "UPDATE P SET x = 5 WHERE\n P.x > 10 OR P.x + 9223372036854775807 > 0",
        "UPDATE P SET x = 5 WHERE\n P.x > 1000 OR P.x + 9223372036854775807 > 0",
        "UPDATE P SET x = 5555 WHERE\n P.x > 1 OR P.x + 9223372036854775807 > 0",
        // The same with texts, whose quotes count in their widths.
        "UPDATE Q SET x = 5 WHERE Q.s = 'a' OR Q.x + 9223372036854775807 > 0",
        "UPDATE Q SET x = 5 WHERE Q.s = 'abcd' OR Q.x + 9223372036854775807 > 0",
        "UPDATE Q SET x = 5 WHERE Q.s = 'ab''c' OR Q.x + 9223372036854775807 > 0",
        // A shape whose shared plan cannot be made: each text is planned as written at
        // its own place, and fails there.
        "SELECT P.x FROM P WHERE P.x > 1 AND nope = 2",
        "SELECT P.x FROM P WHERE P.x > 2 AND nope = 2",
        // Statements kept for their place: a TICK's own error, an index on nothing.
        "TICK 'x'",
        "CREATE INDEX ON Nope (x)",
    ];
    // The first text of a shape runs as written; the second, at the first place here,
    // runs as its shape's statement, which was parsed as starting at line 1, column 1.
    let places = [
        Location::new(4, 7),
        Location::new(1, 1),
        Location::new(12, 1),
        Location::new(3, 30),
    ];
    let conn = fresh();
    for round in 0..3 {
        for sql in failing {
            for at in places {
                let got = error_at(&conn, sql, at);
                let expected = error_at(&fresh(), sql, at);
                assert_eq!(got, expected, "{sql:?} at {at}, round {round}");
            }
        }
    }
}

#[test]
fn texts_of_one_shape_with_integers_and_reals_give_each_its_own_rows() {
    // `> 1` and `> 1.5` mask alike; each must compare as its own constant, as a
    // connection that plans every text as written does.
    let open = |parameterize: &str| {
        let conn = Database::open_in_memory().connect();
        conn.execute_batch(&format!(
            "PRAGMA parameterize = {parameterize};
             CREATE COMPONENT P (x INT, r REAL);
             SPAWN P(x => i, r => i * 0.5) FROM range(8) AS t(i);"
        ))
        .unwrap();
        conn
    };
    let (shared, written) = (open("on"), open("off"));
    let count =
        |conn: &ecsql::Connection, sql: &str| -> i64 { conn.query_row(sql, (), |r| r.get(0)).unwrap() };
    let mut counts = Vec::new();
    for round in 0..2 {
        for v in ["1", "2", "1.5", "0.5", "10", "2.75", "3", "-1", "-1.5", "1e0"] {
            for sql in [
                format!("SELECT count(*) FROM P WHERE P.x > {v}"),
                format!("SELECT count(*) FROM P WHERE P.r <= {v}"),
                format!("SELECT count(*) FROM P WHERE P.x + {v} > 4"),
            ] {
                let got = count(&shared, &sql);
                assert_eq!(got, count(&written, &sql), "{sql}, round {round}");
                counts.push(got);
            }
        }
    }
    // The constants are told apart: `P.x > 1` counts 6, `P.x > 1.5` counts 6 too, but
    // `P.r <= 1` counts 3 and `P.r <= 1.5` 4.
    assert_eq!(&counts[..9], &[6, 3, 4, 5, 5, 5, 6, 4, 5]);
}

#[test]
fn a_lock_error_names_the_place_of_its_statement_in_a_script() {
    let db = Database::open_in_memory();
    let (a, b) = (db.connect(), db.connect());
    a.execute_batch("CREATE COMPONENT P (x INT); SPAWN P(x => 1);")
        .unwrap();
    let message_at = |conn: &ecsql::Connection, at: Location| {
        let mut message = String::new();
        conn.run_script_at("SELECT P.x FROM P", at, |r| {
            message = r.err().map(|e| e.to_string()).unwrap_or_default();
            false
        })
        .unwrap();
        message
    };
    // Another connection of this thread holds a transaction: waiting would never end.
    a.execute_batch("BEGIN").unwrap();
    for at in [Location::new(5, 3), Location::new(7, 3), Location::new(9, 3)] {
        let message = message_at(&b, at);
        assert!(
            message.starts_with(&format!("database is locked at {at}: ")),
            "{message}"
        );
    }
    a.execute_batch("ROLLBACK").unwrap();
    // From inside with_world, which holds the lock.
    for at in [Location::new(5, 3), Location::new(7, 3), Location::new(9, 3)] {
        let message = a.with_world(|_| message_at(&a, at)).unwrap();
        assert!(
            message.starts_with(&format!(
                "the statement cannot take the database's lock at {at}: "
            )),
            "{message}"
        );
    }
}

/// `last_spawned`: the last entity this connection's SPAWN made, however the SPAWN ran
/// (text, prepared, in a script); not another connection's, nor a system's, nor a failed
/// SPAWN's.
#[test]
fn last_spawned_is_this_connections_last_spawn() {
    let db = Database::open_in_memory();
    let conn = db.connect();
    let other = db.connect();
    conn.execute_batch("CREATE COMPONENT P (x INT);").unwrap();
    assert_eq!(conn.last_spawned(), None);
    conn.execute("SPAWN P(1)", ()).unwrap();
    let first = conn.last_spawned().expect("spawned");
    let x = |e: ecsql::Entity| -> i64 {
        conn.query_row("SELECT P.x FROM P WHERE id = ?1", (e,), |r| r.get(0))
            .unwrap()
    };
    assert_eq!(x(first), 1);
    let mut prepared = conn.prepare("SPAWN P(?1) FROM range(4) AS r(i)").unwrap();
    prepared.execute((7,)).unwrap();
    let last = conn.last_spawned().unwrap();
    assert_ne!(last, first);
    assert_eq!(x(last), 7);
    let max: ecsql::Entity = conn.query_row("SELECT max(id) FROM P", (), |r| r.get(0)).unwrap();
    assert_eq!(last, max, "the last of the four");
    conn.execute_batch("SPAWN P(2); SPAWN P(3);").unwrap();
    let third = conn.last_spawned().unwrap();
    assert_eq!(x(third), 3);
    // A failed SPAWN, another connection's, a system's: it stays.
    assert!(
        conn.execute("SPAWN P(1 / (i - i)) FROM range(2) AS r(i)", ())
            .is_err()
    );
    other.execute("SPAWN P(50)", ()).unwrap();
    conn.execute_batch("CREATE SYSTEM births AS SPAWN P(99); TICK;")
        .unwrap();
    assert_eq!(conn.last_spawned(), Some(third));
    assert_eq!(other.last_spawned().map(x), Some(50));
    // SPAWN … RETURNING returns what it says, and leaves it.
    conn.execute_batch("DROP SYSTEM births;").unwrap();
    let _ = conn
        .prepare("SPAWN P(5) RETURNING P.x")
        .unwrap()
        .query(())
        .unwrap();
    assert_eq!(conn.last_spawned(), Some(third));
}

#[test]
fn a_point_read_by_query_row_leaves_rows_handed_out_as_they_were() -> ecsql::Result<()> {
    let conn = setup();
    let ids = three_named(&conn)?;
    let mut by_id = conn.prepare("SELECT Name.value, Health.hp FROM Name, Health WHERE id = ?1")?;
    let mut read = |id: Entity| by_id.query_row([id], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)));
    // The first run plans and finds a point read; the later ones read past the
    // statement machinery.
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(read(*id)?, (format!("n{i}"), i as i64 * 10));
    }
    assert_eq!(read(ids[0])?, ("n0".into(), 0));
    // A row kept from one run keeps its values while the statement runs again.
    let kept = by_id.query_row([ids[0]], |r| Ok(r.clone()))?;
    let held = by_id.query([ids[2]])?;
    let mut read = |id: Entity| by_id.query_row([id], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)));
    assert_eq!(read(ids[1])?, ("n1".into(), 10));
    assert_eq!(read(ids[1])?, ("n1".into(), 10));
    assert_eq!(kept.get::<_, String>(0)?, "n0");
    assert_eq!(held.remaining(), 1);
    assert_eq!(held.column::<i64>(1)?, [20]);
    drop((kept, held));
    // A value changed, an entity moved to a table made after the plan, one despawned.
    conn.execute("UPDATE Health SET hp = 11 WHERE id = ?1", [ids[1]])?;
    assert_eq!(read(ids[1])?, ("n1".into(), 11));
    // Each run's values, as `Value`s too, not the last run's.
    let mut values = |id: Entity| by_id.query_row([id], |r| Ok(r.values().to_vec()));
    assert_eq!(values(ids[1])?, [Value::Text("n1".into()), Value::Int(11)]);
    assert_eq!(values(ids[2])?, [Value::Text("n2".into()), Value::Int(20)]);
    // A row too long for the statement to keep, then short ones again.
    let long = "x".repeat(40_000);
    conn.execute(
        "UPDATE Name SET value = ?1 WHERE id = ?2",
        (long.as_str(), ids[2]),
    )?;
    let mut values = |id: Entity| by_id.query_row([id], |r| Ok(r.values().to_vec()));
    assert_eq!(values(ids[1])?, [Value::Text("n1".into()), Value::Int(11)]);
    assert_eq!(values(ids[2])?, [Value::Text(long.clone()), Value::Int(20)]);
    assert_eq!(values(ids[1])?, [Value::Text("n1".into()), Value::Int(11)]);
    let mut read = |id: Entity| by_id.query_row([id], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)));
    assert_eq!(read(ids[2])?, (long.clone(), 20));
    assert_eq!(read(ids[1])?, ("n1".into(), 11));
    assert_eq!(read(ids[2])?, (long, 20));
    assert_eq!(read(ids[1])?, ("n1".into(), 11));
    // A closure that panics after asking for the values, or keeps a clone of the row:
    // the next read gives its own row's values, and the clone keeps the one it was.
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        by_id.query_row([ids[1]], |r| -> ecsql::Result<()> {
            assert!(!r.values().is_empty());
            panic!("a closure that panics")
        })
    }));
    assert!(caught.is_err());
    let mut values = |id: Entity| by_id.query_row([id], |r| Ok(r.values().to_vec()));
    assert_eq!(values(ids[0])?, [Value::Text("n0".into()), Value::Int(0)]);
    let kept = by_id.query_row([ids[1]], |r| {
        assert!(!r.values().is_empty());
        Ok(r.clone())
    })?;
    let mut values = |id: Entity| by_id.query_row([id], |r| Ok(r.values().to_vec()));
    assert_eq!(values(ids[0])?, [Value::Text("n0".into()), Value::Int(0)]);
    assert_eq!(kept.values(), [Value::Text("n1".into()), Value::Int(11)]);
    let mut read = |id: Entity| by_id.query_row([id], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)));
    conn.execute("UPDATE Name SET value = 'n2' WHERE id = ?1", [ids[2]])?;
    conn.execute_batch("CREATE TAG Marked")?;
    conn.execute("INSERT INTO Marked (id) VALUES (?1)", [ids[2]])?;
    assert_eq!(read(ids[2])?, ("n2".into(), 20));
    conn.execute("DESPAWN ?1", [ids[0]])?;
    assert!(matches!(read(ids[0]), Err(Error::QueryReturnedNoRows)));
    // Bound again after its component changed type; a value of another type than the
    // id is an error of the run, as the first run's would be.
    conn.execute_batch("DROP COMPONENT Health; CREATE COMPONENT Health (hp REAL);")?;
    conn.execute("INSERT INTO Health(id, hp) VALUES (?1, 2.5)", [ids[1]])?;
    assert!(read(ids[1]).is_err(), "hp is REAL now");
    assert_eq!(by_id.query_row([ids[1]], |r| r.get::<_, f32>(1))?, 2.5);
    assert!(by_id.query_row(["n1"], |r| r.get::<_, f32>(1)).is_err());
    assert_eq!(by_id.query_row([ids[1]], |r| r.get::<_, f32>(1))?, 2.5);
    Ok(())
}

#[test]
fn a_text_read_by_query_row_leaves_rows_handed_out_as_they_were() -> ecsql::Result<()> {
    // `query_row` on a text writes a point read's row into the memory of the last text's
    // result and lends it: as written and by shape, what a closure kept is its own.
    for parameterize in ["on", "off"] {
        let conn = setup();
        conn.query_row(&format!("PRAGMA parameterize = {parameterize}"), (), |_| Ok(()))?;
        let ids = three_named(&conn)?;
        let text = |id: Entity| {
            format!(
                "SELECT Name.value, Health.hp FROM Name, Health WHERE id = {}",
                id.to_bits()
            )
        };
        let read = |id: Entity| {
            conn.query_row(&text(id), (), |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
            })
        };
        for _ in 0..2 {
            for (i, id) in ids.iter().enumerate() {
                assert_eq!(read(*id)?, (format!("n{i}"), i as i64 * 10), "{parameterize}");
            }
        }
        // A row kept from one call keeps its values while other texts are read.
        let kept = conn.query_row(&text(ids[0]), (), |r| Ok(r.clone()))?;
        assert_eq!(read(ids[1])?, ("n1".into(), 10));
        assert_eq!(read(ids[2])?, ("n2".into(), 20));
        assert_eq!(kept.get::<_, String>(0)?, "n0");
        assert_eq!(kept.values(), [Value::Text("n0".into()), Value::Int(0)]);
        // Another text's result of another width, in between.
        let one = |id: Entity| {
            conn.query_row(
                &format!("SELECT Health.hp FROM Health WHERE id = {}", id.to_bits()),
                (),
                |r| Ok(r.values().to_vec()),
            )
        };
        assert_eq!(one(ids[2])?, [Value::Int(20)]);
        assert_eq!(read(ids[1])?, ("n1".into(), 10));
        assert_eq!(one(ids[1])?, [Value::Int(10)]);
        // A text read inside the closure of another, on the same connection.
        let nested = conn.query_row(&text(ids[0]), (), |outer| {
            let inner = read(ids[2])?;
            Ok((outer.get::<_, String>(0)?, inner))
        })?;
        assert_eq!(nested, ("n0".into(), ("n2".into(), 20)));
        assert_eq!(read(ids[0])?, ("n0".into(), 0));
        // No row, then rows again; a row too long to keep, then short ones again.
        conn.execute("DESPAWN ?1", [ids[0]])?;
        assert!(matches!(read(ids[0]), Err(Error::QueryReturnedNoRows)));
        assert_eq!(read(ids[1])?, ("n1".into(), 10));
        let long = "x".repeat(40_000);
        conn.execute(
            "UPDATE Name SET value = ?1 WHERE id = ?2",
            (long.as_str(), ids[2]),
        )?;
        assert_eq!(read(ids[2])?, (long.clone(), 20));
        assert_eq!(read(ids[1])?, ("n1".into(), 10));
        assert_eq!(read(ids[2])?, (long, 20));
        // A closure that panics: the next call reads its own row.
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            conn.query_row(&text(ids[1]), (), |r| -> ecsql::Result<()> {
                assert!(!r.values().is_empty());
                panic!("a closure that panics")
            })
        }));
        assert!(caught.is_err());
        assert_eq!(read(ids[1])?, ("n1".into(), 10));
    }
    Ok(())
}
