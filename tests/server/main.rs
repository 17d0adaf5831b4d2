//! `ecsql::server` with a real client, tokio-postgres: what a program attached over the
//! PostgreSQL wire protocol sees — rows with PostgreSQL's types, command tags, errors with
//! their SQLSTATE and position, each connection's own transaction, the connection limit,
//! and a server that will not listen beyond loopback unless told to trust.

use std::net::SocketAddr;

use ecsql::Database;
use ecsql::server::{Options, Server};
use tokio_postgres::{Client, NoTls, SimpleQueryMessage};

mod access;
mod clients;
mod copy;
mod explorer;
mod extended;
mod http;
mod live;
mod psql;
mod raw;
mod soak;

fn start(db: &Database, max_connections: usize) -> Server {
    start_with(
        db,
        Options {
            max_connections,
            ..Options::default()
        },
    )
}

/// A server on `db` listening on loopback at a port of the system's choice, as
/// `options` say otherwise.
fn start_with(db: &Database, options: Options) -> Server {
    Server::start(
        db,
        Options {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            ..options
        },
    )
    .expect("the server starts")
}

async fn connect(server: &Server) -> Result<Client, tokio_postgres::Error> {
    let addr = server.local_addr();
    let (client, connection) = tokio_postgres::connect(
        &format!("host={} port={} user=test dbname=ecsql", addr.ip(), addr.port()),
        NoTls,
    )
    .await?;
    tokio::spawn(connection);
    Ok(client)
}

/// The rows of a simple query, each as its columns' text.
async fn rows(client: &Client, sql: &str) -> Vec<Vec<Option<String>>> {
    client
        .simple_query(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .into_iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(row) => {
                Some((0..row.len()).map(|i| row.get(i).map(str::to_owned)).collect())
            }
            _ => None,
        })
        .collect()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_client_reads_and_writes_with_postgresqls_types_and_tags() {
    let db = Database::open_in_memory();
    let server = start(&db, 8);
    runtime().block_on(async {
        let client = connect(&server).await.unwrap();
        client
            .batch_execute("CREATE COMPONENT Unit (hp INT, speed REAL, name TEXT, alive BOOL, x FLOAT)")
            .await
            .unwrap();
        let spawned = client
            .simple_query("SPAWN Unit(i, 1.5, 'u' || i, i > 0, i * 0.25) FROM range(3) AS r(i)")
            .await
            .unwrap();
        assert!(matches!(
            spawned.last(),
            Some(SimpleQueryMessage::CommandComplete(_))
        ));
        assert_eq!(
            rows(
                &client,
                "SELECT Unit.hp, Unit.speed, Unit.name, Unit.alive, Unit.x FROM Unit ORDER BY Unit.hp"
            )
            .await,
            [
                ["0", "1.5", "u0", "f", "0"].map(|s| Some(s.to_owned())),
                ["1", "1.5", "u1", "t", "0.25"].map(|s| Some(s.to_owned())),
                ["2", "1.5", "u2", "t", "0.5"].map(|s| Some(s.to_owned())),
            ]
        );
        let n = client
            .simple_query("UPDATE Unit SET hp = 5 WHERE Unit.hp > 0")
            .await
            .unwrap();
        assert!(
            n.iter()
                .any(|m| matches!(m, SimpleQueryMessage::CommandComplete(2))),
            "{n:?}"
        );
        // Columns are named as PostgreSQL names them: a component's field by its name;
        // two of the same name keep what tells them apart.
        let names = |sql: &'static str| {
            let client = &client;
            async move {
                let prepared = client.prepare(sql).await.unwrap();
                let described: Vec<String> = prepared.columns().iter().map(|c| c.name().to_owned()).collect();
                let simple: Vec<String> = match client.simple_query(sql).await.unwrap().first() {
                    Some(SimpleQueryMessage::RowDescription(columns)) => {
                        columns.iter().map(|c| c.name().to_owned()).collect()
                    }
                    other => panic!("{other:?}"),
                };
                assert_eq!(described, simple, "{sql}");
                described
            }
        };
        assert_eq!(
            names("SELECT Unit.hp, Unit.hp + 1, Unit.name AS label FROM Unit").await,
            ["hp", "Unit.hp + 1", "label"]
        );
        assert_eq!(
            names("SELECT a.hp, b.hp, a.name FROM Unit AS a JOIN Unit AS b ON a.id = b.id").await,
            ["a.hp", "b.hp", "name"]
        );
    });
}

