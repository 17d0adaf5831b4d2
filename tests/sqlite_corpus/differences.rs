//! Why a corpus record may fail without ecsql being wrong: each documented difference from
//! SQLite (docs/language.md, "Differences from SQLite and PostgreSQL") and each feature
//! ecsql does not have yet, with the test that recognises it. This is the one place the
//! runner excuses a failure; anything it does not recognise is unexplained and fails the
//! suite. Each rule is as narrow as its error allows: a GROUP BY error is excused only
//! when the column really is outside GROUP BY, a missing table only when a subquery names
//! an outer one.

/// How a record failed.
pub enum Failure {
    /// The statement could not be said in ecsql.
    Untranslated(&'static str),
    /// ecsql refused what SQLite ran.
    Error(String),
    /// ecsql ran what the record expects to fail (with the record's message, if any).
    Accepted(String),
    /// Both ran and the results differ.
    Differs,
}

/// The documented difference that explains the failure, if any.
/// `text_columns`: whether the file's tables have any TEXT column.
pub fn explain(sql: &str, failure: &Failure, text_columns: bool) -> Option<&'static str> {
    match failure {
        // Only features ecsql lacks by design or for now; a statement the translator cannot
        // parse or place is the runner's gap, and unexplained.
        Failure::Untranslated(reason) => DOCUMENTED_GAPS.contains(reason).then_some(*reason),
        Failure::Error(message) => error(sql, message, text_columns),
        // Records that expect PostgreSQL's 32-bit integer overflow: ecsql's INT is 64-bit,
        // as SQLite's is.
        Failure::Accepted(expected) if expected.contains("overflow") => {
            Some("INT is 64-bit (the record expects a 32-bit overflow)")
        }
        Failure::Accepted(_) | Failure::Differs => None,
    }
}

/// The translator's reasons that name something docs/language.md lists as missing.
const DOCUMENTED_GAPS: &[&str] = &[
    "views",
    "triggers",
    "INSERT OR REPLACE and REPLACE (no keys in ecsql)",
    "NATURAL joins and USING",
    "RIGHT, FULL and other joins",
];

/// The SQL with its string literals removed, upper-cased: what operators it writes.
fn outside_strings(sql: &str) -> String {
    let mut out = String::new();
    let mut quoted = false;
    for c in sql.chars() {
        if c == '\'' {
            quoted = !quoted;
        } else if !quoted {
            out.extend(c.to_uppercase());
        }
    }
    out
}

/// Errors that are ecsql's documented choices.
fn error(sql: &str, message: &str, text_columns: bool) -> Option<&'static str> {
    let upper = outside_strings(sql);
    let has = |needle: &str| message.contains(needle);
    let text_involved = text_columns || sql.contains('\'');
    if has("division by zero") && (upper.contains('/') || upper.contains('%')) {
        Some("division by zero is an error (SQLite: NULL)")
    } else if has("integer out of range") || has("overflow") {
        Some("integer overflow is an error (SQLite: a float)")
    } else if has("cannot be NULL (only ENTITY fields may be)") {
        Some("only ENTITY fields hold NULL")
    } else if (has("cannot apply + to TEXT")
        || has("cannot apply - to TEXT")
        || has("cannot compare TEXT with"))
        && text_involved
    {
        Some("text and numbers never convert implicitly")
    } else if has("must appear in GROUP BY") && !grouped(&upper, message) {
        Some("a column outside GROUP BY and aggregates is an error (SQLite: any row's value)")
    } else if has("is assigned twice") {
        Some("a field assigned twice in one UPDATE is an error (as in PostgreSQL)")
    } else if has("the literal X'") {
        Some("no BLOB type")
    } else if has("expected an expression, found )") && upper.replace(' ', "").contains("IN()") {
        Some("an empty IN list is a syntax error (as in PostgreSQL)")
    } else {
        None
    }
}

/// Whether the column the GROUP BY error names (`cor0.col1`) appears in the query's
/// GROUP BY clause, as written or bare (`col1`): if it does, the error is a bug, not the
/// documented rule.
fn grouped(upper_sql: &str, message: &str) -> bool {
    let Some(qualified) = message.split_whitespace().next() else {
        return false;
    };
    let qualified = qualified.to_uppercase();
    let bare = qualified.rsplit('.').next().unwrap_or(&qualified).to_string();
    let Some(start) = upper_sql.find("GROUP BY") else {
        return false;
    };
    let clause = &upper_sql[start + "GROUP BY".len()..];
    let end = ["HAVING", "ORDER BY", "LIMIT", "UNION", "EXCEPT", "INTERSECT", ")"]
        .iter()
        .filter_map(|k| clause.find(k))
        .min()
        .unwrap_or(clause.len());
    clause[..end]
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
        .any(|word| word == qualified || word == bare)
}
