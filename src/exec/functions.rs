//! Scalar functions, CAST and LIKE over vectors. Each works a whole vector at a time and
//! keeps NULL rows NULL; errors (a negative square root, text that is not a number) name
//! the expression's location.

use std::borrow::Cow;

use super::error::ExecError;
use std::cell::Cell;

use super::kernels::{bools, both_valid, compare, scatter, side_float, text_at, zip};
use super::vector::{Data, Datum, Vector};
use crate::parse::Location;
use crate::plan::{DataType, Func, cast_value};
use crate::storage::{Value, value_order};

type Result<T> = std::result::Result<T, ExecError>;

/// Applies `f` to every valid row of `d`; NULL rows stay NULL. Scalars stay scalars.
fn map_values<'a>(
    d: Datum<'_>,
    ty: DataType,
    f: impl Fn(Value) -> std::result::Result<Value, String>,
    at: Location,
) -> Result<Datum<'a>> {
    let err = |m: String| ExecError::arithmetic(at, m);
    match d {
        Datum::Scalar(Value::Null) => Ok(Datum::Scalar(Value::Null)),
        Datum::Scalar(v) => Ok(Datum::Scalar(f(v).map_err(err)?)),
        Datum::Vector(v) => {
            let mut out = Vector::empty(ty);
            for i in 0..v.len() {
                let x = v.get(i);
                if x == Value::Null {
                    out.push_value(&Value::Null);
                } else {
                    out.push_value(&f(x).map_err(err)?);
                }
            }
            Ok(Datum::Vector(out))
        }
    }
}

pub fn cast<'a>(d: Datum<'a>, to: DataType, at: Location) -> Result<Datum<'a>> {
    // The common numeric widenings run as typed loops; the rest value by value.
    if let Datum::Vector(v) = &d {
        let valid = v.valid.clone().map(|c| Cow::Owned(c.into_owned()));
        let len = v.len();
        let data = match (&v.data, to) {
            (Data::Int(x), DataType::Float) => {
                Some(Data::Float(Cow::Owned(x.iter().map(|&a| a as f64).collect())))
            }
            (Data::Int(x), DataType::Real) => {
                Some(Data::Real(Cow::Owned(x.iter().map(|&a| a as f32).collect())))
            }
            (Data::Real(x), DataType::Float) => {
                Some(Data::Float(Cow::Owned(x.iter().map(|&a| a as f64).collect())))
            }
            (Data::Float(x), DataType::Real) => {
                Some(Data::Real(Cow::Owned(x.iter().map(|&a| a as f32).collect())))
            }
            (Data::Null, _) => return Ok(Datum::Vector(Vector::broadcast(&Value::Null, to, len))),
            _ => None,
        };
        if let Some(data) = data {
            return Ok(Datum::Vector(Vector::new(data, valid, len)));
        }
    }
    map_values(d, to, |v| cast_value(&v, to), at).map_err(|e| match e {
        ExecError::Arithmetic { message, at } => ExecError::TypeMismatch { message, at },
        other => other,
    })
}

