//! The text functions of PostgreSQL and SQLite beyond case and length: trim, ltrim,
//! rtrim, replace, strpos/instr (and `POSITION(x IN s)`), lpad, rpad, repeat, reverse,
//! starts_with, split_part, concat and concat_ws.
//!
//! Each reads its TEXT and INT arguments in place, row by row, from the typed vectors (no
//! value is boxed) and writes a typed vector. Invariants: a row with a NULL argument is
//! NULL (concat and concat_ws skip NULLs instead, and concat is never NULL); positions and
//! lengths count characters, not bytes; no result is longer than `MAX_TEXT` bytes (the
//! length is known before the text is made, and a longer one is refused).

use std::borrow::Cow;

use super::{Call, Convert, Mismatch, Nulls, Properties, ScalarFunction, Signature, arity, text};
use crate::storage::Value;
use crate::vector::{Data, DataType, Datum, KernelError, MAX_TEXT, Operand, Vector};

/// One argument's value in row `i`: `None` when NULL.
enum Arg<'a> {
    Text(&'a str),
    Int(i64),
}

fn arg<'a>(d: &'a Datum<'_>, i: usize) -> Option<Arg<'a>> {
    match d {
        Datum::Scalar(Value::Text(s)) => Some(Arg::Text(s)),
        Datum::Scalar(Value::Int(x)) => Some(Arg::Int(*x)),
        Datum::Scalar(_) => None,
        Datum::Vector(v) if !v.is_valid(i) => None,
        Datum::Vector(v) => match &v.data {
            Data::Text(s) => s.get(i).map(|s| Arg::Text(s)),
            Data::Int(x) => x.get(i).map(|&x| Arg::Int(x)),
            _ => None,
        },
    }
}

/// A row's arguments, read by position.
struct Row<'a>(Vec<Option<Arg<'a>>>);

impl Row<'_> {
    fn text(&self, k: usize) -> &str {
        match self.0.get(k) {
            Some(Some(Arg::Text(s))) => s,
            _ => "",
        }
    }
    fn int(&self, k: usize) -> i64 {
        match self.0.get(k) {
            Some(Some(Arg::Int(x))) => *x,
            _ => 0,
        }
    }
}

/// What a function writes for a row.
trait Out: Sized {
    fn data(values: Vec<Self>) -> Data<'static>;
}

impl Out for String {
    fn data(values: Vec<String>) -> Data<'static> {
        Data::Text(Cow::Owned(values))
    }
}

impl Out for i64 {
    fn data(values: Vec<i64>) -> Data<'static> {
        Data::Int(Cow::Owned(values))
    }
}

impl Out for bool {
    fn data(values: Vec<bool>) -> Data<'static> {
        Data::Bool(Cow::Owned(values))
    }
}

/// Runs `f` over each row of `args`; a row with a NULL argument is NULL unless
/// `skip_nulls` (then `f` sees it). `f`'s error is the statement's, at the call.
fn per_row<R: Out + Default>(
    args: &[Datum<'_>],
    call: &Call<'_>,
    skip_nulls: bool,
    f: impl Fn(&Row<'_>) -> Result<R, String>,
) -> Result<Datum<'static>, KernelError> {
    let scalar = args.iter().all(|a| matches!(a, Datum::Scalar(_)));
    let n = if scalar { 1 } else { call.len };
    let mut values = Vec::with_capacity(n);
    let mut valid = Vec::with_capacity(n);
    let mut row = Row(Vec::with_capacity(args.len()));
    for i in 0..n {
        row.0.clear();
        row.0.extend(args.iter().map(|a| arg(a, i)));
        if !skip_nulls && row.0.iter().any(Option::is_none) {
            values.push(R::default());
            valid.push(false);
            continue;
        }
        values.push(f(&row).map_err(|m| KernelError::arithmetic(call.at, m))?);
        valid.push(true);
    }
    Ok(finish(values, valid, scalar))
}

/// A function's rows as its result: one value when every argument was one.
fn finish<R: Out>(values: Vec<R>, valid: Vec<bool>, scalar: bool) -> Datum<'static> {
    let n = values.len();
    let all_valid = valid.iter().all(|&v| v);
    let v = Vector::new(R::data(values), (!all_valid).then_some(Cow::Owned(valid)), n);
    if scalar {
        Datum::Scalar(v.get(0))
    } else {
        Datum::Vector(v)
    }
}

