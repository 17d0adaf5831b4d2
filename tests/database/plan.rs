//! The planner, rule by rule: SQL in, the EXPLAIN text out, as a user sees it. Each test
//! names one rule of binding (how FROM, WHERE and the select list become relations, scans
//! and filters) or of the access pass (how a scan reads its rows: every row, by id, or
//! through an index).

use ecsql::{Connection, Database};

/// Components, a few entities and two indexes on them.
fn world() -> Connection {
    let conn = Database::open_in_memory().connect();
    conn.execute_batch(
        "CREATE COMPONENT Position (x REAL, y REAL);
         CREATE COMPONENT Velocity (x REAL, y REAL);
         CREATE COMPONENT Name (value TEXT);
         CREATE COMPONENT Frozen (since INT);
         SPAWN Position(1, 2), Velocity(0, 1), Name('a');
         SPAWN Position(3, 4), Frozen(1);
         SPAWN Name('b');
         CREATE SPATIAL INDEX near ON Position (x, y);
         CREATE INDEX by_name ON Name (value);",
    )
    .expect("the test world");
    conn
}

/// The EXPLAIN text of `sql`, one line per plan row, without the lines that list the
/// archetype tables a scan reads or prunes: the rules here are about relations and how
/// each is read.
fn plan(conn: &Connection, sql: &str) -> String {
    let mut stmt = conn.prepare(&format!("EXPLAIN {sql}")).expect("EXPLAIN prepares");
    let mut lines = Vec::new();
    for row in stmt.query(()).expect("EXPLAIN runs") {
        let line: String = row.expect("a plan row").get(0).expect("plan text");
        let listing =
            line.trim_start().starts_with("table arch_") || line.trim_start().starts_with("pruned arch_");
        if !listing {
            lines.push(line);
        }
    }
    lines.join("\n")
}

fn check(sql: &str, want: &str) {
    let got = plan(&world(), sql);
    assert_eq!(
        got,
        want.trim_matches('\n'),
        "\nEXPLAIN {sql}\n--- got ---\n{got}\n"
    );
}

#[test]
fn has_and_not_has_fold_into_the_scan() {
    check(
        "SELECT id FROM Position WHERE has(Name) AND NOT has(Frozen) AND Position.x > 0",
        "
Project id
  Filter Position.x > 0
    Scan Position: entities with (Name, Position) without (Frozen)
      index near not used: no condition distance((Position.x, Position.y), point) < r or <= r, and no box bounding each of (Position.x, Position.y) on both sides (with constants or parameters)
      index by_name not used: no condition on Name.value by =, IN, <, <=, >, >=, BETWEEN or LIKE 'prefix%' with constants or parameters
",
    );
}

#[test]
fn components_without_on_are_one_entity() {
    check(
        "SELECT Position.x, Velocity.y FROM Position, Velocity",
        "
Project Position.x, Velocity.y
  Scan Position: entities with (Position, Velocity)
    index near not used: no condition distance((Position.x, Position.y), point) < r or <= r, and no box bounding each of (Position.x, Position.y) on both sides (with constants or parameters)
",
    );
}

#[test]
fn left_join_without_on_makes_a_component_optional() {
    check(
        "SELECT Position.x, Velocity.y FROM Position LEFT JOIN Velocity",
        "
Project Position.x, Velocity.y
  Scan Position: entities with (Position), optional (Velocity)
    index near not used: no condition distance((Position.x, Position.y), point) < r or <= r, and no box bounding each of (Position.x, Position.y) on both sides (with constants or parameters)
",
    );
}

#[test]
fn join_on_opens_a_new_entity_joined_by_a_hash_key() {
    check(
        "SELECT a.id FROM Position a JOIN Position b ON a.x = b.y",
        "
Project a.id
  Join: 2 relations by inner joins, ordered by their sizes and keys when run
    hash key a.x = b.y: (Position AS a) = (Position AS b)
    Scan Position AS a: entities with (Position)
      index near not used: no condition distance((Position.x, Position.y), point) < r or <= r, and no box bounding each of (Position.x, Position.y) on both sides (with constants or parameters)
    inner join Scan Position AS b: entities with (Position)
      index near not used: no condition distance((Position.x, Position.y), point) < r or <= r, and no box bounding each of (Position.x, Position.y) on both sides (with constants or parameters)
",
    );
}

#[test]
fn group_by_aggregates_above_the_scan() {
    check(
        "SELECT Name.value, count(*) FROM Name GROUP BY Name.value HAVING count(*) > 0",
        "
Project Name.value, count(*)
  Filter (HAVING) count(*) > 0
    Aggregate group by Name.value
      Scan Name: entities with (Name)
        index by_name not used: no condition on Name.value by =, IN, <, <=, >, >=, BETWEEN or LIKE 'prefix%' with constants or parameters
",
    );
}