pub fn call<'a>(
    f: Func,
    args: Vec<Datum<'_>>,
    ty: DataType,
    len: usize,
    at: Location,
    rng: &Cell<u64>,
) -> Result<Datum<'a>> {
    if f == Func::NullIf {
        return nullif(args, len, at);
    }
    if f == Func::Coalesce && args.iter().any(|a| matches!(a, Datum::Vector(_))) {
        return Ok(Datum::Vector(coalesce(args, ty, len)));
    }
    if f == Func::Pow {
        if let [a, b] = args.as_slice() {
            if is_null(a) || is_null(b) {
                return Ok(Datum::Scalar(Value::Null));
            }
            if let (Ok(x), Ok(y)) = (side_float(a, at), side_float(b, at)) {
                let scalar = matches!((a, b), (Datum::Scalar(_), Datum::Scalar(_)));
                let values = zip(x, y, f64::powf);
                let valid = if scalar { None } else { both_valid(a, b, len) };
                let v = Vector::new(
                    Data::Float(Cow::Owned(values)),
                    valid.map(Cow::Owned),
                    if scalar { 1 } else { len },
                );
                return Ok(if scalar {
                    Datum::Scalar(v.get(0))
                } else {
                    Datum::Vector(v)
                });
            }
        }
    }
    if matches!(f, Func::Coalesce | Func::Least | Func::Greatest) {
        return row_wise(
            &args,
            ty,
            len,
            |vals| {
                let mut best: Option<&Value> = None;
                for v in vals {
                    if *v == Value::Null {
                        continue;
                    }
                    if f == Func::Coalesce {
                        return Ok(v.clone());
                    }
                    best = Some(match best {
                        None => v,
                        Some(b) => {
                            let less = value_order(v, b) == std::cmp::Ordering::Less;
                            if less == (f == Func::Least) { v } else { b }
                        }
                    });
                }
                Ok(best.cloned().unwrap_or(Value::Null))
            },
            at,
            false,
        );
    }
    let argc = args.len();
    if argc == 1 {
        if let Some(Datum::Vector(v)) = args.first() {
            if let Some(out) = numeric_map(f, v, at)? {
                return Ok(Datum::Vector(out));
            }
        }
    }
    let mut args = args.into_iter();
    let mut next = || args.next().unwrap_or(Datum::Scalar(Value::Null));
    match f {
        Func::Distance => {
            let args: Vec<Datum<'_>> = (0..argc).map(|_| next()).collect();
            distance(&args, len, at)
        }
        Func::Random => {
            let v: Vec<f64> = (0..len).map(|_| next_random(rng)).collect();
            Ok(Datum::Vector(Vector::from_data(Data::Float(Cow::Owned(v)), len)))
        }
        Func::Abs => map_values(
            next(),
            ty,
            |v| match v {
                Value::Int(i) => i
                    .checked_abs()
                    .map(Value::Int)
                    .ok_or_else(|| "integer out of range (INT is a 64-bit integer)".to_owned()),
                Value::Float(x) => Ok(Value::Float(x.abs())),
                Value::Real(x) => Ok(Value::Real(x.abs())),
                other => Ok(other),
            },
            at,
        ),
        Func::Sqrt => map_values(
            next(),
            ty,
            |v| match v {
                Value::Float(x) if x < 0.0 => {
                    Err("cannot take the square root of a negative number".to_owned())
                }
                Value::Real(x) if x < 0.0 => {
                    Err("cannot take the square root of a negative number".to_owned())
                }
                Value::Float(x) => Ok(Value::Float(x.sqrt())),
                Value::Real(x) => Ok(Value::Real(x.sqrt())),
                other => Ok(other),
            },
            at,
        ),
        Func::Floor | Func::Ceil => map_values(
            next(),
            ty,
            move |v| {
                let g = |x: f64| if f == Func::Floor { x.floor() } else { x.ceil() };
                Ok(match v {
                    Value::Float(x) => Value::Float(g(x)),
                    Value::Real(x) => Value::Real(g(x as f64) as f32),
                    other => other,
                })
            },
            at,
        ),
        Func::Round => {
            let x = next();
            let digits = next();
            if argc == 1 {
                return map_values(
                    x,
                    ty,
                    |v| {
                        Ok(match v {
                            Value::Real(x) => Value::Real(x.round()),
                            Value::Float(x) => Value::Float(x.round()),
                            other => other,
                        })
                    },
                    at,
                );
            }
            two_args(x, digits, ty, len, at, |a, d| match (a, d) {
                (Value::Float(x), Value::Int(d)) => {
                    let scale = 10f64.powi(d.clamp(-300, 300) as i32);
                    Ok(Value::Float((x * scale).round() / scale))
                }
                (Value::Float(x), _) => Ok(Value::Float(x.round())),
                (other, _) => Ok(other),
            })
        }
        Func::Pow => {
            let (a, b) = (next(), next());
            two_args(a, b, ty, len, at, |a, b| match (a, b) {
                (Value::Float(x), Value::Float(y)) => Ok(Value::Float(x.powf(y))),
                _ => Ok(Value::Null),
            })
        }
        Func::Lower | Func::Upper => map_values(
            next(),
            ty,
            move |v| {
                Ok(match v {
                    Value::Text(s) => Value::Text(if f == Func::Lower {
                        s.to_lowercase()
                    } else {
                        s.to_uppercase()
                    }),
                    other => other,
                })
            },
            at,
        ),
        Func::Length => map_values(
            next(),
            ty,
            |v| {
                Ok(match v {
                    Value::Text(s) => Value::Int(s.chars().count() as i64),
                    other => other,
                })
            },
            at,
        ),
        Func::Substr => {
            let rest: Vec<Datum<'_>> = std::iter::from_fn(|| Some(next())).take(3).collect();
            row_wise(
                &rest,
                ty,
                len,
                |vals| {
                    let (Value::Text(s), Value::Int(start)) = (&vals[0], &vals[1]) else {
                        return Ok(Value::Null);
                    };
                    let count = match &vals[2] {
                        Value::Int(c) if *c < 0 => {
                            return Err("negative substring length not allowed".to_owned());
                        }
                        Value::Int(c) => Some(*c),
                        _ => None,
                    };
                    // PostgreSQL: positions are 1-based and may start before the string.
                    let first = *start;
                    let end = count.map(|c| first.saturating_add(c));
                    let out: String = s
                        .chars()
                        .enumerate()
                        .filter(|(i, _)| {
                            let pos = *i as i64 + 1;
                            pos >= first && end.is_none_or(|e| pos < e)
                        })
                        .map(|(_, c)| c)
                        .collect();
                    Ok(Value::Text(out))
                },
                at,
                true,
            )
        }
        // Taken before the fixed-arity functions, above.
        Func::Coalesce | Func::Least | Func::Greatest | Func::NullIf => {
            row_wise(&[], ty, len, |_| Ok(Value::Null), at, false)
        }
    }
}

