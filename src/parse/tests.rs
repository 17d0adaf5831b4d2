//! Parser contract: statements round-trip through `Display`, errors carry locations.

use super::*;

fn round_trip(sql: &str) {
    let first = parse_one(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    if let Err(why) = reads_back(&first) {
        panic!("round trip of {sql}: {why}");
    }
}

#[test]
fn statements_round_trip() {
    for sql in [
        "CREATE COMPONENT Position (x REAL, y REAL, z REAL DEFAULT 1.5)",
        "CREATE TAG Player",
        "DROP COMPONENT IF EXISTS Player",
        "SHOW COMPONENTS",
        "SHOW ARCHETYPES",
        "DESCRIBE Position",
        "SPAWN Position(x => 1, y => 2, z => 0), Velocity(1, 0, 0), Name('ziggy'), Player",
        "SPAWN Position(x => i, y => 0, z => 0) FROM range(10000) AS r(i)",
        "INSERT INTO Velocity (id, x, y, z) VALUES (7, 0, 1, 0)",
        "INSERT OR REPLACE INTO Velocity (id, x) VALUES (7, 0)",
        "INSERT INTO Velocity (id, x) VALUES (7, 0) ON CONFLICT DO UPDATE SET x = excluded.x + 1",
        "INSERT INTO Velocity (id, x, y, z) SELECT id, 0, 0, 0 FROM Position WHERE NOT has(Velocity)",
        "DELETE FROM Velocity WHERE Velocity.y = 0",
        "DESPAWN 7, 8",
        "DESPAWN FROM Health WHERE Health.hp <= 0",
        "DESPAWN FROM Health WHERE Health.hp <= 0 RETURNING id, Name.value AS n",
        "UPDATE Health SET hp = 1 RETURNING *",
        "SPAWN Health(5) RETURNING id, Health.hp * 2",
        "SELECT a IS DISTINCT FROM b, a IS NOT DISTINCT FROM b + 1, (a IS NULL) IS NOT DISTINCT FROM TRUE",
        "WITH a(x) AS (SELECT 1), b AS (SELECT a.x FROM a) SELECT * FROM b, a AS c",
        "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT c.n + 1 FROM c WHERE c.n < 5) SELECT c.n FROM c AS d",
        "WITH RECURSIVE t(e) AS (SELECT 1 UNION SELECT id FROM Node JOIN t ON Node.parent = t.e) UPDATE Node SET x = 1 WHERE id IN (SELECT t.e FROM t)",
        "SELECT id, Position.x, Name.value FROM Position, Name WHERE Name.value LIKE 'ziggy%'",
        "SELECT count(*), avg(Health.hp) FROM Health, Player",
        "UPDATE Position SET x = Position.x + Velocity.x * ?1 FROM Velocity",
        "SELECT c.id, n.value AS parent_name FROM ChildOf AS c JOIN Name AS n ON n.id = c.parent",
        "SELECT DISTINCT a FROM T LEFT JOIN U WHERE (a + 1) * 2 > 3 OR NOT b IS NULL GROUP BY a HAVING count(*) > 1 ORDER BY a DESC NULLS LAST LIMIT 5 OFFSET 2",
        "SELECT 1 UNION ALL SELECT 2 UNION SELECT 3",
        "SELECT CASE WHEN a > 1 THEN 'x' ELSE 'y' END, CAST(a AS TEXT), a BETWEEN 1 AND 2, a IN (1, 2), a NOT IN (SELECT b FROM U)",
        "EXPLAIN SELECT id FROM Position",
        "BEGIN",
        "COMMIT",
        "ROLLBACK",
        "SELECT :name, $name, ?, ?3",
        // Printed once so that they read back otherwise (or not at all).
        "INSERT OR IGNORE INTO E (id) SELECT id FROM R LEFT JOIN E",
        "INSERT INTO E (id) SELECT id FROM R ON CONFLICT DO NOTHING",
        "CREATE SYSTEM s AS UPDATE C SET x = 1e309, y = -1e309, z = 1e-320",
        "SELECT - -1, -(1), -(-x), - - x, NOT (EXISTS (SELECT 1)), NOT EXISTS (SELECT 1)",
        "SELECT (a + b) || c, a + b || c, (a LIKE b) > c, a LIKE (b > c), (a IS NULL) LIKE b",
        "SELECT a BETWEEN (b OR c) AND d, (a = b) IS NULL, a = (b IS NULL), NOT a = b",
        "SPAWN AT (a OR b) AND c C(1)",
        "SPAWN AT (SELECT 1) + 1",
    ] {
        round_trip(sql);
    }
}

#[test]
fn anonymous_parameters_follow_the_highest_number() {
    let s = parse_one("SELECT ?, ?5, ?").unwrap();
    assert_eq!(s.to_string(), "SELECT ?1, ?5, ?6");
}

#[test]
fn errors_point_at_the_offending_token() {
    let e = parse_one("SELECT a FROM T WHERE").unwrap_err();
    assert_eq!(e.at, Location::new(1, 22), "{e}");
    assert!(
        e.message.contains("end of input") || e.message.contains("EOF"),
        "{e}"
    );

    let e = parse_one("SELECT a\nFROM T WHERE )").unwrap_err();
    assert_eq!(e.at, Location::new(2, 14), "{e}");

    let e = parse_one("SELECT a b c FROM T").unwrap_err();
    assert_eq!(e.at, Location::new(1, 12), "{e}");
    assert!(e.message.contains("expected ;"), "{e}");

    let e = parse_one("CREATE COMPONENT P (x DECIMAL)").unwrap_err();
    assert_eq!(e.at, Location::new(1, 23), "{e}");
    assert!(e.message.contains("field type"), "{e}");

    let e = parse_one("SPAWN P(1,").unwrap_err();
    assert_eq!(e.at, Location::new(1, 11), "{e}");

    let e = parse_one("SELECT 'abc").unwrap_err();
    assert_eq!(e.at.line, 1, "{e}");
}

#[test]
fn keyword_names_must_be_quoted() {
    let e = parse_one("CREATE COMPONENT Where (x INT)").unwrap_err();
    assert!(e.message.contains("quote it"), "{e}");
    assert!(parse_one("CREATE COMPONENT \"Where\" (x INT)").is_ok());
    assert!(parse_one("CREATE COMPONENT Position (x INT)").is_ok());
    assert!(parse_one("CREATE COMPONENT Name (value TEXT)").is_ok());
    assert!(
        parse_one("CREATE COMPONENT Order (x INT)").is_err(),
        "has(Order) would not parse"
    );
    let e = parse_one("SELECT has(Where), Where.f FROM T").unwrap_err();
    assert!(e.message.contains("quote it: \"Where\""), "{e}");
    let e = parse_one("SELECT id FROM T WHERE has(Interval)").unwrap_err();
    assert!(e.message.contains("quote it: \"Interval\""), "{e}");
}

/// The statements sqlparser reads from `sql` whole, without VALUES blocks read aside.
fn slow(sql: &str, start: Location) -> Result<Vec<Statement>> {
    StatementParser::new(sql, start)?.parse_all()
}

/// Rows of literals, `n` of them, as `.dump` writes them (and then some).
fn rows(n: usize, row: impl Fn(usize) -> String) -> String {
    (0..n)
        .map(|i| format!("  ({})", row(i)))
        .collect::<Vec<_>>()
        .join(",\n")
}

#[test]
fn literal_values_blocks_read_aside_parse_as_sqlparser_does() {
    let cells = |i: usize| {
        format!(
            "{}, -{i}, {i}.25, -0.0, 'it''s {i}', 'naïve\n🦀', NULL, true, FALSE, 9223372036854775808, -9223372036854775808, 007",
            i
        )
    };
    let texts = [
        format!(
            "SPAWN AT t.c0 FROM (VALUES\n{}\n) AS t(c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11);",
            rows(20, cells)
        ),
        // Two blocks, statements after them on the same line, a comment and a string with
        // (VALUES in it.
        format!(
            "SELECT 1 FROM (VALUES {}) AS a(x); -- (VALUES (1),(2)\nSELECT '(VALUES (1),(2),(3),(4),(5),(6),(7),(8))', x FROM (VALUES\n{}) AS b(x); SELECT 2",
            rows(9, |i| i.to_string()).replace('\n', " "),
            rows(12, |i| format!("'{i}'"))
        ),
    ];
    for text in &texts {
        for start in [Location::new(1, 1), Location::new(7, 5)] {
            assert!(
                rows::blank_values(text, start).is_some(),
                "the fast path is taken"
            );
            let fast = parse_at(text, start).unwrap();
            assert_eq!(fast, slow(text, start).unwrap(), "{text}");
        }
    }
}

#[test]
fn what_the_block_reader_does_not_know_goes_through_sqlparser() {
    let blocks = [
        // Not plain literals, rows of other widths, exponents, backslashes, casts.
        rows(10, |i| format!("{i} + 1")),
        rows(10, |i| if i == 3 { "1, 2".into() } else { i.to_string() }),
        rows(10, |i| format!("{i}e3")),
        rows(10, |i| format!("'a\\b{i}'")),
        rows(10, |i| format!("CAST('NaN' AS FLOAT), {i}")),
        rows(10, |i| format!("{i}.")),
    ];
    for block in &blocks {
        let text = format!("SELECT * FROM (VALUES\n{block}\n) AS t(a, b)");
        let fast = parse_at(&text, Location::new(1, 1));
        let slow = slow(&text, Location::new(1, 1));
        assert_eq!(format!("{fast:?}"), format!("{slow:?}"), "{text}");
    }
    // A block inside a nested comment is the comment's: its marker is never met.
    let text = format!("/* a /* b */ (VALUES {}) */ SELECT 1", rows(9, |i| i.to_string()));
    assert_eq!(
        parse_at(&text, Location::new(1, 1)).unwrap(),
        slow(&text, Location::new(1, 1)).unwrap()
    );
    // Errors after a block are where they were.
    let text = format!(
        "SELECT * FROM (VALUES\n{}\n) AS t(a) WHERE",
        rows(9, |i| i.to_string())
    );
    let (fast, slow) = (
        parse_at(&text, Location::new(1, 1)).unwrap_err(),
        slow(&text, Location::new(1, 1)).unwrap_err(),
    );
    assert_eq!((fast.at, fast.message), (slow.at, slow.message));
}

#[test]
fn splitting_around_literal_blocks_finds_the_same_ends() {
    let block = rows(10, |i| format!("{i}, 'a;b {i}'"));
    let text =
        format!("SELECT 1; SPAWN AT t.c0 FROM (VALUES\n{block}\n) AS t(c0, c1); SELECT ';';\nSELECT 3");
    let squeezed = split_statements(&text);
    // Without the reader (a `$` anywhere turns it off for a splitter): sqlparser alone.
    let plain = split_statements(&format!("{text}--$"));
    assert!(rows::squeeze(&text).is_some());
    assert_eq!(squeezed.ends, plain.ends);
    assert_eq!(squeezed.ends.len(), 3);
    assert_eq!(&text[squeezed.ends[1] - 1..squeezed.ends[1]], ";");
}

#[test]
fn blocks_inside_a_block_the_reader_gave_up_on_are_read_from_the_right_place() {
    // The outer block reads its first rows and gives up at the subquery; the inner block,
    // before where the reader had got to, is read with its own locations.
    let inner = rows(9, |i| i.to_string()).replace('\n', " ");
    let outer = rows(12, |i| i.to_string());
    let text = format!(
        "SELECT * FROM (VALUES\n{outer},\n  ((SELECT count(*) FROM (VALUES {inner}) AS i(x)))\n) AS t(a)"
    );
    assert_eq!(
        parse_at(&text, Location::new(1, 1)).unwrap(),
        slow(&text, Location::new(1, 1)).unwrap()
    );
    // A narrow block, one short row a line (a dump of one INT), is read too.
    let narrow = format!(
        "SPAWN AT t.c0 FROM (VALUES\n{}\n) AS t(c0)",
        rows(20, |i| i.to_string())
    );
    assert!(rows::blank_values(&narrow, Location::new(1, 1)).is_some());
    assert_eq!(
        parse_at(&narrow, Location::new(1, 1)).unwrap(),
        slow(&narrow, Location::new(1, 1)).unwrap()
    );
    // An error in marked text is sqlparser's, about the text as written.
    let bad = format!(
        "SELECT * FROM T WHERE T.a = ANY(VALUES {})",
        rows(9, |i| i.to_string()).replace('\n', " ")
    );
    let (fast, slow) = (
        parse_at(&bad, Location::new(1, 1)).unwrap_err(),
        slow(&bad, Location::new(1, 1)).unwrap_err(),
    );
    assert_eq!((fast.at, fast.message), (slow.at, slow.message));
}

// ---- the direct parser agrees with the sqlparser path ------------------------------------

/// Checks `direct.rs`'s contract on `sql`: when it reads the text, the sqlparser path makes
/// the same statements of it. Returns whether it read it.
fn direct_agrees(sql: &str, start: Location) -> bool {
    let Some(direct) = direct::parse(sql, start) else {
        return false;
    };
    match parse_with_sqlparser(sql, start) {
        Ok(slow) => assert_eq!(direct, slow, "the two parsers differ on {sql:?} at {start}"),
        Err(e) => panic!("the direct parser read {sql:?}, which sqlparser's path refuses: {e}"),
    }
    true
}

/// Every statement text of the test suite and the examples: each record of the slt files
/// and each statement of the example scripts.
fn suite_texts() -> Vec<String> {
    fn walk(dir: &std::path::Path, ext: &str, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, ext, out);
            } else if path.extension().is_some_and(|e| e == ext) {
                out.push(path);
            }
        }
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut texts = Vec::new();
    let mut files = Vec::new();
    walk(&root.join("tests/slt"), "slt", &mut files);
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let mut lines = text.lines();
        while let Some(line) = lines.next() {
            if line.starts_with("statement") || line.starts_with("query") {
                let sql: Vec<&str> = lines
                    .by_ref()
                    .take_while(|l| !l.trim().is_empty() && *l != "----")
                    .collect();
                texts.push(sql.join("\n"));
            }
        }
    }
    let mut scripts = Vec::new();
    walk(&root.join("examples"), "sql", &mut scripts);
    for file in &scripts {
        let text = std::fs::read_to_string(file).unwrap();
        let mut begin = 0;
        for end in split_statements(&text).ends {
            texts.push(text[begin..end].to_owned());
            begin = end;
        }
    }
    texts
}

