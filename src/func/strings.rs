//! The text functions of PostgreSQL and SQLite beyond case and length: trim, ltrim,
//! rtrim, replace, strpos/instr (and `POSITION(x IN s)`), lpad, rpad, repeat, reverse,
//! starts_with, split_part, concat, concat_ws and format.
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

/// The signature of concat, concat_ws and format: one argument or more, each written as
/// text (as `||` writes it), a TEXT result; the first a TEXT already when `first_text`.
fn written_as_text(name: &str, args: &[Operand], first_text: bool) -> Result<Signature, Mismatch> {
    arity(name, args, 1, usize::MAX)?;
    if first_text {
        text(name, args, 0)?;
    }
    Ok(Signature::converting(
        args.iter().map(|_| DataType::Text),
        DataType::Text,
    ))
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
        written_as_text(name, args, self.separated)
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

/// `format(template, a, …)`, PostgreSQL's: the template with each `%s` (the next argument
/// as text, NULL as nothing), `%I` (as an identifier, double-quoted unless it is a plain
/// lower-case name) and `%L` (as a literal, single-quoted; NULL as NULL) replaced, and
/// `%%` a `%`. A specifier may name its argument (`%2$s`), and give a width (`%10s`,
/// `%-10s` left-justified, `%*s` from the next argument). NULL when the template is.
pub struct Format;

/// The largest width, and argument number, a specifier may give.
const FORMAT_LIMIT: i64 = 1 << 20;

impl ScalarFunction for Format {
    fn names(&self) -> &'static [&'static str] {
        &["format"]
    }
    fn signature(&self, name: &str, args: &[Operand]) -> Result<Signature, Mismatch> {
        written_as_text(name, args, true)
    }
    fn properties(&self) -> Properties {
        Properties {
            can_fail: true,
            nulls: Nulls::Sometimes,
            ..Properties::TOTAL
        }
    }
    fn invoke(&self, args: Vec<Datum<'_>>, call: &Call<'_>) -> Result<Datum<'static>, KernelError> {
        let scalar = args.iter().all(|a| matches!(a, Datum::Scalar(_)));
        let n = if scalar { 1 } else { call.len };
        let mut values = Vec::with_capacity(n);
        let mut valid = Vec::with_capacity(n);
        let mut row = Vec::with_capacity(args.len());
        for i in 0..n {
            row.clear();
            row.extend(args.iter().map(|a| arg(a, i)));
            match row.first() {
                Some(Some(Arg::Text(template))) => {
                    let text =
                        format_row(template, &row[1..]).map_err(|m| KernelError::arithmetic(call.at, m))?;
                    values.push(text);
                    valid.push(true);
                }
                _ => {
                    values.push(String::new());
                    valid.push(false);
                }
            }
        }
        Ok(finish(values, valid, scalar))
    }
}

/// One row of `format`: `template` filled from `args` (NULL where `None`).
fn format_row(template: &str, args: &[Option<Arg<'_>>]) -> Result<String, String> {
    let text_of = |k: usize| -> Result<Option<&str>, String> {
        match args.get(k) {
            None => Err("too few arguments for format()".to_owned()),
            Some(Some(Arg::Text(s))) => Ok(Some(s)),
            Some(_) => Ok(None),
        }
    };
    let number = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>| -> Option<i64> {
        let mut n: Option<i64> = None;
        while let Some(d) = chars.peek().and_then(|c| c.to_digit(10)) {
            chars.next();
            n = Some(n.unwrap_or(0).saturating_mul(10).saturating_add(i64::from(d)));
        }
        n
    };
    let position = |n: i64| -> Result<usize, String> {
        match n {
            0 => Err("format specifies argument 0, but arguments are numbered from 1".to_owned()),
            n if n > FORMAT_LIMIT => Err("too few arguments for format()".to_owned()),
            n => Ok(n as usize - 1),
        }
    };
    let mut out = String::with_capacity(template.len());
    let mut next = 0usize;
    let mut chars = template.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'%') {
            chars.next();
            out.push('%');
            continue;
        }
        // %[n$][-][width | * | *n$]type
        let mut argument = None;
        let mut left = false;
        let mut width: Option<i64> = None;
        if let Some(n) = number(&mut chars) {
            if chars.peek() == Some(&'$') {
                chars.next();
                argument = Some(position(n)?);
            } else {
                width = Some(n);
            }
        }
        if width.is_none() {
            while chars.peek() == Some(&'-') {
                chars.next();
                left = true;
            }
            if chars.peek() == Some(&'*') {
                chars.next();
                let from = match number(&mut chars) {
                    Some(n) if chars.peek() == Some(&'$') => {
                        chars.next();
                        position(n)?
                    }
                    Some(_) => return Err("unterminated format() type specifier".to_owned()),
                    None => {
                        let k = next;
                        next += 1;
                        k
                    }
                };
                let w = match text_of(from)? {
                    None => 0,
                    Some(t) => t
                        .trim()
                        .parse::<i64>()
                        .map_err(|_| format!("format() width argument must be an integer, found {t:?}"))?,
                };
                left |= w < 0;
                width = Some(w.saturating_abs());
            } else {
                width = number(&mut chars);
            }
        }
        if let Some(w) = width
            && w > FORMAT_LIMIT
        {
            return Err(format!("format() width {w} is past {FORMAT_LIMIT}"));
        }
        let kind = chars.next().ok_or("unterminated format() type specifier")?;
        // After a numbered argument, the next one (as in PostgreSQL).
        let k = argument.unwrap_or(next);
        next = k + 1;
        let value = match kind {
            's' => text_of(k)?.unwrap_or("").to_owned(),
            'I' => match text_of(k)? {
                Some(name) => identifier(name),
                None => return Err("null values cannot be formatted as an SQL identifier".to_owned()),
            },
            'L' => match text_of(k)? {
                Some(t) => format!("'{}'", t.replace('\'', "''")),
                None => "NULL".to_owned(),
            },
            other => {
                return Err(format!(
                    "unrecognized format() type specifier \"{other}\" (format() takes %s, %I, %L and %%, as in PostgreSQL; for a number's digits use round(x, n))"
                ));
            }
        };
        let pad = (width.unwrap_or(0) as usize).saturating_sub(value.chars().count());
        fits(out.len() + value.len() + pad)?;
        if !left {
            out.extend(std::iter::repeat_n(' ', pad));
        }
        out.push_str(&value);
        if left {
            out.extend(std::iter::repeat_n(' ', pad));
        }
    }
    Ok(out)
}

/// `name` as an SQL identifier: as it is when it is a plain lower-case name and no
/// keyword, else double-quoted, its quotes doubled.
fn identifier(name: &str) -> String {
    let keyword = sqlparser::keywords::ALL_KEYWORDS
        .binary_search(&name.to_ascii_uppercase().as_str())
        .is_ok();
    let plain = !keyword
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    match plain {
        true => name.to_owned(),
        false => format!("\"{}\"", name.replace('"', "\"\"")),
    }
}