/// `nullif(a, b)`: `a`, made NULL on the rows where `a = b` is true. `b` arrives in the
/// comparison's type; `a` is brought to it for the comparison only.
fn nullif<'a>(args: Vec<Datum<'_>>, len: usize, at: Location) -> Result<Datum<'a>> {
    let mut args = args.into_iter();
    let (Some(a), Some(b)) = (args.next(), args.next()) else {
        return Err(ExecError::internal(at, "nullif without its two arguments"));
    };
    let type_of = |d: &Datum<'_>| match d {
        Datum::Scalar(v) => DataType::of(v),
        Datum::Vector(v) => v.data_type(),
    };
    let (ta, tb) = (type_of(&a), type_of(&b));
    let unconverted = matches!(
        (ta, tb),
        (DataType::Int, DataType::Entity) | (DataType::Entity, DataType::Int)
    );
    let a_cmp = if ta == tb || tb == DataType::Null || ta == DataType::Null || unconverted {
        a.view()
    } else {
        cast(a.view(), tb, at)?
    };
    let equal = compare(crate::plan::CmpOp::Eq, &a_cmp, &b, len, at)?;
    Ok(match (a, equal) {
        (a, Datum::Scalar(Value::Bool(true))) => {
            let _ = a;
            Datum::Scalar(Value::Null)
        }
        (a, Datum::Scalar(_)) => a.into_owned(),
        (a, Datum::Vector(eq)) => {
            let mut out = a.into_vector(ta, len).into_owned();
            let Data::Bool(equal) = &eq.data else {
                return Err(ExecError::internal(at, "nullif's comparison is not BOOL"));
            };
            let hits: Vec<u32> = (0..len)
                .filter(|&i| equal[i] && eq.is_valid(i))
                .map(|i| i as u32)
                .collect();
            if !hits.is_empty() {
                let nulls = Vector::broadcast(&Value::Null, ta, hits.len());
                scatter(&mut out, &hits, &nulls);
            }
            Datum::Vector(out)
        }
    })
}

