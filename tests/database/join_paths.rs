//! The two ways a hash join keys its rows give the same pairs, in the same order: a join
//! on one INT or ENTITY key keys them by number (`id_keyed_pairs` in src/exec/join.rs),
//! any other by a key vector per row. Random worlds (NULLs, negative numbers, zero,
//! duplicates on both sides, ids) are joined on an INT key as written, and on the same
//! key made FLOAT (which takes the general path); the rows must be equal, row by row.
//!
//! Runs 200 seeds; `ECSQL_JOIN_SEEDS=N` runs N, `ECSQL_SEED=N` replays one.

use crate::common;

use common::Rng;
use ecsql::{Connection, Database, Value};

fn below(rng: &mut Rng, n: u64) -> u64 {
    rng.next() % n
}

fn rows(conn: &Connection, sql: &str) -> Vec<Vec<Value>> {
    let mut stmt = conn.prepare(sql).expect("the join plans");
    stmt.query(())
        .expect("the join runs")
        .map(|r| r.expect("a row").values().to_vec())
        .collect()
}

#[test]
fn a_join_keyed_by_number_pairs_rows_as_the_general_join_does() {
    let seeds = common::seeds("ECSQL_JOIN_SEEDS", 200);
    let mut compared = 0;
    for seed in seeds {
        let mut rng = Rng(seed);
        let conn = Database::open_in_memory().connect();
        conn.execute_batch("CREATE COMPONENT A (k INT, e ENTITY); CREATE COMPONENT B (k INT)")
            .expect("made");
        let (a, b) = (below(&mut rng, 30), below(&mut rng, 30));
        for _ in 0..a {
            let k = below(&mut rng, 9) as i64 - 4;
            let e = below(&mut rng, 40) as i64;
            let e = if e == 0 { Value::Null } else { Value::Int(e) };
            conn.execute("SPAWN A(?1, CAST(?2 AS ENTITY))", (k, e))
                .expect("spawned");
        }
        for _ in 0..b {
            let k = below(&mut rng, 9) as i64 - 4;
            conn.execute("SPAWN B(?1)", [k]).expect("spawned");
        }
        // -4 stands for NULL; 0 and the negative ones key as INTs, the positive ones as
        // the ids of their values, which A.e holds.
        let key = |side: &str| format!("NULLIF({side}.k, -4)");
        for (by_number, general) in [
            (
                format!("{} = {}", key("a"), key("b")),
                format!("CAST({} AS FLOAT) = CAST({} AS FLOAT)", key("a"), key("b")),
            ),
            (
                format!("a.e = {}", key("b")),
                format!("CAST(CAST(a.e AS INT) AS FLOAT) = CAST({} AS FLOAT)", key("b")),
            ),
        ] {
            let sql = |on: &str| format!("SELECT a.id, b.id, a.k, b.k FROM A AS a JOIN B AS b ON {on}");
            let (fast, slow) = (rows(&conn, &sql(&by_number)), rows(&conn, &sql(&general)));
            assert_eq!(
                fast,
                slow,
                "seed {seed} (ECSQL_SEED={seed}): {} and {} differ",
                sql(&by_number),
                sql(&general)
            );
            compared += 1;
        }
    }
    assert!(compared >= 2, "nothing was compared");
}
