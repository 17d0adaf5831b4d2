//! Limits a user can reach with one statement: how deep an expression may be, how many
//! SELECTs a UNION joins, how long a series is. Each case runs in a thread with Rust's
//! default 2 MiB stack, as a program's own threads have, and must end in an answer or an
//! error, never in an abort.

use ecsql::{Database, Error, Value};

/// Runs `sql` on a world with one entity C(x = 1) in a 2 MiB thread; its rows' first
/// values, or the error.
fn run(sql: String) -> Result<Vec<Value>, Error> {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let conn = Database::open_in_memory().connect();
            conn.execute_batch("CREATE COMPONENT C (x INT); SPAWN C(1);")?;
            let mut stmt = conn.prepare(&sql)?;
            let rows = stmt.query(())?;
            rows.map(|r| r.and_then(|r| r.get::<_, Value>(0))).collect()
        })
        .expect("a thread")
        .join()
        .expect("the statement's thread ended without an abort")
}

fn too_deep(result: Result<Vec<Value>, Error>) -> String {
    let e = result.expect_err("the statement is refused");
    let text = e.to_string();
    assert!(
        text.contains("expression too deep: more than 1000 levels"),
        "{text}"
    );
    assert_eq!(e.location().map(|l| (l.line, l.column)), Some((1, 8)), "{text}");
    text
}

#[test]
fn a_chain_of_1000_additions_is_evaluated_within_a_2_mib_stack() {
    let sql = format!("SELECT 1{}", " + 1".repeat(1000));
    assert_eq!(run(sql).unwrap(), [Value::Int(1001)]);
}

#[test]
fn a_where_clause_of_490_ors_filters_within_a_2_mib_stack() {
    let sql = format!("SELECT x FROM C WHERE x = 0{}", " OR x = 1".repeat(490));
    assert_eq!(run(sql).unwrap(), [Value::Int(1)]);
}

#[test]
fn a_chain_past_1000_levels_is_an_error_at_its_start() {
    too_deep(run(format!("SELECT 1{}", " + 1".repeat(1001))));
    // 1,000 ORs over a comparison are 1,001 levels.
    too_deep(run(format!("SELECT x = 0{} FROM C", " OR x = 1".repeat(1000))));
}

#[test]
fn a_chain_of_twenty_thousand_operators_is_refused_not_an_abort() {
    too_deep(run(format!("SELECT 1{}", "+1".repeat(20_000))));
    too_deep(run(format!("SELECT 1{}", " AND true".repeat(20_000))));
}

#[test]
fn a_union_of_500_selects_runs_within_a_2_mib_stack() {
    let sql = format!("SELECT 1{}", " UNION ALL SELECT 1".repeat(499));
    assert_eq!(run(sql).unwrap().len(), 500);
}

#[test]
fn a_union_of_more_than_500_selects_is_refused_at_its_first() {
    for terms in [501, 5_000] {
        let sql = format!("SELECT 1{}", " UNION ALL SELECT 1".repeat(terms - 1));
        let e = run(sql).expect_err("the statement is refused");
        let text = e.to_string();
        assert!(
            text.contains(&format!(
                "too many terms in a compound SELECT: {terms}, at most 500"
            )),
            "{text}"
        );
        assert_eq!(e.location().map(|l| (l.line, l.column)), Some((1, 1)), "{text}");
    }
}

#[test]
fn a_series_too_long_is_refused_where_it_is_written() {
    let e = run("SELECT count(*) FROM range(1, 3000000000) AS r(i)".into())
        .expect_err("the statement is refused");
    let text = e.to_string();
    assert!(
        text.contains("range of 2999999999 rows is too long (at most 2147483648)"),
        "{text}"
    );
    assert_eq!(e.location().map(|l| (l.line, l.column)), Some((1, 22)), "{text}");
}