/// abs, sqrt, floor, ceil and round over a numeric vector as typed loops; `None` for the
/// other functions and types, which go value by value.
fn numeric_map(f: Func, v: &Vector<'_>, at: Location) -> Result<Option<Vector<'static>>> {
    let valid = v.valid.as_ref().map(|c| Cow::Owned(c.to_vec()));
    let is_valid = |i: usize| v.valid.as_ref().is_none_or(|m| m[i]);
    let len = v.len();
    let data = match (&v.data, f) {
        (Data::Float(x), _) => {
            if f == Func::Sqrt && x.iter().enumerate().any(|(i, &a)| a < 0.0 && is_valid(i)) {
                return Err(ExecError::arithmetic(
                    at,
                    "cannot take the square root of a negative number",
                ));
            }
            let g: fn(f64) -> f64 = match f {
                Func::Abs => f64::abs,
                Func::Sqrt => f64::sqrt,
                Func::Floor => f64::floor,
                Func::Ceil => f64::ceil,
                Func::Round => f64::round,
                _ => return Ok(None),
            };
            Data::Float(Cow::Owned(x.iter().map(|&a| g(a)).collect()))
        }
        (Data::Real(x), _) => {
            if f == Func::Sqrt && x.iter().enumerate().any(|(i, &a)| a < 0.0 && is_valid(i)) {
                return Err(ExecError::arithmetic(
                    at,
                    "cannot take the square root of a negative number",
                ));
            }
            let g: fn(f32) -> f32 = match f {
                Func::Abs => f32::abs,
                Func::Sqrt => f32::sqrt,
                Func::Floor => f32::floor,
                Func::Ceil => f32::ceil,
                Func::Round => f32::round,
                _ => return Ok(None),
            };
            Data::Real(Cow::Owned(x.iter().map(|&a| g(a)).collect()))
        }
        (Data::Int(x), Func::Abs) => {
            let out: Vec<Option<i64>> = x.iter().map(|a| a.checked_abs()).collect();
            if out.iter().enumerate().any(|(i, a)| a.is_none() && is_valid(i)) {
                return Err(ExecError::arithmetic(
                    at,
                    "integer out of range (INT is a 64-bit integer)",
                ));
            }
            Data::Int(Cow::Owned(out.into_iter().map(|a| a.unwrap_or(0)).collect()))
        }
        (Data::Int(x), Func::Floor | Func::Ceil | Func::Round) => Data::Int(Cow::Owned(x.to_vec())),
        _ => return Ok(None),
    };
    Ok(Some(Vector::new(data, valid, len)))
}

/// One coordinate of a batch of points: a constant or a typed column.
#[derive(Clone, Copy)]
enum Coordinate<'x> {
    One(f64),
    Real(&'x [f32]),
    Float(&'x [f64]),
    Int(&'x [i64]),
}

impl<'x> Coordinate<'x> {
    fn of(d: &'x Datum<'_>, at: Location) -> Result<Option<Coordinate<'x>>> {
        Ok(Some(match d {
            Datum::Scalar(Value::Null) => return Ok(None),
            Datum::Scalar(Value::Int(i)) => Coordinate::One(*i as f64),
            Datum::Scalar(Value::Float(f)) => Coordinate::One(*f),
            Datum::Scalar(Value::Real(f)) => Coordinate::One(f64::from(*f)),
            Datum::Vector(v) => match &v.data {
                Data::Real(x) => Coordinate::Real(x),
                Data::Float(x) => Coordinate::Float(x),
                Data::Int(x) => Coordinate::Int(x),
                Data::Null => return Ok(None),
                _ => {
                    return Err(ExecError::internal(
                        at,
                        "distance() got a coordinate that is not a number",
                    ));
                }
            },
            Datum::Scalar(_) => {
                return Err(ExecError::internal(
                    at,
                    "distance() got a coordinate that is not a number",
                ));
            }
        }))
    }

    fn at(self, i: usize) -> f64 {
        match self {
            Coordinate::One(x) => x,
            Coordinate::Real(x) => f64::from(x[i]),
            Coordinate::Float(x) => x[i],
            Coordinate::Int(x) => x[i] as f64,
        }
    }
}

/// Adds `(a - b)²` to every row's sum, with the common shapes (a column against a
/// constant) as their own loops so that they vectorize.
fn add_squares(sum: &mut [f64], a: Coordinate<'_>, b: Coordinate<'_>) {
    match (a, b) {
        (Coordinate::Real(x), Coordinate::One(c)) | (Coordinate::One(c), Coordinate::Real(x)) => {
            for (s, &x) in sum.iter_mut().zip(x) {
                let d = f64::from(x) - c;
                *s += d * d;
            }
        }
        (Coordinate::Float(x), Coordinate::One(c)) | (Coordinate::One(c), Coordinate::Float(x)) => {
            for (s, &x) in sum.iter_mut().zip(x) {
                let d = x - c;
                *s += d * d;
            }
        }
        _ => {
            for (i, s) in sum.iter_mut().enumerate() {
                let d = a.at(i) - b.at(i);
                *s += d * d;
            }
        }
    }
}

/// `distance(p, q)` over a batch: the square root of the summed squared differences of
/// coordinates, in FLOAT, NULL where any coordinate is.
fn distance<'a>(args: &[Datum<'_>], len: usize, at: Location) -> Result<Datum<'a>> {
    let dims = args.len() / 2;
    let scalar = args.iter().all(|a| matches!(a, Datum::Scalar(_)));
    let n = if scalar { 1 } else { len };
    let mut sum = vec![0.0; n];
    for d in 0..dims {
        let (Some(a), Some(b)) = (
            Coordinate::of(&args[d], at)?,
            Coordinate::of(&args[d + dims], at)?,
        ) else {
            return Ok(Datum::Scalar(Value::Null));
        };
        add_squares(&mut sum, a, b);
    }
    sum.iter_mut().for_each(|s| *s = s.sqrt());
    let mut valid: Option<Vec<bool>> = None;
    for a in args {
        if let Datum::Vector(v) = a {
            if let Some(mask) = v.validity() {
                match &mut valid {
                    Some(all) => all.iter_mut().zip(mask.iter()).for_each(|(x, y)| *x &= *y),
                    None => valid = Some(mask.into_owned()),
                }
            }
        }
    }
    let v = Vector::new(Data::Float(Cow::Owned(sum)), valid.map(Cow::Owned), n);
    Ok(if scalar {
        Datum::Scalar(v.get(0))
    } else {
        Datum::Vector(v)
    })
}

