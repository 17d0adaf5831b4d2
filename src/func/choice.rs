//! The functions that choose among their arguments: least and greatest (min and max of
//! more than one argument), coalesce, ifnull and nullif.

use std::cmp::Ordering;

use super::rows::row_wise;
use super::{Call, Convert, Mismatch, Nulls, Properties, ScalarFunction, Signature, arity};
use crate::storage::{Value, value_order};
use crate::vector::kernels::{compare, scatter};
use crate::vector::{
    CmpOp, Data, DataType, Datum, KernelError, Operand, Vector, cast, comparison_type, unify_types,
};

/// Every argument converted to the one type they all meet in (as a CASE's branches do).
fn unified(name: &str, args: &[Operand]) -> Result<Signature, Mismatch> {
    if args.is_empty() {
        return Err(Mismatch::Arity(format!("{name} takes at least one argument")));
    }
    let mut ty = DataType::Null;
    for (i, a) in args.iter().enumerate() {
        ty = unify_types(ty, a.ty).ok_or_else(|| Mismatch::Type {
            arg: Some(i),
            message: format!("{name} mix {ty} and {}", a.ty),
        })?;
    }
    Ok(Signature::converting(vec![ty; args.len()], ty))
}

/// least and greatest: the smallest or largest argument that is not NULL.
pub struct Extreme {
    names: &'static [&'static str],
    least: bool,
}

pub const LEAST: Extreme = Extreme {
    names: &["least", "min"],
    least: true,
};

pub const GREATEST: Extreme = Extreme {
    names: &["greatest", "max"],
    least: false,
};

impl ScalarFunction for Extreme {
    fn names(&self) -> &'static [&'static str] {
        self.names
    }
    fn signature(&self, name: &str, args: &[Operand]) -> Result<Signature, Mismatch> {
        unified(name, args)
    }
    fn properties(&self) -> Properties {
        Properties::TOTAL
    }
    fn invoke(&self, args: Vec<Datum<'_>>, call: &Call<'_>) -> Result<Datum<'static>, KernelError> {
        let least = self.least;
        let pick = |values: &[Value]| {
            let mut best: Option<&Value> = None;
            for v in values.iter().filter(|v| **v != Value::Null) {
                // Of equal values, least keeps the first and greatest the last.
                best = Some(match best {
                    Some(b) if (value_order(v, b) == Ordering::Less) != least => b,
                    _ => v,
                });
            }
            Ok(best.cloned().unwrap_or(Value::Null))
        };
        row_wise(&args, call.ty, call.len, pick, call.at, false)
    }
}

/// The first argument that is not NULL: over vectors, the first argument's NULL rows
/// filled from each next one, a typed gather and scatter at a time.
fn first_valid(args: Vec<Datum<'_>>, call: &Call<'_>) -> Result<Datum<'static>, KernelError> {
    let (ty, len) = (call.ty, call.len);
    if !args.iter().any(|a| matches!(a, Datum::Vector(_))) {
        let first = |values: &[Value]| {
            Ok(values
                .iter()
                .find(|v| **v != Value::Null)
                .cloned()
                .unwrap_or(Value::Null))
        };
        return row_wise(&args, ty, len, first, call.at, false);
    }
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
    Ok(Datum::Vector(out))
}

pub struct Coalesce;

impl ScalarFunction for Coalesce {
    fn names(&self) -> &'static [&'static str] {
        &["coalesce"]
    }
    fn signature(&self, name: &str, args: &[Operand]) -> Result<Signature, Mismatch> {
        unified(name, args)
    }
    fn properties(&self) -> Properties {
        Properties::TOTAL
    }
    fn invoke(&self, args: Vec<Datum<'_>>, call: &Call<'_>) -> Result<Datum<'static>, KernelError> {
        first_valid(args, call)
    }
}

pub struct IfNull;

impl ScalarFunction for IfNull {
    fn names(&self) -> &'static [&'static str] {
        &["ifnull"]
    }
    fn signature(&self, name: &str, args: &[Operand]) -> Result<Signature, Mismatch> {
        if args.len() != 2 {
            return Err(Mismatch::Arity(format!(
                "{name} takes 2 arguments, found {}",
                args.len()
            )));
        }
        unified(name, args)
    }
    fn properties(&self) -> Properties {
        Properties::TOTAL
    }
    fn invoke(&self, args: Vec<Datum<'_>>, call: &Call<'_>) -> Result<Datum<'static>, KernelError> {
        first_valid(args, call)
    }
}

/// `nullif(a, b)`: NULL where `a = b`, else `a`. `a` keeps its type; `b` arrives as an
/// operand of the comparison, in the type the two compare in.
pub struct NullIf;

impl ScalarFunction for NullIf {
    fn names(&self) -> &'static [&'static str] {
        &["nullif"]
    }
    fn signature(&self, name: &str, args: &[Operand]) -> Result<Signature, Mismatch> {
        arity(name, args, 2, 2)?;
        let (a, b) = (args[0], args[1]);
        let compared = comparison_type(a, b).ok_or_else(|| Mismatch::Type {
            arg: None,
            message: format!("{name} cannot compare {} with {}", a.ty, b.ty),
        })?;
        // A bare NULL takes the other side's type.
        let ty = if a.ty == DataType::Null { b.ty } else { a.ty };
        Ok(Signature {
            args: vec![Convert::To(ty), Convert::Operand(compared)],
            result: ty,
        })
    }
    fn properties(&self) -> Properties {
        Properties {
            can_fail: true,
            nulls: Nulls::Sometimes,
            ..Properties::TOTAL
        }
    }
    fn invoke(&self, args: Vec<Datum<'_>>, call: &Call<'_>) -> Result<Datum<'static>, KernelError> {
        let (len, at) = (call.len, call.at);
        let [a, b] = <[Datum<'_>; 2]>::try_from(args)
            .map_err(|_| KernelError::internal(at, "nullif without its two arguments"))?;
        let type_of = |d: &Datum<'_>| match d {
            Datum::Scalar(v) => DataType::of(v),
            Datum::Vector(v) => v.data_type(),
        };
        let (ta, tb) = (type_of(&a), type_of(&b));
        let unconverted = matches!(
            (ta, tb),
            (DataType::Int, DataType::Entity) | (DataType::Entity, DataType::Int)
        );
        // `a` is brought to the comparison's type for the comparison only.
        let a_cmp = if ta == tb || tb == DataType::Null || ta == DataType::Null || unconverted {
            a.view()
        } else {
            cast(a.view(), tb, at)?
        };
        let equal = compare(CmpOp::Eq, &a_cmp, &b, len, at)?;
        Ok(match equal {
            Datum::Scalar(Value::Bool(true)) => Datum::Scalar(Value::Null),
            Datum::Scalar(_) => a.into_owned(),
            Datum::Vector(eq) => {
                let mut out = a.into_vector(ta, len).into_owned();
                let Data::Bool(equal) = &eq.data else {
                    return Err(KernelError::internal(at, "nullif's comparison is not BOOL"));
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
}
