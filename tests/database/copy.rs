//! COPY … TO and COPY … FROM through CSV and JSON (and Parquet and Arrow IPC with the
//! `arrow` feature), as a user runs them: every value kind round-trips exactly (NULL, NaN,
//! -0.0, infinities, integer extremes, quotes, line breaks, unicode, ids), bad files fail
//! with their line (or row) and column and write nothing, the options do what they say,
//! and a file database keeps what COPY brought in.

use crate::common;

use common::Folder;
use ecsql::{Connection, Database, Entity, Error, ExecError, ExecErrorKind, Value};

const FIELDS: &str = "(i INT, f FLOAT, r REAL, b BOOL, t TEXT, e ENTITY)";

/// Rows with every edge a value kind has.
fn edge_rows() -> Vec<Vec<Value>> {
    let texts = [
        "",
        "plain",
        "a,b;c",
        "q\"uote\"",
        "line\nbreak\r\nand more",
        " edge ",
        "héllo 🌍 \u{7}",
        "NULL",
        "[1, {\"x\": 2}]",
    ];
    let ints = [i64::MIN, i64::MAX, 0, -1, 42, 7, 1 << 53, -3, 9];
    let floats = [
        f64::NAN,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        1e300,
        0.1,
        5e-324,
        -2.5,
        123_456_789.125,
    ];
    let reals = [
        f32::MAX,
        -0.0,
        f32::NAN,
        1.5,
        f32::MIN_POSITIVE,
        0.1,
        -1e-30,
        3.0,
        f32::NEG_INFINITY,
    ];
    (0..texts.len())
        .map(|k| {
            vec![
                Value::Int(ints[k]),
                Value::Float(floats[k]),
                Value::Real(reals[k]),
                Value::Bool(k % 2 == 0),
                Value::Text(texts[k].to_owned()),
                // Some rows refer to an entity, some to none; one to an id never issued.
                match k % 3 {
                    0 => Value::Null,
                    1 => Value::Entity(Entity::from_bits(1).expect("an id")),
                    _ => Value::Entity(Entity::from_bits((7 << 32) | 123).expect("an id")),
                },
            ]
        })
        .collect()
}

/// Values compared as stored: floats by their bits (NaN is NaN, -0.0 is not 0.0).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Float(x), Value::Float(y)) => x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()),
        (Value::Real(x), Value::Real(y)) => x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()),
        _ => a == b,
    }
}

fn rows(conn: &Connection, sql: &str) -> Vec<Vec<Value>> {
    let mut stmt = conn.prepare(sql).expect("prepares");
    stmt.query_map((), |r| Ok(r.values().to_vec()))
        .expect("runs")
        .collect::<ecsql::Result<_>>()
        .expect("reads")
}

fn assert_same_rows(got: &[Vec<Value>], want: &[Vec<Value>], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: row count");
    for (g, w) in got.iter().zip(want) {
        assert!(
            g.len() == w.len() && g.iter().zip(w).all(|(a, b)| same(a, b)),
            "{what}:\n got  {g:?}\n want {w:?}"
        );
    }
}

fn world_with_edges() -> Connection {
    let conn = Database::open_in_memory().connect();
    conn.execute(&format!("CREATE COMPONENT A {FIELDS}"), ())
        .expect("created");
    for row in edge_rows() {
        conn.execute("SPAWN A(?1, ?2, ?3, ?4, ?5, ?6)", row.as_slice())
            .expect("spawned");
    }
    conn
}

