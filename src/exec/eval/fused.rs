//! One-pass shapes of arithmetic, each giving the very values of the passes it replaces:
//! a REAL sum with a product (`x + vx * delta_time()`: `real_multiply_add`, `ScaledSum`),
//! and FLOAT `+ - *` stored into REAL, narrowed as its values are made (`narrowed_arith`).
//! Operands are evaluated left to right, as written, so that errors and random() draws
//! come as the passes would give them.

use std::borrow::Cow;

use super::arith::{Wide, arith, side_wide, unwidened, wide_zip};
use super::{EvalCtx, Result, eval};
use crate::exec::error::ExecError;
use crate::location::Location;
use crate::plan::{ArithOp, BoundExpr, BoundKind};
use crate::vector::kernels::{Side, all_valid, both_scalar, both_valid, finish, is_null_scalar, side_real};
use crate::vector::{Batch, Data, DataType, Datum, any_infinite, infinite_bit};

/// What `narrowed_arith` made of a cast.
pub(super) enum Narrowed<'b> {
    /// The cast's result.
    Done(Datum<'b>),
    /// The value to cast, computed on the way (a value out of REAL's range was met: the
    /// cast says which).
    Computed(Datum<'b>),
    /// Not a cast it handles.
    No,
}

/// `CAST(l op r AS REAL)` of FLOAT `+`, `-` or `*` (a FLOAT expression stored into a REAL
/// field): the last operation's results narrowed as they are made, with no FLOAT vector
/// between them. Values out of REAL's range are looked for after, as `cast` does.
pub(super) fn narrowed_arith<'b>(
    e: &BoundExpr,
    x: &BoundExpr,
    b: &'b Batch<'_>,
    cx: &EvalCtx<'_>,
) -> Result<Narrowed<'b>> {
    let BoundKind::Arith(op @ (ArithOp::Add | ArithOp::Sub | ArithOp::Mul), l, r) = &x.kind else {
        return Ok(Narrowed::No);
    };
    if e.ty != DataType::Real || x.ty != DataType::Float {
        return Ok(Narrowed::No);
    }
    let is_product =
        |p: &BoundExpr| matches!(p.kind, BoundKind::Arith(ArithOp::Mul, _, _)) && p.ty == DataType::Float;
    if matches!(op, ArithOp::Add | ArithOp::Sub) && (is_product(r) || (*op == ArithOp::Add && is_product(l)))
    {
        // `a ± y * z` (or `y * z + a`): integrating a position or a velocity.
        let (a, product, product_first) = if is_product(r) {
            (l, r, false)
        } else {
            (r, l, true)
        };
        let BoundKind::Arith(_, y, z) = &product.kind else {
            return Ok(Narrowed::No);
        };
        // Left to right, as written: which error is met first and the order random()
        // draws in are those of the passes this replaces (as in `real_multiply_add`; a
        // function returning the three was a memcpy of them, 4% of tick_20_systems).
        let (a, y, z) = if product_first {
            let y = eval(unwidened(y, x.ty), b, cx)?;
            let z = eval(unwidened(z, x.ty), b, cx)?;
            (eval(unwidened(a, x.ty), b, cx)?, y, z)
        } else {
            let a = eval(unwidened(a, x.ty), b, cx)?;
            (
                a,
                eval(unwidened(y, x.ty), b, cx)?,
                eval(unwidened(z, x.ty), b, cx)?,
            )
        };
        if let Some(done) = multiply_add(*op == ArithOp::Sub, product_first, &a, &y, &z, b.len, x.at)? {
            return Ok(Narrowed::Done(done));
        }
        let yz = arith(ArithOp::Mul, y, z, b.len, true, product.at)?;
        return if product_first {
            narrow_pair(*op, yz, a, b.len, x.at)
        } else {
            narrow_pair(*op, a, yz, b.len, x.at)
        };
    }
    let l = eval(unwidened(l, x.ty), b, cx)?;
    let r = eval(unwidened(r, x.ty), b, cx)?;
    narrow_pair(*op, l, r, b.len, x.at)
}

