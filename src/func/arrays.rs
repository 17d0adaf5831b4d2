//! Arrays as PostgreSQL writes them (`{a,"b c",NULL}`; its vectors, `int2vector` and
//! `oidvector`, as `1 2`), which is how ecsql holds one: a TEXT. `string_to_array`,
//! `parse_ident`, `current_schemas` make them; `array_to_string`, `array_contains` (what
//! `x = ANY (a)` is), `array_position`, `array_element` (what `a[i]` is), `array_upper`,
//! `array_lower`, `array_length` and `cardinality` read them.
//!
//! Invariants: an array is read element by element as it is scanned, never gathered
//! into a list, so reading one costs no memory beyond its result; an array made is
//! measured as it grows and refused past `MAX_TEXT`; `array_contains` compares each
//! element as the value's own type (`1.0 = ANY ('{1}')`), with SQL's three values (no
//! match but a NULL: NULL), and reads a constant array once per batch, not once per row.

use std::borrow::Cow;

use super::pg::{Pg, failing, int, str_of, text};
use super::rows::row_wise;
use super::{Call, Mismatch, Nulls, Properties, ScalarFunction, Signature, arity};
use crate::storage::Value;
use crate::vector::{Data, DataType, Datum, KernelError, MAX_TEXT, Operand, Vector, cast_value};

/// The elements of an array's text, one at a time: `None` for NULL.
struct Elements<'a> {
    rest: std::str::Chars<'a>,
    text: &'a str,
    /// A vector (`1 2`): elements split at spaces, counted from 0.
    vector: bool,
    done: bool,
}

fn malformed(array: &str) -> String {
    let shown: String = array.chars().take(60).collect();
    format!("malformed array literal: \"{shown}\"")
}

impl<'a> Elements<'a> {
    /// The elements of `array`, and the subscript of its first.
    fn of(array: &'a str) -> Result<(Elements<'a>, i64), String> {
        let trimmed = array.trim();
        if let Some(inner) = trimmed.strip_prefix('{') {
            let inner = inner.strip_suffix('}').ok_or_else(|| malformed(array))?;
            let done = inner.trim().is_empty();
            return Ok((
                Elements {
                    rest: inner.chars(),
                    text: array,
                    vector: false,
                    done,
                },
                1,
            ));
        }
        Ok((
            Elements {
                rest: trimmed.chars(),
                text: array,
                vector: true,
                done: trimmed.is_empty(),
            },
            0,
        ))
    }
}

impl<'a> Iterator for Elements<'a> {
    type Item = Result<Option<Cow<'a, str>>, String>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if self.vector {
            let s = self.rest.as_str().trim_start();
            let end = s.find(char::is_whitespace).unwrap_or(s.len());
            let (item, rest) = s.split_at(end);
            self.rest = rest.chars();
            self.done = rest.trim().is_empty();
            return Some(Ok(Some(Cow::Borrowed(item))));
        }
        let s = self.rest.as_str().trim_start();
        if let Some(quoted) = s.strip_prefix('"') {
            let mut item = String::new();
            let mut chars = quoted.chars();
            loop {
                match chars.next() {
                    Some('\\') => match chars.next() {
                        Some(c) => item.push(c),
                        None => return Some(Err(malformed(self.text))),
                    },
                    Some('"') => break,
                    Some(c) => item.push(c),
                    None => return Some(Err(malformed(self.text))),
                }
            }
            let after = chars.as_str().trim_start();
            match after.strip_prefix(',') {
                Some(rest) => self.rest = rest.chars(),
                None if after.is_empty() => self.done = true,
                None => return Some(Err(malformed(self.text))),
            }
            return Some(Ok(Some(Cow::Owned(item))));
        }
        let end = s.find(',').unwrap_or(s.len());
        let item = s[..end].trim();
        match s.get(end + 1..) {
            Some(rest) => self.rest = rest.chars(),
            None => self.done = true,
        }
        if item.is_empty() || item.contains(['"', '{', '}']) {
            return Some(Err(malformed(self.text)));
        }
        Some(Ok(
            (!item.eq_ignore_ascii_case("NULL")).then_some(Cow::Borrowed(item))
        ))
    }
}