#[test]
fn order_by_and_limit_sort_above_the_projection() {
    check(
        "SELECT id FROM Position ORDER BY Position.y DESC LIMIT 2 OFFSET 1",
        "
Limit 2 offset 1
  Sort #2 DESC
    Project id
      Scan Position: entities with (Position)
        index near not used: no condition distance((Position.x, Position.y), point) < r or <= r, and no box bounding each of (Position.x, Position.y) on both sides (with constants or parameters)
",
    );
}

#[test]
fn set_operations_combine_their_sides() {
    check(
        "SELECT id FROM Position UNION SELECT id FROM Name",
        "
Union (distinct)
  Project id
    Scan Position: entities with (Position)
      index near not used: no condition distance((Position.x, Position.y), point) < r or <= r, and no box bounding each of (Position.x, Position.y) on both sides (with constants or parameters)
  Project id
    Scan Name: entities with (Name)
      index by_name not used: no condition on Name.value by =, IN, <, <=, >, >=, BETWEEN or LIKE 'prefix%' with constants or parameters
",
    );
}

#[test]
fn a_subquery_in_from_is_a_relation() {
    check(
        "SELECT t.id FROM (SELECT id FROM Name) AS t",
        "
Project t.id
  Subquery t
    Project id
      Scan Name: entities with (Name)
        index by_name not used: no condition on Name.value by =, IN, <, <=, >, >=, BETWEEN or LIKE 'prefix%' with constants or parameters
",
    );
}

#[test]
fn id_equality_looks_entities_up() {
    check(
        "SELECT id FROM Position WHERE id = 1",
        "
Project id
  Filter id = 1
    Scan Position: entities with (Position), looked up by id (1 id)
      indexes not used: the entities are looked up by id
",
    );
}

#[test]
fn id_in_list_looks_each_up() {
    check(
        "SELECT id FROM Position WHERE id IN (1, 2, 99)",
        "
Project id
  Filter id IN (1, 2, 99)
    Scan Position: entities with (Position), looked up by id (3 ids)
      indexes not used: the entities are looked up by id
",
    );
}

#[test]
fn the_nullable_side_of_a_left_join_is_not_looked_up() {
    check(
        "SELECT a.id FROM Position a LEFT JOIN Position b ON b.id = a.id WHERE b.id = 1",
        "
Project a.id
  Filter b.id = 1
    Join: in FROM order
      ON of Position AS b (hash join on an equality, else pair by pair)
        by id: Position AS b read through the entity index
      Scan Position AS a: entities with (Position)
        index near not used: no condition distance((Position.x, Position.y), point) < r or <= r, and no box bounding each of (Position.x, Position.y) on both sides (with constants or parameters)
      left join Scan Position AS b: entities with (Position)
",
    );
}

#[test]
fn a_spatial_index_serves_distance_within() {
    check(
        "SELECT id FROM Position WHERE distance((Position.x, Position.y), (0, 0)) < 5",
        "
Project id
  Filter distance((Position.x, Position.y), (0, 0)) < 5
    Scan Position: entities with (Position)
      index near (spatial) serves distance((Position.x, Position.y), (0, 0)) < 5.0, used while it finds at most 64 rows
",
    );
}

#[test]
fn a_spatial_index_serves_a_box() {
    check(
        "SELECT id FROM Position WHERE Position.x BETWEEN 0 AND 2 AND Position.y BETWEEN 0 AND 3",
        "
Project id
  Filter Position.x BETWEEN 0 AND 2 AND Position.y BETWEEN 0 AND 3
    Scan Position: entities with (Position)
      index near (spatial) serves Position.x BETWEEN 0.0 AND 2.0 AND Position.y BETWEEN 0.0 AND 3.0, used while it finds at most 64 rows
      zone maps on Position.x >= 0.0 AND Position.x <= 2.0 AND Position.y >= 0.0 AND Position.y <= 3.0 skip 1 of 2 tables when the index is not used
",
    );
}

#[test]
fn a_spatial_index_serves_k_nearest() {
    check(
        "SELECT id FROM Position ORDER BY distance((Position.x, Position.y), (3, 4)) LIMIT 1",
        "
Limit 1 offset 0
  Sort #2
    Project id
      Scan Position: entities with (Position)
        index near (spatial) serves ORDER BY distance((Position.x, Position.y), (3, 4)) LIMIT 1, used while it finds at most 64 rows
",
    );
}