/// Whether `e` is a REAL product (`vx * delta_time()`).
pub(super) fn is_real_product(e: &BoundExpr) -> bool {
    e.ty == DataType::Real && matches!(e.kind, BoundKind::Arith(ArithOp::Mul, _, _))
}

/// `l ± r` in REAL where a side is a REAL product (`is_real_product`): `x + vx *
/// delta_time()`, a position integrated by its velocity. Its operands are evaluated as
/// written, left to right; when the sum's other side is a vector and the product a vector
/// times a value the same for every row, the result is made in one pass (`ScaledSum`),
/// with no vector of products. Any other shape is the two passes.
pub(super) fn real_multiply_add<'b>(
    op: ArithOp,
    l: &BoundExpr,
    r: &BoundExpr,
    b: &'b Batch<'_>,
    cx: &EvalCtx<'_>,
    at: Location,
) -> Result<Datum<'b>> {
    let product_first = !is_real_product(r);
    let (a, product) = if product_first { (r, l) } else { (l, r) };
    let BoundKind::Arith(_, y, z) = &product.kind else {
        return Err(ExecError::internal(at, "a product without operands"));
    };
    // Left to right, as written (as in `narrowed_arith`).
    let (a, y, z) = if product_first {
        let y = eval(y, b, cx)?;
        let z = eval(z, b, cx)?;
        (eval(a, b, cx)?, y, z)
    } else {
        let a = eval(a, b, cx)?;
        (a, eval(y, b, cx)?, eval(z, b, cx)?)
    };
    if !([&a, &y, &z].iter().any(|d| is_null_scalar(d))) {
        // Operands not read as REAL (none the binder makes) take the two passes.
        let sides = (
            side_real(&a, at).ok(),
            side_real(&y, at).ok(),
            side_real(&z, at).ok(),
        );
        let (xs, vs, s) = match sides {
            (Some(Side::Many(xs)), Some(Side::Many(vs)), Some(Side::One(s)))
            | (Some(Side::Many(xs)), Some(Side::One(s)), Some(Side::Many(vs))) => (xs, vs, s),
            _ => (&[][..], &[][..], 0.0),
        };
        if xs.len() == b.len && vs.len() == b.len && b.len > 0 {
            let sum = ScaledSum {
                sub: op == ArithOp::Sub,
                product_first,
            };
            let out = sum.run(xs, vs, s);
            let valid = all_valid(&[&a, &y, &z], b.len);
            return Ok(finish(Data::Real(Cow::Owned(out)), b.len, valid, false));
        }
    }
    let yz = arith(ArithOp::Mul, y, z, b.len, false, product.at)?;
    if product_first {
        arith(op, yz, a, b.len, false, at)
    } else {
        arith(op, a, yz, b.len, false, at)
    }
}

/// `x ± v * s` over REAL vectors `x`, `v` and a REAL `s` (`v * s ± x` when
/// `product_first`): the very f32 operations of the two passes it replaces (Rust never
/// fuses a multiply and an add), so the same values. (A NaN's payload is the one thing
/// neither promises: the compiler may swap the operands of `+` and `*`.)
#[derive(Clone, Copy)]
pub(super) struct ScaledSum {
    pub(super) sub: bool,
    pub(super) product_first: bool,
}

impl ScaledSum {
    pub(super) fn run(self, xs: &[f32], vs: &[f32], s: f32) -> Vec<f32> {
        macro_rules! each {
            ($f:expr) => {
                xs.iter().zip(vs).map(|(&x, &v)| $f(x, v)).collect()
            };
        }
        match (self.sub, self.product_first) {
            (false, false) => each!(|x: f32, v: f32| x + v * s),
            (false, true) => each!(|x: f32, v: f32| v * s + x),
            (true, false) => each!(|x: f32, v: f32| x - v * s),
            (true, true) => each!(|x: f32, v: f32| v * s - x),
        }
    }
}

