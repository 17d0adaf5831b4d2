//! JSON answers of the HTTP side, written straight from a result's typed columns (no
//! value boxed per cell), and the parameters of a request read from JSON.
//!
//! Invariants:
//! - A value is written as JSON reads it back exactly: INT and ENTITY as numbers while
//!   JavaScript's doubles hold them (|n| < 2^53), else as strings of their digits; FLOAT
//!   and REAL as the shortest numbers that read back the same (NaN and the infinities,
//!   which JSON has no numbers for, as the strings `"NaN"`, `"inf"`, `"-inf"`); BOOL as
//!   true/false; TEXT as strings; NULL as null.
//! - Every string is escaped (quotes, backslashes, control characters), so no text of
//!   the database can end a member or an event early.

use crate::exec::Chunk;
use crate::plan::ParamValues;
use crate::storage::Value;
use crate::transfer::json::push_string;
use crate::vector::{Data, Vector};

/// The largest integer JavaScript's numbers hold exactly, plus one.
const EXACT: i64 = 1 << 53;

/// Appends an integer: a number while a double holds it exactly, else a string.
pub(super) fn push_int(out: &mut String, n: i64) {
    let mut buffer = itoa::Buffer::new();
    let digits = buffer.format(n);
    if n.unsigned_abs() < EXACT as u64 {
        out.push_str(digits);
    } else {
        out.push('"');
        out.push_str(digits);
        out.push('"');
    }
}

fn push_float(out: &mut String, x: f64, text: &str) {
    if x.is_finite() {
        out.push_str(text);
    } else if x.is_nan() {
        out.push_str("\"NaN\"");
    } else if x > 0.0 {
        out.push_str("\"inf\"");
    } else {
        out.push_str("\"-inf\"");
    }
}

/// Appends the value of row `row` of `column`.
pub(super) fn push_cell(out: &mut String, column: &Vector<'_>, row: usize) {
    if !column.is_valid(row) {
        out.push_str("null");
        return;
    }
    match &column.data {
        Data::Null => out.push_str("null"),
        Data::Int(x) => push_int(out, x[row]),
        Data::Float(x) => push_float(out, x[row], ryu::Buffer::new().format(x[row])),
        Data::Real(x) => push_float(out, f64::from(x[row]), ryu::Buffer::new().format(x[row])),
        Data::Bool(x) => out.push_str(if x[row] { "true" } else { "false" }),
        Data::Text(x) => push_string(out, &x[row]),
        Data::Entity(x) => match x[row] {
            Some(e) => push_int(out, i64::try_from(e.to_bits()).unwrap_or(i64::MAX)),
            None => out.push_str("null"),
        },
    }
}

/// Appends one value.
pub(super) fn push_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Int(n) => push_int(out, *n),
        Value::Float(x) => push_float(out, *x, ryu::Buffer::new().format(*x)),
        Value::Real(x) => push_float(out, f64::from(*x), ryu::Buffer::new().format(*x)),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Text(s) => push_string(out, s),
        Value::Entity(e) => push_int(out, i64::try_from(e.to_bits()).unwrap_or(i64::MAX)),
    }
}

/// Appends rows `from..to` of `chunk` as an array of arrays, each row its columns'
/// values in order.
pub(super) fn push_rows(out: &mut String, chunk: &Chunk, from: usize, to: usize) {
    out.push('[');
    for row in from..to {
        if row > from {
            out.push(',');
        }
        out.push('[');
        for (i, column) in chunk.columns.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            push_cell(out, column, row);
        }
        out.push(']');
    }
    out.push(']');
}

/// Appends rows `from..to` of `chunk` as an array of objects, members named `names`.
pub(super) fn push_objects(out: &mut String, names: &[&str], chunk: &Chunk, from: usize, to: usize) {
    out.push('[');
    for row in from..to {
        if row > from {
            out.push(',');
        }
        out.push('{');
        for (i, column) in chunk.columns.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            push_string(out, names.get(i).copied().unwrap_or(""));
            out.push(':');
            push_cell(out, column, row);
        }
        out.push('}');
    }
    out.push(']');
}