fn is_null(d: &Datum<'_>) -> bool {
    matches!(d, Datum::Scalar(Value::Null))
}

/// coalesce over vectors: start from the first argument and fill its NULL rows from each
/// next one, a typed gather and scatter at a time.
fn coalesce(args: Vec<Datum<'_>>, ty: DataType, len: usize) -> Vector<'static> {
    let mut args = args.into_iter();
    let mut out = args.next().map_or_else(
        || Vector::broadcast(&Value::Null, ty, len),
        |a| a.into_vector(ty, len).into_owned(),
    );
    if matches!(out.data, Data::Null) {
        out = Vector::broadcast(&Value::Null, ty, len);
    }
    for next in args {
        let missing: Vec<u32> = (0..len).filter(|&i| !out.is_valid(i)).map(|i| i as u32).collect();
        if missing.is_empty() {
            break;
        }
        let fill = next.gather(&missing).into_vector(ty, missing.len());
        scatter(&mut out, &missing, &fill);
    }
    out
}

fn two_args<'a>(
    a: Datum<'_>,
    b: Datum<'_>,
    ty: DataType,
    len: usize,
    at: Location,
    f: impl Fn(Value, Value) -> std::result::Result<Value, String>,
) -> Result<Datum<'a>> {
    row_wise(&[a, b], ty, len, |v| f(v[0].clone(), v[1].clone()), at, true)
}

