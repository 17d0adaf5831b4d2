//! Float sums, averages and variances of frames, from a segment tree over the positions
//! (`float_frames`): a frame is `O(log n)` nodes, and no value is ever taken away from a
//! running total, which float arithmetic could not do exactly.

use std::borrow::Cow;

use super::column::Nullable;
use super::sorted::Sorted;
use super::{CHECK, Result};
use crate::exec::aggregate::spread;
use crate::exec::reader::Reader;
use crate::exec::sort::Column;
use crate::plan::AggFunc;
use crate::storage::Value;
use crate::vector::{Data, Vector};

/// A float sum, average or variance of a frame, from a segment tree over the positions:
/// each node holds its rows' count, sum, and (of the finite values) count, mean and sum
/// of squared differences from the mean, combined in order by Chan's formula. A frame
/// is then `O(log n)` nodes, whatever its size and however it slides: no value is ever
/// taken away from a running total, so no cancellation or overflow lingers past the
/// frame it happened in (a float's value cannot be taken back exactly, which is why
/// PostgreSQL gives float aggregates no inverse either).
pub(super) fn float_frames(
    func: AggFunc,
    column: Column<'_>,
    sorted: &Sorted,
    starts: &[u32],
    ends: &[u32],
    reader: &Reader<'_>,
) -> Result<Vector<'static>> {
    let n = sorted.len();
    reader.budget.charge(
        n.saturating_mul(2 * std::mem::size_of::<Moments>() + 16),
        reader.at,
    )?;
    let mut nodes = vec![Moments::default(); 2 * n];
    for (p, &row) in sorted.order.iter().enumerate() {
        if p.is_multiple_of(CHECK) {
            reader.budget.check(reader.at)?;
        }
        let row = row as usize;
        if !column.is_null(row) {
            nodes[n + p] = Moments::of(column.float(row));
        }
    }
    for i in (1..n).rev() {
        nodes[i] = nodes[2 * i].then(&nodes[2 * i + 1]);
    }
    let mut out = Nullable::new(n);
    for p in 0..n {
        if p.is_multiple_of(CHECK) {
            reader.budget.check(reader.at)?;
        }
        let m = frame_moments(&nodes, n, starts[p] as usize, ends[p] as usize);
        out.push(m.result(func));
    }
    Ok(out.finish(|v| Data::Float(Cow::Owned(v))))
}

/// The moments of positions `lo..hi`, combined left to right from the tree's nodes.
fn frame_moments(nodes: &[Moments], n: usize, lo: usize, hi: usize) -> Moments {
    let (mut left, mut right) = (Moments::default(), Moments::default());
    let (mut l, mut r) = (lo + n, hi + n);
    while l < r {
        if l & 1 == 1 {
            left = left.then(&nodes[l]);
            l += 1;
        }
        if r & 1 == 1 {
            r -= 1;
            right = nodes[r].then(&right);
        }
        l >>= 1;
        r >>= 1;
    }
    left.then(&right)
}

/// What a float aggregate needs of some rows.
#[derive(Clone, Copy, Debug, Default)]
struct Moments {
    /// Values that are not NULL.
    count: i64,
    /// Their sum, in IEEE arithmetic (an infinity or NaN among them makes it one).
    sum: f64,
    /// The finite ones: how many, their mean, their sum of squared differences from it.
    finite: i64,
    mean: f64,
    squares: f64,
}

impl Moments {
    fn of(x: f64) -> Moments {
        let finite = x.is_finite();
        Moments {
            count: 1,
            sum: x,
            finite: i64::from(finite),
            mean: if finite { x } else { 0.0 },
            squares: 0.0,
        }
    }

    /// These rows, then `later`'s.
    fn then(&self, later: &Moments) -> Moments {
        let finite = self.finite + later.finite;
        let (mean, squares) = match (self.finite, later.finite) {
            (0, _) => (later.mean, later.squares),
            (_, 0) => (self.mean, self.squares),
            (a, b) => {
                let (a, b, all) = (a as f64, b as f64, finite as f64);
                let delta = later.mean - self.mean;
                (
                    self.mean + delta * b / all,
                    self.squares + later.squares + delta * delta * a * b / all,
                )
            }
        };
        Moments {
            count: self.count + later.count,
            sum: self.sum + later.sum,
            finite,
            mean,
            squares,
        }
    }

    fn result(&self, func: AggFunc) -> Option<f64> {
        match func {
            _ if self.count == 0 => None,
            AggFunc::Avg => Some(self.sum / self.count as f64),
            // A value that is not finite makes the variance NaN.
            AggFunc::Spread { sample, root } => match spread(self.count, self.squares, sample, root) {
                Value::Float(_) if self.finite < self.count => Some(f64::NAN),
                Value::Float(x) => Some(x),
                _ => None,
            },
            _ => Some(self.sum),
        }
    }
}