#[test]
fn every_value_kind_round_trips_through_every_format() {
    let dir = Folder::new("copy-round-trip");
    let conn = world_with_edges();
    let want = rows(&conn, "SELECT A.i, A.f, A.r, A.b, A.t, A.e FROM A ORDER BY id");
    // Each format by its file's extension, and PostgreSQL's text format by its option.
    // (A comma between text fields: the texts that hold one escape it.)
    let mut formats = vec![
        ("csv", ""),
        ("json", ""),
        ("tsv", " (FORMAT text)"),
        ("txt", " (FORMAT text, DELIMITER ',')"),
    ];
    if cfg!(feature = "arrow") {
        formats.extend([("parquet", ""), ("arrow", "")]);
    }
    for (n, (ext, options)) in formats.iter().enumerate() {
        let file = dir.file(&format!("a.{ext}"));
        let file = file.display();
        // Spawned: the file has no id column.
        let copied = conn
            .execute(
                &format!(
                    "COPY (SELECT A.i, A.f, A.r, A.b, A.t, A.e FROM A ORDER BY id) TO '{file}'{options}"
                ),
                (),
            )
            .expect("written");
        assert_eq!(copied, want.len());
        conn.execute(&format!("CREATE COMPONENT S{n} {FIELDS}"), ())
            .expect("created");
        // The text format has no header: the columns are named.
        let columns = if options.is_empty() {
            ""
        } else {
            " (i, f, r, b, t, e)"
        };
        let read = conn
            .execute(&format!("COPY S{n}{columns} FROM '{file}'{options}"), ())
            .expect("read back");
        assert_eq!(read, want.len());
        let got = rows(
            &conn,
            &format!("SELECT S{n}.i, S{n}.f, S{n}.r, S{n}.b, S{n}.t, S{n}.e FROM S{n} ORDER BY id"),
        );
        assert_same_rows(&got, &want, &format!("spawned from {ext}"));

        // Attached: COPY A TO writes the ids, and COPY B FROM gives each entity its B.
        let file = dir.file(&format!("with-ids.{ext}"));
        let file = file.display();
        conn.execute(&format!("COPY A TO '{file}'{options}"), ())
            .expect("written");
        conn.execute(&format!("CREATE COMPONENT B{n} {FIELDS}"), ())
            .expect("created");
        let columns = if options.is_empty() {
            ""
        } else {
            " (id, i, f, r, b, t, e)"
        };
        conn.execute(&format!("COPY B{n}{columns} FROM '{file}'{options}"), ())
            .expect("attached");
        let got = rows(
            &conn,
            &format!("SELECT B{n}.i, B{n}.f, B{n}.r, B{n}.b, B{n}.t, B{n}.e FROM A, B{n} ORDER BY id"),
        );
        assert_same_rows(&got, &want, &format!("attached from {ext}"));
    }
}

#[test]
fn csv_is_what_other_tools_read() {
    let dir = Folder::new("copy-csv-text");
    let conn = world_with_edges();
    let file = dir.file("a.csv");
    conn.execute(
        &format!(
            "COPY (SELECT A.i, A.t, A.e FROM A WHERE A.i IN (0, -1, 9) ORDER BY A.i) TO '{}'",
            file.display()
        ),
        (),
    )
    .expect("written");
    let text = std::fs::read_to_string(&file).expect("a file");
    // A header of bare names; NULL empty; empty text quoted; quotes doubled.
    assert_eq!(
        text,
        "i,t,e\n-1,\"q\"\"uote\"\"\",\n0,\"a,b;c\",30064771195\n9,\"[1, {\"\"x\"\": 2}]\",30064771195\n"
    );
}

/// `COPY C FROM 'file'` with `options` after the file, or, when they start with `@`, a
/// column list before FROM.
fn copy_from(file: &std::path::Path, options: &str) -> String {
    match options.strip_prefix('@') {
        Some(columns) => format!("COPY C {columns} FROM '{}'", file.display()),
        None => format!("COPY C FROM '{}'{options}", file.display()),
    }
}

/// Runs `COPY C FROM` over a file of `text` and gives the error, after checking that the
/// world did not change.
fn refused(conn: &Connection, dir: &Folder, name: &str, text: &[u8], options: &str) -> String {
    let before = rows(conn, "SELECT count(*) FROM entities");
    let c_before = rows(conn, "SELECT count(*) FROM C");
    let file = dir.file(name);
    std::fs::write(&file, text).expect("written");
    let err = conn
        .execute(&copy_from(&file, options), ())
        .err()
        .unwrap_or_else(|| panic!("{name} was not refused"));
    assert_eq!(
        rows(conn, "SELECT count(*) FROM entities"),
        before,
        "{name}: entities"
    );
    assert_eq!(rows(conn, "SELECT count(*) FROM C"), c_before, "{name}: C");
    let message = err.to_string();
    message.replace(&dir.0.display().to_string(), "DIR")
}

