//! Data in and out of files, as typed columns: the readers (`csv.rs`, `json.rs`) parse a
//! file straight into one typed column per target (`Builder`), never a boxed value per
//! cell, and say at which line and column a value does not fit; the writers format a
//! result's typed columns. This floor knows values, types and vectors, and nothing of
//! statements or the world: `COPY` (in `exec/copy.rs`) names the file and the targets.
//!
//! How values are written, so that every one reads back as itself: NULL is an empty
//! unquoted CSV field (JSON null); text is quoted in CSV when it is empty or holds the
//! delimiter, a quote, a line break or edge spaces; floats in their shortest exact form
//! (`1.0`, `-0.0`, `1e300`, `NaN`, `inf`; JSON writes the non-finite ones as the strings
//! `"NaN"`, `"inf"`, `"-inf"`); ids as their 64-bit number.

#[cfg(feature = "arrow")]
pub mod arrow;
pub mod csv;
pub mod json;
pub mod text;

use crate::storage::{Column, Entity, FieldType, Value};
use crate::vector::{Data, DataType, Vector, float_to_real};
use std::borrow::Cow;

/// A file format COPY reads or writes.
#[derive(Clone, Debug, PartialEq)]
pub enum Format {
    /// Comma-separated values (RFC 4180), with `delimiter` between fields, the first line
    /// the column names when `header` is set.
    Csv { delimiter: char, header: bool },
    /// JSON: one object per line when written; read as that or as one array of objects.
    Json,
    /// Parquet (the `arrow` feature): columns, Snappy-compressed.
    Parquet,
    /// An Arrow IPC file (the `arrow` feature; `.arrow`, Feather version 2).
    Arrow,
    /// PostgreSQL's text format (`text.rs`): `delimiter` (a tab unless told) between
    /// fields, `\N` for NULL, backslash escapes; no header.
    Text { delimiter: char },
}

impl Format {
    /// The format's name, as COPY's FORMAT option says it.
    pub fn name(&self) -> &'static str {
        match self {
            Format::Csv { .. } => "csv",
            Format::Json => "json",
            Format::Parquet => "parquet",
            Format::Arrow => "arrow",
            Format::Text { .. } => "text",
        }
    }

    /// The format a file's name suggests: `.json`, `.jsonl` and `.ndjson` are JSON;
    /// anything else CSV (comma, header).
    pub fn of_file(path: &str) -> Format {
        let lower = path.to_ascii_lowercase();
        if [".json", ".jsonl", ".ndjson"].iter().any(|e| lower.ends_with(e)) {
            Format::Json
        } else if lower.ends_with(".parquet") {
            Format::Parquet
        } else if [".arrow", ".arrows", ".ipc", ".feather"]
            .iter()
            .any(|e| lower.ends_with(e))
        {
            Format::Arrow
        } else {
            Format::Csv {
                delimiter: ',',
                header: true,
            }
        }
    }
}

/// A value that does not fit, or a file that is not well formed: where (line, 1-based;
/// the column's name or number when it is about one) and what was expected.
#[derive(Clone, Debug, PartialEq)]
pub struct DataError {
    pub line: u64,
    pub column: Option<String>,
    pub message: String,
}

impl DataError {
    pub fn new(line: u64, column: Option<String>, message: impl Into<String>) -> DataError {
        DataError {
            line,
            column,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for DataError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.column {
            Some(c) => write!(f, "line {}, column {c}: {}", self.line, self.message),
            None => write!(f, "line {}: {}", self.line, self.message),
        }
    }
}

/// A whole file's bytes as text: UTF-8 (an initial byte order mark skipped), or an error
/// naming the line and byte of the first that is not.
pub fn text_of(bytes: &[u8]) -> Result<&str, DataError> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let good = &bytes[..e.valid_up_to()];
        let line = 1 + good.iter().filter(|&&b| b == b'\n').count() as u64;
        let column = good.iter().rev().take_while(|&&b| b != b'\n').count() + 1;
        DataError::new(
            line,
            None,
            format!("byte {column} of the line is not UTF-8 (the file must be UTF-8 text)"),
        )
    })?;
    Ok(text.strip_prefix('\u{feff}').unwrap_or(text))
}

/// A typed column being filled from a file, value by value.
pub struct Builder {
    ty: DataType,
    data: Column,
}