#[test]
fn the_direct_parser_agrees_on_every_statement_of_the_suite() {
    let texts = suite_texts();
    let mut read = 0;
    let mut selects = 0;
    for sql in &texts {
        for start in [Location::new(1, 1), Location::new(4, 9)] {
            if direct_agrees(sql, start) && start.line == 1 {
                read += 1;
            } else if start.line == 1 && std::env::var("SHOW_UNREAD").is_ok() {
                // To see which texts the direct parser leaves to sqlparser.
                eprintln!("UNREAD {sql:?}");
            }
        }
        if sql
            .trim_start()
            .get(..6)
            .is_some_and(|w| w.eq_ignore_ascii_case("SELECT"))
        {
            selects += 1;
        }
    }
    // The suite's texts are many and varied: most of its queries are read directly.
    assert!(texts.len() > 1500, "{} texts", texts.len());
    eprintln!("{read} of {} texts read directly, {selects} SELECTs", texts.len());
    assert!(
        read * 10 > selects * 7,
        "{read} of {} texts read directly, {selects} SELECTs",
        texts.len()
    );
}

#[test]
fn the_direct_parser_reads_the_common_forms_as_sqlparser_does() {
    let texts = [
        "SELECT Position.x FROM Position WHERE id = 42",
        "select p.x AS px, p.y py, \"q\".z FROM Position AS p, Velocity \"q\" WHERE p.x > -1.5e3 AND NOT q.z <= 2",
        "SELECT DISTINCT a, b FROM C WHERE a IN (1, 2, -3) OR b NOT IN (SELECT b FROM D) ORDER BY a DESC NULLS LAST, 2 LIMIT 10 OFFSET ?",
        "SELECT count(*), count(DISTINCT x), sum(x) FROM C GROUP BY y HAVING count(*) > 1",
        "SELECT CASE WHEN x < 0 THEN 'neg' WHEN x = 0 THEN 'zero' ELSE 'pos' END FROM C",
        "SELECT CASE x WHEN 1 THEN 2 END, CAST(x AS INT), cast(y as real), CAST(z AS ENTITY) FROM C",
        "SELECT x BETWEEN 1 AND 2 + 3, x NOT BETWEEN -1 AND 1, n LIKE 'a%' ESCAPE '!', n NOT ILIKE '%b' FROM C",
        "SELECT x IS NULL, x IS NOT NULL, b IS TRUE, b IS FALSE FROM C",
        "SELECT -9223372036854775808, - 5 * 2, -(5), +3, - -x, 9223372036854775808, 1.5, 007, 1e5 FROM C",
        "SELECT 'it''s', \"we\"\"ird\", 'naïve\n🦀' || x FROM C",
        "SELECT (x, y), (x), ((x + 1) * 2), (SELECT max(x) FROM C) FROM C",
        "SELECT * FROM A JOIN B ON A.id = B.id LEFT JOIN C ON C.id = A.id LEFT OUTER JOIN D INNER JOIN E ON true CROSS JOIN F",
        "SELECT i FROM range(10) AS r(i) WHERE EXISTS (SELECT 1 FROM C) AND NOT EXISTS (SELECT 2 FROM D)",
        "SELECT s.a FROM (SELECT a FROM C) AS s, (SELECT b FROM D) t",
        "SELECT a FROM C UNION SELECT b FROM D UNION ALL SELECT c FROM E INTERSECT SELECT d FROM F EXCEPT DISTINCT SELECT e FROM G",
        "(SELECT a FROM C) UNION (SELECT b FROM D ORDER BY b LIMIT 1) ORDER BY 1 LIMIT 2, 3",
        "SELECT a FROM C LIMIT ALL OFFSET 2; SELECT b FROM D OFFSET 1 LIMIT 2;;",
        "SELECT ?, ?3, ?, ? FROM C WHERE x = ?1",
        "SELECT x -- the x\n  FROM C -- from C\n",
        "SELECT\tx\r\n,\ty FROM C",
        "SELECT a % b, a / b, a * b - c + d || e, a <> b, a != b, a >= b, a <= b FROM C",
        "SELECT C.*, x FROM C",
        "SELECT Position.value, name, count(x) OVER_x FROM Position",
        "UPDATE Position SET x = x + 1, Position.y = 0 WHERE id = ?",
        "UPDATE Position AS p SET x = v.x FROM Velocity AS v WHERE v.id = p.id",
        "UPDATE Position p SET x = 1",
        "DELETE FROM Velocity WHERE Velocity.y = 0",
        "DELETE FROM Velocity",
        "SELECT has(Velocity), abs(-x), coalesce(a, b, 0), f() FROM C",
        "SPAWN Position(x => 1.5, y => -2, z => 0), Velocity(1, 0, 0), Name('ziggy'), Player",
        "SPAWN \"Where\"(\"x\" => 1), At(2), At",
        "SPAWN AT 7 Position(1, 2, 3); SPAWN AT ?; SPAWN AT id FROM Position WHERE x > 0",
        "SPAWN Position(x => i, y => 0, z => 0) FROM range(10000) AS r(i)",
        "SPAWN Copy(x) FROM SELECT x FROM Position",
        "SPAWN C() FROM Position JOIN Velocity ON true",
        "DESPAWN 7, 8, ?",
        "DESPAWN FROM Health WHERE Health.hp <= 0",
        "INSERT INTO Velocity (id, x, y, z) VALUES (7, 0, 1, 0), (?, -1.5, 'a', NULL)",
        "INSERT INTO Velocity VALUES (7, 0)",
        "insert or replace into \"Velocity\" (\"id\", x) values\n  (7, 0)",
        "INSERT OR IGNORE INTO Velocity (id) SELECT id FROM Position WHERE x > 0 ORDER BY 1 LIMIT 3",
        "INSERT INTO Velocity (SELECT id FROM Position)",
        "SELECT x FROM C OFFSET ? LIMIT ?; SELECT x FROM C OFFSET ? LIMIT ?3",
        "SELECT * FROM C JOIN range(?) AS r(i) ON i = ? JOIN (SELECT ?) s ON ?",
        "SELECT x AS \"alias\", C.* FROM C",
    ];
    for sql in texts {
        for start in [Location::new(1, 1), Location::new(2, 30)] {
            assert!(direct_agrees(sql, start), "{sql:?} is read directly");
        }
    }
}

