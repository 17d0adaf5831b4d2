//! abs, sign, floor, ceil, round, trunc and mod: functions that keep an INT an INT. The
//! one-argument ones run as typed loops over FLOAT, REAL and INT vectors (`Unary`), mod
//! as a loop over two INT or two FLOAT sides. floor, ceil, round and trunc of a FLOAT or
//! a REAL are `whole.rs`'s, which equal `std`'s and vectorize.

use std::borrow::Cow;

use super::rows::{is_null, row_wise};
use super::whole;
use super::{Call, Mismatch, Properties, ScalarFunction, Signature, arity, numeric, types};
use crate::storage::Value;
use crate::vector::kernels::{both_valid, side_float, side_int, zip};
use crate::vector::{Data, DataType, Datum, KernelError, Operand, Vector};

const OVERFLOW: &str = "integer out of range (INT is a 64-bit integer)";

/// A one-argument numeric function as typed loops over FLOAT, REAL and INT; NULL rows
/// stay NULL. Generic over its functions, so that a function known where the `Unary` is
/// made (floor, abs) is inlined into its loops rather than called per value.
pub(super) struct Unary<F, R, I> {
    pub float: F,
    pub real: R,
    /// `None`: the result is out of INT's range.
    pub int: I,
    /// For a function not defined everywhere: why a FLOAT or REAL value is outside its
    /// domain (checked on the rows that are not NULL), or `None` inside it.
    pub domain: Option<fn(f64) -> Option<&'static str>>,
}

impl<F, R, I> Unary<F, R, I>
where
    F: Fn(f64) -> f64,
    R: Fn(f32) -> f32,
    I: Fn(i64) -> Option<i64>,
{
    pub fn apply(&self, arg: Datum<'_>, call: &Call<'_>) -> Result<Datum<'static>, KernelError> {
        let at = call.at;
        let refuse = |outside: Option<&'static str>| match outside {
            Some(message) => Err(KernelError::arithmetic(at, message)),
            None => Ok(()),
        };
        let outside = |x: f64| self.domain.and_then(|d| d(x));
        let v = match arg {
            Datum::Scalar(Value::Float(x)) => {
                refuse(outside(x))?;
                return Ok(Datum::Scalar(Value::Float((self.float)(x))));
            }
            Datum::Scalar(Value::Real(x)) => {
                refuse(outside(f64::from(x)))?;
                return Ok(Datum::Scalar(Value::Real((self.real)(x))));
            }
            Datum::Scalar(Value::Int(i)) => {
                let out = (self.int)(i).ok_or_else(|| KernelError::arithmetic(at, OVERFLOW))?;
                return Ok(Datum::Scalar(Value::Int(out)));
            }
            Datum::Scalar(Value::Null) => return Ok(Datum::Scalar(Value::Null)),
            Datum::Scalar(other) => {
                return Err(KernelError::internal(
                    at,
                    format!("a numeric function got {}", other.describe()),
                ));
            }
            Datum::Vector(v) => v,
        };
        let valid = |i: usize| v.is_valid(i);
        let data = match &v.data {
            Data::Float(x) => {
                if self.domain.is_some() {
                    refuse(
                        x.iter()
                            .enumerate()
                            .find_map(|(i, &a)| outside(a).filter(|_| valid(i))),
                    )?;
                }
                Data::Float(Cow::Owned(x.iter().map(|&a| (self.float)(a)).collect()))
            }
            Data::Real(x) => {
                if self.domain.is_some() {
                    refuse(
                        x.iter()
                            .enumerate()
                            .find_map(|(i, &a)| outside(f64::from(a)).filter(|_| valid(i))),
                    )?;
                }
                Data::Real(Cow::Owned(x.iter().map(|&a| (self.real)(a)).collect()))
            }
            Data::Int(x) => {
                let out: Vec<Option<i64>> = x.iter().map(|&a| (self.int)(a)).collect();
                if out.iter().enumerate().any(|(i, a)| a.is_none() && valid(i)) {
                    return Err(KernelError::arithmetic(at, OVERFLOW));
                }
                Data::Int(Cow::Owned(out.into_iter().map(|a| a.unwrap_or(0)).collect()))
            }
            Data::Null => return Ok(Datum::Vector(Vector::broadcast(&Value::Null, call.ty, v.len()))),
            _ => {
                return Err(KernelError::internal(
                    at,
                    format!("a numeric function got {} values", v.data_type()),
                ));
            }
        };
        let valid = v.valid.as_ref().map(|c| Cow::Owned(c.to_vec()));
        Ok(Datum::Vector(Vector::new(data, valid, v.len())))
    }
}

