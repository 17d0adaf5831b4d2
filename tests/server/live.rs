//! SUBSCRIBE over the wire: `COPY (SUBSCRIBE …) TO STDOUT` streams a live query's batches
//! (its columns, then tick and diff) until the client cancels it, through tokio-postgres'
//! `copy_out` (the extended protocol) and psql (the simple one).

use std::time::Duration;

use ecsql::Database;
use futures::StreamExt;

use super::{connect, psql, runtime, start};

fn world() -> Database {
    let db = Database::open_in_memory();
    db.connect()
        .execute_batch(
            "CREATE COMPONENT Unit (hp INT, name TEXT);
             SPAWN Unit(hp => i, name => 'u' || i) FROM range(1, 4) AS r(i)",
        )
        .unwrap();
    db
}

#[test]
fn a_subscription_streams_each_commits_batch_until_the_client_cancels_it() {
    let db = world();
    let server = start(&db, 8);
    runtime().block_on(async {
        let client = connect(&server).await.unwrap();
        let cancel = client.cancel_token();
        let stream = client
            .copy_out("COPY (SUBSCRIBE SELECT Unit.name, Unit.hp FROM Unit WHERE Unit.hp > $1 ORDER BY Unit.hp) TO STDOUT")
            .await
            .err();
        // Its parameter is described (the statement takes one), so a Bind of none fails.
        assert!(stream.is_some(), "a subscription with an unbound parameter runs");
        let stream = client
            .copy_out("COPY (SUBSCRIBE SELECT Unit.name, Unit.hp FROM Unit WHERE Unit.hp > 1 ORDER BY Unit.hp) TO STDOUT")
            .await
            .unwrap();
        futures::pin_mut!(stream);
        let mut line = async || {
            let chunk = tokio::time::timeout(Duration::from_secs(10), stream.next()).await;
            chunk.expect("a line within 10 s").map(|c| c.map(|b| String::from_utf8(b.to_vec()).unwrap()))
        };
        // The whole result first, at tick 0.
        assert_eq!(line().await.unwrap().unwrap(), "u2\t2\t0\t1\n");
        assert_eq!(line().await.unwrap().unwrap(), "u3\t3\t0\t1\n");
        // Another client's commits: a batch each, in commit order, rows that left first.
        let writer = db.connect();
        writer.execute("UPDATE Unit SET hp = 10 WHERE Unit.name = 'u1'", ()).unwrap();
        assert_eq!(line().await.unwrap().unwrap(), "u1\t10\t0\t1\n");
        writer.execute("TICK", ()).unwrap();
        writer.execute("UPDATE Unit SET hp = 0 WHERE Unit.name = 'u3'", ()).unwrap();
        assert_eq!(line().await.unwrap().unwrap(), "u3\t3\t1\t-1\n");
        // A write that changes nothing the query reads makes no batch.
        writer.execute("UPDATE Unit SET name = 'x' WHERE Unit.hp = 0", ()).unwrap();
        // Cancelled: the COPY ends with 57014, and the connection goes on.
        cancel.cancel_query(tokio_postgres::NoTls).await.unwrap();
        let end = line().await.expect("the COPY ends with an error");
        let e = end.expect_err("cancelled");
        assert_eq!(e.code(), Some(&tokio_postgres::error::SqlState::QUERY_CANCELED), "{e}");
        let count = super::rows(&client, "SELECT count(*) FROM Unit").await;
        assert_eq!(count, [[Some("3".to_owned())]], "the connection answers after the stream");
    });
}

