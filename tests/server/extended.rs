//! The extended query protocol through tokio-postgres, which prepares every statement
//! (Parse, Describe), binds its parameters in binary and reads results in binary: the
//! types parameters are described as, each ecsql type both ways, statements kept and run
//! again, errors at Parse with their position, portals read a few rows at a time.

use ecsql::Database;
use tokio_postgres::types::Type;

use super::{connect, runtime, start};

#[test]
fn parameters_and_results_of_every_type_cross_in_binary() {
    let db = Database::open_in_memory();
    let server = start(&db, 8);
    runtime().block_on(async {
        let client = connect(&server).await.unwrap();
        client
            .batch_execute("CREATE COMPONENT Unit (hp INT, speed REAL, name TEXT, alive BOOL, x FLOAT, leader ENTITY)")
            .await
            .unwrap();
        let spawn = client
            .prepare("SPAWN Unit($1, $2, $3, $4, $5, NULL) RETURNING id")
            .await
            .unwrap();
        assert_eq!(
            spawn.params(),
            [Type::INT8, Type::FLOAT4, Type::TEXT, Type::BOOL, Type::FLOAT8]
        );
        assert_eq!(spawn.columns()[0].type_(), &Type::INT8);
        let mut ids = Vec::new();
        for i in 0..3_i64 {
            let row = client
                .query_one(
                    &spawn,
                    &[&i, &(i as f32 + 0.5), &format!("u{i}"), &(i > 0), &(i as f64 * 0.25)],
                )
                .await
                .unwrap();
            ids.push(row.get::<_, i64>(0));
        }
        let follow = client
            .prepare("UPDATE Unit SET leader = $1 WHERE id <> $1")
            .await
            .unwrap();
        assert_eq!(follow.params(), [Type::INT8]);
        assert_eq!(client.execute(&follow, &[&ids[0]]).await.unwrap(), 2);

        let read = client
            .prepare("SELECT Unit.hp, Unit.speed, Unit.name, Unit.alive, Unit.x, Unit.leader FROM Unit WHERE Unit.hp >= $1 ORDER BY Unit.hp")
            .await
            .unwrap();
        assert_eq!(read.params(), [Type::INT8]);
        let types: Vec<_> = read.columns().iter().map(|c| c.type_().clone()).collect();
        assert_eq!(
            types,
            [Type::INT8, Type::FLOAT4, Type::TEXT, Type::BOOL, Type::FLOAT8, Type::INT8]
        );
        let rows = client.query(&read, &[&1_i64]).await.unwrap();
        let seen: Vec<(i64, f32, String, bool, f64, Option<i64>)> = rows
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4), r.get(5)))
            .collect();
        assert_eq!(
            seen,
            [
                (1, 1.5, "u1".to_owned(), true, 0.25, Some(ids[0])),
                (2, 2.5, "u2".to_owned(), true, 0.5, Some(ids[0])),
            ]
        );
        // The same prepared statement, other values: its plan is kept.
        let rows = client.query(&read, &[&2_i64]).await.unwrap();
        assert_eq!(rows.len(), 1);
        // NULL both ways.
        let leader: Option<i64> = client
            .query_one("SELECT Unit.leader FROM Unit WHERE Unit.hp = $1", &[&0_i64])
            .await
            .unwrap()
            .get(0);
        assert_eq!(leader, None);
        let none: Option<i64> = None;
        let n = client
            .execute("UPDATE Unit SET leader = $1 WHERE Unit.hp = 2", &[&none])
            .await
            .unwrap();
        assert_eq!(n, 1);
        // Only ENTITY fields take NULL: the client is told, with the SQLSTATE.
        let e = client
            .execute("UPDATE Unit SET hp = $1", &[&none])
            .await
            .unwrap_err();
        assert_eq!(e.as_db_error().unwrap().code().code(), "23514", "{e}");
        let count: i64 = client
            .query_one("SELECT count(*) FROM Unit WHERE Unit.leader IS NULL", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(count, 2);
    });
}

