//! SQLite's sqllogictest format, the classic one its corpus is written in: records
//! separated by blank lines, `skipif`/`onlyif` lines before a record, `hash-threshold` and
//! `halt` on their own. Results are one value per line, or `N values hashing to MD5`.
//!
//! Values print as SQLite's own driver prints them: `I` as a 64-bit integer, `R` with three
//! decimals, `T` as text with `(empty)` for '' and `@` for a character outside printable
//! ASCII; NULL is `NULL` in any column.

use md5::{Digest, Md5};

use crate::cells::Cell;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sort {
    None,
    Rows,
    Values,
}

#[derive(Debug)]
pub enum Expected {
    Values(Vec<String>),
    Hash { count: usize, md5: String },
}

#[derive(Debug)]
pub enum Kind {
    Statement {
        ok: bool,
    },
    /// `query error <message>`: the query must fail.
    QueryError {
        message: String,
    },
    Query {
        types: Vec<u8>,
        sort: Sort,
        expected: Expected,
    },
    Halt,
}

#[derive(Debug)]
pub struct Record {
    /// The 1-based line of the record's first line (its conditions included).
    pub line: usize,
    pub sql: String,
    pub kind: Kind,
    /// `onlyif E` where E is another engine, or `skipif ecsql`.
    pub skipped: bool,
}

/// Parses a whole file. A line the format does not know is an error naming it.
pub fn parse(text: &str) -> Result<Vec<Record>, String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut records = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim_end();
        if line.is_empty() || line.starts_with('#') {
            i += 1;
            continue;
        }
        let start = i + 1;
        let mut skipped = false;
        let mut words: Vec<&str> = line.split_whitespace().collect();
        while matches!(words[0], "skipif" | "onlyif") {
            let engine = words.get(1).copied().unwrap_or("");
            skipped |= match words[0] {
                "skipif" => engine == "ecsql",
                _ => engine != "ecsql",
            };
            i += 1;
            words = lines
                .get(i)
                .map(|l| l.split_whitespace().collect())
                .unwrap_or_default();
            if words.is_empty() {
                return Err(format!("line {start}: a condition with no record after it"));
            }
        }
        i += 1;
        match words[0] {
            "hash-threshold" => continue,
            "halt" => {
                records.push(Record {
                    line: start,
                    sql: String::new(),
                    kind: Kind::Halt,
                    skipped,
                });
                continue;
            }
            "statement" | "query" => {}
            other => return Err(format!("line {}: unknown record `{other}`", i)),
        }
        let mut sql = Vec::new();
        while i < lines.len() && !lines[i].trim().is_empty() && lines[i].trim_end() != "----" {
            sql.push(lines[i]);
            i += 1;
        }
        let sql = sql.join("\n");
        let kind = if words[0] == "statement" {
            Kind::Statement {
                ok: words.get(1) == Some(&"ok"),
            }
        } else if words.get(1) == Some(&"error") {
            // Output after `----` belongs to no engine that errs: skip it.
            if i < lines.len() && lines[i].trim_end() == "----" {
                i += 1;
                while i < lines.len() && !lines[i].trim().is_empty() {
                    i += 1;
                }
            }
            Kind::QueryError {
                message: words[2..].join(" "),
            }
        } else {
            let types = words.get(1).unwrap_or(&"").as_bytes().to_vec();
            let sort = match words.get(2).copied() {
                Some("rowsort") => Sort::Rows,
                Some("valuesort") => Sort::Values,
                _ => Sort::None,
            };
            let mut values = Vec::new();
            if i < lines.len() && lines[i].trim_end() == "----" {
                i += 1;
                while i < lines.len() && !lines[i].trim().is_empty() {
                    values.push(lines[i].trim_end().to_string());
                    i += 1;
                }
            }
            let expected = match values.as_slice() {
                [one] if one.contains(" values hashing to ") => {
                    let mut parts = one.split(" values hashing to ");
                    let count = parts.next().and_then(|c| c.trim().parse().ok());
                    let md5 = parts.next().unwrap_or("").trim().to_string();
                    match count {
                        Some(count) => Expected::Hash { count, md5 },
                        None => return Err(format!("line {}: bad hash line `{one}`", i)),
                    }
                }
                _ => Expected::Values(values),
            };
            Kind::Query {
                types,
                sort,
                expected,
            }
        };
        records.push(Record {
            line: start,
            sql,
            kind,
            skipped,
        });
    }
    Ok(records)
}

/// The value as SQLite's driver prints it under the column's type letter.
pub fn format(cell: &Cell, ty: u8) -> String {
    match (cell, ty) {
        (Cell::Null, _) => "NULL".into(),
        (Cell::Int(i), b'R') => format!("{:.3}", *i as f64),
        (Cell::Int(i), _) => i.to_string(),
        // sqlite3_column_int64 truncates toward zero and saturates.
        (Cell::Float(x) | Cell::Real(x), b'I') => (*x as i64).to_string(),
        (Cell::Float(x) | Cell::Real(x), b'R') => format!("{x:.3}"),
        (Cell::Float(x) | Cell::Real(x), _) => sqlite_float_text(*x),
        (Cell::Text(s), b'I') => leading_int(s).to_string(),
        (Cell::Text(s), b'R') => format!("{:.3}", leading_float(s)),
        (Cell::Text(s), _) if s.is_empty() => "(empty)".into(),
        (Cell::Text(s), _) => s
            .chars()
            .map(|c| if (' '..='~').contains(&c) { c } else { '@' })
            .collect(),
    }
}

/// SQLite's text for a double (`%!.15g`): `1.0`, `0.1`, `1.0e+20`.
fn sqlite_float_text(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.1}")
    } else {
        let s = format!("{x}");
        if s.contains('.') || s.contains('e') {
            s
        } else {
            format!("{s}.0")
        }
    }
}

fn leading_int(s: &str) -> i64 {
    let t = s.trim_start();
    let end = t
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || (i == 0 && (c == '-' || c == '+'))))
        .map_or(t.len(), |(i, _)| i);
    t[..end].parse().unwrap_or(0)
}

fn leading_float(s: &str) -> f64 {
    let t = s.trim_start();
    (1..=t.len())
        .rev()
        .find_map(|n| t.get(..n).and_then(|p| p.parse().ok()))
        .unwrap_or(0.0)
}

/// Formats rows under the type letters and sorts them as the record says; the flat list
/// of values is what the file lists or hashes.
pub fn values(rows: &[Vec<Cell>], types: &[u8], sort: Sort) -> Vec<String> {
    let mut rows: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            row.iter()
                .enumerate()
                .map(|(i, c)| format(c, types.get(i).copied().unwrap_or(b'T')))
                .collect()
        })
        .collect();
    if sort == Sort::Rows {
        rows.sort();
    }
    let mut flat: Vec<String> = rows.into_iter().flatten().collect();
    if sort == Sort::Values {
        flat.sort();
    }
    flat
}

/// Whether `got` is what the record expects; the hash is md5 over each value and a newline.
pub fn matches(expected: &Expected, got: &[String]) -> bool {
    match expected {
        Expected::Values(v) => v.as_slice() == got,
        Expected::Hash { count, md5 } => *count == got.len() && hash(got) == *md5,
    }
}

pub fn hash(values: &[String]) -> String {
    let mut h = Md5::new();
    for v in values {
        h.update(v.as_bytes());
        h.update(b"\n");
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}
