//! Arithmetic over typed columns: `+ - * / %` and negation of INT (checked: a result out
//! of range is an error), REAL and FLOAT, a division by zero refused on the rows that are
//! not NULL. A result is written into an operand's own vector when the evaluation made one
//! (no new vector), and REAL operands of FLOAT arithmetic are widened as they are read,
//! not as vectors of their own (`unwidened`, `Wide`).

use std::borrow::Cow;

use crate::exec::Result;
use crate::exec::error::ExecError;
use crate::location::Location;
use crate::plan::{ArithOp, BoundExpr, BoundKind};
use crate::storage::Value;
use crate::vector::kernels::{
    Side, both_scalar, both_valid, finish, is_null_scalar, side_int, side_real, zip,
};
use crate::vector::{Data, DataType, Datum};

pub(super) fn negate<'a>(d: Datum<'a>, at: Location) -> Result<Datum<'a>> {
    if is_null_scalar(&d) {
        return Ok(Datum::Scalar(Value::Null));
    }
    let zero = match &d {
        Datum::Scalar(v) => Datum::Scalar(match v {
            Value::Int(_) => Value::Int(0),
            Value::Float(_) => Value::Float(0.0),
            _ => Value::Real(0.0),
        }),
        Datum::Vector(v) => Datum::Scalar(match v.data {
            Data::Int(_) => Value::Int(0),
            Data::Float(_) => Value::Float(0.0),
            _ => Value::Real(0.0),
        }),
    };
    let len = match &d {
        Datum::Vector(v) => v.len(),
        Datum::Scalar(_) => 1,
    };
    arith(ArithOp::Sub, zero, d, len, false, at)
}

/// The REAL expression under a cast to FLOAT that feeds FLOAT arithmetic (`arith` widens
/// REAL operands itself), or `e`.
pub(super) fn unwidened(e: &BoundExpr, ty: DataType) -> &BoundExpr {
    match &e.kind {
        BoundKind::Cast(inner, _)
            if ty == DataType::Float && e.ty == DataType::Float && inner.ty == DataType::Real =>
        {
            inner
        }
        _ => e,
    }
}