/// The `?`s of a statement are numbered in the order of its text, whichever way it is read
/// (the sqlparser way once numbered a JOIN's ON before its table's arguments, and LIMIT
/// before an OFFSET written first).
#[test]
fn anonymous_parameters_are_numbered_in_the_order_of_the_text() {
    let sql = "SELECT * FROM C JOIN range(?) AS r(i) ON i = ? LIMIT ? OFFSET ?; \
               SELECT x FROM C OFFSET ? LIMIT ?";
    for statements in [
        parse_with_sqlparser(sql, Location::new(1, 1)).unwrap(),
        parse_at(sql, Location::new(1, 1)).unwrap(),
    ] {
        let mut order = Vec::new();
        for statement in &statements {
            let printed = statement.to_string();
            order.push(printed);
        }
        assert_eq!(
            order,
            [
                "SELECT * FROM C JOIN range(?1) AS r(i) ON i = ?2 LIMIT ?3 OFFSET ?4",
                "SELECT x FROM C LIMIT ?2 OFFSET ?1",
            ]
        );
    }
}

#[test]
fn the_direct_parser_leaves_what_it_does_not_know_to_sqlparser() {
    let texts = [
        "CREATE COMPONENT C (x INT)",
        "SELECT DATE '2020-01-01'",
        "SELECT x::INT FROM C",
        "SELECT a FROM C WHERE a = ANY (SELECT b FROM D)",
        "SELECT substring(x FROM 1 FOR 2) FROM C",
        "SELECT position('a' IN x) FROM C",
        "SELECT x FROM C /* a comment */",
        "SELECT $1, :name, @v FROM C",
        "SELECT a DIV b FROM C",
        "SELECT 1 'a' FROM C",
        "SELECT x FROM C AS t(a)",
        "SELECT count(*) FILTER (WHERE x > 0) FROM C",
        "SELECT f(a => 1), g(a = 1) FROM C",
        "SELECT x FROM a.b",
        "SELECT a.b.c FROM C",
        "SELECT x FROM C NATURAL JOIN D",
        "SELECT x, FROM C",
        "SELECT FROM C",
        "WITH t AS (SELECT 1) SELECT * FROM t",
        "SELECT x FROM C WHERE x = 1 GROUP BY ROLLUP (x)",
        "SELECT interval FROM C",
        "SELECT 1 NOT NULL",
        "SELECT ((SELECT 1))",
        "SELECT x FROM C ORDER BY ALL",
        "SELECT x FROM C LIMIT 1 OFFSET 2 ROWS",
        "SELECT ?0",
        // Higher than it reads (half of translation's bound), and past translation's.
        &format!("SELECT {}1{}", "(".repeat(500), ")".repeat(500)),
        &format!("SELECT 1{}", " + 1".repeat(500)),
        &format!("SELECT 1 FROM C WHERE {}", vec!["x = 1"; 500].join(" OR ")),
        &format!("SELECT {}1{}", "(".repeat(1_100), ")".repeat(1_100)),
        // Few calls deep, but a parenthesis at the bottom of each chain of 100 operators:
        // about 20,000 levels.
        &format!(
            "SELECT {}1{}",
            "(".repeat(200),
            format!("){}", " + 1".repeat(100)).repeat(200)
        ),
        "SELECT 1 +",
        "SELECT 'unclosed",
        "DELETE FROM C AS c",
        "UPDATE C SET (a, b) = (1, 2)",
        "SELECT 1 == 1, 2 <=> 2",
        "SELECT x FROM C WHERE x IS 1",
        "UPDATE C SET x = 1 RETURNING id, C.x",
        "SPAWN C(1) RETURNING *",
        "DESPAWN 1, 2 RETURNING id",
        "SELECT x FROM C WHERE x IS NOT y + 1",
        "SPAWN C(1) FROM (VALUES (1)) AS v(a)",
        "SPAWN",
        "DESPAWN",
        "SPAWN C(1) WHERE x",
        "INSERT INTO Velocity (id, x) VALUES (7, 0) ON CONFLICT DO NOTHING",
        "INSERT OR FAIL INTO Velocity VALUES (1)",
        "INSERT Velocity VALUES (1)",
        "INSERT INTO Velocity VALUES ()",
        "INSERT INTO Velocity VALUES (1) LIMIT 1",
        "INSERT INTO a.b VALUES (1)",
        "REPLACE INTO Velocity VALUES (1)",
        &format!("INSERT INTO C VALUES {}", vec!["(1)"; 20_000].join(", ")),
        // Found by review: each is refused by sqlparser, or read by it otherwise.
        "SELECT date \"d\" FROM C",
        "SELECT int(5) \"x\" FROM C",
        "SPAWN AT int \"C\"",
        "SELECT * EXCEPT SELECT 1",
        "SELECT C.* EXCEPT (SELECT 1)",
        "SELECT xmlparse(x) FROM C",
        "SELECT 1 FROM C WHERE x IN (value(1))",
        "SELECT 1 FROM C WHERE x IN (TABLE AND 1)",
        "UPDATE replace SET x = 1",
        "UPDATE replace r SET x = 1",
        "SELECT f(CASE value WHEN 1 THEN 2 END) FROM C",
        "SELECT count(NOT value IS NULL) FROM C",
        "SELECT 1, from.*",
        "SELECT x, End.* FROM C",
        "SELECT DISTINCT all.* FROM C",
        "INSERT INTO local VALUES (1)",
    ];
    for sql in texts {
        assert!(
            direct::parse(sql, Location::new(1, 1)).is_none(),
            "{sql:?} is left to sqlparser"
        );
    }
}

