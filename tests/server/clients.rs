//! The drivers people reach a PostgreSQL server with, against `ecsql::server`: pgjdbc
//! (Java, and the JDBC tools on it), psycopg 3 (Python) and node-postgres (JavaScript),
//! each running a probe of its own (`clients/`) that connects, reads with parameters,
//! writes in a transaction it rolls back, meets an error, and reads the catalog as its
//! tools do. A driver that is not installed is reported and its test not run, unless
//! ECSQL_REQUIRE_CLIENTS is set (`.ci/run` installs them and sets it).

use std::path::PathBuf;
use std::process::{Command, Output};

use ecsql::Database;
use ecsql::server::Server;

fn serving() -> (Database, Server) {
    let db = Database::open_in_memory();
    db.connect()
        .execute_batch(
            "CREATE COMPONENT Unit (hp INT, name TEXT, speed FLOAT, alive BOOL, parent ENTITY);
             SPAWN Unit(hp => i, name => 'u' || i, speed => i - 0.5, alive => i % 2 = 1) FROM range(1, 4) AS r(i)",
        )
        .unwrap();
    let server = super::start(&db, 64);
    (db, server)
}

fn probe_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/server/clients")
}

/// Runs `command`; `None`, saying why, where `what` is missing, unless
/// ECSQL_REQUIRE_CLIENTS is set, where that fails the test.
fn run(mut command: Command, what: &str, install: &str) -> Option<Output> {
    let missing = |why: String| {
        if std::env::var_os("ECSQL_REQUIRE_CLIENTS").is_some() {
            panic!("{what} cannot run ({why}), and ECSQL_REQUIRE_CLIENTS is set: {install}");
        }
        eprintln!("NOT RUN: {what} cannot run here ({why}); {install} to run this test");
        None
    };
    match command.output() {
        Ok(out) if out.status.success() => Some(out),
        Ok(out) => {
            let said = String::from_utf8_lossy(&out.stderr);
            // A driver that is not installed fails before it connects.
            if said.contains("No module named 'psycopg'")
                || said.contains("Cannot find module 'pg'")
                || said.contains("package org.postgresql does not exist")
            {
                let why = said
                    .lines()
                    .find(|l| l.contains("psycopg") || l.contains("'pg'") || l.contains("org.postgresql"))
                    .unwrap_or_default();
                return missing(why.trim().to_owned());
            }
            panic!("{what} failed:\n{}\n{said}", String::from_utf8_lossy(&out.stdout));
        }
        Err(e) => missing(e.to_string()),
    }
}

/// The probe's lines, checked against `expected` in order.
fn check(out: &Output, expected: &[&str]) {
    let said = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = said.lines().collect();
    assert_eq!(lines, expected, "the probe said:\n{said}");
}

#[test]
fn pgjdbc_connects_reads_the_catalog_as_jdbc_tools_do_and_writes() {
    let (_db, server) = serving();
    let port = server.local_addr().port().to_string();
    let jar = std::env::var("ECSQL_PGJDBC_JAR").unwrap_or_else(|_| "/usr/share/java/postgresql.jar".into());
    let build = std::env::temp_dir().join(format!("ecsql-jdbc-{}", std::process::id()));
    std::fs::create_dir_all(&build).unwrap();
    let install = "install Debian's libpostgresql-jdbc-java and a JDK (javac)";
    let mut javac = Command::new("javac");
    javac
        .args(["-d", build.to_str().unwrap(), "-cp", &jar])
        .arg(probe_dir().join("Probe.java"));
    if run(javac, "javac with pgjdbc", install).is_none() {
        return;
    }
    let mut java = Command::new("java");
    java.args(["-cp", &format!("{jar}:{}", build.display()), "Probe", &port]);
    let Some(out) = run(java, "pgjdbc", install) else {
        return;
    };
    check(
        &out,
        &[
            "version 15.0 (ecsql)",
            "schema information_schema",
            "schema pg_catalog",
            "schema public",
            "table Unit",
            "column id int8 -5 NO",
            "column hp int8 -5 NO",
            "column name text 12 NO",
            "column speed float8 8 NO",
            "column alive bool -7 NO",
            "column parent int8 -5 YES",
            "keywords true",
            "row u2 2 1.5",
            "row u3 3 2.5",
            "updated 1",
            "sum 6",
            "decimal 3.5",
            "error 42703",
        ],
    );
    let _ = std::fs::remove_dir_all(build);
}