#[test]
fn errors_carry_their_sqlstate_and_the_position_psql_points_at() {
    let db = Database::open_in_memory();
    let server = start(&db, 8);
    runtime().block_on(async {
        let client = connect(&server).await.unwrap();
        client
            .batch_execute("CREATE COMPONENT Unit (hp INT)")
            .await
            .unwrap();
        let e = client.simple_query("SELECT nope FROM Unit").await.unwrap_err();
        let db_error = e.as_db_error().expect("a server error");
        assert_eq!(db_error.code().code(), "42703", "{db_error:?}");
        assert!(db_error.message().contains("nope"), "{db_error:?}");
        assert_eq!(
            db_error.position(),
            Some(&tokio_postgres::error::ErrorPosition::Original(8))
        );
        let e = client.simple_query("SELEC 1").await.unwrap_err();
        assert_eq!(e.as_db_error().unwrap().code().code(), "42601");
        client.batch_execute("SPAWN Unit(0)").await.unwrap();
        let e = client
            .simple_query("SELECT 1 / Unit.hp FROM Unit")
            .await
            .unwrap_err();
        assert_eq!(e.as_db_error().unwrap().code().code(), "22012");
        // The connection goes on after an error.
        assert_eq!(
            rows(&client, "SELECT count(*) FROM Unit").await,
            [[Some("1".to_owned())]]
        );
    });
}

#[test]
fn each_connection_has_its_own_transaction_and_one_that_leaves_rolls_back() {
    let db = Database::open_in_memory();
    let server = start(&db, 8);
    runtime().block_on(async {
        let a = connect(&server).await.unwrap();
        a.batch_execute("CREATE COMPONENT Unit (hp INT); SPAWN Unit(1)")
            .await
            .unwrap();
        a.batch_execute("BEGIN; UPDATE Unit SET hp = 2").await.unwrap();
        assert_eq!(
            rows(&a, "SELECT Unit.hp FROM Unit").await,
            [[Some("2".to_owned())]]
        );
        a.batch_execute("ROLLBACK").await.unwrap();
        assert_eq!(
            rows(&a, "SELECT Unit.hp FROM Unit").await,
            [[Some("1".to_owned())]]
        );
        // A client that leaves inside a transaction: what it did is undone.
        a.batch_execute("BEGIN; UPDATE Unit SET hp = 3").await.unwrap();
        drop(a);
        let b = connect(&server).await.unwrap();
        let mut seen = Vec::new();
        for _ in 0..200 {
            match b.simple_query("SELECT Unit.hp FROM Unit").await {
                Ok(messages) => {
                    seen = messages
                        .into_iter()
                        .filter_map(|m| match m {
                            SimpleQueryMessage::Row(r) => r.get(0).map(str::to_owned),
                            _ => None,
                        })
                        .collect();
                    break;
                }
                // Busy while the gone client's transaction is still being dropped.
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(10)).await,
            }
        }
        assert_eq!(seen, ["1"]);
    });
    // The program that started the server sees the same database.
    let conn = db.connect();
    let hp: i64 = conn
        .query_row("SELECT Unit.hp FROM Unit", (), |r| r.get(0))
        .unwrap();
    assert_eq!(hp, 1);
}

#[test]
fn past_the_connection_limit_a_client_is_refused_with_53300() {
    let db = Database::open_in_memory();
    let server = start(&db, 1);
    runtime().block_on(async {
        let first = connect(&server).await.unwrap();
        let second = connect(&server).await;
        let Err(e) = second else {
            panic!("the second client is refused");
        };
        assert_eq!(e.as_db_error().map(|d| d.code().code()), Some("53300"), "{e}");
        // The first is still served.
        assert_eq!(rows(&first, "SELECT 1").await, [[Some("1".to_owned())]]);
    });
}