/// A small deterministic generator (xorshift), so that every run checks the same texts.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }

    fn pick_list<'a>(&mut self, lists: &[&'a [&'a str]]) -> &'a [&'a str] {
        lists[self.below(lists.len())]
    }
}

/// A random expression of the forms the direct parser reads, `depth` levels at most.
fn random_expr(rng: &mut Rng, depth: usize, out: &mut String) {
    const LEAVES: &[&str] = &[
        "x",
        "C.x",
        "\"q\".y",
        "1",
        "-2",
        "2.5",
        "'t'",
        "NULL",
        "TRUE",
        "false",
        "?",
        "?2",
        "id",
        "value",
        "Position.x",
    ];
    if depth == 0 || rng.below(3) == 0 {
        out.push_str(rng.pick(LEAVES));
        return;
    }
    match rng.below(12) {
        0..=3 => {
            random_expr(rng, depth - 1, out);
            out.push(' ');
            out.push_str(rng.pick(&[
                "+", "-", "*", "/", "%", "||", "=", "<>", "!=", "<", "<=", ">", ">=", "AND", "OR",
            ]));
            out.push(' ');
            random_expr(rng, depth - 1, out);
        }
        4 => {
            out.push_str(rng.pick(&["-", "+", "NOT "]));
            random_expr(rng, depth - 1, out);
        }
        5 => {
            out.push('(');
            random_expr(rng, depth - 1, out);
            if rng.below(3) == 0 {
                out.push_str(", ");
                random_expr(rng, depth - 1, out);
            }
            out.push(')');
        }
        6 => {
            random_expr(rng, depth - 1, out);
            out.push_str(rng.pick(&[
                " IS NULL",
                " IS NOT NULL",
                " IS TRUE",
                " IS FALSE",
                " IS NOT TRUE",
                " IS NOT FALSE",
                " IS DISTINCT FROM 1",
                " IS NOT DISTINCT FROM x + 1",
                " IN (1, 2)",
                " NOT IN (3)",
                " LIKE 'a%'",
                " NOT ILIKE 'b'",
                " BETWEEN 1 AND 2",
                " NOT BETWEEN x AND y",
            ]));
        }
        7 => {
            out.push_str(rng.pick(&["abs(", "count(", "f(", "coalesce(", "count(DISTINCT "]));
            random_expr(rng, depth - 1, out);
            out.push(')');
        }
        8 => {
            out.push_str("CASE WHEN ");
            random_expr(rng, depth - 1, out);
            out.push_str(" THEN ");
            random_expr(rng, depth - 1, out);
            out.push_str(" ELSE ");
            random_expr(rng, depth - 1, out);
            out.push_str(" END");
        }
        9 => {
            out.push_str("CAST(");
            random_expr(rng, depth - 1, out);
            out.push_str(rng.pick(&[" AS INT)", " AS real)", " AS TEXT)", " AS Entity)", " AS bool)"]));
        }
        10 => {
            out.push_str(rng.pick(&["(SELECT ", "EXISTS (SELECT ", "NOT EXISTS (SELECT "]));
            random_expr(rng, depth - 1, out);
            out.push_str(" FROM D)");
        }
        _ => {
            random_expr(rng, depth - 1, out);
            out.push_str(" IN (SELECT y FROM D WHERE ");
            random_expr(rng, depth - 1, out);
            out.push(')');
        }
    }
}