/// Appends `items` to `out` as an array's text, each quoted where it must be (empty,
/// `NULL`, or holding a space, a comma, a quote, a backslash or a brace); refused past
/// `MAX_TEXT`.
fn push_array<'s>(out: &mut String, items: impl Iterator<Item = Option<&'s str>>) -> Result<(), String> {
    out.push('{');
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push(',');
        }
        match item {
            None => out.push_str("NULL"),
            Some(s) => {
                let plain = !s.is_empty()
                    && !s.eq_ignore_ascii_case("null")
                    && !s
                        .chars()
                        .any(|c| c.is_whitespace() || matches!(c, ',' | '"' | '\\' | '{' | '}'));
                if plain {
                    out.push_str(s);
                } else {
                    out.push('"');
                    for c in s.chars() {
                        if matches!(c, '"' | '\\') {
                            out.push('\\');
                        }
                        out.push(c);
                    }
                    out.push('"');
                }
            }
        }
        if out.len() > MAX_TEXT {
            return Err(format!("the array would be longer than {MAX_TEXT} bytes"));
        }
    }
    out.push('}');
    Ok(())
}

/// `current_schemas(implicit)`: the search path, as an array: `{public}`, or
/// `{pg_catalog,public}` with the schemas searched without being named.
pub const CURRENT_SCHEMAS: Pg = super::pg::pg(
    &["current_schemas"],
    "B",
    0,
    DataType::Text,
    Nulls::FromArguments,
    |row| {
        text(if row[0] == Value::Bool(true) {
            "{pg_catalog,public}"
        } else {
            "{public}"
        })
    },
);

/// `string_to_array(s, delimiter [, null_text])`: `s` cut at each `delimiter` (into
/// characters for an empty one; NULL: not cut), the pieces equal to `null_text` NULL.
pub const STRING_TO_ARRAY: Pg = failing(
    &["string_to_array"],
    "TTT",
    1,
    DataType::Text,
    Nulls::Sometimes,
    |row| {
        if row[0] == Value::Null {
            return Ok(Value::Null);
        }
        let s = str_of(&row[0]);
        let null = match row.get(2) {
            Some(Value::Text(t)) => Some(t.as_str()),
            _ => None,
        };
        let keep = |p: &str| -> Option<String> { (Some(p) != null).then(|| p.to_owned()) };
        let mut out = String::new();
        if s.is_empty() {
            out.push_str("{}");
        } else {
            match &row[1] {
                Value::Text(d) if d.is_empty() => {
                    let pieces = s.char_indices().map(|(i, c)| &s[i..i + c.len_utf8()]);
                    push_array(&mut out, pieces.map(|p| (Some(p) != null).then_some(p)))?
                }
                Value::Text(d) => push_array(
                    &mut out,
                    s.split(d.as_str()).map(|p| (Some(p) != null).then_some(p)),
                )?,
                _ => {
                    let whole = keep(s);
                    push_array(&mut out, std::iter::once(whole.as_deref()))?
                }
            }
        }
        text(out)
    },
);

