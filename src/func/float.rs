//! The functions of real analysis, on FLOAT (and REAL, which stays REAL for the
//! one-argument ones): sqrt, cbrt, the trigonometric, inverse trigonometric and
//! hyperbolic functions, exp, ln, log, log10, log2, degrees, radians, pi, atan2 and
//! power. Each runs as a typed loop over a FLOAT or REAL vector (an INT argument is
//! converted to FLOAT first).
//!
//! Invariants: a NULL row stays NULL and its value is never looked at; a value outside a
//! function's domain is an error worded as PostgreSQL words it (`cannot take logarithm of
//! zero`), checked on the rows that are not NULL before any value is computed; what is
//! inside the domain follows IEEE 754 (an overflow is infinite, as `*` is, and NaN gives
//! NaN).

use std::borrow::Cow;

use super::math::Unary;
use super::rows::{is_null, row_wise};
use super::{Call, Mismatch, Nulls, Properties, ScalarFunction, Signature, arity, numeric};
use crate::storage::Value;
use crate::vector::kernels::{Side, both_valid, side_float};
use crate::vector::{Data, DataType, Datum, KernelError, Operand, Vector};

/// Why a value is outside a function's domain, or `None` inside it.
type Domain = fn(f64) -> Option<&'static str>;

const OUT_OF_RANGE: &str = "input is out of range";

fn finite(x: f64) -> Option<&'static str> {
    x.is_infinite().then_some(OUT_OF_RANGE)
}

fn unit(x: f64) -> Option<&'static str> {
    (x.abs() > 1.0).then_some(OUT_OF_RANGE)
}

fn positive(x: f64) -> Option<&'static str> {
    if x == 0.0 {
        Some("cannot take logarithm of zero")
    } else if x < 0.0 {
        Some("cannot take logarithm of a negative number")
    } else {
        None
    }
}

fn not_negative(x: f64) -> Option<&'static str> {
    (x < 0.0).then_some("cannot take square root of a negative number")
}

/// A one-argument function of a real number: REAL in, REAL out; any other number is
/// converted to FLOAT.
pub struct Real1 {
    names: &'static [&'static str],
    float: fn(f64) -> f64,
    real: fn(f32) -> f32,
    /// For a function not defined everywhere.
    domain: Option<Domain>,
}

/// A `Unary` through function pointers: a `Real1` is a constant, which holds its
/// functions as pointers (most of them a call into libm per value either way).
type ByPointer = Unary<fn(f64) -> f64, fn(f32) -> f32, fn(i64) -> Option<i64>>;

impl Real1 {
    fn unary(&self) -> ByPointer {
        Unary {
            float: self.float,
            real: self.real,
            int: Some,
            domain: self.domain,
        }
    }
}

/// The type a real function computes in for an argument of type `ty`.
fn real_type(ty: DataType) -> DataType {
    match ty {
        DataType::Real => DataType::Real,
        _ => DataType::Float,
    }
}

impl ScalarFunction for Real1 {
    fn names(&self) -> &'static [&'static str] {
        self.names
    }
    fn signature(&self, name: &str, args: &[Operand]) -> Result<Signature, Mismatch> {
        arity(name, args, 1, 1)?;
        numeric(name, args, 0)?;
        let ty = real_type(args[0].ty);
        Ok(Signature::converting([ty], ty))
    }
    fn properties(&self) -> Properties {
        Properties {
            can_fail: self.domain.is_some(),
            ..Properties::TOTAL
        }
    }
    fn invoke(&self, args: Vec<Datum<'_>>, call: &Call<'_>) -> Result<Datum<'static>, KernelError> {
        let arg = args.into_iter().next().unwrap_or(Datum::Scalar(Value::Null));
        self.unary().apply(arg, call)
    }
}

macro_rules! real1 {
    ($name:ident, $alias:literal, $f:ident) => {
        pub const $name: Real1 = Real1 {
            names: &[$alias],
            float: f64::$f,
            real: f32::$f,
            domain: None,
        };
    };
    ($name:ident, $alias:literal, $f:ident, $domain:ident) => {
        pub const $name: Real1 = Real1 {
            names: &[$alias],
            float: f64::$f,
            real: f32::$f,
            domain: Some($domain),
        };
    };
}

real1!(SQRT, "sqrt", sqrt, not_negative);
real1!(CBRT, "cbrt", cbrt);
real1!(SIN, "sin", sin, finite);
real1!(COS, "cos", cos, finite);
real1!(TAN, "tan", tan, finite);
real1!(ASIN, "asin", asin, unit);
real1!(ACOS, "acos", acos, unit);
real1!(ATAN, "atan", atan);
real1!(SINH, "sinh", sinh);
real1!(COSH, "cosh", cosh);
real1!(TANH, "tanh", tanh);
real1!(EXP, "exp", exp);
real1!(LN, "ln", ln, positive);
real1!(LOG10, "log10", log10, positive);
real1!(LOG2, "log2", log2, positive);
real1!(DEGREES, "degrees", to_degrees);
real1!(RADIANS, "radians", to_radians);

/// `log(x)`, the logarithm to base 10 (as in PostgreSQL and SQLite), and `log(b, x)`,
/// to base `b` (in FLOAT).
pub struct Log;

