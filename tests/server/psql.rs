//! psql (Debian's postgresql-client) against `ecsql::server`: errors pointed at in the
//! query's text, `\copy` both ways in the options psql users type, and Ctrl-C (a cancel
//! request) stopping a long query.

use std::time::{Duration, Instant};

use ecsql::Database;
use ecsql::server::Server;

use super::psql;

fn serving() -> (Database, Server) {
    let db = Database::open_in_memory();
    db.connect()
        .execute_batch(
            "CREATE COMPONENT Unit (hp INT, name TEXT); SPAWN Unit(i, 'u' || i) FROM range(3) AS r(i)",
        )
        .unwrap();
    let server = super::start(&db, 64);
    (db, server)
}

/// psql's arguments to reach `server`, then `more`.
fn to<'a>(port: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["-h", "127.0.0.1", "-p", port, "-U", "test", "-d", "ecsql"];
    args.extend(more);
    args
}

#[test]
fn psql_points_at_the_error_in_the_query() {
    let (_db, server) = serving();
    let port = server.local_addr().port().to_string();
    let Some(out) = psql(&to(&port, &["-c", "SELECT Unit.hp,\n  nope FROM Unit"]), &[]) else {
        return;
    };
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    // The second line, and the caret under `nope`.
    assert!(said.contains("ERROR:  unknown column nope"), "{said}");
    assert!(said.contains("LINE 2:   nope FROM Unit\n          ^"), "{said}");
}

#[test]
fn psql_copies_both_ways_with_the_options_its_users_type() {
    let (db, server) = serving();
    let port = server.local_addr().port().to_string();
    let dir = std::env::temp_dir().join(format!("ecsql-psql-copy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let csv = dir.join("units.csv");
    let out_copy = format!(
        "\\copy (SELECT Unit.hp, Unit.name FROM Unit ORDER BY Unit.hp) TO '{}' CSV HEADER",
        csv.display()
    );
    let Some(out) = psql(&to(&port, &["-c", &out_copy]), &[]) else {
        return;
    };
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "COPY 3\n");
    assert_eq!(
        std::fs::read_to_string(&csv).unwrap(),
        "hp,name\n0,u0\n1,u1\n2,u2\n"
    );
    // In again: CSV with a header, then PostgreSQL's text format (psql's default).
    let tsv = dir.join("more.tsv");
    std::fs::write(&tsv, "7\tseven\n8\t\\N-is-not-null-here\n").unwrap();
    for copy in [
        format!(
            "\\copy Unit (hp, name) FROM '{}' WITH (FORMAT csv, HEADER)",
            csv.display()
        ),
        format!("\\copy Unit (hp, name) FROM '{}'", tsv.display()),
    ] {
        let out = psql(&to(&port, &["-c", &copy]), &[]).unwrap();
        assert!(
            out.status.success(),
            "{copy}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let n: i64 = db
        .connect()
        .query_row("SELECT count(*) FROM Unit", (), |r| r.get(0))
        .unwrap();
    assert_eq!(n, 8);
    // A bad value: psql shows the error, and nothing of the file is written.
    std::fs::write(&tsv, "9\tnine\nlots\tnone\n").unwrap();
    let copy = format!("\\copy Unit (hp, name) FROM '{}'", tsv.display());
    let out = psql(&to(&port, &["-c", &copy]), &[]).unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("line 2"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let after: i64 = db
        .connect()
        .query_row("SELECT count(*) FROM Unit", (), |r| r.get(0))
        .unwrap();
    assert_eq!(after, 8);
    // Data written in a script after the COPY, to psql's end marker `\.`, in CSV too.
    let script = dir.join("inline.sql");
    std::fs::write(
        &script,
        "COPY Unit (hp, name) FROM STDIN (FORMAT csv, HEADER);\nhp,name\n10,\"p,q\"\n\\.\nSELECT count(*) FROM Unit;\n",
    )
    .unwrap();
    let out = psql(&to(&port, &["-f", &script.display().to_string()]), &[]).unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(said.starts_with("COPY 1\n"), "{said}");
    assert!(said.contains("     9\n"), "{said}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ctrl_c_in_psql_stops_a_long_query() {
    let (_db, server) = serving();
    let port = server.local_addr().port().to_string();
    // psql must exist to go on.
    if psql(&["--version"], &[]).is_none() {
        return;
    }
    let long = "SELECT count(*) FROM range(1000000) AS a(i), range(1000000) AS b(j) WHERE a.i + b.j = -1";
    let child = std::process::Command::new("psql")
        .args(["-X"])
        .args(to(&port, &["-c", long]))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    let started = Instant::now();
    let signalled = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(signalled.success());
    let out = child.wait_with_output().unwrap();
    assert!(started.elapsed() < Duration::from_secs(20), "the query went on");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("Cancel request sent"), "{said}");
    assert!(said.contains("interrupted"), "{said}");
}

#[test]
fn psql_lists_what_the_database_holds() {
    let (db, server) = serving();
    db.connect()
        .execute_batch("CREATE TAG Player; CREATE INDEX unit_hp ON Unit (hp); CREATE EVENT Hit (damage INT)")
        .unwrap();
    let port = server.local_addr().port().to_string();
    let run = |command: &str| -> Option<String> {
        let out = psql(&to(&port, &["-X", "-c", command]), &[])?;
        let said = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{command}: {said}");
        Some(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let Some(tables) = run("\\dt") else {
        return;
    };
    for line in [
        " public | Hit    | table | ecsql",
        " public | Player | table | ecsql",
        " public | Unit   | table | ecsql",
        "(3 rows)",
    ] {
        assert!(tables.contains(line), "\\dt lacks {line:?}:\n{tables}");
    }
    let indexes = run("\\di").unwrap();
    assert!(
        indexes.contains(" public | unit_hp | index | ecsql | Unit"),
        "{indexes}"
    );
    let schemas = run("\\dn").unwrap();
    assert!(schemas.contains(" public | ecsql\n(1 row)"), "{schemas}");
    let databases = run("\\l").unwrap();
    assert!(
        databases.contains(" ecsql | ecsql | UTF8     | C       | C"),
        "{databases}"
    );
    let view = run("\\d information_schema.columns").unwrap();
    assert!(view.contains("View \"information_schema.columns\""), "{view}");
    assert!(view.contains(" ordinal_position "), "{view}");
    let unit = run("\\d \"Unit\"").unwrap();
    for line in [
        "Table \"public.Unit\"",
        " id     | bigint |           | not null | ",
        " hp     | bigint |           | not null | 0",
        " name   | text   |           | not null | ''::text",
        "Indexes:\n    \"unit_hp\" btree (hp)",
    ] {
        assert!(unit.contains(line), "\\d \"Unit\" lacks {line:?}:\n{unit}");
    }
    let tag = run("\\d \"Player\"").unwrap();
    assert!(
        tag.contains(" id     | bigint |           | not null | \n"),
        "{tag}"
    );
    // The columns of a component, through the catalog views (what psql's \d NAME reads).
    let columns = run(
        "SELECT a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod), a.attnotnull \
         FROM pg_catalog.pg_attribute a WHERE a.attrelid = 'Unit'::regclass AND a.attnum > 0 ORDER BY a.attnum",
    )
    .unwrap();
    assert!(
        columns.contains(" id      | bigint                               | t\n"),
        "{columns}"
    );
    assert!(
        columns.contains(" name    | text                                 | t\n"),
        "{columns}"
    );
}