#[test]
fn bad_files_say_where_and_write_nothing() {
    let dir = Folder::new("copy-bad");
    let conn = Database::open_in_memory().connect();
    conn.execute_batch(
        "CREATE COMPONENT C (n INT, x REAL, ok BOOL, name TEXT DEFAULT 'none', p ENTITY);
         CREATE COMPONENT D (n INT);
         SPAWN D(1); SPAWN D(2); SPAWN C(5, 1.0, true, 'has C', NULL);",
    )
    .expect("set up");
    let cases: &[(&str, &[u8], &str, &str)] = &[
        (
            "ragged.csv",
            b"n,x\n1,2\n3\n",
            "",
            "DIR/ragged.csv: line 3: 1 value, expected 2 (as many as the columns named)",
        ),
        (
            "type.csv",
            b"n,x\n1,2\n3,4\nlots,5\n",
            "",
            "DIR/type.csv: line 4, column 1 (n): expected INT, found 'lots'",
        ),
        (
            "fraction.csv",
            b"n\n2.5\n",
            "",
            "DIR/fraction.csv: line 2, column 1 (n): expected INT, found '2.5'",
        ),
        (
            "null.csv",
            b"x,n\n1.0,\n",
            "",
            "DIR/null.csv: line 2, column 2 (n): expected INT, found NULL",
        ),
        (
            "real.csv",
            b"x\n1e39\n",
            "",
            "DIR/real.csv: line 2, column 1 (x): 1e39 is beyond REAL's range",
        ),
        (
            "bool.csv",
            b"ok\nmaybe\n",
            "",
            "DIR/bool.csv: line 2, column 1 (ok): expected BOOL, found 'maybe'",
        ),
        (
            "quote.csv",
            b"name\n\"open\nmore\n",
            "",
            "DIR/quote.csv: line 2, column 1: a quoted value that starts here never ends",
        ),
        (
            "utf8.csv",
            b"name\nok\n\xff\n",
            "",
            "DIR/utf8.csv: line 3: byte 1 of the line is not UTF-8",
        ),
        (
            "column.csv",
            b"n,speed\n1,2\n",
            "",
            "DIR/column.csv: line 1, column 2: no field \"speed\" in C (a column is id or a field: n, x, ok, name, p)",
        ),
        (
            "twice.csv",
            b"n,N\n1,2\n",
            "",
            "DIR/twice.csv: line 1, column 2: N is named twice",
        ),
        (
            "no-entity.csv",
            b"id,n\n1,1\n99,2\n",
            "",
            "DIR/no-entity.csv: line 3, column 1 (id): entity 99 does not exist",
        ),
        (
            "again.csv",
            b"id,n\n1,1\n2,2\n1,3\n",
            "",
            "DIR/again.csv: line 4, column 1 (id): entity 1 is also on line 2",
        ),
        (
            "has.csv",
            b"id,n\n1,1\n3,2\n",
            "",
            "DIR/has.csv: line 3, column 1 (id): entity 3 already has C",
        ),
        (
            "null-id.csv",
            b"id,n\n1,1\n,2\n",
            "",
            "DIR/null-id.csv: line 3, column 1 (id): the id is NULL",
        ),
        // 0 and negative numbers name no entity: NULL, as an INSERT makes them.
        (
            "bad-id.csv",
            b"id,n\n-4,1\n",
            "",
            "DIR/bad-id.csv: line 2, column 1 (id): the id is NULL",
        ),
        (
            "word-id.csv",
            b"id,n\nfour,1\n",
            "",
            "DIR/word-id.csv: line 2, column 1 (id): expected ENTITY, found 'four' (an id is a 64-bit number)",
        ),
        // A column list gives the file's columns in order; a header naming them otherwise
        // is refused.
        (
            "swapped.csv",
            b"x,n\n1.5,2\n",
            "@(n, x)",
            "DIR/swapped.csv: line 1, column 1: the header calls this column x, but the column list puts n here",
        ),
        (
            "no-header.csv",
            b"1,2.5,true,a,\n",
            "",
            "DIR/no-header.csv: line 1, column 1: no field \"1\" in C (a column is id or a field: n, x, ok, name, p) (a file with no header line: COPY … (HEADER false)",
        ),
        (
            "headless.csv",
            b"1,2.0,true,a,\n2\n",
            " (HEADER false)",
            "DIR/headless.csv: line 2: 1 value, expected 5 (as many as the component's fields)",
        ),
        (
            "nested.json",
            b"{\"n\": 1}\n{\"n\": [2]}\n",
            "",
            "DIR/nested.json: line 2: \"n\": a nested object or array is not a field's value",
        ),
        (
            "key.json",
            b"{\"n\": 1, \"speed\": 3}\n",
            "",
            "DIR/key.json: line 1, column speed: no field \"speed\" in C",
        ),
        (
            "type.json",
            b"[{\"n\": 1},\n {\"n\": \"two\"}]\n",
            "",
            "DIR/type.json: line 2, column n: expected INT, found 'two'",
        ),
        (
            "cut.json",
            b"{\"n\": 1}\n{\"n\": 2",
            "",
            "DIR/cut.json: line 2: expected , or } in an object, found the end of the file",
        ),
        (
            "text-number.json",
            b"{\"name\": 5}\n",
            "",
            "DIR/text-number.json: line 1, column name: expected TEXT, found the number 5 (quote text)",
        ),
        (
            "some-ids.json",
            b"{\"id\": 1, \"n\": 1}\n{\"n\": 2}\n",
            "",
            "DIR/some-ids.json: line 2, column id: no id, where the first object has one",
        ),
    ];
    for (name, text, options, want) in cases {
        let got = refused(&conn, &dir, name, text, options);
        assert!(got.starts_with(want), "{name}:\n got  {got}\n want {want}…");
    }
    // A missing file is named; so is a folder that is not there.
    let err = conn
        .execute("COPY C FROM '/no/such/folder/c.csv'", ())
        .expect_err("no file");
    assert!(
        matches!(&err, Error::Exec(ExecError { kind: ExecErrorKind::Copy { path, line: None, .. }, .. }) if path == "/no/such/folder/c.csv"),
        "{err}"
    );
    let err = conn
        .execute("COPY C TO '/no/such/folder/c.csv'", ())
        .expect_err("no folder");
    assert!(
        err.to_string()
            .starts_with("/no/such/folder/c.csv: cannot write it"),
        "{err}"
    );
}