/// Refuses a text of `length` bytes past `MAX_TEXT`, before it is made.
fn fits(length: usize) -> Result<(), String> {
    match length > MAX_TEXT {
        true => Err(format!(
            "text too long: {length} bytes, and a text value may hold at most {MAX_TEXT}"
        )),
        false => Ok(()),
    }
}

/// Checks that argument `i` is INT (or a bare NULL).
fn int(name: &str, args: &[Operand], i: usize) -> Result<(), Mismatch> {
    match args.get(i).map(|a| a.ty) {
        Some(t) if !matches!(t, DataType::Int | DataType::Null) => Err(Mismatch::Type {
            arg: Some(i),
            message: format!("{name} takes an INT here, found {t}"),
        }),
        _ => Ok(()),
    }
}

/// The signature of a function of the kinds of arguments in `kinds` (`T` TEXT, `I` INT),
/// the first `required` of them required.
fn typed(
    name: &str,
    args: &[Operand],
    kinds: &str,
    required: usize,
    result: DataType,
) -> Result<Signature, Mismatch> {
    arity(name, args, required, kinds.len())?;
    let mut convert = Vec::with_capacity(args.len());
    for (i, kind) in kinds.chars().take(args.len()).enumerate() {
        match kind {
            'I' => {
                int(name, args, i)?;
                convert.push(Convert::To(DataType::Int));
            }
            _ => {
                text(name, args, i)?;
                convert.push(Convert::To(DataType::Text));
            }
        }
    }
    Ok(Signature {
        args: convert,
        result,
    })
}

/// trim, ltrim and rtrim: the characters of the second argument (spaces unless given)
/// taken from both ends, the start or the end.
pub struct Trim {
    names: &'static [&'static str],
    start: bool,
    end: bool,
}

pub const TRIM: Trim = Trim {
    names: &["trim", "btrim"],
    start: true,
    end: true,
};

pub const LTRIM: Trim = Trim {
    names: &["ltrim"],
    start: true,
    end: false,
};

pub const RTRIM: Trim = Trim {
    names: &["rtrim"],
    start: false,
    end: true,
};

impl ScalarFunction for Trim {
    fn names(&self) -> &'static [&'static str] {
        self.names
    }
    fn signature(&self, name: &str, args: &[Operand]) -> Result<Signature, Mismatch> {
        typed(name, args, "TT", 1, DataType::Text)
    }
    fn properties(&self) -> Properties {
        Properties::TOTAL
    }
    fn invoke(&self, args: Vec<Datum<'_>>, call: &Call<'_>) -> Result<Datum<'static>, KernelError> {
        let given = args.len() == 2;
        per_row(&args, call, false, |row| {
            let s = row.text(0);
            let set = if given { row.text(1) } else { " " };
            let gone = |c: char| set.contains(c);
            let s = if self.start { s.trim_start_matches(gone) } else { s };
            let s = if self.end { s.trim_end_matches(gone) } else { s };
            Ok(s.to_owned())
        })
    }
}

/// `replace(s, from, to)`: every `from` in `s` replaced by `to` (an empty `from` changes
/// nothing).
pub struct Replace;

impl ScalarFunction for Replace {
    fn names(&self) -> &'static [&'static str] {
        &["replace"]
    }
    fn signature(&self, name: &str, args: &[Operand]) -> Result<Signature, Mismatch> {
        typed(name, args, "TTT", 3, DataType::Text)
    }
    fn properties(&self) -> Properties {
        // The result may be too long.
        Properties {
            can_fail: true,
            ..Properties::TOTAL
        }
    }
    fn invoke(&self, args: Vec<Datum<'_>>, call: &Call<'_>) -> Result<Datum<'static>, KernelError> {
        per_row(&args, call, false, |row| {
            let (s, from, to) = (row.text(0), row.text(1), row.text(2));
            if from.is_empty() {
                return Ok(s.to_owned());
            }
            if to.len() > from.len() {
                let count = s.matches(from).count();
                fits(s.len() + count * (to.len() - from.len()))?;
            }
            Ok(s.replace(from, to))
        })
    }
}

/// `strpos(s, sub)` (PostgreSQL), `instr(s, sub)` (SQLite), `POSITION(sub IN s)`: the
/// character position of the first `sub` in `s`, from 1; 0 when there is none.
pub struct Strpos;