#[test]
fn psycopg_reads_and_writes_with_pythons_types() {
    let (_db, server) = serving();
    let port = server.local_addr().port().to_string();
    let mut python = Command::new("python3");
    python.arg(probe_dir().join("probe.py")).arg(&port);
    if let Ok(path) = std::env::var("ECSQL_PYTHONPATH") {
        python.env("PYTHONPATH", path);
    }
    let Some(out) = run(python, "psycopg", "pip install \"psycopg[binary]\"") else {
        return;
    };
    check(
        &out,
        &[
            "version 15.0 (ecsql)",
            "row u2 2 False",
            "row u3 3 True",
            "types 42 0.75 hi! False",
            "declared 2.5 True",
            "numeric 2.5",
            "binary 2.5",
            "sum 6",
            "count 4",
            "error 42703",
            "column id bigint",
            "column hp bigint",
            "column name text",
            "column speed double precision",
            "column alive boolean",
            "column parent bigint",
            "copied u1 1",
            "copied u2 2",
            "before 4 INTRANS",
            "after 5",
            "copy INTRANS",
            "kept 1",
            "prepared 6",
        ],
    );
}

#[test]
fn node_postgres_reads_and_writes_with_parameters() {
    let (_db, server) = serving();
    let port = server.local_addr().port().to_string();
    let mut node = Command::new("node");
    node.arg(probe_dir().join("probe.js")).arg(&port);
    if let Ok(path) = std::env::var("ECSQL_NODE_PATH") {
        node.env("NODE_PATH", path);
    }
    let Some(out) = run(
        node,
        "node-postgres",
        "npm install pg (and set ECSQL_NODE_PATH to its node_modules)",
    ) else {
        return;
    };
    check(
        &out,
        &[
            "version 15.0 (ecsql)",
            "row u2 2",
            "row u3 3",
            "types 42 0.75 hi",
            "sum 6",
            "inserted 9 1",
            "error 42703",
        ],
    );
}

/// Each statement of a file of them, separated by `;` at line ends.
fn statements(file: &str) -> Vec<String> {
    let text = std::fs::read_to_string(probe_dir().join(file)).unwrap();
    text.lines()
        .filter(|l| !l.starts_with("--"))
        .collect::<Vec<_>>()
        .join("\n")
        .split(";\n")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.trim_end_matches(';').to_owned())
        .collect()
}

#[test]
fn the_connect_queries_of_dbeaver_and_grafana_answer() {
    let (_db, server) = serving();
    super::runtime().block_on(async {
        let client = super::connect(&server).await.unwrap();
        let mut answers = Vec::new();
        for file in ["dbeaver.sql", "grafana.sql"] {
            for statement in statements(file) {
                answers.push(super::rows(&client, &statement).await);
            }
        }
        let text = |row: &[Option<String>]| {
            row.iter()
                .map(|c| c.clone().unwrap_or_default())
                .collect::<Vec<_>>()
        };
        // DBeaver: its schema, the namespaces, an array type it looks up, the database.
        assert_eq!(text(&answers[2][0]), ["public", "ecsql"]);
        let namespaces: Vec<String> = answers[3].iter().map(|r| text(r)[2].clone()).collect();
        assert_eq!(namespaces, ["information_schema", "pg_catalog", "public"]);
        assert_eq!(text(&answers[5][0]), ["t", "b", "_aclitem", "1034"]);
        assert_eq!(text(&answers[7][0])[2], "ecsql");
        // Grafana: the version it computes, the tables its editor lists, their columns.
        let grafana = &answers[14..];
        assert_eq!(text(&grafana[0][0]), ["1500"]);
        assert_eq!(
            grafana[3].iter().map(|r| text(r)).collect::<Vec<_>>(),
            [["\"Unit\""]]
        );
        assert_eq!(
            grafana[4].iter().map(|r| text(r)).collect::<Vec<_>>(),
            [["\"Unit\""]]
        );
        let columns: Vec<Vec<String>> = grafana[5].iter().map(|r| text(r)).collect();
        assert_eq!(
            columns,
            [
                ["id", "bigint"],
                ["hp", "bigint"],
                ["name", "text"],
                ["speed", "double precision"],
                ["alive", "boolean"],
                ["parent", "bigint"],
            ]
        );
    });
}

#[test]
fn catalog_lookups_take_parameters_as_drivers_send_them() {
    let (_db, server) = serving();
    super::runtime().block_on(async {
        let client = super::connect(&server).await.unwrap();
        // psycopg and friends write `%s::regclass` with the name as a parameter.
        let columns = client
            .query(
                "SELECT attname FROM pg_catalog.pg_attribute WHERE attrelid = $1::regclass AND attnum > 1 ORDER BY attnum",
                &[&"unit"],
            )
            .await
            .unwrap();
        let names: Vec<String> = columns.iter().map(|r| r.get(0)).collect();
        assert_eq!(names, ["hp", "name", "speed", "alive", "parent"]);
        let oid: i64 = client.query_one("SELECT $1::regclass", &[&"Unit"]).await.unwrap().get(0);
        assert_eq!(oid, 16384);
        let missing = client.query("SELECT $1::regclass", &[&"nope"]).await.unwrap();
        assert_eq!(missing[0].get::<_, Option<i64>>(0), None);
    });
}