/// A FLOAT operand: a FLOAT or REAL scalar, or a vector of either (REAL values are
/// widened as they are read).
#[derive(Clone, Copy)]
pub(super) enum Wide<'x> {
    One(f64),
    F64(&'x [f64]),
    F32(&'x [f32]),
}

pub(super) fn side_wide<'x>(d: &'x Datum<'_>, at: Location) -> Result<Wide<'x>> {
    Ok(match d {
        Datum::Scalar(Value::Float(x)) => Wide::One(*x),
        Datum::Scalar(Value::Real(x)) => Wide::One(f64::from(*x)),
        Datum::Scalar(Value::Null) => Wide::One(0.0),
        Datum::Vector(v) => match &v.data {
            Data::Float(s) => Wide::F64(s),
            Data::Real(s) => Wide::F32(s),
            _ => {
                return Err(ExecError::internal(
                    at,
                    format!("expected FLOAT or REAL data, found {}", v.data_type()),
                ));
            }
        },
        Datum::Scalar(other) => {
            return Err(ExecError::internal(
                at,
                format!("expected a FLOAT or REAL, found {}", other.describe()),
            ));
        }
    })
}

/// `f` over two FLOAT operands, row by row (into FLOAT values, or REAL ones narrowed as
/// they are made).
pub(super) fn wide_zip<U>(a: Wide<'_>, b: Wide<'_>, f: impl Fn(f64, f64) -> U) -> Vec<U> {
    fn many<A: Copy + Into<f64>, B: Copy + Into<f64>, U>(
        a: &[A],
        b: &[B],
        f: impl Fn(f64, f64) -> U,
    ) -> Vec<U> {
        a.iter().zip(b).map(|(&x, &y)| f(x.into(), y.into())).collect()
    }
    fn left<A: Copy + Into<f64>, U>(a: &[A], y: f64, f: impl Fn(f64, f64) -> U) -> Vec<U> {
        a.iter().map(|&x| f(x.into(), y)).collect()
    }
    fn right<B: Copy + Into<f64>, U>(x: f64, b: &[B], f: impl Fn(f64, f64) -> U) -> Vec<U> {
        b.iter().map(|&y| f(x, y.into())).collect()
    }
    match (a, b) {
        (Wide::F64(x), Wide::F64(y)) => many(x, y, f),
        (Wide::F64(x), Wide::F32(y)) => many(x, y, f),
        (Wide::F32(x), Wide::F64(y)) => many(x, y, f),
        (Wide::F32(x), Wide::F32(y)) => many(x, y, f),
        (Wide::F64(x), Wide::One(y)) => left(x, y, f),
        (Wide::F32(x), Wide::One(y)) => left(x, y, f),
        (Wide::One(x), Wide::F64(y)) => right(x, y, f),
        (Wide::One(x), Wide::F32(y)) => right(x, y, f),
        (Wide::One(x), Wide::One(y)) => vec![f(x, y)],
    }
}

/// The FLOAT values of `d` taken out of it, when they are its own (not borrowed from a
/// table) and `n` long.
fn owned_floats(d: &mut Datum<'_>, n: usize) -> Option<Vec<f64>> {
    match d {
        Datum::Vector(v) => match &mut v.data {
            Data::Float(Cow::Owned(values)) if values.len() == n => Some(std::mem::take(values)),
            _ => None,
        },
        Datum::Scalar(_) => None,
    }
}

/// `out[i] = out[i] op other[i]` (`out_is_left`), or `other[i] op out[i]`.
fn in_place(op: ArithOp, out: &mut [f64], other: Wide<'_>, out_is_left: bool) {
    fn each<T: Copy + Into<f64>>(out: &mut [f64], other: &[T], f: impl Fn(f64, f64) -> f64) {
        out.iter_mut().zip(other).for_each(|(o, &y)| *o = f(*o, y.into()));
    }
    macro_rules! apply {
        ($f:expr) => {
            match other {
                Wide::One(y) => out.iter_mut().for_each(|o| *o = $f(*o, y)),
                Wide::F64(s) => each(out, s, $f),
                Wide::F32(s) => each(out, s, $f),
            }
        };
    }
    match (op, out_is_left) {
        (ArithOp::Add, _) => apply!(|x: f64, y: f64| x + y),
        (ArithOp::Mul, _) => apply!(|x: f64, y: f64| x * y),
        (ArithOp::Sub, true) => apply!(|x: f64, y: f64| x - y),
        (ArithOp::Sub, false) => apply!(|x: f64, y: f64| y - x),
        (ArithOp::Div, true) => apply!(|x: f64, y: f64| x / y),
        (ArithOp::Div, false) => apply!(|x: f64, y: f64| y / x),
        (ArithOp::Mod, true) => apply!(|x: f64, y: f64| x % y),
        (ArithOp::Mod, false) => apply!(|x: f64, y: f64| y % x),
    }
}

/// `l op r` of `n` values: written into an operand that is already a vector of this
/// statement's own (a product, a sum), taken out of it by `owned`, with `apply(out,
/// other, out_is_left)`: no new vector, one stream of memory less; else into a new one
/// (`fresh`).
fn into_own_operand<T>(
    (mut l, mut r, n): (Datum<'_>, Datum<'_>, usize),
    owned: fn(&mut Datum<'_>, usize) -> Option<Vec<T>>,
    apply: impl Fn(&mut [T], &Datum<'_>, bool) -> Result<()>,
    fresh: impl FnOnce(&Datum<'_>, &Datum<'_>) -> Result<Vec<T>>,
) -> Result<Vec<T>> {
    if let Some(mut out) = owned(&mut l, n) {
        apply(&mut out, &r, true)?;
        Ok(out)
    } else if let Some(mut out) = owned(&mut r, n) {
        apply(&mut out, &l, false)?;
        Ok(out)
    } else {
        fresh(&l, &r)
    }
}

/// `d`'s REAL values when they are a vector of `n` this evaluation made (taken out of it).
fn owned_reals(d: &mut Datum<'_>, n: usize) -> Option<Vec<f32>> {
    match d {
        Datum::Vector(v) => match &mut v.data {
            Data::Real(Cow::Owned(values)) if values.len() == n => Some(std::mem::take(values)),
            _ => None,
        },
        Datum::Scalar(_) => None,
    }
}

/// `out[i] = out[i] op other[i]` (`out_is_left`), or `other[i] op out[i]`, in REAL.
fn real_in_place(op: ArithOp, out: &mut [f32], other: Side<'_, f32>, out_is_left: bool) {
    macro_rules! apply {
        ($f:expr) => {
            match other {
                Side::One(y) => out.iter_mut().for_each(|o| *o = $f(*o, y)),
                Side::Many(s) => out.iter_mut().zip(s).for_each(|(o, &y)| *o = $f(*o, y)),
            }
        };
    }
    match (op, out_is_left) {
        (ArithOp::Add, _) => apply!(|x: f32, y: f32| x + y),
        (ArithOp::Mul, _) => apply!(|x: f32, y: f32| x * y),
        (ArithOp::Sub, true) => apply!(|x: f32, y: f32| x - y),
        (ArithOp::Sub, false) => apply!(|x: f32, y: f32| y - x),
        (ArithOp::Div, true) => apply!(|x: f32, y: f32| x / y),
        (ArithOp::Div, false) => apply!(|x: f32, y: f32| y / x),
        (ArithOp::Mod, true) => apply!(|x: f32, y: f32| x % y),
        (ArithOp::Mod, false) => apply!(|x: f32, y: f32| y % x),
    }
}

fn wide_op(op: ArithOp, a: Wide<'_>, b: Wide<'_>) -> Vec<f64> {
    match op {
        ArithOp::Add => wide_zip(a, b, |x, y| x + y),
        ArithOp::Sub => wide_zip(a, b, |x, y| x - y),
        ArithOp::Mul => wide_zip(a, b, |x, y| x * y),
        ArithOp::Div => wide_zip(a, b, |x, y| x / y),
        ArithOp::Mod => wide_zip(a, b, |x, y| x % y),
    }
}

/// `l op r` over `len` rows. `wide`: the expression is FLOAT, so it is computed in FLOAT
/// even when both operands arrive as REAL (their casts to FLOAT were skipped, see
/// `unwidened`).
pub(super) fn arith<'a>(
    op: ArithOp,
    l: Datum<'_>,
    r: Datum<'_>,
    len: usize,
    wide: bool,
    at: Location,
) -> Result<Datum<'a>> {
    if is_null_scalar(&l) || is_null_scalar(&r) {
        return Ok(Datum::Scalar(Value::Null));
    }
    let scalar = both_scalar(&l, &r);
    let n = if scalar { 1 } else { len };
    let valid = if scalar { None } else { both_valid(&l, &r, len) };
    let is_valid = |i: usize| valid.as_ref().is_none_or(|v| v[i]);
    let int = matches!(&l, Datum::Scalar(Value::Int(_)))
        || matches!(&l, Datum::Vector(v) if matches!(v.data, Data::Int(_)));
    let is_float = |d: &Datum<'_>| {
        matches!(d, Datum::Scalar(Value::Float(_)))
            || matches!(d, Datum::Vector(v) if matches!(v.data, Data::Float(_)))
    };
    // FLOAT when either side is: a REAL side is widened as it is read.
    let float = wide || is_float(&l) || is_float(&r);
    let data = if int {
        let (a, b) = (side_int(&l, at)?, side_int(&r, at)?);
        if matches!(op, ArithOp::Div | ArithOp::Mod) {
            check_zero(b, n, &is_valid, |x| x == 0, at)?;
        }
        let out: Vec<Option<i64>> = match op {
            ArithOp::Add => zip(a, b, i64::checked_add),
            ArithOp::Sub => zip(a, b, i64::checked_sub),
            ArithOp::Mul => zip(a, b, i64::checked_mul),
            // Divisors of NULL rows are 0 here; they are not errors.
            ArithOp::Div => zip(a, b, |x, y| if y == 0 { Some(0) } else { x.checked_div(y) }),
            ArithOp::Mod => zip(a, b, |x, y| if y == 0 { Some(0) } else { x.checked_rem(y) }),
        };
        if let Some(i) = out
            .iter()
            .enumerate()
            .position(|(i, v)| v.is_none() && is_valid(i))
        {
            let _ = i;
            return Err(ExecError::arithmetic(
                at,
                "integer out of range (INT is a 64-bit integer)",
            ));
        }
        Data::Int(Cow::Owned(out.into_iter().map(|v| v.unwrap_or(0)).collect()))
    } else if float {
        if matches!(op, ArithOp::Div | ArithOp::Mod) {
            let zero = match side_wide(&r, at)? {
                Wide::One(y) => y == 0.0 && (0..n).any(is_valid),
                Wide::F64(ys) => ys.iter().enumerate().any(|(i, &y)| y == 0.0 && is_valid(i)),
                Wide::F32(ys) => ys.iter().enumerate().any(|(i, &y)| y == 0.0 && is_valid(i)),
            };
            if zero {
                return Err(ExecError::arithmetic(at, "division by zero"));
            }
        }
        let out = into_own_operand(
            (l, r, n),
            owned_floats,
            |out, other, left| {
                in_place(op, out, side_wide(other, at)?, left);
                Ok(())
            },
            |l, r| Ok(wide_op(op, side_wide(l, at)?, side_wide(r, at)?)),
        )?;
        Data::Float(Cow::Owned(out))
    } else {
        if matches!(op, ArithOp::Div | ArithOp::Mod) {
            check_zero(side_real(&r, at)?, n, &is_valid, |x| x == 0.0, at)?;
        }
        let out = into_own_operand(
            (l, r, n),
            owned_reals,
            |out, other, left| {
                real_in_place(op, out, side_real(other, at)?, left);
                Ok(())
            },
            |l, r| Ok(float_op(op, side_real(l, at)?, side_real(r, at)?)),
        )?;
        Data::Real(Cow::Owned(out))
    };
    Ok(finish(data, n, valid, scalar))
}

