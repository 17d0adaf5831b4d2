//! PostgreSQL's functions that its clients call on connect and in their catalog queries
//! (psql's `\d`, drivers, GUI tools): `version()`, `current_setting`, `format_type`,
//! `pg_get_userbyid`, … with ecsql's answers (one database, one role, no comments, no
//! privileges withheld), and `regexp_like`, which the operators `~`, `~*`, `!~`, `!~*`
//! are.
//!
//! Invariants: every function here is a plain function of its arguments (the catalog's
//! oids of built-in objects are fixed; ecsql's own objects are looked up through the
//! catalog views, not here); a NULL argument makes a NULL result except where PostgreSQL
//! says otherwise; a regular expression is compiled once per batch for a constant pattern,
//! and one that does not compile is an error naming it.

use std::cell::RefCell;

use regex::{Regex, RegexBuilder};

use super::rows::row_wise;
use super::{Call, Mismatch, Nulls, Properties, ScalarFunction, Signature, arity};
use crate::catalog_views::types;
use crate::storage::Value;
use crate::vector::{DataType, Datum, KernelError, Operand};

/// The argument types a function takes: `T` TEXT, `I` INT, `B` BOOL, `*` any (as it is).
struct Args(&'static str);

/// A function of the values of its arguments.
pub struct Pg {
    names: &'static [&'static str],
    args: Args,
    /// How many of `args` may be left out.
    optional: usize,
    result: DataType,
    nulls: Nulls,
    f: fn(&[Value]) -> Result<Value, String>,
}

impl ScalarFunction for Pg {
    fn names(&self) -> &'static [&'static str] {
        self.names
    }
    fn signature(&self, name: &str, args: &[Operand]) -> Result<Signature, Mismatch> {
        let kinds = self.args.0.as_bytes();
        arity(name, args, kinds.len() - self.optional, kinds.len())?;
        let mut types = Vec::with_capacity(args.len());
        for (i, (a, k)) in args.iter().zip(kinds).enumerate() {
            let want = match k {
                b'T' => DataType::Text,
                b'I' => DataType::Int,
                b'B' => DataType::Bool,
                _ => a.ty,
            };
            let fits =
                a.ty == want || a.ty == DataType::Null || (want == DataType::Int && a.ty == DataType::Entity);
            if !fits {
                return Err(Mismatch::Type {
                    arg: Some(i),
                    message: format!("{name} needs {want} as argument {}, found {}", i + 1, a.ty),
                });
            }
            types.push(want);
        }
        Ok(Signature::converting(types, self.result))
    }
    fn properties(&self) -> Properties {
        Properties {
            can_fail: false,
            nulls: self.nulls,
            ..Properties::TOTAL
        }
    }
    fn invoke(&self, args: Vec<Datum<'_>>, call: &Call<'_>) -> Result<Datum<'static>, KernelError> {
        let f = self.f;
        let strict = self.nulls == Nulls::FromArguments;
        row_wise(
            &args,
            call.ty,
            call.len,
            |row| {
                if strict && row.contains(&Value::Null) {
                    return Ok(Value::Null);
                }
                f(row)
            },
            call.at,
            false,
        )
    }
}

const fn pg(
    names: &'static [&'static str],
    args: &'static str,
    optional: usize,
    result: DataType,
    nulls: Nulls,
    f: fn(&[Value]) -> Result<Value, String>,
) -> Pg {
    Pg {
        names,
        args: Args(args),
        optional,
        result,
        nulls,
        f,
    }
}

fn text(s: impl Into<String>) -> Result<Value, String> {
    Ok(Value::Text(s.into()))
}

fn int(v: &Value) -> i64 {
    match v {
        Value::Int(i) => *i,
        Value::Entity(e) => e.to_bits() as i64,
        _ => 0,
    }
}

fn str_of(v: &Value) -> &str {
    match v {
        Value::Text(s) => s,
        _ => "",
    }
}

/// `version()`.
pub const VERSION: Pg = pg(&["version"], "", 0, DataType::Text, Nulls::Never, |_| {
    text(format!(
        "PostgreSQL 16.0 (ecsql {}) on {}, an entity database speaking PostgreSQL's protocol",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::ARCH
    ))
});