/// Applies `f` to each row's argument values. With `strict`, a NULL argument makes the
/// row NULL without calling `f`.
fn row_wise<'a>(
    args: &[Datum<'_>],
    ty: DataType,
    len: usize,
    f: impl Fn(&[Value]) -> std::result::Result<Value, String>,
    at: Location,
    strict: bool,
) -> Result<Datum<'a>> {
    let scalar = args.iter().all(|a| matches!(a, Datum::Scalar(_)));
    let n = if scalar { 1 } else { len };
    let mut out = Vector::empty(ty);
    let mut row = Vec::with_capacity(args.len());
    for i in 0..n {
        row.clear();
        row.extend(args.iter().map(|a| a.get(i)));
        let v = if strict && row.iter().take(2).any(|v| *v == Value::Null) {
            Value::Null
        } else {
            f(&row).map_err(|m| ExecError::arithmetic(at, m))?
        };
        let v = if DataType::of(&v) == ty || v == Value::Null {
            v
        } else {
            cast_value(&v, ty).unwrap_or(Value::Null)
        };
        out.push_value(&v);
    }
    Ok(if scalar {
        Datum::Scalar(out.get(0))
    } else {
        Datum::Vector(out)
    })
}

/// The next number of `random()`'s sequence, in [0, 1).
fn next_random(rng: &Cell<u64>) -> f64 {
    // SplitMix64: small, fast, good enough for random().
    let mut z = rng.get().wrapping_add(0x9e37_79b9_7f4a_7c15);
    rng.set(z);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

// ---- LIKE ---------------------------------------------------------------------------------

/// How a LIKE compares: negated (NOT LIKE), ILIKE, and the ESCAPE character.
#[derive(Clone, Copy, Debug)]
pub struct LikeMode {
    pub negated: bool,
    pub case_insensitive: bool,
    pub escape: Option<char>,
}

/// One piece of a pattern: a literal character, `_` (any one character) or `%` (any run).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Token {
    Char(char),
    One,
    Run,
}

/// A LIKE pattern compiled once per batch (per row when the pattern varies); patterns of
/// literals and `%` only at the ends take the fast string paths.
#[derive(Debug)]
enum Pattern {
    Exact(String),
    Prefix(String),
    Suffix(String),
    Contains(String),
    General(Vec<Token>),
}

impl Pattern {
    /// Compiles `p`; `fold` lowercases literal characters (ILIKE). Errs when the pattern
    /// ends in its escape character, which then escapes nothing.
    fn compile(p: &str, escape: Option<char>, fold: bool) -> std::result::Result<Pattern, String> {
        let mut tokens = Vec::with_capacity(p.len());
        let mut chars = p.chars();
        while let Some(c) = chars.next() {
            let literal = if Some(c) == escape {
                match chars.next() {
                    Some(next) => next,
                    None => return Err(format!("LIKE pattern {p:?} ends with its escape character")),
                }
            } else if c == '%' {
                // `%%` is one run.
                if tokens.last() != Some(&Token::Run) {
                    tokens.push(Token::Run);
                }
                continue;
            } else if c == '_' {
                tokens.push(Token::One);
                continue;
            } else {
                c
            };
            if fold {
                tokens.extend(literal.to_lowercase().map(Token::Char));
            } else {
                tokens.push(Token::Char(literal));
            }
        }
        if tokens.contains(&Token::One) {
            return Ok(Pattern::General(tokens));
        }
        let pieces: Vec<String> = tokens
            .split(|t| *t == Token::Run)
            .map(|part| {
                part.iter()
                    .map(|t| match t {
                        Token::Char(c) => *c,
                        _ => '_',
                    })
                    .collect()
            })
            .collect();
        Ok(match pieces.as_slice() {
            [exact] => Pattern::Exact(exact.clone()),
            [first, suffix] if first.is_empty() => Pattern::Suffix(suffix.clone()),
            [prefix, last] if last.is_empty() => Pattern::Prefix(prefix.clone()),
            [first, middle, last] if first.is_empty() && last.is_empty() => Pattern::Contains(middle.clone()),
            _ => Pattern::General(tokens),
        })
    }

    fn matches(&self, s: &str) -> bool {
        match self {
            Pattern::Exact(x) => s == x,
            Pattern::Prefix(x) => s.starts_with(x.as_str()),
            Pattern::Suffix(x) => s.ends_with(x.as_str()),
            Pattern::Contains(x) => s.contains(x.as_str()),
            Pattern::General(p) => {
                let text: Vec<char> = s.chars().collect();
                like_general(&text, p)
            }
        }
    }
}