impl ScalarFunction for Strpos {
    fn names(&self) -> &'static [&'static str] {
        &["strpos", "instr"]
    }
    fn signature(&self, name: &str, args: &[Operand]) -> Result<Signature, Mismatch> {
        typed(name, args, "TT", 2, DataType::Int)
    }
    fn properties(&self) -> Properties {
        Properties::TOTAL
    }
    fn invoke(&self, args: Vec<Datum<'_>>, call: &Call<'_>) -> Result<Datum<'static>, KernelError> {
        per_row(&args, call, false, |row| {
            let s = row.text(0);
            Ok(match s.find(row.text(1)) {
                Some(byte) => s[..byte].chars().count() as i64 + 1,
                None => 0,
            })
        })
    }
}

/// lpad and rpad: `s` filled to `length` characters with `fill` (a space unless given)
/// on the left or the right, or cut to `length` when longer.
pub struct Pad {
    names: &'static [&'static str],
    left: bool,
}

pub const LPAD: Pad = Pad {
    names: &["lpad"],
    left: true,
};

pub const RPAD: Pad = Pad {
    names: &["rpad"],
    left: false,
};

impl ScalarFunction for Pad {
    fn names(&self) -> &'static [&'static str] {
        self.names
    }
    fn signature(&self, name: &str, args: &[Operand]) -> Result<Signature, Mismatch> {
        typed(name, args, "TIT", 2, DataType::Text)
    }
    fn properties(&self) -> Properties {
        Properties {
            can_fail: true,
            ..Properties::TOTAL
        }
    }
    fn invoke(&self, args: Vec<Datum<'_>>, call: &Call<'_>) -> Result<Datum<'static>, KernelError> {
        let given = args.len() == 3;
        per_row(&args, call, false, |row| {
            let s = row.text(0);
            let want = usize::try_from(row.int(1).max(0)).unwrap_or(usize::MAX);
            let fill = if given { row.text(2) } else { " " };
            let have = s.chars().count();
            if have >= want || fill.is_empty() {
                return Ok(s.chars().take(want).collect::<String>());
            }
            let missing = want - have;
            // The bytes of the whole turns of `fill` and of the characters of the last.
            let turns = missing / fill.chars().count();
            let rest: usize = fill
                .chars()
                .take(missing % fill.chars().count())
                .map(char::len_utf8)
                .sum();
            fits(
                s.len()
                    .saturating_add(turns.saturating_mul(fill.len()))
                    .saturating_add(rest),
            )?;
            let padding: String = fill.chars().cycle().take(missing).collect();
            Ok(match self.left {
                true => padding + s,
                false => s.to_owned() + &padding,
            })
        })
    }
}

/// `repeat(s, n)`: `s` written `n` times (none for `n` ≤ 0).
pub struct Repeat;

impl ScalarFunction for Repeat {
    fn names(&self) -> &'static [&'static str] {
        &["repeat"]
    }
    fn signature(&self, name: &str, args: &[Operand]) -> Result<Signature, Mismatch> {
        typed(name, args, "TI", 2, DataType::Text)
    }
    fn properties(&self) -> Properties {
        Properties {
            can_fail: true,
            ..Properties::TOTAL
        }
    }
    fn invoke(&self, args: Vec<Datum<'_>>, call: &Call<'_>) -> Result<Datum<'static>, KernelError> {
        per_row(&args, call, false, |row| {
            let s = row.text(0);
            let n = usize::try_from(row.int(1).max(0)).unwrap_or(usize::MAX);
            fits(s.len().saturating_mul(n))?;
            Ok(s.repeat(n))
        })
    }
}

/// `reverse(s)`: its characters in the other order.
pub struct Reverse;

impl ScalarFunction for Reverse {
    fn names(&self) -> &'static [&'static str] {
        &["reverse"]
    }
    fn signature(&self, name: &str, args: &[Operand]) -> Result<Signature, Mismatch> {
        typed(name, args, "T", 1, DataType::Text)
    }
    fn properties(&self) -> Properties {
        Properties::TOTAL
    }
    fn invoke(&self, args: Vec<Datum<'_>>, call: &Call<'_>) -> Result<Datum<'static>, KernelError> {
        per_row(&args, call, false, |row| {
            Ok(row.text(0).chars().rev().collect::<String>())
        })
    }
}

/// `starts_with(s, prefix)`, a BOOL.
pub struct StartsWith;

