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

/// `flags[i] &= pass(xs[i])` (`first`: `flags[i] = pass(xs[i])`). Compiled twice: for
/// AVX2, taken when the processor has it (known once, then a load and a test), where a
/// 64-bit INT comparison is one instruction for four rows (x86-64's baseline, SSE2, has
/// no 64-bit `<`, so its build compares an INT a row at a time) and a REAL's eight; and
/// for the baseline. Either build gives the same flags.
#[inline(always)]
fn and_each<T: Copy>(xs: &[T], flags: &mut [bool], first: bool, pass: impl Fn(T) -> bool) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: `wide_and_each` needs AVX2 and nothing else, and the processor has it.
        unsafe { wide_and_each(xs, flags, first, pass) };
        return;
    }
    each_into(xs, flags, first, pass);
}

/// `and_each` compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn wide_and_each<T: Copy>(xs: &[T], flags: &mut [bool], first: bool, pass: impl Fn(T) -> bool) {
    each_into(xs, flags, first, pass);
}

/// The loop of `and_each`, inlined into each of its builds.
#[inline(always)]
fn each_into<T: Copy>(xs: &[T], flags: &mut [bool], first: bool, pass: impl Fn(T) -> bool) {
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

#[cfg(test)]
mod tests {
    #[cfg(target_arch = "x86_64")]
    use super::wide_and_each;
    use super::{and_compare, each_into};
    use crate::vector::CmpOp;
    use crate::vector::kernels::cmp_fn;
    use std::cmp::Ordering;

    /// What `x op k` is, read from `partial_cmp` (unordered: only `!=` holds).
    fn model<T: PartialOrd>(op: CmpOp, x: T, k: T) -> bool {
        let o = x.partial_cmp(&k);
        match op {
            CmpOp::Eq => o == Some(Ordering::Equal),
            CmpOp::NotEq => o != Some(Ordering::Equal),
            CmpOp::Lt => o == Some(Ordering::Less),
            CmpOp::LtEq => matches!(o, Some(Ordering::Less | Ordering::Equal)),
            CmpOp::Gt => o == Some(Ordering::Greater),
            CmpOp::GtEq => matches!(o, Some(Ordering::Greater | Ordering::Equal)),
        }
    }

    /// `flags[i] (&)= x op k` by each build of the loop this machine can run: the
    /// dispatching one, the baseline and (where the processor has it) the AVX2 one.
    fn builds<T: PartialOrd + Copy>(
        op: CmpOp,
        xs: &[T],
        k: T,
        flags: &[bool],
        first: bool,
    ) -> Vec<Vec<bool>> {
        let mut out = Vec::new();
        let mut f = flags.to_vec();
        assert!(and_compare(op, xs, k, &mut f, first));
        out.push(f);
        let mut f = flags.to_vec();
        let pass = cmp_fn(op);
        each_into(xs, &mut f, first, |x| pass(x, k));
        out.push(f);
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            let mut f = flags.to_vec();
            // SAFETY: the processor has AVX2.
            unsafe { wide_and_each(xs, &mut f, first, |x| pass(x, k)) };
            out.push(f);
        }
        out
    }

    /// Every operator against values of `xs` as the constant, first and ANDed into flags
    /// already half false, over lengths that end inside and outside a vector's width and
    /// one long enough for several rounds of the vector loop: every build's flags are the
    /// model's.
    fn check<T: PartialOrd + Copy + std::fmt::Debug>(xs: &[T]) {
        for len in [0, 1, 3, 4, 7, 8, 17, 33, 70, xs.len()] {
            let xs = &xs[..len.min(xs.len())];
            for &k in xs.iter().take(12) {
                for op in CmpOp::ALL {
                    let want: Vec<bool> = xs.iter().map(|&x| model(op, x, k)).collect();
                    for got in builds(op, xs, k, &vec![false; xs.len()], true) {
                        assert_eq!(got, want, "{op:?} {k:?} first, {} rows", xs.len());
                    }
                    let half: Vec<bool> = (0..xs.len()).map(|i| i % 2 == 0).collect();
                    let want: Vec<bool> = want.iter().zip(&half).map(|(&w, &h)| w && h).collect();
                    for got in builds(op, xs, k, &half, false) {
                        assert_eq!(got, want, "{op:?} {k:?} anded, {} rows", xs.len());
                    }
                }
            }
        }
    }

    #[test]
    fn each_comparison_flags_the_rows_the_model_passes() {
        let ints: Vec<i64> = [
            i64::MIN,
            -1,
            0,
            1,
            49,
            50,
            51,
            i64::MAX,
            i64::MIN + 1,
            i64::MAX - 1,
        ]
        .into_iter()
        .cycle()
        .zip(0i64..)
        .map(|(x, i)| if i % 3 == 0 { x } else { x.wrapping_mul(i) })
        .take(300)
        .collect();
        check(&ints);
        let reals: Vec<f32> = [
            f32::NAN,
            -0.0,
            0.0,
            0.5,
            -0.5,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MIN_POSITIVE / 2.0,
            1e30,
            -1e30,
        ]
        .into_iter()
        .cycle()
        .zip(0..)
        .map(|(x, i)| if i % 3 == 0 { x } else { x * i as f32 })
        .take(300)
        .collect();
        check(&reals);
        let floats: Vec<f64> = reals.iter().map(|&x| f64::from(x) * 1.5).collect();
        check(&floats);
        // Two lengths differing: nothing is compared.
        assert!(!and_compare(CmpOp::Lt, &[1i64, 2], 0, &mut [true], true));
    }
}