/// A random statement: a query, an UPDATE or a DELETE around random expressions.
fn random_statement(rng: &mut Rng) -> String {
    let mut s = String::new();
    match rng.below(9) {
        6 => {
            s.push_str(rng.pick(&["SPAWN C(", "SPAWN AT 3 C(", "SPAWN D, C(x => "]));
            random_expr(rng, 3, &mut s);
            s.push_str(rng.pick(&[", ", ", y => "]));
            random_expr(rng, 2, &mut s);
            s.push_str(rng.pick(&[
                ")",
                ") FROM range(3) AS r(i) WHERE i > 1",
                ") FROM SELECT x FROM C",
            ]));
        }
        7 => {
            s.push_str(rng.pick(&["DESPAWN ", "DESPAWN 1, ", "DESPAWN FROM C WHERE "]));
            random_expr(rng, 3, &mut s);
        }
        8 => {
            s.push_str(rng.pick(&[
                "INSERT INTO C VALUES (",
                "INSERT OR REPLACE INTO C (id, x) VALUES (1, ",
            ]));
            random_expr(rng, 3, &mut s);
            s.push_str(rng.pick(&[")", "), (2, 3)"]));
        }
        0 => {
            s.push_str("UPDATE C SET x = ");
            random_expr(rng, 3, &mut s);
            s.push_str(" WHERE ");
            random_expr(rng, 3, &mut s);
        }
        1 => {
            s.push_str("DELETE FROM C WHERE ");
            random_expr(rng, 3, &mut s);
        }
        _ => {
            s.push_str(rng.pick(&["SELECT ", "SELECT DISTINCT ", "SELECT ALL "]));
            random_expr(rng, 3, &mut s);
            s.push_str(rng.pick(&["", " AS a", " b", ", *", ", C.*"]));
            s.push_str(rng.pick(&[
                " FROM C",
                " FROM C AS c JOIN D ON ",
                " FROM C, D LEFT JOIN E ON ",
                " FROM (SELECT x FROM C) AS s WHERE ",
                " FROM range(3) r(i) WHERE ",
            ]));
            if s.ends_with(' ') {
                random_expr(rng, 3, &mut s);
            }
            s.push_str(rng.pick(&[
                "",
                " GROUP BY x HAVING count(*) > 1",
                " ORDER BY 1 DESC",
                " LIMIT 2 OFFSET 1",
                " UNION SELECT 1",
                " INTERSECT SELECT y FROM D EXCEPT SELECT 3",
            ]));
        }
    }
    s
}