/// `parse_ident(name)`: a name written with its qualifiers (`public."Unit"`) as the array
/// of its parts, unquoted (folded to lower case where written without quotes).
pub const PARSE_IDENT: Pg = failing(
    &["parse_ident"],
    "TB",
    1,
    DataType::Text,
    Nulls::FromArguments,
    |row| {
        let s = str_of(&row[0]);
        let invalid = || {
            format!(
                "string is not a valid identifier: \"{}\"",
                s.chars().take(60).collect::<String>()
            )
        };
        let mut parts = Vec::new();
        let mut chars = s.chars().peekable();
        loop {
            while chars.peek().is_some_and(|c| c.is_whitespace()) {
                chars.next();
            }
            let mut part = String::new();
            if chars.peek() == Some(&'"') {
                chars.next();
                loop {
                    match chars.next() {
                        Some('"') if chars.peek() == Some(&'"') => {
                            chars.next();
                            part.push('"');
                        }
                        Some('"') => break,
                        Some(c) => part.push(c),
                        None => return Err(invalid()),
                    }
                }
            } else {
                while let Some(&c) = chars.peek() {
                    if c == '.' || c.is_whitespace() {
                        break;
                    }
                    part.extend(c.to_lowercase());
                    chars.next();
                }
                if part.is_empty() {
                    return Err(invalid());
                }
            }
            parts.push(part);
            while chars.peek().is_some_and(|c| c.is_whitespace()) {
                chars.next();
            }
            match chars.next() {
                None => break,
                Some('.') => {}
                Some(_) => return Err(invalid()),
            }
        }
        let mut out = String::new();
        push_array(&mut out, parts.iter().map(|p| Some(p.as_str())))?;
        text(out)
    },
);

/// `array_to_string(array, separator [, null_text])`: the elements joined, NULLs left
/// out unless `null_text`.
pub const ARRAY_TO_STRING: Pg = failing(
    &["array_to_string"],
    "TTT",
    1,
    DataType::Text,
    Nulls::Sometimes,
    |row| {
        if row[0] == Value::Null || row[1] == Value::Null {
            return Ok(Value::Null);
        }
        let null = match row.get(2) {
            Some(Value::Text(t)) => Some(t.as_str()),
            _ => None,
        };
        let separator = str_of(&row[1]);
        let (elements, _) = Elements::of(str_of(&row[0]))?;
        let mut out = String::new();
        let mut first = true;
        for e in elements {
            let Some(piece) = e?.or(null.map(Cow::Borrowed)) else {
                continue;
            };
            if !first {
                out.push_str(separator);
            }
            first = false;
            out.push_str(&piece);
            if out.len() > MAX_TEXT {
                return Err(format!("the text would be longer than {MAX_TEXT} bytes"));
            }
        }
        text(out)
    },
);

/// A value as an array writes its element.
fn element_text(v: &Value) -> String {
    match v {
        Value::Text(t) => t.clone(),
        Value::Bool(b) => (if *b { "t" } else { "f" }).to_owned(),
        Value::Entity(e) => e.to_bits().to_string(),
        other => other.to_string(),
    }
}

/// `array_position(array, x)`: where `x` first is among the elements (counted as
/// subscripts are; a NULL `x` finds the first NULL), NULL where it is not.
pub const ARRAY_POSITION: Pg = failing(
    &["array_position"],
    "T*",
    0,
    DataType::Int,
    Nulls::Sometimes,
    |row| {
        if row[0] == Value::Null {
            return Ok(Value::Null);
        }
        let (elements, base) = Elements::of(str_of(&row[0]))?;
        let x = (row[1] != Value::Null).then(|| element_text(&row[1]));
        for (i, e) in elements.enumerate() {
            if e?.as_deref() == x.as_deref() {
                return Ok(Value::Int(i as i64 + base));
            }
        }
        Ok(Value::Null)
    },
);

/// `array_element(array, i)`: the element at subscript `i` (from 1, or 0 for a vector),
/// NULL outside; `a[i]` is this call.
pub const ARRAY_ELEMENT: Pg = failing(
    &["array_element"],
    "TI",
    0,
    DataType::Text,
    Nulls::Sometimes,
    |row| {
        if row.contains(&Value::Null) {
            return Ok(Value::Null);
        }
        let (mut elements, base) = Elements::of(str_of(&row[0]))?;
        let Some(at) = int(&row[1])
            .checked_sub(base)
            .and_then(|i| usize::try_from(i).ok())
        else {
            return Ok(Value::Null);
        };
        match elements.nth(at) {
            Some(e) => Ok(e?.map_or(Value::Null, |s| Value::Text(s.into_owned()))),
            None => Ok(Value::Null),
        }
    },
);

