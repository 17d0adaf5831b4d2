//! The value-by-value path that functions without a typed loop share: each row's
//! argument values in, one value out, converted to the result type.

use crate::location::Location;
use crate::storage::Value;
use crate::vector::{DataType, Datum, KernelError, Vector, cast_value};

/// Applies `f` to each row's argument values. With `strict`, a NULL in either of the
/// first two arguments makes the row NULL without calling `f`. Scalars give a scalar.
pub fn row_wise(
    args: &[Datum<'_>],
    ty: DataType,
    len: usize,
    f: impl Fn(&[Value]) -> Result<Value, String>,
    at: Location,
    strict: bool,
) -> Result<Datum<'static>, KernelError> {
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
            f(&row).map_err(|m| KernelError::arithmetic(at, m))?
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

pub fn is_null(d: &Datum<'_>) -> bool {
    matches!(d, Datum::Scalar(Value::Null))
}
