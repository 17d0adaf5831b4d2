//! `regexp_like(s, pattern [, flags])`: whether a text matches a regular expression;
//! the operators `~`, `~*`, `!~`, `!~*` are this call.
//!
//! Invariants: a constant pattern (the common case: `name ~ '^pg_'`) is compiled once per
//! batch and the texts are read in place, a typed vector out; a pattern that changes row
//! by row is compiled again only when it changes. The syntax is Rust's `regex` crate's,
//! which PostgreSQL's common patterns share, with PostgreSQL's defaults: `.` matches a
//! newline and `^`/`$` match at the ends of the text, unless the flags say `n`. A size
//! limit keeps a hostile pattern from taking the process's memory; one that does not
//! compile is an error that names why.

use std::borrow::Cow;
use std::cell::RefCell;

use regex::{Regex, RegexBuilder};

use super::pg::str_of;
use super::rows::row_wise;
use super::{Call, Mismatch, Properties, ScalarFunction, Signature, arity};
use crate::storage::Value;
use crate::vector::{Data, DataType, Datum, KernelError, Operand, Vector};

pub struct RegexpLike;

impl ScalarFunction for RegexpLike {
    fn names(&self) -> &'static [&'static str] {
        &["regexp_like"]
    }
    fn signature(&self, name: &str, args: &[Operand]) -> Result<Signature, Mismatch> {
        arity(name, args, 2, 3)?;
        for i in 0..args.len() {
            super::text(name, args, i)?;
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
        let fail = |m: String| KernelError::arithmetic(call.at, m);
        let constant = |d: Option<&Datum<'_>>| match d {
            None => Some(Value::Text(String::new())),
            Some(Datum::Scalar(v)) => Some(v.clone()),
            Some(Datum::Vector(_)) => None,
        };
        if let (Some(Datum::Vector(texts)), Some(pattern), Some(flags)) =
            (args.first(), constant(args.get(1)), constant(args.get(2)))
            && let Data::Text(values) = &texts.data
        {
            if pattern == Value::Null || flags == Value::Null {
                return Ok(Datum::Scalar(Value::Null));
            }
            let re = compile(str_of(&pattern), str_of(&flags)).map_err(fail)?;
            let out: Vec<bool> = values.iter().map(|s| re.is_match(s)).collect();
            let n = out.len();
            return Ok(Datum::Vector(Vector::new(
                Data::Bool(Cow::Owned(out)),
                texts.validity().map(|v| Cow::Owned(v.into_owned())),
                n,
            )));
        }
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
                Ok(Value::Bool(
                    cache.as_ref().is_some_and(|(_, _, re)| re.is_match(s)),
                ))
            },
            call.at,
            false,
        )
    }
}

/// A regular expression with PostgreSQL's flags: `i` ignore case, `c` respect it, `n`
/// (or `m`) newline-sensitive (`.` stops at a newline, `^` and `$` match at lines), `s`
/// not (the default), `x` spaces and `#` comments ignored.
fn compile(pattern: &str, flags: &str) -> Result<Regex, String> {
    let mut b = RegexBuilder::new(pattern);
    b.size_limit(1 << 20)
        .dfa_size_limit(1 << 20)
        .dot_matches_new_line(true);
    for f in flags.chars() {
        match f {
            'i' => b.case_insensitive(true),
            'c' => b.case_insensitive(false),
            'n' | 'm' => b.multi_line(true).dot_matches_new_line(false),
            's' => b.multi_line(false).dot_matches_new_line(true),
            'x' => b.ignore_whitespace(true),
            other => return Err(format!("invalid regular expression option: \"{other}\"")),
        };
    }
    b.build().map_err(|e| {
        let why = e.to_string();
        format!(
            "invalid regular expression: {}",
            why.lines()
                .last()
                .unwrap_or_default()
                .trim_start_matches("error: ")
        )
    })
}