#[test]
fn a_subscription_is_refused_where_it_cannot_stream() {
    let db = world();
    let server = start(&db, 8);
    runtime().block_on(async {
        let client = connect(&server).await.unwrap();
        let code = |e: tokio_postgres::Error| e.code().map(|c| c.code().to_owned());
        let e = client
            .simple_query("SELECT 1; COPY (SUBSCRIBE SELECT Unit.hp FROM Unit) TO STDOUT")
            .await
            .unwrap_err();
        assert_eq!(code(e).as_deref(), Some("0A000"));
        // SUBSCRIBE as the shell runs it is pointed to the COPY.
        let e = client
            .simple_query("SUBSCRIBE SELECT Unit.hp FROM Unit")
            .await
            .unwrap_err();
        let said = e
            .as_db_error()
            .map(|d| d.message().to_owned())
            .unwrap_or_default();
        assert!(said.contains("COPY (SUBSCRIBE …) TO STDOUT"), "{e}: {said}");
        // Inside a transaction that has written (one that has only read holds nothing).
        client
            .batch_execute("BEGIN; UPDATE Unit SET hp = Unit.hp")
            .await
            .unwrap();
        let e = client
            .copy_out("COPY (SUBSCRIBE SELECT Unit.hp FROM Unit) TO STDOUT")
            .await
            .err()
            .expect("refused inside a block that has written");
        assert_eq!(code(e).as_deref(), Some("25001"));
        client.batch_execute("ROLLBACK").await.unwrap();
        // One that has only read (a driver's implicit BEGIN) streams.
        client.batch_execute("BEGIN; SELECT 1").await.unwrap();
        let stream = client
            .copy_out("COPY (SUBSCRIBE SELECT Unit.hp FROM Unit WHERE Unit.hp = 1) TO STDOUT")
            .await
            .unwrap();
        futures::pin_mut!(stream);
        let first = tokio::time::timeout(Duration::from_secs(10), stream.next()).await;
        let first = first.expect("a line within 10 s").unwrap().unwrap();
        assert_eq!(&first[..], b"1\t0\t1\n");
        client
            .cancel_token()
            .cancel_query(tokio_postgres::NoTls)
            .await
            .unwrap();
        let end = tokio::time::timeout(Duration::from_secs(10), stream.next()).await;
        assert!(matches!(end, Ok(Some(Err(_)))), "the COPY ends when cancelled");
        client.batch_execute("ROLLBACK").await.unwrap();
        let e = client
            .copy_out("COPY (SUBSCRIBE SELECT nope FROM Unit) TO STDOUT")
            .await
            .err()
            .expect("an unknown column");
        assert_eq!(code(e).as_deref(), Some("42703"));
        let e = client
            .copy_out("COPY (SUBSCRIBE SELECT Unit.hp FROM Unit) TO STDOUT (FORMAT json)")
            .await
            .err()
            .expect("json is not streamed");
        assert_eq!(code(e).as_deref(), Some("0A000"));
    });
}

#[test]
fn psql_streams_a_subscription_and_ctrl_c_ends_it() {
    let db = world();
    let server = start(&db, 8);
    let port = server.local_addr().port().to_string();
    if psql(&["--version"], &[]).is_none() {
        return;
    }
    let child = std::process::Command::new("psql")
        .args([
            "-X",
            "-h",
            "127.0.0.1",
            "-p",
            &port,
            "-U",
            "test",
            "-d",
            "ecsql",
            "-c",
        ])
        .arg("COPY (SUBSCRIBE SELECT count(*) AS n FROM Unit) TO STDOUT (FORMAT csv, HEADER)")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // psql has subscribed once its first line is out: then a write, then Ctrl-C.
    std::thread::sleep(Duration::from_millis(700));
    db.connect()
        .execute("SPAWN Unit(hp => 9, name => 'new')", ())
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let pid = child.id().to_string();
    std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    let errors = String::from_utf8_lossy(&out.stderr);
    assert_eq!(said, "n,tick,diff\n3,0,1\n3,0,-1\n4,0,1\n", "{errors}");
    assert!(
        errors.contains("ERROR:  canceling statement due to user request"),
        "{errors}"
    );
}

#[test]
fn stopping_the_server_ends_a_stream() {
    let db = world();
    let server = start(&db, 8);
    runtime().block_on(async {
        let client = connect(&server).await.unwrap();
        let stream = client
            .copy_out("COPY (SUBSCRIBE SELECT Unit.hp FROM Unit) TO STDOUT")
            .await
            .unwrap();
        futures::pin_mut!(stream);
        let first = tokio::time::timeout(Duration::from_secs(10), stream.next()).await;
        assert!(matches!(first, Ok(Some(Ok(_)))), "the first line comes");
        let started = std::time::Instant::now();
        server.stop();
        // What is left of the first batch, then the end.
        loop {
            match tokio::time::timeout(Duration::from_secs(5), stream.next()).await {
                Ok(Some(Ok(_))) => continue,
                Ok(_) => break,
                Err(_) => panic!("the stream goes on 5 s after the server stopped"),
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
    });
}