#[test]
fn an_ordered_index_serves_equality() {
    check(
        "SELECT id FROM Name WHERE Name.value = 'a'",
        "
Project id
  Filter Name.value = 'a'
    Scan Name: entities with (Name)
      index by_name (ordered) serves Name.value = 'a', used while it finds at most 64 rows
",
    );
}

#[test]
fn an_ordered_index_serves_a_range() {
    check(
        "SELECT id FROM Name WHERE Name.value >= 'a' AND Name.value < 'b'",
        "
Project id
  Filter Name.value >= 'a' AND Name.value < 'b'
    Scan Name: entities with (Name)
      index by_name (ordered) serves Name.value >= 'a' AND Name.value < 'b', used while it finds at most 64 rows
",
    );
}

#[test]
fn an_ordered_index_serves_a_like_prefix() {
    check(
        "SELECT id FROM Name WHERE Name.value LIKE 'a%'",
        "
Project id
  Filter Name.value LIKE 'a%'
    Scan Name: entities with (Name)
      index by_name (ordered) serves Name.value LIKE 'a%', used while it finds at most 64 rows
",
    );
}

#[test]
fn ids_take_precedence_over_indexes() {
    check(
        "SELECT id FROM Name WHERE id = 3 AND Name.value = 'b'",
        "
Project id
  Filter id = 3 AND Name.value = 'b'
    Scan Name: entities with (Name), looked up by id (1 id)
      indexes not used: the entities are looked up by id
",
    );
}

#[test]
fn an_index_that_cannot_serve_says_why() {
    check(
        "SELECT id FROM Name WHERE Name.value <> 'a'",
        "
Project id
  Filter Name.value <> 'a'
    Scan Name: entities with (Name)
      index by_name not used: no condition on Name.value by =, IN, <, <=, >, >=, BETWEEN or LIKE 'prefix%' with constants or parameters
",
    );
}

#[test]
fn an_inner_joins_on_condition_can_serve_an_index() {
    check(
        "SELECT p.id FROM Position p JOIN Name n ON n.value = 'a'",
        "
Project p.id
  Join: 2 relations by inner joins, ordered by their sizes and keys when run
    Scan Position AS p: entities with (Position)
      index near not used: no condition distance((Position.x, Position.y), point) < r or <= r, and no box bounding each of (Position.x, Position.y) on both sides (with constants or parameters)
    inner join Scan Name AS n: entities with (Name)
      index by_name (ordered) serves Name.value = 'a', used while it finds at most 64 rows
",
    );
}

#[test]
fn the_nullable_side_of_a_left_join_uses_no_index() {
    check(
        "SELECT p.id FROM Position p LEFT JOIN Name n ON n.value = 'a' WHERE n.value = 'a'",
        "
Project p.id
  Filter n.value = 'a'
    Join: in FROM order
      ON of Name AS n (hash join on an equality, else pair by pair)
      Scan Position AS p: entities with (Position)
        index near not used: no condition distance((Position.x, Position.y), point) < r or <= r, and no box bounding each of (Position.x, Position.y) on both sides (with constants or parameters)
      left join Scan Name AS n: entities with (Name)
",
    );
}

#[test]
fn update_scans_use_the_access_pass_too() {
    check(
        "UPDATE Position SET x = x + 1 WHERE distance((Position.x, Position.y), (0, 0)) < 2",
        "
Update Position SET x = x + 1 (written into the columns)
  Filter distance((Position.x, Position.y), (0, 0)) < 2
    Scan Position: entities with (Position)
      index near (spatial) serves distance((Position.x, Position.y), (0, 0)) < 2.0, used while it finds at most 64 rows
",
    );
}

#[test]
fn despawn_and_delete_look_ids_up_too() {
    check(
        "DESPAWN FROM Position WHERE id = 2",
        "
Despawn
  Project id
    Filter id = 2
      Scan Position: entities with (Position), looked up by id (1 id)
        indexes not used: the entities are looked up by id
",
    );
}

#[test]
fn the_access_pass_reaches_a_subquery_in_from() {
    check(
        "SELECT n.i FROM (SELECT id AS i FROM Position ORDER BY distance((Position.x, Position.y), (3, 4)) LIMIT 1) AS n",
        "
Project n.i
  Subquery n
    Limit 1 offset 0
      Sort #2
        Project id
          Scan Position: entities with (Position)
            index near (spatial) serves ORDER BY distance((Position.x, Position.y), (3, 4)) LIMIT 1, used while it finds at most 64 rows
",
    );
}