/// `current_setting(name [, missing_ok])`: the server's value of one of PostgreSQL's
/// settings (`SHOW` gives the client's own).
pub const CURRENT_SETTING: Pg = pg(
    &["current_setting"],
    "TB",
    1,
    DataType::Text,
    Nulls::Sometimes,
    |row| {
        let name = str_of(&row[0]);
        match types::setting_named(name) {
            Some(s) => text(s.value),
            None if row.get(1) == Some(&Value::Bool(true)) => Ok(Value::Null),
            None if row[0] == Value::Null => Ok(Value::Null),
            None => Err(format!("unrecognized configuration parameter \"{name}\"")),
        }
    },
);

/// `current_database()`, `current_catalog`.
pub const CURRENT_DATABASE: Pg = pg(
    &["current_database", "current_catalog"],
    "",
    0,
    DataType::Text,
    Nulls::Never,
    |_| text(types::DATABASE_NAME),
);

/// `current_schema()`.
pub const CURRENT_SCHEMA: Pg = pg(&["current_schema"], "", 0, DataType::Text, Nulls::Never, |_| {
    text("public")
});

/// `current_user`, `session_user`, `user`, `current_role`.
pub const CURRENT_USER: Pg = pg(
    &["current_user", "session_user", "current_role", "user"],
    "",
    0,
    DataType::Text,
    Nulls::Never,
    |_| text(types::OWNER_NAME),
);

/// `current_schemas(include_implicit)`: the search path, as an array: `{public}`, or
/// `{pg_catalog,public}` with the schemas searched without being named.
pub const CURRENT_SCHEMAS: Pg = pg(
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

/// An array of these elements as PostgreSQL writes one: each quoted where it must be
/// (empty, `NULL`, or holding a space, a comma, a quote, a backslash or a brace).
fn array_text(items: &[Option<&str>]) -> String {
    let mut out = String::from("{");
    for (i, item) in items.iter().enumerate() {
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
    }
    out.push('}');
    out
}

/// `string_to_array(s, delimiter [, null_text])`: `s` cut at each `delimiter` (into
/// characters for an empty one; NULL: not cut), the pieces equal to `null_text` NULL.
pub const STRING_TO_ARRAY: Pg = pg(
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
        if s.is_empty() {
            return text("{}");
        }
        let pieces: Vec<&str> = match &row[1] {
            Value::Null => vec![s],
            Value::Text(d) if d.is_empty() => {
                s.char_indices().map(|(i, c)| &s[i..i + c.len_utf8()]).collect()
            }
            Value::Text(d) => s.split(d.as_str()).collect(),
            _ => vec![s],
        };
        let null = row.get(2).and_then(|v| match v {
            Value::Text(t) => Some(t.as_str()),
            _ => None,
        });
        let items: Vec<Option<&str>> = pieces
            .into_iter()
            .map(|p| (Some(p) != null).then_some(p))
            .collect();
        text(array_text(&items))
    },
);

/// `parse_ident(name)`: a name written with its qualifiers (`public."Unit"`) as the array
/// of its parts, unquoted (folded to lower case where written without quotes).
pub const PARSE_IDENT: Pg = pg(
    &["parse_ident"],
    "TB",
    1,
    DataType::Text,
    Nulls::FromArguments,
    |row| {
        let s = str_of(&row[0]);
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
                        None => return Err(format!("string is not a valid identifier: \"{s}\"")),
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
                    return Err(format!("string is not a valid identifier: \"{s}\""));
                }
            }
            parts.push(part);
            while chars.peek().is_some_and(|c| c.is_whitespace()) {
                chars.next();
            }
            match chars.next() {
                None => break,
                Some('.') => {}
                Some(_) => return Err(format!("string is not a valid identifier: \"{s}\"")),
            }
        }
        let items: Vec<Option<&str>> = parts.iter().map(|p| Some(p.as_str())).collect();
        text(array_text(&items))
    },
);

/// `pg_get_userbyid(oid)`: the role's name (ecsql has one, which owns everything).
pub const PG_GET_USERBYID: Pg = pg(
    &["pg_get_userbyid"],
    "I",
    0,
    DataType::Text,
    Nulls::FromArguments,
    |row| {
        if int(&row[0]) == types::OWNER {
            text(types::OWNER_NAME)
        } else {
            text(format!("unknown (OID={})", int(&row[0])))
        }
    },
);