/// `l op r` in FLOAT, narrowed to REAL as the values are made; `Computed` (the FLOAT
/// values, for the cast to check) where a value is out of REAL's range or an operand is a
/// NULL or every operand a scalar.
fn narrow_pair<'b>(
    op: ArithOp,
    l: Datum<'_>,
    r: Datum<'_>,
    len: usize,
    at: Location,
) -> Result<Narrowed<'b>> {
    let plain = |d: &Datum<'_>| !is_null_scalar(d);
    if !(plain(&l) && plain(&r)) || both_scalar(&l, &r) {
        return Ok(Narrowed::Computed(arith(op, l, r, len, true, at)?));
    }
    let (wl, wr) = (side_wide(&l, at)?, side_wide(&r, at)?);
    let f = |p: f64| p as f32;
    let out: Vec<f32> = match op {
        ArithOp::Add => wide_zip(wl, wr, |a, c| f(a + c)),
        ArithOp::Sub => wide_zip(wl, wr, |a, c| f(a - c)),
        _ => wide_zip(wl, wr, |a, c| f(a * c)),
    };
    if any_infinite(&out) {
        // Some value is infinite: computed again in FLOAT, the cast finds which.
        return Ok(Narrowed::Computed(arith(op, l, r, len, true, at)?));
    }
    let valid = both_valid(&l, &r, len);
    Ok(Narrowed::Done(finish(
        Data::Real(Cow::Owned(out)),
        len,
        valid,
        false,
    )))
}

/// `a ± y * z` (`y * z - a` when `product_first`) in FLOAT narrowed to REAL in one pass,
/// when `a` is a vector and the product is a vector times a scalar (dt, a constant): the
/// same operations in the same order as the passes it replaces. `None` for other shapes
/// and when a value is out of REAL's range (the caller computes it the long way).
fn multiply_add<'a>(
    sub: bool,
    product_first: bool,
    a: &Datum<'_>,
    y: &Datum<'_>,
    z: &Datum<'_>,
    len: usize,
    at: Location,
) -> Result<Option<Datum<'a>>> {
    // A NULL scalar or an all-NULL vector: the general path makes the result NULL.
    if [a, y, z].iter().any(|d| is_null_scalar(d)) {
        return Ok(None);
    }
    let (wa, wy, wz) = (side_wide(a, at)?, side_wide(y, at)?, side_wide(z, at)?);
    let (v, s) = match (wy, wz) {
        (Wide::One(s), v @ (Wide::F32(_) | Wide::F64(_)))
        | (v @ (Wide::F32(_) | Wide::F64(_)), Wide::One(s)) => (v, s),
        _ => return Ok(None),
    };
    // The values, and whether one became an infinity (tested as it is made: one integer
    // test on its bits, branch-free, so the loop stays vectorized and no second pass reads
    // the values again).
    fn run<A: Copy + Into<f64>, V: Copy + Into<f64>>(
        a: &[A],
        v: &[V],
        s: f64,
        g: impl Fn(f64, f64) -> f64,
    ) -> (Vec<f32>, bool) {
        let mut infinite = 0u32;
        let out = a
            .iter()
            .zip(v)
            .map(|(&a, &v)| {
                let x = g(a.into(), v.into() * s) as f32;
                infinite |= infinite_bit(x);
                x
            })
            .collect();
        (out, infinite != 0)
    }
    macro_rules! with {
        ($g:expr) => {
            match (wa, v) {
                (Wide::F32(a), Wide::F32(v)) => run(a, v, s, $g),
                (Wide::F32(a), Wide::F64(v)) => run(a, v, s, $g),
                (Wide::F64(a), Wide::F32(v)) => run(a, v, s, $g),
                (Wide::F64(a), Wide::F64(v)) => run(a, v, s, $g),
                _ => return Ok(None),
            }
        };
    }
    let (out, infinite) = match (sub, product_first) {
        (false, _) => with!(|a: f64, p: f64| a + p),
        (true, false) => with!(|a: f64, p: f64| a - p),
        (true, true) => with!(|a: f64, p: f64| p - a),
    };
    if out.len() != len || infinite {
        return Ok(None);
    }
    let valid = all_valid(&[a, y, z], len);
    Ok(Some(finish(Data::Real(Cow::Owned(out)), len, valid, false)))
}