#[test]
fn the_access_pass_reaches_each_side_of_a_set_operation() {
    check(
        "SELECT id FROM Position WHERE id = 1 UNION ALL SELECT id FROM Name WHERE Name.value = 'b'",
        "
Union all
  Project id
    Filter id = 1
      Scan Position: entities with (Position), looked up by id (1 id)
        indexes not used: the entities are looked up by id
  Project id
    Filter Name.value = 'b'
      Scan Name: entities with (Name)
        index by_name (ordered) serves Name.value = 'b', used while it finds at most 64 rows
",
    );
}

#[test]
fn a_prepared_statement_plans_again_when_an_index_is_created_or_dropped() {
    let conn = world();
    let mut explain = conn
        .prepare("EXPLAIN SELECT id FROM Name WHERE Name.value = ?1")
        .expect("EXPLAIN prepares");
    let mut lookup = conn
        .prepare("SELECT count(*) FROM Name WHERE Name.value = ?1")
        .expect("the lookup prepares");
    // The line naming an index on Name.value (or none); the lookup answers the same.
    let mut run = || {
        let line = explain
            .query(["b"])
            .expect("EXPLAIN runs")
            .map(|row| row.and_then(|r| r.get::<_, String>(0)).expect("a plan row"))
            .find(|l| l.contains("index by_"))
            .map(|l| l.trim().to_owned());
        let count: i64 = lookup.query_row(["b"], |r| r.get(0)).expect("the lookup runs");
        assert_eq!(count, 1);
        line
    };
    let serves = |name: &str| {
        Some(format!(
            "index {name} (ordered) serves Name.value = ?1, used while it finds at most 64 rows"
        ))
    };
    assert_eq!(run(), serves("by_name"));
    // Each change to the world's list of indexes (it keeps `near` throughout) makes the
    // kept plans again.
    conn.execute("DROP INDEX by_name", ()).expect("drop");
    assert_eq!(run(), None);
    conn.execute("CREATE INDEX by_value ON Name (value)", ())
        .expect("create");
    assert_eq!(run(), serves("by_value"));
    conn.execute("DROP INDEX by_value", ()).expect("drop");
    assert_eq!(run(), None);
}

/// Zone maps read a prepared statement's parameters each time it runs: the same plan
/// skips different tables for different values, none for NULL's comparison (which no
/// row passes), and an integer for an ENTITY field names the id of its value.
#[test]
fn zone_maps_decide_with_each_runs_parameters() {
    let conn = Database::open_in_memory().connect();
    conn.execute_batch(
        "CREATE COMPONENT Level (n INT);
         CREATE COMPONENT Owner (who ENTITY);
         CREATE TAG B;
         SPAWN Level(i), Owner(i + 1) FROM range(100) AS r(i);
         SPAWN Level(1000 + i), Owner(NULL), B FROM range(100) AS r(i);",
    )
    .unwrap();
    let mut below = conn
        .prepare("SELECT count(*) FROM Level WHERE Level.n < ?1")
        .unwrap();
    let mut explain = conn
        .prepare("EXPLAIN (ANALYZE, TIMING false) SELECT count(*) FROM Level WHERE Level.n < ?1")
        .unwrap();
    let skipped = |explain: &mut ecsql::Statement<'_>, v: Option<i64>| -> String {
        let rows = explain.query((v,)).unwrap();
        let lines: Vec<String> = rows.map(|r| r.unwrap().get::<_, String>(0).unwrap()).collect();
        lines
            .iter()
            .find(|l| l.contains("zone maps on"))
            .cloned()
            .unwrap_or_default()
    };
    for (v, want, line) in [
        (
            Some(50),
            50,
            "skip 1 of 2 tables (actual: 1 table and 0 blocks skipped)",
        ),
        (Some(1050), 150, ""),
        (
            Some(-1),
            0,
            "skip 2 of 2 tables (actual: 2 tables and 0 blocks skipped)",
        ),
        (
            None,
            0,
            "skip 2 of 2 tables (actual: 2 tables and 0 blocks skipped)",
        ),
    ] {
        let n: i64 = below.query_row((v,), |r| r.get(0)).unwrap();
        assert_eq!(n, want, "Level.n < {v:?}");
        let got = skipped(&mut explain, v);
        assert!(got.ends_with(line), "Level.n < {v:?}: {got:?}");
        assert_eq!(got.is_empty(), line.is_empty(), "Level.n < {v:?}: {got:?}");
    }
    let owned: i64 = conn
        .query_row("SELECT count(*) FROM Owner WHERE Owner.who = ?1", (7,), |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(owned, 1);
}