/// Breaks a statement by a random edit of its words: one dropped, doubled, swapped with
/// its neighbour, or replaced by a word of the language.
fn mutate(rng: &mut Rng, sql: &str) -> String {
    const WORDS: &[&str] = &[
        "SELECT", "FROM", "WHERE", "AS", "AND", "NOT", "NULL", "(", ")", ",", ".", "*", "-", "IS", "IN",
        "JOIN", "ON", "ORDER", "BY", "LIMIT", "ALL", "DISTINCT", "CASE", "END", "'x'", "1", "?", "x", "TRUE",
        "LIKE", "BETWEEN", "UNION", "DATE", "interval", "count", "OVER", "=", "<", "||", "::", "ESCAPE",
        "ANY", ";",
    ];
    let mut words: Vec<&str> = sql.split(' ').collect();
    let i = rng.below(words.len());
    match rng.below(4) {
        0 => {
            words.remove(i);
        }
        1 => words.insert(i, words[i]),
        2 if i + 1 < words.len() => words.swap(i, i + 1),
        _ => words[i] = rng.pick(WORDS),
    }
    words.join(" ")
}

#[test]
fn the_direct_parser_agrees_on_random_statements() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut read, mut read_mutated) = (0, 0);
    let rounds = 20_000;
    for _ in 0..rounds {
        let sql = random_statement(&mut rng);
        if direct_agrees(&sql, Location::new(1, 1)) {
            read += 1;
        }
        let broken = mutate(&mut rng, &sql);
        if direct_agrees(&broken, Location::new(3, 3)) {
            read_mutated += 1;
        }
    }
    // Most generated statements are of forms it reads; some broken ones still are.
    assert!(read * 10 > rounds * 9, "{read} of {rounds} read");
    assert!(
        read_mutated > rounds / 10,
        "{read_mutated} of {rounds} broken texts read"
    );
}