impl ScalarFunction for StartsWith {
    fn names(&self) -> &'static [&'static str] {
        &["starts_with"]
    }
    fn signature(&self, name: &str, args: &[Operand]) -> Result<Signature, Mismatch> {
        typed(name, args, "TT", 2, DataType::Bool)
    }
    fn properties(&self) -> Properties {
        Properties::TOTAL
    }
    fn invoke(&self, args: Vec<Datum<'_>>, call: &Call<'_>) -> Result<Datum<'static>, KernelError> {
        per_row(&args, call, false, |row| Ok(row.text(0).starts_with(row.text(1))))
    }
}

/// `split_part(s, delimiter, n)`: the `n`th field of `s` cut at `delimiter`, from 1 (from
/// the end when negative); empty past the last. An empty delimiter leaves one field.
pub struct SplitPart;

impl ScalarFunction for SplitPart {
    fn names(&self) -> &'static [&'static str] {
        &["split_part"]
    }
    fn signature(&self, name: &str, args: &[Operand]) -> Result<Signature, Mismatch> {
        typed(name, args, "TTI", 3, DataType::Text)
    }
    fn properties(&self) -> Properties {
        // n = 0 is an error.
        Properties {
            can_fail: true,
            ..Properties::TOTAL
        }
    }
    fn invoke(&self, args: Vec<Datum<'_>>, call: &Call<'_>) -> Result<Datum<'static>, KernelError> {
        per_row(&args, call, false, |row| {
            let (s, delimiter, n) = (row.text(0), row.text(1), row.int(2));
            if n == 0 {
                return Err("field position must not be zero".to_owned());
            }
            let fields: Vec<&str> = match delimiter.is_empty() {
                true => vec![s],
                false => s.split(delimiter).collect(),
            };
            let k = match n > 0 {
                true => usize::try_from(n - 1).ok(),
                false => usize::try_from(n.unsigned_abs())
                    .ok()
                    .and_then(|back| fields.len().checked_sub(back)),
            };
            Ok(k.and_then(|k| fields.get(k))
                .map_or_else(String::new, |f| (*f).to_owned()))
        })
    }
}

/// `concat(a, …)`: every argument written as text, one after another, NULLs skipped;
/// `concat_ws(separator, a, …)`: the same with `separator` between them (NULL when the
/// separator is).
pub struct Concat {
    names: &'static [&'static str],
    separated: bool,
}

pub const CONCAT: Concat = Concat {
    names: &["concat"],
    separated: false,
};

pub const CONCAT_WS: Concat = Concat {
    names: &["concat_ws"],
    separated: true,
};

impl ScalarFunction for Concat {
    fn names(&self) -> &'static [&'static str] {
        self.names
    }
    fn signature(&self, name: &str, args: &[Operand]) -> Result<Signature, Mismatch> {
        arity(name, args, 1, usize::MAX)?;
        if self.separated {
            text(name, args, 0)?;
        }
        // Any value is written as text, as `||` writes it.
        Ok(Signature::converting(
            args.iter().map(|_| DataType::Text),
            DataType::Text,
        ))
    }
    fn properties(&self) -> Properties {
        Properties {
            can_fail: true,
            nulls: match self.separated {
                true => Nulls::FromArguments,
                false => Nulls::Never,
            },
            ..Properties::TOTAL
        }
    }
    fn invoke(&self, args: Vec<Datum<'_>>, call: &Call<'_>) -> Result<Datum<'static>, KernelError> {
        let separated = self.separated;
        let first = usize::from(separated);
        let scalar = args.iter().all(|a| matches!(a, Datum::Scalar(_)));
        let n = if scalar { 1 } else { call.len };
        let mut values = Vec::with_capacity(n);
        let mut valid = Vec::with_capacity(n);
        for i in 0..n {
            let separator = match separated {
                true => match arg(&args[0], i) {
                    Some(Arg::Text(s)) => s,
                    _ => {
                        values.push(String::new());
                        valid.push(false);
                        continue;
                    }
                },
                false => "",
            };
            let parts: Vec<&str> = args[first..]
                .iter()
                .filter_map(|a| match arg(a, i) {
                    Some(Arg::Text(s)) => Some(s),
                    _ => None,
                })
                .collect();
            let length = parts.iter().map(|p| p.len()).sum::<usize>()
                + separator.len() * parts.len().saturating_sub(1);
            fits(length).map_err(|m| KernelError::arithmetic(call.at, m))?;
            values.push(parts.join(separator));
            valid.push(true);
        }
        Ok(finish(values, valid, scalar))
    }
}