/// Iterative matcher with one backtrack point, the last `%`: on a mismatch the run takes
/// one more character and matching resumes after it. Linear for one `%`, at worst
/// text × pattern; never recursive.
fn like_general(s: &[char], p: &[Token]) -> bool {
    let (mut i, mut j) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while i < s.len() {
        match p.get(j) {
            Some(Token::Run) => {
                star = Some((j, i));
                j += 1;
            }
            Some(Token::One) => {
                i += 1;
                j += 1;
            }
            Some(Token::Char(c)) if *c == s[i] => {
                i += 1;
                j += 1;
            }
            _ => match star {
                Some((sj, si)) => {
                    j = sj + 1;
                    i = si + 1;
                    star = Some((sj, si + 1));
                }
                None => return false,
            },
        }
    }
    p[j..].iter().all(|t| *t == Token::Run)
}

/// `s LIKE p` over a batch: NULL where either side is NULL.
pub fn like<'a>(s: &Datum<'_>, p: &Datum<'_>, how: LikeMode, len: usize, at: Location) -> Result<Datum<'a>> {
    if matches!(s, Datum::Scalar(Value::Null)) || matches!(p, Datum::Scalar(Value::Null)) {
        return Ok(Datum::Scalar(Value::Null));
    }
    let fold = how.case_insensitive;
    let compile = |t: &str| Pattern::compile(t, how.escape, fold).map_err(|m| ExecError::constraint(at, m));
    let scalar = matches!((s, p), (Datum::Scalar(_), Datum::Scalar(_)));
    let n = if scalar { 1 } else { len };
    let valid = if scalar { None } else { both_valid(s, p, len) };
    let is_valid = |i: usize| valid.as_ref().is_none_or(|v| v[i]);
    let constant = match p {
        Datum::Scalar(Value::Text(t)) => Some(compile(t)?),
        _ => None,
    };
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        if !is_valid(i) {
            out.push(false);
            continue;
        }
        let folded;
        let text = if fold {
            folded = text_at(s, i).to_lowercase();
            folded.as_str()
        } else {
            text_at(s, i)
        };
        let hit = match &constant {
            Some(pat) => pat.matches(text),
            None => compile(text_at(p, i))?.matches(text),
        };
        out.push(hit != how.negated);
    }
    let d = bools(out, valid);
    Ok(if scalar { Datum::Scalar(d.get(0)) } else { d })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_patterns() {
        for (s, p, want) in [
            ("ziggy", "zig%", true),
            ("ziggy", "%gy", true),
            ("ziggy", "%ggy%", true),
            ("ziggy", "z_ggy", true),
            ("ziggy", "z%y", true),
            ("ziggy", "z%x", false),
            ("ziggy", "ziggy", true),
            ("ziggy", "zig", false),
            ("", "%", true),
            ("abc", "%", true),
            ("abc", "a%b%c", true),
            ("abcb", "a%b", true),
            ("ab", "a%b%c", false),
            // A literal `%` or `_` in the text where the pattern has its wildcard.
            ("x%ay", "x%y", true),
            ("x%y", "x%y", true),
            ("x_y", "x_y", true),
            ("a%b%c", "a%%c", true),
            ("aXbXc", "a%b%c", true),
            ("aaa", "a%a%a", true),
            ("aa", "a%a%a", false),
            ("mississippi", "%iss%ppi", true),
            ("mississippi", "m%iss%iss%pi", true),
            // Escapes: the next `%`, `_` or escape is literal.
            ("50%", "50\\%", true),
            ("500", "50\\%", false),
            ("a_b", "a\\_b", true),
            ("axb", "a\\_b", false),
            ("a\\b", "a\\\\b", true),
            ("x%y%z", "%\\%y\\%%", true),
        ] {
            let pattern = Pattern::compile(p, Some('\\'), false).expect("compiles");
            assert_eq!(pattern.matches(s), want, "{s} LIKE {p}");
        }
    }

    #[test]
    fn a_pattern_ending_in_its_escape_is_refused() {
        assert!(Pattern::compile("ab\\", Some('\\'), false).is_err());
        assert!(Pattern::compile("ab\\", None, false).is_ok());
    }
}