/// `pg_table_is_visible(oid)`, `pg_type_is_visible(oid)`, `pg_function_is_visible(oid)`:
/// every object is in `public` or `pg_catalog`, both on the search path.
pub const IS_VISIBLE: Pg = pg(
    &[
        "pg_table_is_visible",
        "pg_type_is_visible",
        "pg_function_is_visible",
    ],
    "I",
    0,
    DataType::Bool,
    Nulls::FromArguments,
    |_| Ok(Value::Bool(true)),
);

/// `has_table_privilege(…)`, `has_schema_privilege(…)`, `has_database_privilege(…)`,
/// `has_column_privilege(…)`: a client may do anything.
pub const HAS_PRIVILEGE: Pg = pg(
    &[
        "has_table_privilege",
        "has_schema_privilege",
        "has_database_privilege",
        "has_column_privilege",
        "has_any_column_privilege",
    ],
    "***",
    1,
    DataType::Bool,
    Nulls::Never,
    |_| Ok(Value::Bool(true)),
);

/// `format_type(type oid, typmod)`: the type's SQL name.
pub const FORMAT_TYPE: Pg = pg(
    &["format_type"],
    "II",
    0,
    DataType::Text,
    Nulls::Sometimes,
    |row| {
        if row[0] == Value::Null {
            return Ok(Value::Null);
        }
        match types::by_oid(int(&row[0])) {
            Some(t) => text(t.sql_name),
            None => text("???"),
        }
    },
);

/// `pg_get_expr(expr, relation [, pretty])`: an expression the catalog holds as its text
/// (a default's), as it is.
pub const PG_GET_EXPR: Pg = pg(
    &["pg_get_expr"],
    "TIB",
    1,
    DataType::Text,
    Nulls::Sometimes,
    |row| Ok(row[0].clone()),
);

/// `pg_encoding_to_char(encoding)`.
pub const PG_ENCODING_TO_CHAR: Pg = pg(
    &["pg_encoding_to_char"],
    "I",
    0,
    DataType::Text,
    Nulls::FromArguments,
    |row| text(if int(&row[0]) == 6 { "UTF8" } else { "" }),
);

/// `obj_description(oid [, catalog])`, `col_description(oid, n)`,
/// `shobj_description(oid, catalog)`: ecsql keeps no comments.
pub const DESCRIPTION: Pg = pg(
    &["obj_description", "col_description", "shobj_description"],
    "**",
    1,
    DataType::Text,
    Nulls::Sometimes,
    |_| Ok(Value::Null),
);

/// `pg_get_constraintdef(oid [, pretty])`, `pg_get_statisticsobjdef_columns(oid)`,
/// `pg_get_triggerdef(oid [, pretty])`, `pg_get_viewdef(oid [, pretty])`: ecsql has no
/// constraints, statistics objects, triggers or views, so no oid names one.
pub const NO_DEFINITION: Pg = pg(
    &[
        "pg_get_constraintdef",
        "pg_get_statisticsobjdef_columns",
        "pg_get_triggerdef",
        "pg_get_viewdef",
    ],
    "IB",
    1,
    DataType::Text,
    Nulls::Sometimes,
    |_| Ok(Value::Null),
);

/// `pg_relation_is_publishable(relation)`: ecsql publishes nothing for replication.
pub const PUBLISHABLE: Pg = pg(
    &["pg_relation_is_publishable"],
    "I",
    0,
    DataType::Bool,
    Nulls::FromArguments,
    |_| Ok(Value::Bool(false)),
);

/// `quote_ident(s)`: `s` as a name: double-quoted unless a plain lower-case one.
pub const QUOTE_IDENT: Pg = pg(
    &["quote_ident"],
    "T",
    0,
    DataType::Text,
    Nulls::FromArguments,
    |row| {
        let s = str_of(&row[0]);
        let plain = s
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
            && s.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        text(if plain {
            s.to_owned()
        } else {
            format!("\"{}\"", s.replace('"', "\"\""))
        })
    },
);

/// `pg_backend_pid()`: the server's process.
pub const BACKEND_PID: Pg = pg(&["pg_backend_pid"], "", 0, DataType::Int, Nulls::Never, |_| {
    Ok(Value::Int(i64::from(std::process::id())))
});

