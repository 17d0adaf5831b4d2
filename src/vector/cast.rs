//! CAST over a datum: the common numeric widenings as typed loops, the rest value by
//! value by `cast_value`'s rules. A value that does not convert is a type mismatch.

use std::borrow::Cow;
use std::fmt;

use super::data::{Data, Datum, Vector};
use super::error::KernelError;
use super::kernels::map_values;
use super::types::{DataType, cast_value};
use crate::location::Location;
use crate::storage::Value;

type Result<T> = std::result::Result<T, KernelError>;

/// Whether any value is an infinity: one integer test on each value's bits (infinity's,
/// sign cleared), which the compiler vectorizes, and no branch per value.
pub fn any_infinite(values: &[f32]) -> bool {
    values.iter().fold(0u32, |n, &v| n | infinite_bit(v)) != 0
}

/// 1 when `x` is an infinity, else 0: an integer test on its bits (infinity's, sign
/// cleared), with no branch, for loops that OR it up as they go.
#[inline]
pub fn infinite_bit(x: f32) -> u32 {
    u32::from(x.to_bits() & 0x7fff_ffff == 0x7f80_0000)
}

/// `d` converted to `to`; NULLs stay NULL.
pub fn cast<'a>(d: Datum<'a>, to: DataType, at: Location) -> Result<Datum<'a>> {
    if let Datum::Scalar(v) = &d {
        return cast_one(v, to, at).map(Datum::Scalar);
    }
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
                // A finite value past REAL's range would become an infinity: refused. The
                // narrowed values are tested for infinities in one branch-free pass; only
                // when one is found is the first finite value that became one (not under a
                // NULL) looked for.
                let real: Vec<f32> = x.iter().map(|&a| a as f32).collect();
                // Infinity's bits, sign cleared: an integer test the compiler vectorizes.
                let past = any_infinite(&real)
                    .then(|| {
                        x.iter()
                            .zip(&real)
                            .enumerate()
                            .find(|&(i, (a, r))| a.is_finite() && r.is_infinite() && v.is_valid(i))
                    })
                    .flatten();
                if let Some((_, (&a, _))) = past {
                    return Err(KernelError::TypeMismatch {
                        message: format!("{} is out of range for REAL", Value::Float(a).describe()),
                        at,
                    });
                }
                Some(Data::Real(Cow::Owned(real)))
            }
            // Ids as the integers of their bits, when every one fits an INT (else value by
            // value, which names the one that does not); a NULL id stays NULL.
            (Data::Entity(x), DataType::Int)
                if x.iter().flatten().all(|e| i64::try_from(e.to_bits()).is_ok()) =>
            {
                let ints: Vec<i64> = x.iter().map(|e| e.map_or(0, |e| e.to_bits() as i64)).collect();
                let valid = match x.iter().all(Option::is_some) {
                    true => valid,
                    false => Some(Cow::Owned(
                        x.iter()
                            .enumerate()
                            .map(|(i, e)| e.is_some() && v.is_valid(i))
                            .collect(),
                    )),
                };
                return Ok(Datum::Vector(Vector::new(
                    Data::Int(Cow::Owned(ints)),
                    valid,
                    len,
                )));
            }
            (Data::Null, _) => return Ok(Datum::Vector(Vector::broadcast(&Value::Null, to, len))),
            _ => None,
        };
        if let Some(data) = data {
            return Ok(Datum::Vector(Vector::new(data, valid, len)));
        }
    }
    map_values(d, to, |v| cast_value(&v, to), at).map_err(|e| match e {
        KernelError::Arithmetic { message, at } => KernelError::TypeMismatch { message, at },
        other => other,
    })
}

/// One value converted to `to`, as `cast` converts a scalar (NULL stays NULL); an error
/// is a type mismatch naming the value.
pub fn cast_one(value: &Value, to: DataType, at: Location) -> Result<Value> {
    cast_value(value, to).map_err(|message| KernelError::TypeMismatch { message, at })
}

/// `d` converted for storing into a field of type `to` (`field` names it): as `cast`, but a
/// FLOAT or REAL stored into INT must be whole, and a value that does not convert says
/// which field it was for. Every store goes through here (or `store_value`).
pub fn store_cast<'a>(
    d: Datum<'a>,
    to: DataType,
    field: &dyn fmt::Display,
    at: Location,
) -> Result<Datum<'a>> {
    if to == DataType::Int {
        check_whole(&d, field, at)?;
    }
    cast(d, to, at).map_err(|e| match e {
        KernelError::TypeMismatch { message, at } => KernelError::TypeMismatch {
            message: format!("{message}, the type of {field}"),
            at,
        },
        other => other,
    })
}

/// `store_cast` of one value, for what is known when a statement is planned; the error is
/// the message. `field` is written out only into an error.
pub fn store_value(
    value: &Value,
    to: DataType,
    field: &dyn fmt::Display,
) -> std::result::Result<Value, String> {
    if to == DataType::Int {
        check_whole(&Datum::Scalar(value.clone()), field, Location::default()).map_err(|e| match e {
            KernelError::TypeMismatch { message, .. } => message,
            other => other.to_string(),
        })?;
    }
    cast_value(value, to).map_err(|m| format!("{m}, the type of {field}"))
}

/// For a value stored into an INT field (`field` names it): the first FLOAT or REAL of `d`
/// that is not whole is an error, since rounding it would store what was not written.
fn check_whole(d: &Datum<'_>, field: &dyn fmt::Display, at: Location) -> Result<()> {
    let not_whole = |x: f64| x.is_finite() && x.fract() != 0.0;
    let found = match d {
        Datum::Scalar(Value::Float(x)) if not_whole(*x) => Some(Value::Float(*x)),
        Datum::Scalar(Value::Real(x)) if not_whole(f64::from(*x)) => Some(Value::Real(*x)),
        Datum::Vector(v) => match &v.data {
            Data::Float(xs) => xs
                .iter()
                .enumerate()
                .find(|&(i, &x)| not_whole(x) && v.is_valid(i))
                .map(|(_, &x)| Value::Float(x)),
            Data::Real(xs) => xs
                .iter()
                .enumerate()
                .find(|&(i, &x)| not_whole(f64::from(x)) && v.is_valid(i))
                .map(|(_, &x)| Value::Real(x)),
            _ => None,
        },
        _ => None,
    };
    match found {
        Some(v) => Err(KernelError::TypeMismatch {
            message: format!(
                "{field} is INT and {} is not whole (round(), floor(), ceil() or CAST(… AS INT) makes it one)",
                v.describe()
            ),
            at,
        }),
        None => Ok(()),
    }
}
