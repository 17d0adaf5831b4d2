//! No input makes the library panic: seeded random token soups and mutations of valid
//! statements are run against a small database; each must return Ok or Err.
//! `ECSQL_SEED` / `ECSQL_CASES` replay or lengthen a run.

use ecsql::Database;

use crate::common;

use common::Rng;

/// The draws this file makes, beside `Rng::next`.
trait Draw {
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str;
}

impl Draw for Rng {
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }
}

const TOKENS: &[&str] = &[
    "SELECT",
    "FROM",
    "WHERE",
    "SPAWN",
    "DESPAWN",
    "INSERT",
    "INTO",
    "VALUES",
    "UPDATE",
    "SET",
    "DELETE",
    "CREATE",
    "COMPONENT",
    "TAG",
    "DROP",
    "EXPLAIN",
    "BEGIN",
    "COMMIT",
    "ROLLBACK",
    "GROUP",
    "BY",
    "ORDER",
    "LIMIT",
    "OFFSET",
    "HAVING",
    "UNION",
    "ALL",
    "DISTINCT",
    "JOIN",
    "LEFT",
    "ON",
    "AS",
    "AND",
    "OR",
    "NOT",
    "IN",
    "IS",
    "NULL",
    "BETWEEN",
    "LIKE",
    "CASE",
    "WHEN",
    "THEN",
    "ELSE",
    "END",
    "CAST",
    "INT",
    "REAL",
    "TEXT",
    "ENTITY",
    "P",
    "V",
    "N",
    "P.x",
    "V.y",
    "N.value",
    "id",
    "x",
    "y",
    "value",
    "has",
    "count",
    "sum",
    "avg",
    "min",
    "max",
    "abs",
    "sqrt",
    "substr",
    "coalesce",
    "range",
    "entities",
    "(",
    ")",
    ",",
    ";",
    "*",
    "+",
    "-",
    "/",
    "%",
    "=",
    "<>",
    "<",
    ">=",
    "||",
    "=>",
    "?",
    "?2",
    ":a",
    "$b",
    "0",
    "1",
    "-1",
    "2.5",
    "9223372036854775807",
    "'a'",
    "'z%'",
    "TRUE",
    "FALSE",
    "arch_0000000000000000",
];

const VALID: &[&str] = &[
    "SELECT id, P.x FROM P LEFT JOIN V WHERE NOT has(V) AND P.x > 1 ORDER BY P.x DESC LIMIT 3",
    "UPDATE P SET x = P.x + V.x * 2 FROM V WHERE P.x < 100",
    "SPAWN P(x => i, y => i * 2), N('n' || i) FROM range(5) AS r(i)",
    "SELECT N.value, count(*), avg(P.y) FROM P, N GROUP BY N.value HAVING count(*) > 0",
    "INSERT INTO V (id, x, y) SELECT id, 1, 1 FROM P WHERE NOT has(V) ON CONFLICT DO NOTHING",
    "SELECT a.id, b.id FROM P AS a JOIN P AS b ON a.x = b.y",
    "DESPAWN FROM P WHERE P.x > 3",
    "SELECT CASE WHEN P.x > 1 THEN P.x / (P.y - 2) ELSE 0 END FROM P",
];

#[test]
fn random_input_never_panics() {
    let seed: u64 = std::env::var("ECSQL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(7);
    let cases: usize = std::env::var("ECSQL_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3000);
    let mut rng = Rng(seed);
    let db = Database::open_in_memory();
    let conn = db.connect();
    conn.execute_batch(
        "CREATE COMPONENT P (x REAL, y INT);
         CREATE COMPONENT V (x REAL, y REAL);
         CREATE COMPONENT N (value TEXT);
         SPAWN P(x => i, y => i), N('n') FROM range(10) AS r(i);
         SPAWN V(1, 1), P(0, 0);",
    )
    .unwrap();
    for case in 0..cases {
        let sql = if case % 2 == 0 {
            let n = 1 + rng.next() % 14;
            (0..n).map(|_| rng.pick(TOKENS)).collect::<Vec<_>>().join(" ")
        } else {
            // A valid statement with one token replaced, dropped or repeated.
            let base: Vec<&str> = rng.pick(VALID).split(' ').collect();
            let at = (rng.next() % base.len() as u64) as usize;
            let mut words = base.clone();
            match rng.next() % 3 {
                0 => words[at] = rng.pick(TOKENS),
                1 => {
                    words.remove(at);
                }
                _ => words.insert(at, base[at]),
            }
            words.join(" ")
        };
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| conn.execute_batch(&sql)));
        assert!(result.is_ok(), "seed {seed}, case {case}: panicked on: {sql}");
        if !conn.is_autocommit() {
            let _ = conn.execute("ROLLBACK", ());
        }
    }
}
