//! A condition that is an AND of comparisons, each of a batch's number column with a
//! value the same for every row (`x > 0.5 AND hp < 50`), worked into one flag per row in
//! place: each comparison ANDs its results into the flags in one typed loop, and a count
//! adds the flags up, with no vector of booleans made per comparison and per AND.
//!
//! Invariants:
//! - It gives the rows the general evaluation would pass (a NULL on either side passes
//!   none), and it is only taken when it could not differ in anything else: every value
//!   side is row-free and cannot fail (no call, no subquery, no error), so the general
//!   path evaluates each on every batch too, to the same value, and no evaluation has an
//!   effect the flags would skip.
//! - Any other shape, or a column of another type in this batch, is not handled (`None`),
//!   and the caller evaluates the condition the general way; the flags are then scratch.

use super::{EvalCtx, Result, eval};
use crate::plan::{BoundExpr, BoundKind};
use crate::storage::Value;
use crate::vector::{Batch, CmpOp, Data, Datum, Vector};

/// How many rows of `b` pass `e`, when `e` is an AND of comparisons this file works
/// (`None` otherwise). `flags` is scratch: what it holds on entry does not matter.
pub fn count_passing(
    e: &BoundExpr,
    b: &Batch<'_>,
    cx: &EvalCtx<'_>,
    flags: &mut Vec<bool>,
) -> Result<Option<usize>> {
    if !pass_flags(e, b, cx, flags)? {
        return Ok(None);
    }
    Ok(Some(count_true(flags)))
}

/// Sets `flags` to whether each row of `b` passes `e`, when `e` is an AND of comparisons
/// this file works; false (and `flags` scratch) otherwise.
pub fn pass_flags(e: &BoundExpr, b: &Batch<'_>, cx: &EvalCtx<'_>, flags: &mut Vec<bool>) -> Result<bool> {
    if !is_conjunction(e, b) {
        return Ok(false);
    }
    // The first comparison writes every flag; the others AND into them.
    flags.resize(b.len, true);
    and_into(e, b, cx, flags, &mut true)
}

/// Whether `e` is an AND-tree of comparisons of a number column of `b` with a row-free
/// value that cannot fail.
fn is_conjunction(e: &BoundExpr, b: &Batch<'_>) -> bool {
    match &e.kind {
        BoundKind::And(l, r) => is_conjunction(l, b) && is_conjunction(r, b),
        BoundKind::Compare(_, l, r) => sides(l, r, b).is_some(),
        _ => false,
    }
}

/// The column and the value of a comparison `l op r`, and whether the column is on the
/// right (so that the operator is read flipped).
fn sides<'e, 'b>(
    l: &'e BoundExpr,
    r: &'e BoundExpr,
    b: &'b Batch<'_>,
) -> Option<(&'b Vector<'b>, &'e BoundExpr, bool)> {
    let value = |x: &BoundExpr| x.row_free() && x.cannot_fail();
    let column = |x: &BoundExpr| match &x.kind {
        BoundKind::Slot(s) => match b.slots.get(*s) {
            Some(Some(Datum::Vector(v)))
                if matches!(v.data, Data::Int(_) | Data::Float(_) | Data::Real(_)) =>
            {
                Some(v)
            }
            _ => None,
        },
        _ => None,
    };
    match (column(l), column(r)) {
        (Some(c), _) if value(r) => Some((c, r, false)),
        (_, Some(c)) if value(l) => Some((c, l, true)),
        _ => None,
    }
}

/// ANDs each comparison of `e` into `flags`, left to right (`first`: the flags are not
/// set yet, and the next comparison sets them); false when a value's type is not its
/// column's (then `flags` is scratch).
fn and_into(
    e: &BoundExpr,
    b: &Batch<'_>,
    cx: &EvalCtx<'_>,
    flags: &mut [bool],
    first: &mut bool,
) -> Result<bool> {
    match &e.kind {
        BoundKind::And(l, r) => Ok(and_into(l, b, cx, flags, first)? && and_into(r, b, cx, flags, first)?),
        BoundKind::Compare(op, l, r) => {
            let Some((column, value, flipped)) = sides(l, r, b) else {
                return Ok(false);
            };
            let op = if flipped { op.flipped() } else { *op };
            let value = match eval(value, b, cx)? {
                Datum::Scalar(v) => v,
                Datum::Vector(_) => return Ok(false),
            };
            let worked = match (&column.data, value) {
                // A comparison with NULL is never TRUE.
                (_, Value::Null) => {
                    flags.fill(false);
                    true
                }
                (Data::Int(xs), Value::Int(k)) => and_compare(op, xs, k, flags, *first),
                (Data::Float(xs), Value::Float(k)) => and_compare(op, xs, k, flags, *first),
                (Data::Real(xs), Value::Real(k)) => and_compare(op, xs, k, flags, *first),
                _ => false,
            };
            *first = false;
            if worked && let Some(valid) = column.validity() {
                flags.iter_mut().zip(valid.iter()).for_each(|(f, &ok)| *f &= ok);
            }
            Ok(worked)
        }
        _ => Ok(false),
    }
}

/// `flags[i] &= xs[i] op k` (`first`: `flags[i] = xs[i] op k`), with the operator chosen
/// outside the loop so that each loop is a plain comparison the compiler vectorizes (as
/// `kernels::compare`'s are).
fn and_compare<T: PartialOrd + Copy>(op: CmpOp, xs: &[T], k: T, flags: &mut [bool], first: bool) -> bool {
    if xs.len() != flags.len() {
        return false;
    }
    match op {
        CmpOp::Eq => and_each(xs, flags, first, |x| x == k),
        CmpOp::NotEq => and_each(xs, flags, first, |x| x != k),
        CmpOp::Lt => and_each(xs, flags, first, |x| x < k),
        CmpOp::LtEq => and_each(xs, flags, first, |x| x <= k),
        CmpOp::Gt => and_each(xs, flags, first, |x| x > k),
        CmpOp::GtEq => and_each(xs, flags, first, |x| x >= k),
    }
    true
}

fn and_each<T: Copy>(xs: &[T], flags: &mut [bool], first: bool, pass: impl Fn(T) -> bool) {
    if first {
        flags.iter_mut().zip(xs).for_each(|(f, &x)| *f = pass(x));
    } else {
        flags.iter_mut().zip(xs).for_each(|(f, &x)| *f &= pass(x));
    }
}

/// How many of `flags` are true: summed a byte at a time in runs of 255, which cannot
/// overflow a byte, so the loop adds 16 flags an instruction.
pub fn count_true(flags: &[bool]) -> usize {
    flags
        .chunks(255)
        .map(|run| usize::from(run.iter().fold(0u8, |sum, &f| sum.wrapping_add(u8::from(f)))))
        .sum()
}