#[test]
fn a_parameters_type_is_learned_from_where_it_is_used() {
    let db = Database::open_in_memory();
    let server = start(&db, 8);
    runtime().block_on(async {
        let client = connect(&server).await.unwrap();
        client
            .batch_execute(
                "CREATE COMPONENT Unit (hp INT, name TEXT); SPAWN Unit(i, 'u' || i) FROM range(10) AS r(i)",
            )
            .await
            .unwrap();
        let cases: [(&str, &[Type]); 11] = [
            ("SELECT Unit.hp + $1 FROM Unit", &[Type::INT8]),
            ("SELECT Unit.hp FROM Unit LIMIT $1", &[Type::INT8]),
            ("SELECT i FROM range($1) AS r(i)", &[Type::INT8]),
            ("SELECT Unit.hp FROM Unit WHERE Unit.name = $1", &[Type::TEXT]),
            ("SELECT $1", &[Type::TEXT]),
            ("SELECT $1 * 2.5", &[Type::FLOAT8]),
            ("UPDATE Unit SET hp = -$1", &[Type::INT8]),
            (
                "SELECT Unit.hp + CASE WHEN Unit.name = $1 THEN -$2 ELSE $2 END FROM Unit",
                &[Type::TEXT, Type::INT8],
            ),
            // A parameter given alone for a column of INSERT is its field's type.
            (
                "INSERT INTO Unit (hp, name) VALUES ($1, $2), (3, $3)",
                &[Type::INT8, Type::TEXT, Type::TEXT],
            ),
            (
                "INSERT INTO Unit (id, hp) VALUES ($1, $2)",
                &[Type::INT8, Type::INT8],
            ),
            (
                "INSERT INTO Unit (hp, name) SELECT $1, Unit.name FROM Unit",
                &[Type::INT8],
            ),
        ];
        for (sql, params) in cases {
            let statement = client.prepare(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
            assert_eq!(statement.params(), params, "{sql}");
        }
        let limited = client
            .query("SELECT Unit.hp FROM Unit ORDER BY Unit.hp LIMIT $1", &[&3_i64])
            .await
            .unwrap();
        assert_eq!(limited.len(), 3);
        let series = client
            .query("SELECT i FROM range($1) AS r(i)", &[&4_i64])
            .await
            .unwrap();
        assert_eq!(series.len(), 4);
        let echoed: String = client.query_one("SELECT $1", &[&"hello"]).await.unwrap().get(0);
        assert_eq!(echoed, "hello");
        // A type the client names is the one read.
        let typed = client
            .prepare_typed("SELECT Unit.name FROM Unit WHERE Unit.hp = $1", &[Type::INT4])
            .await
            .unwrap();
        assert_eq!(typed.params(), [Type::INT4]);
        let name: String = client.query_one(&typed, &[&7_i32]).await.unwrap().get(0);
        assert_eq!(name, "u7");
        // ... and what the result's columns follow, as in PostgreSQL.
        let typed = client
            .prepare_typed("SELECT $1 + 1, $1, -$2", &[Type::FLOAT8, Type::INT8])
            .await
            .unwrap();
        let columns: Vec<Type> = typed.columns().iter().map(|c| c.type_().clone()).collect();
        assert_eq!(columns, [Type::FLOAT8, Type::FLOAT8, Type::INT8]);
        let row = client.query_one(&typed, &[&2.5_f64, &4_i64]).await.unwrap();
        assert_eq!(
            (row.get::<_, f64>(0), row.get::<_, f64>(1), row.get::<_, i64>(2)),
            (3.5, 2.5, -4)
        );
        // A declared parameter is described without its value: a divisor too.
        let divided: i64 = client
            .query_one(
                &client
                    .prepare_typed("SELECT 10 / $1", &[Type::INT8])
                    .await
                    .unwrap(),
                &[&5_i64],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(divided, 2);
        // Untyped values that a client sends as text, into an INSERT's fields.
        client
            .execute("INSERT INTO Unit (hp, name) VALUES ($1, $2)", &[&99_i64, &"new"])
            .await
            .unwrap();
        let hp: i64 = client
            .query_one("SELECT Unit.hp FROM Unit WHERE Unit.name = 'new'", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(hp, 99);
    });
}

#[test]
fn errors_of_a_prepared_statement_come_at_parse_with_their_position() {
    let db = Database::open_in_memory();
    let server = start(&db, 8);
    runtime().block_on(async {
        let client = connect(&server).await.unwrap();
        client
            .batch_execute("CREATE COMPONENT Unit (hp INT); SPAWN Unit(0)")
            .await
            .unwrap();
        let e = client
            .prepare("SELECT Unit.hp FROM Unit WHERE nope = $1")
            .await
            .unwrap_err();
        let db_error = e.as_db_error().expect("a server error");
        assert_eq!(db_error.code().code(), "42703", "{db_error:?}");
        assert_eq!(
            db_error.position(),
            Some(&tokio_postgres::error::ErrorPosition::Original(32))
        );
        let e = client.prepare("SELEC 1").await.unwrap_err();
        assert_eq!(e.as_db_error().unwrap().code().code(), "42601");
        let e = client.prepare("SELECT 1; SELECT 2").await.unwrap_err();
        assert_eq!(e.as_db_error().unwrap().code().code(), "42601", "{e}");
        // Nothing of the server's files, prepared or not.
        let e = client.prepare("SAVE TO '/tmp/x.ecsql'").await.unwrap_err();
        assert_eq!(e.as_db_error().unwrap().code().code(), "42501", "{e}");
        // An error as it runs, with its SQLSTATE.
        let e = client
            .query("SELECT 1 / Unit.hp FROM Unit WHERE Unit.hp = $1", &[&0_i64])
            .await
            .unwrap_err();
        assert_eq!(e.as_db_error().unwrap().code().code(), "22012", "{e}");
        // The connection goes on.
        let n: i64 = client
            .query_one("SELECT count(*) FROM Unit", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 1);
    });
}

#[test]
fn transactions_and_portals_work_through_prepared_statements() {
    let db = Database::open_in_memory();
    let server = start(&db, 8);
    runtime().block_on(async {
        let mut client = connect(&server).await.unwrap();
        client
            .batch_execute("CREATE COMPONENT Unit (hp INT); SPAWN Unit(i) FROM range(10) AS r(i)")
            .await
            .unwrap();
        {
            let tx = client.transaction().await.unwrap();
            tx.execute("UPDATE Unit SET hp = Unit.hp + $1", &[&100_i64])
                .await
                .unwrap();
            // A portal read three rows at a time.
            let read = tx
                .prepare("SELECT Unit.hp FROM Unit ORDER BY Unit.hp")
                .await
                .unwrap();
            let portal = tx.bind(&read, &[]).await.unwrap();
            let mut seen = Vec::new();
            loop {
                let rows = tx.query_portal(&portal, 3).await.unwrap();
                assert!(rows.len() <= 3);
                if rows.is_empty() {
                    break;
                }
                seen.extend(rows.iter().map(|r| r.get::<_, i64>(0)));
            }
            assert_eq!(seen, (100..110).collect::<Vec<i64>>());
            tx.rollback().await.unwrap();
        }
        let max: i64 = client
            .query_one("SELECT max(Unit.hp) FROM Unit", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(max, 9, "the rolled back UPDATE is gone");
        // A statement that fails in a transaction fails the block, prepared or not.
        let tx = client.transaction().await.unwrap();
        tx.execute("UPDATE Unit SET hp = 0", &[]).await.unwrap();
        let e = tx.query("SELECT 1 / Unit.hp FROM Unit", &[]).await.unwrap_err();
        assert_eq!(e.as_db_error().unwrap().code().code(), "22012");
        let e = tx.query("SELECT 1", &[]).await.unwrap_err();
        assert_eq!(e.as_db_error().unwrap().code().code(), "25P02", "{e}");
        tx.commit().await.unwrap();
        let max: i64 = client
            .query_one("SELECT max(Unit.hp) FROM Unit", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(max, 9, "COMMIT of a failed block rolled it back");
    });
}

#[test]
fn a_statement_that_fails_to_prepare_inside_a_transaction_fails_it() {
    let db = Database::open_in_memory();
    let server = start(&db, 8);
    runtime().block_on(async {
        let client = connect(&server).await.unwrap();
        client
            .batch_execute("CREATE COMPONENT Unit (hp INT); SPAWN Unit(1); BEGIN; UPDATE Unit SET hp = 2")
            .await
            .unwrap();
        assert!(client.prepare("SELEC 1").await.is_err());
        let e = client.query("SELECT 1", &[]).await.unwrap_err();
        assert_eq!(e.as_db_error().unwrap().code().code(), "25P02", "{e}");
        client.batch_execute("COMMIT").await.unwrap();
        let hp: i64 = client
            .query_one("SELECT Unit.hp FROM Unit", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(hp, 1, "COMMIT of the failed block rolled it back");
    });
}
