//! Parser contract: statements round-trip through `Display`, errors carry locations.

use super::*;

fn round_trip(sql: &str) {
    let first = parse_one(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let printed = first.to_string();
    let second = parse_one(&printed).unwrap_or_else(|e| panic!("reparse of {printed}: {e}"));
    assert_eq!(printed, second.to_string(), "round trip of {sql}");
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