/// `array_upper(array, 1)`, `array_lower(array, 1)`, `array_length(array, 1)`: the last
/// and first subscripts and how many elements (NULL for an empty array or another
/// dimension); `cardinality(array)`: how many elements (0 for none).
pub struct ArrayBound {
    names: &'static [&'static str],
    /// Whether it takes the dimension.
    dimension: bool,
    f: fn(usize, i64) -> Value,
}

pub const ARRAY_UPPER: ArrayBound = ArrayBound {
    names: &["array_upper"],
    dimension: true,
    f: |n, base| {
        if n == 0 {
            Value::Null
        } else {
            Value::Int(n as i64 - 1 + base)
        }
    },
};
pub const ARRAY_LOWER: ArrayBound = ArrayBound {
    names: &["array_lower"],
    dimension: true,
    f: |n, base| if n == 0 { Value::Null } else { Value::Int(base) },
};
pub const ARRAY_LENGTH: ArrayBound = ArrayBound {
    names: &["array_length"],
    dimension: true,
    f: |n, _| if n == 0 { Value::Null } else { Value::Int(n as i64) },
};
pub const CARDINALITY: ArrayBound = ArrayBound {
    names: &["cardinality"],
    dimension: false,
    f: |n, _| Value::Int(n as i64),
};

impl ScalarFunction for ArrayBound {
    fn names(&self) -> &'static [&'static str] {
        self.names
    }
    fn signature(&self, name: &str, args: &[Operand]) -> Result<Signature, Mismatch> {
        let n = if self.dimension { 2 } else { 1 };
        arity(name, args, n, n)?;
        super::text(name, args, 0)?;
        if self.dimension {
            super::numeric(name, args, 1)?;
        }
        Ok(Signature::converting(
            [DataType::Text, DataType::Int].into_iter().take(n),
            DataType::Int,
        ))
    }
    fn properties(&self) -> Properties {
        Properties {
            can_fail: true,
            nulls: Nulls::Sometimes,
            ..Properties::TOTAL
        }
    }
    fn invoke(&self, args: Vec<Datum<'_>>, call: &Call<'_>) -> Result<Datum<'static>, KernelError> {
        let f = self.f;
        row_wise(
            &args,
            DataType::Int,
            call.len,
            |row| {
                if row.contains(&Value::Null) || row.get(1).is_some_and(|d| int(d) != 1) {
                    return Ok(Value::Null);
                }
                let (elements, base) = Elements::of(str_of(&row[0]))?;
                let mut n = 0;
                for e in elements {
                    e?;
                    n += 1;
                }
                Ok(f(n, base))
            },
            call.at,
            false,
        )
    }
}

/// `array_contains(array, x)`: whether some element is `x`, compared in `x`'s type (an
/// element that does not read as one is not it); NULL where none is but one is NULL, or
/// `x` is NULL. `x = ANY (array)` is this call, `x <> ALL (array)` its negation.
pub struct ArrayContains;

pub const ARRAY_CONTAINS: ArrayContains = ArrayContains;

/// An array's elements read as `ty`, for comparing with values of it: `None` for those
/// NULL, and whether one was.
fn typed_elements(array: &str, ty: DataType) -> Result<(Vec<Value>, bool), String> {
    let (elements, _) = Elements::of(array)?;
    let mut out = Vec::new();
    let mut null = false;
    for e in elements {
        match e? {
            None => null = true,
            Some(s) => {
                let text = Value::Text(s.into_owned());
                let v = match ty {
                    DataType::Text | DataType::Null => Some(text),
                    DataType::Bool => match str_of(&text).to_ascii_lowercase().as_str() {
                        "t" | "true" | "yes" | "on" | "1" | "y" => Some(Value::Bool(true)),
                        "f" | "false" | "no" | "off" | "0" | "n" => Some(Value::Bool(false)),
                        _ => None,
                    },
                    _ => cast_value(&text, ty).ok(),
                };
                out.extend(v);
            }
        }
    }
    Ok((out, null))
}