impl ScalarFunction for Log {
    fn names(&self) -> &'static [&'static str] {
        &["log"]
    }
    fn signature(&self, name: &str, args: &[Operand]) -> Result<Signature, Mismatch> {
        arity(name, args, 1, 2)?;
        numeric(name, args, 0)?;
        numeric(name, args, 1)?;
        Ok(match args.len() {
            1 => {
                let ty = real_type(args[0].ty);
                Signature::converting([ty], ty)
            }
            _ => Signature::converting([DataType::Float; 2], DataType::Float),
        })
    }
    fn properties(&self) -> Properties {
        Properties {
            can_fail: true,
            ..Properties::TOTAL
        }
    }
    fn invoke(&self, args: Vec<Datum<'_>>, call: &Call<'_>) -> Result<Datum<'static>, KernelError> {
        if args.len() == 1 {
            return LOG10.invoke(args, call);
        }
        Real2 {
            names: &["log"],
            f: |b, x| x.ln() / b.ln(),
            domain: Some(|b, x| {
                positive(b)
                    .or_else(|| positive(x))
                    .or_else(|| (b == 1.0).then_some("division by zero"))
            }),
        }
        .invoke(args, call)
    }
}

/// `pi()`: π as FLOAT.
pub struct Pi;

impl ScalarFunction for Pi {
    fn names(&self) -> &'static [&'static str] {
        &["pi"]
    }
    fn signature(&self, name: &str, args: &[Operand]) -> Result<Signature, Mismatch> {
        arity(name, args, 0, 0)?;
        Ok(Signature::converting([], DataType::Float))
    }
    fn properties(&self) -> Properties {
        Properties {
            nulls: Nulls::Never,
            ..Properties::TOTAL
        }
    }
    fn invoke(&self, _: Vec<Datum<'_>>, _: &Call<'_>) -> Result<Datum<'static>, KernelError> {
        Ok(Datum::Scalar(Value::Float(std::f64::consts::PI)))
    }
}

/// A two-argument function of real numbers, in FLOAT.
pub struct Real2 {
    names: &'static [&'static str],
    f: fn(f64, f64) -> f64,
    /// For a function not defined everywhere: why a pair is outside its domain, or
    /// `None` inside it.
    domain: Option<fn(f64, f64) -> Option<&'static str>>,
}

/// PostgreSQL's domain of `power`: no negative power of zero, no fractional power of a
/// negative number.
fn power_domain(x: f64, y: f64) -> Option<&'static str> {
    if x == 0.0 && y < 0.0 {
        Some("zero raised to a negative power is undefined")
    } else if x < 0.0 && y.is_finite() && y.fract() != 0.0 {
        Some("a negative number raised to a non-integer power yields a complex result")
    } else {
        None
    }
}

pub const ATAN2: Real2 = Real2 {
    names: &["atan2"],
    f: f64::atan2,
    domain: None,
};

pub const POWER: Real2 = Real2 {
    names: &["power", "pow"],
    f: f64::powf,
    domain: Some(power_domain),
};

impl ScalarFunction for Real2 {
    fn names(&self) -> &'static [&'static str] {
        self.names
    }
    fn signature(&self, name: &str, args: &[Operand]) -> Result<Signature, Mismatch> {
        arity(name, args, 2, 2)?;
        numeric(name, args, 0)?;
        numeric(name, args, 1)?;
        Ok(Signature::converting([DataType::Float; 2], DataType::Float))
    }
    fn properties(&self) -> Properties {
        Properties {
            can_fail: self.domain.is_some(),
            ..Properties::TOTAL
        }
    }
    fn invoke(&self, args: Vec<Datum<'_>>, call: &Call<'_>) -> Result<Datum<'static>, KernelError> {
        let at = call.at;
        let [a, b] = <[Datum<'_>; 2]>::try_from(args)
            .map_err(|_| KernelError::internal(at, format!("{} without its two arguments", self.names[0])))?;
        if is_null(&a) || is_null(&b) {
            return Ok(Datum::Scalar(Value::Null));
        }
        let (Ok(x), Ok(y)) = (side_float(&a, at), side_float(&b, at)) else {
            // Not two FLOAT vectors (an all-NULL one, say): value by value.
            let (f, domain) = (self.f, self.domain);
            let each = move |v: &[Value]| match (&v[0], &v[1]) {
                (Value::Float(x), Value::Float(y)) => match domain.and_then(|d| d(*x, *y)) {
                    Some(message) => Err(message.to_owned()),
                    None => Ok(Value::Float(f(*x, *y))),
                },
                _ => Ok(Value::Null),
            };
            return row_wise(&[a.view(), b.view()], call.ty, call.len, each, at, true);
        };
        let scalar = matches!((&a, &b), (Datum::Scalar(_), Datum::Scalar(_)));
        let n = if scalar { 1 } else { call.len };
        let valid = match scalar {
            true => None,
            false => both_valid(&a, &b, call.len),
        };
        if let Some(domain) = self.domain {
            let outside = (0..n)
                .filter(|&i| valid.as_ref().is_none_or(|v| v[i]))
                .find_map(|i| domain(x.at(i), y.at(i)));
            if let Some(message) = outside {
                return Err(KernelError::arithmetic(at, message));
            }
        }
        let values: Vec<f64> = match (&x, &y) {
            (Side::Many(x), Side::Many(y)) => x.iter().zip(y.iter()).map(|(&x, &y)| (self.f)(x, y)).collect(),
            _ => (0..n).map(|i| (self.f)(x.at(i), y.at(i))).collect(),
        };
        let v = Vector::new(Data::Float(Cow::Owned(values)), valid.map(Cow::Owned), n);
        Ok(if scalar {
            Datum::Scalar(v.get(0))
        } else {
            Datum::Vector(v)
        })
    }
}
