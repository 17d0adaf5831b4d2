//! One result value as the SQLite comparisons see it, from either engine: ecsql's BOOL is
//! SQLite's 0/1 and an id its 64-bit integer; ecsql's REAL (f32) stays apart from FLOAT so
//! that a comparison can allow it f32's precision. Shared by the `database` test binary
//! (`common::cells`) and tests/sqlite_corpus/ (which includes this file by path).

use ecsql::Value;
use rusqlite::types::ValueRef;

#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Null,
    Int(i64),
    Float(f64),
    /// ecsql's REAL, widened.
    Real(f64),
    Text(String),
}

impl Cell {
    pub fn from_ecsql(v: &Value) -> Cell {
        match v {
            Value::Null => Cell::Null,
            Value::Int(i) => Cell::Int(*i),
            Value::Float(x) => Cell::Float(*x),
            Value::Real(x) => Cell::Real(f64::from(*x)),
            Value::Bool(b) => Cell::Int(i64::from(*b)),
            Value::Text(s) => Cell::Text(s.clone()),
            Value::Entity(e) => Cell::Int(e.to_bits() as i64),
        }
    }

    fn from_sqlite(v: ValueRef) -> Cell {
        match v {
            ValueRef::Null => Cell::Null,
            ValueRef::Integer(i) => Cell::Int(i),
            ValueRef::Real(x) => Cell::Float(x),
            ValueRef::Text(t) | ValueRef::Blob(t) => Cell::Text(String::from_utf8_lossy(t).into()),
        }
    }
}

/// Every row SQLite returns for `sql`, or its error.
pub fn sqlite_rows(db: &rusqlite::Connection, sql: &str) -> Result<Vec<Vec<Cell>>, String> {
    let mut stmt = db.prepare(sql).map_err(|e| e.to_string())?;
    let n = stmt.column_count();
    let mut rows = stmt.query([]).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().map_err(|e| e.to_string())? {
        let cells = (0..n)
            .map(|i| row.get_ref(i).map(Cell::from_sqlite).map_err(|e| e.to_string()))
            .collect::<Result<_, _>>()?;
        out.push(cells);
    }
    Ok(out)
}