#[test]
fn options_columns_and_defaults() {
    let dir = Folder::new("copy-options");
    let conn = Database::open_in_memory().connect();
    conn.execute_batch("CREATE COMPONENT C (n INT, name TEXT DEFAULT 'none', hp INT DEFAULT 100)")
        .expect("set up");
    let file = dir.file("semi.txt");
    std::fs::write(&file, "7;seven\n8;\"ei;ght\"\n").expect("written");
    // No header: the columns listed, in the file's order; the others take their defaults.
    conn.execute(
        &format!(
            "COPY C (n, name) FROM '{}' (FORMAT csv, HEADER false, DELIMITER ';')",
            file.display()
        ),
        (),
    )
    .expect("read");
    assert_eq!(
        rows(&conn, "SELECT C.n, C.name, C.hp FROM C ORDER BY id"),
        vec![
            vec![Value::Int(7), Value::Text("seven".into()), Value::Int(100)],
            vec![Value::Int(8), Value::Text("ei;ght".into()), Value::Int(100)],
        ]
    );
    // JSON by FORMAT, whatever the name; a missing member takes its default; with a column
    // list, members outside it are not read.
    let file = dir.file("rows.data");
    std::fs::write(&file, "[{\"n\": 9, \"hp\": 1, \"extra\": true}, {\"n\": 10}]").expect("written");
    conn.execute(
        &format!("COPY C (n, hp) FROM '{}' WITH (FORMAT json)", file.display()),
        (),
    )
    .expect("read");
    assert_eq!(
        rows(&conn, "SELECT C.n, C.name, C.hp FROM C WHERE C.n > 8 ORDER BY id"),
        vec![
            vec![Value::Int(9), Value::Text("none".into()), Value::Int(1)],
            vec![Value::Int(10), Value::Text("none".into()), Value::Int(100)],
        ]
    );
    // COPY C (columns) TO writes those columns; an empty file reads as no rows.
    let out = dir.file("names.csv");
    conn.execute(
        &format!("COPY C (id, name) TO '{}' (HEADER false)", out.display()),
        (),
    )
    .expect("written");
    assert_eq!(
        std::fs::read_to_string(&out).expect("a file"),
        "1,seven\n2,ei;ght\n3,none\n4,none\n"
    );
    // A prepared COPY names its file by a parameter, a new one each run.
    let mut each = conn
        .prepare("COPY (SELECT C.n FROM C WHERE C.n > ?2) TO ?1")
        .expect("prepared");
    for (k, above) in [(1, 8), (2, 9)] {
        let file = dir.file(&format!("above-{k}.csv")).display().to_string();
        assert_eq!(each.execute((file.as_str(), above)).expect("written"), 3 - k);
        assert_eq!(
            std::fs::read_to_string(&file).expect("a file").lines().count(),
            4 - k
        );
    }
    let err = conn
        .execute("COPY C TO ?1", [7])
        .expect_err("not a file name")
        .to_string();
    assert!(
        err.contains("?1 names the file: a non-empty TEXT, not 7"),
        "{err}"
    );
    let empty = dir.file("empty.csv");
    std::fs::write(&empty, "").expect("written");
    assert_eq!(
        conn.execute(&format!("COPY C FROM '{}'", empty.display()), ())
            .expect("nothing"),
        0
    );

    for (sql, want) in [
        ("COPY C FROM 'x.csv' (FORMAT xml)", "unknown format xml"),
        (
            "COPY C FROM 'x.csv' (COMPRESSION gzip)",
            "unknown COPY option compression",
        ),
        (
            "COPY C FROM 'x.csv' (DELIMITER '::')",
            "DELIMITER is one ASCII character",
        ),
        (
            "COPY C FROM 'x.json' (HEADER false)",
            "HEADER is a CSV option; this COPY is JSON",
        ),
        (
            "COPY (SELECT 1) FROM 'x.csv'",
            "COPY … FROM reads a file into a component",
        ),
        ("COPY C (n, n) FROM 'x.csv'", "n is named twice"),
        ("COPY Nope FROM 'x.csv'", "unknown component Nope"),
        ("COPY C (speed) FROM 'x.csv'", "component C has no field speed"),
    ] {
        let err = conn.execute(sql, ()).expect_err(sql).to_string();
        assert!(err.contains(want), "{sql}: {err}");
    }
}