/// One numeric argument, of the result's type.
fn same_number(name: &str, args: &[Operand]) -> Result<Signature, Mismatch> {
    arity(name, args, 1, 1)?;
    numeric(name, args, 0)?;
    Ok(Signature::converting(types(args), args[0].ty))
}

/// The only argument of a one-argument call.
fn only(args: Vec<Datum<'_>>) -> Datum<'_> {
    args.into_iter().next().unwrap_or(Datum::Scalar(Value::Null))
}

pub struct Abs;

impl ScalarFunction for Abs {
    fn names(&self) -> &'static [&'static str] {
        &["abs"]
    }
    fn signature(&self, name: &str, args: &[Operand]) -> Result<Signature, Mismatch> {
        same_number(name, args)
    }
    fn properties(&self) -> Properties {
        // abs of the smallest INT overflows.
        Properties {
            can_fail: true,
            ..Properties::TOTAL
        }
    }
    fn can_fail(&self, args: &[DataType]) -> bool {
        // A float's is always a float.
        args.contains(&DataType::Int)
    }
    fn invoke(&self, args: Vec<Datum<'_>>, call: &Call<'_>) -> Result<Datum<'static>, KernelError> {
        Unary {
            float: f64::abs,
            real: f32::abs,
            int: i64::checked_abs,
            domain: None,
        }
        .apply(only(args), call)
    }
}

/// floor and ceil: to a whole number, of the argument's type.
pub struct Whole {
    names: &'static [&'static str],
    /// ceil (else floor).
    up: bool,
}

pub const FLOOR: Whole = Whole {
    names: &["floor"],
    up: false,
};

pub const CEIL: Whole = Whole {
    names: &["ceil", "ceiling"],
    up: true,
};

impl ScalarFunction for Whole {
    fn names(&self) -> &'static [&'static str] {
        self.names
    }
    fn signature(&self, name: &str, args: &[Operand]) -> Result<Signature, Mismatch> {
        same_number(name, args)
    }
    fn properties(&self) -> Properties {
        Properties::TOTAL
    }
    fn invoke(&self, args: Vec<Datum<'_>>, call: &Call<'_>) -> Result<Datum<'static>, KernelError> {
        // Each its own `Unary`, so that each loop inlines its function.
        if self.up {
            Unary {
                float: whole::float::ceil,
                real: whole::real::ceil,
                int: Some,
                domain: None,
            }
            .apply(only(args), call)
        } else {
            Unary {
                float: whole::float::floor,
                real: whole::real::floor,
                int: Some,
                domain: None,
            }
            .apply(only(args), call)
        }
    }
}

pub struct Round;

impl ScalarFunction for Round {
    fn names(&self) -> &'static [&'static str] {
        &["round"]
    }
    fn signature(&self, name: &str, args: &[Operand]) -> Result<Signature, Mismatch> {
        arity(name, args, 1, 2)?;
        numeric(name, args, 0)?;
        if let Some(t) = args.get(1).map(|a| a.ty)
            && !matches!(t, DataType::Int | DataType::Null)
        {
            return Err(Mismatch::Type {
                arg: Some(1),
                message: format!("{name} takes a whole number of digits (INT), found {t}"),
            });
        }
        Ok(if args.len() == 2 {
            // A REAL stays REAL until it is made a number as written (`written`).
            let number = match args[0].ty {
                DataType::Real => DataType::Real,
                _ => DataType::Float,
            };
            Signature::converting([number, DataType::Int], DataType::Float)
        } else {
            Signature::converting(types(args), args[0].ty)
        })
    }
    fn properties(&self) -> Properties {
        Properties::TOTAL
    }
    fn invoke(&self, args: Vec<Datum<'_>>, call: &Call<'_>) -> Result<Datum<'static>, KernelError> {
        to_whole(args, call, whole::float::round, whole::real::round)
    }
}