#[test]
fn a_text_past_a_billion_bytes_is_refused_not_built() {
    let conn = Database::open_in_memory().connect();
    let half = "x".repeat(500_000_001);
    let e = conn
        .query_row("SELECT length(?1 || ?1)", [half.as_str()], |r| r.get::<_, i64>(0))
        .unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("text too long at line 1, column 15: 1000000002 bytes, and a text value may hold at most 1000000000"),
        "{text}"
    );
}

/// Statements nested `n` levels deep by each construct that nests: parentheses, NOT, a
/// prefix minus, calls, scalar subqueries, CASE, subqueries in FROM. With each: the
/// column where its 1001st level begins.
fn nested(n: usize) -> Vec<(&'static str, String, u32)> {
    let k = 1000;
    vec![
        (
            "parentheses",
            format!("SELECT {}1{}", "(".repeat(n), ")".repeat(n)),
            8 + k,
        ),
        (
            "NOT",
            format!("SELECT x FROM C WHERE {}true", "NOT ".repeat(n)),
            23 + 4 * k,
        ),
        ("minus", format!("SELECT {}1", "- ".repeat(n)), 8 + 2 * k),
        (
            "calls",
            format!("SELECT {}1{}", "abs(".repeat(n), ")".repeat(n)),
            11 + 4 * k,
        ),
        (
            "scalar subqueries",
            format!("SELECT {}1{}", "(SELECT ".repeat(n), ")".repeat(n)),
            8 + 8 * k,
        ),
        (
            "CASE",
            format!("SELECT {}1{}", "CASE WHEN true THEN ".repeat(n), " END".repeat(n)),
            8 + 20 * k,
        ),
        (
            "subqueries in FROM",
            format!("SELECT x FROM {}C{}", "(SELECT x FROM ".repeat(n), ")".repeat(n)),
            15 + 15 * k,
        ),
    ]
}

#[test]
fn every_kind_of_nesting_999_and_1000_deep_runs_within_a_2_mib_stack() {
    for n in [999, 1000] {
        let odd = n % 2 == 1;
        for (kind, sql, _) in nested(n) {
            let rows = run(sql).unwrap_or_else(|e| panic!("{kind} × {n}: {e}"));
            let expected: &[Value] = match kind {
                "NOT" if odd => &[],
                "minus" if odd => &[Value::Int(-1)],
                _ => &[Value::Int(1)],
            };
            assert_eq!(rows, expected, "{kind} × {n}");
        }
    }
}

#[test]
fn every_kind_of_nesting_past_1000_levels_is_refused_where_it_passes() {
    for n in [1001, 50_000] {
        for (kind, sql, column) in nested(n) {
            let e = run(sql).expect_err("the statement is refused");
            let text = e.to_string();
            assert!(
                text.contains("expression too deep: more than 1000 levels of parentheses"),
                "{kind} × {n}: {text}"
            );
            assert_eq!(
                e.location().map(|l| (l.line, l.column)),
                Some((1, column)),
                "{kind} × {n}: {text}"
            );
        }
    }
}

#[test]
fn subscripts_and_using_columns_are_bounded_like_any_expression() {
    // A subscript is a level of the tree: 998 of them fit, 100,000 are refused.
    let sql = format!("SELECT ('{{a}}'){}", "[1]".repeat(998));
    assert_eq!(run(sql).unwrap(), [Value::Null]);
    let e = run(format!("SELECT ('{{a}}'){}", "[1]".repeat(100_000)))
        .expect_err("100,000 subscripts are refused")
        .to_string();
    assert!(e.contains("expression too deep: more than 1000 levels"), "{e}");
    // USING's columns become one condition each: at most 100.
    let columns = vec!["x"; 101].join(", ");
    let sql = format!("SELECT count(*) FROM C AS a JOIN C AS b USING ({columns})");
    let e = run(sql).expect_err("101 USING columns are refused").to_string();
    assert!(e.contains("JOIN … USING names 101 columns: at most 100"), "{e}");
    let columns = vec!["x"; 100].join(", ");
    let sql = format!("SELECT count(*) FROM C AS a JOIN C AS b USING ({columns})");
    assert_eq!(run(sql).unwrap(), [Value::Int(1)]);
}
