//! Runs every sqllogictest file under `tests/slt/` (one folder per feature) against a
//! fresh in-memory database each, through the public `Connection` API; then all of them
//! again with `PRAGMA parameterize = always`, so that every statement whose constants can
//! be lifted into parameters runs lifted from its first text on, and must give what it
//! gives as written.
//!
//! `ECSQL_SLT=name` runs only the files whose path contains `name`.

use std::path::{Path, PathBuf};

use ecsql::{Connection, DataType, Database, Value};
use sqllogictest::{DBOutput, DefaultColumnType};

struct Ecsql {
    // Keeps the database alive for the connection's lifetime.
    _db: Database,
    conn: Connection,
}

/// Values as the test files write them: NULL, integers, floats in their shortest form,
/// `true`/`false`, `(empty)` for an empty string.
fn cell(v: &Value) -> String {
    match v {
        Value::Null => "NULL".into(),
        Value::Int(i) => i.to_string(),
        Value::Float(x) => ecsql::script::format_float(*x),
        Value::Real(x) => {
            if x.is_finite() && x.fract() == 0.0 && x.abs() < 1e7 {
                format!("{}", *x as i64)
            } else {
                format!("{x}")
            }
        }
        Value::Bool(b) => b.to_string(),
        Value::Text(s) if s.is_empty() => "(empty)".into(),
        Value::Text(s) => s.clone(),
        Value::Entity(e) => e.to_string(),
    }
}

fn column_type(ty: DataType) -> DefaultColumnType {
    match ty {
        DataType::Int | DataType::Entity => DefaultColumnType::Integer,
        DataType::Float | DataType::Real => DefaultColumnType::FloatingPoint,
        // BOOL prints as true/false: the files mark it T.
        DataType::Text | DataType::Bool => DefaultColumnType::Text,
        DataType::Null => DefaultColumnType::Any,
    }
}

impl sqllogictest::DB for Ecsql {
    type Error = ecsql::Error;
    type ColumnType = DefaultColumnType;

    fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, ecsql::Error> {
        let mut output = None;
        let mut failure = None;
        self.conn.run_script(sql, |result| {
            match result {
                Ok(r) => output = Some(r),
                Err(e) => failure = Some(e),
            }
            true
        })?;
        if let Some(e) = failure {
            return Err(e);
        }
        let Some(result) = output else {
            return Ok(DBOutput::StatementComplete(0));
        };
        match result.rows {
            Some(rows) if !result.columns.is_empty() => {
                let types = result.columns.iter().map(|c| column_type(c.ty)).collect();
                let mut out = Vec::new();
                for row in rows {
                    out.push(row?.values().iter().map(cell).collect());
                }
                Ok(DBOutput::Rows { types, rows: out })
            }
            _ => Ok(DBOutput::StatementComplete(result.affected as u64)),
        }
    }

    fn engine_name(&self) -> &str {
        "ecsql"
    }
}

fn slt_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            slt_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "slt") {
            out.push(path);
        }
    }
}

#[test]
fn sqllogictest_files() {
    run_files(None);
}

#[test]
fn sqllogictest_files_with_constants_lifted() {
    run_files(Some("PRAGMA parameterize = always"));
}

/// Runs every file, each on a new connection that first runs `setup`.
fn run_files(setup: Option<&'static str>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/slt");
    let mut files = Vec::new();
    slt_files(&root, &mut files);
    let only = std::env::var("ECSQL_SLT").ok();
    files.retain(|f| {
        only.as_ref()
            .is_none_or(|o| f.to_string_lossy().contains(o.as_str()))
    });
    assert!(!files.is_empty(), "no .slt files under {}", root.display());
    let mut failures = Vec::new();
    for file in &files {
        let mut runner = sqllogictest::Runner::new(move || async move {
            let db = Database::open_in_memory();
            let conn = db.connect();
            if let Some(setup) = setup {
                conn.execute(setup, ())?;
            }
            Ok(Ecsql { _db: db, conn })
        });
        runner.with_column_validator(sqllogictest::strict_column_validator);
        if let Err(e) = runner.run_file(file) {
            failures.push(format!("{}\n{}", file.display(), e.display(false)));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} files failed:\n\n{}",
        failures.len(),
        files.len(),
        failures.join("\n\n")
    );
}
