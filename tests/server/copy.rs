//! COPY through tokio-postgres' `copy_out` and `copy_in`: a query's rows out in
//! PostgreSQL's text format, CSV and JSON; rows in, checked whole before anything is
//! written; a COPY the client abandons or overfills writes nothing.

use bytes::Bytes;
use ecsql::Database;
use ecsql::server::{Options, Server};
use futures::{SinkExt, StreamExt};

use super::{connect, rows, runtime, start};

/// What `COPY … TO STDOUT` sends, as one text.
async fn copied_out(client: &tokio_postgres::Client, sql: &str) -> String {
    let stream = client
        .copy_out(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    futures::pin_mut!(stream);
    let mut out = Vec::new();
    while let Some(chunk) = stream.next().await {
        out.extend_from_slice(&chunk.unwrap());
    }
    String::from_utf8(out).unwrap()
}

/// Sends `data` in `COPY … FROM STDIN`, in pieces of 7 bytes (lines cut anywhere): the
/// rows written, or the error.
async fn copied_in(
    client: &tokio_postgres::Client,
    sql: &str,
    data: &str,
) -> Result<u64, tokio_postgres::Error> {
    let sink = client.copy_in(sql).await?;
    futures::pin_mut!(sink);
    for piece in data.as_bytes().chunks(7) {
        sink.send(Bytes::copy_from_slice(piece)).await?;
    }
    sink.finish().await
}

#[test]
fn rows_go_out_in_text_csv_and_json() {
    let db = Database::open_in_memory();
    db.connect()
        .execute_batch(
            "CREATE COMPONENT Unit (hp INT, name TEXT, speed FLOAT, leader ENTITY);
             SPAWN Unit(1, 'tab\there', 0.5, NULL); SPAWN Unit(2, 'a,b \"c\"', 2.0, 1)",
        )
        .unwrap();
    let server = start(&db, 8);
    runtime().block_on(async {
        let client = connect(&server).await.unwrap();
        assert_eq!(
            copied_out(&client, "COPY (SELECT Unit.hp, Unit.name, Unit.speed, Unit.leader FROM Unit ORDER BY Unit.hp) TO STDOUT").await,
            "1\ttab\\there\t0.5\t\\N\n2\ta,b \"c\"\t2.0\t1\n"
        );
        assert_eq!(
            copied_out(&client, "COPY (SELECT Unit.hp, Unit.name FROM Unit ORDER BY Unit.hp) TO STDOUT (FORMAT csv, HEADER true)").await,
            "hp,name\n1,tab\there\n2,\"a,b \"\"c\"\"\"\n"
        );
        assert_eq!(
            copied_out(&client, "COPY (SELECT Unit.hp FROM Unit WHERE Unit.hp = 1) TO STDOUT (FORMAT json)").await,
            "{\"hp\":1}\n"
        );
        assert_eq!(copied_out(&client, "COPY (SELECT 1 WHERE FALSE) TO STDOUT").await, "");
    });
}

#[test]
fn rows_come_in_checked_whole_and_nothing_is_written_by_a_failed_copy() {
    let db = Database::open_in_memory();
    db.connect()
        .execute_batch("CREATE COMPONENT Unit (hp INT, name TEXT, leader ENTITY)")
        .unwrap();
    let server = start(&db, 8);
    runtime().block_on(async {
        let client = connect(&server).await.unwrap();
        let n = copied_in(
            &client,
            "COPY Unit FROM STDIN",
            "1\tfirst\t\\N\n2\twith\\ttab\t\\N\n3\t\t\\N\n",
        )
        .await
        .unwrap();
        assert_eq!(n, 3);
        let n = copied_in(
            &client,
            "COPY Unit (name, hp) FROM STDIN (FORMAT csv, HEADER true)",
            "name,hp\n\"quoted, name\",4\n",
        )
        .await
        .unwrap();
        assert_eq!(n, 1);
        assert_eq!(
            rows(&client, "SELECT Unit.hp, Unit.name FROM Unit ORDER BY Unit.hp").await,
            [
                [Some("1".to_owned()), Some("first".to_owned())],
                [Some("2".to_owned()), Some("with\ttab".to_owned())],
                [Some("3".to_owned()), Some(String::new())],
                [Some("4".to_owned()), Some("quoted, name".to_owned())],
            ]
        );
        // A value that does not fit, on the third line: an error naming it, nothing written.
        let e = copied_in(
            &client,
            "COPY Unit FROM STDIN",
            "5\ta\t\\N\n6\tb\t\\N\nlots\tc\t\\N\n",
        )
        .await
        .unwrap_err();
        let db_error = e.as_db_error().expect("a server error");
        assert!(db_error.message().contains("line 3"), "{e}");
        assert!(db_error.message().contains("lots"), "{e}");
        assert_eq!(db_error.code().code(), "22P02", "{e}");
        // A statement that cannot run is refused before any data is asked for.
        let Err(e) = client.copy_in::<_, Bytes>("COPY Nope FROM STDIN").await else {
            panic!("COPY of no component asked for data");
        };
        assert_eq!(e.as_db_error().unwrap().code().code(), "42P01", "{e}");
        // Abandoned: dropped before it is finished, the client sends CopyFail.
        {
            let sink = client.copy_in::<_, Bytes>("COPY Unit FROM STDIN").await.unwrap();
            futures::pin_mut!(sink);
            sink.send(Bytes::from_static(b"9\tgone\t\\N\n")).await.unwrap();
        }
        assert_eq!(
            rows(&client, "SELECT count(*) FROM Unit").await,
            [[Some("4".to_owned())]]
        );
        // A file of the server's stays out of reach, in either direction.
        let e = client
            .simple_query("COPY Unit FROM '/etc/passwd'")
            .await
            .unwrap_err();
        assert_eq!(e.as_db_error().unwrap().code().code(), "42501", "{e}");
    });
}

#[test]
fn a_copy_inside_a_transaction_is_rolled_back_with_it() {
    let db = Database::open_in_memory();
    db.connect()
        .execute_batch("CREATE COMPONENT Unit (hp INT)")
        .unwrap();
    let server = start(&db, 8);
    runtime().block_on(async {
        let client = connect(&server).await.unwrap();
        client.batch_execute("BEGIN").await.unwrap();
        assert_eq!(
            copied_in(&client, "COPY Unit FROM STDIN", "1\n2\n")
                .await
                .unwrap(),
            2
        );
        assert_eq!(
            rows(&client, "SELECT count(*) FROM Unit").await,
            [[Some("2".to_owned())]]
        );
        client.batch_execute("ROLLBACK").await.unwrap();
        assert_eq!(
            rows(&client, "SELECT count(*) FROM Unit").await,
            [[Some("0".to_owned())]]
        );
    });
}

#[test]
fn copy_data_past_the_clients_memory_limit_is_dropped_and_refused() {
    let db = Database::open_in_memory();
    db.connect()
        .execute_batch("CREATE COMPONENT Unit (hp INT)")
        .unwrap();
    let server = Server::start(
        &db,
        Options {
            listen: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
            memory_limit: Some(64 * 1024),
            ..Options::default()
        },
    )
    .unwrap();
    runtime().block_on(async {
        let client = connect(&server).await.unwrap();
        let data: String = (0..100_000).map(|i| format!("{i}\n")).collect();
        let e = copied_in(&client, "COPY Unit FROM STDIN", &data)
            .await
            .unwrap_err();
        let db_error = e.as_db_error().unwrap();
        assert_eq!(db_error.code().code(), "53200", "{e}");
        // Refused as it came, not held whole first and refused by the statement after.
        assert!(db_error.message().contains("the COPY's data passed"), "{e}");
        assert_eq!(
            rows(&client, "SELECT count(*) FROM Unit").await,
            [[Some("0".to_owned())]]
        );
        let small: String = (0..100).map(|i| format!("{i}\n")).collect();
        assert_eq!(
            copied_in(&client, "COPY Unit FROM STDIN", &small).await.unwrap(),
            100
        );
    });
}

#[test]
fn a_slow_copy_in_a_transaction_is_not_rolled_back_as_idle() {
    let db = Database::open_in_memory();
    db.connect()
        .execute_batch("CREATE COMPONENT Unit (hp INT); SPAWN Unit(0)")
        .unwrap();
    let server = Server::start(
        &db,
        Options {
            listen: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
            idle_in_transaction: std::time::Duration::from_millis(200),
            ..Options::default()
        },
    )
    .unwrap();
    runtime().block_on(async {
        let client = connect(&server).await.unwrap();
        client
            .batch_execute("BEGIN; UPDATE Unit SET hp = 1")
            .await
            .unwrap();
        let sink = client.copy_in("COPY Unit FROM STDIN").await.unwrap();
        futures::pin_mut!(sink);
        // Its data comes over more than twice the idle limit.
        for n in 2..7 {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            sink.send(Bytes::from(format!("{n}\n"))).await.unwrap();
        }
        assert_eq!(sink.finish().await.unwrap(), 5);
        client.batch_execute("COMMIT").await.unwrap();
        assert_eq!(
            rows(&client, "SELECT sum(Unit.hp) FROM Unit").await,
            [[Some("21".to_owned())]],
            "the UPDATE and the COPY, both committed"
        );
        // A COPY whose data stops coming is idle like any transaction: rolled back with
        // it, and the client told so when it ends the COPY.
        client
            .batch_execute("BEGIN; UPDATE Unit SET hp = 100")
            .await
            .unwrap();
        let sink = client.copy_in("COPY Unit FROM STDIN").await.unwrap();
        futures::pin_mut!(sink);
        sink.send(Bytes::from("7\n")).await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(800)).await;
        let other = connect(&server).await.unwrap();
        other.batch_execute("UPDATE Unit SET hp = hp + 1").await.unwrap();
        let e = sink.finish().await.unwrap_err();
        assert_eq!(e.as_db_error().map(|d| d.code().code()), Some("25P03"), "{e}");
        client.batch_execute("ROLLBACK").await.unwrap();
        assert_eq!(
            rows(&other, "SELECT sum(Unit.hp) FROM Unit").await,
            [[Some("27".to_owned())]],
            "the silent COPY's transaction rolled back; the other client's write applied"
        );
    });
}