/// round and trunc: made whole by `float` (`real` for a REAL), or at the digits given.
fn to_whole(
    args: Vec<Datum<'_>>,
    call: &Call<'_>,
    float: impl Fn(f64) -> f64 + Copy,
    real: impl Fn(f32) -> f32,
) -> Result<Datum<'static>, KernelError> {
    if args.len() == 1 {
        return Unary {
            float,
            real,
            int: Some,
            domain: None,
        }
        .apply(only(args), call);
    }
    let whole = |v: &[Value]| match (written(&v[0]), &v[1]) {
        (Some(x), Value::Int(d)) => Ok(Value::Float(to_digits(x, *d, float))),
        (Some(x), _) => Ok(Value::Float(float(x))),
        (None, _) => Ok(Value::Null),
    };
    row_wise(&args, call.ty, call.len, whole, call.at, true)
}

/// A number to round to digits, as it is written: a REAL as its own shortest text (0.285,
/// not the 0.28499999165534973 it widens to), a FLOAT as it is.
fn written(v: &Value) -> Option<f64> {
    match v {
        Value::Float(x) => Some(*x),
        Value::Real(x) => x.to_string().parse().ok().or(Some(f64::from(*x))),
        _ => None,
    }
}

/// `x` made whole by `whole` at `digits` digits after the point (before it, when
/// negative), in decimal: `x`'s shortest text (the digits that read back as `x`) has its
/// point moved, is read, made whole, and has its point moved back, each step rounded once.
/// So a number rounds as it is written: 0.285 × 100 is 28.499999999999996 in binary, but
/// `round(0.285, 2)` is 0.29, as in PostgreSQL; a whole number stays exact; `trunc` never
/// grows a value; and a zero comes out without a sign.
fn to_digits(x: f64, digits: i64, whole: impl Fn(f64) -> f64) -> f64 {
    if !x.is_finite() {
        return x;
    }
    let digits = digits.clamp(-400, 400);
    let shifted: f64 = format!("{x}e{digits}").parse().unwrap_or(x);
    if !shifted.is_finite() {
        // More digits than a FLOAT has: nothing to change.
        return x;
    }
    let done = whole(shifted);
    format!("{done}e{}", -digits).parse::<f64>().unwrap_or(x) + 0.0
}

/// `sign(x)`: -1, 0 or 1, of `x`'s type (NaN for NaN).
pub struct Sign;

fn sign_float(x: f64) -> f64 {
    if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else if x.is_nan() {
        x
    } else {
        0.0
    }
}

fn sign_real(x: f32) -> f32 {
    sign_float(f64::from(x)) as f32
}

impl ScalarFunction for Sign {
    fn names(&self) -> &'static [&'static str] {
        &["sign"]
    }
    fn signature(&self, name: &str, args: &[Operand]) -> Result<Signature, Mismatch> {
        same_number(name, args)
    }
    fn properties(&self) -> Properties {
        Properties::TOTAL
    }
    fn invoke(&self, args: Vec<Datum<'_>>, call: &Call<'_>) -> Result<Datum<'static>, KernelError> {
        Unary {
            float: sign_float,
            real: sign_real,
            int: |i: i64| Some(i.signum()),
            domain: None,
        }
        .apply(only(args), call)
    }
}

/// `trunc(x [, digits])`: toward zero, of `x`'s type; with digits, in FLOAT.
pub struct Trunc;

impl ScalarFunction for Trunc {
    fn names(&self) -> &'static [&'static str] {
        &["trunc"]
    }
    fn signature(&self, name: &str, args: &[Operand]) -> Result<Signature, Mismatch> {
        Round.signature(name, args)
    }
    fn properties(&self) -> Properties {
        Properties::TOTAL
    }
    fn invoke(&self, args: Vec<Datum<'_>>, call: &Call<'_>) -> Result<Datum<'static>, KernelError> {
        to_whole(args, call, whole::float::trunc, whole::real::trunc)
    }
}