pub(super) fn float_op<
    T: Copy
        + std::ops::Add<Output = T>
        + std::ops::Sub<Output = T>
        + std::ops::Mul<Output = T>
        + std::ops::Div<Output = T>
        + std::ops::Rem<Output = T>,
>(
    op: ArithOp,
    a: Side<'_, T>,
    b: Side<'_, T>,
) -> Vec<T> {
    match op {
        ArithOp::Add => zip(a, b, |x, y| x + y),
        ArithOp::Sub => zip(a, b, |x, y| x - y),
        ArithOp::Mul => zip(a, b, |x, y| x * y),
        ArithOp::Div => zip(a, b, |x, y| x / y),
        ArithOp::Mod => zip(a, b, |x, y| x % y),
    }
}

fn check_zero<T: Copy>(
    b: Side<'_, T>,
    n: usize,
    is_valid: &impl Fn(usize) -> bool,
    zero: impl Fn(T) -> bool,
    at: Location,
) -> Result<()> {
    let bad = match b {
        Side::One(y) => zero(y) && (0..n).any(is_valid),
        Side::Many(ys) => ys.iter().enumerate().any(|(i, &y)| zero(y) && is_valid(i)),
    };
    if bad {
        Err(ExecError::arithmetic(at, "division by zero"))
    } else {
        Ok(())
    }
}