/// The elements of an array written as PostgreSQL writes one (`{a,"b c",NULL}`), each
/// `None` for NULL.
fn elements(array: &str) -> Result<Vec<Option<String>>, String> {
    let inner = array
        .trim()
        .strip_prefix('{')
        .and_then(|a| a.strip_suffix('}'))
        .ok_or_else(|| format!("malformed array literal: \"{array}\""))?;
    let mut out = Vec::new();
    if inner.trim().is_empty() {
        return Ok(out);
    }
    let mut chars = inner.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut item = String::new();
        let quoted = chars.peek() == Some(&'"');
        if quoted {
            chars.next();
            loop {
                match chars.next() {
                    Some('\\') => item.extend(chars.next()),
                    Some('"') => break,
                    Some(c) => item.push(c),
                    None => return Err(format!("malformed array literal: \"{array}\"")),
                }
            }
            while chars.peek().is_some_and(|c| *c != ',') {
                chars.next();
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ',' {
                    break;
                }
                item.push(c);
                chars.next();
            }
            item = item.trim().to_owned();
        }
        out.push(if !quoted && item.eq_ignore_ascii_case("NULL") {
            None
        } else {
            Some(item)
        });
        if chars.next().is_none() {
            return Ok(out);
        }
    }
}

/// An array's elements and the index of its first: `{a,b}` from 1, or a vector
/// (`int2vector`, `oidvector`: `1 2`, as PostgreSQL writes those) from 0.
fn items(array: &str) -> Result<(Vec<Option<String>>, i64), String> {
    if array.trim_start().starts_with('{') {
        return Ok((elements(array)?, 1));
    }
    Ok((array.split_whitespace().map(|e| Some(e.to_owned())).collect(), 0))
}

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
/// subscripts are), NULL where it is not; `x = ANY (array)` is this call.
pub const ARRAY_POSITION: Pg = pg(
    &["array_position"],
    "T*",
    0,
    DataType::Int,
    Nulls::Sometimes,
    |row| {
        if row.contains(&Value::Null) {
            return Ok(Value::Null);
        }
        let (items, base) = items(str_of(&row[0]))?;
        let x = element_text(&row[1]);
        Ok(items
            .iter()
            .position(|e| e.as_deref() == Some(x.as_str()))
            .map_or(Value::Null, |i| Value::Int(i as i64 + base)))
    },
);

/// `array_element(array, i)`: the element at subscript `i` (from 1, or 0 for a vector),
/// NULL outside; `a[i]` is this call.
pub const ARRAY_ELEMENT: Pg = pg(
    &["array_element"],
    "TI",
    0,
    DataType::Text,
    Nulls::Sometimes,
    |row| {
        if row.contains(&Value::Null) {
            return Ok(Value::Null);
        }
        let (items, base) = items(str_of(&row[0]))?;
        let at = int(&row[1])
            .checked_sub(base)
            .and_then(|i| usize::try_from(i).ok());
        Ok(at
            .and_then(|i| items.get(i).cloned().flatten())
            .map_or(Value::Null, Value::Text))
    },
);

/// `array_upper(array, 1)`, `array_lower(array, 1)`: the last and first subscripts
/// (NULL for an empty array or another dimension); `array_length(array, 1)`,
/// `cardinality(array)`: how many elements.
pub struct ArrayBound {
    names: &'static [&'static str],
    f: fn(usize, i64) -> Value,
}

pub const ARRAY_UPPER: ArrayBound = ArrayBound {
    names: &["array_upper"],
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
    f: |n, base| if n == 0 { Value::Null } else { Value::Int(base) },
};
pub const ARRAY_LENGTH: ArrayBound = ArrayBound {
    names: &["array_length", "cardinality"],
    f: |n, _| if n == 0 { Value::Null } else { Value::Int(n as i64) },
};

impl ScalarFunction for ArrayBound {
    fn names(&self) -> &'static [&'static str] {
        self.names
    }
    fn signature(&self, name: &str, args: &[Operand]) -> Result<Signature, Mismatch> {
        let one = Pg {
            names: self.names,
            args: Args("TI"),
            optional: 1,
            result: DataType::Int,
            nulls: Nulls::Sometimes,
            f: |_| Ok(Value::Null),
        };
        one.signature(name, args)
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
                let (items, base) = items(str_of(&row[0]))?;
                Ok(f(items.len(), base))
            },
            call.at,
            false,
        )
    }
}