/// Appends an expression exactly `h` levels high as translation counts them (`MAX_DEPTH`:
/// a level per parenthesis, operator, call, CASE and subquery, the value at the bottom
/// one), of random forms along its deepest path and shallow ones beside it. Returns how
/// many queries that path goes through.
fn exact_expr(rng: &mut Rng, h: usize, out: &mut String) -> usize {
    const LEAVES: &[&str] = &["x", "1", "-2", "'t'", "NULL", "?", "C.x", "count(*)", "f()"];
    if h == 1 {
        out.push_str(rng.pick(LEAVES));
        return 0;
    }
    // Something at most `h` high (and at most 3) that binds as one operand.
    fn primary(rng: &mut Rng, h: usize, out: &mut String) -> usize {
        if h == 1 {
            out.push_str(rng.pick(LEAVES));
            return 0;
        }
        out.push('(');
        let q = exact_expr(rng, h - 1, out);
        out.push(')');
        q
    }
    fn beside(rng: &mut Rng, h: usize, out: &mut String) {
        let h = 1 + rng.below(h.min(3));
        primary(rng, h, out);
    }
    match rng.below(13) {
        // A chain of operators of one precedence: its leftmost operand as many levels
        // down as it has operators, each right operand one level below its own.
        0..=3 if h >= 3 => {
            let ops: &[&str] = rng.pick_list(&[&["AND"], &["OR"], &["+", "-"], &["*", "/", "%", "||"]]);
            let n = 1 + rng.below((h - 2).min(6));
            let q = primary(rng, h - n, out);
            for j in (0..n).rev() {
                out.push(' ');
                out.push_str(rng.pick(ops));
                out.push(' ');
                beside(rng, h - j - 1, out);
            }
            q
        }
        4 if h >= 3 => {
            out.push_str(rng.pick(&["-(", "+(", "NOT ("]));
            let q = exact_expr(rng, h - 2, out);
            out.push(')');
            q
        }
        5 => {
            out.push_str(rng.pick(&["abs(", "f(", "coalesce("]));
            let q = exact_expr(rng, h - 1, out);
            if rng.below(2) == 0 {
                out.push_str(", ");
                beside(rng, h - 1, out);
            }
            out.push(')');
            q
        }
        6 => {
            out.push_str("CASE WHEN ");
            let q = exact_expr(rng, h - 1, out);
            out.push_str(" THEN ");
            beside(rng, h - 1, out);
            out.push_str(" ELSE 0 END");
            q
        }
        7 => {
            out.push_str("CAST(");
            let q = exact_expr(rng, h - 1, out);
            out.push_str(rng.pick(&[" AS INT)", " AS TEXT)"]));
            q
        }
        8 => {
            let q = primary(rng, h - 1, out);
            out.push_str(rng.pick(&[" IS NULL", " IS NOT NULL", " IS TRUE", " IS NOT FALSE"]));
            q
        }
        9 => {
            beside(rng, h - 1, out);
            // `IN ((` is read as a query by sqlparser: the list begins with a value.
            out.push_str(" IN (2, ");
            let q = exact_expr(rng, h - 1, out);
            out.push(')');
            q
        }
        10 => {
            beside(rng, h - 1, out);
            out.push_str(" BETWEEN ");
            let q = primary(rng, h - 1, out);
            out.push_str(" AND ");
            beside(rng, h - 1, out);
            q
        }
        11 => {
            // A subquery is a level above its expressions. In a call, since `((SELECT`
            // is a query in parentheses to sqlparser, which the direct parser leaves to it.
            let (open, close, levels) = match rng.below(4) {
                0 if h >= 3 => ("abs((SELECT ", " FROM D))", 2),
                1 => ("EXISTS (SELECT ", " FROM D)", 1),
                2 => ("x IN (SELECT ", " FROM D)", 1),
                _ if h >= 3 => ("f((SELECT y FROM D WHERE ", "))", 2),
                _ => ("EXISTS (SELECT y FROM D WHERE ", ")", 1),
            };
            out.push_str(open);
            let q = exact_expr(rng, h - levels, out);
            out.push_str(close);
            q + 1
        }
        _ => {
            out.push('(');
            let q = exact_expr(rng, h - 1, out);
            if rng.below(4) == 0 {
                out.push_str(", 1");
            }
            out.push(')');
            q
        }
    }
}

/// The direct parser counts a tree's height as translation does, whatever forms it nests:
/// it reads every statement up to its bound (`MAX_HEIGHT`, half translation's), as
/// sqlparser's path reads it, and none above, where translation still reads to its own
/// bound and refuses past it. So no tree it makes is one the binder could not take.
#[test]
fn the_direct_parser_counts_levels_as_translation_counts_them() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let bound = translate::MAX_DEPTH / 2;
    let (mut read, mut tried) = (0, 0);
    for round in 0..240 {
        let h = match round % 8 {
            0 => bound,
            1 => bound + 1,
            2 => translate::MAX_DEPTH + 1,
            3 => translate::MAX_DEPTH + 2,
            4 => bound - 1 - rng.below(40),
            // At least 2: the form with a subquery in FROM puts one level above it.
            _ => 2 + rng.below(59),
        };
        let mut sql = String::new();
        match rng.below(4) {
            0 => {
                sql.push_str("SELECT ");
                exact_expr(&mut rng, h, &mut sql);
                sql.push_str(" FROM C");
            }
            1 => {
                sql.push_str("SELECT a FROM C WHERE ");
                exact_expr(&mut rng, h, &mut sql);
            }
            2 => {
                sql.push_str("UPDATE C SET x = 1 WHERE ");
                exact_expr(&mut rng, h, &mut sql);
            }
            _ => {
                // A subquery in FROM is a level above its expressions.
                sql.push_str("SELECT * FROM (SELECT ");
                exact_expr(&mut rng, h - 1, &mut sql);
                sql.push_str(" FROM C) AS t");
            }
        }
        match parse_with_sqlparser(&sql, Location::new(1, 1)) {
            Ok(_) => assert!(h <= translate::MAX_DEPTH + 1, "{h} levels are read: {sql}"),
            Err(e) => assert!(
                h > translate::MAX_DEPTH + 1 && e.message.contains("too deep"),
                "{h} levels: {e}: {sql}"
            ),
        }
        tried += 1;
        if direct_agrees(&sql, Location::new(1, 1)) {
            read += 1;
            assert!(h <= bound, "{h} levels are read directly: {sql}");
        } else {
            assert!(h > bound, "{h} levels are left to sqlparser: {sql}");
        }
    }
    assert!(read * 2 > tried, "{read} of {tried} read directly");
}

