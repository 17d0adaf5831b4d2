//! Filter indexes as SHOW INDEXES reports them: the rows they cover, in how many tables
//! their filters are made (none after a write until a scan asks again), their memory (at
//! most 12 bits a row, whatever the values) and what making them took.

use ecsql::{Connection, Database};

/// The filter index `name`'s SHOW INDEXES row: entries and structure.
fn shown(conn: &Connection, name: &str) -> (i64, String) {
    let mut show = conn.prepare("SHOW INDEXES").unwrap();
    let rows = show.query(()).unwrap();
    for row in rows {
        let row = row.unwrap();
        if row.get::<_, String>(0).unwrap() == name {
            return (row.get(4).unwrap(), row.get(5).unwrap());
        }
    }
    panic!("no index {name}");
}

/// The `(made, tables, bits a row)` of a structure text.
fn made(structure: &str) -> (usize, usize, f64) {
    let after = |word: &str| structure.split(word).nth(1).unwrap_or("").trim_start();
    let number = |text: &str| {
        text.split(|c: char| !c.is_ascii_digit() && c != '.')
            .next()
            .unwrap_or("")
            .to_owned()
    };
    let built: usize = number(after("made for ")).parse().unwrap();
    let tables: usize = number(after(&format!("made for {built} of "))).parse().unwrap();
    let bits: f64 = number(after("bytes (")).parse().unwrap();
    (built, tables, bits)
}

#[test]
fn filters_are_made_when_read_dropped_when_written_and_small() {
    let conn = Database::open_in_memory().connect();
    conn.execute_batch(
        "CREATE COMPONENT Item (n INT, s TEXT);
         CREATE TAG Few;
         SPAWN Item(i * 7919 % 1000003, 's' || i) FROM range(100000) AS r(i);
         SPAWN Item(i % 3, 'few'), Few FROM range(5000) AS r(i);
         CREATE INDEX items ON Item USING filter (n);
         CREATE INDEX ON Item (s) USING filter;",
    )
    .unwrap();
    let (entries, structure) = shown(&conn, "items");
    assert_eq!(entries, 105_000);
    assert_eq!(made(&structure).0, 0, "{structure}");
    let count = |condition: &str| -> i64 {
        conn.query_row(&format!("SELECT count(*) FROM Item WHERE {condition}"), (), |r| {
            r.get(0)
        })
        .unwrap()
    };
    // 1 is within both tables' least and greatest values: zone maps skip neither, so
    // both tables' filters are made. `NOT NOT (…)` is the same condition, which no
    // filter decides.
    assert_eq!(count("Item.n = 1"), count("NOT NOT (Item.n = 1)"));
    assert!(count("Item.n = 1") >= 1667, "{}", count("Item.n = 1"));
    let (_, structure) = shown(&conn, "items");
    let (built, tables, bits) = made(&structure);
    assert_eq!((built, tables), (2, 2), "{structure}");
    // 100,000 distinct values: about 10 bits each, and the blocks' own records.
    assert!(bits > 8.0 && bits <= 12.0, "{structure}");
    assert!(structure.contains(" ms to make"), "{structure}");
    // A TEXT field's filters, asked by IN.
    let n: i64 = conn
        .query_row(
            "SELECT count(*) FROM Item WHERE Item.s IN ('s5', 'few', 'none')",
            (),
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(n, 5001);
    let (_, structure) = shown(&conn, "Item_s_filter");
    assert!(made(&structure).2 <= 12.0, "{structure}");
    // A write to one table drops that table's filters only; the next scan makes them.
    conn.execute("UPDATE Item SET n = Item.n + 1 WHERE has(Few)", ())
        .unwrap();
    assert_eq!(made(&shown(&conn, "items").1).0, 1);
    assert_eq!(count("Item.n = 3"), count("NOT NOT (Item.n = 3)"));
    assert!(count("Item.n = 3") >= 1666);
    assert_eq!(made(&shown(&conn, "items").1).0, 2);
    // DROP INDEX lets the filters go; made again for a new index when asked.
    conn.execute("DROP INDEX items", ()).unwrap();
    conn.execute("CREATE INDEX items ON Item (n) USING filter", ())
        .unwrap();
    assert_eq!(made(&shown(&conn, "items").1).0, 0);
}