#[test]
fn a_client_cannot_reach_the_servers_files() {
    let db = Database::open_in_memory();
    let server = start(&db, 8);
    let dir = std::env::temp_dir().join(format!("ecsql-serve-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("out.csv");
    runtime().block_on(async {
        let client = connect(&server).await.unwrap();
        client
            .batch_execute("CREATE COMPONENT Unit (hp INT)")
            .await
            .unwrap();
        for sql in [
            format!("SPAWN Unit(1); COPY Unit TO '{}'", file.display()),
            format!("COPY Unit FROM '{}'", file.display()),
            format!("SAVE TO '{}'", file.display()),
            format!("LOAD FROM '{}'", file.display()),
        ] {
            let e = client.simple_query(&sql).await.unwrap_err();
            let db_error = e.as_db_error().expect("a server error");
            assert_eq!(db_error.code().code(), "42501", "{sql}: {db_error:?}");
            assert!(
                db_error.message().contains("file of the server's"),
                "{db_error:?}"
            );
        }
        // Refused whole: the SPAWN before the COPY did not run either.
        assert_eq!(
            rows(&client, "SELECT count(*) FROM Unit").await,
            [[Some("0".to_owned())]]
        );
    });
    assert!(!file.exists(), "no file was written");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_failed_transaction_takes_only_its_end_and_commit_rolls_it_back() {
    let db = Database::open_in_memory();
    let server = start(&db, 8);
    runtime().block_on(async {
        let client = connect(&server).await.unwrap();
        client
            .batch_execute("CREATE COMPONENT Unit (hp INT); SPAWN Unit(1)")
            .await
            .unwrap();
        client
            .batch_execute("BEGIN; UPDATE Unit SET hp = 2")
            .await
            .unwrap();
        let e = client.simple_query("SELECT nope FROM Unit").await.unwrap_err();
        assert_eq!(e.as_db_error().unwrap().code().code(), "42703");
        let e = client.simple_query("SELECT 1").await.unwrap_err();
        assert_eq!(e.as_db_error().unwrap().code().code(), "25P02", "{e}");
        // COMMIT of a failed block rolls it back, as PostgreSQL's does.
        let ended = client.simple_query("COMMIT").await.unwrap();
        assert!(matches!(
            ended.last(),
            Some(SimpleQueryMessage::CommandComplete(_))
        ));
        assert_eq!(
            rows(&client, "SELECT Unit.hp FROM Unit").await,
            [[Some("1".to_owned())]]
        );
        // ROLLBACK with no transaction open ends nothing and is no error, as in PostgreSQL.
        client.batch_execute("ROLLBACK").await.unwrap();
    });
}

#[test]
fn another_clients_transaction_is_waited_for_and_an_idle_one_rolled_back() {
    let db = Database::open_in_memory();
    let server = start_with(
        &db,
        Options {
            idle_in_transaction: std::time::Duration::from_millis(300),
            ..Options::default()
        },
    );
    runtime().block_on(async {
        let a = connect(&server).await.unwrap();
        let b = connect(&server).await.unwrap();
        a.batch_execute("CREATE COMPONENT Unit (hp INT); SPAWN Unit(1)")
            .await
            .unwrap();
        a.batch_execute("BEGIN; UPDATE Unit SET hp = 2").await.unwrap();
        // B waits for A's transaction (not refused for sharing a thread with it): A
        // commits while B waits, and B's write then applies on top.
        let (waited, committed) = tokio::join!(b.simple_query("UPDATE Unit SET hp = Unit.hp * 10"), async {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            a.batch_execute("COMMIT").await
        });
        waited.unwrap();
        committed.unwrap();
        assert_eq!(
            rows(&b, "SELECT Unit.hp FROM Unit").await,
            [[Some("20".to_owned())]]
        );
        // A transaction left idle is rolled back; its client is told when it comes back.
        a.batch_execute("BEGIN; UPDATE Unit SET hp = 0").await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(900)).await;
        assert_eq!(
            rows(&b, "SELECT Unit.hp FROM Unit").await,
            [[Some("20".to_owned())]]
        );
        let e = a.simple_query("SELECT 1").await.unwrap_err();
        assert_eq!(e.as_db_error().unwrap().code().code(), "25P03", "{e}");
        a.batch_execute("ROLLBACK").await.unwrap();
        assert_eq!(rows(&a, "SELECT 1").await, [[Some("1".to_owned())]]);
        // A statement that runs longer than the limit is not idle time: its transaction
        // goes on, and commits.
        a.batch_execute("BEGIN; UPDATE Unit SET hp = 42").await.unwrap();
        // (A count over pairs, its sides doubled until one run takes past the limit on
        // this machine: 3,000 on a side runs in about 130 ms on an idle one.)
        let limit = std::time::Duration::from_millis(300);
        let mut side = 3000;
        let took = loop {
            let long = format!(
                "SELECT count(*) FROM range(1, {side}) AS a(x), range(1, {side}) AS b(y) WHERE x + y > 0"
            );
            let started = std::time::Instant::now();
            rows(&a, &long).await;
            let took = started.elapsed();
            if took > limit || side >= 48_000 {
                break took;
            }
            side *= 2;
        };
        assert!(took > limit, "the statement ran past the limit: {took:?}");
        a.batch_execute("COMMIT").await.unwrap();
        assert_eq!(
            rows(&b, "SELECT Unit.hp FROM Unit").await,
            [[Some("42".to_owned())]]
        );
    });
}

#[test]
fn a_clients_transaction_holds_the_database_from_its_first_write_as_read_committed() {
    let db = Database::open_in_memory();
    db.connect()
        .execute_batch("CREATE COMPONENT Unit (hp INT); SPAWN Unit(1); CREATE SYSTEM age AS UPDATE Unit SET hp = Unit.hp")
        .unwrap();
    let server = start_with(
        &db,
        Options {
            tick_rate: Some(100.0),
            ..Options::default()
        },
    );
    let hp = "SELECT Unit.hp FROM Unit";
    runtime().block_on(async {
        let a = connect(&server).await.unwrap();
        let b = connect(&server).await.unwrap();
        // What a driver that is not in autocommit sends: BEGIN, then its reads.
        a.batch_execute("BEGIN").await.unwrap();
        assert_eq!(
            rows(&a, "SHOW transaction_isolation").await,
            [[Some("read committed".to_owned())]]
        );
        assert_eq!(rows(&a, hp).await, [[Some("1".to_owned())]]);
        // Another client writes at once, and the clock goes on, while A's transaction
        // has only read.
        let started = std::time::Instant::now();
        b.batch_execute("UPDATE Unit SET hp = 5").await.unwrap();
        assert!(started.elapsed() < std::time::Duration::from_secs(1), "B waited");
        let first: i64 = rows(&b, "SELECT tick()").await[0][0]
            .as_deref()
            .unwrap()
            .parse()
            .unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        let later: i64 = rows(&b, "SELECT tick()").await[0][0]
            .as_deref()
            .unwrap()
            .parse()
            .unwrap();
        assert!(later > first, "the clock stood still: {first} then {later}");
        // Each of A's statements reads what was committed before it.
        assert_eq!(rows(&a, hp).await, [[Some("5".to_owned())]]);
        // From A's first write, B waits for A's COMMIT, and then sees it.
        a.batch_execute("UPDATE Unit SET hp = Unit.hp + 1").await.unwrap();
        let (waited, committed) = tokio::join!(
            async {
                let started = std::time::Instant::now();
                (b.simple_query(hp).await, started.elapsed())
            },
            async {
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                a.batch_execute("COMMIT").await
            }
        );
        committed.unwrap();
        let (read, took) = waited;
        assert!(
            took >= std::time::Duration::from_millis(150),
            "B read beside A's write after {took:?}"
        );
        assert!(matches!(&read.unwrap()[1], SimpleQueryMessage::Row(r) if r.get(0) == Some("6")));
        // SERIALIZABLE holds it from BEGIN; READ ONLY refuses writes (25006).
        a.batch_execute("BEGIN ISOLATION LEVEL SERIALIZABLE")
            .await
            .unwrap();
        let (waited, _) = tokio::join!(
            async {
                let started = std::time::Instant::now();
                b.simple_query("SELECT 1").await.unwrap();
                started.elapsed()
            },
            async {
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                a.batch_execute("COMMIT").await.unwrap();
            }
        );
        assert!(
            waited >= std::time::Duration::from_millis(150),
            "B read beside a serializable transaction"
        );
        a.batch_execute("BEGIN READ ONLY").await.unwrap();
        let e = a.simple_query("UPDATE Unit SET hp = 0").await.unwrap_err();
        assert_eq!(e.as_db_error().unwrap().code().code(), "25006", "{e}");
        a.batch_execute("ROLLBACK").await.unwrap();
        // A write that fails fails the block, which can only roll back: it is rolled back
        // at once, and nobody waits for the client to say so.
        b.batch_execute("PRAGMA busy_timeout = 300").await.unwrap();
        a.batch_execute("BEGIN").await.unwrap();
        let e = a.simple_query("UPDATE Unit SET nope = 1").await.unwrap_err();
        assert_eq!(e.as_db_error().unwrap().code().code(), "42703", "{e}");
        assert_eq!(rows(&b, hp).await, [[Some("6".to_owned())]]);
        b.batch_execute("UPDATE Unit SET hp = 7").await.unwrap();
        let e = a.simple_query("SELECT 1").await.unwrap_err();
        assert_eq!(e.as_db_error().unwrap().code().code(), "25P02", "{e}");
        a.batch_execute("COMMIT").await.unwrap();
        assert_eq!(rows(&a, hp).await, [[Some("7".to_owned())]]);
    });
}

#[test]
fn settings_given_at_startup_are_set_and_a_refused_one_is_the_clients_error() {
    let db = Database::open_in_memory();
    let server = start_with(
        &db,
        Options {
            statement_timeout: Some(std::time::Duration::from_secs(30)),
            ..Options::default()
        },
    );
    let addr = server.local_addr();
    let config = |options: &str| {
        let mut config = tokio_postgres::Config::new();
        config
            .host(addr.ip().to_string())
            .port(addr.port())
            .user("test")
            .dbname("ecsql")
            .application_name("myapp")
            .options(options);
        config
    };
    runtime().block_on(async {
        // PGOPTIONS' -c and --name=value, psql's application_name; DateStyle (fixed) is
        // taken and changes nothing.
        let (client, connection) =
            config("-c statement_timeout=1500 --default-transaction-read-only=on -c DateStyle=German")
                .connect(NoTls)
                .await
                .unwrap();
        tokio::spawn(connection);
        for (setting, value) in [
            ("statement_timeout", "1500ms"),
            ("application_name", "myapp"),
            ("default_transaction_read_only", "on"),
        ] {
            assert_eq!(
                rows(&client, &format!("SHOW {setting}")).await,
                [[Some(value.to_owned())]],
                "{setting}"
            );
        }
        // One the server refuses: the connection is refused, saying why.
        let e = config("-c statement_timeout=999999")
            .connect(NoTls)
            .await
            .err()
            .expect("refused");
        let said = e
            .as_db_error()
            .map(|d| d.message().to_owned())
            .unwrap_or_default();
        assert!(
            said.contains("statement_timeout = 999999")
                && said.contains("at most 30000 ms")
                && !said.contains("at line"),
            "{e}"
        );
    });
}

#[test]
fn a_server_that_cannot_listen_runs_no_script() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let dir = std::env::temp_dir().join(format!("ecsql-taken-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("setup.sql");
    std::fs::write(&script, "CREATE COMPONENT Unit (hp INT); SPAWN Unit(1);\n").unwrap();
    let file = dir.join("game.ecsql");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ecsql"))
        .args(["serve", "--listen", &addr.to_string(), "--db"])
        .arg(&file)
        .arg(&script)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains(&format!("cannot listen on {addr}")), "{said}");
    assert!(!said.contains("spawned"), "{said}");
    assert!(!file.exists(), "the script ran: the file was made");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn when_stop_returns_no_client_holds_the_database() {
    // Many times: a client's thread that lets go late is a race, which one round may
    // win.
    for _ in 0..20 {
        let db = Database::open_in_memory();
        db.connect()
            .execute_batch("CREATE COMPONENT Unit (hp INT); SPAWN Unit(1)")
            .unwrap();
        let server = start(&db, 8);
        let rt = runtime();
        let clients: Vec<Client> = rt.block_on(async {
            let mut clients = Vec::new();
            for _ in 0..4 {
                clients.push(connect(&server).await.unwrap());
            }
            // A transaction whose rollback takes a while.
            clients[0]
                .batch_execute("BEGIN; UPDATE Unit SET hp = 2; INSERT INTO Unit (hp) SELECT i FROM range(300000) AS r(i)")
                .await
                .unwrap();
            clients
        });
        server.stop();
        // At once, with no wait allowed: the client's transaction was rolled back.
        let own = db.connect();
        own.execute("PRAGMA busy_timeout = 0", ()).unwrap();
        let count: i64 = own
            .query_row("SELECT count(*) FROM Unit WHERE Unit.hp = 1", (), |r| r.get(0))
            .unwrap();
        assert_eq!(count, 1);
        own.execute("UPDATE Unit SET hp = 3", ()).unwrap();
        drop(clients);
    }
}

#[test]
fn a_client_cannot_change_the_databases_settings_and_seats_come_back() {
    let db = Database::open_in_memory();
    let server = start(&db, 1);
    runtime().block_on(async {
        let client = connect(&server).await.unwrap();
        let e = client
            .simple_query("PRAGMA memory_limit = '1TB'")
            .await
            .unwrap_err();
        assert_eq!(e.as_db_error().unwrap().code().code(), "42501", "{e}");
        // Nor by PostgreSQL's words for it.
        for sql in [
            "SET memory_limit = '1TB'",
            "SET SESSION threads TO 1",
            "RESET threads",
        ] {
            let e = client.simple_query(sql).await.unwrap_err();
            let db_error = e.as_db_error().unwrap();
            assert_eq!(db_error.code().code(), "42501", "{sql}: {e}");
            assert!(
                db_error.message().contains("is a setting of the whole database"),
                "{e}"
            );
        }
        // Its own settings it may, by either.
        client.batch_execute("PRAGMA busy_timeout = 100").await.unwrap();
        client.batch_execute("SET busy_timeout = '200ms'").await.unwrap();
        assert_eq!(
            rows(&client, "SHOW busy_timeout").await,
            [[Some("200".to_owned())]]
        );
        // An error on the second line points there.
        let e = client.simple_query("SELECT 1;\nSELECT nope").await.unwrap_err();
        assert_eq!(
            e.as_db_error().unwrap().position(),
            Some(&tokio_postgres::error::ErrorPosition::Original(18))
        );
        drop(client);
        // The one seat comes back once the client leaves.
        let mut again = None;
        for _ in 0..100 {
            if let Ok(c) = connect(&server).await {
                again = Some(c);
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        let again = again.expect("a client connects again after the first left");
        assert_eq!(rows(&again, "SELECT 2").await, [[Some("2".to_owned())]]);
    });
}

#[test]
fn a_cancel_request_stops_the_clients_statement_and_only_with_its_secret() {
    let db = Database::open_in_memory();
    let server = start(&db, 8);
    runtime().block_on(async {
        let client = connect(&server).await.unwrap();
        // A statement of many seconds: a join of 10^12 pairs.
        let long = "SELECT count(*) FROM range(1000000) AS a(i), range(1000000) AS b(j) WHERE a.i + b.j = -1";
        // Requests naming every process id the server has given, with a guessed
        // secret, stop nothing.
        let token = client.cancel_token();
        let started = std::time::Instant::now();
        let query = client.simple_query(long);
        tokio::pin!(query);
        tokio::select! {
            r = &mut query => panic!("the statement ended before it was cancelled: {r:?}"),
            _ = async {
                tokio::time::sleep(std::time::Duration::from_millis(300)).await;
                for pid in 0..64 {
                    send_cancel(server.local_addr(), pid, 0);
                }
                tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            } => {}
        }
        token.cancel_query(NoTls).await.unwrap();
        let e = tokio::time::timeout(std::time::Duration::from_secs(20), query)
            .await
            .expect("the cancel stops the statement")
            .unwrap_err();
        assert_eq!(e.as_db_error().unwrap().code().code(), "57014", "{e}");
        assert!(started.elapsed() < std::time::Duration::from_secs(30));
        // The connection goes on, and a cancel that arrives with nothing running does
        // nothing (it is answered on a connection of its own: give it time to arrive).
        token.cancel_query(NoTls).await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        assert_eq!(rows(&client, "SELECT 1").await, [[Some("1".to_owned())]]);
    });
}

/// Sends a cancel request for `pid` with `secret`.
fn send_cancel(addr: SocketAddr, pid: i32, secret: i32) {
    use std::io::Write;
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    let mut message = 16_i32.to_be_bytes().to_vec();
    message.extend(80877102_i32.to_be_bytes());
    message.extend(pid.to_be_bytes());
    message.extend(secret.to_be_bytes());
    stream.write_all(&message).unwrap();
}

#[test]
fn a_clients_statements_are_bounded_in_time_and_memory_and_it_cannot_raise_them() {
    let db = Database::open_in_memory();
    let server = start_with(
        &db,
        Options {
            statement_timeout: Some(std::time::Duration::from_millis(300)),
            memory_limit: Some(1 << 20),
            ..Options::default()
        },
    );
    runtime().block_on(async {
        let client = connect(&server).await.unwrap();
        // 10^9 pairs, of little memory.
        let long = "SELECT count(*) FROM range(30000) AS a(i), range(30000) AS b(j) WHERE a.i + b.j = -1";
        let started = std::time::Instant::now();
        let e = client.simple_query(long).await.unwrap_err();
        let db_error = e.as_db_error().unwrap();
        assert_eq!(db_error.code().code(), "57014", "{e}");
        assert!(db_error.message().contains("statement timeout"), "{e}");
        assert!(started.elapsed() >= std::time::Duration::from_millis(300));
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
        // Lower it, yes; raise it or lift it, no.
        assert_eq!(
            rows(&client, "PRAGMA statement_timeout").await,
            [[Some("300".to_owned())]]
        );
        client
            .batch_execute("PRAGMA statement_timeout = 100")
            .await
            .unwrap();
        for refused in [
            "PRAGMA statement_timeout = 100000",
            "SET statement_timeout = '1min'",
        ] {
            let e = client.simple_query(refused).await.unwrap_err();
            assert!(
                e.as_db_error().unwrap().message().contains("at most 300 ms"),
                "{e}"
            );
        }
        // None of its own (0, RESET, RESET ALL, DEFAULT, as drivers send them) is the
        // server's limit.
        for back in [
            "SET statement_timeout = 0",
            "RESET statement_timeout",
            "RESET ALL",
            "SET statement_timeout TO DEFAULT",
        ] {
            client.batch_execute("SET statement_timeout = 100").await.unwrap();
            client.batch_execute(back).await.unwrap();
            assert_eq!(
                rows(&client, "SHOW statement_timeout").await,
                [[Some("300ms".to_owned())]],
                "{back}"
            );
        }
        client.batch_execute("SET statement_timeout = 100").await.unwrap();
        // Quick statements are not stopped, one after another.
        for _ in 0..20 {
            assert_eq!(rows(&client, "SELECT 1").await, [[Some("1".to_owned())]]);
        }
        // More working memory than the server gives a client's statement.
        let e = client
            .simple_query("SELECT i FROM range(1000000) AS r(i) ORDER BY i DESC")
            .await
            .unwrap_err();
        assert_eq!(e.as_db_error().unwrap().code().code(), "53200", "{e}");
        // The program's own connection is bound by neither.
        let own = db.connect();
        assert_eq!(own.statement_timeout(), None);
        let n: i64 = own
            .query_row(
                "SELECT count(*) FROM (SELECT i FROM range(1000000) AS r(i) ORDER BY i DESC)",
                (),
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(n, 1_000_000);
    });
}

#[test]
fn a_ticking_world_is_seen_a_whole_tick_at_a_time() {
    let db = Database::open_in_memory();
    db.connect()
        .execute_batch(
            "CREATE COMPONENT Pos (x FLOAT); CREATE COMPONENT Purse (n INT, pays BOOL);
             SPAWN Pos(0.0); SPAWN Purse(100, true); SPAWN Purse(0, false);
             CREATE SYSTEM walk AS UPDATE Pos SET x = Pos.x + delta_time();
             CREATE SYSTEM pay AS UPDATE Purse SET n = Purse.n + CASE WHEN Purse.pays THEN -1 ELSE 1 END",
        )
        .unwrap();
    let server = start_with(
        &db,
        Options {
            tick_rate: Some(200.0),
            ..Options::default()
        },
    );
    runtime().block_on(async {
        let client = connect(&server).await.unwrap();
        let started = std::time::Instant::now();
        let mut last = 0;
        while started.elapsed() < std::time::Duration::from_millis(500) {
            // One statement: the tick, and the world as that tick left it.
            let row = client
                .query_one(
                    "SELECT tick(), (SELECT Pos.x FROM Pos), (SELECT sum(Purse.n) FROM Purse)",
                    &[],
                )
                .await
                .unwrap();
            let (tick, x, sum): (i64, f64, i64) = (row.get(0), row.get(1), row.get(2));
            assert!(tick >= last, "the clock went back: {last} then {tick}");
            last = tick;
            assert!((x - tick as f64 / 200.0).abs() < 1e-9, "tick {tick} with x {x}");
            assert_eq!(sum, 100, "tick {tick}: money made or lost");
        }
        assert!(last >= 20, "200 ticks a second ran {last} in 500 ms");
        // A client's write lands between ticks, and the clock goes on from it.
        client.batch_execute("UPDATE Pos SET x = 0.0").await.unwrap();
    });
    let ran = server.ticks().ran;
    assert!(ran >= 20, "{:?}", server.ticks());
    assert_eq!(server.ticks().failed, 0);
    server.stop();
    let tick = db.connect().clock().unwrap().tick;
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert_eq!(
        db.connect().clock().unwrap().tick,
        tick,
        "a stopped server does not tick"
    );
}

#[test]
fn a_failing_tick_changes_nothing_and_the_clock_goes_on() {
    let db = Database::open_in_memory();
    db.connect()
        .execute_batch(
            "CREATE COMPONENT Gate (open INT); SPAWN Gate(0);
             CREATE COMPONENT Count (n INT); SPAWN Count(0);
             CREATE SYSTEM count AS UPDATE Count SET n = Count.n + 1;
             CREATE SYSTEM check AS UPDATE Gate SET open = 1 / Gate.open",
        )
        .unwrap();
    let server = start_with(
        &db,
        Options {
            tick_rate: Some(100.0),
            dt: ecsql::server::Dt::Real,
            ..Options::default()
        },
    );
    let ticks = until(|| Some(server.ticks()).filter(|t| t.failed >= 5));
    assert_eq!(ticks.ran, 0, "{ticks:?}");
    assert!(
        ticks
            .last_error
            .as_deref()
            .unwrap_or("")
            .contains("division by zero"),
        "{ticks:?}"
    );
    let conn = db.connect();
    assert_eq!(
        conn.query_row("SELECT Count.n FROM Count", (), |r| r.get::<_, i64>(0))
            .unwrap(),
        0
    );
    conn.execute("UPDATE Gate SET open = 1", ()).unwrap();
    until(|| Some(server.ticks()).filter(|t| t.ran >= 5));
    let n: i64 = conn
        .query_row("SELECT Count.n FROM Count", (), |r| r.get(0))
        .unwrap();
    assert!(n >= 5);
    // With real time, each tick's dt is the time since the one before: about 1/100 s.
    let dt = conn.clock().unwrap().dt;
    assert!(dt > 0.001 && dt < 0.5, "dt {dt}");
}

/// What `ready` gives once it gives something, looked at every 10 ms for up to 20 s
/// (the machine may be busy): a panic after that.
fn until<T>(mut ready: impl FnMut() -> Option<T>) -> T {
    let started = std::time::Instant::now();
    loop {
        if let Some(t) = ready() {
            return t;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "never ready"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Runs psql (Debian's postgresql-client) with `args` and the environment `env`, reading
/// no psqlrc; `None`, saying so, where psql is not installed, unless ECSQL_REQUIRE_PSQL
/// is set (`.ci/run` installs psql and sets it), where that fails the test.
pub(crate) fn psql(args: &[&str], env: &[(&str, &str)]) -> Option<std::process::Output> {
    let mut command = std::process::Command::new("psql");
    command.arg("-X").args(args).env("PGCONNECT_TIMEOUT", "10");
    for (k, v) in env {
        command.env(k, v);
    }
    match command.output() {
        Ok(out) => Some(out),
        Err(e) if std::env::var_os("ECSQL_REQUIRE_PSQL").is_some() => {
            panic!("psql cannot run ({e}), and ECSQL_REQUIRE_PSQL is set: install postgresql-client")
        }
        Err(e) => {
            eprintln!(
                "NOT RUN: psql cannot run here ({e}); install postgresql-client (Debian) to run this test"
            );
            None
        }
    }
}

#[test]
fn with_a_files_directory_a_client_reaches_files_there_and_nowhere_else() {
    let db = Database::open_in_memory();
    let dir = std::env::temp_dir().join(format!("ecsql-serve-dir-{}", std::process::id()));
    let outside = std::env::temp_dir().join(format!("ecsql-serve-outside-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(&outside, dir.join("escape")).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(outside.join("made.csv"), dir.join("dangling.csv")).unwrap();
    let server = start_with(
        &db,
        Options {
            files: Some(dir.clone()),
            ..Options::default()
        },
    );
    runtime().block_on(async {
        let client = connect(&server).await.unwrap();
        client
            .batch_execute("CREATE COMPONENT Unit (hp INT); SPAWN Unit(1); SPAWN Unit(2)")
            .await
            .unwrap();
        // Inside: written and read there, by the simple protocol and a prepared statement.
        client
            .batch_execute("COPY Unit (hp) TO 'sub/units.csv'")
            .await
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.join("sub/units.csv")).unwrap(),
            "hp\n1\n2\n"
        );
        assert_eq!(
            client
                .execute("COPY Unit (hp) FROM 'sub/units.csv'", &[])
                .await
                .unwrap(),
            2
        );
        client.batch_execute("SAVE TO 'world.ecsql'").await.unwrap();
        assert!(dir.join("world.ecsql").exists());
        // Anywhere else: refused, before anything runs.
        let escape = if cfg!(unix) { "escape/x.csv" } else { "../x.csv" };
        for sql in [
            "COPY Unit TO '/tmp/abs.csv'".to_owned(),
            "COPY Unit TO '../up.csv'".to_owned(),
            "COPY Unit TO 'sub/../../up.csv'".to_owned(),
            format!("COPY Unit TO '{escape}'"),
            "LOAD FROM '/etc/passwd'".to_owned(),
            "COPY Unit TO 'dangling.csv'".to_owned(),
        ] {
            let e = client.simple_query(&sql).await.unwrap_err();
            assert_eq!(e.as_db_error().unwrap().code().code(), "42501", "{sql}: {e}");
        }
        // A parameter's file cannot be checked before it runs: refused.
        let e = client.prepare("COPY Unit TO $1").await.unwrap_err();
        assert_eq!(e.as_db_error().unwrap().code().code(), "42501", "{e}");
    });
    assert_eq!(
        std::fs::read_dir(&outside).unwrap().count(),
        0,
        "nothing was written outside"
    );
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&outside);
}

#[test]
fn a_clients_socket_is_probed_when_quiet() {
    let db = Database::open_in_memory();
    let server = start(&db, 8);
    let port = server.local_addr().port();
    runtime().block_on(async {
        let client = connect(&server).await.unwrap();
        assert_eq!(rows(&client, "SELECT 1").await, [[Some("1".to_owned())]]);
        // The server's end of the connection, as the kernel shows it (iproute2's ss):
        // once what was sent is acknowledged, its timer is the keepalive's.
        let filter = format!("( sport = :{port} )");
        let mut shown = String::new();
        for _ in 0..50 {
            let Ok(out) = std::process::Command::new("ss")
                .args(["-tnoe", "state", "established", &filter])
                .output()
            else {
                eprintln!("NOT RUN: ss (iproute2) cannot run here, so a socket's keepalive cannot be seen");
                return;
            };
            shown = String::from_utf8_lossy(&out.stdout).into_owned();
            if shown.contains("timer:(keepalive") {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        panic!("no keepalive on the server's socket:\n{shown}");
    });
}
