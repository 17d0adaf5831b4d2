//! Three-valued logic: NOT, AND and OR (`logic`: the right side runs only on the rows the
//! left side has not decided), and CASE (each branch only on the rows no earlier one
//! took), so that a conditional part never fails on a row it does not choose.

use std::borrow::Cow;

use super::{EvalCtx, Result, Selection, eval, select_rows};
use crate::plan::BoundExpr;
use crate::storage::Value;
use crate::vector::kernels::{Side, bools, scatter, zip};
use crate::vector::{Batch, Data, DataType, Datum, Vector};

pub(super) fn map_bool<'a>(d: Datum<'a>, f: impl Fn(bool) -> bool) -> Datum<'a> {
    match d {
        Datum::Scalar(Value::Bool(v)) => Datum::Scalar(Value::Bool(f(v))),
        Datum::Scalar(_) => Datum::Scalar(Value::Null),
        Datum::Vector(v) => match &v.data {
            Data::Bool(values) => {
                let out = values.iter().map(|&x| f(x)).collect();
                bools(out, v.validity().map(Cow::into_owned))
            }
            _ => Datum::Scalar(Value::Null),
        },
    }
}

/// A boolean operand read row by row without boxing: `None` is NULL.
enum BoolView<'x> {
    One(Option<bool>),
    Many(&'x [bool], Option<Cow<'x, [bool]>>),
}

impl<'x> BoolView<'x> {
    fn of(d: &'x Datum<'_>) -> BoolView<'x> {
        match d {
            Datum::Scalar(Value::Bool(b)) => BoolView::One(Some(*b)),
            Datum::Scalar(_) => BoolView::One(None),
            Datum::Vector(v) => match &v.data {
                Data::Bool(values) => BoolView::Many(values, v.validity()),
                _ => BoolView::One(None),
            },
        }
    }

    fn at(&self, i: usize) -> Option<bool> {
        match self {
            BoolView::One(b) => *b,
            BoolView::Many(values, None) => Some(values[i]),
            BoolView::Many(values, Some(valid)) => valid[i].then_some(values[i]),
        }
    }
}

/// Three-valued AND (`is_and`) or OR of two full-length operands.
fn combine<'a>(is_and: bool, a: &Datum<'_>, b: &Datum<'_>, len: usize) -> Datum<'a> {
    let (x, y) = (BoolView::of(a), BoolView::of(b));
    if let (BoolView::One(p), BoolView::One(q)) = (&x, &y) {
        return Datum::Scalar(three_valued(is_and, *p, *q).map_or(Value::Null, Value::Bool));
    }
    // The common case, no NULLs on either side, as a plain loop.
    if let (BoolView::Many(p, None), BoolView::Many(q, None)) = (&x, &y) {
        let values = if is_and {
            zip(Side::Many(p), Side::Many(q), |a, b| a & b)
        } else {
            zip(Side::Many(p), Side::Many(q), |a, b| a | b)
        };
        return bools(values, None);
    }
    let mut values = Vec::with_capacity(len);
    let mut valid = Vec::with_capacity(len);
    for i in 0..len {
        let r = three_valued(is_and, x.at(i), y.at(i));
        values.push(r.unwrap_or(false));
        valid.push(r.is_some());
    }
    let valid = if valid.iter().all(|v| *v) {
        None
    } else {
        Some(valid)
    };
    bools(values, valid)
}

fn three_valued(is_and: bool, a: Option<bool>, b: Option<bool>) -> Option<bool> {
    let decisive = !is_and;
    if a == Some(decisive) || b == Some(decisive) {
        Some(decisive)
    } else if a.is_some() && b.is_some() {
        Some(!decisive)
    } else {
        None
    }
}

pub(super) fn or_data<'a>(a: &Datum<'_>, b: &Datum<'_>, len: usize) -> Datum<'a> {
    combine(false, a, b, len)
}

/// AND / OR: the right side runs only on rows the left side has not decided.
pub(super) fn logic<'b>(
    is_and: bool,
    l: &BoundExpr,
    r: &BoundExpr,
    b: &'b Batch<'_>,
    cx: &EvalCtx<'_>,
) -> Result<Datum<'b>> {
    let left = eval(l, b, cx)?;
    let decisive = !is_and;
    if let Datum::Scalar(Value::Bool(v)) = left
        && v == decisive
    {
        return Ok(Datum::Scalar(Value::Bool(decisive)));
    }
    // A right side that cannot fail is cheaper to run on every row than to gather, run
    // on the undecided rows, and scatter back.
    if r.cannot_fail() {
        let right = eval(r, b, cx)?;
        return Ok(combine(is_and, &left, &right, b.len));
    }
    let view = BoolView::of(&left);
    let undecided: Vec<u32> = (0..b.len)
        .filter(|&i| view.at(i) != Some(decisive))
        .map(|i| i as u32)
        .collect();
    if matches!(left, Datum::Scalar(_)) || undecided.len() == b.len {
        let right = eval(r, b, cx)?;
        return Ok(combine(is_and, &left, &right, b.len));
    }
    if undecided.is_empty() {
        return Ok(left.into_owned());
    }
    let sub = b.gather(&undecided);
    let right_sub = eval(r, &sub, cx)?;
    // Rows the left side decided take the decisive value on the right too.
    let mut right = Vector::broadcast(&Value::Bool(decisive), DataType::Bool, b.len);
    let right_sub = right_sub.into_vector(DataType::Bool, undecided.len());
    scatter(&mut right, &undecided, &right_sub);
    Ok(combine(is_and, &left, &Datum::Vector(right), b.len))
}

pub(super) fn case<'b>(
    e: &BoundExpr,
    branches: &[(BoundExpr, BoundExpr)],
    otherwise: Option<&BoundExpr>,
    b: &'b Batch<'_>,
    cx: &EvalCtx<'_>,
) -> Result<Datum<'b>> {
    let mut result = Vector::broadcast(&Value::Null, e.ty, b.len);
    let mut remaining: Vec<u32> = (0..b.len as u32).collect();
    for (cond, value) in branches {
        if remaining.is_empty() {
            break;
        }
        let sub = b.gather(&remaining);
        let hits = match select_rows(cond, &sub, cx)? {
            Selection::All => (0..sub.len as u32).collect(),
            Selection::None => Vec::new(),
            Selection::Rows(r) => r,
        };
        if hits.is_empty() {
            continue;
        }
        let chosen = sub.gather(&hits);
        let v = eval(value, &chosen, cx)?.into_vector(e.ty, hits.len());
        let rows: Vec<u32> = hits.iter().map(|&h| remaining[h as usize]).collect();
        scatter(&mut result, &rows, &v);
        let mut hit = hits.iter().peekable();
        remaining = remaining
            .iter()
            .enumerate()
            .filter(|(k, _)| {
                if hit.peek().is_some_and(|&&h| h as usize == *k) {
                    hit.next();
                    false
                } else {
                    true
                }
            })
            .map(|(_, &r)| r)
            .collect();
    }
    if let (Some(o), false) = (otherwise, remaining.is_empty()) {
        let sub = b.gather(&remaining);
        let v = eval(o, &sub, cx)?.into_vector(e.ty, remaining.len());
        scatter(&mut result, &remaining, &v);
    }
    Ok(Datum::Vector(result))
}