/// Whether `x` is among `values` (compared as `=` does: numbers by value).
fn among(values: &[Value], x: &Value) -> bool {
    values.iter().any(|v| match (v, x) {
        (Value::Float(a), Value::Float(b)) => a == b,
        (Value::Real(a), Value::Real(b)) => a == b,
        (a, b) => a == b,
    })
}

impl ScalarFunction for ArrayContains {
    fn names(&self) -> &'static [&'static str] {
        &["array_contains"]
    }
    fn signature(&self, name: &str, args: &[Operand]) -> Result<Signature, Mismatch> {
        arity(name, args, 2, 2)?;
        super::text(name, args, 0)?;
        let ty = match args[1].ty {
            DataType::Entity => DataType::Int,
            t => t,
        };
        Ok(Signature::converting([DataType::Text, ty], DataType::Bool))
    }
    fn properties(&self) -> Properties {
        Properties {
            can_fail: true,
            nulls: Nulls::Sometimes,
            ..Properties::TOTAL
        }
    }
    fn invoke(&self, args: Vec<Datum<'_>>, call: &Call<'_>) -> Result<Datum<'static>, KernelError> {
        let fail = |m: String| KernelError::arithmetic(call.at, m);
        let ty = match args.get(1) {
            Some(Datum::Vector(v)) => v.data_type(),
            Some(Datum::Scalar(v)) => DataType::of(v),
            None => DataType::Null,
        };
        // A constant array (the common case: `x = ANY ('{…}')`) is read once.
        if let (Some(Datum::Scalar(array)), Some(Datum::Vector(x))) = (args.first(), args.get(1)) {
            if *array == Value::Null {
                return Ok(Datum::Scalar(Value::Null));
            }
            let (values, has_null) = typed_elements(str_of(array), ty).map_err(fail)?;
            let mut out = Vec::with_capacity(x.len());
            let mut valid = Vec::with_capacity(x.len());
            for row in 0..x.len() {
                let found = x.is_valid(row) && among(&values, &x.get(row));
                out.push(found);
                valid.push(x.is_valid(row) && (found || !has_null));
            }
            let n = out.len();
            return Ok(Datum::Vector(Vector::new(
                Data::Bool(Cow::Owned(out)),
                Some(Cow::Owned(valid)),
                n,
            )));
        }
        row_wise(
            &args,
            DataType::Bool,
            call.len,
            |row| {
                if row.contains(&Value::Null) {
                    return Ok(Value::Null);
                }
                let (values, has_null) = typed_elements(str_of(&row[0]), ty)?;
                Ok(if among(&values, &row[1]) {
                    Value::Bool(true)
                } else if has_null {
                    Value::Null
                } else {
                    Value::Bool(false)
                })
            },
            call.at,
            false,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(array: &str) -> Result<Vec<Option<String>>, String> {
        let (elements, _) = Elements::of(array)?;
        elements.map(|e| e.map(|o| o.map(Cow::into_owned))).collect()
    }

    #[test]
    fn arrays_read_and_write_as_postgresql_writes_them() {
        assert_eq!(read("{}"), Ok(vec![]));
        assert_eq!(read("1 2"), Ok(vec![Some("1".into()), Some("2".into())]));
        assert!(read("{a").is_err());
        assert!(read("{\"a}").is_err());
        let items = [Some("a"), Some("b c"), None, Some("NULL"), Some("q\""), Some("")];
        let mut written = String::new();
        push_array(&mut written, items.into_iter()).unwrap();
        assert_eq!(written, r#"{a,"b c",NULL,"NULL","q\"",""}"#);
        let back: Vec<Option<String>> = items.iter().map(|i| i.map(str::to_owned)).collect();
        assert_eq!(read(&written), Ok(back));
    }
}