/// Appends `[{"name": …, "type": …}, …]`: fields' or columns' names and types.
pub(super) fn push_named_types<N: AsRef<str>, T: std::fmt::Display>(
    out: &mut String,
    named: impl IntoIterator<Item = (N, T)>,
) {
    out.push('[');
    for (i, (name, ty)) in named.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"name\":");
        push_string(out, name.as_ref());
        out.push_str(",\"type\":");
        push_string(out, &ty.to_string());
        out.push('}');
    }
    out.push(']');
}

/// Appends `"key":` (the key escaped).
pub(super) fn push_key(out: &mut String, key: &str) {
    push_string(out, key);
    out.push(':');
}

/// A statement's parameters from a request's `params`: an array for `?`, `?N` and `$N`,
/// an object for `:name` (members named with or without the sigil), or absent. Numbers
/// without a fraction or exponent are INT, others FLOAT; strings TEXT; true/false BOOL;
/// null NULL. Why they cannot be, for any other value.
pub(super) fn params(given: Option<&serde_json::Value>) -> Result<ParamValues, String> {
    let mut values = ParamValues::default();
    match given {
        None | Some(serde_json::Value::Null) => {}
        Some(serde_json::Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                values
                    .positional
                    .push(value(item).map_err(|why| format!("params[{i}]: {why}"))?);
            }
        }
        Some(serde_json::Value::Object(members)) => {
            for (name, item) in members {
                let bare = name.trim_start_matches([':', '$', '@']);
                let v = value(item).map_err(|why| format!("params.{name}: {why}"))?;
                values.named.push((bare.to_owned(), v));
            }
        }
        Some(_) => {
            return Err(
                "params: expected an array (for ?1, ?2, …) or an object (for :name), of numbers, strings, booleans or null"
                    .to_owned(),
            );
        }
    }
    Ok(values)
}

/// One parameter's value.
fn value(item: &serde_json::Value) -> Result<Value, String> {
    Ok(match item {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::String(s) => Value::Text(s.clone()),
        serde_json::Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => Value::Int(i),
            (None, Some(x)) if n.is_f64() => Value::Float(x),
            _ => return Err(format!("{n} does not fit a 64-bit integer")),
        },
        serde_json::Value::Array(_) | serde_json::Value::Object(_) => {
            return Err("expected a number, a string, true, false or null".to_owned());
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_beyond_javascripts_doubles_are_strings() {
        let mut out = String::new();
        push_int(&mut out, (1 << 53) - 1);
        out.push(' ');
        push_int(&mut out, 1 << 53);
        out.push(' ');
        push_int(&mut out, i64::MIN);
        assert_eq!(
            out,
            "9007199254740991 \"9007199254740992\" \"-9223372036854775808\""
        );
    }

    #[test]
    fn floats_that_are_no_numbers_are_strings() {
        let mut out = String::new();
        for x in [1.5, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            push_value(&mut out, &Value::Float(x));
            out.push(' ');
        }
        assert_eq!(out, "1.5 \"NaN\" \"inf\" \"-inf\" ");
    }

    #[test]
    fn params_by_position_and_by_name() {
        let given: serde_json::Value =
            serde_json::from_str(r#"[1, 2.5, "x", true, null, 1e3]"#).expect("json");
        let p = params(Some(&given)).expect("params");
        assert_eq!(
            p.positional,
            [
                Value::Int(1),
                Value::Float(2.5),
                Value::Text("x".into()),
                Value::Bool(true),
                Value::Null,
                Value::Float(1000.0)
            ]
        );
        let given: serde_json::Value = serde_json::from_str(r#"{":who": "a", "n": 3}"#).expect("json");
        let p = params(Some(&given)).expect("params");
        assert!(p.named.contains(&("who".to_owned(), Value::Text("a".into()))));
        assert!(p.named.contains(&("n".to_owned(), Value::Int(3))));
        let nested: serde_json::Value = serde_json::from_str(r#"[[1]]"#).expect("json");
        assert!(params(Some(&nested)).unwrap_err().starts_with("params[0]"));
        let big: serde_json::Value = serde_json::from_str("[18446744073709551615]").expect("json");
        assert!(params(Some(&big)).unwrap_err().contains("64-bit"));
    }
}