/// `array_to_string(array, separator [, null_text])`, over an array's text.
pub const ARRAY_TO_STRING: Pg = pg(
    &["array_to_string"],
    "TTT",
    1,
    DataType::Text,
    Nulls::Sometimes,
    |row| {
        if row[0] == Value::Null || row[1] == Value::Null {
            return Ok(Value::Null);
        }
        let null = row.get(2).and_then(|v| match v {
            Value::Text(s) => Some(s.as_str()),
            _ => None,
        });
        let items = elements(str_of(&row[0]))?;
        let parts: Vec<&str> = items.iter().filter_map(|e| e.as_deref().or(null)).collect();
        text(parts.join(str_of(&row[1])))
    },
);

/// `regexp_like(s, pattern [, flags])`: whether `s` matches the regular expression
/// (flags: `i` case-insensitive, `c` case-sensitive, `n`/`m` newline-sensitive, `s`);
/// `s ~ pattern` is this call.
pub struct RegexpLike;

impl ScalarFunction for RegexpLike {
    fn names(&self) -> &'static [&'static str] {
        &["regexp_like"]
    }
    fn signature(&self, name: &str, args: &[Operand]) -> Result<Signature, Mismatch> {
        arity(name, args, 2, 3)?;
        for (i, a) in args.iter().enumerate() {
            super::text(name, args, i).map_err(|_| Mismatch::Type {
                arg: Some(i),
                message: format!("{name} needs TEXT, found {}", a.ty),
            })?;
        }
        Ok(Signature::converting(
            args.iter().map(|_| DataType::Text),
            DataType::Bool,
        ))
    }
    fn properties(&self) -> Properties {
        Properties {
            can_fail: true,
            ..Properties::TOTAL
        }
    }
    fn invoke(&self, args: Vec<Datum<'_>>, call: &Call<'_>) -> Result<Datum<'static>, KernelError> {
        let compiled: RefCell<Option<(String, String, Regex)>> = RefCell::new(None);
        row_wise(
            &args,
            DataType::Bool,
            call.len,
            |row| {
                if row.contains(&Value::Null) {
                    return Ok(Value::Null);
                }
                let (s, pattern) = (str_of(&row[0]), str_of(&row[1]));
                let flags = row.get(2).map_or("", str_of);
                let mut cache = compiled.borrow_mut();
                let fresh = !matches!(&*cache, Some((p, f, _)) if p == pattern && f == flags);
                if fresh {
                    *cache = Some((pattern.to_owned(), flags.to_owned(), compile(pattern, flags)?));
                }
                let matched = cache.as_ref().is_some_and(|(_, _, re)| re.is_match(s));
                Ok(Value::Bool(matched))
            },
            call.at,
            false,
        )
    }
}

/// A regular expression with PostgreSQL's flags; a size limit keeps a hostile pattern
/// from taking the memory of the process.
fn compile(pattern: &str, flags: &str) -> Result<Regex, String> {
    let mut b = RegexBuilder::new(pattern);
    b.size_limit(1 << 20).dfa_size_limit(1 << 20);
    for f in flags.chars() {
        match f {
            'i' => b.case_insensitive(true),
            'c' => b.case_insensitive(false),
            'n' | 'm' => b.multi_line(true),
            's' => b.dot_matches_new_line(true),
            'x' => b.ignore_whitespace(true),
            other => return Err(format!("invalid regular expression option: \"{other}\"")),
        };
    }
    b.build().map_err(|e| {
        format!(
            "invalid regular expression: {}",
            e.to_string().lines().last().unwrap_or("")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_read_as_postgresql_writes_them() {
        assert_eq!(elements("{}"), Ok(vec![]));
        assert_eq!(
            elements("{a,\"b,c\",NULL,\"NULL\"}"),
            Ok(vec![
                Some("a".into()),
                Some("b,c".into()),
                None,
                Some("NULL".into())
            ])
        );
        assert!(elements("a,b").is_err());
        let items = [Some("a"), Some("b c"), None, Some("NULL"), Some("q\"")];
        let written = array_text(&items);
        assert_eq!(written, r#"{a,"b c",NULL,"NULL","q\""}"#);
        let read: Vec<Option<String>> = items.iter().map(|i| i.map(str::to_owned)).collect();
        assert_eq!(elements(&written), Ok(read));
    }
}
