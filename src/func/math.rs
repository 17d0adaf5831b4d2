//! abs, sqrt, pow, floor, ceil and round. The one-argument ones run as typed loops over
//! FLOAT, REAL and INT vectors (`Unary`).

use std::borrow::Cow;

use super::rows::{is_null, row_wise};
use super::{Call, Mismatch, Properties, ScalarFunction, Signature, arity, numeric, types};
use crate::storage::Value;
use crate::vector::kernels::{both_valid, side_float, zip};
use crate::vector::{Data, DataType, Datum, KernelError, Operand, Vector};

const OVERFLOW: &str = "integer out of range (INT is a 64-bit integer)";

/// A one-argument numeric function as typed loops over FLOAT, REAL and INT; NULL rows
/// stay NULL.
struct Unary {
    float: fn(f64) -> f64,
    real: fn(f32) -> f32,
    /// `None`: the result is out of INT's range.
    int: fn(i64) -> Option<i64>,
    /// The error for a negative argument, for a function undefined there.
    negative: Option<&'static str>,
}

impl Unary {
    fn apply(&self, arg: Datum<'_>, call: &Call<'_>) -> Result<Datum<'static>, KernelError> {
        let at = call.at;
        let refuse = |negative: bool| match self.negative {
            Some(message) if negative => Err(KernelError::arithmetic(at, message)),
            _ => Ok(()),
        };
        let v = match arg {
            Datum::Scalar(Value::Float(x)) => {
                refuse(x < 0.0)?;
                return Ok(Datum::Scalar(Value::Float((self.float)(x))));
            }
            Datum::Scalar(Value::Real(x)) => {
                refuse(x < 0.0)?;
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
                refuse(x.iter().enumerate().any(|(i, &a)| a < 0.0 && valid(i)))?;
                Data::Float(Cow::Owned(x.iter().map(|&a| (self.float)(a)).collect()))
            }
            Data::Real(x) => {
                refuse(x.iter().enumerate().any(|(i, &a)| a < 0.0 && valid(i)))?;
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
            negative: None,
        }
        .apply(only(args), call)
    }
}

pub struct Sqrt;

impl ScalarFunction for Sqrt {
    fn names(&self) -> &'static [&'static str] {
        &["sqrt"]
    }
    fn signature(&self, name: &str, args: &[Operand]) -> Result<Signature, Mismatch> {
        arity(name, args, 1, 1)?;
        numeric(name, args, 0)?;
        let ty = if args[0].ty == DataType::Real {
            DataType::Real
        } else {
            DataType::Float
        };
        Ok(Signature::converting([ty], ty))
    }
    fn properties(&self) -> Properties {
        Properties {
            can_fail: true,
            ..Properties::TOTAL
        }
    }
    fn invoke(&self, args: Vec<Datum<'_>>, call: &Call<'_>) -> Result<Datum<'static>, KernelError> {
        Unary {
            float: f64::sqrt,
            real: f32::sqrt,
            int: Some,
            negative: Some("cannot take the square root of a negative number"),
        }
        .apply(only(args), call)
    }
}

pub struct Pow;

impl ScalarFunction for Pow {
    fn names(&self) -> &'static [&'static str] {
        &["pow", "power"]
    }
    fn signature(&self, name: &str, args: &[Operand]) -> Result<Signature, Mismatch> {
        arity(name, args, 2, 2)?;
        numeric(name, args, 0)?;
        numeric(name, args, 1)?;
        Ok(Signature::converting([DataType::Float; 2], DataType::Float))
    }
    fn properties(&self) -> Properties {
        Properties::TOTAL
    }
    fn invoke(&self, args: Vec<Datum<'_>>, call: &Call<'_>) -> Result<Datum<'static>, KernelError> {
        let [a, b] = <[Datum<'_>; 2]>::try_from(args)
            .map_err(|_| KernelError::internal(call.at, "pow without its two arguments"))?;
        if is_null(&a) || is_null(&b) {
            return Ok(Datum::Scalar(Value::Null));
        }
        let (Ok(x), Ok(y)) = (side_float(&a, call.at), side_float(&b, call.at)) else {
            // Not two FLOAT vectors (an all-NULL one, say): value by value.
            let pow = |v: &[Value]| match (&v[0], &v[1]) {
                (Value::Float(x), Value::Float(y)) => Ok(Value::Float(x.powf(*y))),
                _ => Ok(Value::Null),
            };
            return row_wise(&[a.view(), b.view()], call.ty, call.len, pow, call.at, true);
        };
        let scalar = matches!((&a, &b), (Datum::Scalar(_), Datum::Scalar(_)));
        let values = zip(x, y, f64::powf);
        let valid = if scalar {
            None
        } else {
            both_valid(&a, &b, call.len)
        };
        let v = Vector::new(
            Data::Float(Cow::Owned(values)),
            valid.map(Cow::Owned),
            if scalar { 1 } else { call.len },
        );
        Ok(if scalar {
            Datum::Scalar(v.get(0))
        } else {
            Datum::Vector(v)
        })
    }
}

/// floor and ceil: to a whole number, of the argument's type.
pub struct Whole {
    names: &'static [&'static str],
    float: fn(f64) -> f64,
    real: fn(f32) -> f32,
}

pub const FLOOR: Whole = Whole {
    names: &["floor"],
    float: f64::floor,
    real: f32::floor,
};

pub const CEIL: Whole = Whole {
    names: &["ceil", "ceiling"],
    float: f64::ceil,
    real: f32::ceil,
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
        Unary {
            float: self.float,
            real: self.real,
            int: Some,
            negative: None,
        }
        .apply(only(args), call)
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
        numeric(name, args, 1)?;
        Ok(if args.len() == 2 {
            Signature::converting([DataType::Float, DataType::Int], DataType::Float)
        } else {
            Signature::converting(types(args), args[0].ty)
        })
    }
    fn properties(&self) -> Properties {
        Properties::TOTAL
    }
    fn invoke(&self, args: Vec<Datum<'_>>, call: &Call<'_>) -> Result<Datum<'static>, KernelError> {
        if args.len() == 1 {
            return Unary {
                float: f64::round,
                real: f32::round,
                int: Some,
                negative: None,
            }
            .apply(only(args), call);
        }
        let round = |v: &[Value]| match (&v[0], &v[1]) {
            (Value::Float(x), Value::Int(d)) => {
                let scale = 10f64.powi((*d).clamp(-300, 300) as i32);
                Ok(Value::Float((x * scale).round() / scale))
            }
            (Value::Float(x), _) => Ok(Value::Float(x.round())),
            (other, _) => Ok(other.clone()),
        };
        row_wise(&args, call.ty, call.len, round, call.at, true)
    }
}