/// `mod(a, b)`: the remainder of `a / b`, with `a`'s sign; INT for two INTs, else FLOAT.
pub struct Mod;

const DIVISION_BY_ZERO: &str = "division by zero";

impl ScalarFunction for Mod {
    fn names(&self) -> &'static [&'static str] {
        &["mod"]
    }
    fn signature(&self, name: &str, args: &[Operand]) -> Result<Signature, Mismatch> {
        arity(name, args, 2, 2)?;
        numeric(name, args, 0)?;
        numeric(name, args, 1)?;
        let int = |t: DataType| matches!(t, DataType::Int | DataType::Null);
        let ty = match args.iter().all(|a| int(a.ty)) {
            true => DataType::Int,
            false => DataType::Float,
        };
        Ok(Signature::converting([ty; 2], ty))
    }
    fn properties(&self) -> Properties {
        Properties {
            can_fail: true,
            ..Properties::TOTAL
        }
    }
    fn invoke(&self, args: Vec<Datum<'_>>, call: &Call<'_>) -> Result<Datum<'static>, KernelError> {
        let at = call.at;
        let [a, b] = <[Datum<'_>; 2]>::try_from(args)
            .map_err(|_| KernelError::internal(at, "mod without its two arguments"))?;
        if is_null(&a) || is_null(&b) {
            return Ok(Datum::Scalar(Value::Null));
        }
        let scalar = matches!((&a, &b), (Datum::Scalar(_), Datum::Scalar(_)));
        let n = if scalar { 1 } else { call.len };
        let valid = match scalar {
            true => None,
            false => both_valid(&a, &b, call.len),
        };
        let is_valid = |i: usize| valid.as_ref().is_none_or(|v| v[i]);
        let data = if call.ty == DataType::Int {
            let (Ok(x), Ok(y)) = (side_int(&a, at), side_int(&b, at)) else {
                return by_value(a, b, call);
            };
            if (0..n).any(|i| is_valid(i) && y.at(i) == 0) {
                return Err(KernelError::arithmetic(at, DIVISION_BY_ZERO));
            }
            // i64::MIN % -1 overflows in the division, not in the remainder: 0.
            Data::Int(Cow::Owned(zip(x, y, |a, b| a.checked_rem(b).unwrap_or(0))))
        } else {
            let (Ok(x), Ok(y)) = (side_float(&a, at), side_float(&b, at)) else {
                return by_value(a, b, call);
            };
            if (0..n).any(|i| is_valid(i) && y.at(i) == 0.0) {
                return Err(KernelError::arithmetic(at, DIVISION_BY_ZERO));
            }
            Data::Float(Cow::Owned(zip(x, y, |a, b| a % b)))
        };
        let v = Vector::new(data, valid.map(Cow::Owned), n);
        Ok(if scalar {
            Datum::Scalar(v.get(0))
        } else {
            Datum::Vector(v)
        })
    }
}

/// `mod` value by value, for what is not two typed sides (an all-NULL vector).
fn by_value(a: Datum<'_>, b: Datum<'_>, call: &Call<'_>) -> Result<Datum<'static>, KernelError> {
    let each = |v: &[Value]| match (&v[0], &v[1]) {
        (Value::Int(_), Value::Int(0)) => Err(DIVISION_BY_ZERO.to_owned()),
        (Value::Float(_), Value::Float(y)) if *y == 0.0 => Err(DIVISION_BY_ZERO.to_owned()),
        (Value::Int(x), Value::Int(y)) => Ok(Value::Int(x.checked_rem(*y).unwrap_or(0))),
        (Value::Float(x), Value::Float(y)) => Ok(Value::Float(x % y)),
        _ => Ok(Value::Null),
    };
    row_wise(&[a.view(), b.view()], call.ty, call.len, each, call.at, true)
}
