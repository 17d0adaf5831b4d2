//! Who gets in: a password checked by SCRAM-SHA-256 (tokio-postgres speaks it), an
//! address beyond loopback only with a password or trust, and TLS, which psql starts
//! (`sslmode=require`) and without which a client is refused.

use std::net::SocketAddr;
use std::path::PathBuf;

use ecsql::Database;
use ecsql::server::{Options, Server, ServerError, TlsFiles};
use tokio_postgres::NoTls;

use super::{psql, rows, runtime};

fn tls_files() -> TlsFiles {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/server/tls");
    TlsFiles {
        cert: dir.join("cert.pem"),
        key: dir.join("key.pem"),
    }
}

fn with_password(listen: SocketAddr, tls: Option<TlsFiles>) -> Server {
    Server::start(
        &Database::open_in_memory(),
        Options {
            listen,
            password: Some("pencil ✏".to_owned()),
            tls,
            ..Options::default()
        },
    )
    .expect("the server starts")
}

async fn login(
    server: &Server,
    password: Option<&str>,
) -> Result<tokio_postgres::Client, tokio_postgres::Error> {
    let addr = server.local_addr();
    let mut config = format!("host=127.0.0.1 port={} user=anyone dbname=ecsql", addr.port());
    if let Some(password) = password {
        config.push_str(&format!(" password='{password}'"));
    }
    let (client, connection) = tokio_postgres::connect(&config, NoTls).await?;
    tokio::spawn(connection);
    Ok(client)
}

#[test]
fn a_password_is_asked_for_and_checked_by_scram() {
    let server = with_password(SocketAddr::from(([127, 0, 0, 1], 0)), None);
    runtime().block_on(async {
        let client = login(&server, Some("pencil ✏"))
            .await
            .expect("the right password gets in");
        assert_eq!(rows(&client, "SELECT 1").await, [[Some("1".to_owned())]]);
        for wrong in [Some("pen"), Some(""), None] {
            let e = login(&server, wrong).await.expect_err("refused");
            match e.as_db_error() {
                Some(db) => assert_eq!(db.code().code(), "28P01", "{wrong:?}: {e}"),
                // No password to give: the client stops before it sends one.
                None => assert!(wrong.is_none(), "{wrong:?}: {e}"),
            }
        }
        // The cancel key works with a password too.
        let token = client.cancel_token();
        token.cancel_query(NoTls).await.unwrap();
        // Settings given at startup are set once logged in; one refused is the answer to
        // all the client then sends.
        let addr = server.local_addr();
        for (options, answer) in [
            ("-c statement_timeout=1500", Ok("1500ms")),
            ("-c statement_timeout=soon", Err("statement_timeout")),
        ] {
            let config = format!(
                "host=127.0.0.1 port={} user=anyone dbname=ecsql password='pencil ✏' options='{options}'",
                addr.port()
            );
            let (client, connection) = tokio_postgres::connect(&config, NoTls).await.unwrap();
            tokio::spawn(connection);
            match (client.simple_query("SHOW statement_timeout").await, answer) {
                (Ok(messages), Ok(value)) => {
                    let shown = messages.iter().find_map(|m| match m {
                        tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_owned),
                        _ => None,
                    });
                    assert_eq!(shown.as_deref(), Some(value));
                }
                (Err(e), Err(named)) => {
                    let db = e.as_db_error().expect("the server's error");
                    assert_eq!(db.severity(), "FATAL", "{e}");
                    assert!(db.message().contains(named), "{e}");
                }
                (got, want) => panic!("{options}: {got:?}, expected {want:?}"),
            }
        }
    });
}

#[test]
fn beyond_loopback_a_password_or_trust_is_needed() {
    let db = Database::open_in_memory();
    let any = SocketAddr::from(([0, 0, 0, 0], 0));
    let refused = Server::start(
        &db,
        Options {
            listen: any,
            ..Options::default()
        },
    )
    .unwrap_err();
    assert!(matches!(refused, ServerError::NotLoopback(_)), "{refused}");
    assert!(refused.to_string().contains("--password-file"), "{refused}");
    for options in [
        Options {
            listen: any,
            trust: true,
            ..Options::default()
        },
        Options {
            listen: any,
            password: Some("pencil".to_owned()),
            ..Options::default()
        },
    ] {
        Server::start(&db, options).expect("listens").stop();
    }
}

#[test]
fn tls_files_that_cannot_be_used_stop_the_server_naming_the_file() {
    let db = Database::open_in_memory();
    let files = tls_files();
    for (tls, named) in [
        (
            TlsFiles {
                cert: files.cert.with_file_name("missing.pem"),
                key: files.key.clone(),
            },
            "missing.pem",
        ),
        (
            TlsFiles {
                cert: files.key.clone(),
                key: files.key.clone(),
            },
            "key.pem",
        ),
        (
            TlsFiles {
                cert: files.cert.clone(),
                key: files.cert.clone(),
            },
            "cert.pem",
        ),
    ] {
        let e = Server::start(
            &db,
            Options {
                listen: SocketAddr::from(([127, 0, 0, 1], 0)),
                tls: Some(tls),
                ..Options::default()
            },
        )
        .unwrap_err();
        assert!(matches!(e, ServerError::Tls { .. }), "{e}");
        assert!(e.to_string().contains(named), "{e}");
    }
}

#[test]
fn with_tls_psql_gets_in_encrypted_and_a_client_in_clear_is_refused() {
    let server = with_password(SocketAddr::from(([127, 0, 0, 1], 0)), Some(tls_files()));
    // tokio-postgres without TLS: refused with 28000.
    runtime().block_on(async {
        let e = login(&server, Some("pencil ✏")).await.expect_err("refused");
        assert_eq!(e.as_db_error().map(|d| d.code().code()), Some("28000"), "{e}");
    });
    let port = server.local_addr().port().to_string();
    // psql asking `SELECT 40 + 2` with `env`.
    let ask = |env: &[(&str, &str)]| {
        psql(
            &[
                "-h",
                "127.0.0.1",
                "-p",
                &port,
                "-U",
                "anyone",
                "-d",
                "ecsql",
                "-Atc",
                "SELECT 40 + 2",
            ],
            env,
        )
    };
    // SCRAM bound to the server's certificate (SCRAM-SHA-256-PLUS), or no login.
    let Some(out) = ask(&[
        ("PGPASSWORD", "pencil ✏"),
        ("PGSSLMODE", "require"),
        ("PGCHANNELBINDING", "require"),
    ]) else {
        return;
    };
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "42\n");
    // In clear: refused before it may authenticate.
    let out = ask(&[("PGPASSWORD", "pencil ✏"), ("PGSSLMODE", "disable")]).expect("psql ran once");
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("TLS connections only"), "{said}");
    // Encrypted with the wrong password: refused.
    let out = ask(&[("PGPASSWORD", "nope"), ("PGSSLMODE", "require")]).expect("psql ran once");
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr).to_lowercase();
    assert!(said.contains("password authentication failed"), "{said}");
}