/// One value as a file gives it: text (CSV, or a JSON string), a JSON number as written,
/// a boolean, or NULL.
#[derive(Clone, Copy, Debug)]
pub enum Given<'a> {
    Text(&'a str),
    Number(&'a str),
    Bool(bool),
    Null,
}

impl Builder {
    /// An empty column of `ty` (a field's type: not NULL).
    pub fn new(ty: DataType, capacity: usize) -> Builder {
        let data = Column::with_capacity(ty.field_type().unwrap_or(FieldType::Text), capacity);
        Builder { ty, data }
    }

    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Adds `value`, converted to the column's type; the message says what was expected
    /// when it does not convert.
    pub fn push(&mut self, value: Given<'_>) -> Result<(), String> {
        let ty = self.ty;
        let wrong = |found: &str| format!("expected {ty}, found {found}");
        match (&mut self.data, value) {
            (Column::Entity(v), Given::Null) => v.push(None),
            (Column::Entity(v), Given::Text("")) => v.push(None),
            (_, Given::Null) => {
                return Err(format!(
                    "expected {ty}, found NULL (only ENTITY fields hold NULL; leave the column out for the field's default)"
                ));
            }
            (Column::Text(v), Given::Text(s)) => v.push(s.to_owned()),
            (Column::Text(_), Given::Number(n)) => {
                return Err(wrong(&format!("the number {n} (quote text)")));
            }
            (Column::Int(v), Given::Text(s) | Given::Number(s)) => {
                v.push(int(s).ok_or_else(|| wrong(&quoted(s)))?)
            }
            (Column::Float(v), Given::Text(s) | Given::Number(s)) => {
                v.push(float(s).ok_or_else(|| wrong(&quoted(s)))?);
            }
            (Column::Real(v), Given::Text(s) | Given::Number(s)) => {
                // Parsed as f32 itself: rounding through f64 first could land on the other
                // side of a midpoint.
                let x = float(s).ok_or_else(|| wrong(&quoted(s)))?;
                float_to_real(x).ok_or_else(|| format!("{s} is beyond REAL's range (about ±3.4e38)"))?;
                v.push(s.parse::<f32>().map_err(|_| wrong(&quoted(s)))?);
            }
            (Column::Bool(v), Given::Bool(b)) => v.push(b),
            (Column::Bool(v), Given::Text(s)) => v.push(boolean(s).ok_or_else(|| wrong(&quoted(s)))?),
            // An id is its 64-bit number; a number that is 0 or negative names no entity
            // and is NULL, as an INSERT of it is.
            (Column::Entity(v), Given::Text(s) | Given::Number(s)) => match s.parse::<u64>() {
                Ok(bits) => v.push(Entity::from_bits(bits)),
                Err(_) if s.parse::<i64>().is_ok_and(|i| i < 0) => v.push(None),
                Err(_) => return Err(wrong(&format!("{} (an id is a 64-bit number)", quoted(s)))),
            },
            (_, Given::Bool(b)) => return Err(wrong(&b.to_string())),
            (Column::Bool(_), Given::Number(n)) => return Err(wrong(&format!("the number {n}"))),
        }
        Ok(())
    }

    /// Adds `value` as it is (a field's default: already of the column's type); `Err`
    /// gives back a value of another type.
    pub fn push_value(&mut self, value: &Value) -> Result<(), Value> {
        self.data.push(value.clone())
    }

    pub fn finish(self) -> Vector<'static> {
        let len = self.len();
        let data = match self.data {
            Column::Int(v) => Data::Int(Cow::Owned(v)),
            Column::Float(v) => Data::Float(Cow::Owned(v)),
            Column::Real(v) => Data::Real(Cow::Owned(v)),
            Column::Bool(v) => Data::Bool(Cow::Owned(v)),
            Column::Text(v) => Data::Text(Cow::Owned(v)),
            Column::Entity(v) => Data::Entity(Cow::Owned(v)),
        };
        Vector::from_data(data, len)
    }
}

fn quoted(s: &str) -> String {
    let shown: String = s.chars().take(40).collect();
    let more = if shown.len() < s.len() { "…" } else { "" };
    format!("'{shown}{more}'")
}

/// An INT: an integer, or a number with a zero fraction (`3.0`, `1e3`) within range.
fn int(s: &str) -> Option<i64> {
    if let Ok(i) = s.parse::<i64>() {
        return Some(i);
    }
    let x = s.parse::<f64>().ok()?;
    (x.fract() == 0.0 && (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&x))
        .then_some(x as i64)
}

/// A FLOAT: a decimal number, `NaN`, `inf`, `-inf` or `infinity` in any case.
fn float(s: &str) -> Option<f64> {
    if s.is_empty() || s.starts_with(char::is_whitespace) || s.ends_with(char::is_whitespace) {
        return None;
    }
    s.parse::<f64>().ok()
}

/// A boolean as a file writes one: `true`/`false`, `1`/`0`, and PostgreSQL's other words
/// (`t`/`f`, as its text format and psycopg write them; `yes`/`no`, `on`/`off`).
fn boolean(s: &str) -> Option<bool> {
    let word = |w: &[&str]| w.iter().any(|w| s.eq_ignore_ascii_case(w));
    if word(&["true", "1", "t", "yes", "y", "on"]) {
        Some(true)
    } else if word(&["false", "0", "f", "no", "n", "off"]) {
        Some(false)
    } else {
        None
    }
}

/// How much text a writer gathers before it hands it on.
const FLUSH_BYTES: usize = 1 << 16;

/// Hands `out` to `flush` and empties it once it holds `FLUSH_BYTES`.
fn flush_full(out: &mut String, flush: &mut impl FnMut(&str) -> std::io::Result<()>) -> std::io::Result<()> {
    if out.len() >= FLUSH_BYTES {
        flush(out)?;
        out.clear();
    }
    Ok(())
}

/// Appends row `row` of `v` as text (for CSV and for JSON's numbers), or nothing for NULL;
/// false when it is NULL. Floats in their shortest form that reads back as the same bits
/// (`NaN`, `inf`, `-inf` when not finite).
pub fn write_value(out: &mut String, v: &Vector<'_>, row: usize) -> bool {
    if !v.is_valid(row) {
        return false;
    }
    match &v.data {
        Data::Null => return false,
        Data::Int(x) => out.push_str(itoa::Buffer::new().format(x[row])),
        Data::Float(x) => out.push_str(ryu::Buffer::new().format(x[row])),
        Data::Real(x) => out.push_str(ryu::Buffer::new().format(x[row])),
        Data::Bool(x) => out.push_str(if x[row] { "true" } else { "false" }),
        Data::Text(x) => out.push_str(&x[row]),
        Data::Entity(x) => match x[row] {
            Some(e) => out.push_str(itoa::Buffer::new().format(e.to_bits())),
            None => return false,
        },
    }
    true
}
