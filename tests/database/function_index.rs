//! Function indexes compute their expressions only for the rows a write reaches: SHOW
//! INDEXES counts the rows each has computed since it was made, and every kind of write
//! adds exactly the rows it wrote, spawned or restored (none for a write to a field the
//! expressions do not read, a move to another table, a despawn).

use ecsql::{Connection, Database};

/// How many rows the index `name` has computed, from its SHOW INDEXES structure
/// (`B-tree, N rows computed`), and how many entities it holds.
fn computed(conn: &Connection, name: &str) -> (u64, i64) {
    let mut show = conn.prepare("SHOW INDEXES").unwrap();
    for row in show.query(()).unwrap() {
        let row = row.unwrap();
        if row.get::<_, String>(0).unwrap() != name {
            continue;
        }
        let structure: String = row.get(5).unwrap();
        let n = structure
            .strip_prefix("B-tree, ")
            .and_then(|s| s.strip_suffix(" rows computed"))
            .unwrap_or_else(|| panic!("{structure}"));
        return (n.parse().unwrap(), row.get(4).unwrap());
    }
    panic!("no index {name}");
}

#[test]
fn a_function_index_computes_only_the_rows_a_write_reaches() {
    let conn = Database::open_in_memory().connect();
    conn.execute_batch(
        "CREATE COMPONENT Health (hp INT, note TEXT);
         CREATE TAG Boss;
         SPAWN Health(i, 'n') FROM range(6000) AS r(i);
         SPAWN Health(i, 'b'), Boss FROM range(4000) AS r(i);
         CREATE INDEX weak ON Health (hp % 7) WHERE hp < 100;",
    )
    .unwrap();
    let mut seen = computed(&conn, "weak").0;
    assert_eq!(seen, 10_000, "made from every row");
    let mut step = |sql: &str, rows: u64| {
        conn.execute_batch(sql).unwrap();
        let now = computed(&conn, "weak").0;
        assert_eq!(now - seen, rows, "{sql}");
        seen = now;
    };
    step("UPDATE Health SET hp = 5 WHERE id = 4242", 1);
    // Scattered rows in two tables: exactly those.
    step(
        "UPDATE Health SET hp = Health.hp + 1 WHERE Health.hp % 1000 = 0",
        10,
    );
    step("UPDATE Health SET note = 'x'", 0);
    step("INSERT INTO Boss (id) VALUES (17), (18)", 0);
    step("DESPAWN 19, 20", 0);
    step("SPAWN Health(i, 'new') FROM range(5) AS r(i)", 5);
    step(
        "BEGIN; UPDATE Health SET hp = -1 WHERE Health.hp = 7; ROLLBACK;",
        4,
    );
    step("UPDATE Health SET hp = Health.hp * 2 WHERE Health.hp < 3", 9);
    let (_, held) = computed(&conn, "weak");
    let scan: i64 = conn
        .query_row(
            "SELECT count(*) FROM Health WHERE NOT NOT (Health.hp < 100)",
            (),
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(held, scan, "the partial index holds the rows its WHERE keeps");
}
