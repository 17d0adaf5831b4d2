//! Frames: each position's first row and the one past its last, for ROWS, RANGE and
//! GROUPS with their offsets (refused when NULL or negative). Within a partition the
//! bounds never move back, which the aggregates that slide rely on.

use std::cmp::Ordering;

use super::sorted::Sorted;
use super::{CHECK, Result};
use crate::exec::Chunk;
use crate::exec::error::ExecError;
use crate::exec::eval::eval;
use crate::exec::reader::Reader;
use crate::exec::sort::{Column, Values};
use crate::plan::{FrameEdge, FramePlan, FrameUnits, WindowSort};
use crate::storage::{Value, float_order};
use crate::vector::Batch;

/// A frame offset's value: a count (ROWS, GROUPS) or a distance (RANGE).
#[derive(Clone, Copy)]
pub(super) enum Offset {
    Count(u64),
    Int(i64),
    Float(f64),
}

pub(super) fn offset(edge: &FrameEdge, what: &str, reader: &Reader<'_>) -> Result<Option<Offset>> {
    let (FrameEdge::Preceding(e) | FrameEdge::Following(e)) = edge else {
        return Ok(None);
    };
    let value = eval(e, &Batch::new(1, 0), &reader.eval())?.get(0);
    let bad = |message: String| Err(ExecError::arithmetic(e.at, message));
    match value {
        Value::Null => bad(format!("a window frame's {what} offset must not be NULL")),
        Value::Int(k) if k < 0 => bad(format!(
            "a window frame's {what} offset must not be negative, found {k}"
        )),
        Value::Int(k) => Ok(Some(Offset::Int(k))),
        Value::Float(x) if x.is_nan() || x < 0.0 => bad(format!(
            "a window frame's {what} offset must be 0 or more, found {x}"
        )),
        Value::Float(x) => Ok(Some(Offset::Float(x))),
        Value::Real(x) if x.is_nan() || x < 0.0 => bad(format!(
            "a window frame's {what} offset must be 0 or more, found {x}"
        )),
        Value::Real(x) => Ok(Some(Offset::Float(f64::from(x)))),
        other => bad(format!(
            "a window frame's {what} offset must be a number, found {other:?}"
        )),
    }
}

/// Each position's frame: its first position and the one past its last (never before
/// the first: an empty frame starts and ends at one place).
pub(super) fn frames(
    frame: &FramePlan,
    chunk: &Chunk,
    sorted: &Sorted,
    sort: &WindowSort,
    reader: &Reader<'_>,
) -> Result<(Vec<u32>, Vec<u32>)> {
    let n = sorted.len();
    reader.budget.charge(n.saturating_mul(8), reader.at)?;
    let counts = |o: Option<Offset>| match o {
        Some(Offset::Int(k)) => Some(Offset::Count(k as u64)),
        o => o,
    };
    let (mut low, mut high) = (
        offset(&frame.start, "start", reader)?,
        offset(&frame.end, "end", reader)?,
    );
    if frame.units != FrameUnits::Range {
        (low, high) = (counts(low), counts(high));
    }
    // RANGE with an offset: the one ORDER BY key, where its values are not NULL.
    let key = match (frame.units, low.or(high)) {
        (FrameUnits::Range, Some(_)) => RangeKey::new(chunk, sorted, sort),
        _ => None,
    };
    let (mut starts, mut ends) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for p in 0..n {
        if p.is_multiple_of(CHECK) {
            reader.budget.check(reader.at)?;
        }
        let (ps, pe) = sorted.partition(p);
        let start = edge(
            &frame.start,
            low,
            true,
            p,
            (ps, pe),
            frame.units,
            sorted,
            key.as_ref(),
        );
        let end = edge(
            &frame.end,
            high,
            false,
            p,
            (ps, pe),
            frame.units,
            sorted,
            key.as_ref(),
        );
        starts.push(start as u32);
        ends.push(end.max(start) as u32);
    }
    Ok((starts, ends))
}