/// The exact edge, in a form SQLite's generated queries take (groups of ANDs inside ORs,
/// nested); and the deepest tree read directly is read on a thread of a small stack.
#[test]
fn the_direct_parser_reads_deep_trees_to_its_bound() {
    let bound = translate::MAX_DEPTH / 2;
    // A value under n parentheses is n + 1 levels.
    let parens = |n: usize| format!("SELECT {}1{}", "(".repeat(n), ")".repeat(n));
    assert!(direct_agrees(&parens(bound - 1), Location::new(1, 1)));
    assert!(direct::parse(&parens(bound), Location::new(1, 1)).is_none());
    // `x = 1 OR …` n times: n - 1 ORs above a comparison above a value, n + 1 levels.
    let ors = |n: usize| format!("SELECT a FROM C WHERE {}", vec!["x = 1"; n].join(" OR "));
    assert!(direct_agrees(&ors(bound - 1), Location::new(1, 1)));
    assert!(direct::parse(&ors(bound), Location::new(1, 1)).is_none());
    let groups = |n: usize| {
        let open: Vec<String> = (0..n)
            .map(|i| format!("(x < {i} AND (y >= {i}.5 OR z IS NULL)"))
            .collect();
        format!("SELECT pk FROM C WHERE {}{}", open.join(" OR "), ")".repeat(n))
    };
    for n in [10, 40, 120] {
        assert!(
            direct_agrees(&groups(n), Location::new(1, 1)),
            "{n} nested groups are read directly"
        );
    }
    let sql = format!(
        "SELECT {}x{}",
        "abs(CASE WHEN -(".repeat(124),
        ") THEN 1 END)".repeat(124)
    );
    // A stack a little above the red zone: the query's own check does not grow it, so
    // the levels below it are read on it as far as the checks every few levels allow.
    tokens::debug_red_zone();
    let stack = recursive::get_minimum_stack_size() + 64 * 1024;
    let read = std::thread::Builder::new()
        .stack_size(stack)
        .spawn(move || direct::parse(&sql, Location::new(1, 1)).is_some())
        .unwrap()
        .join()
        .unwrap();
    assert!(read, "a text 497 levels deep is read on a stack of {stack} bytes");
}

/// A tree no text makes (a NaN constant: `NaN` would read as a name) does not read back,
/// and a system holding it is refused rather than kept as text that would not open.
#[test]
fn a_system_that_would_not_read_back_is_refused() {
    let Statement {
        kind: StatementKind::CreateSystem(mut spec),
        ..
    } = parse_one("CREATE SYSTEM s AS UPDATE C SET x = 1.5").unwrap()
    else {
        panic!("a system");
    };
    assert!(system_reads_back(&spec).is_ok());
    let StatementKind::Update { assignments, .. } = &mut spec.body[0].kind else {
        panic!("an update");
    };
    assignments[0].value.kind = ExprKind::Literal(Literal::Float(f64::NAN));
    let why = system_reads_back(&spec).unwrap_err();
    assert!(why.contains("reads back as another statement"), "{why}");
    let mut schedule = crate::schedule::Schedule::default();
    let refused = schedule
        .create_system(&spec, &crate::storage::World::new(), 0, true)
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("system s cannot be kept as written"),
        "{refused}"
    );
}

/// Queries nested with no expression between them are bounded by the calls under way
/// (`MAX_FRAMES`): a query in parentheses takes one call, a subquery in FROM two. The
/// deepest such tree read is dropped on a thread of a small stack: its queries' drops grow
/// the stack as its depth needs.
#[test]
fn queries_nested_without_expressions_are_read_to_the_frame_bound() {
    let unions = |n: usize| format!("SELECT 1{}{}", " UNION (SELECT 1".repeat(n), ")".repeat(n));
    let froms = |n: usize| {
        format!(
            "{}SELECT * FROM C{}",
            "SELECT * FROM (".repeat(n),
            ") AS t".repeat(n)
        )
    };
    let frames = direct::MAX_FRAMES;
    assert!(direct_agrees(&unions(frames - 2), Location::new(1, 1)));
    assert!(direct::parse(&unions(frames - 1), Location::new(1, 1)).is_none());
    assert!(direct_agrees(&froms(frames / 2 - 1), Location::new(1, 1)));
    assert!(direct::parse(&froms(frames / 2), Location::new(1, 1)).is_none());
    for sql in [unions(frames - 2), froms(frames / 2 - 1)] {
        let tree = direct::parse(&sql, Location::new(1, 1)).expect("read directly");
        std::thread::Builder::new()
            .stack_size(64 * 1024)
            .spawn(move || drop(tree))
            .unwrap()
            .join()
            .expect("the tree is dropped on a 64 KiB stack");
    }
}