#[test]
fn copy_from_is_undone_by_rollback_and_kept_by_a_file_database() {
    let dir = Folder::new("copy-durable");
    let rows_file = dir.file("rows.csv");
    std::fs::write(&rows_file, "n\n1\n2\n3\n").expect("written");
    let copy = format!("COPY C FROM '{}'", rows_file.display());
    let path = dir.file("world.db");
    {
        let conn = Database::open(&path).expect("opened").connect();
        conn.execute("CREATE COMPONENT C (n INT)", ()).expect("created");
        conn.execute("BEGIN", ()).expect("begun");
        conn.execute(&copy, ()).expect("copied");
        conn.execute("ROLLBACK", ()).expect("rolled back");
        assert_eq!(rows(&conn, "SELECT count(*) FROM C"), vec![vec![Value::Int(0)]]);
        conn.execute(&copy, ()).expect("copied");
        conn.execute("SPAWN C(4)", ()).expect("spawned");
    }
    // The file may change or go: what COPY read is kept by the database itself.
    std::fs::remove_file(&rows_file).expect("removed");
    let conn = Database::open(&path).expect("reopened").connect();
    assert_eq!(
        rows(&conn, "SELECT C.n FROM C ORDER BY id"),
        (1..=4).map(|n| vec![Value::Int(n)]).collect::<Vec<_>>()
    );
}

#[cfg(not(feature = "arrow"))]
#[test]
fn columnar_files_need_the_arrow_feature() {
    let conn = world_with_edges();
    for sql in [
        "COPY A TO 'a.parquet'",
        "COPY A FROM 'a.arrow'",
        "COPY A TO 'a.bin' (FORMAT parquet)",
    ] {
        let err = conn.execute(sql, ()).expect_err(sql).to_string();
        assert!(
            err.contains("built without") && err.contains("--features arrow"),
            "{sql}: {err}"
        );
    }
}