/// Where a frame's start (`start`) or end (one past its last row) is for position `p`.
#[allow(clippy::too_many_arguments)]
fn edge(
    edge: &FrameEdge,
    offset: Option<Offset>,
    start: bool,
    p: usize,
    (ps, pe): (usize, usize),
    units: FrameUnits,
    sorted: &Sorted,
    key: Option<&RangeKey<'_>>,
) -> usize {
    let (peer_start, peer_end) = sorted.peers(p);
    let preceding = matches!(edge, FrameEdge::Preceding(_));
    match edge {
        FrameEdge::UnboundedPreceding => ps,
        FrameEdge::UnboundedFollowing => pe,
        FrameEdge::CurrentRow => match units {
            FrameUnits::Rows if start => p,
            FrameUnits::Rows => p + 1,
            _ if start => peer_start,
            _ => peer_end,
        },
        FrameEdge::Preceding(_) | FrameEdge::Following(_) => match (units, offset) {
            (FrameUnits::Rows, Some(Offset::Count(k))) => {
                // The row `k` before or after, then past it for an end.
                let at = if preceding {
                    (p as u64).saturating_sub(k) as i128 - if (p as u64) < k { 1 } else { 0 }
                } else {
                    (p as i128).saturating_add(k as i128)
                };
                let at = if start { at } else { at + 1 };
                at.clamp(ps as i128, pe as i128) as usize
            }
            (FrameUnits::Groups, Some(Offset::Count(k))) => {
                let (g, first, last) = (
                    sorted.group_of[p] as u64,
                    sorted.group_of[ps] as u64,
                    sorted.group_of[pe - 1] as u64,
                );
                let target = if preceding {
                    g.checked_sub(k).filter(|&t| t >= first)
                } else {
                    g.checked_add(k).filter(|&t| t <= last)
                };
                match (target, start, preceding) {
                    (Some(t), true, _) => sorted.groups[t as usize] as usize,
                    (Some(t), false, _) => sorted.groups[t as usize + 1] as usize,
                    // Before the partition's first group.
                    (None, _, true) => ps,
                    (None, _, false) => pe,
                }
            }
            (FrameUnits::Range, Some(o)) => match key {
                Some(key) => key.edge(p, o, preceding, start, (ps, pe), (peer_start, peer_end)),
                None => {
                    if start {
                        peer_start
                    } else {
                        peer_end
                    }
                }
            },
            _ => {
                if start {
                    peer_start
                } else {
                    peer_end
                }
            }
        },
    }
}

/// A RANGE frame's ORDER BY key, read by position.
struct RangeKey<'c> {
    column: Column<'c>,
    order: &'c [u32],
    desc: bool,
    nulls_first: bool,
}

impl<'c> RangeKey<'c> {
    fn new(chunk: &'c Chunk, sorted: &'c Sorted, sort: &WindowSort) -> Option<RangeKey<'c>> {
        let [key] = sort.order.as_slice() else {
            return None;
        };
        Some(RangeKey {
            column: Column::of(&chunk.columns[key.column]),
            order: &sorted.order,
            desc: key.desc,
            nulls_first: key.nulls_first,
        })
    }

    /// A RANGE frame's edge at position `p`: the first row (`start`) or the one past the
    /// last whose key is within `offset` before (`preceding`) or after the row's, in the
    /// sort's direction. A row whose key is NULL has its peers (the partition's NULLs)
    /// for any offset's frame.
    #[allow(clippy::too_many_arguments)]
    fn edge(
        &self,
        p: usize,
        offset: Offset,
        preceding: bool,
        start: bool,
        (ps, pe): (usize, usize),
        (peer_start, peer_end): (usize, usize),
    ) -> usize {
        let row = self.order[p] as usize;
        if self.column.is_null(row) {
            return if start { peer_start } else { peer_end };
        }
        let is_null = |&r: &u32| self.column.is_null(r as usize);
        let (ns, ne) = if self.nulls_first {
            (ps + self.order[ps..pe].partition_point(is_null), pe)
        } else {
            (ps, ps + self.order[ps..pe].partition_point(|r| !is_null(r)))
        };
        // Toward larger keys: PRECEDING in a descending sort, FOLLOWING in an ascending one.
        let up = preceding == self.desc;
        let place: Box<dyn Fn(usize) -> Ordering + '_> = match (self.column.values, offset) {
            (Values::Int(x), Offset::Int(k)) => {
                let bound = if up {
                    i128::from(x[row]) + i128::from(k)
                } else {
                    i128::from(x[row]) - i128::from(k)
                };
                Box::new(move |r| i128::from(x[r]).cmp(&bound))
            }
            (_, Offset::Float(k)) => {
                let v = self.column.float(row);
                let mut bound = if up { v + k } else { v - k };
                if bound.is_nan() && !v.is_nan() {
                    // An infinite key and an infinite offset: every value but NaN is
                    // within it, to that side (PostgreSQL's rule, which looks at NaN first).
                    bound = if start != self.desc {
                        f64::NEG_INFINITY
                    } else {
                        f64::INFINITY
                    };
                }
                Box::new(move |r| float_order(self.column.float(r), bound))
            }
            // The binder gives an INT key an INT offset and a float key a float one.
            _ => return if start { peer_start } else { peer_end },
        };
        let sorted = |r: usize| {
            let o = place(r);
            if self.desc { o.reverse() } else { o }
        };
        let within = &self.order[ns..ne];
        ns + if start {
            within.partition_point(|&r| sorted(r as usize) == Ordering::Less)
        } else {
            within.partition_point(|&r| sorted(r as usize) != Ordering::Greater)
        }
    }
}