#[cfg(feature = "arrow")]
#[test]
fn bad_columnar_files_say_where_and_write_nothing() {
    let dir = Folder::new("copy-bad-columnar");
    let conn = Database::open_in_memory().connect();
    conn.execute_batch(
        "CREATE COMPONENT C (n INT, x REAL, name TEXT DEFAULT 'none', p ENTITY);
         CREATE COMPONENT Src (n FLOAT, t TEXT, p ENTITY);
         SPAWN Src(1.0, 'a', NULL); SPAWN Src(2.5, 'b', 1); SPAWN C(5, 1.0, 'has C', NULL);",
    )
    .expect("set up");
    let write = |name: &str, query: &str| {
        let file = dir.file(name);
        conn.execute(&format!("COPY ({query}) TO '{}'", file.display()), ())
            .expect("written");
        std::fs::read(&file).expect("a file")
    };
    for ext in ["parquet", "arrow"] {
        let fraction = write(
            &format!("fraction.{ext}"),
            "SELECT Src.n AS n FROM Src ORDER BY id",
        );
        let text = write(&format!("text.{ext}"), "SELECT Src.t AS n FROM Src ORDER BY id");
        let nulls = write(&format!("nulls.{ext}"), "SELECT Src.p AS n FROM Src ORDER BY id");
        let unknown = write(&format!("unknown.{ext}"), "SELECT Src.t AS speed FROM Src");
        let big = write(&format!("big.{ext}"), "SELECT 1e39 AS x");
        let ids = write(&format!("ids.{ext}"), "SELECT id, 7 AS n FROM C");
        let cases: Vec<(String, Vec<u8>, String)> = vec![
            (
                format!("fraction.{ext}"),
                fraction.clone(),
                "row 2, column n: ".into(),
            ),
            (format!("text.{ext}"), text, "row 1, column n: ".into()),
            (
                format!("nulls.{ext}"),
                nulls,
                "row 1, column n: NULL in C.n, which is INT".into(),
            ),
            (
                format!("unknown.{ext}"),
                unknown,
                "column speed: no field \"speed\" in C".into(),
            ),
            (format!("big.{ext}"), big, "row 1, column x: ".into()),
            (
                format!("ids.{ext}"),
                ids,
                "row 1, column id: entity 3 already has C".into(),
            ),
            (
                format!("cut.{ext}"),
                fraction[..fraction.len() / 2].to_vec(),
                "cut short".into(),
            ),
            (format!("empty.{ext}"), Vec::new(), "cut short".into()),
        ];
        for (name, bytes, want) in cases {
            let got = refused(&conn, &dir, &name, &bytes, "");
            assert!(got.contains(&want), "{name}:\n got  {got}\n want …{want}…");
        }
    }
}

#[cfg(unix)]
#[test]
fn copy_to_replaces_a_file_whole_and_keeps_what_it_was() {
    use std::os::unix::fs::PermissionsExt;
    let dir = Folder::new("copy-to-targets");
    let conn = Database::open_in_memory().connect();
    let copy =
        |path: &std::path::Path| conn.execute(&format!("COPY (SELECT 'x' AS s) TO '{}'", path.display()), ());
    // A private file stays private.
    let private = dir.file("private.csv");
    std::fs::write(&private, "old").expect("written");
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o600)).expect("mode set");
    copy(&private).expect("copied");
    assert_eq!(std::fs::read_to_string(&private).expect("read"), "s\nx\n");
    let mode = std::fs::metadata(&private).expect("there").permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    // A link stays a link: the file it names is replaced.
    let target = dir.file("target.csv");
    std::fs::write(&target, "old").expect("written");
    let link = dir.file("link.csv");
    std::os::unix::fs::symlink(&target, &link).expect("linked");
    copy(&link).expect("copied");
    assert!(
        std::fs::symlink_metadata(&link)
            .expect("there")
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read_to_string(&target).expect("read"), "s\nx\n");
    // A pipe is written to, not replaced by a file.
    let fifo = dir.file("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).expect("read"))
    };
    copy(&fifo).expect("copied");
    assert_eq!(reader.join().expect("the reader"), "s\nx\n");
    assert!(!std::fs::metadata(&fifo).expect("there").is_file());
    // Nothing is left beside them.
    let mut names: Vec<String> = std::fs::read_dir(&dir.0)
        .expect("listed")
        .map(|e| e.expect("an entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["link.csv", "pipe", "private.csv", "target.csv"]);
}

#[test]
fn postgresqls_older_option_words_mean_what_they_meant() {
    let dir = Folder::new("copy-older-options");
    let conn = world_with_edges();
    let (older, newer) = (dir.file("older.txt"), dir.file("newer.txt"));
    conn.execute(
        &format!(
            "COPY (SELECT A.i, A.t FROM A ORDER BY id) TO '{}' WITH CSV HEADER DELIMITER AS ';'",
            older.display()
        ),
        (),
    )
    .expect("written with the older words");
    conn.execute(
        &format!(
            "COPY (SELECT A.i, A.t FROM A ORDER BY id) TO '{}' (FORMAT csv, HEADER true, DELIMITER ';')",
            newer.display()
        ),
        (),
    )
    .expect("written with the options");
    let read = |f: &std::path::Path| std::fs::read_to_string(f).expect("a file");
    assert_eq!(read(&older), read(&newer));
    assert!(read(&older).starts_with("i;t\n"));
    let e = conn
        .execute(&format!("COPY A TO '{}' WITH", older.display()), ())
        .unwrap_err();
    assert!(e.to_string().contains("( after WITH"), "{e}");
}
